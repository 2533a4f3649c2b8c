"""sm_90a operations: mbarriers, TMA, wgmma, and the ``nvvm``/``llvm`` operations nvdsl emits.

Each follows the hardware where nvdsl depends on it: mbarrier phases complete when the pending
arrivals and the transaction bytes both reach zero; TMA boxes are zero-filled past the array's edge
and swizzled in shared memory by address bits; wgmma reads its operands through real 64-bit matrix
descriptors (built and stepped exactly as MLIR's NVGPU lowering does) and keeps the accumulator in
the per-thread fragment layout of ``m64nNk16``.
"""

from __future__ import annotations

import functools
import re

import numpy as np
from mlir import ir

from ..target import REGISTER_FILE, TENSORMAP_ATTR
from . import values as V
from .core import GEN, PLAIN, SYNC, Wait, handles, identity
from .memory import MatrixDescriptor, MemRef, TensorMap, box_layout, is_shared, operand_addresses
from .ops_atomics import PAIR_ADD, pair_add
from .ops_gpu import NAMED_BARRIER_ASM, converged, named_barrier_asm
from .ops_memory import check_shared_write, element_addresses
from .skeleton import granules
from .reports import race_fault
from .sync import MBARRIER_BASE, MBARRIER_GROUP_STRIDE, MbarrierGroup



def _opview(op):
    return op.opview


_NO_LANES = np.zeros(0, np.int64)


def _lanes(w, predicate_slot):
    if predicate_slot is None:
        return w.lanes()
    predicate = w.env[predicate_slot]
    if predicate.shape[0] == 1:
        return w.lanes() if predicate[0] else _NO_LANES
    return np.flatnonzero(w.mask & predicate)


def _per_lane(value: np.ndarray, lane: int):
    return value[0] if value.shape[0] == 1 else value[lane]


# --- mbarriers ------------------------------------------------------------------------------------------

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
                count, len(block.mbarrier_groups), first, block.agents, block.agents.count, f"Mbarriers({count})")
        w.env[r] = group
    return PLAIN, fn


def _barrier(w, group, index_slot, lane: int, info):
    index = int(_per_lane(w.env[index_slot], lane))
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
    view = _opview(op)
    group, count, index = c.slot(view.barriers), c.slot(view.count), c.slot(view.mbarId)
    predicate = c.slot(view.predicate) if view.predicate is not None else None

    def fn(w):
        env = w.env
        for lane in _lanes(w, predicate):
            bar = _barrier(w, env[group], index, lane, info)
            arrivals = int(_per_lane(env[count], lane))
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
    view = _opview(op)
    group, index = c.slot(view.barriers), c.slot(view.mbarId)
    tx_slot = c.slot(view.txcount) if op.name.endswith("expect_tx") else None
    predicate = c.slot(view.predicate) if getattr(view, "predicate", None) is not None else None
    results = [c.slot(r) for r in op.results]

    def fn(w):
        env = w.env
        lanes = _lanes(w, predicate)
        for bar, group_lanes in _by_barrier(w, env[group], index, lanes, info):
            tx = None if tx_slot is None else int(_per_lane(env[tx_slot], group_lanes[0]))
            _arrive(w, bar, group_lanes, tx, info)
        for r in results:
            env[r] = np.zeros(1, np.int64)
        return lanes.size > 0
    return SYNC, fn


def _by_barrier(w, group, index_slot, lanes, info):
    """The lanes grouped by the barrier they name (usually one)."""
    index = w.env[index_slot]
    if index.shape[0] == 1 or not lanes.size:
        return [(_barrier(w, group, index_slot, int(lanes[0]) if lanes.size else 0, info), lanes)] if lanes.size else []
    groups: dict = {}
    for lane in lanes:
        bar = _barrier(w, group, index_slot, lane, info)
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


def _wait_phase(w, bar, parity: int, info, spin: bool, sole: bool):
    """Wait until a phase of ``parity`` completes (a generator); returns the clock to acquire, or
    ``False`` when a polling wait gave up (its deadline passed). ``sole``: the operation waits on this
    barrier and parity only (a loop summary can then tell where the warp is)."""
    if bar.parity_complete(parity):
        phase = bar.completed_phase(parity)
        w.waited[bar.agent] = (info.id, parity)
        w.last_wait = (info.id, bar, parity, phase)
        return bar.observe(phase)
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
    bar.observe(waiter.phase)
    return waiter.clock


@handles("nvgpu.mbarrier.try_wait.parity")
def _try_wait(op, c, info):
    view = _opview(op)
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
                clock = yield from _wait_phase(w, bar, int(parity), info, spin=False,
                                               sole=len(groups) == 1 and len(distinct) == 1)
                _acquire(w, bar, group_lanes[parities == parity], clock)
    return GEN, gen


@handles("nvgpu.mbarrier.get")
def _get(op, c, info):
    view = _opview(op)
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
            clock = yield from _wait_phase(w, bar, parity, info, spin=True, sole=len(distinct) == 1)
            if clock is not False:
                _acquire(w, bar, group_lanes, clock)
                result[group_lanes] = True
        if r is not None:
            env[r] = result
    return GEN, gen


