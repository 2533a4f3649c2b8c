"""Timelines of the library GEMM and attention on the GPU (``nvdsl.profile``), and what recording costs.

    python3 tools/timelines.py OUT_DIR [--sms 8]

For each case it writes ``<date>_<device>_timeline-<case>.png`` (the first SMs' roles beside the planned
schedule) and ``.md`` (the summary by span kind, the plain and the profiled kernel's median time from CUDA
events, and the command). Needs torch and matplotlib.
"""

from __future__ import annotations

import argparse
import datetime
import pathlib
import re
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
import nvdsl  # noqa: E402
import nvdsl.kernels.attention as attention  # noqa: E402
import nvdsl.kernels.gemm as gemm  # noqa: E402
from benchmarks.harness import time_cuda  # noqa: E402
from nvdsl.tasks.profile import recording  # noqa: E402


def _median_ms(fn, reps: int = 10) -> float:
    times = sorted(time_cuda(fn, warmup=3, reps=reps))     # queued behind a hold: the device's time
    return times[len(times) // 2]


def _recorded(fn, capacity: int):
    """``fn`` with its task kernels running their recording variants, the records left unread."""
    def call():
        with recording(capacity):
            fn()
    return call


def _cases():
    gen = torch.Generator(device="cuda").manual_seed(0)
    m = n = 8192
    k = 4096
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    b = torch.randn(k, n, device="cuda", generator=gen).to(torch.bfloat16)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    yield "gemm-bf16-8192x8192x4096", gemm.gemm, (a, b, c), {}, 2 * m * n * k
    q, kk, v = (torch.randn(4, 16, 4096, 128, device="cuda", generator=gen).to(torch.bfloat16) for _ in range(3))
    o = torch.empty_like(q)
    flops = 4 * 4 * 16 * 4096 * 4096 * 128
    yield "attention-bf16-b4h16-l4096-d128", attention.attention, (q, kk, v, o, None), {}, flops
    yield "attention-bf16-b4h16-l4096-d128-causal", attention.attention, (q, kk, v, o, None), {"causal": True}, \
        flops / 2


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out_dir")
    parser.add_argument("--sms", type=int, default=8, help="SMs drawn (default 8)")
    args = parser.parse_args(argv)
    out = pathlib.Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    device = torch.cuda.get_device_name()
    stem = f"{datetime.date.today().isoformat()}_{re.sub(r'[^a-z0-9]+', '-', device.lower()).strip('-')}"
    for name, fn, fn_args, kwargs, flops in _cases():
        capacity = 1024
        while True:
            profile = nvdsl.profile(fn, *fn_args, capacity=capacity, **kwargs)
            if all(k.dropped == 0 for k in profile) or capacity >= 65536:
                break
            capacity *= 4
        plain = _median_ms(lambda: fn(*fn_args, **kwargs))
        profiled = _median_ms(_recorded(lambda: fn(*fn_args, **kwargs), capacity))
        png = out / f"{stem}_timeline-{name}.png"
        profile.save_png(png, sms=args.sms)
        text = [f"# Timeline: {name} on {device}", "",
                f"- command: `python3 {' '.join(sys.argv)}`",
                f"- device time (CUDA events, calls queued ahead, median of 10): plain {plain:.3f} ms "
                f"({flops / plain / 1e9:.0f} TFLOP/s); recording {profiled:.3f} ms "
                f"({100 * (profiled / plain - 1):+.1f}%, the zero-filled records' allocation included)",
                f"- events kept per role of each block: {capacity}", "", "```", profile.summary(), "```", ""]
        (out / f"{stem}_timeline-{name}.md").write_text("\n".join(text))
        print("\n".join(text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
