"""Asynchronous references (nvdsl.Aref): slot placement, derived counts and bytes, release tied to completion,
positions carried through loops, and every misuse refused while tracing."""

import re

import numpy as np
import pytest

import nvdsl

TILE = (16, 32)                      # float32: one 128-byte row per tile row


def row_sums(*, depth=3, blocks=None, consumers=1, read=None, single_role=False):
    """Partial row sums of X (R, K) float32 through a ring of (16, 32) tiles read by ordinary loads.

    A producer warpgroup puts the tiles of a 16-row block, K/32 of them; each of ``consumers`` warpgroups
    takes every tile and adds its share: thread t sums row t // 8, columns 4 * (t % 8) .. + 3, into
    out[consumer, row, t % 8]. Blocks loop over row blocks (``blocks`` of them, persistent), so the ring's
    positions run on from one row block to the next.
    """
    seen = {}

    @nvdsl.mlir_func
    def kernel_fn(x, out):
        rows, k = x.shape
        row_blocks, steps = rows // TILE[0], k // TILE[1]
        grid = blocks or row_blocks
        x_tma = nvdsl.TMA(x, box=TILE)

        @nvdsl.gpu_launch(grid=grid, block=128 * (consumers if single_role else 1 + consumers))
        def kernel(ctx):
            ring = seen["ring"] = nvdsl.Aref(ctx, [(TILE, nvdsl.float32)], depth=depth, name="x")
            mine = (row_blocks - 1 - ctx.block_id.x) // grid + 1
            if single_role:          # one role both fills and reads: loads run `depth` tiles ahead of reads
                thread = ctx.linear_thread_id % 128
                row, part = thread // 8, thread % 8
                for it in nvdsl.for_range(mine):
                    block_row = (ctx.block_id.x + it * grid) * TILE[0]
                    for k in range(min(depth, steps)):
                        ring.put((x_tma, (block_row, k * TILE[1])))

                    @nvdsl.fori(0, steps, carry=nvdsl.constant(0.0, nvdsl.float32))
                    def total(k, total):
                        with ring.get() as (tile,):
                            for j in range(4):
                                total = total + tile[row, part * 4 + j]
                        with nvdsl.when(k + depth < steps):
                            ring.put((x_tma, (block_row, (k + depth) * TILE[1])))
                        return total
                    out[ctx.linear_thread_id // 128, block_row + row, part] = total
                return
            with nvdsl.Warpgroup(ctx, 0, register_size=40):
                for it in nvdsl.for_range(mine):
                    block_row = (ctx.block_id.x + it * grid) * TILE[0]
                    for k in nvdsl.for_range(steps):
                        ring.put((x_tma, (block_row, k * TILE[1])))
            for c in range(consumers):
                with nvdsl.Warpgroup(ctx, 128 * (1 + c)) as wg:
                    row, part = wg.thread_index // 8, wg.thread_index % 8
                    for it in nvdsl.for_range(mine):
                        @nvdsl.fori(0, steps, carry=nvdsl.constant(0.0, nvdsl.float32))
                        def total(k, total):
                            with ring.get() as (tile,):
                                (read or plain_read)(tile, total)
                                for j in range(4):
                                    total = total + tile[row, part * 4 + j]
                            return total
                        out[c, (ctx.block_id.x + it * grid) * TILE[0] + row, part] = total
        kernel()

    return kernel_fn, seen


def plain_read(tile, total):
    pass


def zeros(rows=64, k=7 * 32, consumers=1):
    return np.zeros((rows, k), np.float32), np.zeros((consumers, rows, 8), np.float32)


def test_ring_places_its_slots_and_derives_counts_and_bytes():
    fn, seen = row_sums(depth=3, consumers=2)
    compiled = fn.compile(*zeros(consumers=2))
    assert seen["ring"].describe() == (
        "ring 'x': 3 slots of 2048 B at shared byte 0 (float32[16, 32] @0); full: 1 arrival + 2048 B, "
        "empty: 2 arrival(s); producer warpgroup 0; consumers warpgroup 1, warpgroup 2")
    launch, = compiled.module.plan.launches
    assert launch.smem == 3 * 2048
    ptx = compiled.ptx
    assert ptx.count("mbarrier.init.shared.b64") == 6
    init_counts = re.findall(r"mov.b32\s+%r\d+, (\d+);\s+mbarrier.init", ptx)
    assert sorted(set(init_counts)) == ["1", "2"]                    # full: the producer; empty: 2 warpgroups
    assert "mbarrier.arrive.expect_tx.shared.b64" in ptx
    assert compiled.resources["kernel_fn_kernel"].stack_frame == 0   # positions stay in registers


def test_one_role_can_fill_and_read_a_ring():
    fn, seen = row_sums(depth=2, consumers=2, single_role=True)
    fn.compile(*zeros(consumers=2))
    assert seen["ring"].describe().endswith("empty: 2 arrival(s); producer the block; consumers the block")


def test_slots_read_by_threads_are_released_after_a_warpgroup_barrier():
    ptx = row_sums()[0].compile(*zeros()).ptx
    consumer = ptx[ptx.index("mbarrier.try_wait.parity"):]
    # the consumer's 128 threads meet at warpgroup 1's named barrier before its leader gives the slot back
    assert re.search(r"bar.sync\s+2, 128;.*mbarrier.arrive.shared.b64", consumer, re.S)


def test_wgmma_reads_release_the_previous_slot_once_its_product_retired():
    import sys, os
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tutorials"))
    import ch5_gemm_warp_specialized as ch5
    ptx = ch5.make_gemm(num_stages=3).compile(np.zeros((128, 640), np.float16), np.zeros((640, 256), np.float16),
                                              np.zeros((128, 256), np.float16)).ptx
    # the release of the previous slot follows the wait that leaves only this product running, before any other
    # wgmma instruction (a release issued before that wait would be followed by the next wgmma first)
    assert re.search(r"wgmma.wait_group.sync.aligned\s+1;(?:(?!wgmma\.).)*?mbarrier.arrive.shared.b64", ptx, re.S)
    # and the last slot is released after the epilogue's wait for every product
    assert re.search(r"wgmma.wait_group.sync.aligned\s+0;\s*(?:.*\n){0,12}?.*mbarrier.arrive.shared.b64", ptx)


def trace_error(body, *, block=256, arrays=None):
    @nvdsl.mlir_func
    def host(x):
        tma = nvdsl.TMA(x, box=(64, 64), swizzle=128)

        @nvdsl.gpu_launch(grid=1, block=block)
        def kernel(ctx):
            body(ctx, tma)
        kernel()

    with pytest.raises(nvdsl.TraceError) as info:
        host.trace(np.zeros((128, 128), np.float16))
    return info.value


def ring(ctx, depth=2):
    return nvdsl.Aref(ctx, [((64, 64), nvdsl.float16), ((64, 64), nvdsl.float16)], depth=depth, name="ab")


def fill(r, tma):
    r.put((tma, (0, 0)), (tma, (64, 0)))


def mma(r, tma, in_flight, products=1):
    with nvdsl.Warpgroup(r.ctx, 128):
        acc = nvdsl.WGMMAAccumulator(64, 64)
        for _ in nvdsl.for_range(3):
            with r.get() as (a, b):
                for _ in range(products):
                    acc.accumulate(nvdsl.WGMMAMatrix(a, tma) @ nvdsl.WGMMAMatrix(b, tma), in_flight=in_flight)


def own_groups_only(ctx, t):
    """Gets committing different numbers of groups, each leaving only its own in flight: one slot is held."""
    r = ring(ctx)
    fill(r, t)
    with nvdsl.Warpgroup(ctx, 128):
        one, two = nvdsl.WGMMAAccumulator(64, 64), nvdsl.WGMMAAccumulator(64, 64)
        with r.get() as (a, b):
            one.accumulate(nvdsl.WGMMAMatrix(a, t) @ nvdsl.WGMMAMatrix(b, t), in_flight=1)
            two.accumulate(nvdsl.WGMMAMatrix(a, t) @ nvdsl.WGMMAMatrix(b, t), in_flight=2)
        nvdsl.wgmma_wait(0)
        with r.get() as (a, b):
            one.accumulate(nvdsl.WGMMAMatrix(a, t) @ nvdsl.WGMMAMatrix(b, t), in_flight=1)
        nvdsl.wgmma_wait(0)


@pytest.mark.parametrize("body, code, words", [
    (lambda ctx, t: nvdsl.Aref(ctx, [((64, 64), nvdsl.float16)], depth=0), "bad-aref", "depth=0"),
    (lambda ctx, t: nvdsl.Aref(ctx, [(64, nvdsl.float16, 3)], depth=2), "bad-aref", "(shape, dtype) pairs"),
    (lambda ctx, t: nvdsl.Aref(ctx, [((64, 64), np.float16)], depth=2), "bad-aref", "nvdsl dtype"),
    (lambda ctx, t: [nvdsl.Aref(ctx, [((64, 64), nvdsl.float16)], depth=2) for _ in nvdsl.for_range(2)],
     "bad-aref", "top level"),
    (lambda ctx, t: ring(ctx), "bad-aref", "never used with put()"),
    (lambda ctx, t: fill(ring(ctx), t), "bad-aref", "never used with get()"),
    (lambda ctx, t: ring(ctx).put((t, (0, 0))), "bad-aref", "got 1 copies"),
    (lambda ctx, t: ring(ctx).put((t, (0, 0)), (None, (0, 0))), "bad-aref", "(nvdsl.TMA, coords) pair"),
    # two wgmma groups per slot, both left running: 2 slots busy, and the ring has only 2
    (lambda ctx, t: (lambda r: (fill(r, t), mma(r, t, in_flight=2)))(ring(ctx)), "aref-depth", "depth >= 3"),
    (lambda ctx, t: (lambda r: (fill(r, t), mma(r, t, in_flight=1, products=2)))(ring(ctx)), None, None),
    (own_groups_only, None, None),
    (lambda ctx, t: skip_after_products(ctx, t, retired=True), None, None),
])
def test_ring_misuse_is_refused_while_tracing(body, code, words):
    if code is None:                   # the same ring, read in a way it can honour, traces
        @nvdsl.mlir_func
        def host(x):
            tma = nvdsl.TMA(x, box=(64, 64), swizzle=128)

            @nvdsl.gpu_launch(grid=1, block=256)
            def kernel(ctx):
                body(ctx, tma)
            kernel()
        host.trace(np.zeros((128, 128), np.float16))
        return
    error = trace_error(body)
    assert error.code == code and words in str(error), str(error)
    assert error.loc is not None and error.loc.filename == __file__


def test_slot_tiles_are_valid_only_while_held():
    def after_release(ctx, t):
        r = ring(ctx)
        fill(r, t)
        with r.get() as (a, b):
            pass
        a[0, 0]
    error = trace_error(after_release)
    assert error.code == "slot-released" and "after its ring slot was released" in str(error)

    def write(ctx, t):
        r = ring(ctx)
        fill(r, t)
        with r.get() as (a, b):
            a[0, 0] = 1.0
    assert trace_error(write).code == "slot-write"

    def nested(ctx, t):
        r = ring(ctx)
        fill(r, t)
        with r.get():
            with r.get():
                pass
    assert "inside another get()" in str(trace_error(nested))

    def two_producers(ctx, t):
        r = ring(ctx)
        with nvdsl.Warpgroup(ctx, 0):
            fill(r, t)
        with nvdsl.Warpgroup(ctx, 128):
            fill(r, t)
    assert "one producer role" in str(trace_error(two_producers))

    def mixed(ctx, t):
        r = ring(ctx)
        fill(r, t)
        acc = nvdsl.WGMMAAccumulator(64, 64)
        with r.get() as (a, b):
            acc.accumulate(nvdsl.WGMMAMatrix(a, t) @ nvdsl.WGMMAMatrix(b, t), in_flight=1)
        with r.get() as (a, b):
            acc.accumulate(nvdsl.WGMMAMatrix(a, t) @ nvdsl.WGMMAMatrix(b, t), in_flight=0)
    assert "in flight differently" in str(trace_error(mixed, block=128))

    def wrong_box(ctx, t):
        r = nvdsl.Aref(ctx, [((48, 64), nvdsl.float16)], depth=2)
        r.put((t, (0, 0)))
    assert "not made of whole TMA boxes" in str(trace_error(wrong_box))


# --- on the GPU and in the interpreter ----------------------------------------------------------------------------------

@pytest.mark.parametrize("depth, rows, k, blocks, consumers", [
    (3, 64, 7 * 32, None, 1),        # 7 tiles through 3 slots: the trip count is no multiple of the depth
    (2, 160, 5 * 32, 3, 2),          # persistent: 10 row blocks over 3 blocks; two consumer warpgroups
    (4, 32, 1 * 32, None, 1),        # a one-trip loop
    (5, 96, 9 * 32, 2, 3),
    (2, 64, 7 * 32, None, -1),       # one role of one warpgroup fills and reads
    (3, 96, 4 * 32, 2, -2)])         # one role of two warpgroups, persistent
def test_rings_hand_every_tile_to_every_consumer(depth, rows, k, blocks, consumers, backend):
    single_role, consumers = consumers < 0, abs(consumers)
    rng = np.random.default_rng(depth * 100 + rows)
    x = rng.standard_normal((rows, k)).astype(np.float32)
    out = np.full((consumers, rows, 8), np.nan, np.float32)
    fn, _ = row_sums(depth=depth, blocks=blocks, consumers=consumers, single_role=single_role)
    fn(x, out)
    expected = x.reshape(rows, k // 32, 8, 4).sum(axis=(1, 3))
    for c in range(consumers):
        np.testing.assert_allclose(out[c], expected, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("tiles, first, count, axis, joined_shape", [
    ([((64, 64), nvdsl.float16), ((64, 64), nvdsl.float16)], 0, 2, 1, (64, 128)),
    ([((64, 64), nvdsl.float16), ((64, 64), nvdsl.float16)], 0, 2, 0, (128, 64)),
    ([((64, 64), nvdsl.float16), ((64, 64), nvdsl.float32)], 0, 2, 1, None),      # two dtypes
    ([((64, 64), nvdsl.float16), ((32, 64), nvdsl.float16)], 0, 2, 1, None),      # other extents differ
    ([((64, 64), nvdsl.float16), ((64, 64), nvdsl.float16)], 1, 2, 1, None),      # past the slot's tiles
])
def test_adjacent_slot_tiles_are_joined_or_refused(tiles, first, count, axis, joined_shape):
    seen = {}

    @nvdsl.mlir_func
    def host(x):
        x_tma = nvdsl.TMA(x, box=(64, 64))

        @nvdsl.gpu_launch(grid=1, block=128)
        def kernel(ctx):
            ring = nvdsl.Aref(ctx, tiles, depth=2)
            if joined_shape is not None:
                ring.put((x_tma, (0, 0)), (x_tma, (0, 0)))
            with ring.get() as views:
                seen["joined"] = ring.joined(views, first, count, axis)
        kernel()
    if joined_shape is None:
        with pytest.raises(nvdsl.TraceError, match="cannot be joined") as info:
            host.trace(np.zeros((64, 64), np.float16))
        assert info.value.code == "bad-aref"
    else:
        host.trace(np.zeros((64, 64), np.float16))
        assert seen["joined"].shape == joined_shape and seen["joined"].dtype == nvdsl.float16


# --- consumers taking the slots in turn (a ping-pong's) ---------------------------------------------------------------

def row_sums_in_turn(*, depth=3, turns=True):
    """Row sums as :func:`row_sums`, with two consumer warpgroups taking the 16-row blocks alternately
    (consumer c the blocks c, c + 2, ...) from one ``in_turn`` ring: each passes over the slots of the other's
    block before its own (``skip``) and, with ``turns``, waits for its turn (named barrier 10 + c) and hands
    it over after its loop, as the task layer's ping-pong does."""
    seen = {}

    @nvdsl.mlir_func
    def kernel_fn(x, out):
        rows, k = x.shape
        row_blocks, steps = rows // TILE[0], k // TILE[1]
        x_tma = nvdsl.TMA(x, box=TILE)

        @nvdsl.gpu_launch(grid=1, block=384)
        def kernel(ctx):
            ring = seen["ring"] = nvdsl.Aref(ctx, [(TILE, nvdsl.float32)], depth=depth, name="x", in_turn=True)
            with nvdsl.Warpgroup(ctx, 0, register_size=40):
                for block in nvdsl.for_range(row_blocks):
                    for k in nvdsl.for_range(steps):
                        ring.put((x_tma, (block * TILE[0], k * TILE[1])))
            for c in range(2):
                with nvdsl.Warpgroup(ctx, 128 * (1 + c)) as wg:
                    row, part = wg.thread_index // 8, wg.thread_index % 8
                    if turns and c == 1:
                        ctx.arrive_threads(256, barrier=10)          # consumer 0's first turn
                    for it in nvdsl.for_range((row_blocks - c + 1) // 2):
                        block = it * 2 + c
                        ring.skip(steps if c == 1 else nvdsl.select(it > 0, nvdsl.constant(steps, nvdsl.int32), 0))
                        if turns:
                            ctx.sync_threads(256, barrier=10 + c)

                        @nvdsl.fori(0, steps, carry=nvdsl.constant(0.0, nvdsl.float32))
                        def total(k, total):
                            with ring.get() as (tile,):
                                for j in range(4):
                                    total = total + tile[row, part * 4 + j]
                            return total
                        if turns:
                            with nvdsl.when(block + 1 < row_blocks):
                                ctx.arrive_threads(256, barrier=10 + 1 - c)
                        out[0, block * TILE[0] + row, part] = total
        kernel()

    return kernel_fn, seen


@pytest.mark.parametrize("depth, row_blocks, steps", [(3, 5, 7), (2, 4, 1), (4, 3, 2)])
def test_consumers_taking_slots_in_turn_each_get_their_own(depth, row_blocks, steps, backend):
    """Odd and even block counts, K steps more and fewer than the slots: every slot is read by one consumer."""
    rng = np.random.default_rng(depth)
    x = rng.standard_normal((16 * row_blocks, 32 * steps)).astype(np.float32)
    out = np.full((1, 16 * row_blocks, 8), np.nan, np.float32)
    fn, seen = row_sums_in_turn(depth=depth)
    fn(x, out)
    np.testing.assert_allclose(out[0], x.reshape(16 * row_blocks, steps, 8, 4).sum(axis=(1, 3)), rtol=1e-5, atol=1e-4)
    assert seen["ring"].describe().endswith("empty: 1 arrival(s); producer warpgroup 0; consumers warpgroup 1, "
                                            "warpgroup 2, in turn")


def test_consumers_taking_slots_in_turn_without_turns_are_refused():
    """Without turns consumer 1 waits for a slot of its first block while the slot still holds (or waits for)
    an earlier phase of consumer 0's block: a parity wait cannot tell them apart, and the check finds it."""
    from nvdsl.interpreter.protocol import check_protocol
    x, out = np.zeros((16 * 4, 32 * 7), np.float32), np.zeros((1, 16 * 4, 8), np.float32)
    assert check_protocol(*(lambda t: (t.module, t.specs))(row_sums_in_turn(turns=True)[0].trace(x, out))) is None
    trace = row_sums_in_turn(turns=False)[0].trace(x, out)
    with pytest.raises(nvdsl.ProtocolError) as info:
        check_protocol(trace.module, trace.specs)
    assert info.value.code in ("stage-refilled-early", "tma-read-before-complete", "deadlock"), str(info.value)


def in_turn_ring(ctx):
    return nvdsl.Aref(ctx, [((64, 64), nvdsl.float16), ((64, 64), nvdsl.float16)], depth=2, name="ab", in_turn=True)


def skip_after_products(ctx, t, retired: bool):
    """A product left in flight holds its slot: skipping past it would lose the slot's release; once it has
    retired (``retired``), the consumer may skip."""
    r = in_turn_ring(ctx)
    fill(r, t)
    with nvdsl.Warpgroup(ctx, 128):
        acc = nvdsl.WGMMAAccumulator(64, 64)
        with r.get() as (a, b):
            acc.accumulate(nvdsl.WGMMAMatrix(a, t) @ nvdsl.WGMMAMatrix(b, t), in_flight=1)
        if retired:
            nvdsl.wgmma_wait(0)
        r.skip(1)


def skip_inside_get(ctx, t):
    r = in_turn_ring(ctx)
    fill(r, t)
    with r.get():
        r.skip(1)


@pytest.mark.parametrize("body, words", [
    (lambda ctx, t: (lambda r: (fill(r, t), r.skip(1)))(ring(ctx)), "whose consumers all read every slot"),
    (lambda ctx, t: skip_after_products(ctx, t, retired=False), "may still hold slots"),
    (skip_inside_get, "may still hold slots"),
    (lambda ctx, t: (lambda r: (fill(r, t), r.skip(-1)))(in_turn_ring(ctx)), "must be >= 0"),
    (lambda ctx, t: (lambda r: (fill(r, t), r.skip(1.5)))(in_turn_ring(ctx)), "an int or a traced int32"),
    (lambda ctx, t: nvdsl.Aref(ctx, [((64, 64), nvdsl.float16)], depth=2, in_turn="yes"), "True or False"),
])
def test_skip_misuse_is_refused(body, words):
    error = trace_error(body)
    assert error.code == "bad-aref" and words in str(error), str(error)
