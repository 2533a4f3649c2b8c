"""Passes that place a tile program on the GPU: roles and rings, the consumers' split, pipelining,
shared-memory allocation, the epilogue, persistence. Their product is a :class:`Schedule`, which
``emit.py`` turns into calls of the primitives and :func:`explain` prints.

The programs scheduled here have the shape of the GEMM family: one ``prange`` over output tiles whose
body has operations before (the prologue), at most one ``srange`` loop, and operations after it (the
epilogue). Anything else is refused with a :class:`~nvdsl.errors.TaskError` saying what is not supported.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import dtypes as dt
from ..errors import MappingError, TaskError, user_location
from . import ir
from .analysis import operand_name, with_dependences
from .ir import SHARED, Broadcast, Copy, Fill, FirstColumn, Loop, Map, Mma, Program, Reduce, Region
from .mapping import BLOCK, COOPERATIVE, HOST, PINGPONG, WARPGROUP, Mapping, check_registers, derive_registers

TILE_ALIGNMENT = 1024                 # ring tiles and staging buffers: 128-byte swizzled TMA tiles
TURN_BARRIER = 10                     # named barriers 10, 11, ...: consumer c's turn at the tensor cores is 10 + c
STAGING_BYTES = 16 * 1024             # per consumer: the epilogue writes the output in slices of this size
MAX_DEPTH = 8
OVERHEAD_REGISTERS = 40               # a consumer's registers besides its accumulators (addresses, loop state)
MMA_ROWS = 64                         # wgmma's M
_MMA_DTYPES = (dt.float16, dt.bfloat16, dt.float8_e4m3fn, dt.float8_e5m2)


@dataclass(frozen=True)
class RingTile:
    """One tile of a ring's slot: the local it fills, the argument region it is copied from, its TMA box."""

    local: str
    source: Region
    dtype: dt.DType
    box: tuple[int, ...]
    swizzle: int
    offset: int

    @property
    def shape(self) -> tuple[int, ...]:
        return self.source.shape

    @property
    def nbytes(self) -> int:
        n = self.dtype.itemsize
        for s in self.source.shape:
            n *= s
        return n


@dataclass(frozen=True)
class RingPlan:
    """A ring between the producer and the consumers: ``per`` is "step" (once per srange iteration) or
    "tile" (once per output tile); ``phase`` is "a" or "b" for the rings of a two-phase loop; ``in_turn``:
    the consumers take its slots in turn (ping-pong), each slot read and released by one of them."""

    name: str
    per: str
    depth: int
    tiles: tuple[RingTile, ...]
    slot_bytes: int
    producer: str
    consumers: tuple[str, ...]
    offset: int = 0
    phase: str = ""
    in_turn: bool = False

    @property
    def empty_arrivals(self) -> int:
        """Arrivals that release a slot: one per consumer warpgroup reading it."""
        return 1 if self.in_turn else len(self.consumers)


@dataclass(frozen=True)
class Unmasked:
    """The first steps of a main loop in which the masks of ``wheres`` (ids of ``where`` events) hold
    everywhere, so those selects can be left out: steps ``k < min(R // d + 1 for (R, d) in bounds)``, 0 where
    an ``R`` is negative (``R`` affine in the tile's variables)."""

    wheres: frozenset
    bounds: tuple[tuple[ir.Affine, int], ...]


@dataclass(frozen=True)
class Phases:
    """A main loop of two phases (attention's): phase A issues a product (``issue``, e.g. ``S = Q Kᵀ``) and
    then does math on it (``math``, the softmax); phase B (``second``) updates an accumulator from A's
    results (``O *= alpha; O += P V``). Step ``k`` issues A's product, then phase B of step ``k - 1``,
    then A's math while B's product runs: ``handed`` are the values A passes to B a step later."""

    issue: tuple
    math: tuple
    second: tuple
    handed: tuple[str, ...]


@dataclass(frozen=True)
class Buffer:
    """A region of shared memory with the phases it is live in (0: main loop, 1: epilogue)."""

    name: str
    nbytes: int
    lifetime: tuple[int, int]
    offset: int = 0
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class StorePlan:
    """An epilogue store: a local tile to an argument region, through a staging tile and TMA."""

    source: str
    target: Region
    dtype: dt.DType
    box: tuple[int, ...]
    slice_columns: int
    staging: tuple[str, ...]          # one buffer per consumer
    in_tile: str = ""                 # or: each consumer's rows of this tile ring tile, whose reads have retired


@dataclass(frozen=True)
class OnesTile:
    """A tile of ones in shared memory, written by every thread once per block and fenced for the async
    proxy: the K-major B operand (``shape`` (8, K)) of the products that sum rows on the tensor cores
    (``sums``: what each replaced, as text)."""

    name: str
    shape: tuple[int, int]
    dtype: dt.DType
    sums: tuple[str, ...]

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.shape[1] * self.dtype.itemsize


@dataclass(frozen=True)
class Joined:
    """Two products of the main loop that share their A tile and whose B tiles lie side by side in a ring
    slot (a dual GEMM's ``gate += A @ W1; up += A @ W2``), issued as one product of N = N1 + N2 into one
    accumulator whose first N1 columns are ``accumulators[0]`` and the rest ``accumulators[1]``: A is read
    once per K step and the wgmma instructions halve. ``axis``: the axis along which the B tiles join (1 for
    (K, N) tiles, 0 for K-major (N, K) ones)."""

    products: tuple[int, int]
    accumulators: tuple[str, str]
    columns: tuple[int, int]
    b_tiles: tuple[str, str]
    axis: int


