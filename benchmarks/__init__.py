"""nvdsl's benchmark suite: ``python3 -m benchmarks <suite> [options]`` (see README.md).

Importing this package imports nothing GPU-related; the suites import torch,
Triton, JAX and nvdsl only when they run.
"""
