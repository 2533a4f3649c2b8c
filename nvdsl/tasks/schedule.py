"""Scheduling: the planning passes of ``passes.py`` run in order on a tile program (after copy insertion
and elimination) and its mapping, and their records assemble into the :class:`~nvdsl.tasks.stages.Schedule`
that ``emit.py`` turns into calls of the primitives and :func:`explain` prints.
"""

from __future__ import annotations

from ..errors import TaskError, user_location
from . import passes
from ..layouts import warps_per_row
from .ir import Loop, Mma, Program, Reduce, argument_loads, format_program, walk
from .mapping import PINGPONG, Mapping
from .stages import (BEHIND_IN_FLIGHT, TURN_BARRIER, Schedule, format_joined, format_levels, format_memory_map,
                     format_ones, format_resident, format_store, issued_ahead)


def plan_stages(program: Program, mapping: Mapping, sm_count: int) -> dict:
    """Place ``program`` (after copy insertion and elimination) on the GPU as ``mapping`` says: each planning
    pass's record by its stage name, in the order they run, and last the ``"schedule"`` assembled from them."""
    levels = passes.assign_levels(program, mapping)
    body = passes.sum_rows_on_tensor_cores(levels)
    split = passes.split_rows(levels, body)
    passes.check_products(levels, body)
    loop = passes.order_main_loop(levels, body)
    transfers = passes.place_copies(levels, body, split, loop)
    products = passes.join_products(body, transfers, loop)
    pipeline = passes.pipeline_rings(levels, body, transfers)
    registers = passes.budget_registers(levels, body, split)
    allocation = passes.allocate_shared_memory(levels, body, transfers, pipeline)
    persistence = passes.persist(levels, body, sm_count)
    mapping = levels.mapping
    schedule = Schedule(
        program=body.program, mapping=mapping, levels=levels.levels, tile_vars=body.tiles.vars,
        tile_extents=body.tiles.extents, split=split.split, rows=split.rows, consumers=split.consumers,
        lanes_along_rows=split.lanes_along_rows, together=split.together, resident=transfers.resident,
        pingpong=mapping.schedule == PINGPONG, turns=mapping.turns, warp_specialized=mapping.warp_specialize,
        registers=registers.registers, accumulator_registers=registers.accumulators, rings=allocation.rings,
        prologue=body.prologue, main=body.main, epilogue=body.epilogue, in_flight=pipeline.in_flight,
        waited=loop.waited, lookahead=pipeline.lookahead, phases=loop.phases, unmasked=loop.unmasked,
        stores=transfers.stores, operands=transfers.operands, partial=split.partial, columns=split.columns,
        buffers=allocation.buffers, smem_bytes=allocation.smem_bytes, ones=body.ones, joined=products.joined,
        grid=persistence.grid, persistent=persistence.persistent, raster=persistence.raster,
        group=persistence.group, tiles_per_block=persistence.tiles_per_block)
    return {"levels": levels, "row_sums": body, "split": split, "main_loop": loop, "transfers": transfers,
            "products": products, "pipeline": pipeline, "registers": registers, "allocation": allocation,
            "persistence": persistence, "schedule": schedule}


def stage_text(stages: dict, name: str) -> str:
    """Stage ``name`` of ``stages`` (as :func:`plan_stages` and the event passes before it make them) as text:
    an event program, a planning pass's decisions, or the explained schedule."""
    if name not in stages:
        raise TaskError(f"no stage {name!r}: the stages are {', '.join(stages)}", code="bad-call",
                        hint="pass stage= one of the names listed, e.g. stage='schedule' (passes() gives them all)",
                        loc=user_location())
    record = stages[name]
    if isinstance(record, Schedule):
        return explain(record)
    return format_program(record) if isinstance(record, Program) else str(record)


def _sums_meet_across_warps(s: Schedule) -> bool:
    """Whether a row-wise tile's rows lie over several warps and the program reduces along them: the partial sums
    meet in shared memory that emission places (``hopper.tile``'s reduction across warps), beyond the map."""
    return s.lanes_along_rows and warps_per_row(s.rows, s.row_warps) > 1 and \
        any(isinstance(op, Reduce) and op.axis == 1 for op, _ in walk(s.program.body))


