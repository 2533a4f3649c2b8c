"""Loop summaries for the protocol check: skipping the iterations that repeat a state seen before.

A protocol skeleton (see :mod:`.protocol`) runs without data and without a random schedule, so the
block's future depends only on its state: each warp's place in the code and its kept registers, the
mbarriers (phase parity, pending arrivals, transaction bytes, armed copies, waiters), the ``bar.sync``
barriers, and the race detector's records. That state is finite once the loop counters are left out
(an aref's slot and phase live in registers, TMA coordinates are not part of the skeleton), so
a pipelined loop comes back to a state it was in, typically after ``2 * depth`` iterations.

:class:`Summary` looks at the block at each scheduling point. When its *canonical* state (below) equals
one seen earlier, the iterations in between form a period: running another period from the later
state would do exactly what the last one did, whatever the loop counters are, as long as no loop on
the way exits. So the loops that advanced are moved ahead by as many whole periods as fit before any
of them reaches its last iteration, and the simulation goes on from there: the check's cost no longer
depends on trip counts, and the iterations left (the remainder modulo the period, the last ones, the
exits) still run. A period skipped from a state is skipped again wherever that state comes back, in other
instances of the same loops (the K loop of a persistent kernel's last tile, once the tile loop has skipped
to it): the state alone decides that the loops come back to it. Where the state does not repeat (a parity
computed from a loop index, a counter carried through a loop), nothing is skipped and the loop runs in
full, as before.

The canonical state leaves out what the block's future cannot depend on:

* loop indices that no kept operation reads (their slots), and the iteration counters. A running loop's bounds
  are not in the state either: they are computed from registers that are (read loop indices included: a persistent
  kernel's inner trip count computed from its tile index keeps the tile loop from a period), or from values set
  once per block;
* absolute clocks of the race detector: each agent's clocks are taken relative to its own current clock,
  a thread's knowledge older than every live record of that agent counts as "stale", and a record that
  every live thread has already seen counts as "covered" (the detector only ever compares a thread's
  knowledge of an agent with that agent's records, and both only grow);
* absolute phase numbers of mbarriers: phases are relative to the barrier's current phase (whose parity is
  kept); the same for ``bar.sync`` generations, wgmma groups and bulk-copy groups.

A state whose place in the code is not known precisely (a warp inside a loop whose lanes disagree on the
bounds, inside an ``scf.while``, waiting on several barriers or parities at once, or on a wgmma group)
is not recorded: the loop then simply runs on until a state that is.
"""

from __future__ import annotations

import numpy as np

from .core import BACK_EDGE
from .memory import LOCAL, MemRef

STALE = -(1 << 40)      # a thread's knowledge of an agent older than every live record of it
COVERED = -(1 << 41)    # a record every live thread has seen
NEVER = 1 << 40         # above any clock
STALE_SEEN = -3         # a thread's latest observed phase of an mbarrier, relative to its current one, that no wait
                        # can pass on again

