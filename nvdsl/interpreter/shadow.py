"""Happens-before race detection on shared memory, with vector clocks.

Agents are the block's warps and the asynchronous units working for them: TMA copies completing on
each mbarrier, each warpgroup's wgmma operand reads and each warp's TMA stores (bulk copies) reading shared
memory. Each lane of a warp holds a vector clock (one entry per agent); synchronisation joins them
(mbarrier phases, ``bar.sync``, ``wgmma.wait_group``, ``cp.async.bulk.wait_group``).

Every byte of shared memory remembers its last writer (agent, clock, operation) and, per reading
agent, its last read. An access that is not ordered after a conflicting earlier one is a race, so a
race is found whichever way the warps happen to interleave. Generic-proxy writes also remember their
thread, so a TMA store or wgmma reading them without an intervening ``fence.proxy.async`` is caught.

The lanes of a warp are threads too, not ordered by running in one warp (independent thread scheduling,
since Volta): a warp's clock ticks at each synchronisation of the warp (barriers, mbarrier arrivals,
``bar.warp.sync`` and the other warp-wide ``.sync`` instructions), and two accesses of one byte by
different threads of a warp in the same tick, at least one a write (two atomics excepted), race
(:meth:`Shadow.check_lanes`). Reads remember their thread for this (``read_threads``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NOBODY = 0
MANY = -1       # in read_threads: several threads of the warp read the byte in one tick


class Agents:
    """Numbering of the agents of one block."""

    def __init__(self, warps: int, mbarriers: int):
        self.warps = warps
        self.mbarriers = mbarriers
        self.warpgroups = (warps + 3) // 4
        self.count = 1 + 2 * warps + mbarriers + self.warpgroups

    def warp(self, w: int) -> int:
        return 1 + w

    def tma(self, barrier: int) -> int:
        return 1 + self.warps + barrier

    def wgmma(self, warpgroup: int) -> int:
        """The operand reads of a warpgroup's wgmma groups (one asynchronous operation per warpgroup)."""
        return 1 + self.warps + self.mbarriers + warpgroup

    def bulk(self, w: int) -> int:
        return 1 + self.warps + self.mbarriers + self.warpgroups + w

    def kind(self, agent: int) -> tuple[str, int]:
        if agent <= 0:
            return "nobody", 0
        agent -= 1
        for kind, size in (("warp", self.warps), ("tma", self.mbarriers), ("wgmma", self.warpgroups),
                           ("bulk", self.warps)):
            if agent < size:
                return kind, agent
            agent -= size
        return "unknown", agent


@dataclass(frozen=True)
class Conflict:
    """An access that is not ordered after an earlier conflicting one."""

    kind: str           # "read-after-write", "write-after-read", "write-after-write", "unfenced"
    address: int        # the first byte in conflict
    agent: int          # the earlier access's agent
    clock: int          # its clock
    op: int             # its operation (instruction id), -1 if unknown
    lane: int           # the lane (or thread) of the current access that is not ordered, -1 if none
    other_thread: int | None = None     # between lanes of one warp: the earlier access's thread (MANY: several)


