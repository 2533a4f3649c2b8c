"""The task layer's event IR: small frozen records that every pass reads and returns anew.

A :class:`Program` is what tracing a tile program gives (see ``program.py``): loops (``prange`` and
``srange``) around operations (fill, copy, mma, elementwise map, reduction). Every operation is an
*event* in Cypress's sense: it has an id and the ids of the events it must follow (``deps``), which
dependence analysis fills in. Regions of tensors are addressed by affine expressions of the loop
variables, so a pass can tell which tile an operation touches in any iteration.

Everything here prints as text (:func:`format_program`); the golden tests compare that text.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from .. import dtypes as dt
from ..errors import SourceLocation

# Memories a tensor can live in (Cypress): NONE is never materialized whole at that level.
GLOBAL, SHARED, REGISTER, NONE = "global", "shared", "register", "none"
MEMORIES = (GLOBAL, SHARED, REGISTER, NONE)


@dataclass(frozen=True)
class Affine:
    """``const + sum(coefficient * variable)`` over loop variables: a tile's origin along one axis."""

    terms: tuple[tuple[str, int], ...] = ()
    const: int = 0

    @staticmethod
    def of(value) -> "Affine":
        if isinstance(value, Affine):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return Affine((), value)
        raise TypeError(f"{value!r} is not an affine index")

    @staticmethod
    def var(name: str) -> "Affine":
        return Affine(((name, 1),), 0)

    def coefficient(self, name: str) -> int:
        return dict(self.terms).get(name, 0)

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(v for v, _ in self.terms)

    def __add__(self, other) -> "Affine":
        other = Affine.of(other)
        merged = dict(self.terms)
        for v, c in other.terms:
            merged[v] = merged.get(v, 0) + c
        return Affine(tuple(sorted((v, c) for v, c in merged.items() if c)), self.const + other.const)

    __radd__ = __add__

    def __neg__(self) -> "Affine":
        return self * -1

    def __sub__(self, other) -> "Affine":
        return self + Affine.of(other) * -1

    def __rsub__(self, other) -> "Affine":
        return Affine.of(other) + self * -1

    def __mul__(self, factor) -> "Affine":
        if not isinstance(factor, int) or isinstance(factor, bool):
            raise TypeError("an affine index can only be scaled by a Python int")
        return Affine(tuple((v, c * factor) for v, c in self.terms if c * factor), self.const * factor)

    __rmul__ = __mul__

    def __str__(self) -> str:
        parts = [v if c == 1 else f"{v}*{c}" for v, c in self.terms]
        if self.const or not parts:
            parts.append(str(self.const))
        return "+".join(parts).replace("+-", "-")


@dataclass(frozen=True)
class Region:
    """A box of a tensor: ``shape`` elements from ``origin`` (one affine index per axis of the tensor).

    ``transposed`` marks a 2-D box used as its transpose (a K-major matrix operand). ``end``: for a
    tile of a row tile table (``nt.row_tiles``), the row where its group ends; rows from there on are
    not the tile's (a store writes none of them).
    """

    tensor: str
    origin: tuple[Affine, ...]
    shape: tuple[int, ...]
    transposed: bool = False
    end: Affine | None = None
    rank: int = 0

    @property
    def matrix_shape(self) -> tuple[int, ...]:
        """The shape without leading axes of extent 1 (a batch or row index), transposed if marked: a
        (1, 128, 64) box is a (128, 64) matrix, a (1, 128) box a vector of 128, unless ``rank`` keeps that many
        last axes (a (1, 128) box read or written as a tile of one row: rank 2)."""
        shape = list(self.shape)
        while len(shape) > max(self.rank, 1) and shape[0] == 1:
            shape.pop(0)
        return tuple(shape[::-1]) if self.transposed else tuple(shape)

    def as_tile_of(self, shape: tuple[int, ...]) -> "Region | None":
        """This box as a tile of ``shape`` where its last axes are that shape and the axes before them of extent 1
        (a (1, 128) box as a tile of one row); else None."""
        shape = tuple(shape)
        if self.transposed or len(shape) > len(self.shape) or tuple(self.shape[len(self.shape) - len(shape):]) != \
                shape or any(e != 1 for e in self.shape[:len(self.shape) - len(shape)]):
            return None
        return self if self.matrix_shape == shape else replace(self, rank=len(shape))

    def __str__(self) -> str:
        axes = ", ".join(f"{o}:+{s}" for o, s in zip(self.origin, self.shape))
        end = f" rows < {self.end}" if self.end is not None else ""
        return f"{self.tensor}[{axes}{end}]" + (".T" if self.transposed else "")


@dataclass(frozen=True)
class TensorDecl:
    """A tensor of the program: an argument (in GLOBAL memory) or a local tile (memory from the mapping)."""

    name: str
    shape: tuple[int, ...]
    dtype: dt.DType
    memory: str
    privilege: str = ""          # arguments: "read", "write" or "reduce"

    def __str__(self) -> str:
        text = f"{self.name}: {self.dtype.name}{list(self.shape)} {self.memory}"
        return text + (f" ({self.privilege})" if self.privilege else "")


