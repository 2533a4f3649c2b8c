"""The planning passes: a tile program (after copy insertion and elimination) and its mapping become a
:class:`~nvdsl.tasks.stages.Schedule`, one decision per pass, in the order of Cypress and Tawa: the tasks'
levels, the copies (loads through rings, stores through staging tiles), the rings' depth, registers,
shared-memory allocation, persistence. Each pass is a pure function of earlier stages' frozen records
(``stages.py``) returning a new one; its docstring says what it decides as "before -> after".
``schedule.plan_stages`` runs them in order.

The programs scheduled here have the shape of the GEMM family: one ``prange`` over output tiles whose
body has operations before (the prologue), at most one ``srange`` loop, and operations after it (the
epilogue); or, for row-wise programs (a softmax, a norm), several ``srange`` loops over column blocks that
compute in registers alone (no product, no load into shared memory), kept in the prologue as its passes.
Anything else is refused with a :class:`~nvdsl.errors.TaskError` saying what is not supported.
"""

from __future__ import annotations

from dataclasses import replace

from .. import dtypes as dt
from ..errors import MappingError, TaskError, user_location
from ..layouts import warps_per_row
from ..layouts.swizzle import swizzle_alignment
from ..target import MAX_BOX, TMA_STRIDE_BYTES, wgmma_entry_registers
from . import ir
from .analysis import operand_name, with_dependences
from .ir import (SHARED, Affine, Broadcast, Copy, Fill, FirstColumn, Gather, Loop, Map, Mma, Program, Reduce, Region,
                 argument_loads)
from .mapping import (BLOCK, COOPERATIVE, HOST, PINGPONG, WARPGROUP, Mapping, check_registers, derive_registers,
                      refusal)
from .stages import (GROUP, ONES_COLUMNS, OP, Allocation, Buffer, Joined, Levels, MainLoop, OnesTile, Persistence,
                     Phases, Pipeline, Products, Registers, ResidentRows, RingPlan, RingTile, Split, StagedOperand,
                     StorePlan, TileBody, Transfers, Unmasked, product_groups, row_warps)

TILE_ALIGNMENT = swizzle_alignment(128)   # ring tiles and staging buffers: 128-byte swizzled TMA tiles
STAGING_BYTES = 16 * 1024             # per consumer: the epilogue writes the output in slices of this size
MAX_DEPTH = 8
OVERHEAD_REGISTERS = 40               # a consumer's registers besides its accumulators (addresses, loop state)
MMA_ROWS = 64                         # wgmma's M
LANE_COLUMNS = 32       # a row-wise program's tiles: each row along a warp's 32 lanes (or several: warps_per_row)
_MMA_DTYPES = (dt.float16, dt.bfloat16, dt.float8_e4m3fn, dt.float8_e5m2)


# -- levels -------------------------------------------------------------------------------------------------------

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
                      "rows, columns)",
                      hint="fold the extra axes into at most 4 prange axes, e.g. batch and heads into one",
                      loc=tiles.loc)
    loops = [node for node in tiles.body if isinstance(node, Loop)]
    for node in loops:
        if node.kind != "srange" or any(isinstance(n, Loop) for n in node.body):
            raise _refuse("inside the prange, the task layer schedules srange loops without nested loops",
                          loc=node.loc, hint="write each sequential loop at the top of the prange's body")
    if len(loops) > 1:
        busy = next((n for n in loops if any(isinstance(op, Mma) for op in n.body)), None)
        if busy is not None:
            raise _refuse("inside the prange, the task layer schedules one srange loop with products; several "
                          "srange loops (a row-wise program's passes over column blocks) only if each computes in "
                          "registers alone (reading its argument tiles into registers, or from a row block kept in "
                          "shared memory)", loc=busy.loc,
                          hint="fold the loops into one, or compute the other passes without products")
        return tiles, tuple(tiles.body), None, ()         # sections: every loop runs in the consumers' registers
    prologue, main, epilogue = [], None, []
    for node in tiles.body:
        if isinstance(node, Loop):
            main = node
        elif main is None:
            prologue.append(node)
        else:
            epilogue.append(node)
    return tiles, tuple(prologue), main, tuple(epilogue)


def _shared_loads(program: Program, ops) -> list[Copy]:
    return [op for op in argument_loads(ops) if program.tensor(op.target).memory == SHARED]


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


