"""Tracing: kernels, control flow, memory, source locations, retracing and launch-config checks."""

import json
import re

import numpy as np
import pytest

import nvdsl
from nvdsl.signature import LaunchSpec
from helpers import trace_body, two_step_host


@nvdsl.mlir_func
def saxpy(x, y, alpha):
    rows, cols = x.shape

    @nvdsl.gpu_launch(grid=(rows // 32, cols // 32), block=(32, 32))
    def kernel(ctx):
        i = ctx.block_id.x * 32 + ctx.thread_id.x
        j = ctx.block_id.y * 32 + ctx.thread_id.y
        y[i, j] = alpha * x[i, j] + y[i, j]
    kernel()


def arrays(shape=(64, 64), dtype=np.float32):
    return np.ones(shape, dtype), np.ones(shape, dtype)


def test_saxpy_traces_to_verified_gpu_launch():
    trace = saxpy.trace(*arrays(), 2.0)
    ir = trace.mlir
    assert "func.func @saxpy(%arg0: memref<64x64xf32>, %arg1: memref<64x64xf32>, %arg2: f32)" in ir
    assert "gpu.launch blocks" in ir and "function(@saxpy_kernel)" in ir
    assert ir.count("memref.load") == 2 and ir.count("memref.store") == 1
    assert trace.module.operation.verify()
    assert trace.written == frozenset({1})


def test_every_op_carries_the_users_python_line():
    text = saxpy.trace(*arrays(), 2.0).mlir_with_locations
    aliases = dict(re.findall(r"^(#loc\d*) = (loc\(.*\))$", text, re.M))
    op_locations = re.findall(r"loc\((#loc\d*)\)", text)
    assert op_locations, "no locations printed"
    files = {re.search(r'"([^"]+)"', aliases[a]).group(1) for a in op_locations if '"' in aliases.get(a, "")}
    assert files == {__file__}
    assert "loc(unknown)" not in text
    lines = {int(m) for m in re.findall(r'test_trace.py":(\d+)', text)}
    assert len(lines) >= 4  # definition, launch, the two index lines, the store


def test_signature_changes_retrace_and_known_ones_do_not():
    traces = []

    @nvdsl.mlir_func
    def double(x):
        traces.append(x.shape)

        @nvdsl.gpu_launch(grid=1, block=x.shape[0])
        def kernel(ctx):
            x[ctx.thread_id.x] = x[ctx.thread_id.x] * 2
        kernel()

    double.compile(np.ones(32, np.float32))
    double.compile(np.ones(64, np.float32))
    double.compile(np.ones(32, np.int32))
    assert traces == [(32,), (64,), (32,)]


def test_keyword_constants_are_compile_time_python_values():
    @nvdsl.mlir_func
    def fill(x, *, value, threads=32):
        assert isinstance(value, int)

        @nvdsl.gpu_launch(grid=1, block=threads)
        def kernel(ctx):
            x[ctx.thread_id.x] = value
        kernel()

    ir = fill.trace(np.zeros(32, np.int32), value=7).mlir
    assert "arith.constant 7 : i32" in ir
    assert "arith.constant 64 : index" in fill.trace(np.zeros(64, np.int32), value=7, threads=64).mlir


def test_counted_loop_with_carry_and_branches():
    def body(ctx, x, out):
        @nvdsl.fori(0, x.shape[0], carry=(nvdsl.constant(0.0, nvdsl.float32), nvdsl.constant(0, nvdsl.int32)))
        def totals(i, carry):
            total, count = carry
            return total + x[i], count + 1
        total, count = totals
        with nvdsl.when(count > 3) as branch:
            out[0] = total
        with branch.otherwise():
            out[0] = 0.0
        out[1] = nvdsl.cond(total > 1.0, lambda: total * 2.0, lambda: 1.0)
        for k in nvdsl.for_range(2, 4):
            out[k] = x[k]
    ir = trace_body(body, np.ones(8, np.float32), np.zeros(4, np.float32))
    assert re.search(r"scf.for .* iter_args\(.*\) -> \(f32, i32\)", ir)
    assert "scf.if" in ir and "} else {" in ir
    assert re.search(r"= scf.if .* -> \(f32\)", ir)
    assert ir.count("scf.for") == 2


def test_unsigned_loop_bounds_compare_unsigned():
    def body(ctx, x, n):
        for i in nvdsl.for_range(0, n):
            x[0] = i
    ir = trace_body(body, np.zeros(1, np.uint32), np.uint32(4))
    assert "unsignedCmp" in ir or "scf.for unsigned" in ir


def test_break_out_of_a_traced_loop_is_an_error():
    def body(ctx, x):
        for i in nvdsl.for_range(4):
            x[i] = 1.0
            break
    with pytest.raises(nvdsl.TraceError) as info:
        trace_body(body, np.zeros(4, np.float32))
    assert info.value.code == "bad-loop"


def test_when_needs_a_traced_condition():
    with pytest.raises(nvdsl.TraceError) as info:
        trace_body(lambda ctx, x: nvdsl.when(True), np.zeros(4, np.float32))
    assert info.value.code == "bad-condition"


def test_static_and_dynamic_shared_memory_give_typed_views():
    @nvdsl.mlir_func
    def reverse(x):
        n = x.shape[0]

        @nvdsl.gpu_launch(grid=1, block=n, smem=2 * n * 4)
        def kernel(ctx):
            tile = ctx.shared_array((n,), nvdsl.float32)
            first = ctx.dynamic_shared((n,), nvdsl.float32)
            second = ctx.dynamic_shared((n,), nvdsl.int32)
            t = ctx.thread_id.x
            tile[t] = x[t]
            first[t] = x[t]
            second[t] = t.to(nvdsl.int32)
            ctx.sync_threads()
            x[t] = tile[n - 1 - t] + first[t] + second[t].to(nvdsl.float32)
        kernel()

    ir = reverse.trace(np.zeros(64, np.float32)).mlir
    assert ir.count("gpu.dynamic_shared_memory") == 1
    views = re.findall(r"memref.view %\w+\[%c(\d+)\w*\]\[\] : .* to memref<64x(\w+), #gpu.address_space<workgroup>>", ir)
    # the fixed-size array follows the 512 bytes of dynamic views
    assert sorted(views) == [("0", "f32"), ("256", "i32"), ("512", "f32")]
    assert "gpu.barrier" in ir
    assert re.search(r"arith.constant 768 : i32", ir)


def test_dynamic_view_past_the_launch_smem_is_an_error():
    @nvdsl.mlir_func
    def host(x):
        @nvdsl.gpu_launch(grid=1, block=32, smem=128)
        def kernel(ctx):
            ctx.dynamic_shared((64,), nvdsl.float32)
        kernel()
    with pytest.raises(nvdsl.TraceError) as info:
        host.trace(np.zeros(4, np.float32))
    assert info.value.code == "smem-overflow" and "smem=128" in str(info.value)


def test_shared_arrays_size_the_launch():
    @nvdsl.mlir_func
    def host(x):
        @nvdsl.gpu_launch(grid=1, block=32, smem=100)
        def kernel(ctx):
            ctx.shared_array((64, 256), nvdsl.float32)
            ctx.shared_array((3,), nvdsl.float16, align=128)
        kernel()
    launch, = host.compile(np.zeros(4, np.float32)).module.plan.launches
    assert launch.smem == 112 + 64 * 256 * 4 + 16 + 6  # 100 rounded up to 16, then 65536 rounded to 128


def test_a_launch_overlapping_the_previous_waits_for_it_first():
    """The overlapping kernel's first instruction waits for the kernel before (so it reads ``y`` complete); the
    plan launches it as a programmatic dependent, the other as usual; the interpreter computes the same."""
    arrays = [np.arange(512, dtype=np.float32), np.zeros(512, np.float32), np.zeros(512, np.float32)]
    compiled = two_step_host().compile(*arrays)
    assert [launch.overlaps_previous for launch in compiled.module.plan.launches] == [False, True]
    double, increment = re.split(r"\.entry ", compiled.ptx)[1:]
    assert "griddepcontrol.launch_dependents;" in double and "griddepcontrol.wait" not in double
    memory = [m.start() for m in re.finditer(r"\b(ld|st)\.global", increment)]
    assert memory and increment.index("griddepcontrol.wait;") < min(memory)
    x, y, z = arrays
    two_step_host()(x, y, z)        # on the GPU where there is one, else in the interpreter
    np.testing.assert_array_equal(z, 2 * np.arange(512, dtype=np.float32) + 1)   # small integers: exact


def test_the_plan_keeps_which_launches_overlap():
    launch = LaunchSpec("k", (1, 1, 1), (32, 1, 1), 0, (0,), overlaps_previous=True)
    assert LaunchSpec.from_json(json.loads(json.dumps(launch.to_json()))) == launch


def test_an_overlapping_launch_is_configured_for_programmatic_stream_serialization():
    """What the runtime hands ``cuLaunchKernelEx`` for it: the launch's own geometry, and the one attribute."""
    from nvdsl.runtime.device import driver
    from nvdsl.runtime.launch import _dependent_launch_config
    cu = driver()
    config = _dependent_launch_config(cu, LaunchSpec("k", (3, 2, 1), (128, 1, 1), 4096, (0,), True))
    assert (config.gridDimX, config.gridDimY, config.gridDimZ) == (3, 2, 1)
    assert (config.blockDimX, config.blockDimY, config.blockDimZ, config.sharedMemBytes) == (128, 1, 1, 4096)
    attribute, = config.attrs[:config.numAttrs]
    assert attribute.id == cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    assert attribute.value.programmaticStreamSerializationAllowed == 1


@pytest.mark.parametrize("grid, block, smem, code", [
    (1, (32, 33), 0, "block-too-large"),
    (1, 2048, 0, "bad-launch-config"),
    (1, (1, 1, 65), 0, "bad-launch-config"),
    ((1, 70000), 32, 0, "bad-launch-config"),
    (0, 32, 0, "bad-launch-config"),
    (1, 32, -1, "bad-launch-config"),
    (1.5, 32, 0, "bad-launch-config"),
])
def test_impossible_launch_configurations_are_refused(grid, block, smem, code):
    with pytest.raises(nvdsl.LaunchConfigError) as info:
        nvdsl.gpu_launch(grid=grid, block=block, smem=smem)(lambda ctx: None)
    assert info.value.code == code
    assert info.value.hint       # each says what to do (a grid of 0 blocks: launch only where there is work)
    assert info.value.loc.filename == __file__


def test_overlap_previous_must_be_a_bool():
    with pytest.raises(nvdsl.LaunchConfigError) as info:
        nvdsl.gpu_launch(grid=1, block=32, overlap_previous="yes")(lambda ctx: None)
    assert info.value.code == "bad-launch-config" and "overlap_previous='yes'" in str(info.value)
    assert info.value.loc.filename == __file__


@pytest.mark.parametrize("body, code", [
    (lambda ctx, x: x.__setitem__((0, 0), 1.0), "bad-index"),
    (lambda ctx, x: x.__getitem__(8), "out-of-bounds"),
    (lambda ctx, x: x.__getitem__(ctx.thread_id.x.to(nvdsl.float32)), "bad-index"),
    (lambda ctx, x: x.__getitem__(slice(0, 2)), "bad-index"),
    (lambda ctx, x: x.__setitem__(0, nvdsl.constant(1, nvdsl.int32)), "type-mismatch"),
])
def test_memory_misuse_is_reported(body, code):
    with pytest.raises(nvdsl.TraceError) as info:
        trace_body(body, np.zeros(8, np.float32))
    assert info.value.code == code


def test_array_access_in_host_code_is_an_error():
    @nvdsl.mlir_func
    def host(x):
        x[0] = 1.0
    with pytest.raises(nvdsl.TraceError) as info:
        host.trace(np.zeros(4, np.float32))
    assert info.value.code == "outside-kernel"


def test_kernel_and_host_may_not_return_values():
    @nvdsl.mlir_func
    def host(x):
        return 1
    with pytest.raises(nvdsl.TraceError) as info:
        host.trace(np.zeros(4, np.float32))
    assert info.value.code == "host-returns"
    with pytest.raises(nvdsl.TraceError) as info:
        trace_body(lambda ctx, x: x[0], np.zeros(4, np.float32))
    assert info.value.code == "kernel-returns"


def test_device_print_formats_by_dtype():
    def body(ctx, x):
        nvdsl.print("t={} v={} 100%", ctx.thread_id.x, x[0])
    ir = trace_body(body, np.zeros(4, np.float32))
    assert 'gpu.printf "t=%lld v=%f 100%%' in ir
    with pytest.raises(nvdsl.TraceError):
        trace_body(lambda ctx, x: nvdsl.print("{} {}", x[0]), np.zeros(4, np.float32))


def test_launching_outside_a_trace_is_an_error():
    kernel = nvdsl.gpu_launch(grid=1, block=1)(lambda ctx: None)
    with pytest.raises(nvdsl.TraceError) as info:
        kernel()
    assert info.value.code == "outside-trace"


def test_an_error_inside_a_loop_body_leaves_no_insertion_point_behind():
    from mlir import ir

    def body(ctx, x):
        for i in nvdsl.for_range(4):
            x[i] = "one"                                  # a TraceError while the loop's body is open
    with pytest.raises(nvdsl.TraceError) as info:
        trace_body(body, np.zeros(4, np.float32))
    assert info.value.code == "type-mismatch"             # the traceback keeps the loop's frame alive
    with ir.Context():
        with pytest.raises(ValueError):                   # nothing left on this thread's insertion-point stack
            ir.InsertionPoint.current
    trace_body(lambda ctx, x: x.__setitem__(0, 1.0), np.zeros(4, np.float32))
