"""``Mbarriers``: a group of shared-memory barriers for asynchronous copies and producer/consumer handoff."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import nvgpu

from .. import dtypes as dt
from ..errors import TraceError, user_location
from ..frontend.context import at_user_line, current_kernel
from ..frontend.values import Value, _index_value, as_value


def _predicate(predicate):
    if predicate is None:
        return None
    if not (isinstance(predicate, Value) and predicate.dtype.is_bool):
        raise TraceError(f"predicate must be a traced bool, got {predicate!r}", code="bad-predicate",
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
                             loc=user_location())
        current_kernel("indexing Mbarriers")
        with at_user_line():
            return Mbarrier(self, _index_value(index, "an mbarrier index"))

    def __len__(self) -> int:
        return self.count


class Mbarrier:
    """One barrier of an :class:`Mbarriers` group."""

    def __init__(self, group: Mbarriers, index: ir.Value):
        self.group = group
        self.index = index

    def init(self, arrivals, *, predicate=None) -> None:
        """Expect ``arrivals`` arrivals per phase (``mbarrier.init.shared.b64``); usually one thread does this."""
        current_kernel("Mbarrier.init")
        with at_user_line():
            nvgpu.mbarrier_init(self.group.ir, _index_value(arrivals, "the arrival count"), self.index,
                                predicate=_predicate(predicate))

    def arrive(self, tx_bytes=None, *, predicate=None) -> None:
        """Arrive; with ``tx_bytes``, also expect that many bytes of asynchronous copies
        (``mbarrier.arrive.expect_tx.shared.b64``), else a plain ``mbarrier.arrive.shared.b64``."""
        current_kernel("Mbarrier.arrive")
        with at_user_line():
            if tx_bytes is None:
                if predicate is not None:
                    raise TraceError("a predicate is only supported with tx_bytes", code="bad-predicate",
                                     hint="wrap the arrive in nvdsl.when(...)", loc=user_location())
                nvgpu.mbarrier_arrive(self.group.ir, self.index)
            else:
                nvgpu.mbarrier_arrive_expect_tx(self.group.ir, _index_value(tx_bytes, "tx_bytes"), self.index,
                                                predicate=_predicate(predicate))

    def try_wait(self, phase, *, ticks: int = 10_000_000) -> None:
        """Wait until the barrier's ``phase`` (parity 0 or 1) completes (``mbarrier.try_wait.parity``,
        retried in a loop; each try suspends for at most ``ticks`` nanoseconds)."""
        current_kernel("Mbarrier.try_wait")
        with at_user_line():
            if isinstance(phase, Value) and phase.dtype.is_int:
                phase = (phase & 1).ne(0)
            elif isinstance(phase, int):
                phase = bool(phase & 1)
            phase = as_value(phase, dt.bool_, "the phase parity")
            nvgpu.mbarrier_try_wait_parity(self.group.ir, phase.ir, _index_value(ticks, "ticks"), self.index)