def assign_levels(program: Program, mapping: Mapping) -> Levels:
    """Program, Mapping -> Levels: the processor level of each task the mapping can set, the mapping with
    the schedule they derive, and how that schedule was said (for refusals).

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

    def refuse(message: str, changes, note: str = "") -> MappingError:
        return refusal(message, code="mapping-level", changes=changes, note=note)

    for name, level in mapping.levels:
        if name not in roles:
            raise refuse(f"levels['{name}']: the program has no task '{name}'; the names its levels take are " +
                         ", ".join(f"'{n}'" for n in roles if roles[n]), [{"levels": {name: None}}])
        said = f"levels['{name}']={level!r}"
        if not roles[name]:
            raise refuse(f"{said}: task '{name}' is part of the work of a tile and runs at the level of '{tile}'",
                         [{"levels": {name: None}}],
                         note=f"levels name '{around[-1]}' (host), '{tile}' (block or warpgroup) and '{products}' "
                              "(warpgroup)")
        if HOST in roles[name] and level != HOST:
            holds = "holds" if name == around[-1] else "launches the task holding"
            raise refuse(f"{said}: task '{name}' {holds} the prange over output tiles, which only the host can "
                         "launch (one tile per block)", [{"levels": {name: HOST}}])
        if "tile" in roles[name] and level == HOST:
            raise refuse(f"{said}: task '{name}' runs one output tile, on a block: at 'block' its consumer "
                         "warpgroups share the tile's rows, at 'warpgroup' each of them runs whole tiles (a ping-pong)",
                         [{"levels": {name: BLOCK}}, {"levels": {name: WARPGROUP}}])
        if "products" in roles[name] and level != WARPGROUP:
            raise refuse(f"{said}: task '{name}' issues the tile products, and wgmma is a warpgroup instruction: it "
                         "runs at 'warpgroup' only", [{"levels": {name: WARPGROUP}}])
    derived = {WARPGROUP: PINGPONG, BLOCK: COOPERATIVE}.get(given.get(tile))
    if derived is not None and mapping.schedule not in (None, derived):
        raise refuse(f"schedule={mapping.schedule!r} but levels['{tile}']={given[tile]!r}: a tile's task at "
                     f"{given[tile]!r} makes a {derived!r} schedule", [{"schedule": derived}],
                     note="or leave schedule out: it follows the levels")
    if mapping.schedule is None:
        mapping = mapping._with_schedule(derived or COOPERATIVE)
    stated = f"levels['{tile}']={given[tile]!r}" if derived else f"schedule={mapping.schedule!r}"
    tile_level = WARPGROUP if mapping.schedule == PINGPONG else BLOCK
    levels = tuple((name, HOST) for name in around) + ((tile, tile_level), (products, WARPGROUP))
    return Levels(program=program, mapping=mapping, levels=levels, stated=stated)


# -- the tile's work ----------------------------------------------------------------------------------------------

def sum_rows_on_tensor_cores(levels: Levels) -> TileBody:
    """Levels -> TileBody: the program with its row sums moved onto the tensor cores where they can be
    (see :func:`_rows_summed`), split into the prange over tiles and its prologue, main loop and epilogue."""
    program, ones = _rows_summed(levels.program)
    tiles, prologue, main, epilogue = _shape_of(program)
    return TileBody(program=program, tiles=tiles, prologue=prologue, main=main, epilogue=epilogue, ones=ones)


def _rows_summed(program: Program) -> tuple[Program, tuple[OnesTile, ...]]:
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


def _fresh(names: set, stem: str) -> str:
    name, n = stem, 0
    while name in names:
        n += 1
        name = f"{stem}{n}"
    names.add(name)
    return name


def in_registers(program: Program, ops, sections: bool = False) -> bool:
    """Whether a tile's ``ops`` compute in the consumers' registers only: no product, no argument loaded into
    shared memory (but, in ``sections``, several passes over column blocks, a row block kept there for the tile: see
    :func:`_resident_rows`), every store a 2-D tensor's (stored by each thread, see :func:`_stores`). Such a row-wise
    program lays its tiles out with rows along a warp's lanes (emission's ``rows_across_lanes``; a row over two or four
    warps where a consumer's rows are not a multiple of four), not in wgmma's 64-row blocks."""
    return not any(isinstance(op, Mma) for op in ops) and (sections or not _shared_loads(program, ops)) and \
        all(len(program.tensor(op.target.tensor).shape) == 2 and op.target.end is None
            for op in ops if isinstance(op, Copy) and isinstance(op.target, Region) and
            len(op.target.matrix_shape) == 2)                  # (a vector's stores take any layout)


def split_rows(levels: Levels, body: TileBody) -> Split:
    """TileBody -> Split: how the consumer warpgroups share a tile. Every accumulator has the tile's rows;
    cooperative consumers each take an equal share of them, and of every tensor that follows their rows
    (see :func:`_split_tensors`); ping-pong consumers each hold whole tiles. A row-wise program's tiles
    (:func:`in_registers`) share whole rows, and have a multiple of LANE_COLUMNS columns for each warp that shares a
    row (``warps_per_row``)."""
    mapping, program = levels.mapping, body.program
    consumers = mapping.consumers
    pingpong = mapping.schedule == PINGPONG
    if pingpong and consumers != 2:
        raise refusal(f"{levels.stated}: a ping-pong alternates tiles between 2 consumer warpgroups, not "
                      f"{consumers}", code="bad-mapping", changes=[{"consumers": 2}])
    summed = _partial_accumulators(program, body.ops)
    if summed and pingpong:
        raise refusal(f"{levels.stated}: a product of a transposed computed tile ({', '.join(sorted(summed))}) "
                      "sums over the rows cooperative consumers share; a ping-pong's consumers hold whole tiles",
                      code="bad-mapping", changes=[{"schedule": COOPERATIVE}])
    shared_columns = frozenset(op.acc for op in _column_products(program, body.ops, consumers))
    partial = summed - shared_columns
    split = _split_tensors(program, body.ops, mapping.schedule, consumers)
    _check_partial_uses(body.ops, partial, shared_columns, split)
    _check_summed_in_one_step(body)
    tile_rows = {program.tensor(op.acc).shape[0] for op in body.ops if isinstance(op, Mma) and op.acc not in summed} \
        or {program.tensor(op.target).shape[0] for op in body.ops if isinstance(op, Fill)} or {MMA_ROWS}
    if len(tile_rows) != 1:
        raise _refuse(f"the accumulators have different row counts {sorted(tile_rows)}",
                      hint="give every accumulator of the tile the same number of rows (one BM for all of them)")
    tile_rows = tile_rows.pop()
    share = 1 if pingpong else consumers
    lanes = in_registers(program, body.ops, _sections(body))
    granule = 1 if lanes else MMA_ROWS
    # A row-wise tile whose rows the consumers cannot split (one row, four consumers) they hold together: each row
    # along the lanes of warps of all of them, their sums meeting in shared memory.
    together = lanes and share > 1 and tile_rows % share != 0
    if together and mapping.warp_specialize:
        raise refusal(f"a tile of {tile_rows} rows held by {consumers} consumer warpgroups together leaves a producer "
                      "warpgroup nothing to load (its rows are read by ordinary loads)", code="bad-mapping",
                      changes=[{"warp_specialize": False}, {"consumers": 1}])
    if together:
        share, split = 1, frozenset()
    warps = row_warps(consumers, together)
    if tile_rows % (share * granule):
        changes, note = _row_split_changes(mapping, tile_rows, share, granule)
        raise refusal(f"a tile of {tile_rows} rows cannot be shared by {share} consumer warpgroup(s) in multiples of "
                      + ("a row" if lanes else f"wgmma's {MMA_ROWS} rows"),
                      code="mapping-tile", changes=changes, note=note)
    columns = {program.tensor(op.target).shape[1] for op in body.ops
               if isinstance(op, Fill) and len(program.tensor(op.target).shape) == 2}
    width = LANE_COLUMNS * warps_per_row(tile_rows // share, warps)     # the lanes of the warps that share a row
    odd = sorted(c for c in columns if c % width)
    if lanes and odd:
        wanted = -(-odd[0] // width) * width
        along = f"a warp's {LANE_COLUMNS} lanes" if width == LANE_COLUMNS else \
            f"the {width} lanes of the {width // LANE_COLUMNS} warps that share each of its rows"
        raise refusal(f"a tile of {odd[0]} columns cannot lie along {along}",
                      code="mapping-tile", changes=_tunables_at(mapping, odd[0], wanted),
                      note=f"or tiles of a multiple of {width} columns")
    return Split(consumers=consumers, split=split, rows=tile_rows // share, lanes_along_rows=lanes,
                 partial=partial, columns=shared_columns, together=together)


def _partial_products(program: Program, ops) -> list[Mma]:
    """The products of a computed tile's transpose (``t.T @ B``, t in registers): the consumers share t's rows,
    which are the product's K."""
    return [op for op in ops if isinstance(op, Mma) and op.transpose_a and
            program.tensor(operand_name(op.a)).memory != SHARED]


def _column_products(program: Program, ops, consumers: int) -> list[Mma]:
    """Of :func:`_partial_products`, those whose consumers put their rows of t side by side in one shared tile
    (one TMA box wide: 128 bytes a row) and each compute a share of the product's columns over all of K (whole
    64-column boxes of an N-major B): FlashAttention-3's dQ. The others' consumers each sum their own rows."""
    def fits(op: Mma) -> bool:
        t, b = program.tensor(operand_name(op.a)), program.tensor(operand_name(op.b))
        n = program.tensor(op.acc).shape[1]
        box = 128 // b.dtype.itemsize
        return consumers > 1 and t.shape[1] * t.dtype.itemsize == 128 and not op.transpose_b and \
            n % (consumers * box) == 0
    return [op for op in _partial_products(program, ops) if fits(op)]


def _check_summed_in_one_step(body: TileBody) -> None:
    """A product of a transposed computed tile reads it staged in shared memory, which the next step's staging
    overwrites: its accumulator is zeroed and stored (or added into an argument) in the same straight run of
    operations (a step of the main loop), after the product."""
    runs = [list(body.prologue), list(body.main.body) if body.main is not None else [], list(body.epilogue)]
    for op in _partial_products(body.program, body.ops):
        run = next((r for r in runs if op in r), [])
        position = run.index(op) if op in run else -1
        zeroed = any(isinstance(o, Fill) and o.target == op.acc for o in run[:position])
        stored = any(isinstance(o, Copy) and o.source == op.acc and isinstance(o.target, Region)
                     for o in run[position + 1:])
        if not (zeroed and stored):
            raise _refuse(f"{op}: the transposed computed tile is staged in shared memory for this product only, so "
                          f"'{op.acc}' is zeroed and stored in the same step, around it",
                          hint=f"start it with nt.zeros(...) and store it (or add it into an argument) right after, "
                               "inside the loop", loc=op.loc)


def _partial_accumulators(program: Program, ops) -> frozenset:
    return frozenset(op.acc for op in _partial_products(program, ops))


