"""Compiling: PTX for sm_90a, cubin through ptxas, SASS, dumps, compile errors and the compile cache."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from mlir import ir

import nvdsl
from nvdsl.compiler import cache as cache_module
from nvdsl.compiler.driver import assemble, compile_module
from nvdsl.compiler.toolchain import find_tool
from nvdsl.testing import sass_opcodes

needs_ptxas = pytest.mark.skipif(find_tool("ptxas") is None, reason="ptxas not installed")
needs_nvdisasm = pytest.mark.skipif(find_tool("nvdisasm") is None, reason="nvdisasm not installed")


def make_saxpy(options=None):
    @nvdsl.mlir_func(options=options)
    def saxpy(x, y, alpha):
        @nvdsl.gpu_launch(grid=x.shape[0] // 128, block=128)
        def kernel(ctx):
            i = ctx.block_id.x * 128 + ctx.thread_id.x
            y[i] = alpha * x[i] + y[i]
        kernel()
    return saxpy


ARGS = (np.ones(1024, np.float32), np.ones(1024, np.float32), 2.0)


@needs_ptxas
def test_ptx_for_sm90a_assembles_without_spills():
    compiled = make_saxpy().compile(*ARGS)
    assert ".target sm_90a" in compiled.ptx and ".entry saxpy_kernel" in compiled.ptx
    assert compiled.cubin is not None and compiled.cubin[:4] == b"\x7fELF"
    resources = compiled.resources["saxpy_kernel"]
    assert resources.spill_stores == 0 and resources.spill_loads == 0 and resources.registers > 0
    assert [launch.kernel for launch in compiled.module.plan.launches] == ["saxpy_kernel"]
    assert compiled.module.plan.launches[0].grid == (8, 1, 1)


@needs_ptxas
@needs_nvdisasm
def test_sass_holds_the_global_memory_instructions():
    opcodes = sass_opcodes(make_saxpy().compile(*ARGS).sass())
    assert {"LDG", "STG", "FFMA", "EXIT"} <= opcodes


def test_target_and_optimisation_level_are_options():
    ptx = make_saxpy(nvdsl.Options(chip="sm_80", features="+ptx78", opt_level=2)).compile(*ARGS).ptx
    assert ".target sm_80" in ptx and ".version 7.8" in ptx


def test_without_ptxas_the_ptx_is_kept_for_the_driver():
    compiled = make_saxpy(nvdsl.Options(assemble_cubin=False)).compile(*ARGS)
    assert compiled.cubin is None and ".entry saxpy_kernel" in compiled.ptx


@needs_ptxas
def test_dump_dir_receives_every_artifact(tmp_path):
    compiled = make_saxpy(nvdsl.Options(dump_dir=str(tmp_path))).compile(*ARGS)
    kinds = set(compiled.dump_paths)
    assert {"traced", "lowered", "ptx", "cubin", "ptxas"} <= kinds
    if find_tool("nvdisasm"):
        assert "sass" in kinds
    for path in compiled.dump_paths.values():
        assert os.path.dirname(path) == str(tmp_path) and os.path.getsize(path) > 0
    assert "gpu.launch" in open(compiled.dump_paths["traced"]).read()
    assert "llvm.func" in open(compiled.dump_paths["lowered"]).read() or \
        "gpu.binary" in open(compiled.dump_paths["lowered"]).read()


def test_a_failing_pass_quotes_mlir_and_the_users_line():
    text = textwrap.dedent('''
        module attributes {gpu.container_module} {
          func.func @f(%arg0: memref<4xi64>) {
            %c1 = arith.constant 1 : index
            gpu.launch blocks(%a, %b, %c) in (%x = %c1, %y = %c1, %z = %c1)
                       threads(%d, %e, %f) in (%u = %c1, %v = %c1, %w = %c1) {
              %i = arith.constant 3 : i32
              %k = builtin.unrealized_conversion_cast %i : i32 to i64 loc("user_kernel.py":7:3)
              %c0 = arith.constant 0 : index
              memref.store %k, %arg0[%c0] : memref<4xi64>
              gpu.terminator
            }
            return
          }
        }''')
    module = ir.Module.parse(text, ir.Context())
    with pytest.raises(nvdsl.CompileError) as info:
        compile_module(module, "f", "key", nvdsl.Options())
    assert "unrealized_conversion_cast" in info.value.tool_message
    assert any(loc.filename == "user_kernel.py" and loc.line == 7 for loc in info.value.locations)


@needs_ptxas
def test_a_ptxas_error_quotes_ptxas_and_the_ptx_line():
    bad_ptx = ".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k()\n{\n  bogus.instruction;\n}\n"
    with pytest.raises(nvdsl.CompileError) as info:
        assemble(bad_ptx, nvdsl.Options(), find_tool("ptxas"))
    assert info.value.stage == "ptxas"
    assert "PTX line 6: bogus.instruction;" in str(info.value)


def test_cache_key_changes_when_it_must_and_only_then():
    options = nvdsl.Options()
    text = make_saxpy().trace(*ARGS).mlir
    key = cache_module.cache_key(text, options)
    assert key == cache_module.cache_key(make_saxpy().trace(*ARGS).mlir, options)
    assert key != cache_module.cache_key(text, options.replace(opt_level=2))
    assert key != cache_module.cache_key(text, options.replace(chip="sm_90"))
    assert key != cache_module.cache_key(make_saxpy().trace(np.ones(2048, np.float32),
                                                            np.ones(2048, np.float32), 2.0).mlir, options)
    # Settings that do not change the code leave the key alone.
    assert key == cache_module.cache_key(text, options.replace(dump_dir="/tmp/x", device=3, disk_cache=False))


def test_disk_cache_is_shared_across_processes(tmp_path):
    script = textwrap.dedent('''
        import json, sys, numpy as np
        sys.path.insert(0, sys.argv[1])
        from test_compile import make_saxpy, ARGS
        compiled = make_saxpy().compile(*ARGS)
        print(json.dumps({"timings": compiled.module.timings, "key": compiled.module.key,
                          "ptx": len(compiled.ptx)}))
    ''')
    env = dict(os.environ, NVDSL_CACHE_DIR=str(tmp_path))
    here = os.path.dirname(__file__)
    runs = [json.loads(subprocess.run([sys.executable, "-c", script, here], env=env, cwd=here, check=True,
                                      capture_output=True, text=True).stdout) for _ in range(2)]
    assert "lower_s" in runs[0]["timings"]      # the first process lowered the module
    assert runs[1]["timings"] == {}             # the second found it on disk
    assert runs[0]["key"] == runs[1]["key"] and runs[0]["ptx"] == runs[1]["ptx"]


def test_a_colliding_disk_entry_is_not_trusted(tmp_path):
    options = nvdsl.Options(cache_dir=str(tmp_path))
    compiled = make_saxpy(options).compile(*ARGS)
    disk = cache_module.CompileCache(str(tmp_path))
    assert disk.get(compiled.module.key, compiled.trace.mlir) is not None
    assert disk.get(compiled.module.key, compiled.trace.mlir + "// another module") is None


def test_static_shared_arrays_do_not_overlap_the_dynamic_buffer():
    """A static .shared array (memref.global, or nvgpu.mbarrier.create's) beside dynamic shared memory:
    the dynamic buffer must be `.extern .shared`, which the hardware places after all static ones."""
    text = textwrap.dedent('''
        module attributes {gpu.container_module} {
          memref.global "private" @static_buf : memref<64xf32, #gpu.address_space<workgroup>>
          func.func @f(%arg0: memref<64xf32>) {
            %c1 = arith.constant 1 : index
            %c64 = arith.constant 64 : index
            %bytes = arith.constant 256 : i32
            gpu.launch blocks(%a, %b, %c) in (%x = %c1, %y = %c1, %z = %c1)
                       threads(%t, %e, %f) in (%u = %c64, %v = %c1, %w = %c1) dynamic_shared_memory_size %bytes {
              %s = memref.get_global @static_buf : memref<64xf32, #gpu.address_space<workgroup>>
              %d = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
              %c0 = arith.constant 0 : index
              %view = memref.view %d[%c0][] : memref<?xi8, #gpu.address_space<workgroup>>
                                              to memref<64xf32, #gpu.address_space<workgroup>>
              %value = memref.load %arg0[%t] : memref<64xf32>
              memref.store %value, %s[%t] : memref<64xf32, #gpu.address_space<workgroup>>
              memref.store %value, %view[%t] : memref<64xf32, #gpu.address_space<workgroup>>
              gpu.terminator
            }
            return
          }
        }''')
    compiled, _ = compile_module(ir.Module.parse(text, ir.Context()), "f", "key",
                                 nvdsl.Options(assemble_cubin=False))
    assert ".extern .shared .align 1024 .b8 __dynamic_shmem__0[];" in compiled.ptx



def test_cache_key_covers_the_compilers_own_code(monkeypatch):
    options = nvdsl.Options()
    before = cache_module.cache_key("module", options)
    monkeypatch.setattr(cache_module, "_compiler_source_hash", lambda: "a-changed-pipeline")
    assert cache_module.cache_key("module", options) != before


@pytest.mark.parametrize("smem, mbarriers, fits", [
    (240 * 1024, 0, False),                 # dynamic alone
    (232448 - 16, 2, False),                # with the mbarriers' static bytes (and the 1024-byte alignment)
    (232448 - 1024, 2, True),
    (232448, 0, True),
])
def test_shared_memory_beyond_the_targets_limit_is_refused_at_compile_time(smem, mbarriers, fits):
    """Without a GPU: the target's per-block limit (227 KiB on sm_90a), not the driver's refusal at load."""
    @nvdsl.mlir_func
    def big(x):
        @nvdsl.gpu_launch(grid=1, block=32, smem=smem)
        def kernel(ctx):
            if mbarriers:
                nvdsl.Mbarriers(mbarriers)[0].init(1)
            x[ctx.thread_id.x] = 1.0
        kernel()
    if fits:
        assert big.compile(np.zeros(32, np.float32)).module.plan.launches[0].smem == smem
        return
    with pytest.raises(nvdsl.LaunchConfigError) as info:
        big.compile(np.zeros(32, np.float32))
    assert info.value.code == "smem-too-large" and "sm_90a allows at most 232448" in str(info.value)
    assert f"{smem} dynamic" in str(info.value) and info.value.loc.filename == __file__


def test_shared_memory_limits_per_target():
    from nvdsl.target import max_shared_memory, static_shared_memory
    assert max_shared_memory("sm_90a") == max_shared_memory("sm_90") == 232448
    assert max_shared_memory("sm_80") == 166912 and max_shared_memory("sm_99") is None
    ptx = ".shared .align 8 .b8 bars[16];\n.extern .shared .align 1024 .b8 __dynamic_shmem__0[];\n"
    assert static_shared_memory(ptx) == 16


@needs_ptxas
def test_a_dump_dir_is_written_when_the_interpreter_runs_the_call(tmp_path):
    """Without a GPU the interpreter runs calls; asking for dumps still writes the traced and lowered MLIR, the
    PTX and the cubin (the compile needs no GPU), and the call computes as usual."""
    x, y = np.ones(1024, np.float32), np.ones(1024, np.float32)
    make_saxpy(nvdsl.Options(backend="interpret", dump_dir=str(tmp_path)))(x, y, 2.0)
    names = os.listdir(tmp_path)
    for suffix in (".traced.mlir", ".lowered.mlir", ".ptx", ".cubin"):
        assert any(name.endswith(suffix) for name in names), (suffix, names)
    assert (y == 3).all()