# --- TMA -----------------------------------------------------------------------------------------------

class Copy:
    """A TMA load in flight: issued by one thread, landing in shared memory and completing on a barrier."""

    __slots__ = ("warp", "lane", "thread", "bar", "tmap", "coords", "smem_elements", "smem_bytes", "clock",
                 "armed_phase", "info")

    def land(self, block) -> None:
        tmap, bar = self.tmap, self.bar
        if not block.skeleton:
            self._copy_data(block)
        if self.armed_phase is not None and self.armed_phase < bar.phase:
            raise _expect_tx_short(block, self.warp, bar, self.thread, self.info, landing=True)
        block.shadow.record_write(self.smem_bytes, bar.tma_agent, bar.phase + 1, self.info.id)
        bar.unwaited.setdefault(bar.phase, self.info.id)
        bar.tx -= tmap.box_bytes
        bar.in_flight -= 1
        np.maximum(bar.vc, self.clock, out=bar.vc)
        bar.vc[bar.tma_agent] = max(int(bar.vc[bar.tma_agent]), bar.phase + 1)
        bar.maybe_complete()

    def _copy_data(self, block) -> None:
        tmap = self.tmap
        index, valid = tmap.box_elements(self.coords)
        source = tmap.buffer.typed(V.memory_dtype(tmap.element))
        data = source[index]
        fill = 0
        if tmap.oob_nan:
            fill = np.array(np.nan, np.float32).astype(V.register_dtype(tmap.element)) \
                if V.element_kind(tmap.element)[2] == "f" else \
                V.to_memory(np.array([np.nan], np.float32), tmap.element)[0]
        data = np.where(valid, data, fill).astype(source.dtype)
        smem = block.smem.typed(source.dtype)
        smem[(self.smem_elements // source.dtype.itemsize).ravel()] = data.ravel()


def _expect_tx_short(block, w, bar, thread: int, info, landing: bool):
    phase, tx, op = bar.armed[thread]
    delivered = bar.issued.get(thread, 0)
    when = "lands after" if landing else "is issued after"
    return block.fault("expect-tx-mismatch", f"this TMA load {when} phase {phase} of {bar.name} completed: the "
                       f"expect_tx at {block.line_of(op)} armed {tx} bytes, but the copies issued under it deliver "
                       f"{delivered} bytes, so the phase completed before all of them landed", info, warp=w,
                       hint="make arrive(tx_bytes) the sum of the bytes of the TMA boxes that complete on the "
                            "barrier in that phase", barrier=bar.name, phase=phase, expected_tx=tx,
                       delivered=delivered)


def _box_addresses(w, tmap: TensorMap, mem: MemRef, lane: int, info, what: str):
    start = int(_per_lane(mem.offset, lane)) if isinstance(mem.offset, np.ndarray) else mem.offset
    if start % 16:
        raise w.block.fault("misaligned", f"{what}: the shared tile starts at byte {start}; TMA needs 16-byte "
                            "aligned shared memory", info, warp=w, lanes=[lane])
    if w.block.skeleton:
        if start < 0 or start + tmap.box_bytes > w.block.smem.nbytes:
            raise w.block.fault("out-of-bounds", f"{what}: the {tmap.box_bytes}-byte box at shared byte {start} "
                                f"runs past the block's {w.block.smem.nbytes} bytes of shared memory", info, warp=w,
                                lanes=[lane])
        return None, granules(start, tmap.box_bytes)
    offsets = box_layout(tmap.box, tmap.itemsize, tmap.swizzle, start & 1023)
    elements = start + offsets
    if elements.min() < 0 or elements.max() + tmap.itemsize > w.block.smem.nbytes:
        raise w.block.fault("out-of-bounds", f"{what}: the {tmap.box_bytes}-byte box at shared byte {start} runs "
                            f"past the block's {w.block.smem.nbytes} bytes of shared memory", info, warp=w,
                            lanes=[lane])
    nbytes = (elements.reshape(-1, 1) + np.arange(tmap.itemsize)).ravel()
    return elements, nbytes


def _coords(w, slots, lane):
    # nvgpu takes coordinates innermost first
    return tuple(int(_per_lane(w.env[s], lane)) for s in reversed(slots))


@handles("nvgpu.tma.async.load")
def _tma_load(op, c, info):
    view = _opview(op)
    dst, group, desc = c.slot(view.dst), c.slot(view.barriers), c.slot(view.tensorMapDescriptor)
    coords = [c.slot(v) for v in view.coordinates]
    index = c.slot(view.mbarId)
    predicate = c.slot(view.predicate) if view.predicate is not None else None
    if view.multicastMask is not None:
        raise V.Unsupported("TMA multicast")

    def fn(w):
        env = w.env
        block = w.block
        acted = False
        for lane in _lanes(w, predicate):
            tmap, mem = env[desc], env[dst]
            bar = _barrier(w, env[group], index, lane, info)
            check_use(w, bar, np.array([lane]), info, "a TMA load completing")
            # a skeleton moves no data: its coordinates are not computed (protocol.SKELETON_OMITS)
            where = None if block.skeleton else _coords(w, coords, lane)
            elements, nbytes = _box_addresses(w, tmap, mem, lane, info, "this TMA load")
            thread = int(w.threads[lane])
            armed = bar.armed.get(thread)
            if armed is not None and armed[0] < bar.phase:   # the phase it was armed for completed already
                bar.issued[thread] = bar.issued.get(thread, 0) + tmap.box_bytes
                raise _expect_tx_short(block, w, bar, thread, info, landing=False)
            conflict = block.shadow.check_write(nbytes, w.vc[lane])
            if conflict is not None:
                raise race_fault(block, w, conflict, info, "the TMA load issued here", w.vc[lane], barrier=bar)
            copy = Copy()
            copy.warp, copy.lane, copy.thread, copy.bar, copy.tmap = w, lane, thread, bar, tmap
            copy.coords, copy.smem_elements, copy.smem_bytes = where, elements, nbytes
            copy.clock, copy.info = w.vc[lane].copy(), info
            copy.armed_phase = armed[0] if armed is not None else None
            if armed is not None:
                bar.issued[thread] = bar.issued.get(thread, 0) + tmap.box_bytes
            bar.in_flight += 1
            if block.rng is None:
                copy.land(block)
            else:
                block.copies.append(copy)
            acted = True
        return acted
    return SYNC, fn


@handles("nvgpu.tma.async.store")
def _tma_store(op, c, info):
    view = _opview(op)
    src, desc = c.slot(view.src), c.slot(view.tensorMapDescriptor)
    coords = [c.slot(v) for v in view.coordinates]
    predicate = c.slot(view.predicate) if view.predicate is not None else None

    def fn(w):
        env = w.env
        block = w.block
        acted = False
        for lane in _lanes(w, predicate):
            tmap, mem = env[desc], env[src]
            where = _coords(w, coords, lane)
            elements, nbytes = _box_addresses(w, tmap, mem, lane, info, "this TMA store")
            conflict = block.shadow.check_read(nbytes, w.vc[lane]) or block.shadow.check_fenced(nbytes)
            if conflict is not None:
                raise race_fault(block, w, conflict, info, "the TMA store issued here", w.vc[lane])
            if not w.bulk_open[lane]:
                w.bulk_counter += 1
                w.bulk_open[lane] = w.bulk_counter
            block.shadow.record_read(nbytes, block.agents.bulk(w.index), int(w.bulk_open[lane]), info.id)
            dtype = V.memory_dtype(tmap.element)
            data = block.smem.typed(dtype)[(elements // dtype.itemsize).ravel()].reshape(tmap.box)
            index, valid = tmap.box_elements(where)
            tmap.buffer.typed(dtype)[index[valid]] = data[valid]
            acted = True
        return acted
    return SYNC, fn


@handles("nvgpu.tma.prefetch.descriptor")
def _prefetch(op, c, info):
    def fn(w):
        pass
    return PLAIN, fn


@handles("nvvm.cp.async.bulk.commit.group")
def _bulk_commit(op, c, info):
    def fn(w):
        for lane in w.active_lanes():
            if w.bulk_open[lane]:
                w.bulk_committed.setdefault(lane, []).append(int(w.bulk_open[lane]))
                w.bulk_open[lane] = 0
    return PLAIN, fn


@handles("nvvm.cp.async.bulk.wait_group")
def _bulk_wait(op, c, info):
    keep = ir.IntegerAttr(op.attributes["group"]).value
    agent_of = lambda w: w.block.agents.bulk(w.index)

    def fn(w):
        agent = agent_of(w)
        for lane in w.active_lanes():
            committed = w.bulk_committed.get(lane, [])
            retire = committed[:len(committed) - keep] if keep else committed
            if retire:
                w.vc[lane, agent] = max(int(w.vc[lane, agent]), max(retire))
                w.bulk_committed[lane] = committed[len(retire):]
        return True
    return SYNC, fn


@handles("nvvm.fence.proxy")
def _fence_proxy(op, c, info):
    kind = str(op.attributes["kind"])

    def fn(w):
        if "async" in kind:
            w.block.shadow.fence(w.threads[w.mask])
        return True
    return SYNC, fn


@handles("nvvm.fence.mbarrier.init", "nvvm.fence.sc.cluster", "nvvm.fence.acq_rel.cluster")
def _fence_other(op, c, info):
    def fn(w):
        pass
    return PLAIN, fn


# --- wgmma ---------------------------------------------------------------------------------------------

_SHAPE = re.compile(r"vector<(\d+)x(\d+)x(\w+)>")


def accumulator_shape(t: ir.Type) -> tuple[int, int]:
    match = _SHAPE.search(str(t))
    if match is None:
        raise V.Unsupported(f"the accumulator type {t}")
    return int(match.group(1)), int(match.group(2))


@functools.lru_cache(maxsize=None)
def fragment_layout(n: int):
    """Row (within the warp's 16 rows) and column of value ``j`` of each lane in one m64nN chunk:
    lane l holds, for each 8-column block q and h in (0, 1), rows l//4 + 8h, columns 8q + 2(l%4) + (0, 1)."""
    lane = np.arange(V.LANES)[:, None]
    j = np.arange(n // 2)[None, :]
    q, h, e = j // 4, (j % 4) // 2, j % 2
    return lane // 4 + 8 * h, 8 * q + 2 * (lane % 4) + e


def _span(addresses: np.ndarray) -> tuple[int, int]:
    return _SPANS.get(id(addresses)) or _SPANS.setdefault(id(addresses), (int(addresses.min()), int(addresses.max())))


_SPANS: dict = {}   # operand_addresses' (cached, never freed) arrays -> their lowest and highest address


def _matrix(w, descriptor_bits: int, rows: int, k: int, element: ir.Type, k_major: bool, info):
    """The (rows, k) operand wgmma reads through a descriptor, and the shared bytes it reads."""
    descriptor = MatrixDescriptor.decode(int(descriptor_bits))
    if descriptor.base_offset:
        raise V.Unsupported("wgmma descriptors with a non-zero base offset")
    itemsize = V.item_bytes(element)
    addresses = operand_addresses(descriptor, rows, k, itemsize, k_major)
    smem = w.block.smem
    low, high = _span(addresses)
    if low < 0 or high + itemsize > smem.nbytes:
        raise w.block.fault("out-of-bounds", f"a wgmma operand read through the descriptor at start byte "
                            f"{descriptor.start} reaches past the block's {smem.nbytes} bytes of shared memory",
                            info, warp=w)
    if w.block.skeleton:
        return None, addresses
    raw = smem.typed(V.memory_dtype(element))[addresses // itemsize]
    return V.as_float32(raw, element), addresses


def _operand_bytes(block, addresses: list, itemsize: int) -> np.ndarray:
    if block.skeleton:
        spans = [_span(a) for a in addresses]
        return np.concatenate([granules(low, high + itemsize - low) for low, high in set(spans)])
    starts = np.concatenate([a.ravel() for a in addresses])
    return (starts[:, None] + np.arange(itemsize)).ravel()


def _record_operand_reads(w, addresses, itemsize, info, nbytes=None):
    block = w.block
    if nbytes is None:
        nbytes = _operand_bytes(block, addresses, itemsize)
    meet = w.vc[w.mask].min(axis=0)
    conflict = block.shadow.check_read(nbytes, meet) or block.shadow.check_fenced(nbytes)
    if conflict is not None:
        raise race_fault(block, w, conflict, info, "this wgmma", meet)
    group = w.wgmma_committed + 1
    block.shadow.record_read(nbytes, block.agents.wgmma(w.warpgroup), group, info.id)
    w.wgmma_open = True
    w.wgmma_waits[group] = dict(w.waited)
    w.wgmma_waits.pop(group - 16, None)


def _mma_chunk(w, acc: np.ndarray, a: np.ndarray, b: np.ndarray, n: int, accumulate: bool) -> np.ndarray:
    """One warp's part of D = A (64 x K) @ B (K x N) + C for one m64 chunk, on its fragment (32, N/2)."""
    rows, cols = fragment_layout(n)
    quarter = w.index % 4
    product = a[16 * quarter:16 * quarter + 16] @ b
    if accumulate:
        product[rows, cols] += acc
    return product[rows, cols].astype(np.float32)


@handles("nvgpu.warpgroup.mma.init.accumulator")
def _init_accumulator(op, c, info):
    m, n = accumulator_shape(op.result.type)
    r = c.slot(op.result)

    def fn(w):
        w.env[r] = np.zeros((V.LANES, m // 64, n // 2), np.float32)
    return PLAIN, fn


def _element_of(descriptor_type: ir.Type) -> tuple[ir.Type, tuple[int, int]]:
    text = str(descriptor_type)
    match = re.search(r"memref<(\d+)x(\d+)x(\w+)", text)
    if match is None:
        raise V.Unsupported(f"the descriptor type {text}")
    return ir.Type.parse(match.group(3), descriptor_type.context), (int(match.group(1)), int(match.group(2)))


@handles("nvgpu.warpgroup.mma")
def _warpgroup_mma(op, c, info):
    """As MLIR's lowering: fence; for each m64 chunk i and k16 step k, wgmma.mma_async on descriptors
    advanced by ((16 k + K_A * K_A * i) * itemsize) >> 4 (A) and (K_B * 16 * k * itemsize) >> 4 (B);
    commit; wait_group(waitGroup)."""
    view = _opview(op)
    a_slot, b_slot, c_slot = c.slot(view.descriptorA), c.slot(view.descriptorB), c.slot(view.matrixC)
    r = c.slot(op.result)
    element, (a_rows, a_k) = _element_of(view.descriptorA.type)
    _, (b_rows, b_cols) = _element_of(view.descriptorB.type)
    m, n = accumulator_shape(op.result.type)
    wait = ir.IntegerAttr(op.attributes["waitGroup"]).value if "waitGroup" in op.attributes else 1
    transpose_a = "transposeA" in op.attributes
    transpose_b = "transposeB" in op.attributes
    itemsize = V.item_bytes(element)
    if itemsize != 2:
        raise V.Unsupported(f"wgmma on {element} operands")
    total_k, k_steps = a_k, a_k // 16

    skeleton_reads: dict = {}

    def fn(w):
        converged(w, info, "nvgpu.warpgroup.mma")
        env = w.env
        desc_a = int(V.first_active(env[a_slot], w.mask))
        desc_b = int(V.first_active(env[b_slot], w.mask))
        if w.block.skeleton:
            # the same descriptors read the same shared memory: decode them once
            key = (desc_a, desc_b, w.block.smem.nbytes)
            granules = skeleton_reads.get(key)
            if granules is None:
                touched = [_matrix(w, desc_b + ((b_rows * 16 * k * itemsize) >> 4), n, 16, element, not transpose_b,
                                   info)[1] for k in range(k_steps)]
                touched += [_matrix(w, desc_a + (((16 * k + total_k * a_k * i) * itemsize) >> 4), 64, 16, element,
                                    not transpose_a, info)[1] for i in range(m // 64) for k in range(k_steps)]
                granules = skeleton_reads[key] = _operand_bytes(w.block, touched, itemsize)
            _record_operand_reads(w, None, itemsize, info, granules)
            _commit(w)
            yield from _wait(w, wait, info)
            return
        acc = env[c_slot]
        result = None if w.block.skeleton else acc.copy()
        touched = []
        b_parts = []
        skeleton = w.block.skeleton
        for k in range(k_steps):
            step_b = (b_rows * 16 * k * itemsize) >> 4
            b, addresses = _matrix(w, desc_b + step_b, n, 16, element, not transpose_b, info)
            b_parts.append(None if skeleton else b.T)
            touched.append(addresses)
        b_full = None if skeleton else np.concatenate(b_parts, axis=0)
        rows, cols = fragment_layout(n)
        for i in range(m // 64):
            a_parts = []
            for k in range(k_steps):
                step_a = ((16 * k + total_k * a_k * i) * itemsize) >> 4
                a, addresses = _matrix(w, desc_a + step_a, 64, 16, element, not transpose_a, info)
                a_parts.append(a)
                touched.append(addresses)
            if skeleton:
                continue
            quarter = w.index % 4
            mine = np.concatenate(a_parts, axis=1)[16 * quarter:16 * quarter + 16] @ b_full
            result[:, i, :] = acc[:, i, :] + mine[rows, cols]
        _record_operand_reads(w, touched, itemsize, info)
        _commit(w)
        env[r] = result
        yield from _wait(w, wait, info)
    return GEN, fn


def _commit(w) -> None:
    w.wgmma_committed += 1
    w.wgmma_open = False


def _wait(w, keep: int, info):
    """``wgmma.wait_group keep``: a group is one operation of the whole warpgroup, so it completes only
    once every warp of the warpgroup has issued it; then its operand reads are over for all of them."""
    target = w.wgmma_committed - keep
    if target <= w.wgmma_retired:
        return
    block = w.block
    group = block.members[w.warpgroup]

    def issued() -> bool:
        return all(x.wgmma_committed >= target for x in group)

    def describe() -> str:
        behind = [x.index for x in group if x.wgmma_committed < target]
        return (f"wgmma.wait_group waits for wgmma group {target} of warpgroup {w.warpgroup}, which warps "
                f"{', '.join(map(str, behind))} have not issued")
    while not issued():
        yield Wait(issued, describe, info, key=("wgmma", info.id, target))
    w.wgmma_retired = target
    agent = block.agents.wgmma(w.warpgroup)
    w.vc[:, agent] = np.maximum(w.vc[:, agent], target)


_ATTR_VALUE = re.compile(r"<([^>]*)>")


def _attr_text(op, name: str) -> str:
    match = _ATTR_VALUE.search(str(op.attributes[name]))
    return match.group(1).strip() if match else str(op.attributes[name])


_OPERAND_TYPES = {"f16": ir.F16Type.get, "bf16": ir.BF16Type.get, "e4m3": ir.Float8E4M3FNType.get,
                  "e5m2": ir.Float8E5M2Type.get}


@handles("nvvm.wgmma.mma_async")
def _mma_async(op, c, info):
    view = _opview(op)
    inout = c.slot(view.inouts)
    a_slot, b_slot = c.slot(view.descriptorA), c.slot(view.descriptorB)
    r = c.slot(op.results[0])
    shape = dict(part.split("=") for part in _attr_text(op, "shape").replace(" ", "").split(","))
    m, n, k = int(shape["m"]), int(shape["n"]), int(shape["k"])
    types = {name: _attr_text(op, name) for name in ("typeA", "typeB", "typeD")}
    a_element, b_element = (_OPERAND_TYPES[t]() if t in _OPERAND_TYPES else None
                            for t in (types["typeA"], types["typeB"]))
    a_k_major = _attr_text(op, "layoutA") == "row"
    b_k_major = _attr_text(op, "layoutB") == "col"
    supported = a_element is not None and b_element is not None and types["typeD"] == "f32" and (
        types["typeA"] == types["typeB"] if types["typeA"] in ("f16", "bf16") else
        types["typeB"] in ("e4m3", "e5m2") and a_k_major and b_k_major)
    if not supported:
        raise V.Unsupported(f"wgmma with {types['typeA']} x {types['typeB']} -> {types['typeD']}")
    accumulate = _attr_text(op, "scaleD") == "one"
    negate_a = _attr_text(op, "scaleA") == "neg"
    negate_b = _attr_text(op, "scaleB") == "neg"
    itemsize = V.item_bytes(a_element)
    if m != 64 or k * itemsize != 32:
        raise V.Unsupported(f"wgmma shape m{m}n{n}k{k} on {types['typeA']}")

    skeleton_reads: dict = {}

    def fn(w):
        converged(w, info, "wgmma.mma_async")
        env = w.env
        if w.block.skeleton:
            # the same descriptors read the same shared memory: decode them once
            key = (int(V.first_active(env[a_slot], w.mask)), int(V.first_active(env[b_slot], w.mask)),
                   w.block.smem.nbytes)
            granules = skeleton_reads.get(key)
            if granules is None:
                touched = [_matrix(w, key[0], 64, k, a_element, a_k_major, info)[1],
                           _matrix(w, key[1], n, k, b_element, b_k_major, info)[1]]
                granules = skeleton_reads[key] = _operand_bytes(w.block, touched, itemsize)
            _record_operand_reads(w, None, itemsize, info, granules)
            return True
        a, a_addresses = _matrix(w, int(V.first_active(env[a_slot], w.mask)), 64, k, a_element, a_k_major, info)
        b, b_addresses = _matrix(w, int(V.first_active(env[b_slot], w.mask)), n, k, b_element, b_k_major, info)
        _record_operand_reads(w, [a_addresses, b_addresses], itemsize, info)
        if w.block.skeleton:
            return True
        if negate_a:
            a = -a
        if negate_b:
            b = -b
        env[r] = _mma_chunk(w, env[inout], a, b.T, n, accumulate)
        return True
    return SYNC, fn


_REGISTER_A = re.compile(r"setp\.ne\.b32 p, 1, 0;\s*wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.f32\.(f16|bf16)\.(f16|bf16) "
                         r"\{[^}]*\}, \{[^}]*\}, \$\d+, p, 1, 1, ([01]);")


def register_a_wgmma(op, c, info, match):
    """nvdsl's inline ``wgmma.mma_async`` with A in registers: operands are the accumulator chunk's N/2
    floats, A's four 32-bit registers (pairs of 16-bit values in the m64k16 fragment layout, which is the
    accumulator's), and B's descriptor; D = A @ B + D (scale-d is the predicate ``p``, set true)."""
    n = int(match.group(1))
    if match.group(2) != match.group(3):
        raise V.Unsupported(f"wgmma with A in registers of {match.group(2)} and B of {match.group(3)}")
    bf16 = match.group(2) == "bf16"
    element = ir.BF16Type.get() if bf16 else ir.F16Type.get()
    b_k_major = match.group(4) == "0"
    operands = [c.slot(v) for v in op.operands]
    if len(operands) != n // 2 + 5:
        raise V.Unsupported("an inline wgmma with unexpected operands")
    old, a_registers, b_slot = operands[:n // 2], operands[n // 2:n // 2 + 4], operands[-1]
    r = c.slot(op.result)
    rows, cols = fragment_layout(16)
    out_rows, out_cols = fragment_layout(n)

    def fn(w):
        converged(w, info, "wgmma.mma_async")
        env = w.env
        b, b_addresses = _matrix(w, int(V.first_active(env[b_slot], w.mask)), n, 16, element, b_k_major, info)
        _record_operand_reads(w, [b_addresses], 2, info)
        if w.block.skeleton:
            return True
        packed = np.stack([np.broadcast_to(env[x], (V.LANES,)) for x in a_registers], axis=1).astype(np.int32)
        a = V.as_float32(packed.view(np.uint16 if bf16 else np.float16), element)   # (32, 8): a0 .. a7
        a_rows = np.zeros((16, 16), np.float32)
        a_rows[rows, cols] = a
        accumulator = np.stack([np.broadcast_to(env[x], (V.LANES,)) for x in old], axis=1)
        env[r] = (accumulator + (a_rows @ b.T)[out_rows, out_cols]).astype(np.float32)
        return True
    return SYNC, fn


@handles("llvm.inline_asm")
def _inline_asm(op, c, info):
    """The inline PTX nvdsl emits, recognised by its text; any other is refused."""
    text = ir.StringAttr(op.attributes["asm_string"]).value
    for pattern, compile_fn in ((PAIR_ADD, pair_add), (_REGISTER_A, register_a_wgmma),
                                (NAMED_BARRIER_ASM, named_barrier_asm)):
        match = pattern.search(text)
        if match is not None:
            return compile_fn(op, c, info, match)
    raise V.Unsupported(f"the inline PTX {' '.join(text.split())!r}")


@handles("nvvm.wgmma.fence.aligned")
def _wgmma_fence(op, c, info):
    def fn(w):
        converged(w, info, "wgmma.fence")
    return PLAIN, fn


@handles("nvvm.wgmma.commit.group.sync.aligned")
def _wgmma_commit(op, c, info):
    def fn(w):
        converged(w, info, "wgmma.commit_group")
        _commit(w)
    return PLAIN, fn


@handles("nvvm.wgmma.wait.group.sync.aligned")
def _wgmma_wait(op, c, info):
    keep = ir.IntegerAttr(op.attributes["group"]).value

    def gen(w):
        converged(w, info, "wgmma.wait_group")
        yield from _wait(w, keep, info)
    return GEN, gen


@handles("nvgpu.warpgroup.mma.store")
def _mma_store(op, c, info):
    """As MLIR's lowering: thread ``tid.x`` stores its pairs at row ``(tid.x % 32) // 4 + (tid.x // 32) * 16
    + 64 i + 8 h``, column ``2 (tid.x % 4) + 8 q`` (+1): note ``tid.x``, not the thread's index in its
    warpgroup."""
    view = _opview(op)
    acc_slot, dst = c.slot(view.matrixD), c.slot(view.dstMemref)
    m, n = accumulator_shape(view.matrixD.type)
    shared = is_shared(ir.MemRefType(view.dstMemref.type))
    element = ir.MemRefType(view.dstMemref.type).element_type

    def fn(w):
        env = w.env
        mem = env[dst]
        tid = w.block.launch.thread_x(w)
        lane_rows = (tid % 32) // 4 + (tid // 32) * 16
        lane_cols = (tid % 4) * 2
        acc = env[acc_slot]
        j = np.arange(n // 2)
        q, h, e = j // 4, (j % 4) // 2, j % 2
        for i in range(m // 64):
            rows = lane_rows[:, None] + 64 * i + 8 * h[None, :]
            cols = lane_cols[:, None] + 8 * q[None, :] + e[None, :]
            for jj in range(n // 2):
                index = [rows[:, jj], cols[:, jj]]
                lanes = w.lanes()
                addresses = element_addresses(w, mem, index, info, what="wgmma store")
                if shared:
                    check_shared_write(w, addresses[lanes], lanes, mem.itemsize, info, "this accumulator store")
                mem.buffer.typed(mem.mem_dtype)[addresses[lanes] // mem.itemsize] = \
                    V.to_memory(acc[lanes, i, jj], element)
        return True
    return (SYNC if shared else PLAIN), fn


@handles("nvgpu.warpgroup.generate.descriptor")
def _generate_descriptor(op, c, info):
    """As MLIR's lowering: swizzle mode from the TMA descriptor, stride (layout * 8) >> 4, leading
    (box rows * layout) >> 4 in 16-byte units, start address bits 4..17."""
    view = _opview(op)
    tensor, r = c.slot(view.tensor), c.slot(op.result)
    text = str(view.tensorMap.type)
    span = {"swizzle_128b": 128, "swizzle_64b": 64, "swizzle_32b": 32}.get(
        re.search(r"swizzle\s*=\s*(\w+)", text).group(1), 0)
    layout = span or 1
    box_rows = int(re.search(r"memref<(\d+)", text).group(1))
    stride_units = (layout << 3) >> 4
    leading_units = (box_rows * layout) >> 4
    mode = {128: 1, 64: 2, 32: 3, 0: 0}[span]

    def fn(w):
        mem = w.env[tensor]
        offsets = mem.offset if isinstance(mem.offset, np.ndarray) else np.array([mem.offset], np.int64)
        start = (offsets >> 4) & 0x3FFF
        bits = (mode << 62) | (stride_units << 32) | (leading_units << 16)
        w.env[r] = (np.array([bits], np.uint64).astype(np.int64) | start).astype(np.int64)
    return PLAIN, fn


# --- registers, lanes, time ----------------------------------------------------------------------------

@handles("nvvm.setmaxregister")
def _setmaxnreg(op, c, info):
    """``setmaxnreg``: checked (a multiple of 8 in 24..256, in the right direction); an increase waits
    until the register file has room, as on the hardware, so an over-commitment is a deadlock."""
    count = ir.IntegerAttr(op.attributes["regCount"]).value
    increase = "increase" in str(op.attributes["action"])
    verb = "inc" if increase else "dec"

    def gen(w):
        converged(w, info, "setmaxnreg")
        block = w.block
        if count % 8 or not 24 <= count <= 256:
            raise block.fault("bad-setmaxnreg", f"setmaxnreg {count}: the count must be a multiple of 8 in 24..256",
                              info, warp=w)
        even_share = min(REGISTER_FILE // block.thread_count // 8 * 8, 256)
        registers = block.registers
        current = max(registers.get(w.index + k, even_share) for k in range(w.width))
        if (increase and count < current) or (not increase and count > current):
            raise block.fault("bad-setmaxnreg", f"setmaxnreg.{verb} to {count} registers, but warp {w.index} "
                              f"holds {current}", info, warp=w)

        def total() -> int:
            return sum(registers.get(x, even_share) for x in range(block.warp_count)) * V.LANES

        def fits() -> bool:
            return total() - current * V.LANES * w.width + count * V.LANES * w.width <= REGISTER_FILE

        def describe() -> str:
            return (f"setmaxnreg.inc to {count} registers per thread waits for the register file: the warps hold "
                    f"{total()} of its {REGISTER_FILE} registers")
        while increase and not fits():
            yield Wait(fits, describe, info)
        for k in range(w.width):
            registers[w.index + k] = count
    return GEN, gen


@handles("nvvm.elect.sync")
def _elect(op, c, info):
    r = c.slot(op.results[0])

    def fn(w):
        result = np.zeros(w.mask.shape, np.bool_)
        for k in range(w.width):        # one lane per warp (a warpgroup run as one unit has 4)
            lanes = np.flatnonzero(w.mask[k * V.LANES:(k + 1) * V.LANES])
            if lanes.size:
                result[k * V.LANES + lanes[0]] = True
        w.env[r] = result
    return PLAIN, fn


@handles("nvvm.read.ptx.sreg.globaltimer")
def _globaltimer(op, c, info):
    r = c.slot(op.result)

    def fn(w):
        block = w.block
        block.time_ns += 32
        w.env[r] = np.array([block.time_ns], np.int64)
    return PLAIN, fn


_SREG = re.compile(r"nvvm\.read\.ptx\.sreg\.(tid|ctaid|ntid|nctaid)\.(x|y|z)$")


def _sreg(op, c, info):
    kind, axis = _SREG.match(op.name).groups()
    r = c.slot(op.result)
    dtype = V.register_dtype(op.result.type)
    name = {"tid": "thread_id", "ctaid": "block_id", "ntid": "block_dim", "nctaid": "grid_dim"}[kind]

    def fn(w):
        w.env[r] = w.block.launch.special(w, name, "xyz".index(axis)).astype(dtype)
    return PLAIN, fn


for _kind in ("tid", "ctaid", "ntid", "nctaid"):
    for _axis in "xyz":
        handles(f"nvvm.read.ptx.sreg.{_kind}.{_axis}")(_sreg)


# --- llvm ----------------------------------------------------------------------------------------------

@handles("llvm.extractvalue")
def _extractvalue(op, c, info):
    a, r = c.slot(op.operands[0]), c.slot(op.result)
    position = tuple(ir.DenseI64ArrayAttr(op.attributes["position"]))

    def fn(w):
        w.env[r] = w.env[a][(slice(None), *position)]
    return PLAIN, fn


@handles("llvm.insertvalue")
def _insertvalue(op, c, info):
    a, v, r = c.slot(op.operands[0]), c.slot(op.operands[1]), c.slot(op.result)
    position = tuple(ir.DenseI64ArrayAttr(op.attributes["position"]))

    def fn(w):
        container = w.env[a]
        value = w.env[v]
        if container.shape[0] == 1 and value.shape[0] > 1:
            container = np.repeat(container, V.LANES, axis=0)
        else:
            container = container.copy()
        container[(slice(None), *position)] = value
        w.env[r] = container
    return PLAIN, fn


@handles("llvm.intr.trap")
def _trap(op, c, info):
    def fn(w):
        block = w.block
        others = [x for x in block.warps if not x.done and x is not w and x.wait is not None]
        state = ""
        if others:
            state = "\n  other warps at that moment:\n" + "\n".join(
                f"    {x.describe()}: {x.wait.describe()}" for x in others[:8])
        raise block.fault("trap", "the kernel executed trap (a bounded wait timed out, or an explicit trap)" + state,
                          info, warp=w, lanes=w.active_lanes())
    return PLAIN, fn


@handles("builtin.unrealized_conversion_cast")
def _cast(op, c, info):
    if TENSORMAP_ATTR in op.attributes:
        return _tensormap(op, c, info, ir.DictAttr(op.attributes[TENSORMAP_ATTR]))
    if len(op.operands) != 1 or len(op.results) != 1:
        raise V.Unsupported("an unrealized conversion of several values")
    return identity(op, c, info)


def _tensormap(op, c, info, settings):
    a, r = c.slot(op.operands[0]), c.slot(op.result)
    box = tuple(ir.DenseI64ArrayAttr(settings["box"]))
    swizzle = ir.IntegerAttr(settings["swizzle"]).value
    interleave = ir.IntegerAttr(settings["interleave"]).value
    oob_nan = ir.BoolAttr(settings["oob_nan"]).value
    ragged = "ragged" in settings and ir.BoolAttr(settings["ragged"]).value
    if interleave:
        raise V.Unsupported("interleaved TMA descriptors")

    def fn(w):
        mem = w.env[a]
        w.env[r] = TensorMap(mem.buffer, mem.element, mem.shape, box, swizzle, oob_nan, mem.name, ragged)
    return PLAIN, fn

