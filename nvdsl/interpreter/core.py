"""Turning MLIR operations into Python closures, once per module.

Every SSA value gets a slot number; a warp's registers are a list indexed by slot. Each operation
becomes an *instruction*, a ``(kind, fn)`` pair called with the warp:

* ``PLAIN``: ``fn(warp)`` computes and returns;
* ``GEN``: ``fn(warp)`` is a generator that may block (yields a :class:`Wait`) or let other warps
  run (yields None), e.g. barriers and mbarrier waits;
* ``SYNC``: a plain instruction touching shared state; when it returns True (it acted), a fuzzed
  schedule may switch warps after it.

A handler returns None for an operation with nothing to run: constants go into ``Compiler.constants``,
which every frame's registers start with.

Unknown operations are refused when the module is compiled, naming the op and its Python line.
"""

from __future__ import annotations

from mlir import ir

from ..errors import InternalError, SourceLocation, TraceError, UserError
from . import values as V
from .skeleton import Diverged, Undecided

PLAIN, GEN, SYNC = 0, 1, 2

HANDLERS: dict = {}
# The handler of a skeleton's operations that compute from a table's entries (Compiler.symbolic), whatever their
# names: registered under this key, which no operation name matches (those name their dialect).
SYMBOLIC = "symbolic"


def handles(*names):
    """Register a compile function ``(op, compiler) -> (kind, fn)`` for these operation names."""
    def register(compile_fn):
        for name in names:
            HANDLERS[name] = compile_fn
        return compile_fn
    return register


def identity(op, c, info):
    """An operation whose result is its operand as the interpreter holds values (casts of one value)."""
    a, r = c.slot(op.operands[0]), c.slot(op.result)

    def fn(w):
        w.env[r] = w.env[a]
    return PLAIN, fn


class OpInfo:
    """What reports say about an operation: its name and the user's Python line (``loc``, read from the MLIR
    location when first asked: most operations never appear in a report, and reading one costs microseconds)."""

    __slots__ = ("id", "name", "_location", "_loc")

    def __init__(self, id: int, name: str, location: ir.Location | None):
        self.id, self.name, self._location, self._loc = id, name, location, None

    @property
    def loc(self) -> SourceLocation | None:
        if self._location is not None:
            self._loc, self._location = source_location(self._location), None
        return self._loc

    def where(self) -> str:
        return f"{self.name} at {self.loc}" if self.loc else self.name


def source_location(loc: ir.Location) -> SourceLocation | None:
    try:
        if loc.is_a_file():
            return SourceLocation(loc.filename, loc.start_line)
        if loc.is_a_name():
            return source_location(loc.child_loc)
        if loc.is_a_callsite():
            return source_location(loc.callee)
        if loc.is_a_fused():
            for inner in loc.locations:
                found = source_location(inner)
                if found is not None:
                    return found
    except Exception:  # an exotic location kind: reports just lack the line
        return None
    return None


class Wait:
    """Why a warp cannot go on: ``ready()`` says when it can; ``describe()`` is for deadlock reports."""

    __slots__ = ("ready", "describe", "info", "spin", "forced", "key")

    def __init__(self, ready, describe, info: OpInfo, spin: bool = False, key: tuple | None = None):
        self.ready = ready
        self.describe = describe
        self.info = info
        self.spin = spin          # a polling loop (try_wait in user code) that a timer may end
        self.forced = False
        self.key = key            # what the warp waits on, for loop summaries (None: not summarised)


BACK_EDGE = "back-edge"


def back_edge(info: OpInfo, body_start: int) -> Wait:
    """The scheduling point a paced skeleton gives a warp at a loop's back-edge (see :class:`~.machine.Block`):
    always ready, its key names the loop and ``body_start``, the id of the body's first operation, where the
    values a loop summary compares are those the next iteration starts with (its block arguments and what
    encloses the loop)."""
    return Wait(_always, lambda: "at the back-edge of a loop", info, key=(BACK_EDGE, info.id, body_start))


def _always() -> bool:
    return True


class CompiledBlock:
    """The instructions of one MLIR block, the slots of its arguments and of its terminator's operands."""

    __slots__ = ("instrs", "args", "yields", "terminator", "generator", "run", "infos")

    def __init__(self, instrs, infos, args, yields, terminator):
        self.instrs = instrs
        self.infos = infos
        self.args = args
        self.yields = yields
        self.terminator = terminator
        self.generator = any(kind != PLAIN for kind, _ in instrs)
        self.run = _generator_runner(self) if self.generator else _plain_runner(self)


def _plain_runner(block: CompiledBlock):
    fns = [fn for _, fn in block.instrs]
    infos = block.infos

    def run(w):
        i = 0
        try:
            for i, fn in enumerate(fns):
                fn(w)
        except Exception as e:
            raise _located(e, infos[i]) from None
    return run


