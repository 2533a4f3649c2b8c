"""What the Triton peers share: the grouped order of output tiles, autotuning configs from a table, the
scratch allocator for descriptors made on the device, and picking the first kernel variant that runs.

Imports Triton but not torch (torch is imported where a tensor is made or the device synchronised), so
the kernels can be compiled for sm_90a on a machine without a GPU (``tests/test_benchmarks.py``).
"""

from __future__ import annotations

from typing import Callable

import triton
import triton.language as tl

BLOCK_K = 64
GROUP_M = 8

Variants = dict[str, tuple[Callable, object]]   # name -> (launch(*operands), its autotuner)


def configs(table, warp_specialize: bool, **constants) -> list[triton.Config]:
    """Autotuning configs from rows ``(BLOCK_M, BLOCK_N, num_stages, num_warps, warp_specialize)``, with
    BLOCK_K = 64 and GROUP_M = 8; the warp-specialized rows only when ``warp_specialize``. Triton 3.6
    specializes a ``tl.range`` loop only with ``flatten=False``, so FLATTEN is its negation unless
    ``constants`` (more kernel constants) say otherwise."""
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": BLOCK_K, "GROUP_M": GROUP_M,
                           "WARP_SPECIALIZE": ws, "FLATTEN": not ws, **constants},
                          num_stages=stages, num_warps=warps)
            for bm, bn, stages, warps, ws in table if warp_specialize or not ws]


@triton.jit
def tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """Grouped ordering of output tiles: GROUP_M row-tiles share their B tiles in L2."""
    in_group = GROUP_M * num_pid_n
    first_m = (tile_id // in_group) * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    return first_m + (tile_id % group_m), (tile_id % in_group) // group_m


def _scratch(size: int, alignment: int, stream):
    import torch

    return torch.empty(size, device="cuda", dtype=torch.int8)


def num_sms(tensor) -> int:
    import torch

    return torch.cuda.get_device_properties(tensor.device).multi_processor_count


def first_variant_that_runs(variants: Variants, operands: tuple, broken: dict[str, str],
                            **info) -> tuple[Callable[[], None], dict]:
    """Run each variant on ``operands`` in order (the first call for a shape autotunes) and keep the first
    that compiles and runs. ``broken`` remembers, across shapes, the variants that failed and why.

    Returns ``(call, info)``: ``call()`` runs the chosen variant again on the same operands; ``info``
    names it, its autotuned config and the variants skipped (plus the given ``info``).
    """
    import torch

    triton.set_allocator(_scratch)
    skipped = {}
    for name, (launch, autotuner) in variants.items():
        if name in broken:
            skipped[name] = broken[name]
            continue
        try:
            launch(*operands)
            torch.cuda.synchronize()
        except Exception as e:
            broken[name] = skipped[name] = f"{type(e).__name__}: {str(e)[:500]}"
            continue
        config = getattr(autotuner, "best_config", None)
        return (lambda: launch(*operands)), {
            "variant": name, "config": str(config),
            "warp_specialize": bool(config and config.kwargs.get("WARP_SPECIALIZE")), **info,
            "skipped_variants": skipped}
    raise RuntimeError("no Triton variant ran: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()))
