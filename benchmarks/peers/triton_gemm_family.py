"""The Triton peers of the gemm_family suite, written for Triton 3.6 on Hopper: the gated MLP's dual GEMM,
a GEMM with A's row sums, a batched GEMM and a linear layer with bias and activation; also the kernel of
the gemm suite's Triton peer (:mod:`benchmarks.peers.triton_matmul`), which is its plain case.

One persistent kernel, ``fused_matmul_kernel`` (one program per SM looping over output tiles in groups of
``GROUP_M`` tile rows), loading and storing through TMA tensor descriptors made on the device
(``tl.make_tensor_descriptor``), accumulating in fp32, the epilogue math in fp32 registers before the cast
and the TMA store. Its constants pick the operation:

* ``GATED``: a second product ``A @ B2ᵀ`` per tile, in a second accumulator, from the same load of each
  A tile; the epilogue multiplies the (activated) first by it. The dual GEMM is
  ``silu(A @ W1ᵀ) * (A @ W2ᵀ)``: ``GATED`` with ``ACTIVATION="silu"`` (``x·sigmoid(x)``).
* ``HAS_BIAS``, ``ACTIVATION`` (none, relu, gelu with erf, silu): ``act(acc + bias)`` in the epilogue.
* ``ROW_SUMS``: ``y = A.sum(1)`` summed from the A tiles already loaded for the product; the program of
  the first tile column stores it.
* ``BATCH``: a batch is flattened into rows, A (batch·M, K), B (batch·N, K), C (batch·M, N).

B operands are **K-major**: (N, K) row-major, as a linear layer stores its weight and as Triton's Hopper
matmul reads best (``tl.dot(a, b.T)``). Preconditions, checked by the ``prepare_*`` functions: M and N
multiples of 256 (no tile crosses a batch or needs a mask), K a multiple of 64, every tensor contiguous.

Each operation is autotuned over its ``*_CONFIGS`` rows ``(BLOCK_M, BLOCK_N, num_stages, num_warps,
warp_specialize)`` with BLOCK_K = 64; variants tried in order, the first that compiles and runs kept:
``tma-persistent`` (all rows, some warp-specialized through ``tl.range(..., warp_specialize=True)``,
which Triton 3.6 honours on Hopper only with ``num_warps=4`` and ``flatten=False``, then running a
producer warp group and two consumer warp groups) and ``tma-persistent-nows`` (only the rows without).
"""

from __future__ import annotations

from functools import partial
from typing import Callable

import triton
import triton.language as tl

from .triton_common import BLOCK_K, configs, first_variant_that_runs, num_sms, tile_coords

# One fp32 accumulator: five of the GEMM peer's seven rows (each table here is autotuned for every
# operation and dtype, so fewer compiles): warp-specialized 128x128 and 128x256 (two consumer warp groups
# split the tile's rows), and 128x128, 128x256, 256x128 over 8 warps without. 3 stages of the large tiles
# (48 KiB each) plus the C tile of the TMA store fit the 227 KiB of shared memory. GELU's erf needs more
# registers than 128x256 leaves (ptxas spills in the epilogue): the autotuner, which times every row,
# decides whether that still pays.
FUSED_CONFIGS = ((128, 128, 4, 4, True), (128, 256, 3, 4, True),
                 (128, 128, 4, 8, False), (128, 256, 3, 8, False), (256, 128, 3, 8, False))

# With the row sums, the A tile is also read into registers, and the warp-specialized kernel keeps extra
# copies of it in shared memory (225 KiB for 4 stages of 128x128; 128x256 no longer fits). Triton 3.6
# cannot flatten the tile loop around the sums' loop-carried vector (its FuseNestedLoops pass fails), so
# these run with FLATTEN=False.
ROWSUM_CONFIGS = ((128, 128, 4, 4, True), (128, 128, 4, 8, False), (128, 256, 3, 8, False), (256, 128, 3, 8, False))