@dataclass(frozen=True, kw_only=True)
class Schedule:
    """Everything emission needs to trace the kernel (it reads nothing else): the program, where its tasks
    run, its rings, shared memory and stores, and how blocks walk the tiles. ``mapping`` (the user's, with
    the schedule the levels derive) is kept for :func:`explain` and callers, never read by emission."""

    program: Program
    mapping: Mapping
    levels: tuple
    tile_vars: tuple[str, ...]
    tile_extents: tuple[int, ...]
    split: frozenset                    # tensors whose rows the cooperative consumers share out
    rows: int                           # rows of those tensors per consumer
    consumers: int
    pingpong: bool                      # consumers take whole tiles alternately (else they share each tile's rows)
    turns: bool                         # consumers take turns at the tensor cores (named barriers)
    warp_specialized: bool
    registers: tuple
    accumulator_registers: int          # per consumer thread, of its register budget
    rings: tuple[RingPlan, ...]
    prologue: tuple
    main: Loop | None
    epilogue: tuple
    in_flight: int
    lookahead: int
    phases: Phases | None
    unmasked: Unmasked | None
    stores: tuple[StorePlan, ...]
    buffers: tuple[Buffer, ...]
    smem_bytes: int
    ones: tuple[OnesTile, ...] = ()
    joined: tuple[Joined, ...] = ()
    grid: int
    persistent: bool                    # blocks loop over tiles (else one block per tile, or pair of tiles)
    raster: str                         # the order persistent blocks walk the tiles in
    group: int                          # tile rows per group of the "grouped" order
    tiles_per_block: str
    notes: tuple[str, ...] = ()

    @property
    def roles(self) -> tuple[str, ...]:
        return (("producer",) if self.warp_specialized else ()) + tuple(f"consumer{c}" for c in range(self.consumers))

    @property
    def block_threads(self) -> int:
        return 128 * len(self.roles)

    def ring(self, per: str, consumer: int = 0, phase: str = "") -> RingPlan | None:
        """The ring filled once per ``per`` ("step" or "tile") that ``consumer`` reads (ping-pong consumers
        each have their own tile ring); of a two-phase loop's step rings, the one of ``phase``."""
        for r in self.step_rings(consumer) if per == "step" else self.rings:
            if r.per == per and (len(r.consumers) > 1 or r.consumers == (f"consumer{consumer}",)) and \
                    (not phase or r.phase == phase):
                return r
        return None

    def in_tile_ring(self, op) -> bool:
        """Whether ``op`` is a load that a ring filled once per tile carries."""
        return isinstance(op, Copy) and any(t.local == op.target for r in self.rings if r.per == "tile"
                                            for t in r.tiles)

    def step_rings(self, consumer: int = 0) -> list[RingPlan]:
        """The rings filled once per srange step that ``consumer`` reads, in the order the producer fills them."""
        return [r for r in self.rings if r.per == "step" and
                (len(r.consumers) > 1 or r.consumers == (f"consumer{consumer}",))]


def _refuse(message: str, hint: str | None = None, loc=None) -> TaskError:
    return TaskError(message, code="unsupported-program", hint=hint, loc=loc or user_location())


def _shape_of(program: Program):
    """(prange loop, prologue ops, srange loop or None, epilogue ops), or a refusal."""
    body = program.body
    if len(body) != 1 or not isinstance(body[0], Loop) or body[0].kind != "prange":
        raise _refuse("a task program is scheduled as one prange over output tiles at its top level; this one "
                      "has " + ", ".join(type(n).__name__ for n in body),
                      hint="wrap the work in `for i, j in nt.prange(...)`")
    tiles = body[0]
    if len(tiles.vars) > 4:
        raise _refuse(f"a prange over {len(tiles.vars)} axes: the task layer schedules at most 4 (batch axes, "
                      "rows, columns)", loc=tiles.loc)
    prologue, main, epilogue = [], None, []
    for node in tiles.body:
        if isinstance(node, Loop):
            if node.kind != "srange" or main is not None or any(isinstance(n, Loop) for n in node.body):
                raise _refuse("inside the prange, the task layer schedules one srange loop without nested loops",
                              loc=node.loc)
            main = node
        elif main is None:
            prologue.append(node)
        else:
            epilogue.append(node)
    return tiles, tuple(prologue), main, tuple(epilogue)


TILE_BODY, PRODUCTS = "tile body", "mma"     # the names of a tile's work and its products left in a caller


def _common_chain(chains) -> tuple[str, ...]:
    """The longest chain of launches that every one of ``chains`` starts with."""
    chains = list(chains)
    common = chains[0]
    for chain in chains[1:]:
        n = 0
        while n < min(len(common), len(chain)) and common[n] == chain[n]:
            n += 1
        common = common[:n]
    return common


def resolve_levels(program: Program, mapping: Mapping) -> tuple[tuple, Mapping, str]:
    """The processor level of each task the mapping can set, the mapping with the schedule they derive, and
    how that schedule was said (for refusals).

    Three parts of a program take a level, named as :func:`explain` prints them: the task holding the prange
    over output tiles (``"host"`` only, as every task it was launched from); the task running one output tile,
    the deepest task that every event of the prange's body was written in, if it was launched inside the
    prange (else the ``"tile body"`` of the prange's task), at ``"block"`` (cooperative) or ``"warpgroup"``
    (ping-pong); and the task issuing the products, the deepest task that every product was written in, if
    launched inside the tile's task (else ``"mma"``), at ``"warpgroup"`` only."""
    tiles = _shape_of(program)[0]
    around = tiles.task or (program.name,)
    inside = [node.task for node in tiles.body] + [op.task for op, _ in ir.walk(tiles.body)]
    tile_chain = _common_chain([c for c in inside if c] or [around])
    tile = tile_chain[-1] if len(tile_chain) > len(around) else TILE_BODY
    product_chains = [op.task for op, _ in ir.walk(tiles.body) if isinstance(op, Mma) and op.task]
    product_chain = _common_chain(product_chains) if product_chains else ()
    products = product_chain[-1] if len(product_chain) > len(tile_chain) else PRODUCTS
    roles: dict[str, set] = {}
    for name in around:
        roles.setdefault(name, set()).add(HOST)
    roles.setdefault(tile, set()).add("tile")
    roles.setdefault(products, set()).add("products")
    for op, _ in ir.walk(program.body):
        for name in op.task:
            roles.setdefault(name, set())
    given = dict(mapping.levels)

    def refuse(message: str, hint: str | None = None) -> MappingError:
        return MappingError(message, code="mapping-level", hint=hint, loc=user_location())

    for name, level in mapping.levels:
        if name not in roles:
            raise refuse(f"levels['{name}']: the program has no task '{name}'; the names its levels take are " +
                         ", ".join(f"'{n}'" for n in roles if roles[n]))
        said = f"levels['{name}']={level!r}"
        if not roles[name]:
            raise refuse(f"{said}: task '{name}' is part of the work of a tile and runs at the level of '{tile}'",
                         hint=f"levels name '{around[-1]}' (host), '{tile}' (block or warpgroup) and '{products}' "
                              "(warpgroup)")
        if HOST in roles[name] and level != HOST:
            holds = "holds" if name == around[-1] else "launches the task holding"
            raise refuse(f"{said}: task '{name}' {holds} the prange over output tiles, which only the host can "
                         "launch (one tile per block)")
        if "tile" in roles[name] and level == HOST:
            raise refuse(f"{said}: task '{name}' runs one output tile, on a block: at 'block' its consumer "
                         "warpgroups share the tile's rows, at 'warpgroup' each of them runs whole tiles (a ping-pong)")
        if "products" in roles[name] and level != WARPGROUP:
            raise refuse(f"{said}: task '{name}' issues the tile products, and wgmma is a warpgroup instruction: it "
                         "runs at 'warpgroup' only")
    derived = {WARPGROUP: PINGPONG, BLOCK: COOPERATIVE}.get(given.get(tile))
    if derived is not None and mapping.schedule not in (None, derived):
        raise refuse(f"schedule={mapping.schedule!r} but levels['{tile}']={given[tile]!r}: a tile's task at "
                     f"{given[tile]!r} makes a {derived!r} schedule", hint="leave schedule out: it follows the levels")
    if mapping.schedule is None:
        mapping = mapping._with_schedule(derived or COOPERATIVE)
    stated = f"levels['{tile}']={given[tile]!r}" if derived else f"schedule={mapping.schedule!r}"
    tile_level = WARPGROUP if mapping.schedule == PINGPONG else BLOCK
    levels = tuple((name, HOST) for name in around) + ((tile, tile_level), (products, WARPGROUP))
    return levels, mapping, stated


