"""Run on the GPU machine: ``source .gpu-bundle/setup.sh && python3 tools/staging_copy_probe.py``.

What a staging copy (``nvdsl.tasks.staging.copy``: an argument TMA cannot address, copied into rows of 16-byte
multiples) costs, per number of elements each thread loads before storing them (``COPY_UNROLL``, 4 today), beside
torch's ``copy_`` of the same view: bf16 (4095, 4095) into a (4095, 4096) buffer (the A and B of a 4095^3 GEMM,
where staging took the H200 from 785 to 544 TFLOP/s) and (4096, 50257) out of one (a GPT-2 vocabulary's logits).
Device time per copy (CUDA events around queued calls, median of 5), and the bandwidth it reads (bytes read and
written over the time)."""
import sys

import torch

import nvdsl
from nvdsl.tasks import staging

sys.path.insert(0, "tools")
from probe_timing import device_us  # noqa: E402


@nvdsl.mlir_func
def staged_copy(x, y, *, unroll):
    staging.copy(x, y, unroll=unroll)


def main(unrolls=(4, 8, 16)) -> None:
    for rows, cols, padded_in in ((4095, 4095, True), (4096, 50257, False)):
        buffer = torch.randn(rows, cols + 16 - cols % 16, device="cuda", dtype=torch.bfloat16)
        plain = torch.randn(rows, cols, device="cuda", dtype=torch.bfloat16)
        padded = buffer[:, :cols]
        source, target = (plain, padded) if padded_in else (padded, plain)
        moved = 2 * source.numel() * source.element_size()
        times = {"torch copy_": sorted(device_us(lambda: target.copy_(source), reps=5) for _ in range(5))[2]}
        for unroll in unrolls:
            staged_copy(source, target, unroll=unroll)
            torch.cuda.synchronize()
            assert torch.equal(target, source), unroll
            times[f"unroll {unroll}"] = sorted(device_us(lambda: staged_copy(source, target, unroll=unroll), reps=5)
                                               for _ in range(5))[2]
        print(f"bf16 ({rows}, {cols}) {'into' if padded_in else 'out of'} padded rows: " +
              ", ".join(f"{n} {t:.1f} us ({moved / t / 1e6:.2f} TB/s)" for n, t in times.items()), flush=True)


if __name__ == "__main__":
    main()
