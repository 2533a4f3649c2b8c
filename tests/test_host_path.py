"""The host path: importing nvdsl leaves MLIR alone, and a new process finds its kernels on disk by the
call's key, without tracing, unless anything the function reads changed."""

import json
import os
import subprocess
import sys
import textwrap
import types

import numpy as np

import pytest

import nvdsl
from nvdsl.testing import requires_gpu
from nvdsl.frontend.keying import call_key
from nvdsl.signature import ARRAY, SCALAR, ArgSpec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECS = (ArgSpec("x", ARRAY, nvdsl.float32, (1024,)), ArgSpec("alpha", SCALAR, nvdsl.float32))


def python(script: str, *args, env=None):
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *map(str, args)], capture_output=True,
                            text=True, timeout=300, cwd=ROOT,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]), **(env or {})))
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_import_nvdsl_does_not_import_mlir():
    found = python('''
        import json, sys, nvdsl

        @nvdsl.mlir_func
        def f(x):
            pass
        before = "mlir" in sys.modules
        nvdsl.gpu_launch   # a name used while tracing: loads the tracing modules, and MLIR
        print(json.dumps({"before": before, "after": "mlir" in sys.modules,
                          "names": sorted(set(nvdsl.__all__) - set(dir(nvdsl)))}))
    ''')
    assert found == {"before": False, "after": True, "names": []}


def test_import_nvdsl_loads_only_what_a_call_cannot_do_without():
    """``import nvdsl`` loads neither MLIR, nor the CUDA driver's bindings, nor NumPy (more than half of the import
    when it did), nor the compile cache, the call key or the layout algebra: a function's first call loads what it
    uses (NumPy, the driver to find a GPU, the key and the disk cache to find its kernels), and the lazily loaded
    public names are the modules' own."""
    found = python('''
        import json, sys, nvdsl

        def loaded(prefixes):
            return sorted(m for m in sys.modules if m.startswith(prefixes))
        deferred = ("mlir", "cuda", "numpy", "ml_dtypes", "torch", "nvdsl.runtime", "nvdsl.compiler",
                    "nvdsl.frontend.keying", "nvdsl.layouts", "nvdsl.tasks", "nvdsl.kernels", "nvdsl.interpreter")
        at_import = loaded(deferred)
        from nvdsl.runtime.device import device_count, synchronize
        from nvdsl.layouts import Layout
        same = nvdsl.device_count is device_count and nvdsl.synchronize is synchronize and nvdsl.Layout is Layout
        print(json.dumps({"at_import": at_import, "same": same and nvdsl.layouts is sys.modules["nvdsl.layouts"]}))
    ''')
    assert found == {"at_import": [], "same": True}


def test_numpy_imported_after_nvdsl_is_what_a_first_call_takes():
    """NumPy arrays and scalars of a process that imports nvdsl first (which leaves NumPy alone), then NumPy."""
    found = python('''
        import json, sys, nvdsl
        imported = "numpy" in sys.modules
        import numpy as np

        @nvdsl.mlir_func(options=nvdsl.Options(backend="interpret"))
        def add(x, alpha):
            @nvdsl.gpu_launch(grid=1, block=32)
            def kernel(ctx):
                x[ctx.thread_id.x] = x[ctx.thread_id.x] + alpha
            kernel()
        x = np.zeros(32, np.float32)
        add(x, np.float32(2.0))
        add(x, 1.0)
        add(x, 1.0)
        print(json.dumps({"imported": imported, "x": sorted(set(x.tolist())), "programs": len(add._programs)}))
    ''')
    assert found == {"imported": False, "x": [4.0], "programs": 2}


WORKER = '''
    import json, sys, numpy as np, nvdsl

    SCALE = float(sys.argv[1])
    traced = []

    def make(offset):
        @nvdsl.mlir_func
        def axpy(x, y, alpha):
            traced.append(1)

            @nvdsl.gpu_launch(grid=x.shape[0] // 256, block=256)
            def kernel(ctx):
                i = ctx.block_id.x * 256 + ctx.thread_id.x
                y[i] = alpha * SCALE * x[i] + y[i] + offset
            kernel()
        return axpy

    x, y = np.ones(1024, np.float32), np.ones(1024, np.float32)
    try:
        make(float(sys.argv[2]))(x, y, 2.0)
        ran = True
    except nvdsl.NoDeviceError:   # without a GPU the call stops at the device, after finding its kernels
        ran = False
    print(json.dumps({"traced": len(traced), "mlir": "mlir" in sys.modules, "ran": ran,
                      "y0": float(y[0])}))
'''


