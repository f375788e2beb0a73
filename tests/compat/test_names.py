"""TileLang's small public names exist under the same paths and behave as TileLang's."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.layout.bank_model import bank_conflicts, ldmatrix_access, row_major
from tilecraft.errors import BackendError, KernelError, TilecraftError
from tilecraft.ir import IRModule, PrimFunc
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.dtype import as_dtype
from tilecraft.ir.expr import const
from tilecraft.ir.structural import structural_equal

# ------------------------------------------------------------------ tilecraft.JITKernel


def test_jitkernel_compiles_a_function_as_tilelangs_constructor_does():
    """`JITKernel(program, out_idx=..., target=...)` compiles (TileLang's gemv_simt test builds its kernel
    so), and every compiled kernel is a JITKernel."""

    @T.prim_func
    def scale(A: T.Tensor((37,), "float32"), B: T.Tensor((37,), "float32")):
        with T.Kernel(T.ceildiv(37, 16), threads=16) as bx:
            for i in T.Parallel(16):
                if bx * 16 + i < 37:
                    B[bx * 16 + i] = A[bx * 16 + i] * 3.0

    kernel = tilecraft.JITKernel(scale, out_idx=[1], target="c", verbose=True)
    a = np.random.default_rng(3).standard_normal(37).astype(np.float32)
    np.testing.assert_allclose(kernel(a), a.astype(np.float64) * 3.0, rtol=1e-6)
    assert isinstance(kernel, tilecraft.JITKernel) and isinstance(tilecraft.compile(scale, target="c"),
                                                                  tilecraft.JITKernel)  # fmt: skip
    assert issubclass(tilecraft.Kernel, tilecraft.JITKernel) and not isinstance(a, tilecraft.JITKernel)
    assert kernel.run_once().shape == (37,)  # on inputs the default profiler makes (TileLang's alias test)


# ------------------------------------------------------------------ tilecraft.math


def test_cdiv_and_next_power_of_2_at_both_paths():
    import tilecraft.math

    assert tilecraft.cdiv is tilecraft.math.cdiv
    assert tilecraft.next_power_of_2 is tilecraft.math.next_power_of_2
    assert [tilecraft.cdiv(n, 4) for n in (1, 4, 5, 8, 9)] == [1, 1, 2, 2, 3]
    assert [tilecraft.next_power_of_2(n) for n in (1, 2, 3, 5, 64, 65)] == [1, 2, 4, 8, 64, 128]


@pytest.mark.parametrize(
    "call, error, words",
    [
        (lambda: tilecraft.cdiv(10, 0), ValueError, "divisor b must be positive"),
        (lambda: tilecraft.cdiv(10.0, 3), TypeError, "a must be an int"),
        (lambda: tilecraft.next_power_of_2(0), ValueError, "x must be >= 1"),
        (lambda: tilecraft.next_power_of_2(2.5), TypeError, "x must be an int"),
    ],
)
def test_math_rejects_bad_input_by_name(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_cdiv_of_a_dynamic_dim_in_a_kernel():
    n = T.dynamic("n")

    @T.prim_func
    def fill(A: T.Tensor((n,), "float32")):
        with T.Kernel(tilecraft.cdiv(n, 32), threads=32) as bx:
            for i in T.Parallel(32):
                if bx * 32 + i < n:
                    A[bx * 32 + i] = 1.0

    a = np.zeros(70, np.float32)
    tilecraft.compile(fill, target="c")(a)
    assert (a == 1).all()


# ------------------------------------------------------------------ T.clamp


def test_clamp_limits_values_to_the_range():
    @T.prim_func
    def clamped(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                B[i] = T.clamp(A[i], -0.5, 0.5)

    a = np.random.default_rng(0).uniform(-2, 2, 64).astype(np.float32)
    b = np.empty_like(a)
    tilecraft.compile(clamped, target="c")(a, b)
    np.testing.assert_array_equal(b, np.clip(a, -0.5, 0.5))
    assert T.clamp(7, 0, 5) == 5 and T.clamp(-1, 0, 5) == 0


def test_clamp_takes_tilelangs_keyword_names():
    """`T.clamp(x, min_val=..., max_val=...)`, as test_tilelang_language_clamp.py writes it."""

    @T.prim_func
    def clamped(A: T.Tensor((96,), "float32"), B: T.Tensor((96,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(96):
                B[i] = T.clamp(A[i] * 2.0, min_val=-1.25, max_val=0.75)

    a = np.random.default_rng(3).uniform(-2, 2, 96).astype(np.float32)
    b = np.empty_like(a)
    tilecraft.compile(clamped, target="c")(a, b)
    np.testing.assert_allclose(b, np.clip(a.astype(np.float64) * 2.0, -1.25, 0.75), rtol=1e-7)


def test_clamp_with_bounds_the_wrong_way_round_is_an_error():
    with pytest.raises(KernelError, match="lower bound 3 is above the upper bound 1"):

        @T.prim_func
        def bad(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=4):
                for i in T.Parallel(4):
                    A[i] = T.clamp(A[i], 3, 1)


# ------------------------------------------------------------------ T.thread_binding


def bound_kernel():
    @T.prim_func
    def bound(A: T.Tensor((4, 64), "float32")):
        with T.Kernel(4, threads=(32, 2)) as bx:
            tx = T.thread_binding(0, 32, thread="threadIdx.x")
            ty = T.thread_binding(2, "threadIdx.y")
            A[bx, ty * 32 + tx] = 1.0

    return bound


def test_thread_binding_is_the_kernels_thread_index():
    @T.prim_func
    def bound(A: T.Tensor((4, 64), "float32")):
        with T.Kernel(4, threads=(32, 2)) as bx:
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            A[bx, ty * 32 + tx] = 1.0

    assert structural_equal(bound_kernel(), bound)


def test_thread_binding_runs_on_a_thread_target():
    from tilecraft.backend.context import create_backend_context

    @T.prim_func
    def rows(A: T.Tensor((4, 64), "float32")):
        with T.Kernel(4, threads=64) as bx:
            tx = T.thread_binding(0, 64, thread="threadIdx.x")
            A[bx, tx] = T.Cast("float32", bx * 64 + tx)

    try:
        create_backend_context("opencl")
    except TilecraftError as err:
        pytest.skip(f"no OpenCL device: {err}")
    a = np.zeros((4, 64), np.float32)
    tilecraft.compile(rows, target="opencl")(a)
    np.testing.assert_array_equal(a, np.arange(256, dtype=np.float32).reshape(4, 64))


@pytest.mark.parametrize(
    "binding, words",
    [
        (
            "T.thread_binding(0, 64, thread='threadIdx.x')",
            "does not match the kernel's 32 threads along threadIdx.x",
        ),
        ("T.thread_binding(0, 32, thread='threadIdx.z')", "the kernel has 2 thread dim(s)"),
        ("T.thread_binding(0, 32, thread='blockIdx.x')", "thread must be one of threadIdx.x"),
    ],
)
def test_thread_binding_mismatches_are_errors(binding, words, tmp_path):
    source = f"""