@dataclass(frozen=True)
class Broadcast:
    """A vector operand of an elementwise map, repeated along ``axis`` of the result (0: a row vector
    repeated down the rows, 1: a column vector repeated across the columns). ``tensor`` is a local's
    name, or before copy insertion an argument's Region."""

    tensor: object
    axis: int

    def __str__(self) -> str:
        return f"{self.tensor}[None, :]" if self.axis == 0 else f"{self.tensor}[:, None]"


# An operand: a local tensor's name, a Region of an argument, a Broadcast, or a Python number.
Operand = object


def _operand_text(x) -> str:
    return repr(x) if isinstance(x, float) else f"({x})" if isinstance(x, Affine) and len(x.terms) > 1 else str(x)


@dataclass(frozen=True)
class Op:
    """An event: one operation with its id, the events it must follow, the user's line, and the task it was
    written in (``task``: the chain of launches that reached it, the entry task first)."""

    id: int
    deps: frozenset = field(default=frozenset(), kw_only=True)
    loc: SourceLocation | None = field(default=None, kw_only=True, compare=False)
    task: tuple[str, ...] = field(default=(), kw_only=True, compare=False)

    def reads(self) -> tuple:
        return ()

    def writes(self) -> tuple:
        return ()

    def _deps_text(self) -> str:
        return " {" + ", ".join(f"e{d}" for d in sorted(self.deps)) + "}" if self.deps else ""


@dataclass(frozen=True)
class Fill(Op):
    target: str
    value: float

    def writes(self):
        return (self.target,)

    def __str__(self):
        return f"e{self.id} = fill {self.target} {self.value!r}{self._deps_text()}"


@dataclass(frozen=True)
class Copy(Op):
    """Move a tile: from an argument's region into a local tensor, or from a local tensor into one;
    ``accumulate``: add the local tile into the argument's region (``Ct[i, j] += v``), each element atomically."""

    source: Operand
    target: Operand
    accumulate: bool = False

    def reads(self):
        return (self.source,)

    def writes(self):
        return (self.target,)

    def __str__(self):
        verb = "add" if self.accumulate else "copy"
        return f"e{self.id} = {verb} {self.source} -> {self.target}{self._deps_text()}"


@dataclass(frozen=True)
class Mma(Op):
    """``acc += a @ b`` on the tensor cores; ``transpose_b``: ``b`` holds B's transpose (K-major B);
    ``transpose_a``: ``a`` holds A's transpose (M-major A, 16-bit types)."""

    acc: str
    a: Operand
    b: Operand
    transpose_b: bool = False
    transpose_a: bool = False

    def reads(self):
        return (self.acc, self.a, self.b)

    def writes(self):
        return (self.acc,)

    def __str__(self):
        b = f"{self.b}.T" if self.transpose_b and not isinstance(self.b, Region) else str(self.b)
        a = f"{self.a}.T" if self.transpose_a and not isinstance(self.a, Region) else str(self.a)
        return f"e{self.id} = mma {self.acc} += {a} @ {b}{self._deps_text()}"


@dataclass(frozen=True)
class Map(Op):
    """``out = fn(*inputs)`` elementwise (inputs: tensors, broadcast vectors, numbers, affine indices);
    ``fn`` names the function (add, sub, mul, div, maximum, minimum, relu, gelu, gelu_tanh, silu, exp2, exp2_approx,
    log2, log2_approx, sqrt(_approx), rsqrt(_approx), cast, copy, lt, le, gt, ge, and, where)."""

    out: str
    fn: str
    inputs: tuple
    unless: "Within | None" = field(default=None, kw_only=True)    # a where: skipped in the steps it holds

    def reads(self):
        return tuple(x for x in self.inputs if not isinstance(x, (int, float, Affine)))

    def writes(self):
        return (self.out,)

    def __str__(self):
        args = ", ".join(_operand_text(x) for x in self.inputs)
        unless = f" unless {self.unless}" if self.unless is not None else ""
        return f"e{self.id} = {self.out} = {self.fn}({args}){unless}{self._deps_text()}"


@dataclass(frozen=True)
class Within:
    """``low <= index < high`` (affine, indices read on the GPU included): where a mask is known to keep
    everything, its ``where`` is skipped (:func:`nvdsl.tasks.where`'s ``unless=``)."""

    index: Affine
    low: Affine
    high: Affine

    def __str__(self) -> str:
        return f"{self.low} <= {self.index} < {self.high}"


@dataclass(frozen=True)
class Iota(Op):
    """``out = start + [0, 1, ..., length - 1]``: an int32 vector of positions (rows or columns of a tile,
    for masks); ``start`` is affine in the loop variables."""

    out: str
    start: Affine
    length: int

    def writes(self):
        return (self.out,)

    def __str__(self):
        return f"e{self.id} = {self.out} = iota({self.start}, +{self.length}){self._deps_text()}"


