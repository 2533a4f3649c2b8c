"""``gpu`` dialect operations, the ``bar.sync`` barriers (``gpu.barrier``, ``nvvm.barrier``) and
``bar.warp.sync``."""

from __future__ import annotations

import re

import numpy as np
from mlir import ir

from . import values as V
from .core import GEN, PLAIN, Wait, handles
from .memory import MemRef
from .sync import BarSync


def converged(w, info, what: str) -> None:
    """``.sync.aligned`` instructions, and shuffles over the whole warp, need every live thread of the warp;
    meeting there, the threads synchronise (:func:`sync_lanes`)."""
    if not (w.mask == w.live).all():
        active = np.flatnonzero(w.mask)
        raise w.block.fault("divergent-collective", f"{what} reached by only {active.size} of the warp's "
                            f"{int(w.live.sum())} threads; it is a .sync.aligned instruction that every thread "
                            "of the warp must execute together", info, warp=w, lanes=active,
                            hint="keep warp- and warpgroup-wide operations out of branches that only some "
                                 "threads take")
    sync_lanes(w)


def sync_lanes(w) -> None:
    """The warp's threads met at a warp-wide ``.sync`` instruction (``bar.warp.sync``, a shuffle, ``elect.sync``,
    wgmma's): their accesses before it are ordered before those after it, for the race check between the lanes
    of a warp (:meth:`.Shadow.check_lanes`; skeletons do not make it)."""
    if not w.block.skeleton:
        w.tick()


def bar_sync(w, barrier_id: int, threads: int | None, info, wait: bool = True):
    """The warp arrives at ``bar.sync barrier_id[, threads]`` and waits for the others (a generator);
    with ``wait=False`` it only arrives (``barrier.arrive``) and goes on."""
    block = w.block
    if not (w.mask == w.live).all():
        active = np.flatnonzero(w.mask)
        raise block.fault("divergent-barrier", f"bar.sync {barrier_id} reached by only {active.size} of the "
                          f"warp's {int(w.live.sum())} threads: a barrier is an aligned instruction, every "
                          "thread of a warp must reach it together", info, warp=w, lanes=active,
                          hint="move the barrier out of the branch (nvdsl.when) that only some threads take")
    bar = block.bars.get(barrier_id)
    if bar is None:
        bar = block.bars[barrier_id] = BarSync(barrier_id, block.agents.count)
    if threads is not None:
        warps = threads // V.LANES
        if bar.arrived and bar.expected_warps is not None and bar.expected_warps != warps:
            raise block.fault("bad-barrier", f"named barrier {barrier_id} is used with {threads} threads here but "
                              f"with {bar.expected_warps * V.LANES} by the warps already waiting on it", info,
                              warp=w)
        bar.expected_warps = warps
    bar.arrived.append(w)
    np.maximum(bar.vc, w.vc.max(axis=0), out=bar.vc)
    generation = bar.generation
    bar.release_if_complete(block.warp_count - block.exited)
    if not wait:
        w.tick()
        return
    while bar.generation <= generation:
        yield Wait(lambda: bar.generation > generation, bar.describe, info,
                   key=("bar.sync", info.id, barrier_id, generation))
    np.maximum(w.vc, bar.released[generation], out=w.vc)
    w.tick()


@handles("gpu.barrier")
def _barrier(op, c, info):
    def gen(w):
        yield from bar_sync(w, 0, None, info)
    return GEN, gen


@handles("nvvm.barrier", "nvvm.barrier0")
def _named_barrier(op, c, info):
    operands = list(op.operands)
    if op.name == "nvvm.barrier0" or not operands:
        def gen(w):
            yield from bar_sync(w, 0, None, info)
        return GEN, gen
    segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"])) \
        if "operandSegmentSizes" in op.attributes else [1, 1]
    barrier_slot = c.slot(operands[0]) if segments[0] else None
    count_slot = c.slot(operands[segments[0]]) if len(segments) > 1 and segments[1] else None
    if barrier_slot is not None and count_slot is None:
        c.uncounted_barriers = True     # a named barrier whose arrivals take the count of earlier ones (.period)

    def gen(w):
        env = w.env
        barrier_id = int(V.first_active(env[barrier_slot], w.mask)) if barrier_slot is not None else 0
        threads = int(V.first_active(env[count_slot], w.mask)) if count_slot is not None else None
        yield from bar_sync(w, barrier_id, threads, info)
    return GEN, gen


# nvdsl's named barrier for threads arriving from different code (``LaunchContext.sync_threads`` and
# ``arrive_threads``): PTX's non-aligned ``barrier.sync`` and ``barrier.arrive``, which the NVVM dialect has
# no operations for.
NAMED_BARRIER_ASM = re.compile(r"^barrier\.(sync|arrive) \$0, \$1;$")


def named_barrier_asm(op, c, info, match):
    barrier_slot, count_slot = (c.slot(v) for v in list(op.operands)[:2])
    wait = match.group(1) == "sync"

    def gen(w):
        env = w.env
        barrier_id = int(V.first_active(env[barrier_slot], w.mask))
        threads = int(V.first_active(env[count_slot], w.mask))
        yield from bar_sync(w, barrier_id, threads, info, wait)
    return GEN, gen