# Every attribute of the interpreter's objects that a skeleton block holds, and how the canonical state
# (Summary._key) accounts for it. Skipping periods is sound only if everything the block's future depends on
# is in that state, so tests/test_protocol.py walks a running skeleton block and fails on any attribute (or
# class of object) missing here. Attributes IN_STATE are compared (and their objects walked in turn); the
# others say why the future cannot depend on them.
IN_STATE = "in the canonical state"
FIXED = "set when the object is made, the same at every scheduling point"
REPORTS = "only for the text of reports, not for what is reported"
# Report-only records that keep the last value written per key: whatever a period writes, it writes again in the
# next (the canonical states agree and nothing reads them), so after the first period they are the same at every
# state of the same place, and skipping periods from the later state leaves them as running them would.
LAST_WRITES = "only for reports, the last value written per key: the same after every period (see LAST_WRITES)"
STATE_FIELDS: dict[str, dict[str, str]] = {
    "Block": {
        "warps": IN_STATE, "mbarrier_groups": IN_STATE, "bars": IN_STATE, "registers": IN_STATE,
        "exited": IN_STATE, "shadow": IN_STATE,
        "copies": "no state is recorded while a TMA copy is in flight",
        "launch": FIXED, "kernel": FIXED, "block_id": FIXED, "skeleton": FIXED, "thread_count": FIXED,
        "agents": FIXED, "output": FIXED, "warp_count": FIXED, "paced": FIXED,
        "members": "the warps again, by warpgroup",
        "smem": "a skeleton moves no data; its race detector is `shadow`",
        "rng": "None: skeletons run the fixed schedule (no summary otherwise)",
        "time_ns": "what %globaltimer reads is a register, in the state; skeletons never jump the clock",
        "mbarrier_next": "unused", "summary": "the summary itself",
        "decisions": "in the state: how many there are (the table conditions decided so far; the conditions "
                     "are registers, in the state)",
        "condition": "checked, not a state: every branch on a table must share the first one's computation",
        "trip_values": "in the state: the values the clamps of a table's entries met so far took (Block.trip_choice)",
        "trip_met": "the same values in the order met (one per clamp of trip_values): which one a new clamp takes",
    },
    "Warp": {
        "mask": IN_STATE, "vc": IN_STATE, "wait": IN_STATE, "done": IN_STATE, "frames": IN_STATE,
        "wgmma_committed": IN_STATE, "wgmma_retired": IN_STATE, "wgmma_open": IN_STATE,
        "wgmma_waits": LAST_WRITES, "waited": LAST_WRITES, "last_wait": IN_STATE, "bulk_open": IN_STATE,
        "bulk_committed": IN_STATE, "bulk_counter": "the base its bulk groups are made relative to",
        "env": "its loop-written registers and local variables are in the state (Kernel.loop_slots, local_slots); "
               "the others are written once, before any loop",
        "gen": "where the warp is: its wait and frames", "block": FIXED, "index": FIXED, "threads": FIXED,
        "live": FIXED, "agent": FIXED, "last_run": "the fuzzed scheduler's (skeletons run the fixed schedule)",
        "_lanes_of": "a cache of mask", "_lanes": "a cache of mask", "wgmma_reads": "unused",
        "width": FIXED, "lane_agents": FIXED,
    },
    "Wait": {
        "key": IN_STATE, "info": "the operation waited at, which the key names", "ready": "a function of the key's objects", "describe": REPORTS,
        "spin": "timer jumps, which skeletons never make", "forced": "timer jumps, which skeletons never make",
    },
    "Waiter": {"parity": IN_STATE, "satisfied": IN_STATE, "clock": IN_STATE, "phase": IN_STATE},
    "LoopFrame": {"op": IN_STATE, "i": "the iteration counter a skip moves ahead", "step": FIXED, "hi": FIXED,
                  "iv": FIXED, "boundaries": FIXED},
    "OpaqueFrame": {"op": IN_STATE},
    "WhileFrame": {"op": IN_STATE, "mask": IN_STATE, "active": IN_STATE, "finished": IN_STATE},
    "BranchFrame": {"op": IN_STATE, "mask": IN_STATE},
    "MbarrierGroup": {"barriers": IN_STATE, "base": FIXED, "name": FIXED},
    "Mbarrier": {
        "initialized": IN_STATE, "init_op": IN_STATE, "init_agent": IN_STATE, "init_clock": IN_STATE,
        "expected": IN_STATE, "pending": IN_STATE, "tx": IN_STATE, "phase": IN_STATE, "vc": IN_STATE,
        "completed": IN_STATE, "completed_arrivals": IN_STATE, "arrivals": IN_STATE, "armed": IN_STATE,
        "issued": IN_STATE, "in_flight": IN_STATE, "waiters": IN_STATE, "observed": IN_STATE,
        "unwaited": IN_STATE, "seen": IN_STATE, "seen_at": LAST_WRITES, "group": FIXED, "index": FIXED,
        "agent": FIXED, "tma_agent": FIXED,
    },
    "BarSync": {"expected_warps": IN_STATE, "arrived": IN_STATE, "generation": IN_STATE, "vc": IN_STATE,
                "released": IN_STATE, "id": FIXED},
    "Shadow": {"w_agent": IN_STATE, "w_clock": IN_STATE, "w_op": IN_STATE, "w_atomic": IN_STATE,
               "reads": IN_STATE, "g_thread": IN_STATE, "g_seq": IN_STATE, "fence_seq": IN_STATE,
               "seq": IN_STATE, "agents": FIXED,
               "read_threads": "empty: skeletons do not check races between the lanes of a warp"},
}


