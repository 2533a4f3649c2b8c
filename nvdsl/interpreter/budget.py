"""How long the protocol check may simulate: a deadline on an injected clock."""

from __future__ import annotations

import time
from typing import Callable


class Deadline:
    """``seconds`` from now on ``clock`` (default: this process's CPU time, so that other processes on a busy
    machine do not turn a kernel the check decides into one it gives up on). Tests inject a clock they step
    themselves, so that when the deadline passes does not depend on the machine's speed or load."""

    def __init__(self, seconds: float, clock: Callable[[], float] = time.process_time):
        self.seconds = seconds
        self.clock = clock
        self.at = clock() + seconds

    def passed(self) -> bool:
        return self.clock() > self.at

    def restarted(self) -> "Deadline":
        """The same budget again, from now."""
        return Deadline(self.seconds, self.clock)
