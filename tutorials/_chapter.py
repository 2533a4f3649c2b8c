"""What every chapter does at the end: run and verify on a GPU, or compile and show the artifacts without one."""

import tempfile

import numpy as np

import nvdsl


def run_or_compile(fn, args, verify, **constants) -> None:
    """Run ``fn(*args)`` and ``verify()`` it on a GPU; without one, compile it and say where IR and PTX went."""
    if nvdsl.device_count() > 0:
        fn(*args, **constants)
        nvdsl.synchronize()
        verify()
        print("PASS")
        return
    dump_dir = fn.options.dump_dir or tempfile.mkdtemp(prefix=f"nvdsl-{fn.name}-")
    compiled = fn.with_options(dump_dir=dump_dir).compile(*args, **constants)
    print(f"No GPU here, so '{fn.name}' was compiled but not run. Its artifacts are in {dump_dir}:")
    for kind, path in sorted(compiled.dump_paths.items()):
        print(f"  {kind:8s} {path}")
    print("Running and checking the results needs an NVIDIA Hopper GPU (sm_90a).")


def run_gemm(gemm, m: int, n: int, k: int, c_dtype, max_relative_error: float) -> None:
    """``run_or_compile`` a GEMM on random float16 A (m, k) and B (k, n) into a ``c_dtype`` C, checked
    against the float32 product by relative Frobenius error."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((m, k)).astype(np.float16)
    b = rng.standard_normal((k, n)).astype(np.float16)
    c = np.zeros((m, n), c_dtype)

    def verify():
        expected = a.astype(np.float32) @ b.astype(np.float32)
        error = np.linalg.norm(c.astype(np.float32) - expected) / np.linalg.norm(expected)
        assert error < max_relative_error, f"relative error {error}"

    run_or_compile(gemm, (a, b, c), verify)
