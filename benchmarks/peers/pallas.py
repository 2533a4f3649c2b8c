"""JAX Pallas Mosaic GPU peers: the Hopper matmul and the FlashAttention-3-style attention of
``jax.experimental.pallas.ops.gpu``.

Their signatures have changed across JAX releases (``matmul_kernel(a, b,
config)``, ``matmul(a, b, config)``, ``matmul(a, b, c, config)``; the
``TuningConfig`` fields grow), so both are looked up and bound at run time
with :mod:`inspect`: unknown ``TuningConfig`` fields are dropped, an optional
``c`` operand gets ``None``, and the chosen function, signature and config are
recorded with each measurement.

Inputs come from torch (the same tensors every system gets) through DLPack,
without a copy. JAX runs on its own CUDA stream, which torch's events cannot
bracket, so these peers are timed with the host clock around batches of
back-to-back calls ended by ``block_until_ready``
(:func:`benchmarks.harness.time_wallclock`).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
from typing import Any, Callable

from .. import harness

# Tried per shape; the fastest that compiles is kept. Shared memory (227 KiB) bounds tiles x stages.
MATMUL_CONFIGS = (
    dict(tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=3, epi_tile_m=64, epi_tile_n=64),
    dict(tile_m=128, tile_n=256, tile_k=64, max_concurrent_steps=2, epi_tile_m=64, epi_tile_n=64),
    dict(tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=3, epi_tile_m=64, epi_tile_n=64,
         grid_tile_width=8),
    # clusters of 2 blocks along N sharing A's tiles by TMA multicast (+1-2% at K = 1024 and 4096 on an H100)
    dict(tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=3, epi_tile_m=64, epi_tile_n=64,
         cluster_dimension="N"),
    dict(tile_m=128, tile_n=128, tile_k=64, max_concurrent_steps=3, epi_tile_m=64, epi_tile_n=64,
         grid_tile_width=8, cluster_dimension="N"),
)
# TuningConfig fields given here by name whose values are MatmulDimension members
MATMUL_DIMENSION_FIELDS = ("cluster_dimension", "grid_minor_dim", "wg_dimension")
ATTENTION_CONFIGS = (
    dict(block_q=64, block_kv=128, max_concurrent_steps=2),
    dict(block_q=64, block_kv=64, max_concurrent_steps=4),
)


def import_jax():
    """Import jax without letting it grab most of the GPU memory torch also needs."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import jax
    import jax.numpy as jnp

    if jax.default_backend() != "gpu":
        raise RuntimeError(f"JAX runs on '{jax.default_backend()}', not a GPU (is its CUDA plugin installed?)")
    return jax, jnp


def to_jax(tensor):
    """A torch CUDA tensor as a JAX array on the same memory (DLPack)."""
    import torch

    jax, jnp = import_jax()
    torch.cuda.synchronize()
    errors = []
    for convert in (lambda t: jnp.from_dlpack(t), lambda t: jax.dlpack.from_dlpack(t),
                    lambda t: jax.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t))):
        try:
            return convert(tensor.contiguous())
        except Exception as e:
            errors.append(f"{type(e).__name__}: {e}")
    raise RuntimeError("cannot hand a torch tensor to JAX through DLPack: " + " | ".join(errors))


def to_torch(array):
    """A JAX array as a torch tensor (DLPack), for checking its values."""
    import torch

    array.block_until_ready()
    return torch.from_dlpack(array)


def _block(x):
    return x.block_until_ready()


def _config(cls, wanted: dict) -> tuple[Any, dict]:
    """``cls(**wanted)`` keeping only the fields this JAX version has; returns it and what was dropped."""
    fields = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in wanted.items() if k in fields}), {k: v for k, v in wanted.items()
                                                                      if k not in fields}


