"""A traced module compiled for the interpreter, and one call of it on NumPy arrays.

The host function runs once, on one "lane"; each ``gpu.launch`` runs its grid block by block (see
:mod:`.machine`). Arguments are copied in, as on the GPU, and the arrays a kernel writes are copied
back only when the call completes.
"""

from __future__ import annotations

import json
import random
import sys

import numpy as np
from mlir import ir

from .. import dtypes as dt
from ..errors import ArgumentError, LaunchConfigError
from ..signature import ARRAY, ArgSpec, ScratchSpec, span_elements
from ..target import HOPPER_SHARED_MEMORY_PER_BLOCK, SCRATCH_ATTR
from .budget import Deadline
from . import (ops_arith, ops_atomics, ops_control, ops_gpu, ops_mbarrier, ops_memory, ops_nvvm,  # noqa: F401
               ops_symbolic, ops_tma, ops_wgmma)  # register the handlers
from . import values as V
from .core import PLAIN, Compiler, handles
from .machine import Block
from .memory import GLOBAL, Buffer, MemRef
from .skeleton import placeholder_array


class Kernel:
    """One ``gpu.launch`` body, compiled. ``skeleton`` ("first" or "first-and-last") marks a protocol
    skeleton: only those blocks run, without data."""

    def __init__(self, body, mbarrier_count: int, infos, info, name: str, skeleton: str | None = None):
        self.body = body
        self.mbarrier_count = mbarrier_count
        self.infos = infos
        self.info = info
        self.name = name
        self.skeleton = skeleton
        self.loop_slots: list[int] = []      # for loop summaries (.period): see Compiler
        self.local_slots: list[int] = []
        self.scopes: dict = {}               # Compiler.scopes of the loop slots
        self.uncounted_barriers = False      # Compiler.uncounted_barriers


@handles("gpu.launch")
def _launch(op, c, info):
    view = op.opview
    saved, c.mbarriers = c.mbarriers, 0
    body = c.block(op.regions[0].blocks[0])
    name = str(op.attributes["function"]).lstrip("@") if "function" in op.attributes else "kernel"
    kernel = Kernel(body, c.mbarriers, c.infos, info, name, (c.skeleton_blocks or {}).get(op))
    kernel.loop_slots = sorted(c.loop_slots - c.unread_indices - c.constants.keys())
    kernel.local_slots = list(c.local_slots)
    kernel.scopes = {s: c.scopes[s] for s in kernel.loop_slots if s in c.scopes}
    kernel.uncounted_barriers = c.uncounted_barriers
    c.mbarriers = saved
    sizes = [c.slot(v) for v in (view.gridSizeX, view.gridSizeY, view.gridSizeZ,
                                 view.blockSizeX, view.blockSizeY, view.blockSizeZ)]
    smem = c.slot(view.dynamicSharedMemorySize) if view.dynamicSharedMemorySize is not None else None

    def fn(host):
        dims = [int(host.env[s][0]) for s in sizes]
        smem_bytes = int(host.env[smem][0]) if smem is not None else 0
        if smem_bytes > HOPPER_SHARED_MEMORY_PER_BLOCK:
            raise LaunchConfigError(
                f"kernel '{kernel.name}' needs {smem_bytes} bytes of shared memory per block, but a Hopper GPU "
                f"allows at most {HOPPER_SHARED_MEMORY_PER_BLOCK}", code="smem-too-large",
                hint="use smaller tiles or fewer pipeline stages", loc=info.loc)
        Launch(host, kernel, tuple(dims[:3]), tuple(dims[3:]), smem_bytes).run()
    return PLAIN, fn


class Host:
    """The host function's frame: its values, one active lane."""

    def __init__(self, program: "Program", env: list, seed: int | None, output, budget: int | None = None,
                 deadline: Deadline | None = None):
        self.program = program
        self.budget = budget        # scheduling steps a skeleton block may take before the check gives up
        self.deadline = deadline    # and the deadline past which it gives up
        self.env = env
        self.mask = np.zeros(V.LANES, np.bool_)
        self.mask[0] = True
        self.block = None
        self.rng = None if seed is None else random.Random(seed)
        self.output = output
        self.table_taken: int | None = None     # skeletons: how many table entries' branches are taken
        self.table_entries = 0                  # the most entries a skeleton block branched on
        # skeletons: block -> the entries it branched on in a run where every branch was taken; a run taking at
        # least that many is the same run again (see Launch.run)
        self.entries_when_all_taken: dict = {}
        self.units: frozenset | None = None     # skeletons: the warpgroups whose warps run as one unit
        self.trip_cases: TripCases | None = None    # skeletons: the values of clamped trip counts read from a table
        self.probe = None                       # skeletons: the .period.TripProbe loop summaries report to


