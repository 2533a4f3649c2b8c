"""Register-fragment layouts: which thread of a group holds which element of a tile in registers.

A :class:`FragmentLayout` describes a tile of logical ``shape`` (``(M, N)`` for a tile, ``(M,)`` for
a vector) spread over the registers of a group of threads. For each axis of the shape it holds a
layout from (thread, value) to the coordinate along that axis: thread ``t`` of the group holds, as
its value number ``v`` (the order of its registers), the element at
``(rows(t, v), cols(t, v))``. Mode 0 of these layouts ranges over the threads, mode 1 over the
values; both may be nested (Graphene's thread tensors, CuTe's TV layouts).

Printed, a tile's layout is one shape:stride layout from (thread, value) to the element's
column-major index ``row + M * col`` (as CuTe writes TV layouts): wgmma's 64 x 128 accumulator is
``((4,8,4),(2,2,16)):((128,1,16),(64,8,512))``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from .layout import Layout, flatten, idx2crd, is_int, make_layout


@dataclass(frozen=True)
class FragmentLayout:
    """A tile or vector of ``shape`` held in registers: ``coords[axis]`` maps (thread, value) to the
    element's coordinate along ``axis``.

    Two fragments combine elementwise only when their layouts are equal (same shape, same map).
    """

    shape: tuple[int, ...]
    coords: tuple[Layout, ...]
    name: str = field(default="", compare=False)

    def __post_init__(self):
        if len(self.coords) != len(self.shape) or not self.coords:
            raise ValueError(f"a fragment of shape {self.shape} needs one coordinate layout per axis")
        tv_shape = self.coords[0].shape
        for axis, (extent, layout) in enumerate(zip(self.shape, self.coords)):
            if layout.rank != 2 or layout.shape != tv_shape:
                raise ValueError("each coordinate layout maps (thread, value): two modes of one shape")
            if min(flatten(layout.stride)) < 0 or layout.cosize > extent:
                raise ValueError(f"axis {axis} coordinates reach {layout.cosize - 1}, outside 0..{extent - 1}")

    @property
    def threads(self) -> int:
        """The threads of the group."""
        return self.coords[0][0].size

    @property
    def values(self) -> int:
        """The values each thread holds."""
        return self.coords[0][1].size

    def __call__(self, thread, value: int) -> tuple:
        """The coordinate of ``thread``'s value number ``value`` (``thread`` may be a traced index)."""
        return tuple(self.thread_part(axis, thread) + self.value_part(axis, value)
                     if not is_int(thread) else layout(thread, value)
                     for axis, layout in enumerate(self.coords))

    def thread_part(self, axis: int, thread):
        """The part of the coordinate along ``axis`` that depends on the thread."""
        return self.coords[axis][0](thread)

    def value_part(self, axis: int, value: int) -> int:
        """The part of the coordinate along ``axis`` that depends on the value number."""
        return self.coords[axis][1](value)

    def elements(self, thread: int) -> list[tuple[int, ...]]:
        """The coordinates ``thread`` holds, in register order."""
        return [self(thread, v) for v in range(self.values)]

    @property
    def tv(self) -> Layout:
        """(thread, value) -> the element's column-major index (``row + M * col``)."""
        scale, strides = 1, None
        for extent, layout in zip(self.shape, self.coords):
            scaled = _scale_strides(layout.stride, scale)
            strides = scaled if strides is None else _add_strides(strides, scaled)
            scale *= extent
        return Layout(self.coords[0].shape, strides)

    def __str__(self) -> str:
        what = self.name or "fragment"
        extent = "x".join(map(str, self.shape))
        order = "column-major index" if len(self.shape) > 1 else "index"
        return f"{what} {extent} over {self.threads} threads: (thread,value) -> {order} {self.tv}"

    def project(self, axis: int) -> "FragmentLayout":
        """The layout of a vector along ``axis`` (one value per row for axis 0) that this tile's
        threads hold: each thread keeps the coordinates along ``axis`` of its values, once each.
        Threads whose values differ only along other axes hold copies."""
        kept = [i for i, _ in enumerate(self._value_modes()) if self._value_stride(axis, i) != 0]
        thread = self.coords[axis][0]
        values = self._value_modes()
        value = _layout_of([values[i] for i in kept], [self._value_stride(axis, i) for i in kept])
        return FragmentLayout((self.shape[axis],), (make_layout(thread, value),),
                              name=f"{'rows' if axis == 0 else 'columns'} of {self.name or 'fragment'}")

    def broadcast_map(self, axis: int) -> tuple[int, ...]:
        """For each value of this tile, the value number of ``project(axis)`` with its coordinate."""
        modes = self._value_modes()
        kept = [i for i in range(len(modes)) if self._value_stride(axis, i) != 0]
        result = []
        for v in range(self.values):
            coord = idx2crd(v, modes)
            index, scale = 0, 1
            for i in kept:
                index += coord[i] * scale
                scale *= modes[i]
            result.append(index)
        return tuple(result)

    def reduction(self, axis: int) -> "Reduction":
        """How to reduce a tile along ``axis`` into the vector ``project(other axis)``: the values of
        each thread to combine, then the lanes to exchange with (``shfl.sync.bfly`` masks)."""
        if len(self.shape) != 2:
            raise ValueError("only a 2-D tile reduces along an axis")
        keep = 1 - axis
        target = self.project(keep)
        index = self.broadcast_map(keep)
        groups = tuple(tuple(v for v in range(self.values) if index[v] == u) for u in range(target.values))
        masks, span = [], 1
        thread_modes = flatten(self.coords[0][0].shape)
        kept_strides = flatten(self.coords[keep][0].stride)
        reduced_strides = flatten(self.coords[axis][0].stride)
        for size, kept_stride, reduced_stride in zip(thread_modes, kept_strides, reduced_strides):
            if kept_stride == 0 and reduced_stride != 0:
                if size & (size - 1):
                    raise ValueError(f"threads of mode size {size} cannot be reduced by butterfly shuffles")
                masks += [span << j for j in range(size.bit_length() - 1)]
            span *= size
        return Reduction(target, groups, tuple(masks))

    def _value_modes(self) -> tuple[int, ...]:
        return flatten(self.coords[0][1].shape)

    def _value_stride(self, axis: int, mode: int) -> int:
        return flatten(self.coords[axis][1].stride)[mode]


