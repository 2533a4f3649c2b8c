"""Out-of-bounds accesses that tracing proves, refused before any launch (no GPU needed), and the accesses it
must leave alone: indices read from memory or computed from runtime scalars, branches it does not understand,
ranges it cannot bound exactly. What only the GPU knows stays with debug mode (NVDSL_DEBUG=1)."""

import numpy as np
import pytest

import nvdsl


def saxpy(guard_y: bool = False, options=None):
    """The README's saxpy; with ``guard_y``, its access also guarded by y's own extent."""
    @nvdsl.mlir_func(options=options)
    def fn(x, y, alpha):
        n = x.shape[0]

        @nvdsl.gpu_launch(grid=(n + 255) // 256, block=256)
        def kernel(ctx):
            i = ctx.block_id.x * 256 + ctx.thread_id.x
            with nvdsl.when(i < n):
                if guard_y:
                    with nvdsl.when(i < y.shape[0]):
                        y[i] = alpha * x[i] + y[i]
                else:
                    y[i] = alpha * x[i] + y[i]
        kernel()
    return fn


def vector(n):
    return np.zeros(n, np.float32)


def trace(body, *arguments, grid=1, block=1):
    """Trace a kernel ``body(ctx, *arguments)`` launched on ``grid`` x ``block``."""
    @nvdsl.mlir_func
    def host(*args):
        @nvdsl.gpu_launch(grid=grid, block=block)
        def kernel(ctx):
            body(ctx, *args)
        kernel()
    return host.trace(*arguments)


def refused(body, *arguments, **launch) -> nvdsl.TraceError:
    with pytest.raises(nvdsl.TraceError) as info:
        trace(body, *arguments, **launch)
    assert info.value.code == "out-of-bounds", info.value
    return info.value


def test_the_readme_saxpy_with_a_short_y_is_refused_while_tracing_naming_y_and_the_line():
    with pytest.raises(nvdsl.TraceError) as info:
        saxpy().trace(vector(1024), vector(1000), 2.0)
    error = info.value
    assert error.code == "out-of-bounds"
    assert "'y'" in error.message and "axis 0" in error.message
    assert "0..1023" in error.message and "extent 1000" in error.message
    assert "it is 1000 where block_id.x = 3, thread_id.x = 232" in error.message
    assert error.loc.filename == __file__ and error.loc.text == "y[i] = alpha * x[i] + y[i]"
    assert "nvdsl.when(index < y.shape[0])" in error.hint


def test_the_refusal_holds_in_debug_mode_too():
    with pytest.raises(nvdsl.TraceError) as info:
        saxpy(options=nvdsl.Options(debug=True)).trace(vector(1024), vector(1000), 2.0)
    assert info.value.code == "out-of-bounds"


@pytest.mark.parametrize("n", [1000, 1024, 1_000_000])
def test_the_correct_saxpy_is_accepted(n):
    saxpy().trace(vector(n), vector(n), 2.0)


def test_the_hint_works_guarding_by_y_s_own_extent_is_accepted():
    saxpy(guard_y=True).trace(vector(1024), vector(1000), 2.0)


def grid_2d(out, index, m, n):
    """A 2-D launch of 16 x 16 blocks over an m x n output, each thread writing out[index(row, col)]."""
    def body(ctx, out):
        row = ctx.block_id.y * 16 + ctx.thread_id.y
        col = ctx.block_id.x * 16 + ctx.thread_id.x
        with nvdsl.when((row < m) & (col < n)):
            out[index(row, col)] = 1.0
    return body, out, dict(grid=((n + 15) // 16, (m + 15) // 16), block=(16, 16))


def test_a_guarded_2d_access_is_accepted_and_a_short_axis_refused():
    body, out, launch = grid_2d(np.zeros((100, 70), np.float32), lambda r, c: (r, c), 100, 70)
    trace(body, out, **launch)
    body, out, launch = grid_2d(np.zeros((100, 69), np.float32), lambda r, c: (r, c), 100, 70)
    error = refused(body, out, **launch)
    assert "axis 1" in error.message and "0..69" in error.message and "extent 69" in error.message


def test_a_row_major_flat_index_is_bounded_by_both_guards():
    body, out, launch = grid_2d(np.zeros(100 * 70, np.float32), lambda r, c: r * 70 + c, 100, 70)
    trace(body, out, **launch)
    body, out, launch = grid_2d(np.zeros(100 * 70 - 1, np.float32), lambda r, c: r * 70 + c, 100, 70)
    assert "0..6999" in refused(body, out, **launch).message


def test_an_unguarded_2d_access_past_the_rows_is_refused():
    def body(ctx, out):
        out[ctx.block_id.y * 16 + ctx.thread_id.y, ctx.thread_id.x] = 1.0
    error = refused(body, np.zeros((40, 16), np.float32), grid=(1, 3), block=(16, 16))
    assert "axis 0" in error.message and "0..47" in error.message


def test_a_loop_past_the_end_is_refused_naming_the_loop():
    def body(ctx, out):
        for k in nvdsl.for_range(10):
            out[k + 95] = 1.0
    error = refused(body, vector(100))
    assert "95..104" in error.message and "the index of the loop at line" in error.message


def test_loops_in_bounds_strided_or_never_run_are_accepted():
    def body(ctx, out):
        for k in nvdsl.for_range(5):
            out[k + 95] = 1.0
        for k in nvdsl.for_range(3, 100, 4):         # 3, 7, ..., 99
            out[k] = 1.0
        for k in nvdsl.for_range(0):                  # never runs
            out[k + 1000] = 1.0
        for k in nvdsl.for_range(10):
            with nvdsl.when(k < 5):
                out[k + 95] = 1.0
    trace(body, vector(100))


def test_a_fori_loop_past_the_end_is_refused():
    def body(ctx, out):
        @nvdsl.fori(0, 8, 2, carry=nvdsl.constant(0.0, nvdsl.float32))
        def total(k, acc):
            return acc + out[k + 94]                  # k = 6 reads out[100]
        out[0] = total
    assert "94..100" in refused(body, vector(100)).message


def test_a_negative_index_is_refused_with_its_own_hint():
    def body(ctx, out):
        out[ctx.thread_id.x - 1] = 1.0
    error = refused(body, vector(32), block=32)
    assert "-1..30" in error.message and "index >= 0" in error.hint


def test_a_strided_index_is_refused_only_where_a_thread_reaches_past_the_end():
    def body(ctx, out):
        out[2 * ctx.thread_id.x] = 1.0               # 0, 2, ..., 126
    trace(body, vector(127), block=64)
    assert "0..126" in refused(body, vector(126), block=64).message


def test_a_guard_on_another_coordinate_bounds_the_index_exactly():
    def body(ctx, out):
        with nvdsl.when(ctx.thread_id.x < 10):
            out[ctx.thread_id.x + 118] = 1.0         # 118..127
    trace(body, vector(128), block=128)
    assert "118..127" in refused(body, vector(127), block=128).message


def test_int32_arithmetic_on_ids_is_tracked_through_conversions():
    def body(ctx, out):
        i = ctx.thread_id.x.to(nvdsl.int32) * 2 + nvdsl.constant(1, nvdsl.int32)
        out[i] = 1.0                                  # 1..63
    trace(body, vector(64), block=32)
    assert "1..63" in refused(body, vector(63), block=32).message


def test_indices_read_from_memory_are_left_to_debug_mode():
    def body(ctx, out, idx):
        out[idx[ctx.thread_id.x] + 1000] = 1.0
    trace(body, vector(4), np.zeros(32, np.int32), block=32)


def test_indices_from_runtime_scalars_are_left_to_debug_mode():
    def body(ctx, out, shift):
        out[ctx.thread_id.x + shift] = 1.0
        for k in nvdsl.for_range(shift):              # how often it runs is only known on the GPU
            out[k + 1000] = 1.0
    trace(body, vector(32), 5, block=32)


@pytest.mark.parametrize("guard", [
    lambda ctx, flag: flag[0] > 0,                                             # a loaded value
    lambda ctx, flag: (ctx.thread_id.x < 2) | (ctx.thread_id.x > 40),          # '|' is not a conjunction
    lambda ctx, flag: ctx.thread_id.x != 3,                                    # nor is '!='
    lambda ctx, flag: ctx.thread_id.x // 2 < 1,                                # '//' is not tracked
])
def test_accesses_under_conditions_not_understood_are_never_refused(guard):
    def body(ctx, out, flag):
        with nvdsl.when(guard(ctx, flag)):
            out[ctx.thread_id.x + 100] = 1.0
    trace(body, vector(32), np.zeros(1, np.int32), block=32)


def test_the_other_side_of_a_branch_and_untracked_operations_are_never_refused():
    def body(ctx, out):
        with nvdsl.when(ctx.thread_id.x < 100) as branch:
            out[0] = 1.0
        with branch.otherwise():
            out[ctx.thread_id.x + 100] = 1.0
        out[ctx.thread_id.x // 2 + 100] = 1.0
        out[nvdsl.minimum(ctx.thread_id.x, 1000) + 100] = 1.0
    trace(body, vector(32), block=32)


def test_every_refusal_is_a_real_out_of_bounds_access_with_its_exact_range():
    """Against brute force over small boxes: a refusal names a point that reaches the access out of bounds,
    and the range it reports is the exact range of the index over the points that reach it."""
    import itertools
    import random

    from nvdsl.frontend.ranges import Affine, Atom, out_of_bounds

    def form(rng, atoms):
        total = Affine(rng.randint(-20, 20))
        for atom in atoms:
            if rng.random() < 0.7:
                total = total + Affine.of_atom(atom).scaled(rng.choice([-17, -3, -2, -1, 1, 2, 3, 4, 8, 16]))
        return total

    refusals = 0
    for seed in range(300):
        rng = random.Random(seed)
        atoms = [Atom(f"a{k}", rng.randint(1, 12), rng.randint(-3, 3), rng.randint(1, 3))
                 for k in range(rng.randint(1, 3))]
        index, extent = form(rng, atoms), rng.randint(1, 60)
        conditions = tuple(form(rng, atoms) for _ in range(rng.randint(0, 3)))
        points = [dict(zip(atoms, p)) for p in itertools.product(*(range(a.size) for a in atoms))]
        values = [index.at(p) for p in points if all(c.at(p) <= 0 for c in conditions)]
        proof = out_of_bounds(index, extent, conditions)
        if proof is None:
            continue
        refusals += 1
        point = {atom: proof.point.get(atom, 0) for atom in atoms}
        assert all(c.at(point) <= 0 for c in conditions), seed
        assert index.at(point) == proof.index and not 0 <= proof.index < extent, seed
        assert (proof.low, proof.high) == (min(values), max(values)), seed
    assert refusals > 100
