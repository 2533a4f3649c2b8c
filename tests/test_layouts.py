"""nvdsl.layouts: the shape:stride algebra (checked by brute force and against Graphene's figures) and
the wgmma accumulator's fragment layout (against the PTX ISA's description). Pure Python: no MLIR."""

import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

from nvdsl.layouts import (FragmentLayout, Layout, coalesce, complement, composition, idx2crd, logical_divide,
                           logical_product, make_layout, rows_across_lanes, warps_per_row, wgmma_accumulator,
                           zipped_divide)

LAYOUTS = ["8:1", "8:2", "(4,8):(1,4)", "(4,8):(8,1)", "(4,(2,4)):(2,(1,8))", "(2,(1,4)):(1,(6,2))",
           "((2,2),(3,4)):((1,2),(4,12))", "(4,2,3):(2,1,8)", "(3,4):(0,1)"]


def offsets(layout: Layout) -> list[int]:
    return [layout(i) for i in range(layout.size)]


def test_notation_round_trips_and_coordinates_are_colexicographic():
    for text in LAYOUTS:
        assert str(Layout.parse(text)) == text
    layout = Layout.parse("(4,(2,4)):(2,(1,8))")   # Graphene Fig. 3c: two adjacent columns together
    assert layout.rank == 2 and layout.size == 32 and layout.cosize == 32
    assert sorted(offsets(layout)) == list(range(32))
    assert layout(5) == layout((1, 1)) == layout(1, 1) == layout((1, (1, 0))) == 2 + 1
    assert layout((3, (1, 3))) == 3 * 2 + 1 + 3 * 8
    assert idx2crd(13, (4, (2, 4))) == (1, (1, 1))
    assert repr(Layout((4, 8), (1, 4))) == "Layout('(4,8):(1,4)')"


@pytest.mark.parametrize("text", ["(4,8):(1)", "(4,0):(1,4)", "4:", "(4,8:(1,4)", "(4,8):(1,4))", "x:1"])
def test_malformed_layouts_are_refused(text):
    with pytest.raises(ValueError):
        Layout.parse(text)


def test_coalesce_keeps_the_map_with_fewest_modes():
    for text in LAYOUTS:
        layout = Layout.parse(text)
        merged = coalesce(layout)
        assert merged.size == layout.size and offsets(merged) == offsets(layout)
    assert str(coalesce(Layout.parse("(2,(1,4)):(1,(6,2))"))) == "8:1"
    assert str(coalesce(Layout.parse("(4,8):(8,1)"))) == "(4,8):(8,1)"


@pytest.mark.parametrize("a, b", [("(4,8):(1,4)", "8:2"), ("(4,8):(8,1)", "(2,2):(16,8)"), ("32:1", "(4,2):(1,16)"),
                                  ("(4,(2,4)):(2,(1,8))", "(4,4):(2,8)"), ("(6,2):(8,2)", "(4,3):(3,1)"),
                                  ("(4,8):(1,4)", "4:0")])
def test_composition_is_function_composition(a, b):
    a, b = Layout.parse(a), Layout.parse(b)
    composed = composition(a, b)
    assert composed.size == b.size
    assert [composed(i) for i in range(b.size)] == [a(b(i)) for i in range(b.size)]


def test_composition_refuses_a_layout_it_cannot_divide():
    with pytest.raises(ValueError, match="does not divide"):
        composition(Layout.parse("(3,4):(4,1)"), Layout(4, 2))   # offsets 0, 8, 1, 2: no layout


@pytest.mark.parametrize("text, cotarget", [("(4,2):(1,16)", 32), ("4:2", 16), ("(2,2):(1,8)", 32), ("8:1", 8)])
def test_complement_covers_what_the_layout_leaves_out(text, cotarget):
    layout = Layout.parse(text)
    together = make_layout(layout, complement(layout, cotarget))
    assert sorted(offsets(together)) == list(range(together.size)) and together.size >= cotarget


