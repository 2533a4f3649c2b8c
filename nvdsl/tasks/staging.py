"""Staging copies for arguments that no TMA descriptor can address.

TMA steps each axis but the last by a multiple of 16 bytes, from an address that is one: a (M, K) bfloat16
array with K = 999 (rows 1998 bytes apart), a vocabulary of 50257 logits per row, a view whose last axis is not
unit-stride, or a device view starting a few elements in (``x[:, 1:]``) has no descriptor. Such an argument,
where the kernel moves its tiles by TMA, is copied before the kernel into a scratch array of the same shape
whose rows start on 16-byte boundaries (``frontend.memory.padded_empty``; an output the kernel's tiles cover
whole is not copied in), and, when the kernel writes it, copied back after the kernel. The kernel reads and
writes the copy as it would the argument (TMA's bounds are the argument's shape, so the rows' padding is never
read). Each copy reads and writes the argument once, in a kernel of its own on the same stream: results do not
change, only time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..layouts import warps_per_row
from ..target import TMA_ADDRESS_BYTES, VECTOR_BYTES, stride_problem, vector_problem
from .ir import Region, walk
from .stages import Schedule

if TYPE_CHECKING:
    from ..frontend.memory import Array

COPY_THREADS, COPY_UNROLL = 256, 4


@dataclass(frozen=True)
class Staged:
    """An argument the kernel reaches through a staging copy: why, and which ways it is copied."""

    name: str
    why: str
    copied_in: bool
    copied_out: bool

    def __str__(self) -> str:
        ways = " and ".join(w for w, on in (("copied in before the kernel", self.copied_in),
                                             ("copied out after it", self.copied_out)) if on)
        return f"  {self.name}: {self.why}; {ways}"


def staged_arguments(s: Schedule, layouts: dict) -> list[Staged]:
    """The arguments of the kernel of ``s`` that go through staging copies: those its TMA descriptors move whose
    layout (``layouts``: name -> (shape, itemsize, element strides or None, unaligned start)) no descriptor can
    address. An argument the kernel reads, adds into or writes only in part, is copied in; one it writes is
    copied out."""
    moved_by_tma = {t.source.tensor for r in s.rings for t in r.tiles} | {r.tensor for r in s.resident} | \
        {st.target.tensor for st in s.stores if not st.direct}      # (direct stores clip each thread's own)
    writes = [(w, loops) for op, loops in walk(s.program.body) for w in op.writes() if isinstance(w, Region)]
    reads = {r.tensor for op, _ in walk(s.program.body) for r in op.reads() if isinstance(r, Region)}
    added_into = {op.target.tensor for op, _ in walk(s.program.body) if getattr(op, "accumulate", False)}
    found = []
    for name in sorted(moved_by_tma):
        shape, itemsize, strides, unaligned = layouts[name]
        why = (f"it starts off a {TMA_ADDRESS_BYTES}-byte boundary" if unaligned else
               stride_problem(shape, itemsize, strides))
        if not math.prod(shape) or why is None:
            continue
        its_writes = [(w, loops) for w, loops in writes if w.tensor == name]
        copied_in = name in reads or name in added_into or not its_writes or \
            not any(covers(w, loops, shape) for w, loops in its_writes)
        found.append(Staged(name, why, copied_in, bool(its_writes)))
    return found


def staging_text(found: list[Staged]) -> str:
    """``kernel.explain``'s lines on staging copies (none where no argument needs one)."""
    if not found:
        return ""
    return "staging copies (arguments no TMA descriptor can address):\n" + "".join(f"{f}\n" for f in found)


def argument_layouts(arrays: dict[str, Array]) -> dict:
    """name -> (shape, itemsize, element strides or None, unaligned start) of traced arrays: what
    :func:`staged_arguments` and :func:`row_run` read (:func:`spec_layouts` gives them from a call's specs)."""
    return {name: (a.shape, a.dtype.itemsize, a.strides, a.unaligned) for name, a in arrays.items()}


def spec_layouts(specs) -> dict:
    """:func:`argument_layouts` of the arrays a call's ``specs`` (``ArgSpec``s, by name) describe."""
    return {name: (spec.shape, spec.dtype.itemsize, spec.strides, spec.unaligned) for name, spec in specs.items()}


#: Consecutive columns a lane holds of a row-wise program's tile rows where its arguments allow 16-byte vector
#: accesses of 16-bit elements (see :func:`row_run`).
ROW_RUN = 8


def row_run(layouts: dict) -> int:
    """The columns a lane holds together of a row-wise program's tiles (``Schedule.lanes_along_rows``) over arguments
    of ``layouts`` (name -> (shape, itemsize, element strides or None, unaligned start)): :data:`ROW_RUN` where
    every argument of two axes or more can move its rows in 16-byte vectors (``target.vector_problem``); else 1,
    the lanes side by side, each warp instruction reading one element a lane from consecutive addresses (runs
    read one element at a time would spread each warp instruction over 16 sectors)."""
    return 1 if _vector_problems(layouts) else ROW_RUN


