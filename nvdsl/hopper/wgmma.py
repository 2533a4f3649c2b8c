"""Warpgroup matrix multiply-accumulate (wgmma): ``acc += A @ B`` on shared-memory tiles.

``WGMMAMatrix(tile, tma)`` describes an operand in shared memory (loaded by that TMA descriptor,
whose swizzle the hardware descriptor repeats); ``WGMMAAccumulator(m, n)`` holds the f32
result in the registers of the warpgroup (128 threads) that issues the product.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, llvm, memref, nvgpu, nvvm, vector

from .. import dtypes as dt
from ..errors import TraceError, user_location
from ..frontend.context import at_user_line, current, current_kernel
from ..frontend.memory import GLOBAL, SHARED, Array
from ..frontend.values import Value, _index_value
from .tma import TMA

_INPUT_DTYPES = (dt.float16, dt.bfloat16)


def _memref_text(shape, dtype: dt.DType) -> str:
    return f"memref<{'x'.join(map(str, shape))}x{dtype.mlir_type()}, #gpu.address_space<workgroup>>"


class WGMMAMatrix:
    """An operand of ``wgmma`` in shared memory: ``tile`` as loaded by ``tma`` (its swizzle sets the layout).

    The matrix is ``tile`` itself, or with ``transposed=True`` the tile's transpose. ``A`` (M, K)
    is an (M, K) tile, K contiguous. ``B`` (K, N) is either a (K, N) tile, N contiguous
    ("N-major", as ``b`` of ``a @ b`` row-major), or ``transposed=True`` of an (N, K) tile, K
    contiguous ("K-major", as the weight of a linear layer); a K-major tile's rows must fit in
    one swizzle span (K * 2 bytes <= swizzle).
    """

    def __init__(self, tile: Array, tma: TMA, *, transposed: bool = False):
        current_kernel("nvdsl.WGMMAMatrix")
        if not (isinstance(tile, Array) and tile.space == SHARED):
            raise TraceError(f"WGMMAMatrix needs a shared-memory tile, got {tile!r}", code="bad-wgmma",
                             loc=user_location())
        if tile.dtype not in _INPUT_DTYPES or tile.ndim != 2:
            raise TraceError(f"WGMMAMatrix needs a 2-D float16 or bfloat16 tile, got {tile.dtype.name}"
                             f"{list(tile.shape)}", code="bad-wgmma", loc=user_location())
        if not isinstance(tma, TMA) or tma.spec.swizzle == 0:
            raise TraceError("WGMMAMatrix needs the (swizzled) TMA descriptor that loads its tile",
                             code="bad-wgmma", hint="declare the TMA with swizzle=128 (or 64, 32)",
                             loc=user_location())
        # wgmma's descriptors step K inside one swizzle span: a K-major operand's rows must fit in it.
        self.rows_fit_swizzle = tile.shape[1] * tile.dtype.itemsize <= tma.spec.swizzle
        if transposed and not self.rows_fit_swizzle:
            raise TraceError(f"a transposed (K-major) tile's rows are {tile.shape[1]} values, wider than the "
                             f"{tma.spec.swizzle}-byte swizzle span", code="bad-wgmma-shape",
                             hint="use a K extent of 64 (128-byte swizzle) per tile", loc=user_location())
        tile.check_lease("a WGMMAMatrix of")
        self.tile, self.tma, self.transposed = tile, tma, transposed
        self.shape = tile.shape[::-1] if transposed else tile.shape
        self.dtype = tile.dtype
        descriptor_type = ir.Type.parse(
            f"!nvgpu.warpgroup.descriptor<tensor = {_memref_text(tile.shape, tile.dtype)}>")
        with at_user_line():
            self.ir = nvgpu.warpgroup_generate_descriptor(descriptor_type, tile.ir, tma.matrix_descriptor())

    def __matmul__(self, other: "WGMMAMatrix") -> "_Product":
        return _Product(self, other)


class _Product:
    """``A @ B`` waiting to be added into an accumulator."""

    def __init__(self, a: WGMMAMatrix, b: WGMMAMatrix):
        if not isinstance(b, WGMMAMatrix):
            raise TraceError("A @ B needs two WGMMAMatrix operands", code="bad-wgmma", loc=user_location())
        if a.dtype != b.dtype:
            raise TraceError(f"A is {a.dtype.name} but B is {b.dtype.name}", code="bad-wgmma",
                             loc=user_location())
        if a.transposed:
            raise TraceError("A must be an (M, K) tile, K contiguous; a transposed A is not supported",
                             code="bad-wgmma", hint="load A as (M, K) boxes", loc=user_location())
        if b.transposed and not a.rows_fit_swizzle:
            raise TraceError(f"with a K-major B, A's rows ({a.tile.shape[1]} values) must fit in its "
                             f"{a.tma.spec.swizzle}-byte swizzle span", code="bad-wgmma-shape", loc=user_location())
        self.a, self.b = a, b
        # wgmma reads B K-major unless told to transpose: an N-major (K, N) tile needs the flag.
        self.transpose_b = not b.transposed


class WGMMAAccumulator:
    """An (m, n) float32 accumulator held in the registers of the issuing warpgroup.

    ``acc += a @ b`` issues ``nvgpu.warpgroup.mma`` (``wgmma.mma_async`` instructions, fenced,
    committed and waited for: the product is complete when the statement ends).
    ``acc.accumulate(a @ b, in_flight=1)`` returns while that product still runs, so a pipeline can
    release the tiles of the previous product while the tensor cores work on this one.
    ``acc.store(array)`` writes the result to shared or global memory, converting to the array's
    element type. M must be a multiple of 64, N a multiple of 8 up to 256, K a multiple of 16.
    The accumulator can be carried through ``nvdsl.fori``.
    """

    def __init__(self, m: int, n: int, *, _value: ir.Value | None = None):
        current_kernel("nvdsl.WGMMAAccumulator")
        if not (isinstance(m, int) and m > 0 and m % 64 == 0):
            raise TraceError(f"accumulator M={m} must be a positive multiple of 64", code="bad-wgmma-shape",
                             loc=user_location())
        if not (isinstance(n, int) and 8 <= n <= 256 and n % 8 == 0):
            raise TraceError(f"accumulator N={n} must be a multiple of 8 between 8 and 256",
                             code="bad-wgmma-shape", loc=user_location())
        self.shape = (m, n)
        self.type = ir.Type.parse(f"!nvgpu.warpgroup.accumulator<fragmented = vector<{m}x{n}xf32>>")
        if _value is None:
            with at_user_line():
                _value = nvgpu.warpgroup_mma_init_accumulator(self.type)
        self.ir = _value

    def _rebuild(self, value: ir.Value) -> "WGMMAAccumulator":
        return WGMMAAccumulator(*self.shape, _value=value)

    def __iadd__(self, product: _Product) -> "WGMMAAccumulator":
        self.accumulate(product)  # in place: the accumulator now names the new registers
        return self

    def accumulate(self, product: _Product, *, in_flight: int = 0) -> None:
        """Issue ``self += product`` as one wgmma group, then wait until at most ``in_flight`` of the
        warpgroup's groups still run (``wgmma.commit_group``; ``wgmma.wait_group in_flight``).

        With ``in_flight=1`` this product may still be reading its tiles on return, but every earlier
        one is complete. Reading the accumulator (``store``) waits for all groups first.
        """
        _check_in_flight(in_flight)
        if not isinstance(product, _Product):
            raise TraceError("an accumulator adds A @ B products of WGMMAMatrix operands", code="bad-wgmma",
                             loc=user_location())
        (m, k), (k2, n) = product.a.shape, product.b.shape
        if (m, n) != self.shape or k != k2 or k % 16:
            raise TraceError(f"A is {list(product.a.shape)} and B is {list(product.b.shape)}, which do not make "
                             f"an accumulator of {list(self.shape)} with K a multiple of 16",
                             code="bad-wgmma-shape", loc=user_location())
        with at_user_line():
            if product.transpose_b:
                self.ir = nvgpu.warpgroup_mma(self.type, product.a.ir, product.b.ir, self.ir, wait_group=in_flight,
                                              transpose_b=ir.UnitAttr.get())
            else:
                self._issue_k_major_b(product, in_flight)
        current_kernel("WGMMAAccumulator.accumulate").note_wgmma(committed=1, in_flight=in_flight)

    def _issue_k_major_b(self, product: _Product, in_flight: int) -> None:
        """``nvgpu.warpgroup.mma`` steps B's descriptor as for an N-major tile only, so a K-major B
        is issued here as ``nvvm.wgmma.mma_async`` instructions: one per 64 rows of A and 16 of K,
        each descriptor advanced to its sub-tile (start address in 16-byte units)."""
        m, n = self.shape
        k = product.a.shape[1]
        item = product.a.dtype.itemsize
        i64 = ir.IntegerType.get_signless(64)
        as_i64 = lambda d: ir.Operation.create("builtin.unrealized_conversion_cast", results=[i64],
                                               operands=[d]).result
        a_desc, b_desc = as_i64(product.a.ir), as_i64(product.b.ir)
        step = lambda desc, offset: desc if not offset else arith.addi(desc, arith.constant(i64, offset >> 4))
        wgmma_type = {dt.float16: "f16", dt.bfloat16: "bf16"}[product.a.dtype]
        attr = ir.Attribute.parse
        struct = self._struct()
        chunk_type = _chunk_type(n)
        nvvm.wgmma_fence_aligned()
        for chunk in range(m // 64):
            value = llvm.extractvalue(chunk_type, struct, [chunk])
            for kk in range(k // 16):
                value = nvvm.wgmma_mma_async(
                    chunk_type, value, step(a_desc, (chunk * 64 * k + kk * 16) * item), step(b_desc, kk * 16 * item),
                    attr(f"#nvvm.shape<m = 64, n = {n}, k = 16>"), attr(f"#nvvm.wgmma_type<{wgmma_type}>"),
                    attr(f"#nvvm.wgmma_type<{wgmma_type}>"), attr("#nvvm.wgmma_type<f32>"),
                    attr("#nvvm.wgmma_scale_out<one>"), attr("#nvvm.wgmma_scale_in<one>"),
                    attr("#nvvm.wgmma_scale_in<one>"), attr("#nvvm.mma_layout<row>"), attr("#nvvm.mma_layout<col>"))
            struct = llvm.insertvalue(struct, value, [chunk])
        nvvm.wgmma_commit_group_sync_aligned()
        nvvm.wgmma_wait_group_sync_aligned(in_flight)
        self.ir = ir.Operation.create("builtin.unrealized_conversion_cast", results=[self.type],
                                      operands=[struct]).result

    def __getitem__(self, key) -> "_AccumulatorColumns":
        """``acc[:, start:stop]``: some of the accumulator's columns (multiples of 8), to ``store``
        a wide accumulator through a smaller staging tile."""
        rows, cols = key if isinstance(key, tuple) and len(key) == 2 else (None, None)
        n = self.shape[1]
        if not (isinstance(rows, slice) and rows == slice(None) and isinstance(cols, slice) and cols.step is None):
            raise TraceError("index an accumulator as acc[:, start:stop] (all rows, a range of columns)",
                             code="bad-wgmma", loc=user_location())
        start, stop, _ = cols.indices(n)
        if start % 8 or stop % 8 or stop <= start:
            raise TraceError(f"accumulator columns {start}:{stop} must be a non-empty range with multiples of 8",
                             code="bad-wgmma", loc=user_location())
        return _AccumulatorColumns(self, start, stop)

    def store(self, destination: Array, at=None, *, tma: TMA | None = None) -> None:
        """Write the accumulator into ``destination``, converted to its element type (float32, float16
        or bfloat16), after waiting for every wgmma group of the warpgroup.

        Args:
            destination: a 2-D global or shared array of the accumulator's shape, or larger with ``at``.
            at: ``(row, col)`` of the block of ``destination`` to write.
            tma: lay the (shared) destination out as this descriptor's boxes, so that ``tma.store``
                can copy them out: the boxes one after the other, row of boxes by row of boxes, each
                swizzled as the descriptor says. Give box ``i`` to ``tma.store`` as
                ``destination.view(tma.box, offset=i * box_bytes)``.
        """
        _AccumulatorColumns(self, 0, self.shape[1]).store(destination, at, tma=tma)

    def _fragments(self, columns: tuple[int, int]):
        """Per pair of adjacent accumulator values a thread holds in ``columns`` (start, stop):
        (struct position of the first, row, column), the row and column (relative to ``start``)
        as (constant part, this thread's part) to add.

        wgmma's m64nNk16 f32 layout: thread t of the warpgroup holds, for each 8-column block q and
        h in (0, 1), the values at row 16*(t//32) + (t%32)//4 + 8*h, columns 8*q + 2*(t%4) + (0, 1).
        """
        ctx = current_kernel("WGMMAAccumulator.store")
        thread = ctx.linear_thread_id % 128
        row_part = (thread // 32) * 16 + (thread % 32) // 4
        col_part = (thread % 4) * 2
        start, stop = columns
        for chunk in range(self.shape[0] // 64):
            for q in range(start // 8, stop // 8):
                for h in (0, 1):
                    yield (chunk, 4 * q + 2 * h), (64 * chunk + 8 * h, row_part), (8 * q - start, col_part)

    def _struct(self) -> ir.Value:
        """The accumulator as the LLVM struct nvgpu lowers it to: one struct of N/2 f32 per 64 rows."""
        m, n = self.shape
        struct_type = ir.Type.parse(f"!llvm.struct<({', '.join([str(_chunk_type(n))] * (m // 64))})>")
        return ir.Operation.create("builtin.unrealized_conversion_cast", results=[struct_type],
                                   operands=[self.ir]).result


class _AccumulatorColumns:
    """Columns ``start:stop`` of an accumulator (``acc[:, start:stop]``), to store."""

    def __init__(self, acc: WGMMAAccumulator, start: int, stop: int):
        self.acc, self.columns = acc, (start, stop)
        self.shape = (acc.shape[0], stop - start)

    def store(self, destination: Array, at=None, *, tma: TMA | None = None) -> None:
        """As :meth:`WGMMAAccumulator.store`, for these columns."""
        if not isinstance(destination, Array) or destination.ndim != 2 or \
                destination.dtype not in (dt.float32,) + _INPUT_DTYPES:
            raise TraceError(f"WGMMAAccumulator.store needs a 2-D float32, float16 or bfloat16 array, "
                             f"got {destination!r}", code="bad-wgmma", loc=user_location())
        if at is None and destination.shape != self.shape:
            raise TraceError(f"the accumulator block is {list(self.shape)} but '{destination.name}' is "
                             f"{list(destination.shape)}", code="bad-wgmma",
                             hint="pass at=(row, col) to store into a block of a larger array", loc=user_location())
        if destination.space == GLOBAL:
            current("WGMMAAccumulator.store").written_args.add(ir.BlockArgument(destination.ir).arg_number)
        with at_user_line():
            wgmma_wait(0)
            if tma is not None:
                _BoxLayout(destination, tma, self.shape, at).store(self.acc, self.columns)
            elif destination.dtype == dt.float32 and self.shape == self.acc.shape:
                target = destination.ir if at is None else _block(destination, at, self.shape)
                nvgpu.warpgroup_mma_store(self.acc.ir, target)
            else:
                _RowMajor(destination, at).store(self.acc, self.columns)


class _AccumulatorWriter:
    """Writes an accumulator pair by pair (two adjacent columns as one 4-byte or 8-byte store)."""

    def __init__(self, dtype: dt.DType):
        self.dtype = dtype

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
        self.at = [Value(_index_value(x, "a block offset"), dt.index) for x in (at or (0, 0))]

    def write(self, pair, row, col) -> None:
        r = self.at[0] + row[1] + row[0]
        c = self.at[1] + col[1] + col[0]
        vector.store(pair, self.destination.ir, [r.ir, c.ir], alignment=2 * self.dtype.itemsize)


class _BoxLayout(_AccumulatorWriter):
    """A shared tile laid out as a TMA descriptor's boxes, one after the other in row-major order
    of boxes (for one box row: column blocks one box wide), each box's 16-byte chunks swizzled
    within every ``swizzle``-byte row span (TMA's layout: address bits 4.. XOR bits 7.., over as
    many bits as the swizzle has 16-byte chunks)."""

    def __init__(self, destination: Array, tma: TMA, shape, at):
        super().__init__(destination.dtype)
        if not isinstance(tma, TMA):
            raise TraceError(f"tma= needs an nvdsl.TMA, got {tma!r}", code="bad-wgmma", loc=user_location())
        rows, cols = destination.shape
        box = tma.box
        while len(box) > 2 and box[0] == 1:      # a batch coordinate: the box is one matrix deep
            box = box[1:]
        if destination.space != SHARED or at is not None or len(box) != 2 or box[0] % 64 or rows % box[0] or \
                cols % box[1] or (box[1] * destination.dtype.itemsize) % 16 or \
                tma.array.dtype != destination.dtype or tuple(shape) != destination.shape:
            raise TraceError(f"store(..., tma=) needs a shared {tma.array.dtype.name} tile of the accumulator's "
                             f"shape {list(shape)}, made of whole boxes {list(box)} of that descriptor (box rows a "
                             f"multiple of 64), got {destination!r}", code="bad-wgmma", loc=user_location())
        span = 8 * tma.spec.swizzle  # the swizzle pattern repeats every 8 rows of `swizzle` bytes
        if span and destination.alignment < span:
            raise TraceError(f"'{destination.name}' starts at a shared byte offset aligned to {destination.alignment} "
                             f"bytes; a {tma.spec.swizzle}-byte swizzled tile must start on a multiple of {span}",
                             code="misaligned", hint=f"allocate it with align={max(span, 128)}", loc=user_location())
        self.item = destination.dtype.itemsize
        self.box_rows, self.box_cols = box
        self.boxes_per_row = cols // self.box_cols
        self.box_bytes = self.box_rows * self.box_cols * self.item
        self.row_bytes = self.box_cols * self.item
        self.swizzle_mask = tma.spec.swizzle // 16 - 1
        self.flat = destination.view((destination.size,))

    def write(self, pair, row, col) -> None:
        # The thread's parts stay inside one 64-row chunk and one 8-column block, so which box a
        # pair lands in is known while tracing.
        (row_const, row_thread), (col_const, col_thread) = row, col
        box_row, row_in_box = divmod(row_const - row_const % 64, self.box_rows)
        box_col, col_in_box = divmod(col_const, self.box_cols)
        box = box_row * self.boxes_per_row + box_col
        offset = (row_thread + (row_in_box + row_const % 64)) * self.row_bytes + col_thread * self.item + \
            (box * self.box_bytes + col_in_box * self.item)
        if self.swizzle_mask:
            offset = offset ^ (((offset >> 7) & self.swizzle_mask) << 4)
        index = offset >> (self.item.bit_length() - 1)  # itemsize is a power of two
        vector.store(pair, self.flat.ir, [index.ir], alignment=2 * self.item)


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


def _check_in_flight(in_flight) -> None:
    if not (isinstance(in_flight, int) and not isinstance(in_flight, bool) and 0 <= in_flight <= 7):
        raise TraceError(f"in_flight={in_flight!r} must be a Python int in 0..7", code="bad-wgmma",
                         loc=user_location())


def _block(array: Array, at, shape) -> ir.Value:
    """The ``shape`` block of ``array`` starting at ``at`` (a ``memref.subview`` with dynamic offsets)."""
    offsets = [_index_value(x, "a block offset") for x in at]
    return memref.subview(array.ir, offsets, list(shape), [1, 1])
