"""TMA loads on sm_90a without a GPU: the tensor-map encoding against cuTensorMapEncodeTiled's documented
rules (a fake driver records the call), the launcher's tensor-map slots, the generated code's structure
(mbarrier ring, expect-tx, wgmma kept in flight), the fallbacks, and nvcc compiles."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import pytest

import tilecraft
from benchmarks.hopper_check import build
from tilecraft.backend import Target
from tilecraft.errors import ArgumentError, TilecraftError
from tilecraft.execution.cuda_driver.launch import LaunchHooks, build_launcher, make_stream_resolver
from tilecraft.execution.cuda_driver.tensor_map import TensorMaps, encode_arguments
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.runtime import CompiledArtifact, KernelInfo, ParamInfo
from tilecraft.runtime.arrays import ArrayArg
from tilecraft.runtime.artifact import TensorMapInfo, artifact_files, artifact_from_files
from tilecraft.testing.filecheck import filecheck

SM90A = "cuda -arch=sm_90a"
BOX = TensorMapInfo("A", dt.bfloat16, (64, 128), 128)

# ---------------------------------------------------------------- encoding (driver rules)


class FakeDriver:
    """Records cuTensorMapEncodeTiled calls and writes a recognisable map."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def encode_tensor_map_tiled(self, out, dtype, rank, address, dims, strides, box, elem, *modes, detail=""):
        assert out % 64 == 0  # the documented alignment of the CUtensorMap
        self.calls.append((dtype, rank, address, list(dims), list(strides)[: rank - 1], list(box), list(elem),
                           modes))  # fmt: skip
        ctypes.memmove(out, (ctypes.c_uint64 * 1)(len(self.calls)), 8)


def test_encoding_follows_the_driver_order_and_units():
    dtype, rank, address, dims, strides, box, elem, modes = FakeDriver_call(BOX, 0x10000, (1000, 520))
    assert (dtype, rank, address) == (9, 2, 0x10000)  # CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
    assert dims == [520, 1000]  # innermost first
    assert strides == [1040]  # bytes, rank - 1 entries
    assert box == [64, 128] and elem == [1, 1]
    assert modes == (0, 3, 2, 0)  # no interleave, 128-byte swizzle, L2 128B, out of bounds -> zeros


def FakeDriver_call(info, address, shape):  # noqa: N802
    driver = FakeDriver()
    TensorMaps(driver, info, "k")(address, shape)
    return driver.calls[0]


def test_three_dim_maps_and_other_swizzles():
    info = TensorMapInfo("Q", dt.float16, (32, 64, 1), 64)
    dtype, rank, _, dims, strides, box, _, modes = FakeDriver_call(info, 0x2000, (8, 4096, 128))
    assert (dtype, rank, dims, strides, box, modes[1]) == (
        6,
        3,
        [128, 4096, 8],
        [256, 4096 * 256],
        [32, 64, 1],
        2,
    )


def test_maps_are_cached_per_address_and_shape():
    driver = FakeDriver()
    maps = TensorMaps(driver, BOX, "k")
    first = maps(0x1000, (256, 64))
    assert maps(0x1000, (256, 64)) == first and len(driver.calls) == 1
    assert maps(0x2000, (256, 64)) != first and maps(0x1000, (512, 64)) and len(driver.calls) == 3


@pytest.mark.parametrize(
    ("address", "shape", "match"),
    [
        (0x1008, (64, 64), "not 16-byte aligned"),
        (0x1000, (64, 60), "multiples of 16 bytes"),
        (0x1000, (0, 64), "1 to 2"),
    ],
)
def test_arguments_breaking_the_documented_rules_are_named(address, shape, match):
    with pytest.raises(ArgumentError, match=match):
        encode_arguments(BOX, address, shape, (shape[1], 1))


def test_boxes_breaking_the_rules_are_refused():
    with pytest.raises(ArgumentError, match="box rules"):
        encode_arguments(TensorMapInfo("A", dt.bfloat16, (64, 512), 128), 0x1000, (64, 64), (64, 1))
    with pytest.raises(ArgumentError, match="exceeds the 64-byte swizzle"):
        encode_arguments(TensorMapInfo("A", dt.bfloat16, (64, 8), 64), 0x1000, (64, 64), (64, 1))


# ---------------------------------------------------------------- launcher


M = E.Var(dt.int32, "m")
A = ParamInfo("A", "buffer", dt.bfloat16, (M, E.const(64)))


