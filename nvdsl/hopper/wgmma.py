"""Warpgroup matrix multiply-accumulate (wgmma): ``acc += A @ B`` on shared-memory tiles.

``WGMMAMatrix(tile, tma)`` describes an operand in shared memory (loaded by that TMA descriptor,
whose swizzle the hardware descriptor repeats); ``WGMMAAccumulator(m, n)`` holds the f32
result in the registers of the warpgroup (128 threads) that issues the product.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import memref, nvgpu

from .. import dtypes as dt
from ..errors import TraceError, user_location
from ..frontend.context import at_user_line, current, current_kernel
from ..frontend.memory import GLOBAL, SHARED, Array
from .tma import TMA

_INPUT_DTYPES = (dt.float16, dt.bfloat16)


def _memref_text(shape, dtype: dt.DType) -> str:
    return f"memref<{'x'.join(map(str, shape))}x{dtype.mlir_type()}, #gpu.address_space<workgroup>>"


class WGMMAMatrix:
    """An operand of ``wgmma`` in shared memory: ``tile`` as loaded by ``tma`` (its swizzle sets the layout).

    The matrix is ``tile`` itself, or with ``transposed=True`` the tile's transpose. ``A`` (M, K)
    is an (M, K) tile, K contiguous; ``B`` (K, N) is a (K, N) tile, N contiguous ("N-major").
    (``transposed=True`` operands, i.e. K-major B, are refused for now: nvgpu's verifier wants B
    declared (K, N).)
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
        self.tile, self.tma, self.transposed = tile, tma, transposed
        self.shape = tile.shape[::-1] if transposed else tile.shape
        self.dtype = tile.dtype
        descriptor_type = ir.Type.parse(
            f"!nvgpu.warpgroup.descriptor<tensor = {_memref_text(tile.shape, tile.dtype)}>")
        with at_user_line():
            self.ir = nvgpu.warpgroup_generate_descriptor(descriptor_type, tile.ir, tma._descriptor())

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
        if a.transposed or b.transposed:
            raise TraceError("A must be an (M, K) tile and B a (K, N) tile; K-major B (an (N, K) tile) and "
                             "transposed A are not supported yet", code="bad-wgmma",
                             hint="load B as (K, N) boxes, as in tutorials/ch3_gemm_single_tile.py",
                             loc=user_location())
        self.a, self.b = a, b
        # wgmma reads B K-major unless told to transpose: an N-major (K, N) tile needs the flag.
        self.transpose_b = not b.transposed


class WGMMAAccumulator:
    """An (m, n) float32 accumulator held in the registers of the issuing warpgroup.

    ``acc += a @ b`` issues ``nvgpu.warpgroup.mma`` (``wgmma.mma_async`` instructions, fenced,
    committed and waited for: the product is complete when the statement ends); ``acc.store(array)`` writes it to shared or global memory.
    M must be a multiple of 64, N a multiple of 8 up to 256, K a multiple of 16.
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
        if not isinstance(product, _Product):
            raise TraceError("an accumulator adds A @ B products of WGMMAMatrix operands", code="bad-wgmma",
                             loc=user_location())
        (m, k), (k2, n) = product.a.shape, product.b.shape
        if (m, n) != self.shape or k != k2 or k % 16:
            raise TraceError(f"A is {list(product.a.shape)} and B is {list(product.b.shape)}, which do not make "
                             f"an accumulator of {list(self.shape)} with K a multiple of 16",
                             code="bad-wgmma-shape", loc=user_location())
        with at_user_line():
            # wait_group=0: the product is complete when the statement ends, so the tiles may be
            # overwritten right after (nvgpu's default leaves one group in flight).
            value = nvgpu.warpgroup_mma(self.type, product.a.ir, product.b.ir, self.ir, wait_group=0,
                                        transpose_b=ir.UnitAttr.get() if product.transpose_b else None)
        return self._rebuild(value)

    def store(self, destination: Array, at=None) -> None:
        """Write the accumulator into a float32 array (``nvgpu.warpgroup.mma.store``): the whole array,
        which must have its shape, or with ``at=(row, col)`` the block of its shape starting there."""
        if not isinstance(destination, Array) or destination.dtype != dt.float32 or destination.ndim != 2:
            raise TraceError(f"WGMMAAccumulator.store needs a 2-D float32 array, got {destination!r}",
                             code="bad-wgmma", loc=user_location())
        if at is None and destination.shape != self.shape:
            raise TraceError(f"the accumulator is {list(self.shape)} but '{destination.name}' is "
                             f"{list(destination.shape)}", code="bad-wgmma",
                             hint="pass at=(row, col) to store into a block of a larger array", loc=user_location())
        if destination.space == GLOBAL:
            current("WGMMAAccumulator.store").written_args.add(ir.BlockArgument(destination.ir).arg_number)
        with at_user_line():
            target = destination.ir if at is None else _block(destination, at, self.shape)
            nvgpu.warpgroup_mma_store(self.ir, target)


def _block(array: Array, at, shape) -> ir.Value:
    """The ``shape`` block of ``array`` starting at ``at`` (a ``memref.subview`` with dynamic offsets)."""
    from ..frontend.values import _index_value
    offsets = [_index_value(x, "a block offset") for x in at]
    return memref.subview(array.ir, offsets, list(shape), [1, 1])
