"""GEMM: ``C = A @ B`` in fp16 and bf16 with fp32 accumulation, 2·M·N·K FLOPs.

Operands: ``A`` (M, K) row-major (with ``--a-layout KM``: the transposed view ``x.T`` of a (K, M) row-major
``x``, as in a weight gradient); ``B`` (K, N) row-major, also stored as its
transpose (N, K) row-major ("K-major") for systems that want that layout (with ``--b-layout NK``: B is the
transposed view ``w.T`` of an (N, K) row-major ``w``, a linear layer's weight, and systems taking B (K, N) get
that view); ``C`` (M, N) row-major. Layout by system:

* ``cublas``: ``torch.matmul(a, b, out=c)`` with B (K, N) row-major (or ``w.T``).
* ``triton``: :mod:`benchmarks.peers.triton_matmul`, B (N, K) K-major.
* ``pallas``: JAX Pallas ``hopper_matmul_mgpu``, B (K, N) row-major.
* ``NVDSL_GEMMS``: B (K, N) unless the function has ``b_layout = "NK"``.

Every output is checked against a float32 torch reference (relative Frobenius
error below ``RTOL``, every element written) before it is timed.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Callable

from .. import harness

MN = 8192                                              # M = N of the K sweep
K_SWEEP = (256, 512, 1024, 2048, 4096, 8192, 16384)
SQUARE = (1024, 2048, 4096, 8192, 16384)               # --square: M = N = K
QUICK_K = (1024, 4096)                                 # --quick: these K, fp16 only
DTYPES = ("fp16", "bf16")
RTOL = 1e-2

TABLE_METRIC = "tflops"
# --shapes' measurements vary M and N too: a line over K would join unlike shapes, so they are in the table only
PLOT = {"x": "K", "xlabel": f"K (M = N = {MN}; square: M = N = K)", "group": ("dtype", "sweep"), "peak": True,
        "omit": {"sweep": ("shapes",)}}

# nvdsl's GEMM kernels register here (benchmarks.nvdsl_kernels.register_gemms): name -> fn(a, b, c)
# -> None on torch CUDA tensors, writing c = a @ b on the current stream. b is (K, N) row-major,
# or (N, K) if fn.b_layout == "NK"; c has a's dtype, or float32 if fn.c_dtype == "fp32".
# Names are shown as "nvdsl-<name>" unless they already start with "nvdsl".
NVDSL_GEMMS: dict[str, Callable] = {}


def shapes(args) -> list[dict]:
    """The shapes this run measures, as the params recorded with each measurement."""
    dtypes, k_values = harness.sweep(args, K_SWEEP, QUICK_K, DTYPES)
    shapes = [{"dtype": d, "M": MN, "N": MN, "K": k, "sweep": f"M=N={MN}"} for d in dtypes for k in k_values]
    if args.square:
        shapes += [{"dtype": d, "M": s, "N": s, "K": s, "sweep": "square"} for d in dtypes for s in SQUARE]
    shapes += [{"dtype": d, "M": m, "N": n, "K": k, "sweep": "shapes"} for d in dtypes
               for m, n, k in harness.parse_shapes(getattr(args, "shapes", ""), "--shapes", "MxNxK",
                                                   "1024x1024x8192")]
    a_layout, b_layout = getattr(args, "a_layout", "MK"), getattr(args, "b_layout", "KN")
    shapes = [dict(s, A=a_layout) for s in shapes] if a_layout != "MK" else shapes
    return [dict(s, B=b_layout) for s in shapes] if b_layout != "KN" else shapes


def row_label(p: dict) -> str:
    return f"{p['dtype']} {p['M']}×{p['N']}×{p['K']}" + (" (square)" if p["sweep"] == "square" else "") + \
        (" A=x.T" if p.get("A") == "KM" else "") + (" B=w.T" if p.get("B") == "NK" else "")


def _operands(p: dict):
    import torch

    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[p["dtype"]]
    a = harness.randn((p["K"], p["M"]), dtype, seed=1).t() if p.get("A") == "KM" else \
        harness.randn((p["M"], p["K"]), dtype, seed=1)
    b = harness.randn((p["K"], p["N"]), dtype, seed=2)
    with harness.exact_fp32():
        ref = a.float() @ b.float()
    c = torch.empty((p["M"], p["N"]), dtype=dtype, device="cuda")
    b_nk = b.t().contiguous()
    return SimpleNamespace(a=a, b_kn=b_nk.t() if p.get("B") == "NK" else b, b_nk=b_nk, c=c, ref=ref)


def _cublas(ops, args) -> harness.Prepared:
    import torch

    call = lambda: torch.matmul(ops.a, ops.b_kn, out=ops.c)
    layout = "KN (row-major)" if ops.b_kn.is_contiguous() else "w.T of an (N, K) row-major w"
    return harness.Prepared(call, harness.checked_call(call, ops.c, ops.ref, RTOL),
                            {"call": "torch.matmul(a, b, out=c)", "b_layout": layout})


def _triton(ops, args) -> harness.Prepared:
    from ..peers import triton_matmul

    call, info = triton_matmul.prepare(ops.a, ops.b_nk, ops.c)
    return harness.Prepared(call, harness.checked_call(call, ops.c, ops.ref, RTOL), info)


def _pallas(ops, args) -> harness.Prepared:
    from ..peers import pallas

    call, info = pallas.prepare_matmul(ops.a, ops.b_kn.contiguous(), args)      # its kernel takes (K, N) row-major
    return pallas.prepared(call, info, ops.ref, RTOL)


def _nvdsl(fn: Callable) -> Callable:
    def prepare(ops, args) -> harness.Prepared:
        import torch

        layout = getattr(fn, "b_layout", "KN")
        b = ops.b_nk if layout == "NK" else ops.b_kn
        # A kernel with c_dtype = "fp32" writes an f32 C (its accumulator), as the reference is.
        c = torch.empty_like(ops.c, dtype=torch.float32) if getattr(fn, "c_dtype", None) == "fp32" else ops.c
        call = lambda: fn(ops.a, b, c)
        return harness.Prepared(call, harness.checked_call(call, c, ops.ref, RTOL),
                                {"b_layout": layout, "c_dtype": str(c.dtype)})
    return prepare


def systems() -> dict[str, Callable]:
    from ..nvdsl_kernels import register_gemms

    register_gemms(NVDSL_GEMMS)
    found = {"cublas": _cublas, "triton": _triton, "pallas": _pallas}
    for name, fn in NVDSL_GEMMS.items():
        found[name if name.startswith("nvdsl") else f"nvdsl-{name}"] = _nvdsl(fn)
    return found


def run(args) -> list[harness.Measurement]:
    return harness.run_shapes("gemm", shapes(args), _operands, systems(),
                              lambda p: 2 * p["M"] * p["N"] * p["K"], args)
