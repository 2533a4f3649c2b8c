"""Memory a new user reaches for: atomics, bounds-checked accesses, scratch arrays, bfloat16 from NumPy,
raw MLIR ops on arrays, read-only arguments. PTX checks without a GPU; results against NumPy on one."""

import os
import re
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import nvdsl
from nvdsl.testing import has_gpu, requires_gpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def staged(ctx, out, space: str, dtype, count: int):
    """``out`` itself, or (``space == "shared"``) a shared copy of its first ``count`` elements, with a
    function that copies that back at the end."""
    if space != "shared":
        return out, lambda: None
    t = ctx.thread_id.x
    target = ctx.shared_array((count,), dtype)
    with nvdsl.when(t < count):
        target[t] = out[t]
    ctx.sync_threads()

    def write_back():
        ctx.sync_threads()
        with nvdsl.when(t < count):
            out[t] = target[t]
    return target, write_back


def atomics(operation, dtype, space):
    """Every thread applies ``operation`` to one of 4 elements of a ``dtype`` array in ``space``; the old
    values go to ``old``, the final ones to ``out``."""
    @nvdsl.mlir_func
    def run(values, old, out):
        @nvdsl.gpu_launch(grid=1, block=values.shape[0])
        def kernel(ctx):
            t = ctx.thread_id.x
            target, write_back = staged(ctx, out, space, getattr(nvdsl, dtype), 4)
            if operation == "cas":
                old[t] = target.atomic_cas(t % 4, out[t % 4], values[t])
            else:
                old[t] = getattr(target, f"atomic_{operation}")(t % 4, values[t])
            write_back()
        kernel()
    return run


PTX_ATOMS = [
    ("add", "float32", "global", "atom.global.add.f32"), ("add", "float32", "shared", "atom.shared.add.f32"),
    ("add", "float16", "global", "atom.global.add.noftz.f16"), ("add", "float64", "global", "atom.global.add.f64"),
    ("add", "bfloat16", "global", "atom.global.add.noftz.bf16"),
    ("add", "int32", "global", "atom.global.add.u32"), ("add", "uint64", "shared", "atom.shared.add.u64"),
    ("min", "int32", "global", "atom.global.min.s32"), ("min", "uint32", "shared", "atom.shared.min.u32"),
    ("max", "int64", "global", "atom.global.max.s64"), ("max", "uint32", "global", "atom.global.max.u32"),
    ("exchange", "float32", "global", "atom.global.exch.b32"), ("exchange", "int32", "shared", "atom.shared.exch.b32"),
    ("cas", "int32", "global", "atom.relaxed.gpu.global.cas.b32"),
    ("cas", "float32", "shared", "atom.relaxed.gpu.shared.cas.b32"),
    ("cas", "uint64", "global", "atom.relaxed.gpu.global.cas.b64"),
]


@pytest.mark.parametrize("operation, dtype, space, instruction", PTX_ATOMS)
def test_atomics_lower_to_ptx_atom_instructions(operation, dtype, space, instruction):
    a = np.zeros(32, getattr(np, dtype) if dtype != "bfloat16" else ml_dtypes.bfloat16)
    ptx = atomics(operation, dtype, space).compile(a, a, a).ptx
    assert instruction in ptx


def test_float_min_max_are_compare_and_swap_loops():
    a = np.zeros(32, np.float32)
    assert re.search(r"atom\.\w+(\.\w+)*\.global\.cas\.b32", atomics("max", "float32", "global").compile(a, a, a).ptx)


def pair_add(space, dtype=nvdsl.float16):
    @nvdsl.mlir_func
    def run(a, b, out, old):
        @nvdsl.gpu_launch(grid=1, block=a.shape[0])
        def kernel(ctx):
            t = ctx.thread_id.x
            target, write_back = staged(ctx, out, space, dtype, 8)
            first, second = target.atomic_add((t % 4) * 2, (a[t], b[t]))
            old[2 * t] = first
            old[2 * t + 1] = second
            write_back()
        kernel()
    return run


