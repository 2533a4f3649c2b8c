"""Frontend layer: tracing Python into MLIR. Never talks to the GPU."""