def _generator_runner(block: CompiledBlock):
    instrs = block.instrs
    infos = block.infos

    def run(w):
        i = 0
        try:
            for i, (kind, fn) in enumerate(instrs):
                if kind == PLAIN:
                    fn(w)
                elif kind == GEN:
                    yield from fn(w)
                elif fn(w):
                    yield None
        except GeneratorExit:
            raise
        except Exception as e:
            raise _located(e, infos[i]) from None
    return run


def _located(error: Exception, info: OpInfo) -> Exception:
    if isinstance(error, (UserError, InternalError, Undecided, Diverged)):  # they name their line already
        return error
    if isinstance(error, V.Unsupported):
        return TraceError(f"the interpreter does not support {error} ({info.name})", code="interpreter-unsupported",
                          hint="run on a GPU (Options(backend='gpu')), or report the missing case", loc=info.loc)
    located = InternalError(f"interpreting {info.where()} failed: {type(error).__name__}: {error}")
    located.__cause__ = error
    return located


class Compiler:
    """Compiles a module's operations to instructions, numbering values and operations."""

    def __init__(self, fuzz: bool, keep: set | None = None, block_ops: dict | None = None):
        self.fuzz = fuzz
        self.keep = keep            # when set, only these operations are compiled (a protocol skeleton)
        self.block_ops = block_ops or {}    # block -> its kept operations and terminator, where known
        self._slots: dict[ir.Value, int] = {}
        self.infos: list[OpInfo] = []
        # for loop summaries of skeletons (.period): slots written inside loops, loop indices nothing reads,
        # slots of threads' local variables
        self.loop_depth = 0
        self.loop_slots: set[int] = set()
        self.unread_indices: set[int] = set()
        self.local_slots: list[int] = []
        # slot -> ([first, last] op ids of the block defining it, the last op id before it is defined): where a
        # value may still be read (SSA: only later in its block); a summary leaves it out elsewhere (.period)
        self.scopes: dict[int, tuple[list, int]] = {}
        self.uncounted_barriers = False     # some named barrier is used without a thread count
        self.constants: dict[int, object] = {}     # slot -> value, set before anything runs
        self.symbolic: set = set()          # skeletons: operations computing conditions from a table's entries
        self.table_branches: set = set()    # and the branches on them (protocol.table_branches)
        self.table_clamps: dict = {}        # and the clamps that make trip counts of them: op -> (least, most)

    @property
    def slot_count(self) -> int:
        return len(self._slots)

    def slot(self, value: ir.Value) -> int:
        found = self._slots.get(value)
        if found is None:
            found = self._slots[value] = len(self._slots)
            if self.loop_depth:
                self.loop_slots.add(found)
        return found

    def loop_body(self, block: ir.Block) -> CompiledBlock:
        """Compile the body of a loop (its values may change from one iteration to the next)."""
        self.loop_depth += 1
        try:
            return self.block(block)
        finally:
            self.loop_depth -= 1

    def info(self, op, name: str | None = None) -> OpInfo:
        op = op.operation
        info = OpInfo(len(self.infos), name or op.name, op.location)
        self.infos.append(info)
        return info

    def block(self, block: ir.Block) -> CompiledBlock:
        instrs, infos = [], []
        args = [self.slot(a) for a in block.arguments]
        extent = [len(self.infos), None]
        for a in args:
            self.scopes[a] = (extent, extent[0] - 1)
        terminator, yields = None, []
        kept = self.block_ops.get(block)     # only kept operations: no need to look each up in self.keep
        check_keep = self.keep is not None and not kept
        for op in kept or block.operations:
            op = op.operation
            name = op.name
            if name in ("scf.yield", "scf.condition", "gpu.terminator", "func.return", "gpu.return"):
                terminator = op
                yields = [self.slot(v) for v in op.operands]
                continue
            if check_keep and op not in self.keep:
                continue
            info = self.info(op, name)
            handler = HANDLERS.get(name)
            if self.symbolic and op in self.symbolic:
                handler = HANDLERS[SYMBOLIC]
            if handler is None:
                raise TraceError(f"the interpreter has no semantics for the operation '{name}'",
                                 code="interpreter-unknown-op",
                                 hint="run on a GPU (Options(backend='gpu')); if nvdsl emitted this op, "
                                      "please report it", loc=info.loc)
            try:
                compiled = handler(op, self, info)
            except V.Unsupported as e:
                raise _located(e, info) from None
            for result in op.results:
                self.scopes[self.slot(result)] = (extent, len(self.infos) - 1)
            if compiled is None:        # nothing to run: a constant, in every warp's registers from the start
                continue
            kind, fn = compiled
            if kind == SYNC and not self.fuzz:
                kind = PLAIN
            instrs.append((kind, fn))
            infos.append(info)
        extent[1] = len(self.infos) - 1
        return CompiledBlock(instrs, infos, args, yields, terminator)

