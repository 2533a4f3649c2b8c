"""TMA: tensor-map descriptors, bulk tensor loads and stores, and the bulk groups stores complete in.

A load is issued by one thread and lands in shared memory later (at once without a fuzzing seed), completing
its bytes on an mbarrier (:mod:`.ops_mbarrier`); its box is zero-filled past the array's edge and swizzled in
shared memory by address bits.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from ..target import TENSORMAP_ATTR
from . import values as V
from .core import PLAIN, SYNC, handles, identity
from .global_races import ATOMIC, READ, WRITE, check_global, watched_elements
from .memory import MemRef, TensorMap, box_layout
from .ops_atomics import pointer_targets
from .ops_mbarrier import check_use, indexed_barrier, per_lane, predicated_lanes
from .reports import race_fault
from .skeleton import granules


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
        if tmap.buffer.watched:
            check_global(block, self.warp, tmap.buffer, watched_elements(tmap.buffer, index[valid], tmap.itemsize),
                         READ, self.info, "this TMA load")
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


def _start(mem: MemRef, lane: int) -> int:
    """The shared byte where ``mem`` starts, at ``lane``."""
    return int(per_lane(mem.offset, lane)) if isinstance(mem.offset, np.ndarray) else mem.offset


def _box_addresses(w, tmap: TensorMap, start: int, lane: int, info, what: str):
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
    # nvgpu (and NVVM's reduction) take coordinates innermost first
    return tuple(int(per_lane(w.env[s], lane)) for s in reversed(slots))


@handles("nvgpu.tma.async.load")
def _tma_load(op, c, info):
    view = op.opview
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
        for lane in predicated_lanes(w, predicate):
            tmap, mem = env[desc], env[dst]
            bar = indexed_barrier(w, env[group], index, lane, info)
            check_use(w, bar, np.array([lane]), info, "a TMA load completing")
            # a skeleton moves no data: its coordinates are not computed (skeleton.SKELETON_OMITS)
            where = None if block.skeleton else _coords(w, coords, lane)
            elements, nbytes = _box_addresses(w, tmap, _start(mem, lane), lane, info, "this TMA load")
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


def _drained_box(w, tmap: TensorMap, start: int, lane: int, info, what: str):
    """A bulk copy out of the shared box at ``start`` (a TMA store or reduction) by ``lane``: its read checked
    against the block's writes and recorded in the lane's open bulk group; the element type and the box's
    values (None in a skeleton, which moves no data)."""
    block = w.block
    elements, nbytes = _box_addresses(w, tmap, start, lane, info, f"this {what}")
    conflict = block.shadow.check_read(nbytes, w.vc[lane]) or block.shadow.check_fenced(nbytes)
    if conflict is not None:
        raise race_fault(block, w, conflict, info, f"the {what} issued here", w.vc[lane])
    if not w.bulk_open[lane]:
        w.bulk_counter += 1
        w.bulk_open[lane] = w.bulk_counter
    block.shadow.record_read(nbytes, block.agents.bulk(w.index), int(w.bulk_open[lane]), info.id)
    dtype = V.memory_dtype(tmap.element)
    if elements is None:
        return dtype, None
    return dtype, block.smem.typed(dtype)[(elements // dtype.itemsize).ravel()].reshape(tmap.box)


@handles("nvgpu.tma.async.store")
def _tma_store(op, c, info):
    view = op.opview
    src, desc = c.slot(view.src), c.slot(view.tensorMapDescriptor)
    coords = [c.slot(v) for v in view.coordinates]
    predicate = c.slot(view.predicate) if view.predicate is not None else None

    def fn(w):
        env = w.env
        block = w.block
        acted = False
        for lane in predicated_lanes(w, predicate):
            tmap, mem = env[desc], env[src]
            where = _coords(w, coords, lane)
            dtype, data = _drained_box(w, tmap, _start(mem, lane), lane, info, "TMA store")
            index, valid = tmap.box_elements(where)
            if tmap.buffer.watched:
                check_global(block, w, tmap.buffer, watched_elements(tmap.buffer, index[valid], tmap.itemsize),
                             WRITE, info, "this TMA store")
            tmap.buffer.typed(dtype)[index[valid]] = data[valid]
            acted = True
        return acted
    return SYNC, fn


@handles("nvvm.cp.async.bulk.tensor.reduce")
def _tma_reduce(op, c, info):
    """``cp.reduce.async.bulk.tensor``: a TMA store that adds the box to global memory (``TMA.store(add=True)``),
    each element atomically (blocks may add into one box)."""
    view = op.opview
    if str(view.redKind) != "#nvvm.tma_redux_kind<add>" or (view.mode is not None and "tile" not in str(view.mode)):
        raise V.Unsupported(f"a TMA reduction other than a tiled add ({view.redKind})")
    src, desc = c.slot(view.srcMem), c.slot(view.tmaDescriptor)
    coords = [c.slot(v) for v in view.coordinates]

    def fn(w):
        env = w.env
        block = w.block
        acted = False
        for lane in w.active_lanes():
            tmap = env[desc]
            (_, _, start), = pointer_targets(w, env[src], np.array([lane]), 16, 3, info, "this TMA reduction")
            dtype, data = _drained_box(w, tmap, start, lane, info, "TMA reduction")
            acted = True
            if data is None:                 # a skeleton moves no data
                continue
            index, valid = tmap.box_elements(_coords(w, coords, lane))
            if tmap.buffer.watched:
                check_global(block, w, tmap.buffer, watched_elements(tmap.buffer, index[valid], tmap.itemsize),
                             ATOMIC, info, "this TMA reduction")
            np.add.at(tmap.buffer.typed(dtype), index[valid], data[valid])
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
        w.env[r] = TensorMap(mem.buffer, mem.element, mem.shape, box, swizzle, oob_nan, mem.name, ragged, mem.strides)
    return PLAIN, fn
