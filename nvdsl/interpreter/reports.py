"""Turning a detected conflict into a report that names both lines and what ordering is missing."""

from __future__ import annotations

from ..errors import KernelFault
from .core import OpInfo
from .shadow import Conflict

_FIX = {
    "tma-read-before-complete": "wait (Mbarrier.try_wait) for the phase the TMA load completes on before "
                                "reading its tile, with the parity of that phase",
    "wgmma-operand-overwritten": "release a stage only after the wgmma reading it has retired "
                                 "(accumulate(..., in_flight=n) or nvdsl.wgmma_wait(n) retires all but the "
                                 "newest n products)",
    "tma-store-source-overwritten": "call nvdsl.tma_store_wait(...) (from the storing thread) and synchronise "
                                    "before writing the tile again",
    "missing-proxy-fence": "each writing thread calls nvdsl.fence_shared_to_async() after its stores, then the "
                           "threads synchronise, before TMA or wgmma read the tile",
    "data-race": "order the two accesses with a barrier (ctx.sync_threads, Warpgroup.sync) or an mbarrier",
}


def describe_agent(block, agent: int) -> str:
    kind, index = block.agents.kind(agent)
    if kind == "warp":
        return block.warps[index].describe()
    if kind == "tma":
        return f"a TMA load completing on {_barrier_name(block, index)}"
    if kind == "wgmma":
        return f"the wgmma products of warpgroup {index}"
    if kind == "bulk":
        return f"a TMA store of warp {index}"
    return "an earlier access"


def _barrier_name(block, number: int) -> str:
    for group in block.mbarrier_groups.values():
        for barrier in group.barriers:
            if barrier.agent == number:
                return barrier.name
    return f"mbarrier #{number}"


def race_fault(block, warp, conflict: Conflict, info: OpInfo, access: str, clocks=None) -> KernelFault:
    """The report of a conflict found while ``warp`` (or an async unit it issued) ran ``info``."""
    kind, index = block.agents.kind(conflict.agent)
    other_line = block.line_of(conflict.op)
    lanes = [conflict.lane] if conflict.lane >= 0 and conflict.kind != "unfenced" else None
    where = f"shared byte {conflict.address}"
    if conflict.kind == "unfenced":
        code = "missing-proxy-fence"
        thread = conflict.lane
        message = (f"{access} reads {where}, which thread {thread} wrote with an ordinary store at {other_line}, "
                   f"without a fence.proxy.async (nvdsl.fence_shared_to_async) by that thread in between: the "
                   f"asynchronous proxy may read the old bytes")
    elif conflict.kind == "read-after-write" and kind == "tma":
        code = "tma-read-before-complete"
        phase = conflict.clock - 1
        seen = None
        if clocks is not None and lanes:
            seen = int(clocks[lanes[0]][conflict.agent]) - 1 if clocks.ndim == 2 else int(clocks[conflict.agent]) - 1
        waited = "" if seen is None else (f"; this thread has seen it complete phases up to {seen}" if seen >= 0
                                          else "; this thread has not waited on it")
        message = (f"{access} reads {where}, which the TMA load at {other_line} writes, before the phase it "
                   f"completes on was waited for: the copy counts on phase {phase} of "
                   f"{_barrier_name(block, index)}{waited}")
    elif conflict.kind == "write-after-read" and kind == "wgmma":
        code = "wgmma-operand-overwritten"
        message = (f"{access} writes {where} while the wgmma at {other_line} (warpgroup {index}) may still be reading "
                   f"it: that product's group had not retired (wgmma.wait_group) before the release that lets "
                   f"this write happen")
    elif conflict.kind == "write-after-read" and kind == "bulk":
        code = "tma-store-source-overwritten"
        message = (f"{access} writes {where} while the TMA store at {other_line} (warp {index}) may still be "
                   f"reading it (no cp.async.bulk.wait_group.read retired it first)")
    else:
        code = "data-race"
        verb = {"read-after-write": "written", "write-after-read": "read",
                "write-after-write": "written"}[conflict.kind]
        message = (f"{access} touches {where}, which was {verb} at {other_line} by "
                   f"{describe_agent(block, conflict.agent)} with nothing ordering the two accesses")
    return block.fault(code, message, info, hint=_FIX[code], warp=warp, lanes=lanes,
                       other_line=other_line, address=conflict.address)
