"""Synchronisation objects of one block: mbarriers (arrival counts, transaction bytes, phases) and the
``bar.sync`` barriers (the block's barrier 0 and named barriers 1-15)."""

from __future__ import annotations

import numpy as np

# The mbarrier groups' addresses, as ``nvgpu.mbarrier.get`` returns them: outside the dynamic buffer.
MBARRIER_BASE = 1 << 40
MBARRIER_GROUP_STRIDE = 1 << 20
NOT_SEEN = -2       # a thread's latest observed phase before it waited on the barrier (phases start at -1)


class Waiter:
    """A thread group suspended in ``try_wait`` on a phase parity: the hardware wakes it when such a
    phase completes, even if the barrier moves on before the warp runs again."""

    __slots__ = ("parity", "satisfied", "clock", "phase")

    def __init__(self, parity: int):
        self.parity = parity
        self.satisfied = False
        self.clock = None
        self.phase = -1


class Mbarrier:
    """One mbarrier: ``pending`` arrivals and ``tx`` transaction bytes left in phase ``phase``.

    A phase completes when both reach zero; the next phase then expects ``expected`` arrivals again.
    ``vc`` accumulates the vector clocks released into the phase (arrivals, completed copies);
    ``completed`` keeps the clocks of the last completed phases for the threads that wait on them;
    ``seen`` each thread's latest phase it waited for (see :meth:`stale`).
    """

    def __init__(self, group: "MbarrierGroup", index: int, agent: int, tma_agent: int, clock_size: int,
                 threads: int):
        self.group = group
        self.index = index
        self.agent = agent              # this barrier's number among the block's mbarriers
        self.tma_agent = tma_agent      # the agent of TMA copies completing on it
        self.initialized = False
        self.init_op = -1
        self.init_agent = 0
        self.init_clock = 0
        self.expected = 0
        self.pending = 0
        self.tx = 0
        self.phase = 0
        self.vc = np.zeros(clock_size, np.int32)
        self.completed: dict[int, np.ndarray] = {}
        self.completed_arrivals: dict[int, list] = {}    # phase -> (thread, op) of its arrivals
        self.arrivals: list[tuple[int, int]] = []      # (thread, op) of this phase's arrivals, for reports
        self.armed: dict[int, tuple[int, int, int]] = {}  # thread -> (phase, tx bytes, op) of its last expect_tx
        self.issued: dict[int, int] = {}                # thread -> bytes of copies it issued since arming
        self.in_flight = 0                               # copies issued on this barrier, not yet landed
        self.waiters: list[Waiter] = []
        self.observed = -1                               # the latest phase some thread waited for
        self.unwaited: dict[int, int] = {}               # phase -> op of a TMA load that completed in it
        self.seen = np.full(threads, NOT_SEEN, np.int64)  # thread -> the latest phase it waited for
        self.seen_at = np.full(threads, -1, np.int64)     # thread -> the op of that wait, for reports

    @property
    def address(self) -> int:
        return self.group.base + 8 * self.index

    @property
    def name(self) -> str:
        return f"barrier {self.index} of {self.group.name}"

    def init(self, count: int, op: int, agent: int, clock: int) -> None:
        self.initialized = True
        self.init_op, self.init_agent, self.init_clock = op, agent, clock
        self.expected = self.pending = count
        self.tx = 0
        self.phase = 0
        self.vc[:] = 0
        self.completed.clear()
        self.arrivals = []
        self.armed.clear()
        self.issued.clear()
        self.waiters = []
        self.seen[:] = NOT_SEEN

    def wait(self, parity: int) -> Waiter:
        waiter = Waiter(parity)
        self.waiters.append(waiter)
        return waiter

    def parity_complete(self, parity: int) -> bool:
        """``try_wait.parity``: has the phase with this parity completed (the current phase's parity differs)?"""
        return (self.phase & 1) != (parity & 1)

    def completed_phase(self, parity: int) -> int:
        """The most recently completed phase with ``parity`` (-1 for a fresh barrier's 'preceding phase')."""
        last = self.phase - 1 if ((self.phase - 1) & 1) == (parity & 1) else self.phase - 2
        return max(last, -1)

    def stale(self, threads: np.ndarray, phase: int) -> np.ndarray:
        """Which of ``threads``, whose wait passes on the completed ``phase``, had already waited for it (or a later
        phase): the wait hands them a phase they consumed before, not the pending one (a parity not flipped where
        the ring wrapped). A thread's waits on one barrier see its phases in order, each one once."""
        return self.seen[threads] >= phase

    def observe(self, phase: int, threads: np.ndarray, op: int) -> np.ndarray | None:
        """``threads`` saw ``phase`` complete at ``op``: the clock they acquire (None for the preceding phase)."""
        self.seen[threads] = np.maximum(self.seen[threads], phase)
        self.seen_at[threads] = op
        if phase > self.observed:
            self.observed = phase
            for done in [p for p in self.unwaited if p <= phase]:
                del self.unwaited[done]
        return self.completed.get(phase)

    def maybe_complete(self) -> bool:
        if self.pending == 0 and self.tx == 0:
            clock = self.completed[self.phase] = self.vc.copy()
            self.completed.pop(self.phase - 2, None)
            self.completed_arrivals[self.phase] = self.arrivals
            self.completed_arrivals.pop(self.phase - 2, None)
            if self.waiters:
                parity = self.phase & 1
                for waiter in self.waiters:
                    if waiter.parity == parity:
                        waiter.satisfied, waiter.clock, waiter.phase = True, clock, self.phase
                self.waiters = [waiter for waiter in self.waiters if not waiter.satisfied]
            self.phase += 1
            self.pending = self.expected
            self.arrivals = []
            return True
        return False

    def describe(self) -> str:
        arrived = self.expected - self.pending
        text = (f"{self.name} is in phase {self.phase} (parity {self.phase & 1}): {arrived} of {self.expected} "
                f"arrivals")
        if self.tx:
            text += f", {self.tx} transaction bytes outstanding" if self.tx > 0 else \
                f", {-self.tx} more transaction bytes delivered than expected so far"
        return text


