"""The mapping: how a tile program runs on a Hopper GPU, kept apart from what it computes.

A :class:`Mapping` is frozen, printable, hashable (it keys the compile cache) and changes speed, never
results. Every field has a default derived from the program, so the simplest user writes none; a field
the compiler cannot honour is refused with a :class:`~nvdsl.errors.MappingError` naming both numbers,
before anything is traced.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from dataclasses import dataclass, field

from ..errors import MappingError, user_location
from ..target import HOPPER_SHARED_MEMORY_PER_BLOCK, REGISTER_FILE, SETMAXNREG_MAX, SETMAXNREG_MIN
from .ir import MEMORIES

HOST, BLOCK, WARPGROUP = "host", "block", "warpgroup"
LEVELS = (HOST, BLOCK, WARPGROUP)
COOPERATIVE, PINGPONG = "cooperative", "pingpong"
RASTERS = ("grouped", "snake", "row")



def _frozen_items(value, what: str) -> tuple:
    if value is None:
        return ()
    if isinstance(value, dict):
        return tuple(sorted(value.items()))
    if isinstance(value, tuple) and all(isinstance(v, tuple) and len(v) == 2 for v in value):
        return tuple(sorted(value))
    raise MappingError(f"{what}={value!r} must be a dict", code="bad-mapping",
                       hint=f"pass {what} as a dict, e.g. {what}={{name: value}}, or leave it out", loc=user_location())


@dataclass(frozen=True)
class Mapping:
    """How a tile program is mapped onto the GPU.

    Args:
        tiles: values of the program's tunables (``nt.tunable``), e.g. ``{"BM": 128, "BN": 256, "BK": 64}``.
        levels: processor level per task name (the names ``explain()`` prints): the task holding the
            ``prange`` over output tiles runs at ``"host"``; the task that runs one output tile (its
            ``srange`` loop and epilogue; a task launched in the prange, else the ``"tile body"``) at
            ``"block"`` (its consumer warpgroups share each tile's rows: ``schedule="cooperative"``) or
            ``"warpgroup"`` (each consumer warpgroup runs whole tiles: ``schedule="pingpong"``); the task
            issuing the tile products (``"mma"`` where the tile's task issues them itself) at
            ``"warpgroup"``, as wgmma is a warpgroup instruction. A task left out gets that default.
        memory: memory per tensor name: ``"global"``, ``"shared"``, ``"register"`` or ``"none"`` (never
            materialized whole: the consumer warpgroups each hold their rows). An argument's: where its tiles are
            copied to be computed on; an argument that a row-wise program's passes over column blocks read, in
            ``"shared"``, has its row block kept in shared memory for the tile (loaded once by TMA, every pass
            reading it there); a vector argument that a program with products reads in its ``srange`` loop (a
            step's log-sum-exp), in ``"shared"``, comes through the ring by TMA beside the products' tiles instead
            of each thread loading its elements from global memory where the program uses them.
        pipeline: slots of the ring that feeds the sequential loop (None: as many as shared memory holds, up to 8).
        mma_in_flight: wgmma products left running while the next is issued (P); ``pipeline >= P + 1``.
        warp_specialize: a producer warpgroup issues the loads and consumer warpgroups compute; off, the
            consumer warpgroups issue their own loads ahead (a multistage pipeline in one role).
        consumers: consumer warpgroups per block.
        schedule: ``"cooperative"`` (the consumers split each tile's rows) or ``"pingpong"`` (2 consumers,
            each holding a whole tile's accumulator, take the block's tiles alternately and take turns at
            the main loop: one runs its tile's K loop on the tensor cores while the other waits or runs
            its epilogue, CUTLASS's ordered math warpgroups). Ping-pong implies ``turns=True``. None (the
            default): derived from the level of the tile's task, ``"pingpong"`` at ``"warpgroup"``, else
            ``"cooperative"``; where ``levels`` name a ``"warpgroup"`` task and no ``"block"`` one, only
            the program says whether that task runs the tiles, so the value stays None here and is
            derived when the kernel is planned (``explain()`` prints it). A schedule given with levels
            that say otherwise is refused.
        turns: consumers take turns at the tensor cores (named barriers): cooperative consumers of a
            two-phase loop (attention's), or of a one-phase loop whose step reads the products it issues first
            (a block-scaled GEMM's scaling), at each step's products, so that one's math overlaps another's
            products (FlashAttention-3's ping-pong); ping-pong consumers at whole main loops (always on:
            without turns their K loops would share the tensor cores and overlap nothing). None (the
            default): on for ``"pingpong"``, off for ``"cooperative"``.
        persistent: one block per SM, looping over tiles (else one block per tile).
        raster: tile order for persistent blocks: ``"grouped"`` (``group`` tile rows at a time, for L2),
            ``"snake"`` or ``"row"``.
        group: tile rows per group for the grouped order.
        registers: registers per thread per role, e.g. ``{"producer": 40, "consumer": 232}`` (None: derived).
        smem_limit: the bound on shared memory per block, in bytes.
        sm_count: blocks of a persistent grid (None: the GPU's SM count).
    """

    tiles: tuple = ()
    levels: tuple = ()
    memory: tuple = ()
    pipeline: int | None = None
    mma_in_flight: int = 1
    warp_specialize: bool = True
    consumers: int = 2
    schedule: str | None = None
    turns: bool | None = None
    persistent: bool = True
    raster: str = "grouped"
    group: int = 8
    registers: tuple = ()
    smem_limit: int = HOPPER_SHARED_MEMORY_PER_BLOCK
    sm_count: int | None = None
    # the fields among "schedule" and "turns" derived rather than given: replace() derives them afresh
    _derived: frozenset = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_derived", frozenset(n for n in ("schedule", "turns") if getattr(self, n) is None))
        for name in ("tiles", "levels", "memory", "registers"):
            object.__setattr__(self, name, _frozen_items(getattr(self, name), name))
        for name, value in self.tiles:
            _positive_int(f"tiles['{name}']", value)
        for name, value in self.levels:
            if value not in LEVELS:
                raise _bad(f"levels['{name}']={value!r} must be one of {LEVELS}",
                           hint=f"give '{name}' one of the levels {', '.join(LEVELS)}")
        for name, value in self.memory:
            if value not in MEMORIES:
                raise _bad(f"memory['{name}']={value!r} must be one of {MEMORIES}",
                           hint=f"give '{name}' one of the memories {', '.join(MEMORIES)}")
        if self.pipeline is not None:
            _positive_int("pipeline", self.pipeline)
            if self.pipeline < 2:
                raise _bad(f"pipeline={self.pipeline}: a ring needs at least 2 slots to overlap loads with math",
                           hint="pass pipeline=2 or more, or leave it out to use as many slots as shared memory holds")
        if not isinstance(self.mma_in_flight, int) or not 0 <= self.mma_in_flight <= 7:
            raise _bad(f"mma_in_flight={self.mma_in_flight!r} must be an int in 0..7 (wgmma.wait_group's range)",
                       hint="pass mma_in_flight=1 (the default) or another int from 0 to 7")
        if self.pipeline is not None and self.pipeline < self.mma_in_flight + 1:
            raise _bad(f"pipeline={self.pipeline} slots cannot feed mma_in_flight={self.mma_in_flight} products: a "
                       f"slot is released only once its product retires, so pipeline must be >= "
                       f"{self.mma_in_flight + 1}", code="mapping-depth",
                       hint=f"pass pipeline={self.mma_in_flight + 1} or more, or a smaller mma_in_flight")
        _positive_int("consumers", self.consumers)
        if self.schedule is not None and self.schedule not in (COOPERATIVE, PINGPONG):
            raise _bad(f"schedule={self.schedule!r} must be 'cooperative' or 'pingpong'",
                       hint="pass schedule='cooperative' or 'pingpong', or leave it out to derive it from levels")
        # Only a tile's task may run at "block" (a cooperative tile); a "warpgroup" task may run the tiles (a
        # ping-pong) or issue the products, which only the program tells apart.
        blocks = [name for name, level in self.levels if level == BLOCK]
        if blocks and self.schedule == PINGPONG:
            raise _bad(f"schedule='pingpong' but levels['{blocks[0]}']='block': only the task running each output "
                       "tile runs at 'block', where its consumer warpgroups share the tile's rows (a cooperative "
                       "schedule); a ping-pong maps that task to 'warpgroup'", code="mapping-level",
                       hint=f"map '{blocks[0]}' to 'warpgroup' for a ping-pong, or use schedule='cooperative'")
        if self.schedule is None and (blocks or WARPGROUP not in dict(self.levels).values()):
            object.__setattr__(self, "schedule", COOPERATIVE)
        if self.turns is None and self.schedule is not None:   # derived: a ping-pong's consumers always take turns
            object.__setattr__(self, "turns", self.schedule == PINGPONG)
        if self.turns is not None and not isinstance(self.turns, bool):
            raise _bad(f"turns={self.turns!r} must be True or False",
                       hint="pass turns=True or False, or leave it out to follow the schedule")
        if self.schedule == PINGPONG and self.turns is False:
            raise _bad("schedule='pingpong' (given, or a tile's task at level 'warpgroup') with turns=False: a "
                       "ping-pong's consumers take turns at the main loop "
                       "(without them their K loops would share the tensor cores and hide nothing); leave turns "
                       "out, it follows the schedule",
                       hint="leave turns out (or pass turns=True) with a ping-pong; turns=False needs "
                            "schedule='cooperative'")
        if self.raster not in RASTERS:
            raise _bad(f"raster={self.raster!r} must be one of {RASTERS}",
                       hint="pass raster='grouped' (the default), 'snake' or 'row'")
        _positive_int("group", self.group)
        _positive_int("smem_limit", self.smem_limit)
        if self.smem_limit > HOPPER_SHARED_MEMORY_PER_BLOCK:
            raise _bad(f"smem_limit={self.smem_limit} exceeds the {HOPPER_SHARED_MEMORY_PER_BLOCK} bytes a Hopper block "
                       f"can use",
                       code="mapping-smem",
                       hint=f"pass smem_limit={HOPPER_SHARED_MEMORY_PER_BLOCK} or less, or leave it out")
        if self.sm_count is not None:
            _positive_int("sm_count", self.sm_count)
        for role, value in self.registers:
            if role not in ("producer", "consumer"):
                raise _bad(f"registers['{role}']: the roles are 'producer' and 'consumer'",
                           hint="name the roles 'producer' and 'consumer', e.g. "
                                "registers={'producer': 40, 'consumer': 232}")
            if not isinstance(value, int) or value % 8 or not SETMAXNREG_MIN <= value <= SETMAXNREG_MAX:
                raise _bad(f"registers['{role}']={value!r} must be a multiple of 8 in "
                           f"{SETMAXNREG_MIN}..{SETMAXNREG_MAX} "
                           "(setmaxnreg)", code="mapping-registers",
                           hint="use a multiple of 8 such as 40 for the producer and 232 for the consumers")

    def tile_values(self) -> dict:
        return dict(self.tiles)

    def memory_of(self, tensor: str, default: str) -> str:
        return dict(self.memory).get(tensor, default)

    def __nvdsl_key__(self) -> tuple:
        """Every field by name: what keys a built kernel's calls in the disk cache, before tracing."""
        return tuple((f.name, getattr(self, f.name)) for f in _fields(self))

    def replace(self, **changes) -> "Mapping":
        """This mapping with ``changes``. A derived ``schedule`` or ``turns`` is derived afresh (from the new
        levels, the new schedule), and so is ``turns`` when a new ``schedule`` comes without it."""
        given = set(changes)
        if "schedule" not in given and "schedule" in self._derived:
            changes["schedule"] = None
        if "turns" not in given and ("schedule" in given or "turns" in self._derived):
            changes["turns"] = None
        return self._remade(changes)

    def _with_schedule(self, schedule: str) -> "Mapping":
        """This mapping with the schedule its levels derive once the program is known (``turns`` follows it
        unless given)."""
        return self._remade({"schedule": schedule, "turns": None if "turns" in self._derived else self.turns})

    def _remade(self, changes: dict) -> "Mapping":
        # not dataclasses.replace: a refusal then points at the user's line, not at dataclasses.py
        _refuse_unknown_fields(changes)
        return Mapping(**{f.name: changes.get(f.name, getattr(self, f.name)) for f in _fields(self)})

    def __str__(self) -> str:
        parts = []
        for f in _fields(self):
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                value = "{" + ", ".join(f"{k}: {v}" for k, v in value) + "}"
            parts.append(f"{f.name}={value}")
        return "Mapping(" + ", ".join(parts) + ")"


def _fields(mapping: Mapping):
    return [f for f in dataclasses.fields(mapping) if f.init]


def _refuse_unknown_fields(given) -> None:
    """Refuse a name among ``given`` that is no field of a mapping, proposing the nearest field."""
    names = [f.name for f in _fields(Mapping)]
    unknown = sorted(set(given) - set(names))
    if unknown:
        near = difflib.get_close_matches(unknown[0], names, n=1)
        hint = f"did you mean {near[0]}=...? " if near else ""
        raise _bad(f"Mapping has no field {unknown[0]!r}", hint=f"{hint}the fields of nt.Mapping: {', '.join(names)}")


def _init_by_name(generated):
    """The dataclass's ``__init__``, its fields taken by name only, and an unknown name refused as a mapping
    error at the user's line (not Python's TypeError)."""
    @functools.wraps(generated)
    def __init__(self, *positional, **fields):
        if positional:
            raise _bad(f"nt.Mapping takes its fields by name, got {len(positional)} positional argument(s)",
                       hint="pass them by name: nt.Mapping(tiles={'BM': 128}, consumers=2, ...)")
        _refuse_unknown_fields(fields)
        generated(self, **fields)
    return __init__


Mapping.__init__ = _init_by_name(Mapping.__init__)


def change_text(change: dict) -> str:
    """A change of a mapping as text: ``consumers=1``; an entry of a dict field, ``tiles['BM']=128``, or its
    removal, ``no tiles['BQ']``."""
    parts = []
    for name, value in change.items():
        if isinstance(value, dict):
            parts += [f"no {name}[{key!r}]" if v is None else f"{name}[{key!r}]={v!r}" for key, v in value.items()]
        else:
            parts.append(f"{name}={value!r}")
    return " and ".join(parts)


def apply_change(mapping: "Mapping", change: dict) -> "Mapping":
    """``mapping`` with ``change``: its dict fields (tiles, levels, memory, registers) merged into the mapping's,
    where ``None`` drops an entry; the other fields replaced."""
    fields = {}
    for name, value in change.items():
        if isinstance(value, dict):
            merged = dict(getattr(mapping, name))
            merged.update(value)
            value = {k: v for k, v in merged.items() if v is not None}
        fields[name] = value
    return mapping.replace(**fields)


def refusal(message: str, *, code: str, changes=(), note: str = "", loc=None) -> MappingError:
    """A refusal whose hint proposes ``changes`` of the mapping (dicts for :func:`apply_change`): ``TaskKernel``
    plans the program under each and names only those it accepts (see ``build.TaskKernel._stages``)."""
    hint = "map with " + ", or ".join(change_text(c) for c in changes) if changes else None
    if note:
        hint = f"{hint} ({note})" if hint else note
    error = MappingError(message, code=code, hint=hint, loc=loc if loc is not None else user_location())
    error.changes, error.note = tuple(changes), note
    return error


def _bad(message: str, code: str = "bad-mapping", hint: str | None = None) -> MappingError:
    return MappingError(message, code=code, hint=hint, loc=user_location())


def _positive_int(what: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise _bad(f"{what}={value!r} must be a positive int",
                   hint=f"pass {what} as a positive Python int (int(x) of a NumPy number)")


def derive_registers(mapping: Mapping, producer_roles: int) -> dict:
    """Registers per thread for each role: the producer's from the mapping (default 40), the consumers'
    an even share of what is left of the register file, rounded down to a multiple of 8."""
    given = dict(mapping.registers)
    if not producer_roles:
        per_thread = min(SETMAXNREG_MAX, REGISTER_FILE // (128 * mapping.consumers)) // 8 * 8
        return {"consumer": given.get("consumer", per_thread)}
    producer = given.get("producer", 40)
    share = (REGISTER_FILE // 128 - producer) // mapping.consumers
    consumer = given.get("consumer", min(SETMAXNREG_MAX, share) // 8 * 8)
    return {"producer": producer, "consumer": consumer}


def check_registers(mapping: Mapping, registers: dict, producer_roles: int) -> None:
    """The register budgets of all roles must fit the register file, and move registers from the producers to the
    consumers (``setmaxnreg`` lowers or raises what each thread holds at launch, an even share of the file)."""
    if producer_roles:
        held = min(REGISTER_FILE // (128 * (producer_roles + mapping.consumers)) // 8 * 8, SETMAXNREG_MAX)
        if registers["consumer"] < held or registers["producer"] > held:
            raise refusal(f"the consumers' {registers['consumer']} registers per thread must be at least, and the "
                          f"producer's {registers['producer']} at most, the {held} each thread holds at launch "
                          f"({producer_roles + mapping.consumers} warpgroups): setmaxnreg only moves registers from "
                          "the producer to the consumers", code="mapping-registers",
                          changes=[{"registers": {"producer": min(registers["producer"], held),
                                                  "consumer": max(registers["consumer"], held)}}])
    total = 128 * (registers.get("producer", 0) * producer_roles + registers["consumer"] * mapping.consumers)
    if total > REGISTER_FILE:
        producers = registers.get("producer", 0) * producer_roles
        fitting = (REGISTER_FILE // 128 - producers) // mapping.consumers // 8 * 8
        changes = [{"registers": {"consumer": fitting}}] if fitting >= SETMAXNREG_MIN else []
        changes += [{"consumers": c} for c in range(mapping.consumers - 1, 0, -1)
                    if 128 * (producers + registers["consumer"] * c) <= REGISTER_FILE][:1]
        raise refusal(f"the roles' registers add up to {total} per block ({registers} per thread), more than "
                      f"the {REGISTER_FILE} of the register file", code="mapping-registers", changes=changes)

