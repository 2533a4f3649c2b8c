"""Arrays seen from a kernel: global-memory arguments, scratch arrays and shared-memory views.

``x[i, j]`` loads (``memref.load``) and ``x[i, j] = v`` stores
(``memref.store``). Every index is a Python int (checked against the shape
at trace time) or a traced integer (converted to ``index`` by its own
signedness; refused at trace time where ``ranges`` proves that a thread
reaching the access takes it outside the shape). Slices are not supported. A shared tile that a TMA copy fills or
drains in a layout other than row-major (a swizzle, or several boxes) is indexed
through that layout: ``tile[r, c]`` is element (r, c); a ``view`` of it sees the
bytes as they lie. With ``Options(debug=True)``
(``NVDSL_DEBUG=1``) every access with a traced index is also bounds-checked on the
GPU: an index outside the shape prints the array, the index, the shape and the
Python line, and traps.

Atomics (``x.atomic_add(i, v)`` and friends) read-modify-write one element of
global or shared memory and return its old value: relaxed ordering at GPU
scope, like CUDA's ``atomicAdd``.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, gpu, llvm, memref, vector

from .. import dtypes as dt
from ..target import DYNAMIC_SHARED_ALIGNMENT
from ..errors import TraceError, user_location
from ..signature import ScratchSpec, row_major_strides, span_elements
from .context import at_user_line, check_scope, current, current_kernel, current_scope, mlir_location
from .control import report_and_trap, when
from .ranges import out_of_bounds
from .values import Value, _constant, as_value, convert, python_number

GLOBAL = "global"
SHARED = "shared"

_RMW_KINDS = {  # (operation, dtype kind) -> arith.AtomicRMWKind member
    ("add", "f"): "addf", ("add", "i"): "addi", ("add", "u"): "addi",
    ("min", "f"): "minimumf", ("min", "i"): "mins", ("min", "u"): "minu",
    ("max", "f"): "maximumf", ("max", "i"): "maxs", ("max", "u"): "maxu",
    ("exchange", "f"): "assign", ("exchange", "i"): "assign", ("exchange", "u"): "assign",
}
_PAIR_ADD = {dt.float16: "f16x2", dt.bfloat16: "bf16x2"}


class Array:
    """A typed, statically shaped view of GPU memory, indexable inside a kernel body.

    Attributes:
        shape: the extents, Python ints.
        dtype: the element dtype.
        space: ``"global"`` for kernel arguments and scratch arrays, ``"shared"`` for shared memory.
        ir: the MLIR memref value, for ``mlir.dialects`` ops of your own (writes through it are
            seen: NumPy arguments written that way are copied back).
    """

    __slots__ = ("_ir", "dtype", "shape", "name", "space", "_plan", "offset", "alignment", "lease", "scope",
                 "box_layout", "plain_access", "unaligned")

    def __init__(self, ir_value: ir.Value, dtype: dt.DType, shape: tuple[int, ...], *,
                 name: str, space: str, plan: "SharedMemoryPlan | None" = None,
                 offset: "int | Value | None" = None, alignment: int | None = None, lease=None, scope=None,
                 unaligned: bool = False):
        self._ir = ir_value
        self.dtype = dtype
        self.shape = tuple(shape)
        self.name = name
        self.space = space
        self._plan = plan
        #: For shared arrays, the byte offset in the kernel's shared memory buffer (else None): a Python
        #: int, or a traced index for a view whose place is only known on the GPU (a ring slot).
        self.offset = offset
        #: For shared arrays, a power of two that divides ``offset`` on every run.
        self.alignment = alignment if alignment is not None or offset is None else _low_bit(offset)
        #: For a view of an asynchronous ring's slot, the lease it is valid under (see ``nvdsl.Aref``).
        self.lease = lease
        self.scope = scope if scope is not None else current_scope()
        #: For a shared tile that a TMA copy fills or drains in a layout other than row-major (swizzled, or made
        #: of several boxes), that layout (``index(row, col)`` -> element of the flat tile, ``description``):
        #: ``x[r, c]`` then reads and writes element (r, c) of the tile, not the r-th row of raw bytes.
        self.box_layout = None
        #: Where this shared array was first indexed as a row-major array (a layout set later contradicts it).
        self.plain_access = None
        #: For a device array argument, whether it starts off a 16-byte boundary (no TMA descriptor addresses it).
        self.unaligned = unaligned

    @property
    def ir(self) -> ir.Value:
        """The MLIR memref (only inside the trace, and for shared arrays the kernel, that made it)."""
        check_scope(self.scope, self)
        return self._ir

    def __repr__(self) -> str:
        return f"<nvdsl.Array {self.name}: {self.space} {self.dtype.name}{list(self.shape)}>"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def strides(self) -> tuple[int, ...] | None:
        """The element strides of an argument that is a strided view (transposed, sliced, permuted), outermost
        first; None for a row-major array."""
        if self.space != GLOBAL:
            return None
        layout = ir.MemRefType(self._ir.type).layout
        return tuple(layout.strides) if isinstance(layout, ir.StridedLayoutAttr) else None

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

        For example the TMA boxes that make up a tile: ``tile.view((64, 64), offset=h * 64 * 64 * 2)``. A view
        indexes the bytes as they lie: a view of a swizzled TMA tile sees the swizzled arrangement.
        """
        if self.space != SHARED or self._plan is None:
            raise TraceError(f"'{self.name}' is a {self.space} array; only shared arrays have views",
                             code="bad-view",
                             hint=f"view a shared array (ctx.shared_array, ctx.dynamic_shared); index '{self.name}' "
                                  "directly or use .flatten()", loc=user_location())
        current_kernel(f"a view of '{self.name}'")
        dtype = self.dtype if dtype is None else dtype
        shape = checked_shape(shape, f"'{self.name}'.view")
        offset = _static_offset(offset, f"'{self.name}'.view")
        nbytes = byte_size(shape, dtype)
        if not (0 <= offset and offset + nbytes <= self.nbytes):
            raise TraceError(f"a view of {nbytes} bytes at offset {offset!r} does not fit in '{self.name}' "
                             f"({self.nbytes} bytes)", code="bad-view",
                             hint="pick a shape and offset with 0 <= offset and offset + the view's bytes <= "
                                  f"{self.nbytes}", loc=user_location())
        if offset % dtype.itemsize:
            raise TraceError(f"view offset {offset} is not a multiple of {dtype.name}'s {dtype.itemsize} bytes",
                             code="misaligned",
                             hint=f"pass an offset that is a multiple of {dtype.itemsize}, e.g. "
                                  f"{offset - offset % dtype.itemsize}", loc=user_location())
        self.check_lease("a view of")
        with at_user_line():
            start = self.offset + offset if offset else self.offset
            return self._plan.view(shape, dtype, start, f"{self.name}+{offset}",
                                   alignment=min(self.alignment, _low_bit(offset)), lease=self.lease)

    def flatten(self) -> "Array":
        """The same elements as a 1-D array (row-major), for indexing a block of rows as one vector."""
        current_kernel(f"flattening '{self.name}'")
        if self.ndim == 1:
            return self
        if self.space == SHARED:
            return self.view((self.size,))
        if self.strides is not None:
            raise TraceError(f"'{self.name}' is a strided view (element strides {list(self.strides)}), whose elements "
                             "are not one row-major run", code="bad-view",
                             hint="index it with all its axes, or pass a contiguous array", loc=user_location())
        with at_user_line():
            flat = memref.collapse_shape(memref_type(self.dtype, (self.size,), self.space), self.ir,
                                         [list(range(self.ndim))])
        return Array(flat, self.dtype, (self.size,), name=self.name, space=self.space, scope=self.scope,
                     unaligned=self.unaligned)

    def span(self) -> "Array":
        """The elements from this global array's first to its last as one 1-D array: for a strided view, its
        own elements and the gaps between them (element ``sum(i_k * strides_k)`` is ``x[i]``); for a row-major
        array, :meth:`flatten`."""
        strides = self.strides
        if strides is None:
            return self.flatten()
        current_kernel(f"the span of '{self.name}'")
        size = span_elements(self.shape, strides)
        with at_user_line():
            flat = memref.reinterpret_cast(memref_type(self.dtype, (size,), self.space), self.ir, [], [], [],
                                           [0], [size], [1])
        return Array(flat, self.dtype, (size,), name=self.name, space=self.space, scope=self.scope,
                     unaligned=self.unaligned)

    def check_lease(self, what: str) -> None:
        """A ring slot's view may only be used while its slot is held (see ``nvdsl.Aref.get``)."""
        if self.lease is not None and not self.lease.active:
            raise TraceError(f"{what} '{self.name}' after its ring slot was released", code="slot-released",
                             hint=f"use the tiles of `with {self.lease.ring_name}.get() as tiles:` inside that "
                                  "`with` block only", loc=user_location())

    def set_box_layout(self, layout, what: str) -> None:
        """Lay this shared tile out as ``layout`` (see :attr:`box_layout`), as ``what`` (a TMA copy) fills or
        drains it. Refused when the tile was already indexed as a row-major array, or laid out otherwise."""
        if self.plain_access is not None:
            raise TraceError(f"{what} lays '{self.name}' out as {layout.description}, but '{self.name}' was indexed "
                             f"before as a plain row-major tile, at {self.plain_access}: those indices do not reach "
                             "the elements they name", code="tile-layout",
                             hint=f"index '{self.name}' only after the TMA copy that lays it out (then x[r, c] is "
                                  "element (r, c)), or read it with RegisterTile.load(tile, layout, tma=...)",
                             loc=user_location())
        if self.box_layout is not None and self.box_layout.description != layout.description:
            raise TraceError(f"{what} lays '{self.name}' out as {layout.description}, but it is already laid out as "
                             f"{self.box_layout.description}", code="tile-layout",
                             hint="fill and drain one tile with descriptors of one box shape and swizzle",
                             loc=user_location())
        self.box_layout = layout

    def _note_plain_access(self) -> None:
        if self.space == SHARED and self.plain_access is None:
            self.plain_access = user_location()

    def _laid_out_element(self, key, access: str) -> "tuple[Array, int | Value]":
        """The flat view of this laid-out tile and the index in it of element ``key`` (row, col)."""
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != 2:
            raise TraceError(f"'{self.name}' is a TMA tile of shape {list(self.shape)}, indexed by (row, col); got "
                             f"{len(key)} index(es)", code="bad-index",
                             hint=f"index it as {self.name}[row, col], with two indices", loc=user_location())
        row, col = (self._checked_index(axis, k, extent, access)
                    for axis, (k, extent) in enumerate(zip(key, self.shape)))
        with at_user_line():
            return self.view((self.size,)), self.box_layout.index(row, col)

    def _checked_index(self, axis: int, k, extent: int, access: str) -> "int | Value":
        """Index ``k`` of ``axis``: a Python int inside the extent, or a traced integer as an ``index`` that no
        thread reaching this ``access`` is known to take outside the extent."""
        k = python_number(k)
        if isinstance(k, Value):
            if not k.dtype.is_int:
                raise TraceError(f"index {axis} of '{self.name}' is a {k.dtype.name} value",
                                 code="bad-index", hint="indices must be integers",
                                 loc=user_location())
            index = convert(k, dt.index)
            self._refuse_outside(axis, index, extent, access)
            return index
        if isinstance(k, int) and not isinstance(k, bool):
            if not 0 <= k < extent:
                raise TraceError(f"index {k} is out of bounds for axis {axis} of "
                                 f"'{self.name}' with extent {extent}",
                                 code="out-of-bounds",
                                 hint=f"use an index in 0..{extent - 1}, or guard a traced one with `with "
                                      f"nvdsl.when(i < {extent}):`", loc=user_location())
            return k
        raise TraceError(f"index {axis} of '{self.name}' is {type(k).__name__} {k!r}",
                         code="bad-index",
                         hint="index with Python ints or traced integers; slices are not supported",
                         loc=user_location())

    def _refuse_outside(self, axis: int, index: Value, extent: int, access: str) -> None:
        """Refuse an index that some thread reaching this access provably takes outside ``extent``: an exact
        form, under conditions of the ``when`` blocks around it that are understood (see ``ranges``)."""
        if index.exact is None:
            return
        condition = current_kernel(access).reached_under()
        proof = out_of_bounds(index.exact, extent, condition) if condition is not None else None
        if proof is None:
            return
        values = f"{proof.low}..{proof.high}" if proof.low < proof.high else f"{proof.low}"
        example = f"; it is {proof.index} where {proof.where()}" if proof.point else ""
        bound = f"{self.name}.shape[{axis}]" if self.name.isidentifier() else str(extent)
        guard = f"index < {bound}" if proof.index >= extent else "index >= 0"
        raise TraceError(f"out-of-bounds {access} of '{self.name}': its index on axis {axis} takes the values "
                         f"{values} on the threads that reach it, outside the extent {extent}{example}",
                         code="out-of-bounds",
                         hint=f"guard the access with `with nvdsl.when({guard}):`, or size the grid, block and "
                              "loops to the array", loc=user_location())

    def _indices(self, key, access: str) -> list[ir.Value]:
        """The MLIR indices of ``key``; in debug mode, with a bounds check of the traced ones."""
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) != len(self.shape):
            raise TraceError(
                f"'{self.name}' has rank {len(self.shape)} (shape {list(self.shape)}) "
                f"but was indexed with {len(key)} index(es)",
                code="bad-index", hint=f"give exactly {len(self.shape)} indices, e.g. "
                f"{self.name}[{', '.join('ijkl'[d % 4] for d in range(len(self.shape)))}]",
                loc=user_location())
        indices, traced = [], []
        for axis, (k, extent) in enumerate(zip(key, self.shape)):
            index = self._checked_index(axis, k, extent, access)
            if isinstance(index, Value):
                traced.append((index, extent))
                indices.append(index)
            else:
                indices.append(_constant(index, dt.index))
        options = current(access).options
        if traced and options is not None and options.debug:
            self._check_bounds(indices, traced, access)
        return [i.ir for i in indices]

    def _check_bounds(self, indices: list[Value], traced, access: str) -> None:
        """Debug mode: trap with a report unless every traced index is inside its extent."""
        ctx = current_kernel(access)
        outside = None
        for index, extent in traced:
            bad = (index < 0) | (index >= extent)
            outside = bad if outside is None else outside | bad
        where = user_location()
        with when(outside):
            report_and_trap(
                f"nvdsl: out-of-bounds {access} of '{self.name}' at index [{', '.join(['{}'] * len(indices))}] "
                f"outside its shape {list(self.shape)} at {{}} (block ({{}}, {{}}, {{}}), thread ({{}}, {{}}, {{}}))",
                *indices, where if where is not None else "an unknown line", *ctx.block_id, *ctx.thread_id)

    def __getitem__(self, key) -> Value:
        current_kernel(f"reading '{self.name}'")
        if self.lease is not None:
            self.check_lease("reading")
            self.lease.read_by_threads = True
        if self.box_layout is not None:
            flat, index = self._laid_out_element(key, "read")
            return flat[index]
        self._note_plain_access()
        with at_user_line():
            return Value(memref.load(self.ir, self._indices(key, "read")), self.dtype,
                         origin=f"an element of '{self.name}'")

    def __setitem__(self, key, value) -> None:
        current_kernel(f"writing '{self.name}'")
        if self.lease is not None:
            raise TraceError(f"'{self.name}' is a slot of an asynchronous ring, which only its producer's "
                             "copies write", code="slot-write",
                             hint="write results into a tile of your own (ctx.shared_array); a ring's slots are "
                                  "filled by ring.put(...)", loc=user_location())
        if self.box_layout is not None:
            flat, index = self._laid_out_element(key, "write")
            flat[index] = value
            return
        self._note_plain_access()
        with at_user_line():
            v = as_value(value, self.dtype, f"a store into '{self.name}' ({self.dtype.name})")
            memref.store(v.ir, self.ir, self._indices(key, "write"))

    def atomic_add(self, index, value):
        """Atomically add ``value`` to ``self[index]``; returns the old value (``atom.add``: integers,
        float16, bfloat16, float32, float64).

        With a pair ``(a, b)`` on a float16 or bfloat16 array, adds to ``self[index]`` and the element
        after it along the last axis in one ``atom.add.noftz.f16x2`` (``bf16x2``); the last index must be
        even. Returns both old values.
        """
        if isinstance(value, tuple):
            return self._atomic_pair_add(index, value)
        return self._atomic("add", index, value)

    def atomic_min(self, index, value) -> Value:
        """Atomically set ``self[index]`` to the smaller of it and ``value`` (signed or unsigned by dtype;
        floats NaN-propagating, through a compare-and-swap loop); returns the old value."""
        return self._atomic("min", index, value)

    def atomic_max(self, index, value) -> Value:
        """Atomically set ``self[index]`` to the larger of it and ``value``; returns the old value."""
        return self._atomic("max", index, value)

    def atomic_exchange(self, index, value) -> Value:
        """Atomically store ``value`` into ``self[index]``; returns the old value (``atom.exch``)."""
        return self._atomic("exchange", index, value)

    def atomic_cas(self, index, compare, value) -> Value:
        """Compare-and-swap: where ``self[index] == compare`` (bitwise), store ``value``; returns the old
        value either way (``atom.cas``)."""
        what = f"atomic_cas on '{self.name}'"
        self._check_atomic(what, "cas")
        with at_user_line():
            compare = as_value(compare, self.dtype, f"the compare value of {what}")
            value = as_value(value, self.dtype, f"the new value of {what}")
            pointer = self._pointer(index, "atomic_cas")
            bits = ir.IntegerType.get_signless(self.dtype.bits)
            as_bits = (lambda v: v.ir) if not self.dtype.is_float else (lambda v: llvm.bitcast(bits, v.ir))
            pair = llvm.cmpxchg(pointer, as_bits(compare), as_bits(value), llvm.AtomicOrdering.monotonic,
                                llvm.AtomicOrdering.monotonic, syncscope="device")
            old = llvm.extractvalue(bits, pair, [0])
            if self.dtype.is_float:
                old = llvm.bitcast(self.dtype.mlir_type(), old)
            return Value(old, self.dtype)

    def _check_atomic(self, what: str, operation: str) -> None:
        current_kernel(what)
        if self.lease is not None:
            raise TraceError(f"{what}: '{self.name}' is a slot of an asynchronous ring, which only its producer's "
                             "copies write", code="slot-write",
                             hint="apply atomics to an array of your own (ctx.shared_array or a global array), not to "
                                  "a ring's slot", loc=user_location())
        d = self.dtype
        if not (d.is_int or d.is_float) or d.bits < 8 or d in (dt.float8_e4m3fn, dt.float8_e5m2):
            raise TraceError(f"{what}: atomics on {d.name} arrays are not supported", code="bad-atomic",
                             hint="use an integer, float16, bfloat16, float32 or float64 array", loc=user_location())
        if operation in ("min", "max") and d in (dt.float16, dt.bfloat16):
            raise TraceError(f"{what}: atomic min/max on {d.name} is not supported", code="bad-atomic",
                             hint="use a float32 array", loc=user_location())

    def _atomic(self, operation: str, index, value) -> Value:
        what = f"atomic_{operation} on '{self.name}'"
        self._check_atomic(what, operation)
        kind = getattr(arith.AtomicRMWKind, _RMW_KINDS[(operation, self.dtype.kind)])
        with at_user_line():
            value = as_value(value, self.dtype, f"the value of {what}")
            return Value(memref.atomic_rmw(kind, value.ir, self.ir, self._indices(index, f"atomic_{operation}")),
                         self.dtype)

    def _atomic_pair_add(self, index, pair) -> tuple[Value, Value]:
        what = f"atomic_add of a pair on '{self.name}'"
        self._check_atomic(what, "add")
        flavour = _PAIR_ADD.get(self.dtype)
        if flavour is None or len(pair) != 2:
            raise TraceError(f"{what}: a pair (a, b) is added to float16 or bfloat16 arrays only, got "
                             f"{len(pair)} values for {self.dtype.name}", code="bad-atomic",
                             hint="pass a single value, or add pairs (a, b) into a float16 or bfloat16 array",
                             loc=user_location())
        key = index if isinstance(index, tuple) else (index,)
        last = python_number(key[-1])
        if isinstance(last, int) and (last % 2 or last + 1 >= self.shape[-1]):
            raise TraceError(f"{what}: the pair starts at {last}; it needs an even last index with room for "
                             f"two elements (extent {self.shape[-1]})", code="misaligned",
                             hint=f"start the pair at an even last index no greater than {self.shape[-1] - 2}, or add "
                                  "the values one at a time", loc=user_location())
        strides, offset = ir.MemRefType(self.ir.type).get_strides_and_offset()
        if strides[-1] != 1:
            raise TraceError(f"{what}: the last axis has stride {strides[-1]}, so a pair's two elements are not "
                             "next to each other in memory", code="bad-atomic",
                             hint="add the two values one at a time with atomic_add(index, value)", loc=user_location())
        odd = [n for n in (offset, *strides[:-1]) if n != ir.ShapedType.get_dynamic_stride_or_offset() and n % 2]
        if odd:
            raise TraceError(f"{what}: '{self.name}' has layout strides {list(strides)}, offset {offset}: an odd "
                             "row stride or offset leaves pairs not 4-byte aligned", code="misaligned",
                             hint="add the two values one at a time with atomic_add(index, value), or use an array "
                                  "with even strides", loc=user_location())
        with at_user_line():
            a, b = (as_value(v, self.dtype, f"a value of {what}") for v in pair)
            i32 = ir.IntegerType.get_signless(32)
            packed = vector.from_elements(ir.VectorType.get([2], self.dtype.mlir_type()), [a.ir, b.ir])
            space = "global" if self.space == GLOBAL else "shared"
            old = llvm.inline_asm(i32, [self._pointer(index, "atomic_add"), llvm.bitcast(i32, packed)],
                                  f"atom.{space}.add.noftz.{flavour} $0, [$1], $2;", "=r,l,r",
                                  has_side_effects=True)
            halves = llvm.bitcast(ir.VectorType.get([2], self.dtype.mlir_type()), old)
            return tuple(Value(vector.extract(halves, [], [k]), self.dtype) for k in (0, 1))

    def _pointer(self, index, access: str) -> ir.Value:
        """The address of ``self[index]`` as an LLVM pointer in the array's address space.

        The memref's aligned pointer plus its layout's offset and strides: a ``memref.view`` moves the
        aligned pointer, but a ``memref.subview`` keeps its source's and moves only the offset.
        """
        indices = self._indices(index, access)
        base, linear, *extents = memref.extract_strided_metadata(self.ir)
        for i, stride in zip(indices, extents[self.ndim:]):
            linear = arith.addi(linear, arith.muli(i, stride))
        itemsize = arith.constant(ir.IndexType.get(), self.dtype.itemsize)
        address = arith.addi(memref.extract_aligned_pointer_as_index(base), arith.muli(linear, itemsize))
        space = 1 if self.space == GLOBAL else 3
        return llvm.inttoptr(ir.Type.parse(f"!llvm.ptr<{space}>"),
                             arith.index_cast(ir.IntegerType.get_signless(64), address))


