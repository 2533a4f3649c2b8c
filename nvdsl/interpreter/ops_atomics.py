"""Atomics and the pointers they take: ``memref.atomic_rmw``, ``llvm.cmpxchg``, the ``atom`` inline PTX of
nvdsl's pair adds, ``memref.extract_aligned_pointer_as_index`` and ``memref.extract_strided_metadata``.

The active lanes of a warp apply an atomic one after the other, in lane order (the hardware serialises
lanes that hit one address in an order it does not specify). On shared memory the race detector takes
an atomic for a write that does not race with other atomics, but does race with plain accesses that are
not ordered with it; on global memory, with plain writes of other blocks (:mod:`.global_races`). Atomics
are scheduling points of a fuzzed schedule.
"""

from __future__ import annotations

import re

import numpy as np
from mlir import ir
from mlir.dialects import arith

from . import values as V
from .core import PLAIN, SYNC, handles, identity
from .memory import MemRef, addressed
from .global_races import ATOMIC, check_global, watched_elements
from .ops_memory import check_shared_write, element_addresses


def _float(combine):
    def make(element):
        return lambda old, value: V.convert_float(combine(old.astype(np.float64), value), element)
    return make


def _unsigned(pick):
    def make(element):
        bits = V.element_kind(element)[1]
        return lambda old, value: np.where(pick(V.unsigned(old, bits), V.unsigned(value, bits)), old, value)
    return make


def _plain(combine):
    return lambda element: combine


_RMW = {
    "addf": _float(np.add), "mulf": _float(np.multiply),
    "maximumf": _plain(np.maximum), "minimumf": _plain(np.minimum),
    "maxnumf": _plain(np.fmax), "minnumf": _plain(np.fmin),
    "addi": _plain(np.add), "muli": _plain(np.multiply),
    "maxs": _plain(np.maximum), "mins": _plain(np.minimum),
    "maxu": _unsigned(np.greater_equal), "minu": _unsigned(np.less_equal),
    "andi": _plain(np.bitwise_and), "ori": _plain(np.bitwise_or), "xori": _plain(np.bitwise_xor),
    "assign": _plain(lambda old, value: value),
}


