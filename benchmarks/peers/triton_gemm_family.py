"""The Triton peers of the gemm_family suite, written for Triton 3.6 on Hopper: the gated MLP's dual GEMM,
a GEMM with A's row sums, a batched GEMM and a linear layer with bias and activation; also the kernel of
the gemm suite's Triton peer (:mod:`benchmarks.peers.triton_matmul`), which is its plain case.

One persistent kernel, ``fused_matmul_kernel`` (one program per SM looping over output tiles in groups of
``GROUP_M`` tile rows), loading and storing through TMA tensor descriptors made on the device
(``tl.make_tensor_descriptor``), accumulating in fp32, the epilogue math in fp32 registers before the cast
and the TMA store. Its constants pick the operation:

* ``GATED``: B is ``W12``, the two weights interleaved row by row (``W12[2n] = W1ᵀ[n]``,
  ``W12[2n+1] = W2ᵀ[n]``, made once by :func:`prepare_gated_mlp`), so one product ``A @ W12ᵀ`` of
  2·BLOCK_N columns gives both: the epilogue splits its column pairs into ``gate`` and ``up`` and stores
  ``act(gate) * up``. The dual GEMM is ``silu(A @ W1) * (A @ W2)``: ``GATED`` with ``ACTIVATION="silu"``.
* ``HAS_BIAS``, ``ACTIVATION`` (none, relu, gelu with erf, silu): ``act(acc + bias)`` in the epilogue.
* ``ROW_SUMS``: B carries one more row, of ones (made by :func:`prepare_rowsum`), and the grid one more
  column of tiles, whose product's first column is ``y = A.sum(1)`` (the tensor cores sum the rows); that
  tile's C store lies wholly past N, which TMA clips, and it stores y instead.
* ``BATCH``: a batch is flattened into rows, A (batch·M, K), B (batch·N, K), C (batch·M, N).

Every TMA-loaded tile feeds exactly one ``tl.dot``, as in the plain GEMM and the batched and linear
peers, which check correct. The first version gave A's tile a second consumer (a second ``tl.dot`` into a
second accumulator for the dual GEMM, ``tl.sum`` of its registers for the row sums) and was wrong on an
H100: 14,464 NaN (unwritten or non-finite) outputs of the dual GEMM, error 0.34 in the row sums' run,
different from run to run and dtype to dtype, as a race would be. Triton's software pipeliner sizes a
loaded tile's shared-memory ring for one wgmma user (one more slot while the asynchronous wgmma still
reads it); a load with a second user is known to get too few slots, so the TMA refill overwrites a slot
being read (triton-lang/triton#6691 and #7110: a wgmma and a non-wgmma user; #8554: two wgmma users).
The hardware was not available to confirm which path the H100 run took; the rewrite removes both.

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

# BLOCK_N is the width of the C tile; the product behind it is 2·BLOCK_N wide (gate and up columns
# interleaved), so 128 here is the plain GEMM's 128 x 256 tile (3 stages of 48 KiB) and 64 its 128 x 128.
# No warp-specialized rows: Triton 3.6's NVGPUWarpSpecialization pass fails on this kernel (both rows that
# asked for it, 128 x 128 x 3 stages and 128 x 64 x 4, compiled for sm_90 on the GPU machine, 2026-11-26).
GATED_CONFIGS = ((128, 128, 3, 8, False), (128, 64, 4, 8, False), (128, 64, 4, 4, False))

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
def fused_matmul_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, rows_ptr, M, N, K, BATCH, NUM_SMS: tl.constexpr,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                        WARP_SPECIALIZE: tl.constexpr, FLATTEN: tl.constexpr, ACTIVATION: tl.constexpr = "none",
                        HAS_BIAS: tl.constexpr = False, ROW_SUMS: tl.constexpr = False, GATED: tl.constexpr = False):
    """``C[b] = act(A[b] @ B[b]ᵀ + bias)``; GATED: ``act(A @ W1ᵀ) * (A @ W2ᵀ)`` from B = W12 (2N, K), the
    weights interleaved by rows; ROW_SUMS: also ``y = A.sum(1)`` from B's extra row of ones (N + 1, K).
    A (BATCH·M, K), B (BATCH·N, K) otherwise, C (BATCH·M, N), bias (N,), y (M,)."""
    B_ROWS: tl.constexpr = 2 if GATED else 1     # rows of B behind each column of C
    b_rows = BATCH * N * B_ROWS
    if ROW_SUMS:
        b_rows += 1
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[BATCH * M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[b_rows, K], strides=[K, 1],
                                       block_shape=[B_ROWS * BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[BATCH * M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    if ROW_SUMS:
        num_pid_n += 1                           # the column of tiles that multiplies by the ones row
    per_batch = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    start = tl.program_id(0)
    # A second tile counter for the epilogue keeps the prologue and epilogue independent
    # (as Triton's persistent-matmul tutorial does, for its pipeliner).
    tile_c = start - NUM_SMS
    for tile in tl.range(start, BATCH * per_batch, NUM_SMS, flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = tile_coords(tile % per_batch, num_pid_m, num_pid_n, GROUP_M)
        a_row = (tile // per_batch) * M + pid_m * BLOCK_M
        b_row = ((tile // per_batch) * N + pid_n * BLOCK_N) * B_ROWS
        acc = tl.zeros((BLOCK_M, B_ROWS * BLOCK_N), dtype=tl.float32)
        for kt in range(k_tiles):
            acc = tl.dot(a_desc.load([a_row, kt * BLOCK_K]), b_desc.load([b_row, kt * BLOCK_K]).T, acc)
        tile_c += NUM_SMS
        pid_m, pid_n = tile_coords(tile_c % per_batch, num_pid_m, num_pid_n, GROUP_M)
        c_row = (tile_c // per_batch) * M + pid_m * BLOCK_M
        if ROW_SUMS:
            if pid_n == num_pid_n - 1:
                first_column = tl.arange(0, BLOCK_N)[None, :] == 0
                tl.store(rows_ptr + c_row + tl.arange(0, BLOCK_M), tl.sum(tl.where(first_column, acc, 0.0), axis=1))
        if GATED:
            gate, up = acc.reshape(BLOCK_M, BLOCK_N, 2).split()
            out = _activate(gate, ACTIVATION) * up
        else:
            if HAS_BIAS:
                acc += tl.load(bias_ptr + pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.float32)[None, :]
            out = _activate(acc, ACTIVATION)
        c_desc.store([c_row, pid_n * BLOCK_N], out.to(c_ptr.dtype.element_ty))


# The grouped GEMM's tile table is made for 128-row tiles, so every row keeps BLOCK_M = 128. No warp-specialized
# configs: on an H100 with Triton 3.6 the autotuner picked (128, 256, 3 stages, 4 warps, warp_specialize=True),
# which computed wrong results (relative error 0.7, 66M non-finite values), and the suite reported a wrong peer.
GROUPED_CONFIGS = ((128, 128, 4, 8, False), (128, 256, 3, 8, False))
GROUPED_BLOCK_M = 128


@triton.jit
def grouped_matmul_kernel(a_ptr, b_ptr, c_ptr, tiles_ptr, M, N, K, GROUPS, TILES, NUM_SMS: tl.constexpr,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                          WARP_SPECIALIZE: tl.constexpr, FLATTEN: tl.constexpr):
    """A grouped GEMM: the rows of A (M, K) and C (M, N) are groups one after another; row tile ``t`` of
    the table (``TILES`` rows of (group, first row, end row), int32) is C[first:end] = A[first:end] @ B[group]
    for its columns, with B given K-major as (GROUPS, N, K). A is loaded by TMA (rows past the group's end
    feed only rows that are not stored); C is stored with a row mask at the group's end."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[GROUPS * N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile in tl.range(tl.program_id(0), TILES * num_pid_n, NUM_SMS, flatten=FLATTEN,
                         warp_specialize=WARP_SPECIALIZE):
        t, pid_n = tile_coords(tile, TILES, num_pid_n, GROUP_M)
        group = tl.load(tiles_ptr + 3 * t)
        first = tl.load(tiles_ptr + 3 * t + 1)
        end = tl.load(tiles_ptr + 3 * t + 2)
        b_row = group * N + pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(k_tiles):
            acc = tl.dot(a_desc.load([first, kt * BLOCK_K]), b_desc.load([b_row, kt * BLOCK_K]).T, acc)
        rows = first + tl.arange(0, BLOCK_M)
        cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc.to(c_ptr.dtype.element_ty),
                 mask=(rows < end)[:, None] & (cols < N)[None, :])


