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
