"""Register tiles and vectors: values spread over the registers of a thread group, with a layout.

A :class:`RegisterTile` is an (M, N) tile whose elements live in the registers of a group of
threads (a warpgroup for wgmma's tiles), each thread holding the elements its
:class:`~nvdsl.layouts.FragmentLayout` assigns to it. A :class:`RowVector` holds one value per row of
such a tile (what a reduction along the rows gives: the running max and sum of a softmax), a
:class:`ColumnVector` one value per column (a bias). The accumulator of a wgmma
(:class:`~nvdsl.WGMMAAccumulator`) is the register tile that the tensor cores write.

On them, element by element, with NumPy's broadcasting of scalars (Python numbers or traced
values) and of vectors over tiles:

* arithmetic, comparisons and bitwise operators (``s * scale - m``, ``cols <= rows``), following the
  dtype rules of traced scalars;
* the math functions (``nvdsl.exp2(s, approx=True)``), ``nvdsl.maximum``/``minimum`` and
  ``nvdsl.where(mask, s, -inf)``;
* ``.to(dtype)`` casts (float32 to float16 or bfloat16 for the next product);
* ``.max(axis=1)``, ``.min(axis=1)``, ``.sum(axis=1)``: each thread combines its values of a row, then
  the threads that share the row exchange them with ``shfl.sync.bfly`` (lanes 1 and 2 apart for wgmma);
* ``tile.indices()``: the row and column of each element, for masks.

A tile of float16 or bfloat16 in the accumulator layout is also the A operand of the next wgmma,
straight from registers: ``acc.accumulate(p.to(nvdsl.float16) @ v_matrix)``.

Tiles combine only with tiles of the same layout, and vectors only with tiles whose rows (or columns)
they were made for; anything else is a ``layout-mismatch`` TraceError. Tiles and vectors can be
carried through ``nvdsl.fori`` (as one LLVM struct of the thread's values).
"""

from __future__ import annotations

import contextlib
import functools

from mlir import ir
from mlir.dialects import arith, gpu, llvm, vector

from .. import dtypes as dt
from ..errors import InternalError, TraceError, user_location
from ..frontend.context import at_user_line, current_kernel
from ..frontend.control import when
from ..frontend.memory import GLOBAL, Array, RegisterCell
from ..frontend.ranges import Affine
from ..frontend.values import (Value, as_value, binary, compare, convert, maximum, minimum, python_number, select,
                               unify)
from ..layouts import FragmentLayout
from ..target import VECTOR_BYTES, vector_problem
from .warpgroup import WARPGROUP_THREADS


def _error(message: str, code: str, hint: str | None = None) -> TraceError:
    return TraceError(message, code=code, hint=hint, loc=user_location())


@functools.lru_cache(maxsize=None)
def _broadcast_map(layout: FragmentLayout, axis: int) -> tuple[int, ...]:
    return layout.broadcast_map(axis)


@functools.lru_cache(maxsize=None)
def _reduction(layout: FragmentLayout, axis: int):
    return layout.reduction(axis)


def _thread_index(layout: FragmentLayout) -> Value:
    """This thread's index in the layout's thread group (the group is aligned in the block)."""
    ctx = current_kernel("a register tile")
    return ctx.linear_thread_id % layout.threads


