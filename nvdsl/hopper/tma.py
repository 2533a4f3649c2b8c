"""``TMA``: the Tensor Memory Accelerator, moving tiles between global and shared memory.

A descriptor is declared in the host function over an array argument; the
runtime encodes it for the actual buffer at each call (``cuTensorMapEncodeTiled``)
and passes it to the kernel, where ``load``/``store`` move one box.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, nvgpu, nvvm

from .. import dtypes as dt
from ..errors import TraceError, user_location
from ..frontend.context import at_user_line, current, current_kernel
from ..frontend.control import when
from ..frontend.memory import GLOBAL, SHARED, Array
from ..layouts.swizzle import swizzle, swizzle_alignment
from ..signature import TensorMapSpec
from ..target import TENSORMAP_ATTR, rule_violations
from ..frontend.values import index_value, minimum
from .mbarrier import Mbarrier, _predicate

_SWIZZLE_NAMES = {0: "none", 32: "swizzle_32b", 64: "swizzle_64b", 128: "swizzle_128b"}
_L2_NAMES = {0: "none", 64: "l2promo_64b", 128: "l2promo_128b", 256: "l2promo_256b"}
_INTERLEAVE_NAMES = {0: "none", 16: "interleave_16b", 32: "interleave_32b"}


class TMA:
    """A TMA descriptor for ``box``-shaped tiles of ``array`` (a global-memory argument).

    Args:
        array: an array argument of the enclosing ``@mlir_func``.
        box: the tile's extents, outermost first (like the array's shape); each at most 256.
        swizzle: shared-memory swizzle span in bytes: 0 (none), 32, 64 or 128. The box's inner
            row must fit in it; 128-byte-swizzled tiles need 1024-byte-aligned shared memory.
        l2_promotion: L2 promotion size in bytes: 0 (none), 64, 128 or 256.
        oob: what out-of-bounds elements read as: ``"zero"`` or ``"nan"``.
        interleave: 0 (none), 16 or 32 bytes.
        ragged: ``array`` (2-D) is a concatenation of row segments (a grouped GEMM's groups): :meth:`load`
            and :meth:`store` take ``end=``, the row where the box's segment ends, and TMA clips the box
            there as at the array's edge (a store writes no row of the next segment).

    Declared in host code; used inside kernels with :meth:`prefetch`, :meth:`load`, :meth:`store`.
    """

    def __init__(self, array: Array, box, *, swizzle: int = 0, l2_promotion: int = 0, oob: str = "zero",
                 interleave: int = 0, ragged: bool = False):
        trace = current("nvdsl.TMA")
        if trace.kernel is not None:
            raise TraceError("declare a TMA descriptor in the host function, not inside a kernel",
                             code="bad-tma", hint="create it next to the gpu_launch and use it in the kernel",
                             loc=user_location())
        if not (isinstance(array, Array) and array.space == GLOBAL):
            raise TraceError(f"nvdsl.TMA needs an array argument of the host function, got {array!r}",
                             code="bad-tma",
                             hint="pass an array argument of the @mlir_func (or an nvdsl.empty scratch array), e.g. "
                                  "nvdsl.TMA(a, (64, 64))", loc=user_location())
        if oob not in ("zero", "nan"):
            raise TraceError(f"oob={oob!r} must be 'zero' or 'nan'", code="bad-tma",
                             hint="pass oob='zero' (the default) or oob='nan'", loc=user_location())
        box = tuple(box)
        if ragged and (len(box) != 2 or len(array.shape) != 2):
            raise TraceError(f"a ragged TMA descriptor spans a 2-D array with a (rows, cols) box, not "
                             f"{array.dtype.name}{list(array.shape)} with box {box}", code="bad-tma",
                             hint="use ragged=True with a 2-D array and a (rows, cols) box, or leave ragged out",
                             loc=user_location())
        self.ragged = ragged
        self.segment_box = box
        if ragged:
            box = (1,) + box                # the descriptor's box in its 3-D view (see TensorMapSpec.view)
        self.array = array
        self.spec = TensorMapSpec(arg=-1, box=box, swizzle=swizzle, l2_promotion=l2_promotion,
                                  oob_nan=oob == "nan", interleave=interleave, ragged=ragged)
        problems = rule_violations(self.spec, array.dtype, array.shape, array.strides, array.unaligned)
        if problems:
            raise TraceError(f"TMA over '{array.name}' ({array.dtype.name}{list(array.shape)}) with box "
                             f"{self.segment_box} breaks TMA's rules: " + "; ".join(problems), code="bad-tma",
                             hint=None if array.strides is None and not array.unaligned else
                             f"pass a contiguous copy of '{array.name}' (x.clone(), np.ascontiguousarray(x))",
                             loc=user_location())
        self.box = box
        self.box_bytes = array.dtype.itemsize
        for extent in box:
            self.box_bytes *= extent
        self.type = ir.Type.parse(
            f"!nvgpu.tensormap.descriptor<tensor = memref<{'x'.join(map(str, box))}x{array.dtype.mlir_type()}, "
            f"#gpu.address_space<workgroup>>, swizzle = {_SWIZZLE_NAMES[swizzle]}, "
            f"l2promo = {_L2_NAMES[l2_promotion]}, oob = {oob}, interleave = {_INTERLEAVE_NAMES[interleave]}>")
        settings = {
            "box": ir.DenseI64ArrayAttr.get(list(box)),
            "swizzle": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), swizzle),
            "l2_promotion": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), l2_promotion),
            "oob_nan": ir.BoolAttr.get(oob == "nan"),
            "interleave": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), interleave),
        }
        if ragged:                            # absent means plain, so plain descriptors trace as before
            settings["ragged"] = ir.BoolAttr.get(True)
        settings = ir.DictAttr.get(settings)
        with at_user_line():
            # The host side's marker, read by the compiler into the launch plan (see TENSORMAP_ATTR).
            self._host = ir.Operation.create("builtin.unrealized_conversion_cast",
                                             results=[ir.Type.parse("!llvm.ptr")], operands=[array.ir],
                                             attributes={TENSORMAP_ATTR: settings}).result
        self._in_kernel = {}

    def _descriptor(self) -> ir.Value:
        """This descriptor inside the kernel being traced (made once per kernel, at its entry)."""
        ctx = current_kernel("a TMA descriptor")
        found = self._in_kernel.get(id(ctx))
        if found is None or found[0] is not ctx:
            with at_user_line(), ir.InsertionPoint.at_block_begin(ctx.entry_block):
                value = ir.Operation.create("builtin.unrealized_conversion_cast", results=[self.type],
                                            operands=[self._host]).result
            found = self._in_kernel[id(ctx)] = (ctx, value)
        return found[1]

    def boxes(self, tile_shape) -> list[tuple[int, tuple[int, ...]]]:
        """How a shared tile of ``tile_shape`` is made of this descriptor's boxes: per box, its byte offset in
        the tile and its element offset per coordinate (outermost first), or an error if it is not made of them.

        A tile of several boxes holds them one after the other, in row-major order of boxes. Leading box
        extents of 1 (a batch coordinate) need no tile axis.
        """
        tile_shape, box = tuple(tile_shape), self.box
        extra = len(box) - len(tile_shape)
        inner = box[extra:] if extra >= 0 else ()
        if extra < 0 or any(b != 1 for b in box[:extra]) or any(t % b for t, b in zip(tile_shape, inner)):
            raise TraceError(f"a tile of shape {list(tile_shape)} is not made of whole TMA boxes {list(box)}",
                             code="bad-tma", hint="make each tile extent a multiple of the box's", loc=user_location())
        counts = [t // b for t, b in zip(tile_shape, inner)]
        result = []
        for number in range(self.box_bytes and math.prod(counts)):
            position, rest = [], number
            for count in reversed(counts):
                rest, i = divmod(rest, count)
                position.append(i)
            position.reverse()
            deltas = (0,) * extra + tuple(i * b for i, b in zip(position, inner))
            result.append((number * self.box_bytes, deltas))
        return result

    def matrix_descriptor(self) -> ir.Value:
        """This descriptor typed by its 2-D matrix box (leading box extents of 1 dropped), for wgmma.

        MLIR lowers ``nvgpu.warpgroup.generate.descriptor`` from the descriptor's *type*, taking the
        leading-dimension byte offset from the box's first extent; a batched box (1, rows, cols) would give
        1 instead of ``rows``. The value is the same descriptor.
        """
        box = self.box
        while len(box) > 2 and box[0] == 1:
            box = box[1:]
        if box == self.box:
            return self._descriptor()
        matrix_type = ir.Type.parse(str(self.type).replace(
            "memref<" + "x".join(map(str, self.box)), "memref<" + "x".join(map(str, box)), 1))
        with at_user_line():
            return ir.Operation.create("builtin.unrealized_conversion_cast", results=[matrix_type],
                                       operands=[self._descriptor()]).result

    def _check_tile(self, tile: Array, what: str) -> list[tuple[int, tuple[int, ...]]]:
        if not (isinstance(tile, Array) and tile.space == SHARED):
            raise TraceError(f"TMA {what} needs a shared-memory array, got {tile!r}", code="bad-tma",
                             hint=f"pass a shared tile such as ctx.shared_array({tuple(self.segment_box)}, "
                                  f"nvdsl.{self.array.dtype.name}, align=1024)", loc=user_location())
        if tile.dtype != self.array.dtype:
            raise TraceError(f"TMA {what}: the shared tile is {tile.dtype.name}{list(tile.shape)} but the "
                             f"descriptor's box is {self.array.dtype.name}{list(self.box)}", code="bad-tma",
                             hint=f"make the shared tile {self.array.dtype.name}, the dtype of '{self.array.name}'",
                             loc=user_location())
        tile.check_lease(f"TMA {what} of")
        span = swizzle_alignment(self.spec.swizzle)
        if tile.alignment is not None and tile.alignment < span:
            raise TraceError(f"TMA {what}: '{tile.name}' starts at a shared byte offset aligned to {tile.alignment} "
                             "bytes; " + (f"a {self.spec.swizzle}-byte swizzled TMA tile" if self.spec.swizzle else
                                          "a TMA tile") + f" must start on a multiple of {span}", code="misaligned",
                             hint=f"allocate it with align={span}", loc=user_location())
        return self.boxes(tile.shape)

    def _box_views(self, tile: Array, what: str):
        """(view of one box in ``tile``, the box's coordinate offsets) for every box of the tile."""
        boxes = self._check_tile(tile, what)
        if self.ragged and tile.shape[0] != self.segment_box[0]:
            raise TraceError(f"TMA {what}: a ragged descriptor's tile is one box tall ({self.segment_box[0]} rows), "
                             f"not {tile.shape[0]}", code="bad-tma",
                             hint=f"use a tile of {self.segment_box[0]} rows, one box of the ragged descriptor",
                             loc=user_location())
        if len(boxes) == 1 and tile.shape == self.box:
            return [(tile, boxes[0][1])]
        # each box as a view of the descriptor's full rank (nvgpu wants the ranks to match)
        return [(tile.view(self.box, offset=offset), deltas) for offset, deltas in boxes]

    def _segment(self, coords, end) -> tuple:
        """The coordinates in the descriptor's space: for a ragged one, ``(row, col)`` clipped at ``end``
        become ``(e, j, col)`` with ``e = min(end, row + rows)`` and ``j = row + rows - e``."""
        if not self.ragged:
            if end is not None:
                raise TraceError("end= is for ragged TMA descriptors (TMA(..., ragged=True))", code="bad-tma",
                                 hint="drop end=, or make the descriptor with nvdsl.TMA(..., ragged=True)",
                                 loc=user_location())
            return tuple(coords)
        coords = tuple(coords)
        if end is None or len(coords) != 2:
            raise TraceError(f"a ragged TMA descriptor takes (row, col) and end=, the row where the segment ends; "
                             f"got {coords!r}, end={end!r}", code="bad-tma",
                             hint="pass the coordinates as (row, col) and end= the row where this box's segment ends",
                             loc=user_location())
        rows = self.segment_box[0]
        row, col = coords
        numbers = all(isinstance(x, int) for x in (row, end))
        stop = min(end, row + rows) if numbers else minimum(end, row + rows)
        return stop, row + rows - stop, col

    def _coordinates(self, coords, deltas=None) -> list[ir.Value]:
        coords = tuple(coords)
        if len(coords) != len(self.box):
            raise TraceError(f"TMA coordinates {coords!r} need {len(self.box)} values", code="bad-tma",
                             hint=f"give one coordinate per axis of the box, {len(self.box)} in all, outermost first",
                             loc=user_location())
        for axis, (c, box, extent) in enumerate(zip(coords, self.box, () if self.ragged else self.array.shape)):
            if isinstance(c, int) and not isinstance(c, bool) and (c >= extent or c + box <= 0):
                raise TraceError(f"TMA coordinates {coords!r}: the box {list(self.box)} starting at {c} on axis "
                                 f"{axis} lies entirely outside '{self.array.name}' (extent {extent})",
                                 code="tma-out-of-bounds",
                                 hint="a box may overhang the array (the overhang reads as zeros or NaN), but "
                                      "must overlap it", loc=user_location())
        if deltas is not None:
            coords = tuple(c + d if d else c for c, d in zip(coords, deltas))
        # nvgpu takes coordinates innermost first, in elements.
        return [index_value(c, "a TMA coordinate") for c in reversed(coords)]

    def prefetch(self, *, predicate=None) -> None:
        """Bring the descriptor into the cache (``prefetch.tensormap``)."""
        with at_user_line():
            nvgpu.tma_prefetch_descriptor(self._descriptor(), predicate=_predicate(predicate))

    def load(self, tile: Array, barrier: Mbarrier, coords, *, predicate=None, end=None) -> None:
        """Copy the box at element ``coords`` (outermost first) into the shared ``tile``; completion
        counts ``box_bytes`` on ``barrier`` (``cp.async.bulk.tensor...mbarrier::complete_tx::bytes``).

        A tile made of several boxes (see :meth:`boxes`) is loaded box by box; completion then counts
        the tile's bytes. ``end``: the row where the segment ends, for a ragged descriptor.
        """
        coords = self._segment(coords, end)
        views = self._box_views(tile, "load")
        self.lay_out(tile, f"the TMA load into '{tile.name}'")
        with at_user_line():
            for view, deltas in views:
                nvgpu.tma_async_load(view.ir, barrier.group.ir, self._descriptor(), self._coordinates(coords, deltas),
                                     barrier.index, predicate=_predicate(predicate))

    def store(self, tile: Array, coords, *, predicate=None, wait: bool = True, end=None, add: bool = False) -> None:
        """Copy the shared ``tile`` to the box at ``coords`` and wait until the copy has read shared
        memory (``cp.async.bulk.tensor`` global<-shared, ``commit_group``, ``wait_group.read 0``).
        A tile of several boxes is stored box by box, in one commit group.

        With ``wait=False`` the copy runs on: call :func:`tma_store_wait` (from the same thread)
        before writing ``tile`` again, and before the kernel ends.

        Writes to ``tile`` by ordinary stores must be made visible to the copy engine first: every
        writing thread calls :func:`fence_shared_to_async` and then the threads synchronise.
        ``end``: the row where the segment ends, for a ragged descriptor (rows from there are not written).
        ``add``: add the tile to what the box holds (``cp.reduce.async.bulk.tensor .add``), each element
        atomically, so that blocks may add into one box; float32 only. The order of the additions is the
        order the copies reach memory: the sums may round differently from run to run.
        """
        if add and self.array.dtype != dt.float32:
            raise TraceError(f"TMA store(add=True) into '{self.array.name}' of {self.array.dtype.name}: nvdsl adds "
                             "float32 boxes only", code="bad-tma",
                             hint="accumulate into a float32 array and convert it afterwards", loc=user_location())
        coords = self._segment(coords, end)
        views = self._box_views(tile, "store")
        self.lay_out(tile, f"the TMA store from '{tile.name}'")
        current("TMA store").written_args.add(self.array_index)
        with at_user_line():
            for view, deltas in views:
                if not add:
                    nvgpu.tma_async_store(view.ir, self._descriptor(), self._coordinates(coords, deltas),
                                          predicate=_predicate(predicate))
                    continue
                at = [arith.index_cast(ir.IntegerType.get_signless(32), c)    # innermost first, as for nvgpu
                      for c in self._coordinates(coords, deltas)]
                source = view._pointer((0,) * view.ndim, "TMA store")
                if predicate is None:
                    nvvm.CpAsyncBulkTensorReduceOp(self._host, source, nvvm.TMAReduxKind.ADD, at)
                else:
                    with when(predicate):
                        nvvm.CpAsyncBulkTensorReduceOp(self._host, source, nvvm.TMAReduxKind.ADD, at)
            nvvm.cp_async_bulk_commit_group()
            if wait:
                nvvm.cp_async_bulk_wait_group(0, read=True)

    def lay_out(self, tile: Array, what: str) -> None:
        """Give the shared ``tile`` this descriptor's box layout where it is not row-major (a swizzle, or several
        boxes), as ``what`` fills or drains it, so that ``tile[r, c]`` is element (r, c) (``Array.box_layout``)."""
        box = self.box
        while len(box) > 2 and box[0] == 1:
            box = box[1:]
        if (self.spec.swizzle or tuple(box) != tile.shape) and tile.ndim == 2 and len(box) == 2:
            tile.set_box_layout(SharedBoxes(tile, self, what), what)

    @property
    def array_index(self) -> int:
        return ir.BlockArgument(self.array.ir).arg_number


class SharedBoxes:
    """How a shared tile made of a TMA descriptor's boxes is laid out (as ``TMA.load`` fills it and
    ``TMA.store`` reads it): the boxes one after the other in row-major order of boxes, each box's rows
    ``box_cols`` values long, and within every ``swizzle``-byte row span the 16-byte chunks permuted
    (address bits 4.. XOR bits 7.., over as many bits as the span has chunks).
    """

    def __init__(self, tile: Array, tma: "TMA | None", what: str, code: str = "bad-tma", *, swizzle: int = 0):
        if tma is None and swizzle in (32, 64, 128) and isinstance(tile, Array):
            # a tile its threads write, laid out as a load of boxes of all its rows, ``swizzle`` bytes wide
            box, dtype = (tile.shape[0], swizzle // tile.dtype.itemsize), tile.dtype
        elif not isinstance(tma, TMA):
            raise TraceError(f"{what}: tma= needs an nvdsl.TMA, got {tma!r}", code=code,
                             hint="pass tma= the nvdsl.TMA descriptor whose copies fill the tile", loc=user_location())
        else:
            box, dtype, swizzle = tma.box, tma.array.dtype, tma.spec.swizzle
        while len(box) > 2 and box[0] == 1:      # a batch coordinate: the box is one matrix deep
            box = box[1:]
        if not (isinstance(tile, Array) and tile.space == SHARED and tile.ndim == 2 and len(box) == 2
                and tile.shape[0] % box[0] == 0 and tile.shape[1] % box[1] == 0 and tile.dtype == dtype):
            raise TraceError(f"{what}: a shared {dtype.name} tile made of whole boxes {list(box)} is needed, got "
                             f"{tile!r}", code=code,
                             hint=f"pass a 2-D shared {dtype.name} tile whose extents are multiples of the box "
                                  f"{list(box)}", loc=user_location())
        span = swizzle_alignment(swizzle)
        if tile.alignment < span:
            raise TraceError(f"'{tile.name}' starts at a shared byte offset aligned to {tile.alignment} bytes; a "
                             f"{swizzle}-byte swizzled tile must start on a multiple of {span}",
                             code="misaligned", hint=f"allocate it with align={span}", loc=user_location())
        self.tile = tile
        self.item = tile.dtype.itemsize
        self.box_rows, self.box_cols = box
        self.boxes_per_row = tile.shape[1] // self.box_cols
        self.box_bytes = self.box_rows * self.box_cols * self.item
        self.row_bytes = self.box_cols * self.item
        self.swizzle = swizzle
        swizzled = f"{self.swizzle}-byte swizzled " if self.swizzle else ""
        self.description = f"{swizzled}{self.box_rows} x {self.box_cols} boxes of {dtype.name}"

    def swizzled_index(self, offset):
        """The element index of byte ``offset`` (a traced index or an int) of the unswizzled tile."""
        return swizzle(offset, self.swizzle) >> (self.item.bit_length() - 1)  # itemsize is a power of two

    def index(self, row, col):
        """The element index, in the tile's flat view, of element (``row``, ``col``) (traced indices)."""
        box = (row // self.box_rows) * self.boxes_per_row + col // self.box_cols
        offset = box * self.box_bytes + (row % self.box_rows) * self.row_bytes + (col % self.box_cols) * self.item
        return self.swizzled_index(offset)


def tma_store_wait(pending: int = 0) -> None:
    """Wait until at most ``pending`` of this thread's TMA store groups still read shared memory
    (``cp.async.bulk.wait_group.read``); their tiles may be overwritten after it."""
    current_kernel("nvdsl.tma_store_wait")
    if not (isinstance(pending, int) and 0 <= pending <= 7):
        raise TraceError(f"pending={pending!r} must be a Python int in 0..7", code="bad-tma",
                         hint="pass pending=0 to wait for every store, or up to 7 to leave that many groups in flight",
                         loc=user_location())
    with at_user_line():
        nvvm.cp_async_bulk_wait_group(pending, read=True)


def fence_shared_to_async() -> None:
    """Order this thread's ordinary shared-memory writes before later TMA/wgmma reads
    (``fence.proxy.async.shared::cta``)."""
    current_kernel("nvdsl.fence_shared_to_async")
    with at_user_line():
        nvvm.fence_proxy(ir.Attribute.parse("#nvvm.proxy_kind<async.shared>"),
                         space=ir.Attribute.parse("#nvvm.shared_space<cta>"))