def _loads(ops) -> list[Copy]:
    return [op for op in ops if isinstance(op, Copy) and isinstance(op.source, Region) and isinstance(op.target, str)]


def _tensor(program: Program, name: str) -> ir.TensorDecl:
    return program.tensor(name)


def _split_tensors(program: Program, ops, schedule: str) -> frozenset:
    """The tensors whose rows cooperative consumers share out: every accumulator, and what follows its rows."""
    if schedule == PINGPONG:
        return frozenset()
    split = set()
    whole = set()
    for op in ops:
        if isinstance(op, Mma):
            split.update((op.acc, operand_name(op.a)))
            whole.add(operand_name(op.b))
    changed = True
    while changed:
        changed = False
        for op in ops:
            new = set()
            if isinstance(op, Map):
                full = [x for x in op.inputs if isinstance(x, str)]
                columns = [x.tensor for x in op.inputs if isinstance(x, Broadcast) and x.axis == 1]
                if op.out in split or any(x in split for x in full + columns):
                    new.update([op.out] + full + columns)
            elif (isinstance(op, Reduce) and op.axis == 1) or isinstance(op, FirstColumn):
                if op.out in split or operand_name(op.input) in split:
                    new.update((op.out, operand_name(op.input)))
            elif isinstance(op, Reduce) and op.axis == 0 and operand_name(op.input) in split:
                raise _refuse(f"{op}: a sum down the columns of a tile whose rows the consumer warpgroups share out "
                              "needs the warpgroups to combine their parts", loc=op.loc,
                              hint="map with consumers=1 or schedule='pingpong'")
            if not new <= split:
                split |= new
                changed = True
    both = split & whole
    if both:
        raise _refuse(f"{sorted(both)} would be both split by rows among the consumers (as an accumulator's rows or "
                      "an A operand) and needed whole (as a B operand)")
    return frozenset(split)


def _check_trips(tiles: Loop, main: Loop | None) -> None:
    """An srange with ``below`` must run at least once for every tile (a two-phase loop issues its first
    step before the loop): ``below`` is affine in the prange's variables, and its least value over the
    tiles must be positive."""
    if main is None or main.below is None:
        return
    extents = dict(zip(tiles.vars, tiles.extents))
    unknown = [v for v in main.below.variables if v not in extents]
    if unknown:
        raise _refuse(f"nt.srange(below={main.below}) depends on {unknown}; below= is affine in the prange's "
                      "variables", loc=main.loc)
    least = main.below.const + sum(c * (extents[v] - 1) for v, c in main.below.terms if c < 0)
    if least <= 0:
        raise TaskError(f"nt.srange(below={main.below}) runs no iteration for some tiles (below = {least} there); "
                        "every tile needs at least one step", code="bad-loop",
                        hint="add the tile's own extent, e.g. below=(i + 1) * BM", loc=main.loc)


def _two_phases(program: Program, main: Loop | None, prologue) -> Phases | None:
    """The two phases of a main loop shaped as attention's (see :class:`Phases`), or None: two products, the
    second accumulating into a tile defined before the loop from a register operand computed in the loop
    (and rescaled in place), the first into a tile filled in the loop; nothing else reads the second's
    accumulator in the loop, and each load feeds one phase."""
    if main is None:
        return None
    body = [op for op in main.body if op not in _loads(main.body)]
    mmas = [op for op in body if isinstance(op, Mma)]
    if len(mmas) != 2:
        return None
    first, second = mmas
    defined_before = {op.target for op in prologue if isinstance(op, Fill)}
    fills = {op.target: op for op in body if isinstance(op, Fill)}
    a_local = operand_name(second.a)
    if second.acc not in defined_before or first.acc not in fills or \
            program.tensor(a_local).memory == SHARED or isinstance(second.a, Region):
        return None
    b_ops = [op for op in body if op is second or (isinstance(op, Map) and op.out == second.acc)]
    a_ops = [op for op in body if op not in b_ops]
    if any(second.acc in {operand_name(x) for x in op.reads()} for op in a_ops):
        return None
    loads = {op.target for op in _loads(main.body)}
    read_by = lambda ops: {operand_name(x) for op in ops for x in op.reads()} & loads   # noqa: E731
    if read_by(a_ops) & read_by(b_ops) or body.index(first) > body.index(second):
        return None
    issue = (fills[first.acc], first)
    math = tuple(op for op in a_ops if op not in issue)
    written_in_a = {name for op in a_ops for name in map(operand_name, op.writes())}
    handed = sorted({operand_name(x) for op in b_ops for x in op.reads()} & written_in_a)
    return Phases(issue, math, tuple(b_ops), tuple(handed))


