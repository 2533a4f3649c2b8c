"""The probes' device timing (``tools/*_probe.py``): CUDA events around ``reps`` calls queued behind
``torch.cuda._sleep``, so the events time the device, not the host issuing the calls."""

import torch


def device_us(fn, reps=10):
    """Microseconds of device time per call of ``fn``, over ``reps`` calls back to back."""
    torch.cuda._sleep(1_000_000)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000 / reps
