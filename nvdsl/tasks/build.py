"""``nt.build``: a tile program and a mapping become a callable kernel, compiled per call signature.

The passes run in this order, each a pure function over frozen records whose output
:meth:`TaskKernel.passes` prints: tracing the program into events, dependence analysis with copy insertion,
copy elimination, the check of parallel writes, then the planning passes of :mod:`.passes` (levels, row sums
on the tensor cores, the consumers' split, the main loop's order, transfers and rings, joined products,
pipelining, registers, shared-memory allocation, persistence), which make the :class:`~.stages.Schedule`.
Emission turns the schedule into nvdsl primitives inside a host function that the JIT hub
(:mod:`nvdsl.jit`) traces, compiles and caches like any hand-written kernel.
"""

from __future__ import annotations

import inspect
import math

from ..arguments import describe
from ..errors import ArgumentError, MappingError, SourceLocation, TaskError, UserError, user_location
from ..jit import TracedFunction, sm_count
from ..signature import ARRAY
from . import analysis
from .mapping import Mapping, apply_change, change_text, refusal
from .profile import session
from .program import Task, trace_program
from .schedule import Schedule, plan_stages, stage_text
from .staging import row_layout_text, spec_layouts, staged_arguments, staging_text


class TaskKernel:
    """A built tile program: call it on arrays like an ``@nvdsl.mlir_func`` (the first call per signature
    plans, traces and compiles); ``explain(*arrays)`` prints how it was mapped."""

    def __init__(self, entry: Task, mapping: Mapping | None):
        if not isinstance(entry, Task):
            raise TaskError(f"nt.build needs an @nt.task function, got {entry!r}", code="bad-launch",
                            hint="decorate the program with @nt.task(reads=..., writes=...)", loc=user_location())
        self.entry = entry
        self.mapping = mapping if mapping is not None else Mapping()
        if not isinstance(self.mapping, Mapping):
            raise MappingError(f"mapping={mapping!r} must be an nt.Mapping", code="bad-mapping",
                               hint="pass nt.Mapping(...), or None for the defaults derived from the program",
                               loc=user_location())
        self._sm_count = self.mapping.sm_count

        # The hub keys the call by this kernel's content (entry, mapping, SMs), not by host's code, and a traced
        # module and its errors point at the task's definition; errors raised while planning or emitting name
        # the user's call (host's frames are nvdsl's).
        code = entry.fn.__code__
        definition = SourceLocation(code.co_filename, code.co_firstlineno)
        # A task kernel's blocks run in no set order: an output sharing memory with another array is refused.
        self._function = TracedFunction(self._host(recording=False), None, definition=definition, keyed_by=self,
                                        disjoint_outputs=True)
        self._recording = TracedFunction(self._host(recording=True), None, definition=definition,
                                         keyed_by=_Recording(self), disjoint_outputs=True)

    def _host(self, recording: bool):
        """The host function the hub traces: the program's arguments (and, ``recording``, a timeline's header and
        events after them, see ``nvdsl.profile``) in, the planned kernel emitted."""
        entry = self.entry

        def host(*arrays):
            from .emit import emit  # imports MLIR: only when tracing, not when the disk cache has the call
            arguments, timeline = (arrays[:-2], arrays[-2:]) if recording else (arrays, None)
            if _nothing_to_write(entry, arguments):
                return
            schedule = self._plan([(a.name, a.shape, a.dtype) for a in arguments])
            emit(schedule, dict(zip(entry.parameters, arguments)), timeline=timeline)

        host.__name__ = host.__qualname__ = f"{entry.name}_profiled" if recording else entry.name
        parameters = (*entry.parameters, "timeline_header", "timeline_events") if recording else entry.parameters
        host.__signature__ = inspect.Signature(
            [inspect.Parameter(p, inspect.Parameter.POSITIONAL_ONLY) for p in parameters])
        return host

    @property
    def sm_count(self) -> int:
        if self._sm_count is None:
            self._sm_count = sm_count()
        return self._sm_count

    def __nvdsl_key__(self) -> tuple:
        """What the traced host function depends on beyond the call's arguments (see nvdsl.frontend.keying)."""
        return self.entry, self.mapping, self.sm_count

    def __call__(self, *arrays, stream=None, **named):
        if named:       # by the program's parameter names: kernel(C=c, A=a, B=b)
            arrays = self._bound(arrays, named)
        recording = session()
        if recording is None:
            self._function(*arrays, stream=stream)
        else:
            recording.run(self, arrays, stream)

    def _bound(self, arrays: tuple, named: dict) -> tuple:
        """The arrays of a call that names some, in the program's parameter order."""
        parameters = self.entry.parameters
        unknown = next((n for n in named if n not in parameters), None)
        try:
            if unknown is None:
                bound = inspect.Signature([inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                           for p in parameters]).bind(*arrays, **named)
                return tuple(bound.arguments[p] for p in parameters)
            problem = f"no parameter is named {unknown!r}"
        except TypeError as error:          # a missing array, or one given twice
            problem = str(error)
        raise ArgumentError(f"{self.entry.name}({', '.join(parameters)}): {problem}", code="bad-call",
                            hint="pass one array per parameter, by position or by its name", loc=user_location())

    def profiled(self, *arrays, stream=None):
        """Run the variant that records its timeline into the last two arrays (see ``nvdsl.profile``)."""
        self._recording(*arrays, stream=stream)

    def _specs(self, arrays) -> list:
        return [(spec.name, spec.shape, spec.dtype) for spec in self._described(arrays)]

    def _described(self, arrays) -> list:
        loc = user_location()
        specs = []
        for name, value in zip(self.entry.parameters, arrays):
            spec, _ = describe(value, name, loc)
            if spec.kind != ARRAY:
                raise ArgumentError(f"'{name}' of task '{self.entry.name}' must be an array, got {value!r}",
                                    code="bad-call", hint="pass a NumPy array or a CUDA tensor (a number as a "
                                    "one-element array)", loc=loc)
            specs.append(spec)
        return specs

    def _stages(self, specs) -> dict:
        """Every stage under this kernel's mapping. A refusal that proposes changes of the mapping (see
        ``mapping.refusal``) names only those under which the same stages then plan."""
        try:
            return _stages(self.entry, self.mapping, specs, self.sm_count)
        except MappingError as error:
            changes = getattr(error, "changes", ())
            if not changes:
                raise error.from_program_line(error.loc) from None
            accepted = [c for c in changes if _plans(self.entry, self.mapping, c, specs, self.sm_count)]
            if accepted:
                hint = "map with " + ", or ".join(change_text(c) for c in accepted)
            else:
                hint = "no single change of the mapping tried (" + "; ".join(change_text(c) for c in changes) + \
                       ") plans this program"
            note = getattr(error, "note", "")
            hinted = error._replaced(hint=f"{hint} ({note})" if note else hint)
            raise hinted.from_program_line(error.loc) from None
        except UserError as error:
            raise error.from_program_line(error.loc) from None

    def _plan(self, specs) -> Schedule:
        return self._stages(specs)["schedule"]

    def plan(self, *arrays) -> Schedule:
        """The schedule for these arguments' shapes and dtypes (nothing is traced or compiled)."""
        return self._plan(self._specs(arrays))

    def passes(self, *arrays) -> dict[str, str]:
        """Each pass's output as text, in order: traced, copies, eliminated (the event IR), then what each
        planning pass decides (levels, row_sums, split, main_loop, transfers, products, pipeline, registers,
        allocation, persistence) and the schedule they make, as :meth:`explain` prints it."""
        stages = self._stages(self._specs(arrays))
        return {name: stage_text(stages, name) for name in stages}

    def explain(self, *arrays, stage: str = "schedule") -> str:
        """How the program is mapped for these arguments: roles, rings, the shared-memory map, the schedule and
        the arguments that go through staging copies (see :mod:`.staging`); or, with ``stage``, the output of one
        pass (a name :meth:`passes` lists)."""
        described = self._described(arrays)
        stages = self._stages([(spec.name, spec.shape, spec.dtype) for spec in described])
        text = stage_text(stages, stage)
        if stage == "schedule":
            layouts = spec_layouts({spec.name: spec for spec in described})
            text += staging_text(staged_arguments(stages["schedule"], layouts))
            text += row_layout_text(stages["schedule"], layouts)
        return text

    @property
    def name(self) -> str:
        return self._function.name

    @property
    def options(self):
        """The compile options in force (see ``nvdsl.Options``)."""
        return self._function.options

    @property
    def backend(self) -> str:
        """Where calls run: ``"gpu"`` or ``"interpret"`` (see ``TracedFunction.backend``)."""
        return self._function.backend

    def with_options(self, **changes):
        """The traced function behind this kernel under options with ``changes`` applied (e.g. ``dump_dir=``)."""
        return self._function.with_options(**changes)

    def trace(self, *arrays):
        return self._function.trace(*arrays)

    def compile(self, *arrays):
        return self._function.compile(*arrays)

    def with_mapping(self, mapping: Mapping) -> "TaskKernel":
        """The same program under another mapping."""
        return TaskKernel(self.entry, mapping)


