"""Tile programs: tasks over tensors with declared privileges, partitions, ``prange``/``srange`` and leaf
tile math, traced into the event IR of ``ir.py``.

A tile program says *what* is computed, tile by tile, and nothing of *how*: no barrier, phase, offset,
thread index or role. The mapping (``mapping.py``) says how; the passes (``passes.py``) derive the rest.

    @nt.task(reads=("A", "B"), writes=("C",))
    def gemm(C, A, B):
        BM, BN, BK = nt.tunable("BM"), nt.tunable("BN"), nt.tunable("BK")
        Ct, At, Bt = nt.blocks(C, (BM, BN)), nt.blocks(A, (BM, BK)), nt.blocks(B, (BK, BN))
        for i, j in nt.prange(*Ct.grid):
            acc = nt.zeros((BM, BN), nt.float32, name="acc")
            for k in nt.srange(At.grid[1]):
                acc += At[i, k] @ Bt[k, j]
            Ct[i, j] = acc.astype(C.dtype)

Privileges: a task may read every tensor it names in ``reads``, ``reduces`` or ``writes``; accumulate
into (``+=``) those in ``reduces`` or ``writes``; and overwrite those in ``writes``. A task launched
with :func:`launch` gets at most the privileges its caller holds on each argument.
"""

from __future__ import annotations

import contextvars
import inspect
from dataclasses import dataclass

from .. import dtypes as dt
from ..errors import TaskError, user_location
from . import ir
from .ir import Affine, Broadcast, Region

_LEVELS = {"read": 0, "reduce": 1, "write": 2}
_TRACE: contextvars.ContextVar["_Trace | None"] = contextvars.ContextVar("nvdsl_task_trace", default=None)


def _error(message: str, code: str, hint: str | None = None) -> TaskError:
    return TaskError(message, code=code, hint=hint, loc=user_location())


class _Trace:
    """The state of one program being traced: the tensors seen, the bodies being recorded, fresh names."""

    def __init__(self, name: str, tunables: dict):
        self.name = name
        self.tunables = dict(tunables)
        self.used_tunables: set[str] = set()
        self.tensors: dict[str, ir.TensorDecl] = {}
        self.bodies: list[list] = [[]]
        self.counters: dict[str, int] = {}
        self.next_id = 0
        self.loop_depth = {"prange": 0, "srange": 0}
        self.indices: dict[str, ir.Index] = {}
        self.positions: dict[str, Affine] = {}   # nt.arange vectors: their starts, for indexing arguments
        self.pranges: dict[str, int] = {}       # the enclosing prange loops' variables and their extents
        self.loop_extents: dict[str, int] = {}  # every enclosing loop's variables (prange and srange) and theirs
        self.tasks: list[str] = [name]          # the chain of launches being traced, the entry task first

    def fresh(self, stem: str) -> str:
        n = self.counters.get(stem, 0)
        self.counters[stem] = n + 1
        name = stem if n == 0 and stem not in self.tensors else f"{stem}{n}"
        while name in self.tensors:
            n += 1
            name = f"{stem}{n}"
            self.counters[stem] = n + 1
        return name

    def add(self, op_type, **fields):
        op = op_type(self.next_id, loc=user_location(), task=tuple(self.tasks), **fields)
        self.next_id += 1
        self.bodies[-1].append(op)
        return op

    def declare(self, decl: ir.TensorDecl) -> None:
        self.tensors[decl.name] = decl


def _current(what: str) -> _Trace:
    trace = _TRACE.get()
    if trace is None:
        raise _error(f"{what} belongs inside a task being built (nvdsl.tasks.build)", code="outside-task",
                     hint="call it in the body of an @nt.task function")
    return trace


# --- values a task body handles ----------------------------------------------------------------------------

class Tensor:
    """A task's tensor argument: ``shape`` and ``dtype`` are known while building."""

    def __init__(self, name: str, shape, dtype: dt.DType, privilege: str):
        self.name, self.shape, self.dtype, self._privilege = name, tuple(shape), dtype, privilege

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def region(self) -> "TileRef":
        return TileRef(self, tuple(Affine.of(0) for _ in self.shape), self.shape, self._privilege)

    def __getitem__(self, key):
        """Elements read by index, for tile math: with ints or loop variables on every axis, one element
        (``slopes[h]``, a value that combines with any tile); with positions (an :func:`arange` vector, or
        one broadcast) on the last axis, the run of elements at those positions, as a vector or broadcast
        alike (``doc[b, q_idx] == doc[b, kv_idx]``, a mask of which query and key share a document)."""
        trace = _current(f"indexing {self.name}")
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != len(self.shape):
            raise _error(f"{self.name}{list(self.shape)} takes {len(self.shape)} indices, got {len(key)}",
                         code="bad-tile",
                         hint=f"give one index per axis of {self.name}, {len(self.shape)} in all (ints or loop "
                              "variables)")
        _check_privilege(self.region(), "read", "read")
        *leading, last = key
        if len(leading) == 1 and (isinstance(last, TileRef) or
                                  (isinstance(last, Local) and last.name not in trace.positions)):
            return self._gather(trace, leading[0], last)
        positions = last.source if isinstance(last, _BroadcastOperand) else \
            last.name if isinstance(last, Local) else None
        if positions is not None and positions not in trace.positions:
            raise _error(f"{self.name}[..., {last!r}]: a vector index must be positions (nt.arange, or a broadcast of "
                         "them)", code="bad-tile",
                         hint="index the last axis with positions such as nt.arange(BN, start=j * BN), or with an int "
                              "or loop variable")
        try:
            origin = [Affine.of(x) for x in leading] + [trace.positions[positions] if positions is not None
                                                        else Affine.of(last)]
        except TypeError:
            raise _error(f"{self.name}[{', '.join(map(repr, key))}]: indices must be ints or loop variables (times "
                         "ints), and positions on the last axis", code="bad-tile",
                         hint="index with Python ints and loop variables times ints (i * 2 + 1), and nt.arange "
                              "positions on the last axis") from None
        if positions is None:                      # one element, as a scalar
            out = Local(trace.fresh(self.name + "_value"), (), self.dtype)
            trace.declare(ir.TensorDecl(out.name, (), self.dtype, ir.REGISTER))
            trace.add(ir.Copy, source=Region(self.name, tuple(origin), (1,) * len(self.shape)), target=out.name)
            return out
        length = trace.tensors[positions].shape[0]
        run = TileRef(self, tuple(origin), (1,) * len(leading) + (length,), self._privilege)
        return _broadcast(run, (None, slice(None)) if last.axis == 0 else (slice(None), None)) \
            if isinstance(last, _BroadcastOperand) else run

    def _gather(self, trace, rows, columns) -> "Local":
        """``X[rows, columns]``, NumPy's pairing of two index vectors: for each ``r``, ``X[rows[r], columns[r]]``,
        where ``rows`` are a tile's row positions (``nt.arange(BM, start=i * BM)``) and ``columns`` an int32 vector
        over them read or computed on the GPU (a row's target class); 0 where a row or a column lies outside X."""
        if len(self.shape) != 2 or not isinstance(rows, Local) or rows.name not in trace.positions or \
                _matrix(columns) != rows.shape or not columns.dtype.is_int:
            raise _error(f"{self.name}[rows, columns] picks one element a row of a 2-D tensor: rows are positions "
                         f"(nt.arange) and columns an int vector of as many, got {self.name}{list(self.shape)}"
                         f"[{rows!r}, {columns!r}]", code="bad-tile",
                         hint=f"{self.name}[nt.arange(BM, start=i * BM), cols] with cols of shape (BM,)")
        if self._privilege != "read":
            raise _error(f"{self.name}[rows, columns]: a task that {_DECLARE[self._privilege]} '{self.name}' cannot "
                         "pick elements of it at columns known only on the GPU (no event would order the reads)",
                         code="bad-privilege", hint=f"pick from a tensor the task only reads (reads=('{self.name}',))")
        out = Local(trace.fresh(self.name + "_picked"), rows.shape, dt.float32 if self.dtype.is_float else dt.int32)
        trace.declare(ir.TensorDecl(out.name, out.shape, out.dtype, ir.REGISTER))
        trace.add(ir.Gather, out=out.name, tensor=self.name, rows=trace.positions[rows.name], index=columns._operand())
        return out

    def __repr__(self):
        return f"<task tensor {self.name}: {self.dtype.name}{list(self.shape)}>"

    def _with_privilege(self, privilege: str) -> "Tensor":
        return Tensor(self.name, self.shape, self.dtype, privilege)


class _TileMath:
    """What tiles read by tile math share: reductions along an axis and broadcasting as a vector."""

    def sum(self, axis: int) -> "Local":
        """The sum along ``axis`` (a vector tile, float32)."""
        return _reduce("sum", self, axis)

    def max(self, axis: int) -> "Local":
        """The largest element along ``axis`` (a vector tile, float32)."""
        return _reduce("max", self, axis)

    def __getitem__(self, key) -> "_BroadcastOperand":
        """``v[None, :]`` or ``v[:, None]``: a vector broadcast over a tile's rows or columns."""
        return _broadcast(self, key)

    @staticmethod
    def _nvdsl_math(name: str, operands, options: dict) -> "Local":
        """``nvdsl.<name>`` of tiles (``nvdsl.tanh``, ``nvdsl.where``, ...): the tile math of ``nt.<name>``."""
        fn = _NVDSL_MATH.get(name)
        if fn is None:
            raise _error(f"nvdsl.{name} has no tile form in a task program", code="bad-tile",
                         hint="tile math takes " + ", ".join(f"nvdsl.{n}" for n in _NVDSL_MATH) +
                              " (or their nt. names), arithmetic and comparisons")
        return fn(*operands, **options)


