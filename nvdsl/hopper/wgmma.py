"""Warpgroup matrix multiply-accumulate (wgmma): ``acc += A @ B`` on shared-memory or register tiles.

``WGMMAMatrix(tile, tma)`` describes an operand in shared memory (loaded by that TMA descriptor,
whose swizzle the hardware descriptor repeats); ``WGMMAAccumulator(m, n)`` holds the f32 result in
the registers of the warpgroup (128 threads) that issues the product. The accumulator is a register
tile (:class:`~nvdsl.RegisterTile`) with wgmma's layout: elementwise math, row reductions and casts
work on it, and a float16 or bfloat16 tile of that layout is the A operand of the next product
straight from registers (``acc.accumulate(p.to(nvdsl.float16) @ v)``, attention's P @ V).
"""

from __future__ import annotations

import copy

from mlir import ir
from mlir.dialects import arith, llvm, nvgpu, nvvm, vector

from .. import dtypes as dt
from ..errors import TraceError, user_location
from ..frontend.context import at_user_line, current, current_kernel
from ..frontend.memory import GLOBAL, SHARED, Array
from ..frontend.values import Value, index_value
from ..layouts import FragmentLayout, wgmma_accumulator
from ..layouts.swizzle import swizzle_alignment
from .tile import RegisterTile, _load
from .tma import TMA, SharedBoxes
from .warpgroup import WARPGROUP_THREADS, require_sm90a

_INPUT_DTYPES = (dt.float16, dt.bfloat16)
_FLOAT8 = (dt.float8_e4m3fn, dt.float8_e5m2)
_WGMMA_TYPE = {dt.float16: "f16", dt.bfloat16: "bf16", dt.float8_e4m3fn: "e4m3", dt.float8_e5m2: "e5m2"}


def _k_step(dtype: dt.DType) -> int:
    """The K of one wgmma instruction: 32 bytes of each row (k16 for 16-bit values, k32 for 8-bit)."""
    return 32 // dtype.itemsize


def _memref_text(shape, dtype: dt.DType) -> str:
    return f"memref<{'x'.join(map(str, shape))}x{dtype.mlir_type()}, #gpu.address_space<workgroup>>"


def _bad(message: str, code: str = "bad-wgmma", hint: str | None = None) -> TraceError:
    return TraceError(message, code=code, hint=hint, loc=user_location())


