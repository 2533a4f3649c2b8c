"""Deliberately broken kernels: each a classic protocol bug of warp-specialized pipelines.

``pipeline(bug)`` is a small persistent warp-specialized GEMM (a producer warpgroup issuing TMA loads
into ``stages`` shared-memory stages, a consumer warpgroup running wgmma, full/empty mbarriers per
stage, a TMA-store epilogue per tile); ``bug`` breaks one thing, on a line marked ``# BUG:<name>``
(or on the line a report should name, marked ``# AT:<name>``). ``one_trip(bug)`` is a multistage
pipeline whose prologue assumes at least ``stages - 1`` trips; ``ring(bug)`` a producer and a consumer
warp handing rows through a ring whose slot and phase are traced loop-carried values, as arefs keep
them. Used by tests/test_broken_kernels.py
(the interpreter and the static check must catch each one, naming the line) and, on a GPU, by the
``NVDSL_DEBUG=1`` hang-report test.
"""

from __future__ import annotations

import numpy as np

import nvdsl

TILE = 64
TILE_BYTES = TILE * TILE * 2
BUGS = ("wrong-parity", "expect-tx-short", "expect-tx-long", "early-release", "missing-fence", "phase-reset",
        "arrival-count", "read-before-wait", "one-trip", "wait-in-branch", "ring-overrun", "init-race",
        "missing-store-wait", "divergent-barrier")
# Refused while tracing: the prologue's box coordinates are Python ints, which nvdsl checks against the shape.
TRACED = ("one-trip",)

# The configuration (stages, groups of stages per tile, tiles) each bug needs to show.
CONFIG = {"wrong-parity": (3, 2, 1), "phase-reset": (3, 1, 2), "missing-store-wait": (2, 1, 2)}
DEFAULT_CONFIG = (2, 2, 2)


def pipeline(bug: str | None = None, *, stages: int | None = None, groups: int | None = None,
             tiles: int | None = None):
    """C (f32, ``tiles`` x 64 rows, 64 columns) = A @ B with K = ``stages * groups`` 64-wide steps."""
    default = CONFIG.get(bug, DEFAULT_CONFIG)
    stages = stages or default[0]
    groups = groups or default[1]
    tiles = tiles or default[2]
    stage_bytes = 2 * TILE_BYTES
    expect = stage_bytes
    if bug == "expect-tx-short":
        expect -= TILE_BYTES
    elif bug == "expect-tx-long":
        expect += TILE_BYTES

    @nvdsl.mlir_func
    def gemm(a, b, c):
        a_tma = nvdsl.TMA(a, box=(TILE, TILE), swizzle=128)
        b_tma = nvdsl.TMA(b, box=(TILE, TILE), swizzle=128)
        c_tma = nvdsl.TMA(c, box=(TILE, 32), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=256, smem=stages * stage_bytes + TILE * TILE * 4)
        def kernel(ctx):
            a_tiles = [ctx.dynamic_shared((TILE, TILE), nvdsl.float16, offset=s * stage_bytes, align=1024)
                       for s in range(stages)]
            b_tiles = [ctx.dynamic_shared((TILE, TILE), nvdsl.float16, offset=s * stage_bytes + TILE_BYTES,
                                          align=1024) for s in range(stages)]
            staging = ctx.dynamic_shared((TILE, TILE), nvdsl.float32, offset=stages * stage_bytes, align=1024)
            full, empty = nvdsl.Mbarriers(stages), nvdsl.Mbarriers(stages)
            with nvdsl.when(ctx.thread_id.x.eq(0)):
                for s in range(stages):
                    full[s].init(1)                                         # AT:init
                    empty[s].init(2 if bug == "arrival-count" else 1)    # AT:init BUG:arrival-count
            if bug != "init-race":
                ctx.sync_threads()

            with nvdsl.Warpgroup(ctx, 0) as producer:
                loader = producer.thread_index.eq(0)
                for tile in nvdsl.for_range(tiles):
                    for g in nvdsl.for_range(groups):
                        uses = tile * groups + g
                        for s in range(stages):
                            k0 = (g * stages + s) * TILE
                            empty[s].try_wait((g if bug == "phase-reset" else uses) + 1)   # AT:producer-wait
                            full[s].arrive(expect, predicate=loader)                       # BUG:expect-tx
                            a_tma.load(a_tiles[s], full[s], (tile * TILE, k0), predicate=loader)
                            b_tma.load(b_tiles[s], full[s], (k0, 0), predicate=loader)

            with nvdsl.Warpgroup(ctx, 128) as consumer:
                leader = consumer.thread_index.eq(0)
                for tile in nvdsl.for_range(tiles):
                    @nvdsl.fori(0, groups, carry=nvdsl.WGMMAAccumulator(TILE, TILE))
                    def acc(g, acc):
                        uses = tile * groups + g
                        for s in range(stages):
                            product = nvdsl.WGMMAMatrix(a_tiles[s], a_tma) @ nvdsl.WGMMAMatrix(b_tiles[s], b_tma)
                            parity = {"wrong-parity": g * stages + s, "phase-reset": g}.get(bug, uses)
                            if bug == "read-before-wait":
                                acc.accumulate(product, in_flight=1)                       # AT:wgmma-early
                                full[s].try_wait(parity)
                            else:
                                if bug == "wait-in-branch":
                                    with nvdsl.when(leader):
                                        full[s].try_wait(parity)                           # BUG:wait-in-branch
                                else:
                                    full[s].try_wait(parity)                               # AT:consumer-wait
                                acc.accumulate(product, in_flight=1)                       # AT:wgmma
                            if bug == "early-release":
                                with nvdsl.when(leader):
                                    empty[s].arrive()                                      # BUG:early-release
                            else:
                                with nvdsl.when(leader if s else leader & (uses > 0)):
                                    empty[(s - 1) % stages].arrive()
                        return acc

                    nvdsl.wgmma_wait(0)
                    if bug != "missing-store-wait":
                        nvdsl.tma_store_wait(0)         # the last tile's stores have read the staging tile
                    if bug == "divergent-barrier":
                        with nvdsl.when(leader):
                            consumer.sync()                                                # BUG:divergent
                    else:
                        consumer.sync()
                    acc.store(staging, tma=c_tma)                                          # AT:epilogue
                    if bug != "missing-fence":
                        nvdsl.fence_shared_to_async()
                    consumer.sync()
                    for j in range(2):
                        c_tma.store(staging.view((TILE, 32), offset=j * TILE * 32 * 4), (tile * TILE, j * 32),
                                    predicate=leader, wait=False)                          # AT:c-store
                nvdsl.tma_store_wait(0)

        kernel()

    def inputs(seed: int = 0):
        rng = np.random.default_rng(seed)
        k = TILE * stages * groups
        a = rng.standard_normal((TILE * tiles, k)).astype(np.float16)
        b = rng.standard_normal((k, TILE)).astype(np.float16)
        return a, b, np.zeros((TILE * tiles, TILE), np.float32)

    return gemm, inputs


