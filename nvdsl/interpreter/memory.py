"""Memory as the interpreter sees it: byte buffers, typed memref views, and the address arithmetic of
TMA boxes (zero fill, swizzle) and of wgmma's shared-memory matrix descriptors.

Every buffer is a flat ``uint8`` array: a copy of a kernel argument (global memory) or a block's
dynamic shared memory. A :class:`MemRef` is a typed, strided view of one buffer; its byte offset
may differ between lanes (a view at a traced offset).
"""

from __future__ import annotations

import functools
import itertools
import weakref
from dataclasses import dataclass

import numpy as np
from mlir import ir

from ..layouts.swizzle import swizzle
from ..signature import TensorMapSpec, row_major_strides
from . import values as V

GLOBAL = "global"
SHARED = "shared"
LOCAL = "local"


# Pointers (``memref.extract_aligned_pointer_as_index``, ``llvm.inttoptr``) are integers: a buffer's
# number in the bits above ADDRESS_BITS, the byte offset below (mbarrier addresses, at 1 << 40, stay apart).
ADDRESS_BITS = 44
_ADDRESSED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_NUMBERS = itertools.count(1)


class Buffer:
    """A flat byte buffer: one kernel argument's copy, or one block's shared memory."""

    def __init__(self, data: np.ndarray, name: str, space: str):
        self.data = data
        self.name = name
        self.space = space
        self.shadow = None          # the race detector's state, for shared memory
        self.watched = False        # global memory some kernel may write: watched for races between blocks
        self.shape: tuple[int, ...] = (self.nbytes,)
        self.strides: tuple[int, ...] = (1,)
        self.granule = 1            # bytes per element, as races between blocks are watched
        self._typed: dict = {}
        self._base = None

    def watch(self, shape: tuple[int, ...], itemsize: int, strides: tuple[int, ...] | None = None) -> None:
        """Watch this global buffer, an array of ``shape`` (element ``strides``, row-major if None) with elements
        of ``itemsize`` bytes, for races between the blocks of a launch (:mod:`.global_races`)."""
        self.watched = True
        self.shape = tuple(shape)
        self.strides = row_major_strides(shape) if strides is None else tuple(strides)
        self.granule = itemsize

    def index_of(self, element: int) -> tuple[int, ...]:
        """The index, in the watched array's shape, of the element at position ``element`` of the buffer."""
        index = [0] * len(self.shape)
        for axis in sorted(range(len(self.shape)), key=lambda a: -self.strides[a]):
            if self.shape[axis] > 1:
                index[axis], element = divmod(element, self.strides[axis])
        return tuple(index)

    @property
    def base(self) -> int:
        """The address of the buffer's first byte, given when a kernel first takes a pointer into it."""
        if self._base is None:
            number = next(_NUMBERS) % (1 << (62 - ADDRESS_BITS)) or next(_NUMBERS)
            while number in _ADDRESSED:
                number = next(_NUMBERS) % (1 << (62 - ADDRESS_BITS)) or next(_NUMBERS)
            _ADDRESSED[number] = self
            self._base = number << ADDRESS_BITS
        return self._base

    @property
    def nbytes(self) -> int:
        return self.data.shape[0]

    def typed(self, dtype: np.dtype) -> np.ndarray:
        view = self._typed.get(dtype)
        if view is None:
            usable = self.nbytes - self.nbytes % dtype.itemsize
            view = self._typed[dtype] = self.data[:usable].view(dtype)
        return view


class MemRef:
    """A typed view of a buffer: element ``i`` (a tuple of indices) is at byte
    ``offset + itemsize * sum(i_k * strides_k)``.

    ``aligned`` is the byte where the memref's aligned pointer points, as MLIR lowers it: ``memref.view``
    moves the pointer, ``memref.subview`` keeps its source's and moves only the offset (default: ``offset``).
    """

    __slots__ = ("buffer", "offset", "aligned", "shape", "strides", "element", "mem_dtype", "itemsize", "name",
                 "dynamic")

    def __init__(self, buffer: Buffer, offset, shape, strides, element: ir.Type, name: str | None = None,
                 aligned=None):
        self.buffer = buffer
        self.offset = offset            # an int, or an int64 lane array
        self.aligned = offset if aligned is None else aligned
        self.shape = tuple(shape)
        self.strides = tuple(strides)
        self.element = element
        self.mem_dtype = V.memory_dtype(element)
        self.itemsize = self.mem_dtype.itemsize
        self.name = name or buffer.name
        self.dynamic = any(extent < 0 for extent in self.shape)

    @property
    def space(self) -> str:
        return self.buffer.space

    @property
    def nbytes(self) -> int:
        n = self.itemsize
        for s in self.shape:
            n *= s
        return n


def addressed(address: int):
    """The buffer a pointer points into and the byte offset in it (None where no buffer has that address)."""
    buffer = _ADDRESSED.get(address >> ADDRESS_BITS)
    return None if buffer is None else (buffer, address & ((1 << ADDRESS_BITS) - 1))


