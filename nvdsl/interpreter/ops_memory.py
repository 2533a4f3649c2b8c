"""``memref`` and ``vector`` memory operations, with bounds checks, the race detector on shared memory and the
watch for races between blocks on global memory."""

from __future__ import annotations

import numpy as np
from mlir import ir

from . import values as V
from .core import PLAIN, SYNC, handles, identity
from .global_races import READ, WRITE, check_global, watched_elements
from ..signature import row_major_strides
from .memory import LOCAL, Buffer, MemRef, is_private, is_shared
from .reports import race_fault


def _index(value: np.ndarray) -> np.ndarray:
    return value if value.dtype == np.int64 else value.astype(np.int64)


def element_addresses(w, mem: MemRef, indices: list, info, count: int = 1, what: str = "access"):
    """Byte addresses of ``mem[indices]`` (``count`` contiguous elements along the last axis) for every
    lane, after checking the active lanes' indices against the shape (views are checked against their
    buffer when made). Inactive lanes get a valid address, so that gathers need no special case."""
    linear = None
    last = len(indices) - 1
    repair = False
    for axis, i in enumerate(indices):
        extent = mem.shape[axis]
        if extent >= 0:
            limit = extent - (count - 1 if axis == last else 0)
            # one unsigned comparison catches negative indices too
            bad = i.view(np.uint64) >= limit
            if bad.any():
                _out_of_bounds(w, mem, indices, bad, info, what)
                repair = True
        stride = mem.strides[axis]
        term = i if stride == 1 else i * stride
        linear = term if linear is None else linear + term
    addresses = linear * mem.itemsize + mem.offset
    if mem.dynamic:
        end = addresses + count * mem.itemsize
        bad = (addresses < 0) | (end > mem.buffer.nbytes)
        if bad.any():
            if (bad & w.mask).any() if bad.shape[0] > 1 else True:
                lane = int(np.argmax(bad & w.mask)) if bad.shape[0] > 1 else int(np.argmax(w.mask))
                raise w.block.fault("out-of-bounds", f"{what} of '{mem.name}' at byte "
                                    f"{int(addresses[lane if addresses.shape[0] > 1 else 0])} is outside its "
                                    f"{mem.buffer.nbytes}-byte {mem.space} buffer", info, warp=w, lanes=[lane],
                                    hint="check the offsets of shared-memory views and the indices")
            repair = True
    if repair:
        lanes = w.lanes()
        addresses = np.where(w.mask, addresses, addresses[lanes[0]] if lanes.size else 0)
    return addresses


def _out_of_bounds(w, mem, indices, bad, info, what) -> None:
    mask = w.mask
    hit = bad if bad.shape[0] == 1 else bad & mask
    if not hit.any() or not mask.any():
        return
    lane = int(np.argmax(mask)) if bad.shape[0] == 1 else int(np.argmax(hit))
    position = tuple(int(np.broadcast_to(x, mask.shape)[lane]) for x in indices)
    raise w.block.fault("out-of-bounds", f"{what} of '{mem.name}' at index {list(position)} is outside its shape "
                        f"{list(mem.shape)} ({mem.space} memory)", info, warp=w, lanes=[lane],
                        hint="guard the access with nvdsl.when(...) or fix the index", index=position,
                        shape=mem.shape)


def _active(addresses: np.ndarray, lanes: np.ndarray) -> np.ndarray:
    return addresses if addresses.shape[0] == 1 else addresses[lanes]


def shared_bytes(active: np.ndarray, lanes: np.ndarray, nbytes: int):
    """Every byte the lanes touch (``nbytes`` from each address) and the lane touching it."""
    if active.shape[0] == 1 and lanes.shape[0] > 1:
        active = np.repeat(active, lanes.shape[0])
    offsets = np.arange(nbytes, dtype=np.int64)
    return (active[:, None] + offsets).ravel(), np.repeat(lanes, nbytes)


