"""``@gpu_launch``: trace a kernel body into a ``gpu.launch``.

The body is a Python function taking one argument, the :class:`LaunchContext`,
through which it reads its thread and block coordinates and asks for shared
memory. Arrays and scalars of the enclosing ``@mlir_func`` are used directly
(the kernel captures them; MLIR's outliner turns them into kernel parameters).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from mlir import ir
from mlir.dialects import arith, gpu, llvm, nvvm

from .. import dtypes as dt
from ..errors import LaunchConfigError, TraceError, user_location
from ..target import OVERLAP_PREVIOUS_ATTR
from .context import at_user_line, current, mlir_location
from .memory import Array, SharedMemoryPlan
from .ranges import Affine, Atom
from .values import Value

MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCK_DIM = (1024, 1024, 64)
MAX_GRID_DIM = (2**31 - 1, 65535, 65535)


@dataclass(frozen=True)
class Dim3:
    """Three coordinates, ``x``, ``y`` and ``z``."""

    x: object
    y: object
    z: object

    def __iter__(self):
        return iter((self.x, self.y, self.z))


class LaunchContext:
    """What a kernel body sees.

    Attributes:
        thread_id, block_id: this thread's coordinates (``index`` values); ``linear_thread_id``
            is the thread's index in the block.
        block_dim, grid_dim: the launch's extents as ``index`` values.
        block, grid: the same extents as Python ints, known while tracing.
        smem: bytes of dynamic shared memory the kernel was launched with.
    """

    def __init__(self, block: ir.Block, grid: tuple, block_shape: tuple, smem: int,
                 shared: SharedMemoryPlan, *, trace=None, name: str = "kernel", launch: ir.Operation | None = None):
        self.trace = trace          # the TraceContext of the host function
        self.name = name            # the kernel's symbol
        self.launch_op = launch     # its gpu.launch (attributes for the compiler go here)
        self.entry_block = block
        # What tracing knows exactly: each id takes every value below its extent, the extents are constants.
        ids = [Affine.of_atom(Atom(f"{kind}.{axis}", n))
               for kind, dims in (("block_id", grid), ("thread_id", block_shape)) for axis, n in zip("xyz", dims)]
        exact = ids + [Affine(n) for n in (*grid, *block_shape)]
        args = [Value(a, dt.index, scope=self, exact=e) for a, e in zip(block.arguments, exact)]
        self.block_id = Dim3(*args[0:3])
        self.thread_id = Dim3(*args[3:6])
        self.grid_dim = Dim3(*args[6:9])
        self.block_dim = Dim3(*args[9:12])
        self.grid = Dim3(*grid)
        self.block = Dim3(*block_shape)
        self.smem = smem
        self._shared = shared
        #: The ``nvdsl.Warpgroup`` whose body is being traced (None outside any).
        self.warpgroup = None
        #: wgmma groups committed so far in the trace, and how many may still run after the last wait.
        self.wgmma_committed = 0
        self.wgmma_in_flight = 0
        self.wgmma_widest = 0            # the most accumulator columns (N) of a wgmma traced: the entry count's floor
        self._wgmma_bound_block = None   # the block of the wait that set the bound, see commit_needs_wait
        self._wgmma_commit_blocks = []   # the block each group was committed in, in order (see groups_after)
        self.wgmma_group = None      # the open ``nvdsl.wgmma_group``, if any
        self._wgmma_listeners = []
        self._finishers = []
        self._regions = []   # (parent block, body block, condition) of the when blocks and loops being traced

    def enter_region(self, parent: ir.Block, body: ir.Block, condition: tuple | None) -> int:
        """Note that tracing goes on in ``body``, a region of an op made in ``parent`` that a thread enters
        where ``condition`` holds (see ``ranges``; None: not understood). Returns what ``leave_region`` takes."""
        depth = len(self._regions)
        if condition is not None:
            self._regions.append((parent, body, condition))
        return depth

    def leave_region(self, depth: int) -> None:
        del self._regions[depth:]

    def reached_under(self) -> tuple | None:
        """The condition under which a thread reaches the code being traced (forms over thread and block ids
        and loop trips that must each be <= 0), or None where a region around it is not understood: a branch
        on a loaded value, an ``otherwise``, a loop with traced bounds, a region of an op nvdsl did not note."""
        expected, condition = self.entry_block, ()
        for parent, body, more in self._regions:
            if parent != expected:
                return None
            expected, condition = body, condition + more
        return condition if ir.InsertionPoint.current.block == expected else None

    @property
    def shared(self) -> SharedMemoryPlan:
        """The kernel's shared-memory allocator (for primitives that place their own buffers)."""
        return self._shared

    def on_finish(self, finisher) -> None:
        """Call ``finisher()`` once the whole body is traced (e.g. to fix a count derived from later code)."""
        self._finishers.append(finisher)

    def on_wgmma_wait(self, listener) -> None:
        """Call ``listener(in_flight)`` after every wgmma wait this kernel emits."""
        self._wgmma_listeners.append(listener)

    def note_wgmma(self, committed: int, in_flight: int, *, waited: bool = True) -> None:
        """Record that ``committed`` wgmma groups were committed and then at most ``in_flight`` left running
        (after a wait, or, with ``waited=False``, because no more can be running)."""
        self.wgmma_committed += committed
        self.wgmma_in_flight = in_flight
        if committed:
            self._wgmma_commit_blocks += [ir.InsertionPoint.current.block] * committed
        if waited:
            self._wgmma_bound_block = ir.InsertionPoint.current.block
        for listener in self._wgmma_listeners:
            listener(in_flight)

    def commit_needs_wait(self, in_flight: int) -> bool:
        """Whether a wait for at most ``in_flight`` groups is needed after committing one more group.

        It is not when the bound on the groups still running was set by a wait earlier in this same
        block (straight-line code: no loop back edge or branch in between) and one more group stays within
        ``in_flight``. ptxas serializes the wgmma pipeline around a ``wgmma.wait_group`` that it cannot see
        to be redundant, e.g. ``wait_group 2`` right after the second of two commits.
        """
        return not (self._wgmma_bound_in(ir.InsertionPoint.current.block) and self.wgmma_in_flight + 1 <= in_flight)

    def wgmma_groups_after(self, group: int) -> int | None:
        """How many wgmma groups were committed after group number ``group`` (1 for the trace's first), where
        it and all of them were committed in the block being traced (straight-line code: each ran, in order);
        else None."""
        here = ir.InsertionPoint.current.block
        if group < 1 or any(block != here for block in self._wgmma_commit_blocks[group - 1:]):
            return None
        return self.wgmma_committed - group

    def wgmma_retired(self, group: int) -> bool:
        """Whether group number ``group`` is known to have retired: the bound on running groups was set by a
        wait in the block being traced and leaves it out."""
        return self._wgmma_bound_in(ir.InsertionPoint.current.block) and \
            group <= self.wgmma_committed - self.wgmma_in_flight

    def _wgmma_bound_in(self, block: ir.Block) -> bool:
        """Whether the bound on running wgmma groups was set by a wait in ``block`` itself."""
        return self._wgmma_bound_block is not None and self._wgmma_bound_block == block

    def wgmma_bound_at_loop(self, body: ir.Block):
        """Call before tracing a loop whose body is ``body``; call what it returns once the body is traced.

        After the loop at most as many groups run as before it or at its body's end, whichever is more;
        that bound holds in the code after the loop only where both were set in straight-line code (the
        body's own bound from a wait in its block).
        """
        before, outer = self.wgmma_in_flight, ir.InsertionPoint.current.block
        before_here = self._wgmma_bound_in(outer)

        def after() -> None:
            self.wgmma_in_flight = max(before, self.wgmma_in_flight)
            self._wgmma_bound_block = outer if before_here and self._wgmma_bound_in(body) else None
        return after

    def launch_dependents(self) -> None:
        """Let the kernel launched next in the stream with ``gpu_launch(..., overlap_previous=True)`` start once
        every block of this one has passed here (PTX ``griddepcontrol.launch_dependents``): its blocks take their
        places on the SMs while this kernel runs and wait in their first instruction until it has completed and
        its writes are visible, so its launch costs no gap. Without it, that kernel starts as this one ends."""
        with mlir_location(user_location()):
            nvvm.griddepcontrol(nvvm.GridDepActionKind.launch_dependents)

    @property
    def linear_thread_id(self) -> Value:
        """This thread's index in the block, x fastest (an ``index`` value)."""
        t, b = self.thread_id, self.block
        if b.y == 1 and b.z == 1:
            return t.x
        with at_user_line():
            return t.x + t.y * b.x + t.z * (b.x * b.y)

    def sync_threads(self, threads: int | None = None, *, barrier: int = 9, aligned: bool = False) -> None:
        """Barrier for all threads of the block (``gpu.barrier``, PTX ``bar.sync 0``), or, with
        ``threads``, for that many threads (a multiple of 32) meeting at named barrier ``barrier``
        (``barrier.sync barrier, threads``: the threads may arrive from different code, e.g. the bodies
        of several ``nvdsl.Warpgroup`` roles). Named barriers 1 to 8 belong to ``Warpgroup.sync`` of
        warpgroups 0 to 7; use 9 to 15 for other groups of warps. ``aligned=True`` emits ``bar.sync``
        (``barrier.sync.aligned``), which requires every participating thread to execute this very
        instruction (compute-sanitizer's synccheck reports it otherwise).
        """
        if threads is None:
            with at_user_line():
                gpu.barrier()
            return
        ids = self._named_barrier(threads, barrier, "sync_threads")
        with at_user_line():
            if aligned:
                nvvm.BarrierOp(None, barrierId=ids[0], numberOfThreads=ids[1])
            else:
                # Threads of different code paths (one per warpgroup role) meet here: PTX's bar.sync is
                # barrier.sync.aligned, for threads that all execute the same instruction; this one is not.
                llvm.inline_asm(None, ids, "barrier.sync $0, $1;", "r,r", has_side_effects=True, asm_dialect=0)

    def sync_warp(self) -> None:
        """Synchronise the threads of this thread's warp (``nvvm.bar.warp.sync`` with the full mask: PTX
        ``bar.warp.sync 0xffffffff``, CUDA's ``__syncwarp()``).

        Each thread waits for the warp's other threads, and their memory accesses before it are ordered
        before those after it. Since Volta the lanes of a warp are independent threads: an exchange through
        shared memory between lanes of one warp (a warp-synchronous reduction, ``s[lane] += s[lane + 16]``,
        then ``+ 8``, ...) needs it between its steps. Every thread of the warp must reach it: call it
        outside branches that only some lanes take.
        """
        with at_user_line():
            nvvm.SyncWarpOp(arith.constant(ir.IntegerType.get_signless(32), -1))

    def arrive_threads(self, threads: int, *, barrier: int) -> None:
        """Arrive at named barrier ``barrier`` of ``threads`` threads without waiting (``barrier.arrive``).

        The signalling side of a barrier that other warps wait at with ``sync_threads(threads,
        barrier=...)``: the barrier completes once ``threads`` threads have arrived, counting both
        sides. For ordering roles, e.g. two consumer warpgroups taking turns at issuing their products.
        """
        ids = self._named_barrier(threads, barrier, "arrive_threads")
        with at_user_line():
            llvm.inline_asm(None, ids, "barrier.arrive $0, $1;", "r,r", has_side_effects=True, asm_dialect=0)

    def _named_barrier(self, threads, barrier, what: str) -> list:
        total = self.block.x * self.block.y * self.block.z
        if not (isinstance(threads, int) and 0 < threads <= total and threads % 32 == 0):
            raise TraceError(f"{what}(threads={threads!r}) needs a multiple of 32 up to the block's "
                             f"{total} threads", code="bad-barrier",
                             hint=f"pass threads= a multiple of 32 between 32 and {total}, e.g. 128 for one warpgroup",
                             loc=user_location())
        if not (isinstance(barrier, int) and 1 <= barrier <= 15):
            raise TraceError(f"barrier={barrier!r} must be a named barrier id in 1..15 (0 is the whole block's)",
                             code="bad-barrier",
                             hint="pass barrier= an int from 1 to 15; use ctx.sync_threads() for the whole block",
                             loc=user_location())
        i32 = ir.IntegerType.get_signless(32)
        with at_user_line():
            return [arith.constant(i32, barrier), arith.constant(i32, threads)]

    def shared_array(self, shape, dtype: dt.DType, *, align: int = 16) -> Array:
        """A shared-memory array of fixed shape, placed after the ``smem`` bytes of dynamic views.

        The launch's shared memory grows by its size; the total is checked against the device's limit.
        """
        with at_user_line():
            return self._shared.static_array(shape, dtype, align)

    def dynamic_shared(self, shape, dtype: dt.DType, *, offset: int | None = None,
                       align: int = 16) -> Array:
        """A typed view into the dynamic shared memory (``smem=`` bytes of the launch).

        Views without ``offset`` are placed one after the other, each aligned to ``align`` bytes.
        """
        with at_user_line():
            return self._shared.dynamic_view(shape, dtype, offset, align)


