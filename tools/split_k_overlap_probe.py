"""Run on the GPU machine: ``source .gpu-bundle/setup.sh && python3 tools/split_k_overlap_probe.py OUT.json``.

The probe behind split-K's overlapped sum and the one-row 64 x 64 rule (``nvdsl.kernels.gemm``): bf16 GEMMs of
decode and long-K shapes, device time per call (CUDA events around 10 calls queued behind ``torch.cuda._sleep``,
median of 9 rounds, the variants of a shape in turn each round), as

- ``cublas``: ``torch.matmul``;
- ``pdl``: the library's ``gemm`` as it is (its sum launched to overlap the products' kernel);
- ``plain``: the state before: the sum an ordinary launch, and where one row of 64 x 64 tiles now runs in two
  splits, 64 x 128 tiles in split-K's count for them;
- ``old-tiles pdl`` (``64x128/s4 pdl`` in the first runs): those 64 x 128 tiles with the overlapped sum.

Every variant's result is checked against a float32 product first. Prints a line per shape and writes the rows
as JSON (times in us).
"""
import json
import statistics
import sys

import torch

import nvdsl.kernels.gemm as G
from probe_timing import device_us                   # tools/: the folder of the script run

PDL, PLAIN = G._sum_partials, G.partials_sum(overlap_previous=False)


SHAPES = [(1, 3072, 4096, "KN"), (64, 4096, 14336, "NK"), (16, 4096, 4096, "NK"), (1, 4096, 4096, "KN"),
          (16, 4096, 4096, "KN"), (64, 4096, 4096, "KN"), (64, 4096, 4096, "NK"), (16, 1024, 8192, "KN"),
          (128, 128, 65536, "KN"), (128, 256, 32768, "KN"), (256, 512, 8192, "KN"), (128, 2048, 8192, "KN"),
          (256, 1024, 8192, "KN")]


def variants(m: int, n: int, k: int, layout: str) -> tuple[dict, dict]:
    """The calls to time for a shape (each checked against a float32 product), and what the row records."""
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16) if layout == "KN" else \
        torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    operand = b if layout == "KN" else b.T
    mapping = G.default_mapping(m, n)
    splits = G.split_k(m, n, k, mapping)

    def library(sum_fn, mapping=None, splits=None):
        def call():
            G._sum_partials = sum_fn
            G.gemm(a, b, c, b_layout=layout, mapping=mapping, splits=splits)
        return call
    sm = torch.cuda.get_device_properties(0).multi_processor_count
    old_mapping, old_splits = mapping, splits
    if G._narrow_tiles_in_two_splits(m, n, 1, sm):
        old_mapping = G.TILE_64x128_MAPPING
        old_splits = max(1, min(sm // -(-n // 128), -(-k // 64) // 8))
    calls = {"cublas": lambda: torch.matmul(a, operand, out=c), "pdl": library(PDL),
             "plain": library(PLAIN, old_mapping, old_splits)}
    if old_mapping is not mapping:
        calls["old-tiles pdl"] = library(PDL, old_mapping, old_splits)
    reference = a.float() @ operand.float()
    for name, call in calls.items():
        call()
        torch.cuda.synchronize()
        error = ((c.float() - reference).abs().max() / reference.abs().max()).item()
        assert error < 2e-2, (name, error)
    row = {"shape": f"{m}x{n}x{k} {layout}", "splits": splits, "tiles": str(mapping.tile_values()),
           "old": [str(old_mapping.tile_values()), old_splits]}
    return calls, row


def main(out: str) -> None:
    rows = []
    for m, n, k, layout in SHAPES:
        calls, row = variants(m, n, k, layout)
        times = {name: [] for name in calls}
        for _ in range(9):
            for name, call in calls.items():
                times[name].append(device_us(call))
        median = {name: statistics.median(t) for name, t in times.items()}
        rows.append({**row, **median})
        print(row["shape"], f"splits={row['splits']}", " ".join(f"{n}={t:.2f}" for n, t in median.items()),
              f"pdl/cublas={median['cublas'] / median['pdl']:.3f}",
              f"plain/cublas={median['cublas'] / median['plain']:.3f}", flush=True)
    G._sum_partials = PDL
    print(torch.cuda.get_device_name())
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