import tilecraft.language as T

@T.prim_func
def bad(A: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=(32, 2)):
        t = {binding}
        A[t] = 1.0
"""
    path = tmp_path / "bad_binding.py"
    path.write_text(source)
    with pytest.raises(KernelError) as info:
        exec(compile(source, str(path), "exec"), {})
    assert words in str(info.value) and "bad_binding.py" in str(info.value)


# ------------------------------------------------------------------ fp8, simplify_prim_func, dtype


def test_determine_fp8_type():
    from tilecraft.language.fp8 import determine_fp8_type

    assert determine_fp8_type() is T.float8_e4m3fn and determine_fp8_type("e5m2") is T.float8_e5m2
    with pytest.raises(ValueError, match="fp8_format must be one of"):
        determine_fp8_type("e3m4")


def test_simplify_prim_func_simplifies_the_returned_kernel():
    from tilecraft.transform import simplify_prim_func

    @simplify_prim_func
    def factory(n):
        @T.prim_func
        def k(A: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32):
                for i in T.serial(n):
                    A[i * 1 + 0] = 1.0

        return k

    func = factory(8)
    assert isinstance(func, PrimFunc) and factory.__name__ == "factory"
    assert "i * 1" not in func.script() and "A[i] = " in func.script()
    with pytest.raises(TypeError, match="it must return a @T.prim_func"):
        simplify_prim_func(lambda: 3)()


def test_apply_simplify_simplifies_a_kernel_that_still_computes():
    """TileLang's `apply_simplify(main)` (test_tilelang_kernel_gemv_simt.py returns its kernel so)."""
    from tilecraft.transform.simplify import apply_simplify

    n = 48

    @T.prim_func
    def k(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.serial(n):
                B[i * 1 + 0] = A[(i + 0) * 1] * 2.0 - 1.0

    func = apply_simplify(k)
    assert isinstance(func, PrimFunc) and "i * 1" not in func.script()
    assert isinstance(apply_simplify(IRModule.from_func(k)), IRModule)
    a = np.random.default_rng(2).uniform(-1, 1, n).astype(np.float32)
    b = np.empty_like(a)
    tilecraft.compile(func, target="c")(a, b)
    np.testing.assert_allclose(b, a.astype(np.float64) * 2.0 - 1.0, rtol=1e-6)
    with pytest.raises(TypeError, match="takes a @T.prim_func or an IRModule"):
        apply_simplify(3)


# ------------------------------------------------------------------ swizzled layouts


def tiles(shape=(64, 64), dtype="float16") -> dict[str, Buffer]:
    dims = tuple(const(n) for n in shape)
    return {
        "S": Buffer("S", dims, as_dtype(dtype), "shared"),
        "F": Buffer("F", dims, as_dtype(dtype), "local.fragment"),
    }


@pytest.mark.parametrize(
    "make, swizzle",
    [("make_swizzled_layout", 128), ("make_full_bank_swizzled_layout", 128),
     ("make_half_bank_swizzled_layout", 64), ("make_quarter_bank_swizzled_layout", 32)],
)  # fmt: skip
def test_swizzled_layouts_are_permutations_of_the_tile(make, swizzle):
    layout = getattr(tilecraft.layout, make)(tiles()["S"])
    assert layout.swizzle_bytes == swizzle
    linear = layout.linear()
    assert linear.is_bijective()
    offsets = {linear.apply(row=r, col=c)["offset"] for r in range(64) for c in range(64)}
    assert offsets == set(range(64 * 64))


def test_the_full_swizzle_removes_ldmatrix_conflicts():
    layout = tilecraft.layout.make_swizzled_layout(tiles()["S"]).linear()
    access = ldmatrix_access(0, 0)
    assert bank_conflicts(row_major(64, 64), access) > 0
    assert bank_conflicts(layout, access) == 0


def test_narrow_rows_get_the_swizzle_that_fits():
    assert tilecraft.layout.make_swizzled_layout(tiles((64, 16))["S"]).swizzle_bytes == 32
    assert tilecraft.layout.make_swizzled_layout(tiles((64, 8))["S"]).swizzle_bytes == 0


def test_swizzling_a_fragment_is_an_error():
    with pytest.raises(ValueError, match="only shared buffers are swizzled"):
        tilecraft.layout.make_swizzled_layout(tiles()["F"])


def swizzle_annotated():
    @T.prim_func
    def copy_through_shared(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 64), "float16")
            T.annotate_layout({S: tilecraft.layout.make_swizzled_layout(S)})
            T.copy(A, S)
            T.copy(S, B)

    return copy_through_shared