class RegisterCell:
    """A traced int32 variable that keeps its value through any loop or branch of the kernel, in registers: a cell
    allocated at the kernel's entry (where LLVM promotes it to registers; an alloca anywhere else is not), 0 there.
    For state each thread carries itself, such as a ring's position or which of two buffers a reduction writes
    next. ``RegisterCell.many(ctx, n)`` makes ``n`` of them at once."""

    def __init__(self, ctx, _made=None):
        self._cell, self._index = _made if _made is not None else RegisterCell._make(ctx, 1)[0]

    @staticmethod
    def _make(ctx, count: int) -> list:
        i32 = ir.IntegerType.get_signless(32)
        with ir.InsertionPoint.at_block_begin(ctx.entry_block):
            index = arith.constant(ir.IndexType.get(), 0)
            zero = arith.constant(i32, 0)
            cells = []
            for _ in range(count):
                cell = memref.alloca(ir.MemRefType.get([1], i32), [], [])
                memref.store(zero, cell, [index])
                cells.append((cell, index))
        return cells

    @classmethod
    def many(cls, ctx, count: int) -> list["RegisterCell"]:
        return [cls(ctx, made) for made in cls._make(ctx, count)]

    @property
    def value(self) -> Value:
        return Value(memref.load(self._cell, [self._index]), dt.int32)

    def set(self, value: Value) -> None:
        memref.store(value.ir, self._cell, [self._index])