# How many blocks a seeded schedule runs interleaved at a time (blocks after them start as earlier ones end):
# enough to show two blocks' updates of one element overlapping, few enough to keep memory bounded (each
# running block has its shared memory and race detector).
INTERLEAVED_BLOCKS = 4


class TripCases:
    """Which values a skeleton's clamps of a table's entries take (``protocol.table_branches``: trip counts read on
    the GPU, each between a least and a most value), run after run, so that every block runs every combination of
    the clamps it meets: per block, the values of the first clamps it meets (``prefix``; the ones after take their
    least value), what it met in its last run (``met``: (least, most, value) in order), and the blocks whose every
    combination has run (``done``). The combinations form a tree (which clamps come later may depend on the values
    of earlier ones); :meth:`advance` walks it depth first, as an odometer whose last digit turns fastest."""

    def __init__(self):
        self.prefix: dict = {}
        self.met: dict = {}
        self.done: set = set()
        self.runs = 0

    def advance(self) -> bool:
        """Set each block's next combination after its last run; False once every block has run all of its."""
        self.runs += 1
        for block_id, met in self.met.items():
            if block_id in self.done:
                continue
            values = [value for _, _, value in met]
            i = len(values) - 1
            while i >= 0 and values[i] >= met[i][1]:
                i -= 1
            if i < 0:
                self.done.add(block_id)
            else:
                self.prefix[block_id] = values[:i] + [values[i] + 1]
        return len(self.done) < len(self.met)

    def combinations(self) -> int:
        """A lower bound on the runs left: the combinations of the clamps each block met in its last run."""
        most = 1
        for block_id, met in self.met.items():
            count = 1
            for least, highest, _ in met:
                count *= highest - least + 1
            most = max(most, count if block_id not in self.done else 1)
        return most

    def describe(self, block_id) -> str:
        values = [value for _, _, value in self.met.get(block_id, ())]
        return ", ".join(map(str, values))


