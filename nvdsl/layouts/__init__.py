"""Layouts: shape:stride algebra and register-fragment layouts, in plain Python (no MLIR).

``Layout`` is CuTe's and Graphene's shape:stride map with its algebra; ``FragmentLayout`` says which
thread of a group holds which element of a tile in registers; ``wgmma_accumulator(m, n)`` is the
layout of a wgmma accumulator; ``swizzle`` is the shared-memory swizzle of TMA tiles. The primitives and the task layer use them; they print in the
shape:stride notation.
"""

from .fragment import FragmentLayout, Reduction, rows_across_lanes, warps_per_row, wgmma_accumulator
from .swizzle import SWIZZLE_SPANS, swizzle, swizzle_alignment
from .layout import (Layout, coalesce, complement, composition, flatten, idx2crd, logical_divide,
                     logical_product, make_layout, product, zipped_divide)

__all__ = ["Layout", "FragmentLayout", "Reduction", "wgmma_accumulator", "rows_across_lanes", "warps_per_row",
           "make_layout", "coalesce",
           "composition", "complement", "logical_divide", "zipped_divide", "logical_product", "flatten",
           "product", "idx2crd", "swizzle", "swizzle_alignment", "SWIZZLE_SPANS"]