class TileRef(_TileMath):
    """A tile of a tensor argument (from a partition): read it in tile math, or assign to it (``t[...] = v``)."""

    def __init__(self, tensor: Tensor, origin, shape, privilege: str, transposed: bool = False, end=None):
        self.tensor, self.origin, self.shape = tensor, tuple(origin), tuple(shape)
        self._privilege, self.transposed, self.end = privilege, transposed, end

    @property
    def dtype(self) -> dt.DType:
        return self.tensor.dtype

    @property
    def region(self) -> Region:
        return Region(self.tensor.name, self.origin, self.shape, self.transposed, self.end)

    @property
    def T(self) -> "TileRef":
        """The tile read as its transpose (a K-major operand: ``A @ Bt[j, k].T`` with B stored (N, K))."""
        if len(self.region.matrix_shape) != 2:
            raise _error(f"only a matrix tile can be transposed, not {self.region}", code="bad-tile",
                         hint="transpose a tile with two axes beyond leading 1s, e.g. Bt[j, k].T with Bt = "
                              "nt.blocks(B, (BN, BK))")
        return TileRef(self.tensor, self.origin, self.shape, self._privilege, not self.transposed, self.end)

    def __matmul__(self, other) -> "_Product":
        return _Product(self, other)

    def __getitem__(self, key):
        if key is Ellipsis:                  # t[...] += v reads the tile as itself
            return self
        return super().__getitem__(key)

    def __iadd__(self, value) -> "_Accumulation":
        """``Ct[i, j] += v``: add the computed float32 tile ``v`` into this tile of a float32 argument (declared
        in ``reduces`` or ``writes``), each element atomically: parallel iterations may add into one tile, and
        the sums' rounding may differ from run to run (the order of the additions is the order they land)."""
        return _Accumulation(self, value)

    def __setitem__(self, key, value) -> None:
        if key is not Ellipsis:
            raise _error("assign a whole tile: t[...] = value", code="bad-tile",
                         hint="write t[...] = value to overwrite the whole tile, or store one tile of a partition "
                              "with Ct[i, j] = value")
        _store(self, value)

    def _operand(self):
        _check_privilege(self, "read", "read")
        return self.region

    def __repr__(self):
        return f"<tile {self.region}>"