@handles("nvvm.bar.warp.sync")
def _sync_warp(op, c, info):
    """``bar.warp.sync membermask`` (``LaunchContext.sync_warp``): with the full mask nvdsl emits, every live
    thread of the warp must reach it; they synchronise there. The hardware lets diverged threads meet at
    different ``bar.warp.sync`` instructions; the interpreter, running a warp's lanes together, asks for one."""
    member_mask = c.slot(op.operands[0])

    def fn(w):
        if int(V.first_active(w.env[member_mask], w.mask)) & 0xFFFFFFFF != 0xFFFFFFFF:
            raise V.Unsupported("bar.warp.sync with a member mask other than the whole warp")
        if not (w.mask == w.live).all():
            active = np.flatnonzero(w.mask)
            raise w.block.fault("divergent-collective", f"ctx.sync_warp() (bar.warp.sync with the full mask) "
                                f"reached by only {active.size} of the warp's {int(w.live.sum())} threads: every "
                                "thread of the warp must reach it (the interpreter asks them to reach the same "
                                "one)", info, warp=w, lanes=active,
                                hint="call ctx.sync_warp() outside branches that only some lanes take")
        sync_lanes(w)
    return PLAIN, fn


@handles("gpu.dynamic_shared_memory")
def _dynamic_shared(op, c, info):
    r = c.slot(op.result)
    element = ir.MemRefType(op.result.type).element_type

    def fn(w):
        smem = w.block.smem
        w.env[r] = MemRef(smem, 0, (smem.nbytes,), (1,), element, name="dynamic shared memory")
    return PLAIN, fn


_DIMENSION = re.compile(r"dim\s*(x|y|z)")


def _dimension(op) -> int:
    return "xyz".index(_DIMENSION.search(str(op.attributes["dimension"])).group(1))


@handles("gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim")
def _ids(op, c, info):
    axis = _dimension(op)
    kind = op.name.split(".")[1]
    r = c.slot(op.result)

    def fn(w):
        w.env[r] = w.block.launch.special(w, kind, axis)
    return PLAIN, fn


@handles("gpu.lane_id", "nvvm.read.ptx.sreg.laneid")
def _lane_id(op, c, info):
    r = c.slot(op.result)
    lanes = np.arange(V.LANES, dtype=V.register_dtype(op.result.type))

    def fn(w):
        w.env[r] = lanes if w.width == 1 else np.tile(lanes, w.width)
    return PLAIN, fn


_SPEC = re.compile(r"%(%|[-+ #0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z)?[diuxXfFeEgGcsp])")


def c_format(fmt: str, args: list) -> str:
    """A C printf format applied to Python numbers (what vprintf prints)."""
    values = iter(args)

    def one(match):
        spec = match.group(1)
        if spec == "%":
            return "%"
        conversion = spec[-1]
        flags = re.sub(r"(hh|h|ll|l|z)", "", spec[:-1])
        value = next(values)
        if conversion in "diu":
            return ("%" + flags + "d") % int(value)
        if conversion in "xX":
            return ("%" + flags + conversion) % int(value)
        if conversion == "c":
            return chr(int(value))
        if conversion == "p":
            return hex(int(value))
        return ("%" + flags + conversion) % float(value)
    return _SPEC.sub(one, fmt)


@handles("gpu.printf")
def _printf(op, c, info):
    fmt = ir.StringAttr(op.attributes["format"]).value
    args = [c.slot(v) for v in op.operands]
    kinds = []
    for v in op.operands:
        dtype, bits, kind = V.element_kind(v.type)
        kinds.append((bits, kind))
    specs = [m.group(1) for m in _SPEC.finditer(fmt) if m.group(1) != "%"]

    def fn(w):
        env = w.env
        columns = []
        for slot, (bits, kind), spec in zip(args, kinds, specs):
            value = np.broadcast_to(env[slot], (V.LANES,))
            if kind == "i" and spec[-1] in "uxX":
                value = V.unsigned(value, bits)
            columns.append(value)
        out = w.block.output
        for lane in np.flatnonzero(w.mask):
            out(c_format(fmt, [col[lane] for col in columns]))
    return PLAIN, fn



_SHUFFLE_SOURCE = {
    "xor": lambda lanes, offset: lanes ^ offset,
    "down": lambda lanes, offset: lanes + offset,
    "up": lambda lanes, offset: lanes - offset,
    "idx": lambda lanes, offset: np.broadcast_to(offset, lanes.shape),
}


@handles("gpu.shuffle")
def _shuffle(op, c, info):
    """``shfl.sync`` over a segment of ``width`` lanes: each lane reads the value of its source lane, or
    keeps its own where the source falls outside its segment (the second result says which)."""
    mode = str(op.attributes["mode"]).split()[-1].strip("<>#").split(".")[-1].strip("<>")
    source_of = _SHUFFLE_SOURCE.get(mode)
    if source_of is None:
        raise V.Unsupported(f"gpu.shuffle {op.attributes['mode']}")
    value, offset, width = (c.slot(v) for v in op.operands)
    result, valid = (c.slot(v) for v in op.results)
    lanes = np.arange(V.LANES, dtype=np.int64)

    def fn(w):
        converged(w, info, "gpu.shuffle")
        env = w.env
        segment = int(V.first_active(env[width], w.mask))
        if not 1 <= segment <= V.LANES or segment & (segment - 1):
            raise w.block.fault("bad-shuffle", f"a shuffle over {segment} lanes: the width must be a power of two "
                                "from 1 to 32", info, warp=w)
        if segment < V.LANES:
            raise V.Unsupported("shuffles over part of a warp")
        if not w.live.all():
            raise w.block.fault("divergent-collective", f"a shuffle over the whole warp in a warp of only "
                                f"{int(w.live.sum())} threads: the missing lanes cannot take part", info, warp=w)
        source = source_of(lanes, env[offset].astype(np.int64))
        inside = (source >= 0) & (source < segment)
        x = env[value]
        if x.shape[0] == 1:
            env[result] = x
        else:
            env[result] = np.where(inside.reshape((-1,) + (1,) * (x.ndim - 1)), x[np.where(inside, source, lanes)], x)
        env[valid] = inside
    return PLAIN, fn