def _unmasked(main: Loop | None, ops) -> Unmasked | None:
    """Where every mask of the main loop's ``where`` events (a ``where`` whose condition is computed from
    positions, ``nt.arange``) compares positions with positions or indices, the steps for which all of them
    hold: while a block of keys lies wholly before a causal diagonal or a ragged end, its scores need no mask.
    None if a mask is anything else. A ``where`` on values alone (a running max's) is math, not a mask."""
    if main is None:
        return None
    var = main.vars[0]
    defs = {op.out: op for op in ops if isinstance(op, (Map, ir.Iota))}

    def interval(x):
        """(lowest, highest) of an operand as affine expressions, or None."""
        if isinstance(x, ir.Affine):
            return x, x
        if isinstance(x, (int, float)) and float(x).is_integer():
            return ir.Affine.of(int(x)), ir.Affine.of(int(x))
        op = defs.get(operand_name(x))
        if isinstance(op, ir.Iota):
            return op.start, op.start + (op.length - 1)
        return None

    def bounds(name) -> list | None:
        op = defs.get(operand_name(name))
        if not isinstance(op, Map):
            return None
        if op.fn == "and":
            parts = [bounds(x) for x in op.inputs]
            return None if None in parts else parts[0] + parts[1]
        if op.fn not in ("lt", "le", "gt", "ge"):
            return None
        lhs, rhs = (interval(x) for x in op.inputs)
        if lhs is None or rhs is None:
            return None
        if op.fn in ("gt", "ge"):
            lhs, rhs = rhs, lhs
        margin = rhs[0] + lhs[1] * -1 + (-1 if op.fn in ("lt", "gt") else 0)   # all hold iff margin >= 0
        slope = margin.coefficient(var)
        if slope >= 0:
            return None if slope > 0 else [(margin, 0)]
        rest = ir.Affine(tuple(t for t in margin.terms if t[0] != var), margin.const)
        return [(rest, -slope)]

    def of_positions(x, seen=frozenset()) -> bool:
        """Whether operand ``x`` is computed from positions: a mask, rather than math on values."""
        name = operand_name(x) if isinstance(x, (str, ir.Broadcast)) else None
        op = defs.get(name) if name not in seen else None      # values carried by the loop refer to themselves
        return isinstance(op, ir.Iota) or (isinstance(op, Map) and any(of_positions(i, seen | {name})
                                                                       for i in op.inputs))

    wheres, found = [], []
    for op in ops:
        if isinstance(op, Map) and op.fn == "where" and of_positions(op.inputs[0]):
            b = bounds(op.inputs[0])
            if b is None:
                return None
            wheres.append(op.id)
            found += b
    return Unmasked(frozenset(wheres), tuple(found)) if wheres else None


ONES_COLUMNS = 8                      # wgmma's smallest N: the ones tile's columns, the row sums' accumulator's


def _row_sums_on_tensor_cores(program: Program) -> tuple[Program, tuple[OnesTile, ...]]:
    """Row sums through the tensor cores: where the main loop sums the rows of a 16-bit shared tile that is
    also the A operand of one of its products (``rows += At[i, k].sum(axis=1)`` beside ``acc += At[i, k] @
    ...``), the sum becomes a product with a tile of ones, ``R (rows x 8, float32) += A @ ones (K x 8)``,
    issued in the product's wgmma group, and ``rows += R[:, 0]`` after the loop (every column of R holds
    the sums). The consumers then no longer read A from shared memory between their products. Only sums
    whose result is added into a vector filled before the loop and not otherwise used in the loop qualify;
    the others stay on the CUDA cores."""
    tiles, prologue, main, epilogue = _shape_of(program)
    if main is None or _two_phases(program, main, prologue) is not None:
        return program, ()
    body = list(main.body)
    a_operands = {op.a for op in body if isinstance(op, Mma) and isinstance(op.a, str)}
    filled = {op.target for op in prologue if isinstance(op, Fill)}
    names = {t.name for t in program.tensors}
    tensors = list(program.tensors)
    ones: dict[tuple, OnesTile] = {}
    after = []
    for reduce in [op for op in body if isinstance(op, Reduce)]:
        operand = reduce.input
        if not (reduce.fn == "sum" and reduce.axis == 1 and not reduce.into and operand in a_operands and
                program.tensor(operand).memory == SHARED and program.tensor(operand).dtype in (dt.float16, dt.bfloat16)):
            continue
        users = [op for op in prologue + tuple(body) + epilogue
                 if reduce.out in {operand_name(x) for x in op.reads()}]
        add = users[0] if len(users) == 1 else None
        if not (isinstance(add, Map) and add.fn == "add" and add in body and add.out in filled and
                sorted(add.inputs, key=str) == sorted((add.out, reduce.out), key=str)):
            continue
        total = add.out
        if any(total in {operand_name(x) for x in op.reads() + op.writes()} for op in body if op not in (add,)):
            continue
        t = program.tensor(operand)
        key = (t.dtype, t.shape[-1])
        if key not in ones:
            name = _fresh(names, "ones")
            ones[key] = OnesTile(name, (ONES_COLUMNS, t.shape[-1]), t.dtype, ())
            tensors.append(ir.TensorDecl(name, (ONES_COLUMNS, t.shape[-1]), t.dtype, SHARED))
        tile = ones[key]
        ones[key] = replace(tile, sums=tile.sums + (f"{total} += {reduce.fn}({operand}, axis=1)",))
        accumulator = _fresh(names, f"{total}_sums")
        tensors.append(ir.TensorDecl(accumulator, (t.shape[0], ONES_COLUMNS), dt.float32, ir.REGISTER))
        prologue += (Fill(-1, target=accumulator, value=0.0, loc=reduce.loc, task=reduce.task),)
        product = Mma(-1, acc=accumulator, a=operand, b=tile.name, transpose_b=True, loc=reduce.loc,
                      task=reduce.task)
        last = max(i for i, op in enumerate(body) if isinstance(op, Mma) and op.a == operand)
        body = [op for op in body[:last + 1] + [product] + body[last + 1:] if op not in (reduce, add)]
        after.append(FirstColumn(-1, out=total, input=accumulator, loc=add.loc, task=add.task))
    if not ones:
        return program, ()
    loop = replace(tiles, body=prologue + (replace(main, body=tuple(body)),) + tuple(after) + epilogue)
    return with_dependences(program.with_body((loop,), tensors)), tuple(ones.values())


def _joined_products(program: Program, prologue, main: Loop | None, rings) -> tuple[Joined, ...]:
    """The pairs of consecutive products of the main loop that can issue as one (see :class:`Joined`): one
    shared A tile, B tiles of one dtype and layout next to each other in one step ring's slot, accumulators
    filled with zeros before the loop that nothing else in the loop touches, N1 + N2 <= 256."""
    if main is None:
        return ()
    zeros = {op.target for op in prologue if isinstance(op, Fill) and op.value == 0.0}
    body = [op for op in main.body if op not in _loads(main.body)]
    found, used = [], set()
    for first, second in zip(body, body[1:]):
        if not (isinstance(first, Mma) and isinstance(second, Mma)) or {first.id, second.id} & used:
            continue
        if not (first.a == second.a and isinstance(first.a, str) and first.transpose_b == second.transpose_b and
                first.acc != second.acc and {first.acc, second.acc} <= zeros):
            continue
        ring = next((r for r in rings if r.per == "step" and {first.b, second.b} <= {t.local for t in r.tiles}), None)
        if ring is None:
            continue
        locals_ = [t.local for t in ring.tiles]
        i = locals_.index(first.b)
        b1, b2 = ring.tiles[i], ring.tiles[i + 1] if i + 1 < len(locals_) else None
        acc1, acc2 = program.tensor(first.acc), program.tensor(second.acc)
        axis = 0 if first.transpose_b else 1
        if b2 is None or b2.local != second.b or b2.offset != b1.offset + b1.nbytes or b1.dtype != b2.dtype or \
                b1.shape[1 - axis] != b2.shape[1 - axis] or b1.box[-2] != b1.shape[-2] and axis == 1 or \
                acc1.shape[0] != acc2.shape[0] or acc1.shape[1] + acc2.shape[1] > 256:
            continue
        others = [op for op in body if op not in (first, second)]
        if any({first.acc, second.acc} & {operand_name(x) for x in op.reads() + op.writes()} for op in others):
            continue
        used |= {first.id, second.id}
        found.append(Joined((first.id, second.id), (first.acc, second.acc), (acc1.shape[1], acc2.shape[1]),
                            (first.b, second.b), axis))
    return tuple(found)


