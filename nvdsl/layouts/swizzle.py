"""The shared-memory swizzle TMA writes tiles with and wgmma reads them with: one definition for the
primitives, the task layer and the interpreter (plain Python; works on ints, NumPy integer arrays and traced
indices alike)."""

SWIZZLE_SPANS = (0, 32, 64, 128)     # bytes; 0 is no swizzle


def swizzle(offset, span: int):
    """Byte ``offset`` of a tile under a ``span``-byte swizzle: the 16-byte chunk bits [4, 4+b) XOR the row bits
    [7, 7+b), b = log2(span / 16) (PTX ISA, "Tensor-copy swizzling modes"). Offsets count from a
    :func:`swizzle_alignment`-aligned address."""
    if span == 0:
        return offset
    return offset ^ (((offset >> 7) & (span // 16 - 1)) << 4)


def swizzle_alignment(span: int) -> int:
    """The alignment in bytes a tile needs in shared memory under a ``span``-byte swizzle: 128, or the span in
    which the swizzle pattern repeats (8 rows of ``span`` bytes: 1024 for the 128-byte swizzle)."""
    return max(128, 8 * span)