@pytest.mark.parametrize("space", ["global", "shared"])
@pytest.mark.parametrize("dtype, flavour", [(nvdsl.float16, "f16x2"), (nvdsl.bfloat16, "bf16x2")])
def test_pairs_of_16_bit_floats_add_in_one_atomic(space, dtype, flavour):
    np_dtype = np.float16 if dtype is nvdsl.float16 else ml_dtypes.bfloat16
    a = np.zeros(32, np_dtype)
    ptx = pair_add(space, dtype).compile(a, a, np.zeros(8, np_dtype), np.zeros(64, np_dtype)).ptx
    assert f"atom.{space}.add.noftz.{flavour}" in ptx


def halves_part(ctx, offsets, sizes, steps):
    """A subview of a shared (4, 8) float16 array."""
    from mlir.dialects import memref
    return nvdsl.wrap(memref.subview(ctx.shared_array((4, 8), nvdsl.float16).ir, offsets, sizes, steps))


@pytest.mark.parametrize("body, code", [
    (lambda ctx, x: x.atomic_add(1, (1.0, 2.0)), "bad-atomic"),                            # float32 pairs
    (lambda ctx, x: ctx.shared_array((4,), nvdsl.float16).atomic_add(1, (1.0, 2.0)), "misaligned"),
    (lambda ctx, x: ctx.shared_array((4,), nvdsl.float16).atomic_max(1, 1.0), "bad-atomic"),
    (lambda ctx, x: x.atomic_add(0, ctx.thread_id.x), "type-mismatch"),
    (lambda ctx, x: halves_part(ctx, [0, 0], [4, 2], [1, 2]).atomic_add((0, 0), (1.0, 2.0)), "bad-atomic"),
    (lambda ctx, x: halves_part(ctx, [0, 1], [4, 4], [1, 1]).atomic_add((0, 0), (1.0, 2.0)), "misaligned"),
])
def test_atomic_misuse_is_reported(body, code):
    from helpers import trace_body
    with pytest.raises(nvdsl.TraceError) as info:
        trace_body(body, np.zeros(4, np.float32))
    assert info.value.code == code


def test_debug_mode_bounds_checks_every_traced_access():
    def make(options):
        @nvdsl.mlir_func(options=options)
        def saxpy(x, y, alpha, n):
            @nvdsl.gpu_launch(grid=1, block=64)
            def kernel(ctx):
                i = ctx.thread_id.x
                tile = ctx.shared_array((64,), nvdsl.float32)
                tile[i] = x[i]
                with nvdsl.when(i < n):     # n is only known on the GPU: tracing cannot refuse y[i]
                    y[i] = alpha * tile[63 - i] + y[i]
            kernel()
        return saxpy
    x, y = np.zeros(64, np.float32), np.zeros(32, np.float32)   # y shorter than x
    plain = make(None).compile(x, y, 2.0, 64)
    assert "trap;" not in plain.ptx and "vprintf" not in plain.ptx
    checked = make(nvdsl.Options(debug=True)).compile(x, y, 2.0, 64)
    assert "trap;" in checked.ptx and "vprintf" in checked.ptx
    text = checked.trace.mlir
    assert text.count("llvm.intr.trap") == 5  # x[i], tile[i] =, tile[63 - i], y[i] =, y[i]
    assert re.search(r"out-of-bounds write of 'y' at index \[%lld\] outside its shape \[32\] at "
                     + re.escape(__file__) + r":\d+: y\[i\] = alpha", text)
    assert "out-of-bounds read of 'shared_array@0'" in text
    assert plain.module.key != checked.module.key


def test_writes_through_raw_mlir_ops_are_seen_and_wrap_makes_values():
    from mlir.dialects import arith, memref

    @nvdsl.mlir_func
    def raw(x, y, out):
        @nvdsl.gpu_launch(grid=1, block=x.shape[0])
        def kernel(ctx):
            i = ctx.thread_id.x
            total = nvdsl.wrap(arith.addf(x[i].ir, y[i].ir))         # a Value again: operators work on it
            assert isinstance(total, nvdsl.Value) and total.dtype is nvdsl.float32
            memref.store((total * 2.0).ir, out.ir, [i.ir])           # a write nvdsl did not make
            view = nvdsl.wrap(memref.cast(ir_type(out), out.ir))
            assert isinstance(view, nvdsl.Array) and view.shape == out.shape
        kernel()

    def ir_type(array):
        from mlir import ir
        return ir.MemRefType.get(list(array.shape), array.dtype.mlir_type())
    a = np.zeros(32, np.float32)
    assert raw.trace(a, a, a).written == frozenset({2})


