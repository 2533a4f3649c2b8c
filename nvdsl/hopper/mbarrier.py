"""``Mbarriers``: a group of shared-memory barriers for asynchronous copies and producer/consumer handoff."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm, nvgpu, nvvm, scf

from .. import dtypes as dt
from ..errors import TraceError, user_location
from ..frontend.context import at_user_line, current, current_kernel
from ..frontend.control import print_, when
from ..frontend.values import Value, as_value, convert, index_value, python_number


# Under Options.debug (NVDSL_DEBUG=1) a wait given no timeout_ns gives up after this long, with a report.
DEBUG_WAIT_TIMEOUT_NS = 2_000_000_000


def _predicate(predicate):
    if predicate is None:
        return None
    if not (isinstance(predicate, Value) and predicate.dtype.is_bool):
        raise TraceError(f"predicate must be a traced bool, got {predicate!r}", code="bad-predicate",
                         hint="pass a comparison such as ctx.thread_id.x == 0, or leave predicate out",
                         loc=user_location())
    return predicate.ir


class Mbarriers:
    """``count`` mbarriers in shared memory (``nvgpu.mbarrier.create``, PTX ``.shared .b64``).

    ``mbars[i]`` is a handle on barrier ``i`` (a new handle each time; handles never alias).
    """

    def __init__(self, count: int):
        ctx = current_kernel("nvdsl.Mbarriers")
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise TraceError(f"Mbarriers(count={count!r}) needs a positive Python int", code="bad-mbarrier",
                             hint="pass the number of barriers as a positive Python int, e.g. nvdsl.Mbarriers(2)",
                             loc=user_location())
        self.count = count
        self.type = ir.Type.parse(
            f"!nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = {count}>")
        # At the kernel's entry, so that every region of the kernel can use the barriers.
        with at_user_line(), ir.InsertionPoint.at_block_begin(ctx.entry_block):
            self.ir = nvgpu.mbarrier_create(self.type)

    def __getitem__(self, index) -> "Mbarrier":
        if isinstance(index, int) and not 0 <= index < self.count:
            raise TraceError(f"mbarrier index {index} is outside 0..{self.count - 1}", code="out-of-bounds",
                             hint=f"use an index in 0..{self.count - 1}, or make more barriers (Mbarriers(n) holds n)",
                             loc=user_location())
        current_kernel("indexing Mbarriers")
        with at_user_line():
            return Mbarrier(self, index_value(index, "an mbarrier index"))

    def __len__(self) -> int:
        return self.count


class Mbarrier:
    """One barrier of an :class:`Mbarriers` group."""

    def __init__(self, group: Mbarriers, index: ir.Value):
        self.group = group
        self.index = index

    def init(self, arrivals, *, predicate=None) -> None:
        """Expect ``arrivals`` arrivals per phase (``mbarrier.init.shared.b64``; 1 to 2^20 - 1); usually one
        thread does this."""
        current_kernel("Mbarrier.init")
        _check_count(arrivals, "Mbarrier.init: the arrival count", 1)
        with at_user_line():
            nvgpu.mbarrier_init(self.group.ir, index_value(arrivals, "the arrival count"), self.index,
                                predicate=_predicate(predicate))

    def arrive(self, tx_bytes=None, *, predicate=None) -> None:
        """Arrive; with ``tx_bytes``, also expect that many bytes of asynchronous copies
        (``mbarrier.arrive.expect_tx.shared.b64``), else a plain ``mbarrier.arrive.shared.b64``."""
        current_kernel("Mbarrier.arrive")
        if tx_bytes is not None:
            _check_count(tx_bytes, "Mbarrier.arrive: tx_bytes", 0)
        with at_user_line():
            if tx_bytes is None:
                if predicate is not None:
                    raise TraceError("a predicate is only supported with tx_bytes", code="bad-predicate",
                                     hint="wrap the arrive in nvdsl.when(...)", loc=user_location())
                nvgpu.mbarrier_arrive(self.group.ir, self.index)
            else:
                nvgpu.mbarrier_arrive_expect_tx(self.group.ir, index_value(tx_bytes, "tx_bytes"), self.index,
                                                predicate=_predicate(predicate))

    def try_wait(self, phase, *, ticks=None, timeout_ns: int | None = None) -> None:
        """Wait until the barrier's ``phase`` (parity 0 or 1) completes: ``mbarrier.try_wait.parity``
        retried in a loop, each try suspending for the hardware's time limit, or for at most ``ticks``
        nanoseconds when given (a suspend-time hint).

        Without ``ticks`` the loop is CUTLASS's (no hint), an ``scf.while`` whose branch the compiler
        treats as one threads may take differently. With ``ticks`` it is nvgpu's lowering, whose retry
        loop ptxas compiles around a ``NANOSLEEP`` that threads may leave separately while its branch
        is declared warp-uniform (``bra.uni``).

        By default the wait has no bound: a phase that never completes hangs the kernel. With
        ``timeout_ns`` (a positive Python int) the loop reads ``%globaltimer``; a thread still waiting
        after ``timeout_ns`` nanoseconds prints a report (``vprintf``: the Python line, the barrier
        index, the expected phase parity, its block, warpgroup and thread) and executes ``trap;``, so
        the launch fails with a :class:`~nvdsl.CudaError` instead of hanging. Under
        ``Options(debug=True)`` (``NVDSL_DEBUG=1``) every wait without a ``timeout_ns`` is bounded by
        ``DEBUG_WAIT_TIMEOUT_NS`` (2 s). Meant for finding deadlocks; a trapped kernel leaves the CUDA
        context unusable for the rest of the process.
        """
        ctx = current_kernel("Mbarrier.try_wait")
        if timeout_ns is not None and (not isinstance(timeout_ns, int) or isinstance(timeout_ns, bool)
                                       or not 0 < timeout_ns < 1 << 63):
            raise TraceError(f"timeout_ns={timeout_ns!r} must be a positive Python int (nanoseconds)",
                             code="bad-timeout", hint="e.g. timeout_ns=1_000_000_000 for one second; "
                             "leave it out for an unbounded wait", loc=user_location())
        options = current("Mbarrier.try_wait").options
        if timeout_ns is None and options is not None and options.debug:
            timeout_ns = DEBUG_WAIT_TIMEOUT_NS
        with at_user_line():
            parity = _parity(phase)
            if timeout_ns is None and ticks is not None:
                nvgpu.mbarrier_try_wait_parity(self.group.ir, parity.ir, index_value(ticks, "ticks"), self.index)
            else:
                self._wait_loop(ctx, parity, ticks, timeout_ns)

    def _wait_loop(self, ctx, parity: Value, ticks, timeout_ns: int | None) -> None:
        """The loop of :meth:`try_wait`: one ``mbarrier.try_wait.parity`` per round (with the ``ticks``
        hint when given) in an ``scf.while``; with ``timeout_ns``, ``%globaltimer`` against the deadline
        after each round, and ``trap;`` past it."""
        where = user_location()
        i1, i32, i64 = (ir.IntegerType.get_signless(bits) for bits in (1, 32, 64))
        hint = {}
        if isinstance(ticks, int):  # with a deadline, a single try never suspends past it
            hint["ticks"] = as_value(ticks if timeout_ns is None else min(ticks, timeout_ns), dt.uint32, "ticks").ir
        elif ticks is not None:
            hint["ticks"] = arith.index_castui(i32, index_value(ticks, "ticks"))
        address = llvm.inttoptr(ir.Type.parse("!llvm.ptr<3>"), nvgpu.mbarrier_get(i64, self.group.ir, self.index))
        expected = convert(parity, dt.int32).ir
        start = nvvm.read_ptx_sreg_globaltimer(i64) if timeout_ns is not None else None
        loop = scf.WhileOp([], [])
        with ir.InsertionPoint(loop.before.blocks.append()):
            done = nvvm.MBarrierTryWaitOp(i1, address, expected, **hint).result
            scf.condition(arith.xori(done, arith.constant(i1, 1)), [])
        if timeout_ns is None:
            with ir.InsertionPoint(loop.after.blocks.append()):
                scf.yield_([])
            return
        with ir.InsertionPoint(loop.after.blocks.append()):
            elapsed = Value(arith.subi(nvvm.read_ptx_sreg_globaltimer(i64), start), dt.uint64)
            with when(elapsed > timeout_ns):
                print_("nvdsl: mbarrier wait timed out after {} ns at {}: barrier {} of {} never completed "
                       "phase parity {} (block ({}, {}, {}), warpgroup {}, thread ({}, {}, {}))", timeout_ns,
                       where if where is not None else "an unknown line", Value(self.index, dt.index),
                       f"Mbarriers({self.group.count})", parity, *ctx.block_id, ctx.linear_thread_id // 128,
                       *ctx.thread_id)
                llvm.intr_trap()
            scf.yield_([])


MAX_COUNT = (1 << 20) - 1  # PTX: an mbarrier's arrival count and pending transaction bytes


def _check_count(count, what: str, least: int) -> None:
    """A Python-int arrival count or transaction byte count must be in PTX's range (traced ones pass)."""
    count = python_number(count)
    if isinstance(count, int) and not isinstance(count, bool) and not least <= count <= MAX_COUNT:
        raise TraceError(f"{what} is {count}, outside {least}..{MAX_COUNT} (2^20 - 1, the mbarrier's limit)",
                         code="bad-mbarrier",
                         hint="an mbarrier counts at least one arrival per phase" if count < least else
                              "split the copies over more barriers or phases", loc=user_location())


def _parity(phase) -> Value:
    """A phase (a Python int or bool, or a traced integer or bool) as its parity, a traced bool."""
    if isinstance(phase, Value) and phase.dtype.is_int:
        return (phase & 1).ne(0)
    if isinstance(phase, int):
        phase = bool(phase & 1)
    return as_value(phase, dt.bool_, "the phase parity")