def check_shared_read(w, active, lanes, nbytes, info, what):
    shadow = w.block.shadow
    addresses, rows = shared_bytes(active, lanes, nbytes)
    clocks = w.vc[rows]
    threads = w.threads[rows]
    conflict = shadow.check_read(addresses, clocks, rows)
    if conflict is None and not w.block.skeleton:
        conflict = shadow.check_lanes(addresses, w.agent, w.epoch, threads, rows, write=False)
    if conflict is not None:
        raise race_fault(w.block, w, conflict, info, what, w.vc)
    shadow.record_read(addresses, w.agent, w.epoch, info.id, None if w.block.skeleton else threads)


def check_shared_write(w, active, lanes, nbytes, info, what, atomic: bool = False):
    shadow = w.block.shadow
    addresses, rows = shared_bytes(active, lanes, nbytes)
    threads = w.threads[rows]
    conflict = shadow.check_write(addresses, w.vc[rows], rows, skip_agent=w.agent, atomic=atomic)
    if conflict is None and not w.block.skeleton:
        conflict = shadow.check_lanes(addresses, w.agent, w.epoch, threads, rows, write=True, atomic=atomic)
    if conflict is not None:
        raise race_fault(w.block, w, conflict, info, what, w.vc)
    shadow.record_write(addresses, w.agent, w.epoch, info.id, threads=threads, atomic=atomic)


def shared_memref(t: ir.Type) -> bool:
    return is_shared(ir.MemRefType(t))


def check_global_access(w, mem: MemRef, active: np.ndarray, count: int, kind: int, info, what: str) -> None:
    """The races between blocks (:mod:`.global_races`) of an access of ``count`` elements along the last axis at
    each of the ``active`` lanes' byte addresses of a watched global memref."""
    positions = active // mem.itemsize
    if count > 1:
        positions = (positions[:, None] + np.arange(count, dtype=np.int64) * mem.strides[-1]).ravel()
    check_global(w.block, w, mem.buffer, watched_elements(mem.buffer, positions, mem.itemsize), kind, info, what)


def _access(op, c, info, memref: ir.Value, first_index: int, count: int, write: bool):
    """What a load or store of ``count`` contiguous elements needs: ``at(w) -> (mem, lanes, addresses)``
    (addresses bounds-checked; shared accesses checked by the race detector, global ones for races between
    blocks; None when no lane is active) and whether it touches shared or global memory (then a scheduling
    point)."""
    m = c.slot(memref)
    indices = [c.slot(v) for v in list(op.operands)[first_index:]]
    shared = shared_memref(memref.type)
    verb = "store" if write else "load"
    what = f"this {'vector ' if count > 1 else ''}{verb}"
    check = check_shared_write if write else check_shared_read
    kind = WRITE if write else READ
    alignment = ir.IntegerAttr(op.attributes["alignment"]).value if "alignment" in op.attributes else None

    def at(w):
        env = w.env
        mem = env[m]
        lanes = w.lanes()
        if not lanes.size:
            return None
        addresses = element_addresses(w, mem, [_index(env[i]) for i in indices], info, count, verb)
        if alignment is not None:
            _check_alignment(w, mem, _active(addresses, lanes), alignment, info, what)
        if shared:
            check(w, _active(addresses, lanes), lanes, count * mem.itemsize, info, what)
        elif mem.buffer.watched:
            check_global_access(w, mem, _active(addresses, lanes), count, kind, info, what)
        return mem, lanes, addresses
    return at, not is_private(memref)


def _check_alignment(w, mem: MemRef, addresses: np.ndarray, alignment: int, info, what: str) -> None:
    """A load or store promised ``alignment`` (its ``alignment`` attribute, which the GPU's vector accesses need:
    a misaligned one faults there) reaches only addresses that are multiples of it (buffers start aligned)."""
    bad = addresses % alignment != 0
    if bad.any():
        raise w.block.fault("misaligned", f"{what} of '{mem.name}' at byte {int(addresses[np.argmax(bad)])} is not "
                            f"aligned to the {alignment} bytes it promises", info, warp=w,
                            hint="vector accesses need their first element on a multiple of their size")


