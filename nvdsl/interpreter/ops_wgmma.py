"""wgmma: ``nvgpu.warpgroup.*`` and ``nvvm.wgmma.*``, and nvdsl's inline wgmma with A in registers.

wgmma reads its operands through real 64-bit matrix descriptors (built and stepped exactly as MLIR's NVGPU
lowering does) and keeps the accumulator in the per-thread fragment layout of ``m64nNk16``,
:func:`nvdsl.layouts.wgmma_accumulator`. Groups complete for the whole warpgroup: ``wait_group`` waits until
every warp has issued the group, and only then are its operand reads over.
"""

from __future__ import annotations

import functools
import re

import numpy as np
from mlir import ir

from ..layouts import wgmma_accumulator
from . import values as V
from .core import GEN, PLAIN, SYNC, Wait, handles
from .memory import MatrixDescriptor, is_shared, operand_addresses
from .ops_gpu import converged
from .global_races import WRITE
from .ops_memory import check_global_access, check_shared_write, element_addresses
from .reports import race_fault
from .skeleton import granules

_SHAPE = re.compile(r"vector<(\d+)x(\d+)x(\w+)>")


def accumulator_shape(t: ir.Type) -> tuple[int, int]:
    match = _SHAPE.search(str(t))
    if match is None:
        raise V.Unsupported(f"the accumulator type {t}")
    return int(match.group(1)), int(match.group(2))


