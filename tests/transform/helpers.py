"""Lowering helpers shared by the pass tests: generated source per target, nvcc, runs on a context."""

from __future__ import annotations

import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ToolchainError

# Every capability given, so nothing asks a device.
OPENCL = "opencl -fp16=false -fp64=true -int64_atomics=true -local_mem=65536 -max_work_group_size=1024"
CUDA = "cuda -arch=sm_90a"
# Without subgroups the SIMT layouts name groups of 32 invocations, as on OpenCL, so the same expected IR holds.
WEBGPU = ("webgpu -f16=true -f64=true -int64=true -float32_atomics=true -subgroups=false -max_workgroup_size=1024 "
          "-workgroup_memory=65536 -max_workgroups=65535 -max_storage_buffers=32 -max_binding_size=134217728 "
          "-max_loop_iterations=65535")



# 128 threads and 512 bytes of shared memory: what every target's support check passes, and a small limit refuses.
@T.prim_func
def staged(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=128):
        s = T.alloc_shared((128,), "float32")
        T.copy(A, s)
        T.copy(s, B)


def cuda_source(func) -> str:
    return tilecraft.lower(func, target=CUDA, execution_backend="nvrtc").source("cuda-source")


def opencl_source(func) -> str:
    return tilecraft.lower(func, target=OPENCL, execution_backend="opencl").source("opencl-source")


def c_source(func) -> str:
    return tilecraft.lower(func, target="c").source("c-source")


def assert_nvcc_compiles(func, tmp_path) -> str:
    """The generated CUDA of `func` compiles for sm_90a; returns the source."""
    from tilecraft.execution.nvcc.toolchain import compile_cubin

    source = cuda_source(func)
    try:
        cubin = compile_cubin(source, "sm_90a", keep_dir=tmp_path)
    except ToolchainError as err:
        pytest.fail(f"nvcc rejected the generated source:\n{err}")
    assert cubin[:4] == b"\x7fELF"
    return source


def run(func, ctx, *arrays) -> None:
    """Compile `func` for `ctx` and run it on host arrays, copying every array back in place."""
    backend = ctx.execution_backend()
    device = [backend.to_device(a) for a in arrays]
    tilecraft.compile(func, ctx=ctx)(*device)
    for a, d in zip(arrays, device):
        a[...] = backend.to_host(d)


SM80 = "cuda -arch=sm_80"
