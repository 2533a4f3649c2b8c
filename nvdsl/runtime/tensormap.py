"""TMA descriptors: checked against TMA's rules, encoded with ``cuTensorMapEncodeTiled``, kept in device memory.

A kernel receives a descriptor as a pointer to its 128 bytes in global memory.
Descriptors are encoded per buffer address and never rewritten in place (a
kernel still running may be reading one), so each address a call passes gets
its own device copy, reused when the same buffer comes again.

While the launch's stream is captured into a CUDA graph, a new address (a tensor the graph allocates) cannot be
given a descriptor by allocating and copying from the host: the descriptor goes into a slot set aside beforehand
(:class:`_Slots`, per device), written by memset nodes on the captured stream (the graph carries its 128 bytes as
the nodes' values and rewrites them at each replay), and that slot is never reused while the process lives (a
graph may be replayed at any time).
"""

from __future__ import annotations

import ctypes

from .. import dtypes as dt
from ..errors import ArgumentError, CaptureError
from ..signature import TensorMapSpec
from ..target import DESCRIPTOR_BYTES, TMA_DATA_TYPES
from .device import Device, check, driver

_CACHE_LIMIT = 256
#: Descriptor slots set aside per device for captures (8 KiB each 64); topped up outside captures.
_SPARE_SLOTS = 512


class _Slots:
    """Descriptor slots of one device, allocated outside captures for the descriptors a capture needs."""

    def __init__(self):
        self.free: list[int] = []
        self.blocks: list[int] = []          # kept for the process's life: a graph may read them at any replay

    def top_up(self) -> None:
        if len(self.free) >= _SPARE_SLOTS // 2:
            return
        block = int(check(driver().cuMemAlloc(_SPARE_SLOTS * DESCRIPTOR_BYTES), "cuMemAlloc"))
        self.blocks.append(block)
        self.free += [block + i * DESCRIPTOR_BYTES for i in range(_SPARE_SLOTS)]

    def take(self, name: str) -> int:
        if not self.free:
            raise CaptureError(f"argument '{name}': the capture needs more new TMA descriptors (one per launch on a "
                               f"buffer the graph allocates) than were set aside (at least {_SPARE_SLOTS // 2})",
                               code="capture-descriptors",
                               hint="capture fewer calls per graph, or pass buffers allocated before capture")
        return self.free.pop()


_SLOTS: dict[int, _Slots] = {}


def is_capturing(stream: int) -> bool:
    """Whether ``stream`` is being captured into a CUDA graph (``cuStreamIsCapturing``)."""
    if not stream:          # the legacy default stream is never captured
        return False
    cu = driver()
    status = check(cu.cuStreamIsCapturing(stream), "cuStreamIsCapturing")
    return status == cu.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_ACTIVE


def write_in_capture(pointer: int, tensor_map, stream: int) -> None:
    """Write a descriptor's 128 bytes at ``pointer`` by memset nodes on a captured stream (no host memory read)."""
    cu = driver()
    words = (ctypes.c_uint32 * (DESCRIPTOR_BYTES // 4)).from_address(tensor_map.getPtr())
    i = 0
    while i < len(words):          # a run of equal words is one node
        j = i
        while j + 1 < len(words) and words[j + 1] == words[i]:
            j += 1
        check(cu.cuMemsetD32Async(pointer + 4 * i, words[i], j - i + 1, stream), "cuMemsetD32Async")
        i = j + 1


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
        #: The descriptors made so far by buffer address (read it; :meth:`pointer_for` writes it).
        self.known: dict[int, int] = {}
        #: How many times :meth:`pointer_for` freed the descriptors it had made (those a caller kept are gone).
        self.freed = 0
        self._kept: set[int] = set()             # descriptors a captured graph reads: never freed
        self._slots = _SLOTS.setdefault(device.info.ordinal, _Slots())
        self._slots.top_up()

    def pointer_for(self, address: int, stream: int = 0, captured: bool = False) -> int:
        """The device address of the descriptor for the array at ``address``: written on ``stream`` while it is
        being captured (see the module's note); one a capture reads (``captured``: the caller knows it is capturing)
        is kept for the process's life."""
        found = self.known.get(address)
        if found is not None:
            if captured:
                self._kept.add(found)
            return found
        alignment = 32 if self.spec.interleave == 32 else 16
        if address % alignment:
            raise ArgumentError(f"argument '{self.name}' starts at {address:#x}; TMA needs its address "
                                f"aligned to {alignment} bytes", code="misaligned",
                                hint="pass a view that starts on a 16-byte boundary, or a fresh copy (x.clone())")
        cu = driver()
        tensor_map = encode(self.spec, self.dtype, self.shape, address, self.strides)
        if captured or is_capturing(stream):
            # Not kept for later calls: the slot holds the descriptor only once a replay's memsets have run.
            pointer = self._slots.take(self.name)
            write_in_capture(pointer, tensor_map, stream)
            return pointer
        if len(self.known) >= _CACHE_LIMIT:
            self.device.synchronize()  # no kernel still reads the old descriptors
            for pointer in self.known.values():
                if pointer not in self._kept:       # a graph's descriptor stays
                    cu.cuMemFree(pointer)
            self.known.clear()
            self.freed += 1
        self._slots.top_up()
        pointer = int(check(cu.cuMemAlloc(DESCRIPTOR_BYTES), "cuMemAlloc"))
        check(cu.cuMemcpyHtoD(pointer, tensor_map.getPtr(), DESCRIPTOR_BYTES), "cuMemcpyHtoD")
        self.known[address] = pointer
        return pointer