def _bind(fn, n_operands: int, config) -> Callable:
    """``fn`` called with the operands first, ``None`` for an addend ``c``, and the config, positionally
    where the signature allows (``custom_vjp`` functions take their static arguments by position)."""
    signature = inspect.signature(fn)
    positional, keywords, pending = [], {}, []
    for p in list(signature.parameters.values())[n_operands:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if "config" in p.name:
            value = config
        elif p.name in ("c", "bias", "out"):
            value = None
        elif p.default is not p.empty:
            pending.append(p.default)  # passed only if a later parameter must be
            continue
        else:
            raise TypeError(f"{fn.__name__}{signature}: don't know what to pass for '{p.name}'")
        if p.kind == p.KEYWORD_ONLY:
            keywords[p.name] = value
        else:
            positional += pending + [value]
            pending = []
    return lambda *operands: fn(*operands, *positional, **keywords)


def _pick(candidates, build, operands) -> tuple[Callable, dict]:
    """Compile each candidate config, time it briefly, keep the fastest that runs."""
    best, tried = None, []
    for wanted in candidates:
        try:
            fn, info = build(wanted)
            samples, _ = harness.time_wallclock(lambda: fn(*operands), _block, warmup=2, reps=3)
            ms = harness.percentile(samples, 50)
            tried.append({"config": wanted, "ms": ms})
            if best is None or ms < best[0]:
                best = (ms, fn, info)
        except Exception as e:
            tried.append({"config": wanted, "error": f"{type(e).__name__}: {str(e)[:300]}"})
    if best is None:
        raise RuntimeError("no Pallas config ran: " + "; ".join(t["error"] for t in tried))
    _, fn, info = best
    info["configs_tried"] = tried
    return fn, info


def prepare_matmul(a, b_kn, args) -> tuple[Callable[[], Any], dict]:
    """``hopper_matmul_mgpu`` on torch tensors ``a`` (M, K) and ``b_kn`` (K, N), both row-major.

    Returns ``(call, info)``; ``call()`` returns the (M, N) JAX array, in the inputs' dtype.
    """
    jax, _ = import_jax()
    from jax.experimental.pallas.ops.gpu import hopper_matmul_mgpu as module

    fn = getattr(module, "matmul", None) or getattr(module, "matmul_kernel")
    operands = (to_jax(a), to_jax(b_kn))

    def build(wanted):
        wanted = {name: module.MatmulDimension[value] if name in MATMUL_DIMENSION_FIELDS and isinstance(value, str)
                  else value for name, value in wanted.items()}
        config, dropped = _config(module.TuningConfig, wanted)
        call = jax.jit(_bind(fn, 2, config))
        return call, {"function": f"{fn.__name__}{inspect.signature(fn)}", "config": repr(config),
                      "dropped_config_fields": dropped, "b_layout": "KN (row-major)"}

    call, info = _pick(MATMUL_CONFIGS[:2] if args.quick else MATMUL_CONFIGS, build, operands)
    return (lambda: call(*operands)), info


def prepare_attention(q, k, v, *, causal: bool = False) -> tuple[Callable[[], Any], dict]:
    """``attention_mgpu.attention`` on torch tensors laid out (batch, seq, heads, head_dim).

    The kernel computes ``softmax(q k^T) v`` with no extra scaling. Returns
    ``(call, info)``; ``call()`` returns the output JAX array, same layout. A causal mask needs a JAX
    whose ``TuningConfig`` has a ``causal`` field (otherwise this raises, and the system is reported failed).
    """
    import_jax()
    from jax.experimental.pallas.ops.gpu import attention_mgpu as module

    fn = module.attention
    if causal and "causal" not in {f.name for f in dataclasses.fields(module.TuningConfig)}:
        raise NotImplementedError("this JAX's attention_mgpu.TuningConfig has no causal field")
    operands = (to_jax(q), to_jax(k), to_jax(v))

    def build(wanted):
        config, dropped = _config(module.TuningConfig, {**wanted, "causal": True} if causal else wanted)
        return _bind(fn, 3, config), {
            "function": f"attention{inspect.signature(fn)}", "config": repr(config),
            "dropped_config_fields": dropped, "layout": "BSHD"}

    call, info = _pick(ATTENTION_CONFIGS, build, operands)
    return (lambda: call(*operands)), info


def prepared(call: Callable[[], Any], info: dict, ref, rtol_rel: float) -> harness.Prepared:
    """Run once, check against ``ref``, and wrap for wall-clock timing.

    JAX returns a fresh array, so there is no buffer to poison; the check still
    counts non-finite elements.
    """
    check = harness.check_close(to_torch(call()), ref, rtol_rel)
    return harness.Prepared(call, check, info, timing="wallclock", sync=_block)
