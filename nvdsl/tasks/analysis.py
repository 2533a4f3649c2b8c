"""Passes over the event IR that need no knowledge of the GPU's roles: dependence analysis with copy
insertion, copy elimination, and the checks of a tile program against its mapping.

Each pass is a pure function from a :class:`~nvdsl.tasks.ir.Program` to a new one.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import TaskError
from . import ir
from .ir import (GLOBAL, NONE, REGISTER, SHARED, Affine, Broadcast, Copy, Gather, Loop, Map, Mma, Program, Reduce,
                 Region)
from .mapping import refusal


def _regions(op) -> list[Region]:
    """The argument regions an operation reads directly (before copies are inserted)."""
    found = []
    for x in op.reads():
        if isinstance(x, Region):
            found.append(x)
        elif isinstance(x, Broadcast) and isinstance(x.tensor, Region):
            found.append(x.tensor)
    return found


def insert_copies(program: Program, mapping) -> Program:
    """Dependence analysis with copy insertion (Cypress pass 1).

    Every operation that reads a tile of an argument gets a copy of that tile into a local tensor in the
    memory the mapping gives the argument (shared for matrix-multiply operands and reductions, registers
    for the vectors of elementwise math, unless the mapping says otherwise). Then each operation's
    ``deps`` is set: the events that last wrote what it reads (RAW), last wrote what it writes (WAW) and
    read what it writes since (WAR), including those of the previous iteration of an enclosing loop.
    """
    tensors = {t.name: t for t in program.tensors}
    next_id = max((op.id for op, _ in ir.walk(program.body)), default=-1) + 1
    names = set(tensors)

    def fresh(stem: str) -> str:
        n = 0
        while f"{stem}{n}" in names:
            n += 1
        names.add(f"{stem}{n}")
        return f"{stem}{n}"

    def memory_for(region: Region, use: str) -> str:
        default = SHARED if use in ("mma", "reduce") else REGISTER
        memory = mapping.memory_of(region.tensor, default)
        if use == "mma" and memory != SHARED:
            raise refusal(f"memory['{region.tensor}']={memory!r}: tiles of '{region.tensor}' are operands of a "
                          "matrix multiply, which the tensor cores read from shared memory", code="mapping-memory",
                          changes=[{"memory": {region.tensor: SHARED}}])
        if memory in (GLOBAL, NONE):
            raise refusal(f"memory['{region.tensor}']={memory!r}: the program computes on tiles of "
                          f"'{region.tensor}', so they must be copied to 'shared' or 'register'",
                          code="mapping-memory", changes=[{"memory": {region.tensor: default}}])
        return memory

    def with_copies(body):
        nonlocal next_id
        out = []
        for node in body:
            if isinstance(node, Loop):
                out.append(replace(node, body=tuple(with_copies(node.body))))
                continue
            if isinstance(node, Copy):            # already a copy (a store, or a load the program asked for)
                out.append(node)
                continue
            use = "mma" if isinstance(node, Mma) else "reduce" if isinstance(node, Reduce) else "map"
            renames = {}
            for region in _regions(node):
                region = replace(region, transposed=False)
                if region in renames:
                    continue
                memory = memory_for(region, use)
                local = fresh(region.tensor + ("_s" if memory == SHARED else "_r"))
                source = tensors[region.tensor]
                tensors[local] = ir.TensorDecl(local, region.shape, source.dtype, memory)
                out.append(Copy(next_id, source=region, target=local, loc=node.loc, task=node.task))
                next_id += 1
                renames[region] = local
            out.append(_rename_regions(node, renames) if renames else node)
        return out

    body = with_copies(program.body)
    for name, t in list(tensors.items()):
        if t.memory == REGISTER and t.privilege == "":
            memory = mapping.memory_of(name, REGISTER)
            if memory not in (REGISTER, NONE):
                raise refusal(f"memory['{name}']={memory!r}: '{name}' is computed tile by tile in the registers "
                              "of the consumer warpgroups; keeping it in shared or global memory is not "
                              "supported", code="mapping-memory", changes=[{"memory": {name: REGISTER}}],
                              note="or 'none'")
            tensors[name] = replace(t, memory=memory)
    return with_dependences(program.with_body(body, tensors.values()))


def _substitute(op, swap):
    """``op`` with ``swap`` applied to every operand it reads (besides accumulators)."""
    if isinstance(op, Mma):
        return replace(op, a=swap(op.a), b=swap(op.b))
    if isinstance(op, Map):
        return replace(op, inputs=tuple(swap(x) for x in op.inputs))
    if isinstance(op, Reduce):
        return replace(op, input=swap(op.input))
    if isinstance(op, Copy):
        return replace(op, source=swap(op.source))
    if isinstance(op, Gather):
        return replace(op, index=swap(op.index))
    return op


def _rename_regions(op, renames: dict):
    """``op`` with each argument region it reads replaced by the local tensor it was copied to."""
    def swap(x):
        if isinstance(x, Region):
            return renames[replace(x, transposed=False)]
        if isinstance(x, Broadcast) and isinstance(x.tensor, Region):
            return Broadcast(renames[x.tensor], x.axis)
        return x
    return _substitute(op, swap)


def operand_name(x) -> str:
    """The tensor an operand names (a local's name, a broadcast's tensor, an argument region's tensor)."""
    if isinstance(x, Broadcast):
        return operand_name(x.tensor)
    if isinstance(x, Region):
        return x.tensor
    return x


def _renumbered(program: Program) -> Program:
    """The same program with its events numbered in program order."""
    counter = iter(range(1 << 30))

    def number(body):
        return tuple(replace(n, body=number(n.body)) if isinstance(n, Loop) else replace(n, id=next(counter))
                     for n in body)
    return program.with_body(number(program.body))


def with_dependences(program: Program) -> Program:
    """Renumber the events in program order and fill every operation's ``deps``: RAW, WAW and WAR per tensor, loop-carried ones included."""
    program = _renumbered(program)
    last_write: dict[str, int] = {}
    reads_since: dict[str, set] = {}
    found: dict[int, set] = {}

    def visit(op):
        deps = found.setdefault(op.id, set())
        read_names = {operand_name(x) for x in op.reads() if not isinstance(x, (int, float))}
        write_names = {operand_name(x) for x in op.writes()}
        for name in read_names:
            if name in last_write:
                deps.add(last_write[name])
        for name in write_names:
            if name in last_write:
                deps.add(last_write[name])
            deps.update(reads_since.get(name, ()))
        if not write_names & read_names:
            deps.discard(op.id)
        for name in read_names:
            reads_since.setdefault(name, set()).add(op.id)
        for name in write_names:
            last_write[name] = op.id
            reads_since[name] = set()

    def walk(body):
        for node in body:
            if isinstance(node, Loop):
                walk(node.body)
                if node.kind == "srange":
                    walk(node.body)           # the next iteration sees this one's writes
            else:
                visit(node)

    walk(program.body)

    def rebuild(body):
        out = []
        for node in body:
            if isinstance(node, Loop):
                out.append(replace(node, body=tuple(rebuild(node.body))))
            else:
                out.append(replace(node, deps=frozenset(found.get(node.id, ()))))
        return out
    return program.with_body(rebuild(program.body))


def eliminate_copies(program: Program) -> Program:
    """Copy elimination (Cypress pass 3): a second copy of the same tile into the same memory within one
    loop body is dropped and its readers read the first (two products sharing an A tile load it once); a
    copy whose tile is the same in every iteration of an srange moves before the loop (loaded once per
    output tile, as attention's query tile)."""
    tensors = {t.name: t for t in program.tensors}
    dropped: dict[str, str] = {}

    def invariant(node, loop: Loop) -> bool:
        return (isinstance(node, Copy) and isinstance(node.source, Region) and isinstance(node.target, str) and
                not any(a.coefficient(loop.vars[0]) for a in node.source.origin))

    def simplify(body):
        seen: dict[tuple, str] = {}
        out = []
        for node in body:
            if isinstance(node, Loop):
                if node.kind == "srange":
                    hoisted = [n for n in node.body if invariant(n, node)]
                    node = replace(node, body=tuple(n for n in node.body if not invariant(n, node)))
                    out.extend(simplify(hoisted))
                out.append(replace(node, body=tuple(simplify(node.body))))
                continue
            node = _rename_locals(node, dropped)
            if isinstance(node, Copy) and isinstance(node.source, Region) and isinstance(node.target, str):
                key = (node.source, tensors[node.target].memory)
                if key in seen:
                    dropped[node.target] = seen[key]
                    continue
                seen[key] = node.target
            if isinstance(node, Copy) and node.source == node.target:
                continue
            out.append(node)
        return out

    body = simplify(program.body)
    kept = [t for t in program.tensors if t.name not in dropped]
    return with_dependences(program.with_body(body, kept))


def _rename_locals(op, renames: dict):
    if not renames:
        return op

    def swap(x):
        if isinstance(x, str) and x in renames:
            return renames[x]
        if isinstance(x, Broadcast) and isinstance(x.tensor, str) and x.tensor in renames:
            return Broadcast(renames[x.tensor], x.axis)
        return x
    return _substitute(op, swap)


def check_parallel_writes(program: Program) -> None:
    """A ``prange`` must not let two iterations write the same data: every store inside it must put each
    parallel variable on its own axis, stepping by at least the tile's extent there. A row tile's first
    row (``nt.row_tiles``) steps by its variable: the table's tiles never share a row. (Additions into a
    tile, ``Ct[i, j] += v``, are atomic: iterations may add into the same data.)"""
    starts = {index.name: index.var for index in program.indices if index.role == "start"}
    for op, loops in ir.walk(program.body):
        if not (isinstance(op, Copy) and isinstance(op.target, Region)) or op.accumulate:
            continue
        target = op.target
        if starts:
            origin = tuple(sum(((Affine.var(starts[v]) * (c * s) if v in starts else Affine.var(v) * c)
                                for v, c in o.terms), Affine.of(o.const)) for o, s in zip(target.origin, target.shape))
            target = replace(target, origin=origin)
        for loop in loops:
            if loop.kind != "prange":
                continue
            extents = dict(zip(loop.vars, loop.extents))
            for var, extent in extents.items():
                if extent == 1:
                    continue
                axes = [(a, o.coefficient(var)) for a, o in enumerate(target.origin) if o.coefficient(var)]
                steps_clear = len(axes) == 1 and abs(axes[0][1]) >= target.shape[axes[0][0]]
                if steps_clear:       # several variables on one axis must not collide: a mixed radix
                    origin, size = target.origin[axes[0][0]], target.shape[axes[0][0]]
                    terms = sorted((abs(c), v) for v, c in origin.terms if v in extents and extents[v] > 1)
                    span = size
                    for c, v in terms:
                        steps_clear &= c >= span
                        span = c * extents[v]
                if not steps_clear:
                    raise TaskError(f"the parallel loop's iterations over {var} (< {extent}) all write "
                                    f"{target}: a prange must not write the same data twice", code="aliasing-write",
                                    hint="index the written tile by every parallel variable, one per axis, or make "
                                         "the loop an srange", loc=op.loc)
