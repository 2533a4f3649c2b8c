"""``Warpgroup``: run a block of the kernel on one warpgroup (128 threads), optionally re-sizing its registers.

``setmaxnreg`` moves registers between the warpgroups of a block: each block gets
``threads x entry`` registers at launch (``entry``: the kernel's register count at
entry, PTX ``.maxnreg``), a decrease returns some to the block's pool and an
increase takes some from it. Once the kernel body is traced, nvdsl sets the
entry count to the smallest multiple of 8 that holds every warpgroup's budget
(warpgroups without one keep the entry count), checks that the block fits the
register file, and gives each ``setmaxnreg`` its direction from the entry count.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import nvvm

from ..target import MAX_ENTRY_REGISTERS, MAXNREG_ATTR, REGISTER_FILE, wgmma_entry_registers
from ..errors import TraceError, user_location
from ..frontend.context import at_user_line, current, current_kernel
from ..frontend.control import when

WARPGROUP_THREADS = 128


def require_sm90a(what: str) -> None:
    """Refuse a Hopper-only instruction (wgmma, setmaxnreg) when the target chip is not sm_90a."""
    options = current(what).options
    chip = options.chip if options is not None else "sm_90a"
    if chip != "sm_90a":
        raise TraceError(f"{what} needs the target sm_90a (Hopper's architecture-specific features), but the "
                         f"kernel is compiled for {chip}", code="needs-sm90a",
                         hint="compile with Options(chip='sm_90a') or NVDSL_CHIP=sm_90a", loc=user_location())


class Warpgroup:
    """``with nvdsl.Warpgroup(ctx, primary_thread, register_size=None):`` runs its body on one warpgroup.

    Args:
        ctx: the kernel's launch context.
        primary_thread: the first thread of the warpgroup (a multiple of 128).
        register_size: when set, the warpgroup's registers per thread are raised or lowered to it
            (``setmaxnreg``; a multiple of 8 between 24 and 256): lower it for producer warpgroups and
            raise it for consumers, so that the register file goes where the math is. Whether it is
            an increase or a decrease follows from the kernel's register count at entry, which nvdsl
            sets (see the module's documentation).
        increase: state the direction (True: ``setmaxnreg.inc``, False: ``.dec``) instead of deriving
            it; the entry count is then chosen to agree, or the kernel is refused.

    Inside the body, ``wg.thread_index`` is the thread's index within the warpgroup (0..127) and
    ``wg.sync()`` synchronises the warpgroup's threads alone.

    Exceptions raised in the body propagate.
    """

    def __init__(self, ctx, primary_thread: int, register_size: int | None = None, *,
                 increase: bool | None = None):
        current_kernel("nvdsl.Warpgroup")
        threads = ctx.block.x * ctx.block.y * ctx.block.z
        if threads % WARPGROUP_THREADS:
            raise TraceError(f"the block has {threads} threads; warpgroups need a multiple of {WARPGROUP_THREADS}",
                             code="bad-warpgroup",
                             hint=f"launch with block=({-(-threads // WARPGROUP_THREADS) * WARPGROUP_THREADS},) or "
                                  f"another multiple of {WARPGROUP_THREADS} threads", loc=user_location())
        if not isinstance(primary_thread, int) or primary_thread % WARPGROUP_THREADS or \
                not 0 <= primary_thread < threads:
            raise TraceError(f"primary_thread={primary_thread!r} must be a multiple of {WARPGROUP_THREADS} "
                             f"below the block's {threads} threads", code="bad-warpgroup",
                             hint="pass primary_thread=0 for the first warpgroup, 128 for the second, up to "
                                  f"{threads - WARPGROUP_THREADS}", loc=user_location())
        if register_size is not None and (not isinstance(register_size, int) or register_size % 8 or
                                          not 24 <= register_size <= 256):
            raise TraceError(f"register_size={register_size!r} must be a multiple of 8 in 24..256",
                             code="bad-warpgroup",
                             hint="pass register_size= a multiple of 8 such as 40 for a producer or 232 for "
                                  "consumers, or leave it out", loc=user_location())
        if increase is not None and (register_size is None or not isinstance(increase, bool)):
            raise TraceError(f"increase={increase!r} needs a register_size and must be True or False",
                             code="bad-warpgroup",
                             hint="pass register_size= with increase=True or False, or leave increase out to derive it",
                             loc=user_location())
        if register_size is not None:
            require_sm90a("Warpgroup(register_size=...) (setmaxnreg)")
        self.ctx, self.primary_thread, self.register_size = ctx, primary_thread, register_size
        #: True for setmaxnreg.inc, False for .dec; None until the kernel's entry count is known
        self.increase = increase
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
                             hint="call wg.sync() inside `with nvdsl.Warpgroup(...) as wg:`; outside it, use "
                                  "ctx.sync_threads()", loc=user_location())
        # Barrier 0 is the block's __syncthreads; warpgroup i uses barrier i + 1.
        # the warpgroup's threads run this body's one instruction: the aligned form is right
        self.ctx.sync_threads(WARPGROUP_THREADS, barrier=self.index + 1, aligned=True)

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
            with at_user_line():  # the direction is settled when the kernel is traced: _RegisterBudget
                op = nvvm.setmaxregister(self.register_size, nvvm.SetMaxRegisterAction.decrease)
            _RegisterBudget.of(ctx).add(self, op, user_location())
        return self

    def __exit__(self, *exc) -> bool:
        self.ctx.warpgroup = None
        self._branch.__exit__(*exc)
        self.thread_index = None
        return False  # never swallow an exception raised in the body


class _RegisterBudget:
    """The setmaxnreg requests of one kernel, settled once its body is traced (``LaunchContext.on_finish``)."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.requests = []  # (warpgroup, setmaxnreg op, source line)

    @classmethod
    def of(cls, ctx) -> "_RegisterBudget":
        budget = getattr(ctx, "_register_budget", None)
        if budget is None:
            budget = ctx._register_budget = cls(ctx)
            ctx.on_finish(budget.settle)
        return budget

    def add(self, warpgroup: Warpgroup, op, where) -> None:
        for other, _, line in self.requests:
            if other.index == warpgroup.index and other.register_size != warpgroup.register_size:
                raise TraceError(f"warpgroup {warpgroup.index} asks for {warpgroup.register_size} registers here "
                                 f"and {other.register_size} at {line}", code="register-budget",
                                 hint=f"give warpgroup {warpgroup.index} the same register_size in every "
                                      "Warpgroup(...) of it", loc=user_location())
        self.requests.append((warpgroup, op, where))

    def settle(self) -> None:
        """Choose the entry count, check the block fits the register file, and set each direction."""
        threads = self.ctx.block.x * self.ctx.block.y * self.ctx.block.z
        budgets = {wg.index: wg for wg, _, _ in self.requests}
        sizes = [wg.register_size for wg in budgets.values()]
        most = min(MAX_ENTRY_REGISTERS, REGISTER_FILE // threads // 8 * 8)
        # The block's pool (threads x entry) must hold every budget; warpgroups without one keep the entry.
        least = -(-sum(sizes) // (8 * len(sizes))) * 8   # their mean, rounded up to a multiple of 8
        products = wgmma_entry_registers(self.ctx.wgmma_widest)     # what ptxas needs to assemble the wgmmas
        least = max(least, products)
        for wg in budgets.values():
            if wg.increase is False:
                least = max(least, wg.register_size)
            elif wg.increase is True:
                most = min(most, wg.register_size)
        if least > most:
            asked = ", ".join(f"warpgroup {i}: {wg.register_size}" + ("" if wg.increase is None else
                              " (increase)" if wg.increase else " (decrease)") for i, wg in sorted(budgets.items()))
            others = threads // WARPGROUP_THREADS - len(budgets)
            widest = f"; a wgmma of {self.ctx.wgmma_widest} columns, {products}" if products == least else ""
            raise TraceError(
                f"the register budgets ({asked}{f'; {others} warpgroup(s) at the entry count' if others else ''}"
                f"{widest}) need an entry count of at least {least} registers per thread, but a block of {threads} "
                f"threads allows at most {most} ({REGISTER_FILE} in the register file)", code="register-budget",
                hint="lower the budgets, or give every warpgroup one (a producer needs few: 24 to 40)",
                loc=self.requests[0][2])
        entry = least
        self.ctx.launch_op.attributes[MAXNREG_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(32), entry)
        for wg, op, _ in self.requests:
            if wg.increase is None:
                wg.increase = wg.register_size > entry
            if wg.register_size == entry:
                op.erase()  # already there: neither an increase nor a decrease
            elif wg.increase:
                op.attributes["action"] = ir.Attribute.parse("#nvvm<action increase>")
