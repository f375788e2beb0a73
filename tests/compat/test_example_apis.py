"""TileLang names its examples use that tilecraft gives a meaning of its own (docs/compat.md, API surface)."""

from __future__ import annotations

import importlib.machinery
import importlib.util

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft import settings
from tilecraft.compat import hook
from tilecraft.errors import ArgumentError
from tilecraft.ir.structural import structural_equal


@pytest.fixture
def hooked():
    assert not hook.installed()
    hook.install()
    try:
        yield
    finally:
        hook.uninstall()


def _scale(reg_alloc: bool):
    @T.prim_func
    def scale(A: T.Tensor((37,), T.float32), B: T.Tensor((37,), T.float32)):
        with T.Kernel(1, threads=32):
            if reg_alloc:
                T.disable_warp_group_reg_alloc()
            for i in T.Parallel(37):
                B[i] = A[i] * 3.0

    return scale


def test_disable_warp_group_reg_alloc_leaves_the_kernel_unchanged():
    """The call adds nothing to the IR (tl.disable_warp_specialized is the switch that does)."""
    assert structural_equal(_scale(True), _scale(False))
    assert T.no_set_max_nreg is T.disable_warp_group_reg_alloc


def test_register_hints_of_warp_specialized_kernels_change_nothing():
    @T.prim_func
    def hinted(A: T.Tensor((37,), T.float32), B: T.Tensor((37,), T.float32)):
        with T.Kernel(1, threads=32):
            T.annotate_producer_reg_dealloc()
            T.annotate_consumer_reg_alloc(232)
            T.set_max_nreg(240, 1)
            for i in T.Parallel(37):
                B[i] = A[i] * 3.0

    assert hinted.script().replace("def hinted", "def scale") == _scale(False).script()
    with pytest.raises(tilecraft.errors.TilecraftError, match=r"a register count is an int from 24 to 256"):

        @T.prim_func
        def bad(A: T.Tensor((4,), T.float32)):
            with T.Kernel(1, threads=32):
                T.set_max_nreg(1000, 1)


def test_disable_warp_group_reg_alloc_runs_on_the_cpu():
    a = np.random.default_rng(0).standard_normal(37).astype(np.float32)
    b = np.zeros_like(a)
    tilecraft.compile(_scale(True), target="c")(a, b)
    np.testing.assert_allclose(b, a.astype(np.float64) * 3.0, rtol=1e-6)


def test_disable_warp_group_reg_alloc_outside_a_kernel_is_an_error():
    with pytest.raises(tilecraft.errors.TilecraftError, match=r"only valid inside `with T.Kernel"):

        @T.prim_func
        def bad(A: T.Tensor((4,), T.float32)):
            T.disable_warp_group_reg_alloc()


def test_language_dtypes_module_has_the_torch_tables():
    torch = pytest.importorskip("torch")
    from tilecraft.language.dtypes import _STR_TO_TORCH_DTYPE, _TORCH_DTYPE_TO_STR, dtype

    assert _TORCH_DTYPE_TO_STR[torch.half] == "float16" and _TORCH_DTYPE_TO_STR[torch.bfloat16] == "bfloat16"
    assert _STR_TO_TORCH_DTYPE["int16"] is torch.int16
    assert dtype(_TORCH_DTYPE_TO_STR[torch.float32]) is T.float32 or dtype("float32") == T.float32


def test_env_reads_tilecrafts_settings(tmp_path):
    import tilecraft.env

    with settings.override(TILECRAFT_CACHE_DIR=tmp_path):
        assert str(tmp_path) == tilecraft.env.TILELANG_CACHE_DIR
        assert str(tmp_path / "tmp") == tilecraft.env.TILELANG_TMP_DIR
    with settings.override(TILECRAFT_DISABLE_CACHE=True):
        assert not tilecraft.env.is_cache_enabled()
    with pytest.raises(AttributeError, match="has no 'CUTLASS_INCLUDE_DIR'; provided: TILELANG_CACHE_DIR"):
        tilecraft.env.CUTLASS_INCLUDE_DIR  # noqa: B018


def test_from_tilelang_import_tvm_gives_the_tvm_namespace(hooked):
    """`from tilelang import tvm`, `import tvm` and `tvm.tir` load tilecraft's `tvm` namespace
    (tests/compat/test_tvm_namespace.py tests what it holds)."""
    scope: dict = {}
    exec("from tilelang import tvm\nimport tvm as plain\nimport tvm.tir\nimport tilelang.tvm", scope)
    import tilecraft.compat.tvm

    assert scope["tvm"] is scope["plain"] is tilecraft.compat.tvm
    assert scope["tvm"].tir is tilecraft.compat.tvm.tirx


def test_a_tvm_module_tilecraft_lacks_is_refused_in_one_line_and_stays_not_found_for_probes(hooked):
    """torch's dynamo probes `find_spec("tvm")` at import (it sees the namespace); a probe of a TVM module
    the namespace lacks must still see ModuleNotFoundError."""
    assert importlib.util.find_spec("tvm") is not None
    with pytest.raises(ModuleNotFoundError) as info:
        exec("import tvm.relay", {})
    message = str(info.value)
    assert message.startswith("`tvm.relay` is not provided: tilecraft has no TVM") and "\n" not in message
    assert 'docs/compat.md, section "TVM"' in message
    assert hook.tvm_hint(info.value) is None  # the error says it already
    assert hook.tvm_hint(ModuleNotFoundError("No module named 'einops'", name="einops")) is None


