"""The Triton peers of the rowwise suite: a softmax and an RMSNorm over the rows of a 2-D array, one program
per row, walking the row in blocks of ``BLOCK`` columns (masked past N), in float32.

* ``softmax_kernel``: pass 1 keeps the running max and the rescaled sum (an online softmax), pass 2 re-reads
  the row and writes ``exp(x - max) / sum``.
* ``rms_norm_kernel``: pass 1 sums the squares, pass 2 writes ``x * rsqrt(mean + eps) * w``.

Imports Triton but not torch, so the kernels compile for sm_90a without a GPU (``tests/test_benchmarks.py``).
"""

from __future__ import annotations

import triton
import triton.language as tl

BLOCK = 1024
NUM_WARPS = 4


@triton.jit
def softmax_kernel(y_ptr, x_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row, y_row = x_ptr + row * N, y_ptr + row * N
    m = tl.full((BLOCK,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    row_max = tl.max(m, 0)
    total = tl.sum(s * tl.exp(m - row_max), 0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        tl.store(y_row + cols, (tl.exp(x - row_max) / total).to(y_ptr.dtype.element_ty), mask=cols < N)


@triton.jit
def rms_norm_kernel(y_ptr, x_ptr, w_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row, y_row = x_ptr + row * N, y_ptr + row * N
    squares = tl.zeros((BLOCK,), tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        squares += x * x
    r = tl.rsqrt(tl.sum(squares, 0) / N + eps)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        tl.store(y_row + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=cols < N)


def softmax(x, y):
    """``y = softmax(x)`` along rows; x, y contiguous (M, N) CUDA tensors."""
    M, N = x.shape
    softmax_kernel[(M,)](y, x, N, BLOCK=BLOCK, num_warps=NUM_WARPS)


def rms_norm(x, w, y, eps: float):
    """``y = x * rsqrt(mean(x^2) + eps) * w`` along rows; x, y (M, N), w (N,), contiguous CUDA tensors."""
    M, N = x.shape
    rms_norm_kernel[(M,)](y, x, w, N, eps, BLOCK=BLOCK, num_warps=NUM_WARPS)
