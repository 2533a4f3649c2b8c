"""Bandwidth: ``y = 2 x + y`` on 2^26 float32 elements of torch CUDA tensors, 3·4·n bytes moved.

Systems:

* ``nvdsl``: ``axpy`` of :mod:`benchmarks.nvdsl_kernels`, one element per thread.
* ``nvdsl-x4``: ``axpy_multi``, four elements per thread in a traced loop.
* ``torch add_``: ``y.add_(x, alpha=2)``.
* ``device copy``: ``dst.copy_(src)`` of a ``COPY_BYTES`` buffer, counting bytes
  read + written: the device's copy bandwidth measured in the same run, the
  yardstick of the "% of copy" columns (a reference, not a peer).

All are timed with CUDA events; each call updates ``y`` in place, which is
checked against float64 math once before timing.
"""

from __future__ import annotations

from functools import partial
from typing import Callable

from .. import harness

N = 1 << 26
COPY_BYTES = 1 << 30
ALPHA = 2.0
COPY = "device copy"

TABLE_METRIC = "gbps"


def row_label(p: dict) -> str:
    return f"float32 n=2^{p['n'].bit_length() - 1}"


def _in_place(call: Callable, x, y, y0) -> harness.Prepared:
    """Reset y, run once, check y = 2 x + y0 (every element: a single unwritten one exceeds the tolerance)."""
    import torch

    y.copy_(y0)
    torch.cuda.synchronize()
    call()
    torch.cuda.synchronize()
    check = harness.check_close(y, 2 * x.double() + y0.double(), 1e-6)
    return harness.Prepared(call, check)


def _nvdsl(kernel_name: str) -> Callable:
    def prepare(x, y, y0) -> harness.Prepared:
        from .. import nvdsl_kernels

        kernel = getattr(nvdsl_kernels, kernel_name)
        prepared = _in_place(lambda: kernel(x, y, ALPHA), x, y, y0)
        prepared.extra["kernel"] = kernel_name
        return prepared
    return prepare


def _torch_add(x, y, y0) -> harness.Prepared:
    return _in_place(lambda: y.add_(x, alpha=ALPHA), x, y, y0)


def _copy(x, y, y0) -> harness.Prepared:
    import torch

    src = harness.randn((COPY_BYTES // 4,), torch.float32, seed=3)
    dst = torch.empty_like(src)
    call = lambda: dst.copy_(src)
    call()
    torch.cuda.synchronize()
    return harness.Prepared(call, harness.check_close(dst, src, 1e-12), {"copy_bytes": COPY_BYTES})


SYSTEMS = {"nvdsl": (_nvdsl("axpy"), 3 * 4 * N), "nvdsl-x4": (_nvdsl("axpy_multi"), 3 * 4 * N),
           "torch add_": (_torch_add, 3 * 4 * N), COPY: (_copy, 2 * COPY_BYTES)}


def run(args) -> list[harness.Measurement]:
    import torch

    harness.require_default_stream()
    x = harness.randn((N,), torch.float32, seed=1)
    y0 = harness.randn((N,), torch.float32, seed=2)
    y = torch.empty_like(y0)
    results = []
    for name, (prepare, nbytes) in SYSTEMS.items():
        if harness.selected(args, name):
            role = harness.REFERENCE if name == COPY else None
            results.append(harness.run_system("saxpy", name, {"n": N}, partial(prepare, x, y, y0), args,
                                              nbytes=nbytes, role=role))
    return results


def derived_columns(row: list[harness.Measurement]) -> dict[str, str]:
    """Each system's bandwidth as a percentage of the device copy's."""
    copy = next((m for m in row if m.system == COPY and m.gbps), None)
    return {f"{m.system} % of copy": f"{100 * m.gbps / copy.gbps:.1f}%" if copy else "—"
            for m in row if m.system != COPY and m.gbps}
