"""Kernels with `T.import_source`, `T.call_extern`, `T.access_ptr` (call kinds `call_extern` and
`access_ptr`, the function attribute `tilecraft.import_source`), `T.dp4a` and `T.alloc_buffer` print as
text that parses back, as written and after every pass of the targets that lower them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import tilecraft.language as T
from tests.cuda.test_extern_codegen import decode_kernel
from tests.ir.test_lowered_roundtrip import assert_round_trip, stages
from tests.language.test_extern import dp4a_kernel
from tilecraft.ir import IRModule
from tilecraft.ir.printer import print_ir


def split_workspace():
    @T.prim_func
    def two(A: T.Tensor((8, 16), "float32"), Out: T.Tensor((8,), "float32")):
        part = T.alloc_buffer([2, 8], "float32")
        with T.Kernel(8, 2, threads=32) as (r, s):
            acc = T.alloc_buffer((1,), "float32", scope="local")
            acc[0] = 0.0
            for k in T.serial(8):
                acc[0] += A[r, s * 8 + k]
            part[s, r] = acc[0]
        with T.Kernel(8, threads=32) as r:
            Out[r] = part[0, r] + part[1, r]

    return two


CASES = {"decode": decode_kernel, "dp4a": lambda: dp4a_kernel(8), "alloc_buffer": split_workspace}


@pytest.mark.parametrize("name", sorted(CASES))
def test_as_written(name):
    func = CASES[name]()
    text = print_ir(IRModule.from_func(func))
    if name == "decode":
        assert "T.func_attr({'tilecraft.import_source'" in text
        assert 'T.call_extern("int32", \'decode_u4_to_f16\', T.access_ptr(q[0], \'r\', 1)' in text
    assert_round_trip(IRModule.from_func(func), name)


@pytest.mark.parametrize("target", ["cuda -arch=sm_80", "cuda -arch=sm_90a", "cpu"])
def test_after_every_pass(target):
    cases = [SimpleNamespace(name=n, build=b) for n, b in CASES.items() if not (target == "cpu" and n == "decode")]
    done = 0
    for kernel, pass_name, mod in stages(target, cases):
        assert_round_trip(mod, f"{target}, {kernel}, after {pass_name}")
        done += 1
    assert done > 20