def _nothing_to_write(entry: Task, arguments) -> bool:
    """Whether every tensor the task writes or adds into has no element (a batch of no rows): the call then launches
    nothing. Where some do have elements, an argument it only reads must have some too (its tiles are what they
    are computed from), else the call is refused by that argument's name."""
    written = [a for name, a in zip(entry.parameters, arguments) if entry.privileges.get(name) in ("write", "reduce")]
    if written and all(math.prod(a.shape) == 0 for a in written):
        return True
    for name, a in zip(entry.parameters, arguments):
        if entry.privileges.get(name) == "read" and math.prod(a.shape) == 0:
            outputs = [f"'{o.name}' {list(o.shape)}" for o in written if math.prod(o.shape)]
            raise ArgumentError(f"argument '{a.name}' of task '{entry.name}' is empty (shape {list(a.shape)}), but "
                                f"{', '.join(outputs)} {'is' if len(outputs) == 1 else 'are'} not: there is no tile "
                                f"of '{a.name}' to compute {'it' if len(outputs) == 1 else 'them'} from", code="empty",
                                hint=f"give '{a.name}' at least one element along each axis, or leave the task out "
                                     "and fill the output (a product over K = 0 is zero)", loc=user_location())
    return False


class _Recording:
    """The key of a kernel's recording variant: the kernel's, and that it records."""

    def __init__(self, kernel: TaskKernel):
        self.kernel = kernel

    def __nvdsl_key__(self) -> tuple:
        return (*self.kernel.__nvdsl_key__(), "timeline")


