"""The CuTe DSL variant of the cuda target, without a GPU: selection, the pipeline, the generated Python
(parsed and checked for structure), refusals, the missing-DSL error, and (where the DSL is installed) the
DSL's compile to a cubin."""

import ast
import importlib.util
import sys

import pytest

import tilecraft.language as T
from tilecraft.backend import Target, backend_for, create_backend_context
from tilecraft.errors import LoweringError, ToolchainNotFound
from tilecraft.ir.function import IRModule
from tilecraft.testing import conformance as kit
from tilecraft.testing.filecheck import filecheck
from tilecraft.transform.check import check_semantics
from tilecraft.transform.widen_fragments import widen_fragments

TARGET = "cuda -arch=sm_90a -backend=cutedsl"
HAS_DSL = importlib.util.find_spec("cutlass") is not None


def context():
    return create_backend_context(TARGET, require_available=False)


def device_code(func, compile=False):
    ctx = context()
    mod = widen_fragments(IRModule.from_func(func))
    check_semantics(mod)
    _, device = ctx.split(ctx.lower(mod))
    return ctx.codegen_device(device, compile=compile)


def case(name):
    return next(c for c in kit.CASES if c.name == name).build()


def test_the_variant_is_chosen_only_by_name():
    assert backend_for(Target.parse("cuda -arch=sm_90a")).name == "cuda"
    assert backend_for(Target.parse(TARGET)).name == "cutedsl"
    # TileLang's spelling
    assert Target.parse("cutedsl -arch=sm_90a") == Target.parse(TARGET)
    assert context().execution.name == "cutedsl"


def test_the_pipeline_differs_from_cudas_at_its_head_and_lowering():
    names = [p.name for p in backend_for(Target.parse(TARGET)).pipelines["cuda"].passes]
    cuda = [p.name for p in backend_for(Target.parse("cuda -arch=sm_90a")).pipelines["cuda"].passes]
    assert names[:3] == ["check-target-support", "check-barrier-placement", "check-cutedsl-support"]
    assert "warp-specialize" in cuda and "warp-specialize" not in names
    assert names[-4:-1] == cuda[-5:-2]  # the tail: split, plan shared memory, check the plan


def test_elementwise_is_a_cute_kernel_over_pointers():
    code = device_code(case("elementwise_add_ragged"))
    source = code.sources["cutedsl-source"]
    ast.parse(source)
    filecheck(
        source,
        """
        CHECK: import cutlass.cute as cute
        CHECK: @cute.kernel
        CHECK-NEXT: def elementwise_add_kernel0(A_ptr: cute.Pointer, B_ptr: cute.Pointer, C_ptr: cute.Pointer):
        CHECK-NEXT: A = cute.make_tensor(A_ptr, cute.make_layout(1000))
        CHECK: tx = cute.arch.thread_idx()[0]
        CHECK: C[{{.*}}] = cutlass.Float32(
        CHECK: elementwise_add_kernel0.set_name_prefix("elementwise_add_kernel0", remove_cutlass_symbol=True, keep_mangled_name=False)
        CHECK: def tc_launch(
        CHECK: .launch(grid=[1, 1, 1], block=[128, 1, 1], smem=0)
        CHECK: TC_KERNELS = ('elementwise_add_kernel0_0',)
    """,
    )
    assert [k.symbol for k in code.kernels] == ["elementwise_add_kernel0_0"]
    assert code.buffer_alignment == 16


def test_the_module_imports_only_the_dsl():
    source = device_code(case("softmax_f16")).sources["cutedsl-source"]
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(ast.parse(source))
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module)])
    }
    assert imported == {"cutlass"}