def test_the_launcher_points_the_map_slots_at_maps_encoded_for_each_call(no_driver):
    kernel = KernelInfo("k", (A,), (E.floordiv(M + 127, 128),), (128,), tensor_maps=(BOX,))
    artifact = CompiledArtifact("f", Target.parse({"kind": "cuda", "arch": "sm_90a"}), (A,), (M,), (kernel,),
                                {"cuda-source": ""})  # fmt: skip
    driver, seen = FakeDriver(), []

    def record(fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        slots = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        seen.append((ctypes.string_at(slots[0], 8), ctypes.string_at(slots[1], 8)))
        return 0

    hooks = LaunchHooks(record, False, make_stream_resolver([0]), lambda *a: None, lambda a: None,
                        tensor_maps=lambda info, symbol: TensorMaps(driver, info, symbol))  # fmt: skip
    launch = build_launcher(artifact, (1,), 0, hooks)
    arg = ArrayArg(None, 0x4000, (300, 64), (64, 1), dt.bfloat16, 2, 0, "interface")
    launch([arg], [300])
    launch([arg], [300])
    assert [call[3] for call in driver.calls] == [[64, 300]]  # encoded once for both calls
    assert int.from_bytes(seen[0][0], "little") == 0x4000 and int.from_bytes(seen[1][1], "little") == 1
    no_maps = LaunchHooks(record, False, make_stream_resolver([0]), lambda *a: None, lambda a: None)
    with pytest.raises(TilecraftError, match="tl.disable_tma_lower"):
        build_launcher(artifact, (1,), 0, no_maps)


def test_tensor_maps_survive_the_artifact_codec():
    art = tilecraft.lower(build(1000, 1030, 520, 128, 128, 64, 128, 3, "bfloat16", "NT"), target=SM90A)
    files = artifact_files(art)
    back = artifact_from_files(lambda name: files[name])
    maps = back.kernels[0].tensor_maps
    assert [(m.buffer, m.box, m.swizzle, m.dtype) for m in maps] == [
        ("A", (64, 128), 128, dt.bfloat16), ("B", (64, 128), 128, dt.bfloat16)
    ]  # fmt: skip


def test_a_views_map_is_encoded_with_the_views_dims_over_its_base_pointer(no_driver):
    """`kernel_flat = T.Tensor((KH * KW * C, F), dtype, kernel.data)`: the map describes the view's 2-D
    dims over the 4-D parameter's memory (the view's dims are its base's elements, row-major)."""
    base = ParamInfo("W", "buffer", dt.float16, (E.const(3), E.const(3), M, E.const(128)))
    view = TensorMapInfo("W", dt.float16, (64, 64), 128, (E.mul(M, 9), E.const(128)))
    kernel = KernelInfo("k", (base,), (E.const(1),), (128,), tensor_maps=(view,))
    artifact = CompiledArtifact("f", Target.parse({"kind": "cuda", "arch": "sm_90a"}), (base,), (M,), (kernel,),
                                {"cuda-source": ""})  # fmt: skip
    driver = FakeDriver()
    hooks = LaunchHooks(lambda *a: 0, False, make_stream_resolver([0]), lambda *a: None, lambda a: None,
                        tensor_maps=lambda info, symbol: TensorMaps(driver, info, symbol))  # fmt: skip
    launch = build_launcher(artifact, (1,), 0, hooks)  # (1,): the loaded function, a stand-in
    launch([ArrayArg(None, 0x8000, (3, 3, 64, 128), (24576, 8192, 128, 1), dt.float16, 2, 0, "interface")], [64])
    assert [call[3] for call in driver.calls] == [[128, 576]]  # innermost first: F, then KH * KW * C
    assert driver.calls[0][2] == 0x8000


def test_views_load_and_store_through_tensor_maps_of_their_base():
    from tilecraft.testing.conformance.convolution import conv2d

    art = tilecraft.lower(conv2d(), target=SM90A)
    files = artifact_files(art)
    maps = artifact_from_files(lambda name: files[name]).kernels[0].tensor_maps
    params = {p.name for p in art.params}
    assert maps and all(m.buffer in params for m in maps)
    assert any(m.shape for m in maps), maps  # the weights' and the output's flat views


# ---------------------------------------------------------------- generated code


def _source(layout="NT", size=(1000, 1030, 520), cfg=(128, 128, 64, 128, 3), dtype="bfloat16", target=SM90A,
            **configs):  # fmt: skip
    func = build(*size, *cfg, dtype, layout)
    art = tilecraft.lower(func, target=target, pass_configs=configs or None)
    return art, art.device_sources["cuda-source"]


def test_pipelined_gemm_loads_through_an_mbarrier_ring_and_keeps_one_wgmma_group_in_flight():
    art, src = _source(**{"tl.disable_warp_specialized": True})
    kernel = src[src.index('extern "C" __global__') :]
    # Two stages are loaded before the loop; each iteration waits for its stage, leaves its wgmma group
    # in flight (the trailing 1), and refills the stage two ahead once every thread is past the gemm
    # that read it; the last group is waited for after the loop.
    checks = """
        CHECK: const __grid_constant__ tc_tensor_map tc_tmap0
        CHECK-SAME: const __grid_constant__ tc_tensor_map tc_tmap1
        CHECK: uint64_t tc_mbar[3]
        CHECK: tc_mbar_init(&tc_mbar[i], 2)
        CHECK-NEXT: tc_mbar_init_fence()
        CHECK: __syncthreads()
        CHECK: tc_mbar_expect_tx(&tc_mbar[0], 16384u)
        CHECK-NEXT: tc_tma_load<2>(A_s + 0, tc_tmap0
        CHECK: tc_tma_load<2>(A_s + 8192, tc_tmap0
        CHECK: for (int32_t ko = 0; ko < 9; ++ko)
        CHECK: tc_mbar_wait(&tc_mbar[0 + tc_stage], (tc_phase1 >> tc_stage) & 1u)
        CHECK-NEXT: tc_phase1 ^= 1u << tc_stage;
        CHECK-NEXT: }
        CHECK-NEXT: tc::gemm_wgmma<128, 128, 64, 1, 1, false, true, true, 64, 64, 1>
        CHECK-NEXT: tc_fence_proxy_async(); __syncthreads();
        CHECK-NEXT: if (((ko + 2) < 9)) {
        CHECK-NEXT: if (tc_leader()) {
        CHECK-NEXT: tc_mbar_expect_tx(&tc_mbar[0 + ((ko + 2) % 3)]
        CHECK-NEXT: tc_tma_load<2>(A_s + ((((ko + 2) % 3) * 8192) + 0)
        CHECK-NOT: tc_wgmma_wait
        CHECK: tc_wgmma_wait<0>();
        CHECK-NEXT: tc_wgmma_fence_operands<128>(C_l)
    """
    filecheck(kernel, checks)
    assert "tc_cp_async" not in kernel.replace("tc_cp_async_wait", "")
    assert len(art.kernels[0].tensor_maps) == 2


def test_disable_tma_lower_keeps_cp_async():
    art, src = _source(**{"tl.disable_tma_lower": True})
    kernel = src[src.index('extern "C" __global__') :]
    assert "tc_tma_load" not in kernel and "tc_cp_async16" in kernel and not art.kernels[0].tensor_maps
    assert "tc::gemm_wgmma<128, 128, 64, 1, 1, false, true, true, 64, 64>" in kernel  # waits for each call


def test_sm80_has_no_tma():
    art, src = _source(target="cuda -arch=sm_80")
    assert "tc_tma_load<" not in src[src.index('extern "C" __global__') :] and not art.kernels[0].tensor_maps


def test_rows_off_16_bytes_stay_on_cp_async_with_a_verbose_note(capsys):
    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        art, src = _source("NN")  # B is (520, 1030): rows of 2060 bytes
    assert "rows of B are not provably a multiple of 16 bytes" in capsys.readouterr().err
    kernel = src[src.index('extern "C" __global__') :]
    assert [m.buffer for m in art.kernels[0].tensor_maps] == ["A"]
    # mixed producers: the wait covers the mbarrier and the barrier publishes the cp.async writes
    checks = """
        CHECK: for (int32_t ko
        CHECK: tc_mbar_wait(
        CHECK: __syncthreads()
        CHECK: tc_tma_load<2>(A_s
    """
    filecheck(kernel, checks)


def test_copies_outside_a_pipeline_are_in_flight_together():
    import tilecraft.language as T

    @T.prim_func
    def f(
        A: T.Tensor((256, 64), "float16"),
        B: T.Tensor((64, 128), "float16"),
        C: T.Tensor((256, 128), "float32"),
    ):
        # Each copy gets a barrier of its own and its wait moves down to the gemm, the first statement
        # reading its tile (sink-tma-waits): B is issued before A has landed, the accumulator's clear
        # runs while both fly.
        # CHECK: uint64_t tc_mbar[2]
        # CHECK: tc_tma_load<2>(A_s + 0
        # CHECK-NOT: tc_mbar_wait
        # CHECK: tc_tma_load<2>(B_s + 0
        # CHECK: tc_tma_load<2>(B_s + 4096
        # CHECK-NOT: tc::gemm
        # CHECK: C_l[(int32_t)r1] = (float)0
        # CHECK: tc_mbar_wait(&tc_mbar[{{[01]}}], tc_phase{{[12]}} & 1u)
        # CHECK-NOT: tc::gemm
        # CHECK: tc_mbar_wait(&tc_mbar[{{[01]}}], tc_phase{{[12]}} & 1u)
        # CHECK: tc::gemm
        with T.Kernel(1, 2, threads=128) as (bx, by):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            T.copy(A[by * 128, 0], A_s)
            T.copy(B[0, 0], B_s)
            T.gemm(A_s, B_s, C_l, clear_accum=True)
            T.copy(C_l, C[by * 128, 0])

    src = tilecraft.lower(f, target=SM90A).device_sources["cuda-source"]
    filecheck(src[src.index('extern "C" __global__') :], f)


# ---------------------------------------------------------------- nvcc


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not installed")
@pytest.mark.parametrize("layout", ["NN", "NT", "TN"])
@pytest.mark.parametrize("cfg", [(128, 128, 64, 128, 3), (128, 256, 64, 256, 3), (64, 128, 64, 128, 3),
                                 (128, 128, 32, 128, 4)])  # fmt: skip
def test_tma_gemms_compile_for_sm90a(tmp_path, layout, cfg):
    """The ring without a producer warpgroup (test_warp_specialize.py compiles the specialized one)."""
    _, src = _source(layout, (4096, 4096, 4096), cfg, "float16", **{"tl.disable_warp_specialized": True})
    assert "tc_tma_load<2>" in src
    path = tmp_path / "k.cu"
    path.write_text(src)
    done = subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-O3", "-o", str(tmp_path / "k.cubin"), str(path)],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