class _Fragment:
    """Values of one dtype held in registers by a group of threads, placed by a FragmentLayout."""

    __array_ufunc__ = None  # NumPy scalars defer to our reflected operators

    def __init__(self, values, dtype: dt.DType, layout: FragmentLayout):
        if len(values) != layout.values:
            raise InternalError(f"{len(values)} values for a layout of {layout.values} per thread")
        self._values = list(values)
        self.dtype = dtype
        self.layout = layout

    @property
    def shape(self) -> tuple[int, ...]:
        return self.layout.shape

    @property
    def values(self) -> list[ir.Value]:
        """This thread's values (MLIR values), in the layout's register order."""
        return self._values

    def _like(self, values, dtype: dt.DType) -> "_Fragment":
        """A fragment of this kind and layout holding ``values``."""
        return type(self)(values, dtype, self.layout)

    def __repr__(self) -> str:
        return f"<nvdsl.{type(self).__name__} {self.dtype.name}{list(self.shape)}: {self.layout.name}>"

    __hash__ = object.__hash__

    def __bool__(self):
        raise _error(f"a {type(self).__name__} has no Python truth value (it is only known on the GPU)",
                     code="traced-bool", hint="select element by element with nvdsl.where")

    # -- carrying through loops: one LLVM struct of the thread's values --------------------------------
    @property
    def ir(self) -> ir.Value:
        if self.dtype.kind == "index":
            raise _error("a register tile of index values cannot be carried",
                         code="bad-carry", hint="convert it first, e.g. t.to(nvdsl.int32)")
        struct_type = ir.Type.parse(f"!llvm.struct<({', '.join([str(self.dtype.mlir_type())] * len(self.values))})>")
        with at_user_line():
            struct = llvm.mlir_undef(struct_type)
            for i, v in enumerate(self.values):
                struct = llvm.insertvalue(struct, v, [i])
        return struct

    def _rebuild(self, struct: ir.Value) -> "_Fragment":
        element = self.dtype.mlir_type()
        return self._like([llvm.extractvalue(element, struct, [i]) for i in range(self.layout.values)], self.dtype)

    # -- element by element -------------------------------------------------------------------------
    @staticmethod
    def _elementwise(fn, operands, what: str):
        """``fn`` (on Values) applied element by element; see the module docstring for broadcasting."""
        fragments = [x for x in operands if isinstance(x, _Fragment)]
        tiles = [x for x in fragments if isinstance(x, RegisterTile)]
        # The most derived tile class decides the result's class (an accumulator stays one).
        frame = max(tiles, key=lambda t: len(type(t).__mro__)) if tiles else fragments[0]
        index_maps = [_operand_map(x, frame, what) for x in operands]
        sample = next((x for x in fragments if not x.dtype.is_bool), fragments[0])
        with at_user_line():
            operands = [_scalar_operand(x, sample, what) for x in operands]
            per_operand = [x.values if isinstance(x, _Fragment) else None for x in operands]
            results = []
            for v in range(frame.layout.values):
                args = [Value(values[m[v]], x.dtype) if values is not None else x
                        for x, values, m in zip(operands, per_operand, index_maps)]
                results.append(fn(*args))
        dtype = results[0].dtype
        return frame._like([r.ir for r in results], dtype)

    def _operator(self, op: str, other, reflected: bool = False):
        current_kernel(f"the operator '{op}' on a {type(self).__name__}")
        operands = (other, self) if reflected else (self, other)
        return self._elementwise(lambda a, b: binary(op, a, b), operands, f"'{op}'")

    def _comparison(self, op: str, other):
        current_kernel(f"the comparison '{op}' on a {type(self).__name__}")
        return self._elementwise(lambda a, b: compare(op, a, b), (self, other), f"'{op}'")

    def __add__(self, o): return self._operator("+", o)
    def __radd__(self, o): return self._operator("+", o, True)
    def __sub__(self, o): return self._operator("-", o)
    def __rsub__(self, o): return self._operator("-", o, True)
    def __mul__(self, o): return self._operator("*", o)
    def __rmul__(self, o): return self._operator("*", o, True)
    def __truediv__(self, o): return self._operator("/", o)
    def __rtruediv__(self, o): return self._operator("/", o, True)
    def __floordiv__(self, o): return self._operator("//", o)
    def __rfloordiv__(self, o): return self._operator("//", o, True)
    def __mod__(self, o): return self._operator("%", o)
    def __rmod__(self, o): return self._operator("%", o, True)
    def __and__(self, o): return self._operator("&", o)
    def __rand__(self, o): return self._operator("&", o, True)
    def __or__(self, o): return self._operator("|", o)
    def __ror__(self, o): return self._operator("|", o, True)
    def __xor__(self, o): return self._operator("^", o)
    def __rxor__(self, o): return self._operator("^", o, True)
    def __lt__(self, o): return self._comparison("<", o)
    def __le__(self, o): return self._comparison("<=", o)
    def __gt__(self, o): return self._comparison(">", o)
    def __ge__(self, o): return self._comparison(">=", o)
    def __eq__(self, o): return self._comparison("==", o)  # elementwise; fragments hash by identity
    def __ne__(self, o): return self._comparison("!=", o)

    def __neg__(self):
        current_kernel(f"unary '-' on a {type(self).__name__}")
        return self._elementwise(lambda a: -a, (self,), "unary '-'")

    def __invert__(self):
        current_kernel(f"'~' on a {type(self).__name__}")
        return self._elementwise(lambda a: ~a, (self,), "'~'")

    def __abs__(self):
        current_kernel(f"abs() on a {type(self).__name__}")
        return self._elementwise(abs, (self,), "abs()")

    def __pos__(self):
        return self

    def any_of_thread(self) -> Value:
        """Whether any of this thread's own elements (a bool fragment's) is true, as one traced bool per
        thread: to branch around work a thread can skip, e.g. ``nvdsl.cond((alpha != 1).any_of_thread(),
        lambda: acc * alpha, lambda: acc)``."""
        current_kernel(f"{type(self).__name__}.any_of_thread")
        if not self.dtype.is_bool:
            raise _error(f"any_of_thread() needs a bool {type(self).__name__}, got {self.dtype.name}",
                         code="bad-dtype", hint="compare first, e.g. (t != 1).any_of_thread()")
        with at_user_line():
            found = Value(self.values[0], self.dtype)
            for v in self.values[1:]:
                found = found | Value(v, self.dtype)
        return found

    def to(self, dtype: dt.DType) -> "_Fragment":
        """Each element converted to ``dtype`` (as ``Value.to``: float32 to float16 rounds to nearest)."""
        current_kernel(f"{type(self).__name__}.to")
        if not isinstance(dtype, dt.DType):
            raise _error(f"{type(self).__name__}.to expects an nvdsl dtype such as nvdsl.float16, got {dtype!r}",
                         code="type-mismatch",
                         hint="pass an nvdsl dtype, e.g. .to(nvdsl.float16); NumPy and torch dtypes are not accepted")
        return self._elementwise(lambda a: convert(a, dtype), (self,), f"{type(self).__name__}.to")