def _private_element(op, c, memref: ir.Value, first_index: int):
    """For a scalar access of a thread's local variable (a ``memref.alloca``, such as an aref's slot and phase):
    ``element(w) -> (mem, position of lane 0's element, positions between lanes)`` where every lane's indices
    are one in-bounds value, else None (the general path then runs, and reports what is wrong)."""
    if not is_private(memref):
        return None
    m = c.slot(memref)
    indices = [c.slot(v) for v in list(op.operands)[first_index:]]

    def element(w):
        env = w.env
        mem = env[m]
        position = 0
        for axis, slot in enumerate(indices):
            i = env[slot]
            if i.shape[0] != 1:
                return None
            i = int(i[0])
            if not 0 <= i < mem.shape[axis]:
                return None
            position += i * mem.strides[axis]
        lane_stride = int(mem.offset[1]) // mem.itemsize
        return mem, position, lane_stride
    return element



def _positions(mem: MemRef, addresses: np.ndarray, n: int | None) -> np.ndarray:
    """Element positions in the buffer of the scalar (``n`` None) or of the ``n``-vector at each address."""
    if n is None:
        return addresses // mem.itemsize
    return (addresses[:, None] + np.arange(n) * (mem.strides[-1] * mem.itemsize)) // mem.itemsize


def _write(mem: MemRef, lanes: np.ndarray, addresses: np.ndarray, values: np.ndarray, n: int | None = None):
    """The active lanes' values (as memory holds them) at their addresses; where all lanes have one
    address, the last active lane's value wins."""
    if addresses.shape[0] == 1:
        addresses, values = addresses[:1], values[lanes[-1] if values.shape[0] > 1 else 0]
    else:
        addresses, values = addresses[lanes], values[lanes] if values.shape[0] > 1 else values[0]
    mem.buffer.typed(mem.mem_dtype)[_positions(mem, addresses, n)] = values


def _vector_length(t: ir.Type):
    """(n, element type) of a vector type, (None, t) of a scalar one."""
    if isinstance(t, ir.VectorType):
        vector = ir.VectorType(t)
        return vector.shape[-1], vector.element_type
    return None, t


@handles("memref.load", "vector.load")
def _load(op, c, info):
    n, element = _vector_length(op.result.type)
    at, scheduling = _access(op, c, info, op.operands[0], 1, n or 1, write=False)
    r = c.slot(op.result)
    load = V.loader(element)
    zero = np.zeros((1,) if n is None else (1, n), V.register_dtype(element))

    private = _private_element(op, c, op.operands[0], 1) if n is None else None

    def fn(w):
        if private is not None:
            found = private(w)
            if found is not None:
                mem, position, lane_stride = found
                values = load(mem.buffer.typed(mem.mem_dtype)[position::lane_stride])
                w.env[r] = values[:1] if (values == values[0]).all() else values
                return True
        found = at(w)
        if found is None:
            w.env[r] = zero
            return False
        mem, lanes, addresses = found
        values = load(mem.buffer.typed(mem.mem_dtype)[_positions(mem, addresses, n)])
        if mem.buffer.space == LOCAL and n is None and (values == values[0]).all():
            values = values[:1]     # the threads' copies agree (an aref's slot and phase): one lane-uniform value
        w.env[r] = values
        return True
    return (SYNC if scheduling else PLAIN), fn


@handles("memref.store", "vector.store")
def _store(op, c, info):
    n, element = _vector_length(op.operands[0].type)
    at, scheduling = _access(op, c, info, op.operands[1], 2, n or 1, write=True)
    v = c.slot(op.operands[0])
    store = V.storer(element)

    private = _private_element(op, c, op.operands[1], 2) if n is None else None

    def fn(w):
        if private is not None:
            found = private(w)
            if found is not None:
                mem, position, lane_stride = found
                lanes = w.lanes()
                values = store(w.env[v])
                typed = mem.buffer.typed(mem.mem_dtype)
                if lanes.size == V.LANES:
                    typed[position::lane_stride] = values if values.shape[0] > 1 else values[0]
                elif lanes.size:
                    typed[position + lanes * lane_stride] = values[lanes] if values.shape[0] > 1 else values[0]
                return True
        found = at(w)
        if found is None:
            return False
        mem, lanes, addresses = found
        _write(mem, lanes, addresses, store(w.env[v]), n)
        return True
    return (SYNC if scheduling else PLAIN), fn


