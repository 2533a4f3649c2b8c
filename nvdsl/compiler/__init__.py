"""Compiler layer: MLIR passes, PTX, cubin, dumps and the compile cache. Launches nothing."""