@functools.lru_cache(maxsize=None)
def accumulator_coordinates(m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The row and the column of each value of each thread of an ``m`` x ``n`` accumulator, (128, m n / 128)
    arrays: :func:`nvdsl.layouts.wgmma_accumulator` as index arrays (value ``j`` of 64-row chunk ``i`` is number
    ``i n / 2 + j``)."""
    layout = wgmma_accumulator(m, n)
    coordinates = []
    for axis in (0, 1):
        thread = np.array([layout.thread_part(axis, t) for t in range(layout.threads)])
        value = np.array([layout.value_part(axis, v) for v in range(layout.values)])
        coordinates.append(_frozen(thread[:, None] + value[None, :]))
    return coordinates[0], coordinates[1]


@functools.lru_cache(maxsize=None)
def warp_fragment(quarter: int, n: int) -> tuple[slice, np.ndarray, np.ndarray]:
    """Warp ``quarter`` of a warpgroup's part of a 64-row chunk of an accumulator ``n`` wide: the band of rows its
    values lie in, and the row within the band and the column of each of its lanes' values, (32, n / 2) each."""
    rows, cols = accumulator_coordinates(64, n)
    lanes = slice(quarter * V.LANES, (quarter + 1) * V.LANES)
    first, last = int(rows[lanes].min()), int(rows[lanes].max())
    return slice(first, last + 1), _frozen(rows[lanes] - first), cols[lanes]


def _frozen(array: np.ndarray) -> np.ndarray:
    """A cached index array, read-only so that no caller changes it for the others."""
    array.setflags(write=False)
    return array


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
    band, rows, cols = warp_fragment(w.index % 4, n)
    product = a[band] @ b
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
    view = op.opview
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
            read = skeleton_reads.get(key)
            if read is None:
                touched = [_matrix(w, desc_b + ((b_rows * 16 * k * itemsize) >> 4), n, 16, element, not transpose_b,
                                   info)[1] for k in range(k_steps)]
                touched += [_matrix(w, desc_a + (((16 * k + total_k * a_k * i) * itemsize) >> 4), 64, 16, element,
                                    not transpose_a, info)[1] for i in range(m // 64) for k in range(k_steps)]
                read = skeleton_reads[key] = _operand_bytes(w.block, touched, itemsize)
            _record_operand_reads(w, None, itemsize, info, read)
            _commit(w)
            yield from _wait(w, wait, info)
            return
        acc = env[c_slot]
        result = acc.copy()
        touched = []
        b_parts = []
        for k in range(k_steps):
            step_b = (b_rows * 16 * k * itemsize) >> 4
            b, addresses = _matrix(w, desc_b + step_b, n, 16, element, not transpose_b, info)
            b_parts.append(b.T)
            touched.append(addresses)
        b_full = np.concatenate(b_parts, axis=0)
        band, rows, cols = warp_fragment(w.index % 4, n)
        for i in range(m // 64):
            a_parts = []
            for k in range(k_steps):
                step_a = ((16 * k + total_k * a_k * i) * itemsize) >> 4
                a, addresses = _matrix(w, desc_a + step_a, 64, 16, element, not transpose_a, info)
                a_parts.append(a)
                touched.append(addresses)
            mine = np.concatenate(a_parts, axis=1)[band] @ b_full
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
    view = op.opview
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
            read = skeleton_reads.get(key)
            if read is None:
                touched = [_matrix(w, key[0], 64, k, a_element, a_k_major, info)[1],
                           _matrix(w, key[1], n, k, b_element, b_k_major, info)[1]]
                read = skeleton_reads[key] = _operand_bytes(w.block, touched, itemsize)
            _record_operand_reads(w, None, itemsize, info, read)
            return True
        a, a_addresses = _matrix(w, int(V.first_active(env[a_slot], w.mask)), 64, k, a_element, a_k_major, info)
        b, b_addresses = _matrix(w, int(V.first_active(env[b_slot], w.mask)), n, k, b_element, b_k_major, info)
        _record_operand_reads(w, [a_addresses, b_addresses], itemsize, info)
        if negate_a:
            a = -a
        if negate_b:
            b = -b
        env[r] = _mma_chunk(w, env[inout], a, b.T, n, accumulate)
        return True
    return SYNC, fn


REGISTER_A_WGMMA = re.compile(r"setp\.ne\.b32 p, 1, 0;\s*wgmma\.mma_async\.sync\.aligned\.m64n(\d+)k16\.f32\.(f16|bf16)\.(f16|bf16) "
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

    def fn(w):
        converged(w, info, "wgmma.mma_async")
        env = w.env
        b, b_addresses = _matrix(w, int(V.first_active(env[b_slot], w.mask)), n, 16, element, b_k_major, info)
        _record_operand_reads(w, [b_addresses], 2, info)
        if w.block.skeleton:
            return True
        packed = np.stack([np.broadcast_to(env[x], (V.LANES,)) for x in a_registers], axis=1).astype(np.int32)
        a = V.as_float32(packed.view(np.uint16 if bf16 else np.float16), element)   # (32, 8): a0 .. a7
        band, rows, cols = warp_fragment(w.index % 4, 16)
        _, out_rows, out_cols = warp_fragment(w.index % 4, n)
        a_rows = np.zeros((band.stop - band.start, 16), np.float32)
        a_rows[rows, cols] = a
        accumulator = np.stack([np.broadcast_to(env[x], (V.LANES,)) for x in old], axis=1)
        env[r] = (accumulator + (a_rows @ b.T)[out_rows, out_cols]).astype(np.float32)
        return True
    return SYNC, fn


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
    """As MLIR's lowering: thread ``tid.x`` stores each value where the accumulator layout places it for thread
    ``tid.x % 128``, 64 rows further down for each 128 threads before it (the lowering adds 16 rows per warp of
    ``tid.x``): note ``tid.x``, not the thread's index in its warpgroup."""
    view = op.opview
    acc_slot, dst = c.slot(view.matrixD), c.slot(view.dstMemref)
    m, n = accumulator_shape(view.matrixD.type)
    shared = is_shared(ir.MemRefType(view.dstMemref.type))
    element = ir.MemRefType(view.dstMemref.type).element_type
    rows, cols = accumulator_coordinates(m, n)
    warpgroup = rows.shape[0]
    rows, cols = rows.reshape(warpgroup, m // 64, n // 2), cols.reshape(warpgroup, m // 64, n // 2)

    def fn(w):
        env = w.env
        mem = env[dst]
        tid = w.block.launch.thread_x(w)
        lane_rows = rows[tid % warpgroup] + 64 * (tid // warpgroup)[:, None, None]
        lane_cols = cols[tid % warpgroup]
        acc = env[acc_slot]
        for i in range(m // 64):
            for jj in range(n // 2):
                index = [lane_rows[:, i, jj], lane_cols[:, i, jj]]
                lanes = w.lanes()
                addresses = element_addresses(w, mem, index, info, what="wgmma store")
                if shared:
                    check_shared_write(w, addresses[lanes], lanes, mem.itemsize, info, "this accumulator store")
                elif mem.buffer.watched:
                    check_global_access(w, mem, addresses[lanes], 1, WRITE, info, "this accumulator store")
                mem.buffer.typed(mem.mem_dtype)[addresses[lanes] // mem.itemsize] = \
                    V.to_memory(acc[lanes, i, jj], element)
        return True
    return SYNC, fn


@handles("nvgpu.warpgroup.generate.descriptor")
def _generate_descriptor(op, c, info):
    """As MLIR's lowering: swizzle mode from the TMA descriptor, stride (layout * 8) >> 4, leading
    (box rows * layout) >> 4 in 16-byte units, start address bits 4..17."""
    view = op.opview
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