@handles("vector.from_elements")
def _from_elements(op, c, info):
    parts = [c.slot(v) for v in op.operands]
    r = c.slot(op.result)

    def fn(w):
        env = w.env
        values = [env[p] for p in parts]
        lanes = max(x.shape[0] for x in values)
        env[r] = np.stack([np.broadcast_to(x, (lanes,)) for x in values], axis=1)
    return PLAIN, fn


@handles("vector.broadcast", "vector.splat")
def _broadcast(op, c, info):
    a, r = c.slot(op.operands[0]), c.slot(op.result)
    n = ir.VectorType(op.result.type).shape[-1]

    def fn(w):
        x = w.env[a]
        w.env[r] = np.repeat(x[:, None], n, axis=1) if x.ndim == 1 else x
    return PLAIN, fn


@handles("vector.extract", "vector.extractelement")
def _extract(op, c, info):
    a, r = c.slot(op.operands[0]), c.slot(op.result)
    dynamic = [c.slot(v) for v in list(op.operands)[1:]]
    static = list(ir.DenseI64ArrayAttr(op.attributes["static_position"])) if "static_position" in op.attributes \
        else []
    sentinel = ir.ShapedType.get_dynamic_size()

    def fn(w):
        env = w.env
        it = iter(dynamic)
        position = [int(V.first_active(env[next(it)], w.mask)) if p == sentinel else p for p in static] or \
            [int(V.first_active(env[s], w.mask)) for s in dynamic]
        env[r] = env[a][(slice(None), *position)]
    return PLAIN, fn


@handles("memref.alloca")
def _alloca(op, c, info):
    """Memory private to each thread (nvdsl keeps loop state such as an aref's slot and phase there): one
    buffer per warp, each lane's copy at its own byte offset."""
    result_type = ir.MemRefType(op.result.type)
    shape = tuple(result_type.shape)
    if any(s < 0 for s in shape) or op.operands:
        raise V.Unsupported("memref.alloca with dynamic sizes")
    element = result_type.element_type
    nbytes = max(V.item_bytes(element) * int(np.prod(shape)), 1)
    lane_offsets = np.arange(V.LANES * 4, dtype=np.int64) * nbytes     # for up to a warpgroup run as one
    r = c.slot(op.result)
    c.local_slots.append(r)

    def fn(w):
        lanes = w.mask.shape[0]
        buffer = Buffer(np.zeros(lanes * nbytes, np.uint8), "a thread's local variable", LOCAL)
        w.env[r] = MemRef(buffer, lane_offsets[:lanes], shape, row_major_strides(shape), element)
    return PLAIN, fn


# --- views --------------------------------------------------------------------------------------------

@handles("memref.view")
def _view(op, c, info):
    src, shift = c.slot(op.operands[0]), c.slot(op.operands[1])
    result_type = ir.MemRefType(op.result.type)
    shape = tuple(result_type.shape)
    if any(s < 0 for s in shape):
        raise V.Unsupported("memref.view with dynamic sizes")
    element = result_type.element_type
    strides = row_major_strides(shape)
    r = c.slot(op.result)

    itemsize = V.item_bytes(element)
    nbytes = itemsize * int(np.prod(shape))

    views = {}      # (buffer, byte) -> the view: most kernels take a few views (their stages) over and over

    def fn(w):
        env = w.env
        base = env[src]
        offset = env[shift]
        if offset.shape[0] == 1 and type(base.offset) is int:
            start = base.offset + int(offset[0])
            found = views.get((base.buffer, start))
            if found is not None:
                env[r] = found
                return
        offset = _index(offset)
        start = base.offset + offset
        active = start if start.shape[0] == 1 else start[w.mask]
        if active.size and ((active < 0).any() or (active + nbytes > base.buffer.nbytes).any()):
            raise w.block.fault("out-of-bounds", f"a view of {nbytes} bytes at byte {int(active.max())} runs past "
                                f"the {base.buffer.nbytes} bytes of {base.name}", info, warp=w,
                                hint="check the view's offset against the kernel's smem size")
        if active.size and (active % itemsize).any():
            raise w.block.fault("misaligned", f"a view of {element} elements at byte {int(active[0])} is not "
                                f"aligned to {itemsize} bytes", info, warp=w)
        start = int(start[0]) if start.shape[0] == 1 else start
        view = env[r] = MemRef(base.buffer, start, shape, strides, element,
                               name=f"{base.name}@{start if isinstance(start, int) else '?'}")
        if isinstance(start, int) and type(base.offset) is int:
            views[base.buffer, start] = view
    return PLAIN, fn