def explain(schedule: Schedule) -> str:
    """The schedule as text: mapping, roles, rings, shared-memory map, and each role's program."""
    s = schedule
    extents = " x ".join(map(str, s.tile_extents))
    lines = [f"task program '{s.program.name}' under {s.mapping}", format_levels(s.levels),
             f"grid: {s.grid} block(s) of {s.block_threads} threads over {extents} tiles ({s.tiles_per_block})",
             "roles: " + "; ".join(_roles(s))]
    for r in s.rings:
        lines.append(f"ring {r.name}: {r.depth} slots x {r.slot_bytes} B, once per {r.per}; full: 1 arrival + "
                     f"{sum(t.loaded_bytes for t in r.tiles)} B; empty: {r.empty_arrivals} arrival(s); {r.route()}; "
                     f"tiles: {r.tiles_text()}")
    lines += format_memory_map(s.buffers, s.smem_bytes, s.mapping.smem_limit)
    if _sums_meet_across_warps(s):
        lines.append(f"  and the slots where each row's {warps_per_row(s.rows, s.row_warps)} warps meet for its "
                     "reductions (a few bytes each, placed as they are traced)")
    lines.append("schedule:")
    lines += _producer(s) + _consumer(s)
    lines += [format_joined(j) for j in s.joined] + [format_ones(t) for t in s.ones]
    lines += [f"note: {note}" for note in _notes(s)]
    return "\n".join(lines) + "\n"


def _roles(s: Schedule) -> list[str]:
    regs = dict(s.registers)
    roles = []
    if s.warp_specialized:
        roles.append(f"producer = warpgroup 0 ({regs['producer']} registers): issues every load")
    first = 1 if s.warp_specialized else 0
    if s.pingpong:
        share = (f"whole tiles, alternately (consumer c takes the block's tiles c, c+2, ...), each holding its "
                 f"tile's {s.rows}-row accumulators ({s.accumulator_registers} of its registers); they take turns "
                 "at the main loop: one runs its K loop while the other waits for its turn or runs its epilogue")
    elif s.together:
        share = f"whole tiles together, each row along the lanes of warps of all {s.consumers}"
    else:
        share = f"rows {s.rows}*c .. +{s.rows} of each tile" if s.consumers > 1 else "whole tiles"
    roles.append(f"consumers = warpgroups {first}..{first + s.consumers - 1} ({regs['consumer']} registers): "
                 f"{share}" + ("" if s.warp_specialized or not s.rings else "; they also issue the loads, "
                               f"{s.lookahead} step(s) ahead"))
    return roles


def _producer(s: Schedule) -> list[str]:
    """The producer's part of the schedule (and, in a ping-pong, consumer 1's start)."""
    lines = []
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
    return lines


def _consumer(s: Schedule) -> list[str]:
    """A consumer's part of the schedule: per tile, its prologue, main loop, epilogue and stores."""
    lines = ["  consumer c: for each of its tiles" + (" (the block's tiles c, c+2, ...):" if s.pingpong else ":")]
    tile_ring = s.ring("tile")
    through_tile = any(st.in_tile for st in s.stores)
    if tile_ring is not None:
        lines.append(f"    get {tile_ring.name}: " + ", ".join(t.local for t in tile_ring.tiles) +
                     " (held for the tile)")
    lines += [f"    {format_resident(r)}" for r in s.resident]
    held = {local: r.tensor for r in s.resident for local, _ in r.reads}
    for op in s.prologue:
        if isinstance(op, Loop):                   # a row-wise program's pass over column blocks, in registers
            kept = [f"{load.target} from {held[load.target]}'s row block in shared memory"
                    for load in argument_loads(op.body) if load.target in held]
            lines.append(f"    {op}: (in registers, no ring{''.join(f'; {k}' for k in kept)})")
            lines += [f"      {inner}" for inner in op.body]
        elif not s.in_tile_ring(op):
            lines.append(f"    {op}")
    if s.pingpong:
        lines.append(f"    wait for this consumer's turn at the tensor cores (named barrier {TURN_BARRIER}+c)")
    if s.phases is not None:
        lines += _phases(s)
    elif s.main is not None:
        lines += _main_loop(s)
    if s.pingpong:
        lines.append(f"    hand the turn to the other consumer (arrive at named barrier {TURN_BARRIER}+1-c); the rest "
                     "of this tile runs during the other's main loop")
    if tile_ring is not None and not through_tile:
        lines.append(f"    release {tile_ring.name} once the products reading it retired")
    lines += [f"    {op}" for op in s.epilogue]
    if tile_ring is not None and through_tile:
        lines.append(f"    release {tile_ring.name} once the stores through it have read it")
    lines += [f"    {format_store(st)}" for st in s.stores]
    if s.resident:
        lines.append(f"    wait for the {'block' if s.together else 'warpgroup'} (its reads of the row blocks done) "
                     "before the next tile loads them")
    if s.pingpong:
        lines += [f"    skip the {r.name} slots of the other consumer's next tile" for r in s.step_rings()]
        lines.append("  after its last tile: the consumer whose turn would come next waits for it once more (the "
                     "last hand-over), so that every named barrier completes")
    return lines


