"""Structured control flow (``scf.for``, ``scf.if``, ``scf.while``) over the lanes of a warp.

A branch or loop bound that every active lane agrees on runs once for the warp. Where lanes
disagree the warp diverges: each side runs with the lanes that take it (the warp's active mask),
and values leaving the region are merged lane by lane.
"""

from __future__ import annotations

import numpy as np
from mlir import ir

from . import values as V
from .core import GEN, PLAIN, Wait, back_edge, handles
from .period import BranchFrame, LoopFrame, OpaqueFrame, WhileFrame
from .skeleton import SKELETON_OMITS

TERMINATORS = frozenset({"scf.yield", "scf.condition"})


def _readers(value, keep):
    """The operations of a protocol skeleton (those in ``keep``, and terminators) that read ``value``, with the
    operand's position: operands a skeleton leaves out (the coordinates of TMA loads) are not reads."""
    for use in value.uses:
        owner = use.owner.operation if hasattr(use.owner, "operation") else use.owner
        if owner.name in TERMINATORS:
            yield owner, use.operand_number
        elif owner in keep:
            omits = SKELETON_OMITS.get(owner.name)
            if omits is None or use.operand_number not in omits(owner):
                yield owner, use.operand_number


def _constant_operand(op, position: int):
    """The integer value of an operand defined by ``arith.constant``, else None."""
    value = op.operands[position]
    if isinstance(value, ir.OpResult) and value.owner.name == "arith.constant":
        attribute = value.owner.attributes["value"]
        if isinstance(attribute, ir.IntegerAttr):
            return ir.IntegerAttr(attribute).value
    return None


def index_comparisons(index, keep):
    """How a protocol skeleton reads a loop index: ``(boundaries, offsets)`` when it only compares the index, or
    the index plus a constant (``offsets``: those sums), with constants, as a prefetch's guard ``k + c < n``
    does; ``boundaries`` are the iterations where such a comparison may change its value (the skeleton's
    behaviour depends on the index only by which side of them it is). None where the index is read otherwise."""
    boundaries, offsets = set(), []

    def compared(value, shift: int) -> bool:
        for reader, position in _readers(value, keep):
            bound = _constant_operand(reader, 1 - position) if reader.name == "arith.cmpi" else None
            if bound is None:
                return False
            # k + shift against bound may change where k + shift reaches bound (eq and ne on both sides, the
            # orderings at one), and where it crosses 0 (unsigned orderings)
            boundaries.update({bound - shift, bound - shift + 1, -shift})
        return True

    for reader, position in _readers(index, keep):
        if reader.name == "arith.cmpi":
            if not compared(index, 0):
                return None
            continue
        shift = _constant_operand(reader, 1 - position) if reader.name in ("arith.addi", "arith.subi") else None
        if shift is None or (reader.name == "arith.subi" and position != 0):
            return None
        shift = shift if reader.name == "arith.addi" else -shift
        offsets.append(reader.result)
        if not compared(reader.result, shift):
            return None
    return tuple(sorted(boundaries)), offsets


def merge(take: np.ndarray, new, old):
    """``new`` on the lanes in ``take`` (a 32-lane mask), ``old`` elsewhere."""
    if new is old:
        return new
    if not isinstance(new, np.ndarray) or not isinstance(old, np.ndarray):
        if old is None:
            return new
        raise V.Unsupported("a loop or branch result that is not a register value (a memref, a barrier "
                            "group, a descriptor) and differs between lanes")
    mask = take.reshape((take.shape[0],) + (1,) * (max(new.ndim, old.ndim) - 1))
    return np.where(mask, new, old)


def _uniform_bool(cond: np.ndarray, mask: np.ndarray):
    """True or False when all active lanes agree, else None."""
    if cond.shape[0] == 1:
        return bool(cond[0])
    taken = cond & mask
    if not taken.any():
        return False
    if (taken == mask).all():
        return True
    return None


def _uniform_int(x: np.ndarray, mask: np.ndarray, bits: int, unsigned: bool):
    if x.shape[0] == 1:
        value = x[0]
    else:
        active = x[mask]
        if active.size and (active != active[0]).any():
            return None
        value = active[0] if active.size else x[0]
    if unsigned:
        value = V.unsigned(np.asarray(value), bits)
    return int(value)


def _drivers(steps):
    """One region op's logic, ``steps(w)``: a generator yielding each block to run next (it sets the
    block's arguments and the warp's mask before yielding, and reads the block's results after), run
    as a plain instruction when no block can block, else as a generator instruction."""
    def plain(w):
        for block in steps(w):
            block.run(w)

    def gen(w):
        for block in steps(w):
            if type(block) is Wait:     # a scheduling point of the region op itself (a paced back-edge)
                yield block
            elif block.generator:
                yield from block.run(w)
            else:
                block.run(w)
    return plain, gen


def _instruction(steps, blocks):
    plain, gen = _drivers(steps)
    return (GEN, gen) if any(b is not None and b.generator for b in blocks) else (PLAIN, plain)


