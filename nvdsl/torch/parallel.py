"""Tensor parallelism with nvdsl's ops over ``torch.distributed`` (Megatron's split of a transformer MLP), for any
number of ranks, one GPU each.

    y = row_parallel_gemm(column_parallel_linear(x, w1_shard, b1_shard, "gelu"), w2_shard)

* :func:`column_parallel_linear`: each rank holds ``F / P`` rows of the first weight (``w1`` (F, K) split along F)
  and its bias's share; every rank has the whole input ``x``; its output is that rank's columns of the hidden
  layer. The backward all-reduces ``dx`` (each rank's share of it comes from its own columns).
* :func:`row_parallel_gemm`: each rank holds ``F / P`` rows of the second weight (``w2`` (F, N)) and multiplies its
  hidden columns by them; the partial products are all-reduced (summed) into the output, the same on every rank.

The all-reduces run on torch's current stream (NCCL's) after nvdsl's kernels on the same stream; nothing else
synchronises. ``group`` is the process group (default: the world).
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from .library import gemm, linear


class _ReduceBackward(torch.autograd.Function):
    """The identity forward; the gradient summed over the ranks in the backward."""

    @staticmethod
    def forward(ctx, x, group):
        ctx.group = group
        return x.view_as(x)

    @staticmethod
    def backward(ctx, dx):
        dx = dx.contiguous()
        dist.all_reduce(dx, group=ctx.group)
        return dx, None


class _ReduceForward(torch.autograd.Function):
    """The sum over the ranks in the forward; the identity backward (every rank gets the whole gradient)."""

    @staticmethod
    def forward(ctx, x, group):
        x = x.contiguous().clone()
        dist.all_reduce(x, group=group)
        return x

    @staticmethod
    def backward(ctx, dy):
        return dy, None


def column_parallel_linear(x, w_shard, bias_shard=None, activation=None, group=None):
    """This rank's columns of ``act(x @ w.T + bias)``: ``w_shard`` its rows of ``w`` (F / P, K), ``bias_shard`` its
    share of the bias; ``x`` (..., K), whole on every rank. Differentiable; ``dx`` is summed over the ranks."""
    return linear(_ReduceBackward.apply(x, group), w_shard, bias_shard, activation)


def row_parallel_gemm(h_shard, w_shard, group=None):
    """``h @ w`` summed over the ranks: ``h_shard`` this rank's columns of ``h`` (M, F / P), ``w_shard`` its rows of
    ``w`` (F / P, N). The result, whole, is on every rank: each rank's partial product rounded to the inputs' dtype,
then summed by the all-reduce. Differentiable."""
    partial = gemm(h_shard.reshape(-1, h_shard.shape[-1]), w_shard)
    return _ReduceForward.apply(partial.reshape(*h_shard.shape[:-1], w_shard.shape[1]), group)
