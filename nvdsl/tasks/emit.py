"""Emission: a :class:`~nvdsl.tasks.stages.Schedule` becomes calls of nvdsl's primitives inside the traced
host function: TMA descriptors, one ``gpu_launch``, ``Aref`` rings, ``Warpgroup`` roles, wgmma
accumulators and a TMA-store epilogue. Generated and hand-written kernels share this one lowering.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import replace

from .. import dtypes as dt
from ..errors import TaskError
from ..frontend.context import program_line
from ..frontend.control import cond, fori, for_range, when
from ..frontend.launch import gpu_launch
from ..frontend.math import erf, exp2, log2, rsqrt, sqrt, tanh, where
from ..frontend.memory import Array
from ..frontend.values import constant, maximum, minimum, select
from ..hopper.aref import Aref
from ..hopper.mbarrier import Mbarriers
from ..hopper.tile import ColumnVector, RegisterTile, RowVector
from ..hopper.timeline import Timeline
from ..hopper.tma import TMA, fence_shared_to_async, tma_store_wait
from ..hopper.warpgroup import Warpgroup
from ..hopper.wgmma import WGMMAAccumulator, WGMMAMatrix, stage_operand, wgmma_group, wgmma_wait
from ..layouts import rows_across_lanes, warps_per_row, wgmma_accumulator
from . import staging
from .analysis import operand_name
from .ir import (Affine, Broadcast, Copy, Fill, FirstColumn, Gather, Iota, Loop, Map, Mma, Reduce, Region,
                 argument_loads)
from .profile import DATA_WAIT, EPILOGUE, LOAD, MATH, PRODUCT_WAIT, STEP, TILE, TURN_WAIT, roles
from .stages import (AHEAD, BEHIND, BEHIND_IN_FLIGHT, EXCHANGE_BARRIER, OP, TURN_BARRIER, OnesTile, ResidentRows,
                     Schedule, product_groups)


def emit(schedule: Schedule, arrays: dict, timeline: tuple | None = None) -> None:
    """Trace the kernel of ``schedule`` into the host function being traced; ``arrays`` maps the program's
    argument names to the host function's arrays. With ``timeline`` (an int64 header and events array, see
    :mod:`nvdsl.hopper.timeline`), each role records its spans (``profile.SPAN_KINDS``)."""
    s = schedule
    arrays, copy_back = staging.stage(s, arrays)      # arguments TMA cannot address: through staging copies
    tmas = _Descriptors(s, arrays)

    @gpu_launch(grid=s.grid, block=s.block_threads, smem=s.smem_bytes)
    def kernel(ctx):
        ctx.launch_dependents()     # a kernel after it that overlaps it (split-K's sum) gets ready meanwhile
        _Block(s, ctx, arrays, tmas, timeline).run()

    kernel()
    for staged, argument in copy_back:
        staging.copy(staged, argument)


def _at_task_line(method):
    """Emit ``method(self, op, ...)`` for ``op``'s line of the task: the ops it makes are located there, and a
    user error raised on the way names it beside the user's call (``frontend.context.program_line``)."""
    @functools.wraps(method)
    def emitting(self, op, *args, **kwargs):
        with program_line(op.loc):
            return method(self, op, *args, **kwargs)
    return emitting


class _Descriptors:
    """The kernel's TMA descriptors, made on the host, one per argument, box, swizzle and raggedness:
    ``rings[(ring, local)]`` fills a ring tile, ``stores[local]`` stores a tile."""

    def __init__(self, s: Schedule, arrays: dict):
        self.arrays = arrays
        self.all: dict[tuple, TMA] = {}
        self.rings = {(r.name, t.local): self.of(t.source.tensor, t.box, t.swizzle) for r in s.rings for t in r.tiles}
        # A store of a row tile (nt.row_tiles) is clipped where its group ends: a ragged descriptor.
        self.stores = {st.source: self.of(st.target.tensor, st.box, min(128, st.box[-1] * st.dtype.itemsize),
                                          ragged=st.target.end is not None)
                       for st in s.stores if not st.direct}
        # unswizzled: a lane's 16 bytes of a row lie side by side, and the widest boxes mean the fewest copies
        self.resident = {r.tensor: self.of(r.tensor, r.box, 0) for r in s.resident}

    def of(self, tensor: str, box, swizzle: int, ragged: bool = False) -> TMA:
        key = (tensor, tuple(box), swizzle, ragged)
        if key not in self.all:
            self.all[key] = TMA(self.arrays[tensor], box=tuple(box), swizzle=swizzle, ragged=ragged)
        return self.all[key]