def _autotuned(kernel, table, key, **constants):
    return {"tma-persistent": triton.autotune(configs(table, True, **constants), key=key)(kernel),
            "tma-persistent-nows": triton.autotune(configs(table, False, **constants), key=key)(kernel)}


_KEY = ["M", "N", "K", "BATCH", "ACTIVATION", "HAS_BIAS", "ROW_SUMS", "GATED"]
_FUSED = _autotuned(fused_matmul_kernel, FUSED_CONFIGS, _KEY)
_GATED = _autotuned(fused_matmul_kernel, GATED_CONFIGS, _KEY)
_broken: dict[tuple, dict[str, str]] = {}   # (operation, activation) -> {variant: why it failed}, across shapes


def launch(kernel, a, b, c, *, bias=None, rows=None, gated: bool = False, activation: str = "none") -> None:
    """One call of ``fused_matmul_kernel`` (through an autotuner) on 2-D or batched 3-D operands, one
    program per SM. ``b`` is as the operation reads it: (N, K), W12 (2N, K) when ``gated``, B with its
    ones row (N + 1, K) when ``rows`` is given."""
    batch = a.shape[0] if a.dim() == 3 else 1
    M, K = a.shape[-2:]
    N = c.shape[-1]
    sms = num_sms(a)
    tiles = lambda meta: triton.cdiv(M, meta["BLOCK_M"]) * (triton.cdiv(N, meta["BLOCK_N"]) + (rows is not None))
    grid = lambda meta: (min(sms, batch * tiles(meta)),)
    unused = c      # stands in for the pointers the operation does not read
    kernel[grid](a, b, c, unused if bias is None else bias, unused if rows is None else rows, M, N, K, batch,
                 NUM_SMS=sms, ACTIVATION=activation, HAS_BIAS=bias is not None, ROW_SUMS=rows is not None,
                 GATED=gated)


