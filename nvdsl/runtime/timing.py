"""Device time of a batch of calls, from a pair of CUDA events on the stream the calls launch on."""

from __future__ import annotations

from .device import check, driver, get_device
from .launch import call_stream


def elapsed_ms(call, args, reps: int, ordinal: int = 0) -> float:
    """Milliseconds per ``call()`` over ``reps`` back-to-back calls, from events recorded around them on the
    stream a call on ``args`` launches on (torch's current stream for its tensors, else the default stream)."""
    cu = driver()
    get_device(ordinal)
    stream = call_stream(args, 0)
    start, end = (check(cu.cuEventCreate(cu.CUevent_flags.CU_EVENT_DEFAULT), "cuEventCreate") for _ in range(2))
    try:
        check(cu.cuEventRecord(start, stream), "cuEventRecord")
        for _ in range(reps):
            call()
        check(cu.cuEventRecord(end, stream), "cuEventRecord")
        check(cu.cuEventSynchronize(end), "cuEventSynchronize")
        return check(cu.cuEventElapsedTime(start, end), "cuEventElapsedTime") / reps
    finally:
        for event in (start, end):
            cu.cuEventDestroy(event)