def _operand_map(x, frame: _Fragment, what: str):
    """For each value number of ``frame``, the value number of ``x`` to use (None for scalars)."""
    if not isinstance(x, _Fragment):
        return None
    if isinstance(frame, RegisterTile):
        if isinstance(x, RegisterTile):
            if x.layout != frame.layout:
                raise _error(f"{what} combines register tiles of different layouts: {x.layout} and {frame.layout}",
                             code="layout-mismatch",
                             hint="tiles combine element by element only when the same threads hold the same "
                                  "elements; both come from wgmma accumulators of one shape, for instance")
            return range(frame.layout.values)
        if x.layout != frame.layout.project(x.axis):
            raise _error(f"{what} broadcasts a {type(x).__name__} of layout {x.layout} over a tile whose "
                         f"{x.kind} are {frame.layout.project(x.axis)}", code="layout-mismatch",
                         hint=f"make the vector for this tile, e.g. nvdsl.{type(x).__name__}.full(tile, value), "
                              f"or by reducing a tile of the same layout")
        return _broadcast_map(frame.layout, x.axis)
    if type(x) is not type(frame) or x.layout != frame.layout:
        raise _error(f"{what} combines a {type(x).__name__} ({x.layout}) with a {type(frame).__name__} "
                     f"({frame.layout})", code="layout-mismatch",
                     hint="vectors combine with vectors of the same tile's rows (or columns), or broadcast "
                          "over that tile")
    return range(frame.layout.values)


def _scalar_operand(x, sample: _Fragment, what: str):
    """A Python number operand as one traced constant (not one per element): it takes the dtype of
    the first non-bool fragment, by the promotion rules of traced scalars."""
    x = python_number(x)
    if isinstance(x, (_Fragment, Value)):
        return x
    if sample.dtype.is_bool and not isinstance(x, bool):
        raise _error(f"{what} meets the Python number {x!r} beside bool elements only; its dtype is unknown",
                     code="type-mismatch", hint="pass a traced value, e.g. nvdsl.constant(0.0, nvdsl.float32)")
    return unify(Value(sample.values[0], sample.dtype), x, what)[1]


