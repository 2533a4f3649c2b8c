"""What tracing a host function produces: its MLIR module for one call signature (no MLIR imported here)."""

from __future__ import annotations

from dataclasses import dataclass

from ..signature import ArgSpec


@dataclass(frozen=True)
class Trace:
    """The MLIR of one traced signature.

    Attributes:
        mlir: the module's text without source locations (what the cache key hashes).
        mlir_with_locations: the same with every op's Python source location.
        specs: the positional arguments as traced.
        written: indices of the arguments some kernel writes.
    """

    module: object  # the ir.Module
    mlir: str
    mlir_with_locations: str
    specs: tuple[ArgSpec, ...]
    written: frozenset[int]

    def __str__(self) -> str:
        return self.mlir
