"""Kernels written in nvdsl, ready to call (see each module)."""