def test_dividing_graphene_figure_4_gives_its_tiles():
    """Graphene Fig. 4: A is 4x8 column-major; tile sizes are 1-D layouts per dimension."""
    a = Layout.parse("(4,8):(1,4)")
    # (b) two adjacent rows and four adjacent columns: tiles (2,4):(1,4), arranged (2,2):(2,16)
    assert str(zipped_divide(a, (Layout(2, 1), Layout(4, 1)))) == "((2,4),(2,2)):((1,4),(2,16))"
    # (c) every other row
    assert str(zipped_divide(a, (Layout(2, 2), Layout(4, 1)))) == "((2,4),(2,2)):((2,4),(1,16))"
    # (d) every other row, and columns {0,1,4,5} or {2,3,6,7}
    divided = zipped_divide(a, (Layout(2, 2), Layout.parse("(2,2):(1,4)")))
    assert str(divided) == "((2,(2,2)),(2,2)):((2,(4,16)),(1,8))"
    tile = divided[0]
    assert sorted(tile(i) for i in range(tile.size)) == sorted(a(r, c) for r in (0, 2) for c in (0, 1, 4, 5))


def test_dividing_a_warp_gives_graphene_thread_groups():
    warp = Layout(32, 1)
    # Fig. 6: Volta's quad-pairs, threads 0-3 with 16-19, four of them
    assert str(zipped_divide(warp, Layout.parse("(4,2):(1,16)"))) == "((4,2),4):((1,16),4)"
    # Fig. 5: four groups of eight threads for ldmatrix
    assert str(logical_divide(warp, 8)) == "(8,4):(1,8)"


def test_logical_product_repeats_a_tile():
    product = logical_product(Layout.parse("(2,2):(1,2)"), Layout.parse("(3,4):(1,3)"))
    assert str(product) == "((2,2),(3,4)):((1,2),(4,12))"
    assert sorted(offsets(product)) == list(range(48))


