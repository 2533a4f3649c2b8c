"""TMA descriptors: checked against TMA's rules, encoded with ``cuTensorMapEncodeTiled``, kept in device memory.

A kernel receives a descriptor as a pointer to its 128 bytes in global memory.
Descriptors are encoded per buffer address and never rewritten in place (a
kernel still running may be reading one), so each address a call passes gets
its own device copy, reused when the same buffer comes again.
"""

from __future__ import annotations

from .. import dtypes as dt
from ..errors import ArgumentError
from ..signature import TensorMapSpec
from .device import Device, check, driver

SWIZZLE_BYTES = (0, 32, 64, 128)
L2_PROMOTION_BYTES = (0, 64, 128, 256)
INTERLEAVE_BYTES = (0, 16, 32)
MAX_BOX = 256
MAX_RANK = 5
DESCRIPTOR_BYTES = 128
_CACHE_LIMIT = 256

_DATA_TYPES = {
    dt.float16: "FLOAT16", dt.bfloat16: "BFLOAT16", dt.float32: "FLOAT32", dt.float64: "FLOAT64",
    dt.int32: "INT32", dt.int64: "INT64", dt.uint8: "UINT8", dt.uint16: "UINT16", dt.uint32: "UINT32",
    dt.uint64: "UINT64", dt.int8: "UINT8", dt.int16: "UINT16",  # TMA copies bits: signedness is moot
    # cuTensorMapEncodeTiled has no float8 type; TMA moves them as bytes (zero fill reads 0.0 out of bounds).
    dt.float8_e4m3fn: "UINT8", dt.float8_e5m2: "UINT8",
}
_FLOAT_DATA_TYPES = ("FLOAT16", "BFLOAT16", "FLOAT32", "FLOAT64")


def rule_violations(spec: TensorMapSpec, dtype: dt.DType, shape: tuple[int, ...]) -> list[str]:
    """TMA's static rules that a (descriptor, array) pair breaks, each as a sentence; empty when legal."""
    problems = []
    if spec.ragged:
        if len(shape) != 2 or len(spec.box) != 3 or spec.box[0] != 1:
            return [f"a ragged descriptor spans a 2-D array of row segments with a (rows, cols) box, not a "
                    f"{len(shape)}-D array with box {spec.box[1:] if spec.box[:1] == (1,) else spec.box}"]
        shape = spec.view(shape, dtype.itemsize)[0]
    rank = len(shape)
    if dtype not in _DATA_TYPES:
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
    if spec.oob_nan and _DATA_TYPES.get(dtype) not in _FLOAT_DATA_TYPES:
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
    stride = itemsize
    for axis in range(rank - 1, 0, -1):
        stride *= shape[axis]
        if stride % 16:
            problems.append(f"the stride of axis {axis - 1} is {stride} bytes; TMA needs multiples of 16 "
                            f"(make the last extent a multiple of {16 // itemsize if itemsize < 16 else 1})")
            break
        if stride >= 1 << 40:
            problems.append(f"the stride of axis {axis - 1} is {stride} bytes, at or above 2^40")
            break
    for extent in shape:
        if extent > 1 << 32:
            problems.append(f"extent {extent} is above TMA's 2^32")
    return problems


def encode(spec: TensorMapSpec, dtype: dt.DType, shape: tuple[int, ...], address: int):
    """The ``CUtensorMap`` for ``spec`` over the array at ``address``."""
    cu = driver()
    extents, strides, offset = spec.view(shape, dtype.itemsize)
    rank = len(extents)
    enum = lambda kind, name: getattr(getattr(cu, kind), name)
    return check(cu.cuTensorMapEncodeTiled(
        enum("CUtensorMapDataType", f"CU_TENSOR_MAP_DATA_TYPE_{_DATA_TYPES[dtype]}"),
        rank, address + offset,
        [cu.cuuint64_t(extent) for extent in reversed(extents)],   # innermost dimension first
        [cu.cuuint64_t(s) for s in reversed(strides[:-1])],          # bytes, for every axis but the innermost
        [cu.cuuint32_t(extent) for extent in reversed(spec.box)],
        [cu.cuuint32_t(1)] * rank,
        enum("CUtensorMapInterleave",
             "CU_TENSOR_MAP_INTERLEAVE_NONE" if not spec.interleave else f"CU_TENSOR_MAP_INTERLEAVE_{spec.interleave}B"),
        enum("CUtensorMapSwizzle",
             "CU_TENSOR_MAP_SWIZZLE_NONE" if not spec.swizzle else f"CU_TENSOR_MAP_SWIZZLE_{spec.swizzle}B"),
        enum("CUtensorMapL2promotion", "CU_TENSOR_MAP_L2_PROMOTION_NONE" if not spec.l2_promotion
             else f"CU_TENSOR_MAP_L2_PROMOTION_L2_{spec.l2_promotion}B"),
        enum("CUtensorMapFloatOOBfill", "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA" if spec.oob_nan
             else "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE"),
    ), "cuTensorMapEncodeTiled")


class DeviceTensorMaps:
    """One kernel parameter's descriptors in device memory, one per buffer address seen."""

    def __init__(self, device: Device, spec: TensorMapSpec, dtype: dt.DType, shape: tuple[int, ...], name: str):
        self.device, self.spec, self.dtype, self.shape, self.name = device, spec, dtype, shape, name
        self._by_address: dict[int, int] = {}

    def pointer_for(self, address: int) -> int:
        """The device address of the descriptor for the array at ``address``."""
        found = self._by_address.get(address)
        if found is not None:
            return found
        alignment = 32 if self.spec.interleave == 32 else 16
        if address % alignment:
            raise ArgumentError(f"argument '{self.name}' starts at {address:#x}; TMA needs its address "
                                f"aligned to {alignment} bytes", code="misaligned",
                                hint="pass a freshly allocated array, not an offset view")
        cu = driver()
        if len(self._by_address) >= _CACHE_LIMIT:
            self.device.synchronize()  # no kernel still reads the old descriptors
            for pointer in self._by_address.values():
                cu.cuMemFree(pointer)
            self._by_address.clear()
        tensor_map = encode(self.spec, self.dtype, self.shape, address)
        pointer = int(check(cu.cuMemAlloc(DESCRIPTOR_BYTES), "cuMemAlloc"))
        check(cu.cuMemcpyHtoD(pointer, tensor_map.getPtr(), DESCRIPTOR_BYTES), "cuMemcpyHtoD")
        self._by_address[address] = pointer
        return pointer