def apply_atomic(w, targets, element: ir.Type, update, info, what: str) -> np.ndarray:
    """Apply ``update(old, lane) -> new`` (register values of ``element``, shape ``(1,)``) at each
    ``(lane, buffer, byte offset)`` of ``targets`` in lane order; the old values, one per lane."""
    itemsize = V.item_bytes(element)
    shared = [(lane, offset) for lane, buffer, offset in targets if buffer is w.block.smem]
    if shared:
        lanes = np.array([lane for lane, _ in shared], np.int64)
        check_shared_write(w, np.array([offset for _, offset in shared], np.int64), lanes, itemsize, info, what,
                           atomic=True)
    for buffer in {buffer for _, buffer, _ in targets if buffer.watched}:
        positions = np.array([offset // itemsize for _, b, offset in targets if b is buffer], np.int64)
        check_global(w.block, w, buffer, watched_elements(buffer, positions, itemsize), ATOMIC, info, what)
    old = np.zeros(V.LANES, V.memory_dtype(element))
    for lane, buffer, offset in targets:
        typed = buffer.typed(V.memory_dtype(element))
        position = offset // itemsize
        current = typed[position:position + 1].copy()
        old[lane] = current[0]
        typed[position] = V.to_memory(update(V.from_memory(current, element), lane), element)[0]
    return V.from_memory(old, element)


def _lane(value: np.ndarray, lane: int) -> np.ndarray:
    return value[0:1] if value.shape[0] == 1 else value[lane:lane + 1]


@handles("memref.atomic_rmw")
def _atomic_rmw(op, c, info):
    kind = arith.AtomicRMWKind(ir.IntegerAttr(op.attributes["kind"]).value).name
    element = op.result.type
    make = _RMW.get(kind)
    if make is None:
        raise V.Unsupported(f"memref.atomic_rmw {kind}")
    combine = make(element)
    value, mem_slot = c.slot(op.operands[0]), c.slot(op.operands[1])
    indices = [c.slot(v) for v in list(op.operands)[2:]]
    r = c.slot(op.result)

    def fn(w):
        env = w.env
        lanes = w.lanes()
        if not lanes.size:
            env[r] = np.zeros(1, V.register_dtype(element))
            return False
        mem = env[mem_slot]
        addresses = element_addresses(w, mem, [env[i].astype(np.int64) for i in indices], info, what="atomic")
        targets = [(int(lane), mem.buffer, int(_lane(addresses, lane)[0])) for lane in lanes]
        values = env[value]
        env[r] = apply_atomic(w, targets, element, lambda old, lane: combine(old, _lane(values, lane)), info,
                              "this atomic")
        return True
    return SYNC, fn


# pointers are integers (see memory.ADDRESS_BITS): casts between them and integers change nothing
handles("llvm.inttoptr", "llvm.ptrtoint", "llvm.addrspacecast")(identity)


@handles("memref.extract_aligned_pointer_as_index")
def _aligned_pointer(op, c, info):
    """The memref's aligned pointer: its first element's address for a view (MLIR lowers ``memref.view``
    to a new aligned pointer), its source's for a subview (whose offset moves instead)."""
    m, r = c.slot(op.operands[0]), c.slot(op.result)

    def fn(w):
        mem = w.env[m]
        w.env[r] = _lanes(mem.aligned) + mem.buffer.base
    return PLAIN, fn


@handles("memref.extract_strided_metadata")
def _strided_metadata(op, c, info):
    """The base buffer (a rank-0 memref at the aligned pointer), the offset in elements, sizes, strides."""
    m = c.slot(op.operands[0])
    base, offset, *extents = (c.slot(v) for v in op.results)
    rank = len(extents) // 2

    def fn(w):
        env = w.env
        mem = env[m]
        env[base] = MemRef(mem.buffer, mem.aligned, (), (), mem.element, name=mem.name)
        env[offset] = (_lanes(mem.offset) - _lanes(mem.aligned)) // mem.itemsize
        for slot, value in zip(extents, mem.shape[:rank] + mem.strides):
            env[slot] = np.array([value], np.int64)
    return PLAIN, fn


def _lanes(offset) -> np.ndarray:
    """A byte offset (an int, or one per lane) as the interpreter's int64 register value."""
    return offset if isinstance(offset, np.ndarray) else np.array([offset], np.int64)


def pointer_targets(w, pointers: np.ndarray, lanes: np.ndarray, itemsize: int, space: int, info, what: str):
    """``(lane, buffer, byte offset)`` for the active lanes' pointers, each checked to point inside a
    buffer of the pointer's address space (1 global, 3 shared), aligned to ``itemsize``."""
    targets = []
    for lane in lanes:
        address = int(_lane(pointers, lane)[0])
        found = addressed(address)
        if found is not None:
            buffer, offset = found
            if space == 3 and buffer is not w.block.smem:
                found = None
        if found is None or offset + itemsize > buffer.nbytes:
            raise w.block.fault("out-of-bounds", f"{what} through the pointer {address:#x}, which points into no "
                                f"{'shared' if space == 3 else 'global'} buffer of this kernel (or past its end)",
                                info, warp=w, lanes=[int(lane)])
        if offset % itemsize:
            raise w.block.fault("misaligned", f"{what} at byte {offset} of '{buffer.name}' is not aligned to "
                                f"{itemsize} bytes", info, warp=w, lanes=[int(lane)])
        targets.append((int(lane), buffer, offset))
    return targets


def _address_space(t: ir.Type) -> int:
    match = re.search(r"ptr<(\d+)>", str(t))
    return int(match.group(1)) if match else 0


@handles("llvm.cmpxchg")
def _cmpxchg(op, c, info):
    """Compare-and-swap; the result is the struct ``(old, success)``."""
    pointer, compare, value = (c.slot(v) for v in op.operands)
    element = op.operands[1].type
    space = _address_space(op.operands[0].type)
    r = c.slot(op.result)

    def fn(w):
        env = w.env
        lanes = w.lanes()
        if not lanes.size:
            env[r] = V.Struct((np.zeros(1, V.register_dtype(element)), np.zeros(1, np.bool_)))
            return False
        targets = pointer_targets(w, env[pointer], lanes, V.item_bytes(element), space, info, "a compare-and-swap")
        expected, new = env[compare], env[value]
        old = apply_atomic(w, targets, element,
                           lambda current, lane: np.where(current == _lane(expected, lane), _lane(new, lane),
                                                          current), info, "this compare-and-swap")
        env[r] = V.Struct((old, old == expected))
        return True
    return SYNC, fn


PAIR_ADD = re.compile(r"atom\.(global|shared)\.add\.noftz\.(f16x2|bf16x2) \$0, \[\$1\], \$2;$")


def pair_add(op, c, info, match):
    """``atom.add.noftz.f16x2`` / ``.bf16x2``: two 16-bit floats, packed in 32 bits, added in one atomic."""
    pointer, packed = c.slot(op.operands[0]), c.slot(op.operands[1])
    space = 1 if match.group(1) == "global" else 3
    bf16 = match.group(2) == "bf16x2"
    i32 = ir.IntegerType.get_signless(32)
    r = c.slot(op.result)

    def halves(bits: np.ndarray) -> np.ndarray:
        raw = bits.astype(np.int32).view(np.uint16 if bf16 else np.float16)
        return V.bf16_from_bits(raw) if bf16 else raw.astype(np.float64)

    def add(old: np.ndarray, lane: int, values: np.ndarray) -> np.ndarray:
        total = halves(old) + halves(_lane(values, lane))
        packed_halves = V.bf16_to_bits(V.bf16_round(total.astype(np.float32))) if bf16 else total.astype(np.float16)
        return packed_halves.view(np.int32)

    def fn(w):
        env = w.env
        lanes = w.lanes()
        if not lanes.size:
            env[r] = np.zeros(1, np.int32)
            return False
        targets = pointer_targets(w, env[pointer], lanes, 4, space, info, "an atomic add of a pair")
        values = env[packed]
        env[r] = apply_atomic(w, targets, i32, lambda old, lane: add(old, lane, values), info, "this atomic add")
        return True
    return SYNC, fn