@pytest.mark.parametrize("target", ["c", "cuda -arch=sm_80", "opencl -fp16"])
def test_a_swizzle_annotation_is_harmless_on_every_target(target):
    artifact = tilecraft.lower(swizzle_annotated(), target)
    assert artifact.device_sources


def test_a_swizzle_annotated_kernel_runs():
    a = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float16)
    b = np.empty_like(a)
    tilecraft.compile(swizzle_annotated(), target="c")(a, b)
    np.testing.assert_array_equal(a, b)


# ------------------------------------------------------------------ SM count


def test_num_sms_on_the_cpu_is_the_usable_cores():
    from tilecraft.carver.arch import driver

    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert driver.get_num_sms(target="c") == expected


def test_num_sms_of_a_gpu_target_is_its_sm_count():
    from tilecraft.carver.arch import driver

    assert driver.get_num_sms(target="cuda -arch=sm_80 -sm_count=108") == 108
    with pytest.raises(TilecraftError, match="does not know its SM count: add -sm_count=N"):
        driver.get_num_sms(target="cuda -arch=sm_80")


def test_num_sms_errors_name_the_fix():
    from tilecraft.carver.arch import driver

    with pytest.raises(BackendError, match="is device 0; name the device in the target"):
        driver.get_num_sms(1, target="c")
    with pytest.raises(BackendError, match="does not say how many processors"):
        driver.get_num_sms(target="opencl -fp16")


