"""Running a launch: blocks one after the other, the warps of a block interleaved by a scheduler.

A warp runs until it reaches a point where it must wait (a barrier, an mbarrier phase); with a
fuzzing seed it may also be switched out after any operation touching shared or global memory, and the
launch runs the warps of a few blocks interleaved (:class:`~.program.Launch`). Without a seed
the schedule is deterministic (each warp runs until it blocks, then the next one in order; a protocol
skeleton run with warpgroup units also switches at each loop back-edge) and TMA copies land as soon as
they are issued; with a seed the next warp is drawn at random and copies land
at random later points. When no warp can go on, the block is deadlocked and the report names every
waiting warp, what it waits for, and the state of that barrier.
"""

from __future__ import annotations

import random

import numpy as np

from ..errors import KernelFault
from . import values as V
from .core import BACK_EDGE, OpInfo
from .memory import SHARED, Buffer
from .period import Summary
from .shadow import Agents, Shadow
from .skeleton import GRANULE_BITS, Diverged, OverBudget, Undecided
from .sync import BarSync

# A fuzzed schedule draws the next warp at random but, like the hardware's warp schedulers, never
# leaves a warp that could run waiting for more than about two rounds of the block's warps (this many
# scheduling steps per warp). Without the bound a warp that only polls a barrier can fall two phases
# behind and wait forever on a parity that has come round again: a real but practically unreachable
# hazard of warps that wait on barriers whose phases they do not need.
STARVATION_ROUNDS = 2

# How far the simulated %globaltimer jumps when every warp is stuck and some poll a barrier with a
# deadline (an Mbarrier.try_wait(timeout_ns=...)): far enough for any deadline to pass.
TIMER_JUMP_NS = 1 << 50
# Polling loops that get nothing but timeouts this many times in a row wait forever: a deadlock.
MAX_IDLE_JUMPS = 3


class Warp:
    """32 lanes running the kernel body together, with their registers, active mask and clocks.

    In a protocol skeleton a warp object may stand for a whole warpgroup (``width`` 4: the warpgroup's 128
    lanes in lockstep, see :class:`Block`); each lane then keeps its own warp's agent in ``lane_agents``."""

    def __init__(self, block: "Block", index: int, env: list, width: int = 1):
        self.block = block
        self.index = index
        self.env = env
        self.width = width
        lanes = V.LANES * width
        self.threads = np.arange(index * V.LANES, index * V.LANES + lanes, dtype=np.int64)
        self.live = self.threads < block.thread_count
        self.mask = self.live.copy()
        self.agent = block.agents.warp(index)
        self.vc = np.zeros((lanes, block.agents.count), np.int32)
        # each lane's own agent (its warp's): one column per lane, where a warpgroup runs as one unit
        self.lane_agents = None if width == 1 else \
            np.repeat([block.agents.warp(index + k) for k in range(width)], V.LANES)
        if width == 1:
            self.vc[:, self.agent] = 1
        else:
            self.vc[np.arange(lanes), self.lane_agents] = 1
        self.wgmma_committed = 0        # wgmma groups committed so far
        self.wgmma_retired = 0
        self.wgmma_open = False         # a group has wgmma.mma_async issued but not committed
        self.wgmma_reads: list = []     # (group, op) of issued operand reads, for reports
        self.bulk_open = np.zeros(lanes, np.int64)         # per lane: id of its open bulk group (0: none)
        self.bulk_committed: dict[int, list] = {}           # per lane: ids of committed, unretired groups
        self.bulk_counter = 0
        self._lanes_of = None
        self._lanes = None
        self.gen = None
        self.wait = None
        self.done = False
        self.last_run = 0
        self.waited: dict[int, tuple[int, int]] = {}   # barrier number -> (op, parity) of the last wait
        self.last_wait = None                          # (op, barrier, parity, phase) of the last mbarrier wait
        self.wgmma_waits: dict[int, dict] = {}         # wgmma group -> the warp's last waits when it was issued
        self.frames: list = []                         # in skeletons: the loops and branches the warp is in

    @property
    def epoch(self) -> int:
        return int(self.vc[0, self.agent])

    def agent_of(self, lane: int) -> tuple[int, int]:
        """The agent of a lane (its warp's) and that agent's current clock."""
        agent = self.agent if self.lane_agents is None else int(self.lane_agents[lane])
        return agent, int(self.vc[lane, agent])

    def tick(self) -> None:
        """After a release: later accesses of this warp are not covered by it."""
        if self.lane_agents is None:
            self.vc[:, self.agent] += 1
        else:
            self.vc[np.arange(self.vc.shape[0]), self.lane_agents] += 1

    def warps_active(self) -> np.ndarray:
        """Per warp this object stands for: whether any of its lanes is active."""
        return self.mask.reshape(self.width, V.LANES).any(axis=1)

    def lanes(self) -> np.ndarray:
        """The active lanes' numbers (cached per mask: masks are replaced, never changed in place)."""
        if self._lanes_of is not self.mask:
            self._lanes_of = self.mask
            self._lanes = np.flatnonzero(self.mask)
        return self._lanes

    active_lanes = lanes

    @property
    def warpgroup(self) -> int:
        return self.index // 4

    def describe(self, lanes=None) -> str:
        first, last = int(self.threads[0]), int(self.threads[-1])
        text = f"warp {self.index} (threads {first}-{last})"
        if lanes is not None and len(lanes) and len(lanes) < int(self.live.sum()):
            shown = ", ".join(str(int(self.threads[l])) for l in lanes[:4])
            text += f", thread{'s' if len(lanes) > 1 else ''} {shown}{', ...' if len(lanes) > 4 else ''}"
        return text


