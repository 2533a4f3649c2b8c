"""Arrays seen from a kernel: global-memory arguments and shared-memory views.

``x[i, j]`` loads (``memref.load``) and ``x[i, j] = v`` stores
(``memref.store``). Every index is a Python int (checked against the shape
at trace time) or a traced integer (converted to ``index`` by its own
signedness; not bounds-checked on the GPU). Slices are not supported.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, gpu, memref

from .. import dtypes as dt
from ..compiler.driver import DYNAMIC_SHARED_ALIGNMENT
from ..errors import TraceError, user_location
from .context import at_user_line, current_kernel
from .values import Value, _constant, _convert, _python_number, as_value

GLOBAL = "global"
SHARED = "shared"


class Array:
    """A typed, statically shaped view of GPU memory, indexable inside a kernel body.

    Attributes:
        shape: the extents, Python ints.
        dtype: the element dtype.
        space: ``"global"`` for kernel arguments, ``"shared"`` for shared memory.
    """

    __slots__ = ("ir", "dtype", "shape", "name", "space", "_on_write", "_plan", "offset", "alignment", "lease")

    def __init__(self, ir_value: ir.Value, dtype: dt.DType, shape: tuple[int, ...], *,
                 name: str, space: str, on_write=None, plan: "SharedMemoryPlan | None" = None,
                 offset: "int | Value | None" = None, alignment: int | None = None, lease=None):
        self.ir = ir_value
        self.dtype = dtype
        self.shape = tuple(shape)
        self.name = name
        self.space = space
        self._on_write = on_write
        self._plan = plan
        #: For shared arrays, the byte offset in the kernel's shared memory buffer (else None): a Python
        #: int, or a traced index for a view whose place is only known on the GPU (a ring slot).
        self.offset = offset
        #: For shared arrays, a power of two that divides ``offset`` on every run.
        self.alignment = alignment if alignment is not None or offset is None else _low_bit(offset)
        #: For a view of an asynchronous ring's slot, the lease it is valid under (see ``nvdsl.Aref``).
        self.lease = lease

    def __repr__(self) -> str:
        return f"<nvdsl.Array {self.name}: {self.space} {self.dtype.name}{list(self.shape)}>"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def view(self, shape, dtype: dt.DType | None = None, *, offset: int = 0) -> "Array":
        """Another typed view of this shared array's bytes, starting ``offset`` bytes in.

        For example the TMA boxes that make up a tile: ``tile.view((64, 64), offset=h * 64 * 64 * 2)``.
        """
        if self.space != SHARED:
            raise TraceError(f"'{self.name}' is a {self.space} array; only shared arrays have views",
                             code="bad-view", loc=user_location())
        current_kernel(f"a view of '{self.name}'")
        dtype = self.dtype if dtype is None else dtype
        shape = _check_shape(shape, f"'{self.name}'.view")
        nbytes = _nbytes(shape, dtype)
        if not (isinstance(offset, int) and 0 <= offset and offset + nbytes <= self.nbytes):
            raise TraceError(f"a view of {nbytes} bytes at offset {offset!r} does not fit in '{self.name}' "
                             f"({self.nbytes} bytes)", code="bad-view", loc=user_location())
        if offset % dtype.itemsize:
            raise TraceError(f"view offset {offset} is not a multiple of {dtype.name}'s {dtype.itemsize} bytes",
                             code="misaligned", loc=user_location())
        self.check_lease("a view of")
        with at_user_line():
            start = self.offset + offset if offset else self.offset
            return self._plan._view(shape, dtype, start, f"{self.name}+{offset}",
                                    alignment=min(self.alignment, _low_bit(offset)), lease=self.lease)

    def flatten(self) -> "Array":
        """The same elements as a 1-D array (row-major), for indexing a block of rows as one vector."""
        current_kernel(f"flattening '{self.name}'")
        if self.ndim == 1:
            return self
        if self.space == SHARED:
            return self.view((self.size,))
        with at_user_line():
            flat = memref.collapse_shape(memref_type(self.dtype, (self.size,), self.space), self.ir,
                                         [list(range(self.ndim))])
        return Array(flat, self.dtype, (self.size,), name=self.name, space=self.space, on_write=self._on_write)

    def check_lease(self, what: str) -> None:
        """A ring slot's view may only be used while its slot is held (see ``nvdsl.Aref.get``)."""
        if self.lease is not None and not self.lease.active:
            raise TraceError(f"{what} '{self.name}' after its ring slot was released", code="slot-released",
                             hint=f"use the tiles of `with {self.lease.ring_name}.get() as tiles:` inside that "
                                  "`with` block only", loc=user_location())

    def _indices(self, key) -> list[ir.Value]:
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) != len(self.shape):
            raise TraceError(
                f"'{self.name}' has rank {len(self.shape)} (shape {list(self.shape)}) "
                f"but was indexed with {len(key)} index(es)",
                code="bad-index", hint=f"give exactly {len(self.shape)} indices, e.g. "
                f"{self.name}[{', '.join('ijkl'[d % 4] for d in range(len(self.shape)))}]",
                loc=user_location())
        indices = []
        for axis, (k, extent) in enumerate(zip(key, self.shape)):
            k = _python_number(k)
            if isinstance(k, Value):
                if not k.dtype.is_int:
                    raise TraceError(f"index {axis} of '{self.name}' is a {k.dtype.name} value",
                                     code="bad-index", hint="indices must be integers",
                                     loc=user_location())
                indices.append(_convert(k, dt.index).ir)
            elif isinstance(k, int) and not isinstance(k, bool):
                if not 0 <= k < extent:
                    raise TraceError(f"index {k} is out of bounds for axis {axis} of "
                                     f"'{self.name}' with extent {extent}",
                                     code="out-of-bounds", loc=user_location())
                indices.append(_constant(k, dt.index).ir)
            else:
                raise TraceError(f"index {axis} of '{self.name}' is {type(k).__name__} {k!r}",
                                 code="bad-index",
                                 hint="index with Python ints or traced integers; slices are not supported",
                                 loc=user_location())
        return indices

    def __getitem__(self, key) -> Value:
        current_kernel(f"reading '{self.name}'")
        if self.lease is not None:
            self.check_lease("reading")
            self.lease.read_by_threads = True
        with at_user_line():
            return Value(memref.load(self.ir, self._indices(key)), self.dtype)

    def __setitem__(self, key, value) -> None:
        current_kernel(f"writing '{self.name}'")
        if self.lease is not None:
            raise TraceError(f"'{self.name}' is a slot of an asynchronous ring, which only its producer's "
                             "copies write", code="slot-write", loc=user_location())
        with at_user_line():
            v = as_value(value, self.dtype, f"a store into '{self.name}' ({self.dtype.name})")
            memref.store(v.ir, self.ir, self._indices(key))
        if self._on_write is not None:
            self._on_write()