def test_a_new_process_runs_cached_kernels_without_tracing_and_a_changed_input_retraces(tmp_path):
    env = {"NVDSL_CACHE_DIR": str(tmp_path), "NVDSL_BACKEND": "gpu"}   # the interpreter always traces
    first = python(WORKER, 1.0, 0.0, env=env)
    assert first["traced"] == 1 and first["mlir"]
    second = python(WORKER, 1.0, 0.0, env=env)
    assert second["traced"] == 0 and not second["mlir"]            # from the disk, no tracing, no MLIR
    assert python(WORKER, 3.0, 0.0, env=env)["traced"] == 1          # a global the function reads changed
    assert python(WORKER, 1.0, 5.0, env=env)["traced"] == 1          # a closure value changed
    assert python(WORKER, 3.0, 0.0, env=env)["traced"] == 0          # and each is found again
    if first["ran"]:
        assert (first["y0"], second["y0"]) == (3.0, 3.0)
        assert python(WORKER, 3.0, 5.0, env=env)["y0"] == 12.0


def test_a_new_process_interprets_an_mlir_func_from_the_disk_cache_without_tracing(tmp_path):
    """The interpreter backend's counterpart of the test above: the traced module is kept on disk by the call's
    key, so a second process interprets it without tracing; a changed global traces again."""
    env = {"NVDSL_CACHE_DIR": str(tmp_path), "NVDSL_BACKEND": "interpret"}
    first, second = python(WORKER, 1.0, 0.0, env=env), python(WORKER, 1.0, 0.0, env=env)
    assert (first["traced"], second["traced"]) == (1, 0) and first["ran"] and second["ran"]
    assert first["y0"] == second["y0"] == 3.0
    changed = python(WORKER, 3.0, 0.0, env=env)
    assert changed["traced"] == 1 and changed["y0"] == 7.0


def keyed(fn, *, constants=None, options=None):
    return call_key(fn, SPECS, constants or {}, options or nvdsl.Options(), "toolchain")


def test_the_call_key_covers_what_the_function_reads():
    def make(tile):
        def f(x, alpha):
            return tile + GLOBAL_TILE
        return f
    global GLOBAL_TILE
    GLOBAL_TILE = 4
    base = keyed(make(1))
    assert base == keyed(make(1)) and base is not None
    assert keyed(make(2)) != base                                               # closure value
    GLOBAL_TILE = 8
    assert keyed(make(1)) != base                                               # a global it reads
    GLOBAL_TILE = 4
    assert keyed(make(1), constants={"n": 1}) != keyed(make(1), constants={"n": 1.0})
    assert keyed(make(1), options=nvdsl.Options(debug=True)) != base
    assert call_key(make(1), SPECS[:1], {}, nvdsl.Options(), "toolchain") != base
    assert call_key(make(1), SPECS, {}, nvdsl.Options(), "another ptxas") != base


def helper(n):
    return n * HELPER_FACTOR


HELPER_FACTOR = 2


def test_functions_it_calls_are_keyed_by_their_code_and_globals():
    def f(x, alpha):
        return helper(3)
    global HELPER_FACTOR
    before = keyed(f)
    HELPER_FACTOR = 5
    try:
        assert keyed(f) != before
    finally:
        HELPER_FACTOR = 2


class Config:
    tile = 64


def test_what_cannot_be_keyed_safely_is_not_keyed():
    config = Config()
    own_module = types.ModuleType("users_own_config")
    own_module.__file__ = "/home/user/project/users_own_config.py"

    def reads_an_object(x, alpha):
        return config.tile

    def reads_a_module_of_the_program(x, alpha):
        return own_module.TILE

    assert keyed(reads_an_object) is None
    assert keyed(reads_a_module_of_the_program) is None

    def reads_numpy_and_nvdsl(x, alpha):
        return np.float32, nvdsl.float16

    assert keyed(reads_numpy_and_nvdsl) is not None


TASK_WORKER = '''
    import json, sys, numpy as np, nvdsl
    from nvdsl.kernels.gemm import MAPPING, gemm

    a, b, c = np.ones((128, 64), np.float16), np.ones((64, 256), np.float16), np.zeros((128, 256), np.float32)
    try:
        gemm(a, b, c, mapping=MAPPING.replace(pipeline=int(sys.argv[1])))
        ran = True
    except nvdsl.NoDeviceError:
        ran = False
    print(json.dumps({"mlir": "mlir" in sys.modules, "ran": ran, "c0": float(c[0, 0])}))
'''


def test_a_new_process_runs_cached_task_layer_kernels_without_tracing(tmp_path):
    env = {"NVDSL_CACHE_DIR": str(tmp_path), "NVDSL_BACKEND": "gpu"}
    first = python(TASK_WORKER, 4, env=env)
    assert first["mlir"]                                       # traced (tracing imports MLIR) and compiled
    second = python(TASK_WORKER, 4, env=env)
    assert not second["mlir"]                                  # found on disk by the program and the mapping
    assert python(TASK_WORKER, 3, env=env)["mlir"]             # another mapping traces
    assert not python(TASK_WORKER, 3, env=env)["mlir"]
    if first["ran"]:
        assert (first["c0"], second["c0"]) == (64.0, 64.0)


def task_key(kernel):
    from nvdsl.compiler.cache import call_toolchain
    specs = tuple(ArgSpec(name, ARRAY, nvdsl.float16, (256, 256)) for name in kernel.entry.parameters)
    return call_key(kernel._function.fn, specs, {}, kernel.options, call_toolchain(kernel.options))


