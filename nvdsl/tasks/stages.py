"""The frozen records of planning: what each pass of ``passes.py`` decides (one record per pass, printable
as the text :meth:`~nvdsl.tasks.build.TaskKernel.passes` shows), the pieces they share (rings, stores,
buffers), and the :class:`Schedule` that emission reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes as dt
from ..layouts import warps_per_row
from . import ir
from .ir import Copy, Loop, Program, Region
from .mapping import Mapping

TURN_BARRIER = 10                     # named barriers 10, 11, ...: consumer c's turn at the tensor cores is 10 + c
EXCHANGE_BARRIER = 14                 # the consumers meet at a tile they stage side by side (StagedOperand.shared)
ONES_COLUMNS = 8                      # wgmma's smallest N: the ones tile's columns, the row sums' accumulator's


@dataclass(frozen=True)
class RingTile:
    """One tile of a ring's slot: the local it fills, the argument region it is copied from, its TMA box."""

    local: str
    source: Region
    dtype: dt.DType
    box: tuple[int, ...]
    swizzle: int
    offset: int
    rows: int | None = None     # the rows its loads bring in, where fewer than the tile's (passes._rows_worth_loading)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.source.shape

    @property
    def loaded_bytes(self) -> int:
        """The bytes its loads bring in (the ring's expected transactions)."""
        return self.nbytes if self.rows is None else self.nbytes // self.source.matrix_shape[0] * self.rows

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
    the consumers take its slots in turn (ping-pong), each slot read and released by one of them. ``depth``
    is 0 until ``pipeline_rings`` chooses it, ``offset`` set by ``allocate_shared_memory``."""

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

    def route(self) -> str:
        return f"{self.producer} -> {', '.join(self.consumers)}" + (" in turn" if self.in_turn else "")

    def tiles_text(self) -> str:
        return ", ".join(f"{t.local} {t.dtype.name}{list(t.shape)} from {t.source} (box {list(t.box)}, swizzle "
                         f"{t.swizzle}{'' if t.rows is None else f'; rows from {t.rows} not loaded'})"
                         for t in self.tiles)


@dataclass(frozen=True)
class Unmasked:
    """The first steps of a main loop in which the masks of ``wheres`` (ids of ``where`` events) hold
    everywhere, so those selects can be left out: steps ``k < min(R // d + 1 for (R, d) in bounds)``, 0 where
    an ``R`` is negative (``R`` affine in the tile's variables)."""

    wheres: frozenset
    bounds: tuple[tuple[ir.Affine, int], ...]

    def describe(self, var: str) -> str:
        limit = ", ".join(f"{r} // {d} + 1" if d else f"all if {r} >= 0" for r, d in self.bounds)
        return f"masks of {', '.join(f'e{w}' for w in sorted(self.wheres))} left out while {var} < min({limit})"


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
    """An epilogue store: a local tile to an argument region, through a staging tile and TMA, or (``direct``)
    by each thread's own stores."""

    source: str
    target: Region
    dtype: dt.DType
    box: tuple[int, ...]
    slice_columns: int
    staging: tuple[str, ...]          # one buffer per consumer
    in_tile: str = ""                 # or: each consumer's rows of this tile ring tile, whose reads have retired
    direct: bool = False              # or: each thread stores its own elements (no TMA), clipped at the end
    add: bool = False                 # added into the region by TMA's atomic reduction (``Ct[i, j] += v``)


@dataclass(frozen=True)
class ResidentRows:
    """A row-wise program's argument whose row block stays in shared memory for the whole tile (the mapping puts
    it in ``"shared"`` memory): its ``chunks`` column blocks of ``shape`` (the tile) are loaded once, at the tile's
    start, by TMA in boxes of ``box`` (each block on an mbarrier of its own, armed and issued by one thread of the
    consumer a block), and every pass over column blocks reads them from there instead of loading them again.
    ``reads``: per shared local the passes read, the srange variable that picks its column block."""

    tensor: str
    rows: ir.Affine                   # the row block's first row
    shape: tuple[int, int]            # one column block (the tile)
    chunks: int
    dtype: dt.DType
    box: tuple[int, int]
    reads: tuple[tuple[str, str], ...]

    @property
    def buffer(self) -> str:
        return f"resident_{self.tensor}"

    @property
    def chunk_bytes(self) -> int:
        """The bytes of one column block (its loads' expected transactions)."""
        return self.shape[0] * self.shape[1] * self.dtype.itemsize

    @property
    def chunk_stride(self) -> int:
        """The bytes from one column block to the next: TMA's boxes land on 128-byte boundaries."""
        return -(-self.chunk_bytes // 128) * 128

    @property
    def nbytes(self) -> int:
        return self.chunks * self.chunk_stride


def format_resident(r: ResidentRows) -> str:
    return (f"keep {r.tensor}[{r.rows}:+{r.shape[0]}, 0:+{r.chunks * r.shape[1]}] in shared memory for the tile "
            f"({r.chunks} column blocks of {r.shape[0]} x {r.shape[1]}, {r.nbytes} B): loaded once at the tile's "
            f"start, by TMA (box {list(r.box)}), each block on its own mbarrier and issued by its own thread; the "
            f"passes read {', '.join(local for local, _ in r.reads)} from there")


@dataclass(frozen=True)
class StagedOperand:
    """A computed tile read transposed as a product's A (``t.T @ B``): each consumer writes its rows of the tile
    into a shared buffer of its own, laid out as a thread-written wgmma operand (128-byte swizzled rows), and the
    product reads it M-major."""

    local: str
    shape: tuple[int, int]            # a consumer's rows of the tile x its columns (shared: the whole tile)
    dtype: dt.DType
    buffers: tuple[str, ...]          # one per consumer (shared: one, each consumer's rows side by side)
    shared: bool = False

    @property
    def nbytes(self) -> int:
        return self.shape[0] * self.shape[1] * self.dtype.itemsize


def format_operand(o: StagedOperand) -> str:
    whose = f"the consumers' rows side by side, {o.shape[0]} x {o.shape[1]}" if o.shared else \
        f"each consumer's {o.shape[0]} x {o.shape[1]} rows"
    return f"stage {o.local} -> {', '.join(o.buffers)}: {whose}, 128-byte swizzled, read transposed (M-major)"


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


def row_warps(consumers: int, together: bool) -> int:
    """The warps over which one consumer's rows of a row-wise tile lie: its warpgroup's 4, or, where the consumers
    hold the tile together, all of theirs."""
    return 4 * consumers if together else 4


# -- what each planning pass decides, in the order the passes run -------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Levels:
    """After ``assign_levels``: the processor level of each task the mapping can set, and the mapping with
    the schedule those levels derive."""

    program: Program
    mapping: Mapping
    levels: tuple                       # (task, level): the host's tasks, the tile's, the products'
    stated: str                         # how the schedule was said, quoted by refusals

    def __str__(self) -> str:
        return f"{format_levels(self.levels)}\nschedule: {self.mapping.schedule} (from {self.stated})\n"


@dataclass(frozen=True, kw_only=True)
class TileBody:
    """After ``sum_rows_on_tensor_cores``: the program whose tiles the later passes schedule, its row sums
    moved onto the tensor cores where they could be, as the prange over tiles and the prologue, main loop
    and epilogue of its body; the tiles of ones those sums read."""

    program: Program
    tiles: Loop
    prologue: tuple
    main: Loop | None
    epilogue: tuple
    ones: tuple[OnesTile, ...]

    @property
    def ops(self) -> tuple:
        """Every operation of a tile, in order (those of the prologue's loops, a row-wise program's passes
        over column blocks, in place of the loops)."""
        prologue = tuple(op for node in self.prologue for op in (node.body if isinstance(node, Loop) else (node,)))
        return prologue + (tuple(self.main.body) if self.main is not None else ()) + self.epilogue

    def __str__(self) -> str:
        passes = [node for node in self.prologue if isinstance(node, Loop)]
        sections = (f"passes over column blocks in the consumers' registers (no ring): {len(passes)} srange loops "
                    f"({', '.join(str(node) for node in passes)})\n") if passes else ""
        if not self.ones:
            return sections + "row sums on the tensor cores: none\n"
        return sections + "".join(f"{format_ones(t)}\n" for t in self.ones) + ir.format_program(self.program)


@dataclass(frozen=True, kw_only=True)
class Split:
    """After ``split_rows``: how the consumer warpgroups share a tile: the tensors whose rows cooperative
    consumers share out, and the rows of those each holds (ping-pong consumers hold whole tiles)."""

    consumers: int
    split: frozenset
    rows: int
    lanes_along_rows: bool = False      # a row-wise program's tiles: each row along a warp's lanes (passes.py)
    partial: frozenset = frozenset()    # accumulators each consumer holds whole, of its part of a sum (t.T @ B)
    columns: frozenset = frozenset()    # accumulators whose columns the consumers share (t.T @ B over all of t)
    together: bool = False              # a row-wise tile the consumers hold together (each row over all their warps)

    @property
    def warps(self) -> int:
        return row_warps(self.consumers, self.together)

    def __str__(self) -> str:
        held = (f"each holds {self.rows} rows of " + ", ".join(sorted(self.split)) if self.split else
                f"each holds whole tiles of {self.rows} rows")
        if self.together:
            held = (f"they hold each tile of {self.rows} row(s) together, each row along the lanes of "
                    f"{warps_per_row(self.rows, self.warps)} of their {self.warps} warps")
        lanes = "; tiles with each row along a warp's lanes" if self.lanes_along_rows else ""
        partial = ("; each holds all of " + ", ".join(sorted(self.partial)) + ", its part of the sum over the rows "
                   "it holds") if self.partial else ""
        columns = ("; each holds an equal share of the columns of " + ", ".join(sorted(self.columns)) +
                   " (summed over the rows they share, staged side by side)") if self.columns else ""
        return f"consumers: {self.consumers} warpgroup(s); {held}{lanes}{partial}{columns}\n"


@dataclass(frozen=True, kw_only=True)
class MainLoop:
    """After ``order_main_loop``: the order of the main loop's work (one phase per step, or two: see
    :class:`Phases`) and the first steps in which its masks are left out; in one phase, the products whose
    results the same step reads (waited for there; the others stay in flight into the next step)."""

    phases: Phases | None
    unmasked: Unmasked | None
    waited: frozenset = frozenset()

    def __str__(self) -> str:
        p = self.phases
        if p is None:
            waited = ", ".join(f"e{i}" for i in sorted(self.waited))
            lines = ["main loop: one phase per step" + (f"; waited for in their step: {waited}" if waited else "")]
            if self.unmasked is not None:
                lines.append(f"  {self.unmasked.describe('k')}")
            return "\n".join(lines) + "\n"
        ids = lambda ops: ", ".join(f"e{op.id}" for op in ops)      # noqa: E731
        lines = ["main loop: two phases per step, phase A of step k around phase B of step k-1",
                 f"  phase A issues {ids(p.issue)}, then does {ids(p.math)}",
                 f"  phase B does {ids(p.second)}, with {', '.join(p.handed)} from phase A"]
        if self.unmasked is not None:
            lines.append(f"  {self.unmasked.describe('k')}")
        return "\n".join(lines) + "\n"


#: How a step's ops go out (:func:`product_groups`): an op that is not a product; consecutive products as one wgmma
#: group; a group issued ahead of the next one (products the step reads), left running; the group after it, which
#: waits until at most :data:`BEHIND_IN_FLIGHT` groups run (itself), so the one ahead has retired where it is read.
OP, GROUP, AHEAD, BEHIND = "op", "group", "ahead", "behind"
BEHIND_IN_FLIGHT = 1


def product_groups(ops, waited: frozenset) -> list[tuple[list, str]]:
    """How a step's ``ops`` go out: each (ops, kind) in order, ``kind`` one of :data:`OP`, :data:`GROUP`,
    :data:`AHEAD`, :data:`BEHIND`. Where products whose results the step reads (``waited``: ids) all come before
    the others of a run of consecutive products, they are a group of their own issued ahead of the others and
    waited for only once those are (a backward's dQ part stored while dK's product runs)."""
    groups, i = [], 0
    while i < len(ops):
        j = i
        while j < len(ops) and isinstance(ops[j], ir.Mma):
            j += 1
        if j == i:
            groups.append(([ops[i]], OP))
            i += 1
            continue
        run = ops[i:j]
        read = [op.id in waited for op in run]
        first = read.index(False) if False in read else len(run)
        if 0 < first < len(run) and not any(read[first:]):
            groups += [(run[:first], AHEAD), (run[first:], BEHIND)]
        else:
            groups.append((run, GROUP))
        i = j
    return groups


def issued_ahead(ops, waited: frozenset) -> dict[int, list[int]]:
    """The ids of the products that :func:`product_groups` issues ahead of others, each with the ids of the
    products issued after it before it is waited for."""
    groups = product_groups(ops, waited)
    return {op.id: [later.id for later in groups[g + 1][0]] for g, (group, kind) in enumerate(groups)
            if kind == AHEAD for op in group}


@dataclass(frozen=True, kw_only=True)
class Transfers:
    """After ``place_copies``: the rings the loads travel through (who fills them, who reads them, the
    tiles of a slot; their depth not yet chosen) and how the epilogue stores its tiles."""

    rings: tuple[RingPlan, ...]
    stores: tuple[StorePlan, ...]
    operands: tuple[StagedOperand, ...] = ()
    resident: tuple[ResidentRows, ...] = ()

    def __str__(self) -> str:
        lines = [f"ring {r.name}: slots of {r.slot_bytes} B, once per {r.per}; {r.route()}; tiles: {r.tiles_text()}"
                 for r in self.rings]
        lines += [format_resident(r) for r in self.resident]
        lines += [format_store(st) for st in self.stores] + [format_operand(o) for o in self.operands]
        return "".join(f"{line}\n" for line in lines) or "no copies through shared memory\n"


@dataclass(frozen=True, kw_only=True)
class Products:
    """After ``join_products``: the pairs of main-loop products issued as one (see :class:`Joined`)."""

    joined: tuple[Joined, ...]

    def __str__(self) -> str:
        return "".join(f"{format_joined(j)}\n" for j in self.joined) or "no products joined\n"


@dataclass(frozen=True, kw_only=True)
class Pipeline:
    """After ``pipeline_rings``: the rings with their slots, the products left in flight, and how far one
    role's own loads run ahead (0 with a producer warpgroup, which runs ahead as far as the slots allow)."""

    rings: tuple[RingPlan, ...]
    in_flight: int
    lookahead: int

    def __str__(self) -> str:
        lines = [f"ring {r.name}: {r.depth} slots x {r.slot_bytes} B" for r in self.rings]
        lines.append(f"products left in flight: {self.in_flight}")
        if self.lookahead:
            lines.append(f"loads run {self.lookahead} step(s) ahead")
        return "\n".join(lines) + "\n"


@dataclass(frozen=True, kw_only=True)
class Registers:
    """After ``budget_registers``: registers per thread of each role, and how many of a consumer's its
    accumulators take."""

    registers: tuple                    # (role, registers per thread)
    accumulators: int

    def __str__(self) -> str:
        roles = ", ".join(f"{role} {n}" for role, n in self.registers)
        return f"registers per thread: {roles}; a consumer's accumulators take {self.accumulators}\n"


@dataclass(frozen=True, kw_only=True)
class Allocation:
    """After ``allocate_shared_memory``: every shared buffer's offset, and the rings at theirs."""

    rings: tuple[RingPlan, ...]
    buffers: tuple[Buffer, ...]
    smem_bytes: int
    smem_limit: int

    def __str__(self) -> str:
        return "\n".join(format_memory_map(self.buffers, self.smem_bytes, self.smem_limit)) + "\n"


@dataclass(frozen=True, kw_only=True)
class Persistence:
    """After ``persist``: the grid, and how its blocks walk the tiles."""

    grid: int
    persistent: bool                    # blocks loop over tiles (else one block per tile, or pair of tiles)
    raster: str                         # the order persistent blocks walk the tiles in
    group: int                          # tile rows per group of the "grouped" order
    tiles_per_block: str                # that order, as text

    def __str__(self) -> str:
        return f"grid: {self.grid} block(s) ({self.tiles_per_block})\n"


# -- text shared by the stages and explain ------------------------------------------------------------------------

def format_levels(levels) -> str:
    return "levels: " + ", ".join(f"{name} -> {level}" for name, level in levels)


def format_memory_map(buffers, smem_bytes: int, smem_limit: int) -> list[str]:
    lines = [f"shared memory: {smem_bytes} of {smem_limit} B"]
    for b in buffers:
        phases = {(0, 1): "main loop", (1, 2): "epilogue", (0, 2): "whole kernel"}[b.lifetime]
        alias = f", reuses {', '.join(b.aliases)}" if b.aliases else ""
        lines.append(f"  [{b.offset:6d}, {b.offset + b.nbytes:6d}) {b.name} ({phases}{alias})")
    return lines


def format_store(st: StorePlan) -> str:
    if st.direct:
        return (f"store {st.source} -> {st.target}: each thread its own elements, clipped at the tensor's end (a "
                "program without products: no TMA)")
    through = f"each consumer's rows of {st.in_tile}" if st.in_tile else ", ".join(st.staging)
    verb, how = ("add", " (an atomic reduction)") if st.add else ("store", "")
    return (f"{verb} {st.source} -> {st.target}: {st.slice_columns} columns at a time through {through}, TMA box "
            f"{list(st.box)}{how}")


def format_joined(j: Joined) -> str:
    (a, b), (n1, n2) = j.accumulators, j.columns
    return (f"one product for e{j.products[0]} and e{j.products[1]}: [{a} | {b}] (N = {n1} + {n2}) += A @ "
            f"[{j.b_tiles[0]} | {j.b_tiles[1]}] (B tiles side by side in the slot, joined along axis {j.axis}): A "
            f"read once per K step; {a} and {b} are its columns after the loop")


def format_ones(t: OnesTile) -> str:
    return (f"row sums on the tensor cores: {'; '.join(t.sums)}: a product with {t.name} {t.dtype.name}"
            f"{list(t.shape)} (K-major B, every element 1, written by every thread once per block and fenced for "
            f"the async proxy) in the wgmma group of the A tile's product, whose {ONES_COLUMNS} columns each hold "
            "the sums")


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
    waited: frozenset                   # main-loop products the same step reads the results of (waited for)
    unmasked: Unmasked | None
    stores: tuple[StorePlan, ...]
    buffers: tuple[Buffer, ...]
    smem_bytes: int
    ones: tuple[OnesTile, ...] = ()
    joined: tuple[Joined, ...] = ()
    operands: tuple[StagedOperand, ...] = ()
    partial: frozenset = frozenset()    # accumulators each consumer holds whole, of its part of a sum (t.T @ B)
    columns: frozenset = frozenset()    # accumulators whose columns the consumers share (t.T @ B over all of t)
    lanes_along_rows: bool = False      # tiles with each row along a warp's lanes, not wgmma's layout
    together: bool = False              # the consumers hold each row-wise tile together (Split.together)
    resident: tuple[ResidentRows, ...] = ()     # row blocks kept in shared memory for the tile
    grid: int
    persistent: bool                    # blocks loop over tiles (else one block per tile, or pair of tiles)
    raster: str                         # the order persistent blocks walk the tiles in
    group: int                          # tile rows per group of the "grouped" order
    tiles_per_block: str

    @property
    def roles(self) -> tuple[str, ...]:
        return (("producer",) if self.warp_specialized else ()) + tuple(f"consumer{c}" for c in range(self.consumers))

    @property
    def block_threads(self) -> int:
        return 128 * len(self.roles)

    @property
    def row_warps(self) -> int:
        return row_warps(self.consumers, self.together)

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

