"""The OpenCL target end to end: features the conformance kernels do not reach (16-bit and 64-bit
atomics, T.print, thread indices, T.Pipelined, float64), and the errors for what a device cannot do.
Source checks need no device; runs skip without one."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import LoweringError
from tilecraft.testing.conformance import kernels as K
from tilecraft.testing.filecheck import filecheck

# A fully described device: lowering never has to ask one.
FULL = "opencl -fp16=false -fp64=true -int64_atomics=true -local_mem=65536 -max_work_group_size=1024"


def lower_source(func, target: str = FULL) -> str:
    artifact = tilecraft.lower(func, target=target, execution_backend="opencl")
    return artifact.device_sources["opencl-source"]


def atomic_histogram(dtype: str, n: int = 1000, bins: int = 16):
    @T.prim_func
    def histogram(X: T.Tensor((n,), "int32"), W: T.Tensor((n,), dtype), H: T.Tensor((bins,), dtype)):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    T.atomic_add(H[X[bx * 128 + i]], W[bx * 128 + i])

    return histogram


def test_source_is_opencl_c_with_work_group_builtins():
    source = lower_source(K.transpose(256, 128, 32))
    kernel = source[source.index("__kernel") :]
    assert "__attribute__((reqd_work_group_size(128, 1, 1)))" in kernel
    assert "get_group_id(0)" in kernel and "get_local_id(0)" in kernel
    assert "__local uint4* tc_smem" in kernel and "barrier(CLK_LOCAL_MEM_FENCE" in kernel
    assert "__global const float* restrict A" in kernel and "__global float* restrict B" in kernel


def test_reductions_go_through_local_memory_without_shuffles():
    """Each butterfly step of the row max stores the partials, meets at a barrier, then reads the
    partner's (tx ^ 1, 2, 4, 8, 16); the row sum's scratch reuses the same bytes only after a barrier
    that follows the last read of the max's. Rows of 256 over runs of 8 a work-item: 32 work-items a row."""
    source = lower_source(K.softmax(256, 256, 16, "float16"))
    steps = "\n".join(
        f"CHECK: red_smem1[(int32_t)tx] = red0;\n"
        f"CHECK: barrier(CLK_LOCAL_MEM_FENCE\n"
        f"CHECK-NEXT: red0 = tc_max_f32(red0, red_smem1[(int32_t)(tx ^ {mask})]);"
        for mask in (1, 2, 4, 8, 16)
    )
    checks = f"""
        CHECK-NOT: shfl
        {steps}
        CHECK: barrier(CLK_LOCAL_MEM_FENCE
        CHECK-NEXT: {{
        CHECK-NEXT: __local float* restrict red_smem3 = (__local float*)((__local char*)tc_smem + 0);
        CHECK-NEXT: red_smem3[(int32_t)tx] = red0_1;
        CHECK-NOT: shfl
    """
    filecheck(source, checks, name="softmax.cl")


def test_float64_needs_the_device_to_have_it():
    func = K.elementwise_add(1000, 256, dtype="float64")
    with pytest.raises(LoweringError) as info:
        lower_source(func, FULL.replace("-fp64=true", "-fp64=false"))
    text = str(info.value)
    assert "cl_khr_fp64" in text and "opencl" in text and ".py:" in text


def test_64_bit_atomics_need_the_device_extension():
    with pytest.raises(LoweringError) as info:
        lower_source(atomic_histogram("int64"), FULL.replace("-int64_atomics=true", "-int64_atomics=false"))
    assert "cl_khr_int64_base_atomics" in str(info.value)


def test_too_many_threads_for_the_device():
    with pytest.raises(LoweringError) as info:
        lower_source(
            K.transpose(256, 128, 32), FULL.replace("-max_work_group_size=1024", "-max_work_group_size=64")
        )
    assert "at most 64 work-items" in str(info.value) and "threads=64" in str(info.value)


def test_shared_memory_beyond_the_device_local_memory():
    with pytest.raises(LoweringError) as info:
        lower_source(K.transpose(256, 128, 32), FULL.replace("-local_mem=65536", "-local_mem=4096"))
    assert "local) memory" in str(info.value) and "4096" in str(info.value)