TILE = 64


def test_a_task_kernels_call_key_is_its_program_and_mapping():
    import nvdsl.tasks as nt
    from nvdsl.kernels.gemm import MAPPING, matmul_program

    base = task_key(nt.build(matmul_program("KN"), MAPPING))
    assert base is not None and base == task_key(nt.build(matmul_program("KN"), MAPPING))  # by content
    assert task_key(nt.build(matmul_program("KN"), MAPPING.replace(group=4))) != base
    assert task_key(nt.build(matmul_program("KN"), MAPPING.replace(sm_count=100))) != base
    assert task_key(nt.build(matmul_program("NK"), MAPPING)) != base                     # a closure it reads

    @nt.task(reads=("A",), writes=("C",))
    def copy(C, A):
        Ct, At = nt.blocks(C, (TILE, TILE)), nt.blocks(A, (TILE, TILE))
        for i, j in nt.prange(*Ct.grid):
            Ct[i, j] = At[i, j]
    global TILE
    before = task_key(nt.build(copy))
    TILE = 128
    try:
        assert task_key(nt.build(copy)) != before                                           # a global it reads
    finally:
        TILE = 64


INTERPRETED_WORKER = '''
    import json, sys, warnings, numpy as np, nvdsl
    from nvdsl.kernels.gemm import MAPPING, gemm

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((128, 64)).astype(np.float16), rng.standard_normal((64, 256)).astype(np.float16)
    c = np.zeros((128, 256), np.float32)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gemm(a, b, c, mapping=MAPPING.replace(pipeline=int(sys.argv[1]), sm_count=2))
    error = float(np.abs(c - a.astype(np.float32) @ b.astype(np.float32)).max())
    print(json.dumps({"traced": "nvdsl.frontend.tracer" in sys.modules, "error": error,
                      "warnings": [str(w.message) for w in caught]}))
'''


def test_a_new_process_interprets_a_call_from_the_disk_cache_without_tracing(tmp_path):
    """Without a GPU, a second process finds the traced module of a call on disk by the call's key (the
    program and the mapping, for a task kernel), parses it and interprets it: no tracing, no second protocol
    check, the same numbers; another mapping traces."""
    env = {"NVDSL_CACHE_DIR": str(tmp_path), "NVDSL_BACKEND": "interpret"}
    first = python(INTERPRETED_WORKER, 4, env=env)
    second = python(INTERPRETED_WORKER, 4, env=env)
    assert first["traced"] and not second["traced"], (first, second)
    assert first["error"] == second["error"] < 1e-2 and first["warnings"] == second["warnings"] == []
    assert python(INTERPRETED_WORKER, 3, env=env)["traced"]


@requires_gpu
def test_a_cached_call_on_torch_tensors_hands_what_it_does_not_inline_to_the_binders():
    """The cached path of a program of device arrays is one generated function: contiguous aligned tensors and
    float scalars inlined; a tensor or scalar of another kind, a tensor on the CPU, an unaligned view go to
    their binders, which refuse the signature (a new one is loaded) or raise, as before."""
    from test_compile import make_saxpy
    torch = pytest.importorskip("torch")
    axpy = make_saxpy()
    x, y = torch.ones(1024, device="cuda"), torch.zeros(1024, device="cuda")
    for _ in range(3):
        axpy(x, y, 2.0)
    axpy(x, y, np.float32(1.0))                             # a NumPy scalar: its binder takes it
    torch.cuda.synchronize()
    assert (y == 7).all()
    unaligned = torch.ones(1025, device="cuda")[1:]         # 4 bytes past a 16-byte boundary: another signature
    axpy(unaligned, y, 1.0)
    axpy(x, y, 1.0)
    torch.cuda.synchronize()
    assert (y == 9).all() and len(axpy._programs) == 3
    with pytest.raises(nvdsl.ArgumentError) as refused:
        axpy(x.cpu(), y, 1.0)
    assert refused.value.code == "bad-device"


def test_the_sm_count_is_asked_of_the_device_once_per_device(monkeypatch):
    """A library call that sizes its grid by the SM count (a decode step's split) asks per call: the device is
    queried once per options and NVDSL_DEVICE, not per call."""
    import nvdsl.jit as jit
    import nvdsl.runtime.device as device
    asked = []

    def get_device(ordinal=0):
        asked.append(ordinal)
        return types.SimpleNamespace(info=types.SimpleNamespace(multiprocessors=100 + ordinal))
    monkeypatch.setattr(device, "get_device", get_device)
    monkeypatch.setattr(jit, "_SM_COUNTS", {})
    monkeypatch.delenv("NVDSL_DEVICE", raising=False)
    assert [jit.sm_count() for _ in range(3)] == [100] * 3 and asked == [0]
    monkeypatch.setenv("NVDSL_DEVICE", "1")
    assert [jit.sm_count() for _ in range(2)] == [101] * 2 and asked == [0, 1]
