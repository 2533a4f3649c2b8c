"""Emission: a :class:`~nvdsl.tasks.schedule.Schedule` becomes calls of nvdsl's primitives inside the traced
host function: TMA descriptors, one ``gpu_launch``, ``Aref`` rings, ``Warpgroup`` roles, wgmma
accumulators and a TMA-store epilogue. Generated and hand-written kernels share this one lowering.
"""

from __future__ import annotations

from .. import dtypes as dt
from ..errors import TaskError
from ..frontend.control import fori, for_range, when
from ..frontend.launch import gpu_launch
from ..frontend.values import minimum
from ..hopper.aref import Aref
from ..hopper.tma import TMA, fence_shared_to_async, tma_store_wait
from ..hopper.warpgroup import Warpgroup
from ..hopper.wgmma import WGMMAAccumulator, WGMMAMatrix
from .analysis import operand_name
from .ir import Affine, Copy, Fill, Map, Mma, Reduce, Region
from .schedule import PINGPONG, Schedule, _loads


def emit(schedule: Schedule, arrays: dict) -> None:
    """Trace the kernel of ``schedule`` into the host function being traced; ``arrays`` maps the program's
    argument names to the host function's arrays."""
    s = schedule
    descriptors: dict[tuple, TMA] = {}

    def descriptor(tensor: str, box, swizzle: int) -> TMA:
        key = (tensor, tuple(box), swizzle)
        if key not in descriptors:
            descriptors[key] = TMA(arrays[tensor], box=tuple(box), swizzle=swizzle)
        return descriptors[key]

    ring_tmas = {(r.name, t.local): descriptor(t.source.tensor, t.box, t.swizzle) for r in s.rings for t in r.tiles}
    store_tmas = {st.source: descriptor(st.target.tensor, st.box, min(128, st.box[-1] * st.dtype.itemsize))
                  for st in s.stores}
    total_tiles = 1
    for e in s.tile_extents:
        total_tiles *= e
    pingpong = s.mapping.schedule == PINGPONG

    @gpu_launch(grid=s.grid, block=s.block_threads, smem=s.smem_bytes)
    def kernel(ctx):
        rings = {r.name: Aref(ctx, [(t.source.matrix_shape, t.dtype) for t in r.tiles], depth=r.depth, name=r.name,
                              at=r.offset) for r in s.rings}
        buffers = {b.name: b for b in s.buffers}
        staging = {}
        for st in s.stores:
            for name in st.staging:
                staging[name] = ctx.dynamic_shared((st.box[-2], st.slice_columns), st.dtype,
                                                   offset=buffers[name].offset, align=1024)
        with when(ctx.linear_thread_id.eq(0)):
            for tma in descriptors.values():
                tma.prefetch()

        per_block = 2 if pingpong else 1
        groups_total = -(-total_tiles // per_block)
        if s.mapping.persistent:
            my_groups = (groups_total - 1 - ctx.block_id.x) // s.grid + 1
        else:
            my_groups = 1

        def tile_of(group, member: int):
            """The tile number (and whether it exists) of member ``member`` of this block's group ``group``."""
            first = (ctx.block_id.x + group * s.grid) if s.mapping.persistent else ctx.block_id.x
            number = first * per_block + member
            return number, number < total_tiles

        def coordinates(number) -> dict:
            return _tile_coordinates(s, number)

        ws = s.warp_specialized
        regs = dict(s.registers)
        if ws:
            with Warpgroup(ctx, 0, register_size=regs["producer"]) as producer:
                with when(producer.thread_index.eq(0)):
                    for group in for_range(my_groups):
                        for member in range(per_block):
                            number, exists = tile_of(group, member)
                            with when(exists) if pingpong else _nothing():
                                env = coordinates(number)
                                _put_tile_loads(s, rings, ring_tmas, env, member)
                                step = s.ring("step", member)
                                if step is not None:
                                    for k in for_range(s.main.extents[0]):
                                        env[s.main.vars[0]] = k
                                        _put(rings[step.name], step, ring_tmas, env)

        first_consumer = 1 if ws else 0
        for c in range(s.consumers):
            register_size = regs["consumer"] if ws else None
            with Warpgroup(ctx, 128 * (first_consumer + c), register_size=register_size) as wg:
                member = c if pingpong else 0
                for group in for_range(my_groups):
                    number, exists = tile_of(group, member)
                    with when(exists) if pingpong else _nothing():
                        env = coordinates(number)
                        _consume_tile(s, ctx, wg, c, rings, ring_tmas, store_tmas, staging, env)
                tma_store_wait(0)

    kernel()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _tile_coordinates(s: Schedule, number) -> dict:
    """The prange variables of tile ``number`` (a traced index) in the mapping's raster order."""
    extents = s.tile_extents
    env = {}
    if len(extents) == 3:                            # a batch axis outermost, then the 2-D order within it
        per_batch = extents[1] * extents[2]
        env[s.tile_vars[0]] = number // per_batch
        number = number % per_batch
        extents, names = extents[1:], s.tile_vars[1:]
    else:
        names = s.tile_vars
    if len(extents) == 1:
        env[names[0]] = number
        return env
    rows, cols = extents
    raster = s.mapping.raster
    if raster == "grouped":
        group = s.mapping.group
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
    return env


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


def _put(ring: Aref, plan, tmas: dict, env: dict) -> None:
    ring.put(*[(tmas[(plan.name, t.local)], _origin(t.source, env)) for t in plan.tiles])


def _put_tile_loads(s: Schedule, rings: dict, tmas: dict, env: dict, member: int) -> None:
    plan = s.ring("tile", member)
    if plan is not None:
        _put(rings[plan.name], plan, tmas, env)


def _consume_tile(s: Schedule, ctx, wg, c: int, rings, ring_tmas, store_tmas, staging, env) -> None:
    """One consumer's work on one tile: prologue, main loop over ring slots, epilogue stores."""
    program = s.program
    values: dict = {}
    pingpong = s.mapping.schedule == PINGPONG
    row0 = c * s.rows if s.consumers > 1 and not pingpong else 0

    def rows_of(name: str) -> bool:
        return name in s.split

    tile_ring = s.ring("tile", c)
    if tile_ring is not None:
        raise TaskError("loads once per tile (before the srange) are not scheduled yet", code="unsupported-program")
    for op in s.prologue:
        _run(op, values, program, s, rows_of, c)

    step = s.ring("step", c)
    if s.main is not None:
        accumulators = {name: values[name] for name in _carried(s)}
        extent = s.main.extents[0]
        loads = _loads(s.main.body)
        issuer = not s.warp_specialized and c == 0
        ring = rings[step.name] if step is not None else None
        if issuer and ring is not None:
            for k in range(min(s.lookahead, extent)):
                env[s.main.vars[0]] = k
                _put(ring, step, ring_tmas, env)

        @fori(0, extent, carry=accumulators)
        def carried(k, accumulators):
            env[s.main.vars[0]] = k
            values.update(accumulators)
            if ring is not None:
                with ring.get() as tiles:
                    for plan_tile, view in zip(step.tiles, tiles):
                        values[plan_tile.local] = view
                    for op in s.main.body:
                        if op in loads:
                            continue
                        _run(op, values, program, s, rows_of, c, ring_tmas=ring_tmas, ring=step)
            else:
                for op in s.main.body:
                    _run(op, values, program, s, rows_of, c)
            if issuer and ring is not None:
                with when(k + s.lookahead < extent):
                    env[s.main.vars[0]] = k + s.lookahead
                    _put(ring, step, ring_tmas, env)
            return {name: values[name] for name in accumulators}
        values.update(carried)

    if any(b.aliases for b in s.buffers):      # staging reuses the ring: every consumer must have left it
        from ..hopper.wgmma import wgmma_wait
        wgmma_wait(0)
        ctx.sync_threads(128 * s.consumers, barrier=9)
    for op in s.epilogue:
        if isinstance(op, Copy) and isinstance(op.target, Region):
            _store(s, op, values, wg, c, row0, store_tmas, staging, env)
        else:
            _run(op, values, program, s, rows_of, c)


def _carried(s: Schedule) -> list[str]:
    """Locals the main loop updates in place and uses afterwards: its loop-carried values."""
    written = {name for op in s.main.body for name in (operand_name(x) for x in op.writes())}
    defined_before = {op.target for op in s.prologue if isinstance(op, Fill)}
    return sorted(written & defined_before)


def _run(op, values: dict, program, s: Schedule, rows_of, c: int, ring_tmas=None, ring=None) -> None:
    """One consumer-side operation."""
    if isinstance(op, Fill):
        t = program.tensor(op.target)
        if len(t.shape) != 2 or op.value != 0.0:
            raise TaskError(f"{op}: only zero-filled matrix accumulators are scheduled yet", code="unsupported-program",
                            loc=op.loc)
        rows = s.rows if rows_of(op.target) or s.mapping.schedule == PINGPONG else t.shape[0]
        values[op.target] = WGMMAAccumulator(rows, t.shape[1])
    elif isinstance(op, Mma):
        acc = values[op.acc]
        a_view, a_tma = _operand_view(op.a, values, program, s, rows_of, c, ring_tmas, ring)
        b_view, b_tma = _operand_view(op.b, values, program, s, rows_of, c, ring_tmas, ring)
        product = WGMMAMatrix(a_view, a_tma) @ WGMMAMatrix(b_view, b_tma, transposed=op.transpose_b)
        acc.accumulate(product, in_flight=s.in_flight)
    elif isinstance(op, Map) and op.fn == "cast" and len(op.inputs) == 1:
        values[op.out] = _Cast(values[op.inputs[0]], program.tensor(op.out).dtype)
    elif isinstance(op, (Map, Reduce)):
        raise TaskError(f"{op}: elementwise math and reductions on register tiles are not scheduled yet",
                        code="unsupported-program", loc=op.loc)
    else:
        raise TaskError(f"{op}: not scheduled on the consumers", code="unsupported-program", loc=op.loc)


def _operand_view(operand, values, program, s: Schedule, rows_of, c: int, ring_tmas, ring):
    name = operand_name(operand)
    view = values[name]
    tma = ring_tmas[(ring.name, name)]
    if rows_of(name) and s.consumers > 1 and s.mapping.schedule != PINGPONG:
        cols = view.shape[-1]
        view = view.view((s.rows, cols), offset=c * s.rows * cols * view.dtype.itemsize)
    return view, tma


class _Cast:
    """An accumulator to be converted to ``dtype`` when it is stored."""

    def __init__(self, acc: WGMMAAccumulator, dtype: dt.DType):
        self.acc, self.dtype = acc, dtype


def _store(s: Schedule, op: Copy, values, wg, c: int, row0: int, store_tmas, staging, env) -> None:
    plan = next(st for st in s.stores if st.source == op.source)
    value = values[op.source]
    acc = value.acc if isinstance(value, _Cast) else value
    if not isinstance(acc, WGMMAAccumulator):
        raise TaskError(f"{op}: only accumulators (converted or not) are stored yet", code="unsupported-program",
                        loc=op.loc)
    tma = store_tmas[op.source]
    buffer = staging[plan.staging[c]]
    leader = wg.thread_index.eq(0)
    for first in range(0, acc.shape[1], plan.slice_columns):
        tma_store_wait(0)                          # the last slice's copy has read the staging tile
        wg.sync()
        acc[:, first:first + plan.slice_columns].store(buffer, tma=tma)
        fence_shared_to_async()
        wg.sync()
        tma.store(buffer, _origin(op.target, env, row0, first), predicate=leader, wait=False)