class RegisterTile(_Fragment):
    """An (M, N) tile in the registers of a thread group, placed by a :class:`~nvdsl.layouts.FragmentLayout`.

    Tiles come from wgmma (:class:`~nvdsl.WGMMAAccumulator` is one), from ``RegisterTile.load`` and
    from operations on tiles. ``print(tile.layout)`` shows which thread holds which element.
    """

    @classmethod
    def load(cls, array: Array, layout: FragmentLayout, at=None, *, tma=None, fill=None) -> "RegisterTile":
        """Each thread loads its elements of the ``layout.shape`` block of ``array`` at ``at`` (row, col).

        With ``fill`` (a number), elements at or past the array's end on an axis read as ``fill`` instead (a
        block overhanging a ragged edge); nothing is read outside the array. There, each thread's runs of 16 bytes
        along the last axis are one vector load where the layout and the array allow (see :func:`vector_length`).

        With ``tma``, ``array`` is a shared tile laid out as that descriptor's (swizzled) boxes, as
        ``tma.load`` fills it; ``at`` then counts in the tile's own rows and columns.
        """
        current_kernel("RegisterTile.load")
        if tma is not None and fill is not None:
            raise _error("RegisterTile.load: fill= is for blocks of global arrays; a TMA tile holds whole boxes",
                         code="bad-tile",
                         hint="drop fill= when reading a TMA tile (tma=), or read the global array without tma=")
        if tma is None and fill is not None:
            if not isinstance(layout, FragmentLayout) or not isinstance(array, Array) or \
                    array.ndim < len(layout.shape) or at is None or len(at) != array.ndim:
                raise _error(f"RegisterTile.load(fill=) needs a FragmentLayout, an array of its rank or more and at= "
                             f"with an index per axis of the array, got {layout!r}, {array!r}, at={at!r}",
                             code="bad-tile",
                             hint="pass a FragmentLayout, an array of its rank or more, and at= with one offset per "
                                  "axis of the array")
            return cls(_load_filled(array, layout, at, fill), array.dtype, layout)
        if tma is None:
            return cls(_load(array, layout, at, "RegisterTile.load"), array.dtype, layout)
        from .tma import SharedBoxes
        if not isinstance(layout, FragmentLayout):
            raise _error(f"RegisterTile.load needs a FragmentLayout, got {layout!r}", code="bad-tile",
                         hint="pass a layout such as nvdsl.layouts.wgmma_accumulator(64, 128)")
        boxes = SharedBoxes(array, tma, "RegisterTile.load")
        _check_block(array, layout.shape, at, "RegisterTile.load")
        array.check_lease("reading")
        if array.lease is not None:
            array.lease.read_by_threads = True
        with at_user_line():
            flat = array.view((array.size,))
            coordinates = _coordinates(layout, at, dt.index)
            runs = _box_runs(flat, layout, at, boxes)
            if runs is None:
                return cls([flat[boxes.index(row, col)].ir for row, col in coordinates], array.dtype, layout)
            values = [None] * layout.values
            for run in runs:          # a run of 16 bytes along a box's row lies side by side, swizzled or not
                packed = vector.load(_vector_type(flat, len(run)), flat.ir,
                                     flat._indices((boxes.index(*coordinates[run[0]]),), "read"),
                                     alignment=VECTOR_BYTES)
                for e, v in enumerate(run):
                    values[v] = vector.extract(packed, [], [e])
        return cls(values, array.dtype, layout)

    def store(self, array: Array, at=None, *, clip: bool = False) -> None:
        """Each thread writes its elements into the tile-shaped block of ``array`` at ``at`` (row, col),
        converted to the array's dtype. With ``clip``, elements at or past the array's end on an axis are
        not written (a block overhanging a ragged edge); nothing is written outside the array; each thread's runs of
        16 bytes along the last axis are one vector store where the layout and the array allow."""
        current_kernel(f"{type(self).__name__}.store")
        if clip:
            if not isinstance(array, Array) or array.ndim != len(self.layout.shape) or at is None:
                raise _error(f"{type(self).__name__}.store(clip=True) needs an array of the tile's rank and at=, "
                             f"got {array!r}, at={at!r}", code="bad-tile",
                             hint="pass the array with at=(row, col), one offset per axis of the tile")
            runs = _vector_runs(array, self.layout, at)
            with at_user_line():
                coordinates = _coordinates(self.layout, at, dt.index)
                for run in runs or ((v,) for v in range(self.layout.values)):
                    index = coordinates[run[0]]
                    inside = None
                    for i, extent in zip(index, array.shape):
                        inside = i < extent if inside is None else inside & (i < extent)
                    with when(inside):
                        converted = [Value(self.values[v], self.dtype).to(array.dtype) for v in run]
                        if runs is None:
                            array[index] = converted[0]
                        else:               # a run lies wholly inside the array or wholly past its end
                            packed = vector.from_elements(_vector_type(array, len(run)), [c.ir for c in converted])
                            vector.store(packed, array.ir, array._indices(index, "write"),
                                         alignment=len(run) * array.dtype.itemsize)
            return
        _check_block(array, self.layout.shape, at, f"{type(self).__name__}.store")
        with at_user_line():
            for index, v in zip(_coordinates(self.layout, at, dt.index), self.values):
                array[index] = Value(v, self.dtype).to(array.dtype)

    def indices(self) -> tuple["RegisterTile", "RegisterTile"]:
        """``(rows, cols)``: int32 tiles of this layout holding each element's row and column (as
        ``numpy.indices``), for masks such as ``nvdsl.where(cols + k0 <= rows + q0, s, -inf)``."""
        current_kernel("RegisterTile.indices")
        with at_user_line():
            coords = _coordinates(self.layout, None, dt.int32)
        return tuple(RegisterTile([c[axis].ir for c in coords], dt.int32, self.layout) for axis in (0, 1))

    def max(self, axis: int = -1):
        """The largest element of each row (``axis=1``, giving a RowVector); NaN-propagating."""
        return self._reduce(axis, maximum, "max")

    def min(self, axis: int = -1):
        """The smallest element of each row (``axis=1``, giving a RowVector); NaN-propagating."""
        return self._reduce(axis, minimum, "min")

    def sum(self, axis: int = -1):
        """The sum of each row (``axis=1``, giving a RowVector)."""
        return self._reduce(axis, lambda a, b: a + b, "sum")

    def _reduce(self, axis, combine, name: str):
        current_kernel(f"{type(self).__name__}.{name}")
        if axis not in (0, 1, -1, -2):
            raise _error(f"{name}(axis={axis!r}): a tile has axes 0 (rows) and 1 (columns)", code="bad-axis",
                         hint="reduce over axis=1 (across each row, giving a RowVector) or axis=0 (down each column)")
        axis %= 2
        if not (self.dtype.is_float and self.dtype.bits == 32):
            raise _error(f"{name} over a tile of {self.dtype.name}: reductions shuffle 32-bit floats",
                         code="type-mismatch", hint="convert first, e.g. tile.to(nvdsl.float32)")
        plan = _reduction(self.layout, axis)
        lanes = [mask for mask in plan.shuffle_masks if mask < 32]
        warps = [mask for mask in plan.shuffle_masks if mask >= 32]
        if warps and (axis != 1 or self.layout.threads % WARPGROUP_THREADS):     # rows spread over warpgroups' warps
            raise _error(f"{name}(axis={axis}) of this tile combines values held by different warps ({self.layout})",
                         code="bad-axis", hint="reduce along the rows (axis=1): each row of a wgmma tile lives "
                                               "in one quad of one warp")
        values = [Value(v, self.dtype) for v in self.values]
        with at_user_line():
            results = []
            for group in plan.groups:
                partial = _tree(combine, [values[v] for v in group])
                for mask in lanes:
                    partial = combine(partial, _shuffle_xor(partial, mask))
                results.append(partial)
            if warps:
                results = _across_warps(results, warps, combine, self.layout, whole_warps=len(lanes) == 5)
        vector = RowVector if axis == 1 else ColumnVector
        return vector([r.ir for r in results], self.dtype, plan.target)


