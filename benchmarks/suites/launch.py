"""Host overhead per call: nvdsl's cached launch path against a bare ``cuLaunchKernel`` of the same cubin.

Two kernels on 1-D float32 torch CUDA tensors of ``N`` elements (small, so that the GPU is not the bottleneck):
``axpy(x, y, 2.0)`` (``y = 2 x + y``: two arrays and a scalar) and ``sum8(x0, ..., x6, y)`` (``y = x0 + ... + x6``:
eight arrays, as many as a library attention backward's kernels take). Systems:

* ``nvdsl``: the kernel (``axpy`` from :mod:`benchmarks.nvdsl_kernels`, ``sum8`` here), after its first call compiled
  and cached it (its tensors' checks, slot fills and one ``cuLaunchKernel`` per call).
* ``cuLaunchKernel``: the cubin of ``kernel.compile(...)`` loaded here with
  ``cuModuleLoadData``, its parameters in fixed ctypes slots ordered by the
  launch plan, and ``cuLaunchKernel`` called directly on stream 0: the floor
  for a Python caller of cuda-python.
* ``torch.add``: ``torch.add(x, y, alpha=2, out=y)`` (``axpy`` only), for reference.

Each is called ``CALLS`` times back to back, ``REPEATS`` times, the systems timed in turn within each repeat
(``harness.time_host_in_turn``); a row gives the median over repeats of the host time per call ("host": the clock
stops when the last call returns) or of the wall time including the final synchronisation ("wall incl. sync").
The "added overhead" column is the median over repeats of nvdsl's time minus the bare launch's in the same
repeat, with the 10th to 90th percentile: on the H200's virtual machine two timings of the same call a few
seconds apart differed by up to 1.5 us, more than the overhead's pieces, and only differences taken side by side
cancel that drift.
"""

from __future__ import annotations

from .. import harness

N = 1 << 12
# Fewer calls per repeat than the driver's queue of pending launches (about 1024): past it,
# cuLaunchKernel blocks until the GPU drains, and the host clock measures the GPU instead.
CALLS = 500
REPEATS = 40
ALPHA = 2.0

TABLE_METRIC = "us"
BARE = "cuLaunchKernel"


def row_label(p: dict) -> str:
    return f"{p.get('kernel', 'axpy')}, n={p['n']}, {p['metric']}"


