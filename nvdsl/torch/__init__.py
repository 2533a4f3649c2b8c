"""nvdsl inside PyTorch (needs ``pip install nvdsl[torch]``; ``import nvdsl`` never imports torch).

* :func:`custom_op` registers any ``@nvdsl.mlir_func`` or task kernel as a ``torch.library.custom_op``.
* :func:`gemm` and :func:`linear` are the library's GEMM and linear layer as functional torch ops with autograd
  and fake implementations: ``torch.compile(fullgraph=True)`` traces through them, forward and backward;
  :func:`activation_grad` is linear's fused activation backward. :func:`attention` is the library's attention with
  its backward (``attention_with_lse`` also returns the log-sum-exp); :func:`attention_varlen` its packed-sequence
  form (FlashAttention's varlen convention), with its backward, and :func:`attention_decode` a decode step against
  a KV cache.

On CUDA tensors they run on the GPU, on torch's current stream; on CPU tensors, in nvdsl's interpreter.
"""

from .library import (ACTIVATIONS, activation_grad, attention, attention_decode, attention_varlen,
                      attention_varlen_with_lse, attention_with_lse, gemm, linear)
from .ops import custom_op

__all__ = ["ACTIVATIONS", "activation_grad", "attention", "attention_decode", "attention_varlen",
           "attention_varlen_with_lse", "attention_with_lse", "custom_op", "gemm", "linear"]
