"""Run on the GPU machine: ``source .gpu-bundle/setup.sh && python3 tools/gemm_tiling_grid.py --layout KN OUT.json``.

The probe behind ``nvdsl.kernels.gemm``'s small-output rules (``split_k``, ``TILE_64x64_MAPPING``): bf16 GEMMs of
decode, small-batch and long-K shapes under each tiling and each count of K splits, beside cuBLAS
(``torch.matmul``) and the library's default, as device time per call (CUDA events around 10 calls queued behind a
``torch.cuda._sleep``, so that host time hides; median of 7). ``--layout NK`` gives B as a linear layer's weight
(an (N, K) array; cuBLAS gets its view ``w.T``) and also times split-K's sum kernel alone. Writes the rows as JSON
(times in us) and prints them.
"""

import argparse
import json
import statistics

KN_SHAPES = [(m, n, n) for m in (1, 16, 64, 128, 256) for n in (4096, 8192, 16384)] + [
    (16, 50304, 4096), (256, 512, 8192), (512, 512, 16384), (128, 128, 65536), (128, 256, 32768), (128, 2048, 8192),
    (256, 1024, 8192), (4096, 4096, 4096), (2048, 2048, 2048), (1024, 1024, 1024)]
NK_SHAPES = [(m, n, n) for m in (1, 16, 64, 128) for n in (4096, 8192)] + [
    (64, 14336, 4096), (64, 4096, 14336), (16, 50257, 4096), (64, 16384, 16384)]
SUMS = [(4, 64, 4096), (2, 64, 4096), (4, 16, 4096), (66, 128, 128), (8, 256, 512)]     # (splits, M, N)


def device_us(fn) -> float:
    import torch

    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(7):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(2_000_000)
        start.record()
        for _ in range(10):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000 / 10)
    return statistics.median(times)


def tilings(layout: str) -> dict:
    from nvdsl.kernels import gemm as G

    narrow = G.TILE_64x128_MAPPING
    found = {"64x64": narrow.replace(tiles={"BM": 64, "BN": 64, "BK": 64}), "64x128": narrow,
             "128x128": G.TILE_128x128_MAPPING}
    if layout == "KN":
        return {**found, "128x256": G.MAPPING}
    return {"64x32": narrow.replace(tiles={"BM": 64, "BN": 32, "BK": 64}),
            "64x32p12": narrow.replace(tiles={"BM": 64, "BN": 32, "BK": 64}, pipeline=12), **found}


def grid(layout: str) -> dict:
    import torch

    from nvdsl.kernels import gemm as G

    rows = []
    for m, n, k in KN_SHAPES if layout == "KN" else NK_SHAPES:
        a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16) if layout == "KN" else \
            torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        operand = b if layout == "KN" else b.T
        row = {"shape": [m, n, k], "cublas": device_us(lambda: torch.matmul(a, operand, out=c)),
               "default": device_us(lambda: G.gemm(a, b, c, b_layout=layout))}
        for name, mapping in tilings(layout).items():
            tile = mapping.tile_values()
            tiles = -(-m // tile["BM"]) * -(-n // tile["BN"])
            if name == "128x256" and tiles < 132:
                continue
            for splits in (1, 2, 4, 8, 16, 32, 64) if layout == "KN" else (1, 2, 4):
                if splits > 1 and tiles * splits > 2 * 132:
                    break
                if layout == "KN" and k // 64 // splits < 4:
                    break
                try:
                    row[f"{name}/s{splits}"] = device_us(
                        lambda: G.gemm(a, b, c, b_layout=layout, mapping=mapping, splits=splits))
                except Exception as error:          # a tiling the task layer refuses: why, in the row
                    row[f"{name}/s{splits}"] = str(error)[:80]
        rows.append(row)
        print(json.dumps({key: round(v, 1) if isinstance(v, float) else v for key, v in row.items()}), flush=True)
    result = {"device": torch.cuda.get_device_name(), "layout": layout, "rows": rows}
    if layout == "NK":
        result["sum_kernel"] = []
        for splits, m, n in SUMS:
            p = torch.randn(splits, m, n, device="cuda", dtype=torch.float32)
            c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            entry = {"splits": splits, "M": m, "N": n, "sum_us": device_us(lambda: G._sum_partials(c, p)),
                     "copy_us": device_us(lambda: c.copy_(p[0]))}
            result["sum_kernel"].append(entry)
            print(json.dumps(entry), flush=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the JSON file to write")
    parser.add_argument("--layout", choices=("KN", "NK"), default="KN", help="B (K, N) row-major, or (N, K)")
    args = parser.parse_args()
    with open(args.out, "w") as f:
        json.dump(grid(args.layout), f)


if __name__ == "__main__":
    main()
