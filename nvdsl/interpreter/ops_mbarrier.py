"""mbarriers: ``nvgpu.mbarrier.*``, ``nvvm.mbarrier.try_wait*``, and the fences of mbarrier initialisation and of
clusters (which change nothing here: blocks run one at a time, clusters are not modelled).

A phase completes when its pending arrivals and its transaction bytes (``expect_tx``, delivered by TMA loads,
:mod:`.ops_tma`) both reach zero; a wait on a parity passes once a phase of that parity completed, and orders
what the arrivals before it released before the waiting thread's later accesses. A thread's waits on one barrier
see its phases in order, each once: a wait that passes at once on a phase its threads already waited for (a parity
not flipped where a ring wraps) is refused at the wait (``stale-phase-wait``).
"""

from __future__ import annotations

import re

import numpy as np

from .core import GEN, PLAIN, SYNC, Wait, handles
from .values import LANES
from .sync import MBARRIER_BASE, MBARRIER_GROUP_STRIDE, MbarrierGroup

_NO_LANES = np.zeros(0, np.int64)


def predicated_lanes(w, predicate_slot):
    """The active lanes for which the operation's predicate (None: no predicate) holds."""
    if predicate_slot is None:
        return w.lanes()
    predicate = w.env[predicate_slot]
    if predicate.shape[0] == 1:
        return w.lanes() if predicate[0] else _NO_LANES
    return np.flatnonzero(w.mask & predicate)


def per_lane(value: np.ndarray, lane: int):
    """A lane's element of a register value (held once where all lanes agree)."""
    return value[0] if value.shape[0] == 1 else value[lane]


_NUM_BARRIERS = re.compile(r"num_barriers\s*=\s*(\d+)")


@handles("nvgpu.mbarrier.create")
def _create(op, c, info):
    match = _NUM_BARRIERS.search(str(op.result.type))
    count = int(match.group(1)) if match else 1
    first = c.mbarriers
    c.mbarriers += count
    r = c.slot(op.result)

    def fn(w):
        block = w.block
        group = block.mbarrier_groups.get(info.id)
        if group is None:
            group = block.mbarrier_groups[info.id] = MbarrierGroup(
                count, len(block.mbarrier_groups), first, block.agents, block.agents.count, f"Mbarriers({count})",
                block.warp_count * LANES)
        w.env[r] = group
    return PLAIN, fn


def indexed_barrier(w, group, index_slot, lane: int, info):
    """The barrier of ``group`` whose index a lane holds in ``index_slot`` (a fault where it is out of range)."""
    index = int(per_lane(w.env[index_slot], lane))
    if not 0 <= index < len(group.barriers):
        raise w.block.fault("out-of-bounds", f"mbarrier index {index} is outside 0..{len(group.barriers) - 1} "
                            f"of {group.name}", info, warp=w, lanes=[lane])
    return group.barriers[index]


def check_use(w, bar, lanes, info, what: str) -> None:
    """The barrier is initialised, and its initialisation is ordered before this use."""
    block = w.block
    if not bar.initialized:
        raise block.fault("mbarrier-uninitialized", f"{what} on {bar.name}, which no thread has initialised",
                          info, warp=w, lanes=lanes, hint="call Mbarrier.init(count) (from one thread) first, "
                          "then synchronise the block (ctx.sync_threads())")
    if w.lane_agents is not None:   # a warpgroup run as one unit: the initialising warp's own lanes are ordered
        lanes = np.asarray(lanes)
        others = lanes[w.lane_agents[lanes] != bar.init_agent]
        unordered = (w.vc[others, bar.init_agent] < bar.init_clock).any()
    else:
        unordered = bar.init_agent != w.agent and (w.vc[lanes, bar.init_agent] < bar.init_clock).any()
    if unordered:
        raise block.fault("mbarrier-init-race", f"{what} on {bar.name} is not ordered after its initialisation at "
                          f"{block.line_of(bar.init_op)} by {block.warps[bar.init_agent - 1].describe()}",
                          info, warp=w, lanes=lanes, hint="synchronise the threads (ctx.sync_threads()) between "
                          "Mbarrier.init and the first arrive or wait of other threads",
                          barrier=bar.name)


@handles("nvgpu.mbarrier.init")
def _init(op, c, info):
    view = op.opview
    group, count, index = c.slot(view.barriers), c.slot(view.count), c.slot(view.mbarId)
    predicate = c.slot(view.predicate) if view.predicate is not None else None

    def fn(w):
        env = w.env
        for lane in predicated_lanes(w, predicate):
            bar = indexed_barrier(w, env[group], index, lane, info)
            arrivals = int(per_lane(env[count], lane))
            if arrivals <= 0:
                raise w.block.fault("bad-mbarrier", f"Mbarrier.init({arrivals}) on {bar.name}: a barrier needs at "
                                    "least one arrival per phase", info, warp=w, lanes=[lane])
            bar.init(arrivals, info.id, *w.agent_of(lane))
        return True
    return SYNC, fn