def one_trip(bug: bool = True, stages: int = 3):
    """A multistage pipeline in one warpgroup (tutorial chapter 4's shape) whose prologue loads
    ``stages - 1`` K-steps before the loop. With ``bug`` K is one step, so the prologue's second load
    asks for a box past the end of K; without it K has ``stages`` steps."""
    steps = 1 if bug else stages
    stage_bytes = 2 * TILE_BYTES

    @nvdsl.mlir_func
    def gemm(a, b, c):
        a_tma = nvdsl.TMA(a, box=(TILE, TILE), swizzle=128)
        b_tma = nvdsl.TMA(b, box=(TILE, TILE), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=128, smem=stages * stage_bytes)
        def kernel(ctx):
            a_tiles = [ctx.dynamic_shared((TILE, TILE), nvdsl.float16, offset=s * stage_bytes, align=1024)
                       for s in range(stages)]
            b_tiles = [ctx.dynamic_shared((TILE, TILE), nvdsl.float16, offset=s * stage_bytes + TILE_BYTES,
                                          align=1024) for s in range(stages)]
            full = nvdsl.Mbarriers(stages)
            leader = ctx.thread_id.x.eq(0)
            for s in range(stages):
                full[s].init(1, predicate=leader)
            ctx.sync_threads()

            def load(step, s):
                full[s].arrive(stage_bytes, predicate=leader)
                a_tma.load(a_tiles[s], full[s], (0, step * TILE), predicate=leader)         # AT:one-trip
                b_tma.load(b_tiles[s], full[s], (step * TILE, 0), predicate=leader)

            for s in range(stages - 1):         # the prologue: assumes at least stages - 1 trips
                load(s, s)

            @nvdsl.fori(0, steps // stages if steps >= stages else 1, carry=nvdsl.WGMMAAccumulator(TILE, TILE))
            def acc(group, acc):
                for s in range(min(stages, steps)):
                    step = group * stages + s
                    full[s].try_wait(group)
                    acc += nvdsl.WGMMAMatrix(a_tiles[s], a_tma) @ nvdsl.WGMMAMatrix(b_tiles[s], b_tma)
                    ctx.sync_threads()
                    ahead = step + stages - 1
                    with nvdsl.when(ahead < steps):
                        load(ahead, (s + stages - 1) % stages)
                return acc
            acc.store(c)

        kernel()

    def inputs(seed: int = 0):
        rng = np.random.default_rng(seed)
        a = rng.standard_normal((TILE, TILE * steps)).astype(np.float16)
        b = rng.standard_normal((TILE * steps, TILE)).astype(np.float16)
        return a, b, np.zeros((TILE, TILE), np.float32)

    return gemm, inputs


def _row_ring(ctx, depth: int):
    """The ring of :func:`ring` and :func:`causal_tiles`: ``depth`` stages of one 64-float row, ``full`` barriers
    (one arrival, with the row's bytes) and ``empty`` ones (the consumer warp's 32 arrivals), initialised before
    the block's barrier. Returns the stages, the barriers, and the thread's warp and lane."""
    stages = [ctx.dynamic_shared((1, 64), nvdsl.float32, offset=s * 256, align=128) for s in range(depth)]
    full, empty = nvdsl.Mbarriers(depth), nvdsl.Mbarriers(depth)
    tid = ctx.thread_id.x
    with nvdsl.when(tid.eq(0)):
        for s in range(depth):
            full[s].init(1)
            empty[s].init(32)
    ctx.sync_threads()
    return stages, full, empty, tid // 32, tid % 32


def _row_pair_sum(stages, slot, lane):
    """Columns ``2 lane`` and ``2 lane + 1`` of the row in stage ``slot`` (a traced index), summed."""
    value = nvdsl.constant(0.0, nvdsl.float32)
    for s in range(len(stages)):
        value = nvdsl.cond(slot.eq(s), lambda s=s: stages[s][0, lane * 2] + stages[s][0, lane * 2 + 1],
                           lambda value=value: value)
    return value


def _ring_advance(slot, phase, depth: int, bug: str | None = None):
    """The slot and parity after ``slot`` in a ring of ``depth`` stages: the phase flips where the ring wraps.
    Bugs (:func:`ring`'s): ``"no-flip"``, ``"ring-overrun"``."""
    zero = nvdsl.constant(0, nvdsl.int32)
    wrapped = (slot + 1 > depth) if bug == "ring-overrun" else (slot + 1).eq(depth)  # BUG:ring-overrun
    flipped = phase if bug == "no-flip" else phase ^ 1
    return nvdsl.select(wrapped, zero, slot + 1), nvdsl.select(wrapped, flipped, phase)


def ring(bug: str | None = None, depth: int = 2, skip_flip=None, cap: int = 0, runtime_trips: bool = False):
    """A producer warp and a consumer warp handing 64-float rows through a ring of ``depth`` stages; the
    stage is a traced index into the Mbarriers and the parity is carried through the loop. Bugs:
    ``"no-flip"`` forgets to flip the phase when the ring wraps; ``"ring-overrun"`` wraps one slot late,
    so the slot reaches ``depth``. ``out[lane]`` = the sum of ``a``'s columns ``2 lane`` and ``2 lane + 1``.

    The consumer also counts the ring's wraps in a loop-carried register that saturates at ``cap`` (until then
    no state of the ring repeats); ``skip_flip(k, wraps)``, where true, makes it forget its phase flip there.
    With ``runtime_trips`` the kernel takes the trip count (the rows it hands over) as a runtime scalar ``n``, its
    third argument: ``inputs()`` then returns ``(a, out, steps)``."""
    def launch(a, out, steps):
        tma = nvdsl.TMA(a, box=(1, 64))

        @nvdsl.gpu_launch(grid=1, block=64, smem=depth * 256)
        def kernel(ctx):
            tiles, full, empty, warp, lane = _row_ring(ctx, depth)
            zero = nvdsl.constant(0, nvdsl.int32)

            with nvdsl.when(warp.eq(0)):
                @nvdsl.fori(0, steps, carry=(zero, zero))
                def produced(k, carry):
                    slot, phase = carry
                    empty[slot].try_wait(phase ^ 1)         # AT:ring-producer-wait (a fresh barrier passes parity 1)
                    full[slot].arrive(256, predicate=lane.eq(0))
                    for s in range(depth):
                        with nvdsl.when(slot.eq(s) & lane.eq(0)):
                            tma.load(tiles[s], full[s], (k, 0))
                    return _ring_advance(slot, phase, depth, bug)

            with nvdsl.when(warp.eq(1)):
                @nvdsl.fori(0, steps, carry=(zero, zero, nvdsl.constant(0.0, nvdsl.float32), zero))
                def consumed(k, carry):
                    slot, phase, total, wraps = carry
                    full[slot].try_wait(phase)                            # AT:ring-wait
                    value = _row_pair_sum(tiles, slot, lane)
                    empty[slot].arrive()
                    next_slot, next_phase = _ring_advance(slot, phase, depth, bug)
                    if skip_flip is not None:
                        next_phase = nvdsl.select(skip_flip(k, wraps), phase, next_phase)
                    wrapped = next_slot.eq(0)
                    return next_slot, next_phase, total + value, nvdsl.select(wrapped & (wraps < cap), wraps + 1, wraps)
                out[lane] = consumed[2]
        kernel()

    if runtime_trips:
        @nvdsl.mlir_func
        def hand_over(a, out, n):
            launch(a, out, n)
    else:
        @nvdsl.mlir_func
        def hand_over(a, out):
            launch(a, out, a.shape[0])

    def inputs(steps: int = 5, seed: int = 0):
        a = np.random.default_rng(seed).standard_normal((steps, 64)).astype(np.float32)
        return (a, np.zeros(32, np.float32)) + ((steps,) if runtime_trips else ())

    return hand_over, inputs


def make(bug: str | None):
    """The kernel and an input builder for a bug of BUGS (None: the correct pipeline)."""
    if bug == "one-trip":
        return one_trip(True)
    if bug == "ring-overrun":
        return ring(bug)
    return pipeline(bug)


def causal_trips(tile):
    """4 trips for the first five tiles, then 5, then 6: computed from the tile index, growing as a causal mask's."""
    return (tile + 20) // 5


def causal_tiles(bug: str | None = None, tiles: int = 12, depth: int = 2, trips=causal_trips):
    """A persistent loop over ``tiles`` tiles whose inner loop runs ``trips(tile)`` trips (by default
    :func:`causal_trips`: a trip count computed from the tile index, read by nothing but the inner loop's bound). A producer warp hands 64-float rows to a consumer warp through a ring of
    ``depth`` stages whose slot and phase are carried across tiles. ``"phase-reset"``: the consumer starts the ring
    afresh at every tile, which is harmless while the tiles before ran a multiple of ``2 * depth`` trips (with the
    default trips, the first six) and wrong after. A summary that took two tiles for a period of the tile loop without looking at
    the trip count (the state at the first tile's first wait and at the second's are the same but for the tile
    index) would skip the tile where it goes wrong. ``out[lane]`` = the sum of every row's columns ``2 lane`` and
    ``2 lane + 1``."""
    @nvdsl.mlir_func
    def causal(a, out):
        tma = nvdsl.TMA(a, box=(1, 64))

        @nvdsl.gpu_launch(grid=1, block=64, smem=depth * 256)
        def kernel(ctx):
            stages, full, empty, warp, lane = _row_ring(ctx, depth)
            zero = nvdsl.constant(0, nvdsl.int32)

            with nvdsl.when(warp.eq(0)):
                @nvdsl.fori(0, tiles, carry=(zero, zero))
                def produced(tile, ring):
                    @nvdsl.fori(0, trips(tile), carry=ring)
                    def tile_produced(k, carry):
                        slot, phase = carry
                        empty[slot].try_wait(phase ^ 1)              # AT:causal-producer-wait
                        full[slot].arrive(256, predicate=lane.eq(0))
                        for s in range(depth):
                            with nvdsl.when(slot.eq(s) & lane.eq(0)):
                                tma.load(stages[s], full[s], (tile * 6 + k, 0))   # AT:causal-load
                        return _ring_advance(slot, phase, depth)
                    return tile_produced

            with nvdsl.when(warp.eq(1)):
                @nvdsl.fori(0, tiles, carry=(zero, zero, nvdsl.constant(0.0, nvdsl.float32)))
                def consumed(tile, carry):
                    slot, phase, total = carry
                    if bug == "phase-reset":
                        slot, phase = zero, zero                     # BUG:causal-reset

                    @nvdsl.fori(0, trips(tile), carry=(slot, phase, total))
                    def tile_consumed(k, carry):
                        slot, phase, total = carry
                        full[slot].try_wait(phase)                   # AT:causal-consumer-wait
                        value = _row_pair_sum(stages, slot, lane)
                        empty[slot].arrive()
                        return _ring_advance(slot, phase, depth) + (total + value,)
                    return tile_consumed
                out[lane] = consumed[2]
        kernel()

    def inputs(seed: int = 0):
        a = np.random.default_rng(seed).standard_normal((tiles * 6, 64)).astype(np.float32)
        return a, np.zeros(32, np.float32)

    return causal, inputs