def _dims(value, what: str, limits: tuple[int, int, int]) -> tuple[int, int, int]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not 1 <= len(value) <= 3 or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        hint = ("grid and block sizes are fixed when the kernel is traced: compute them from "
                "array shapes (Python ints), not from traced values") if any(
            isinstance(v, Value) for v in (value if isinstance(value, (tuple, list)) else [value])) else \
            f"pass {what}=n or {what}=(x, y, z) with Python ints (int(n) of a NumPy number)"
        raise LaunchConfigError(f"{what}={value!r} must be a Python int or a tuple of 1 to 3 ints",
                                code="bad-launch-config", hint=hint, loc=user_location())
    dims = tuple(value) + (1,) * (3 - len(value))
    for axis, (d, limit) in zip("xyz", zip(dims, limits)):
        if not 1 <= d <= limit:
            hint = (f"{what}.{axis} = 0 comes from an empty array: launch only where there is work "
                    "(`if n: kernel()`)" if d == 0 and what == "grid" else
                    f"split the work over more blocks (grid) of fewer threads" if what == "block" else
                    f"put the rest of {what}.{axis}'s extent on another axis, or loop over it in each block"
                    if d > limit else f"{what} extents count blocks or threads: at least 1")
            raise LaunchConfigError(f"{what}.{axis}={d} is outside 1..{limit}",
                                    code="bad-launch-config", hint=hint, loc=user_location())
    return dims


