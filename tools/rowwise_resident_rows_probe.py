"""Run on the GPU machine: ``source .gpu-bundle/setup.sh && python3 tools/rowwise_resident_rows_probe.py OUT.json``.

Whether a row-wise program's second pass can re-read its rows from L2 when fewer rows are in flight: bf16 softmax,
RMSNorm and LayerNorm over (8192, 50304) rows (100 KB each; a wave of one-row blocks, about five an SM, keeps some
66 MB of rows in flight, more than L2), under the library's default mapping and under persistent mappings of
``k`` blocks an SM (``sm_count = k * SMs``: about ``k * SMs * 100 KB`` of rows in flight), beside the device copy
of the same bytes. Device time per call (CUDA events around 10 calls queued behind ``torch.cuda._sleep``, median
of 7 rounds, the variants in turn each round); every result checked against torch first. Prints a line per variant
and writes the rows as JSON (GB/s of the program's minimal bytes, and percent of the copy).
"""
import json
import statistics
import sys

import torch
import torch.nn.functional as F

from nvdsl.kernels import rowwise
from probe_timing import device_us                   # tools/: the folder of the script run

M, N = 8192, 50304


def main(out: str) -> None:
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = (torch.randn(M, N, device="cuda", generator=gen) * 3).to(torch.bfloat16)
    w = torch.randn(N, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(N, device="cuda", generator=gen).to(torch.bfloat16)
    y = torch.empty_like(x)
    calls = {"softmax": (lambda m: rowwise.softmax(x, y, mapping=m), lambda: torch.softmax(x.float(), -1)),
             "rms_norm": (lambda m: rowwise.rms_norm(x, w, y, mapping=m),
                          lambda: F.rms_norm(x.float(), (N,), w.float(), 1e-6)),
             "layer_norm": (lambda m: rowwise.layer_norm(x, w, b, y, mapping=m),
                            lambda: F.layer_norm(x.float(), (N,), w.float(), b.float(), 1e-5))}
    variants = {"default": None}
    for k in (1, 2, 3, 4):
        variants[f"persistent {k}/SM"] = rowwise.default_mapping("softmax", N).replace(persistent=True,
                                                                                      sm_count=k * sms)
    rows = []
    for name, (call, reference) in calls.items():
        expected = reference()
        for label, mapping in variants.items():
            call(mapping)
            error = float((y.float() - expected).norm() / expected.norm())
            assert error < 1e-2, (name, label, error)
        times = {label: [] for label in [*variants, "device copy"]}
        for _ in range(7):
            for label, mapping in variants.items():
                times[label].append(device_us(lambda: call(mapping)))
            times["device copy"].append(device_us(lambda: y.copy_(x)))
        nbytes = 2 * M * N * 2 + (N * 2 if name == "rms_norm" else 2 * N * 2 if name == "layer_norm" else 0)
        copy_gbps = 2 * M * N * 2 / statistics.median(times["device copy"]) / 1e3
        for label, found in times.items():
            us = statistics.median(found)
            gbps = (nbytes if label != "device copy" else 2 * M * N * 2) / us / 1e3
            percent = 100 * gbps / copy_gbps
            rows.append({"program": name, "variant": label, "us": us, "gbps": gbps, "percent_of_copy": percent})
            print(f"{name:10s} {label:16s} {us:9.1f} us {gbps:8.1f} GB/s {percent:5.1f}% of copy", flush=True)
    with open(out, "w") as f:
        json.dump({"device": torch.cuda.get_device_name(0), "shape": [M, N], "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