def test_a_shared_layout_is_a_hint_and_a_misplaced_one_is_refused_with_its_line():
    @T.prim_func
    def annotated(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((128,), "float32")
            T.annotate_layout({s: T.Layout((128,), lambda i: i)})
            T.copy(A, s)
            T.copy(s, A)

    assert "__kernel" in lower_source(annotated)

    @T.prim_func
    def misplaced(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((128,), "float32")
            T.annotate_layout({f: T.Layout((128,), lambda i: i)})
            T.copy(A, f)
            T.copy(f, A)

    with pytest.raises(LoweringError, match="takes a T.Fragment") as info:
        lower_source(misplaced)
    assert "annotate_layout" in str(info.value)


# ---------------------------------------------------------------- on a device


@pytest.fixture
def device_target(opencl_device, tmp_path, monkeypatch):
    monkeypatch.setenv("TILECRAFT_CACHE_DIR", str(tmp_path / "cache"))
    return "opencl"


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "int64", "float64"])
def test_atomic_add_of_every_width(device_target, dtype):
    if dtype in ("int64", "float64"):
        target = tilecraft.Target.parse(device_target)
        if not target.attr("int64_atomics") or (dtype == "float64" and not target.attr("fp64")):
            pytest.skip(f"the device has no 64-bit atomics for {dtype}")
    n, bins = 1000, 16
    rng = np.random.default_rng()
    x = rng.integers(0, bins, n).astype(np.int32)
    np_dtype = {"bfloat16": ml_dtypes.bfloat16}.get(dtype, np.dtype(dtype))
    w = (rng.integers(1, 4, n) if "int" in dtype else rng.integers(1, 4, n) * 0.25).astype(np_dtype)
    h = np.zeros(bins, np_dtype)
    kernel = tilecraft.compile(atomic_histogram(dtype, n, bins), target=device_target)
    kernel(x, w, h)
    expected = np.zeros(bins, np.float64)
    np.add.at(expected, x, w.astype(np.float64))
    np.testing.assert_array_equal(h.astype(np.float64), expected)


def test_thread_index_and_pipelined_loop(device_target):
    n, block = 1024, 128

    @T.prim_func
    def shifted_sum(A: T.Tensor((n,), "float32"), B: T.Tensor((block,), "float32")):
        with T.Kernel(1, threads=block):
            tile = T.alloc_shared((block,), "float32")
            acc = T.alloc_fragment((block,), "float32")
            T.clear(acc)
            tx = T.get_thread_binding(0)
            for k in T.Pipelined(n // block, num_stages=2):
                T.copy(A[k * block], tile)
                for i in T.Parallel(block):
                    acc[i] += tile[(i + 1) % block]
            T.copy(acc, B)
            if tx == 0:
                B[0] = B[0] + 0.0

    a = np.random.default_rng().standard_normal(n).astype(np.float32)
    b = np.full(block, np.nan, np.float32)
    tilecraft.compile(shifted_sum, target=device_target)(a, b)
    expected = np.roll(a.astype(np.float64).reshape(-1, block), -1, axis=1).sum(axis=0)
    np.testing.assert_allclose(b, expected, rtol=1e-5, atol=1e-5)


def test_print_reaches_stdout(device_target, capfd):
    @T.prim_func
    def printing(A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            T.print(A[1], msg="second")

    a = np.array([1.0, 2.5, 3.0, 4.0], np.float32)
    tilecraft.compile(printing, target=device_target)(a)
    out = capfd.readouterr().out
    assert "second: 2.5" in out and "[block 0,0,0 thread 0]" in out


def test_print_of_a_region_names_each_element(device_target, capfd):
    @T.prim_func
    def printing(A: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=32):
            tile = T.alloc_shared((2, 2), "float32")
            T.copy(A[2, 2], tile)
            T.print(A[2:4, 2:4], msg="corner")

    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    tilecraft.compile(printing, target=device_target)(a)
    out = capfd.readouterr().out
    assert "corner: A[3, 2] = 14" in out, out


@pytest.mark.parametrize("rows, cols", [(64, 8), (32, 16), (16, 32), (4, 128)])
def test_row_reductions_across_1_to_5_thread_bits(device_target, rows, cols):
    """Without shuffles, partials meet in local memory: in one round for 1-2 thread bits, in a
    butterfly beyond; the tile shapes put 1, 2, 3 and 5 thread bits on each row."""

    @T.prim_func
    def row_stats(X: T.Tensor((rows, cols), "float32"), S: T.Tensor((rows,), "float32"),
                  M: T.Tensor((rows,), "float32")):  # fmt: skip
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((rows, cols), "float32")
            s = T.alloc_fragment((rows,), "float32")
            m = T.alloc_fragment((rows,), "float32")
            T.copy(X, x)
            T.reduce_sum(x, s, dim=1)
            T.reduce_max(x, m, dim=1)
            T.copy(s, S)
            T.copy(m, M)

    x = np.random.default_rng().standard_normal((rows, cols)).astype(np.float32)
    s, m = np.full(rows, np.nan, np.float32), np.full(rows, np.nan, np.float32)
    tilecraft.compile(row_stats, target=device_target)(x, s, m)
    np.testing.assert_allclose(s, x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(m, x.max(axis=1))