def tile_run(columns: int, warps: int, row_run: int = ROW_RUN) -> int:
    """The consecutive columns a lane holds of a row-wise tile ``columns`` wide whose rows lie along the lanes of
    ``warps`` warps: ``row_run`` (:func:`row_run`'s), halved until the lanes cover each row a whole number of times
    (4 at 128 columns over one warp); 1 where none does."""
    run = row_run
    while run > 1 and columns % (32 * run * warps):
        run //= 2
    return run


def _vector_problems(layouts: dict) -> list[str]:
    return [f"'{name}': {why}" for name, (shape, itemsize, strides, unaligned) in sorted(layouts.items())
            if len(shape) >= 2 and (why := vector_problem(shape, itemsize, strides, unaligned)) is not None]


def row_layout_text(s: Schedule, layouts: dict) -> str:
    """``kernel.explain``'s line on how a row-wise program's rows move (none for other programs)."""
    if not s.lanes_along_rows:
        return ""
    warps = warps_per_row(s.rows, s.row_warps)
    spread = "" if warps == 1 else f"; each row along the lanes of {warps} warps, whose sums meet in shared memory"
    problems = _vector_problems(layouts)
    columns = max((t.shape[-1] for t in s.program.tensors if not t.privilege and len(t.shape) == 2), default=0)
    run = tile_run(columns, warps) if columns else ROW_RUN
    if not problems and run == 1:
        return f"row-wise tiles: one element a lane, since the tiles' rows of {columns} columns are too short for " \
               f"runs{spread}\n"
    if not problems and run < ROW_RUN:
        return (f"row-wise tiles: runs of {run} columns a lane (the tiles' rows are {columns} columns), loaded and "
                f"stored in vectors of {run} elements{spread}\n")
    if not problems:
        return (f"row-wise tiles: runs of {ROW_RUN} columns a lane, loaded and stored in {VECTOR_BYTES}-byte "
                f"vectors{spread}\n")
    return ("row-wise tiles: one element a lane, since " + "; ".join(problems) + f" (rows of {VECTOR_BYTES}-byte "
            f"multiples, starting on such a boundary, move in 16-byte vectors){spread}\n")


def stage(s: Schedule, arrays: dict[str, Array]) -> tuple[dict[str, Array], list[tuple[Array, Array]]]:
    """The arrays the kernel of ``s`` uses, each argument of :func:`staged_arguments` replaced by a staging copy
    (copied in here, in host code before the kernel), and the (copy, argument) pairs to copy back after the
    kernel (:func:`copy`)."""
    from ..frontend.memory import padded_empty    # MLIR: imported when traced (explain needs none of it)
    layouts = argument_layouts(arrays)
    staged, back = dict(arrays), []
    for found in staged_arguments(s, layouts):
        array = arrays[found.name]
        copy_ = staged[found.name] = padded_empty(array.shape, array.dtype, name=f"{found.name}_staged")
        if found.copied_in:
            copy(array, copy_)
        if found.copied_out:
            back.append((copy_, array))
    return staged, back


def covers(region: Region, loops, shape: tuple[int, ...]) -> bool:
    """Whether the writes of ``region``, once per iteration of the parallel ``loops`` around it (none sequential),
    cover a tensor of ``shape`` whole: along each axis, the tile's origin steps one box per index of a parallel
    loop whose extent reaches the tensor's end, or the box spans the axis from 0."""
    if any(loop.kind != "prange" for loop in loops) or region.end is not None:
        return False
    extents = {var: extent for loop in loops for var, extent in zip(loop.vars, loop.extents)}
    for origin, box, extent in zip(region.origin, region.shape, shape):
        if origin.const == 0 and not origin.terms and box >= extent:
            continue
        if origin.const or len(origin.terms) != 1:
            return False
        var, coefficient = origin.terms[0]
        if var not in extents or coefficient != box or extents[var] * box < extent:
            return False
    return True


def copy(source: Array, target: Array, unroll: int = COPY_UNROLL) -> None:
    """Launch a kernel copying ``source`` into ``target`` (one shape and dtype, any strides): a block per row
    (each index of every axis but the last), its threads along the row, each loading ``unroll`` elements before
    storing them (loads in flight together), then the row's tail one element at a time
    (``tools/staging_copy_probe.py`` times the choices)."""
    from ..frontend.control import for_range      # MLIR: imported when traced
    from ..frontend.launch import gpu_launch
    shape = source.shape
    rows, cols = math.prod(shape[:-1]), shape[-1]
    chunk = COPY_THREADS * unroll
    whole = cols // chunk * chunk                     # columns copied ``unroll`` at a time per thread

    @gpu_launch(grid=(rows, 1, 1), block=(COPY_THREADS, 1, 1))
    def copy_kernel(ctx):
        index, rest = [], ctx.block_id.x
        for extent in reversed(shape[:-1]):
            index.insert(0, rest % extent if extent > 1 else 0)
            rest = rest // extent if extent > 1 else rest
        if whole:
            for j in for_range(ctx.thread_id.x, whole, chunk):
                values = [source[(*index, j + u * COPY_THREADS)] for u in range(unroll)]
                for u, value in enumerate(values):
                    target[(*index, j + u * COPY_THREADS)] = value
        if whole < cols:
            for j in for_range(ctx.thread_id.x + whole, cols, COPY_THREADS):
                target[(*index, j)] = source[(*index, j)]

    copy_kernel()