def _check_body(body) -> None:
    name = getattr(body, "__name__", repr(body))
    try:
        signature = inspect.signature(body)
    except TypeError:
        raise TraceError(f"gpu_launch decorates a function 'def body(ctx): ...', not {body!r}",
                         code="bad-kernel-signature",
                         hint="write the kernel body as `def body(ctx): ...` under @nvdsl.gpu_launch(grid=..., "
                              "block=...)", loc=user_location()) from None
    except ValueError:  # a builtin without a signature: calling it will tell
        return
    try:
        signature.bind(None)
    except TypeError:
        raise TraceError(f"kernel body '{name}{signature}' must take exactly one argument, the launch context",
                         code="bad-kernel-signature",
                         hint=f"write 'def {name}(ctx): ...' and read ctx.thread_id, ctx.block_id, ... from it",
                         loc=user_location()) from None


class Kernel:
    """A kernel body with its launch configuration; calling it inside ``@mlir_func`` emits the launch."""

    def __init__(self, body, grid, block, smem: int, overlap_previous: bool = False):
        _check_body(body)
        self.body = body
        self.grid = _dims(grid, "grid", MAX_GRID_DIM)
        self.block = _dims(block, "block", MAX_BLOCK_DIM)
        threads = self.block[0] * self.block[1] * self.block[2]
        if threads > MAX_THREADS_PER_BLOCK:
            raise LaunchConfigError(
                f"block={self.block} has {threads} threads; a CUDA block holds at most "
                f"{MAX_THREADS_PER_BLOCK}", code="block-too-large",
                hint="use more blocks (grid) and fewer threads per block", loc=user_location())
        if not isinstance(smem, int) or isinstance(smem, bool) or smem < 0:
            raise LaunchConfigError(f"smem={smem!r} must be a non-negative number of bytes",
                                    code="bad-launch-config", hint="pass smem=0 where the kernel takes no dynamic "
                                    "shared memory, else its size in bytes as a Python int", loc=user_location())
        self.smem = smem
        if not isinstance(overlap_previous, bool):
            raise LaunchConfigError(f"overlap_previous={overlap_previous!r} must be True or False",
                                    code="bad-launch-config",
                                    hint="pass overlap_previous=True or False (a Python bool)", loc=user_location())
        self.overlap_previous = overlap_previous

    def __call__(self, *args, **kwargs) -> None:
        if args or kwargs:
            raise TraceError(f"kernel '{self.body.__name__}' takes no arguments when launched",
                             code="bad-kernel-call",
                             hint="kernel bodies use the arrays and scalars of the enclosing function directly",
                             loc=user_location())
        trace = current(f"launching kernel '{self.body.__name__}'")
        if trace.kernel is not None:
            raise TraceError("a kernel cannot launch another kernel", code="nested-launch",
                             hint="launch each kernel from the @mlir_func body, one after the other, not from inside "
                                  "another kernel", loc=user_location())
        name = trace.unique_name(f"{trace.name}_{self.body.__name__}")
        with mlir_location(user_location()):
            index = ir.IndexType.get()
            grid = [arith.constant(index, g) for g in self.grid]
            block = [arith.constant(index, b) for b in self.block]
            # The size is final once the body has placed its shared arrays; it is set after tracing.
            smem = arith.constant(ir.IntegerType.get_signless(32), self.smem)
            op = gpu.LaunchOp(tuple(grid), tuple(block), dynamic_shared_memory_size=smem)
            op.attributes["function"] = ir.FlatSymbolRefAttr.get(name)
            # One gpu.module per traced function: one PTX module, one cubin, one load.
            op.attributes["module"] = ir.FlatSymbolRefAttr.get(f"{trace.name}_kernels")
            if self.overlap_previous:
                op.attributes[OVERLAP_PREVIOUS_ATTR] = ir.UnitAttr.get()
        entry = op.body.blocks[0]
        shared = SharedMemoryPlan(entry, self.smem)
        ctx = LaunchContext(entry, self.grid, self.block, self.smem, shared, trace=trace, name=name,
                            launch=op.operation)
        trace.kernel = ctx
        open_loops = len(trace.open_loops)
        try:
            with ir.InsertionPoint(entry):
                if self.overlap_previous:       # nothing of the body runs before the previous kernel completed
                    with mlir_location(user_location()):
                        nvvm.griddepcontrol(nvvm.GridDepActionKind.wait)
                try:
                    result = self.body(ctx)
                except BaseException:
                    trace.close_open_loops(open_loops)
                    raise
                if result is not None:
                    raise TraceError(f"kernel body '{self.body.__name__}' returned a value",
                                     code="kernel-returns",
                                     hint="kernels write their results into arrays", loc=user_location())
                for finish in ctx._finishers:
                    finish()
                with mlir_location(user_location()):
                    gpu.terminator()
            smem.owner.attributes["value"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32),
                                                                shared.total_bytes)
        finally:
            trace.kernel = None


def gpu_launch(grid, block, smem: int = 0, *, overlap_previous: bool = False):
    """Decorate a kernel body ``def body(ctx): ...`` traced into a ``gpu.launch``.

    Args:
        grid: blocks per grid, an int or a tuple of up to three ints.
        block: threads per block, an int or a tuple of up to three ints (1024 threads at most).
        smem: bytes of dynamic shared memory for ``ctx.dynamic_shared`` views; ``ctx.shared_array``
            adds its arrays' bytes. Above 48 KiB in all the runtime opts in, up to the device's limit.
        overlap_previous: launch as a programmatic dependent of the kernel before it in the stream (CUDA's
            programmatic dependent launch): the launch overlaps that kernel's end (or more of it, where that
            kernel calls ``ctx.launch_dependents()``), and the body starts with a wait until that kernel has
            completed and its writes are visible, so results are those of an ordinary launch. For a short kernel
            that reads what the one before it wrote (a reduction of partial results): it saves the gap between
            the two, a few microseconds.

    Call the decorated body (with no arguments) to launch it.
    """
    def decorate(body) -> Kernel:
        return Kernel(body, grid, block, smem, overlap_previous)
    return decorate
