"""Hand-made OpenCL artifacts (what the OpenCL codegen produces) and a stand-in for a BackendContext."""

from __future__ import annotations

import hashlib

import tilecraft.opencl  # noqa: F401  (registers the target kind until the built-in list names it)
from tilecraft.backend import Target
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.runtime import CompiledArtifact, KernelInfo, ParamInfo

TARGET = "opencl -platform=0 -device=0"

ADD_SOURCE = """
__kernel void add_kernel(__global const float* A, __global const float* B, __global float* C,
                         float alpha, int n) {
    int i = get_global_id(0);
    if (i < n) C[i] = A[i] + alpha * B[i];
}
"""

SCALARS_SOURCE = """
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void scalars_kernel(__global const float* X, __global double* Y, char a, ushort b, double c,
                             long d, int e, float f, ulong g, int n) {
    int i = get_global_id(0);
    if (i < n) Y[i] = (double)X[i] * c + a + b + d + (e ? 1000.0 : 0.0) + f + (double)g;
}
"""

# Each work-group reverses its block of 128 elements through local memory.
REVERSE_SOURCE = """
__kernel void reverse_kernel(__global const float* A, __global float* B, int n, __local uint4* tc_smem) {
    __local float* tile = (__local float*)tc_smem;
    int t = get_local_id(0);
    int base = get_group_id(0) * 128;
    tile[t] = base + t < n ? A[base + t] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (base + t < n) B[base + t] = tile[127 - t];
}
"""

# Two kernels in order: the second reads what the first wrote (and runs with another work-group size).
TWO_KERNELS_SOURCE = """
__kernel void double_kernel(__global const float* A, __global float* T, int n) {
    int i = get_global_id(0);
    if (i < n) T[i] = 2.0f * A[i];
}
__kernel void inc_kernel(__global const float* T, __global float* C, int n) {
    int i = get_global_id(0);
    if (i < n) C[i] = T[i] + 1.0f;
}
"""

# A 2-D NDRange: grid (ceil(cols / 16), ceil(rows / 8)), work-groups of 16 x 8.
TRANSPOSE_SOURCE = """
__kernel void transpose_kernel(__global const int* A, __global int* B, int rows, int cols) {
    int c = get_global_id(0), r = get_global_id(1);
    if (r < rows && c < cols) B[c * rows + r] = A[r * cols + c];
}
"""


def _digest(*parts) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def artifact(name, params, dims, kernels, source, compile_flags=(), target=TARGET) -> CompiledArtifact:
    return CompiledArtifact(
        name, Target.parse(target), params, dims, kernels, {"opencl-source": source},
        ir_hash=_digest(name, source, compile_flags), extra=(("compile_flags", tuple(compile_flags)),),
    )  # fmt: skip


def ceil_div(n, by: int):
    return E.floordiv(n + (by - 1), by)


def add_artifact(
    source: str = ADD_SOURCE, compile_flags=(), block: int = 128, **kernel_kw
) -> CompiledArtifact:
    """`C = A + alpha * B` over a symbolic length n, grid `(n + 127) // 128`; only C is written."""
    n = E.Var(dt.int32, "n")
    a, b, c = (ParamInfo(name, "buffer", dt.float32, (n,), written=name == "C") for name in "ABC")
    alpha = ParamInfo("alpha", "scalar", dt.float32)
    kernel = KernelInfo("add_kernel", (a, b, c, alpha, ParamInfo("n", "scalar", dt.int32)),
                        (ceil_div(n, block),), (block,), **kernel_kw)  # fmt: skip
    return artifact("add", (a, b, c, alpha), (n,), (kernel,), source, compile_flags)


def scalars_artifact() -> CompiledArtifact:
    """Scalars of many dtypes, passed in an order that differs from the function's."""
    n = E.Var(dt.int32, "n")
    x = ParamInfo("X", "buffer", dt.float32, (n,))
    y = ParamInfo("Y", "buffer", dt.float64, (n,))
    names = {"a": dt.int8, "b": dt.uint16, "c": dt.float64, "d": dt.int64, "e": dt.bool_, "f": dt.float16,
             "g": dt.uint64}  # fmt: skip
    scalars = {k: ParamInfo(k, "scalar", v) for k, v in names.items()}
    order = [scalars[k] for k in "gfedcba"]  # the function's order; the kernel takes a..g
    kernel_params = (x, y, *(scalars[k] for k in "abcdefg"), ParamInfo("n", "scalar", dt.int32))
    kernel = KernelInfo("scalars_kernel", kernel_params, (ceil_div(n, 64),), (64,))
    return artifact("scalars", (x, *order, y), (n,), (kernel,), SCALARS_SOURCE)


def reverse_artifact(dynamic_smem: int = 128 * 4, block: int = 128) -> CompiledArtifact:
    n = E.Var(dt.int32, "n")
    a, b = (ParamInfo(name, "buffer", dt.float32, (n,)) for name in "AB")
    kernel = KernelInfo("reverse_kernel", (a, b, ParamInfo("n", "scalar", dt.int32)), (ceil_div(n, 128),),
                        (block,), dynamic_smem=dynamic_smem)  # fmt: skip
    return artifact("reverse", (a, b), (n,), (kernel,), REVERSE_SOURCE)


def two_kernels_artifact() -> CompiledArtifact:
    n = E.Var(dt.int32, "n")
    a, t, c = (ParamInfo(name, "buffer", dt.float32, (n,)) for name in ("A", "T", "C"))
    count = ParamInfo("n", "scalar", dt.int32)
    first = KernelInfo("double_kernel", (a, t, count), (ceil_div(n, 128),), (128,))
    second = KernelInfo("inc_kernel", (t, c, count), (ceil_div(n, 64),), (64,))
    return artifact("two", (a, t, c), (n,), (first, second), TWO_KERNELS_SOURCE)


def transpose_artifact() -> CompiledArtifact:
    rows, cols = E.Var(dt.int32, "rows"), E.Var(dt.int32, "cols")
    a = ParamInfo("A", "buffer", dt.int32, (rows, cols))
    b = ParamInfo("B", "buffer", dt.int32, (cols, rows))
    scalars = (ParamInfo("rows", "scalar", dt.int32), ParamInfo("cols", "scalar", dt.int32))
    kernel = KernelInfo(
        "transpose_kernel", (a, b, *scalars), (ceil_div(cols, 16), ceil_div(rows, 8)), (16, 8)
    )
    return artifact("transpose", (a, b), (rows, cols), (kernel,), TRANSPOSE_SOURCE)


IOTA_SOURCE = """
__kernel void iota_kernel(__global long* C, int count, long start) {
    int i = get_global_id(0);
    if (i < count) C[i] = start + i;
}
"""


def iota_artifact(target: str = TARGET) -> CompiledArtifact:
    """`C[i] = start + i` for the first `count` elements: the grid follows a scalar parameter, not a dim."""
    n = E.Var(dt.int32, "n")
    c = ParamInfo("C", "buffer", dt.int64, (n,))
    count, start = ParamInfo("count", "scalar", dt.int32), ParamInfo("start", "scalar", dt.int64)
    kernel = KernelInfo("iota_kernel", (c, count, start), (ceil_div(E.Var(dt.int32, "count"), 64),), (64,))
    return artifact("iota", (c, count, start), (n,), (kernel,), IOTA_SOURCE, target=target)


class FakeContext:
    """The parts of a BackendContext that `build` and `Kernel` read."""

    target_host = None

    def __init__(self, backend=None) -> None:
        self.backend_object = backend

    def execution_backend(self):
        return self.backend_object
