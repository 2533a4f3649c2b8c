"""Run on the GPU machine: ``source .gpu-bundle/setup.sh && python3 tools/wait_removal_probe.py``.

Device time of the library GEMM and attention forward at a few shapes (bf16), for comparing two trees of nvdsl
run one after the other on one device (PYTHONPATH picks the tree): CUDA events around 10 queued calls, median
of 7 rounds."""
import statistics

import torch

import nvdsl
from nvdsl.kernels.attention import attention
from nvdsl.kernels.gemm import gemm
from probe_timing import device_us                   # tools/: the folder of the script run


def main():
    calls = {}
    for m, n, k in ((8192, 8192, 4096), (4096, 4096, 4096)):
        a, b = torch.randn(m, k, device="cuda", dtype=torch.bfloat16), torch.randn(k, n, device="cuda",
                                                                                   dtype=torch.bfloat16)
        c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        calls[f"gemm {m}x{n}x{k}"] = (lambda a=a, b=b, c=c: gemm(a, b, c))
    for d in (64, 128):
        for causal in (False, True):
            q, kk, v = (torch.randn(4, 16, 4096, d, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            o = torch.empty_like(q)
            calls[f"attention d{d} causal={causal}"] = (lambda q=q, k=kk, v=v, o=o, c=causal: attention(q, k, v, o,
                                                                                                    causal=c))
    for fn in calls.values():
        fn()
    torch.cuda.synchronize()
    for name, fn in calls.items():
        print(f"{name}: {statistics.median(device_us(fn) for _ in range(7)):.1f} us", flush=True)


if __name__ == "__main__":
    print(nvdsl.__file__)
    main()