def test_a_gemm_is_cp_async_ldmatrix_and_mma_atoms():
    source = device_code(case("gemm_f16_nn")).sources["cutedsl-source"]
    ast.parse(source)
    filecheck(
        source,
        """
        CHECK: tc_smem = cutlass.memory.SmemAllocator().allocate_array(cutlass.Uint8, 16384, byte_alignment=128)
        CHECK: cute.make_copy_atom(cpasync.CopyG2SOp(), cutlass.Float16, num_bits_per_copy=128)
        CHECK: cute.make_mma_atom(warp.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (16, 8, 16)))
        CHECK: warp.LdMatrix8x8x16bOp(False, 4)
        CHECK: warp.LdMatrix8x8x16bOp(True, 4)
        CHECK: cute.copy(tc_g2s_float16_16,
        CHECK: cute.arch.cp_async_commit_group()
        CHECK: cute.arch.cp_async_wait_group(0)
        CHECK: cute.arch.sync_threads()
        CHECK: cute.copy(tc_ldmatrix,
        CHECK: cute.copy(tc_ldmatrix_t,
        CHECK: cute.gemm(tc_mma_float16,
    """,
    )


def test_a_reduction_shuffles_across_the_warp():
    source = device_code(case("row_sum_ragged")).sources["cutedsl-source"]
    ast.parse(source)
    assert "cute.arch.shuffle_sync_bfly(" in source


def test_a_fragment_loaded_in_runs_is_read_element_by_element():
    """The CUDA lowering loads an int8 tile into registers in runs (cuda.VectorLoad); here each run is a
    loop over its elements, converted to the fragment's dtype where it differs (the float32 copy)."""
    source = device_code(case("int8_fragment_runs")).sources["cutedsl-source"]
    ast.parse(source)
    filecheck(
        source,
        """
        CHECK: for tc_v1 in cutlass.range_constexpr(8):
        CHECK-NEXT: f[(v1 * 8) + tc_v1] = cutlass.Int8(X[
        CHECK-SAME: + tc_v1])
        CHECK: for tc_v2 in cutlass.range_constexpr(8):
        CHECK-NEXT: g[(v2 * 8) + tc_v2] = cutlass.Float32(cutlass.Float32(X[
    """,
    )


@pytest.mark.parametrize(
    "name, key",
    [("cumsum", "op:Cumsum"), ("split_k_gemm_atomic", "op:AtomicOp"), ("flash_attention_full", "feature:register-a-gemm"),
     ("gemm_in_clusters_sharing_a", "feature:clusters"), ("mx_quantize_float4_int4_packed", "dtype:float8-and-subbyte")],
)  # fmt: skip
def test_what_it_does_not_emit_is_refused_at_lowering_with_the_line_and_the_alternative(name, key):
    with pytest.raises(LoweringError) as info:
        device_code(case(name))
    err = info.value
    assert err.unsupported == key
    assert key in backend_for(Target.parse(TARGET)).unsupported
    text = str(err)
    assert "target='cuda'" in text and "-backend=cutedsl" in text
    assert ".py:" in text  # the kernel's file and line


def test_a_refusal_points_at_the_kernel_line():
    @T.prim_func
    def scan(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((128,), "float32")
            T.copy(A, a)
            T.cumsum(a)
            T.copy(a, B)

    with pytest.raises(LoweringError, match=r"test_cutedsl\.py:\d+.*T\.cumsum"):
        device_code(scan)


def test_without_the_dsl_compiling_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "cutlass", None)
    monkeypatch.setitem(sys.modules, "cutlass.cute", None)
    with pytest.raises(ToolchainNotFound, match=r"pip install 'tilecraft\[cutedsl\]'"):
        device_code(case("elementwise_add_ragged"), compile=True)
    status = context().execution.check()
    assert not status.ok and "tilecraft[cutedsl]" in status.fix


@pytest.mark.skipif(not HAS_DSL, reason="the CuTe DSL is not installed (pip install 'tilecraft[cutedsl]')")
@pytest.mark.parametrize("name", ["elementwise_add_ragged", "gemm_f16_tn", "two_kernels_in_order"])
def test_the_dsl_compiles_it_to_a_cubin_for_sm_90a(name):
    code = device_code(case(name), compile=True)
    cubin = code.binaries["cubin"]
    assert cubin.startswith(b"\x7fELF")
    for info in code.kernels:
        assert info.symbol.encode() in cubin