def memref_layout(t: ir.MemRefType) -> tuple[tuple[int, ...], int | None, tuple[int, ...]]:
    """(shape, static offset or None when dynamic, strides) of a memref type."""
    shape = tuple(t.shape)
    strides, offset = t.get_strides_and_offset()
    dynamic = ir.ShapedType.get_dynamic_stride_or_offset()
    return shape, (None if offset == dynamic else offset), tuple(strides)


def is_private(memref: ir.Value) -> bool:
    """Whether a memref is a thread's local variable (a ``memref.alloca``: registers, after LLVM promotes it)."""
    return isinstance(memref, ir.OpResult) and memref.owner.name == "memref.alloca"


def is_shared(t: ir.MemRefType) -> bool:
    space = t.memory_space
    return space is not None and ("workgroup" in str(space) or str(space) == "3")


# --- TMA ---------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=512)
def box_layout(box: tuple[int, ...], itemsize: int, span: int, phase: int) -> np.ndarray:
    """Byte offsets (relative to the box's start, at ``phase`` = start % 1024) where each element of a
    row-major box lands in shared memory, as a box-shaped array."""
    count = int(np.prod(box))
    dense = np.arange(count, dtype=np.int64) * itemsize + phase
    return (swizzle(dense, span) - phase).reshape(box)


@dataclass(frozen=True)
class TensorMap:
    """A TMA descriptor as encoded for one argument's buffer."""

    buffer: Buffer
    element: ir.Type
    shape: tuple[int, ...]          # the global array's shape, outermost first
    box: tuple[int, ...]            # the box, outermost first
    swizzle: int
    oob_nan: bool
    name: str
    ragged: bool = False
    strides: tuple[int, ...] | None = None     # the global array's element strides (None: row-major)

    @property
    def itemsize(self) -> int:
        return V.item_bytes(self.element)

    @functools.cached_property
    def box_bytes(self) -> int:     # read at every TMA load a skeleton issues and lands
        return int(np.prod(self.box)) * self.itemsize

    def box_elements(self, coords: tuple[int, ...]):
        """Global element indices of the box at ``coords`` (outermost first) and where they are in bounds."""
        extents, strides, offset = TensorMapSpec(-1, self.box, ragged=self.ragged).view(self.shape, 1, self.strides)
        index = np.full(self.box, offset, dtype=np.int64)
        valid = np.ones(self.box, dtype=bool)
        for axis, (start, extent, size, stride) in enumerate(zip(coords, self.box, extents, strides)):
            shape = [1] * len(self.box)
            shape[axis] = extent
            positions = (start + np.arange(extent, dtype=np.int64)).reshape(shape)
            inside = (positions >= 0) & (positions < size)
            valid = valid & inside
            index = index + np.where(inside, positions, 0) * stride
        return index, valid


# --- wgmma descriptors ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class MatrixDescriptor:
    """wgmma's 64-bit shared-memory matrix descriptor, decoded."""

    start: int              # byte address
    leading: int            # leading dimension byte offset
    stride: int             # stride dimension byte offset
    base_offset: int
    swizzle: int            # span in bytes: 0 (interleaved), 32, 64, 128

    @classmethod
    @functools.lru_cache(maxsize=4096)
    def decode(cls, bits: int) -> "MatrixDescriptor":
        bits &= (1 << 64) - 1
        field = lambda lo, width: (bits >> lo) & ((1 << width) - 1)
        mode = field(62, 2)
        return cls(start=field(0, 14) << 4, leading=field(16, 14) << 4, stride=field(32, 14) << 4,
                   base_offset=field(49, 3), swizzle={0: 0, 1: 128, 2: 64, 3: 32}[mode])


@functools.lru_cache(maxsize=1024)
def operand_addresses(descriptor: MatrixDescriptor, rows: int, k: int, itemsize: int, k_major: bool) -> np.ndarray:
    """Byte addresses of a (rows, k) operand (A: M x K; B given as N x K) that wgmma reads through
    ``descriptor``, in the canonical layouts of the PTX ISA (K-major or MN-major, by swizzle).

    Units follow the ISA: 16-byte chunks of ``16 // itemsize`` elements; ``W`` chunks per swizzle row.
    """
    per_chunk = 16 // itemsize
    width = max(descriptor.swizzle // 16, 1)
    mn = np.arange(rows, dtype=np.int64)[:, None]
    kk = np.arange(k, dtype=np.int64)[None, :]
    lbo, sbo = descriptor.leading // 16, descriptor.stride // 16
    if k_major:
        chunk, element = kk // per_chunk, kk % per_chunk
        row, group = mn % 8, mn // 8
        if descriptor.swizzle == 0:
            units = row + group * sbo + chunk * lbo
        else:
            units = row * width + group * sbo + chunk
    else:
        chunk, element = mn // per_chunk, mn % per_chunk
        row, group = kk % 8, kk // 8
        if descriptor.swizzle == 0:
            units = chunk * sbo + row + group * lbo
        else:
            units = chunk % width + (chunk // width) * lbo + row * width + group * sbo
    addresses = descriptor.start + units * 16 + element * itemsize
    return swizzle(addresses, descriptor.swizzle)