def _check_partial_uses(ops, partial: frozenset, columns: frozenset, split: frozenset) -> None:
    """A consumer's part of a sum is only added into an argument (``Dt[...] += acc``), where the parts add up; a
    consumer's share of the columns of a sum is only stored (or added)."""
    for op in ops:
        read = {operand_name(x) for x in op.reads()} & (partial | columns)
        if not read or (isinstance(op, Copy) and isinstance(op.target, Region) and
                        (op.accumulate or not read & partial)) or (isinstance(op, Mma) and read == {op.acc}):
            continue
        name = sorted(read)[0]
        if name in partial:
            raise _refuse(f"{op}: each consumer warpgroup holds its own part of the sum in '{name}' (a product of a "
                          "transposed computed tile, whose rows the consumers share), so it cannot be read here",
                          hint=f"add it into a float32 argument as it is (Xt[...] += {name}), where the parts add "
                               "up", loc=op.loc)
        raise _refuse(f"{op}: the consumer warpgroups share the columns of '{name}' (a product of a transposed "
                      "computed tile, whose rows they share), so it cannot be read here",
                      hint=f"store it (or add it into an argument) as it is: Xt[...] = {name}", loc=op.loc)
    if (partial | columns) & split:
        raise _refuse(f"{sorted((partial | columns) & split)} would be both a sum the consumers share and shared out "
                      "by rows",
                      hint="store or add such a tile into an argument as it is, without splitting its rows among the "
                           "consumers")