def _across_warps(partials: list[Value], masks: list[int], combine, layout: FragmentLayout,
                  whole_warps: bool = False) -> list[Value]:
    """Each of this thread's ``partials`` (its warp's, after the shuffles) combined with those of the threads
    ``thread ^ x`` for ``x`` over the sums of ``masks`` (multiples of 32: other warps of the tile's threads), through
    shared memory: the partials are written to slots, the tile's threads meet at a barrier, and each thread reads
    its partners' slots in the order of their warps (so every thread combines the same values in the same order and
    holds the same result). With ``whole_warps`` (the shuffles spanned all 32 lanes, so every lane holds its warp's
    partials) lane 0 writes its warp's slots, in one of two sets taken in turn (a parity each thread keeps in a
    register): the set written next was last read before the barrier every thread has passed since, so one barrier
    a reduction does. Otherwise every thread writes its own slots, and the threads meet again before they can be
    written anew."""
    ctx = current_kernel("a reduction across warps")
    thread = _thread_index(layout)
    offsets = sorted({sum(m for j, m in enumerate(masks) if k >> j & 1) for k in range(1 << len(masks))})
    if whole_warps:
        slots = ctx.shared_array((2, layout.threads // 32, len(partials)), dt.float32)
        parity = RegisterCell(ctx)
        buffer, warp = parity.value, thread // 32
        base = warp - (warp & (sum(masks) // 32))      # (the masks are distinct bits: their sum is their union)
        with when((thread % 32).eq(0)):
            for u, partial in enumerate(partials):
                slots[buffer, warp, u] = partial
        _sync_warpgroup(ctx, layout)
        results = [_tree(combine, [slots[buffer, base + offset // 32, u] for offset in offsets])
                   for u in range(len(partials))]
        parity.set(buffer ^ 1)
        return results
    slots = ctx.shared_array((layout.threads, len(partials)), dt.float32)
    base = thread - (thread & sum(masks))
    for u, partial in enumerate(partials):         # (reductions are of float32 tiles)
        slots[thread, u] = partial
    _sync_warpgroup(ctx, layout)
    results = [_tree(combine, [slots[base + offset, u] for offset in offsets]) for u in range(len(partials))]
    _sync_warpgroup(ctx, layout)
    return results


def _sync_warpgroup(ctx, layout: FragmentLayout) -> None:
    """The barrier of the threads that hold ``layout``'s tile: a warpgroup's own named barrier inside a
    ``Warpgroup`` body, else the block's (a block of those threads alone: one warpgroup, or several that hold the
    tile together)."""
    if ctx.warpgroup is not None:
        if layout.threads != WARPGROUP_THREADS:
            raise _error(f"a reduction across the warps of a {layout.threads}-thread tile inside a Warpgroup body: "
                         "only the warpgroup's 128 threads meet at its barrier", code="bad-axis",
                         hint="reduce a tile of several warpgroups outside any Warpgroup body, in a block of its "
                              "threads alone")
        ctx.warpgroup.sync()
        return
    if ctx.block.x * ctx.block.y * ctx.block.z != layout.threads:
        raise _error(f"a reduction across the warps of a {layout.threads}-thread tile needs the tile's threads to meet "
                     "at a barrier: a Warpgroup body, or a block of those threads alone", code="bad-axis",
                     hint="reduce inside `with nvdsl.Warpgroup(ctx, ...)`, or launch the tile's threads alone")
    ctx.sync_threads()


def _tree(combine, values: list[Value]) -> Value:
    """Combine pairwise, as a balanced tree (independent operations the GPU can overlap)."""
    while len(values) > 1:
        values = [combine(values[i], values[i + 1]) if i + 1 < len(values) else values[i]
                  for i in range(0, len(values), 2)]
    return values[0]


def _shuffle_xor(value: Value, mask: int) -> Value:
    """The value of the lane ``lane ^ mask`` of this warp (``gpu.shuffle xor``: ``shfl.sync.bfly``)."""
    i32 = ir.IntegerType.get_signless(32)
    shuffled, _ = gpu.shuffle(value.ir, arith.constant(i32, mask), arith.constant(i32, 32), gpu.ShuffleMode.XOR)
    return Value(shuffled, value.dtype)


def _offset(x, dtype: dt.DType) -> Value:
    x = python_number(x)
    if isinstance(x, Value):
        if not x.dtype.is_int:
            raise _error(f"a tile offset must be an integer, got {x.dtype.name}", code="bad-index",
                         hint="convert the offset to an integer first, e.g. x.to(nvdsl.int32)")
        return convert(x, dtype)
    return as_value(x, dtype, "a tile offset")


def _coordinates(layout: FragmentLayout, at, dtype: dt.DType) -> list[tuple[Value, ...]]:
    """For each value this thread holds: its coordinate (traced ``dtype`` values), offset by ``at``.

    The thread's part of each coordinate is computed once; each value adds a constant to it.
    """
    thread = _thread_index(layout).to(dtype)
    bases = []
    for axis in range(len(layout.shape)):
        base = layout.thread_part(axis, thread)
        if at is not None:
            base = base + _offset(at[axis], dtype)
        bases.append(base)
    return [tuple(_plus(base, layout.value_part(axis, v), dtype) for axis, base in enumerate(bases))
            for v in range(layout.values)]


def _plus(base, constant: int, dtype: dt.DType) -> Value:
    if not isinstance(base, Value):  # the layout gave a Python int: no part depends on the thread
        return as_value(base + constant, dtype, "a coordinate")
    return base if constant == 0 else base + constant


def _check_block(array, shape, at, what: str) -> None:
    """``array`` holds a ``shape`` block at ``at`` (offsets known while tracing are checked)."""
    if not isinstance(array, Array) or array.ndim != len(shape):
        raise _error(f"{what} needs a {len(shape)}-D array, got {array!r}", code="bad-tile",
                     hint=f"pass a {len(shape)}-D nvdsl array (a kernel argument, a view of one, or a shared tile)")
    if at is None and tuple(array.shape) != tuple(shape):
        raise _error(f"{what}: the block is {list(shape)} but '{array.name}' is {list(array.shape)}", code="bad-tile",
                     hint="pass at=(row, col) for a block of a larger array")
    if at is not None and (not isinstance(at, (tuple, list)) or len(at) != len(shape)):
        raise _error(f"{what}: at={at!r} needs one offset per axis", code="bad-tile",
                     hint=f"pass at= a tuple of {len(shape)} offsets, one per axis of the block")
    for axis, offset in enumerate(at or ()):
        offset = python_number(offset)
        if isinstance(offset, int) and not 0 <= offset <= array.shape[axis] - shape[axis]:
            raise _error(f"{what}: a block of {list(shape)} at {list(at)} does not fit in '{array.name}' "
                         f"{list(array.shape)}", code="out-of-bounds",
                         hint=f"keep at + the block's extents {list(shape)} within {list(array.shape)}; at a ragged "
                              "edge, load with fill= or store with clip=True")


def _load_filled(array: Array, layout: FragmentLayout, at, fill) -> list[ir.Value]:
    """Each value of ``layout`` at ``at`` read from ``array``, or ``fill`` where its index is at or past the
    array's end on some axis (a block overhanging a ragged edge); nothing is read outside the array. An array of
    higher rank than the layout is read at ``at``'s leading indices (a block of one (batch, head) of a 4-D array)."""
    lead = array.ndim - len(layout.shape)
    runs = _vector_runs(array, layout, at[lead:])
    with at_user_line():
        fixed = tuple(at[:lead])
        lasts = [extent - 1 for extent in array.shape[lead:]]
        coordinates = _coordinates(layout, at[lead:], dt.index)
        values = [None] * layout.values
        for run in runs or ((v,) for v in range(layout.values)):
            index = coordinates[run[0]]
            clamped = [minimum(i, last) for i, last in zip(index, lasts)]
            if runs is None:
                loaded = [array[fixed + tuple(clamped)]]
            else:       # the last run of a row ends at the row's end (its extent is a multiple of the run)
                clamped[-1] = minimum(index[-1], lasts[-1] + 1 - len(run))
                packed = vector.load(_vector_type(array, len(run)), array.ir,
                                     array._indices(fixed + tuple(clamped), "read"),
                                     alignment=len(run) * array.dtype.itemsize)
                loaded = [Value(vector.extract(packed, [], [e]), array.dtype) for e in range(len(run))]
            inside = None
            for i, last in zip(index, lasts):
                inside = i <= last if inside is None else inside & (i <= last)
            for v, value in zip(run, loaded):
                values[v] = select(inside, value, as_value(fill, array.dtype, "fill")).ir
    return values


def _vector_type(array: Array, length: int) -> ir.VectorType:
    return ir.VectorType.get([length], array.dtype.mlir_type())


def _vector_runs(array: Array, layout: FragmentLayout, at) -> list[tuple[int, ...]] | None:
    """The values of ``layout`` at ``at`` grouped into runs along the last axis of the global ``array`` that one
    aligned vector access each reads or writes, or None where no such runs hold every value: runs of
    :data:`VECTOR_BYTES` where the array allows them (see :func:`vector_length`), else of half as many elements, and so
    on down to two (a layout whose threads hold 4 consecutive 16-bit elements moves them 8 bytes at a time). Each run
    starts at a multiple of its length (the layout's part and ``at``'s, traced offsets by their exact form), so a
    16-byte aligned row is aligned for the shorter vectors too."""
    length = vector_length(array)
    while length > 1:
        if all(_multiple_of(a, length) for a in at[-1:]):
            runs = _runs_of(layout, length)
            if runs is not None:
                return runs
        length //= 2
    return None


def _box_runs(flat: Array, layout: FragmentLayout, at, boxes) -> list[tuple[int, ...]] | None:
    """The values of ``layout`` at ``at`` in runs of :data:`VECTOR_BYTES` that one aligned vector load each reads from
    a shared tile of TMA boxes (``boxes``: a swizzle permutes whole 16-byte chunks, so a run that starts at a multiple
    of its length inside a box's row stays together), or None where that is not so for every value."""
    length = VECTOR_BYTES // flat.dtype.itemsize
    if length == 1 or boxes.box_cols % length or (flat.alignment or 1) < VECTOR_BYTES or \
            not _multiple_of(at[-1], length):
        return None
    return _runs_of(layout, length)


def vector_length(array: Array) -> int:
    """The elements of :data:`~nvdsl.target.VECTOR_BYTES` (more than one) where every run of them along the global
    ``array``'s last axis that starts at a multiple of their count is one aligned vector access
    (:func:`~nvdsl.target.vector_problem` finds nothing against the array and its view's offset is a multiple of 16
    bytes); else 1."""
    if array.space != GLOBAL:
        return 1
    itemsize = array.dtype.itemsize
    strides, offset = ir.MemRefType(array.ir.type).get_strides_and_offset()
    if offset * itemsize % VECTOR_BYTES or \
            vector_problem(array.shape, itemsize, tuple(strides), array.unaligned) is not None:
        return 1            # (a dynamic stride or offset is a huge negative sentinel, never a multiple of 16)
    return VECTOR_BYTES // itemsize


def _multiple_of(x, length: int) -> bool:
    """Whether ``x`` (a Python int or a traced integer) is a multiple of ``length`` for every thread and trip."""
    x = python_number(x)
    if isinstance(x, int):
        return x % length == 0
    exact = getattr(x, "exact", None)
    return isinstance(exact, Affine) and exact.constant % length == 0 and \
        all(c % length == 0 for _, c in exact.terms)


@functools.lru_cache(maxsize=None)
def _runs_of(layout: FragmentLayout, length: int) -> list[tuple[int, ...]] | None:
    """Every value of ``layout`` (a tile's or a vector's) in runs of ``length`` value numbers holding consecutive
    elements along its last axis (of one row), starting at a multiple of ``length`` for every thread; else None."""
    last = len(layout.shape) - 1
    if any(layout.thread_part(last, t) % length for t in range(layout.threads)):
        return None
    starts = {}
    for v in range(layout.values):
        lead = tuple(layout.value_part(axis, v) for axis in range(last))
        column = layout.value_part(last, v)
        starts.setdefault((lead, column - column % length), {})[column % length] = v
    runs = [tuple(found.get(e) for e in range(length)) for found in starts.values()]
    if any(None in run for run in runs):
        return None
    return runs


def _load(array: Array, layout: FragmentLayout, at, what: str) -> list[ir.Value]:
    if not isinstance(layout, FragmentLayout):
        raise _error(f"{what} needs a FragmentLayout (e.g. nvdsl.layouts.wgmma_accumulator(64, 128)), got {layout!r}",
                     code="bad-tile", hint="pass a layout such as nvdsl.layouts.wgmma_accumulator(64, 128)")
    _check_block(array, layout.shape, at, what)
    with at_user_line():
        return [array[index].ir for index in _coordinates(layout, at, dt.index)]


class _Vector(_Fragment):
    """One value per row (``axis`` 0) or per column (``axis`` 1) of the tiles of one layout."""

    axis = 0
    kind = "rows"

    @classmethod
    def full(cls, tile: RegisterTile, value, dtype: dt.DType = dt.float32):
        """A vector over ``tile``'s rows (or columns) with every element ``value`` (a traced scalar, or a
        Python number of ``dtype``)."""
        current_kernel(f"{cls.__name__}.full")
        layout = _vector_layout(cls, tile)
        with at_user_line():
            v = value if isinstance(value, Value) else as_value(value, dtype, f"{cls.__name__}.full")
        return cls([v.ir] * layout.values, v.dtype, layout)

    @classmethod
    def load(cls, tile: RegisterTile, array: Array, start=0, *, fill=None):
        """A vector over ``tile``'s rows (or columns) read from the 1-D ``array`` at ``start + index``; from an
        array of more axes with ``fill``, along its last axis, ``start`` then giving an index per axis (a row's
        log-sum-exps of a (B, H, L) array at ``(b, h, i * 64)``, whatever the array's strides).

        With ``fill`` (a number), elements whose index is at or past the array's end read as ``fill``
        instead (for a tile that overhangs a ragged edge); nothing is read outside the array.
        """
        current_kernel(f"{cls.__name__}.load")
        layout = _vector_layout(cls, tile)
        at = tuple(start) if isinstance(start, tuple) else (start,)
        if fill is None:
            return cls(_load(array, layout, at, f"{cls.__name__}.load"), array.dtype, layout)
        if not isinstance(array, Array) or array.ndim != len(at):
            raise _error(f"{cls.__name__}.load(fill=) needs a 1-D array, or start= with an index per axis of the "
                         f"array, got {array!r} at {start!r}", code="bad-tile",
                         hint="pass a 1-D array, or start=(i0, i1, ...) with one index per axis")
        return cls(_load_filled(array, layout, at, fill), array.dtype, layout)

    def store(self, array: Array, start=0, *, stop=None) -> None:
        """Write element ``i`` into ``array[start + i]``, once: of the threads holding copies of an
        element, the first writes it. With ``stop`` (an index), elements whose index ``start + i`` is at or
        past it are not written: for a tile that overhangs a ragged edge, ``stop=len(array)``."""
        current_kernel(f"{type(self).__name__}.store")
        if stop is not None:
            if not isinstance(array, Array) or array.ndim != 1:
                raise _error(f"{type(self).__name__}.store needs a 1-D array, got {array!r}", code="bad-tile",
                             hint="pass a 1-D array, e.g. out.flatten() of a larger one")
        else:
            _check_block(array, self.shape, (start,), f"{type(self).__name__}.store")
        threads = self.layout.coords[0][0]
        with at_user_line():
            thread, first, span = _thread_index(self.layout), None, 1
            for mode in threads.flat().modes():
                if mode.stride == 0 and mode.shape > 1:  # these threads hold copies: coordinate 0 writes
                    holds = ((thread if span == 1 else thread // span) % mode.shape).eq(0)
                    first = holds if first is None else first & holds
                span *= mode.shape
            with when(first) if first is not None else contextlib.nullcontext():
                for (index,), v in zip(_coordinates(self.layout, (start,), dt.index), self.values):
                    with when(index < stop) if stop is not None else contextlib.nullcontext():
                        array[index] = Value(v, self.dtype).to(array.dtype)

    def __getitem__(self, key):
        """NumPy's ``m[:, None]`` (a RowVector) and ``b[None, :]`` (a ColumnVector): the vector itself, which
        broadcasts over a tile's rows (or columns)."""
        if not (isinstance(key, tuple) and len(key) == 2 and key[1 - self.axis] is None and
                isinstance(key[self.axis], slice) and key[self.axis] == slice(None)):
            raise _error(f"a {type(self).__name__} broadcasts as v{'[:, None]' if self.axis == 0 else '[None, :]'} "
                         f"only, not v[{key!r}]", code="bad-index",
                         hint="broadcast a RowVector as v[:, None] and a ColumnVector as v[None, :], or use v as it is")
        return self


class RowVector(_Vector):
    """One value per row of the register tiles of one layout (``tile.max(axis=1)``, the ``m`` and ``l`` of
    an online softmax); it broadcasts along the rows: ``tile * m`` multiplies row ``r`` by ``m[r]``."""

    axis = 0
    kind = "rows"

    @classmethod
    def gather(cls, tile: RegisterTile, array: Array, row_start, columns: "RowVector", fill=0.0) -> "RowVector":
        """For each row ``r`` of ``tile``, element ``(row_start + r, columns[r])`` of the 2-D ``array`` (``columns``
        an int32 vector over those rows: a column known only on the GPU), ``fill`` where the row or the column is
        outside the array; nothing is read outside it."""
        current_kernel("RowVector.gather")
        layout = _vector_layout(cls, tile)
        if not isinstance(array, Array) or array.ndim != 2:
            raise _error(f"RowVector.gather needs a 2-D array, got {array!r}", code="bad-tile",
                         hint="pass a 2-D array, e.g. a (rows, cols) argument of the kernel")
        if not isinstance(columns, RowVector) or columns.layout != layout or not columns.dtype.is_int:
            raise _error(f"RowVector.gather: columns must be an int vector over the tile's rows, got {columns!r}",
                         code="layout-mismatch",
                         hint="pass columns=RowVector.load(tile, cols) of an int32 array, over this tile's rows")
        rows, width = array.shape
        with at_user_line():
            values = []
            for (row,), column in zip(_coordinates(layout, (row_start,), dt.int32), columns.values):
                column = Value(column, columns.dtype).to(dt.int32)
                inside = (row < rows) & (column >= 0) & (column < width)
                at = (convert(minimum(row, rows - 1), dt.index), convert(select(inside, column, 0), dt.index))
                values.append(select(inside, array[at], as_value(fill, array.dtype, "fill")).ir)
        return cls(values, array.dtype, layout)


class ColumnVector(_Vector):
    """One value per column of the register tiles of one layout (a bias); it broadcasts down the columns:
    ``tile + b`` adds ``b[c]`` to column ``c``."""

    axis = 1
    kind = "columns"


def _vector_layout(cls, tile) -> FragmentLayout:
    if not isinstance(tile, RegisterTile):
        raise _error(f"{cls.__name__} needs the register tile whose {cls.kind} it holds, got {tile!r}",
                     code="bad-tile",
                     hint=f"pass the register tile (or accumulator) first, e.g. {cls.__name__}.load(acc, array)")
    return tile.layout.project(cls.axis)

