"""Configurations are checked against the kernel factory before anything compiles."""

from __future__ import annotations

import pytest

import tilecraft
from tilecraft.autotuner import AutoTuner, ConfigError, autotune
from tilecraft.autotuner.configs import check_config_keys, resolve_configs


def factory(block_M=64, block_N=64, num_stages=2):
    raise AssertionError("never elaborated: the configs are rejected first")


def tune(configs):
    return AutoTuner.from_kernel(factory, configs).set_compile_args(target="c").run(workers=0)


def test_a_key_the_factory_does_not_take_is_named_with_a_suggestion():
    with pytest.raises(
        ConfigError, match=r"config 1 .*'block_m' is not a parameter of factory.*did you mean 'block_M'"
    ):
        tune([dict(block_M=32), dict(block_m=64)])


def test_the_error_lists_the_parameters():
    with pytest.raises(ConfigError, match="its parameters: block_M, block_N, num_stages"):
        tune([dict(threads=128)])


@pytest.mark.parametrize(
    ("configs", "words"),
    [
        (dict(block_M=[32, 64]), "list of dicts.*itertools.product"),
        ([], "configs is empty"),
        ([dict(block_M=32), (64,)], "config 1 must be a dict"),
        ([dict(block_M=32, pass_configs=["fast"])], "'pass_configs' must be a dict"),
        (None, "no configs"),
    ],
)
def test_malformed_configs(configs, words):
    with pytest.raises(ConfigError, match=words):
        tune(configs)


def test_pass_configs_is_a_reserved_key():
    check_config_keys([dict(block_M=32, pass_configs={"tilecraft.bounds_check": True})], factory, "factory")


def test_a_factory_with_keyword_arguments_takes_any_key():
    check_config_keys([dict(anything=1)], lambda **kw: None, "lambda")


def test_configs_may_be_a_function_of_the_kernels_arguments():
    assert resolve_configs(lambda M, N: [dict(block_M=M // 4)], (128,), {"N": 1}) == [{"block_M": 32}]


def test_autotune_needs_configs_and_a_jit_function():
    with pytest.raises(ConfigError, match="needs its configurations"):
        autotune(factory)
    with pytest.raises(ConfigError, match="configs=.*is required"):
        autotune()
    with pytest.raises(ConfigError, match="above @tilecraft.jit"):
        autotune(configs=[dict(block_M=32)])(factory)


def test_autotune_checks_keys_when_called():
    @autotune(configs=[dict(block=32, unroll=2)])
    @tilecraft.jit(target="c")
    def kernel(n, block=64):
        raise AssertionError("not elaborated")

    with pytest.raises(ConfigError, match="'unroll' is not a parameter of kernel"):
        kernel(256)
