"""The Triton peers of the gemm_family suite, written for Triton 3.6 on Hopper: the gated MLP's dual GEMM,
a GEMM with A's row sums, a batched GEMM and a linear layer with bias and activation.

Two persistent kernels (one program per SM looping over output tiles in groups of ``GROUP_M`` tile rows),
loading and storing through TMA tensor descriptors made on the device (``tl.make_tensor_descriptor``),
fp32 accumulation, the epilogue math in fp32 registers before the cast and the TMA store:

* ``_fused_matmul_kernel``: ``C[b] = act(A[b] @ B[b]ᵀ + bias)`` and, with ``ROW_SUMS``, ``y = A.sum(1)``
  summed from the A tiles already loaded for the product (the program of the first tile column stores
  it). A batch is flattened into rows: A (batch·M, K), B (batch·N, K), C (batch·M, N).
* ``_gated_mlp_kernel``: ``C = silu(A @ W1ᵀ) * (A @ W2ᵀ)``, both products per tile in two accumulators
  from one load of each A tile, SiLU (``x·sigmoid(x)``) and the product in the epilogue.

B operands are **K-major**: (N, K) row-major, as a linear layer stores its weight and as Triton's Hopper
matmul reads best (``tl.dot(a, b.T)``). Preconditions, checked by the ``prepare_*`` functions: M and N
multiples of 256 (no tile crosses a batch or needs a mask), K a multiple of 64, every tensor contiguous.

Each kernel is autotuned over its ``*_CONFIGS`` rows ``(BLOCK_M, BLOCK_N, num_stages, num_warps,
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

# One fp32 accumulator (128x128 with 4 warps, or 128x256 / 256x128 with 8, 128 registers a thread), as the
# GEMM peer's table; 3 stages of the large tiles (48 KiB each) plus the C tile of the TMA store fit the
# 227 KiB of shared memory. With warp specialization the two consumer warp groups split the tile's rows.
# GELU's erf needs more registers than 128x256 leaves (ptxas spills in the epilogue): the autotuner, which
# times every row, decides whether that still pays.
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
def _fused_matmul_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, rows_ptr, M, N, K, BATCH, NUM_SMS: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                         GROUP_M: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, FLATTEN: tl.constexpr,
                         ACTIVATION: tl.constexpr, HAS_BIAS: tl.constexpr, ROW_SUMS: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[BATCH * M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[BATCH * N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[BATCH * M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    per_batch = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    start = tl.program_id(0)
    tile_c = start - NUM_SMS        # the epilogue's own tile counter, as in the GEMM peer
    for tile in tl.range(start, BATCH * per_batch, NUM_SMS, flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = tile_coords(tile % per_batch, num_pid_m, num_pid_n, GROUP_M)
        a_row = (tile // per_batch) * M + pid_m * BLOCK_M
        b_row = (tile // per_batch) * N + pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        rows = tl.zeros((BLOCK_M,), dtype=tl.float32)
        for kt in range(k_tiles):
            a = a_desc.load([a_row, kt * BLOCK_K])
            acc = tl.dot(a, b_desc.load([b_row, kt * BLOCK_K]).T, acc)
            if ROW_SUMS:
                rows += tl.sum(a.to(tl.float32), axis=1)
        tile_c += NUM_SMS
        pid_m, pid_n = tile_coords(tile_c % per_batch, num_pid_m, num_pid_n, GROUP_M)
        c_row = (tile_c // per_batch) * M + pid_m * BLOCK_M
        if HAS_BIAS:
            acc += tl.load(bias_ptr + pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.float32)[None, :]
        c_desc.store([c_row, pid_n * BLOCK_N], _activate(acc, ACTIVATION).to(c_ptr.dtype.element_ty))
        if ROW_SUMS:
            if pid_n == 0:
                tl.store(rows_ptr + c_row + tl.arange(0, BLOCK_M), rows)


@triton.jit
def _gated_mlp_kernel(a_ptr, w1_ptr, w2_ptr, c_ptr, M, N, K, NUM_SMS: tl.constexpr,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, FLATTEN: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    w1_desc = tl.make_tensor_descriptor(w1_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    w2_desc = tl.make_tensor_descriptor(w2_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    start = tl.program_id(0)
    tile_c = start - NUM_SMS
    for tile in tl.range(start, num_pid_m * num_pid_n, NUM_SMS, flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        gate = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        up = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, kt * BLOCK_K])
            gate = tl.dot(a, w1_desc.load([pid_n * BLOCK_N, kt * BLOCK_K]).T, gate)
            up = tl.dot(a, w2_desc.load([pid_n * BLOCK_N, kt * BLOCK_K]).T, up)
        tile_c += NUM_SMS
        pid_m, pid_n = tile_coords(tile_c, num_pid_m, num_pid_n, GROUP_M)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], (gate * tl.sigmoid(gate) * up).to(c_ptr.dtype.element_ty))


def _autotuned(kernel, table, key, **constants):
    return {"tma-persistent": triton.autotune(configs(table, True, **constants), key=key)(kernel),
            "tma-persistent-nows": triton.autotune(configs(table, False, **constants), key=key)(kernel)}


_FUSED_KEY = ["M", "N", "K", "BATCH", "ACTIVATION", "HAS_BIAS", "ROW_SUMS"]
_FUSED = _autotuned(_fused_matmul_kernel, FUSED_CONFIGS, _FUSED_KEY)
_ROWSUM = _autotuned(_fused_matmul_kernel, ROWSUM_CONFIGS, _FUSED_KEY, FLATTEN=False)
_GATED = _autotuned(_gated_mlp_kernel, GATED_CONFIGS, ["M", "N", "K"])
_broken: dict[tuple, dict[str, str]] = {}   # (kernel, constants) -> {variant: why it failed}, across shapes


def _persistent_grid(sms: int, batch: int, M: int, N: int):
    return lambda meta: (min(sms, batch * triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])),)


def _launch_fused(kernel, a, b, c, bias, rows, batch, activation, *, M, N, K, sms):
    has_bias, row_sums = bias is not None, rows is not None
    kernel[_persistent_grid(sms, batch, M, N)](
        a, b, c, bias if has_bias else c, rows if row_sums else c, M, N, K, batch, NUM_SMS=sms,
        ACTIVATION=activation, HAS_BIAS=has_bias, ROW_SUMS=row_sums)


def _launch_gated(kernel, a, w1, w2, c, *, M, N, K, sms):
    kernel[_persistent_grid(sms, 1, M, N)](a, w1, w2, c, M, N, K, NUM_SMS=sms)


def _check(M: int, N: int, K: int, tensors) -> None:
    if M % 256 or N % 256 or K % BLOCK_K:
        raise ValueError(f"M and N must be multiples of 256 and K of {BLOCK_K}, got {M}x{N}x{K}")
    if not all(t.is_contiguous() for t in tensors):
        raise ValueError("every operand must be contiguous")


def _prepare_fused(a, b_nk, c, *, bias=None, rows=None, activation="none") -> tuple[Callable[[], None], dict]:
    batch = a.shape[0] if a.dim() == 3 else 1
    M, K = a.shape[-2:]
    N = b_nk.shape[-2]
    if b_nk.shape[-1] != K or tuple(c.shape[-2:]) != (M, N) or (a.dim() == 3 and b_nk.shape[0] != batch):
        raise ValueError(f"shapes do not match: a {tuple(a.shape)}, b (N, K) {tuple(b_nk.shape)}, c {tuple(c.shape)}")
    if activation not in ACTIVATIONS:
        raise ValueError(f"activation={activation!r}: choose from {ACTIVATIONS}")
    if bias is not None and tuple(bias.shape) != (N,) or rows is not None and tuple(rows.shape) != (M,):
        raise ValueError(f"bias must be ({N},) and the row sums ({M},)")
    _check(M, N, K, [t for t in (a, b_nk, c, bias, rows) if t is not None])
    kernels = _ROWSUM if rows is not None else _FUSED
    variants = {name: (partial(_launch_fused, kernel, M=M, N=N, K=K, sms=num_sms(a)), kernel)
                for name, kernel in kernels.items()}
    broken = _broken.setdefault(("fused", activation, bias is not None, rows is not None), {})
    return first_variant_that_runs(variants, (a, b_nk, c, bias, rows, batch, activation), broken,
                                   b_layout="NK (K-major)")


def prepare_rowsum(a, b_nk, c, rows):
    """``c = a @ b_nk.T`` and ``rows = a.sum(1)`` (float32), in one kernel; returns ``(call, info)``."""
    return _prepare_fused(a, b_nk, c, rows=rows)


def prepare_batched(a, b_nk, c):
    """``c[i] = a[i] @ b_nk[i].T`` for a (batch, M, K), b_nk (batch, N, K), c (batch, M, N)."""
    return _prepare_fused(a, b_nk, c)


def prepare_linear(a, w, bias, c, activation: str):
    """``c = act(a @ w.T + bias)`` with w (N, K) and bias (N,), activation one of ``ACTIVATIONS``."""
    return _prepare_fused(a, w, c, bias=bias, activation=activation)


def prepare_gated_mlp(a, w1_nk, w2_nk, c):
    """``c = silu(a @ w1_nk.T) * (a @ w2_nk.T)`` with both weights (N, K); returns ``(call, info)``."""
    M, K = a.shape
    N = w1_nk.shape[0]
    if tuple(w1_nk.shape) != (N, K) or tuple(w2_nk.shape) != (N, K) or tuple(c.shape) != (M, N):
        raise ValueError(f"shapes do not match: a {tuple(a.shape)}, w1 {tuple(w1_nk.shape)}, "
                         f"w2 {tuple(w2_nk.shape)}, c {tuple(c.shape)}")
    _check(M, N, K, (a, w1_nk, w2_nk, c))
    variants = {name: (partial(_launch_gated, kernel, M=M, N=N, K=K, sms=num_sms(a)), kernel)
                for name, kernel in _GATED.items()}
    return first_variant_that_runs(variants, (a, w1_nk, w2_nk, c), _broken.setdefault(("gated",), {}),
                                   w_layout="NK (K-major)")