class Shadow:
    """Per-byte access history of one block's shared memory."""

    def __init__(self, nbytes: int, agents: Agents, threads: int):
        self.agents = agents
        self.w_agent = np.zeros(nbytes, np.int32)
        self.w_clock = np.zeros(nbytes, np.int32)
        self.w_op = np.full(nbytes, -1, np.int32)
        self.w_atomic = np.zeros(nbytes, np.bool_)    # the last write was an atomic
        self.reads: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        # per warp agent: the thread (+1) of each byte's last read, MANY where several threads read it in one tick
        self.read_threads: dict[int, np.ndarray] = {}
        # generic-proxy writes not yet fenced: writer thread (+1) and the write's sequence number
        self.g_thread = np.zeros(nbytes, np.int32)
        self.g_seq = np.zeros(nbytes, np.int64)
        self.fence_seq = np.zeros(threads + 1, np.int64)
        self.seq = 0

    def _reads(self, agent: int):
        found = self.reads.get(agent)
        if found is None:
            n = self.w_clock.shape[0]
            found = self.reads[agent] = (np.zeros(n, np.int32), np.full(n, -1, np.int32))
        return found

    # --- checks --------------------------------------------------------------------------------------

    def check_read(self, addresses: np.ndarray, clocks: np.ndarray, lanes: np.ndarray | None = None):
        """Reads of ``addresses`` (bytes) by accessors with vector ``clocks`` (one row per address, or one
        vector for all): the last write of each byte must be ordered before."""
        agents = self.w_agent[addresses]
        if clocks.ndim == 1:
            seen = clocks[agents]
        else:
            seen = clocks[np.arange(addresses.shape[0]), agents]
        bad = seen < self.w_clock[addresses]
        if bad.any():
            i = int(np.argmax(bad))
            a = int(addresses[i])
            return Conflict("read-after-write", a, int(self.w_agent[a]), int(self.w_clock[a]), int(self.w_op[a]),
                            -1 if lanes is None else int(lanes[i]))
        return None

    def check_write(self, addresses: np.ndarray, clocks: np.ndarray, lanes: np.ndarray | None = None,
                    skip_agent: int = -1, atomic: bool = False):
        """Writes of ``addresses``: earlier writes and reads by other agents must be ordered before (an
        atomic need not be ordered after another atomic)."""
        rows = None if clocks.ndim == 1 else np.arange(addresses.shape[0])
        seen = lambda agents: clocks[agents] if rows is None else clocks[rows, agents]
        agents = self.w_agent[addresses]
        bad = seen(agents) < self.w_clock[addresses]
        if atomic:
            bad &= ~self.w_atomic[addresses]
        if bad.any():
            i = int(np.argmax(bad))
            a = int(addresses[i])
            return Conflict("write-after-write", a, int(agents[i]), int(self.w_clock[a]), int(self.w_op[a]),
                            -1 if lanes is None else int(lanes[i]))
        for agent, (clock, ops) in self.reads.items():
            if agent == skip_agent:
                continue
            limit = clocks[agent] if rows is None else clocks[:, agent]
            bad = clock[addresses] > limit
            if bad.any():
                i = int(np.argmax(bad))
                a = int(addresses[i])
                return Conflict("write-after-read", a, agent, int(clock[a]), int(ops[a]),
                                -1 if lanes is None else int(lanes[i]))
        return None

    def check_lanes(self, addresses: np.ndarray, agent: int, epoch: int, threads: np.ndarray, lanes: np.ndarray,
                    write: bool, atomic: bool = False):
        """An access of ``addresses`` by ``threads`` (one per address; their ``lanes``) of the warp ``agent``,
        whose clock is ``epoch``: no other thread of the warp may have written these bytes (or, for a write,
        read them) since the warp last synchronised."""
        same = (self.w_agent[addresses] == agent) & (self.w_clock[addresses] == epoch)
        if same.any():
            writers = self.g_thread[addresses] - 1
            bad = same & (writers != threads)
            if atomic:
                bad &= ~self.w_atomic[addresses]
            if bad.any():
                i = int(np.argmax(bad))
                a = int(addresses[i])
                return Conflict("write-after-write" if write else "read-after-write", a, agent, epoch,
                                int(self.w_op[a]), int(lanes[i]), int(writers[i]))
        readers = self.read_threads.get(agent) if write else None
        if readers is not None:
            clock, ops = self.reads[agent]
            seen = readers[addresses]
            bad = (clock[addresses] == epoch) & (seen != 0) & (seen != threads + 1)
            if bad.any():
                i = int(np.argmax(bad))
                a = int(addresses[i])
                return Conflict("write-after-read", a, agent, epoch, int(ops[a]), int(lanes[i]),
                                MANY if seen[i] == MANY else int(seen[i]) - 1)
        return None

    def check_fenced(self, addresses: np.ndarray):
        """Asynchronous-proxy reads (TMA store, wgmma): generic writes to these bytes must have been
        followed by a ``fence.proxy.async`` of their writing thread."""
        writers = self.g_thread[addresses]
        if not writers.any():
            return None
        bad = (writers > 0) & (self.g_seq[addresses] > self.fence_seq[writers])
        if bad.any():
            i = int(np.argmax(bad))
            a = int(addresses[i])
            return Conflict("unfenced", a, int(self.w_agent[a]), int(self.w_clock[a]), int(self.w_op[a]),
                            int(writers[i]) - 1)
        return None

    # --- records -------------------------------------------------------------------------------------

    def record_read(self, addresses: np.ndarray, agent: int, clock: int, op: int,
                    threads: np.ndarray | None = None) -> None:
        """A read; ``threads`` (per address) for the reads of a warp's threads, checked between its lanes."""
        clocks, ops = self._reads(agent)
        if threads is not None:
            readers = self.read_threads.get(agent)
            if readers is None:
                readers = self.read_threads[agent] = np.zeros(self.w_clock.shape[0], np.int32)
            mine = threads + 1
            seen = readers[addresses]
            merged = np.where((clocks[addresses] == clock) & (seen != 0) & (seen != mine), MANY, mine)
            readers[addresses] = merged
            if threads.shape[0] > 1:        # a byte several threads read at once: one of them stayed
                lost = readers[addresses] != merged
                if lost.any():
                    readers[addresses[lost]] = MANY
        clocks[addresses] = clock
        ops[addresses] = op

    def record_write(self, addresses: np.ndarray, agent: int, clock: int, op: int,
                     threads: np.ndarray | None = None, atomic: bool = False) -> None:
        """A write; ``threads`` (per address, block thread ids) marks generic-proxy writes awaiting a fence."""
        self.w_agent[addresses] = agent
        self.w_clock[addresses] = clock
        self.w_op[addresses] = op
        self.w_atomic[addresses] = atomic
        if threads is None:
            self.g_thread[addresses] = 0
        else:
            self.seq += 1
            self.g_thread[addresses] = threads + 1
            self.g_seq[addresses] = self.seq

    def fence(self, threads: np.ndarray) -> None:
        """``fence.proxy.async`` by these threads: their earlier generic writes become visible to TMA/wgmma."""
        self.fence_seq[threads + 1] = self.seq