def _main_loop(s: Schedule) -> list[str]:
    ring = s.ring("step")
    lines = [f"    for {s.main.vars[0]} < {s.main.extents[0]}:" +
             (f" (loads run {s.lookahead} step(s) ahead)" if s.lookahead else "")]
    if s.unmasked is not None:
        lines.append(f"      ({s.unmasked.describe(s.main.vars[0])}: a loop without them, then one with them)")
    if ring is not None:
        lines.append(f"      get {ring.name}: " + ", ".join(t.local for t in ring.tiles))
    loads = argument_loads(s.main.body) if ring is not None else []
    in_flight = f"  [{s.in_flight} product(s) left in flight]"
    body = [op for op in s.main.body if op not in loads]
    ahead = issued_ahead(body, s.waited)
    behind = {i for later in ahead.values() for i in later}      # their wait retires the group issued ahead

    def note(op) -> str:
        if op.id in ahead:
            return f"  [waited for: the step reads it, once {', '.join(f'e{i}' for i in ahead[op.id])} issued]"
        if op.id in s.waited:
            return "  [waited for: the step reads it]"
        return f"  [{min(BEHIND_IN_FLIGHT, s.in_flight)} product(s) left in flight]" if op.id in behind else in_flight
    lines += [f"        {op}" + (note(op) if isinstance(op, Mma) else "") for op in body]
    if s.turns and not s.pingpong:
        lines.append(f"      the step's first products at this consumer's turn at the tensor cores (named barrier "
                     f"{TURN_BARRIER}+c), left running while it hands the turn to the next consumer; the last "
                     "consumer opens consumer 0's first turn and hands over after all but its last step")
    if ring is not None:
        lines.append("      release: each slot once the products reading it retired")
    return lines


def _phases(s: Schedule) -> list[str]:
    p, var = s.phases, s.main.vars[0]
    a, b = s.ring("step", phase="a"), s.ring("step", phase="b")
    turn = ["      wait for this consumer's turn at the tensor cores"] if s.turns else []
    handover = ["      hand the turn to the next consumer"] if s.turns else []
    trips = f"{var} < {s.main.extents[0]}" + (f" while {var}*{s.main.step} < {s.main.below}"
                                               if s.main.below is not None else "")
    lines = [f"    step {var} = 0: phase A alone",
             f"    for {trips}, from 1: phase A of step {var} around phase B of step {var}-1"]
    if s.unmasked is not None:
        lines.append(f"      ({s.unmasked.describe(var)}: a loop without them, then one with them)")
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
    return lines


def _notes(s: Schedule) -> list[str]:
    tables = dict.fromkeys(i.table for i in s.program.indices if i.role)
    notes = [f"row tiles are read from '{table}' on the GPU: a tile with no rows is skipped by every role, and "
             "stores stop at the tile's group's end (ragged TMA)" for table in tables]
    read = [i for i in s.program.indices if not i.role]
    if read:
        notes.append("indices read on the GPU once per tile by each role (nt.load_index): " +
                     ", ".join(i.name for i in read))
    if s.main is not None and s.main.below is not None and {i.name for i in read} & set(s.main.below.variables):
        notes.append(f"the main loop's trips, min({s.main.extents[0]}, ceil(({s.main.below}) / {s.main.step})), are "
                     "read on the GPU; a tile with none (below <= 0) skips the loop" +
                     (" and its first step" if s.phases is not None else "") + " in every role, and its epilogue "
                     "reads the values from before it")
    if any(b.aliases for b in s.buffers):
        notes.append("the epilogue's staging tiles reuse the ring's memory once every consumer has left the main loop")
    return notes