@handles("memref.subview")
def _subview(op, c, info):
    source_type = ir.MemRefType(op.operands[0].type)
    result_type = ir.MemRefType(op.result.type)
    if len(result_type.shape) != len(source_type.shape):
        raise V.Unsupported("rank-reducing memref.subview")
    segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    operands = list(op.operands)
    src = c.slot(operands[0])
    offsets_dyn = [c.slot(v) for v in operands[1:1 + segments[1]]]
    sizes_dyn = operands[1 + segments[1]:1 + segments[1] + segments[2]]
    strides_dyn = operands[1 + segments[1] + segments[2]:]
    if sizes_dyn or strides_dyn:
        raise V.Unsupported("memref.subview with dynamic sizes or strides")
    sentinel = ir.ShapedType.get_dynamic_stride_or_offset()
    static_offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
    sizes = tuple(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
    steps = tuple(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
    r = c.slot(op.result)

    def fn(w):
        env = w.env
        base = env[src]
        dynamic = iter(offsets_dyn)
        elements = 0
        for offset, stride in zip(static_offsets, base.strides):
            value = _index(env[next(dynamic)]) if offset == sentinel else offset
            elements = elements + value * stride
        if isinstance(elements, np.ndarray):
            elements = int(elements[0]) if elements.shape[0] == 1 else elements
        strides = tuple(s * k for s, k in zip(base.strides, steps))
        env[r] = MemRef(base.buffer, base.offset + elements * base.itemsize, sizes, strides, base.element,
                        name=base.name, aligned=base.aligned)
    return PLAIN, fn


handles("memref.cast")(identity)


@handles("memref.reinterpret_cast")
def _reinterpret_cast(op, c, info):
    """A view of the source's memory from its aligned pointer, with static offset, sizes and strides (what
    ``Array.span`` makes of a strided argument)."""
    segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    if any(segments[1:]):
        raise V.Unsupported("memref.reinterpret_cast with dynamic offsets, sizes or strides")
    offset, = tuple(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
    sizes = tuple(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
    strides = tuple(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
    element = ir.MemRefType(op.result.type).element_type
    src, r = c.slot(op.operands[0]), c.slot(op.result)

    def fn(w):
        base = w.env[src]
        w.env[r] = MemRef(base.buffer, base.aligned + offset * base.itemsize, sizes, strides, element,
                          name=base.name, aligned=base.aligned)
    return PLAIN, fn


@handles("memref.collapse_shape")
def _collapse_shape(op, c, info):
    result_type = ir.MemRefType(op.result.type)
    groups = [[int(ir.IntegerAttr(i).value) for i in group] for group in ir.ArrayAttr(op.attributes["reassociation"])]
    shape = tuple(result_type.shape)
    src, r = c.slot(op.operands[0]), c.slot(op.result)

    def fn(w):
        base = w.env[src]
        strides = []
        for group in groups:        # each group of axes must be contiguous: its innermost stride steps it
            for outer, inner in zip(group, group[1:]):
                if base.strides[outer] != base.strides[inner] * base.shape[inner]:
                    raise V.Unsupported("memref.collapse_shape of non-contiguous axes")
            strides.append(base.strides[group[-1]])
        w.env[r] = MemRef(base.buffer, base.offset, shape, strides, base.element, name=base.name,
                          aligned=base.aligned)
    return PLAIN, fn


@handles("memref.dim")
def _dim(op, c, info):
    m, d, r = c.slot(op.operands[0]), c.slot(op.operands[1]), c.slot(op.result)

    def fn(w):
        mem = w.env[m]
        w.env[r] = np.array([mem.shape[int(V.first_active(w.env[d], w.mask))]], np.int64)
    return PLAIN, fn

