"""``Timeline``: a role of a block records when its spans of work begin and end, from the device's clocks.

One thread of each role (a producer's issuing thread, a consumer warpgroup's first thread) writes, for its
block and role:

* ``header[block, role]``: the SM it ran on, ``%globaltimer`` (ns, one clock for every SM) and ``%clock64``
  (the SM's cycles) at its start and at its end, and how many events it recorded;
* ``events[block, role, i]``: one word per event, ``tag << 56 | (%clock64 mod 2**56)`` with ``tag = 2 * kind +
  (1 if it ends a span)`` (a single 8-byte store; 2**56 cycles are over a year at 2 GHz).

Events past ``events.shape[2]`` are counted, not written. The count lives in a shared-memory word per role
that only its recording thread reads and writes (no atomics, no barrier). Reading the two clocks at both ends
lets the host turn each role's cycles into nanoseconds on the common timer.
"""

from __future__ import annotations

import contextlib

from mlir import ir
from mlir.dialects import nvvm

from .. import dtypes as dt
from ..errors import TraceError, user_location
from ..frontend.control import when
from ..frontend.values import Value, constant

#: The fields of ``header[block, role]``, in order.
HEADER_FIELDS = ("sm", "start_ns", "start_cycle", "end_ns", "end_cycle", "events")
#: An event word's low bits hold the clock; the bits above, its tag.
TAG_SHIFT = 56


def _sreg(read, dtype: dt.DType = dt.int64) -> Value:
    return Value(read(ir.IntegerType.get_signless(dtype.itemsize * 8)), dtype)


class Timeline:
    """The recorder of role ``role`` in this block; ``counters`` is a shared int32 array with a word per role.

    ``recorder`` (a boolean Value, or None for "every thread that runs this code") picks the recording thread.
    """

    def __init__(self, ctx, header, events, counters, role: int, recorder=None):
        if header.dtype != dt.int64 or events.dtype != dt.int64 or header.ndim != 3 or events.ndim != 3 or \
                header.shape[2] != len(HEADER_FIELDS):
            raise TraceError(f"a timeline takes an int64 header (blocks, roles, {len(HEADER_FIELDS)}) and int64 "
                             f"events (blocks, roles, capacity), got {header.shape} {header.dtype.name} and "
                             f"{events.shape} {events.dtype.name}", code="bad-argument",
                             hint=f"pass int64 arrays of shapes (blocks, roles, {len(HEADER_FIELDS)}) and (blocks, "
                                  "roles, capacity)", loc=user_location())
        self.ctx, self.header, self.events, self.counters = ctx, header, events, counters
        self.role, self.recorder = role, recorder
        self.block = ctx.block_id.x
        self.capacity = events.shape[2]

    @contextlib.contextmanager
    def _recording(self):
        with when(self.recorder) if self.recorder is not None else contextlib.nullcontext():
            yield

    def start(self) -> None:
        """Mark the role's start: its SM and both clocks; its count starts at 0."""
        with self._recording():
            self.counters[self.role] = constant(0, dt.int32)
            self._write("sm", _sreg(nvvm.read_ptx_sreg_smid, dt.int32).to(dt.int64))
            self._write("start_ns", _sreg(nvvm.read_ptx_sreg_globaltimer))
            self._write("start_cycle", _sreg(nvvm.read_ptx_sreg_clock64))

    def finish(self) -> None:
        """Mark the role's end: both clocks and the number of events it recorded (written or not)."""
        with self._recording():
            self._write("end_cycle", _sreg(nvvm.read_ptx_sreg_clock64))
            self._write("end_ns", _sreg(nvvm.read_ptx_sreg_globaltimer))
            self._write("events", self.counters[self.role].to(dt.int64))

    def _write(self, field: str, value) -> None:
        self.header[self.block, self.role, HEADER_FIELDS.index(field)] = value

    def mark(self, tag: int) -> None:
        """Record event ``tag`` now."""
        with self._recording():
            r = self.role
            n = self.counters[r]
            self.counters[r] = n + 1
            with when(n < self.capacity):
                clock = _sreg(nvvm.read_ptx_sreg_clock64) & ((1 << TAG_SHIFT) - 1)
                self.events[self.block, r, n.to(dt.index)] = clock | (tag << TAG_SHIFT)

    @contextlib.contextmanager
    def span(self, kind: int):
        """Record the begin and the end of the span of kind ``kind`` around the body."""
        self.mark(2 * kind)
        yield
        self.mark(2 * kind + 1)
