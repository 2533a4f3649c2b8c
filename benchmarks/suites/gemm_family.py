"""The task layer's GEMM family (``nvdsl.kernels.gemm``) against Triton and torch, one table per operation:

* ``dual``: the gated MLP's dual GEMM, ``C = silu(A @ W1) * (A @ W2)``, 4·M·N·K FLOPs (both products).
  Beside it, on the same A and W1, the plain GEMM ``A @ W1`` of nvdsl (``gemm-nvdsl``) and cuBLAS
  (``gemm-cublas``), 2·M·N·K, so the table shows the dual GEMM's throughput against a plain GEMM's.
* ``rowsum``: ``C = A @ B`` and A's row sums alongside, 2·M·N·K FLOPs (the sums not counted); the same
  plain GEMMs beside it.
* ``batched``: ``C[b] = A[b] @ B[b]``, 8 × 4096 × 4096 × K, 2·batch·M·N·K FLOPs.
* ``grouped``: a mixture of experts' grouped GEMM, ``C[rows of g] = A[rows of g] @ B[g]`` for 8 groups of
  ragged sizes (``GROUP_SIZES``, 32768 rows in all, none a multiple of 128), N = 4096, 2·M·N·K FLOPs.
* ``linear``: ``C = act(A @ Wᵀ + bias)``, W stored (N, K), act ∈ {relu, gelu (erf), silu}, 2·M·N·K FLOPs.
* ``fp8``: ``C = (A @ Bᵀ)·s_a·s_b`` with A (M, K) and B (N, K) float8 e4m3, per-tensor float32 scales,
  C fp16 or bf16 (the row's dtype), 2·M·N·K FLOPs. A and B are drawn from N(0, 1) and cast to e4m3, the
  scales K^-1/4 each, so C is O(1).
* ``fp8-block``: the same with DeepSeek-V3's block scales (``block_scaled_gemm``): a float32 scale per row of A
  and 128 values of K (given M-major, as torch takes them) and per 128 x 128 block of B, each drawn from
  K^-1/4 · U(0.5, 1.5); nvdsl under its default mapping (``nvdsl``: A's scales brought into the ring by TMA) and
  its ping-pong (``nvdsl-pingpong``), each also with A's scales loaded by each consumer thread
  (``-scales-by-threads``), and the default with its consumers taking turns at each step's product
  (``nvdsl-turns``).

M = N = 8192 (4096 for ``batched``), K = 4096 (``--k`` for others), fp16 and bf16 (``--quick``: fp16).
A is drawn with scale K^-1/2, so every product is O(1) whatever K (the dual GEMM's product of two
products stays far from fp16's range). Systems, with their operand layouts:

* ``nvdsl``: the task-layer programs built with ``nt.build(program, mapping)``: ``gated_mlp`` under
  ``MAPPING.replace(tiles={"BN": 128})``; ``matmul_rowsum``, ``batched_matmul`` and
  ``linear_program(act)`` under ``MAPPING``. B and W1, W2 (K, N); W (N, K). The row sums come out as
  Y (N / BN, M), one copy per column of tiles, and every copy is checked.
* ``triton``: :mod:`benchmarks.peers.triton_gemm_family`, every B (N, K) (K-major, ``tl.dot(a, b.T)``),
  the row sums an (M,) vector.
* ``torch``: for grouped, ``torch.mm`` per group into views of C (``torch-loop``) and
  ``torch._grouped_mm(a, b, offs)`` where the GPU machine's torch has it (``torch``);
  ``torch.mul(F.silu(a @ w1), a @ w2, out=c)``; ``torch.matmul`` then ``torch.sum(a, 1)``;
  ``torch.bmm``; ``act(F.linear(a, w, bias))``. B (K, N), W (N, K). For fp8 ``torch._scaled_mm(a, b.T,
  s_a, s_b, out_dtype=...)`` (cuBLAS) twice: ``torch-fast-accum`` (``use_fast_accum=True``, accumulating as
  wgmma does, as nvdsl's ``scaled_gemm`` does) and ``torch`` (the default, cuBLAS's more exact two-level
  accumulation).

Every output (and every row-sum copy) is checked against a float32 torch reference (relative Frobenius
error below ``RTOL``, every element written) before it is timed; fp8 against ``FP8_RTOL``: the tensor cores
add float8 products with about 14 bits of mantissa, which costs about 1.1e-3 at K = 4096 (measured on the
H100 by the fp8 GPU tests), plus C's own rounding (bf16: about 1.5e-3). Plain GEMMs are "reference" systems:
never the best peer, only the denominator of the "nvdsl / plain GEMM" columns.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Callable

from .. import harness

SUITE = "gemm_family"
MN = 8192                      # M = N of dual, rowsum and linear
BATCH, BATCHED_MN = 8, 4096    # batched: BATCH products of BATCHED_MN x BATCHED_MN x K
GROUP_SIZES = (3971, 4485, 4033, 4222, 3777, 4160, 4290, 3830)   # grouped: rows per group, 32768 in all
GROUPED_N = 4096
K_VALUES = (4096,)
QUICK_K = (4096,)
DTYPES = ("fp16", "bf16")
ACTIVATIONS = ("relu", "gelu", "silu")
RTOL = 1e-2
FP8_RTOL = {"fp16": 3e-3, "bf16": 5e-3}

TABLE_METRIC = "tflops"
SECTION = "op"                 # one table per operation
SECTION_TITLES = {
    "dual": "Dual GEMM (gated MLP): C = silu(A·W1) ⊙ (A·W2), TFLOP/s counting both products (4·M·N·K)",
    "rowsum": "GEMM + row sums: C = A·B and y = Σk A[:, k], TFLOP/s of the product (2·M·N·K)",
    "batched": "Batched GEMM: C[b] = A[b]·B[b], TFLOP/s (2·batch·M·N·K)",
    "grouped": "Grouped GEMM (mixture of experts): C[rows of g] = A[rows of g]·B[g], 8 ragged groups, TFLOP/s (2·M·N·K)",
    "linear": "Linear with bias and activation: C = act(A·Wᵀ + bias), TFLOP/s (2·M·N·K)",
    "fp8": "float8 GEMM: C = (A·Bᵀ)·s_a·s_b, A and B e4m3, per-tensor scales, TFLOP/s (2·M·N·K)",
    "fp8-block": "float8 GEMM with block scales: a scale per row of A and 128 of K, per 128 x 128 block of B, A and "
                 "B e4m3, TFLOP/s (2·M·N·K)",
}
PLOT = {"kind": "bars", "peak": True}

NVDSL, TRITON, TORCH, GEMM_NVDSL, GEMM_CUBLAS = "nvdsl", "triton", "torch", "gemm-nvdsl", "gemm-cublas"
TORCH_FAST_ACCUM = "torch-fast-accum"
NVDSL_PINGPONG = "nvdsl-pingpong"
TORCH_LOOP = "torch-loop"
PLAIN_COLUMNS = {GEMM_NVDSL: "nvdsl / plain nvdsl GEMM", GEMM_CUBLAS: "nvdsl / plain cuBLAS GEMM"}
WITH_PLAIN_GEMM = ("dual", "rowsum")


def shapes(args) -> list[dict]:
    """The shapes this run measures, grouped by operation, as the params recorded with each measurement."""
    dtypes, k_values = harness.sweep(args, K_VALUES, QUICK_K, DTYPES)
    ops = [op for op in getattr(args, "ops", "").split(",") if op] or list(SECTION_TITLES)
    unknown = sorted(set(ops) - set(SECTION_TITLES))
    if unknown:
        raise SystemExit(f"gemm_family: unknown --ops {unknown}; choose from {', '.join(SECTION_TITLES)}")
    found = []
    for op in (op for op in SECTION_TITLES if op in ops):
        for dtype in dtypes:
            for k in k_values:
                if op == "batched":
                    found.append({"op": op, "dtype": dtype, "batch": BATCH, "M": BATCHED_MN, "N": BATCHED_MN, "K": k})
                elif op == "grouped":
                    found.append({"op": op, "dtype": dtype, "groups": len(GROUP_SIZES), "M": sum(GROUP_SIZES),
                                  "N": GROUPED_N, "K": k})
                elif op == "linear":
                    found += [{"op": op, "activation": act, "dtype": dtype, "M": MN, "N": MN, "K": k}
                              for act in ACTIVATIONS]
                elif op in ("fp8", "fp8-block"):      # dtype: C's; the inputs are float8 e4m3
                    found.append({"op": op, "inputs": "e4m3", "dtype": dtype, "M": MN, "N": MN, "K": k})
                else:
                    found.append({"op": op, "dtype": dtype, "M": MN, "N": MN, "K": k})
    return found


def flops(p: dict) -> float:
    """FLOPs of the operation: 2·M·N·K a product, two products for the dual GEMM, one per batch."""
    products = 2 if p["op"] == "dual" else 1
    return 2 * products * p.get("batch", 1) * p["M"] * p["N"] * p["K"]


def plain_gemm_flops(p: dict) -> float:
    return 2 * p["M"] * p["N"] * p["K"]


def row_label(p: dict) -> str:
    name = (f"linear+{p['activation']}" if p["op"] == "linear" else
            f"{p['op']} {p['inputs']}→" if p["op"] in ("fp8", "fp8-block") else p["op"])
    batch = f"{p['batch']}×" if "batch" in p else f"{p['groups']} groups " if "groups" in p else ""
    return f"{name}{'' if 'inputs' in p else ' '}{p['dtype']} {batch}{p['M']}×{p['N']}×{p['K']}"


def _ratio(ours: harness.Measurement | None, other: harness.Measurement | None) -> str:
    usable = [m for m in (ours, other) if m is not None and m.tflops and m.correct is not False]
    return f"{ours.tflops / other.tflops:.2f}×" if len(usable) == 2 else "—"


def derived_columns(row: list[harness.Measurement]) -> dict[str, str]:
    """For the dual GEMM and the row sums: nvdsl's throughput over each plain GEMM's on the same shape."""
    if row[0].params["op"] not in WITH_PLAIN_GEMM:
        return {}
    by_system = {m.system: m for m in row}
    return {column: _ratio(by_system.get(NVDSL), by_system.get(plain)) for plain, column in PLAIN_COLUMNS.items()}


# --------------------------------------------------------------------------- operands

def _dtype(p: dict):
    import torch

    return {"fp16": torch.float16, "bf16": torch.bfloat16}[p["dtype"]]


def _a(p: dict, shape: tuple):
    return harness.randn(shape, _dtype(p), scale=p["K"] ** -0.5, seed=1)


def _dual_operands(p: dict):
    import torch

    M, N, K, dtype = p["M"], p["N"], p["K"], _dtype(p)
    a, w1, w2 = _a(p, (M, K)), harness.randn((K, N), dtype, seed=2), harness.randn((K, N), dtype, seed=3)
    with harness.exact_fp32():
        gate = a.float() @ w1.float()
        ref = torch.nn.functional.silu(gate) * (a.float() @ w2.float())
    return SimpleNamespace(a=a, w1=w1, w2=w2, w1_nk=w1.t().contiguous(), w2_nk=w2.t().contiguous(), ref=ref,
                           c=torch.empty((M, N), dtype=dtype, device="cuda"), plain_b=w1, plain_ref=gate)


def _rowsum_operands(p: dict):
    import torch

    M, N, K, dtype = p["M"], p["N"], p["K"], _dtype(p)
    a, b = _a(p, (M, K)), harness.randn((K, N), dtype, seed=2)
    with harness.exact_fp32():
        ref = a.float() @ b.float()
    return SimpleNamespace(a=a, b=b, b_nk=b.t().contiguous(), ref=ref, rows_ref=a.float().sum(dim=1),
                           c=torch.empty((M, N), dtype=dtype, device="cuda"),
                           rows=torch.empty((M,), dtype=torch.float32, device="cuda"), plain_b=b, plain_ref=ref)


def _batched_operands(p: dict):
    import torch

    shape, dtype = (p["batch"], p["M"], p["N"], p["K"]), _dtype(p)
    batch, M, N, K = shape
    a, b = _a(p, (batch, M, K)), harness.randn((batch, K, N), dtype, seed=2)
    with harness.exact_fp32():
        ref = a.float() @ b.float()
    return SimpleNamespace(a=a, b=b, b_nk=b.transpose(1, 2).contiguous(), ref=ref,
                           c=torch.empty((batch, M, N), dtype=dtype, device="cuda"))


def _grouped_operands(p: dict):
    import torch

    M, N, K, dtype = p["M"], p["N"], p["K"], _dtype(p)
    a, b = _a(p, (M, K)), harness.randn((len(GROUP_SIZES), K, N), dtype, seed=2)
    with harness.exact_fp32():
        ref = torch.cat([a_g.float() @ b[g].float() for g, a_g in enumerate(torch.split(a, list(GROUP_SIZES)))])
    return SimpleNamespace(a=a, b=b, b_nk=b.transpose(1, 2).contiguous(), ref=ref, sizes=list(GROUP_SIZES),
                           c=torch.empty((M, N), dtype=dtype, device="cuda"))


def _torch_activation(name: str) -> Callable:
    import torch

    return {"relu": torch.relu, "gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu}[name]


def _linear_operands(p: dict):
    import torch

    M, N, K, dtype = p["M"], p["N"], p["K"], _dtype(p)
    a, w, bias = _a(p, (M, K)), harness.randn((N, K), dtype, seed=2), harness.randn((N,), dtype, seed=3)
    with harness.exact_fp32():
        ref = _torch_activation(p["activation"])(a.float() @ w.float().T + bias.float())
    return SimpleNamespace(a=a, w=w, bias=bias, ref=ref, c=torch.empty((M, N), dtype=dtype, device="cuda"))


def _fp8_operands(p: dict):
    import torch

    M, N, K = p["M"], p["N"], p["K"]
    a = harness.randn((M, K), torch.float8_e4m3fn, seed=1)
    b = harness.randn((N, K), torch.float8_e4m3fn, seed=2)
    scale = K ** -0.25
    scale_a, scale_b = (torch.full((1,), scale, dtype=torch.float32, device="cuda") for _ in range(2))
    with harness.exact_fp32():
        ref = (a.float() @ b.float().T) * (scale_a * scale_b)
    return SimpleNamespace(a=a, b=b, scale_a=scale_a, scale_b=scale_b, ref=ref, rtol=FP8_RTOL[p["dtype"]],
                           c=torch.empty((M, N), dtype=_dtype(p), device="cuda"))


def _fp8_block_operands(p: dict):
    import torch

    M, N, K = p["M"], p["N"], p["K"]
    a = harness.randn((M, K), torch.float8_e4m3fn, seed=1)
    b = harness.randn((N, K), torch.float8_e4m3fn, seed=2)
    blocks, g = -(-K // 128), torch.Generator(device="cuda").manual_seed(3)
    scale = K ** -0.25
    scale_a = (torch.rand(blocks, M, device="cuda", generator=g) + 0.5).mul_(scale).T       # (M, blocks), M-major
    scale_b = (torch.rand(-(-N // 128), blocks, device="cuda", generator=g) + 0.5).mul_(scale)
    with harness.exact_fp32():      # each value of A and B times its block's scale: the sum of scaled blocks
        ref = (a.float() * scale_a.repeat_interleave(128, 1)[:, :K]) @ \
              (b.float() * scale_b.repeat_interleave(128, 0).repeat_interleave(128, 1)[:N, :K]).T
    return SimpleNamespace(a=a, b=b, scale_a=scale_a, scale_b=scale_b, ref=ref, rtol=FP8_RTOL[p["dtype"]],
                           c=torch.empty((M, N), dtype=_dtype(p), device="cuda"))


# --------------------------------------------------------------------------- nvdsl

@functools.lru_cache(maxsize=None)
def nvdsl_kernel(op: str, activation: str = "none"):
    """The task-layer program of an operation, built under its mapping (once per process)."""
    import nvdsl.tasks as nt
    from nvdsl.kernels import gemm

    program, mapping = {
        "dual": (gemm.gated_mlp, gemm.MAPPING.replace(tiles={"BN": 128})),
        "rowsum": (gemm.matmul_rowsum, gemm.MAPPING),
        "batched": (gemm.batched_matmul, gemm.MAPPING),
        "linear": (gemm.linear_program(activation), gemm.linear_mapping(activation)),
        "fp8": (gemm.scaled_matmul, gemm.FP8_MAPPING),
        "grouped": (gemm.grouped_matmul, gemm.MAPPING),
    }[op]
    return nt.build(program, mapping)


def _nvdsl_prepared(kernel, call, out, ref, also=(), rtol: float = RTOL) -> harness.Prepared:
    return harness.Prepared(call, harness.checked_call(call, out, ref, rtol, also=also),
                            {"program": kernel.entry.name, "mapping": str(kernel.mapping)})


def _nvdsl_dual(ops, args) -> harness.Prepared:
    kernel = nvdsl_kernel("dual")
    return _nvdsl_prepared(kernel, lambda: kernel(ops.c, ops.a, ops.w1, ops.w2), ops.c, ops.ref)


def _nvdsl_rowsum(ops, args) -> harness.Prepared:
    import torch

    kernel = nvdsl_kernel("rowsum")
    M, N = ops.c.shape
    column_tiles = -(-N // kernel.mapping.tile_values()["BN"])
    y = torch.empty((column_tiles, M), dtype=torch.float32, device="cuda")
    return _nvdsl_prepared(kernel, lambda: kernel(ops.c, y, ops.a, ops.b), ops.c, ops.ref,
                           also=[(y, ops.rows_ref.expand(column_tiles, M))])


def _nvdsl_batched(ops, args) -> harness.Prepared:
    kernel = nvdsl_kernel("batched")
    return _nvdsl_prepared(kernel, lambda: kernel(ops.c, ops.a, ops.b), ops.c, ops.ref)


def _nvdsl_linear(activation: str) -> Callable:
    def prepare(ops, args) -> harness.Prepared:
        kernel = nvdsl_kernel("linear", activation)
        return _nvdsl_prepared(kernel, lambda: kernel(ops.c, ops.a, ops.w, ops.bias), ops.c, ops.ref)
    return prepare


def _nvdsl_grouped(ops, args) -> harness.Prepared:
    import torch

    from nvdsl.kernels.gemm import row_tile_table

    kernel = nvdsl_kernel("grouped")
    table = torch.from_numpy(row_tile_table(ops.sizes, kernel.mapping.tile_values()["BM"])).cuda()
    return _nvdsl_prepared(kernel, lambda: kernel(ops.c, ops.a, ops.b, table), ops.c, ops.ref)


def _nvdsl_fp8_block(mapping_name: str, **changes) -> Callable:
    """nvdsl's block-scaled GEMM under ``nvdsl.kernels.gemm``'s mapping of that name, with ``changes``
    (``memory={}``: A's scales loaded by each consumer thread rather than brought by TMA into each K step's ring
    slot; ``turns=True``: the consumers taking turns at each step's product)."""
    def prepare(ops, args) -> harness.Prepared:
        from nvdsl.kernels import gemm

        mapping = getattr(gemm, mapping_name).replace(**changes)
        call = lambda: gemm.block_scaled_gemm(ops.a, ops.b, ops.c, ops.scale_a, ops.scale_b, mapping=mapping)
        written = mapping_name + (f".replace({', '.join(f'{k}={v!r}' for k, v in changes.items())})" if changes
                                  else "")
        return harness.Prepared(call, harness.checked_call(call, ops.c, ops.ref, ops.rtol),
                                {"call": f"nvdsl.kernels.gemm.block_scaled_gemm(a, b, c, scale_a, scale_b, "
                                         f"mapping={written})", "mapping": str(mapping)})
    return prepare


def _nvdsl_fp8(ops, args) -> harness.Prepared:
    kernel = nvdsl_kernel("fp8")
    return _nvdsl_prepared(kernel, lambda: kernel(ops.c, ops.a, ops.b, ops.scale_a, ops.scale_b), ops.c, ops.ref,
                           rtol=ops.rtol)


# --------------------------------------------------------------------------- peers

def _triton_dual(ops, args) -> harness.Prepared:
    from ..peers import triton_gemm_family as peer

    call, info = peer.prepare_gated_mlp(ops.a, ops.w1_nk, ops.w2_nk, ops.c)
    return harness.Prepared(call, harness.checked_call(call, ops.c, ops.ref, RTOL), info)


def _triton_rowsum(ops, args) -> harness.Prepared:
    from ..peers import triton_gemm_family as peer

    call, info = peer.prepare_rowsum(ops.a, ops.b_nk, ops.c, ops.rows)
    return harness.Prepared(call, harness.checked_call(call, ops.c, ops.ref, RTOL, also=[(ops.rows, ops.rows_ref)]),
                            info)


def _triton_batched(ops, args) -> harness.Prepared:
    from ..peers import triton_gemm_family as peer

    call, info = peer.prepare_batched(ops.a, ops.b_nk, ops.c)
    return harness.Prepared(call, harness.checked_call(call, ops.c, ops.ref, RTOL), info)


def _triton_linear(activation: str) -> Callable:
    def prepare(ops, args) -> harness.Prepared:
        from ..peers import triton_gemm_family as peer

        call, info = peer.prepare_linear(ops.a, ops.w, ops.bias, ops.c, activation)
        return harness.Prepared(call, harness.checked_call(call, ops.c, ops.ref, RTOL), info)
    return prepare


def _torch_dual(ops, args) -> harness.Prepared:
    import torch

    silu = torch.nn.functional.silu
    call = lambda: torch.mul(silu(torch.matmul(ops.a, ops.w1)), torch.matmul(ops.a, ops.w2), out=ops.c)
    return harness.Prepared(call, harness.checked_call(call, ops.c, ops.ref, RTOL),
                            {"call": "torch.mul(F.silu(a @ w1), a @ w2, out=c)"})


def _torch_rowsum(ops, args) -> harness.Prepared:
    import torch

    def call():
        torch.matmul(ops.a, ops.b, out=ops.c)
        torch.sum(ops.a, dim=1, dtype=torch.float32, out=ops.rows)
    return harness.Prepared(call, harness.checked_call(call, ops.c, ops.ref, RTOL, also=[(ops.rows, ops.rows_ref)]),
                            {"call": "torch.matmul(a, b, out=c); torch.sum(a, 1, dtype=float32, out=rows)"})


def _triton_grouped(ops, args) -> harness.Prepared:
    from ..peers import triton_gemm_family as peer

    call, info = peer.prepare_grouped(ops.a, ops.b_nk, ops.c, ops.sizes)
    return harness.Prepared(call, harness.checked_call(call, ops.c, ops.ref, RTOL), info)


def _torch_grouped_loop(ops, args) -> harness.Prepared:
    import torch

    pairs = [(a_g, c_g) for a_g, c_g in zip(torch.split(ops.a, ops.sizes), torch.split(ops.c, ops.sizes))]

    def call():
        for g, (a_g, c_g) in enumerate(pairs):
            torch.mm(a_g, ops.b[g], out=c_g)
    return harness.Prepared(call, harness.checked_call(call, ops.c, ops.ref, RTOL),
                            {"call": "torch.mm(a_g, b[g], out=c_g) per group"})


def _torch_grouped_mm(ops, args) -> harness.Prepared:
    import torch

    if not hasattr(torch, "_grouped_mm"):
        raise RuntimeError(f"torch {torch.__version__} has no torch._grouped_mm")
    offsets = torch.tensor(ops.sizes, device="cuda", dtype=torch.int32).cumsum(0, dtype=torch.int32)
    b_column_major = ops.b_nk.transpose(1, 2)          # (groups, K, N) with K contiguous, as CUTLASS wants it
    call = lambda: torch._grouped_mm(ops.a, b_column_major, offs=offsets, out_dtype=ops.a.dtype)
    out = call()
    torch.cuda.synchronize()
    return harness.Prepared(call, harness.check_close(out, ops.ref, RTOL),  # a fresh output
                            {"call": "torch._grouped_mm(a, b (K-contiguous), offs=cumsum(sizes))"})


def _torch_batched(ops, args) -> harness.Prepared:
    import torch

    call = lambda: torch.bmm(ops.a, ops.b, out=ops.c)
    return harness.Prepared(call, harness.checked_call(call, ops.c, ops.ref, RTOL), {"call": "torch.bmm(a, b, out=c)"})


def _torch_linear(activation: str) -> Callable:
    def prepare(ops, args) -> harness.Prepared:
        import torch

        act = _torch_activation(activation)
        call = lambda: act(torch.nn.functional.linear(ops.a, ops.w, ops.bias))
        out = call()
        torch.cuda.synchronize()
        return harness.Prepared(call, harness.check_close(out, ops.ref, RTOL),  # a fresh output: nothing to poison
                                {"call": f"{act.__name__}(F.linear(a, w, bias))"})
    return prepare


def _torch_fp8(fast_accum: bool) -> Callable:
    def prepare(ops, args) -> harness.Prepared:
        import torch

        # torch._scaled_mm takes B column-major: (N, K) row-major, transposed, is that.
        call = lambda: torch._scaled_mm(ops.a, ops.b.t(), ops.scale_a, ops.scale_b, out_dtype=ops.c.dtype,
                                        use_fast_accum=fast_accum)
        out = call()
        torch.cuda.synchronize()
        return harness.Prepared(call, harness.check_close(out, ops.ref, ops.rtol),  # a fresh output
                                {"call": f"torch._scaled_mm(a, b.t(), scale_a, scale_b, out_dtype=c.dtype, "
                                         f"use_fast_accum={fast_accum})"})
    return prepare


def _torch_fp8_block(ops, args) -> harness.Prepared:
    """``torch._scaled_mm`` with blockwise scales (cuBLAS's, where the machine's torch and CUDA have them): its B
    is column-major, so B's block scales go as the transpose (PyTorch's own tests pass the 128 x 128 scales as
    ``(N / 128, K / 128).t()``, K's blocks padded to a multiple of 4), tried as a view and then copied, then as they
    are; then ``torch.nn.functional.scaled_mm`` with the recipes named (``BlockWise1x128`` for A,
    ``BlockWise128x128`` for B), where this torch has it. The first call that runs and whose result checks is
    timed."""
    import torch

    attempts = [(f"torch._scaled_mm(a, b.t(), scale_a, {name}, out_dtype=c.dtype)",
                 lambda scale_b=scale_b: torch._scaled_mm(ops.a, ops.b.t(), ops.scale_a, scale_b,
                                                          out_dtype=ops.c.dtype))
                for name, scale_b in (("scale_b.t()", ops.scale_b.t()),
                                      ("scale_b.t().contiguous()", ops.scale_b.t().contiguous()),
                                      ("scale_b", ops.scale_b))]
    functional = torch.nn.functional
    if hasattr(functional, "scaled_mm") and hasattr(functional, "ScalingType"):
        recipes = functional.ScalingType
        attempts.append(("F.scaled_mm(a, b.t(), scale_a, BlockWise1x128, scale_b.t(), BlockWise128x128, "
                         "output_dtype=c.dtype)",
                         lambda: functional.scaled_mm(ops.a, ops.b.t(), ops.scale_a, recipes.BlockWise1x128,
                                                      ops.scale_b.t(), recipes.BlockWise128x128,
                                                      output_dtype=ops.c.dtype)))
    errors = []
    for name, call in attempts:
        try:
            out = call()
        except (RuntimeError, TypeError, ValueError) as error:
            errors.append(f"{name}: {error}")
            continue
        torch.cuda.synchronize()
        check = harness.check_close(out, ops.ref, ops.rtol)
        if check.ok:
            return harness.Prepared(call, check, {"call": name})
        errors.append(f"{name}: {check.describe()}")
    raise RuntimeError("torch gave no checked result with block scales: " + " | ".join(errors))


def _plain_nvdsl(ops, args) -> harness.Prepared:
    from nvdsl.kernels.gemm import gemm

    call = lambda: gemm(ops.a, ops.plain_b, ops.c)
    return harness.Prepared(call, harness.checked_call(call, ops.c, ops.plain_ref, RTOL),
                            {"call": "nvdsl.kernels.gemm.gemm(a, b, c)"})


def _plain_cublas(ops, args) -> harness.Prepared:
    import torch

    call = lambda: torch.matmul(ops.a, ops.plain_b, out=ops.c)
    return harness.Prepared(call, harness.checked_call(call, ops.c, ops.plain_ref, RTOL),
                            {"call": "torch.matmul(a, b, out=c)"})


_PLAIN = {GEMM_NVDSL: harness.System(_plain_nvdsl, harness.REFERENCE, plain_gemm_flops),
          GEMM_CUBLAS: harness.System(_plain_cublas, harness.REFERENCE, plain_gemm_flops)}


def systems(op: str, activation: str = "none") -> dict[str, Callable | harness.System]:
    """The systems measured on one operation, in table order."""
    if op == "dual":
        return {NVDSL: _nvdsl_dual, TRITON: _triton_dual, TORCH: _torch_dual, **_PLAIN}
    if op == "rowsum":
        return {NVDSL: _nvdsl_rowsum, TRITON: _triton_rowsum, TORCH: _torch_rowsum, **_PLAIN}
    if op == "batched":
        return {NVDSL: _nvdsl_batched, TRITON: _triton_batched, TORCH: _torch_batched}
    if op == "fp8":
        return {NVDSL: _nvdsl_fp8, TORCH_FAST_ACCUM: _torch_fp8(True), TORCH: _torch_fp8(False)}
    if op == "fp8-block":
        return {NVDSL: _nvdsl_fp8_block("BLOCK_SCALED_MAPPING"),
                NVDSL_PINGPONG: _nvdsl_fp8_block("BLOCK_SCALED_PINGPONG_MAPPING"),
                f"{NVDSL}-scales-by-threads": _nvdsl_fp8_block("BLOCK_SCALED_MAPPING", memory={}),
                f"{NVDSL_PINGPONG}-scales-by-threads": _nvdsl_fp8_block("BLOCK_SCALED_PINGPONG_MAPPING", memory={}),
                f"{NVDSL}-turns": _nvdsl_fp8_block("BLOCK_SCALED_MAPPING", turns=True),
                TORCH: _torch_fp8_block}
    if op == "grouped":
        return {NVDSL: _nvdsl_grouped, TRITON: _triton_grouped, TORCH: _torch_grouped_mm, TORCH_LOOP: _torch_grouped_loop}
    return {NVDSL: _nvdsl_linear(activation), TRITON: _triton_linear(activation), TORCH: _torch_linear(activation)}


OPERANDS = {"dual": _dual_operands, "rowsum": _rowsum_operands, "batched": _batched_operands,
            "linear": _linear_operands, "fp8": _fp8_operands, "fp8-block": _fp8_block_operands,
            "grouped": _grouped_operands}


def run(args) -> list[harness.Measurement]:
    results = []
    for p in shapes(args):
        results += harness.run_shapes(SUITE, [p], OPERANDS[p["op"]], systems(p["op"], p.get("activation", "none")),
                                      flops, args)
    return results