@dataclass(frozen=True)
class Reduce(Op):
    """``out (+)= fn(input, axis)``: a sum or max along one axis, accumulated into ``out`` when ``into``."""

    out: str
    fn: str
    input: Operand
    axis: int
    into: bool = False

    def reads(self):
        return (self.input,) + ((self.out,) if self.into else ())

    def writes(self):
        return (self.out,)

    def __str__(self):
        verb = "+=" if self.into else "="
        return f"e{self.id} = {self.out} {verb} {self.fn}({self.input}, axis={self.axis}){self._deps_text()}"


@dataclass(frozen=True)
class Gather(Op):
    """``out[r] = tensor[rows + r, index[r]]`` for each ``r`` of the vector ``index`` (an int32 vector over a
    tile's rows, read or computed on the GPU): one element of each row at a column known only there (a row's
    target logit), read by ordinary loads; 0 where the row or the column is outside the tensor. The tensor
    is read-only in the task (the program refuses a gather from one it writes), so no other event orders it."""

    out: str
    tensor: str
    rows: Affine
    index: Operand

    def reads(self):
        return (self.index,)

    def writes(self):
        return (self.out,)

    def __str__(self):
        return f"e{self.id} = {self.out} = {self.tensor}[{self.rows} + r, {self.index}[r]]{self._deps_text()}"


@dataclass(frozen=True)
class FirstColumn(Op):
    """``out += input[:, 0]`` for a tile whose columns all hold the same values (a product with a tile of
    ones holds its A's row sums in every column): each thread reads its own first column of each row, so
    no value moves between threads."""

    out: str
    input: str

    def reads(self):
        return (self.input, self.out)

    def writes(self):
        return (self.out,)

    def __str__(self):
        return f"e{self.id} = {self.out} += {self.input}[:, 0]{self._deps_text()}"


@dataclass(frozen=True)
class Loop:
    """``prange`` (parallel: iterations must not write the same data) or ``srange`` (in order) over ``vars``.

    An srange with ``below`` runs only its iterations ``k`` with ``k * step < below`` (``below`` affine in
    the enclosing prange's variables and in indices read from tables, :class:`Index`): a triangular loop, such
    as causal attention's key blocks, or a range read on the GPU (a negative ``below`` runs none). ``task``:
    the chain of launches of the task that wrote the loop, as an event's."""

    kind: str
    vars: tuple[str, ...]
    extents: tuple[int, ...]
    body: tuple
    loc: SourceLocation | None = field(default=None, compare=False)
    below: Affine | None = None
    step: int = 1
    task: tuple[str, ...] = field(default=(), kw_only=True, compare=False)

    def __str__(self):
        bound = f" while {self.vars[0]}*{self.step} < {self.below}" if self.below is not None else ""
        return f"{self.kind} " + ", ".join(f"{v} < {e}" for v, e in zip(self.vars, self.extents)) + bound


@dataclass(frozen=True)
class Index:
    """An index read from memory: element ``at`` (one index per axis, affine in prange variables) of the
    int32 ``table`` argument, read on the GPU once per tile by each role that uses it. ``role`` says what a
    row tile's index is ("group", "start" or "end" of row tile ``var``; ``nt.row_tiles``), or is "" for
    ``nt.load_index``. ``name`` is the variable affine expressions use for it."""

    name: str
    table: str
    at: tuple[Affine, ...]
    role: str = ""

    @property
    def var(self) -> str:
        """A row tile's prange variable: the row of the table its index is read from."""
        return self.at[0].variables[0]

    def __str__(self) -> str:
        text = f"index {self.name} = {self.table}[{', '.join(map(str, self.at))}]"
        return text + (f" ({self.role} of row tile {self.var})" if self.role else "")


@dataclass(frozen=True)
class Program:
    """A traced tile program: its tensors (arguments first), its body, and the indices it reads from tables."""

    name: str
    tensors: tuple[TensorDecl, ...]
    body: tuple
    indices: tuple[Index, ...] = ()

    def tensor(self, name: str) -> TensorDecl:
        for t in self.tensors:
            if t.name == name:
                return t
        raise KeyError(name)

    def with_body(self, body, tensors=None) -> "Program":
        return replace(self, body=tuple(body), tensors=self.tensors if tensors is None else tuple(tensors))


def walk(body, loops=()):
    """Every operation of ``body`` with the loops around it, outermost first."""
    for node in body:
        if isinstance(node, Loop):
            yield from walk(node.body, loops + (node,))
        else:
            yield node, loops


def argument_loads(ops) -> list[Copy]:
    """The copies among ``ops`` of an argument's region into a local tile: the loads a ring carries."""
    return [op for op in ops if isinstance(op, Copy) and isinstance(op.source, Region) and isinstance(op.target, str)]

def format_program(program: Program) -> str:
    lines = [f"program {program.name}"]
    for t in program.tensors:
        lines.append(f"  tensor {t}")
    for index in program.indices:
        lines.append(f"  {index}")

    def emit(body, indent):
        for node in body:
            if isinstance(node, Loop):
                lines.append(" " * indent + str(node))
                emit(node.body, indent + 2)
            else:
                lines.append(" " * indent + str(node))
    emit(program.body, 2)
    return "\n".join(lines) + "\n"