def memref_type(dtype: dt.DType, shape, space: str) -> ir.MemRefType:
    memory_space = ir.Attribute.parse("#gpu.address_space<workgroup>") if space == SHARED else None
    return ir.MemRefType.get(list(shape), dtype.mlir_type(), memory_space=memory_space)


class SharedMemoryPlan:
    """Owns one kernel's shared memory: every shared array is a typed view into one dynamic buffer.

    ``ctx.dynamic_shared`` views are placed in the first ``smem`` bytes (the
    amount given to ``gpu_launch``), at the offsets asked for or one after
    the other; ``ctx.shared_array`` arrays follow them. The launch's dynamic
    shared memory size is the end of the last array, which the runtime
    checks against the device's limit. One allocator owns every offset and
    alignment, so later primitives (mbarriers, swizzled TMA tiles) plan
    their shared memory here too.
    """

    def __init__(self, kernel_block: ir.Block, dynamic_bytes: int):
        self._kernel_block = kernel_block
        self.dynamic_bytes = dynamic_bytes
        self.static_bytes = 0
        self._dynamic_next = 0
        self._base = None

    @property
    def total_bytes(self) -> int:
        """Bytes of shared memory the launch needs."""
        return self.dynamic_bytes + self.static_bytes

    def static_array(self, shape, dtype: dt.DType, align: int) -> Array:
        shape = _check_shape(shape, "ctx.shared_array")
        start = self.place(_nbytes(shape, dtype), align)
        return self._view(shape, dtype, start, f"shared_array@{start}")

    def dynamic_view(self, shape, dtype: dt.DType, offset: int | None, align: int) -> Array:
        shape = _check_shape(shape, "ctx.dynamic_shared")
        nbytes = _nbytes(shape, dtype)
        if offset is None:
            offset = _align(self._dynamic_next, align)
        elif offset % align or offset < 0:
            raise TraceError(f"dynamic shared view offset {offset} is not a multiple of {align} bytes",
                             code="misaligned", loc=user_location())
        self.reserve(offset, nbytes, 1, "a dynamic shared view")
        return self._view(shape, dtype, offset, f"dynamic_shared@{offset}")

    def place(self, nbytes: int, align: int) -> int:
        """Reserve ``nbytes`` after everything placed so far, aligned to ``align``; the byte offset."""
        start = _align(self.dynamic_bytes + self.static_bytes, align)
        self.static_bytes = start + nbytes - self.dynamic_bytes
        return start

    def reserve(self, offset: int, nbytes: int, align: int, what: str) -> int:
        """Claim ``nbytes`` at ``offset`` of the dynamic bytes given to the launch (``smem=``); the offset."""
        if not isinstance(offset, int) or offset < 0 or offset % align:
            raise TraceError(f"{what} at byte {offset!r} of shared memory: the offset must be a multiple of {align}",
                             code="misaligned", loc=user_location())
        if offset + nbytes > self.dynamic_bytes:
            raise TraceError(f"{what} needs bytes {offset}..{offset + nbytes}, past the smem={self.dynamic_bytes} "
                             "bytes given to gpu_launch", code="smem-overflow",
                             hint=f"launch with smem >= {offset + nbytes}", loc=user_location())
        self._dynamic_next = max(self._dynamic_next, offset + nbytes)
        return offset

    def _view(self, shape, dtype: dt.DType, offset: "int | Value", name: str, *, alignment: int | None = None,
              lease=None) -> Array:
        if self._base is None:
            byte_buffer = ir.MemRefType.get([ir.ShapedType.get_dynamic_size()],
                                            ir.IntegerType.get_signless(8),
                                            memory_space=ir.Attribute.parse("#gpu.address_space<workgroup>"))
            # At the kernel's entry, so that views made in any nested region can use it.
            with ir.InsertionPoint.at_block_begin(self._kernel_block):
                self._base = gpu.dynamic_shared_memory(byte_buffer)
        shift = offset.ir if isinstance(offset, Value) else arith.constant(ir.IndexType.get(), offset)
        view = memref.view(memref_type(dtype, shape, SHARED), self._base, shift, [])
        return Array(view, dtype, shape, name=name, space=SHARED, plan=self, offset=offset, alignment=alignment,
                     lease=lease)


def _check_shape(shape, what: str) -> tuple[int, ...]:
    if isinstance(shape, int):
        shape = (shape,)
    shape = tuple(_python_number(s) for s in shape)
    if not shape or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape):
        raise TraceError(f"{what} needs a shape of positive Python ints, got {shape!r}",
                         code="bad-shape", loc=user_location())
    return shape


def _nbytes(shape, dtype: dt.DType) -> int:
    n = dtype.itemsize
    for s in shape:
        n *= s
    return n


def _align(n: int, align: int) -> int:
    return (n + align - 1) // align * align


def _low_bit(offset: int) -> int:
    """The largest power of two (up to the shared buffer's own alignment) that divides ``offset``."""
    return DYNAMIC_SHARED_ALIGNMENT if offset % DYNAMIC_SHARED_ALIGNMENT == 0 else offset & -offset
