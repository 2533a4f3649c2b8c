"""The Triton peer of the GEMM suite: ``C = A @ B`` for fp16/bf16, written for Triton 3.6 on Hopper.

Layouts: ``A`` is (M, K) row-major; ``B`` is given **K-major**, as an (N, K)
row-major tensor (``B^T`` contiguous), the layout Triton's own Hopper
tutorial uses; ``C`` is (M, N) row-major and written in place.

Variants, tried in this order; the first that compiles and runs is used, and
the ones skipped are recorded with their error:

* ``tma-persistent``: a persistent kernel (one program per SM looping over
  output tiles, grouped for L2 reuse) that loads and stores through TMA tensor
  descriptors made on the device (``tl.make_tensor_descriptor``, whose
  descriptor scratch comes from ``triton.set_allocator``), autotuned over
  seven configs (see ``CONFIGS``): three with warp specialization
  (``tl.range(..., warp_specialize=True)``, which on Hopper needs
  ``flatten=False`` and ``num_warps=4``) and four without.
* ``tma-persistent-nows``: the same kernel with warp specialization off.
* ``pointer``: a plain non-persistent kernel with pointer loads (Triton
  pipelines them with cp.async), the fallback where descriptors fail.

All shapes must be multiples of the largest tile (256) in M and N and of 64 in K.
"""

from __future__ import annotations

from typing import Callable

import triton
import triton.language as tl

from .triton_common import BLOCK_K, configs, first_variant_that_runs, num_sms, tile_coords

# (BLOCK_M, BLOCK_N, num_stages, num_warps, warp_specialize); BLOCK_K is 64. Triton 3.6 warp-specializes
# on Hopper only with num_warps=4 (it then adds a producer and a second consumer warpgroup: 12 warps; with
# 8 it silently does not specialize). Without it, 128x256 and 256x128 tiles need 8 warps to hold their
# fp32 accumulator without spilling. 3 stages of those tiles fit the 227 KiB of shared memory.
CONFIGS = ((128, 128, 4, 4, True), (128, 256, 3, 4, True), (256, 128, 3, 4, True),
           (128, 128, 4, 4, False), (128, 128, 4, 8, False), (128, 256, 3, 8, False), (256, 128, 3, 8, False))
@triton.jit
def _tma_persistent_kernel(a_ptr, b_ptr, c_ptr, M, N, K, NUM_SMS: tl.constexpr,
                           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, FLATTEN: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_M, BLOCK_N])
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    start = tl.program_id(0)
    # A second tile counter for the epilogue keeps the prologue and epilogue independent
    # (as Triton's persistent-matmul tutorial does, for its pipeliner).
    tile_c = start - NUM_SMS
    for tile in tl.range(start, num_pid_m * num_pid_n, NUM_SMS, flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(k_tiles):
            a = a_desc.load([pid_m * BLOCK_M, kt * BLOCK_K])
            b = b_desc.load([pid_n * BLOCK_N, kt * BLOCK_K])
            acc = tl.dot(a, b.T, acc)
        tile_c += NUM_SMS
        pid_m, pid_n = tile_coords(tile_c, num_pid_m, num_pid_n, GROUP_M)
        c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_ptr.dtype.element_ty))


_tma_ws = triton.autotune(configs(CONFIGS, True), key=["M", "N", "K"])(_tma_persistent_kernel)
_tma_nows = triton.autotune(configs(CONFIGS, False), key=["M", "N", "K"])(_tma_persistent_kernel)


@triton.autotune(configs(CONFIGS, False), key=["M", "N", "K"])
@triton.jit
def _pointer_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_M: tl.constexpr, WARP_SPECIALIZE: tl.constexpr, FLATTEN: tl.constexpr):
    pid_m, pid_n = tile_coords(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_n[None, :] * K + offs_k[:, None]  # B is (N, K): a (BLOCK_K, BLOCK_N) tile
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(tl.cdiv(K, BLOCK_K)):
        acc = tl.dot(tl.load(a_ptrs), tl.load(b_ptrs), acc)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(c_ptr.dtype.element_ty))


def _persistent(kernel) -> Callable:
    def launch(a, b_nk, c):
        M, K = a.shape
        N = b_nk.shape[0]
        sms = num_sms(a)
        grid = lambda meta: (min(sms, triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"])),)
        kernel[grid](a, b_nk, c, M, N, K, NUM_SMS=sms)
    return launch


def _pointer(a, b_nk, c):
    M, K = a.shape
    N = b_nk.shape[0]
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    _pointer_kernel[grid](a, b_nk, c, M, N, K)


VARIANTS = {"tma-persistent": (_persistent(_tma_ws), _tma_ws),
            "tma-persistent-nows": (_persistent(_tma_nows), _tma_nows),
            "pointer": (_pointer, _pointer_kernel)}
_broken: dict[str, str] = {}  # variant -> why it failed, remembered across shapes


def prepare(a, b_nk, c) -> tuple[Callable[[], None], dict]:
    """Pick the first variant that compiles, autotunes and runs on these operands.

    Returns ``(call, info)``: ``call()`` computes ``c = a @ b_nk.T`` on the
    current stream; ``info`` names the variant, the autotuned config, and why
    any earlier variant was skipped.
    """
    M, K = a.shape
    N = b_nk.shape[0]
    if b_nk.shape[1] != K or tuple(c.shape) != (M, N):
        raise ValueError(f"shapes do not match: a {tuple(a.shape)}, b (N,K) {tuple(b_nk.shape)}, c {tuple(c.shape)}")
    if M % 256 or N % 256 or K % BLOCK_K:
        raise ValueError(f"M and N must be multiples of 256 and K of {BLOCK_K}, got {M}x{N}x{K}")
    if not all(t.is_contiguous() for t in (a, b_nk, c)):
        raise ValueError("a, b and c must be contiguous")
    return first_variant_that_runs(VARIANTS, (a, b_nk, c), _broken, b_layout="NK (K-major)")