def _prepare(operation: str, kernels, a, b_nk, c, *, b2_nk=None, bias=None, rows=None,
             activation: str = "none") -> tuple[Callable[[], None], dict]:
    import torch

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
    b = b_nk
    if b2_nk is not None:      # W12: row 2n is W1's row n, row 2n+1 W2's
        b = torch.stack((b_nk, b2_nk), dim=-2).reshape(lead + (2 * N, K))
    if rows is not None:       # one more row, of ones: its column of C is A's row sums
        b = torch.cat((b_nk, torch.ones((1, K), dtype=b_nk.dtype, device=b_nk.device)))
    extras = dict(activation=activation, bias=bias, rows=rows, gated=b2_nk is not None)
    variants = {name: (partial(launch, kernel, **extras), kernel) for name, kernel in kernels.items()}
    broken = _broken.setdefault((operation, activation), {})
    layout = {"b_layout": "NK (K-major)"}
    if b2_nk is not None:
        layout["b_prepared"] = "W12 (2N, K): W1 and W2 interleaved by rows, made before timing"
    if rows is not None:
        layout["b_prepared"] = "B (N + 1, K) with a row of ones, made before timing"
    return first_variant_that_runs(variants, (a, b, c), broken, **layout)


_GROUPED = _autotuned(grouped_matmul_kernel, GROUPED_CONFIGS, ["M", "N", "K", "GROUPS"])


def prepare_grouped(a, b_nk, c, group_sizes):
    """``c[rows of g] = a[rows of g] @ b_nk[g].T`` for a (M, K), b_nk (groups, N, K), c (M, N), the rows of
    group g ``group_sizes[g]`` (any, 0 included); the tile table is made before timing."""
    import torch

    from nvdsl.kernels.gemm import row_tile_table

    M, K = a.shape
    groups, N = b_nk.shape[:2]
    if tuple(b_nk.shape) != (groups, N, K) or tuple(c.shape) != (M, N) or len(group_sizes) != groups or \
            sum(group_sizes) != M:
        raise ValueError(f"a {tuple(a.shape)}, b {tuple(b_nk.shape)}, c {tuple(c.shape)} and {len(group_sizes)} "
                         f"group sizes summing to {sum(group_sizes)} do not make a grouped GEMM")
    if N % 256 or K % BLOCK_K or not all(t.is_contiguous() for t in (a, b_nk, c)):
        raise ValueError(f"N must be a multiple of 256 and K of {BLOCK_K}, every operand contiguous")
    table = row_tile_table(group_sizes, GROUPED_BLOCK_M)
    tiles = int((table[:, 1] < table[:, 2]).sum())           # the listed tiles come first; no empty ones
    table = torch.from_numpy(table).to(a.device)
    sms = num_sms(a)

    def launch_grouped(kernel, a, b_nk, c):
        grid = lambda meta: (min(sms, tiles * triton.cdiv(N, meta["BLOCK_N"])),)
        kernel[grid](a, b_nk, c, table, M, N, K, groups, tiles, NUM_SMS=sms)

    variants = {name: (partial(launch_grouped, kernel), kernel) for name, kernel in _GROUPED.items()}
    return first_variant_that_runs(variants, (a, b_nk, c), _broken.setdefault(("grouped", "none"), {}),
                                   b_layout="(groups, N, K) (K-major)", table="row tiles of 128, made before timing")


def prepare_gated_mlp(a, w1_nk, w2_nk, c):
    """``c = silu(a @ w1_nk.T) * (a @ w2_nk.T)`` with both weights (N, K); returns ``(call, info)``."""
    return _prepare("gated", _GATED, a, w1_nk, c, b2_nk=w2_nk, activation="silu")


def prepare_rowsum(a, b_nk, c, rows):
    """``c = a @ b_nk.T`` and ``rows = a.sum(1)`` (float32), in one kernel."""
    return _prepare("rowsum", _FUSED, a, b_nk, c, rows=rows)


def prepare_batched(a, b_nk, c):
    """``c[i] = a[i] @ b_nk[i].T`` for a (batch, M, K), b_nk (batch, N, K), c (batch, M, N)."""
    return _prepare("batched", _FUSED, a, b_nk, c)


def prepare_linear(a, w, bias, c, activation: str):
    """``c = act(a @ w.T + bias)`` with w (N, K) and bias (N,), activation one of ``ACTIVATIONS``."""
    return _prepare("linear", _FUSED, a, w, c, bias=bias, activation=activation)
