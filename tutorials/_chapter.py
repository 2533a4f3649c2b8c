"""What every chapter does at the end: run and verify on a GPU, or compile and show the artifacts without one."""

import tempfile

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