class LoopFrame:
    """An ``scf.for`` a warp is running (protocol skeletons only): the driver reads ``i`` for each
    iteration, so a summary can move it ahead, but not across ``boundaries`` (iterations where a comparison of
    the index, such as a prefetch's guard, may change)."""

    __slots__ = ("op", "i", "step", "hi", "iv", "boundaries")

    def __init__(self, op: int, i: int, step: int, hi: int, iv: int, boundaries: tuple = ()):
        self.op, self.i, self.step, self.hi, self.iv = op, i, step, hi, iv
        self.boundaries = boundaries


class TripProbe:
    """What the loop summaries of a skeleton run see of the loops a runtime scalar counts (their trip count is the
    scalar, set to ``value`` for the run: a loop frame whose bound is ``value`` is taken for one of them, and one whose
    bound is ``other``, the value of a second run, says that some loop the scalar does not count has that bound).

    Per block, :meth:`sweep` gives the trip counts to check to cover them all (see protocol.check_protocol): the first
    period the block skips in which every counted loop running advances by the same ``delta`` trips, no other loop
    advances and no index comparison of a counted loop lies ahead, with no counted loop left before it nor entered
    after it. From then on the run with ``value + delta`` trips is the run with ``value`` trips with one more period.
    """

    def __init__(self, value: int, other: int):
        self.value, self.other = value, other
        self.blocks: dict = {}      # block -> [counted frames seen, (first trip count, delta) or None, spoiled]
        self.foreign = False        # a loop the scalar does not count has the bound ``other``

    def _record(self, block) -> list:
        return self.blocks.setdefault(block, [set(), None, False])

    def watch(self, block) -> None:
        """At each scheduling point: which counted loops run."""
        record = self._record(block)
        live = set()
        for w in block.warps:
            for f in w.frames:
                if type(f) is LoopFrame:
                    if f.hi == self.value:
                        live.add(f)
                    elif f.hi == self.other:
                        self.foreign = True
        seen, period, _ = record
        if live - seen if period is not None else seen - live:
            record[2] = True        # a counted loop entered after the period, or left before it
        seen |= live

    def skipped(self, block, before, now) -> None:
        """A period from ``before`` to ``now`` (per warp, its frames and their iterations) was skipped."""
        record = self._record(block)
        if record[1] is not None or record[2]:
            return
        deltas, last = set(), 0
        for warp_before, warp_now in zip(before, now):
            for (frame_before, i_before), (frame, i_now) in zip(warp_before, warp_now):
                if type(frame) is not LoopFrame:
                    continue
                counted = frame.hi == self.value
                if frame is not frame_before:
                    if counted:
                        return      # a counted loop entered anew on the way
                elif counted:
                    if any(boundary > i_before for boundary in frame.boundaries):
                        return      # a comparison of its index changes later: periods from here are not alike
                    deltas.add(i_now - i_before)
                    last = max(last, i_now)
                elif i_now != i_before:
                    return          # a loop the scalar does not count advanced
        if len(deltas) == 1 and 0 not in deltas:
            record[1] = (last + 1, deltas.pop())

    def sweep(self) -> int | None:
        """The trip counts to check, ``range(sweep())``, for every block's runs to be covered (None: some block's
        counted loops have no period that qualifies)."""
        bound = 0
        for seen, period, spoiled in self.blocks.values():
            if not seen:
                continue            # the block runs no counted loop
            if period is None or spoiled:
                return None
            bound = max(bound, period[0] + period[1])
        return bound


class OpaqueFrame:
    """A region a warp is inside whose driver keeps state a summary does not see (divergent ``scf.for``
    bounds, ``scf.while``): no state is recorded while any warp is inside one."""

    __slots__ = ("op",)

    def __init__(self, op: int):
        self.op = op


class WhileFrame:
    """An ``scf.while`` (a polling loop, usually): the mask to restore after it, the lanes still looping and
    the results of those that left are part of the warp's state."""

    __slots__ = ("op", "mask", "active", "finished")

    def __init__(self, op: int, mask: np.ndarray):
        self.op, self.mask, self.active, self.finished = op, mask, mask, []