def _row_split_changes(mapping: Mapping, tile_rows: int, share: int, granule: int = MMA_ROWS) -> tuple[list, str]:
    """The changes under which consumers share a tile's rows: fewer consumers (a divisor of the tile's row
    blocks of ``granule`` rows), or the tunable that gives the rows (the mapping's tiles of ``tile_rows``) at a
    multiple of ``share`` row blocks; and a note where no tunable of the mapping gives them."""
    blocks = tile_rows // granule
    fewer = max((c for c in range(1, share) if blocks and blocks % c == 0), default=None)
    changes = [{"consumers": fewer}] if fewer is not None else []
    rows = -(-max(tile_rows, 1) // (share * granule)) * share * granule
    changes += [{"tiles": {name: rows}} for name, value in mapping.tiles if value == tile_rows]
    return changes, "" if len(changes) > (fewer is not None) else f"or a row tile of {rows} rows"


def _tunables_at(mapping: Mapping, value: int, wanted: int) -> list[dict]:
    """Changes setting to ``wanted`` each tunable the mapping gives ``value`` (the tile extent a refusal is about)."""
    return [{"tiles": {name: wanted}} for name, v in mapping.tiles if v == value and wanted != value]


def _split_tensors(program: Program, ops, schedule: str, consumers: int = 1) -> frozenset:
    """The tensors whose rows cooperative consumers share out: every accumulator, and what follows its rows."""
    if schedule == PINGPONG:
        return frozenset()
    split = set()
    whole = set()
    partial = _partial_accumulators(program, ops)
    columns = {op.id for op in _column_products(program, ops, consumers)}
    for op in ops:
        if isinstance(op, Mma) and op.id in columns:   # t.T @ B: each consumer writes its rows of t; B read whole
            split.add(operand_name(op.a))
        elif isinstance(op, Mma) and op.acc in partial:    # t.T @ B: B's rows are its K, shared as t's are
            split.update((operand_name(op.a), operand_name(op.b)))
        elif isinstance(op, Mma):
            split.update((op.acc, operand_name(op.a)))
            whole.add(operand_name(op.b))
    if not split:                 # no products: the tiles filled in the program (a row-wise program's) split
        split.update(op.target for op in ops if isinstance(op, Fill) and len(program.tensor(op.target).shape) == 2)
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
            elif isinstance(op, Gather) and (op.out in split or operand_name(op.index) in split):
                new.update((op.out, operand_name(op.index)))
            elif isinstance(op, Reduce) and op.axis == 0 and operand_name(op.input) in split:
                raise _refuse(f"{op}: a sum down the columns of a tile whose rows the consumer warpgroups share out "
                              "needs the warpgroups to combine their parts", loc=op.loc,
                              hint="map with schedule='pingpong' (each consumer warpgroup holds whole tiles)")
            if not new <= split:
                split |= new
                changed = True
    both = split & whole
    if both:
        raise _refuse(f"{sorted(both)} would be both split by rows among the consumers (as an accumulator's rows or "
                      "an A operand) and needed whole (as a B operand)",
                      hint="use the tile either as a B operand or row by row (an A operand, an accumulator), not "
                           "both")
    return frozenset(split)


def check_products(levels: Levels, body: TileBody) -> None:
    """TileBody -> the same, or a refusal: every product fits wgmma (operand types and layouts, its N and K)."""
    program = body.program
    for op in body.ops:
        if not isinstance(op, Mma):
            continue
        for operand in (op.a, op.b):
            t = program.tensor(operand_name(operand))
            if t.dtype not in _MMA_DTYPES:
                raise TaskError(f"{op}: '{operand_name(operand)}' is {t.dtype.name}; the tensor cores multiply "
                                "float16, bfloat16 or float8 tiles", code="bad-dtype",
                                hint=f"convert '{operand_name(operand)}' first, e.g. .astype(nt.bfloat16), or pass a "
                                     "float16 or bfloat16 array", loc=op.loc)
        m, n = program.tensor(op.acc).shape
        k = program.tensor(operand_name(op.a)).shape[0 if op.transpose_a else -1]
        item = program.tensor(operand_name(op.a)).dtype.itemsize
        k_step = 32 // item
        for operand in (op.a, op.b):
            t = program.tensor(operand_name(operand))
            row_bytes = t.shape[-1] * t.dtype.itemsize
            if row_bytes < 128:
                wide = 128 // t.dtype.itemsize
                raise refusal(f"{op}: the rows of '{operand_name(operand)}' {list(t.shape)} are {row_bytes} bytes; "
                              "wgmma operands are laid out in 128-byte swizzled rows here", code="mapping-tile",
                              changes=_tunables_at(levels.mapping, t.shape[-1], wide),
                              note=f"make that tile extent at least {wide}", loc=op.loc)
        if item == 1 and not op.transpose_b:
            raise TaskError(f"{op}: a float8 B must be stored K-major, as (N, K), and read as Bt[j, k].T: wgmma "
                            "transposes only 16-bit operands", code="bad-layout",
                            hint="store B as (N, K) and read it as Bt[j, k].T, or use float16 or bfloat16 operands",
                            loc=op.loc)
        if n % 8 or n > 256 or k % k_step:
            mapping = levels.mapping
            changes = (_tunables_at(mapping, n, min(256, max(8, n // 8 * 8))) if n % 8 or n > 256 else []) + \
                (_tunables_at(mapping, k, max(k_step, k // k_step * k_step)) if k % k_step else [])
            raise refusal(f"a product {m}x{n}x{k} does not fit wgmma: N must be a multiple of 8 up to 256 and K "
                          f"a multiple of {k_step}", code="mapping-tile", changes=changes, loc=op.loc)


# -- the main loop ------------------------------------------------------------------------------------------------

def order_main_loop(levels: Levels, body: TileBody) -> MainLoop:
    """TileBody -> MainLoop: the order of the main loop's work: one phase per step, or two (attention's, see
    :class:`~nvdsl.tasks.stages.Phases`: each step's product and math around the previous step's second
    product), and then the first steps in which its masks change no value and are left out."""
    mapping, main = levels.mapping, body.main
    pingpong = mapping.schedule == PINGPONG
    _check_trips(body.program, body.tiles, main)
    phases = _two_phases(body.program, main, body.prologue)
    if pingpong and phases is not None:
        tile = levels.levels[-2][0]
        raise refusal(f"{levels.stated}: a ping-pong takes turns at whole main loops; a two-phase loop "
                      "(attention's) takes turns at each step's products instead", code="bad-mapping",
                      changes=[{"schedule": COOPERATIVE, "turns": True},
                               {"levels": {tile: BLOCK}, "schedule": COOPERATIVE, "turns": True}])
    if phases is not None and not mapping.warp_specialize:
        raise refusal("a two-phase loop (a product fed by another's results, as attention's) is scheduled "
                      "with warp specialization only", code="bad-mapping", changes=[{"warp_specialize": True}])
    waited = _waited(main) if phases is None else frozenset()
    if mapping.turns and not pingpong and (mapping.consumers < 2 or not mapping.warp_specialize or
                                           phases is None and not _first_products_waited(main, waited)):
        raise refusal("turns=True makes cooperative consumers (warp-specialized, 2 or more) take turns at each step's "
                      "products: a two-phase loop's, or a one-phase loop's whose step reads the products it issues "
                      "first; this program or mapping has none to take", code="bad-mapping",
                      changes=[{"turns": False}, {"schedule": PINGPONG, "consumers": 2}],
                      note="schedule='pingpong' makes 2 consumers take turns at whole main loops")
    read = frozenset(index.name for index in body.program.indices)
    unmasked = _unmasked(main, body.prologue + tuple(main.body), read) if main is not None else None
    return MainLoop(phases=phases, unmasked=unmasked, waited=waited)


def _first_products_waited(main: Loop | None, waited: frozenset) -> bool:
    """Whether a one-phase step's first products go out as one group that the step waits for (a block's product
    that its scaling reads): the group cooperative consumers take turns at (see ``emit``)."""
    groups = product_groups(main.body, waited) if main is not None else []
    first = next(((group, kind) for group, kind in groups if kind != OP), None)
    return first is not None and first[1] == GROUP and any(op.id in waited for op in first[0])


def _waited(main: Loop | None) -> frozenset:
    """The products of a one-phase main loop whose accumulators a later operation of the same step reads (a
    backward pass's scores, read by its softmax): emission waits for them before that read, while the others
    (accumulated across steps, read after the loop) stay in flight."""
    if main is None:
        return frozenset()
    ops, waited = list(main.body), set()
    for i, op in enumerate(ops):
        if not isinstance(op, Mma):
            continue
        readers = [later for later in ops[i + 1:] if not (isinstance(later, Mma) and later.acc == op.acc)]
        if any(op.acc in {operand_name(x) for x in r.reads()} for r in readers):
            waited.add(op.id)
    return frozenset(waited)


def _check_trips(program: Program, tiles: Loop, main: Loop | None) -> None:
    """An srange with ``below`` affine in the prange's variables alone must run at least once for every
    tile: its least value over the tiles must be positive (a triangle that leaves a tile out is a mistake).
    Where ``below`` depends on indices read on the GPU (``nt.load_index``) nothing is known of its value
    here: a tile may have no step (emission guards a two-phase loop's first step, issued before the loop),
    and a negative ``below`` runs none."""
    if main is None or main.below is None:
        return
    extents = dict(zip(tiles.vars, tiles.extents))
    read = {index.name for index in program.indices}
    unknown = [v for v in main.below.variables if v not in extents and v not in read]
    if unknown:
        raise _refuse(f"nt.srange(below={main.below}) depends on {unknown}; below= is affine in the prange's "
                      "variables and in indices read with nt.load_index",
                      hint="write below= from the prange's variables and nt.load_index values, e.g. below=(i + 1) * BM",
                      loc=main.loc)
    if read & set(main.below.variables):
        return
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
    body = [op for op in main.body if op not in argument_loads(main.body)]
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
    # Loads into shared memory feed the products through a ring per phase; loads into registers (an argument's
    # vector read by the first phase's math, such as a document id per key) are that math's, done in its step.
    in_registers = [op for op in argument_loads(main.body) if program.tensor(op.target).memory != SHARED]
    loads = {op.target for op in argument_loads(main.body)} - {op.target for op in in_registers}
    if loads - {operand_name(x) for op in mmas for x in (op.a, op.b)}:
        return None                 # an argument's tile read by the loop's math: loaded in the step
    read_by = lambda ops, of: {operand_name(x) for op in ops for x in op.reads()} & of   # noqa: E731
    if read_by(a_ops, loads) & read_by(b_ops, loads) or body.index(first) > body.index(second) or \
            read_by(b_ops, {op.target for op in in_registers}):
        return None
    issue = (fills[first.acc], first)
    math = tuple(in_registers) + tuple(op for op in a_ops if op not in issue)
    written_in_a = {name for op in a_ops for name in map(operand_name, op.writes())}
    handed = sorted({operand_name(x) for op in b_ops for x in op.reads()} & written_in_a)
    return Phases(issue, math, tuple(b_ops), tuple(handed))


def _unmasked(main: Loop | None, ops, read: frozenset = frozenset()) -> Unmasked | None:
    """Where every mask of the main loop's ``where`` events (a ``where`` whose condition is computed from
    positions, ``nt.arange``) compares positions with positions or indices, the steps for which all of them
    hold: while a block of keys lies wholly before a causal diagonal or a ragged end, its scores need no mask.
    None if a mask is anything else, or if where it holds depends on an index read on the GPU (``read``: such
    masks stay in every step, so that the steps' count is the only thing a table decides, which the
    protocol check can try in full). A ``where`` on values alone (a running max's) is math, not a mask."""
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
            return None if slope > 0 or read & set(margin.variables) else [(margin, 0)]
        rest = ir.Affine(tuple(t for t in margin.terms if t[0] != var), margin.const)
        return None if read & set(rest.variables) else [(rest, -slope)]

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


# -- copies -------------------------------------------------------------------------------------------------------

def place_copies(levels: Levels, body: TileBody, split: Split, loop: MainLoop) -> Transfers:
    """TileBody, Split, MainLoop -> Transfers: who issues the loads and through what. Every copy from an
    argument into shared memory is a TMA load, issued by the producer warpgroup (or, without warp
    specialization, by the consumers); the loads of one loop body share one ring (one per phase of a
    two-phase loop), whose slot holds their tiles. Epilogue stores go through a staging tile per consumer
    (see :func:`_stores`). A ping-pong's consumers take the step ring's slots in turn and hold a tile ring
    each. The rings' depth is left to :func:`pipeline_rings`."""
    mapping, program = levels.mapping, body.program
    pingpong = mapping.schedule == PINGPONG
    for op in argument_loads(body.epilogue):
        if program.tensor(op.target).memory == SHARED:
            if op.source.tensor in dict(mapping.memory):
                raise refusal(f"{op}: memory['{op.source.tensor}']='shared' would copy its tile into shared memory "
                              "after the srange loop, which is not scheduled yet", code="mapping-memory",
                              changes=[{"memory": {op.source.tensor: ir.REGISTER}}], loc=op.loc)
            raise _refuse(f"{op}: loads into shared memory after the srange loop are not scheduled yet",
                          hint="move the products and reductions that read this tile into the srange loop, or use it "
                               "in tile math only", loc=op.loc)
    if pingpong and not mapping.warp_specialize:
        raise refusal(f"{levels.stated}: a ping-pong needs warp_specialize=True: a producer warpgroup feeds the "
                      "ring in the order the consumers take their turns", code="bad-mapping",
                      changes=[{"warp_specialize": True}, {"schedule": COOPERATIVE}])
    resident = _resident_rows(program, body, split)
    rings = _rings(program, body, split, loop.phases, "producer" if mapping.warp_specialize else "consumers",
                   mapping)
    stores = _stores(program, body, split, mapping)
    if pingpong:
        rings = _taken_in_turn(rings)
    return Transfers(rings=tuple(rings), stores=tuple(stores), operands=_staged_operands(program, body, split),
                     resident=resident)


def _sections(body: TileBody) -> bool:
    """Whether the tile runs several passes over column blocks (a row-wise program's srange loops) and no main loop."""
    return body.main is None and any(isinstance(node, Loop) for node in body.prologue)


def _resident_rows(program: Program, body: TileBody, split: Split) -> tuple[ResidentRows, ...]:
    """The row blocks a row-wise program keeps in shared memory for the tile: where the mapping puts an argument
    its passes over column blocks read (``memory={"X": "shared"}``), each pass's tile ``X[r, k * BN]`` is column
    block ``k`` of the tile's row block, loaded once at the tile's start (:class:`ResidentRows`). The tiles must be
    the whole tile's rows at column ``k * BN`` of the pass's variable ``k``, from one row block, of an argument the
    program does not write, read by tile math only, by one consumer warpgroup or consumers that hold the tile
    together (``Split.together``)."""
    if not _sections(body):
        return ()
    stray = _shared_loads(program, [node for node in body.prologue if not isinstance(node, Loop)])
    if stray:
        raise _refuse(f"{stray[0]}: a row-wise program keeps in shared memory only the tiles its passes over column "
                      "blocks read", loc=stray[0].loc, hint=f"read '{stray[0].source.tensor}' here in tile math (the "
                      f"mapping's memory['{stray[0].source.tensor}'] = 'register')")
    found: dict[str, list] = {}
    for loop in (node for node in body.prologue if isinstance(node, Loop)):
        for op in _shared_loads(program, loop.body):
            found.setdefault(op.source.tensor, []).append((loop, op))
    planned = []
    for name, loads in sorted(found.items()):
        tensor = program.tensor(name)
        first = loads[0][1]
        shape = first.source.matrix_shape
        if tensor.privilege != "read":
            raise _refuse(f"{first}: '{name}' is written by the program, so its row block cannot stay in shared "
                          "memory across the passes", loc=first.loc, hint=f"map '{name}' to 'register' memory")
        if split.consumers != 1 and not split.together:
            raise refusal(f"{first}: a row block kept in shared memory is loaded for consumer warpgroups that hold "
                          f"the tile together, not for {split.consumers} that split its rows", code="bad-mapping",
                          changes=[{"consumers": 1}, {"memory": {name: "register"}}])
        reads = []
        for loop, op in loads:
            region = op.source
            var = loop.vars[0]
            rows, columns = (region.origin[-2], region.origin[-1]) if len(region.origin) >= 2 else (None, None)
            users = [user for user in loop.body if op.target in {operand_name(x) for x in user.reads()}]
            if len(tensor.shape) != 2 or region.transposed or len(shape) != 2 or region.shape[-2:] != shape or \
                    columns != Affine(((var, shape[1]),), 0) or rows != first.source.origin[-2] or \
                    var in rows.variables:
                raise _refuse(f"{op}: a row block kept in shared memory is read as whole tiles X[r, k * BN] of one "
                              f"row block r, column block k the pass's variable '{var}'", loc=op.loc,
                              hint=f"map '{name}' to 'register' memory")
            if not all(isinstance(user, (Map, Reduce)) for user in users):
                raise _refuse(f"{op}: a row block kept in shared memory is read by tile math only", loc=op.loc,
                              hint=f"map '{name}' to 'register' memory")
            reads.append((op.target, var))
        extents = {loop.extents[0] for loop, _ in loads}
        bounded = next((loop for loop, _ in loads if loop.below is not None), None)
        if len(extents) != 1 or bounded is not None:
            raise _refuse(f"{first}: the passes that read a row block kept in shared memory all run over its "
                          f"column blocks, the same count ({sorted(extents)} here)" +
                          (f", without a bound read on the GPU ({bounded})" if bounded is not None else ""),
                          loc=first.loc, hint=f"map '{name}' to 'register' memory")
        chunks = extents.pop()
        box = (min(shape[0], MAX_BOX), min(shape[1], MAX_BOX))       # the widest boxes: the fewest copies
        planned.append(ResidentRows(name, first.source.origin[-2], shape, chunks, tensor.dtype, box, tuple(reads)))
    return tuple(planned)


def _staged_operands(program: Program, body: TileBody, split: Split) -> tuple[StagedOperand, ...]:
    """The computed tiles products read transposed: each consumer stages its rows of one (see
    :class:`~nvdsl.tasks.stages.StagedOperand`)."""
    staged = {}
    for op in _partial_products(program, body.ops):
        name = operand_name(op.a)
        t = program.tensor(name)
        if op.acc in split.columns:        # one tile, each consumer's rows of it side by side
            staged[name] = StagedOperand(name, t.shape, t.dtype, (f"operand_{name}",), shared=True)
            continue
        rows = split.rows if name in split.split else t.shape[0]
        staged[name] = StagedOperand(name, (rows, t.shape[1]), t.dtype,
                                     tuple(f"operand_{name}_{c}" for c in range(split.consumers)))
    return tuple(staged.values())


def _rings(program: Program, body: TileBody, split: Split, phases: Phases | None, producer: str,
           mapping: Mapping) -> list[RingPlan]:
    """A ring per loop body that loads into shared memory: the prologue's, once per tile; the main loop's,
    once per step (a two-phase loop: one per phase, as step k's A tiles are read while step k - 1's B
    tiles are). Tiles split by rows are loaded in boxes of a consumer's rows."""
    main_loads = argument_loads(body.main.body) if body.main is not None else []
    groups = [("tile", "", argument_loads(body.prologue))]
    if phases is None:
        groups.append(("step", "", main_loads))
    else:
        for phase, ops in (("a", phases.issue + phases.math), ("b", phases.second)):
            names = {operand_name(x) for op in ops for x in op.reads()}
            groups.append(("step", phase, [op for op in main_loads if op.target in names]))
    consumers = tuple(f"consumer{c}" for c in range(split.consumers))
    # an M-major A (At[k, i].T): its consumers share its columns, each box holding all its K rows
    m_major = {operand_name(op.a) for op, _ in ir.walk(program.body) if isinstance(op, Mma) and op.transpose_a}
    rings = []
    for per, phase, loads in groups:
        loads = [op for op in loads if program.tensor(op.target).memory == SHARED]
        if not loads:
            continue
        offset, tiles = 0, []
        for op in loads:
            local = program.tensor(op.target)
            if len(op.source.matrix_shape) == 1:
                (box, swizzle), rows = _vector_box(op, local.dtype), None
            else:
                box_rows = split.rows if op.target in split.split and op.target not in m_major else local.shape[-2]
                rows = None if op.target in m_major else _rows_worth_loading(program, body, op, box_rows, mapping)
                box, swizzle = _box(local.shape, local.dtype, rows or box_rows, mapping)
            tiles.append(RingTile(op.target, op.source, local.dtype, box, swizzle, offset, rows=rows))
            offset += _aligned(tiles[-1].nbytes)
        rings.append(RingPlan(f"ring_{per}" + (f"_{phase}" if phase else ""), per, 0, tuple(tiles), offset,
                              producer, consumers, phase=phase))
    return rings


def _rows_worth_loading(program: Program, body: TileBody, load: Copy, box_rows: int,
                        mapping: Mapping) -> int | None:
    """The rows of a ring tile its loads bring in where fewer than all (None: all): a tile one box wide whose
    argument has fewer rows than the tile (a decode step's few rows of A under 64-row tiles) is loaded in a box of
    the argument's rows rounded up to 8, 16 or 32, not zero-filled past the argument's end by TMA, which costs as
    much as loading (H200, bf16 1 x 8192 x 8192 under 64 x 128 tiles: 49.9 us against 36.4 us with 64 real rows).
    The rows past them keep whatever the slot held: that is only allowed where nothing but the same rows of what
    the program stores depends on them (see :func:`_row_local`), and those rows lie past the end of what it stores
    into, where TMA stores write nothing."""
    region, local = load.source, program.tensor(load.target)
    if not isinstance(region, Region) or region.transposed or len(region.shape) < 2 or box_rows != local.shape[-2]:
        return None
    extent = program.tensor(region.tensor).shape[-2]
    if _box(local.shape, local.dtype, box_rows, mapping)[0][-1] != local.shape[-1]:
        return None             # boxes side by side: a wgmma reads the tile in boxes of all its rows
    rows = next((r for r in (8, 16, 32) if r >= extent), None)
    if rows is None or rows >= box_rows or box_rows % rows or \
            not _row_local(program, body.ops, load.target, region.origin[-2], extent):
        return None
    return rows


def _row_local(program: Program, ops, tile: str, origin, extent: int) -> bool:
    """Whether row ``i`` of ``tile`` reaches only row ``i`` of what ``ops`` compute from it, and is stored only at
    the row ``origin + i`` of arguments of at most ``extent`` rows along that axis: followed through the products
    it is the A operand of, elementwise maps (its row vectors broadcast along their rows), sums and maxima along
    rows, and copies. Anything else (a B operand, a sum down the columns, a row vector broadcast down the columns,
    a transposed store) mixes rows."""
    reached, changed = {tile}, True
    names = lambda x: {operand_name(x)} if isinstance(x, (str, Broadcast)) else set()    # noqa: E731
    while changed:
        changed = False
        for op in ops:
            read = {n for x in op.reads() for n in names(x)} & reached
            if not read:
                continue
            if isinstance(op, Mma):             # row i of acc += a @ b is row i of acc and of a
                ok = not names(op.b) & reached
            elif isinstance(op, Map):
                ok = not any(isinstance(x, Broadcast) and x.axis == 0 and operand_name(x) in reached
                             for x in op.inputs)
            elif isinstance(op, Reduce):
                ok = op.axis == 1
            elif isinstance(op, (Copy, FirstColumn)):
                ok = True
            else:
                ok = False
            if not ok:
                return False
            for target in op.writes():
                if isinstance(target, Region):
                    axis = -2 if len(program.tensor(operand_name(op.source)).shape) == 2 else -1
                    if target.transposed or program.tensor(target.tensor).shape[axis] > extent or \
                            target.origin[axis] != origin:
                        return False
                elif target not in reached:
                    reached.add(target)
                    changed = True
    return True


def _stores(program: Program, body: TileBody, split: Split, mapping: Mapping) -> list[StorePlan]:
    """Stores of tiles: through a staging tile per consumer, a slice of columns at a time, with TMA; or through
    the consumer's rows of a tile ring's tile of the same shape, once its products read it; or, where TMA
    cannot address the tensor (rows whose bytes are not a multiple of 16, as 50257 bfloat16 logits) of a
    program without products, by each thread's ordinary stores of its elements, clipped at the tensor's end
    (``direct``)."""
    stores, pingpong = [], mapping.schedule == PINGPONG
    tile_loads = [op for op in argument_loads(body.prologue) if program.tensor(op.target).memory == SHARED]
    # A product's tile goes out faster by TMA into a staging copy (tasks/staging.py) than by each thread's
    # stores of its accumulator's scattered pairs (H100, bf16 4095^3: 470 against 418 TFLOP/s). A program that
    # moves nothing through shared memory computes in tiles whose rows lie along a warp's lanes (emission's
    # ``rows_across_lanes``): its stores are coalesced, each thread storing its own elements.
    products = any(isinstance(op, Mma) for op in body.ops)
    read_whole = {operand_name(x) for op in body.ops if isinstance(op, Mma) and op.acc in split.columns
                  for x in (op.a, op.b)}
    lanes = in_registers(program, body.ops, _sections(body))
    for op in body.ops:
        if not (isinstance(op, Copy) and isinstance(op.target, Region) and len(op.target.matrix_shape) == 2):
            continue
        local = program.tensor(op.source)
        out_rows = split.rows if op.source in split.split or pingpong else local.shape[0]
        target = program.tensor(op.target.tensor)
        if ((target.shape[-1] * target.dtype.itemsize) % TMA_STRIDE_BYTES or lanes) and \
                op.target.end is None and len(target.shape) == 2 and not products:  # (else TMA, staged if need be)
            if op.accumulate:
                raise TaskError(f"{op}: a tile is added into '{op.target.tensor}' by TMA's atomic reduction, "
                                "which needs the tile in shared memory: a program without products keeps its "
                                "tiles in registers", code="unsupported-program",
                                hint="write the tiles into a scratch tensor (t[...] = v), one per iteration, and "
                                     "sum them in a second program", loc=op.loc)
            stores.append(StorePlan(op.source, op.target, local.dtype, (out_rows, local.shape[-1]), local.shape[-1],
                                    (), direct=True))
            continue
        if local.dtype not in (dt.float32, dt.float16, dt.bfloat16):
            raise TaskError(f"{op}: a tile goes out through shared memory as float32, float16 or bfloat16, but "
                            f"'{op.target.tensor}' is {local.dtype.name}", code="bad-dtype",
                            hint=f"pass '{op.target.tensor}' as float32, float16 or bfloat16", loc=op.loc)
        share = split.consumers if op.source in split.columns else 1       # each consumer stores its columns
        box, _ = _box(op.target.shape[:-1] + (op.target.shape[-1] // share,), local.dtype, out_rows, mapping)
        columns = local.shape[-1] // share
        slice_columns = max(box[-1], min(columns, STAGING_BYTES // (out_rows * local.dtype.itemsize)) // box[-1] *
                            box[-1])
        while columns % slice_columns:
            slice_columns -= box[-1]
        names = tuple(f"staging_{op.source}_{c}" for c in range(split.consumers))
        # A tile loaded once per tile with this one's shape, type and rows per consumer (attention's Q for
        # its O) holds each consumer's rows of the output once its products have read it; not one that a product
        # whose columns the consumers share reads whole (the fused backward's dQ += dS.T @ K reads every
        # consumer's rows of K): another consumer's product may still read the rows a consumer would store through.
        reuse = next((t for t in tile_loads if t.source.matrix_shape == local.shape and
                      program.tensor(t.target).dtype == local.dtype and not pingpong and share == 1 and
                      (t.target in split.split) == (op.source in split.split) and t.target not in read_whole),
                     None)
        # (at most 128 columns: storing 256 at once from the tile spilled attention's consumers at D = 256)
        if reuse is not None and columns <= 128:
            stores.append(StorePlan(op.source, op.target, local.dtype, box, columns, (), reuse.target,
                                    add=op.accumulate))
            tile_loads.remove(reuse)
        else:
            stores.append(StorePlan(op.source, op.target, local.dtype, box, slice_columns, names, add=op.accumulate))
    return stores


def _taken_in_turn(rings: list[RingPlan]) -> list[RingPlan]:
    """A ping-pong's rings. The main loops run one after another, in the order the producer fills the step
    ring: its slots are taken in turn (one ring of the whole depth, not a ring per consumer of half of it, so
    the consumer at the tensor cores has every slot to run ahead into). A tile ring is held through a tile's
    epilogue, while the other consumer's tile has its own: one each."""
    return [replace(r, in_turn=True) if r.per == "step" else
            replace(r, name=f"{r.name}{c}", consumers=(f"consumer{c}",))
            for r in rings for c in (range(2) if r.per == "tile" else (0,))]


def _vector_box(load: Copy, dtype: dt.DType) -> tuple[tuple[int, ...], int]:
    """The TMA box of a vector tile (``memory={name: "shared"}``: a step's log-sum-exp), unswizzled, so that its
    threads read it in order: one box of up to 256 elements."""
    region = load.source
    extent, item = region.shape[-1], dtype.itemsize
    if extent * item % TMA_STRIDE_BYTES or extent > MAX_BOX:
        raise refusal(f"{load}: a vector of {extent} elements ({extent * item} bytes) cannot be copied into shared "
                      f"memory by TMA, which moves vectors of multiples of {TMA_STRIDE_BYTES} bytes, up to {MAX_BOX} "
                      "elements", code="mapping-memory", changes=[{"memory": {region.tensor: ir.REGISTER}}],
                      loc=load.loc)
    return tuple(1 for _ in region.shape[:-1]) + (extent,), 0


def _box(tile_shape, dtype: dt.DType, rows: int, mapping: Mapping) -> tuple[tuple[int, ...], int]:
    """The TMA box and swizzle for a tile: a 128-byte (or narrower) swizzle span wide, ``rows`` tall."""
    item = dtype.itemsize
    inner = tile_shape[-1]
    inner_bytes = min(128, inner * item)
    if inner_bytes not in (32, 64, 128):
        wider = next(b // item for b in (32, 64, 128) if b >= inner * item)
        raise refusal(f"a tile whose rows are {inner} {dtype.name} values ({inner * item} bytes) cannot be laid out "
                      "for the tensor cores: rows of 32, 64 or at least 128 bytes are needed", code="mapping-tile",
                      changes=_tunables_at(mapping, inner, wider), note=f"make that tile extent {wider}")
    box_inner = inner_bytes // item
    box = tuple(1 for _ in tile_shape[:-2]) + (min(rows, 256), box_inner)
    return box, inner_bytes


def join_products(body: TileBody, transfers: Transfers, loop: MainLoop) -> Products:
    """TileBody, Transfers -> Products: the pairs of consecutive products of the main loop issued as one
    (see :class:`~nvdsl.tasks.stages.Joined`): one shared A tile, B tiles of one dtype and layout next to
    each other in one step ring's slot, accumulators filled with zeros before the loop that nothing else in
    the loop touches, N1 + N2 <= 256. None in a two-phase loop."""
    if loop.phases is not None or body.main is None:
        return Products(joined=())
    return Products(joined=_joined_products(body.program, body.prologue, body.main, transfers.rings))


def _joined_products(program: Program, prologue, main: Loop | None, rings) -> tuple[Joined, ...]:
    """The pairs of consecutive products of the main loop that can issue as one (see :class:`Joined`): one
    shared A tile, B tiles of one dtype and layout next to each other in one step ring's slot, accumulators
    filled with zeros before the loop that nothing else in the loop touches, N1 + N2 <= 256."""
    if main is None:
        return ()
    zeros = {op.target for op in prologue if isinstance(op, Fill) and op.value == 0.0}
    body = [op for op in main.body if op not in argument_loads(main.body)]
    found, used = [], set()
    for first, second in zip(body, body[1:]):
        if not (isinstance(first, Mma) and isinstance(second, Mma)) or {first.id, second.id} & used:
            continue
        if not (first.a == second.a and isinstance(first.a, str) and first.transpose_b == second.transpose_b and
                not first.transpose_a and not second.transpose_a and
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


# -- rings and depth ----------------------------------------------------------------------------------------------

def pipeline_rings(levels: Levels, body: TileBody, transfers: Transfers) -> Pipeline:
    """Transfers -> Pipeline: the slots of each ring, the products left in flight, and (one role) how far
    its loads run ahead. Without a pipeline depth in the mapping, the step ring gets as many slots as the
    shared-memory bound allows (down to products in flight + 1), and a ring filled once per tile a second
    slot where it still fits (the next tile's loads overlap this one's work); where nothing fits, the
    smallest, which :func:`allocate_shared_memory` refuses."""
    mapping = levels.mapping
    main_ops = body.main.body if body.main is not None else ()
    in_flight = mapping.mma_in_flight if any(isinstance(op, Mma) for op in main_ops) else 0
    depths = [mapping.pipeline] if mapping.pipeline is not None else \
        list(range(MAX_DEPTH, max(in_flight + 1, 2) - 1, -1))
    choices = [(depth, tile_depth) for depth in depths for tile_depth in (2, 1)]
    for depth, tile_depth in choices:
        rings = tuple(replace(r, depth=depth if r.per == "step" else tile_depth) for r in transfers.rings)
        if _place(_buffers(levels, body, transfers, rings))[1] <= mapping.smem_limit:
            break
    step = next((r for r in rings if r.per == "step"), None)
    lookahead = 0 if mapping.warp_specialize or step is None else step.depth - in_flight
    return Pipeline(rings=rings, in_flight=in_flight, lookahead=lookahead)


# -- registers ----------------------------------------------------------------------------------------------------

def budget_registers(levels: Levels, body: TileBody, split: Split) -> Registers:
    """TileBody, Split -> Registers: registers per thread of each role (the mapping's, or the producer 40 and
    the consumers an even share of the rest), checked against the register file and against what one
    consumer's accumulators need."""
    mapping, program = levels.mapping, body.program
    producers = 1 if mapping.warp_specialize else 0
    registers = derive_registers(mapping, producers)
    if producers and "producer" not in dict(mapping.registers):
        registers = _entry_holding_products(registers, mapping.consumers, program)
    check_registers(mapping, registers, producers)
    pingpong = mapping.schedule == PINGPONG
    accumulators = _live_accumulators(body, split, pingpong)
    # (consumers that hold a row-wise tile together each hold a share of its columns)
    accumulator_registers = _accumulator_registers(program, accumulators, split.split, split.rows, pingpong,
                                                   frozenset(accumulators) if split.together else split.columns,
                                                   split.consumers)
    needed = OVERHEAD_REGISTERS + accumulator_registers
    if needed > registers["consumer"]:
        elements = (registers["consumer"] - OVERHEAD_REGISTERS) * 128
        raise refusal(f"each consumer thread needs about {needed} registers for its accumulators, but the "
                      f"consumer budget is {registers['consumer']}", code="mapping-registers",
                      changes=_fitting_changes(mapping, program, accumulators, split, producers),
                      note=f"a consumer's accumulators may hold {elements} float32 elements")
    return Registers(registers=tuple(sorted(registers.items())), accumulators=accumulator_registers)


def _entry_holding_products(registers: dict, consumers: int, program: Program) -> dict:
    """``registers`` with the producer's raised where the block's entry count (the warpgroups' mean) would be
    below what ptxas needs to assemble the widest product (:func:`target.wgmma_entry_registers`; the warpgroups'
    ``settle`` would raise the entry count instead, leaving the pool's extra registers to nobody): the producer
    gives up less with one consumer."""
    widest = max((program.tensor(op.acc).shape[-1] for op, _ in ir.walk(program.body) if isinstance(op, Mma)),
                 default=0)
    producer = wgmma_entry_registers(widest) * (1 + consumers) - registers["consumer"] * consumers
    if producer <= registers["producer"]:
        return registers
    return {**registers, "producer": -(-producer // 8) * 8}


def _live_accumulators(body: TileBody, split: Split, pingpong: bool) -> set:
    """The accumulators (products' and filled tiles) live at once: all of them, except that a tile filled in one
    of a row-wise program's loops lives in that loop only, so of those only the costliest loop's count; and a
    tile filled (zeroed) inside the main loop lives from that fill to its last use in the step, so of those
    only the costliest point's count (a backward's dQ part, filled after the step's scores are last read)."""
    def filled(ops) -> set:
        return {op.acc for op in ops if isinstance(op, Mma)} | {op.target for op in ops if isinstance(op, Fill)}
    sections = [node for node in body.prologue if isinstance(node, Loop)]
    inside = [filled(loop.body) for loop in sections]
    if body.main is not None:
        after = {operand_name(x) for op in body.epilogue for x in op.reads()}
        inside += _live_in_step(body.main.body, after)
    outside = filled(body.ops) - set().union(*inside)
    costs = [_accumulator_registers(body.program, names - outside, split.split, split.rows, pingpong, split.columns,
                                    split.consumers)
             for names in inside]
    return outside | (inside[costs.index(max(costs))] if inside else set())


def _live_in_step(ops, after: set) -> list[set]:
    """The main loop's own tiles (filled in its body, not read ``after`` it) live at each point of a step, from
    their fill to their last use (a set per point)."""
    ops = list(ops)
    spans = {}
    for i, op in enumerate(ops):
        if isinstance(op, Fill) and op.target not in after:
            spans.setdefault(op.target, [i, i])
    for i, op in enumerate(ops):
        for name in {operand_name(x) for x in op.reads() + op.writes()} & set(spans):
            spans[name][1] = max(spans[name][1], i)
    return [{name for name, (first, last) in spans.items() if first <= i <= last} for i in range(len(ops))] or [set()]


def _accumulator_registers(program: Program, accumulators, split_names, rows: int, pingpong: bool,
                           shared_columns=frozenset(), consumers: int = 1) -> int:
    """Registers per consumer thread for its part of the accumulators (float32, 128 threads a consumer)."""
    total = 0
    for name in accumulators:
        t = program.tensor(name)
        per_consumer_rows = rows if name in split_names or pingpong else t.shape[0]
        columns = (t.shape[1] if len(t.shape) > 1 else 1) // (consumers if name in shared_columns else 1)
        total += -(-per_consumer_rows * columns // 128)
    return total


def _fitting_changes(mapping: Mapping, program: Program, accumulators, split: Split, producers: int) -> list[dict]:
    """Changes of the mapping under which the accumulators may fit: a cooperative schedule (its consumers
    share each tile's rows), more consumers (checked with the same arithmetic), each tunable halved (which the
    kernel checks by planning, as it does every change a refusal proposes)."""
    changes = []
    if mapping.schedule == PINGPONG:
        changes.append({"schedule": COOPERATIVE})
    elif split.split:
        tile_rows = split.rows * mapping.consumers
        for consumers in range(mapping.consumers + 1, 5):
            if tile_rows % (consumers * MMA_ROWS):
                continue
            try:
                more = replace(mapping, consumers=consumers)
            except MappingError:
                continue
            fits = OVERHEAD_REGISTERS + _accumulator_registers(program, accumulators, split.split,
                                                               tile_rows // consumers, False)
            if fits <= derive_registers(more, producers)["consumer"]:
                changes.append({"consumers": consumers})
                break
    changes += [{"tiles": {name: value // 2}} for name, value in mapping.tiles if value >= 16]
    return changes


# -- shared memory ------------------------------------------------------------------------------------------------

def allocate_shared_memory(levels: Levels, body: TileBody, transfers: Transfers, pipeline: Pipeline) -> Allocation:
    """Pipeline -> Allocation: an offset for every shared buffer (rings, staging tiles, tiles of ones), first
    fit, largest first, 1024-byte aligned; buffers share bytes only when their lifetimes are disjoint (see
    :func:`_buffers`). A total over the mapping's bound is refused, naming every buffer."""
    placed, total = _place(_buffers(levels, body, transfers, pipeline.rings))
    limit = levels.mapping.smem_limit
    if total > limit:
        listing = ", ".join(f"{b.name} {b.nbytes} B" for b in sorted(placed, key=lambda b: b.offset))
        mapping = levels.mapping
        fewer = [{"pipeline": d} for d in range((mapping.pipeline or 2) - 1, max(mapping.mma_in_flight + 1, 2) - 1, -1)]
        in_registers = [{"memory": {r.tensor: "register"}} for r in transfers.resident]
        raise refusal(f"the schedule needs {total} bytes of shared memory ({listing}), more than the mapping's "
                      f"bound of {limit}", code="mapping-smem",
                      changes=in_registers + fewer + [{"tiles": {name: value // 2}} for name, value in mapping.tiles
                                                      if value >= 16],
                      note="fewer pipeline slots or smaller tiles" + (", or row blocks read into registers in each "
                                                                       "pass" if in_registers else ""))
    offsets = {b.name: b.offset for b in placed}
    rings = tuple(replace(r, offset=offsets[r.name]) for r in pipeline.rings)
    return Allocation(rings=rings, buffers=tuple(sorted(placed, key=lambda b: (b.offset, b.name))), smem_bytes=total,
                      smem_limit=limit)


def _aligned(nbytes: int) -> int:
    return -(-nbytes // TILE_ALIGNMENT) * TILE_ALIGNMENT


def _buffers(levels: Levels, body: TileBody, transfers: Transfers, rings) -> list[Buffer]:
    """The shared buffers and their lifetimes: rings live through the main loop (the whole kernel when the
    producer loads the next tile during an epilogue: persistent or ping-pong); staging tiles in the epilogue;
    tiles of ones (written once per block) through the whole kernel."""
    live_across = levels.mapping.persistent or levels.mapping.schedule == PINGPONG
    out = [Buffer(t.name, _aligned(t.nbytes), (0, 2)) for t in body.ones]
    for r in rings:
        out.append(Buffer(r.name, r.depth * r.slot_bytes, (0, 2) if live_across or r.per == "tile" else (0, 1)))
    in_epilogue = {op.source for op in body.epilogue if isinstance(op, Copy) and isinstance(op.target, Region)}
    for s in transfers.stores:
        nbytes = _aligned(s.box[-2] * s.slice_columns * s.dtype.itemsize)
        for name in s.staging:       # a store before the epilogue (a row-wise program's) stages while rings live
            out.append(Buffer(name, nbytes, (1, 2) if s.source in in_epilogue else (0, 2)))
    out += [Buffer(name, _aligned(o.nbytes), (0, 2)) for o in transfers.operands for name in o.buffers]
    out += [Buffer(r.buffer, _aligned(r.nbytes), (0, 2)) for r in transfers.resident]
    return out


def _place(buffers: list[Buffer]) -> tuple[list[Buffer], int]:
    """First fit, largest first, 1024-byte aligned: the buffers with offsets (and what each shares bytes
    with), in the order they were placed, and the bytes they span."""
    placed: list[Buffer] = []
    for b in sorted(buffers, key=lambda b: (-b.nbytes, b.name)):
        offset = 0
        while True:
            clash = [p for p in placed if p.offset < offset + b.nbytes and offset < p.offset + p.nbytes and
                     p.lifetime[0] < b.lifetime[1] and b.lifetime[0] < p.lifetime[1]]
            if not clash:
                break
            offset = _aligned(max(p.offset + p.nbytes for p in clash))
        aliases = tuple(p.name for p in placed if p.offset < offset + b.nbytes and offset < p.offset + p.nbytes)
        placed.append(replace(b, offset=offset, aliases=aliases))
    total = max((b.offset + b.nbytes for b in placed), default=0)
    return placed, total


# -- persistence --------------------------------------------------------------------------------------------------

def persist(levels: Levels, body: TileBody, sm_count: int) -> Persistence:
    """TileBody -> Persistence: the grid and the order its blocks take the tiles in: one block per SM walking
    the tiles in the raster order (persistent), or one block per tile; a ping-pong block takes tiles in
    pairs. Tiles whose main loop is longer (``srange(below=...)``) come first."""
    mapping, main = levels.mapping, body.main
    pingpong = mapping.schedule == PINGPONG
    total = 1
    for e in body.tiles.extents:
        total *= e
    per_block = 2 if pingpong else 1
    if mapping.persistent:
        grid = max(1, min(-(-total // per_block), sm_count))
        order = f"{mapping.raster} order, every {grid}th {'pair of tiles' if pingpong else 'tile'}" + (
            f" (groups of {mapping.group} tile rows)" if mapping.raster == "grouped" else "")
    else:
        grid = -(-total // per_block)
        order = "one block per tile" if per_block == 1 else "one block per pair of tiles"
    # (an index read on the GPU says nothing of which tiles are longer: tiles are ordered by prange variables)
    longer = [v for v, c in main.below.terms if c > 0 and v in body.tiles.vars] if main is not None and \
        main.below is not None else []
    if longer:
        order += "; " + ", ".join(longer) + " descending (tiles with more steps first)"
    return Persistence(grid=grid, persistent=mapping.persistent, raster=mapping.raster, group=mapping.group,
                       tiles_per_block=order)
