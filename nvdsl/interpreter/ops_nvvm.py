"""The other ``nvvm`` and ``llvm`` operations nvdsl emits: ``setmaxnreg`` (checked against the register file),
``elect.sync``, ``griddepcontrol``, special registers and the global timer, LLVM struct values, ``trap``, and
inline PTX (recognised by its text and run by the module of the primitive it is)."""

from __future__ import annotations

import re

import numpy as np
from mlir import ir

from ..target import REGISTER_FILE
from . import values as V
from .core import GEN, PLAIN, Wait, handles
from .ops_atomics import PAIR_ADD, pair_add
from .ops_gpu import NAMED_BARRIER_ASM, converged, named_barrier_asm, sync_lanes
from .ops_wgmma import REGISTER_A_WGMMA, register_a_wgmma


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
        sync_lanes(w)
        result = np.zeros(w.mask.shape, np.bool_)
        for k in range(w.width):        # one lane per warp (a warpgroup run as one unit has 4)
            lanes = np.flatnonzero(w.mask[k * V.LANES:(k + 1) * V.LANES])
            if lanes.size:
                result[k * V.LANES + lanes[0]] = True
        w.env[r] = result
    return PLAIN, fn


@handles("nvvm.griddepcontrol")
def _griddepcontrol(op, c, info):
    """``griddepcontrol.wait`` / ``.launch_dependents`` (programmatic dependent launch): the interpreter runs a
    program's kernels one after another, so the kernel before has always completed and nothing is to be done."""
    def fn(w):
        pass
    return PLAIN, fn


@handles("nvvm.read.ptx.sreg.globaltimer")
@handles("nvvm.read.ptx.sreg.clock64")
def _globaltimer(op, c, info):
    """The block's simulated clock, 32 ns on at each read; ``%clock64`` reads it too (a cycle a nanosecond)."""
    r = c.slot(op.result)

    def fn(w):
        block = w.block
        block.time_ns += 32
        w.env[r] = np.array([block.time_ns], np.int64)
    return PLAIN, fn


@handles("nvvm.read.ptx.sreg.smid")
def _smid(op, c, info):
    """The SM a block runs on: in the interpreter, one per block (its linear index)."""
    r = c.slot(op.result)

    def fn(w):
        (x, y, z), (gx, gy, _) = w.block.block_id, w.block.launch.grid
        w.env[r] = np.array([(z * gy + y) * gx + x], np.int32)
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


@handles("llvm.inline_asm")
def _inline_asm(op, c, info):
    """The inline PTX nvdsl emits, recognised by its text; any other is refused."""
    text = ir.StringAttr(op.attributes["asm_string"]).value
    for pattern, compile_fn in ((PAIR_ADD, pair_add), (REGISTER_A_WGMMA, register_a_wgmma),
                                (NAMED_BARRIER_ASM, named_barrier_asm)):
        match = pattern.search(text)
        if match is not None:
            return compile_fn(op, c, info, match)
    raise V.Unsupported(f"the inline PTX {' '.join(text.split())!r}")