def test_tilelang_engine_maps_onto_tilecraft(hooked):
    import tilelang.engine
    from tilelang.engine.callback import register_cuda_postproc_callback

    import tilecraft.cuda.callback

    assert tilelang.engine.lower is tilecraft.lower
    assert register_cuda_postproc_callback is tilecraft.cuda.callback.register_cuda_postproc_callback


CUDA = "cuda -arch=sm_90a"


def test_cuda_postproc_rewrites_the_source_and_changes_the_cache_key():
    from tilecraft.backend.context import create_backend_context
    from tilecraft.cuda.callback import register_cuda_postproc_callback, unregister_cuda_postproc
    from tilecraft.jit.lower import artifact_key

    func = _scale(False)
    ctx = create_backend_context(CUDA, None, "nvrtc", require_available=False)
    plain_key = artifact_key(func, ctx, None, None)
    seen = []

    @register_cuda_postproc_callback
    def mark(code, target):
        seen.append(str(target))
        return "// postprocessed\n" + code

    try:
        source = tilecraft.lower(func, target=CUDA, execution_backend="nvrtc").source("cuda-source")
        assert source.startswith("// postprocessed\n") and "scale" in source
        assert seen and "cuda" in seen[0]
        assert artifact_key(func, ctx, None, None) != plain_key
    finally:
        unregister_cuda_postproc()
    assert artifact_key(func, ctx, None, None) == plain_key


def test_cuda_postproc_must_return_a_str_and_override_false_refuses():
    from tilecraft.cuda.callback import register_cuda_postproc, unregister_cuda_postproc
    from tilecraft.errors import BackendError

    register_cuda_postproc(lambda code, target: None)
    try:
        with pytest.raises(BackendError, match="returned NoneType; it must return the rewritten source"):
            tilecraft.lower(_scale(False), target=CUDA, execution_backend="nvrtc")
        with pytest.raises(BackendError, match="already registered"):
            register_cuda_postproc(lambda code, target: code, override=False)
    finally:
        unregister_cuda_postproc()


def _tf32_gemm(m: int, n: int, k: int):
    @T.prim_func
    def gemm(
        A: T.Tensor((m, k), T.bfloat16), B: T.Tensor((n, k), T.tfloat32), C: T.Tensor((m, n), T.float32)
    ):
        with T.Kernel(T.ceildiv(m, 16), T.ceildiv(n, 16), threads=128) as (bx, by):
            a_half = T.alloc_shared((16, 32), T.bfloat16)
            a_tf32 = T.alloc_fragment((16, 32), T.tfloat32)
            b_tf32 = T.alloc_shared((16, 32), T.tfloat32)
            acc = T.alloc_fragment((16, 16), T.float32)
            T.clear(acc)
            for ko in T.Pipelined(T.ceildiv(k, 32), num_stages=2):
                T.copy(A[bx * 16, ko * 32], a_half)
                T.copy(a_half, a_tf32)
                T.copy(B[by * 16, ko * 32], b_tf32)
                T.gemm(a_tf32, b_tf32, acc, transpose_B=True)
            T.copy(acc, C[bx * 16, by * 16])

    return gemm


def test_tfloat32_is_float32_storage_and_gemm():
    """A tfloat32 tensor takes float32 arrays; on the CPU target (no TF32 units) its gemm is
    float32-precise (no TF32 rounding)."""
    from tilecraft.ir.dtype import as_dtype

    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert T.tfloat32 != T.float32 and as_dtype(T.tfloat32) == T.float32
    m, n, k = 37, 21, 70
    rng = np.random.default_rng(7)
    a = rng.standard_normal((m, k)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((n, k)).astype(np.float32)
    c = np.zeros((m, n), np.float32)
    tilecraft.compile(_tf32_gemm(m, n, k), target="c")(a, b, c)
    expected = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c, expected, rtol=1e-5, atol=1e-4)


def test_contrib_nvcc_answers_from_the_cuda_target(hooked):
    """TileLang's flash-attention examples read the capability with `from tilelang.contrib import nvcc`."""
    from tilelang.contrib import nvcc

    import tilecraft.compat.contrib.nvcc as ours

    assert nvcc is ours
    assert nvcc.get_target_compute_version("cuda -arch=sm_90a") == "9.0"
    assert nvcc.get_target_compute_version({"kind": "cuda", "arch": "sm_86"}) == "8.6"
    assert nvcc.parse_compute_version("12.0") == (12, 0)
    assert nvcc.get_target_arch("9.0") == "90a" and nvcc.get_target_arch((8, 9)) == "89"
    assert nvcc.is_hopper("cuda -arch=sm_90a") and not nvcc.is_hopper("cuda -arch=sm_100a")
    assert nvcc.have_tma("cuda -arch=sm_90a") and not nvcc.have_tma("cuda -arch=sm_80")
    assert not nvcc.have_tma("c")  # another kind, as TileLang answers
    assert nvcc.have_fp8("8.9") and not nvcc.have_fp8("8.6") and nvcc.have_bf16("8.0")
    with pytest.raises(RuntimeError, match="not MAJOR.MINOR"):
        nvcc.parse_compute_version("sm_90")