class Launch:
    """One kernel launch: the grid, block by block, or with a fuzzing seed a few blocks interleaved."""

    def __init__(self, host: Host, kernel: Kernel, grid, block_dims, smem_bytes: int):
        self.host = host
        self.kernel = kernel
        self.grid = grid
        self.block_dims = block_dims
        self.smem_bytes = smem_bytes
        self.rng = host.rng
        self.output = host.output
        self.global_shadows: dict = {}     # watched buffer -> GlobalShadow: accesses of this launch's blocks
        bx, by, bz = block_dims
        count = bx * by * bz
        warps = (count + V.LANES - 1) // V.LANES
        linear = np.arange(warps * V.LANES, dtype=np.int64)
        self._thread_xyz = (linear % bx, (linear // bx) % by, linear // (bx * by))

    def block_number(self, block_id: tuple[int, int, int]) -> int:
        """A block's number in the grid, x fastest, from 1 (0 stands for no block)."""
        gx, gy, _ = self.grid
        x, y, z = block_id
        return 1 + x + gx * (y + gy * z)

    def block_id(self, number: int) -> tuple[int, int, int]:
        gx, gy, _ = self.grid
        linear = number - 1
        return linear % gx, linear // gx % gy, linear // (gx * gy)

    def thread_x(self, w) -> np.ndarray:
        return self._thread_xyz[0][w.threads]

    def special(self, w, kind: str, axis: int) -> np.ndarray:
        if kind == "thread_id":
            return self._thread_xyz[axis][w.threads]
        values = {"block_id": w.block.block_id, "block_dim": self.block_dims, "grid_dim": self.grid}[kind]
        return np.array([values[axis]], np.int64)

    def warp_env(self, block: Block, index: int, width: int = 1) -> list:
        env = list(self.host.env)
        args = self.kernel.body.args
        threads = np.arange(index * V.LANES, (index + width) * V.LANES, dtype=np.int64)
        values = [np.array([v], np.int64) for v in block.block_id] + \
            [self._thread_xyz[axis][threads] for axis in range(3)] + \
            [np.array([v], np.int64) for v in self.grid] + [np.array([v], np.int64) for v in self.block_dims]
        for slot, value in zip(args, values):
            env[slot] = value
        return env

    def run(self) -> None:
        gx, gy, gz = self.grid
        if self.kernel.skeleton is not None:
            last = (gx - 1, gy - 1, gz - 1)
            host = self.host
            for block_id in [(0, 0, 0)] + ([last] if self.kernel.skeleton == "first-and-last" and any(last) else []):
                met = host.entries_when_all_taken.get((self.kernel, block_id))
                if host.table_taken is not None and met is not None and met <= host.table_taken:
                    # it meets no more entries than are taken: every branch it meets is taken, as in the run where
                    # all were, which found nothing (the skeleton's run is deterministic)
                    continue
                if host.trip_cases is not None and block_id in host.trip_cases.done:
                    continue            # it has run every combination of its trip counts
                block = Block(self, block_id, skeleton=True)
                if host.trip_cases is not None:
                    host.trip_cases.met[block_id] = block.trip_met
                block.run()
                if host.table_taken is None:
                    host.entries_when_all_taken[(self.kernel, block_id)] = len(block.decisions)
            return
        ids = ((x, y, z) for z in range(gz) for y in range(gy) for x in range(gx))
        if self.rng is None:
            for block_id in ids:
                Block(self, block_id).run()
            return
        # a seeded schedule interleaves the warps of up to INTERLEAVED_BLOCKS blocks at a time: each step runs
        # one scheduling step of a block drawn at random; a block that ends makes room for the next one
        running = []
        while True:
            while len(running) < INTERLEAVED_BLOCKS:
                block_id = next(ids, None)
                if block_id is None:
                    break
                running.append(Block(self, block_id).steps())
            if not running:
                return
            chosen = self.rng.randrange(len(running))
            try:
                next(running[chosen])
            except StopIteration:
                running.pop(chosen)


class Program:
    """A traced module (the one ``TracedFunction.trace`` builds, before outlining) compiled for the
    interpreter. ``fuzz`` compiles the extra scheduling points that seeded runs switch warps at."""

    def __init__(self, module: ir.Module, fuzz: bool = False, keep: set | None = None,
                 skeleton_blocks: dict | None = None, block_ops: dict | None = None,
                 symbolic: tuple[set, set, dict] | None = None):
        functions = [op for op in module.body.operations if op.operation.name == "func.func"]
        if len(functions) != 1:
            raise ValueError(f"expected one host function in the module, found {len(functions)}")
        with module.context:
            host = functions[0].regions[0].blocks[0]
            self.scratch = _scratch_specs(functions[0].operation)
            if keep is not None:
                keep = keep | {op.operation for op in host.operations}
            compiler = Compiler(fuzz, keep, block_ops)
            compiler.symbolic, compiler.table_branches, compiler.table_clamps = symbolic or (set(), set(), {})
            compiler.mbarriers = 0
            compiler.skeleton_blocks = skeleton_blocks
            self.host = compiler.block(host)
        self.slot_count = compiler.slot_count
        self.constants = compiler.constants
        self.infos = compiler.infos
        self.module = module

    def run(self, specs: tuple[ArgSpec, ...], args, written: frozenset[int], *, seed: int | None = None,
            output=None) -> None:
        """Run on ``args`` (NumPy arrays and scalars, as ``specs`` describe them); the arrays in
        ``written`` get the results when the run completes."""
        env = self._registers()
        buffers = {}
        for i, (spec, arg, slot) in enumerate(zip(specs, args, self.host.args)):
            if spec.kind == ARRAY:
                with self.module.context:
                    buffers[i] = array = _array_buffer(spec, arg)
                if i in written:
                    array.buffer.watch(spec.shape, spec.dtype.itemsize, spec.element_strides)
                env[slot] = array
            else:
                env[slot] = _scalar(spec, arg)
        with self.module.context:
            for slot, (spec, zero) in zip(self.host.args[len(specs):], self.scratch):
                # nvdsl.empty's contents are undefined: all-ones bytes (NaN, -1) make a read before a write show
                nbytes = spec.dtype.itemsize * span_elements(spec.shape, spec.element_strides)
                data = np.full(nbytes, 0 if zero else 0xFF, np.uint8)
                buffer = Buffer(data, spec.name, GLOBAL)
                buffer.watch(spec.shape, spec.dtype.itemsize, spec.element_strides)
                env[slot] = MemRef(buffer, 0, spec.shape, spec.element_strides, spec.dtype.mlir_type())
        host = Host(self, env, seed, output or _stdout)
        with np.errstate(all="ignore"):
            self.host.run(host)
        for i in written:
            if i in buffers:
                array = args[i]
                np.copyto(array, _as_view(buffers[i].buffer.data, specs[i], array.dtype))

    def _registers(self) -> list:
        """A fresh frame of registers: the constants set, every other value undefined."""
        env = [None] * self.slot_count
        for slot, value in self.constants.items():
            env[slot] = value
        return env

    def run_skeleton(self, specs: tuple[ArgSpec, ...], budget: int, deadline: Deadline | None = None,
                     table_taken: int | None = None, units: frozenset | None = None,
                     all_taken: dict | None = None, scalars: dict[int, int] | None = None, probe=None,
                     trip_cases: TripCases | None = None) -> int:
        """Run a protocol skeleton (``keep=``): arguments are shapes only, nothing is printed; give up (Undecided)
        after ``budget`` scheduling steps of a block or once ``deadline`` passes. Branches on a table's entries
        (``protocol.table_branches``) are taken for the first ``table_taken`` entries a block meets, not for the
        others (None: for all); the warps of the warpgroups in ``units`` run as one unit each (see
        :class:`~.machine.Block`). ``all_taken`` (a dict, filled by a run with ``table_taken`` None that finds
        nothing) holds how many entries each block met with every branch taken; later runs skip the blocks that meet
        no more entries than they take. Scalar arguments are 0 but those ``scalars`` gives (by position); the loop
        summaries report to ``probe`` (a :class:`~.period.TripProbe`). Clamps of a table's entries (trip counts read
        on the GPU) take the values ``trip_cases`` gives. Returns the most entries a block met."""
        env = self._registers()
        scalars = scalars or {}
        with self.module.context:
            for i, (spec, slot) in enumerate(zip(specs + tuple(spec for spec, _ in self.scratch), self.host.args)):
                env[slot] = placeholder_array(spec) if spec.kind == ARRAY else np.array([scalars.get(i, 0)], np.int64)
        host = Host(self, env, None, lambda text: None, budget=budget, deadline=deadline)
        host.probe = probe
        host.table_taken = table_taken
        host.units = units
        host.trip_cases = trip_cases
        if table_taken is not None and all_taken is not None:
            host.entries_when_all_taken = all_taken
        with np.errstate(all="ignore"):
            self.host.run(host)
        if table_taken is None and all_taken is not None:
            all_taken.update(host.entries_when_all_taken)
        return host.table_entries


def _scratch_specs(function: ir.Operation) -> tuple[tuple[ArgSpec, bool], ...]:
    """The host function's scratch arrays (``nvdsl.empty``/``zeros``, its trailing arguments): spec, zeroed."""
    if SCRATCH_ATTR not in function.attributes:
        return ()
    specs = [ScratchSpec.from_json(d) for d in json.loads(ir.StringAttr(function.attributes[SCRATCH_ATTR]).value)]
    return tuple((ArgSpec(f"scratch{j}", ARRAY, s.dtype, s.shape, s.strides), s.zero) for j, s in enumerate(specs))


def _stdout(text: str) -> None:
    sys.stdout.write(text)


def _array_buffer(spec: ArgSpec, arg) -> MemRef:
    if not isinstance(arg, np.ndarray):
        raise ArgumentError(f"argument '{spec.name}' is a device array, which needs a GPU; the interpreter "
                            "runs on NumPy arrays", code="device-array-needs-gpu",
                            hint="pass a NumPy array (e.g. t.cpu().numpy()), or run on a GPU")
    if spec.strides is None:
        data = np.ascontiguousarray(arg).reshape(-1).view(np.uint8).copy()
    else:       # the span the view covers, its own elements copied in (the gaps are zeros no kernel should read)
        data = np.zeros(span_elements(spec.shape, spec.strides) * arg.dtype.itemsize, np.uint8)
        np.copyto(_as_view(data, spec, arg.dtype), arg)
    buffer = Buffer(data, spec.name, GLOBAL)
    return MemRef(buffer, 0, spec.shape, spec.element_strides, spec.dtype.mlir_type(), name=spec.name)


def _as_view(data: np.ndarray, spec: ArgSpec, dtype: np.dtype) -> np.ndarray:
    """The argument's elements in a buffer of bytes laid out as ``spec`` says (row-major or strided)."""
    typed = data.view(dtype)
    if spec.strides is None:
        return typed.reshape(spec.shape)
    return np.lib.stride_tricks.as_strided(typed, spec.shape, [s * dtype.itemsize for s in spec.strides],
                                           writeable=True)


def _scalar(spec: ArgSpec, value) -> np.ndarray:
    dtype = spec.dtype
    if dtype.is_bool:
        return np.array([bool(value)])
    if dtype is dt.bfloat16:
        return V.bf16_round(np.array([float(value)], np.float32))
    if dtype.kind == "u":
        return np.array([int(value)], np.uint64).astype(V.UNSIGNED[dtype.bits]).view(
            np.dtype(f"int{dtype.bits}"))
    return np.array([value], dtype=np.dtype("int64" if dtype.kind == "index" else dtype.name))