@dataclass(frozen=True)
class Reduction:
    """A reduction of a tile's values into a vector: combine ``groups[u]`` (value numbers) into the
    vector's value ``u`` in each thread, then combine across lanes ``lane ^ mask`` for each mask."""

    target: FragmentLayout
    groups: tuple[tuple[int, ...], ...]
    shuffle_masks: tuple[int, ...]


def _scale_strides(stride, scale: int):
    return stride * scale if is_int(stride) else tuple(_scale_strides(s, scale) for s in stride)


def _add_strides(a, b):
    return a + b if is_int(a) else tuple(_add_strides(x, y) for x, y in zip(a, b))


def _layout_of(shape: list[int], stride: list[int]) -> Layout:
    if not shape:
        return Layout(1, 0)
    if len(shape) == 1:
        return Layout(shape[0], stride[0])
    return Layout(tuple(shape), tuple(stride))


@functools.lru_cache(maxsize=None)
def wgmma_accumulator(m: int, n: int) -> FragmentLayout:
    """The layout of an ``m`` x ``n`` wgmma accumulator over the warpgroup's 128 threads (PTX ISA,
    "Matrix fragments for wgmma.mma_async", m64nNk16 with 32-bit accumulators), in the register
    order of nvgpu's accumulator struct.

    Thread ``t = t0 + 4 t1 + 32 t2`` (``t2`` its warp) holds, for each 64-row block ``c``, each
    8-column block ``q`` and ``h``, ``j`` in (0, 1), value ``j + 2 h + 4 q + (n / 2) c`` at row
    ``t1 + 16 t2 + 8 h + 64 c``, column ``2 t0 + j + 8 q``. The same layout, with ``n`` = K, places the
    16-bit A operand of a wgmma read from registers.
    """
    if m % 64 or n % 8 or m <= 0 or n <= 0:
        raise ValueError(f"a wgmma accumulator is a multiple of 64 rows and of 8 columns, not {m}x{n}")
    thread_shape = (4, 8, 4)
    value_shape = (2, 2, n // 8) + ((m // 64,) if m > 64 else ())
    rows = make_layout(Layout(thread_shape, (0, 1, 16)), Layout(value_shape, (0, 8, 0) + ((64,) if m > 64 else ())))
    cols = make_layout(Layout(thread_shape, (2, 0, 0)), Layout(value_shape, (1, 0, 8) + ((0,) if m > 64 else ())))
    return FragmentLayout((m, n), (rows, cols), name="wgmma accumulator")


def warps_per_row(m: int, warps: int = 4) -> int:
    """The warps of ``warps`` (a warpgroup's 4, or those of several warpgroups that hold a tile together) that share
    each row of an ``m``-row :func:`rows_across_lanes` tile: one where the warps can each take whole rows (``m`` a
    multiple of ``warps``), else as many as spread the rows evenly (of 4: 2 for an even ``m``, all 4 for an odd
    one)."""
    return warps // math.gcd(m, warps)


def rows_across_lanes(m: int, n: int, run: int = 1, warps: int = 4) -> FragmentLayout:
    """An ``m`` x ``n`` tile over the ``32 warps`` threads of a warpgroup (``warps`` 4) or of several, with each row
    along the 32 lanes of ``k`` = :func:`warps_per_row` warps (one where ``m`` is a multiple of ``warps``), in runs of
    ``run`` consecutive columns: thread ``t = lane + 32 (w + k g)`` holds, as value ``r + (m k / warps) (e + run c)``,
    the element at row ``g + (warps / k) r``, column ``e + run lane + 32 run w + 32 run k c`` (``e < run``). A warp's
    loads and stores of one run touch ``32 run`` consecutive elements of a row (coalesced; a run of 16 bytes is one
    vector access per lane), and a row reduces over the warp's lanes by butterfly shuffles (and, with ``k`` > 1, across
    its warps through shared memory): the layout of tiles that no wgmma reads or writes (the task layer's row-wise
    programs)."""
    if warps <= 0 or warps % 4:
        raise ValueError(f"rows across lanes lie over whole warpgroups (a multiple of 4 warps), not {warps} warps")
    total = warps
    warps = warps_per_row(max(m, 1), total)
    groups = total // warps
    if m <= 0 or run <= 0 or n <= 0 or n % (32 * run * warps):
        raise ValueError(f"rows across lanes of {m} rows take a multiple of {32 * run * warps} columns (runs of {run} "
                         f"over {warps} warp(s) a row), not {m}x{n}")
    if warps == 1:
        threads, thread_rows, thread_columns = (32, total), (0, 1), (run, 0)
    elif groups == 1:
        threads, thread_rows, thread_columns = (32, total), (0, 0), (run, 32 * run)
    else:
        threads, thread_rows, thread_columns = (32, warps, groups), (0, 0, 1), (run, 32 * run, 0)
    width = 32 * run * warps
    if run == 1:
        values, row_strides, column_strides = (m // groups, n // width), (groups, 0), (0, width)
    else:
        values, row_strides, column_strides = (m // groups, run, n // width), (groups, 0, 0), (0, 1, width)
    rows = make_layout(Layout(threads, thread_rows), Layout(values, row_strides))
    cols = make_layout(Layout(threads, thread_columns), Layout(values, column_strides))
    return FragmentLayout((m, n), (rows, cols), name="rows across lanes")