class BranchFrame:
    """An ``scf.if`` whose lanes disagree: the mask to restore after it is part of the warp's state."""

    __slots__ = ("op", "mask")

    def __init__(self, op: int, mask: np.ndarray):
        self.op, self.mask = op, mask


class Summary:
    """Period detection and iteration skipping for one skeleton block (see the module docstring)."""

    def __init__(self, block, loop_slots: list[int], local_slots: list[int], scopes: dict | None = None):
        self.block = block
        self.loop_slots = loop_slots        # slots written inside loops, but not unread loop indices
        self.scopes = scopes or {}          # slot -> where it may be read (Compiler.scopes)
        self.live: dict[int, list[int]] = {}    # op id -> the loop slots a warp waiting there may still read
        self.counted_bars = not block.kernel.uncounted_barriers
        self.local_slots = local_slots      # slots holding threads' local variables (allocas)
        self.seen: dict = {}
        self.places: set = set()            # where the warps were at the scheduling points seen so far
        self.skipped = 0                    # iterations skipped, over all loops (for tests and reports)
        self.periods: dict = {}             # state -> the period last skipped from it (see _repeat)
        # A unit run's reports are never shown (protocol.check_protocol finds them again warp by warp), so what only
        # their texts read leaves its state: each warp's last mbarrier wait. A warp idle while the others loop (a
        # ping-pong consumer waiting for its turn) never came back to the same state: its last wait's phase,
        # relative to the barrier's current one, only grows.
        self.reports = not block.launch.host.units
        self.probe = block.launch.host.probe

    def observe(self, current: int) -> None:
        """At a scheduling point (every warp suspended or done, ``current`` the scheduler's position):
        record the state, and skip whole periods when it was seen before."""
        # The full state is costly to compare: look at it only once per round of the scheduler and where
        # the warps' places in the code (a part of the state) have come round before.
        block = self.block
        if self.probe is not None:
            self.probe.watch(block)
        anchor = next((w.index for w in block.warps if w.frames and not w.done), None)
        if anchor is None or current != anchor:
            return
        place = (current,) + tuple(None if w.done or w.wait is None else (w.wait.info.id, tuple(f.op for f in w.frames))
                                   for w in block.warps)
        if place not in self.places:
            self.places.add(place)
            return
        key = self._key(current)
        if key is None:
            return
        frames = [[(f, getattr(f, "i", None)) for f in w.frames] for w in self.block.warps]
        earlier = self.seen.get(key)
        if earlier is None:
            self.seen[key] = [frames]
            return
        # States recorded before an earlier skip stay valid: a skip stands for the iterations it skipped, so
        # the way from such a state to this one is the same as if they had run. The first time a state was seen
        # is kept besides the latest: an inner loop's skip moves the latest past where an outer loop's next
        # iteration comes back to it (a persistent kernel's tile loop repeats from the first tile on).
        for before in reversed(earlier):
            if self._skip(before, frames):
                if self.probe is not None:
                    self.probe.skipped(block, before, frames)
                if all(f is g for b, n in zip(before, frames) for (g, _), (f, _) in zip(b, n)
                       if type(f) is LoopFrame):       # no loop was left on the way (branches are in the state)
                    self.periods[key] = [[(i, 0 if i is None else j - i) for (_, i), (_, j) in zip(b, n)]
                                         for b, n in zip(before, frames)]
                frames = [[(f, getattr(f, "i", None)) for f in w.frames] for w in self.block.warps]
                break
        # A period this state went through before runs again from it, in whichever instances of the loops: after
        # an outer loop's skip (a persistent kernel's tile loop) the inner loop's period is known at once.
        period = self.periods.get(key)
        if period is not None and self._repeat(period, frames):
            frames = [[(f, getattr(f, "i", None)) for f in w.frames] for w in self.block.warps]
        self.seen[key] = [earlier[0], frames]

    def _repeat(self, period, now) -> bool:
        """Skip the periods a state went through before (``period``: per warp and frame, the iteration it was at
        and how far it advanced; no loop was left or entered anew on the way), from any frames at iterations on
        the same sides of their loops' index comparisons."""
        advances = {}
        for witnessed, current in zip(period, now):
            for (i_then, delta), (frame, i_now) in zip(witnessed, current):
                if i_now is None:
                    continue
                if any(min(i_then, i_now) < boundary <= max(i_then, i_now) for boundary in frame.boundaries):
                    return False
                if delta:
                    advances[frame] = (delta, i_now, i_now)
        return bool(advances) and self._advance(advances)

    def _skip(self, earlier, now) -> bool:
        advances = {}
        for before, after in zip(earlier, now):
            for (frame_before, i_before), (frame, i_now) in zip(before, after):
                if frame is not frame_before:
                    if i_now != i_before:
                        return False
                    break           # deeper frames are new instances too, at the same iterations
                if i_now != i_before:
                    advances[frame] = (i_now - i_before, i_now, i_before)
        return bool(advances) and self._advance(advances)

    def _advance(self, advances: dict) -> bool:
        """Move each frame ahead by as many of its ``(delta, i_now, i_before)`` periods as fit before any of them
        leaves its loop or reaches one of its index comparisons' boundaries."""
        periods = min((frame.hi - 1 - i_now) // delta for frame, (delta, i_now, _) in advances.items())
        for frame, (delta, i_now, i_before) in advances.items():
            # every iteration from the earlier state to the one skipped to must see the index's comparisons alike
            for boundary in frame.boundaries:
                if i_before < boundary <= i_now:
                    return False
                if boundary > i_now:
                    periods = min(periods, (boundary - 1 - i_now) // delta)
        if periods < 1:
            return False
        for frame, (delta, _, _) in advances.items():
            frame.i += periods * delta
            self.skipped += periods * delta // frame.step
        return True

    # --- the canonical state -------------------------------------------------------------------------

    def _key(self, current: int):
        block = self.block
        if block.copies:
            return None
        clocks = _Clocks(block)
        parts = [current, block.exited, tuple(sorted(block.registers.items())), len(block.decisions)]
        if block.trip_values:
            parts.append(frozenset(block.trip_values.items()))
        owners = {}
        for w in block.warps:
            if w.done:
                parts.append(("done", w.wgmma_committed - clocks.wgmma_base[w.warpgroup]))
                continue
            wait = w.wait
            if wait is None or wait.key is None:
                return None
            position = []
            for f in w.frames:
                if isinstance(f, OpaqueFrame):
                    return None
                if isinstance(f, LoopFrame):
                    position.append(f.op)
                elif isinstance(f, WhileFrame):
                    position.append((f.op, f.mask.tobytes(), np.asarray(f.active).tobytes(),
                                     tuple(_value(v) for v in f.finished)))
                else:
                    position.append((f.op, f.mask.tobytes()))
            kind = wait.key[0]
            at = wait.info.id
            if kind == BACK_EDGE:
                _, op, at = wait.key
                where = (op,)
            elif kind == "mbarrier":
                _, op, bar, parity, waiter = wait.key
                owners[id(waiter)] = w.index
                where = (op, bar.agent, parity, waiter.satisfied, waiter.phase - bar.phase if waiter.satisfied else 0,
                         clocks.vector(waiter.clock))
            elif kind == "bar.sync":
                _, op, barrier_id, generation = wait.key
                where = (op, barrier_id, generation - block.bars[barrier_id].generation)
            elif kind == "wgmma":
                _, op, target = wait.key
                where = (op, target - clocks.wgmma_base[w.warpgroup])
            else:
                return None
            parts.append((tuple(position), where, w.mask.tobytes(), self._registers(at, w.env),
                          clocks.vector(w.vc),
                          w.wgmma_committed - clocks.wgmma_base[w.warpgroup],
                          w.wgmma_retired - clocks.wgmma_base[w.warpgroup], w.wgmma_open, _last_wait(w.last_wait) if self.reports else None,
                          (w.bulk_open - np.where(w.bulk_open > 0, w.bulk_counter, 0)).tobytes(),
                          tuple(sorted((lane, tuple(g - w.bulk_counter for g in groups))
                                       for lane, groups in w.bulk_committed.items()))))
        last_waits = {}
        for w in block.warps:
            if not w.done and w.last_wait is not None and self.reports:
                last_waits.setdefault(id(w.last_wait[1]), set()).add(w.last_wait[3])
        for number, group in sorted(block.mbarrier_groups.items()):
            for bar in group.barriers:
                parts.append(_mbarrier(bar, clocks, owners, last_waits))
                if parts[-1] is None:
                    return None
        waited_bars = {w.wait.key[2] for w in block.warps if not w.done and w.wait.key[0] == "bar.sync"}
        for number, bar in sorted(block.bars.items()):
            if number and not bar.arrived and number not in waited_bars and self.counted_bars:
                # an idle named barrier is as good as a fresh one: no warp reads what it released, and every
                # arrival names its thread count (a bar.sync made on first use starts the same way)
                continue
            parts.append((number, bar.expected_warps, tuple(w.index for w in bar.arrived), clocks.vector(bar.vc),
                          tuple(sorted((g - bar.generation, clocks.vector(c)) for g, c in bar.released.items()))))
        parts.append(clocks.shadow())
        return tuple(parts)

    def _registers(self, at: int, env) -> tuple:
        ndarray = np.ndarray
        values = [None if v is None else (v.tobytes(), v.dtype.char, v.shape) if type(v) is ndarray else _value(v)
                  for v in map(env.__getitem__, self._live(at))]
        values += [_value(env[s]) for s in self.local_slots if isinstance(env[s], MemRef)]
        return tuple(values)

    def _live(self, at: int) -> list[int]:
        live = self.live.get(at)
        if live is None:
            scopes = self.scopes
            live = self.live[at] = [s for s in self.loop_slots if _live_at(at, scopes.get(s))]
        return live


def _live_at(at: int, scope) -> bool:
    """Whether a value may still be read by a warp stopped at operation ``at``: in SSA form only operations after
    its definition in its own block (or nested in them) read it, and a loop's next iteration defines it anew before
    reading it. A warp whose key names ``at`` (the key holds every warp's position) cannot depend on the others."""
    if scope is None:
        return True
    (first, last), defined = scope
    return first <= at <= last and at > defined


def _value(v):
    if v is None:
        return None
    if isinstance(v, np.ndarray):
        return (v.dtype.str, v.shape, v.tobytes())
    if isinstance(v, MemRef):
        offset = v.offset.tobytes() if isinstance(v.offset, np.ndarray) else v.offset
        content = v.buffer.data.tobytes() if v.buffer.space == LOCAL else id(v.buffer)
        return ("memref", content, offset, v.shape, v.strides, v.mem_dtype.str)
    if isinstance(v, (int, float, bool, str)):
        return v
    if type(v) is tuple:
        return ("tuple", v)       # what a skeleton computes from a table's entries (ops_symbolic.compile_symbolic)
    return ("object", id(v))       # barrier groups, tensor maps: created once, compared by identity


def _last_wait(last):
    if last is None:
        return None
    op, bar, parity, phase = last
    return op, bar.agent, parity, phase - bar.phase


def _mbarrier(bar, clocks: "_Clocks", owners: dict, last_waits: dict):
    phase = bar.phase
    waiters = []
    for waiter in bar.waiters:
        owner = owners.get(id(waiter))
        if owner is None:
            return None
        waiters.append((owner, waiter.parity))
    # a wait reads the clock of the last completed phase only (Mbarrier.completed_phase: of the parity that
    # passes); the phase before it is kept for reports on a warp's last wait
    history = {phase - 1} | {p for p in last_waits.get(id(bar), ())}
    first_unwaited = min(bar.unwaited, default=phase)
    observed = max(bar.observed, first_unwaited - 1) - phase
    return (bar.agent, bar.initialized, bar.init_op, bar.init_agent, clocks.record(bar.init_agent, bar.init_clock),
            bar.expected, bar.pending, bar.tx, phase & 1, clocks.vector(bar.vc),
            tuple(sorted((p - phase, clocks.vector(c)) for p, c in bar.completed.items() if p in history)),
            tuple(sorted((p - phase, tuple(a)) for p, a in bar.completed_arrivals.items() if p in history)),
            tuple(bar.arrivals),
            tuple(sorted((t, (max(p - phase, -1), tx, op)) for t, (p, tx, op) in bar.armed.items())),
            tuple(sorted(bar.issued.items())), bar.in_flight, tuple(waiters), observed,
            tuple(sorted((p - phase, op) for p, op in bar.unwaited.items())),
            # a wait passes on phase - 1 or phase - 2 at the oldest (Mbarrier.completed_phase): a thread's latest
            # observed phase below that can never make one stale again (Mbarrier.stale), however old it is
            np.maximum(bar.seen - phase, STALE_SEEN).tobytes())


class _Clocks:
    """The race detector's clocks of one block, made relative (see the module docstring)."""

    def __init__(self, block):
        agents = block.agents
        self.block = block
        base = np.zeros(agents.count, np.int64)
        warps = block.warps
        self.wgmma_base = [0] * agents.warpgroups
        for w in warps:
            for k in range(w.width):
                agent = agents.warp(w.index + k)
                base[agent] = int(w.vc[:, agent].max())
            base[agents.bulk(w.index)] = w.bulk_counter
            g = w.warpgroup
            self.wgmma_base[g] = max(self.wgmma_base[g], w.wgmma_committed)
        for g, committed in enumerate(self.wgmma_base):
            base[agents.wgmma(g)] = committed
        for group in block.mbarrier_groups.values():
            for bar in group.barriers:
                base[bar.tma_agent] = bar.phase
        self.base = base
        live = [w.vc[w.live] for w in warps if not w.done]
        # the least any live thread knows of each agent: records at or below it can never conflict again
        self.known = np.min([v.min(axis=0) for v in live], axis=0) if live else np.full(agents.count, NEVER)
        shadow = block.shadow
        w_clock = shadow.w_clock.astype(np.int64)
        self.known = self.known.astype(np.int64)
        lowest = np.full(agents.count, NEVER, np.int64)
        np.minimum.at(lowest, shadow.w_agent, np.where(w_clock > self.known[shadow.w_agent], w_clock, NEVER))
        self._live_reads = {}
        for agent, (clock, _) in shadow.reads.items():
            live_reads = clock[clock > self.known[agent]]
            self._live_reads[agent] = live_reads
            if live_reads.size:
                lowest[agent] = min(lowest[agent], int(live_reads.min()))
        for group in block.mbarrier_groups.values():
            for bar in group.barriers:
                if bar.initialized and bar.init_clock > self.known[bar.init_agent]:
                    lowest[bar.init_agent] = min(lowest[bar.init_agent], bar.init_clock)
        # Knowledge below every live record and below the agent's own clock (where its future records start)
        # compares the same way with all of them: it is "stale", whatever its value.
        self.threshold = np.minimum(lowest, base)

    def live_reads(self, agent: int) -> set:
        """The clocks of an agent's read records that some live thread may still conflict with."""
        found = self._live_reads.get(agent)
        if isinstance(found, np.ndarray):
            found = self._live_reads[agent] = set(np.unique(found).tolist())
        return found or set()

    def vector(self, v):
        if v is None:
            return None
        v = np.asarray(v, np.int64)
        return np.where(v < self.threshold, STALE, v - self.base).tobytes()

    def record(self, agent: int, clock: int):
        return COVERED if clock <= self.known[agent] else clock - int(self.base[agent])

    def shadow(self):
        shadow = self.block.shadow
        agents = shadow.w_agent
        writes = np.where(shadow.w_clock <= self.known[agents], COVERED, shadow.w_clock - self.base[agents])
        reads = tuple((agent, np.where(clock <= self.known[agent], COVERED, clock - self.base[agent]).tobytes(),
                       ops.tobytes()) for agent, (clock, ops) in sorted(shadow.reads.items()))
        written = shadow.g_thread > 0
        return (agents.tobytes(), writes.tobytes(), shadow.w_op.tobytes(), shadow.w_atomic.tobytes(), reads,
                shadow.g_thread.tobytes(), np.where(written, shadow.g_seq - shadow.seq, 0).tobytes(),
                (shadow.fence_seq - shadow.seq).tobytes())