@pytest.mark.parametrize("ir_text, dtype, expected", [
    ("i32", None, nvdsl.int32), ("i32", nvdsl.uint32, nvdsl.uint32), ("f16", None, nvdsl.float16),
    ("bf16", None, nvdsl.bfloat16), ("index", None, nvdsl.index), ("i1", None, nvdsl.bool_),
])
def test_wrap_reads_the_dtype_from_the_mlir_type(ir_text, dtype, expected):
    from mlir import ir
    from mlir.dialects import arith
    seen = []

    def body(ctx, x):
        seen.append(nvdsl.wrap(arith.constant(ir.Type.parse(ir_text), 0 if ir_text != "f16" and
                                              ir_text != "bf16" else 0.0), dtype).dtype)
    from helpers import trace_body
    trace_body(body, np.zeros(4, np.float32))
    assert seen == [expected]
    with pytest.raises(nvdsl.TraceError) as info:
        trace_body(lambda ctx, x: nvdsl.wrap(arith.constant(ir.F32Type.get(), 1.0), nvdsl.int32), np.zeros(4))
    assert info.value.code == "bad-wrap"


def scratch_sum():
    """Two kernels in one call: the first sums blocks of x into a zeroed scratch array with atomics, the
    second (launched after it, on the same stream) scales the sums into out."""
    @nvdsl.mlir_func
    def sums(x, out):
        n = x.shape[0]
        partial = nvdsl.zeros((out.shape[0],), nvdsl.float32)

        @nvdsl.gpu_launch(grid=(n + 127) // 128, block=128)
        def accumulate(ctx):
            i = ctx.block_id.x * 128 + ctx.thread_id.x
            with nvdsl.when(i < n):
                partial.atomic_add(i % out.shape[0], x[i])
        accumulate()

        @nvdsl.gpu_launch(grid=1, block=out.shape[0])
        def finish(ctx):
            out[ctx.thread_id.x] = partial[ctx.thread_id.x] * 0.5
        finish()
    return sums


def test_scratch_arrays_are_planned_per_call_and_refused_in_kernels():
    compiled = scratch_sum().compile(np.ones(1000, np.float32), np.zeros(8, np.float32))
    plan = compiled.module.plan
    assert [s.to_json() for s in plan.scratch] == [{"dtype": "float32", "shape": [8], "zero": True}]
    assert [launch.kernel for launch in plan.launches] == ["sums_accumulate", "sums_finish"]
    assert plan.launches[0].params[-1] == 2 and 2 in plan.launches[1].params  # the scratch parameter
    assert compiled.trace.written == frozenset({1})

    @nvdsl.mlir_func
    def bad(x):
        @nvdsl.gpu_launch(grid=1, block=1)
        def kernel(ctx):
            nvdsl.empty((4,), nvdsl.float32)
        kernel()
    with pytest.raises(nvdsl.TraceError) as info:
        bad.trace(np.zeros(4, np.float32))
    assert info.value.code == "bad-scratch" and "ctx.shared_array" in info.value.hint


def test_bfloat16_numpy_arrays_through_ml_dtypes():
    from nvdsl.arguments import HOST, describe
    spec, where = describe(np.zeros((4, 8), ml_dtypes.bfloat16), "x", None)
    assert (spec.dtype, spec.shape, where) == (nvdsl.bfloat16, (4, 8), HOST)
    assert describe(ml_dtypes.bfloat16(1.5), "s", None)[0].dtype is nvdsl.bfloat16
    assert nvdsl.dtypes.numpy_dtype(nvdsl.bfloat16) == np.dtype(ml_dtypes.bfloat16)
    assert "bf16" in scale.trace(np.zeros(32, ml_dtypes.bfloat16), ml_dtypes.bfloat16(2)).mlir


@nvdsl.mlir_func
def scale(x, factor):
    @nvdsl.gpu_launch(grid=1, block=x.shape[0])
    def kernel(ctx):
        x[ctx.thread_id.x] = x[ctx.thread_id.x] * factor
    kernel()


class ReadOnlyDeviceArray:
    """A device array whose producer marked it read-only in the CUDA array interface."""

    def __init__(self, n):
        self.__cuda_array_interface__ = {"data": (0x7F0000000000, True), "shape": (n,), "typestr": "<f4",
                                         "version": 3}


def write_second():
    @nvdsl.mlir_func
    def copy(x, y):
        @nvdsl.gpu_launch(grid=1, block=x.shape[0])
        def kernel(ctx):
            y[ctx.thread_id.x] = x[ctx.thread_id.x]
        kernel()
    return copy


@pytest.mark.parametrize("make", [
    lambda: (np.zeros(32, np.float32), np.zeros(32, np.float32)),
    lambda: (np.zeros(32, np.float32), ReadOnlyDeviceArray(32)),
])
def test_a_read_only_output_is_refused_at_call_time_with_or_without_a_gpu(make):
    x, y = make()
    if isinstance(y, np.ndarray):
        y.flags.writeable = False
    with pytest.raises(nvdsl.ArgumentError) as info:
        write_second()(x, y)
    assert info.value.code == "read-only" and "'y'" in str(info.value)
    assert info.value.loc.filename == __file__


@pytest.mark.skipif(has_gpu(), reason="checks the no-GPU path")
def test_a_read_only_input_is_fine():
    x = np.arange(32, dtype=np.float32)
    x.flags.writeable = False
    y = np.zeros(32, np.float32)
    write_second().with_options(backend="interpret")(x, y)     # past the argument checks, and it runs
    np.testing.assert_array_equal(y, x)


# ---- on the GPU (and those taking `backend` in the interpreter too) ----------------------------------------

REFERENCE = {"add": np.add, "min": np.minimum, "max": np.maximum, "exchange": None, "cas": None}


@pytest.mark.parametrize("space", ["global", "shared"])
@pytest.mark.parametrize("operation, dtype", [
    ("add", "float32"), ("add", "float64"), ("add", "int32"), ("add", "uint64"), ("add", "float16"),
    ("min", "int32"), ("min", "uint32"), ("min", "float32"), ("max", "int64"), ("max", "float32"),
    ("exchange", "int32"), ("exchange", "float32"), ("cas", "int32"), ("cas", "float32")])
def test_atomics_against_numpy(operation, dtype, space, backend):
    rng = np.random.default_rng(3)
    np_dtype = getattr(np, dtype)
    values = (rng.integers(1, 50, 256) * (1 if "uint" in dtype else rng.choice([-1, 1], 256))).astype(np_dtype)
    out = (rng.integers(1, 50, 4)).astype(np_dtype)
    start, old = out.copy(), np.zeros_like(values)
    atomics(operation, dtype, space)(values, old, out)
    lanes = [values[k::4] for k in range(4)]
    if REFERENCE[operation] is not None:
        expected = np.array([REFERENCE[operation].reduce(np.concatenate([[s], lane]).astype(np.float64))
                             for s, lane in zip(start, lanes)])
        tolerance = 1e-2 if dtype == "float16" else 1e-6
        np.testing.assert_allclose(out.astype(np.float64), expected, rtol=tolerance)
    elif operation == "exchange":  # the final value and the old values are a permutation of start + values
        for k in range(4):
            assert sorted(np.concatenate([[out[k]], old[k::4]])) == sorted(np.concatenate([[start[k]], lanes[k]]))
    else:  # cas with the initial value as compare: exactly one thread per element succeeds
        for k in range(4):
            assert (old[k::4] == start[k]).sum() >= 1 and out[k] in lanes[k]


@pytest.mark.parametrize("space", ["global", "shared"])
def test_pair_atomic_add_against_numpy(space, backend):
    rng = np.random.default_rng(4)
    a, b = (rng.integers(-4, 5, 32).astype(np.float16) for _ in range(2))
    out, old = np.zeros(8, np.float16), np.zeros(64, np.float16)
    pair_add(space)(a, b, out, old)
    np.testing.assert_array_equal(out[0::2], [a[k::4].astype(np.float64).sum() for k in range(4)])
    np.testing.assert_array_equal(out[1::2], [b[k::4].astype(np.float64).sum() for k in range(4)])


def subview(array):
    """``array[1:3, 2:6]`` of a (4, 8) array, through a raw ``memref.subview`` (the MLIR escape hatch)."""
    from mlir.dialects import memref
    return nvdsl.wrap(memref.subview(array.ir, [1, 2], [2, 4], [1, 1]), array.dtype, name=f"{array.name}[1:3, 2:6]")


def view(array):
    """The 8 elements of a shared (4, 8) array from element 10 on, as a (2, 4) view."""
    return array.view((2, 4), offset=10 * array.dtype.itemsize)


NUMPY_PARTS = {subview: lambda a: a[1:3, 2:6], view: lambda a: a.reshape(-1)[10:18].reshape(2, 4)}


def sliced_atomics(space, part_of):
    """Each kind of atomic once on ``part_of`` a (4, 8) array in ``space``: a part starting 10 elements in."""
    @nvdsl.mlir_func
    def run(ints, halves, old_ints, old_halves):
        @nvdsl.gpu_launch(grid=1, block=32)
        def kernel(ctx):
            t = ctx.thread_id.x
            row, column = t // 8, t % 8
            targets = ints, halves
            if space == "shared":
                targets = ctx.shared_array((4, 8), nvdsl.int32), ctx.shared_array((4, 8), nvdsl.float16)
                for shared, array in zip(targets, (ints, halves)):
                    shared[row, column] = array[row, column]
                ctx.sync_threads()
            a, h = (part_of(target) for target in targets)
            with nvdsl.when(t == 0):
                old_ints[0] = a.atomic_cas((1, 1), a[1, 1], 7)
                old_ints[1] = a.atomic_add((0, 2), 3)
                old_ints[2] = a.atomic_exchange((1, 3), 9)
                old_ints[3] = a.atomic_min((0, 0), -2)
                old_ints[4] = a.atomic_max((1, 0), 60)
                old_halves[0], old_halves[1] = h.atomic_add((1, 2), (1.5, 2.5))
            if space == "shared":
                ctx.sync_threads()
                for shared, array in zip(targets, (ints, halves)):
                    array[row, column] = shared[row, column]
        kernel()
    return run


PARTS = pytest.mark.parametrize("space, part_of", [("global", subview), ("shared", subview), ("shared", view)],
                                ids=["global-subview", "shared-subview", "shared-view"])


@PARTS
def test_atomics_on_a_part_of_an_array_address_its_element_in_ptx(space, part_of):
    ints, halves = np.zeros((4, 8), np.int32), np.zeros((4, 8), np.float16)
    ptx = sliced_atomics(space, part_of).compile(ints, halves, np.zeros(5, np.int32), np.zeros(2, np.float16)).ptx
    element = 19 if part_of is subview else 15     # part[1, 1]: ints[2, 3], or element 10 + 5 of the view
    assert re.search(rf"atom\.relaxed\.gpu\.{space}\.cas\.b32 .*\+{element * 4}\]", ptx)


@PARTS
def test_atomics_on_a_part_of_an_array_hit_its_elements(space, part_of, backend):
    ints = np.arange(32, dtype=np.int32).reshape(4, 8)
    halves = np.arange(32).astype(np.float16).reshape(4, 8)
    old_ints, old_halves = np.zeros(5, np.int32), np.zeros(2, np.float16)
    expected_ints, expected_halves = ints.copy(), halves.copy()
    a, h = (NUMPY_PARTS[part_of](x) for x in (expected_ints, expected_halves))
    expected_old = [a[1, 1], a[0, 2], a[1, 3], a[0, 0], a[1, 0]]
    expected_old_halves = h[1, 2:4].copy()
    a[1, 1], a[0, 2], a[1, 3], a[0, 0], a[1, 0] = 7, a[0, 2] + 3, 9, -2, 60
    h[1, 2:4] += [1.5, 2.5]
    sliced_atomics(space, part_of)(ints, halves, old_ints, old_halves)
    np.testing.assert_array_equal(ints, expected_ints)
    np.testing.assert_array_equal(halves, expected_halves)
    np.testing.assert_array_equal(old_ints, expected_old)
    np.testing.assert_array_equal(old_halves, expected_old_halves)


def test_subviews_keep_their_sources_aligned_pointer_and_atomics_still_hit_their_element(backend):
    """As MLIR lowers them (the interpreter too): a subview, and a collapse of it, move the offset, not the
    aligned pointer; an atomic on the collapsed rows lands on the right element."""
    from mlir import ir
    from mlir.dialects import arith, memref

    @nvdsl.mlir_func
    def run(ints, moved):
        @nvdsl.gpu_launch(grid=1, block=1)
        def kernel(ctx):
            rows = memref.subview(ints.ir, [1, 0], [2, 8], [1, 1])              # rows 1 and 2: elements 8..23
            flat_type = ir.MemRefType.get([16], rows.type.element_type, ir.Attribute.parse("strided<[1], offset: 8>"))
            collapsed = memref.collapse_shape(flat_type, rows, [[0, 1]])
            base = memref.extract_aligned_pointer_as_index(ints.ir)
            for k, view in enumerate((rows, collapsed)):
                moved[k] = nvdsl.wrap(arith.subi(memref.extract_aligned_pointer_as_index(view), base)).to(nvdsl.int64)
            nvdsl.wrap(collapsed, nvdsl.int32).atomic_cas(3, 11, -1)
        kernel()
    ints, moved = np.arange(32, dtype=np.int32).reshape(4, 8), np.full(2, -7, np.int64)
    run(ints, moved)
    np.testing.assert_array_equal(moved, [0, 0])
    expected = np.arange(32, dtype=np.int32)
    expected[11] = -1
    np.testing.assert_array_equal(ints.reshape(-1), expected)


def test_scratch_arrays_and_launch_order(backend):
    x = np.random.default_rng(5).integers(0, 8, 1000).astype(np.float32)
    out = np.zeros(8, np.float32)
    scratch_sum()(x, out)
    np.testing.assert_allclose(out, [x[k::8].sum() * 0.5 for k in range(8)], rtol=1e-6)
    if backend == "interpret":
        return
    torch = pytest.importorskip("torch")
    xd, outd = torch.tensor(x, device="cuda"), torch.zeros(8, device="cuda")
    for _ in range(3):  # device arrays: freed stream-ordered, re-zeroed each call
        scratch_sum()(xd, outd)
    torch.cuda.synchronize()
    np.testing.assert_allclose(outd.cpu().numpy(), out, rtol=1e-6)


@requires_gpu
def test_bfloat16_numpy_round_trip_on_the_gpu():
    x = np.arange(64).astype(ml_dtypes.bfloat16)
    scale(x, ml_dtypes.bfloat16(0.5))
    np.testing.assert_array_equal(x.astype(np.float32), (np.arange(64) * 0.5).astype(ml_dtypes.bfloat16)
                                  .astype(np.float32))


@requires_gpu
def test_raw_mlir_writes_are_copied_back_on_the_gpu():
    from mlir.dialects import memref

    @nvdsl.mlir_func
    def raw(x, out):
        @nvdsl.gpu_launch(grid=1, block=x.shape[0])
        def kernel(ctx):
            i = ctx.thread_id.x
            memref.store((x[i] + 1.0).ir, out.ir, [i.ir])
        kernel()
    x, out = np.arange(32, dtype=np.float32), np.zeros(32, np.float32)
    raw(x, out)
    np.testing.assert_array_equal(out, x + 1)


@requires_gpu
def test_an_out_of_bounds_write_in_debug_mode_traps_with_a_report(tmp_path):
    """README's saxpy with y shorter than x and its bound a runtime scalar (with a shape for bound, tracing
    refuses it): silent corruption without debug mode; with NVDSL_DEBUG=1 a report and a trap."""
    script = textwrap.dedent('''
        import numpy as np, nvdsl

        @nvdsl.mlir_func
        def saxpy(x, y, alpha, n):
            @nvdsl.gpu_launch(grid=x.shape[0] // 256, block=256)
            def kernel(ctx):
                i = ctx.block_id.x * 256 + ctx.thread_id.x
                with nvdsl.when(i < n):
                    y[i] = alpha * x[i] + y[i]
            kernel()

        try:
            saxpy(np.ones(1024, np.float32), np.ones(1000, np.float32), 2.0, 1024)
        except nvdsl.CudaError as e:
            print("RESULT", e.result)
    ''')
    env = dict(os.environ, NVDSL_DEBUG="1", PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    path = tmp_path / "oob.py"                 # a file, so that the report can quote the line
    path.write_text(script)
    result = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=300, env=env)
    assert "RESULT CUDA_ERROR_" in result.stdout, result.stdout + result.stderr
    assert re.search(r"nvdsl: out-of-bounds read of 'y' at index \[10(0\d|1\d|2[0-3])\] outside its shape \[1000\] "
                     r"at \S*oob.py:\d+: y\[i\] = alpha \* x\[i\] \+ y\[i\]", result.stdout), result.stdout
