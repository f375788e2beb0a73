"""A kernel's names may be anything Python allows: parameters, buffers, loop variables and dynamic dims
named after C macros (INFINITY, NAN, NULL, EOF), types (int32_t, size_t), library objects and functions
(errno, stdin, printf, memcpy, exp, min, max, abs), or the built-ins of a target language (OpenCL's
`half` and `select`, CUDA's `threadIdx`, MSL's `device`, WGSL's `vec4f`) compile and compute the right
result on every target, and errors still show the kernel's own names (codegen/reserved.py)."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft.language as T
from tilecraft import settings

# Each name takes each role once across the kernels (ROLES in turn, shifted by one per kernel).
NAMES = (
    "INFINITY", "NAN", "NULL", "EOF", "int32_t", "errno", "stdin", "printf", "min", "max", "abs", "exp",
    "sqrt", "memcpy", "size_t", "free", "main", "linux", "M_PI", "INT32_MAX", "FLT_MAX", "EDOM", "TC_INLINE",
    "tc_smem", "float4", "half", "select", "clamp", "fma", "kernel", "local", "uint", "get_global_id",
    "threadIdx", "blockIdx", "make_float2", "atomicAdd", "device", "threadgroup", "simd_sum", "metal",
    "vec4f", "textureLoad", "var", "loop", "std", "asm", "stream", "entry", "unix",
)  # fmt: skip
ROLES = ("dim", "src", "dst", "top", "scale", "i", "shared", "fragment", "row")
BLOCK = 64
N = 3 * BLOCK + 17  # ragged: the last block is partial

TEMPLATE = """
import tilecraft.language as T

{dim} = T.dynamic("{dim}")


@T.prim_func
def names_{index}({src}: T.Tensor(({dim},), "float32"), {dst}: T.Tensor(({dim},), "float32"),
                  {top}: T.Tensor((T.ceildiv({dim}, {block}),), "float32"), {scale}: T.float32):
    with T.Kernel(T.ceildiv({dim}, {block}), threads={block}) as bx:
        {shared} = T.alloc_shared(({block},), "float32")
        {fragment} = T.alloc_fragment(({block},), "float32")
        {row} = T.alloc_fragment((1,), "float32")
        for {i} in T.Parallel({block}):
            {shared}[{i}] = T.if_then_else(bx * {block} + {i} < {dim}, {src}[bx * {block} + {i}], 0.0)
        for {i} in T.Parallel({block}):
            {fragment}[{i}] = T.max(T.exp({shared}[{i}]) * {scale}, T.sqrt(T.abs({shared}[{i}])))
        T.reduce_max({fragment}, {row}, dim=0)
        for {i} in T.Parallel({block}):
            if bx * {block} + {i} < {dim}:
                {dst}[bx * {block} + {i}] = {fragment}[{i}]
        {top}[bx] = {row}[0]
"""


@pytest.fixture(autouse=True)
def uncached():
    """Every kernel here has one structure and differs only in its names, which the cache key leaves
    out: each must be generated, not found in the cache."""
    with settings.override(TILECRAFT_DISABLE_CACHE=True):
        yield


def roles(index: int) -> dict[str, str]:
    return {role: NAMES[(index + k) % len(NAMES)] for k, role in enumerate(ROLES)}


def kernel_source(index: int) -> str:
    return TEMPLATE.format(index=index, block=BLOCK, **roles(index))


def build(index: int):
    return T.parse_script(kernel_source(index))


def reference(x: np.ndarray, scale: float) -> tuple[np.ndarray, np.ndarray]:
    y = np.maximum(np.exp(x.astype(np.float64)) * scale, np.sqrt(np.abs(x.astype(np.float64))))
    padded = np.full(-(-x.size // BLOCK) * BLOCK, scale)  # past the end: max(exp(0) * scale, sqrt(0))
    padded[: x.size] = y
    return y, padded.reshape(-1, BLOCK).max(axis=1)


@pytest.mark.parametrize("index", range(len(NAMES)), ids=lambda i: "-".join(roles(i).values())[:60])
def test_names_the_languages_reserve_compile_and_compute(backend_ctx, index):
    from tests.conformance.test_conformance import compile_or_skip

    kernel = compile_or_skip(build(index), backend_ctx)
    backend = backend_ctx.execution_backend()
    x = np.random.default_rng(index).standard_normal(N).astype(np.float32)
    out = [backend.to_device(np.full(size, np.nan, np.float32)) for size in (N, -(-N // BLOCK))]
    kernel(backend.to_device(x), *out, 0.75)
    expected_y, expected_top = reference(x, 0.75)
    np.testing.assert_allclose(backend.to_host(out[0]), expected_y, rtol=2e-5, atol=1e-6)
    np.testing.assert_allclose(backend.to_host(out[1]), expected_top, rtol=2e-5, atol=1e-6)


def test_argument_errors_name_the_parameter_as_written(backend_ctx):
    from tests.conformance.test_conformance import compile_or_skip
    from tilecraft.errors import ArgumentError

    kernel = compile_or_skip(build(0), backend_ctx)
    names = roles(0)
    backend = backend_ctx.execution_backend()
    x = backend.to_device(np.zeros(N, np.float64))
    out = [backend.to_device(np.zeros(size, np.float32)) for size in (N, -(-N // BLOCK))]
    with pytest.raises(ArgumentError, match=f"parameter '{names['src']}'"):
        kernel(x, *out, 0.75)


def test_ordinary_names_are_printed_as_written():
    """Only names a language reserves are changed: generated code keeps the kernel's ordinary names."""
    from tilecraft.codegen.reserved import C_RESERVED
    from tilecraft.cuda.printer import CUDA_RESERVED
    from tilecraft.hip.printer import HIP_RESERVED
    from tilecraft.metal.printer import METAL_RESERVED
    from tilecraft.opencl.printer import OPENCL_RESERVED
    from tilecraft.webgpu.printer import WGSL_RESERVED

    ordinary = ("A", "B", "C", "Q", "K", "V", "X", "M", "N", "BLOCK", "A_shared", "C_local", "tile_t", "acc",
                "i", "j", "bx", "gamma", "beta", "index", "scores_max", "row", "x_1", "_")  # fmt: skip
    tables = (C_RESERVED, CUDA_RESERVED, HIP_RESERVED, METAL_RESERVED, OPENCL_RESERVED, WGSL_RESERVED)
    assert [(name, table) for table in tables for name in ordinary if name in table and name != "_"] == []
    for name in ("INFINITY", "NULL", "errno", "printf", "abs", "int32_t", "M_PI", "INT32_MAX", "EDOM"):
        assert all(name in table for table in tables[:5]), name
    assert all("min" in table and "max" in table for table in tables[1:])  # C itself has neither
