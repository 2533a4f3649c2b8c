"""``nt.autotune``: one tile program, several mappings; the fastest on this device is measured once per shape class
and kept on disk.

``kernel = nt.autotune(program, [mapping_a, mapping_b, ...])`` is called like a built kernel. The first call of a
shape class (each array's dtype, each dimension rounded up to a power of two, and whether its rows move in
16-byte vectors) on a device plans every candidate
(those the task layer refuses are left out, with why), times each that plans on the device (CUDA events around
back-to-back calls on the call's stream) and keeps the fastest, in ``<cache_dir>/autotune.json`` under the device's
name, the program, the candidates and the class: later calls and later processes go straight to it. A mapping
changes speed, never results, so the winner computes what every candidate would. Without a GPU (the interpreter)
nothing is timed: the first candidate that plans runs, and nothing is written. A ``measure`` function given to
:func:`autotune` stands for the device's timing (its winners are kept too, under the device's name or "no GPU").
"""

from __future__ import annotations

import json
import os
import tempfile

from ..arguments import describe, signature_key
from ..errors import CompileError, MappingError, UserError, user_location
from ..jit import device_name, device_time_ms
from ..options import resolve
from ..signature import ARRAY
from ..target import vector_problem
from .build import TaskKernel
from .mapping import Mapping
from .program import Task

TABLE = "autotune.json"


def shape_class(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Each dimension rounded up to a power of two: the shapes that share a tuned mapping."""
    return tuple(1 << max(0, int(d) - 1).bit_length() for d in shape)


class Autotuned:
    """A tile program under the fastest of ``candidates`` for each shape class (see :func:`autotune`)."""

    def __init__(self, program: Task, candidates, *, measure=None, reps: int = 20):
        if not isinstance(program, Task):
            raise MappingError(f"nt.autotune needs an @nt.task function, got {program!r}", code="bad-mapping",
                               hint="decorate the program with @nt.task(reads=..., writes=...) and pass that function",
                               loc=user_location())
        candidates = tuple(candidates)
        if not candidates or not all(isinstance(m, Mapping) for m in candidates):
            raise MappingError(f"nt.autotune needs one or more nt.Mapping candidates, got {candidates!r}",
                               code="bad-mapping", hint="pass a list of nt.Mapping(...)", loc=user_location())
        self.program, self.reps = program, reps
        self.kernels = tuple(TaskKernel(program, m) for m in candidates)
        self.measure = measure
        self._chosen: dict = {}            # (device, class) -> the kernel that runs it
        self._calls: dict = {}             # (device, the arguments' signature keys) -> the kernel: a call's lookup
        self.timings: dict = {}            # (device, class) -> {candidate index: ms or the reason it was left out}

    def __call__(self, *arrays, stream=None):
        self.kernel(*arrays)(*arrays, stream=stream)

    def kernel(self, *arrays) -> TaskKernel:
        """The candidate that runs these arguments (tuned on first use of their shape class)."""
        device = device_name()
        call = (device, tuple(map(signature_key, arrays)))
        found = self._calls.get(call)
        if found is None:
            key = (device, self._class(arrays))
            found = self._chosen.get(key)
            if found is None:
                found = self._chosen[key] = self.kernels[self._choose(device, key[1], arrays)]
            if len(self._calls) >= 1024:
                self._calls.clear()
            self._calls[call] = found
        return found

    @property
    def mappings(self) -> tuple[Mapping, ...]:
        return tuple(k.mapping for k in self.kernels)

    def _class(self, arrays) -> tuple:
        """Each argument's dtype, and an array's shape class and whether its rows move in 16-byte vectors (rows of
        50257 and of 50304 elements share a shape class, but not the loads and staging copies a kernel makes)."""
        loc = user_location()
        described = []
        for name, value in zip(self.program.parameters, arrays):
            spec, _ = describe(value, name, loc)
            described.append((spec.dtype.name, shape_class(spec.shape),
                              vector_problem(spec.shape, spec.dtype.itemsize, spec.strides, spec.unaligned) is None)
                             if spec.kind == ARRAY else (spec.dtype.name,))
        return tuple(described)

    def _choose(self, device: str | None, klass: tuple, arrays) -> int:
        entry = _entry(device, self.program, self.mappings, klass)
        timing = device is not None or self.measure is not None
        if timing:
            stored = _table().get(entry)
            if stored is not None and stored < len(self.kernels):
                return stored
        timings: dict = {}
        for i, kernel in enumerate(self.kernels):
            try:
                kernel.plan(*arrays)
            except UserError as refused:
                timings[i] = f"refused: {refused}"
                continue
            if not timing:
                timings[i] = "chosen without timing (no GPU)"
                break
            call = lambda k=kernel: k(*arrays)
            try:
                timings[i] = float(self.measure(call) if self.measure is not None else
                                   device_time_ms(call, arrays, reps=self.reps))
            except (UserError, CompileError) as failed:      # planned, but tracing or ptxas refused it
                timings[i] = f"refused: {failed}"
        self.timings[(device, klass)] = timings
        timed = {i: t for i, t in timings.items() if not isinstance(t, str)}
        if not timed:
            planned = [i for i, t in timings.items() if not t.startswith("refused")]
            if planned:
                return planned[0]
            raise MappingError(f"nt.autotune: no candidate mapping plans task '{self.program.name}' for these "
                               f"arguments: " + "; ".join(f"candidate {i}: {t}" for i, t in timings.items()),
                               code="bad-mapping", hint="add a candidate that nt.build(program, mapping) accepts "
                               "for these shapes", loc=user_location())
        best = min(timed, key=timed.get)
        _store(entry, best)
        return best


def autotune(program: Task, candidates, *, measure=None, reps: int = 20) -> Autotuned:
    """``program`` under the fastest of ``candidates`` (``nt.Mapping``s) per device and shape class, timed on the
    device at the first call of each class and kept on disk (see the module's documentation). ``measure(call)``,
    when given, returns a call's time in place of the device's events; ``reps`` calls are timed per candidate."""
    return Autotuned(program, candidates, measure=measure, reps=reps)


def _entry(device, program: Task, mappings, klass) -> str:
    fn = program.fn
    return json.dumps([device or "no GPU", f"{fn.__module__}.{fn.__qualname__}", [repr(m) for m in mappings],
                       [list(map(str, c)) for c in klass]])


def _path() -> str:
    return os.path.join(resolve(None).resolved_cache_dir, TABLE)


def _table() -> dict:
    try:
        with open(_path()) as f:
            table = json.load(f)
    except (OSError, ValueError):
        return {}
    return table if isinstance(table, dict) else {}


def _store(entry: str, index: int) -> None:
    """Add ``entry -> index`` to the table on disk (written whole, then renamed: readers never see half)."""
    path = _path()
    table = _table()
    table[entry] = index
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".json")
        with os.fdopen(handle, "w") as f:
            json.dump(table, f, indent=0)
        os.replace(temporary, path)
    except OSError:
        pass                             # an unwritable cache: tuned again in the next process