def test_contrib_nvcc_reads_the_emulated_device(hooked):
    pytest.importorskip("torch")
    from tilecraft.compat import cuda_on_cpu

    cuda_on_cpu.enable((9, 0))
    try:
        from tilelang.contrib import nvcc

        assert nvcc.get_target_compute_version() == "9.0" and nvcc.have_tma()
    finally:
        cuda_on_cpu.disable()


def test_other_contrib_modules_name_the_compat_doc(hooked):
    with pytest.raises(ImportError, match="docs/compat.md"):
        importlib.import_module("tilelang.contrib.cutedsl")


def test_cupti_timing_under_the_emulation_times_each_call_on_the_host():
    """TileLang's examples time with `do_bench(backend="cupti")`; the emulated GPU is the host, which
    keeps no kernel records, so each call's wall-clock time stands in (without the emulation the CPU
    target refuses cupti: tests/profiler/test_bench.py)."""
    pytest.importorskip("torch")
    import time

    from tilecraft.compat import cuda_on_cpu
    from tilecraft.profiler import do_bench

    cuda_on_cpu.enable()
    try:
        assert (
            do_bench(lambda: time.sleep(0.002), _n_warmup=1, _n_repeat=3, backend="cupti", target="c") >= 2.0
        )
    finally:
        cuda_on_cpu.disable()
    with pytest.raises(ArgumentError, match="backend='event'"):
        do_bench(lambda: None, backend="cupti", target="c")


def test_the_emulated_device_divides_by_a_number_as_torchs_cuda_kernel_does():
    """torch's CUDA `t / 448.0` multiplies by float32(1 / 448); its CPU kernel divides, which differs in
    the last bit for t = 3.0625. TileLang's act_quant reference (`amax / fp8_max`) depends on it: with the
    CPU's division its fp8 values disagree with the kernel at rounding ties (issue 35)."""
    torch = pytest.importorskip("torch")
    from tilecraft.compat import cuda_on_cpu

    amax = torch.tensor([3.0625, 1.0, 2.5], dtype=torch.float32)
    reciprocal = np.float32(1.0) / np.float32(448.0)
    expected = (amax.numpy() * reciprocal).astype(np.float32)
    assert (amax / 448.0).numpy()[0] != expected[0]  # the host's division, outside the emulation
    cuda_on_cpu.enable()
    try:
        assert np.array_equal((amax / 448.0).numpy(), expected)
        assert np.array_equal(torch.div(amax, 448.0).numpy(), expected)
        in_place = amax.clone()
        in_place /= 448.0
        assert np.array_equal(in_place.numpy(), expected)
        halves = torch.tensor([3.0, 5.0], dtype=torch.bfloat16) / 3.0
        assert halves.dtype == torch.bfloat16
        divisor = torch.tensor([448.0, 448.0, 448.0])
        assert np.array_equal((amax / divisor).numpy(), amax.numpy() / np.float32(448.0))  # tensors divide
        assert torch.div(torch.tensor([7]), 2, rounding_mode="floor").item() == 3
    finally:
        cuda_on_cpu.disable()


def test_nvcc_flags_under_the_emulation_reach_the_host_compiler_as_it_understands_them():
    """A TileLang kernel's compile flags are nvcc's (`T.annotate_compile_flags(["--use_fast_math"])`,
    `compile_flags=`); run on the host by the emulation, fast math becomes the pass config, flags a C
    compiler shares stay, nvcc's own are dropped with a warning; without the emulation flags pass as
    given."""
    pytest.importorskip("torch")
    import tilecraft
    import tilecraft.language as T
    from tilecraft.compat import cuda_on_cpu

    @T.prim_func
    def k(A: T.Tensor((8,), "float32")):
        T.annotate_compile_flags(["--use_fast_math", "-DTC_FLAG=1"])
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                A[i] = A[i] * 2.0

    cuda_on_cpu.enable()
    try:
        with pytest.warns(RuntimeWarning, match=r"the nvcc flags -lineinfo have no meaning"):
            artifact = tilecraft.lower(k, target="c", compile_flags=["-lineinfo"])
        assert tuple(artifact.extra_value("compile_flags")) == ("-DTC_FLAG=1",)
        assert artifact.extra_value("fast_math") is True
        a = np.arange(8, dtype=np.float32)
        tilecraft.compile(k, target="c")(a)
        np.testing.assert_array_equal(a, np.arange(8, dtype=np.float32) * 2)
    finally:
        cuda_on_cpu.disable()
    kept = tilecraft.lower(k, target="c").extra_value("compile_flags")
    assert tuple(kept) == ("--use_fast_math", "-DTC_FLAG=1")