class MbarrierGroup:
    """The barriers of one ``nvgpu.mbarrier.create`` in one block."""

    def __init__(self, count: int, number: int, first_agent: int, agents, clock_size: int, name: str,
                 threads: int):
        self.base = MBARRIER_BASE + number * MBARRIER_GROUP_STRIDE
        self.name = name
        self.barriers = [Mbarrier(self, i, first_agent + i, agents.tma(first_agent + i), clock_size, threads)
                         for i in range(count)]


class BarSync:
    """A ``bar.sync`` barrier: warps arrive; when ``expected_warps`` have, all of them go on."""

    def __init__(self, barrier_id: int, clock_size: int):
        self.id = barrier_id
        self.expected_warps = None
        self.arrived: list = []          # the warps waiting in the current generation
        self.generation = 0
        self.vc = np.zeros(clock_size, np.int32)
        self.released: dict[int, np.ndarray] = {}

    def describe(self) -> str:
        name = "the block's barrier (bar.sync 0)" if self.id == 0 else f"named barrier {self.id}"
        expected = "?" if self.expected_warps is None else self.expected_warps * 32
        return f"{name}: {sum(w.width for w in self.arrived) * 32} of {expected} threads arrived"

    def release_if_complete(self, warps_present: int) -> None:
        """Release the waiting warps once all expected have arrived (all ``warps_present``, the warps of the
        block that have not exited, where the barrier has no thread count)."""
        expected = self.expected_warps if self.expected_warps is not None else warps_present
        if self.arrived and sum(w.width for w in self.arrived) >= expected:
            self.released[self.generation] = self.vc.copy()
            self.released.pop(self.generation - 2, None)
            self.generation += 1
            self.arrived = []
            self.vc[:] = 0