def _fresh(names: set, stem: str) -> str:
    name, n = stem, 0
    while name in names:
        n += 1
        name = f"{stem}{n}"
    names.add(name)
    return name


def _box(tile_shape, dtype: dt.DType, rows: int) -> tuple[tuple[int, ...], int]:
    """The TMA box and swizzle for a tile: a 128-byte (or narrower) swizzle span wide, ``rows`` tall."""
    item = dtype.itemsize
    inner = tile_shape[-1]
    inner_bytes = min(128, inner * item)
    if inner_bytes not in (32, 64, 128):
        raise MappingError(f"a tile whose rows are {inner} {dtype.name} values ({inner * item} bytes) cannot be "
                           "laid out for the tensor cores: rows of 32, 64 or at least 128 bytes are needed",
                           code="mapping-tile", loc=user_location())
    box_inner = inner_bytes // item
    box = tuple(1 for _ in tile_shape[:-2]) + (min(rows, 256), box_inner)
    return box, inner_bytes


def build_schedule(program: Program, mapping: Mapping, sm_count: int) -> Schedule:
    """Place ``program`` (after copy insertion and elimination) on the GPU as ``mapping`` says."""
    levels, mapping, stated = resolve_levels(program, mapping)
    program, ones = _row_sums_on_tensor_cores(program)
    tiles, prologue, main, epilogue = _shape_of(program)
    main_ops = main.body if main is not None else ()
    all_ops = prologue + tuple(main_ops) + epilogue
    consumers = mapping.consumers
    pingpong = mapping.schedule == PINGPONG
    if pingpong and consumers != 2:
        raise MappingError(f"{stated}: a ping-pong alternates tiles between 2 consumer warpgroups, not {consumers}",
                           code="bad-mapping", loc=user_location())
    split = _split_tensors(program, all_ops, mapping.schedule)

    # The consumers' rows: every accumulator has the tile's rows; cooperative consumers take an equal share.
    accumulators = [op for op in all_ops if isinstance(op, Fill)]
    mmas = [op for op in all_ops if isinstance(op, Mma)]
    tile_rows = {_tensor(program, op.acc).shape[0] for op in mmas} or {_tensor(program, f.target).shape[0]
                                                                       for f in accumulators} or {MMA_ROWS}
    if len(tile_rows) != 1:
        raise _refuse(f"the accumulators have different row counts {sorted(tile_rows)}")
    tile_rows = tile_rows.pop()
    share = 1 if pingpong else consumers
    if tile_rows % (share * MMA_ROWS):
        raise MappingError(f"a tile of {tile_rows} rows cannot be shared by {share} consumer warpgroup(s) in multiples "
                           f"of wgmma's {MMA_ROWS} rows", code="mapping-tile",
                           hint=f"use a row tile that is a multiple of {share * MMA_ROWS}, or fewer consumers",
                           loc=user_location())
    rows = tile_rows // share
    for op in mmas:
        for operand in (op.a, op.b):
            t = _tensor(program, operand_name(operand))
            if t.dtype not in _MMA_DTYPES:
                raise TaskError(f"{op}: '{operand_name(operand)}' is {t.dtype.name}; the tensor cores multiply "
                                "float16, bfloat16 or float8 tiles", code="bad-dtype", loc=op.loc)
        m, n = _tensor(program, op.acc).shape
        k = _tensor(program, operand_name(op.a)).shape[-1]
        item = _tensor(program, operand_name(op.a)).dtype.itemsize
        k_step = 32 // item
        for operand in (op.a, op.b):
            t = _tensor(program, operand_name(operand))
            row_bytes = t.shape[-1] * t.dtype.itemsize
            if row_bytes < 128:
                raise MappingError(f"{op}: the rows of '{operand_name(operand)}' {list(t.shape)} are {row_bytes} bytes; "
                                   "wgmma operands are laid out in 128-byte swizzled rows here", code="mapping-tile",
                                   hint=f"make that tile extent at least {128 // t.dtype.itemsize}", loc=op.loc)
        if item == 1 and not op.transpose_b:
            raise TaskError(f"{op}: a float8 B must be stored K-major, as (N, K), and read as Bt[j, k].T: wgmma "
                            "transposes only 16-bit operands", code="bad-layout", loc=op.loc)
        if n % 8 or n > 256 or k % k_step:
            raise MappingError(f"a product {m}x{n}x{k} does not fit wgmma: N must be a multiple of 8 up to 256 and K "
                               f"a multiple of {k_step}", code="mapping-tile", loc=op.loc)

    # Registers: the accumulators of one consumer, against its budget.
    ws = mapping.warp_specialize
    registers = derive_registers(mapping, 1 if ws else 0)
    check_registers(mapping, registers, 1 if ws else 0)
    accumulator_registers = 0
    for name in {op.acc for op in mmas} | {f.target for f in accumulators}:
        t = _tensor(program, name)
        per_consumer_rows = rows if name in split or pingpong else t.shape[0]
        elements = per_consumer_rows * (t.shape[1] if len(t.shape) > 1 else 1)
        accumulator_registers += -(-elements // 128)
    needed = OVERHEAD_REGISTERS + accumulator_registers
    if needed > registers["consumer"]:
        raise MappingError(f"each consumer thread needs about {needed} registers for its accumulators, but the "
                           f"consumer budget is {registers['consumer']}", code="mapping-registers",
                           hint="use smaller tiles, more consumers, or schedule='cooperative'", loc=user_location())

    # Roles and rings: every copy from an argument into shared memory is a load; the producer issues them
    # (or the consumers, without warp specialization), and those of one loop body share one ring.
    producer = "producer" if ws else "consumers"
    consumer_roles = tuple(f"consumer{c}" for c in range(consumers))
    for op in _loads(epilogue):
        if _tensor(program, op.target).memory == SHARED:
            raise _refuse(f"{op}: loads into shared memory after the srange loop are not scheduled yet", loc=op.loc)
    _check_trips(tiles, main)
    phases = _two_phases(program, main, prologue)
    if pingpong and not ws:
        raise MappingError(f"{stated}: a ping-pong needs warp_specialize=True: a producer warpgroup feeds the ring "
                           "in the order the consumers take their turns", code="bad-mapping",
                           hint="map with warp_specialize=True, or schedule='cooperative'", loc=user_location())
    if pingpong and phases is not None:
        raise MappingError(f"{stated}: a ping-pong takes turns at whole main loops; a two-phase loop (attention's) "
                           "takes turns at each step's products instead", code="bad-mapping",
                           hint="map with schedule='cooperative' and turns=True", loc=user_location())
    unmasked = _unmasked(main, prologue + tuple(main_ops)) if phases is not None else None
    rings = []
    groups = [("tile", "", _loads(prologue))]
    if phases is None:
        groups.append(("step", "", _loads(main_ops)))
    else:                        # one ring per phase: step k's A tiles are read while step k - 1's B tiles are
        for phase, ops in (("a", phases.issue + phases.math), ("b", phases.second)):
            names = {operand_name(x) for op in ops for x in op.reads()}
            groups.append(("step", phase, [op for op in _loads(main_ops) if op.target in names]))
    for per, phase, loads in groups:
        loads = [op for op in loads if _tensor(program, op.target).memory == SHARED]
        if not loads:
            continue
        offset, tiles_ = 0, []
        for op in loads:
            local = _tensor(program, op.target)
            box_rows = rows if op.target in split else local.shape[-2]
            box, swizzle = _box(local.shape, local.dtype, box_rows)
            tiles_.append(RingTile(op.target, op.source, local.dtype, box, swizzle, offset))
            offset += -(-tiles_[-1].nbytes // TILE_ALIGNMENT) * TILE_ALIGNMENT
        rings.append(RingPlan(f"ring_{per}" + (f"_{phase}" if phase else ""), per, 2, tuple(tiles_), offset,
                              producer, consumer_roles, phase=phase))

    # Epilogue stores: through a staging tile per consumer, a slice of columns at a time, with TMA.
    stores = []
    tile_loads = [op for op in _loads(prologue) if _tensor(program, op.target).memory == SHARED]
    for op in epilogue:
        if isinstance(op, Copy) and isinstance(op.target, Region) and len(op.target.matrix_shape) == 2:
            local = _tensor(program, op.source)
            out_rows = rows if op.source in split or pingpong else local.shape[0]
            box, _ = _box(op.target.shape, local.dtype, out_rows)
            columns = local.shape[-1]
            slice_columns = max(box[-1], min(columns, STAGING_BYTES // (out_rows * local.dtype.itemsize)) // box[-1] *
                                box[-1])
            while columns % slice_columns:
                slice_columns -= box[-1]
            names = tuple(f"staging_{op.source}_{c}" for c in range(consumers))
            # A tile loaded once per tile with this one's shape, type and rows per consumer (attention's Q for
            # its O) holds each consumer's rows of the output once its products have read it.
            reuse = next((t for t in tile_loads if t.source.matrix_shape == local.shape and
                          _tensor(program, t.target).dtype == local.dtype and not pingpong and
                          (t.target in split) == (op.source in split)), None)
            # (at most 128 columns: storing 256 at once from the tile spilled attention's consumers at D = 256)
            if reuse is not None and columns <= 128:
                stores.append(StorePlan(op.source, op.target, local.dtype, box, columns, (), reuse.target))
                tile_loads.remove(reuse)
            else:
                stores.append(StorePlan(op.source, op.target, local.dtype, box, slice_columns, names))

    # Pipelining: slots of the main ring, products in flight, and (one role) how far loads run ahead. Without
    # a pipeline depth in the mapping, the ring gets as many slots as the shared-memory bound allows.
    in_flight = mapping.mma_in_flight if any(isinstance(op, Mma) for op in main_ops) else 0
    live_across = mapping.persistent or pingpong
    if pingpong:
        # The main loops run one after another, in the order the producer fills the step ring: its slots are
        # taken in turn (one ring of the whole depth, not a ring per consumer of half of it, so the consumer
        # at the tensor cores has every slot to run ahead into). A tile ring is held through a tile's epilogue,
        # while the other consumer's tile has its own: one each.
        rings = [replace(r, in_turn=True) if r.per == "step" else replace(r, name=f"{r.name}{c}",
                                                                          consumers=(f"consumer{c}",))
                 for r in rings for c in (range(2) if r.per == "tile" else (0,))]
    if mapping.pipeline is not None:
        depths = [mapping.pipeline]
    else:
        depths = list(range(MAX_DEPTH, max(in_flight + 1, 2) - 1, -1))
    # A ring filled once per tile gets a second slot (the next tile's loads overlap this one's work) where
    # shared memory allows.
    choices = [(depth, tile_depth) for depth in depths for tile_depth in (2, 1)]
    for depth, tile_depth in choices:
        if depth < in_flight + 1:
            raise MappingError(f"pipeline={depth} slots cannot feed mma_in_flight={in_flight}: pipeline must be >= "
                               f"{in_flight + 1}", code="mapping-depth", loc=user_location())
        sized = [replace(r, depth=depth) if r.per == "step" else
                 replace(r, depth=tile_depth) for r in rings]
        try:
            buffers, smem_bytes = _allocate(_buffers(sized, stores, consumers, live_across, ones), mapping)
        except MappingError:
            if (depth, tile_depth) == choices[-1]:
                raise
            continue
        rings = sized
        break
    offsets = {b.name: b.offset for b in buffers}
    rings = [replace(r, offset=offsets[r.name]) for r in rings]
    joined = _joined_products(program, prologue, main, rings) if phases is None else ()
    step = next((r for r in rings if r.per == "step"), None)
    lookahead = 0 if ws or step is None else step.depth - in_flight
    if phases is not None and not ws:
        raise MappingError("a two-phase loop (a product fed by another's results, as attention's) is scheduled "
                           "with warp specialization only", code="bad-mapping", hint="map with warp_specialize=True",
                           loc=user_location())
    if mapping.turns and not pingpong and (phases is None or consumers < 2):
        raise MappingError("turns=True makes cooperative consumers take turns at a two-phase loop's products; this "
                           "program or mapping has none to take", code="bad-mapping",
                           hint="schedule='pingpong' makes 2 consumers take turns at whole main loops",
                           loc=user_location())

    # Persistence: one block per SM walking the tiles in the raster order, or one block per tile.
    total = 1
    for e in tiles.extents:
        total *= e
    per_block = 2 if pingpong else 1
    if mapping.persistent:
        grid = max(1, min(-(-total // per_block), sm_count))
        order = f"{mapping.raster} order, every {grid}th {'pair of tiles' if pingpong else 'tile'}" + (
            f" (groups of {mapping.group} tile rows)" if mapping.raster == "grouped" else "")
    else:
        grid = -(-total // per_block)
        order = "one block per tile" if per_block == 1 else "one block per pair of tiles"
    notes = []
    for table in dict.fromkeys(i.table for i in program.indices):
        notes.append(f"row tiles are read from '{table}' on the GPU: a tile with no rows is skipped by every role, "
                     "and stores stop at the tile's group's end (ragged TMA)")
    if main is not None and main.below is not None and any(c > 0 for _, c in main.below.terms):
        order += "; " + ", ".join(v for v, c in main.below.terms if c > 0) + " descending (tiles with more steps first)"
    if any(b.aliases for b in buffers):
        notes.append("the epilogue's staging tiles reuse the ring's memory once every consumer has left the main loop")
    return Schedule(program=program, mapping=mapping, levels=levels, tile_vars=tiles.vars,
                    tile_extents=tiles.extents, split=split, rows=rows, consumers=consumers, pingpong=pingpong,
                    turns=mapping.turns, warp_specialized=ws, registers=tuple(sorted(registers.items())),
                    accumulator_registers=accumulator_registers, rings=tuple(rings), prologue=prologue, main=main,
                    epilogue=epilogue, in_flight=in_flight, lookahead=lookahead, phases=phases, unmasked=unmasked,
                    stores=tuple(stores), buffers=tuple(buffers), smem_bytes=smem_bytes, ones=ones, joined=joined,
                    grid=grid, persistent=mapping.persistent, raster=mapping.raster, group=mapping.group,
                    tiles_per_block=order, notes=tuple(notes))


def _buffers(rings, stores, consumers: int, live_across: bool, ones=()) -> list[Buffer]:
    """The shared buffers and their lifetimes: rings live through the main loop (the whole kernel when the
    producer loads the next tile during an epilogue: persistent or ping-pong); staging tiles in the epilogue;
    tiles of ones (written once per block) through the whole kernel."""
    out = [Buffer(t.name, -(-t.nbytes // TILE_ALIGNMENT) * TILE_ALIGNMENT, (0, 2)) for t in ones]
    for r in rings:
        out.append(Buffer(r.name, r.depth * r.slot_bytes, (0, 2) if live_across or r.per == "tile" else (0, 1)))
    for s in stores:
        rows = s.box[-2]
        nbytes = -(-rows * s.slice_columns * s.dtype.itemsize // TILE_ALIGNMENT) * TILE_ALIGNMENT
        for name in s.staging:
            out.append(Buffer(name, nbytes, (1, 2)))
    return out


def _allocate(buffers: list[Buffer], mapping: Mapping) -> tuple[list[Buffer], int]:
    """First fit, largest first, 1024-byte aligned; buffers share bytes only when their lifetimes are disjoint."""
    placed: list[Buffer] = []
    for b in sorted(buffers, key=lambda b: (-b.nbytes, b.name)):
        offset = 0
        while True:
            clash = [p for p in placed if p.offset < offset + b.nbytes and offset < p.offset + p.nbytes and
                     p.lifetime[0] < b.lifetime[1] and b.lifetime[0] < p.lifetime[1]]
            if not clash:
                break
            offset = -(-max(p.offset + p.nbytes for p in clash) // TILE_ALIGNMENT) * TILE_ALIGNMENT
        aliases = tuple(p.name for p in placed if p.offset < offset + b.nbytes and offset < p.offset + p.nbytes)
        placed.append(replace(b, offset=offset, aliases=aliases))
    total = max((b.offset + b.nbytes for b in placed), default=0)
    if total > mapping.smem_limit:
        listing = ", ".join(f"{b.name} {b.nbytes} B" for b in sorted(placed, key=lambda b: b.offset))
        raise MappingError(f"the schedule needs {total} bytes of shared memory ({listing}), more than the mapping's "
                           f"bound of {mapping.smem_limit}", code="mapping-smem",
                           hint="use fewer pipeline slots or smaller tiles", loc=user_location())
    return sorted(placed, key=lambda b: (b.offset, b.name)), total


def explain(schedule: Schedule) -> str:
    """The schedule as text: mapping, roles, rings, shared-memory map, and each role's program."""
    s, m = schedule, schedule.mapping
    lines = [f"task program '{s.program.name}' under {m}"]
    lines.append("levels: " + ", ".join(f"{name} -> {level}" for name, level in s.levels))
    extents = " x ".join(map(str, s.tile_extents))
    lines.append(f"grid: {s.grid} block(s) of {s.block_threads} threads over {extents} tiles ({s.tiles_per_block})")
    regs = dict(s.registers)
    roles = []
    if s.warp_specialized:
        roles.append(f"producer = warpgroup 0 ({regs['producer']} registers): issues every load")
    first = 1 if s.warp_specialized else 0
    if s.pingpong:
        share = (f"whole tiles, alternately (consumer c takes the block's tiles c, c+2, ...), each holding its "
                 f"tile's {s.rows}-row accumulators ({s.accumulator_registers} of its registers); they take turns "
                 "at the main loop: one runs its K loop while the other waits for its turn or runs its epilogue")
    else:
        share = f"rows {s.rows}*c .. +{s.rows} of each tile" if s.consumers > 1 else "whole tiles"
    roles.append(f"consumers = warpgroups {first}..{first + s.consumers - 1} ({regs['consumer']} registers): "
                 f"{share}" + ("" if s.warp_specialized else "; they also issue the loads, "
                               f"{s.lookahead} step(s) ahead"))
    lines.append("roles: " + "; ".join(roles))
    for r in s.rings:
        tiles = ", ".join(f"{t.local} {t.dtype.name}{list(t.shape)} from {t.source} (box {list(t.box)}, swizzle "
                          f"{t.swizzle})" for t in r.tiles)
        lines.append(f"ring {r.name}: {r.depth} slots x {r.slot_bytes} B, once per {r.per}; full: 1 arrival + "
                     f"{sum(t.nbytes for t in r.tiles)} B; empty: {r.empty_arrivals} arrival(s); {r.producer} -> "
                     f"{', '.join(r.consumers)}" + (" in turn" if r.in_turn else "") + f"; tiles: {tiles}")
    lines.append(f"shared memory: {s.smem_bytes} of {m.smem_limit} B")
    for b in s.buffers:
        phases = {(0, 1): "main loop", (1, 2): "epilogue", (0, 2): "whole kernel"}[b.lifetime]
        alias = f", reuses {', '.join(b.aliases)}" if b.aliases else ""
        lines.append(f"  [{b.offset:6d}, {b.offset + b.nbytes:6d}) {b.name} ({phases}{alias})")
    lines.append("schedule:")
    if s.warp_specialized:
        lines.append("  producer: for each tile" + (", in the order of the consumers' turns:" if s.pingpong else ":"))
        for r in s.rings:
            if r.per == "tile":
                lines.append(f"    put {r.name} <- " + ", ".join(str(t.source) for t in r.tiles))
        for readers in dict.fromkeys(r.consumers for r in s.rings if r.per == "step"):   # ping-pong: a ring each
            puts = ["put {} <- {}".format(r.name, ", ".join(str(t.source) for t in r.tiles))
                    for r in s.rings if r.per == "step" and r.consumers == readers]
            var = s.main.vars[0]
            bound = f" while {var}*{s.main.step} < {s.main.below}" if s.main.below is not None else ""
            lines.append(f"    for {var} < {s.main.extents[0]}{bound}: " + "; ".join(puts))
    if s.pingpong:
        lines.append("  consumer 1 first: open consumer 0's first turn (arrive at named barrier "
                     f"{TURN_BARRIER}); " + "; ".join(f"skip the {r.name} slots of the block's first tile"
                                                       for r in s.step_rings()))
    lines.append("  consumer c: for each of its tiles" + (" (the block's tiles c, c+2, ...):" if s.pingpong else ":"))
    tile_ring = s.ring("tile")
    if tile_ring is not None:
        lines.append(f"    get {tile_ring.name}: " + ", ".join(t.local for t in tile_ring.tiles) + " (held for the tile)")
    for op in s.prologue:
        if not s.in_tile_ring(op):
            lines.append(f"    {op}")
    if s.pingpong:
        lines.append(f"    wait for this consumer's turn at the tensor cores (named barrier {TURN_BARRIER}+c)")
    if s.phases is not None:
        _explain_phases(s, lines)
    elif s.main is not None:
        ring = s.ring("step")
        lines.append(f"    for {s.main.vars[0]} < {s.main.extents[0]}:" +
                     (f" (loads run {s.lookahead} step(s) ahead)" if s.lookahead else ""))
        if ring is not None:
            lines.append(f"      get {ring.name}: " + ", ".join(t.local for t in ring.tiles))
        for op in s.main.body:
            if ring is not None and op in _loads(s.main.body):
                continue
            lines.append(f"        {op}" + (f"  [{s.in_flight} product(s) left in flight]" if isinstance(op, Mma) else ""))
        if ring is not None:
            lines.append("      release: each slot once the products reading it retired")
    if s.pingpong:
        lines.append(f"    hand the turn to the other consumer (arrive at named barrier {TURN_BARRIER}+1-c); the rest "
                     "of this tile runs during the other's main loop")
    if tile_ring is not None and not any(st.in_tile for st in s.stores):
        lines.append(f"    release {tile_ring.name} once the products reading it retired")
    for op in s.epilogue:
        lines.append(f"    {op}")
    if tile_ring is not None and any(st.in_tile for st in s.stores):
        lines.append(f"    release {tile_ring.name} once the stores through it have read it")
    for st in s.stores:
        through = f"each consumer's rows of {st.in_tile}" if st.in_tile else ", ".join(st.staging)
        lines.append(f"    store {st.source} -> {st.target}: {st.slice_columns} columns at a time through "
                     f"{through}, TMA box {list(st.box)}")
    if s.pingpong:
        for r in s.step_rings():
            lines.append(f"    skip the {r.name} slots of the other consumer's next tile")
        lines.append("  after its last tile: the consumer whose turn would come next waits for it once more (the "
                     "last hand-over), so that every named barrier completes")
    for j in s.joined:
        (a, b), (n1, n2) = j.accumulators, j.columns
        lines.append(f"one product for e{j.products[0]} and e{j.products[1]}: [{a} | {b}] (N = {n1} + {n2}) += "
                     f"A @ [{j.b_tiles[0]} | {j.b_tiles[1]}] (B tiles side by side in the slot, joined along axis "
                     f"{j.axis}): A read once per K step; {a} and {b} are its columns after the loop")
    for t in s.ones:
        lines.append(f"row sums on the tensor cores: {'; '.join(t.sums)}: a product with {t.name} "
                     f"{t.dtype.name}{list(t.shape)} (K-major B, every element 1, written by every thread once per "
                     "block and fenced for the async proxy) in the wgmma group of the A tile's product, whose "
                     f"{ONES_COLUMNS} columns each hold the sums")
    for note in s.notes:
        lines.append(f"note: {note}")
    return "\n".join(lines) + "\n"


def _explain_phases(s: Schedule, lines: list) -> None:
    p, var = s.phases, s.main.vars[0]
    a, b = s.ring("step", phase="a"), s.ring("step", phase="b")
    turn = ["      wait for this consumer's turn at the tensor cores"] if s.turns else []
    handover = ["      hand the turn to the next consumer"] if s.turns else []
    trips = f"{var} < {s.main.extents[0]}" + (f" while {var}*{s.main.step} < {s.main.below}"
                                               if s.main.below is not None else "")
    lines.append(f"    step {var} = 0: phase A alone")
    lines.append(f"    for {trips}, from 1: phase A of step {var} around phase B of step {var}-1")
    if s.unmasked is not None:
        limit = ", ".join(f"{r} // {d} + 1" if d else f"all if {r} >= 0" for r, d in s.unmasked.bounds)
        lines.append(f"      (masks of {', '.join(f'e{w}' for w in sorted(s.unmasked.wheres))} left out while {var} < "
                     f"min({limit}): a loop without them, then one with them)")
    lines += turn
    lines.append(f"      get {a.name}: " + ", ".join(t.local for t in a.tiles) + "; issue:")
    lines += [f"        {op}" for op in p.issue]
    lines.append(f"      get {b.name} (step {var}-1): " + ", ".join(t.local for t in b.tiles) + "; issue:")
    lines += [f"        {op}" for op in p.second]
    lines += handover
    lines.append("      wait for phase A's product (phase B's runs on), then:")
    lines += [f"        {op}" for op in p.math]
    lines.append(f"      wait for phase B's product; release its {b.name} slot")
    lines.append(f"    after the loop: phase B of the last step (handed from phase A: {', '.join(p.handed)})")