@handles("scf.for")
def _for(op, c, info):
    lb, ub, step = (c.slot(v) for v in list(op.operands)[:3])
    inits = [c.slot(v) for v in list(op.operands)[3:]]
    body_start = len(c.infos)       # the id the body's first operation gets
    body = c.loop_body(op.regions[0].blocks[0])
    iv, carried_args = body.args[0], body.args[1:]
    skeleton = c.keep is not None
    boundaries = ()
    if skeleton:
        comparisons = index_comparisons(op.regions[0].blocks[0].arguments[0], c.keep)
        if comparisons is not None:     # the summary leaves the index out, and skips no boundary (.period)
            boundaries, offsets = comparisons
            c.unread_indices.add(iv)
            c.unread_indices.update(c.slot(v) for v in offsets)
    results = [c.slot(v) for v in op.results]
    unsigned = "unsignedCmp" in op.attributes
    dtype, bits, kind = V.element_kind(op.operands[0].type)
    yields = body.yields
    pace = back_edge(info, body_start) if skeleton else None

    def steps(w):
        env = w.env
        lo, hi, st = (_uniform_int(env[s], w.mask, bits, unsigned) for s in (lb, ub, step))
        if st is not None and st <= 0:
            raise w.block.fault("bad-loop", f"scf.for with step {st}: a loop that never ends", info)
        carried = [env[s] for s in inits]
        if lo is not None and hi is not None and st is not None:
            if skeleton:        # a frame a loop summary can move ahead (.period)
                frame = LoopFrame(info.id, lo, st, hi, iv, boundaries)
                w.frames.append(frame)
                paced = body.generator and w.block.paced
                while frame.i < hi:
                    env[iv] = np.array([frame.i], dtype)
                    for slot, value in zip(carried_args, carried):
                        env[slot] = value
                    yield body
                    carried = [env[s] for s in yields]
                    frame.i += st
                    if paced and frame.i < hi:
                        # a scheduling point at the back-edge, holding what the next iteration starts with
                        for slot, value in zip(carried_args, carried):
                            env[slot] = value
                        yield pace
                w.frames.pop()
            else:
                for i in range(lo, hi, st):
                    env[iv] = np.array([i], dtype)
                    for slot, value in zip(carried_args, carried):
                        env[slot] = value
                    yield body
                    carried = [env[s] for s in yields]
        else:
            mask = w.mask
            if skeleton:
                w.frames.append(OpaqueFrame(info.id))
            for active in _divergent_iterations(w, lb, ub, step, unsigned, bits, iv, dtype):
                w.mask = active
                for slot, value in zip(carried_args, carried):
                    env[slot] = value
                yield body
                carried = [merge(active, env[s], old) for s, old in zip(yields, carried)]
            w.mask = mask
            if skeleton:
                w.frames.pop()
        for slot, value in zip(results, carried):
            env[slot] = value
    return _instruction(steps, [body])


def _divergent_iterations(w, lb: int, ub: int, step: int, unsigned: bool, bits: int, iv: int, dtype):
    """An ``scf.for`` whose bounds differ between lanes: yields the mask of the lanes running each iteration,
    having set each lane's index."""
    env = w.env
    lo, hi, st = (np.broadcast_to(env[s], w.mask.shape) for s in (lb, ub, step))
    if unsigned:
        lo, hi = V.unsigned(lo, bits), V.unsigned(hi, bits)
    i = lo.copy()
    active = w.mask & (i < hi)
    while active.any():
        env[iv] = i.astype(dtype)
        yield active
        i = i + st
        active = active & (i < hi)


@handles("scf.if")
def _if(op, c, info):
    cond = c.slot(op.operands[0])
    then = c.block(op.regions[0].blocks[0])
    otherwise = c.block(op.regions[1].blocks[0]) if len(op.regions[1].blocks) else None
    results = [c.slot(v) for v in op.results]
    skeleton = c.keep is not None
    on_table = op in c.table_branches

    def steps(w):
        env = w.env
        mask = w.mask
        taken = w.block.table_decision(env[cond], info) if on_table else _uniform_bool(env[cond], mask)
        if taken is None:       # the lanes disagree: each side with its lanes, results merged
            take = env[cond] & mask
            if skeleton:
                w.frames.append(BranchFrame(info.id, mask))
            w.mask = take
            yield then
            then_values = [env[s] for s in then.yields]
            w.mask = mask & ~take
            if otherwise is not None:
                yield otherwise
            w.mask = mask
            if skeleton:
                w.frames.pop()
            for slot, new, old in zip(results, then_values, [env[s] for s in otherwise.yields] if otherwise else []):
                env[slot] = merge(take, new, old)
            return
        branch = then if taken else otherwise
        if branch is None:
            return
        yield branch
        for slot, value in zip(results, [env[s] for s in branch.yields]):
            env[slot] = value
    return _instruction(steps, [then, otherwise])


@handles("scf.while")
def _while(op, c, info):
    inits = [c.slot(v) for v in op.operands]
    before = c.loop_body(op.regions[0].blocks[0])
    after = c.loop_body(op.regions[1].blocks[0])
    results = [c.slot(v) for v in op.results]
    skeleton = c.keep is not None

    def steps(w):
        env = w.env
        mask = w.mask
        values = [env[s] for s in inits]
        finished = [None] * len(results)
        active = mask
        frame = None
        if skeleton:
            frame = WhileFrame(info.id, mask)
            w.frames.append(frame)
        while True:
            if frame is not None:
                frame.active, frame.finished = active, finished
            w.mask = active
            for slot, value in zip(before.args, values):
                env[slot] = value
            yield before
            condition = env[before.yields[0]]
            forwarded = [env[s] for s in before.yields[1:]]
            decided = _uniform_bool(condition, active)
            if decided is True:
                pass
            elif decided is False:
                finished = [merge(active, new, old) if old is not None else new
                            for new, old in zip(forwarded, finished)]
                break
            else:
                going_on = np.broadcast_to(condition, active.shape) & active
                leaving = active & ~going_on
                finished = [merge(leaving, new, old) if old is not None else new
                            for new, old in zip(forwarded, finished)]
                active = going_on
                w.mask = active
            for slot, value in zip(after.args, forwarded):
                env[slot] = value
            yield after
            values = [env[s] for s in after.yields]
        w.mask = mask
        if skeleton:
            w.frames.pop()
        for slot, value in zip(results, finished):
            env[slot] = value
    return _instruction(steps, [before, after])
