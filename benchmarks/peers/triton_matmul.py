"""The Triton peer of the GEMM suite: ``C = A @ B`` for fp16/bf16, written for Triton 3.6 on Hopper.

Layouts: ``A`` is (M, K) row-major; ``B`` is given **K-major**, as an (N, K)
row-major tensor (``B^T`` contiguous), the layout Triton's own Hopper
tutorial uses; ``C`` is (M, N) row-major and written in place.

Variants, tried in this order; the first that compiles and runs is used, and
the ones skipped are recorded with their error:

* ``tma-persistent``: a persistent kernel (one program per SM looping over
  output tiles, grouped for L2 reuse) that loads and stores through TMA tensor
  descriptors made on the device (``tl.make_tensor_descriptor``, whose
  descriptor scratch comes from ``triton.set_allocator``): the plain case of
  :func:`benchmarks.peers.triton_gemm_family.fused_matmul_kernel`, autotuned over
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

from .triton_common import BLOCK_K, configs, first_variant_that_runs, tile_coords
from .triton_gemm_family import fused_matmul_kernel, launch

# (BLOCK_M, BLOCK_N, num_stages, num_warps, warp_specialize); BLOCK_K is 64. Triton 3.6 warp-specializes
# on Hopper only with num_warps=4 (it then adds a producer and a second consumer warpgroup: 12 warps; with
# 8 it silently does not specialize). Without it, 128x256 and 256x128 tiles need 8 warps to hold their
# fp32 accumulator without spilling. 3 stages of those tiles fit the 227 KiB of shared memory.
CONFIGS = ((128, 128, 4, 4, True), (128, 256, 3, 4, True), (256, 128, 3, 4, True),
           (128, 128, 4, 4, False), (128, 128, 4, 8, False), (128, 256, 3, 8, False), (256, 128, 3, 8, False))

_tma_ws = triton.autotune(configs(CONFIGS, True), key=["M", "N", "K"])(fused_matmul_kernel)
_tma_nows = triton.autotune(configs(CONFIGS, False), key=["M", "N", "K"])(fused_matmul_kernel)


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
    return lambda a, b_nk, c: launch(kernel, a, b_nk, c)


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