# ------------------------------------------------------------------ JIT: get_tir / get_kernel_source


@tilecraft.jit(out_idx=[1], target="c")
def lazy_scale(n, factor=2.0):
    @T.prim_func
    def scale(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(n):
                B[i] = A[i] * factor

    return scale


@tilecraft.jit(target="c")
def eager_scale(A, B, factor: float = 2.0):
    n = T.const("n")
    A: T.Tensor((n,), "float32")
    B: T.Tensor((n,), "float32")
    with T.Kernel(1, threads=32):
        for i in T.Parallel(n):
            B[i] = A[i] * factor


def test_get_tir_and_get_kernel_source_of_a_lazy_factory():
    func = lazy_scale.get_tir(16)
    assert isinstance(func, PrimFunc) and func.params[0].shape[0].value == 16
    source = lazy_scale.get_kernel_source(16)
    assert source == lazy_scale(16).get_kernel_source() and "scale" in source


def test_get_tir_and_get_kernel_source_of_an_eager_kernel():
    func = eager_scale.get_tir(factor=3.0)
    assert isinstance(func, PrimFunc) and [p.name for p in func.params][:2] == ["A", "B"]
    assert "3.0" in func.script()
    source = eager_scale.get_kernel_source(n=16, factor=3.0)
    assert source == eager_scale.compile(n=16, factor=3.0).get_kernel_source()
    with pytest.raises(TilecraftError, match="no parameter"):
        eager_scale.get_tir(nope=1)


def test_get_tir_of_an_eager_kernel_binds_compile_time_symbols_given_by_keyword():
    """analyze/example_conv_analyze passes its T.const sizes to get_tir, as TileLang substitutes them."""
    func = eager_scale.get_tir(n=16, factor=3.0)
    assert func.params[0].shape[0].value == 16 and not func.attr("tilecraft.consts")
    with pytest.raises(TilecraftError, match="no parameter or compile-time symbol m"):
        eager_scale.get_tir(m=16)
    with pytest.raises(TilecraftError, match="takes an int"):
        eager_scale.get_tir(n=1.5)


def test_get_kernel_source_of_an_eager_kernel_takes_the_call_arguments():
    """deepseek_mhc's mhc_post passes the call's arrays and ints positionally; the ints are Python values."""
    a, b = np.ones(16, np.float32), np.zeros(16, np.float32)
    source = eager_scale.get_kernel_source(a, b, 3.0)
    assert source == eager_scale.compile(n=16, factor=3.0).get_kernel_source()
    assert eager_scale.get_kernel_source(a, B=b, factor=3.0) == source
