"""``Warpgroup``: run a block of the kernel on one warpgroup (128 threads), optionally re-sizing its registers."""

from __future__ import annotations

from mlir.dialects import nvvm

from ..errors import TraceError, user_location
from ..frontend.context import at_user_line, current_kernel
from ..frontend.control import when

WARPGROUP_THREADS = 128
REGISTER_FILE = 65536  # 32-bit registers per SM on Hopper


class Warpgroup:
    """``with nvdsl.Warpgroup(ctx, primary_thread, register_size=None):`` runs its body on one warpgroup.

    Args:
        ctx: the kernel's launch context.
        primary_thread: the first thread of the warpgroup (a multiple of 128).
        register_size: when set, the warpgroup's registers per thread are raised or lowered to it
            (``setmaxnreg``; a multiple of 8 between 24 and 256). It is an increase when above the
            block's even share (65536 registers / threads), else a decrease: lower it for producer
            warpgroups and raise it for consumers, so that the register file goes where the math is.

    Inside the body, ``wg.thread_index`` is the thread's index within the warpgroup (0..127) and
    ``wg.sync()`` synchronises the warpgroup's threads alone.

    Exceptions raised in the body propagate.
    """

    def __init__(self, ctx, primary_thread: int, register_size: int | None = None):
        current_kernel("nvdsl.Warpgroup")
        threads = ctx.block.x * ctx.block.y * ctx.block.z
        if threads % WARPGROUP_THREADS:
            raise TraceError(f"the block has {threads} threads; warpgroups need a multiple of {WARPGROUP_THREADS}",
                             code="bad-warpgroup", loc=user_location())
        if not isinstance(primary_thread, int) or primary_thread % WARPGROUP_THREADS or \
                not 0 <= primary_thread < threads:
            raise TraceError(f"primary_thread={primary_thread!r} must be a multiple of {WARPGROUP_THREADS} "
                             f"below the block's {threads} threads", code="bad-warpgroup", loc=user_location())
        if register_size is not None and (not isinstance(register_size, int) or register_size % 8 or
                                          not 24 <= register_size <= 256):
            raise TraceError(f"register_size={register_size!r} must be a multiple of 8 in 24..256",
                             code="bad-warpgroup", loc=user_location())
        self.ctx, self.primary_thread, self.register_size = ctx, primary_thread, register_size
        self.increase = (register_size or 0) > REGISTER_FILE // threads
        self._branch = None
        self.thread_index = None

    @property
    def index(self) -> int:
        """Which warpgroup of the block this is (``primary_thread // 128``)."""
        return self.primary_thread // WARPGROUP_THREADS

    def sync(self) -> None:
        """Wait until all 128 threads of this warpgroup reach here (``bar.sync``, a named barrier of its own)."""
        if self.thread_index is None:
            raise TraceError("Warpgroup.sync() is for inside the warpgroup's `with` body", code="bad-warpgroup",
                             loc=user_location())
        # Barrier 0 is the block's __syncthreads; warpgroup i uses barrier i + 1.
        self.ctx.sync_threads(WARPGROUP_THREADS, barrier=self.index + 1)

    def __enter__(self) -> "Warpgroup":
        ctx = self.ctx
        thread = ctx.linear_thread_id
        self.thread_index = thread % WARPGROUP_THREADS
        if ctx.warpgroup is not None:
            raise TraceError(f"a Warpgroup body inside warpgroup {ctx.warpgroup.index}'s body", code="bad-warpgroup",
                             hint="warpgroup bodies are siblings, one per role", loc=user_location())
        self._branch = when((thread // WARPGROUP_THREADS).eq(self.index))
        self._branch.__enter__()
        ctx.warpgroup = self
        if self.register_size is not None:
            action = nvvm.SetMaxRegisterAction.increase if self.increase else nvvm.SetMaxRegisterAction.decrease
            with at_user_line():
                nvvm.setmaxregister(self.register_size, action)
        return self

    def __exit__(self, *exc) -> bool:
        self.ctx.warpgroup = None
        self._branch.__exit__(*exc)
        self.thread_index = None
        return False  # never swallow an exception raised in the body