def sum8():
    """``sum8(x0, ..., x6, y)``: ``y = x0 + ... + x6``, one element per thread (an @mlir_func of eight arrays)."""
    import nvdsl

    from ..nvdsl_kernels import BLOCK

    @nvdsl.mlir_func
    def sum8(x0, x1, x2, x3, x4, x5, x6, y):
        @nvdsl.gpu_launch(grid=y.shape[0] // BLOCK, block=BLOCK)
        def kernel(ctx):
            i = ctx.block_id.x * BLOCK + ctx.thread_id.x
            y[i] = x0[i] + x1[i] + x2[i] + x3[i] + x4[i] + x5[i] + x6[i]
        kernel()
    return sum8


def bare_launcher(compiled, host_args):
    """A call that launches ``compiled``'s first kernel with ``cuLaunchKernel`` and nothing else.

    The module is loaded from ``compiled.cubin`` (its PTX where nvdsl made no cubin).
    The parameters are ctypes slots (``c_uint64`` for a tensor's ``data_ptr()``,
    ``c_float`` for the scalar), ordered by ``plan.launches[0].params`` (for
    each kernel parameter, the index of the host argument).
    """
    import ctypes

    from cuda.bindings import driver as cu

    def check(result, what):
        if int(result[0]) != 0:
            raise RuntimeError(f"{what} failed: {result[0]!r}")
        return result[1]

    launch = compiled.module.plan.launches[0]
    # Without ptxas nvdsl makes no cubin and the driver JITs the PTX: load the same image nvdsl loads.
    image = compiled.cubin if compiled.cubin is not None else compiled.ptx.encode() + b"\0"
    module = check(cu.cuModuleLoadData(image), "cuModuleLoadData")
    func = check(cu.cuModuleGetFunction(module, launch.kernel.encode()), "cuModuleGetFunction")
    slots = [ctypes.c_float(a) if isinstance(a, float) else ctypes.c_uint64(a.data_ptr()) for a in host_args]
    params = (ctypes.c_void_p * len(launch.params))(*[ctypes.addressof(slots[i]) for i in launch.params])
    address = ctypes.addressof(params)
    (gx, gy, gz), (bx, by, bz), smem = launch.grid, launch.block, launch.smem
    launch_kernel = cu.cuLaunchKernel

    def call():
        result = launch_kernel(func, gx, gy, gz, bx, by, bz, smem, 0, address, 0)[0]
        if result:
            raise RuntimeError(f"cuLaunchKernel failed: {result!r}")

    call.keepalive = (module, slots, params)  # the slots must outlive every launch
    return call


def _builders(kernel: str, arrays: list) -> dict:
    """System name -> a function building its call of ``kernel`` on ``arrays`` (the output last; building may
    fail: the failure is recorded)."""
    import torch

    def function():
        if kernel == "axpy":
            from ..nvdsl_kernels import axpy
            return axpy
        return sum8()
    args = (*arrays, ALPHA) if kernel == "axpy" else tuple(arrays)

    def nvdsl():
        fn = function()
        return lambda: fn(*args)

    def bare():
        return bare_launcher(function().compile(*args), args)

    builders = {"nvdsl": nvdsl, BARE: bare}
    if kernel == "axpy":
        x, y = arrays
        builders["torch.add"] = lambda: (lambda: torch.add(y, x, alpha=ALPHA, out=y))
    return builders


def run(args) -> list[harness.Measurement]:
    import torch

    harness.require_default_stream()
    rows = (("host", "host_us"), ("wall incl. sync", "wall_us"))
    results = []
    for kernel, count in (("axpy", 1), ("sum8", 7)):
        inputs = [harness.randn((N,), torch.float32, seed=1 + s) for s in range(count)]
        y0 = harness.randn((N,), torch.float32, seed=100)
        y = y0.clone()
        ref = 2 * inputs[0].double() + y0.double() if kernel == "axpy" else sum(x.double() for x in inputs)
        params = lambda metric: {"kernel": kernel, "n": N, "metric": metric}
        ready, checks = {}, {}
        for name, build in _builders(kernel, [*inputs, y]).items():
            if not harness.selected(args, name):
                continue
            try:
                call = build()
                y.copy_(y0)
                torch.cuda.synchronize()
                call()  # nvdsl's first call compiles and caches; it is a warm-up like the others'
                torch.cuda.synchronize()
                ready[name], checks[name] = call, harness.check_close(y, ref, 1e-6)
            except Exception as e:
                for metric, _ in rows:
                    results.append(harness.Measurement.failure("launch", name, params(metric), e))
                    harness.log(results[-1])
        timings = harness.time_host_in_turn(ready, calls=CALLS, repeats=REPEATS) if ready else {}
        for name, timing in timings.items():
            for metric, attribute in rows:
                extra = {"timing": "host, the systems timed in turn", "calls_per_repeat": CALLS,
                         "check": checks[name].to_json()}
                if name == "nvdsl" and BARE in timings:     # the repeats pair up: their differences
                    median, low, high = harness.paired_differences(getattr(timing, attribute),
                                                                   getattr(timings[BARE], attribute))
                    extra.update(over_bare_us=round(median, 3), over_bare_p10_p90_us=[round(low, 3), round(high, 3)])
                per_call_ms = [us * 1e-3 for us in getattr(timing, attribute)]
                results.append(harness.Measurement.from_times("launch", name, params(metric), per_call_ms,
                                                              correct=checks[name].ok, extra=extra))
                harness.log(results[-1])
    return results


def derived_columns(row: list[harness.Measurement]) -> dict[str, str]:
    """nvdsl's time per call over the bare launch's, in µs: the median of their differences repeat by repeat (timed
    in turn), with the 10th to 90th percentile; else the difference of their medians."""
    by_name = {m.system: m for m in row if m.median_ms is not None}
    if "nvdsl" in by_name and BARE in by_name:
        paired = by_name["nvdsl"].extra.get("over_bare_us")
        if paired is not None:
            low, high = by_name["nvdsl"].extra["over_bare_p10_p90_us"]
            return {"added overhead (µs)": f"{paired:.2f} ({low:.2f} to {high:.2f})"}
        return {"added overhead (µs)": f"{(by_name['nvdsl'].median_ms - by_name[BARE].median_ms) * 1e3:.2f}"}
    return {"added overhead (µs)": "—"}