class _Block:
    """One block of the kernel: its shared memory (rings, staging tiles, tiles of ones), the tiles it takes
    (in groups: a tile, or a ping-pong's pair of tiles), and its roles."""

    def __init__(self, s: Schedule, ctx, arrays: dict, tmas: _Descriptors, timeline: tuple | None = None):
        self.s, self.ctx, self.arrays = s, ctx, arrays
        self.timeline = timeline
        self.counters = ctx.shared_array((len(roles(s)),), dt.int32) if timeline is not None else None
        self.ring_tmas, self.store_tmas = tmas.rings, tmas.stores
        self.rings = {r.name: Aref(ctx, [(t.source.matrix_shape, t.dtype) + ((t.rows,) if t.rows else ())
                                         for t in r.tiles], depth=r.depth,
                                   name=r.name, at=r.offset, in_turn=r.in_turn) for r in s.rings}
        buffers = {b.name: b for b in s.buffers}
        self.staging = {}
        for st in s.stores:
            for name in st.staging:
                self.staging[name] = ctx.dynamic_shared((st.box[-2], st.slice_columns), st.dtype,
                                                        offset=buffers[name].offset, align=1024)
        for o in s.operands:
            for name in o.buffers:
                self.staging[name] = ctx.dynamic_shared(o.shape, o.dtype, offset=buffers[name].offset, align=1024)
        self.ones = {t.name: _write_ones(ctx, t, buffers[t.name].offset, s.block_threads) for t in s.ones}
        self.resident = {r.tensor: _RowBlock(ctx, r, buffers[r.buffer].offset, tmas.resident[r.tensor])
                         for r in s.resident}
        with when(ctx.linear_thread_id.eq(0)):
            for tma in tmas.all.values():
                tma.prefetch()
        self.total_tiles = 1
        for e in s.tile_extents:
            self.total_tiles *= e
        self.per_group = 2 if s.pingpong else 1
        self.groups_total = -(-self.total_tiles // self.per_group)
        self.my_groups = (self.groups_total - 1 - ctx.block_id.x) // s.grid + 1 if s.persistent else 1
        # Ping-pong: a block's tiles come in pairs, (group, 0) for consumer 0 and (group, 1) for consumer 1; only
        # the grid's last pair can lack its second tile (an odd tile count). The loops run over whole pairs and
        # that last tile is peeled off, so that no loop body asks which tile it is at: loops that read no index
        # repeat their state, and the protocol check summarises them.
        self.full_pairs = self.my_groups
        if s.pingpong and self.total_tiles % 2:
            owns_last = ctx.block_id.x.eq((self.groups_total - 1) % s.grid)
            self.full_pairs = self.my_groups - select(owns_last, constant(1, dt.index), 0)

    def run(self) -> None:
        if self.s.warp_specialized:
            self.producer()
        if self.s.together:
            self.together()
            return
        for c in range(self.s.consumers):
            self.consumer(c)

    def recorder(self, role: int, thread=None):
        """Role ``role``'s timeline (recorded by ``thread``'s first thread, or by whoever runs it), or a recorder
        that records nothing when the kernel is not profiled."""
        if self.timeline is None:
            return _NOT_RECORDED
        return Timeline(self.ctx, *self.timeline, self.counters, role,
                        recorder=thread.thread_index.eq(0) if thread is not None else None)

    # -- the block's tiles -----------------------------------------------------------------------------------
    def tile_of(self, group, member: int):
        """The tile number (and whether it exists) of member ``member`` of this block's group ``group``."""
        first = (self.ctx.block_id.x + group * self.s.grid) if self.s.persistent else self.ctx.block_id.x
        number = first * self.per_group + member
        return number, number < self.total_tiles

    def coordinates(self, number) -> dict:
        env = _tile_coordinates(self.s, number)
        for index in self.s.program.indices:          # a row tile's group and rows, and nt.load_index's indices
            value = self.arrays[index.table][tuple(_index_at(a, env) for a in index.at)]
            env[index.name] = value if index.role else value.to(dt.index)
        return env

    def steps_of(self, group, member: int):
        """The main loop's trips of the block's tile (group, member): 0 if it has no rows; past the block's
        last tile, any count (nothing reads the rings after it)."""
        s = self.s
        if s.main is None:
            return 0
        if s.main.below is None and not s.program.indices:
            return s.main.extents[0]
        number, exists = self.tile_of(group, member)
        env = self.coordinates(select(exists, number, 0))     # a tile that exists, to read its table rows
        trips = _trips(s, env)
        trips = constant(trips, dt.int32) if isinstance(trips, int) else trips.to(dt.int32)
        rows = _has_rows(s, env)
        return trips if rows is None else select(rows, trips, 0)

    # -- the roles -------------------------------------------------------------------------------------------
    def producer(self) -> None:
        """Warpgroup 0: one thread waits for free slots and issues every load, tile by tile."""
        with Warpgroup(self.ctx, 0, register_size=dict(self.s.registers)["producer"]) as producer:
            with when(producer.thread_index.eq(0)):
                timeline = self.recorder(0)
                timeline.start()
                for group in for_range(self.full_pairs):
                    for member in range(self.per_group):
                        self.put_tile(group, member, timeline)
                if self.full_pairs is not self.my_groups:
                    with when(self.full_pairs < self.my_groups):
                        self.put_tile(self.my_groups - 1, 0, timeline)
                timeline.finish()

    def put_tile(self, group, member: int, timeline) -> None:
        s = self.s
        env = self.coordinates(self.tile_of(group, member)[0])
        with _nonempty(s, env), timeline.span(TILE):
            if s.ring("tile", member) is not None:
                with timeline.span(LOAD):
                    _put_tile_loads(s, self.rings, self.ring_tmas, env, member)
            steps = s.step_rings(member)
            if steps:
                for k in for_range(_trips(s, env)):
                    env[s.main.vars[0]] = k
                    for step in steps:
                        with timeline.span(LOAD):
                            _put(self.rings[step.name], step, self.ring_tmas, env)

    def consumer(self, c: int) -> None:
        s = self.s
        register_size = dict(s.registers)["consumer"] if s.warp_specialized else None
        first = 1 if s.warp_specialized else 0
        with Warpgroup(self.ctx, 128 * (first + c), register_size=register_size) as wg:
            timeline = self.recorder(first + c, wg)
            timeline.start()
            if s.pingpong:
                self.ping_pong_consumer(wg, c, timeline)
            else:
                for group in for_range(self.my_groups):
                    env = self.coordinates(self.tile_of(group, 0)[0])
                    with _nonempty(s, env):
                        _Consumer(self, wg, c, env, timeline=timeline, count=group).run_tile()
            tma_store_wait(0)
            timeline.finish()

    def together(self) -> None:
        """The consumer warpgroups of row-wise tiles they hold together (``Schedule.together``): one body over all
        their threads, outside any Warpgroup, so that a row's sums meet at the block's barrier."""
        s = self.s
        threads = _BlockThreads(self.ctx)
        timeline = self.recorder(0, threads)
        timeline.start()
        for group in for_range(self.my_groups):
            env = self.coordinates(self.tile_of(group, 0)[0])
            with _nonempty(s, env):
                _Consumer(self, threads, 0, env, timeline=timeline, count=group).run_tile()
        timeline.finish()

    def ping_pong_consumer(self, wg, c: int, timeline) -> None:
        """Consumer ``c`` of a ping-pong: the block's tiles (group, c), each one turn at the main loop (a tile
        without rows too, so that the turns alternate), in the order the producer fills the step rings. Each
        passes over the other's slots (after each of its tiles, those of the other's next tile); after its
        last turn each hands the turn on, and the consumer whose turn would be next takes that arrival with
        a last wait, so that every named barrier completes."""
        s, my_groups, full_pairs = self.s, self.my_groups, self.full_pairs
        turn = _Turn(self.ctx, c, 2, timeline)
        step_rings = [self.rings[r.name] for r in s.step_rings(c)]
        if c == 1:
            turn.hand_over()                 # open consumer 0's first turn: every block has a tile
            for ring in step_rings:
                ring.skip(self.steps_of(0, 0))
        for group in for_range(my_groups if c == 0 else full_pairs):
            env = self.coordinates(self.tile_of(group, c)[0])
            rows = _has_rows(s, env)
            consumer = _Consumer(self, wg, c, env, turn=turn, timeline=timeline)
            if rows is None:
                consumer.run_tile()
            else:
                with when(rows) as branch:
                    consumer.run_tile()
                with branch.otherwise():         # no rows, no loop: the turn passes on
                    turn.wait()
                    turn.hand_over()
            for ring in step_rings:
                ring.skip(self.steps_of(group, 1) if c == 0 else self.steps_of(group + 1, 0))
        # The last turn's hand-over: consumer 1's (every pair full) reaches consumer 0, consumer 0's (the last
        # pair without a second tile) consumer 1.
        if full_pairs is my_groups:
            if c == 0:
                turn.wait()
        else:
            with when(full_pairs.eq(my_groups) if c == 0 else full_pairs < my_groups):
                turn.wait()


def _write_ones(ctx, tile: OnesTile, offset: int, threads: int) -> Array:
    """The tile of ones at ``offset`` in shared memory, written by every thread of the block and fenced for
    the async proxy (wgmma reads it), before any role starts."""
    array = ctx.dynamic_shared(tile.shape, tile.dtype, offset=offset, align=1024)
    flat, one = array.flatten(), constant(1.0, tile.dtype)
    for first in range(0, flat.size, threads):
        index = ctx.linear_thread_id + first
        with when(index < flat.size) if first + threads > flat.size else contextlib.nullcontext():
            flat[index] = one
    fence_shared_to_async()
    ctx.sync_threads()
    return array


def _has_rows(s: Schedule, env: dict):
    """Whether the tile of ``env`` has rows (None: every tile has): a row tile (nt.row_tiles) whose first
    row is its end row is empty (the table's padding) and skipped by every role alike."""
    ends = {(i.table, i.var): i.name for i in s.program.indices if i.role == "end"}
    condition = None
    for i in s.program.indices:
        if i.role == "start" and (i.table, i.var) in ends:
            rows = env[i.name] < env[ends[i.table, i.var]]
            condition = rows if condition is None else condition & rows
    return condition


def _nonempty(s: Schedule, env: dict):
    """A region entered only by tiles with rows (see :func:`_has_rows`)."""
    condition = _has_rows(s, env)
    return contextlib.nullcontext() if condition is None else when(condition)


class _Turn:
    """Consumer ``c``'s turns at the tensor cores, among ``consumers`` taking them round: named barrier
    ``TURN_BARRIER + c`` opens its turn once the consumer before it arrives there (each such barrier counts
    two warpgroups, the one waiting and the one handing over). Turns that go round keep every hand-over
    matched by its wait before the next hand-over to the same barrier, whose two arrivals would otherwise
    complete it without its waiter."""

    def __init__(self, ctx, c: int, consumers: int, timeline):
        self.ctx, self.c, self.consumers, self.timeline = ctx, c, consumers, timeline

    def wait(self) -> None:
        with self.timeline.span(TURN_WAIT):
            self.ctx.sync_threads(2 * 128, barrier=TURN_BARRIER + self.c)

    def hand_over(self) -> None:
        self.ctx.arrive_threads(2 * 128, barrier=TURN_BARRIER + (self.c + 1) % self.consumers)


def _tile_coordinates(s: Schedule, number) -> dict:
    """The prange variables of tile ``number`` (a traced index) in the mapping's raster order."""
    extents, names = s.tile_extents, s.tile_vars
    env = {}
    while len(extents) > 2:                          # batch axes outermost, then the 2-D order within them
        per_batch = 1
        for e in extents[1:]:
            per_batch *= e
        env[names[0]] = number // per_batch
        number = number % per_batch
        extents, names = extents[1:], names[1:]
    if len(extents) == 1:
        env[names[0]] = number
        return _longest_first(s, env)
    rows, cols = extents
    raster = s.raster
    if raster == "grouped":
        group = s.group
        tiles_in_group = group * cols
        first_row = number // tiles_in_group * group
        rows_in_group = minimum(rows - first_row, group)
        in_group = number % tiles_in_group
        env[names[0]] = first_row + in_group % rows_in_group
        env[names[1]] = in_group // rows_in_group
    elif raster == "snake":
        row = number // cols
        col = number % cols
        env[names[0]] = row
        env[names[1]] = col + (row % 2) * (cols - 1 - 2 * col)
    else:
        env[names[0]] = number // cols
        env[names[1]] = number % cols
    return _longest_first(s, env)


def _longest_first(s: Schedule, env: dict) -> dict:
    """Tile variables that lengthen the main loop (``srange(below=...)``) walked from their last value down:
    the tiles with the most steps start first, and the short ones fill in at the end."""
    if s.main is not None and s.main.below is not None:
        extents = dict(zip(s.tile_vars, s.tile_extents))
        for var, coefficient in s.main.below.terms:
            if coefficient > 0 and var in extents:       # not an index read from a table (nt.load_index)
                env[var] = (extents[var] - 1) - env[var]
    return env


def _index_at(affine: Affine, env: dict):
    """An index into a table (:class:`~nvdsl.tasks.ir.Index`): a bare variable or int as itself."""
    if not affine.terms:
        return affine.const
    if len(affine.terms) == 1 and affine.terms[0][1] == 1 and not affine.const:
        return env[affine.terms[0][0]]
    return _evaluate(affine, env)


def _as_int32(x):
    """An evaluated index as a traced int32 (a Python int as a constant)."""
    return constant(x, dt.int32) if isinstance(x, int) else x.to(dt.int32)


def _evaluate(affine: Affine, env: dict):
    value = affine.const
    for var, coefficient in affine.terms:
        value = env[var] * coefficient + value
    return value


def _origin(region: Region, env: dict, row_offset: int = 0, column_offset: int = 0) -> tuple:
    origin = [_evaluate(a, env) for a in region.origin]
    if row_offset:
        origin[-2] = origin[-2] + row_offset
    if column_offset:
        origin[-1] = origin[-1] + column_offset
    return tuple(origin)


def _trips(s: Schedule, env: dict):
    """The main loop's trip count for the tile of ``env``: its extent, or fewer under ``below``."""
    return _loop_trips(s, s.main, env)


def _loop_trips(s: Schedule, loop: Loop, env: dict):
    """The trips of srange ``loop`` for the tile of ``env``: its extent, or fewer under ``below``; none where a
    ``below`` read on the GPU is not positive."""
    extent = loop.extents[0]
    if loop.below is None:
        return extent
    below = _evaluate(loop.below, env)
    if isinstance(below, int):
        return max(0, min(extent, -(-below // loop.step)))
    trips = minimum((below + (loop.step - 1)) // loop.step, extent)
    return maximum(trips, 0) if _read_trips(s, loop) else trips


def _read_trips(s: Schedule, loop: Loop | None) -> bool:
    """Whether ``loop``'s trip count depends on indices read on the GPU, so that a tile may have no step (a
    ``below`` of prange variables alone is checked positive when planning: ``passes._check_trips``)."""
    read = {index.name for index in s.program.indices}
    return loop is not None and loop.below is not None and any(v in read for v in loop.below.variables)


def _put(ring: Aref, plan, tmas: dict, env: dict) -> None:
    ring.put(*[(tmas[(plan.name, t.local)], _origin(t.source, env)) for t in plan.tiles])


def _put_tile_loads(s: Schedule, rings: dict, tmas: dict, env: dict, member: int) -> None:
    plan = s.ring("tile", member)
    if plan is not None:
        _put(rings[plan.name], plan, tmas, env)


class _NotRecorded:
    """The timeline of a kernel that is not profiled: records nothing, emits nothing."""

    def start(self) -> None:
        pass

    def finish(self) -> None:
        pass

    @contextlib.contextmanager
    def span(self, kind: int):
        yield


_NOT_RECORDED = _NotRecorded()


class _Consumer:
    """One consumer warpgroup's work on one tile: prologue, main loop over ring slots, epilogue."""

    def __init__(self, block: _Block, wg, c: int, env: dict, turn: _Turn | None = None, timeline=_NOT_RECORDED,
                 count=None):
        """``count``: how many tiles the consumer ran before this one (the phase of the row blocks' barriers)."""
        self.s = s = block.s
        self.timeline = timeline
        self.ctx, self.wg, self.c = block.ctx, wg, c
        self.turn = turn                 # ping-pong: this consumer's turns at the main loop
        self.rings, self.ring_tmas, self.store_tmas = block.rings, block.ring_tmas, block.store_tmas
        self.staging, self.arrays, self.env = block.staging, block.arrays, env
        # 0: tiles in wgmma's accumulator layout; else a row-wise program's rows along a warp's lanes in runs of this
        # many columns a lane (see _tile_layout)
        self.row_run = staging.row_run(staging.argument_layouts(block.arrays)) if s.lanes_along_rows else 0
        self.program = s.program
        self.values: dict = dict(block.ones)
        self.ones = frozenset(block.ones)
        self.pingpong = s.pingpong
        self.cooperative = s.consumers > 1 and not self.pingpong and not s.together
        self.warps = s.row_warps            # the warps a row-wise tile lies over
        self.step = s.ring("step", c)
        self.tile_ring = s.ring("tile", c)
        self._slice: dict = {}           # values of deferred math computed for the current column slice
        self.slot: tuple = ()             # the tiles of the step ring's slot the main loop holds
        self.unmask = False              # in steps where no mask of the main loop changes a value
        self.row_blocks = block.resident
        # the shared locals the passes read from a row block kept in shared memory: local -> (its tensor, the pass's
        # variable that picks the column block)
        self.resident_reads = {local: (r.tensor, var) for r in s.resident for local, var in r.reads}
        self.parity = (count % 2).to(dt.int32) if s.resident and count is not None else 0

    # -- where this consumer's part of a tensor is ------------------------------------------------------------
    def split(self, name: str) -> bool:
        return self.cooperative and name in self.s.split

    def rows(self, name: str) -> int:
        """The rows of tensor ``name`` this consumer holds."""
        shape = self.program.tensor(name).shape
        full = shape[-2] if len(shape) >= 2 else shape[0]     # a tile's rows (the leading axes of a 4-D one are 1)
        return self.s.rows if self.split(name) or self.pingpong else full

    def row0(self, name: str) -> int:
        """Where this consumer's rows of ``name`` start within the tile."""
        return self.c * self.s.rows if self.split(name) else 0

    def columns(self, name: str) -> tuple[int, int]:
        """The first of the columns of tile ``name`` this consumer holds, and how many (all but of a tile whose
        columns the consumers share: Schedule.columns)."""
        width = self.program.tensor(name).shape[-1]
        if name in self.s.columns:
            return self.c * width // self.s.consumers, width // self.s.consumers
        return 0, width

    # -- the tile --------------------------------------------------------------------------------------------
    def run_tile(self) -> None:
        with self.timeline.span(TILE):
            self._run_tile()

    @contextlib.contextmanager
    def get(self, ring: Aref):
        """``ring.get()``: the views of its next slot, the wait for their data recorded as a span."""
        with contextlib.ExitStack() as held:
            with self.timeline.span(DATA_WAIT):
                views = held.enter_context(ring.get())
            yield views

    def _run_tile(self) -> None:
        s = self.s
        if s.resident:
            with self.timeline.span(LOAD):
                for plan in s.resident:
                    self.row_blocks[plan.tensor].load(_evaluate(plan.rows, self.env), self.wg.thread_index,
                                                      32 * self.warps)
        ring_tiles = self.tile_ring.tiles if self.tile_ring is not None else ()
        with self.get(self.rings[self.tile_ring.name]) if ring_tiles else contextlib.nullcontext() as views:
            for plan_tile, view in zip(ring_tiles, views or ()):
                self.values[plan_tile.local] = view
            for op in s.prologue:
                if not s.in_tile_ring(op):           # the ring's loads are its slot's views
                    self.run(op)
            self.take_turn()
            if s.phases is not None:
                _TwoPhaseLoop(self).run()
            elif s.main is not None:
                self.main_loop()
                self.end_turn()                      # its last products still run: the other's first queue behind
                if s.in_flight or ring_tiles:
                    with self.timeline.span(PRODUCT_WAIT):   # the epilogue reads the accumulators; the rings
                        wgmma_wait(0)                        # get their slots back
            else:
                self.end_turn()
            through_tile = any(st.in_tile for st in s.stores)
            if through_tile:                         # the epilogue stores through the tile ring's slot
                with self.timeline.span(EPILOGUE):
                    self.epilogue()
                    tma_store_wait(0)                # the stores have read the slot before it is released
        if not through_tile:
            with self.timeline.span(EPILOGUE):
                self.epilogue()
        if s.resident:
            self.wg.sync()          # every read of the row blocks done before the next tile's loads overwrite them

    def take_turn(self) -> None:
        """Ping-pong: wait for this consumer's turn at the main loop."""
        if self.turn is not None:
            self.turn.wait()

    def end_turn(self) -> None:
        """Ping-pong: hand the turn to the other consumer."""
        if self.turn is not None:
            self.turn.hand_over()

    def epilogue(self) -> None:
        s = self.s
        for j in s.joined:                          # the joined product's columns (its products have retired)
            acc, (n1, n2) = self.values.pop(j.accumulators[0]), j.columns
            self.values[j.accumulators[0]], self.values[j.accumulators[1]] = acc.columns(0, n1), acc.columns(n1, n1 + n2)
        if any(b.aliases for b in s.buffers):      # staging reuses the ring: every consumer must have left it
            self.ctx.sync_threads(128 * s.consumers, barrier=9)
        for op in s.epilogue:
            if isinstance(op, Copy) and isinstance(op.target, Region):
                self.store(op)
            elif isinstance(op, Map) and op.out in op.inputs:
                self.map(op)                         # in place (acc += Rt[i, j]): its input is the value before it
            elif isinstance(op, Map):
                # Elementwise math is computed where its result is stored, a column slice at a time, so that
                # the registers hold one slice of it (and of its column vectors) beside the accumulators.
                self.values[op.out] = _Deferred(op)
            else:
                self.run(op)

    def main_loop(self) -> None:
        s, env = self.s, self.env
        carried = {name: self.values[name] for name in _carried(s)}
        extent = s.main.extents[0]
        in_ring = {t.local for t in self.step.tiles} if self.step is not None else set()
        loads = [op for op in argument_loads(s.main.body) if op.target in in_ring]   # the others: vectors, tiles
        issuer = not s.warp_specialized and self.c == 0
        ring = self.rings[self.step.name] if self.step is not None else None
        read = _read_trips(s, s.main)
        if read:
            extent = _trips(s, env)                  # the issuer puts no step past the tile's last (read on the GPU)
        if issuer and ring is not None:
            with when(self.wg.thread_index.eq(0)):   # one thread waits for free slots and issues (as a producer)
                for k in range(min(s.lookahead, s.main.extents[0])):
                    env[s.main.vars[0]] = k
                    with when(extent > k) if read else contextlib.nullcontext():
                        _put(ring, self.step, self.ring_tmas, env)

        body = [op for op in s.main.body if op not in loads]
        trips = extent if read else _trips(s, env)
        turn = _Turn(self.ctx, self.c, s.consumers, self.timeline) if s.turns and not s.pingpong else None
        last = s.consumers - 1
        if turn is not None and self.c == last:
            with when(trips > 0) if read else contextlib.nullcontext():
                turn.hand_over()                     # opens consumer 0's first turn

        def step(k):
            env[s.main.vars[0]] = k
            # the last consumer's last step hands over to no one
            at_turn = None if turn is None else (turn, None if self.c != last else k + 1 < trips)
            if ring is not None:
                with self.get(ring) as tiles:
                    for plan_tile, view in zip(self.step.tiles, tiles):
                        self.values[plan_tile.local] = view
                    self.slot = tiles
                    with self.timeline.span(STEP):
                        self.run_all(body, at_turn)
            else:
                with self.timeline.span(STEP):
                    self.run_all(body, at_turn)
            if issuer and ring is not None:
                with when((k + s.lookahead < extent) & self.wg.thread_index.eq(0)):
                    env[s.main.vars[0]] = k + s.lookahead
                    _put(ring, self.step, self.ring_tmas, env)

        def steps(first, stop, masked: bool) -> None:
            @fori(first, stop, carry={name: self.values[name] for name in carried})
            def after(k, values):
                self.values.update(values)
                self.unmask = not masked
                step(k)
                return {name: self.values[name] for name in values}
            self.values.update(after)
            self.unmask = False

        unmasked = _unmasked_steps(s, env, trips)
        if unmasked is None:
            steps(0, trips, masked=True)
            return
        static = isinstance(unmasked, int) and isinstance(trips, int)   # the steps no mask changes first
        split = min(unmasked, trips) if static else minimum(unmasked, trips)
        if not (static and split == 0):
            steps(0, split, masked=False)
        if not (static and split == trips):
            steps(split, trips, masked=True)

    # -- operations ------------------------------------------------------------------------------------------
    def run_all(self, ops, at_turn: tuple | None = None) -> None:
        """Run ``ops`` in order, consecutive products as wgmma groups (one fence, one commit: accumulators fed by
        the same tiles stay in one pipeline stage) as ``stages.product_groups`` splits them: a group issued ahead
        of the next one is left running, and waited for where it is read. ``at_turn``: (the consumer's turn, a
        condition for handing it on or None for always): the first group goes out at the turn (see
        :meth:`issue_at_turn`)."""
        for group, kind in product_groups(ops, self.s.waited):
            if kind == OP:
                self.run(group[0])
            elif at_turn is not None:
                self.issue_at_turn(group, *at_turn)
                at_turn = None
            elif kind == AHEAD:                 # left running: the next group goes out first
                self.issue(group, in_flight=min(self.ctx.wgmma_in_flight + 1, 7))
            elif kind == BEHIND:                # the group ahead retires here, for its readers
                self.issue(group, in_flight=min(BEHIND_IN_FLIGHT, self.in_flight(*group)))
            else:
                self.issue(group, in_flight=self.in_flight(*group))

    def issue_at_turn(self, products, turn: _Turn, hand_over) -> None:
        """A one-phase step's first products (read by the step: the planner checks), issued at this consumer's
        turn at the tensor cores and left running while it hands the turn on (where ``hand_over``, if given,
        holds), then waited for: the next consumer's products run while this one computes on its own."""
        turn.wait()
        self.issue(products, in_flight=min(self.ctx.wgmma_in_flight + 1, 7))
        with when(hand_over) if hand_over is not None else contextlib.nullcontext():
            turn.hand_over()
        with self.timeline.span(PRODUCT_WAIT):
            wgmma_wait(self.in_flight(*products))

    def issue(self, products, in_flight: int) -> None:
        """``products`` as one wgmma group (a lone product on its own), then at most ``in_flight`` groups left
        running."""
        if len(products) == 1:
            self.product(products[0], in_flight=in_flight)
            return
        with wgmma_group(in_flight=in_flight):
            for op in products:
                self.product(op)

    @_at_task_line
    def product(self, op: Mma, in_flight=None) -> None:
        joined = next((j for j in self.s.joined if op.id in j.products), None)
        if joined is not None:
            if op.id == joined.products[1]:         # issued with the first
                return
            self.joined_product(op, joined, in_flight)
            return
        acc = self.values[op.acc]
        staged = next((o for o in self.s.operands if o.local == operand_name(op.a)), None) if op.transpose_a else None
        if staged is not None and op.acc in self.s.partial and not self.added_whole(op.acc, acc):
            # a consumer's part of a sum, only added into an argument: computed there, a slice of columns at a time
            # (see _SlicedProduct), so that no more than a slice's accumulators are live
            parts = acc.products if isinstance(acc, _SlicedProduct) else []
            self.values[op.acc] = _SlicedProduct(parts + [(self.staged_operand(staged), *self.operand_view(op.b),
                                                           op.transpose_b)], acc.shape)
            return
        if staged is not None and staged.shared:     # each consumer's share of the columns, over all of t's rows
            first, width = self.columns(op.acc)
            a = self.staged_operand(staged)
            b = WGMMAMatrix(self.values[operand_name(op.b)], self.tma_of(operand_name(op.b))).columns(first,
                                                                                                   first + width)
            acc.accumulate(a @ b, in_flight=in_flight)
            return
        if staged is not None:
            a = self.staged_operand(staged)
        elif op.transpose_a:
            a = WGMMAMatrix(*self.m_major_view(op.a), transposed=True)
        elif isinstance(self.values.get(operand_name(op.a)), Array):
            a = WGMMAMatrix(*self.operand_view(op.a))
        else:                                        # a register tile (attention's P): wgmma reads it as is
            a = self.value(op.a)
        if op.b in self.ones:                        # written by the threads, not TMA: 128-byte swizzled rows
            b = WGMMAMatrix(self.values[op.b], swizzle=128, transposed=op.transpose_b)
        else:
            b = WGMMAMatrix(*self.operand_view(op.b), transposed=op.transpose_b)
        acc.accumulate(a @ b, in_flight=in_flight)

    def added_whole(self, name: str, acc) -> bool:
        """Whether the part of a sum ``name`` (see :class:`_SlicedProduct`) is added into its argument in one slice:
        then it is computed where the program computes it, into an accumulator (``acc``) that the store waits for,
        and later products may run while it is stored."""
        return isinstance(acc, WGMMAAccumulator) and \
            any(st.source == name and st.slice_columns >= acc.shape[1] for st in self.s.stores)

    def joined_product(self, op: Mma, joined, in_flight) -> None:
        """The product of ``joined``: A times its two B tiles read as one, into the pair's one accumulator."""
        locals_ = [t.local for t in self.step.tiles]
        b = self.rings[self.step.name].joined(self.slot, locals_.index(joined.b_tiles[0]), 2, joined.axis)
        acc = self.values[op.acc]
        product = WGMMAMatrix(*self.operand_view(op.a)) @ WGMMAMatrix(b, self.tma_of(joined.b_tiles[0]),
                                                                      transposed=op.transpose_b)
        acc.accumulate(product, in_flight=in_flight)

    def in_flight(self, *products: Mma) -> int:
        """The wgmma groups left running after ``products`` issue: none where the step reads their results."""
        return 0 if any(op.id in self.s.waited for op in products) else self.s.in_flight

    def tma_of(self, local: str) -> TMA:
        """The TMA descriptor that fills ring tile ``local``."""
        return next(tma for (_, name), tma in self.ring_tmas.items() if name == local)

    @_at_task_line
    def run(self, op) -> None:
        if isinstance(op, Fill):
            self.fill(op)
        elif isinstance(op, Mma):
            self.product(op, in_flight=self.in_flight(op))
        elif isinstance(op, Copy) and isinstance(op.source, Region) and self.scalar(op.target):
            # one element of an argument (nt.scalar, slopes[h]): read here, where the program reads it
            self.values[op.target] = self.arrays[op.source.tensor][tuple(_evaluate(a, self.env)
                                                                         for a in op.source.origin)]
        elif isinstance(op, Copy) and op.target in self.resident_reads:
            tensor, var = self.resident_reads[op.target]       # read from the row block where a layout is known
            tile = self.values[op.target] = _ResidentTile(self.row_blocks[tensor], self.env[var])
            if op.target == tile.block.plan.reads[0][0]:       # the first pass waits for each block's copies
                with self.timeline.span(DATA_WAIT):
                    tile.block.full[tile.chunk].try_wait(self.parity)
        elif isinstance(op, Copy) and isinstance(op.source, Region):
            self.values[op.target] = _Pending(op.source)        # a vector: loaded where a layout is known
        elif isinstance(op, Copy) and isinstance(op.target, Region):
            self.store(op)
        elif isinstance(op, Loop):
            self.section(op)
        elif isinstance(op, Map):
            self.map(op)
        elif isinstance(op, Reduce):
            self.reduce(op)
        elif isinstance(op, FirstColumn):
            self.values[op.out] = self.values[op.out] + _uniform_rows(self.values[op.input])
        elif isinstance(op, Gather):
            self.gather(op)
        elif isinstance(op, Iota):
            start = _evaluate(op.start, self.env)
            self.values[op.out] = _Iota(start if isinstance(start, int) else start.to(dt.int32))
        else:
            raise TaskError(f"{op}: not scheduled on the consumers", code="unsupported-program",
                            hint="compute the step with tile math, products, reductions and copies of tiles (the "
                                 "operations nt provides)", loc=op.loc)

    def gather(self, op: Gather) -> None:
        """One element of each of this consumer's rows of the tile at a column the vector ``op.index`` holds."""
        like = _row_layout_tile(self.rows(op.out), self.row_run, self.warps)
        columns = self.value(operand_name(op.index), like, None, 1)
        rows = _evaluate(op.rows, self.env)
        row0 = self.row0(op.out)
        picked = RowVector.gather(like, self.arrays[op.tensor], rows + row0 if row0 else rows, columns)
        self.values[op.out] = picked.to(self.program.tensor(op.out).dtype)

    def section(self, loop: Loop) -> None:
        """One of a row-wise program's srange loops (its passes over column blocks, in registers alone): the
        values it updates that were defined before it are carried; the others are its own."""
        env, var = self.env, loop.vars[0]
        before = {name for name, v in self.values.items() if not isinstance(v, (_Pending, _Iota, _Deferred))}
        written = {operand_name(x) for op in loop.body for x in op.writes()}
        carried = {name: self.values[name] for name in sorted(written & before)}
        trips = _loop_trips(self.s, loop, env)

        @fori(0, trips, carry=carried)
        def after(k, values):
            self.values.update(values)
            env[var] = k
            with self.timeline.span(STEP):
                for op in loop.body:
                    self.run(op)
            return {name: self.values[name] for name in values}
        self.values.update(after)
        for name in written - set(carried):          # a loop's own values are not seen after it
            self.values.pop(name, None)

    def fill(self, op: Fill) -> None:
        t = self.program.tensor(op.target)
        rows = self.rows(op.target)
        joined = next((j for j in self.s.joined if op.target in j.accumulators), None)
        if joined is not None:                      # one accumulator for the pair, under the first's name
            if op.target == joined.accumulators[0]:
                self.values[op.target] = WGMMAAccumulator(rows, sum(joined.columns))
            return
        if self.row_run and len(t.shape) == 2:     # a row-wise program (Schedule.lanes_along_rows)
            tile = _zero_tile(rows, t.shape[1], self.row_run, self.warps)
            self.values[op.target] = tile if op.value == 0.0 else tile * 0.0 + op.value
        elif len(t.shape) == 2:
            tile = WGMMAAccumulator(rows, self.columns(op.target)[1])
            self.values[op.target] = tile if op.value == 0.0 else tile * 0.0 + op.value
        else:                                        # a vector over the rows of this consumer's tiles
            layout = _row_layout_tile(rows, self.row_run, self.warps).layout.project(0)
            self.values[op.target] = RowVector([constant(op.value, dt.float32).ir] * layout.values, dt.float32, layout)

    def operand_view(self, operand):
        name = operand_name(operand)
        view = self.values[name]
        tma = self.tma_of(name)
        if self.split(name):
            cols = view.shape[-1]
            view = view.view((self.s.rows, cols), offset=self.row0(name) * cols * view.dtype.itemsize)
        return view, tma

    def staged_operand(self, staged) -> WGMMAMatrix:
        """This consumer's rows of the computed tile ``staged.local``, written into its shared buffer in a
        thread-written operand's layout, fenced for the tensor cores, and read M-major. (The buffer's last reader,
        the previous step's product, retired before its result was added into the argument.)"""
        if not staged.shared:
            buffer = self.staging[staged.buffers[self.c]]
            stage_operand(self.value(staged.local), buffer, swizzle=128)
            fence_shared_to_async()
            self.wg.sync()
            return WGMMAMatrix(buffer, swizzle=128, transposed=True)
        # one tile, each consumer's rows side by side: written once every consumer's last product reading it
        # retired (each waits for it before storing its result), read once every consumer wrote its rows
        buffer = self.staging[staged.buffers[0]]
        threads = 128 * self.s.consumers
        self.ctx.sync_threads(threads, barrier=EXCHANGE_BARRIER)
        rows, columns = self.rows(staged.local), staged.shape[1]
        mine = buffer.view((rows, columns), offset=self.row0(staged.local) * columns * buffer.dtype.itemsize)
        stage_operand(self.value(staged.local), mine, swizzle=128)
        fence_shared_to_async()
        self.ctx.sync_threads(threads, barrier=EXCHANGE_BARRIER)
        return WGMMAMatrix(buffer, swizzle=128, transposed=True)

    def m_major_view(self, operand):
        """An M-major A tile (K rows, M columns) and its descriptor: where the consumers share M, this consumer's
        columns, whole boxes of all K rows one after another (see ``passes._rings``)."""
        name = operand_name(operand)
        view, tma = self.values[name], self.tma_of(name)
        if self.split(name):
            k, box_columns = view.shape[0], tma.box[-1]
            view = view.view((k, self.s.rows), offset=self.row0(name) // box_columns * k * box_columns *
                             view.dtype.itemsize)
        return view, tma

    def lazy(self, x) -> bool:
        """Whether operand ``x`` is positions or a mask of positions, computed only over a tile's layout."""
        name = operand_name(x) if isinstance(x, (str, Broadcast)) else None
        v = self.values.get(name)
        return isinstance(v, _Iota) or (isinstance(v, _Deferred) and v.positions)

    def scalar(self, x) -> bool:
        """Whether operand ``x`` is one value (an argument's element), which combines with any layout."""
        return isinstance(x, str) and self.program.tensor(x).shape == ()

    def pending_vector(self, x) -> bool:
        """Whether operand ``x`` is a vector read from an argument, loaded once a tile gives it a layout."""
        v = self.values.get(operand_name(x) if isinstance(x, (str, Broadcast)) else None)
        return _argument_vector(v) and not self.scalar(operand_name(x))

    def resolve(self, name: str, columns=None):
        """Local ``name`` as a value: for a ``columns`` (start, stop) window of the tile, only those columns."""
        v = self.values[name]
        if isinstance(v, _Deferred):
            key = (name, columns)
            if columns is None:                      # computed where it is used, in that region
                return self.compute(v.op, columns)
            if key not in self._slice:
                self._slice[key] = self.compute(v.op, columns)
            return self._slice[key]
        if columns is not None and isinstance(v, WGMMAAccumulator) and columns != (0, v.shape[1]):
            return v.columns(*columns)
        if columns is not None and isinstance(v, _Cast):
            return _Cast(_as_accumulator(v.acc).columns(*columns), v.dtype)
        if columns is not None and isinstance(v, RegisterTile) and len(v.shape) == 2 and columns != (0, v.shape[1]):
            return _as_accumulator(v).columns(*columns)      # a computed tile of another dtype (x.astype(f16) + ...)
        return v

    def value(self, x, like=None, columns=None, axis=None):
        """An operand of tile math: a tile, a vector broadcast over ``like`` (along ``axis`` for positions),
        or a number."""
        if isinstance(x, (int, float)):
            return x
        if isinstance(x, Affine):
            v = _evaluate(x, self.env)
            return v if isinstance(v, int) else v.to(dt.int32)
        if isinstance(x, Broadcast):
            return self.vector(operand_name(x.tensor), x.axis, like, columns)
        if self.lazy(x):
            return self.vector(x, axis, like, columns) if len(self.program.tensor(x).shape) == 1 else \
                self.compute(self.values[x].op, columns, like)
        v = self.resolve(x, columns)
        if isinstance(v, _ResidentTile) and isinstance(like, RegisterTile):
            return self.resident_tile(v, like, columns)
        if isinstance(v, _Pending) and isinstance(like, RegisterTile) and len(v.region.matrix_shape) == 2:
            return self.argument_tile(v.region, like, columns)
        if _argument_vector(v) and isinstance(like, RegisterTile):
            # an argument's vector: one value per row of ``like`` (or per column, along ``axis`` 0)
            return self.vector(x, 1 if axis is None else axis, like, columns)
        return v.acc.to(v.dtype) if isinstance(v, _Cast) else v

    def argument_tile(self, region: Region, like: RegisterTile, columns) -> RegisterTile:
        """The part of an argument's tile (``Xt[i, j]`` used in tile math, such as a residual added to a
        product) that ``like`` holds, read into its layout by ordinary loads; rows and columns past the
        argument's end read as 0 (whatever is computed there is never stored)."""
        rows = like.shape[0]
        row0 = self.c * rows if self.cooperative and rows < region.matrix_shape[0] else 0
        at = _origin(region, self.env, row0, columns[0] if columns else 0)
        return RegisterTile.load(self.arrays[region.tensor], like.layout, at, fill=0.0)

    def resident_tile(self, tile: _ResidentTile, like: RegisterTile, columns) -> RegisterTile:
        """The part of a column block of a row block kept in shared memory that ``like`` holds (its copies waited
        for where the first pass took the block)."""
        return RegisterTile.load(tile.block.chunk(tile.chunk), like.layout, (0, columns[0] if columns else 0),
                                 tma=tile.block.tma)

    def vector(self, name: str, axis: int, like, columns=None):
        """Vector ``name`` over the tile ``like``: broadcast down its rows (axis 0, one value per column) or
        across its columns (axis 1, one value per row)."""
        v = self.values[name]
        if isinstance(v, _Iota):                     # positions: the tile's own row or column indices, shifted
            rows, cols = like.indices()
            shift = v.start + (self.row0(name) if axis == 1 else columns[0] if columns else 0)
            return (rows if axis == 1 else cols) + shift
        if isinstance(v, _Deferred) and v.positions:
            return self.compute(v.op, columns, like, axis)
        if not _argument_vector(v):
            return self.resolve(name, columns)
        # an argument's vector, at the tile's columns (axis 0) or the consumer's rows (axis 1)
        kind = ColumnVector if axis == 0 else RowVector
        offset = (columns[0] if columns else 0) if axis == 0 else self.row0(name)
        if _in_ring(v):                  # copied into the ring by the producer (``memory={name: "shared"}``)
            return kind.load(like, v, offset)
        array = self.arrays[v.region.tensor]
        origin = [_evaluate(a, self.env) for a in v.region.origin]
        start = origin[-1] + offset if offset else origin[-1]
        fill = 0 if array.dtype.is_int else 0.0
        # along the last axis at the other axes' indices (a row's log-sum-exp of (B, H, L); a scale per row given
        # M-major, read as its transpose): through the array's strides, the fill past the row's end
        return kind.load(like, array, (*origin[:-1], start) if len(origin) > 1 else start, fill=fill)

    def map(self, op: Map) -> None:
        inputs = [x for x in op.inputs if isinstance(x, (str, Broadcast))]
        # positions and masks (of positions, and of vectors read from arguments: a row's target column) are
        # computed where a tile uses them, in its layout
        # (with scalars: ALiBi's slope times distances); so are comparisons of argument vectors broadcast against
        # each other (a document mask)
        if inputs and all(self.lazy(x) or self.pending_vector(x) or self.scalar(x) for x in inputs) and \
                any(self.lazy(x) or self.pending_vector(x) for x in inputs):
            self.values[op.out] = _Deferred(op, positions=True)
            return
        self.values[op.out] = self.compute(op, None)

    def compute(self, op: Map, columns, like=None, axis=None):
        """The result of elementwise ``op`` (over a ``columns`` window of its tiles, or all of them); positions
        and masks take the layout of ``like`` (along ``axis`` for vectors)."""
        if op.fn == "cast":
            source = self.resolve(op.inputs[0], columns)
            return _Cast(source.acc if isinstance(source, _Cast) else source, self.program.tensor(op.out).dtype)
        if op.fn == "copy" or (op.fn == "where" and self.unmask and op.id in self.s.unmasked.wheres):
            return self.resolve(op.inputs[0 if op.fn == "copy" else 1], columns)
        if op.fn == "where" and op.unless is not None:
            return self.where_unless(op, columns, like, axis)
        tiles = [self.resolve(x, columns) for x in op.inputs if isinstance(x, str) and not self.lazy(x)]
        tiles = [t.acc if isinstance(t, _Cast) else t for t in tiles]
        like = next((t for t in tiles if isinstance(t, RegisterTile)), like)
        if like is None and any(isinstance(t, _ResidentTile) for t in tiles):
            like = _zero_tile(self.rows(op.out), self.program.tensor(op.out).shape[-1], self.row_run, self.warps)
        if like is None and any(isinstance(t, RowVector) for t in tiles) and \
                any(self.pending_vector(x) for x in op.inputs if isinstance(x, str)):
            like = _row_layout_tile(self.rows(op.out), self.row_run, self.warps)   # an argument's vector beside one
        args = [self.value(x, like, columns, axis) for x in op.inputs]
        if isinstance(like, RegisterTile) and any(isinstance(a, RowVector) for a in args) and \
                any(isinstance(a, ColumnVector) for a in args):          # a row and a column: over the tile
            rows = like.indices()[0] * 0
            args = [rows + a if isinstance(a, RowVector) else a for a in args]
        out_dtype = self.program.tensor(op.out).dtype
        if op.fn in _COMPARE:
            return _COMPARE[op.fn](*args)
        converted = [a if isinstance(a, (int, float)) or a.dtype == out_dtype else a.to(out_dtype) for a in args]
        if op.fn == "where":
            if all(isinstance(a, (int, float)) for a in converted[1:]):      # two numbers: typed by the result
                converted = [args[0]] + [constant(a, out_dtype) for a in converted[1:]]
            return where(args[0], *converted[1:])
        args = converted
        if op.fn == "mul" and op.inputs[0] == op.out and isinstance(args[0], WGMMAAccumulator) and \
                isinstance(args[1], RowVector):
            # An accumulator rescaled in place (an online softmax's o *= alpha): a thread whose factors are
            # all 1 skips its multiplies, which is exact (x * 1 == x)
            acc, factor = args
            return cond((factor != 1.0).any_of_thread(), lambda: acc * factor, lambda: acc)
        if op.fn in _BINARY:
            a, b = args
            if isinstance(b, _TILES) and not isinstance(a, (*_TILES, int, float)):
                return _REFLECTED[op.fn](b, a)           # a scalar and a tile: the tile's operator
            return _BINARY[op.fn](a, b)
        if op.fn == "maximum":
            return maximum(*args)
        if op.fn == "minimum":
            return minimum(*args)
        return _UNARY[op.fn](args[0])

    def where_unless(self, op: Map, columns, like, axis):
        """A ``where`` skipped in the steps its ``unless`` holds (the mask keeps everything there): one test per step,
        the mask computed and applied only in the other branch."""
        kept = self.resolve(op.inputs[1], columns)
        within = op.unless
        index, low, high = (_evaluate(a, self.env) for a in (within.index, within.low, within.high))
        holds = _as_int32(low) <= _as_int32(index)
        holds = holds & (_as_int32(index) < _as_int32(high))
        return cond(holds, lambda: kept, lambda: self.compute(replace(op, unless=None), columns, like, axis))

    def reduce(self, op: Reduce) -> None:
        source = self.values[operand_name(op.input)]
        if isinstance(source, Array):                # a ring slot: read the shared tile in the accumulator layout
            name = operand_name(op.input)
            rows, cols = self.rows(name), source.shape[-1]
            tma = self.tma_of(name)
            tile = RegisterTile.load(source, _tile_layout(rows, cols, self.row_run, self.warps),
                                     at=(self.row0(name), 0), tma=tma)
            source = tile.to(dt.float32)
        elif isinstance(source, _Pending):            # an argument's tile in registers: ordinary loads
            name = operand_name(op.input)
            source = self.argument_tile(source.region, _zero_tile(self.rows(name), source.region.shape[-1],
                                                                  self.row_run, self.warps), None).to(dt.float32)
        elif isinstance(source, _ResidentTile):        # a column block of a row block kept in shared memory
            name = operand_name(op.input)
            source = self.resident_tile(source, _zero_tile(self.rows(name), source.block.plan.shape[1],
                                                           self.row_run, self.warps), None).to(dt.float32)
        elif isinstance(source, _Cast):
            source = source.acc
        reduced = getattr(source, op.fn)(axis=op.axis)
        if op.into:
            reduced = self.values[op.out] + reduced
        self.values[op.out] = reduced

    @_at_task_line
    def store(self, op: Copy) -> None:
        value = self.values[op.source]
        target = self.arrays[op.target.tensor]
        if isinstance(value, _Deferred) and len(self.program.tensor(op.source).shape) == 1:
            value = self.resolve(op.source)
        if isinstance(value, RowVector) and op.accumulate:
            raise TaskError(f"{op}: adding a vector into '{op.target.tensor}' is not supported (TMA adds tiles "
                            "of shared memory; a vector is stored from registers)", code="unsupported-program",
                            hint="add a tile of one row or column (a matrix tile) instead", loc=op.loc)
        if isinstance(value, RowVector):             # a vector: each element written once, clipped at the edge
            length = target.shape[-1]
            origin = [_evaluate(a, self.env) for a in op.target.origin]
            strides = target.strides
            if strides is not None and strides[-1] != 1:
                raise TaskError(f"{op}: '{target.name}' is a view whose last axis has stride {strides[-1]}; a "
                                "vector is stored along a row of consecutive elements", code="bad-strides",
                                hint=f"pass a copy of '{target.name}' with a unit-stride last axis", loc=op.loc)
            row_start = _row_start(target, origin)
            start = origin[-1] + self.row0(op.source) if self.row0(op.source) else origin[-1]
            value.store(target.span(), start + row_start, stop=row_start + length)
            return
        plan = next(st for st in self.s.stores if st.source == op.source and st.target == op.target)
        if plan.direct:
            self._direct_store(op)
            return
        tma = self.store_tmas[op.source]
        if plan.in_tile:
            tile = self.values[plan.in_tile]
            cols = tile.shape[-1]
            buffer = tile.view((self.rows(plan.in_tile), cols), offset=self.row0(plan.in_tile) * cols * tile.dtype.itemsize)
        else:
            buffer = self.staging[plan.staging[self.c]]
        leader = self.wg.thread_index.eq(0)
        row0 = self.row0(op.source)
        column0, columns = self.columns(op.source)
        for first in range(0, columns, plan.slice_columns):
            window = (first, first + plan.slice_columns)
            tma_store_wait(0)                        # the last slice's copy has read the staging tile
            self.wg.sync()
            if isinstance(value, _SlicedProduct):
                value.columns(*window).store(buffer, tma=tma)
            elif isinstance(value, WGMMAAccumulator) or (isinstance(value, _Cast) and
                                                          isinstance(value.acc, WGMMAAccumulator)):
                accumulator = value.acc if isinstance(value, _Cast) else value
                accumulator[:, window[0]:window[1]].store(buffer, tma=tma)
            else:                                    # math computed for this slice only
                self._slice = {}
                self._stored_slice(op, window).store(buffer, tma=tma)
            fence_shared_to_async()
            self.wg.sync()
            end = None if op.target.end is None else _evaluate(op.target.end, self.env)
            tma.store(buffer, _origin(op.target, self.env, row0, column0 + first), predicate=leader, wait=False,
                      end=end, add=plan.add)

    def _direct_store(self, op: Copy) -> None:
        """A tile stored by each thread's own elements, clipped at the tensor's end (see ``StorePlan.direct``)."""
        value = self.resolve(op.source)
        tile = value.acc if isinstance(value, _Cast) else value
        target = self.arrays[op.target.tensor]
        if not isinstance(tile, RegisterTile) or target.ndim != 2:
            raise TaskError(f"{op}: a tile stored without TMA is a register tile stored into a 2-D tensor",
                            code="unsupported-program",
                            hint="store a computed tile into a 2-D tensor, or pass arrays whose rows are a multiple "
                                 "of 16 bytes (TMA stores)", loc=op.loc)
        plain = RegisterTile(tile.values, tile.dtype, tile.layout)      # an accumulator's values, as any tile's
        plain.store(target, _origin(op.target, self.env, self.row0(op.source)), clip=True)

    def _stored_slice(self, op: Copy, window) -> WGMMAAccumulator:
        value = self.resolve(op.source, window)
        tile = value.acc if isinstance(value, _Cast) else value
        if isinstance(tile, RegisterTile) and not isinstance(tile, WGMMAAccumulator) and \
                tile.layout == wgmma_accumulator(*tile.shape):
            tile = _as_accumulator(tile)            # any computed tile of the accumulator's layout, as float32
        if not isinstance(tile, WGMMAAccumulator):
            raise TaskError(f"{op}: only float32 tiles in the accumulator layout (converted or not) are stored "
                            "through TMA", code="unsupported-program",
                            hint="store tiles computed from a product's accumulator, e.g. acc or acc.astype(C.dtype)",
                            loc=op.loc)
        return tile


class _TwoPhaseLoop:
    """A consumer's two-phase main loop in the FlashAttention-3 order (see :class:`~nvdsl.tasks.stages.Phases`):
    step k issues phase A's product, then phase B of step k - 1, and does A's math while B's product runs.
    With turns, the consumers take turns at the tensor cores (see :class:`_Turn`): the last consumer opens
    consumer 0's first turn and does not hand over after its own last."""

    def __init__(self, consumer: _Consumer):
        s, c = consumer.s, consumer.c
        self.consumer, self.s, self.phases, self.c = consumer, s, s.phases, c
        self.a_plan, self.b_plan = s.ring("step", c, "a"), s.ring("step", c, "b")
        self.a_ring, self.b_ring = consumer.rings[self.a_plan.name], consumer.rings[self.b_plan.name]
        self.var = s.main.vars[0]
        self.turn = _Turn(consumer.ctx, c, s.consumers, consumer.timeline)
        self.timeline = consumer.timeline

    def run(self) -> None:
        consumer, s = self.consumer, self.s
        trips = _trips(s, consumer.env)
        if not _read_trips(s, s.main):
            self.run_steps(trips)
            return
        # A tile may have no step (its range read on the GPU is empty): it skips the loop, its first step (issued
        # before the loop) and its turns alike (the other consumers skip theirs: they share the tile), and its
        # epilogue reads the values from before the loop.
        values, names = consumer.values, _carried(self.s)
        before = dict(values)

        def looped():
            self.run_steps(trips)
            return {name: values[name] for name in names}
        after = cond(trips > 0, looped, lambda: {name: before[name] for name in names})
        values.clear()                              # what the loop's region defined is not seen after it
        values.update(before)
        values.update(after)

    def run_steps(self, trips) -> None:
        """The loop over ``trips`` steps, at least one."""
        consumer, s = self.consumer, self.s
        unmasked = _unmasked_steps(s, consumer.env, trips)
        if s.turns and self.c == s.consumers - 1:
            self.their_turn()
        consumer.env[self.var] = 0
        self.my_turn()
        self.issue_a()
        self.their_turn()
        with self.timeline.span(PRODUCT_WAIT):
            wgmma_wait(0)
        consumer.unmask = isinstance(unmasked, int) and unmasked >= 1
        with self.timeline.span(MATH):
            consumer.run_all(self.phases.math)
        if unmasked is None:
            self.steps(1, trips, masked=True)
        else:                                       # the steps no mask changes first, then the others
            static = isinstance(unmasked, int) and isinstance(trips, int)
            split = min(max(unmasked, 1), trips) if static else minimum(maximum(unmasked, 1), trips)
            self.steps(1, split, masked=False)
            if not (static and split == trips):
                self.steps(split, trips, masked=True)
        consumer.unmask = False
        self.my_turn()
        self.phase_b(1)
        self.their_turn(last=True)
        with self.timeline.span(PRODUCT_WAIT):
            wgmma_wait(0)

    def steps(self, first, stop, masked: bool) -> None:
        """Steps ``first`` .. ``stop`` - 1: phase A of each around phase B of the one before."""
        consumer = self.consumer

        @fori(first, stop, carry=self.carried())
        def after(k, values):
            consumer.values.update(values)
            consumer.unmask = not masked
            self.my_turn()
            self.phase_b(2, a_step=k)
            self.their_turn()
            with self.timeline.span(PRODUCT_WAIT):
                wgmma_wait(1)                       # phase A's product is done; phase B's runs on
            with self.timeline.span(MATH):
                consumer.run_all(self.phases.math)
            with self.timeline.span(PRODUCT_WAIT):
                wgmma_wait(0)
            return self.carried()
        consumer.values.update(after)

    def carried(self) -> dict:
        """The loop's carried values: those the loop updates, and what phase A hands to phase B."""
        values = self.consumer.values
        return {name: values[name] for name in _carried(self.s)} | \
            {name: self.consumer.value(name) for name in self.phases.handed}

    def my_turn(self) -> None:
        if self.s.turns:
            self.turn.wait()

    def their_turn(self, last: bool = False) -> None:
        if self.s.turns and not (last and self.c == self.s.consumers - 1):
            self.turn.hand_over()

    def bind(self, plan, views) -> None:
        for plan_tile, view in zip(plan.tiles, views):
            self.consumer.values[plan_tile.local] = view

    def issue_a(self) -> None:
        with self.consumer.get(self.a_ring) as views:
            self.bind(self.a_plan, views)
            for op in self.phases.issue:
                self.consumer.product(op, in_flight=1) if isinstance(op, Mma) else self.consumer.run(op)

    def phase_b(self, in_flight: int, a_step=None) -> None:
        """Phase B of the previous step, around phase A's product of step ``a_step`` (if any)."""
        with self.consumer.get(self.b_ring) as views:
            self.bind(self.b_plan, views)
            if a_step is not None:
                self.consumer.env[self.var] = a_step
                self.issue_a()
            for op in self.phases.second:
                self.consumer.product(op, in_flight=in_flight) if isinstance(op, Mma) else self.consumer.run(op)



def _unmasked_steps(s: Schedule, env: dict, trips):
    """How many first steps of the main loop need none of its masks (see ``Unmasked``), or None."""
    u = s.unmasked
    if u is None:
        return None
    limit = trips
    for rest, divisor in u.bounds:
        r = _evaluate(rest, env)
        if isinstance(r, int):
            bound = (r // divisor + 1 if divisor else trips) if r >= 0 else 0
        else:
            bound = select(r >= 0, r // divisor + 1 if divisor else trips, 0)
        limit = min(limit, bound) if isinstance(limit, int) and isinstance(bound, int) else minimum(limit, bound)
    return limit


class _Pending:
    """A vector copied from an argument, loaded once a tile gives it a layout."""

    def __init__(self, region: Region):
        self.region = region


class _RowBlock:
    """A row block kept in shared memory for the tile (:class:`~nvdsl.tasks.stages.ResidentRows`): its column blocks
    at ``offset`` of the dynamic shared memory, an mbarrier each (one arrival, the thread that issues its copies, and
    its bytes), and the descriptor whose boxes fill them. Made at the kernel's top level (its barriers initialised
    there)."""

    def __init__(self, ctx, plan: ResidentRows, offset: int, tma: TMA):
        self.ctx, self.plan, self.offset, self.tma = ctx, plan, offset, tma
        ctx.shared.reserve(offset, plan.nbytes, 1024, f"the row block of '{plan.tensor}'")
        self.full = Mbarriers(plan.chunks)
        with when(ctx.linear_thread_id.eq(0)):
            for j in range(plan.chunks):
                self.full[j].init(1)
        ctx.sync_threads()

    def chunk(self, j) -> Array:
        """Column block ``j`` (a traced index) as a shared tile of TMA's boxes."""
        stride = self.plan.chunk_stride
        return self.ctx.shared.view(self.plan.shape, self.plan.dtype, j * stride + self.offset,
                                    f"{self.plan.tensor}_rows", alignment=min(1024, stride & -stride))

    def load(self, row, thread, threads: int) -> None:
        """Copy the row block starting at ``row`` in, each column block by its own thread of the ``threads`` that
        hold the tile (all at once: the row's bytes in flight together), which arms that block's barrier with its
        bytes first. Block ``j`` is issued by lane ``j // W`` of warp ``j % W`` (of ``W`` warps): a warp issues its
        lanes' copies one lane after another (TMA takes its operands from uniform registers), so the blocks are
        spread over the warps."""
        plan = self.plan
        warps = threads // 32
        for j in for_range(thread % 32 * warps + thread // 32, plan.chunks, threads):
            self.full[j].arrive(plan.chunk_bytes)
            self.tma.load(self.chunk(j), self.full[j], (row, j * plan.shape[1]))


class _BlockThreads:
    """The block's threads as one role (consumers that hold row-wise tiles together): what ``_Consumer`` asks of a
    ``Warpgroup``, its thread index and its barrier."""

    def __init__(self, ctx):
        self.ctx = ctx

    @property
    def thread_index(self):
        return self.ctx.linear_thread_id

    def sync(self) -> None:
        self.ctx.sync_threads()


class _ResidentTile:
    """Column block ``chunk`` of a row block kept in shared memory, read once a tile gives it a layout."""

    def __init__(self, block: _RowBlock, chunk):
        self.block, self.chunk = block, chunk


class _Deferred:
    """Elementwise math computed where it is used: the epilogue's, where it is stored (per column slice);
    ``positions``: a mask or positions, over the layout of the tile it meets."""

    def __init__(self, op: Map, positions: bool = False):
        self.op, self.positions = op, positions


class _Iota:
    """``start + [0, 1, ...]``: positions, made from the layout of the tile they meet."""

    def __init__(self, start):
        self.start = start


class _SlicedProduct:
    """A consumer's part of a sum of products (``t.T @ B``) that is only added into an argument, not computed
    until that store: then a slice of columns at a time (the store's slices), each slice's product into a
    fresh accumulator of the slice's width, which the slice's staging and TMA reduction take (a backward's dQ
    part: 64 x 128 float32 would hold 64 registers a thread beside dK and dV; a 64-column slice holds 32)."""

    def __init__(self, products: list, shape: tuple[int, int]):
        self.products, self.shape = products, shape       # products: (A operand, B tile, its TMA, transpose_b)

    def columns(self, start: int, stop: int) -> WGMMAAccumulator:
        acc = WGMMAAccumulator(self.shape[0], stop - start)
        for a, b_tile, tma, transpose_b in self.products:
            acc.accumulate(a @ WGMMAMatrix(b_tile, tma, transposed=transpose_b).columns(start, stop))
        return acc


class _Cast:
    """A tile to be converted to ``dtype`` (when stored, or when used in more math)."""

    def __init__(self, acc, dtype: dt.DType):
        self.acc, self.dtype = acc, dtype


def _argument_vector(v) -> bool:
    """Whether a local's value is an argument's vector, read where a tile gives it a layout: from global memory
    (pending) or from the ring's slot it was copied into."""
    return isinstance(v, _Pending) and _is_vector(v.region) or _in_ring(v)


def _in_ring(v) -> bool:
    """Whether a local's value is an argument's vector copied into a ring's slot (``memory={name: "shared"}``)."""
    return isinstance(v, Array) and v.ndim == 1


def _is_vector(region: Region) -> bool:
    """Whether an argument's tile is a vector: one element along every axis but the last."""
    return len(region.shape) >= 1 and all(extent == 1 for extent in region.shape[:-1])


def _row_start(array: Array, origin) -> int:
    """Where the row of ``array`` at ``origin`` (all axes; the last ignored) starts among its spanned elements."""
    strides = array.strides
    start = 0
    for axis, position in enumerate(origin[:-1]):
        if strides is not None:
            stride = strides[axis]
        else:
            stride = 1
            for extent in array.shape[axis + 1:]:
                stride *= extent
        start = position * stride + start
    return start


def _as_accumulator(tile: RegisterTile) -> WGMMAAccumulator:
    """``tile`` (in the accumulator layout) as a float32 accumulator, whose columns can be taken apart."""
    if isinstance(tile, WGMMAAccumulator):
        return tile
    if tile.layout != wgmma_accumulator(*tile.shape):
        raise TaskError(f"a {tile.dtype.name} tile of layout {tile.layout} cannot be stored a slice of columns at a "
                        "time: only tiles in the accumulator layout can", code="unsupported-program",
                        hint="store tiles computed from a product's accumulator, which keep its layout, e.g. "
                             "acc.astype(C.dtype)")
    return WGMMAAccumulator.from_values(*tile.shape, (tile if tile.dtype == dt.float32 else tile.to(dt.float32)).values)


def _tile_layout(rows: int, columns: int, row_run: int, warps: int = 4):
    """The layout of a consumer's ``rows`` x ``columns`` tiles: wgmma's accumulator's (``row_run`` 0), or in a
    row-wise program (``Schedule.lanes_along_rows``, decided by ``passes.in_registers``) rows along a warp's lanes,
    ``row_run`` consecutive columns a lane where the tile is wide enough (see ``staging.row_run``; half as many, or a
    quarter, where a row of the tile is only that wide: 4 at 128 columns), over ``warps``
    warps (``Schedule.row_warps``)."""
    if not row_run:
        return wgmma_accumulator(rows, columns)
    return rows_across_lanes(rows, columns, staging.tile_run(columns, warps_per_row(rows, warps), row_run), warps)


def _zero_tile(rows: int, columns: int, row_run: int = 0, warps: int = 4) -> RegisterTile:
    """A tile of zeros in the consumers' tile layout: the layout an argument's tile or vector is read into (its
    values are never used)."""
    layout = _tile_layout(rows, columns, row_run, warps)
    return RegisterTile([constant(0.0, dt.float32).ir] * layout.values, dt.float32, layout)


def _row_layout_tile(rows: int, row_run: int = 0, warps: int = 4) -> RegisterTile:
    """A tile whose rows are laid out as a vector filled over ``rows`` rows (see ``_Consumer.fill``): the layout
    in which an argument's vector is read to combine with such a vector."""
    return _zero_tile(rows, 32 * warps_per_row(rows, warps) if row_run else 8, row_run, warps)


def _uniform_rows(tile: RegisterTile) -> RowVector:
    """The rows of ``tile``, whose columns all hold the same values, as a vector: each thread's value of its
    own first column of each row (no shuffles)."""
    layout, values = tile.layout.project(0), tile.values
    first: dict[int, int] = {}
    for value, row in enumerate(tile.layout.broadcast_map(0)):
        first.setdefault(row, value)
    return RowVector([values[first[i]] for i in range(layout.values)], tile.dtype, layout)


def _carried(s: Schedule) -> list[str]:
    """Locals the main loop updates in place and uses afterwards: its loop-carried values."""
    written = {name for op in s.main.body for name in (operand_name(x) for x in op.writes())}
    defined_before = {op.target for op in s.prologue if isinstance(op, Fill)}
    second = {j.accumulators[1] for j in s.joined}        # lives in the first's accumulator
    return sorted((written & defined_before) - second)


_BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
           "div": lambda a, b: a / b}
_TILES = (RegisterTile, RowVector, ColumnVector)
_REFLECTED = {"add": lambda b, a: b.__radd__(a), "sub": lambda b, a: b.__rsub__(a),
              "mul": lambda b, a: b.__rmul__(a), "div": lambda b, a: b.__rtruediv__(a)}
_COMPARE = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
            "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
            "and": lambda a, b: a & b, "or": lambda a, b: a | b, "not": lambda a: ~a}
_SQRT_HALF = 0.7071067811865476
_SQRT_TWO_OVER_PI = 0.7978845608028654
_UNARY = {
    "relu": lambda x: maximum(x, 0.0),
    "gelu": lambda x: x * (erf(x * _SQRT_HALF) + 1.0) * 0.5,         # exact (erf) GELU, as torch's default
    # torch's gelu(approximate="tanh"), the formula GPT-2 style models were trained with, with tanhf (2 ulp)
    "gelu_tanh": lambda x: x * (tanh((x * x * 0.044715 + 1.0) * x * _SQRT_TWO_OVER_PI) + 1.0) * 0.5,
    # x * sigmoid(x), with sigmoid(x) = (1 + tanh(x / 2)) / 2: no division per element, so no spills
    "silu": lambda x: x * (tanh(x * 0.5) * 0.5 + 0.5),
    "tanh": lambda x: tanh(x),
    "tanh_approx": lambda x: tanh(x, approx=True),
    "exp2": lambda x: exp2(x),
    "exp2_approx": lambda x: exp2(x, approx=True),
    "log2": lambda x: log2(x),
    "log2_approx": lambda x: log2(x, approx=True),
    "sqrt": lambda x: sqrt(x),
    "sqrt_approx": lambda x: sqrt(x, approx=True),
    "rsqrt": lambda x: rsqrt(x),
    "rsqrt_approx": lambda x: rsqrt(x, approx=True),
}
