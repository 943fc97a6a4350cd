"""LintOptions validation and EB_TORCHPERF_* variables (pure)."""

import pytest

from eb_torchperf.errors import ConfigError
from eb_torchperf.lint.options import (ENV_HETEROGENEOUS, ENV_SITE_GPUS, LintOptions,
                                       capability_key, parse_capabilities)


def test_parse_capabilities_splits_and_strips():
    assert parse_capabilities(" 8.0, 9.0a ,10.0f,", "--site-gpus") == ("8.0", "9.0a", "10.0f")


@pytest.mark.parametrize("bad", ["8", "sm_80", "8.0.1", "9.0b", "eight"])
def test_parse_capabilities_rejects(bad):
    with pytest.raises(ConfigError, match=r"--site-gpus: '%s' is not a CUDA compute capability"
                       % bad.replace(".", r"\.")):
        parse_capabilities(bad, "--site-gpus")


def test_capability_key():
    assert capability_key("9.0a") == (9, 0, "a", False)
    assert capability_key("8.6+PTX") == (8, 6, "", True)
    with pytest.raises(ValueError, match="not a compute capability"):
        capability_key("sm_90")


def test_unknown_arch_is_a_config_error():
    with pytest.raises(ConfigError, match=r"unknown target architecture 'arm64' \(choose from"):
        LintOptions(arch="arm64")


def test_bad_capability_in_options():
    with pytest.raises(ConfigError, match="'9' is not a CUDA compute capability"):
        LintOptions(arch="x86_64", site_gpus=("9",))


@pytest.mark.parametrize("value, expected", [("1", True), ("yes", True), ("TRUE", True),
                                             ("0", False), ("", False), ("no", False)])
def test_heterogeneous_from_env(value, expected):
    env = {ENV_HETEROGENEOUS: value}
    assert LintOptions.from_env(env, arch="x86_64").heterogeneous is expected


def test_env_site_gpus_and_override_precedence():
    env = {ENV_SITE_GPUS: "8.0,9.0", ENV_HETEROGENEOUS: "1"}
    options = LintOptions.from_env(env, arch="aarch64", heterogeneous=False)
    assert options.site_gpus == ("8.0", "9.0")
    assert options.heterogeneous is False
    assert options.arch == "aarch64"
    assert LintOptions.from_env(env, arch="x86_64", site_gpus=("10.0",)).site_gpus == ("10.0",)


def test_none_overrides_keep_defaults():
    options = LintOptions.from_env({}, arch=None, cuda_compute_capabilities=None)
    assert options.cuda_compute_capabilities is None
    assert options.check_dependencies is True