def _stages(entry: Task, mapping: Mapping, specs, sm_count: int) -> dict:
    """Tracing, the event passes and the planning passes of ``entry`` under ``mapping``, by stage name."""
    traced = trace_program(entry, specs, mapping.tile_values())
    unused = set(mapping.tile_values()) - traced.used_tunables
    if unused:
        raise refusal(f"the mapping sets tunables {sorted(unused)} that task '{entry.name}' never asks for",
                      code="bad-mapping", changes=[{"tiles": {name: None for name in sorted(unused)}}],
                      note="or check the names given to nt.tunable")
    copies = analysis.insert_copies(traced.program, mapping)
    eliminated = analysis.eliminate_copies(copies)
    analysis.check_parallel_writes(eliminated)
    return {"traced": traced.program, "copies": copies, "eliminated": eliminated,
            **plan_stages(eliminated, mapping, sm_count)}


def _plans(entry: Task, mapping: Mapping, change: dict, specs, sm_count: int) -> bool:
    """Whether ``entry`` plans under ``mapping`` with ``change``."""
    try:
        _stages(entry, apply_change(mapping, change), specs, sm_count)
    except UserError:
        return False
    return True


def build(entry: Task, mapping: Mapping | None = None) -> TaskKernel:
    """Build the tile program whose entry task is ``entry`` under ``mapping`` (None: derived defaults)."""
    return TaskKernel(entry, mapping)

