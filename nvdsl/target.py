"""The target's facts, known without a GPU: one home for each number and attribute name that several layers
use (the SM's registers and shared memory, TMA's rules, the chip and PTX version table, the attributes the
frontend leaves on a traced module for the compiler and the interpreter)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from . import dtypes as dt

if TYPE_CHECKING:
    from .signature import TensorMapSpec

# --- One Hopper SM (sm_90a) ------------------------------------------------------------------------------------
REGISTER_FILE = 65536               # 32-bit registers per SM (one block of 384 or 512 threads can fill it)
MAX_ENTRY_REGISTERS = 248           # per thread at kernel entry (PTX allows 255; setmaxnreg counts in 8s)
SETMAXNREG_MIN, SETMAXNREG_MAX = 24, 256    # setmaxnreg's range, in multiples of 8
# ptxas assembles every instruction against the kernel's entry register count (the warpgroups' mean), not a
# warpgroup's setmaxnreg budget: a wgmma of 64 x 256 float32 accumulators (128 registers a thread) failed with
# C7602 "Insufficient registers (152) ... register target of 158 or higher" and assembled at 160.
WGMMA_ENTRY_MARGIN = 32


def wgmma_entry_registers(n: int) -> int:
    """The entry register count ptxas needs to assemble a wgmma of ``n`` accumulator columns (0 for none): its
    float32 accumulators (n / 2 registers a thread for 64 rows) plus :data:`WGMMA_ENTRY_MARGIN`, in 8s."""
    return -(-(min(n, 256) // 2 + WGMMA_ENTRY_MARGIN) // 8) * 8 if n else 0


DYNAMIC_SHARED_ALIGNMENT = 1024     # the dynamic shared buffer's alignment (128-byte swizzled TMA tiles need it)
DEFAULT_SM_COUNT = 132              # H100 SXM / H200 SXM: what the task layer plans for when no GPU is present

# Shared memory one block may use (static + dynamic, with the opt-in), bytes, by compute capability
# (CUDA C Programming Guide, "Technical Specifications per Compute Capability").
_SHARED_MEMORY_PER_BLOCK = {70: 98304, 72: 49152, 75: 65536, 80: 166912, 86: 101376, 87: 166912, 89: 101376,
                            90: 232448, 100: 232448, 101: 232448, 103: 232448, 120: 101376, 121: 101376}

HOPPER_SHARED_MEMORY_PER_BLOCK = _SHARED_MEMORY_PER_BLOCK[90]     # 232448 bytes: 227 KiB

# The PTX ISA version (x10) each architecture first appears in (PTX ISA, "Release notes"): LLVM's NVPTX back end
# aborts the process on a target older than its chip, so nvdsl refuses that pair first.
MIN_PTX_VERSION = {
    "sm_50": 40, "sm_52": 41, "sm_53": 42, "sm_60": 50, "sm_61": 50, "sm_62": 50, "sm_70": 60, "sm_72": 61,
    "sm_75": 63, "sm_80": 70, "sm_86": 71, "sm_87": 74, "sm_89": 78, "sm_90": 78, "sm_90a": 80,
    "sm_100": 86, "sm_100a": 86, "sm_101": 86, "sm_101a": 86, "sm_103": 88, "sm_103a": 88,
    "sm_120": 87, "sm_120a": 87, "sm_121": 88, "sm_121a": 88,
}


def ptx_version(features: str) -> int | None:
    """The PTX ISA version (x10) a feature string such as ``"+ptx80"`` asks for; None if it names none."""
    versions = re.findall(r"\+ptx(\d+)", features)
    return int(versions[-1]) if versions else None


def max_shared_memory(chip: str) -> int | None:
    """Bytes of shared memory a block may use on ``chip`` (``sm_90a`` -> 232448), None when unknown."""
    match = re.fullmatch(r"sm_(\d+)[a-z]?", chip)
    return _SHARED_MEMORY_PER_BLOCK.get(int(match.group(1))) if match else None


_SHARED_DECLARATION = re.compile(r"^\s*\.shared\s+(?:\.align\s+\d+\s+)?\.\w+\s+\w+\[(\d+)\]", re.M)


def static_shared_memory(ptx: str) -> int:
    """Bytes of static shared memory the PTX module declares (the dynamic buffer is ``.extern``)."""
    return sum(int(size) for size in _SHARED_DECLARATION.findall(ptx))


# --- Attributes the frontend sets on a traced module, read by the compiler and the interpreter ---------------------
# A kernel's register count at entry (PTX .maxnreg), set on its gpu.launch when warpgroups re-size their
# registers (setmaxnreg needs to know it), moved to the outlined function.
MAXNREG_ATTR = "nvdsl.maxnreg"
# The host function's scratch arrays (nvdsl.empty/zeros): a JSON list of ScratchSpecs, one per trailing
# argument of the function.
SCRATCH_ATTR = "nvdsl.scratch"
# The host-side marker of a TMA descriptor: an unrealized cast of the array argument to a pointer, carrying the
# descriptor's settings. The runtime encodes the descriptor for the actual buffer at call time; the kernel
# receives it as a pointer.
TENSORMAP_ATTR = "nvdsl.tensormap"
# A gpu.launch made with gpu_launch(..., overlap_previous=True): launched as a programmatic dependent of the kernel
# before it (its body waits for that kernel first), read from the launch before outlining into the launch plan.
OVERLAP_PREVIOUS_ATTR = "nvdsl.overlap_previous"


# --- TMA (cuTensorMapEncodeTiled's rules) ---------------------------------------------------------------------
SWIZZLE_BYTES = (0, 32, 64, 128)
L2_PROMOTION_BYTES = (0, 64, 128, 256)
INTERLEAVE_BYTES = (0, 16, 32)
MAX_BOX = 256
MAX_RANK = 5
TMA_STRIDE_BYTES = 16               # TMA steps every axis but the innermost by a multiple of this many bytes
TMA_ADDRESS_BYTES = 16              # and starts at an address that is a multiple of this (32 interleaved)
DESCRIPTOR_BYTES = 128

TMA_DATA_TYPES = {
    dt.float16: "FLOAT16", dt.bfloat16: "BFLOAT16", dt.float32: "FLOAT32", dt.float64: "FLOAT64",
    dt.int32: "INT32", dt.int64: "INT64", dt.uint8: "UINT8", dt.uint16: "UINT16", dt.uint32: "UINT32",
    dt.uint64: "UINT64", dt.int8: "UINT8", dt.int16: "UINT16",  # TMA copies bits: signedness is moot
    # cuTensorMapEncodeTiled has no float8 type; TMA moves them as bytes (zero fill reads 0.0 out of bounds).
    dt.float8_e4m3fn: "UINT8", dt.float8_e5m2: "UINT8",
}
_FLOAT_DATA_TYPES = ("FLOAT16", "BFLOAT16", "FLOAT32", "FLOAT64")


VECTOR_BYTES = 16                   # the widest load or store of one thread (ld/st.global.v4.b32)


def vector_problem(shape: tuple[int, ...], itemsize: int, strides: tuple[int, ...] | None = None,
                   unaligned: bool = False) -> str | None:
    """Why the rows of an array of ``shape`` (element ``strides``, None: row-major; ``unaligned``: its start is off
    a 16-byte boundary) cannot move in aligned vectors of :data:`VECTOR_BYTES`, each a run of ``16 / itemsize``
    elements along the last axis starting at a multiple of that count (a run then lies wholly inside a row or
    wholly past its end); None when they can."""
    if not shape or VECTOR_BYTES % itemsize or itemsize == VECTOR_BYTES:
        return f"{itemsize}-byte elements do not make 16-byte vectors of several"
    length = VECTOR_BYTES // itemsize
    if unaligned:
        return f"it starts off a {VECTOR_BYTES}-byte boundary"
    if shape[-1] % length:
        return f"its rows hold {shape[-1]} elements, not a multiple of {length}"
    if strides is not None and strides[-1] != 1 and shape[-1] != 1:
        return f"its last axis has a stride of {strides[-1]} elements"
    far = [n * itemsize for n in (strides or ())[:-1] if n * itemsize % VECTOR_BYTES]
    if far:
        return f"its rows are {far[-1]} bytes apart, not a multiple of {VECTOR_BYTES}"
    return None


def stride_problem(shape: tuple[int, ...], itemsize: int, strides: tuple[int, ...] | None = None) -> str | None:
    """Why no TMA descriptor can address an array of ``shape`` and element ``strides`` (None: row-major), whatever
    its box: a last axis without unit stride, or another axis stepping a number of bytes that is not a multiple
    of 16; None when one can."""
    from .signature import TensorMapSpec
    if not shape:
        return None
    return _strided_last_axis(shape, strides) or _byte_stride_problem(
        TensorMapSpec(-1, (1,) * len(shape)).view(shape, itemsize, strides)[1], itemsize, strides)


def _strided_last_axis(shape, strides) -> str | None:
    if strides is not None and shape and shape[-1] != 1 and strides[-1] != 1:
        return (f"the array's last axis has a stride of {strides[-1]} elements; TMA reads rows of consecutive "
                "elements (a unit stride on the last axis)")
    return None


def _byte_stride_problem(byte_strides, itemsize: int, strides) -> str | None:
    for axis in range(len(byte_strides) - 2, -1, -1):
        stride = byte_strides[axis]
        if stride % TMA_STRIDE_BYTES:
            return f"the stride of axis {axis} is {stride} bytes; TMA needs multiples of {TMA_STRIDE_BYTES} " + (
                f"(make the last extent a multiple of {16 // itemsize if itemsize < 16 else 1})" if strides is None
                else "(the view's element strides are " + str(list(strides)) + ")")
        if not 0 < stride < 1 << 40:
            return f"the stride of axis {axis} is {stride} bytes; TMA needs it above 0 and below 2^40"
    return None


def rule_violations(spec: "TensorMapSpec", dtype: dt.DType, shape: tuple[int, ...],
                    strides: tuple[int, ...] | None = None, unaligned: bool = False) -> list[str]:
    """TMA's static rules that a (descriptor, array) pair breaks, each as a sentence; empty when legal.
    ``strides``: the array's element strides (None: row-major); ``unaligned``: it starts off a 16-byte boundary."""
    problems = [f"the array starts at an address that is not a multiple of {TMA_ADDRESS_BYTES} bytes"] if unaligned \
        else []
    if spec.ragged and (len(shape) != 2 or len(spec.box) != 3 or spec.box[0] != 1):
        return [f"a ragged descriptor spans a 2-D array of row segments with a (rows, cols) box, not a "
                f"{len(shape)}-D array with box {spec.box[1:] if spec.box[:1] == (1,) else spec.box}"]
    last_axis = _strided_last_axis(shape, strides)
    if last_axis:
        return [last_axis]
    shape, byte_strides, _ = spec.view(shape, dtype.itemsize, strides)
    rank = len(shape)
    if dtype not in TMA_DATA_TYPES:
        problems.append(f"TMA cannot move {dtype.name} elements")
    if not 1 <= rank <= MAX_RANK:
        problems.append(f"TMA handles arrays of rank 1 to {MAX_RANK}, not {rank}")
    if len(spec.box) != rank:
        problems.append(f"the box {spec.box} has {len(spec.box)} dimensions but the array has {rank}")
    for extent in spec.box:
        if not 1 <= extent <= MAX_BOX:
            problems.append(f"box extent {extent} is outside 1..{MAX_BOX}")
    itemsize = dtype.itemsize
    inner_bytes = spec.box[-1] * itemsize if spec.box else 0
    if spec.swizzle not in SWIZZLE_BYTES:
        problems.append(f"swizzle={spec.swizzle} must be one of {SWIZZLE_BYTES} bytes")
    if spec.interleave not in INTERLEAVE_BYTES:
        problems.append(f"interleave={spec.interleave} must be one of {INTERLEAVE_BYTES} bytes")
    if spec.oob_nan and TMA_DATA_TYPES.get(dtype) not in _FLOAT_DATA_TYPES:
        problems.append(f"oob='nan' needs a float16, bfloat16, float32 or float64 array; TMA moves "
                        f"{dtype.name} as plain bits and can only fill zeros out of bounds")
    if spec.l2_promotion not in L2_PROMOTION_BYTES:
        problems.append(f"l2_promotion={spec.l2_promotion} must be one of {L2_PROMOTION_BYTES} bytes")
    if spec.interleave == 0:
        if inner_bytes % 16:
            problems.append(f"the box's inner row is {inner_bytes} bytes; without interleave it must be a "
                            "multiple of 16 bytes")
        if spec.swizzle and inner_bytes > spec.swizzle:
            problems.append(f"the box's inner row is {inner_bytes} bytes, wider than the {spec.swizzle}-byte "
                            "swizzle span (make the box's last extent smaller or the swizzle wider)")
    problem = _byte_stride_problem(byte_strides, itemsize, strides)
    if problem:
        problems.append(problem)
    for extent in shape:
        if extent > 1 << 32:
            problems.append(f"extent {extent} is above TMA's 2^32")
    return problems
