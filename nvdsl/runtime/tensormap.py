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
from ..target import DESCRIPTOR_BYTES, TMA_DATA_TYPES
from .device import Device, check, driver

_CACHE_LIMIT = 256


def encode(spec: TensorMapSpec, dtype: dt.DType, shape: tuple[int, ...], address: int,
           element_strides: tuple[int, ...] | None = None):
    """The ``CUtensorMap`` for ``spec`` over the array at ``address`` (a strided view where ``element_strides``
    is given)."""
    cu = driver()
    extents, strides, offset = spec.view(shape, dtype.itemsize, element_strides)
    rank = len(extents)
    enum = lambda kind, name: getattr(getattr(cu, kind), name)
    return check(cu.cuTensorMapEncodeTiled(
        enum("CUtensorMapDataType", f"CU_TENSOR_MAP_DATA_TYPE_{TMA_DATA_TYPES[dtype]}"),
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

    def __init__(self, device: Device, spec: TensorMapSpec, dtype: dt.DType, shape: tuple[int, ...], name: str,
                 strides: tuple[int, ...] | None = None):
        self.device, self.spec, self.dtype, self.shape, self.name = device, spec, dtype, shape, name
        self.strides = strides
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
                                hint="pass a view that starts on a 16-byte boundary, or a fresh copy (x.clone())")
        cu = driver()
        if len(self._by_address) >= _CACHE_LIMIT:
            self.device.synchronize()  # no kernel still reads the old descriptors
            for pointer in self._by_address.values():
                cu.cuMemFree(pointer)
            self._by_address.clear()
        tensor_map = encode(self.spec, self.dtype, self.shape, address, self.strides)
        pointer = int(check(cu.cuMemAlloc(DESCRIPTOR_BYTES), "cuMemAlloc"))
        check(cu.cuMemcpyHtoD(pointer, tensor_map.getPtr(), DESCRIPTOR_BYTES), "cuMemcpyHtoD")
        self._by_address[address] = pointer
        return pointer