class Partition:
    """A tensor (or tile) cut into tiles of ``tile`` (``None``: the whole extent); ``p[i, j]`` is one tile.

    ``grid`` is the number of tiles along each axis (a ragged last tile counts: TMA reads past the edge
    as zeros and clips writes). With ``rows`` (:func:`row_tiles`), the first index is a row tile of the
    table: its rows start where the table says and end where its group ends.
    """

    def __init__(self, base: TileRef, tile, rows: "RowTiles | None" = None):
        self.base, self.rows = base, rows
        self.tile = tuple(base.shape[a] if t is None else t for a, t in enumerate(tile))
        self.grid = tuple(-(-s // t) for s, t in zip(base.shape, self.tile))
        if rows is not None:
            self.grid = (rows.count,) + self.grid[1:]

    def __getitem__(self, index) -> TileRef:
        index = index if isinstance(index, tuple) else (index,)
        if len(index) != len(self.tile):
            raise _error(f"a tile of a {len(self.tile)}-D partition needs {len(self.tile)} indices, got {len(index)}",
                         code="bad-tile",
                         hint=f"give {len(self.tile)} indices, one per axis of the partition (ints or loop variables)")
        end = None
        try:
            origin = [o + Affine.of(x) * t for o, x, t in zip(self.base.origin, index, self.tile)]
            if self.rows is not None:
                origin[0] = self.base.origin[0] + self.rows.start(index[0])
                end = self.rows.end(index[0])
        except TypeError:
            raise _error(f"tile indices {index!r} must be Python ints or loop variables (times ints)",
                         code="bad-tile",
                         hint="index tiles with Python ints and nt.prange/nt.srange variables times ints, "
                              "e.g. At[i, k + 1]") from None
        for axis, (x, g) in enumerate(zip(index, self.grid)):
            if isinstance(x, int) and not 0 <= x < g:
                raise _error(f"tile index {x} is outside 0..{g - 1} along axis {axis}", code="bad-tile",
                             hint=f"use an index in 0..{g - 1} along axis {axis}: the partition's grid is "
                                  f"{list(self.grid)}")
        return TileRef(self.base.tensor, tuple(origin), self.tile, self.base._privilege, end=end)

    def __setitem__(self, index, value) -> None:
        tile = self[index]
        self._check_written_inside(index if isinstance(index, tuple) else (index,), tile.origin)
        _store(tile, value)

    def _check_written_inside(self, index, origin) -> None:
        """Refuse a written tile that starts outside its tensor in some iteration of the loops around it: TMA would
        write none of it (a loop over another tensor's grid, or arrays of mismatched shapes). Reads may run past
        the end on purpose (split-K's last split reads zeros there); axes indexed by values read on the GPU (row
        tiles, loaded indices) are not known here."""
        trace = _current("a tile's index")
        tensor = self.base.tensor
        for axis, start in enumerate(origin):
            if (self.rows is not None and axis == 0) or any(v not in trace.loop_extents for v in start.variables):
                continue
            low = start.const + sum(c * (trace.loop_extents[v] - 1) for v, c in start.terms if c < 0)
            high = start.const + sum(c * (trace.loop_extents[v] - 1) for v, c in start.terms if c > 0)
            extent = tensor.shape[axis]
            if low < 0 or high >= extent:
                loops = ", ".join(f"{v} < {trace.loop_extents[v]}" for v in start.variables)
                raise _error(f"a tile written into {tensor.name}{list(tensor.shape)} (index {index[axis]} along axis "
                             f"{axis}) starts at elements {low}..{high}{f' over {loops}' if loops else ''}, outside "
                             f"0..{extent - 1}: nothing of it would be written", code="tile-out-of-range",
                             hint=f"loop over {tensor.name}'s own grid ({self.grid[axis]} tiles along axis {axis}), "
                                  "or check the shapes of the arrays passed")


def blocks(tensor, tile, *, rows: "RowTiles | None" = None) -> Partition:
    """Partition ``tensor`` (a task argument or a tile of one) into tiles of shape ``tile``; with ``rows``
    (:func:`row_tiles`) a 2-D tensor's rows are cut as the table's row tiles instead of evenly."""
    _current("nt.blocks")
    base = tensor.region() if isinstance(tensor, Tensor) else tensor
    if not isinstance(base, TileRef):
        raise _error(f"nt.blocks partitions a task's tensor argument or a tile of one, got {tensor!r}",
                     code="bad-tile",
                     hint="pass a parameter of the task (or a tile of one), e.g. nt.blocks(C, (BM, BN))")
    tile = tuple(tile)
    if len(tile) != len(base.shape) or not all(t is None or (isinstance(t, int) and t > 0) for t in tile):
        name = base.tensor.name
        extents = f"{len(base.shape)} extent{'s' if len(base.shape) != 1 else ''}"
        raise _error(f"nt.blocks({name}, {tile!r}): '{name}' is {len(base.shape)}-D (shape {list(base.shape)}), so "
                     f"the tile takes {extents}, each a positive int (or None for a whole axis)", code="bad-tile",
                     hint=f"pass '{name}' of the rank the program expects, or a tile of {extents}")
    if rows is not None and (not isinstance(rows, RowTiles) or len(tile) != 2 or not isinstance(tensor, Tensor)):
        raise _error(f"rows= cuts a task's 2-D tensor argument by an nt.row_tiles table, got rows={rows!r} for "
                     f"{tensor!r}", code="bad-tile",
                     hint="pass rows=nt.row_tiles(table) with a 2-D tensor parameter, e.g. nt.blocks(A, (BM, BK), "
                          "rows=rows)")
    return Partition(base, tile, rows)


class RowTiles:
    """The row tiles of tensors whose rows are groups one after another (a grouped GEMM's A and C), read
    from a table on the GPU: row ``t`` of the int32 table (T, 3) is (group, first row, end row) of tile
    ``t``. :func:`nvdsl.kernels.gemm.row_tile_table` makes it; its tiles never share a row (the task
    layer relies on that), and a tile whose first row is its end row is empty and skipped."""

    def __init__(self, table: Tensor):
        self.table, self.count = table, table.shape[0]

    def _read(self, t, column: int, role: str) -> Affine:
        trace = _current("a row tile's index")
        t = Affine.of(t) if isinstance(t, (int, Affine)) else t
        if not isinstance(t, Affine) or len(t.terms) != 1 or t.terms[0][1] != 1 or t.const:
            raise _error(f"a row tile is indexed by a prange variable, got {t!r}", code="bad-tile",
                         hint="index row tiles by an nt.prange variable alone (no multiple or offset), e.g. "
                              "rows.group(t)")
        return _read_index(trace, self.table, (t, Affine.of(column)), role)

    def group(self, t) -> Affine:
        """The group of row tile ``t`` (an index for the group's operand: ``Bt[rows.group(t), k, j]``)."""
        return self._read(t, 0, "group")

    def start(self, t) -> Affine:
        return self._read(t, 1, "start")

    def end(self, t) -> Affine:
        return self._read(t, 2, "end")


def row_tiles(table) -> RowTiles:
    """The row tiles listed by ``table``, a task's int32 tensor argument of shape (T, 3): (group, first
    row, end row) per tile. Cut tensors by it with ``nt.blocks(X, tile, rows=...)``; read a tile's group
    with ``.group(t)``."""
    _current("nt.row_tiles")
    if not isinstance(table, Tensor) or table.dtype != dt.int32 or len(table.shape) != 2 or table.shape[1] != 3:
        raise _error(f"nt.row_tiles needs a task's int32 tensor argument of shape (tiles, 3), got {table!r}",
                     code="bad-tile", hint="make it with nvdsl.kernels.gemm.row_tile_table(group_sizes, BM)")
    _check_privilege(table.region(), "read", "read")
    return RowTiles(table)


def _read_index(trace: _Trace, table: Tensor, at: tuple[Affine, ...], role: str = "") -> Affine:
    """The variable of element ``at`` of ``table``, read on the GPU once per tile (one :class:`ir.Index` per
    element, however often the program asks for it)."""
    name = f"{table.name}[{','.join(map(str, at))}]"
    trace.indices.setdefault(name, ir.Index(name, table.name, tuple(at), role))
    return Affine.var(name)


def load_index(table, *indices) -> Affine:
    """Element ``table[indices]`` of a task's int32 tensor argument, read on the GPU once per tile: an index
    usable wherever loop variables are, in tile indices (``Kt[b, h, lo + t, 0]``), ``nt.arange(start=...)``
    and ``nt.srange(below=...)`` (a range of key blocks per query block, computed on the GPU).

    ``indices``: one per axis of ``table``, each a Python int or prange variables times ints plus an int
    (``nt.load_index(ranges, b, h, i, 0)``). An srange whose ``below`` depends on such an index runs
    ``min(extent, ceil(below / step))`` steps, none where ``below <= 0``: a tile without steps still runs
    what follows its loop, on the values from before it. Nothing checks the table's values against the
    partitions: a tile index read from it must stay inside the tensor (TMA reads zeros past its edges)."""
    trace = _current("nt.load_index")
    if not isinstance(table, Tensor) or table.dtype != dt.int32:
        raise _error(f"nt.load_index reads a task's int32 tensor argument, got {table!r}", code="bad-index",
                     hint="pass the table as an int32 array (numpy.int32, torch.int32) listed in the task's reads=")
    if len(indices) != table.ndim:
        raise _error(f"nt.load_index({table.name}, ...) needs {table.ndim} indices (one per axis of "
                     f"{list(table.shape)}), got {len(indices)}", code="bad-index",
                     hint=f"give one index per axis of {table.name}, {table.ndim} in all")
    at = []
    for axis, x in enumerate(indices):
        try:
            index = Affine.of(x)
        except TypeError:
            index = None
        outside = [] if index is None else [v for v in index.variables if v not in trace.pranges]
        if index is None or outside:
            raise _error(f"nt.load_index's index {x!r} along axis {axis} is not affine in the prange variables"
                         + (f" (it depends on {outside})" if outside else ""), code="bad-index",
                         hint="index the table by Python ints and the enclosing nt.prange's variables times ints; "
                              "an srange variable or another loaded index cannot address it")
        low = index.const + sum(c * (trace.pranges[v] - 1) for v, c in index.terms if c < 0)
        high = index.const + sum(c * (trace.pranges[v] - 1) for v, c in index.terms if c > 0)
        if low < 0 or high >= table.shape[axis]:
            raise _error(f"nt.load_index's index {index} along axis {axis} takes values {low}..{high}, outside "
                         f"0..{table.shape[axis] - 1} of {table.name}{list(table.shape)}", code="bad-index",
                         hint=f"make {table.name} one row per tile: its shape is the prange's extents")
        at.append(index)
    _check_privilege(table.region(), "read", "read")
    return _read_index(trace, table, tuple(at))


class _Product:
    def __init__(self, a, b):
        if not isinstance(a, (TileRef, Local, _TransposedLocal)) or not isinstance(b, (TileRef, Local)):
            raise _error("'@' multiplies tiles (of a partition, or computed)", code="bad-tile",
                         hint="multiply tiles of a partition or computed tiles, e.g. At[i, k] @ Bt[k, j]; scale by "
                              "numbers with *")
        if isinstance(a, TileRef) and isinstance(b, TileRef):
            _check_contraction(a, b)
        self.a, self.b = a, b


def _check_contraction(a: "TileRef", b: "TileRef") -> None:
    """Refuse a product of two arguments' tiles that walk the summed axis together (A's columns and B's rows from
    the same index) over tensors of different extents along it: the tiles of the shorter one past its end read
    zeros, so the product would silently drop the other's rest (arrays of mismatched shapes)."""
    axis_a = len(a.tensor.shape) - (2 if a.transposed else 1)
    axis_b = len(b.tensor.shape) - (1 if b.transposed else 2)
    if min(axis_a, axis_b) < 0 or a.origin[axis_a] != b.origin[axis_b]:
        return
    k_a, k_b = a.tensor.shape[axis_a], b.tensor.shape[axis_b]
    if k_a != k_b:
        raise _error(f"the product {a.tensor.name} @ {b.tensor.name} sums over {a.tensor.name}{list(a.tensor.shape)}'s "
                     f"axis {axis_a} ({k_a}) and {b.tensor.name}{list(b.tensor.shape)}'s axis {axis_b} ({k_b}): they "
                     f"must be equal", code="bad-shape",
                     hint=f"pass arrays whose summed extents agree ({a.tensor.name}'s K is {k_a}, "
                          f"{b.tensor.name}'s {k_b})")


@dataclass(frozen=True, eq=False)
class _TransposedLocal:
    """``t.T`` of a computed tile: only the A operand of a product (FlashAttention's ``dS.T @ K``), which the
    consumers stage through shared memory and read M-major. Where the consumers share the rows of ``t`` (the
    product's K), they either stage their rows side by side and each compute a share of the product's columns
    (``t`` one 128-byte box wide, the columns whole 64-column boxes a consumer), or each sum their own rows, a part
    that may only be added into an argument (``DQt[...] += dq``, whose additions sum the parts). Either way the
    accumulator is zeroed and stored in the step that computes it, and only stored."""
    local: "Local"

    @property
    def shape(self) -> tuple:
        return self.local.shape[::-1]

    @property
    def dtype(self) -> dt.DType:
        return self.local.dtype

    def _operand(self):
        return self.local.name

    def __matmul__(self, other) -> "_Product":
        return _Product(self, other)


class Local(_TileMath):
    """A tile computed by the program (e.g. an accumulator); where it lives is the mapping's choice."""

    def __init__(self, name: str, shape, dtype: dt.DType, privilege: str = "write"):
        self.name, self.shape, self.dtype, self._privilege = name, tuple(shape), dtype, privilege

    def __repr__(self):
        return f"<tile {self.name}: {self.dtype.name}{list(self.shape)}>"

    def _operand(self):
        return self.name

    def __iadd__(self, other) -> "Local":
        trace = _current("'+=' on a tile")
        _check_privilege(self, "reduce", "accumulate into")
        if isinstance(other, _Product):
            a, b = other.a, other.b
            a_shape, b_shape = _matrix(a), _matrix(b)
            if len(self.shape) != 2 or a_shape[1] != b_shape[0] or (a_shape[0], b_shape[1]) != self.shape:
                raise _error(f"{self.name} {list(self.shape)} += {_describe(a)} @ {_describe(b)}: the shapes do "
                             f"not make a product of {list(self.shape)}", code="bad-shape",
                             hint="multiply (M, K) @ (K, N) into an (M, N) accumulator; read a tile stored the other "
                                  "way with .T")
            transpose_a = isinstance(a, _TransposedLocal) or (isinstance(a, TileRef) and a.transposed)
            if transpose_a and a.dtype.itemsize != 2:
                raise _error(f"the A operand {_describe(a)} cannot be transposed: wgmma reads a {a.dtype.name} A "
                             "with K contiguous (it transposes 16-bit operands only)", code="bad-tile",
                             hint="store A as (M, K)" if isinstance(a, TileRef) else "convert it: t.astype(...).T")
            trace.add(ir.Mma, acc=self.name, a=a._operand(), b=b._operand(),
                      transpose_b=isinstance(b, TileRef) and b.transposed, transpose_a=transpose_a)
            return self
        value = _as_operand(other, self.shape)
        trace.add(ir.Map, out=self.name, fn="add", inputs=(self.name, value))
        return self

    def _binary(self, fn: str, other, reverse=False) -> "Local":
        if not self.shape and isinstance(other, _BroadcastOperand):     # a scalar and a broadcast vector
            return other._elementwise(fn, self, not reverse)
        shape = self.shape or _shape(other)          # a scalar (nt.scalar, slopes[h]) takes the other's shape
        operand = _as_operand(other, shape, self.dtype)
        inputs = (operand, self.name) if reverse else (self.name, operand)
        return _map(fn, inputs, shape, _promote(self.dtype, other))

    def __imul__(self, other) -> "Local":
        """``t *= x`` updates ``t`` in place (as ``+=``): a loop-carried tile rescaled each step."""
        trace = _current("'*=' on a tile")
        _check_privilege(self, "reduce", "scale")
        trace.add(ir.Map, out=self.name, fn="mul", inputs=(self.name, _as_operand(other, self.shape, self.dtype)))
        return self

    def __setitem__(self, key, value) -> None:
        """``t[...] = value`` overwrites the computed tile ``t`` in place (its next use, also in the next
        iteration of a loop, sees ``value``): how a loop carries state such as a running maximum."""
        trace = _current("assigning a computed tile")
        if key is not Ellipsis:
            raise _error("assign a whole tile: t[...] = value", code="bad-tile",
                         hint="write t[...] = value, replacing the whole computed tile")
        if not isinstance(value, Local) or value.shape != self.shape:
            raise _error(f"{self.name}[...] = {value!r}: assign a computed tile of shape {list(self.shape)}",
                         code="bad-shape",
                         hint=f"assign a computed tile of shape {list(self.shape)} (tile math or nt.full), not an "
                              "argument's tile or a number")
        if value.dtype != self.dtype:
            raise _error(f"{self.name}[...] = a {value.dtype.name} tile; {self.name} is {self.dtype.name}",
                         code="bad-dtype", hint="convert it first: value.astype(...)")
        trace.add(ir.Map, out=self.name, fn="copy", inputs=(value.name,))

    def __lt__(self, o): return self._compare("lt", o)
    def __le__(self, o): return self._compare("le", o)
    def __gt__(self, o): return self._compare("gt", o)
    def __ge__(self, o): return self._compare("ge", o)

    def __eq__(self, o): return self._compare("eq", o)    # elementwise, as NumPy's; tiles hash by identity
    def __ne__(self, o): return self._compare("ne", o)
    __hash__ = object.__hash__

    def _logical(self, fn: str, o) -> "Local":
        if self.dtype != dt.bool_ or getattr(o, "dtype", None) != dt.bool_:
            raise _error(f"'{_LOGICAL[fn]}' combines masks (tiles of comparisons), got {self!r} and {o!r}",
                         code="bad-dtype", hint="compare first, e.g. (kv_idx <= q_idx) & (q_idx - kv_idx < 1024)")
        return _map(fn, (self.name, _as_operand(o, self.shape, dt.bool_)), self.shape, dt.bool_)

    def __and__(self, o): return self._logical("and", o)
    def __rand__(self, o): return self._logical("and", o)
    def __or__(self, o): return self._logical("or", o)
    def __ror__(self, o): return self._logical("or", o)

    def __invert__(self) -> "Local":
        """``~mask``: where the mask does not hold."""
        if self.dtype != dt.bool_:
            raise _error(f"'~' negates a mask (a tile of comparisons), got {self!r}", code="bad-dtype",
                         hint="make a mask first with a comparison, e.g. ~(kv_idx <= q_idx)")
        return _map("not", (self.name,), self.shape, dt.bool_)

    def __neg__(self) -> "Local":
        return self._binary("mul", -1 if self.dtype.is_int else -1.0)

    def _compare(self, fn: str, other) -> "Local":
        if not self.shape and isinstance(other, _BroadcastOperand):
            return other._elementwise(_SWAPPED[fn], self)
        if isinstance(other, Affine) or (isinstance(other, int) and not isinstance(other, bool) and self.dtype.is_int):
            if not self.dtype.is_int:
                raise _error(f"comparing a {self.dtype.name} tile with an index", code="bad-dtype",
                             hint="compare integer tiles (nt.arange positions) with indices, or compare a float tile "
                                  "with a number")
            return _map(fn, (self.name, Affine.of(other)), self.shape, dt.bool_)
        shape = self.shape or _shape(other)
        return _map(fn, (self.name, _as_operand(other, shape, self.dtype)), shape, dt.bool_)

    def __add__(self, o): return self._binary("add", o)
    def __radd__(self, o): return self._binary("add", o, True)
    def __sub__(self, o): return self._binary("sub", o)
    def __rsub__(self, o): return self._binary("sub", o, True)
    def __mul__(self, o): return self._binary("mul", o)
    def __rmul__(self, o): return self._binary("mul", o, True)
    def __truediv__(self, o):
        """``t / x``; by a Python number, ``t * (1 / x)`` (within an ulp of the quotient, and one multiply per
        element instead of a division: a soft cap's ``score / cap``)."""
        if isinstance(o, (int, float)) and not isinstance(o, bool) and o != 0 and self.dtype.is_float:
            return self._binary("mul", 1.0 / o)
        return self._binary("div", o)

    def __rtruediv__(self, o): return self._binary("div", o, True)

    def __matmul__(self, other) -> "_Product":
        """A product with this computed tile as the A operand, read from registers (attention's ``P @ V``)."""
        return _Product(self, other)

    @property
    def T(self) -> _TransposedLocal:
        """The tile's transpose, as the A operand of a product (``dst.astype(dtype).T @ Kt[j]``): staged through
        shared memory and read M-major (16-bit tiles)."""
        if len(self.shape) != 2:
            raise _error(f"only a matrix tile can be transposed, not {self!r}", code="bad-tile",
                         hint="transpose a 2-D computed tile, e.g. dst.astype(dtype).T @ Kt[j]")
        return _TransposedLocal(self)

    def astype(self, dtype: dt.DType) -> "Local":
        """The tile converted to ``dtype``."""
        if not isinstance(dtype, dt.DType):
            raise _error(f"astype needs an nvdsl dtype, got {dtype!r}", code="bad-dtype",
                         hint="pass an nvdsl dtype, e.g. t.astype(nt.bfloat16) or t.astype(C.dtype)")
        return _map("cast", (self.name,), self.shape, dtype)

    def sum(self, axis: int) -> "Local":
        return _reduce("sum", self, axis)

    def max(self, axis: int) -> "Local":
        return _reduce("max", self, axis)

    def __getitem__(self, key) -> Broadcast:
        return _broadcast(self, key)


def _promote(dtype: dt.DType, other) -> dt.DType:
    """The dtype of elementwise math between a tile of ``dtype`` and ``other``: as NumPy, the wider float
    (a float16 bias added to a float32 accumulator gives float32), and a float with positions (an int32 tile,
    such as ``q_idx - kv_idx``) the float; Python numbers take the tile's, or float32 for a float number and
    an int tile."""
    other_dtype = getattr(other, "dtype", None)
    if other_dtype is None:
        return dt.float32 if dtype.is_int and isinstance(other, float) else dtype
    if other_dtype == dtype:
        return dtype
    if dtype.is_float and other_dtype.is_float:
        return dtype if dtype.bits >= other_dtype.bits else other_dtype
    if {dtype.is_float, other_dtype.is_float} == {True, False} and dt.bool_ not in (dtype, other_dtype):
        return dtype if dtype.is_float else other_dtype
    raise _error(f"tile math between {dtype.name} and {other_dtype.name}", code="bad-dtype",
                 hint="convert one side with .astype(...)")


def _shape(x) -> tuple[int, ...]:
    """The shape of a tile math operand (a number's: none)."""
    return _matrix(x) if isinstance(x, (TileRef, Local)) else ()


_LOGICAL = {"and": "&", "or": "|"}


def _matrix(x) -> tuple[int, ...]:
    return x.region.matrix_shape if isinstance(x, TileRef) else x.shape


def _describe(x) -> str:
    if isinstance(x, _TransposedLocal):
        return f"{_describe(x.local)}.T"
    return str(x.region) if isinstance(x, TileRef) else f"{x.name}{list(x.shape)}"


def _check_privilege(value, needed: str, verb: str) -> None:
    held = value._privilege
    if _LEVELS[held] < _LEVELS[needed]:
        name = value.tensor.name if isinstance(value, TileRef) else value.name
        raise _error(f"the task may only {_VERBS[held]} '{name}', not {verb} it", code="privilege",
                     hint=f"declare '{name}' in the task's {_DECLARE[needed]}")


_VERBS = {"read": "read", "reduce": "read and accumulate into", "write": "read and write"}
_DECLARE = {"read": "reads", "reduce": "reduces (or writes)", "write": "writes"}


def _broadcast(value, key) -> "_BroadcastOperand":
    shape = value.region.matrix_shape if isinstance(value, TileRef) else value.shape
    if len(shape) != 1 or key not in ((None, slice(None)), (slice(None), None)):
        raise _error("broadcast a vector tile as v[None, :] (a row, repeated down) or v[:, None] (a column)",
                     code="bad-tile",
                     hint="write v[None, :] or v[:, None] on a vector tile (a 1-D tile, such as a sum along an axis)")
    return _BroadcastOperand(value._operand(), 0 if key[0] is None else 1, shape[0], value.dtype)


@dataclass(frozen=True, eq=False)
class _BroadcastOperand:
    source: object               # a local's name or an argument's Region
    axis: int
    length: int
    dtype: dt.DType

    def _elementwise(self, fn: str, other, reverse: bool = False):
        """``q_idx - kv_idx`` (a broadcast row and column: a tile), ``kv_idx + 1`` or ``q_idx < n`` (with a
        number, an index or a scalar: the vector's map, broadcast alike), ``s + kv_idx`` (with a tile)."""
        if isinstance(other, Local) and other.shape:
            return other._binary(fn, self, not reverse) if fn in _ARITHMETIC else other._compare(_SWAPPED[fn], self)
        if isinstance(other, _BroadcastOperand):
            if other.axis == self.axis:
                raise _error("combine a broadcast row with a broadcast column (v[None, :] - w[:, None]); two rows "
                             "(or columns) combine as the vectors themselves", code="bad-tile",
                             hint="combine two rows as the vectors themselves (v - w), or broadcast one as a column: "
                                  "v[None, :] - w[:, None]")
            shape = (self.length, other.length) if self.axis == 1 else (other.length, self.length)
            inputs = (Broadcast(other.source, other.axis), Broadcast(self.source, self.axis)) if reverse else \
                (Broadcast(self.source, self.axis), Broadcast(other.source, other.axis))
            dtype = dt.bool_ if fn in _COMPARISONS else _promote(self.dtype, other)
            return _map(fn, inputs, shape, dtype)
        if isinstance(other, bool) or not isinstance(other, (int, float, Affine, Local)):
            raise _error(f"tile math combines tiles, broadcast vectors, indices and Python numbers, not {other!r}",
                         code="bad-tile",
                         hint="combine with a tile, a broadcast vector, a loop index or a Python int or float "
                              "(float(x) of a NumPy number)")
        operand = other if isinstance(other, Affine) else _as_operand(other, (self.length,), self.dtype)
        dtype = dt.bool_ if fn in _COMPARISONS else \
            _promote(self.dtype, other) if not isinstance(other, Affine) else self.dtype
        if isinstance(other, float) and self.dtype.is_int and fn not in _COMPARISONS:
            dtype = dt.float32
        inputs = (operand, self.source) if reverse else (self.source, operand)
        vector = _map(fn, inputs, (self.length,), dtype)
        return _BroadcastOperand(vector.name, self.axis, self.length, dtype)

    # ``cols[None, :] <= rows[:, None]``: the comparison of a row and a column (a 2-D mask), or of a vector and a
    # number (a vector mask, broadcast alike)
    def __lt__(self, o): return self._elementwise("lt", o)
    def __le__(self, o): return self._elementwise("le", o)
    def __gt__(self, o): return self._elementwise("gt", o)
    def __ge__(self, o): return self._elementwise("ge", o)
    def __eq__(self, o): return self._elementwise("eq", o)      # noqa: E704 - elementwise, as NumPy's
    def __ne__(self, o): return self._elementwise("ne", o)
    def __add__(self, o): return self._elementwise("add", o)
    def __radd__(self, o): return self._elementwise("add", o, True)
    def __sub__(self, o): return self._elementwise("sub", o)
    def __rsub__(self, o): return self._elementwise("sub", o, True)
    def __mul__(self, o): return self._elementwise("mul", o)
    def __rmul__(self, o): return self._elementwise("mul", o, True)
    def __truediv__(self, o): return self._elementwise("div", o)
    def __rtruediv__(self, o): return self._elementwise("div", o, True)
    def __and__(self, o): return self._elementwise("and", o)
    def __rand__(self, o): return self._elementwise("and", o, True)
    def __or__(self, o): return self._elementwise("or", o)
    def __ror__(self, o): return self._elementwise("or", o, True)
    __hash__ = object.__hash__


_ARITHMETIC = ("add", "sub", "mul", "div")
_COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne", "and", "or")
_SWAPPED = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne", "and": "and", "or": "or"}


def _as_operand(x, shape, dtype: dt.DType | None = None):
    """An elementwise operand for a result of ``shape`` (elements of ``dtype``): a number, an index (``n - j * BN``
    of loop variables: a number known per step, taken as the tile's dtype), a tile of that shape, or a broadcast
    vector."""
    if isinstance(x, bool) or not isinstance(x, (int, float, Affine, Local, TileRef, _BroadcastOperand)):
        raise _error(f"tile math combines tiles, broadcast vectors, indices and Python numbers, not {x!r}",
                     code="bad-tile",
                     hint="combine with a tile, a broadcast vector, a loop index or a Python int or float "
                          "(float(x) of a NumPy number)")
    if isinstance(x, Affine):
        return x
    if isinstance(x, (int, float)):
        return int(x) if dtype is not None and dtype.is_int and isinstance(x, int) else float(x)
    if isinstance(x, _BroadcastOperand):
        along = shape[1] if x.axis == 0 else shape[0]
        if len(shape) != 2 or x.length != along:
            raise _error(f"a vector of {x.length} broadcast {'down the rows' if x.axis == 0 else 'across the columns'}"
                         f" does not fit a tile of {list(shape)}", code="bad-shape",
                         hint="use v[None, :] for a vector with one element per column of the tile, v[:, None] for "
                              "one per row")
        return Broadcast(x.source, x.axis)
    x_shape = x.region.matrix_shape if isinstance(x, TileRef) else x.shape
    if isinstance(x, Local) and x.shape == ():       # a scalar (nt.scalar) combines with any tile
        return x._operand()
    one_row = x.region.as_tile_of(shape) if isinstance(x, TileRef) and tuple(x_shape) != tuple(shape) else None
    if one_row is not None:
        x._operand()                                  # (its privilege check)
        return one_row                                # a tile of one row, (1, N)
    if tuple(x_shape) != tuple(shape):
        raise _error(f"elementwise operands must have one shape: {list(x_shape)} and {list(shape)}", code="bad-shape",
                     hint="give both operands one shape, or broadcast a vector with v[None, :] or v[:, None]")
    return x._operand()


def _map(fn: str, inputs, shape, dtype: dt.DType, **fields) -> Local:
    trace = _current(f"tile math ({fn})")
    out = Local(trace.fresh("t"), shape, dtype)
    trace.declare(ir.TensorDecl(out.name, out.shape, dtype, ir.REGISTER))
    trace.add(ir.Map, out=out.name, fn=fn, inputs=tuple(inputs), **fields)
    return out


def _reduce(fn: str, value, axis: int) -> Local:
    trace = _current(f"a {fn} along an axis")
    shape = value.region.matrix_shape if isinstance(value, TileRef) else value.shape
    if len(shape) != 2 or axis not in (0, 1):
        raise _error(f"{fn}(axis={axis!r}) reduces a matrix tile along axis 0 or 1", code="bad-tile",
                     hint="reduce a 2-D tile along axis=1 (across each row) or axis=0 (down each column)")
    out = Local(trace.fresh(fn), (shape[1 - axis],), dt.float32)
    trace.declare(ir.TensorDecl(out.name, out.shape, dt.float32, ir.REGISTER))
    trace.add(ir.Reduce, out=out.name, fn=fn, input=value._operand(), axis=axis)
    return out


@dataclass(frozen=True, eq=False)
class _Accumulation:
    """``tile += value`` on an argument's tile, until the assignment Python makes of it stores it."""
    tile: TileRef
    value: object


def _store(tile: TileRef, value) -> None:
    trace = _current("assigning a tile")
    accumulate = isinstance(value, _Accumulation)
    if accumulate:
        if value.tile.region != tile.region:
            raise _error(f"{value.tile.region} += ... is assigned to {tile.region}: add into a tile in place "
                         "(Ct[i, j] += v)", code="bad-tile",
                         hint="add in place into the tile the sum reads: Ct[i, j] += v")
        value = value.value
        _check_privilege(tile, "reduce", "accumulate into")
        if tile.dtype != dt.float32:
            raise _error(f"adding into {tile.region}: nvdsl accumulates into float32 tensors, and "
                         f"'{tile.tensor.name}' is {tile.dtype.name}", code="bad-dtype",
                         hint="accumulate into a float32 tensor and convert it once every addition is done")
    else:
        _check_privilege(tile, "write", "write")
    if not isinstance(value, Local):
        raise _error(f"assign a computed tile to {tile.region}, got {value!r}", code="bad-tile",
                     hint="assign a computed tile (tile math, nt.full), e.g. Ct[i, j] = "
                          f"acc.astype({tile.tensor.name}.dtype)")
    target = tile.region if value.shape == tile.region.matrix_shape else tile.region.as_tile_of(value.shape)
    if target is None:
        raise _error(f"a {list(value.shape)} tile cannot be stored into {tile.region}", code="bad-shape",
                     hint=f"store a tile of shape {list(tile.region.matrix_shape)}, the target's, or cut the tensor "
                          f"into tiles of {list(value.shape)}")
    if value.dtype != tile.dtype:
        raise _error(f"storing a {value.dtype.name} tile into {tile.tensor.name} ({tile.dtype.name})", code="bad-dtype",
                     hint=f"convert it first: value.astype({tile.tensor.name}.dtype)")
    _check_reads_cover(trace, tile, value)
    trace.add(ir.Copy, source=value.name, target=target, accumulate=accumulate)


def _check_reads_cover(trace: _Trace, tile: TileRef, value: "Local") -> None:
    """Refuse a store whose tile is computed from an argument's tile at the same positions along some axis (the same
    origin and box) of an argument shorter along it: the stored elements past that argument's end would be made of
    the zeros read there (arrays of mismatched shapes; a longer argument is read in part, as a slice). The tiles
    feeding the value are found by following the recorded operations back from it."""
    written = tile.region
    for read in _argument_tiles_feeding(trace, value.name):
        if read.tensor == written.tensor:
            continue
        source = trace.tensors[read.tensor]
        for axis_w, (origin_w, box_w) in enumerate(zip(written.origin, written.shape)):
            if not origin_w.terms or (axis_w == 0 and written.end is not None):
                continue
            for axis_r, (origin_r, box_r) in enumerate(zip(read.origin, read.shape)):
                if origin_r != origin_w or box_r != box_w or (axis_r == 0 and read.end is not None):
                    continue
                have, need = source.shape[axis_r], tile.tensor.shape[axis_w]
                if have < need:
                    raise _error(f"{tile.tensor.name}{list(tile.tensor.shape)} is written at elements {have}..{need - 1} "
                                 f"along axis {axis_w} from tiles of {read.tensor}{list(source.shape)} at the same "
                                 f"positions ({read}), whose axis {axis_r} ends at {have}: those elements would be "
                                 f"made of zeros read past its end", code="bad-shape",
                                 hint=f"pass arrays whose extents agree ({read.tensor}'s axis {axis_r} is {have}, "
                                      f"{tile.tensor.name}'s axis {axis_w} is {need}), or write into a slice of "
                                      f"{tile.tensor.name} of {have} along that axis")


def _argument_tiles_feeding(trace: _Trace, name: str) -> list[Region]:
    """The argument tiles the local ``name`` is computed from, through every operation recorded so far (loops
    included) that writes it or a local it is computed from."""
    ops = [op for body in trace.bodies for op, _ in ir.walk(body)]
    wanted, found, changed = {name}, [], True
    while changed:
        changed = False
        for op in ops:
            if not any(isinstance(w, str) and w in wanted for w in op.writes()):
                continue
            for read in op.reads():
                read = read.tensor if isinstance(read, ir.Broadcast) else read
                if isinstance(read, Region) and read not in found:
                    found.append(read)
                elif isinstance(read, str) and read not in wanted:
                    wanted.add(read)
                    changed = True
    return found


# --- building blocks of a task body ---------------------------------------------------------------------

def zeros(shape, dtype: dt.DType = dt.float32, *, name: str = "acc") -> Local:
    """A tile of zeros (an accumulator), of ``shape`` and ``dtype``."""
    return full(shape, 0.0, dtype, name=name)


def full(shape, value: float, dtype: dt.DType = dt.float32, *, name: str = "t") -> Local:
    """A tile (or vector) of ``shape`` with every element ``value`` (``-math.inf`` starts a running maximum)."""
    trace = _current("nt.full")
    shape = tuple(shape)
    if not shape or not all(isinstance(s, int) and s > 0 for s in shape):
        raise _error(f"nt.full needs a shape of positive ints, got {shape!r}", code="bad-shape",
                     hint="pass a tuple of positive ints, e.g. nt.full((BM, BN), 0.0)")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _error(f"nt.full fills with a Python number, got {value!r}", code="bad-tile",
                     hint="fill with a Python int or float, e.g. 0.0 or -math.inf")
    tile = Local(trace.fresh(name), shape, dtype)
    trace.declare(ir.TensorDecl(tile.name, shape, dtype, ir.REGISTER))
    trace.add(ir.Fill, target=tile.name, value=float(value))
    return tile


def arange(length: int, start=0, *, name: str = "pos") -> Local:
    """The int32 vector ``start, start + 1, ..., start + length - 1``: positions of a tile's rows or columns
    (``start`` a loop variable times the tile size, plus ints), for masks:
    ``nt.where(keys[None, :] <= rows[:, None], s, -math.inf)``."""
    trace = _current("nt.arange")
    if not isinstance(length, int) or isinstance(length, bool) or length <= 0:
        raise _error(f"nt.arange needs a positive int length, got {length!r}", code="bad-shape",
                     hint="pass a positive Python int, e.g. nt.arange(BM, start=i * BM)")
    try:
        start = Affine.of(start)
    except TypeError:
        raise _error(f"nt.arange's start must be an int or loop variables times ints, got {start!r}",
                     code="bad-tile",
                     hint="pass start as an int or loop variables times ints, e.g. start=i * BM") from None
    out = Local(trace.fresh(name), (length,), dt.int32)
    trace.declare(ir.TensorDecl(out.name, out.shape, dt.int32, ir.REGISTER))
    trace.add(ir.Iota, out=out.name, start=start, length=length)
    trace.positions[out.name] = start
    return out


def within(index, low, high) -> ir.Within:
    """``low <= index < high`` for affine indices (loop variables, indices read with :func:`load_index`): the
    steps where a mask keeps everything, for :func:`where`'s ``unless=``."""
    _current("nt.within")
    try:
        return ir.Within(Affine.of(index), Affine.of(low), Affine.of(high))
    except TypeError:
        raise _error(f"nt.within({index!r}, {low!r}, {high!r}) takes affine indices", code="bad-tile",
                     hint="pass ints and loop variables (or nt.load_index values) times ints, e.g. "
                          "nt.within(j, lo, hi)") from None


def where(condition, if_true, if_false, *, unless: "ir.Within | None" = None) -> Local:
    """``if_true`` where ``condition`` (a mask tile, or a broadcast mask vector) holds, else ``if_false``
    (a tile or a number), element by element; or, for a computed vector ``if_true``, where a vector
    ``condition`` holds. ``unless=nt.within(j, lo, hi)``: the program knows the mask keeps everything in the steps
    where ``lo <= j < hi``; there the mask is neither computed nor applied (the test is one per step)."""
    _current("nt.where")
    if unless is not None and not isinstance(unless, ir.Within):
        raise _error(f"nt.where's unless= takes nt.within(index, low, high), got {unless!r}", code="bad-tile",
                     hint="pass unless=nt.within(j, lo, hi)")
    if not isinstance(if_true, Local) or len(if_true.shape) not in (1, 2):
        raise _error(f"nt.where selects from a computed tile or vector, got {if_true!r}", code="bad-tile",
                     hint="pass a computed tile or vector as if_true, e.g. nt.where(mask, s, -math.inf) with s from "
                          "tile math")
    condition_dtype = condition.dtype if isinstance(condition, (Local, _BroadcastOperand)) else None
    if condition_dtype != dt.bool_:
        raise _error(f"nt.where's condition must be a mask (a comparison of positions), got {condition!r}",
                     code="bad-dtype",
                     hint="pass a comparison as the condition, e.g. nt.where(cols[None, :] <= rows[:, None], s, "
                          "-math.inf)")
    inputs = (_as_operand(condition, if_true.shape), if_true.name, _as_operand(if_false, if_true.shape, if_true.dtype))
    return _map("where", inputs, if_true.shape, if_true.dtype, unless=unless)


def scalar(tensor) -> Local:
    """The one element of a one-element tensor argument (a per-tensor scale), as a value tile math can
    combine with tiles: ``(acc * nt.scalar(scale_a)).astype(C.dtype)``."""
    trace = _current("nt.scalar")
    if not isinstance(tensor, Tensor) or tensor.shape not in ((1,), ()):
        raise _error(f"nt.scalar needs a task's one-element tensor argument, got {tensor!r}", code="bad-tile",
                     hint="pass a tensor parameter of shape (1,) or (), listed in the task's reads=")
    _check_privilege(tensor.region(), "read", "read")
    out = Local(trace.fresh(tensor.name + "_value"), (), tensor.dtype)
    trace.declare(ir.TensorDecl(out.name, (), tensor.dtype, ir.REGISTER))
    trace.add(ir.Copy, source=Region(tensor.name, (Affine.of(0),) * len(tensor.shape), tensor.shape or ()),
              target=out.name)
    return out


def tunable(name: str, default: int | None = None) -> int:
    """The mapping's value for the tunable ``name`` (a tile size), or ``default`` where the mapping has none."""
    trace = _current("nt.tunable")
    trace.used_tunables.add(name)
    if name in trace.tunables:
        return trace.tunables[name]
    if default is None:
        raise _error(f"the mapping gives no value for the tunable '{name}', and the program gives no default",
                     code="missing-tunable", hint=f"add it to the mapping: tiles={{'{name}': ...}}")
    trace.tunables[name] = default
    return default


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for Python ints."""
    return -(-a // b)


def _loop(kind: str, extents, below=None, step: int = 1):
    trace = _current(f"nt.{kind}")
    loc, task_chain = user_location(), tuple(trace.tasks)
    extents = tuple(extents)
    if not extents or not all(isinstance(e, int) and not isinstance(e, bool) and e > 0 for e in extents):
        raise _error(f"nt.{kind} needs positive Python ints (tile counts), got {extents!r}", code="bad-loop",
                     hint=f"pass positive Python ints, such as a partition's grid: nt.{kind}(*Ct.grid)")
    stem = {"prange": "p", "srange": "k"}[kind]
    names = []
    for _ in extents:
        names.append(f"{stem}{trace.loop_depth[kind]}")
        trace.loop_depth[kind] += 1
    trace.bodies.append([])
    if kind == "prange":
        trace.pranges.update(zip(names, extents))
    trace.loop_extents.update(zip(names, extents))
    finished = False
    try:
        variables = tuple(Affine.var(n) for n in names)
        yield variables if len(variables) > 1 else variables[0]
        finished = True
    finally:
        body = trace.bodies.pop()
        for name in names:
            trace.pranges.pop(name, None)
            trace.loop_extents.pop(name, None)
        for _ in extents:
            trace.loop_depth[kind] -= 1
        if finished:
            trace.bodies[-1].append(ir.Loop(kind, tuple(names), extents, tuple(body), loc, below, step,
                                            task=task_chain))


def prange(*extents):
    """A parallel loop over tiles: ``for i, j in nt.prange(m_tiles, n_tiles):``. Its iterations may run in
    any order or at once, so they must not write the same data."""
    return _loop("prange", extents)


def srange(extent: int, *, below=None, step: int = 1):
    """A sequential loop: ``for k in nt.srange(k_tiles):`` runs its iterations in order.

    With ``below`` (affine in the prange's variables), only iterations ``k`` with ``k * step < below`` run:
    ``nt.srange(Kt.grid[2], below=(i + 1) * BM, step=BN)`` visits the key blocks that start before the
    end of query block ``i`` (a causal mask's triangle); every tile must run at least one iteration (checked
    when the kernel is planned). ``below`` may also depend on indices read on the GPU (:func:`load_index`):
    ``nt.srange(Kt.grid[2], below=(hi - lo) * BN, step=BN)`` runs ``hi - lo`` steps, none where it is zero
    or negative; that part cannot be checked before the kernel runs."""
    if below is not None:
        _current("nt.srange")
        try:
            below = Affine.of(below)
        except TypeError:
            raise _error(f"nt.srange's below= must be an int or prange variables (or loaded indices) times ints, "
                         f"got {below!r}",
                         code="bad-loop",
                         hint="pass below= an int or prange variables times ints, e.g. below=(i + 1) * BM") from None
        if not isinstance(step, int) or isinstance(step, bool) or step <= 0:
            raise _error(f"nt.srange's step={step!r} must be a positive int", code="bad-loop",
                         hint="pass step= a positive Python int, e.g. step=BN")
        if not below.terms and below.const <= 0:
            raise _error(f"nt.srange(below={below.const}) would run no iteration", code="bad-loop",
                         hint="give a positive below=, or leave out the loop where it would run no iteration")
    return _loop("srange", (extent,), below, step)


# --- tasks ------------------------------------------------------------------------------------------------

class Task:
    """A function over tensors with declared privileges; build the entry task with ``nt.build``."""

    def __init__(self, fn, privileges: dict[str, str]):
        self.fn = fn
        self.name = fn.__name__
        self.privileges = privileges
        self.parameters = tuple(inspect.signature(fn).parameters)
        unknown = set(privileges) - set(self.parameters)
        if unknown:
            raise TaskError(f"task '{self.name}' declares privileges for {sorted(unknown)}, which are not its "
                            "parameters", code="privilege",
                            hint=f"name only the task's parameters ({', '.join(self.parameters)}) in reads=, reduces= "
                                 "and writes=", loc=user_location())

    def __call__(self, *args, **kwargs):
        raise TaskError(f"task '{self.name}' is not called directly", code="bad-launch",
                        hint="inside a task use nt.launch(task, ...); build an entry task with nt.build(task)",
                        loc=user_location())

    def __repr__(self):
        return f"<nvdsl task {self.name}>"

    def __nvdsl_key__(self) -> tuple:
        """The function (its code, and the closures and globals it reads) and the privileges."""
        return self.fn, self.privileges


def task(fn=None, *, reads=(), writes=(), reduces=()):
    """Declare a task: ``@nt.task(reads=("A", "B"), writes=("C",))``; tensor parameters need a privilege."""
    def declare(f):
        privileges = {}
        for level, names in (("read", reads), ("reduce", reduces), ("write", writes)):
            for name in ((names,) if isinstance(names, str) else names):
                privileges[name] = level
        return Task(f, privileges)
    return declare(fn) if fn is not None else declare


def launch(t: Task, *args) -> None:
    """Run task ``t`` on these arguments (tensors, tiles, computed tiles or Python values) as part of this one.

    The launched task holds the privileges it declares, which must not exceed what the caller holds. Its
    events keep its name, so a mapping's ``levels`` can place it (see :class:`~nvdsl.tasks.Mapping`).
    """
    trace = _current("nt.launch")
    if not isinstance(t, Task):
        raise _error(f"nt.launch needs a task, got {t!r}", code="bad-launch",
                     hint="pass a function decorated with @nt.task(...) as the first argument")
    if len(args) != len(t.parameters):
        raise _error(f"task '{t.name}' takes {len(t.parameters)} arguments, got {len(args)}", code="bad-launch",
                     hint=f"pass {len(t.parameters)} arguments, one per parameter of '{t.name}': "
                          f"{', '.join(t.parameters)}")
    bound = []
    for name, arg in zip(t.parameters, args):
        if isinstance(arg, (Tensor, TileRef, Local)):
            wanted = t.privileges.get(name)
            if wanted is None:
                raise _error(f"task '{t.name}' declares no privilege for its tensor parameter '{name}'",
                             code="privilege", hint="list it in reads=, reduces= or writes=")
            if _LEVELS[arg._privilege] < _LEVELS[wanted]:
                raise _error(f"task '{t.name}' asks to {wanted} its '{name}', but the caller may only "
                             f"{_VERBS[arg._privilege]} it", code="privilege",
                             hint=f"declare that tensor in the caller's {_DECLARE[wanted]}, or ask for less in task "
                                  f"'{t.name}'")
            arg = _narrow(arg, wanted)
        bound.append(arg)
    trace.tasks.append(t.name)
    try:
        t.fn(*bound)
    finally:
        trace.tasks.pop()


def _narrow(arg, privilege: str):
    if isinstance(arg, Tensor):
        return arg._with_privilege(privilege)
    if isinstance(arg, TileRef):
        return TileRef(arg.tensor, arg.origin, arg.shape, privilege, arg.transposed, arg.end)
    return Local(arg.name, arg.shape, arg.dtype, privilege)


@dataclass(frozen=True)
class TraceResult:
    program: ir.Program
    used_tunables: frozenset


def trace_program(entry: Task, arguments: list[tuple[str, tuple, dt.DType]], tunables: dict) -> TraceResult:
    """Run ``entry`` on tensors named and shaped as ``arguments`` and record its events."""
    if not isinstance(entry, Task):
        raise TaskError(f"nt.build needs an @nt.task function, got {entry!r}", code="bad-launch",
                        hint="decorate the function with @nt.task(reads=..., writes=...) and pass that to nt.build",
                        loc=user_location())
    if len(arguments) != len(entry.parameters):
        raise TaskError(f"task '{entry.name}' takes {len(entry.parameters)} tensors, got {len(arguments)}",
                        code="bad-launch",
                        hint=f"pass {len(entry.parameters)} arrays, one per parameter: {', '.join(entry.parameters)}",
                        loc=user_location())
    trace = _Trace(entry.name, tunables)
    tensors = []
    for param, (_, shape, dtype) in zip(entry.parameters, arguments):
        privilege = entry.privileges.get(param)
        if privilege is None:
            raise TaskError(f"the entry task '{entry.name}' declares no privilege for '{param}'", code="privilege",
                            hint="list every tensor parameter in reads=, reduces= or writes=", loc=user_location())
        tensors.append(Tensor(param, shape, dtype, privilege))
        trace.declare(ir.TensorDecl(param, tuple(shape), dtype, ir.GLOBAL, privilege))
    token = _TRACE.set(trace)
    try:
        entry.fn(*tensors)
    finally:
        _TRACE.reset(token)
    program = ir.Program(entry.name, tuple(trace.tensors.values()), tuple(trace.bodies[0]),
                         tuple(trace.indices.values()))
    return TraceResult(program, frozenset(trace.used_tunables))


# --- elementwise functions on tiles ----------------------------------------------------------------------

def _unary(fn: str, approximate: bool = False):
    def apply(x, **options):
        approx = options.pop("approx", False)
        if options or (approx and not approximate):
            raise _error(f"nt.{fn} takes no options {sorted(options) or ['approx']}", code="bad-tile",
                         hint=f"call nt.{fn}(x); only exp, exp2, log, log2, tanh, sqrt and rsqrt take approx=True")
        if not isinstance(x, (Local, TileRef)):
            raise _error(f"nt.{fn} applies to tiles, got {x!r}", code="bad-tile",
                         hint=f"pass a tile (an argument's tile or tile math), e.g. nt.{fn}(acc)")
        dtype = x.dtype
        name = f"{fn}_approx" if approx else fn
        return _map(name, (x._operand(),), _matrix(x) if isinstance(x, TileRef) else x.shape, dtype)
    apply.__name__ = fn
    apply.__doc__ = f"``{fn}`` of every element of a tile" + (
        "; ``approx=True`` uses PTX's approximate instruction (accuracy: ``nvdsl.frontend.math``)." if approximate
        else ".")
    return apply


relu, gelu, gelu_tanh, silu = (_unary(f) for f in ("relu", "gelu", "gelu_tanh", "silu"))
gelu.__doc__ = "The exact GELU of every element of a tile, ``x * (1 + erf(x / sqrt(2))) / 2`` (torch's default)."
gelu_tanh.__doc__ = ("GELU by its tanh formula, ``x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) / 2``, of every "
                     "element of a tile: torch's ``gelu(approximate='tanh')``, computed with an accurate tanh.")
exp2, log2, tanh = _unary("exp2", True), _unary("log2", True), _unary("tanh", True)
tanh.__doc__ = ("The hyperbolic tangent of every element of a tile (``tanhf``, 2 ulp; ``approx=True``: PTX's "
                "``tanh.approx.f32``, 2^-11 relative): a soft cap on attention's scores, ``cap * nt.tanh(s / cap)``.")
sqrt, rsqrt = _unary("sqrt", True), _unary("rsqrt", True)
sqrt.__doc__ = "The square root of every element of a tile (``approx=True``: PTX's ``sqrt.approx``)."
rsqrt.__doc__ = "``1 / sqrt(x)`` of every element of a tile (``approx=True``: PTX's ``rsqrt.approx``)."

_LOG2_E = 1.4426950408889634
_LN_2 = 0.6931471805599453


def exp(x, **options) -> Local:
    """``e ** x`` of every element of a tile, as ``exp2(x * log2(e))`` (two events: a multiply, then
    :func:`exp2`; ``approx=True`` passes on to it). The product's rounding (half an ulp of ``x * log2(e)``)
    adds ``|x| * log2(e) * 2**-24 * ln 2`` to the result's relative error."""
    return exp2(_as_tile(x, "exp") * _LOG2_E, **options)


def log(x, **options) -> Local:
    """The natural logarithm of every element of a tile, as ``log2(x) * ln(2)`` (:func:`log2`, then a multiply;
    ``approx=True`` passes on to it)."""
    return log2(x, **options) * _LN_2


def _as_tile(x, fn: str) -> Local:
    if not isinstance(x, (Local, TileRef)):
        raise _error(f"nt.{fn} applies to tiles, got {x!r}", code="bad-tile",
                     hint=f"pass a tile (an argument's tile or tile math), e.g. nt.{fn}(acc)")
    if isinstance(x, TileRef):             # an argument's tile: its values, as a computed tile
        return _map("copy", (x._operand(),), _matrix(x), x.dtype)
    return x


def maximum(a, b) -> Local:
    """The larger of two tiles (or a tile and a number), elementwise."""
    return _extremum("maximum", a, b)


def minimum(a, b) -> Local:
    """The smaller of two tiles (or a tile and a number), elementwise."""
    return _extremum("minimum", a, b)


def _extremum(fn: str, a, b) -> Local:
    base = a if isinstance(a, Local) else b
    if not isinstance(base, Local):
        raise _error(f"nt.{fn} needs at least one computed tile", code="bad-tile",
                     hint=f"pass a computed tile as one operand, e.g. nt.{fn}(s, 0.0)")
    other = b if base is a else a
    return _map(fn, (_as_operand(a, base.shape, base.dtype), _as_operand(b, base.shape, base.dtype)),
                base.shape, _promote(base.dtype, other))


#: The functions of ``nvdsl``'s math that apply to tiles in a task program, as the task layer's own.
_NVDSL_MATH = {"exp": exp, "exp2": exp2, "log": log, "log2": log2, "sqrt": sqrt, "rsqrt": rsqrt, "tanh": tanh,
               "maximum": maximum, "minimum": minimum, "where": where}


# --- derivatives of elementwise tile math ---------------------------------------------------------------

def value_and_derivative(fn, x, *args):
    """``(fn(x, *args), d fn(x, *args) / dx)`` for elementwise tile math ``fn`` of the computed tile ``x``.

    The derivative is derived from the events ``fn`` records (forward mode: each event's rule applied to the
    derivatives of its operands), so it is computed, not written: attention's backward differentiates a
    ``score_mod`` this way. ``fn`` may use arithmetic, comparisons, :func:`where`, :func:`maximum`,
    :func:`minimum`, :func:`exp2`, :func:`exp`, :func:`log2`, :func:`log`, :func:`tanh`, :func:`sqrt`,
    :func:`rsqrt`, :func:`relu`, positions and arguments' elements; operands other than ``x`` are constants.
    The derivative is a tile, or, where it does not vary over the tile, what combines with one: a Python number
    (``1.0`` for ``x + c``), a scalar or a broadcast vector.
    """
    trace = _current("nt.value_and_derivative")
    if not isinstance(x, Local) or not x.dtype.is_float or len(x.shape) != 2:
        raise _error(f"nt.value_and_derivative differentiates with respect to a computed float tile, got {x!r}",
                     code="bad-tile", hint="pass a 2-D float tile computed by tile math, e.g. s = acc * scale")
    body = trace.bodies[-1]
    start = len(body)
    y = fn(x, *args)
    if not isinstance(y, Local) or y.shape != x.shape or not y.dtype.is_float:
        raise _error(f"nt.value_and_derivative: {getattr(fn, '__name__', fn)} returned {y!r}; it must return a float "
                     f"tile of the shape of its argument, {list(x.shape)}", code="bad-tile",
                     hint="return elementwise tile math of the argument, e.g. lambda s: cap * nt.tanh(s / cap)")
    events = body[start:]
    tangents: dict[str, object] = {x.name: 1.0}     # derivatives: None (zero), numbers, or tile math operands
    for op in events:
        if isinstance(op, ir.Map):
            tangent = _tangent(trace, op, tangents)
            if tangent is not None:
                tangents[op.out] = tangent
        elif any(name in tangents for name in map(_name_of, op.reads())):
            raise TaskError(f"nt.value_and_derivative: {op} is not elementwise; only elementwise tile math is "
                            "differentiated", code="bad-tile",
                            hint="use only elementwise tile math in the function: arithmetic, where, maximum, "
                                 "minimum, exp2, log2, tanh, sqrt", loc=op.loc)
    derivative = tangents.get(y.name)
    return y, 0.0 if derivative is None else derivative


def _name_of(x):
    return x if isinstance(x, str) else x.tensor if isinstance(x, Broadcast) and isinstance(x.tensor, str) else None


def _tangent(trace: _Trace, op: ir.Map, tangents: dict):
    """The derivative of ``op``'s result (None: zero) from its operands' derivatives."""
    def operand(x):
        if isinstance(x, str):
            decl = trace.tensors[x]
            return Local(x, decl.shape, decl.dtype)
        if isinstance(x, Broadcast):
            decl = trace.tensors[x.tensor]
            return _BroadcastOperand(x.tensor, x.axis, decl.shape[0], decl.dtype)
        return x

    inputs = [tangents.get(x) if isinstance(x, str) else None for x in op.inputs]
    if all(t is None for t in inputs) or trace.tensors[op.out].dtype == dt.bool_:
        return None
    a_t, b_t = (inputs + [None])[:2]
    args = [_as_float(operand(x)) for x in op.inputs]
    out, fn = operand(op.out), op.fn.removesuffix("_approx")
    if fn in ("copy", "cast"):
        return a_t
    if fn == "add":
        return _plus(a_t, b_t)
    if fn == "sub":
        return _plus(a_t, _times(b_t, -1.0))
    if fn == "mul":
        return _plus(_times(a_t, args[1]), _times(b_t, args[0]))
    if fn == "div":      # (a' - out b') / b
        return _times(_plus(a_t, _times(_times(b_t, out), -1.0)), 1.0 / args[1])
    if fn in ("maximum", "minimum"):
        first = (args[0] >= args[1]) if fn == "maximum" else (args[0] <= args[1])
        return _select(first, a_t, b_t, out)
    if fn == "where":
        return _select(args[0], inputs[1], inputs[2], out)
    if fn == "relu":
        return _select(args[0] > 0.0, a_t, None, out)
    factor = {"exp2": lambda: out * _LN_2, "log2": lambda: 1.0 / (args[0] * _LN_2),
              "tanh": lambda: 1.0 - out * out, "sqrt": lambda: 0.5 / out,
              "rsqrt": lambda: out * out * out * -0.5}.get(fn)
    if factor is None:
        raise TaskError(f"nt.value_and_derivative: no derivative rule for '{op.fn}' ({op})", code="bad-tile",
                        hint="write the function with arithmetic, where, maximum, minimum, exp2, log2, tanh, "
                             "sqrt or rsqrt", loc=op.loc)
    return _times(a_t, factor())


def _as_float(x):
    return x.astype(dt.float32) if isinstance(x, Local) and x.dtype.is_int else x


def _times(t, factor):
    """A derivative ``t`` (None: zero) times ``factor``: numbers multiply as numbers, and a number times tile math
    is that tile math times the number (no tile of the number is made)."""
    if t is None:
        return None
    if isinstance(t, (int, float)):
        if t == 1.0:
            return factor
        return t * factor
    return t * factor


def _plus(a, b):
    if a is None or b is None:
        return b if a is None else a
    return b + a if isinstance(a, (int, float)) else a + b


def _select(condition, a, b, like: Local):
    """``where(condition, a, b)`` of two derivatives (None: zero)."""
    a, b = (0.0 if t is None else t for t in (a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b:
        return a or None
    inputs = (_as_operand(condition, like.shape), _as_operand(a, like.shape, dt.float32),
              _as_operand(b, like.shape, dt.float32))
    return _map("where", inputs, like.shape, dt.float32)