def _arrive(w, bar, lanes, tx: int | None, info) -> None:
    block = w.block
    check_use(w, bar, lanes, info, "arrive")
    np.maximum(bar.vc, w.vc[lanes].max(axis=0), out=bar.vc)
    for lane in lanes:
        thread = int(w.threads[lane])
        if tx is not None:
            bar.tx += tx
            bar.armed[thread] = (bar.phase, tx, info.id)
            bar.issued[thread] = 0
        if bar.pending <= 0:
            raise block.fault("mbarrier-overarrival", f"one arrival too many on {bar.name} in phase {bar.phase}: all "
                              f"{bar.expected} arrivals of its init count are in and {bar.tx} transaction bytes "
                              "are still outstanding", info, warp=w, lanes=[lane],
                              hint="the init count must equal the number of threads that arrive in each phase",
                              barrier=bar.name, phase=bar.phase, arrived=bar.expected, tx=bar.tx)
        bar.pending -= 1
        bar.arrivals.append((thread, info.id))
        bar.maybe_complete()
    w.tick()


@handles("nvgpu.mbarrier.arrive", "nvgpu.mbarrier.arrive.expect_tx", "nvgpu.mbarrier.arrive.nocomplete")
def _arrive_op(op, c, info):
    view = op.opview
    group, index = c.slot(view.barriers), c.slot(view.mbarId)
    tx_slot = c.slot(view.txcount) if op.name.endswith("expect_tx") else None
    predicate = c.slot(view.predicate) if getattr(view, "predicate", None) is not None else None
    results = [c.slot(r) for r in op.results]

    def fn(w):
        env = w.env
        lanes = predicated_lanes(w, predicate)
        for bar, group_lanes in _by_barrier(w, env[group], index, lanes, info):
            tx = None if tx_slot is None else int(per_lane(env[tx_slot], group_lanes[0]))
            _arrive(w, bar, group_lanes, tx, info)
        for r in results:
            env[r] = np.zeros(1, np.int64)
        return lanes.size > 0
    return SYNC, fn


def _by_barrier(w, group, index_slot, lanes, info):
    """The lanes grouped by the barrier they name (usually one)."""
    index = w.env[index_slot]
    if not lanes.size:
        return []
    if index.shape[0] == 1:
        return [(indexed_barrier(w, group, index_slot, int(lanes[0]), info), lanes)]
    groups: dict = {}
    for lane in lanes:
        bar = indexed_barrier(w, group, index_slot, lane, info)
        groups.setdefault(id(bar), (bar, []))[1].append(lane)
    return [(bar, np.array(ls)) for bar, ls in groups.values()]


def _wait_description(w, bar, parity: int):
    block = w.block

    def describe():
        text = (f"waits for the phase of parity {parity} of {bar.name} (initialised for {bar.expected} arrivals "
                f"at {block.line_of(bar.init_op)}); {bar.describe()}")
        if bar.pending == 0 and bar.tx > 0:
            armed = [(thread, a) for thread, a in bar.armed.items() if a[0] == bar.phase]
            for thread, (phase, tx, op) in armed[:1]:
                text += (f"; the expect_tx at {block.line_of(op)} (thread {thread}) armed {tx} bytes and the copies "
                         f"issued since deliver {bar.issued.get(thread, 0)}")
        elif bar.pending > 0 and bar.arrivals:
            threads = sorted({t for t, _ in bar.arrivals})
            text += f" (arrived: thread{'s' if len(threads) > 1 else ''} {', '.join(map(str, threads[:6]))})"
        return text
    return describe


def _acquire(w, bar, lanes, clock) -> None:
    if clock is not None:
        w.vc[lanes] = np.maximum(w.vc[lanes], clock)


STALE_PHASE_HINT = "flip the parity each time the ring wraps (phase ^= 1 when the slot index returns to 0)"


def _stale_phase(w, bar, parity: int, phase: int, lanes, info):
    """The report of a wait that passes on a phase its threads waited for before (Mbarrier.stale)."""
    stale = lanes[bar.stale(w.threads[lanes], phase)]
    earlier = int(bar.seen_at[w.threads[stale[0]]])
    when = "the preceding phase of the fresh barrier" if phase < 0 else f"phase {phase}"
    return w.block.fault(
        "stale-phase-wait", f"this try_wait on {bar.name} waits on parity {parity} and passes at once, on {when}, "
        f"which these threads already waited for at {w.block.line_of(earlier)}: the barrier's pending phase "
        f"{bar.phase} has parity {bar.phase & 1} (expected), so what this wait guards is not this pass's data; "
        f"{bar.describe()}", info, hint=STALE_PHASE_HINT, warp=w, lanes=stale, barrier=bar.name, parity=parity,
        expected=bar.phase & 1)