class Block:
    """One thread block: its warps, shared memory, barriers, the race detector and the schedule."""

    def __init__(self, launch, block_id: tuple[int, int, int], skeleton: bool = False):
        self.launch = launch
        kernel = launch.kernel
        self.kernel = kernel
        self.block_id = block_id
        self.skeleton = skeleton      # a protocol skeleton: no data, shared memory watched in 128-byte granules
        bx, by, bz = launch.block_dims
        self.thread_count = bx * by * bz
        warps = (self.thread_count + V.LANES - 1) // V.LANES
        self.agents = Agents(warps, kernel.mbarrier_count)
        # undefined at launch on a GPU: all-ones bytes (NaN, -1) make a read before a write show
        self.smem = Buffer(np.full(launch.smem_bytes, 0xFF, np.uint8), "shared memory", SHARED)
        watched = (launch.smem_bytes >> GRANULE_BITS) + 1 if skeleton else launch.smem_bytes
        self.smem.shadow = self.shadow = Shadow(watched, self.agents, self.thread_count)
        self.mbarrier_groups: dict = {}
        self.mbarrier_next = 0
        self.bars: dict[int, BarSync] = {}
        self.copies: list = []
        self.rng: random.Random | None = launch.rng
        self.time_ns = 1_000_000
        self.registers: dict[int, int] = {}
        self.output = launch.output
        self.warp_count = warps
        # Protocol skeletons may run a warpgroup's 4 warps as one unit of 128 lanes in lockstep (the
        # warpgroups in ``Host.units``): while their lanes agree this is one of the schedules the warps may
        # take, at a quarter of the cost; where they part (a warp waits with no lane of another warp of the
        # unit beside it) the run stops with Diverged and the check runs that warpgroup warp by warp.
        units = launch.host.units if skeleton else None
        self.warps = []
        index = 0
        while index < warps:
            width = 4 if units and index % 4 == 0 and index // 4 in units and \
                (index + 4) * V.LANES <= self.thread_count else 1
            self.warps.append(Warp(self, index, launch.warp_env(self, index, width), width))
            index += width
        # A skeleton run with units is paced: each warp object gets a scheduling point at every back-edge of a loop
        # whose body can wait, and the next warp in order runs after it. The fixed schedule otherwise lets a warp
        # run until it blocks, so the warps' relative progress per round, and with it the period a loop summary
        # finds, depends on how many stages a round frees (3 per round for a GEMM whose consumers are units: a
        # period of lcm(3, 8) = 24 K steps instead of the ring's 8). Paced, every runner advances about one
        # iteration per round. A warp may be switched out anywhere on the hardware: this is one of its schedules.
        self.paced = bool(units) and self.rng is None
        self.members: dict[int, list] = {}      # warpgroup -> the warp objects running its warps
        for w in self.warps:
            self.members.setdefault(w.warpgroup, []).append(w)
        self.exited = 0                         # warps that have exited (a unit counts as its warps)
        self.decisions: dict = {}       # skeletons: table condition -> whether its branch is taken
        self.condition = None           # the computation every branch on a table entry must share
        self.trip_values: dict = {}     # skeletons: clamp of a table's entries -> the value it takes in this run
        self.trip_met: list = []        # and (least, most, value) of each, in the order the block met them

    @property
    def name(self) -> str:
        return f"block ({', '.join(map(str, self.block_id))})"

    # --- reports ---------------------------------------------------------------------------------------

    def fault(self, code: str, message: str, info: OpInfo | None, hint: str | None = None,
              warp: Warp | None = None, lanes=None, **details) -> KernelFault:
        """A report of a broken rule at ``info``'s line, naming this block (and warp, lanes)."""
        where = self.name + (f", {warp.describe(lanes)}" if warp is not None else "")
        details.update(block=self.block_id, warp=None if warp is None else warp.index,
                       op=None if info is None else info.name)
        return KernelFault(f"{message}\n  in {where}", code=code, hint=hint,
                           loc=None if info is None else info.loc, details=details)

    def table_decision(self, condition: tuple, info: OpInfo) -> bool:
        """Which way a skeleton's branch on a table entry goes (``protocol.table_branches``): the same for the same
        condition of the same entries, whichever role asks; taken for the first ``Host.table_taken`` conditions the
        block meets."""
        shape = _without_entries(condition)
        if self.condition is None:
            self.condition = (shape, info)
        elif self.condition[0] != shape:
            raise Undecided(f"roles branch on different conditions of a table's entries ({self.condition[1].where()}, "
                            f"{info.where()}): the check cannot tell whether they agree")
        decided = self.decisions.get(condition)
        if decided is None:
            host = self.launch.host
            decided = self.decisions[condition] = host.table_taken is None or len(self.decisions) < host.table_taken
            host.table_entries = max(host.table_entries, len(self.decisions))
        return decided

    def trip_choice(self, clamp: tuple, least: int, most: int) -> int:
        """The value a skeleton's clamp of table entries takes (a trip count read on the GPU; ``protocol.
        table_branches``): the same for the same computation of the same entries, whichever role computes it; the
        n-th new one the block meets takes the n-th value of its ``Host.trip_cases`` prefix, or its least."""
        value = self.trip_values.get(clamp)
        if value is None:
            cases = self.launch.host.trip_cases
            prefix = cases.prefix.get(self.block_id, ()) if cases is not None else ()
            n = len(self.trip_met)
            value = self.trip_values[clamp] = prefix[n] if n < len(prefix) else least
            self.trip_met.append((least, most, value))
        return value

    def line_of(self, op_id: int) -> str:
        if op_id is None or op_id < 0:
            return "an unknown line"
        info = self.kernel.infos[op_id]
        return str(info.loc) if info.loc else info.name

    # --- scheduling ------------------------------------------------------------------------------------

    def run(self) -> None:
        for _ in self.steps():
            pass

    def steps(self):
        """Run the block, yielding after each scheduling step (a seeded launch interleaves blocks by them)."""
        body = self.kernel.body
        for w in self.warps:
            w.gen = _warp_body(body, w)
        current = 0         # the index of the warp that ran last (a unit's first warp)
        position = 0        # and its place in self.warps (after a unit of 4 warps the two differ)
        steps = 0
        idle_jumps = 0
        warps = self.warps
        starvation = STARVATION_ROUNDS * len(warps)
        budget = self.launch.host.budget if self.skeleton else None
        deadline = self.launch.host.deadline if self.skeleton else None
        count = len(warps)
        rng = self.rng
        summary = None
        rotate = False      # the warp that ran last stopped at a back-edge: the next one in order runs
        if self.skeleton and rng is None:
            summary = self.summary = Summary(self, self.kernel.loop_slots, self.kernel.local_slots,
                                                   self.kernel.scopes)
        while True:
            yield
            if summary is not None and steps:
                summary.observe(current)
            if rng is not None and self.copies and rng.random() < 0.25:
                self.land(self.copies.pop(rng.randrange(len(self.copies))))
            if rng is None:
                chosen = None
                start = position + 1 if rotate else position
                for step in range(count):
                    w = warps[(start + step) % count]
                    if not w.done and (w.wait is None or w.wait.forced or w.wait.ready()):
                        chosen = w
                        position = (start + step) % count
                        break
            else:
                ready = [w for w in warps if not w.done and (w.wait is None or w.wait.forced or w.wait.ready())]
                chosen = None
                if ready:
                    oldest = min(ready, key=lambda w: w.last_run)
                    chosen = oldest if steps - oldest.last_run > starvation else rng.choice(ready)
            if chosen is None:
                if self.copies:
                    index = 0 if rng is None else rng.randrange(len(self.copies))
                    self.land(self.copies.pop(index))
                    continue
                if all(w.done for w in warps):
                    self.check_exit()
                    return
                self.time_out_polling_waits(idle_jumps)
                idle_jumps += 1
                continue
            if chosen.wait is None or not chosen.wait.forced:
                idle_jumps = 0      # something happened besides polling loops giving up
            current = chosen.index
            steps += 1
            if budget is not None and steps > budget:
                raise OverBudget(f"the synchronisation of {self.name} takes more than {budget} scheduling steps")
            if deadline is not None and steps % 64 == 0 and deadline.passed():
                raise OverBudget(f"checking the synchronisation of {self.name} took longer than the check's time "
                                f"budget ({steps} scheduling steps simulated, no violation found)")
            chosen.last_run = steps
            chosen.wait = None
            try:
                chosen.wait = next(chosen.gen)
            except StopIteration:
                chosen.done = True
                self.exited += chosen.width
                self.on_exit(chosen)
                continue
            wait = chosen.wait
            rotate = wait is not None and wait.key is not None and wait.key[0] == BACK_EDGE
            if chosen.width > 1 and wait is not None and not chosen.warps_active().all():
                raise Diverged(chosen.warpgroup)

    def time_out_polling_waits(self, jumps: int) -> None:
        """No warp can run and no copy is in flight: polling loops (try_wait in user code) get their try_wait back,
        false, after a long time, so a deadline they poll for may pass. Where no warp polls, or ``jumps`` jumps of
        the timer in a row brought nothing but timeouts, the block is deadlocked."""
        spinning = [w for w in self.warps if not w.done and w.wait is not None and w.wait.spin
                    and not w.wait.forced and not self.skeleton]
        if not spinning or jumps >= MAX_IDLE_JUMPS:
            raise self.deadlock()
        self.time_ns += TIMER_JUMP_NS
        for w in spinning:
            w.wait.forced = True

    def check_exit(self) -> None:
        """A block must not end while TMA loads into its shared memory may still be in flight: each
        load's phase must have been waited for by some thread."""
        for group in self.mbarrier_groups.values():
            for bar in group.barriers:
                for phase, op in bar.unwaited.items():
                    info = self.kernel.infos[op]
                    raise self.fault("unwaited-copy", f"the block ends without any thread waiting for phase {phase} "
                                     f"of {bar.name}, on which this TMA load completes: on the GPU the copy may "
                                     "still be writing shared memory when the block exits", info,
                                     hint="wait (Mbarrier.try_wait) for every phase that TMA loads complete on, "
                                          "or do not issue loads whose data is never used")

    def on_exit(self, w: Warp) -> None:
        """An exited warp no longer counts towards the block's barrier 0."""
        bar = self.bars.get(0)
        if bar is not None:
            bar.release_if_complete(self.warp_count - self.exited)

    def land(self, copy) -> None:
        copy.land(self)

    def deadlock(self) -> KernelFault:
        waiting = [w for w in self.warps if not w.done]
        lines, seen = [], {}
        for w in waiting:
            wait = w.wait
            key = (wait.info.id, wait.describe()) if wait is not None else (None, "runnable")
            seen.setdefault(key, []).append(w)
        first_info = None
        for (op_id, text), group in seen.items():
            info = self.kernel.infos[op_id] if op_id is not None else None
            first_info = first_info or info
            who = group[0].describe() if len(group) == 1 else \
                f"warps {', '.join(str(w.index) for w in group)}"
            where = f" at {info.loc}" if info is not None and info.loc else ""
            lines.append(f"  {who}{where}: {text}")
        done = [w.index for w in self.warps if w.done]
        if done:
            lines.append(f"  warps {', '.join(map(str, done))} have exited")
        message = "deadlock: every warp that has not exited waits, and nothing can wake it\n" + "\n".join(lines)
        return self.fault("deadlock", message, first_info,
                          hint="check the arrival counts of Mbarrier.init, the transaction bytes of "
                               "arrive(...) against the TMA boxes, and that each wait's parity is the number "
                               "of phases the barrier completed before, modulo 2",
                          waits=[text for (_, text) in seen])


def _without_entries(condition):
    """A table condition with the entries' indices left out: the computation itself."""
    if type(condition) is not tuple:
        return condition
    if condition[0] == "load":
        return condition[:2]
    return tuple(_without_entries(part) for part in condition)


def _warp_body(body, w: Warp):
    if body.generator:
        yield from body.run(w)
    else:
        body.run(w)
