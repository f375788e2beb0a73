"""mark-assumed-alignment (CUDA), Before/Expected: the pass config tilecraft.cuda.assume_aligned reaches
codegen as a device-function attribute, so it is part of the artifact's cache key and of nothing global."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tests.transform.helpers import SM80
from tilecraft.errors import LoweringError
from tilecraft.testing.passes import assert_pass, pass_test


@T.prim_func
def host(A: T.Tensor((64,), "float32")):
    T.func_attr({"tilecraft.role": "host"})
    A[0] = 1.0


@T.prim_func
def device(A: T.Tensor((64,), "float32")):
    T.func_attr({"tilecraft.role": "device", "tilecraft.host_function": "host"})
    with T.Kernel(1, threads=64):
        tx = T.get_thread_binding(0)
        A[tx] = 1.0


def _marked(assume: bool):
    @T.prim_func
    def device(A: T.Tensor((64,), "float32")):
        T.func_attr(
            {
                "tilecraft.role": "device",
                "tilecraft.host_function": "host",
                "tilecraft.cuda.assume_aligned": assume,
            }
        )
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding(0)
            A[tx] = 1.0

    return device


@pytest.mark.parametrize("assume", [True, False])
@pass_test("mark-assumed-alignment", SM80)
def test_device_functions_carry_the_setting(target, assume):
    """Device functions (only they) carry the config's value; True when it is not given."""
    configs = None if assume else {"tilecraft.cuda.assume_aligned": False}
    expected = T.parse_script(f"{host.script()}\n\n{_marked(assume).script()}")
    given = T.parse_script(f"{host.script()}\n\n{device.script()}")
    assert_pass(target, "mark-assumed-alignment", given, expected, pass_configs=configs)


@pass_test("mark-assumed-alignment", SM80)
def test_a_value_that_is_not_a_bool_is_refused(target):
    """`assume_aligned=1` is an error naming the config, not a silent truthy value."""
    with pytest.raises(LoweringError, match="must be True or False"):
        assert_pass(
            target,
            "mark-assumed-alignment",
            device,
            device,
            pass_configs={"tilecraft.cuda.assume_aligned": 1},
        )