def _wait_phase(w, bar, parity: int, lanes, info, spin: bool, sole: bool):
    """Wait until a phase of ``parity`` completes (a generator) for ``lanes``; returns the clock to acquire, or
    ``False`` when a polling wait gave up (its deadline passed). ``sole``: the operation waits on this
    barrier and parity only (a loop summary can then tell where the warp is). A wait that passes at once on a
    phase its threads already waited for is a fault (stale-phase-wait)."""
    threads = w.threads[lanes]
    if bar.parity_complete(parity):
        phase = bar.completed_phase(parity)
        if bar.stale(threads, phase).any():
            raise _stale_phase(w, bar, parity, phase, lanes, info)
        w.waited[bar.agent] = (info.id, parity)
        w.last_wait = (info.id, bar, parity, phase)
        return bar.observe(phase, threads, info.id)
    waiter = bar.wait(parity)
    wait = Wait(lambda: waiter.satisfied, _wait_description(w, bar, parity), info, spin=spin,
                key=("mbarrier", info.id, bar, parity, waiter) if sole else None)
    while not waiter.satisfied:
        yield wait
        if wait.forced and not waiter.satisfied:
            bar.waiters.remove(waiter)
            return False
    w.waited[bar.agent] = (info.id, parity)
    w.last_wait = (info.id, bar, parity, waiter.phase)
    bar.observe(waiter.phase, threads, info.id)
    return waiter.clock


@handles("nvgpu.mbarrier.try_wait.parity")
def _try_wait(op, c, info):
    view = op.opview
    group, index, parity_slot = c.slot(view.barriers), c.slot(view.mbarId), c.slot(view.phaseParity)

    def gen(w):
        env = w.env
        lanes = w.active_lanes()
        groups = _by_barrier(w, env[group], index, lanes, info)
        for bar, group_lanes in groups:
            check_use(w, bar, group_lanes, info, "try_wait")
            parities = np.broadcast_to(env[parity_slot], w.mask.shape)[group_lanes].astype(np.int64) & 1
            distinct = np.unique(parities)
            for parity in distinct:
                parity_lanes = group_lanes[parities == parity]
                clock = yield from _wait_phase(w, bar, int(parity), parity_lanes, info, spin=False,
                                               sole=len(groups) == 1 and len(distinct) == 1)
                _acquire(w, bar, parity_lanes, clock)
    return GEN, gen


@handles("nvgpu.mbarrier.get")
def _get(op, c, info):
    view = op.opview
    group, index, r = c.slot(view.barriers), c.slot(view.mbarId), c.slot(op.result)

    def fn(w):
        env = w.env
        g = env[group]
        env[r] = (g.base + 8 * env[index].astype(np.int64)).astype(np.int64)
    return PLAIN, fn


def barrier_at(w, address: int, info):
    block = w.block
    number, offset = divmod(address - MBARRIER_BASE, MBARRIER_GROUP_STRIDE)
    for group in block.mbarrier_groups.values():
        if group.base == MBARRIER_BASE + number * MBARRIER_GROUP_STRIDE:
            if 0 <= offset // 8 < len(group.barriers):
                return group.barriers[offset // 8]
            raise block.fault("out-of-bounds", f"mbarrier index {offset // 8} is outside 0..{len(group.barriers) - 1} "
                              f"of {group.name}", info, warp=w)
    raise block.fault("bad-mbarrier", f"address {address:#x} is not an mbarrier of this block", info, warp=w)


@handles("nvvm.mbarrier.try_wait", "nvvm.mbarrier.try_wait.parity", "nvvm.mbarrier.try_wait.parity.shared")
def _nvvm_try_wait(op, c, info):
    operands = list(op.operands)
    address, phase = c.slot(operands[0]), c.slot(operands[1])
    r = c.slot(op.results[0]) if len(op.results) else None

    def gen(w):
        env = w.env
        lanes = w.active_lanes()
        result = np.zeros(w.mask.shape, np.bool_)
        # the lanes grouped by (barrier address, parity): usually one group
        keys = (np.broadcast_to(env[address], w.mask.shape).astype(np.int64) << 1) | \
            (np.broadcast_to(env[phase], w.mask.shape).astype(np.int64) & 1)
        active_keys = keys[lanes]
        distinct = np.unique(active_keys)
        for key in distinct:
            bar, parity, group_lanes = barrier_at(w, int(key) >> 1, info), int(key) & 1, lanes[active_keys == key]
            check_use(w, bar, group_lanes, info, "try_wait")
            clock = yield from _wait_phase(w, bar, parity, group_lanes, info, spin=True, sole=len(distinct) == 1)
            if clock is not False:
                _acquire(w, bar, group_lanes, clock)
                result[group_lanes] = True
        if r is not None:
            env[r] = result
    return GEN, gen


@handles("nvvm.fence.mbarrier.init", "nvvm.fence.sc.cluster", "nvvm.fence.acq_rel.cluster")
def _fence_other(op, c, info):
    def fn(w):
        pass
    return PLAIN, fn