# Two fp32 accumulators: 2 x 128 x 128 over 8 warps, or 2 x 128 x 64 over 4, is 128 registers a thread
# (256 x 128 or 128 x 256 would need 256). A stage holds A's tile and both weights' tiles: 48 KiB for
# 128 x 128, 32 KiB for 128 x 64.
GATED_CONFIGS = ((128, 128, 3, 4, True), (128, 64, 4, 4, True),
                 (128, 128, 3, 8, False), (128, 128, 4, 8, False), (128, 64, 4, 4, False))

ACTIVATIONS = ("none", "relu", "gelu", "silu")


@triton.jit
def _activate(x, ACTIVATION: tl.constexpr):
    if ACTIVATION == "relu":
        x = tl.maximum(x, 0.0)
    elif ACTIVATION == "gelu":
        x = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))     # exact GELU (erf), as torch's default
    elif ACTIVATION == "silu":
        x = x * tl.sigmoid(x)
    return x


@triton.jit
def fused_matmul_kernel(a_ptr, b_ptr, b2_ptr, c_ptr, bias_ptr, rows_ptr, M, N, K, BATCH, NUM_SMS: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                        WARP_SPECIALIZE: tl.constexpr, FLATTEN: tl.constexpr, ACTIVATION: tl.constexpr = "none",
                        HAS_BIAS: tl.constexpr = False, ROW_SUMS: tl.constexpr = False, GATED: tl.constexpr = False):
    """``C[b] = act(A[b] @ B[b]ᵀ + bias)``, times ``A[b] @ B2[b]ᵀ`` when GATED; with ROW_SUMS also
    ``y = A.sum(1)``. A (BATCH·M, K), B and B2 (BATCH·N, K), C (BATCH·M, N), bias (N,), y (M,)."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[BATCH * M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[BATCH * N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    if GATED:
        b2_desc = tl.make_tensor_descriptor(b2_ptr, shape=[BATCH * N, K], strides=[K, 1],
                                            block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[BATCH * M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    per_batch = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    start = tl.program_id(0)
    # A second tile counter for the epilogue keeps the prologue and epilogue independent
    # (as Triton's persistent-matmul tutorial does, for its pipeliner).
    tile_c = start - NUM_SMS
    for tile in tl.range(start, BATCH * per_batch, NUM_SMS, flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = tile_coords(tile % per_batch, num_pid_m, num_pid_n, GROUP_M)
        a_row = (tile // per_batch) * M + pid_m * BLOCK_M
        b_row = (tile // per_batch) * N + pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        rows = tl.zeros((BLOCK_M,), dtype=tl.float32)
        for kt in range(k_tiles):
            a = a_desc.load([a_row, kt * BLOCK_K])
            acc = tl.dot(a, b_desc.load([b_row, kt * BLOCK_K]).T, acc)
            if GATED:
                up = tl.dot(a, b2_desc.load([b_row, kt * BLOCK_K]).T, up)
            if ROW_SUMS:
                rows += tl.sum(a.to(tl.float32), axis=1)
        tile_c += NUM_SMS
        pid_m, pid_n = tile_coords(tile_c % per_batch, num_pid_m, num_pid_n, GROUP_M)
        c_row = (tile_c // per_batch) * M + pid_m * BLOCK_M
        if HAS_BIAS:
            acc += tl.load(bias_ptr + pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.float32)[None, :]
        acc = _activate(acc, ACTIVATION)
        if GATED:
            acc = acc * up
        c_desc.store([c_row, pid_n * BLOCK_N], acc.to(c_ptr.dtype.element_ty))
        if ROW_SUMS:
            if pid_n == 0:
                tl.store(rows_ptr + c_row + tl.arange(0, BLOCK_M), rows)


def _autotuned(kernel, table, key, **constants):
    return {"tma-persistent": triton.autotune(configs(table, True, **constants), key=key)(kernel),
            "tma-persistent-nows": triton.autotune(configs(table, False, **constants), key=key)(kernel)}


_KEY = ["M", "N", "K", "BATCH", "ACTIVATION", "HAS_BIAS", "ROW_SUMS", "GATED"]
_FUSED = _autotuned(fused_matmul_kernel, FUSED_CONFIGS, _KEY)
_ROWSUM = _autotuned(fused_matmul_kernel, ROWSUM_CONFIGS, _KEY, FLATTEN=False)
_GATED = _autotuned(fused_matmul_kernel, GATED_CONFIGS, _KEY)
_broken: dict[tuple, dict[str, str]] = {}   # (operation, activation) -> {variant: why it failed}, across shapes


def launch(kernel, a, b_nk, c, *, b2_nk=None, bias=None, rows=None, activation: str = "none") -> None:
    """One call of ``fused_matmul_kernel`` (through an autotuner) on 2-D or batched 3-D operands, one
    program per SM; the operation follows from which of ``b2_nk``, ``bias`` and ``rows`` are given."""
    batch = a.shape[0] if a.dim() == 3 else 1
    M, K = a.shape[-2:]
    N = b_nk.shape[-2]
    sms = num_sms(a)
    grid = lambda meta: (min(sms, batch * triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])),)
    unused = c      # stands in for the pointers the operation does not read
    kernel[grid](a, b_nk, b_nk if b2_nk is None else b2_nk, c, unused if bias is None else bias,
                 unused if rows is None else rows, M, N, K, batch, NUM_SMS=sms, ACTIVATION=activation,
                 HAS_BIAS=bias is not None, ROW_SUMS=rows is not None, GATED=b2_nk is not None)


def _prepare(operation: str, kernels, a, b_nk, c, *, b2_nk=None, bias=None, rows=None,
             activation: str = "none") -> tuple[Callable[[], None], dict]:
    lead = tuple(a.shape[:-2])                 # (batch,) or ()
    M, K = a.shape[-2:]
    N = b_nk.shape[-2]
    given = {"b": b_nk, "b2": b2_nk, "c": c, "bias": bias, "rows": rows}
    expected = {"b": lead + (N, K), "b2": lead + (N, K), "c": lead + (M, N), "bias": (N,), "rows": (M,)}
    for name, tensor in given.items():
        if tensor is not None and tuple(tensor.shape) != expected[name]:
            raise ValueError(f"{name} is {tuple(tensor.shape)}, expected {expected[name]} for a {tuple(a.shape)}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation={activation!r}: choose from {ACTIVATIONS}")
    if M % 256 or N % 256 or K % BLOCK_K:
        raise ValueError(f"M and N must be multiples of 256 and K of {BLOCK_K}, got {M}x{N}x{K}")
    tensors = [a] + [t for t in given.values() if t is not None]
    if not all(t.is_contiguous() for t in tensors):
        raise ValueError("every operand must be contiguous")
    extras = dict(activation=activation, b2_nk=b2_nk, bias=bias, rows=rows)
    variants = {name: (partial(launch, kernel, **extras), kernel) for name, kernel in kernels.items()}
    broken = _broken.setdefault((operation, activation), {})
    return first_variant_that_runs(variants, (a, b_nk, c), broken, b_layout="NK (K-major)")


def prepare_gated_mlp(a, w1_nk, w2_nk, c):
    """``c = silu(a @ w1_nk.T) * (a @ w2_nk.T)`` with both weights (N, K); returns ``(call, info)``."""
    return _prepare("gated", _GATED, a, w1_nk, c, b2_nk=w2_nk, activation="silu")


def prepare_rowsum(a, b_nk, c, rows):
    """``c = a @ b_nk.T`` and ``rows = a.sum(1)`` (float32), in one kernel."""
    return _prepare("rowsum", _ROWSUM, a, b_nk, c, rows=rows)


def prepare_batched(a, b_nk, c):
    """``c[i] = a[i] @ b_nk[i].T`` for a (batch, M, K), b_nk (batch, N, K), c (batch, M, N)."""
    return _prepare("batched", _FUSED, a, b_nk, c)


def prepare_linear(a, w, bias, c, activation: str):
    """``c = act(a @ w.T + bias)`` with w (N, K) and bias (N,), activation one of ``ACTIVATIONS``."""
    return _prepare("linear", _FUSED, a, w, c, bias=bias, activation=activation)
