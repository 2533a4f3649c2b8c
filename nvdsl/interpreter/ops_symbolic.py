"""A protocol skeleton's instructions for the operations that compute from a table's entries
(``protocol.table_branches``): they move no data, so they compute which entries a condition reads; a clamp of
them (a trip count read on the GPU) takes the value the run tries (``Block.trip_choice``)."""

from __future__ import annotations

from . import values as V
from .core import PLAIN, SYMBOLIC, handles
from .skeleton import MEMORY_READS, Undecided


@handles(SYMBOLIC)
def compile_symbolic(op, c, info):
    """A table's load gives the entry it reads, ``("load", name, indices)``, and arithmetic on such values the
    expression it computes; a branch on one asks the block which way it goes (``Block.table_decision``), and a clamp
    of one (``Compiler.table_clamps``) which value it takes (``Block.trip_choice``): a number again."""
    results = [c.slot(v) for v in op.results]
    operands = [c.slot(v) for v in op.operands]
    if op.name in MEMORY_READS:
        memref, indices = operands[0], operands[1:]

        def load(w):
            env = w.env
            mem = env[memref]
            entry = tuple(_uniform(w, env[i], info) for i in indices)
            if any(not 0 <= i < extent for i, extent in zip(entry, mem.shape)):
                raise w.block.fault("out-of-bounds", f"a load of '{mem.name}' at index {list(entry)} is outside its "
                                    f"shape {list(mem.shape)}", info, warp=w)
            env[results[0]] = ("load", mem.name, entry)
        return PLAIN, load
    attributes = tuple(sorted((name, str(op.attributes[name])) for name in op.attributes))
    clamp = c.table_clamps.get(op)
    if clamp is not None:
        least, most = clamp
        dtype = V.element_kind(op.results[0].type)[0]

        def choose(w):
            env = w.env
            expression = (op.name, attributes) + tuple(
                env[i] if type(env[i]) is tuple else _uniform(w, env[i], info) for i in operands)
            env[results[0]] = V.lane_array(w.block.trip_choice(expression, least, most), dtype)
        return PLAIN, choose

    def compute(w):
        env = w.env
        expression = (op.name, attributes) + tuple(
            env[i] if type(env[i]) is tuple else _uniform(w, env[i], info) for i in operands)
        for r in results:
            env[r] = expression
    return PLAIN, compute


def _uniform(w, value, info) -> int:
    """A value every active lane of the warp agrees on (the lanes of a warp that read different table entries
    could branch apart: the check cannot tell whether they do)."""
    if value.shape[0] > 1:
        active = value[w.mask]
        if active.size and (active != active[0]).any():
            raise Undecided(f"the lanes of a warp read different entries of a table the synchronisation depends on "
                            f"({info.where()})")
        value = active[:1] if active.size else value[:1]
    return int(value[0])
