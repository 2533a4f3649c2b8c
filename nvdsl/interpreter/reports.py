"""Turning a detected conflict into a report that names both lines and what ordering is missing."""

from __future__ import annotations

from ..errors import KernelFault
from .core import OpInfo
from .shadow import MANY, Conflict

_FIX = {
    "tma-read-before-complete": "every thread that reads the tile (for wgmma: every thread of the warpgroup, "
                                "not only an elected one) waits (Mbarrier.try_wait) for the phase the TMA load "
                                "completes on, with the parity of that phase, before reading",
    "wgmma-operand-overwritten": "release a stage only after the wgmma reading it has retired "
                                 "(accumulate(..., in_flight=n) or nvdsl.wgmma_wait(n) retires all but the "
                                 "newest n products)",
    "tma-store-source-overwritten": "call nvdsl.tma_store_wait(...) (from the storing thread) and synchronise "
                                    "before writing the tile again",
    "missing-proxy-fence": "each writing thread calls nvdsl.fence_shared_to_async() after its stores, then the "
                           "threads synchronise, before TMA or wgmma read the tile",
    "data-race": "order the two accesses with a barrier (ctx.sync_threads, Warpgroup.sync) or an mbarrier",
    "warp-race": "synchronise the warp between the two accesses with ctx.sync_warp() (bar.warp.sync; every lane "
                 "must reach it, so not inside a branch only some lanes take), or exchange the values with shuffles",
    "stage-refilled-early": "before refilling a stage, wait (at the right parity) on the barrier its consumers "
                            "arrive on once they are done with it",
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


def _waits_when_issued(block, warpgroup: int, group: int, barrier) -> tuple[list, list]:
    """The warps of ``warpgroup`` that had waited on ``barrier`` when they issued wgmma ``group`` (with
    their last wait) and those that had not; a warp that has not issued it yet counts as waited if it
    is waiting on the barrier now."""
    waited, not_waited = [], []
    for w in block.warps[4 * warpgroup:4 * warpgroup + 4]:
        snapshot = w.wgmma_waits.get(group)
        if snapshot is None:
            if w.wait is not None and barrier.name in w.wait.describe():
                waited.append((w.index, (w.wait.info.id, None)))
            continue
        last = snapshot.get(barrier.agent)
        (not_waited if last is None else waited).append((w.index, last))
    return waited, not_waited


def _last_wait(block, warp) -> str:
    if warp is None or warp.last_wait is None:
        return "this warp has not waited on any mbarrier"
    op, barrier, parity, phase = warp.last_wait
    text = f"this warp's last wait was at {block.line_of(op)} on {barrier.name} (parity {parity}"
    if phase < 0:
        return text + ", which a fresh barrier passes at once)"
    arrivals = barrier.completed_arrivals.get(phase, [])
    lines = sorted({block.line_of(a_op) for _, a_op in arrivals})
    text += f", phase {phase})"
    if lines:
        text += f", completed by the arrival{'s' if len(arrivals) > 1 else ''} at {'; '.join(lines)}"
    return text


def race_fault(block, warp, conflict: Conflict, info: OpInfo, access: str, clocks=None,
               barrier=None) -> KernelFault:
    """The report of a conflict found while ``warp`` (or an async unit it issued) ran ``info``;
    ``barrier`` is the mbarrier the current access (a TMA load) completes on."""
    kind, index = block.agents.kind(conflict.agent)
    other_line = block.line_of(conflict.op)
    lanes = [conflict.lane] if conflict.lane >= 0 and conflict.kind != "unfenced" else None
    where = f"shared byte {conflict.address}"
    if conflict.other_thread is not None:
        code, message = "warp-race", _between_lanes(conflict, access, where, other_line)
    elif conflict.kind == "unfenced":
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
        last = warp.waited.get(index) if warp is not None else None
        if last is not None:
            waited += f"; the last wait on it in this warp was at {block.line_of(last[0])} (parity {last[1]})"
        message = (f"{access} reads {where}, which the TMA load at {other_line} writes, before the phase it "
                   f"completes on was waited for: the copy counts on phase {phase} of "
                   f"{_barrier_name(block, index)}{waited}")
    elif conflict.kind == "write-after-read" and kind == "wgmma" and barrier is not None and \
            _waits_when_issued(block, index, conflict.clock, barrier)[1]:
        waited, not_waited = _waits_when_issued(block, index, conflict.clock, barrier)
        code = "tma-read-before-complete"
        others = "; ".join(f"warp {w} is still waiting on it at {block.line_of(last[0])}" if last[1] is None else
                           f"warp {w} last waited on it at {block.line_of(last[0])} (parity {last[1]})"
                           for w, last in waited)
        names = ", ".join(str(w) for w, _ in not_waited)
        message = (f"the wgmma at {other_line} (warpgroup {index}) read {where} before waiting for {barrier.name}, "
                   f"on which {access} completes: warp{'s' if len(not_waited) > 1 else ''} {names} had not waited on "
                   f"it when {'they' if len(not_waited) > 1 else 'it'} issued the product"
                   f"{'; ' + others if others else ''}")
    elif conflict.kind == "write-after-read" and kind == "wgmma":
        code = "wgmma-operand-overwritten"
        message = (f"{access} writes {where} while the wgmma at {other_line} (warpgroup {index}) may still be reading "
                   f"it: that product's group had not retired (wgmma.wait_group) before the release that lets "
                   f"this write happen; {_last_wait(block, warp)}")
    elif conflict.kind == "write-after-read" and kind == "warp" and barrier is not None:
        code, message = _load_over_a_read(block, warp, index, barrier, access, where, other_line)
    elif conflict.kind == "write-after-write" and kind == "tma" and barrier is not None:
        code = "stage-refilled-early"
        message = (f"{access} refills {where} before the data the TMA load at {other_line} put there (phase "
                   f"{conflict.clock - 1} of {_barrier_name(block, index)}) was released by its consumers: nothing "
                   f"orders this load after their release; {_last_wait(block, warp)}")
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


def _between_lanes(conflict: Conflict, access: str, where: str, other_line) -> str:
    """The message of a race between lanes of one warp."""
    other = "other threads" if conflict.other_thread == MANY else f"thread {conflict.other_thread}"
    verb = {"read-after-write": "reads", "write-after-read": "writes", "write-after-write": "writes"}[conflict.kind]
    did = "read" if conflict.kind == "write-after-read" else "wrote"
    return (f"{access} {verb} {where}, which {other} of the same warp {did} at {other_line}\n  nothing "
            f"synchronised the warp in between: its lanes are threads, ordered only by synchronisation "
            f"(independent thread scheduling, since Volta)")


def _load_over_a_read(block, warp, index: int, barrier, access: str, where: str, other_line) -> tuple[str, str]:
    """The code and message of a TMA load writing what warp ``index`` read: a read before the load's own phase
    was waited for, or a stage refilled before its reader released it."""
    reader = block.warps[index]
    observed = int(reader.vc[:, barrier.tma_agent].max()) - 1     # the latest phase the reader saw complete
    last = reader.waited.get(barrier.agent)
    waits = (f"its last wait on {barrier.name} was at {block.line_of(last[0])} (parity {last[1]})"
             if last else f"it never waited on {barrier.name}")
    if barrier.phase == 0 or observed < barrier.phase - 1:   # not the reader of the previous fill
        return "tma-read-before-complete", (f"{access} writes {where}, which warp {index} read at {other_line} "
                                            f"before waiting for the phase of {barrier.name} that this load "
                                            f"completes (phase {barrier.phase}): {waits}")
    return "stage-refilled-early", (f"{access} refills {where}, which warp {index} read at {other_line} (the data "
                                    f"of phase {observed} of {barrier.name}) before releasing it; "
                                    f"{_last_wait(block, warp)}")
