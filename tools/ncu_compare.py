"""Where the time goes: nvdsl's kernels and their peers' under Nsight Compute, side by side (GPU machine).

    ncu --clock-control none --profile-from-start off --section SpeedOfLight ... python3 tools/ncu_compare.py CASE

runs each system of ``CASE`` (``gemm``: bf16 8192 x 8192 x 4096, nvdsl against cuBLAS through ``torch.matmul``;
``attention``: bf16 B4 H16 L4096 D128 forward, nvdsl against cuDNN through ``scaled_dot_product_attention``;
``backward``: the same shape's backward, nvdsl's kernels against cuDNN's; ``fp8-block``: float8 8192 x 8192 x 4096
with block scales into bf16, ``block_scaled_gemm`` under its default mapping and with A's scales loaded by the
threads, against the first torch call the ``gemm_family`` benchmark's check accepts) once to compile and warm up
outside the profiled range, then once inside it (``cudaProfilerStart``/``Stop``), so that ncu profiles exactly one
call of each. Without ncu it prints each system's median time over 20 calls (CUDA events), to check the shapes run.

    python3 tools/ncu_compare.py --summary REPORT.txt ...

prints a Markdown table of each profiled kernel's main figures from ncu's text reports (no GPU needed).
"""

import re
import sys

B, H, L, D = 4, 16, 4096, 128
M = N = 8192
K = 4096


def gemm_systems():
    import torch

    from nvdsl.kernels import gemm
    a = torch.randn(M, K, device="cuda").to(torch.bfloat16)
    b = torch.randn(K, N, device="cuda").to(torch.bfloat16)
    c, c_ref = (torch.empty(M, N, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    return {"nvdsl": lambda: gemm.gemm(a, b, c), "cuBLAS": lambda: torch.matmul(a, b, out=c_ref)}


def attention_inputs(grad: bool):
    import torch
    q, k, v = (torch.randn(B, H, L, D, device="cuda").to(torch.bfloat16).requires_grad_(grad) for _ in range(3))
    return q, k, v


def attention_systems():
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from nvdsl.kernels import attention
    q, k, v = attention_inputs(False)
    o = torch.empty_like(q)

    def cudnn():
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
            return torch.nn.functional.scaled_dot_product_attention(q, k, v)
    return {"nvdsl": lambda: attention.attention(q, k, v, o), "cuDNN": cudnn}


def backward_systems():
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from nvdsl.kernels import attention
    q, k, v = attention_inputs(True)
    with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    do = torch.randn_like(out)
    qd, kd, vd = (x.detach() for x in (q, k, v))
    o, lse = torch.empty_like(qd), torch.empty(B, H, L, device="cuda")
    attention.attention(qd, kd, vd, o, lse)
    dq, dk, dv = (torch.empty_like(qd) for _ in range(3))
    return {"nvdsl": lambda: attention.attention_backward(qd, kd, vd, o, lse, do, dq, dk, dv),
            "nvdsl fused": lambda: attention.attention_backward(qd, kd, vd, o, lse, do, dq, dk, dv,
                                                                deterministic=False),
            "cuDNN": lambda: torch.autograd.grad(out, (q, k, v), do, retain_graph=True)}


def fp8_block_systems():
    import os
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))     # the project root
    from types import SimpleNamespace

    from benchmarks.suites import gemm_family
    from nvdsl.kernels import gemm
    ops = gemm_family._fp8_block_operands({"M": M, "N": N, "K": K, "dtype": "bf16"})
    by_threads = gemm.BLOCK_SCALED_MAPPING.replace(memory={})
    return {"nvdsl": lambda: gemm.block_scaled_gemm(ops.a, ops.b, ops.c, ops.scale_a, ops.scale_b),
            "nvdsl scales by threads": lambda: gemm.block_scaled_gemm(ops.a, ops.b, ops.c, ops.scale_a, ops.scale_b,
                                                                      mapping=by_threads),
            "torch": gemm_family._torch_fp8_block(ops, SimpleNamespace()).fn}


def main(case: str) -> None:
    import torch

    systems = {"gemm": gemm_systems, "attention": attention_systems, "backward": backward_systems,
               "fp8-block": fp8_block_systems}[case]()
    for call in systems.values():          # compile, load, pick algorithms: outside the profiled range
        call()
        call()
    torch.cuda.synchronize()
    for name, call in systems.items():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        times = []
        for _ in range(20):
            start.record()
            call()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        print(f"{case} {name}: median {sorted(times)[10] * 1e3:.1f} us (20 calls, CUDA events)", flush=True)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for call in systems.values():
        call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


#: (column, the metric's name in ncu's text report)
FIGURES = (("µs", "Duration"), ("SM GHz", "SM Frequency"), ("cycles", "Elapsed Cycles"), ("SM throughput %", "Compute (SM) Throughput"),
           ("memory throughput %", "Memory Throughput"), ("DRAM %", "DRAM Throughput"), ("L2 hit %", "L2 Hit Rate"),
           ("issue slots busy %", "Issue Slots Busy"), ("warp cycles / issue", "Warp Cycles Per Issued Instruction"),
           ("registers", "Registers Per Thread"), ("grid", "Grid Size"), ("block", "Block Size"))


def summary(paths) -> str:
    """A Markdown table of the kernels in ncu's text reports at ``paths``: their figures of :data:`FIGURES`, the
    pipeline ncu finds the most used, and the stall it names first."""
    rows = ["| kernel | " + " | ".join(c for c, _ in FIGURES) + " | busiest pipeline | top stall |",
            "|---" * (len(FIGURES) + 3) + "|"]
    for path in paths:
        text = open(path).read()
        for block in re.split(r"\n  (?=\S[^\n]*Context \d+, Stream)", text)[1:]:
            name = block.split("(", 1)[0].strip()
            name = name if len(name) <= 60 else name[:57] + "..."
            values = []
            for _, metric in FIGURES:
                found = re.search(rf"^\s+{re.escape(metric)}\s+(?:[^\d\s][^\s]*\s+)?([\d,.]+)\s*$", block, re.M)
                values.append(found.group(1) if found else "—")
            unit = re.search(r"^\s+Duration\s+(\S+)\s", block, re.M)
            if unit and unit.group(1) == "ms" and values[0] != "—":
                values[0] = f"{float(values[0].replace(',', '')) * 1e3:,.1f}"
            flat = " ".join(block.split())
            pipe = re.search(r"(\w+) is the highest-utilized pipeline \(([\d.]+)%\)", flat)
            stall = re.search(r"spends ([\d.]+) cycles being stalled (.+?)\. .*?represents about ([\d.]+)%", flat)
            rows.append(f"| {name} | " + " | ".join(values) +
                        f" | {f'{pipe.group(1)} {pipe.group(2)}%' if pipe else '—'} | "
                        f"{f'{stall.group(2)} ({stall.group(3)}% of cycles between issues)' if stall else '—'} |")
    return "\n".join(rows)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--summary"]:
        print(summary(sys.argv[2:]))
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "gemm")
