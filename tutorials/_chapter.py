"""What every chapter does at the end: run and verify, on the GPU when there is one, else in the CPU interpreter."""

import numpy as np

import nvdsl


def run_and_verify(fn, args, verify, **constants) -> None:
    """Run ``fn(*args)`` and ``verify()`` its results, then print PASS.

    Without a GPU the call runs in nvdsl's CPU interpreter (``fn.backend == "interpret"``), which executes
    the same traced MLIR and also reports races, deadlocks and barrier-protocol errors.
    """
    fn(*args, **constants)
    if fn.backend == "gpu":
        nvdsl.synchronize()
    verify()
    print("PASS")


def run_gemm(gemm, m: int, n: int, k: int, c_dtype, max_relative_error: float) -> None:
    """``run_and_verify`` a GEMM on random float16 A (m, k) and B (k, n) into a ``c_dtype`` C, checked
    against the float32 product by relative Frobenius error."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), c_dtype)

    def verify():
        expected = a.astype(np.float32) @ b.astype(np.float32)
        error = np.linalg.norm(c.astype(np.float32) - expected) / np.linalg.norm(expected)
        assert error < max_relative_error, f"relative error {error}"

    run_and_verify(gemm, (a, b, c), verify)
