"""The static check of a kernel's barrier protocol, run on the traced module before anything runs.

Each kernel is cut down to its *synchronisation skeleton*: the mbarrier operations, ``bar.sync``,
TMA loads (as the bytes they complete), wgmma groups (as the shared memory they read), and the
control flow and arithmetic those depend on (a backward slice). The skeleton of one block (of the
first and the last block when it depends on the block's index) is then executed by the interpreter
with the exact mbarrier semantics, without data: loops run their real trip counts (so trip counts
that are not a multiple of the stage count, and phases carried across persistent tiles, are what
is checked), and the race detector watches shared memory in 128-byte granules. A warpgroup's 4 warps run
as one unit of 128 lanes while they run alike, each warp object switched out at every loop back-edge so that
loops advance together and loop summaries find their periods at their true length; what a unit run reports is
found again warp by warp, on the schedule that lets each warp run until it blocks.

It finds: arrival counts that never complete a phase (a deadlock) or complete it early, ``expect_tx``
bytes that differ from the boxes completing on the barrier, waits whose parity passes before the
data landed or never passes, waits that pass on a phase their threads already waited for (a parity not
flipped where a ring wraps: ``stale-phase-wait``, at the wait), stages refilled before their consumers released
them or while a wgmma may still read them, mbarriers used before their initialisation is ordered, mbarrier indices
and shared-memory tiles outside their range, barriers reached by part of a warp. A violation raises :class:`~nvdsl.ProtocolError`
with the lines involved. Where the skeleton depends on memory contents or runtime scalars, or is
too long to run, the check cannot decide and says so (it returns the reason) instead of guessing. Two kinds of
these it does decide. A table the kernel only reads, on whose entries every role branches alike (a grouped GEMM's
tile table, whose empty tiles every role skips; see :func:`table_branches`), or through trip counts that clamp its
entries between two constants (a range of steps per tile read on the GPU, ``nt.load_index``: every role computes
``max(min(x, most), least)`` of the same entries; each block runs every combination of the values its clamps can
take, :class:`~.program.TripCases`, while they are few enough: :data:`MAX_TRIP_RUNS`). And a runtime scalar
that is only the trip count of loops (``for_range(n)`` in each role; see :func:`check_trip_counts`): the
skeleton's states repeat with a period in the trip count, which two probe runs find, so the trip counts below the
first repeat plus one period cover them all (:func:`_decide_every_trip_count`); a violation names the least one
("when n = 3"). Generic-proxy fences and TMA store sources involve ordinary stores, which the skeleton leaves out:
the interpreter checks those when the kernel runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from mlir import ir

from ..errors import KernelFault, ProtocolError
from ..signature import ARRAY, ArgSpec
from .budget import Deadline
from .core import source_location
from .memory import is_private
from .period import TripProbe
from .program import Program, TripCases
from .skeleton import MEMORY_READS, SKELETON_OMITS, Diverged, OverBudget, Undecided

ROOTS = frozenset({
    "nvgpu.mbarrier.init", "nvgpu.mbarrier.arrive", "nvgpu.mbarrier.arrive.expect_tx",
    "nvgpu.mbarrier.arrive.nocomplete", "nvgpu.mbarrier.try_wait.parity", "nvvm.mbarrier.try_wait",
    "nvgpu.tma.async.load", "nvgpu.warpgroup.mma", "nvvm.wgmma.mma_async", "nvvm.wgmma.commit.group.sync.aligned",
    "nvvm.wgmma.wait.group.sync.aligned", "nvvm.wgmma.fence.aligned", "gpu.barrier", "nvvm.barrier",
    "nvvm.barrier0", "nvvm.setmaxregister",
})
MBARRIER_OPS = frozenset(name for name in ROOTS if "mbarrier" in name)
TERMINATORS = frozenset({"scf.yield", "scf.condition", "gpu.terminator"})
STEP_BUDGET = 200_000
# CPU seconds the check may simulate one kernel's synchronisation (CPU time of this process: on a busy machine
# wall-clock time also counts other processes, and a kernel decided on a quiet machine came back undecided under
# load). On a 2-core machine shared with other work, nvdsl's own kernels take 0.04-0.2 s with warpgroups run as
# units and their loops paced (benchmarks/suites/trust.py: the GEMMs 0.04-0.1 s, attention 0.09-0.15 s, chapter
# 6's ping-pong, whose consumers take turns, 0.7 s) and the grouped GEMM, whose skeleton runs once per number of
# non-empty tiles, 0.3 s with 3 tiles per block; the rest is room for a slower or busier machine, and for the run warp by warp that follows a unit run
# that reports (the budget then starts again). It runs before every first compile: past the deadline the check says it could not decide
# rather than slowing that call further.
TIME_BUDGET_S = 3.0

MAX_WARPGROUPS = 8      # of a block of at most 1024 threads

# Loops whose trip count is a runtime scalar (see _TripCount): the two values the probe runs set it to (far more trips
# than the check runs in full, few enough that a loop without a scheduling point stays cheap), and the most trip counts
# it then runs in full; a kernel whose loops need more is undecided.
TRIP_PROBES = (1031, 1033)
MAX_TRIP_SWEEP = 64
# Skeleton runs the check may spend on the combinations of trip counts read from a table (a block of one tile with
# up to 8 steps needs 9; one of 2 such tiles 81): beyond it, the check says it cannot decide.
MAX_TRIP_RUNS = 128


# Operations whose semantics in the interpreter are lane by lane, or that know a warpgroup may run as one unit of
# 128 lanes (Block): a skeleton made of these alone runs its warpgroups' warps as units. Any other operation (a
# shuffle, a vote, an atomic, a print, TMA stores and bulk groups, which are per warp) keeps it warp by warp.
UNIT_OPS = frozenset({
    "scf.for", "scf.if", "scf.while", "gpu.barrier", "nvvm.barrier", "nvvm.barrier0", "gpu.dynamic_shared_memory",
    "gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim", "gpu.lane_id", "nvvm.read.ptx.sreg.laneid",
    "llvm.inttoptr", "llvm.ptrtoint", "llvm.addrspacecast", "builtin.unrealized_conversion_cast",
    "memref.alloca", "memref.load", "memref.store", "memref.view", "memref.subview", "memref.cast",
    "nvgpu.mbarrier.create", "nvgpu.mbarrier.init", "nvgpu.mbarrier.arrive", "nvgpu.mbarrier.arrive.expect_tx",
    "nvgpu.mbarrier.arrive.nocomplete", "nvgpu.mbarrier.try_wait.parity", "nvgpu.mbarrier.get",
    "nvvm.mbarrier.try_wait", "nvvm.mbarrier.try_wait.parity", "nvvm.mbarrier.try_wait.parity.shared",
    "nvgpu.tma.async.load", "nvgpu.tma.prefetch.descriptor", "nvgpu.warpgroup.generate.descriptor",
    "nvgpu.warpgroup.mma", "nvvm.wgmma.mma_async", "nvvm.wgmma.fence.aligned", "nvvm.wgmma.commit.group.sync.aligned",
    "nvvm.wgmma.wait.group.sync.aligned", "nvvm.setmaxregister", "nvvm.elect.sync",
    "nvvm.fence.mbarrier.init", "nvvm.fence.sc.cluster", "nvvm.fence.acq_rel.cluster", "nvvm.griddepcontrol",
})
UNIT_DIALECTS = ("arith.", "index.", "math.")


def _unit_safe(op) -> bool:
    name = op.name
    if name in UNIT_OPS or name.startswith(UNIT_DIALECTS) or name.startswith("nvvm.read.ptx.sreg.") and \
            not name.endswith(("globaltimer", "clock64")):
        return True
    return name == "llvm.inline_asm" and (_is_barrier_asm(op) or "wgmma.mma_async" in
                                          ir.StringAttr(op.attributes["asm_string"]).value)


def _ops(region):
    for block in region.blocks:
        for op in block.operations:
            yield op.operation


def _walk(op) -> tuple[list, list]:
    """``op`` and every operation nested in it, in program order, and their names (MLIR's own walk: iterating the
    regions from Python costs several times more; each name read through the bindings costs about as much as the
    walk's step, so it is read once here)."""
    found, names = [], []
    advance = ir.WalkResult.ADVANCE

    def visit(inner):
        found.append(inner)
        names.append(inner.name)
        return advance
    op.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found, names


def _is_barrier_asm(op) -> bool:
    """nvdsl's non-aligned named barrier (sync or arrive), emitted as inline PTX."""
    return op.name == "llvm.inline_asm" and \
        ir.StringAttr(op.attributes["asm_string"]).value.startswith(("barrier.sync", "barrier.arrive"))


class _Slice:
    """The operations of one kernel that its synchronisation depends on."""

    def __init__(self, launch: ir.Operation):
        self.launch = launch
        self.keep: set = set()
        self.uses_block_id = False
        self.host_values: set = set()
        self._seen_values: set = set()
        self._work: list = []
        self.table_reads: list = []
        self.kept_names: set = set()
        self._parents_inside: dict = {}
        self.ops, self.names = _walk(launch)
        roots = [op for op, name in zip(self.ops, self.names) if name in ROOTS or
                 name == "llvm.inline_asm" and _is_barrier_asm(op)]
        self.has_mbarriers = any(name in MBARRIER_OPS for name in self.names)
        for op in roots:
            self._keep(op)
        while self._work:
            self._need(self._work.pop())

    def _keep(self, op) -> None:
        if op in self.keep or op == self.launch:
            return
        name = op.name
        if name in MEMORY_READS and not is_private(op.operands[0]):
            if not self._read_only_argument(op.operands[0]):
                raise Undecided(_memory_contents(op))
            self.table_reads.append(op)       # a table the kernel reads: see table_branches
        self.keep.add(op)
        self.kept_names.add(name)
        if name in ("scf.for", "scf.if", "scf.while"):
            # a kept region op needs its control operands (bounds, conditions), not the values it carries
            for value in _control_operands(op):
                self._push(value)
        else:
            omits = SKELETON_OMITS.get(name)
            skip = omits(op) if omits is not None else ()
            for i, value in enumerate(op.operands):
                if i not in skip:
                    self._push(value)
        parent = _parent(op)
        if parent is not None and parent != self.launch and parent.name != "func.func":
            self._keep(parent)
        if name == "memref.alloca":
            # a thread's local variable (an aref's slot and phase): what is loaded from it is what was stored
            for use in op.result.uses:
                self._keep(use.owner.operation if hasattr(use.owner, "operation") else use.owner)

    def _read_only_argument(self, memref: ir.Value) -> bool:
        """Whether a memref is a host argument (a global array) that the kernel only loads from."""
        if not (isinstance(memref, ir.BlockArgument) and memref.owner.owner.operation.name == "func.func"):
            return False
        return all((use.owner.operation if hasattr(use.owner, "operation") else use.owner).name in MEMORY_READS
                   or not _inside(use.owner.operation if hasattr(use.owner, "operation") else use.owner,
                                  self.launch)
                   for use in memref.uses)

    def _in_launch(self, op) -> bool:
        """Whether ``op`` is nested in the launch, remembered per parent (most values come from a few regions)."""
        parent = _parent(op)
        if parent is None:
            return False
        inside = self._parents_inside.get(parent)
        if inside is None:
            inside = self._parents_inside[parent] = parent == self.launch or _inside(parent, self.launch)
        return inside

    def _push(self, value) -> None:
        if value not in self._seen_values:
            self._seen_values.add(value)
            self._work.append(value)

    def _need(self, value) -> None:
        if isinstance(value, ir.BlockArgument):
            block = value.owner
            owner = block.owner.operation
            name = owner.name
            index = value.arg_number
            if owner == self.launch:
                if index < 3:
                    self.uses_block_id = True
                return
            if name == "func.func":
                self.host_values.add(value)
                return
            self._keep(owner)
            if name == "scf.for" and index > 0:
                self._push(owner.operands[3 + index - 1])
                self._push(_terminator(block).operands[index - 1])
            elif name == "scf.while":
                regions = list(owner.regions)
                if block == regions[0].blocks[0]:
                    self._push(owner.operands[index])
                    self._push(_terminator(regions[1].blocks[0]).operands[index])
                else:
                    self._push(_terminator(regions[0].blocks[0]).operands[1 + index])
            return
        op = value.owner.operation
        if self._in_launch(op):
            name = op.name
            if name in ("scf.for", "scf.if", "scf.while"):
                self._keep(op)
                index = value.result_number
                if name == "scf.for":
                    self._push(op.operands[3 + index])
                    self._push(_terminator(op.regions[0].blocks[0]).operands[index])
                elif name == "scf.if":
                    for region in op.regions:
                        if len(region.blocks):
                            self._push(_terminator(region.blocks[0]).operands[index])
                else:
                    before = _terminator(op.regions[0].blocks[0])
                    self._push(before.operands[1 + index])
                return
            self._keep(op)
        else:
            self.host_values.add(value)


def _memory_contents(op) -> str:
    return f"the kernel's synchronisation depends on memory contents ({op.name} at {source_location(op.location)})"


def table_branches(piece: _Slice) -> tuple[set, set, dict]:
    """Where a kernel's synchronisation depends on a table it reads (a grouped GEMM's tile table, whose empty
    tiles every role skips): ``(symbolic, branches, clamps)``, the operations that compute conditions from the
    table (its loads and the arithmetic on them), the ``scf.if`` ops that branch on them, and the clamps that make
    numbers of them (each ``arith.maxsi(arith.minsi(x, most), least)`` with constant bounds, ``least <= most``,
    whose ``x`` is computed from the table: a trip count read on the GPU) with their bounds.

    A kernel with clamps is decided where the table's entries reach the skeleton through clamps alone (anything
    else computed from them, a branch included, makes it undecided): its blocks then run once per combination of
    the values their clamps can take (:class:`~.program.TripCases`), the same clamp of the same entries taking the
    same value in every role. That covers every table: whatever the entries, each clamp takes one of those values.
    (Where two different clamps read the same entries, some combinations may be impossible: a violation the check
    reports names the values it found it for.)

    The check decides such a kernel only where the table's contents matter through these branches alone, so
    that it can run the skeleton for every way they may go (see :func:`check_protocol`): each branch is inside
    a loop, its other arm does no synchronisation (an empty tile: skipped by every role alike), and the loop's
    index reaches the skeleton only through the table's addresses (so only how many of the branches are taken
    matters, not which). Otherwise it raises Undecided. That every role takes the same way for the same entry
    is checked when the skeleton runs: each branch's condition must be the same computation of the same loads.
    """
    if not piece.table_reads:
        return set(), set(), {}
    keep = piece.keep
    symbolic, branches, clamps = set(piece.table_reads), set(), {}
    work = [result for op in piece.table_reads for result in op.results]
    while work:
        value = work.pop()
        for use in value.uses:
            user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            if user not in keep:
                continue
            if user.name == "scf.if" and use.operand_number == 0:
                branches.add(user)
            elif user.name.startswith("arith.") and not user.regions and user not in symbolic:
                symbolic.add(user)
                bounds = _clamp_bounds(user)
                if bounds is not None:
                    clamps[user] = bounds       # a number, not an expression of the table: nothing to follow
                else:
                    work.extend(user.results)
            elif user not in symbolic:
                raise Undecided(_memory_contents(piece.table_reads[0]))
    if clamps and branches:
        raise Undecided(f"the kernel's synchronisation depends on memory contents both through branches and through "
                        f"trip counts ({_memory_contents(piece.table_reads[0])})")
    loops = set()
    for branch in branches:
        loop = _parent(branch)
        while loop is not None and loop != piece.launch and loop.name != "scf.for":
            loop = _parent(loop)
        otherwise = list(branch.regions)[1]
        if loop is None or loop == piece.launch or len(branch.results) or (
                len(otherwise.blocks) and any(op.operation in keep for op in otherwise.blocks[0].operations)):
            raise Undecided(_memory_contents(piece.table_reads[0]))
        loops.add(loop)
    for loop in loops:
        # a tile that takes no branch must change nothing: the loop carries no values, and beside the branches
        # its body only computes the table's addresses and conditions
        body = loop.regions[0].blocks[0]
        if len(body.arguments) > 1 or any(
                op.operation in keep and op.operation not in branches and op.operation not in symbolic
                and not (op.operation.name.startswith("arith.") and not op.operation.regions)
                for op in body.operations):
            raise Undecided(f"the kernel's synchronisation depends on memory contents, and the loop at "
                            f"{source_location(loop.location)} does more than branch on them")
        index = body.arguments[0]
        derived = [index]
        while derived:
            value = derived.pop()
            for use in value.uses:
                user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
                if user not in keep or user in piece.table_reads:
                    continue
                if not user.name.startswith("arith.") or user.regions or user in symbolic:
                            raise Undecided(f"the kernel's synchronisation depends on memory contents and on the index "
                                    f"of the loop at {source_location(loop.location)}")
                derived.extend(user.results)
    return symbolic, branches, clamps


def _clamp_bounds(op) -> tuple[int, int] | None:
    """(least, most) of ``arith.maxsi(arith.minsi(x, most), least)`` with constant bounds (either operand order),
    else None."""
    if op.name != "arith.maxsi":
        return None
    for inner, low in (tuple(op.operands), tuple(op.operands)[::-1]):
        least = _constant(low)
        if least is None or not isinstance(inner, ir.OpResult) or inner.owner.name != "arith.minsi":
            continue
        highs = [_constant(v) for v in inner.owner.operands]
        most = next((h for h in highs if h is not None), None)
        if most is not None and None in highs and least <= most:
            return least, most
    return None


def _terminator(block):
    operations = block.operations
    return operations[len(operations) - 1].operation     # not list(...): a loop body may hold thousands


def _parent(op):
    parent = op.parent
    return None if parent is None else parent.operation


def _inside(op, ancestor) -> bool:
    parent = _parent(op)
    while parent is not None:
        if parent == ancestor:
            return True
        parent = _parent(parent)
    return False


def _control_operands(op):
    """The operands a kept region op always needs: loop bounds, branch conditions, while conditions."""
    if op.name == "scf.for":
        return list(op.operands)[:3]
    if op.name == "scf.if":
        return [op.operands[0]]
    if op.name == "scf.while":
        return [_terminator(op.regions[0].blocks[0]).operands[0]]
    return []


def protocol_skeleton(module: ir.Module):
    """For each kernel with mbarriers: (launch op, the operations to keep, whether the block index matters)."""
    functions = [op.operation for op in module.body.operations if op.operation.name == "func.func"]
    kernels = []
    for launch in (op for op in _ops(functions[0].regions[0]) if op.name == "gpu.launch"):
        piece = _Slice(launch)
        if piece.has_mbarriers:
            kernels.append((launch, piece))
    return kernels


def kept_by_block(piece: _Slice) -> dict:
    """The kept operations of a kernel and its blocks' terminators, block by block in program order: what the
    interpreter compiles, without iterating every operation of the kernel again."""
    by_block = {}
    keep, kept_names = piece.keep, piece.kept_names
    for op, name in zip(piece.ops[1:], piece.names[1:]):
        # the name first: hashing an operation goes through the bindings, and most names are never kept
        if name in TERMINATORS or name in kept_names and op in keep:
            by_block.setdefault(op.block, []).append(op)
    return by_block


def check_protocol(module: ir.Module, specs: tuple[ArgSpec, ...], *,
                   clock: Callable[[], float] = time.process_time) -> str | None:
    """Check the barrier protocol of every kernel of a traced module (see the module's docstring), spending
    at most :data:`TIME_BUDGET_S` seconds of ``clock`` on a run (default: this process's CPU time).

    Raises :class:`~nvdsl.ProtocolError` on a violation; returns None when every kernel was checked,
    else the reason the check could not decide.
    """
    try:
        skeleton = _compile_skeleton(module, specs)
    except Undecided as reason:
        return str(reason)
    if skeleton is None:
        return None
    with module.context:
        deadline = Deadline(TIME_BUDGET_S, clock)
        if skeleton.trips is None:
            return _decide(skeleton, specs, deadline, skeleton.units)[0]
        units = skeleton.units
        while True:
            try:
                return _decide_every_trip_count(skeleton, specs, deadline, units)
            except _UnitsChanged as changed:       # as _decide does: warp by warp gets the budget again
                units = changed.units
                deadline = deadline.restarted() if units is None else deadline


class _UnitsChanged(Exception):
    """A run of a trip-count sweep ended with fewer warpgroups run as units than it started with (see
    :func:`_decide_every_trip_count`)."""

    def __init__(self, units: frozenset | None):
        super().__init__()
        self.units = units


def _decide(skeleton: "_Skeleton", specs: tuple[ArgSpec, ...], deadline: Deadline, units: frozenset | None,
            scalars: dict | None = None, probe: TripProbe | None = None,
            when: str = "") -> tuple[str | None, frozenset | None]:
    """Run a skeleton (its warpgroups in ``units`` as units at first; the scalar arguments ``scalars``; its loop
    summaries reporting to ``probe``): None when it finds nothing, else the reason it cannot decide, and the
    warpgroups the run that decided ran as units. A violation raises ProtocolError (``when``: the case, for its
    message)."""
    program, branches = skeleton.program, skeleton.branches
    # Branches on a table's entries: every role takes the same way for the same entry, and only how many of
    # them are taken matters (table_branches), so the runs where the first n are taken and the rest are not,
    # for every n, are all the table's contents can do.
    taken, entries = None, 0
    all_taken: dict = {}        # per block, the entries it met with every branch taken (Launch.run)
    # Trip counts read from a table (clamps of its entries, table_branches): each block runs every combination of
    # the values they can take.
    cases = TripCases() if skeleton.clamps else None
    while True:
        if probe is not None:
            probe.blocks.clear()        # what an earlier attempt (run as units, then warp by warp) saw
        try:
            try:
                entries = max(entries, program.run_skeleton(specs, STEP_BUDGET, deadline, table_taken=taken,
                                                            units=units, all_taken=all_taken, scalars=scalars,
                                                            probe=probe, trip_cases=cases))
            except Diverged as parted:
                units = units - {parted.warpgroup} or None
                continue
            except OverBudget:
                raise                   # warp by warp would take longer still
            except Exception:
                if units is None:
                    raise
                units = None
                deadline = deadline.restarted()
                continue
        except Undecided as reason:
            return str(reason), units
        except KernelFault as fault:
            case = "" if taken is None else (f" (when the first {taken} of the table entries it branches on "
                                             f"take their branch and the others do not)")
            if cases is not None:
                case = (f" (when the trip counts read from a table that block {fault.details.get('block')} meets "
                        f"are {cases.describe(fault.details.get('block'))}, in order)")
            raise ProtocolError("the barrier protocol check found a violation before running the kernel"
                                + when + case + ": " + fault.message, code=fault.code, hint=fault.hint,
                                loc=fault.loc) from None
        if cases is not None:
            if not cases.advance():
                return None, units
            if cases.combinations() > MAX_TRIP_RUNS or cases.runs >= MAX_TRIP_RUNS:
                return (f"the synchronisation of a kernel depends on trip counts read from a table, in more "
                        f"combinations per block than the check runs ({MAX_TRIP_RUNS}): fewer tiles per block "
                        f"(persistent=False) or shorter loops can be checked"), units
            continue
        taken = 0 if taken is None else taken + 1
        if not branches or taken >= entries:
            return None, units


def _decide_every_trip_count(skeleton: "_Skeleton", specs: tuple[ArgSpec, ...], deadline: Deadline,
                             units: frozenset | None) -> str | None:
    """Decide a skeleton whose synchronisation depends on a runtime scalar only through the trip count of loops
    (:func:`check_trip_counts`), for every value of it, or say why not; a violation is refused at the least value.
    Every run runs the warpgroups in ``units`` as units: one that has to run fewer so (its warps parted, or it found
    something to find again warp by warp) raises _UnitsChanged, and the sweep starts again with those, so that the
    runs the argument below compares are runs of one program.

    Why the values checked cover all of them. Two probe runs set the scalar to the values of TRIP_PROBES; their loop
    summaries report to a TripProbe, which takes a loop frame whose bound is the probe for one of the counted loops
    (the other probe's run finds no frame with that bound: else some other loop has it, and the check gives up). In
    each block it finds a state B that repeats a state A, ``delta`` trips of every running counted loop later, where
    no other loop advanced, no comparison of a counted loop's index lies ahead, no counted loop was left before B
    and none is entered after it (each warp enters each counted loop at most once and whether it does is fixed:
    check_trip_counts). Let t0 be the first trip count above every counted loop's iteration at B. A run with t >= t0
    trips goes exactly as the probe's up to B: the scalar reaches the skeleton only through the counted loops'
    bounds, so before one of them exits nothing tells the runs apart. From B with t + delta trips, it goes as from A
    with t trips: the canonical states are equal (a block's future depends on nothing else, .period), every running
    counted loop has the same number of trips left, the other loops are at the same iterations and none of the
    counted ones starts later. So the run with t + delta trips does what the run with t trips does, with one period
    more in between: it breaks the protocol only if that run does. Checking every t below t0 + delta covers every
    t >= 0 by induction; a negative value runs no trip, as 0 does (the counted loops start at 0 or above and the
    casts on the way keep the sign). The first value that breaks the protocol is the one reported."""
    trips = skeleton.trips

    def run(value: int, probe: TripProbe | None = None) -> str | None:
        undecided, ran = _decide(skeleton, specs, deadline, units, {trips.index: value}, probe,
                                 when=f" (when {trips.name} = {value})")
        if ran != units:
            raise _UnitsChanged(ran)
        return undecided

    first, second = (TripProbe(value, other) for value, other in (TRIP_PROBES, TRIP_PROBES[::-1]))
    broken = None
    for probe in (first, second):
        try:
            undecided = run(probe.value, probe)
        except ProtocolError as error:
            broken = broken or error
            continue
        if undecided is not None:
            return undecided
    sweep = first.sweep() if not second.foreign else None
    if sweep is None and broken is None or sweep is not None and sweep > MAX_TRIP_SWEEP:
        return (f"the synchronisation of a kernel depends on the runtime scalar argument '{trips.name}', the trip "
                f"count of loops whose states do not repeat within {MAX_TRIP_SWEEP} trips")
    for value in range(MAX_TRIP_SWEEP if sweep is None else sweep):
        undecided = run(value)
        if undecided is not None:
            return undecided
    if broken is not None:
        raise broken
    return None


@dataclass(frozen=True)
class _TripCount:
    """The runtime scalar argument (position ``index`` among the arguments, ``name``) that a skeleton depends on
    only as the trip count of loops (:func:`check_trip_counts`)."""

    index: int
    name: str


@dataclass(frozen=True)
class _Skeleton:
    """The skeletons of a module's kernels as one program, the warpgroups whose warps its first run runs as units,
    the branches on a table's entries, and the runtime scalar it depends on through trip counts (None: none)."""

    program: Program
    units: frozenset | None
    branches: set
    trips: _TripCount | None
    clamps: bool = False


def _compile_skeleton(module: ir.Module, specs: tuple[ArgSpec, ...]) -> _Skeleton | None:
    """The skeletons of a module's kernels with mbarriers as one program (None: no kernel has mbarriers). Raises
    Undecided where the synchronisation depends on what the check cannot know."""
    kernels = protocol_skeleton(module)
    if not kernels:
        return None
    host_args = list(functions_args(module))
    scalars = {arg for arg, spec in zip(host_args, specs) if spec.kind != ARRAY}
    needed = [(i, arg) for i, arg in enumerate(host_args)
              if arg in scalars and any(arg in piece.host_values for _, piece in kernels)]
    trips = None
    if needed:
        index, scalar = needed[0]
        spec = specs[index]
        if len(needed) > 1 or not (spec.dtype.kind == "index" or spec.dtype.kind == "i" and spec.dtype.bits >= 16):
            raise Undecided(f"the synchronisation of a kernel depends on the runtime scalar argument "
                            f"'{specs[needed[-1][0]].name}'")
        check_trip_counts(scalar, spec.name, [piece for _, piece in kernels])
        trips = _TripCount(index, spec.name)
    keep = set()
    blocks = {}
    block_ops = {}
    symbolic, branches, clamps = set(), set(), {}
    for launch, piece in kernels:
        keep |= piece.keep
        block_ops.update(kept_by_block(piece))
        reads, ways, numbers = table_branches(piece)
        symbolic |= reads
        branches |= ways
        clamps.update(numbers)
        blocks[launch] = "first-and-last" if piece.uses_block_id else "first"
    if trips is not None and (branches or clamps):
        raise Undecided(f"the synchronisation of a kernel depends on a table's entries and on the runtime scalar "
                        f"argument '{trips.name}'")
    # Warpgroups run as units of 128 lanes where every kept operation allows it (UNIT_OPS). A unit run is
    # trusted only when it finds nothing: a warpgroup whose warps part is run warp by warp from the start, and
    # anything a unit run reports (a violation, a reason it cannot decide) is found again warp by warp, so that
    # what the check says is what running every warp on its own says.
    units = frozenset(range(MAX_WARPGROUPS)) if all(_unit_safe(op) for op in keep) else None
    with module.context:
        program = Program(module, keep=keep, skeleton_blocks=blocks, block_ops=block_ops,
                          symbolic=(symbolic, branches, clamps))
    return _Skeleton(program, units, branches, trips, bool(clamps))


SIGNED_CASTS = frozenset({"arith.index_cast", "arith.extsi"})
# What a role branch (which warps run a counted loop) may compute its condition from: thread and block indices.
ROLE_SOURCES = frozenset({"gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim", "gpu.lane_id",
                          "nvvm.read.ptx.sreg.laneid", "nvvm.read.ptx.sreg.tid.x", "nvvm.read.ptx.sreg.tid.y",
                          "nvvm.read.ptx.sreg.tid.z", "nvvm.read.ptx.sreg.ctaid.x", "nvvm.read.ptx.sreg.ctaid.y",
                          "nvvm.read.ptx.sreg.ctaid.z", "arith.constant"})


def check_trip_counts(scalar: ir.Value, name: str, pieces: list) -> None:
    """That the skeletons depend on the runtime scalar ``scalar`` only as the trip count of kept ``scf.for`` ops (their
    upper bound, through sign-keeping casts): raises Undecided otherwise.

    Each such loop starts at a constant 0 or above with a constant step, compares signed, is inside no loop and
    only inside branches whose conditions are computed from thread and block indices (roles): so each warp runs
    each counted loop at most once, whether it does is the same in every run, and a negative value runs no trip
    (what :func:`_decide_every_trip_count` relies on). Uses outside the skeletons (the data) do not matter."""
    def undecided(op) -> Undecided:
        return Undecided(f"the synchronisation of a kernel depends on the runtime scalar argument '{name}' "
                         f"(through {op.name} at {source_location(op.location)})")

    kept = lambda op: any(op in piece.keep for piece in pieces)
    work = [scalar]
    while work:
        for use in work.pop().uses:
            user = use.owner.operation if hasattr(use.owner, "operation") else use.owner
            if user.name in SIGNED_CASTS and (kept(user) or _launch_of(user) is None):
                work.extend(user.results)
            elif user.name == "scf.for" and use.operand_number == 1 and kept(user):
                lower, step = _constant(user.operands[0]), _constant(user.operands[2])
                if "unsignedCmp" in user.attributes or lower is None or lower < 0 or step is None or step <= 0:
                    raise undecided(user)
                _check_placement(user, undecided)
            elif kept(user) or _launch_of(user) is None:
                raise undecided(user)


def _check_placement(loop, undecided) -> None:
    """A counted loop is inside no other loop and inside role branches only (see :func:`check_trip_counts`)."""
    parent = _parent(loop)
    while parent is not None and parent.name != "gpu.launch":
        if parent.name != "scf.if" or not _from_roles(parent.operands[0]):
            raise undecided(loop)
        parent = _parent(parent)


def _from_roles(value: ir.Value) -> bool:
    """Whether ``value`` is computed from thread and block indices and constants only (the launch's block arguments
    are those indices)."""
    work, seen = [value], set()
    while work:
        value = work.pop()
        if value in seen:
            continue
        seen.add(value)
        if isinstance(value, ir.BlockArgument):
            if value.owner.owner.operation.name != "gpu.launch":
                return False
            continue
        op = value.owner.operation
        if op.name in ROLE_SOURCES:
            continue
        if not (op.name.startswith("arith.") or op.name.startswith("index.")) or len(op.regions):
            return False
        work.extend(op.operands)
    return True


def _constant(value: ir.Value) -> int | None:
    """The value of an integer ``arith.constant``, else None."""
    if isinstance(value, ir.OpResult) and value.owner.name == "arith.constant":
        attribute = value.owner.attributes["value"]
        if isinstance(attribute, ir.IntegerAttr):
            return ir.IntegerAttr(attribute).value
    return None


def _launch_of(op):
    """The ``gpu.launch`` that ``op`` is nested in, or None (a host operation)."""
    parent = _parent(op)
    while parent is not None and parent.name != "gpu.launch":
        parent = _parent(parent)
    return parent


def functions_args(module: ir.Module):
    function = next(op.operation for op in module.body.operations if op.operation.name == "func.func")
    return function.regions[0].blocks[0].arguments


__all__ = ["check_protocol", "check_trip_counts", "protocol_skeleton", "table_branches", "Undecided"]