def memref_type(dtype: dt.DType, shape, space: str, strides: tuple[int, ...] | None = None) -> ir.MemRefType:
    """The memref type of an array: row-major, or with the element ``strides`` of a strided view."""
    memory_space = ir.Attribute.parse("#gpu.address_space<workgroup>") if space == SHARED else None
    layout = None if strides is None else ir.StridedLayoutAttr.get(0, list(strides))
    return ir.MemRefType.get(list(shape), dtype.mlir_type(), layout=layout, memory_space=memory_space)


def empty(shape, dtype: dt.DType, *, name: str | None = None) -> Array:
    """Scratch device memory of ``shape`` and ``dtype`` for the duration of one call, in host code.

    The runtime allocates it (stream-ordered) before the call's first launch and frees it after the
    last; its contents start undefined. Kernels launched by one ``@mlir_func`` run in order on one
    stream, so a kernel sees what the kernels before it wrote there.
    """
    return _scratch(shape, dtype, False, name, "nvdsl.empty")


def zeros(shape, dtype: dt.DType, *, name: str | None = None) -> Array:
    """Like :func:`empty`, filled with zeros before the first launch (e.g. for atomic accumulations)."""
    return _scratch(shape, dtype, True, name, "nvdsl.zeros")


def padded_empty(shape, dtype: dt.DType, *, name: str | None = None, row_bytes: int = 16) -> Array:
    """Like :func:`empty`, with each row (the last axis) starting ``row_bytes`` bytes after a multiple of the
    previous: a row-major array whose last extent is padded, seen as an array of ``shape`` (a strided view of
    it). TMA can address it whatever ``shape`` is (the staging copy of an argument it cannot address)."""
    shape = checked_shape(shape, "a padded scratch array")
    per_row = max(1, row_bytes // dtype.itemsize)
    padded = shape[:-1] + (-(-shape[-1] // per_row) * per_row,)
    strides = row_major_strides(padded)
    return _scratch(shape, dtype, False, name, "a padded scratch array",
                    strides=None if padded == shape else strides)


def _scratch(shape, dtype, zero: bool, name, what: str, strides: tuple[int, ...] | None = None) -> Array:
    trace = current(what)
    if trace.kernel is not None:
        raise TraceError(f"{what} allocates device memory in host code, not inside a kernel", code="bad-scratch",
                         hint="call it in the @mlir_func body, next to the gpu_launch, and use the array in kernels; "
                              "for memory of one block, use ctx.shared_array", loc=user_location())
    if not isinstance(dtype, dt.DType) or dtype not in dt.ARRAY_DTYPES:
        raise TraceError(f"{what} needs an array dtype such as nvdsl.float32, got {dtype!r}", code="bad-dtype",
                         hint="pass a dtype such as nvdsl.float32, nvdsl.float16 or nvdsl.int32", loc=user_location())
    shape = checked_shape(shape, what)
    name = name or f"scratch{len(trace.scratch)}"
    loc = mlir_location(user_location())
    with loc:
        argument = trace.entry.add_argument(memref_type(dtype, shape, GLOBAL, strides), loc)
        function_type = ir.FunctionType(ir.TypeAttr(trace.function.attributes["function_type"]).value)
        trace.function.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get(list(function_type.inputs) + [argument.type], []))
    trace.scratch.append(ScratchSpec(dtype, shape, zero, strides))
    return Array(argument, dtype, shape, name=name, space=GLOBAL, scope=trace)


def wrap(ir_value: ir.Value, dtype: dt.DType | None = None, *, name: str = "wrapped"):
    """An MLIR value made by ``mlir.dialects`` ops of your own, as nvdsl sees it: a :class:`Value` for
    a scalar, an :class:`Array` for a statically shaped memref.

    ``dtype`` picks the signedness of an integer (default: signed); for other types it is read from
    the MLIR type (and must agree when given).
    """
    trace = current("nvdsl.wrap")
    if not isinstance(ir_value, ir.Value):
        raise TraceError(f"nvdsl.wrap needs an MLIR value (an op's result), got {type(ir_value).__name__}",
                         code="bad-wrap",
                         hint="pass the result of an mlir.dialects op (an ir.Value), or the .ir of an nvdsl value",
                         loc=user_location())
    if ir_value.context is not trace.mlir_context:
        raise TraceError("nvdsl.wrap got an MLIR value of another trace's context", code="stale-value",
                         hint="wrap values built by ops of this @mlir_func's own trace; rebuild values left from "
                              "another trace", loc=user_location())
    mlir_type = ir_value.type
    if isinstance(mlir_type, ir.MemRefType):
        element = _dtype_of(mlir_type.element_type, dtype)
        if not mlir_type.has_static_shape:
            raise TraceError(f"nvdsl.wrap needs a statically shaped memref, got {mlir_type}", code="bad-wrap",
                             hint="cast the memref to a static shape first (memref.cast) and wrap that",
                             loc=user_location())
        space = SHARED if mlir_type.memory_space is not None else GLOBAL
        return Array(ir_value, element, tuple(mlir_type.shape), name=name, space=space)
    return Value(ir_value, _dtype_of(mlir_type, dtype))


def _dtype_of(mlir_type, dtype: dt.DType | None) -> dt.DType:
    matches = [d for d in dt.ALL if str(d.mlir_type()) == str(mlir_type)]
    if not matches:
        raise TraceError(f"nvdsl.wrap: MLIR type {mlir_type} has no nvdsl dtype", code="bad-wrap",
                         hint="wrap values of a type nvdsl knows: integers (i1 to i64), index, f16, bf16, f32, f64 or "
                              "fp8", loc=user_location())
    if dtype is None:
        signed = [d for d in matches if d.kind in ("i", "index", "f", "b")]
        return (signed or matches)[0]
    if dtype not in matches:
        raise TraceError(f"nvdsl.wrap: dtype {dtype.name} does not describe MLIR type {mlir_type}",
                         code="bad-wrap",
                         hint=f"leave dtype out, or pass one of {', '.join('nvdsl.' + d.name for d in matches)}",
                         loc=user_location())
    return dtype


class SharedMemoryPlan:
    """Owns one kernel's shared memory: every shared array is a typed view into one dynamic buffer.

    ``ctx.dynamic_shared`` views are placed in the first ``smem`` bytes (the
    amount given to ``gpu_launch``), at the offsets asked for or one after
    the other; ``ctx.shared_array`` arrays follow them. The launch's dynamic
    shared memory size is the end of the last array, which the compiler
    checks against the target's limit. One allocator owns every offset and
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
        shape = checked_shape(shape, "ctx.shared_array")
        align = _alignment(align, "ctx.shared_array")
        start = self.place(byte_size(shape, dtype), align)
        return self.view(shape, dtype, start, f"shared_array@{start}")

    def dynamic_view(self, shape, dtype: dt.DType, offset: int | None, align: int) -> Array:
        shape = checked_shape(shape, "ctx.dynamic_shared")
        align = _alignment(align, "ctx.dynamic_shared")
        nbytes = byte_size(shape, dtype)
        if offset is None:
            offset = round_up(self._dynamic_next, align)
        else:
            offset = _static_offset(offset, "ctx.dynamic_shared")
            if offset % align or offset < 0:
                raise TraceError(f"dynamic shared view offset {offset} is not a multiple of {align} bytes",
                                 code="misaligned",
                                 hint=f"pass an offset that is a multiple of {align}, or leave offset out to place "
                                      "the view after the previous one", loc=user_location())
        self.reserve(offset, nbytes, 1, "a dynamic shared view")
        return self.view(shape, dtype, offset, f"dynamic_shared@{offset}")

    def place(self, nbytes: int, align: int) -> int:
        """Reserve ``nbytes`` after everything placed so far, aligned to ``align``; the byte offset."""
        start = round_up(self.dynamic_bytes + self.static_bytes, align)
        self.static_bytes = start + nbytes - self.dynamic_bytes
        return start

    def reserve(self, offset: int, nbytes: int, align: int, what: str) -> int:
        """Claim ``nbytes`` at ``offset`` of the dynamic bytes given to the launch (``smem=``); the offset."""
        if not isinstance(offset, int) or offset < 0 or offset % align:
            raise TraceError(f"{what} at byte {offset!r} of shared memory: the offset must be a multiple of {align}",
                             code="misaligned",
                             hint=f"place it at a byte offset that is a non-negative multiple of {align}",
                             loc=user_location())
        if offset + nbytes > self.dynamic_bytes:
            raise TraceError(f"{what} needs bytes {offset}..{offset + nbytes}, past the smem={self.dynamic_bytes} "
                             "bytes given to gpu_launch", code="smem-overflow",
                             hint=f"launch with smem >= {offset + nbytes}", loc=user_location())
        self._dynamic_next = max(self._dynamic_next, offset + nbytes)
        return offset

    def view(self, shape, dtype: dt.DType, offset: "int | Value", name: str, *, alignment: int | None = None,
             lease=None) -> Array:
        """A typed view of the buffer at byte ``offset`` (a Python int or a traced ``index``), named ``name``.

        It reserves nothing: the bytes must already be placed (``place``) or reserved (``reserve``).
        ``alignment`` is a power of two known to divide ``offset`` on every run; ``lease`` is the ring lease
        the view is valid under (see ``Array.lease``).
        """
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


def _static_offset(offset, what: str) -> int:
    offset = python_number(offset)
    if not isinstance(offset, int) or isinstance(offset, bool):
        raise TraceError(f"{what}: offset={offset!r} must be a Python int; shared-memory layout is fixed while "
                         "tracing", code="bad-offset",
                         hint="compute offsets from Python ints (tile sizes, stage numbers); to pick a buffer at "
                              "run time, make one view per buffer and choose among them with nvdsl.when",
                         loc=user_location())
    return offset


def _alignment(align, what: str) -> int:
    if not isinstance(align, int) or isinstance(align, bool) or align < 1 or align & (align - 1):
        raise TraceError(f"{what}: align={align!r} must be a power of two (bytes)", code="misaligned",
                         hint="pass align= a power of two such as 16, 128 or 1024", loc=user_location())
    return align


def checked_shape(shape, what: str) -> tuple[int, ...]:
    """``shape`` (an int or a sequence of ints) as a tuple of positive Python ints; else a ``bad-shape``
    TraceError naming ``what``."""
    if not isinstance(shape, (tuple, list)):
        shape = (shape,)
    shape = tuple(python_number(s) for s in shape)
    if not shape or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape):
        raise TraceError(f"{what} needs a shape of positive Python ints, got {shape!r}",
                         code="bad-shape",
                         hint="pass a tuple of positive Python ints, e.g. (128, 64)", loc=user_location())
    return shape


def byte_size(shape, dtype: dt.DType) -> int:
    """Bytes of an array of ``shape`` and ``dtype``."""
    n = dtype.itemsize
    for s in shape:
        n *= s
    return n


def round_up(n: int, align: int) -> int:
    """``n`` rounded up to a multiple of ``align``."""
    return (n + align - 1) // align * align


def _low_bit(offset: int) -> int:
    """The largest power of two (up to the shared buffer's own alignment) that divides ``offset``."""
    return DYNAMIC_SHARED_ALIGNMENT if offset % DYNAMIC_SHARED_ALIGNMENT == 0 else offset & -offset