class Traced:
    """Stands in for a traced kernel value: records that arithmetic happened through the operators."""

    def __init__(self, value: int, ops: list):
        self.value, self.ops = value, ops

    def _op(self, name, other, result):
        self.ops.append(name)
        return Traced(result, self.ops)

    def __add__(self, o): return self._op("+", o, self.value + getattr(o, "value", o))
    __radd__ = __add__
    def __mul__(self, o): return self._op("*", o, self.value * o)
    def __floordiv__(self, o): return self._op("//", o, self.value // o)
    def __mod__(self, o): return self._op("%", o, self.value % o)


def test_a_layout_evaluates_traced_indices_with_the_same_arithmetic():
    layout = wgmma_accumulator(64, 128).coords[0][0]        # thread -> row: (4,8,4):(0,1,16)
    for t in (0, 5, 37, 127):
        ops = []
        assert layout(Traced(t, ops)).value == layout(t)
        assert ops.count("%") == 1   # the mode of stride 0 (the quad) costs nothing


def accumulator_formula(m, n, thread, value):
    """The PTX ISA's wgmma D fragment (m64nNk16, 32-bit), as _fragments documents it: thread t holds,
    per 64-row block c, 8-column block q and h, j in (0, 1), struct value 4q + 2h + j + (n/2)c at
    row 16 (t // 32) + (t % 32) // 4 + 8h + 64c, column 8q + 2 (t % 4) + j."""
    c, i = divmod(value, n // 2)
    q, hj = divmod(i, 4)
    h, j = divmod(hj, 2)
    return 16 * (thread // 32) + (thread % 32) // 4 + 8 * h + 64 * c, 8 * q + 2 * (thread % 4) + j


@pytest.mark.parametrize("m, n", [(64, 8), (64, 128), (64, 256), (128, 64), (192, 16)])
def test_the_accumulator_layout_is_the_ptx_fragment(m, n):
    layout = wgmma_accumulator(m, n)
    assert layout.threads == 128 and layout.values == m * n // 128
    seen = set()
    for t in range(128):
        for v in range(layout.values):
            assert layout(t, v) == accumulator_formula(m, n, t, v)
            seen.add(layout(t, v))
    assert len(seen) == m * n   # every element held once


def test_the_accumulator_layout_prints_in_shape_stride_notation():
    assert str(wgmma_accumulator(64, 128).tv) == "((4,8,4),(2,2,16)):((128,1,16),(64,8,512))"
    assert str(wgmma_accumulator(64, 128)) == ("wgmma accumulator 64x128 over 128 threads: (thread,value) -> "
                                               "column-major index ((4,8,4),(2,2,16)):((128,1,16),(64,8,512))")
    assert str(wgmma_accumulator(128, 64).tv) == "((4,8,4),(2,2,8,2)):((256,1,16),(128,8,1024,64))"
    assert str(wgmma_accumulator(64, 128).project(0)) == \
        "rows of wgmma accumulator 64 over 128 threads: (thread,value) -> index ((4,8,4),2):((0,1,16),8)"


@pytest.mark.parametrize("m, n, run", [(4, 512, 8), (8, 1024, 8), (4, 512, 1), (12, 96, 1), (4, 64, 2)])
def test_rows_across_lanes_hold_runs_of_consecutive_columns(m, n, run):
    """Thread ``lane + 32 w`` holds row ``w + 4 r`` at columns ``run * lane + 32 run c + e``: every element once, a
    run's values numbered ``m / 4`` apart; the rows' vector is the same whatever the run (vectors of tiles of
    several widths combine), and a row reduces over the warp's 32 lanes."""
    layout = rows_across_lanes(m, n, run)
    assert layout.threads == 128 and layout.values == m * n // 128
    seen = set()
    for t in range(128):
        lane, w = t % 32, t // 32
        for v in range(layout.values):
            r, rest = v % (m // 4), v // (m // 4)
            e, c = rest % run, rest // run
            assert layout(t, v) == (w + 4 * r, run * lane + 32 * run * c + e)
            seen.add(layout(t, v))
    assert len(seen) == m * n
    assert layout.project(0) == rows_across_lanes(m, 32).project(0)
    assert layout.reduction(1).shuffle_masks == (1, 2, 4, 8, 16)
    with pytest.raises(ValueError, match="multiple of 256 columns"):
        rows_across_lanes(4, 128, 8)


@pytest.mark.parametrize("m, n, run, warps", [(1, 128, 1, 4), (1, 1024, 8, 4), (2, 512, 8, 4), (3, 256, 1, 4),
                                              (6, 512, 8, 4), (1, 4096, 8, 16), (1, 512, 1, 8), (2, 2048, 8, 16),
                                              (3, 768, 1, 8), (8, 256, 1, 8)])
def test_fewer_rows_than_warps_lie_across_several_warps(m, n, run, warps):
    """Rows not a multiple of the warps (a warpgroup's 4, or the 8 or 16 of consumers that hold a row-wise tile
    together): each row along ``k`` = warps // gcd(m, warps) warps' lanes, thread ``lane + 32 (w + k g)`` holding
    row ``g + (warps / k) r`` at column ``run lane + 32 run w + 32 run k c + e``, every element once; a row reduces
    over the lanes and then across its warps (shuffle masks of 32, 64, ..., which the tile's reduction takes through
    shared memory)."""
    layout = rows_across_lanes(m, n, run, warps)
    k = warps_per_row(m, warps)
    if warps == 4:
        assert k == {1: 4, 2: 2, 3: 4, 6: 2}[m] and layout == rows_across_lanes(m, n, run)
    groups, seen = warps // k, set()
    assert layout.threads == 32 * warps
    for t in range(32 * warps):
        lane, w, g = t % 32, (t // 32) % k, t // (32 * k)
        for v in range(layout.values):
            r, rest = v % (m // groups), v // (m // groups)
            e, c = rest % run, rest // run
            assert layout(t, v) == (g + groups * r, run * lane + 32 * run * w + 32 * run * k * c + e)
            seen.add(layout(t, v))
    assert len(seen) == m * n
    assert layout.reduction(1).shuffle_masks == (1, 2, 4, 8, 16) + tuple(32 << i for i in range(k.bit_length() - 1))
    assert layout.project(0) == rows_across_lanes(m, 32 * k, 1, warps).project(0)
    if k > 1:
        with pytest.raises(ValueError, match=f"multiple of {32 * run * k} columns"):
            rows_across_lanes(m, 32 * run * k + 32 * run, run, warps)
    with pytest.raises(ValueError, match="whole warpgroups"):
        rows_across_lanes(m, n, run, 6)


@pytest.mark.parametrize("m, n", [(64, 128), (128, 64)])
def test_a_row_reduction_combines_each_threads_row_then_its_quad(m, n):
    layout = wgmma_accumulator(m, n)
    plan = layout.reduction(1)
    assert plan.shuffle_masks == (1, 2) and plan.target == layout.project(0)
    assert sorted(v for group in plan.groups for v in group) == list(range(layout.values))
    for t in range(128):
        for u, group in enumerate(plan.groups):
            rows = {layout(t, v)[0] for v in group}
            assert rows == {plan.target(t, u)[0]}
            # the lanes it exchanges with hold the same row
            assert all(plan.target(t ^ mask, u) == plan.target(t, u) for mask in plan.shuffle_masks)
    broadcast = layout.broadcast_map(0)
    assert all(plan.target(t, broadcast[v])[0] == layout(t, v)[0] for t in (0, 77) for v in range(layout.values))


def test_a_column_reduction_of_an_accumulator_would_cross_warps():
    assert wgmma_accumulator(64, 64).reduction(0).shuffle_masks == (4, 8, 16, 32, 64)


def test_fragment_layouts_check_their_coordinates():
    rows = Layout.parse("(32,2):(1,32)")
    cols = Layout.parse("(32,2):(0,0)")
    FragmentLayout((64, 1), (rows, cols))
    with pytest.raises(ValueError, match="outside"):
        FragmentLayout((32, 1), (rows, cols))
    with pytest.raises(ValueError, match="one coordinate layout per axis"):
        FragmentLayout((64, 1), (rows,))
    with pytest.raises(ValueError, match="two modes"):
        FragmentLayout((64,), (Layout(64, 1),))


def test_the_layouts_package_does_not_import_mlir():
    """DESIGN.md: layouts must not depend on MLIR. Import the package on its own, not through nvdsl."""
    import nvdsl.layouts
    package_parent = os.path.dirname(os.path.dirname(nvdsl.layouts.__file__))
    code = (f"import sys; sys.path.insert(0, {package_parent!r}); import layouts; "
            "layouts.wgmma_accumulator(64, 64).reduction(1); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mlir', 'nvdsl')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_every_thread_value_pair_of_small_layouts_is_reachable():
    layout = Layout.parse("((2,2),(3,4)):((1,2),(4,12))")
    assert sorted(layout(i, j) for i, j in itertools.product(range(4), range(12))) == list(range(48))


@pytest.mark.parametrize("span", [0, 32, 64, 128])
def test_the_swizzle_permutes_16_byte_chunks_by_row_as_the_ptx_isa_draws_it(span):
    """An independent statement of the swizzle (PTX ISA, "Tensor-copy swizzling modes"): in each 128-byte row of
    shared memory, 16-byte chunk c moves to c XOR (row mod span/16); bytes inside a chunk stay. Checked against
    nvdsl.layouts.swizzle over two whole periods, for ints and NumPy arrays."""
    from nvdsl.layouts import swizzle, swizzle_alignment
    offsets = np.arange(2 * swizzle_alignment(span))
    row, rest = np.divmod(offsets, 128)
    chunk, byte = np.divmod(rest, 16)
    expected = row * 128 + (chunk ^ (row % max(span // 16, 1))) * 16 + byte
    np.testing.assert_array_equal(swizzle(offsets, span), expected)
    assert [swizzle(int(o), span) for o in offsets[::37]] == list(expected[::37])
    assert sorted(swizzle(offsets, span)) == list(offsets)        # a permutation within the periods
