"""Options: one frozen object; the environment is read in one place, strictly; arguments win."""

import dataclasses

import pytest

import nvdsl
from nvdsl.options import from_env, resolve


def test_options_are_frozen_and_validated():
    options = nvdsl.Options()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.chip = "sm_80"
    for bad in ({"chip": "hopper"}, {"features": "ptx80"}, {"opt_level": 5}, {"device": -1}):
        with pytest.raises(nvdsl.UserError):
            nvdsl.Options(**bad)


def test_a_chip_the_ptx_version_predates_is_refused_before_llvm_aborts_the_process():
    """LLVM's NVPTX back end aborts the whole process ("LLVM ERROR: PTX version 8.0 does not support target
    'sm_100a'") on such a pair, and mis-selects instructions for a chip it does not know: refused up front."""
    with pytest.raises(nvdsl.UserError, match=r"PTX ISA 8.0, older than chip='sm_100a', which PTX ISA 8.6") as info:
        nvdsl.Options(chip="sm_100a")
    assert info.value.code == "bad-option" and "+ptx86" in info.value.hint
    with pytest.raises(nvdsl.UserError, match="PTX ISA 8.0"):
        nvdsl.Options(features="+ptx70")                         # sm_90a, the default chip
    with pytest.raises(nvdsl.UserError, match="'sm_99' is not an architecture") as info:
        nvdsl.Options(chip="sm_99")
    assert "sm_90a" in info.value.hint
    assert nvdsl.Options(chip="sm_100a", features="+ptx86").chip == "sm_100a"
    assert nvdsl.Options(chip="sm_80", features="+ptx70").chip == "sm_80"


def test_environment_is_parsed_strictly():
    options = from_env({"NVDSL_OPT_LEVEL": "2", "NVDSL_DISK_CACHE": "0", "NVDSL_DUMP_DIR": "/tmp/d"})
    assert (options.opt_level, options.disk_cache, options.dump_dir) == (2, False, "/tmp/d")
    with pytest.raises(nvdsl.UserError) as info:
        from_env({"NVDSL_OPT_LEVEL": "fast"})
    assert "NVDSL_OPT_LEVEL" in str(info.value)
    with pytest.raises(nvdsl.UserError):
        from_env({"NVDSL_DISK_CACHE": "maybe"})


def test_explicit_options_override_the_environment(monkeypatch):
    monkeypatch.setenv("NVDSL_OPT_LEVEL", "1")
    monkeypatch.setenv("NVDSL_DUMP_DIR", "/tmp/from-env")
    options = resolve(nvdsl.Options(opt_level=2))
    assert options.opt_level == 2 and options.dump_dir == "/tmp/from-env"
    assert resolve(None).opt_level == 1


def test_an_unknown_nvdsl_variable_is_an_error_that_suggests_the_name():
    with pytest.raises(nvdsl.UserError) as info:
        from_env({"NVDSL_DEBGU": "1"})
    assert info.value.code == "bad-env" and "NVDSL_DEBGU" in str(info.value)
    assert "did you mean NVDSL_DEBUG?" in info.value.hint


@pytest.mark.parametrize("variable, value, words", [
    ("NVDSL_OPT_LEVEL", "7", "must be 0, 1, 2 or 3"),
    ("NVDSL_CHIP", "hopper", "not an NVIDIA architecture name"),
    ("NVDSL_PTX_FEATURES", "ptx80", "not a PTX feature string"),
    ("NVDSL_DEVICE", "-1", "device ordinal >= 0"),
    ("NVDSL_PTXAS", "/no/such/ptxas", "not an executable file"),
    ("NVDSL_SEED", "abc", "not an integer"),
    ("NVDSL_DEBUG", "maybe", "not a boolean"),
])
def test_out_of_range_environment_values_name_the_variable(variable, value, words):
    with pytest.raises(nvdsl.UserError) as info:
        from_env({variable: value})
    assert info.value.code == "bad-env" and info.value.hint
    assert f"{variable}={value!r}" in str(info.value) and words in str(info.value)


@pytest.mark.parametrize("variable", ["NVDSL_DUMP_DIR", "NVDSL_CACHE_DIR"])
def test_directories_that_are_files_are_refused(variable, tmp_path):
    path = tmp_path / "a-file"
    path.write_text("")
    with pytest.raises(nvdsl.UserError) as info:
        from_env({variable: str(path)})
    assert info.value.code == "bad-env" and variable in str(info.value) and "is a file" in str(info.value)
    with pytest.raises(nvdsl.UserError):
        nvdsl.Options(dump_dir=str(path))


def test_a_bad_environment_reaches_the_call_as_an_error(monkeypatch):
    import numpy as np

    @nvdsl.mlir_func
    def host(x):
        pass
    monkeypatch.setenv("NVDSL_OPT_LEVELL", "2")
    with pytest.raises(nvdsl.UserError) as info:
        host.trace(np.zeros(4, np.float32))
    assert "NVDSL_OPT_LEVELL" in str(info.value) and "NVDSL_OPT_LEVEL?" in info.value.hint
