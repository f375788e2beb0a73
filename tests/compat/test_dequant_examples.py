"""TileLang's dequantize examples under the hook: TVM's `tirx.call_extern` builds tilecraft's extern call,
and (with TL_EXAMPLES=<tilelang>/examples) the three examples' kernels lower for CUDA, their imported
CUDA C decoders included. Running them is benchmarks/gpu_check_dequant.sh's job (a GPU)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import tilecraft
from tilecraft.compat import hook
from tilecraft.ir import expr as E

EXAMPLES = Path(os.environ.get("TL_EXAMPLES", "/nonexistent")) / "dequantize_gemm"


@pytest.fixture
def hooked():
    assert not hook.installed()
    hook.install()
    try:
        yield
    finally:
        hook.uninstall()


def test_tvm_call_extern_is_tilecrafts(hooked):
    scope: dict = {}
    exec("from tvm import tirx\ncall = tirx.call_extern('float32', 'my_fn', tirx.const(2.0, 'float32'))", scope)
    call = scope["call"]
    assert isinstance(call, E.Call) and call.op == "call_extern" and str(call.dtype) == "float32"
    assert call.args[0].value == "my_fn"


def _examples():
    if not EXAMPLES.is_dir():
        pytest.skip("set TL_EXAMPLES=<tilelang>/examples to lower TileLang's dequantize examples")
    sys.path.insert(0, str(EXAMPLES))


def _kernels(name):
    if name == "gemv":
        import example_dequant_gemv_fp16xint4 as ex

        return ex.dequantize_gemv.get_tir(1, 1024, 1024, "float16", "float16", "float16", 4, "int8", "uint", 4, 32,
                                          True, False, True, -1, False)  # fmt: skip
    if name == "fp4":
        import example_dequant_gemm_fp4_hopper as ex

        return ex.matmul.jit_impl.get_tir(256, 256, 256, "float16", "float16", "float32", num_bits=4, block_M=128,
                                          block_N=128, block_K=128, num_stages=2, threads=256, split=2)  # fmt: skip
    import example_dequant_gemm_bf16_mxfp4_hopper as ex

    return ex.matmul.jit_impl.get_tir(256, 256, 256, "bfloat16", "bfloat16", "float32", num_bits=4, scale_size=32,
                                      block_M=256, block_N=128, block_K=128, num_stages=2, threads=256, split=1,
                                      fast_dequant=True, with_bias=False)  # fmt: skip


@pytest.mark.parametrize("name", ["gemv", "fp4", "mxfp4"])
def test_the_examples_lower_for_hopper(hooked, name):
    _examples()
    source = tilecraft.lower(_kernels(name), target="cuda -arch=sm_90a", execution_backend="nvrtc").source("cuda-source")
    if name == "gemv":
        assert "decode_i4u_to_f16((B_quant_local), (B_dequantize_local))" in source
    if name == "mxfp4":
        assert "decode_fp4_to_bf16_twiddling((B_local_thread), (B_dequantize_local_thread), 1)" in source
        assert "Bias_shared" not in source  # allocated but unused without a bias: no shared memory