class WGMMAMatrix:
    """An operand of ``wgmma`` in shared memory: ``tile`` as loaded by ``tma`` (its swizzle sets the layout).

    The matrix is ``tile`` itself, or with ``transposed=True`` the tile's transpose. ``A`` (M, K)
    is an (M, K) tile, K contiguous, or (16-bit types) ``transposed=True`` of a (K, M) tile, M contiguous
    ("M-major", as ``x.T`` of a weight gradient ``x.T @ dy``). ``B`` (K, N) is either a (K, N) tile, N contiguous
    ("N-major", as ``b`` of ``a @ b`` row-major), or ``transposed=True`` of an (N, K) tile, K
    contiguous ("K-major", as the weight of a linear layer, or K of attention's Q @ K^T).

    The tile is made of whole TMA boxes, each one swizzle span wide, placed one after the other
    in row-major order of boxes. Where the tile is more than one box wide, each box must hold all
    the rows the hardware reads together: all K rows of an N-major B or an M-major A, all N rows of a
    K-major B, a multiple of 64 rows of a K-major A.

    A tile written by threads rather than loaded by TMA gives ``swizzle=`` (32, 64 or 128) instead of
    ``tma``: it is laid out as a TMA load of boxes (all its rows, ``swizzle`` bytes wide) would leave it,
    and the threads must fence it for the async proxy (``nvdsl.fence_shared_to_async``) before wgmma
    reads it.
    """

    def __init__(self, tile: Array, tma: TMA | None = None, *, transposed: bool = False,
                 swizzle: int | None = None):
        current_kernel("nvdsl.WGMMAMatrix")
        if not (isinstance(tile, Array) and tile.space == SHARED):
            raise _bad(f"WGMMAMatrix needs a shared-memory tile, got {tile!r}",
                       hint="allocate the operand in shared memory (ctx.shared_array, or a ring's get()) and fill it "
                            "by TMA")
        if tile.dtype not in _INPUT_DTYPES + _FLOAT8 or tile.ndim != 2:
            raise _bad(f"WGMMAMatrix needs a 2-D float16, bfloat16 or float8 tile, got {tile.dtype.name}"
                       f"{list(tile.shape)}", hint="use a 2-D tile of float16, bfloat16, float8_e4m3fn or float8_e5m2")
        item = tile.dtype.itemsize
        if swizzle is not None:
            if tma is not None or swizzle not in (32, 64, 128):
                raise _bad(f"WGMMAMatrix takes either the TMA descriptor that loads its tile or swizzle= (32, 64 or "
                           f"128) for a tile its threads write, got tma={tma!r}, swizzle={swizzle!r}",
                           hint="pass tma= the descriptor that loads the tile, or swizzle=128 (64, 32) alone for a "
                                "tile its threads write")
            box = (tile.shape[0], swizzle // item)
            if tile.alignment is not None and tile.alignment < swizzle_alignment(swizzle):
                raise _bad(f"'{tile.name}' starts at a shared byte offset aligned to {tile.alignment} bytes; a "
                           f"{swizzle}-byte swizzled operand must start on a multiple of {swizzle_alignment(swizzle)}",
                           code="misaligned", hint=f"allocate it with align={swizzle_alignment(swizzle)}")
        else:
            if not isinstance(tma, TMA) or tma.spec.swizzle == 0:
                raise _bad("WGMMAMatrix needs the (swizzled) TMA descriptor that loads its tile",
                           hint="declare the TMA with swizzle=128 (or 64, 32), or give swizzle= for a tile its "
                                "threads write")
            box = tuple(tma.box)
            if len(box) < 2 or any(b != 1 for b in box[:-2]):
                raise _bad(f"WGMMAMatrix needs a descriptor with 2-D boxes, got box {list(box)}",
                           hint="declare the TMA with a 2-D box, e.g. nvdsl.TMA(a, (64, 64), swizzle=128)")
            swizzle = tma.spec.swizzle
        self.box = box[-2:]
        if self.box[1] * item != swizzle:
            raise _bad(f"the descriptor's boxes are {self.box[1]} values ({self.box[1] * item} bytes) wide; wgmma "
                       f"reads {swizzle}-byte swizzled rows", code="bad-wgmma-shape",
                       hint=f"use boxes of {swizzle // item} {tile.dtype.name} values per row")
        if tile.shape[0] % self.box[0] or tile.shape[1] % self.box[1]:
            raise _bad(f"the tile {list(tile.shape)} is not made of whole {list(self.box)} boxes of its descriptor",
                       code="bad-wgmma-shape",
                       hint=f"make the tile's extents multiples of the box {list(self.box)}, or load it with a box "
                            "that divides it")
        tile.check_lease("a WGMMAMatrix of")
        self.tile, self.tma, self.transposed, self.swizzle = tile, tma, transposed, swizzle
        self.shape = tile.shape[::-1] if transposed else tile.shape
        self.dtype = tile.dtype
        self._first_column = 0            # of the tile (a column block of it: columns())
        descriptor_type = ir.Type.parse(
            f"!nvgpu.warpgroup.descriptor<tensor = {_memref_text(tile.shape, tile.dtype)}>")
        with at_user_line():
            layout = tma.matrix_descriptor() if tma is not None else _layout_only(self.box, tile.dtype, swizzle)
            self.ir = nvgpu.warpgroup_generate_descriptor(descriptor_type, tile.ir, layout)

    def __matmul__(self, other: "WGMMAMatrix") -> "_Product":
        return _Product(self, other)

    def __rmatmul__(self, a) -> "_Product":
        """``p @ b`` with ``p`` a register tile: A read from registers."""
        return _Product(a, self)

    def columns(self, start: int, stop: int) -> "WGMMAMatrix":
        """An N-major B made of the tile's columns ``start:stop``, whole boxes of it (a warpgroup's share of a
        product's N, the rest of the tile's layout unchanged: its boxes may hold fewer rows than K)."""
        if self.transposed or start % self.box[1] or stop % self.box[1] or not 0 <= start < stop <= self.shape[1]:
            raise _bad(f"columns({start}, {stop}) takes whole boxes of {self.box[1]} columns of an N-major tile "
                       f"{list(self.tile.shape)}", code="bad-wgmma-shape",
                       hint=f"pass start and stop as multiples of {self.box[1]} within 0..{self.shape[1]}, on a tile "
                            "not transposed")
        part = copy.copy(self)
        part.shape, part._first_column = (self.tile.shape[0], stop - start), self._first_column + start
        return part

    @property
    def _boxes_per_row(self) -> int:
        return self.tile.shape[1] // self.box[1]

    @property
    def _boxes_wide(self) -> int:
        """The boxes a product reads side by side (a column block's, or the whole tile's)."""
        return self.shape[0 if self.transposed else 1] // self.box[1]

    def _offset(self, row: int, col: int) -> int:
        """The byte offset of the tile's element (row, col) before swizzling: boxes in row-major order."""
        col += self._first_column
        (box_rows, box_cols), item = self.box, self.dtype.itemsize
        box = (row // box_rows) * self._boxes_per_row + col // box_cols
        return (box * box_rows * box_cols + (row % box_rows) * box_cols + col % box_cols) * item


class _Product:
    """``A @ B`` waiting to be added into an accumulator; A from shared memory or from registers."""

    def __init__(self, a, b: WGMMAMatrix):
        if not isinstance(b, WGMMAMatrix):
            raise _bad("A @ B needs a WGMMAMatrix B",
                       hint="wrap B's tile as nvdsl.WGMMAMatrix(b_tile, b_tma) before the @")
        if isinstance(a, RegisterTile):
            if a.dtype not in _INPUT_DTYPES:
                raise _bad(f"A from registers is {a.dtype.name}; wgmma reads float16 or bfloat16",
                           hint="convert it first, e.g. p.to(nvdsl.float16)")
            m, k = a.shape
            if m % 64 or k % 16 or a.layout != wgmma_accumulator(m, k):
                raise _bad(f"A from registers must have the layout of a wgmma accumulator of its shape {m}x{k} "
                           f"(M a multiple of 64, K of 16), got {a.layout}", code="layout-mismatch",
                           hint="compute A from a WGMMAAccumulator of shape (M, K)")
        elif isinstance(a, WGMMAMatrix):
            if a.transposed and a.dtype in _FLOAT8:
                raise _bad("a float8 A must be K-major: wgmma transposes only 16-bit operands",
                           code="bad-wgmma-shape", hint="store A as (M, K)")
            if a.transposed and a._boxes_per_row > 1 and a.box[0] != a.tile.shape[0]:
                raise _bad(f"A is {a._boxes_per_row} boxes wide, so each box must hold all {a.tile.shape[0]} K "
                           f"rows of the M-major tile, not {a.box[0]}", code="bad-wgmma-shape",
                           hint=f"load A with boxes of {a.tile.shape[0]} rows")
            if not a.transposed and a._boxes_per_row > 1 and a.box[0] % 64:
                raise _bad(f"A is {a._boxes_per_row} boxes wide, so its boxes need a multiple of 64 rows "
                           f"(a wgmma reads 64 rows at a time), not {a.box[0]}", code="bad-wgmma-shape",
                           hint="load A with boxes of a multiple of 64 rows, e.g. 64 or 128")
        else:
            raise _bad(f"A @ B needs A as a WGMMAMatrix or a register tile, got {a!r}",
                       hint="wrap A's tile as nvdsl.WGMMAMatrix(a_tile, a_tma), or use a register tile of the wgmma "
                            "accumulator layout")
        if a.dtype != b.dtype and not (a.dtype in _FLOAT8 and b.dtype in _FLOAT8):
            raise _bad(f"A is {a.dtype.name} but B is {b.dtype.name}",
                       hint=f"give A and B one dtype: load both from {b.dtype.name} arrays, or convert a register A "
                            f"with .to(nvdsl.{b.dtype.name})")
        if b.dtype in _FLOAT8 and not b.transposed:
            raise _bad("a float8 B must be K-major: wgmma transposes only 16-bit operands", code="bad-wgmma-shape",
                       hint="store B as (N, K) and use WGMMAMatrix(b_tile, b_tma, transposed=True)")
        if b._boxes_wide > 1 and b.box[0] != b.tile.shape[0]:
            what = "N rows of the K-major" if b.transposed else "K rows of the N-major"
            raise _bad(f"B is {b._boxes_per_row} boxes wide, so each box must hold all {b.tile.shape[0]} {what} "
                       f"tile, not {b.box[0]}", code="bad-wgmma-shape",
                       hint=f"load B with boxes of {b.tile.shape[0]} rows")
        self.a, self.b = a, b
        # wgmma reads B K-major unless told to transpose: an N-major (K, N) tile needs the flag.
        self.transpose_b = not b.transposed

    @property
    def _nvgpu_steps_correctly(self) -> bool:
        """``nvgpu.warpgroup.mma`` advances A's descriptor by 16 values and B's by ``16 * (rows of the B
        tile)`` values per K step: right for shared A and N-major B tiles one swizzle span deep in K."""
        a, b = self.a, self.b
        if not isinstance(a, WGMMAMatrix) or a.transposed or not self.transpose_b or b.shape != b.tile.shape:
            return False
        span = lambda m: m.swizzle // m.dtype.itemsize
        return a.tile.shape[1] == span(a) and b.tile.shape[0] == span(b)


class WGMMAAccumulator(RegisterTile):
    """An (m, n) float32 accumulator held in the registers of the issuing warpgroup.

    ``acc += a @ b`` issues the ``wgmma.mma_async`` instructions of the product (fenced, committed and
    waited for: the product is complete when the statement ends). ``acc.accumulate(a @ b, in_flight=1)``
    returns while that product still runs, so a pipeline can release the tiles of the previous product
    while the tensor cores work on this one. ``acc.store(array)`` writes the result to shared or global
    memory, converting to the array's element type. M must be a multiple of 64, N a multiple of 8 up to
    256, K a multiple of 16. The accumulator can be carried through ``nvdsl.fori``.

    It is a :class:`~nvdsl.RegisterTile` of layout ``nvdsl.layouts.wgmma_accumulator(m, n)``:
    ``acc * alpha``, ``nvdsl.exp2(acc)``, ``acc.max(axis=1)`` ... work on it; elementwise results in
    float32 are accumulators again, so a rescaled accumulator keeps accumulating. Read the registers
    (``acc.values``, elementwise operations) only once the products are complete (``in_flight=0``,
    or after ``nvdsl.wgmma_wait``).
    """

    def __init__(self, m: int, n: int, *, _value: ir.Value | None = None):
        current_kernel("nvdsl.WGMMAAccumulator")
        if not (isinstance(m, int) and m > 0 and m % 64 == 0):
            raise _bad(f"accumulator M={m} must be a positive multiple of 64", code="bad-wgmma-shape",
                       hint="use M = 64, 128 or another multiple of 64")
        if not (isinstance(n, int) and 8 <= n <= 256 and n % 8 == 0):
            raise _bad(f"accumulator N={n} must be a multiple of 8 between 8 and 256", code="bad-wgmma-shape",
                       hint="use N = 8, 16, ... up to 256 (a multiple of 8); split a wider N over several accumulators")
        self.dtype = dt.float32
        self.layout = wgmma_accumulator(m, n)
        self.type = ir.Type.parse(f"!nvgpu.warpgroup.accumulator<fragmented = vector<{m}x{n}xf32>>")
        if _value is None:
            with at_user_line():
                _value = nvgpu.warpgroup_mma_init_accumulator(self.type)
        self._ir = _value
        self._group = 0   # the trace's count of committed wgmma groups when this one's last product was

    @property
    def ir(self) -> ir.Value:
        """The ``!nvgpu.warpgroup.accumulator`` value."""
        return self._ir

    @ir.setter
    def ir(self, value: ir.Value) -> None:
        self._ir = value

    @property
    def values(self) -> list[ir.Value]:
        ctx = current_kernel("reading a WGMMAAccumulator")
        if self._group > ctx.wgmma_committed - ctx.wgmma_in_flight:
            raise _bad("this accumulator's last product may still be running (accumulate(..., in_flight=...) left it "
                       "in flight): its registers cannot be read yet", code="wgmma-in-flight",
                       hint="wait for it first with nvdsl.wgmma_wait(n), n the groups issued after it")
        struct = self._struct()
        m, n = self.shape
        f32 = ir.F32Type.get()
        return [llvm.extractvalue(f32, struct, [chunk, i]) for chunk in range(m // 64) for i in range(n // 2)]

    def _like(self, values, dtype: dt.DType):
        if dtype != dt.float32:
            return RegisterTile(values, dtype, self.layout)
        return self.from_values(*self.shape, values)

    @classmethod
    def from_values(cls, m: int, n: int, values) -> "WGMMAAccumulator":
        """An (m, n) accumulator over ``values``: this thread's float32 MLIR values in the order of the
        accumulator layout (``wgmma_accumulator(m, n)``), as a float32 ``RegisterTile`` of it holds them."""
        chunk_type, half = _chunk_type(n), n // 2
        struct_type = ir.Type.parse(f"!llvm.struct<({', '.join([str(chunk_type)] * (m // 64))})>")
        struct = llvm.mlir_undef(struct_type)
        for chunk in range(m // 64):
            part = llvm.mlir_undef(chunk_type)
            for i in range(half):
                part = llvm.insertvalue(part, values[chunk * half + i], [i])
            struct = llvm.insertvalue(struct, part, [chunk])
        accumulator_type = ir.Type.parse(f"!nvgpu.warpgroup.accumulator<fragmented = vector<{m}x{n}xf32>>")
        return cls(m, n, _value=_cast(struct, accumulator_type))

    @classmethod
    def load(cls, array: Array, layout: FragmentLayout | None = None, at=None) -> "WGMMAAccumulator":
        """An accumulator read from the (m, n) block of ``array`` at ``at`` (row, col), converted to
        float32; ``layout`` defaults to the accumulator layout of the array's shape (give it for a block)."""
        current_kernel("WGMMAAccumulator.load")
        if layout is None:
            layout = wgmma_accumulator(*array.shape) if isinstance(array, Array) and array.ndim == 2 else None
        if not isinstance(layout, FragmentLayout) or layout != wgmma_accumulator(*layout.shape):
            raise _bad(f"WGMMAAccumulator.load needs a wgmma accumulator layout, got {layout!r}",
                       code="layout-mismatch", hint="pass nvdsl.layouts.wgmma_accumulator(m, n)")
        values = _load(array, layout, at, "WGMMAAccumulator.load")
        with at_user_line():
            values = [Value(v, array.dtype).to(dt.float32).ir for v in values]
            return cls.from_values(*layout.shape, values)

    def _rebuild(self, value: ir.Value) -> "WGMMAAccumulator":
        rebuilt = WGMMAAccumulator(*self.shape, _value=value)
        rebuilt._group = self._group       # a loop's result: its last product may still run
        return rebuilt

    def __iadd__(self, other) -> "WGMMAAccumulator":
        if isinstance(other, _Product):
            self.accumulate(other)  # in place: the accumulator now names the new registers
            return self
        return self + other

    def accumulate(self, product: _Product, *, in_flight: int | None = None) -> None:
        """Issue ``self += product`` as one wgmma group, then wait until at most ``in_flight`` (default 0)
        of the warpgroup's groups still run (``wgmma.commit_group``; ``wgmma.wait_group in_flight``, left out
        where the groups committed since the last wait in the same straight-line code cannot exceed it).

        With ``in_flight=1`` this product may still be reading its tiles (or A's registers) on return,
        but every earlier one is complete. ``store`` waits for this accumulator's product (:meth:`wait`).
        Inside ``with nvdsl.wgmma_group(...)`` the product joins that group instead (no ``in_flight``).
        """
        ctx = current_kernel("WGMMAAccumulator.accumulate")
        group = ctx.wgmma_group
        if group is not None and in_flight is not None:
            raise _bad("inside `with nvdsl.wgmma_group(in_flight=...)` the group decides what stays in flight",
                       hint="drop in_flight= from accumulate")
        in_flight = 0 if in_flight is None else in_flight
        _check_in_flight(in_flight)
        _check_warpgroups("wgmma (WGMMAAccumulator.accumulate)")
        if not isinstance(product, _Product):
            raise _bad("an accumulator adds A @ B products of WGMMAMatrix operands (A may be a register tile)",
                       hint="write acc += nvdsl.WGMMAMatrix(a_tile, a_tma) @ nvdsl.WGMMAMatrix(b_tile, b_tma)")
        (m, k), (k2, n) = product.a.shape, product.b.shape
        k_step = _k_step(product.b.dtype)
        if (m, n) != self.shape or k != k2 or k % k_step:
            raise _bad(f"A is {list(product.a.shape)} and B is {list(product.b.shape)}, which do not make "
                       f"an accumulator of {list(self.shape)} with K a multiple of {k_step}", code="bad-wgmma-shape",
                       hint=f"use A of shape ({self.shape[0]}, K) and B of shape (K, {self.shape[1]}), with K a "
                            f"multiple of {k_step}")
        ctx.wgmma_widest = max(ctx.wgmma_widest, n)
        with at_user_line():
            if group is not None:
                self._issue(product, fence=not group.products)
                group.products.append(self)
                return
            waited = ctx.commit_needs_wait(in_flight)
            if product._nvgpu_steps_correctly and waited:
                self.ir = nvgpu.warpgroup_mma(self.type, product.a.ir, product.b.ir, self.ir, wait_group=in_flight,
                                              transpose_b=ir.UnitAttr.get())
            else:
                self._issue(product)
                nvvm.wgmma_commit_group_sync_aligned()
                if waited:
                    nvvm.wgmma_wait_group_sync_aligned(in_flight)
        ctx.note_wgmma(committed=1, in_flight=in_flight, waited=waited)
        self._group = ctx.wgmma_committed

    def _issue(self, product: _Product, fence: bool = True) -> None:
        """The product as ``wgmma.mma_async`` instructions, one per 64 rows of A and 16 of K, each operand
        descriptor advanced to its sub-tile (``nvvm.wgmma.mma_async``), or, for A in registers, the
        register form of the instruction as inline PTX (the NVVM operation takes descriptors only)."""
        m, n = self.shape
        a, b = product.a, product.b
        k = a.shape[1]
        i64 = ir.IntegerType.get_signless(64)
        step = lambda desc, offset: desc if not offset else arith.addi(desc, arith.constant(i64, offset >> 4))
        b_desc = _cast(b.ir, i64)
        ks = _k_step(b.dtype)
        b_offset = (lambda kk: b._offset(0, ks * kk)) if b.transposed else (lambda kk: b._offset(ks * kk, 0))
        registers = isinstance(a, RegisterTile)
        a_source = _a_registers(a) if registers else _cast(a.ir, i64)
        wgmma_type, a_type = _WGMMA_TYPE[b.dtype], _WGMMA_TYPE[a.dtype]
        attr = ir.Attribute.parse
        # A fresh (zero) accumulator is not read: the first step ignores D (scale-d 0), so no registers
        # are zeroed first (one instruction per value, on every step of a loop that starts a new S).
        zero = not registers and self._is_fresh()
        struct = self._struct()
        chunk_type = _chunk_type(n)
        if fence:
            nvvm.wgmma_fence_aligned()
        for chunk in range(m // 64):
            value = llvm.mlir_undef(chunk_type) if zero else llvm.extractvalue(chunk_type, struct, [chunk])
            for kk in range(k // ks):
                b_sub = step(b_desc, b_offset(kk))
                if registers:
                    value = _wgmma_register_a(value, n, a_source[chunk][kk], b_sub, wgmma_type, product.transpose_b)
                    continue
                a_offset = a._offset(ks * kk, 64 * chunk) if a.transposed else a._offset(64 * chunk, ks * kk)
                value = nvvm.wgmma_mma_async(
                    chunk_type, value, step(a_source, a_offset), b_sub,
                    attr(f"#nvvm.shape<m = 64, n = {n}, k = {ks}>"), attr(f"#nvvm.wgmma_type<{a_type}>"),
                    attr(f"#nvvm.wgmma_type<{wgmma_type}>"), attr("#nvvm.wgmma_type<f32>"),
                    attr(f"#nvvm.wgmma_scale_out<{'zero' if zero and kk == 0 else 'one'}>"),
                    attr("#nvvm.wgmma_scale_in<one>"),
                    attr("#nvvm.wgmma_scale_in<one>"), attr(f"#nvvm.mma_layout<{'col' if a.transposed else 'row'}>"),
                    attr(f"#nvvm.mma_layout<{'row' if product.transpose_b else 'col'}>"))
            struct = llvm.insertvalue(struct, value, [chunk])
        self.ir = _cast(struct, self.type)

    def wait(self) -> None:
        """Wait until this accumulator's last product has retired: where it and the groups committed after it
        were committed in the straight-line code being traced, those later groups stay running (nothing is
        emitted where a wait here already retired it); elsewhere, until every group has."""
        ctx = current_kernel("WGMMAAccumulator.wait")
        if ctx.wgmma_retired(self._group):
            return
        after = ctx.wgmma_groups_after(self._group)
        wgmma_wait(0 if after is None else after)

    def _is_fresh(self) -> bool:
        """Whether this accumulator is a new one's zeros (``WGMMAAccumulator(m, n)``, nothing added yet)."""
        owner = self._ir.owner
        operation = getattr(owner, "operation", owner)
        return isinstance(operation, ir.Operation) and operation.name == "nvgpu.warpgroup.mma.init.accumulator"

    def __getitem__(self, key) -> "_AccumulatorColumns":
        """``acc[:, start:stop]``: some of the accumulator's columns (multiples of 8), to ``store``
        a wide accumulator through a smaller staging tile."""
        rows, cols = key if isinstance(key, tuple) and len(key) == 2 else (None, None)
        n = self.shape[1]
        if not (isinstance(rows, slice) and rows == slice(None) and isinstance(cols, slice) and cols.step is None):
            raise _bad("index an accumulator as acc[:, start:stop] (all rows, a range of columns)",
                       hint="index with a plain slice of columns, e.g. acc[:, 0:64]")
        start, stop, _ = cols.indices(n)
        if start % 8 or stop % 8 or stop <= start:
            raise _bad(f"accumulator columns {start}:{stop} must be a non-empty range with multiples of 8",
                       hint="use column bounds that are multiples of 8 with start < stop, e.g. acc[:, 0:64]")
        return _AccumulatorColumns(self, start, stop)

    def columns(self, start: int, stop: int) -> "WGMMAAccumulator":
        """Columns ``start:stop`` (multiples of 8) as an accumulator of their own: a column block of the
        wgmma layout is the layout of a narrower accumulator, so this only picks registers. Reads the
        registers (the products must be complete); for math on a wide tile a slice at a time."""
        m, n = self.shape
        if not (isinstance(start, int) and isinstance(stop, int) and 0 <= start < stop <= n
                and start % 8 == 0 and stop % 8 == 0):
            raise _bad(f"accumulator columns {start}:{stop} must be a non-empty range of multiples of 8 within {n}",
                       hint=f"pass start < stop, both multiples of 8 within 0..{n}")
        values, half = self.values, n // 2
        picked = [values[chunk * half + 4 * q + r] for chunk in range(m // 64) for q in range(start // 8, stop // 8)
                  for r in range(4)]
        with at_user_line():
            return WGMMAAccumulator.from_values(m, stop - start, picked)

    def store(self, destination: Array, at=None, *, tma: TMA | None = None, swizzle: int | None = None) -> None:
        """Write the accumulator into ``destination``, converted to its element type (float32, float16
        or bfloat16), once its last product has retired (:meth:`wait`).

        Args:
            destination: a 2-D global or shared array of the accumulator's shape, or larger with ``at``.
            at: ``(row, col)`` of the block of ``destination`` to write.
            tma: lay the (shared) destination out as this descriptor's boxes, so that ``tma.store``
                can copy them out: the boxes one after the other, row of boxes by row of boxes, each
                swizzled as the descriptor says. Give box ``i`` to ``tma.store`` as
                ``destination.view(tma.box, offset=i * box_bytes)``.
            swizzle: (32, 64 or 128, instead of ``tma``) lay the shared destination out as
                ``WGMMAMatrix(destination, swizzle=swizzle)`` reads it: a later product's operand (FlashAttention's
                P or dS, staged in shared memory to be read transposed). Fence it for the async proxy
                (``nvdsl.fence_shared_to_async``) and synchronise the warpgroup before the product.
        """
        _AccumulatorColumns(self, 0, self.shape[1]).store(destination, at, tma=tma, swizzle=swizzle)

    def _fragments(self, columns: tuple[int, int]):
        """Per pair of adjacent accumulator values a thread holds in ``columns`` (start, stop):
        (struct position of the first, row, column), the row and column (relative to ``start``)
        as (constant part, this thread's part) to add; from the accumulator's layout, whose values
        ``2i`` and ``2i + 1`` are neighbours in a row."""
        ctx = current_kernel("WGMMAAccumulator.store")
        thread = ctx.linear_thread_id % 128
        layout, half = self.layout, self.shape[1] // 2
        row_part, col_part = layout.thread_part(0, thread), layout.thread_part(1, thread)
        start, stop = columns
        for v in range(0, layout.values, 2):
            row, col = layout.value_part(0, v), layout.value_part(1, v)
            if start <= col < stop:
                yield (v // half, v % half), (row, row_part), (col - start, col_part)

    def _struct(self) -> ir.Value:
        """The accumulator as the LLVM struct nvgpu lowers it to: one struct of N/2 f32 per 64 rows."""
        m, n = self.shape
        struct_type = ir.Type.parse(f"!llvm.struct<({', '.join([str(_chunk_type(n))] * (m // 64))})>")
        return _cast(self.ir, struct_type)


def _layout_only(box, dtype: dt.DType, swizzle: int) -> ir.Value:
    """A value of the TMA descriptor type of ``box`` and ``swizzle``, for a tile no descriptor loads: the
    wgmma descriptor is made from that type alone (its layout), so the value is a dummy zero."""
    tensormap = ir.Type.parse(f"!nvgpu.tensormap.descriptor<tensor = {_memref_text(box, dtype)}, "
                              f"swizzle = swizzle_{swizzle}b, l2promo = none, oob = zero, interleave = none>")
    return _cast(arith.constant(ir.IntegerType.get_signless(64), 0), tensormap)


def _cast(value: ir.Value, to: ir.Type) -> ir.Value:
    """``value`` seen as another type that the lowering gives it (an unrealized conversion cast)."""
    return ir.Operation.create("builtin.unrealized_conversion_cast", results=[to], operands=[value]).result


def _a_registers(tile: RegisterTile) -> list[list[list[ir.Value]]]:
    """A's registers for each 64-row chunk and 16-wide K step: four 32-bit registers, each a pair of
    16-bit values. In the accumulator layout, the 8 values ``8 kk .. 8 kk + 7`` of a chunk are exactly
    the thread's part of A's m64k16 fragment for step ``kk``, in order (PTX ISA, wgmma register A)."""
    m, k = tile.shape
    values, half = tile.values, k // 2
    i32 = ir.IntegerType.get_signless(32)
    pair_type = ir.VectorType.get([2], tile.dtype.mlir_type())
    registers = []
    for chunk in range(m // 64):
        steps = []
        for kk in range(k // 16):
            first = chunk * half + 8 * kk
            steps.append([llvm.bitcast(i32, vector.from_elements(pair_type, values[first + 2 * r:first + 2 * r + 2]))
                          for r in range(4)])
        registers.append(steps)
    return registers


def _wgmma_register_a(accumulator: ir.Value, n: int, a: list[ir.Value], b_desc: ir.Value, wgmma_type: str,
                      transpose_b: bool) -> ir.Value:
    """One ``wgmma.mma_async.sync.aligned.m64nNk16.f32`` with A in registers (inline PTX): the
    accumulator's N/2 registers are read and written (tied operands), then A's four, then B's descriptor."""
    count = n // 2
    f32 = ir.F32Type.get()
    chunk_type = _chunk_type(n)
    old = [llvm.extractvalue(f32, accumulator, [i]) for i in range(count)]
    d = ", ".join(f"${i}" for i in range(count))
    a_operands = ", ".join(f"${2 * count + r}" for r in range(4))
    text = ("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
            f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{wgmma_type}.{wgmma_type} "
            f"{{{d}}}, {{{a_operands}}}, ${2 * count + 4}, p, 1, 1, {int(transpose_b)};\n}}\n")
    constraints = ",".join(["=f"] * count + [str(i) for i in range(count)] + ["r"] * 4 + ["l"])
    return llvm.inline_asm(chunk_type, old + a + [b_desc], text, constraints, has_side_effects=True, asm_dialect=0)


class _AccumulatorColumns:
    """Columns ``start:stop`` of an accumulator (``acc[:, start:stop]``), to store."""

    def __init__(self, acc: WGMMAAccumulator, start: int, stop: int):
        self.acc, self.columns = acc, (start, stop)
        self.shape = (acc.shape[0], stop - start)

    def store(self, destination: Array, at=None, *, tma: TMA | None = None, swizzle: int | None = None) -> None:
        """As :meth:`WGMMAAccumulator.store`, for these columns."""
        if not isinstance(destination, Array) or destination.ndim != 2 or \
                destination.dtype not in (dt.float32,) + _INPUT_DTYPES:
            raise TraceError(f"WGMMAAccumulator.store needs a 2-D float32, float16 or bfloat16 array, "
                             f"got {destination!r}", code="bad-wgmma",
                             hint="store into a 2-D float32, float16 or bfloat16 array: an argument of the @mlir_func "
                                  "or a ctx.shared_array tile", loc=user_location())
        if at is None and destination.shape != self.shape:
            raise TraceError(f"the accumulator block is {list(self.shape)} but '{destination.name}' is "
                             f"{list(destination.shape)}", code="bad-wgmma",
                             hint="pass at=(row, col) to store into a block of a larger array", loc=user_location())
        if destination.space == GLOBAL:
            current("WGMMAAccumulator.store").written_args.add(ir.BlockArgument(destination.ir).arg_number)
        with at_user_line():
            self.acc.wait()
            # Never nvgpu.warpgroup.mma.store: MLIR 22 lowers it with rows from the block's thread index (wrong
            # for every warpgroup but the first) and steps 64-row chunks by N/2 rows (wrong unless N = 128).
            if tma is not None or swizzle is not None:
                _BoxLayout(destination, tma, self.shape, at, swizzle).store(self.acc, self.columns)
            else:
                _RowMajor(destination, at).store(self.acc, self.columns)


class _AccumulatorWriter:
    """Writes an accumulator pair by pair (two adjacent columns as one 4-byte or 8-byte store)."""

    def __init__(self, dtype: dt.DType):
        self.dtype = dtype

    def store_tile(self, tile: RegisterTile) -> None:
        """A register tile of the accumulator layout (any float type), pair by pair, converted."""
        half = tile.shape[1] // 2
        source = ir.VectorType.get([2], tile.dtype.mlir_type())
        target = ir.VectorType.get([2], self.dtype.mlir_type())
        for (chunk, i), row, col in WGMMAAccumulator._fragments(tile, (0, tile.shape[1])):
            v = chunk * half + i
            pair = vector.from_elements(source, [tile.values[v], tile.values[v + 1]])
            if tile.dtype != self.dtype:
                convert = arith.truncf if tile.dtype.itemsize > self.dtype.itemsize else arith.extf
                pair = convert(target, pair)
            self.write(pair, row, col)

    def store(self, acc: WGMMAAccumulator, columns: tuple[int, int]) -> None:
        f32 = ir.F32Type.get()
        struct = acc._struct()
        pair_type = ir.VectorType.get([2], self.dtype.mlir_type())
        for (chunk, i), row, col in acc._fragments(columns):
            values = [llvm.extractvalue(f32, struct, [chunk, i + j]) for j in (0, 1)]
            pair = vector.from_elements(ir.VectorType.get([2], f32), values)
            if self.dtype != dt.float32:
                pair = arith.truncf(pair_type, pair)
            self.write(pair, row, col)


class _RowMajor(_AccumulatorWriter):
    def __init__(self, destination: Array, at):
        super().__init__(destination.dtype)
        self.destination = destination
        self.at = [Value(index_value(x, "a block offset"), dt.index) for x in (at or (0, 0))]

    def write(self, pair, row, col) -> None:
        r = self.at[0] + row[1] + row[0]
        c = self.at[1] + col[1] + col[0]
        vector.store(pair, self.destination.ir, [r.ir, c.ir], alignment=2 * self.dtype.itemsize)


class _BoxLayout(_AccumulatorWriter):
    """A shared tile laid out as a TMA descriptor's boxes, one after the other in row-major order
    of boxes (for one box row: column blocks one box wide), each box's 16-byte chunks swizzled
    within every ``swizzle``-byte row span (TMA's layout: address bits 4.. XOR bits 7.., over as
    many bits as the swizzle has 16-byte chunks)."""

    def __init__(self, destination: Array, tma: TMA | None, shape, at, swizzle: int | None = None):
        super().__init__(destination.dtype)
        if at is not None or tuple(shape) != getattr(destination, "shape", None):
            raise TraceError(f"store(..., tma= or swizzle=) needs a shared tile of the accumulator's shape "
                             f"{list(shape)}, got {destination!r}", code="bad-wgmma",
                             hint=f"with tma= or swizzle=, store into a shared tile of shape {tuple(shape)} and leave "
                                  "at= out", loc=user_location())
        if (tma is None) == (swizzle is None) or (swizzle is not None and swizzle not in (32, 64, 128)):
            raise TraceError(f"store takes tma= or swizzle= (32, 64 or 128), not both; got tma={tma!r}, "
                             f"swizzle={swizzle!r}", code="bad-wgmma",
                             hint="pass exactly one of tma= (the descriptor that stores the tile) and swizzle= (32, "
                                  "64 or 128)", loc=user_location())
        self.boxes = SharedBoxes(destination, tma, "WGMMAAccumulator.store", code="bad-wgmma", swizzle=swizzle or 0)
        self._thread = None              # the swizzled index of this thread's part (see write)
        if self.boxes.box_rows % 64:
            raise TraceError(f"store(..., tma=) needs boxes whose rows are a multiple of 64, not {self.boxes.box_rows}",
                             code="bad-wgmma",
                             hint="declare the descriptor with boxes of 64 or 128 rows (a multiple of 64)",
                             loc=user_location())
        self.flat = destination.view((destination.size,))

    def write(self, pair, row, col) -> None:
        # The thread's parts stay inside one 64-row chunk and one 8-column block, so which box a
        # pair lands in is known while tracing.
        b = self.boxes
        (row_const, row_thread), (col_const, col_thread) = row, col
        box_row, row_in_box = divmod(row_const - row_const % 64, b.box_rows)
        box_col, col_in_box = divmod(col_const, b.box_cols)
        box = box_row * b.boxes_per_row + box_col
        rows = (row_in_box + row_const % 64) * b.row_bytes + box * b.box_bytes
        if b.swizzle == 128 and b.row_bytes == 128 and rows % 1024 == 0:
            # Under the 128-byte swizzle, constant rows in whole 8-row groups leave the XOR pattern alone and a
            # constant column block only XORs chunk bits the thread's part XORs too: swizzle(thread + columns +
            # rows) = (swizzle(thread) ^ columns) + rows. One address per column block, the rows an immediate
            # (15 distinct 64-bit addresses held across a backward's main loop spilled its consumers).
            shift = b.item.bit_length() - 1
            if self._thread is None:
                self._thread = b.swizzled_index(row_thread * b.row_bytes + col_thread * b.item)
            index = (self._thread ^ (col_in_box * b.item >> shift)) + (rows >> shift)
            vector.store(pair, self.flat.ir, [index_value(index, "a staging index")], alignment=2 * b.item)
            return
        offset = (row_thread + (row_in_box + row_const % 64)) * b.row_bytes + col_thread * b.item + \
            (box * b.box_bytes + col_in_box * b.item)
        vector.store(pair, self.flat.ir, [b.swizzled_index(offset).ir], alignment=2 * b.item)


def stage_operand(tile: RegisterTile, destination: Array, swizzle: int = 128) -> None:
    """Write ``tile`` (a warpgroup's tile in the wgmma accumulator layout, any float type, such as P or dS
    converted to bfloat16) into the shared ``destination`` of its shape as ``WGMMAMatrix(destination,
    swizzle=swizzle)`` reads it, two neighbouring values per store: a computed tile staged as a later product's
    operand, which may read it transposed. Fence it for the async proxy (``nvdsl.fence_shared_to_async``) and
    synchronise the warpgroup before the product."""
    current_kernel("nvdsl.stage_operand")
    if isinstance(tile, WGMMAAccumulator):
        tile.store(destination, swizzle=swizzle)
        return
    if not isinstance(tile, RegisterTile) or len(tile.shape) != 2 or tile.layout != wgmma_accumulator(*tile.shape):
        raise _bad(f"stage_operand writes a tile of the wgmma accumulator layout, got {tile!r}",
                   code="layout-mismatch",
                   hint="pass a tile computed from a WGMMAAccumulator (e.g. acc.to(nvdsl.bfloat16)), which keeps its "
                        "layout")
    with at_user_line():
        _BoxLayout(destination, None, tile.shape, None, swizzle).store_tile(tile)


class wgmma_group:
    """``with nvdsl.wgmma_group(in_flight=1):`` issues every ``acc += a @ b`` in its body as one wgmma group
    (one ``wgmma.fence``, the products, one ``wgmma.commit_group``), then waits until at most ``in_flight``
    groups still run (no wait where the straight-line code before it already bounds them so). Several
    accumulators fed by the same tiles (a dual GEMM) so stay in one pipeline stage, which ptxas does not have to
    serialize."""

    def __init__(self, *, in_flight: int = 0):
        _check_in_flight(in_flight)
        self.in_flight = in_flight
        self.products: list = []

    def __enter__(self) -> "wgmma_group":
        ctx = current_kernel("nvdsl.wgmma_group")
        if ctx.wgmma_group is not None:
            raise _bad("a wgmma_group inside another one", hint="issue the products in one group")
        ctx.wgmma_group = self
        return self

    def __exit__(self, *exc) -> bool:
        ctx = current_kernel("nvdsl.wgmma_group")
        ctx.wgmma_group = None
        if exc[0] is None and self.products:
            waited = ctx.commit_needs_wait(self.in_flight)
            with at_user_line():
                nvvm.wgmma_commit_group_sync_aligned()
                if waited:
                    nvvm.wgmma_wait_group_sync_aligned(self.in_flight)
            ctx.note_wgmma(committed=1, in_flight=self.in_flight, waited=waited)
            for acc in self.products:
                acc._group = ctx.wgmma_committed
        return False


def wgmma_wait(in_flight: int = 0) -> None:
    """Wait until at most ``in_flight`` of this warpgroup's wgmma groups are still running
    (``wgmma.wait_group.sync.aligned``)."""
    ctx = current_kernel("nvdsl.wgmma_wait")
    _check_in_flight(in_flight)
    with at_user_line():
        nvvm.wgmma_wait_group_sync_aligned(in_flight)
    ctx.note_wgmma(committed=0, in_flight=min(in_flight, ctx.wgmma_in_flight))


def _chunk_type(n: int) -> ir.Type:
    """The registers of 64 accumulator rows per thread, as nvgpu lowers them: N/2 f32 in a struct."""
    return ir.Type.parse("!llvm.struct<(" + ", ".join(["f32"] * (n // 2)) + ")>")


def _check_warpgroups(what: str) -> None:
    """wgmma runs on whole warpgroups: a block of fewer (or a partial one) faults on the GPU."""
    require_sm90a(what)
    block = current_kernel(what).block
    threads = block.x * block.y * block.z
    if threads % WARPGROUP_THREADS:
        raise TraceError(f"{what} runs on whole warpgroups of {WARPGROUP_THREADS} threads, but the block has "
                         f"{threads}", code="bad-wgmma",
                         hint=f"launch with a multiple of {WARPGROUP_THREADS} threads per block",
                         loc=user_location())


def _check_in_flight(in_flight) -> None:
    if not (isinstance(in_flight, int) and not isinstance(in_flight, bool) and 0 <= in_flight <= 7):
        raise TraceError(f"in_flight={in_flight!r} must be a Python int in 0..7", code="bad-wgmma",
                         hint="pass in_flight=0 to wait for every group, or up to 7 to leave that many running",
                         loc=user_location())
