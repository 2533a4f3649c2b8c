"""Run on the GPU machine: ``source .gpu-bundle/setup.sh && python3 tools/cross_entropy_pick_probe.py OUT.json``.

What cross-entropy's pick of the target's logit costs: bf16 logits of (4096, 1000), (4096, 4096), (8192, 50257) and
(8192, 50304) under three versions of the program: ``library`` (``rowwise.cross_entropy_program``: the target's
logit read alone after the pass, ``logits[rows, targets]``), ``mask`` (the version before it: every element
compared with the row's target, ``where(cols <= t & cols >= t, x, 0).sum()``, in every step) and ``lse`` (no pick:
the row's log-sum-exp alone, the floor a pick could reach), each under several tiles. Device time per call (CUDA
events around 10 calls queued behind ``torch.cuda._sleep``, median of 7 rounds, the variants in turn each round),
beside the device copy of the logits' bytes twice over (the row-wise suite's yardstick); ``library`` and ``mask``
checked against torch first. Prints a line per variant and writes JSON.
"""
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F

import nvdsl.tasks as nt
from nvdsl.kernels import rowwise
from nvdsl.kernels.rowwise import _tile, online_max_and_sum
from probe_timing import device_us                   # tools/: the folder of the script run


def _program(pick: str) -> nt.Task:
    @nt.task(reads=("logits", "targets"), writes=("loss",))
    def cross_entropy(loss, logits, targets):
        BM, BN, Lt = _tile(logits)
        Tt, Ot = nt.blocks(targets, (BM,)), nt.blocks(loss, (BM,))
        n = logits.shape[1]
        for i in nt.prange(Lt.grid[0]):
            m, s = nt.full((BM,), -math.inf, name="m"), nt.zeros((BM,), name="s")
            picked = nt.zeros((BM,), name="picked")
            target = Tt[i]
            for j in nt.srange(Lt.grid[1]):
                x, cols = online_max_and_sum(Lt, i, j, BM, BN, n, m, s)
                if pick == "mask":
                    hit = (cols[None, :] <= target[:, None]) & (cols[None, :] >= target[:, None])
                    picked[...] = picked + nt.where(hit, x, 0.0).sum(axis=1)
            Ot[i] = m + nt.log(s) - picked
    return cross_entropy


def main(out: str) -> None:
    programs = {"library": (rowwise.cross_entropy_program(), [(1, 2048), (1, 4096), (1, 8192), (4, 1024), (4, 2048)]),
                "mask": (_program("mask"), [(1, 2048), (4, 1024)]), "lse": (_program("none"), [(1, 4096)])}
    rows = []
    for m, n in ((4096, 1000), (4096, 4096), (8192, 50257), (8192, 50304)):
        gen = torch.Generator(device="cuda").manual_seed(0)
        x = (torch.randn(m, n, device="cuda", generator=gen) * 3).to(torch.bfloat16)
        targets = torch.randint(0, n, (m,), device="cuda", generator=gen, dtype=torch.int32)
        loss = torch.empty(m, device="cuda")
        expected = F.cross_entropy(x.float(), targets.long(), reduction="none")
        copy = torch.empty_like(x)
        kernels = {}
        for name, (program, tiles) in programs.items():
            for bm, bn in tiles:
                kernel = nt.build(program, rowwise.default_mapping().replace(tiles={"BM": bm, "BN": bn}))
                kernel(loss, x, targets)
                if name != "lse":
                    error = float((loss - expected).abs().max())
                    assert error < 1e-2 * float(expected.abs().max()), (name, bm, bn, error)
                kernels[f"{name} {bm}x{bn}"] = kernel
        times = {label: [] for label in [*kernels, "device copy"]}
        for _ in range(7):
            for label, kernel in kernels.items():
                times[label].append(device_us(lambda: kernel(loss, x, targets)))
            times["device copy"].append(device_us(lambda: copy.copy_(x)))
        copy_gbps = 2 * m * n * 2 / statistics.median(times["device copy"]) / 1e3
        for label, found in times.items():
            us = statistics.median(found)
            gbps = (m * n * 2 + m * 8 if label != "device copy" else 2 * m * n * 2) / us / 1e3
            rows.append({"shape": [m, n], "variant": label, "us": us, "gbps": gbps,
                         "percent_of_copy": 100 * gbps / copy_gbps})
            print(f"{m}x{n} {label:18s} {us:9.1f} us {gbps:8.1f} GB/s {100 * gbps / copy_gbps:5.1f}% of copy",
                  flush=True)
    with open(out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
