"""Thread-block clusters on CUDA without a GPU: `__cluster_dims__` on sm_90a (dropped with a note before
sm_90), the launch record and the launchers' check that the grid divides into clusters, and TMA multicast
of the tiles a cluster's blocks share (`tilecraft.cuda.tma_multicast`): which copies, the slices each block
loads, the empty barriers counting every block's consumers, the remote releases and the cluster barriers,
T.use_swizzle ordering whole clusters, the notes where a loop keeps plain loads, and nvcc. The protocol
runs in tests/cuda/test_warp_specialize_protocol.py (the cluster cases); the GPU check is
benchmarks/cluster_check.py."""

from __future__ import annotations

import re
import subprocess

import pytest

import tilecraft
import tilecraft.language as T
from benchmarks.cluster_check import build as cluster_gemm
from tests.cuda.test_launch import ALPHA, N_PARAM, A, B, N, Recorder, array, make_launcher
from tilecraft.backend import Target
from tilecraft.errors import ArgumentError, TilecraftError
from tilecraft.execution.cuda_driver.export_c import source as c_source
from tilecraft.execution.cuda_driver.runtime import _dynamic_cluster
from tilecraft.ir import expr as E
from tilecraft.runtime import CompiledArtifact, KernelInfo
from tilecraft.runtime.artifact import artifact_files, artifact_from_files
from tilecraft.testing.conformance import clusters as CL

SM90A = "cuda -arch=sm_90a"
MULTICAST = {"tilecraft.cuda.tma_multicast": True}
TILE = (256, 128, 64, 256, 4)


def _lower(func, target=SM90A, configs=None):
    art = tilecraft.lower(func, target=target, execution_backend="nvrtc", pass_configs=configs)
    src = art.device_sources["cuda-source"]
    return art, src[src.index('extern "C" __global__') :]


# ---------------------------------------------------------------- the launch


def test_sm90a_kernels_are_compiled_with_their_cluster_shape():
    art, kernel = _lower(CL.sharing_a())
    assert "__launch_bounds__(256, 2) __cluster_dims__(2, 1, 1) gemm_in_clusters_kernel0(" in kernel
    assert art.kernels[0].cluster == (2, 1, 1)
    art, kernel = _lower(CL.sharing_b())  # T.ClusterKernel
    assert "__cluster_dims__(1, 2, 1)" in kernel and art.kernels[0].cluster == (1, 2, 1)


def test_before_sm90_the_grid_launches_without_clusters_and_says_so(capsys):
    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        art, kernel = _lower(CL.sharing_a(), "cuda -arch=sm_80")
    assert "__cluster_dims__" not in kernel and art.kernels[0].cluster == (1, 1, 1)
    err = capsys.readouterr().err
    assert "clusters.py:" in err and "cluster_dims=(2, 1, 1) dropped: thread-block clusters need sm_90" in err


def test_the_cluster_shape_survives_the_artifact_store():
    art, _ = _lower(CL.sharing_b())
    files = artifact_files(art)
    assert artifact_from_files(files.__getitem__).kernels[0].cluster == (1, 2, 1)


def _clustered(grid, cluster=(2, 1, 1)) -> CompiledArtifact:
    kernel = KernelInfo("scale", (A, B, ALPHA, N_PARAM), grid, (128,), cluster=cluster)
    return CompiledArtifact("f", Target.parse({"kind": "cuda", "arch": "sm_90a"}), (A, B, ALPHA), (N,),
                            (kernel,), {"cuda-source": ""})  # fmt: skip


def test_a_dynamic_grid_the_cluster_does_not_divide_is_refused_before_the_launch(no_driver):
    recorder = Recorder({11: 4})
    launch = make_launcher(_clustered((E.floordiv(N + 127, 128),)), recorder)
    launch([array(1), array(2), 1.0], [512])  # 4 blocks: two clusters
    assert recorder.launches[0][0][1] == 4
    with pytest.raises(ArgumentError, match=r"grid dim x is 3, not a multiple of its cluster_dims x = 2"):
        launch([array(1), array(2), 1.0], [300])
    assert len(recorder.launches) == 1


def test_a_constant_grid_the_cluster_does_not_divide_fails_at_load(no_driver):
    with pytest.raises(TilecraftError, match="grid dim x is 3, not a multiple of its cluster_dims x = 2"):
        make_launcher(_clustered((3,)), Recorder({}))


def test_the_compiled_launcher_leaves_dynamic_cluster_grids_to_the_checked_path():
    assert _dynamic_cluster(_clustered((E.floordiv(N + 127, 128),)).kernels[0])
    assert not _dynamic_cluster(_clustered((4,)).kernels[0])
    assert not _dynamic_cluster(_clustered((E.floordiv(N + 127, 128),), (1, 1, 1)).kernels[0])


def test_the_exported_c_api_refuses_a_grid_the_cluster_does_not_divide():
    text = c_source(_clustered((E.floordiv(N + 127, 128),)))
    assert "if (gx % 2) return CUDA_ERROR_INVALID_CLUSTER_SIZE;" in text


# ---------------------------------------------------------------- TMA multicast


def test_plain_loads_by_default():
    _, kernel = _lower(CL.sharing_a())
    assert "tc_tma_load_multicast" not in kernel and "tc_cluster_sync" not in kernel
    assert "__cluster_dims__(2, 1, 1)" in kernel


def test_blocks_sharing_a_multicast_one_slice_of_it_each():
    _, kernel = _lower(CL.sharing_a(), configs=MULTICAST)
    producer, consumer = kernel.split("} else {", 1)
    # A (64 rows) in slices of 32 rows: this block's slice at its rank's rows, to both blocks (mask 0b11)
    (load,) = re.findall(r"tc_tma_load_multicast<2>\(A_s.*", producer)
    assert (
        "tc_cluster_ctarank()) * (uint32_t)(2048)" in load
        and "tc_cluster_ctarank()) * (uint32_t)(32)" in load
    )
    assert load.endswith(", 0x3);")
    assert re.search(r"tc_tma_load<2>\(B_s", producer)  # B differs between the blocks: plain
    # the full barrier still expects the whole stage; the empty one counts both blocks' 4 warps each
    assert "tc_mbar_expect_tx(&tc_mbar[0 + (k % 3)], 16384u);" in producer
    assert "tc_mbar_init(&tc_mbar[i], 8);" in kernel
    # lanes 0 and 1 of each consumer warp release the stage in blocks 0 and 1
    assert (
        "if ((threadIdx.x & 31u) < 2u) tc_mbar_arrive_cluster(&tc_mbar[3 + ((k + 2) % 3)], threadIdx.x & 31u);"
        in consumer
    )
    # the barriers are published to the cluster, and no block leaves before its peers are done with it
    top, rest = kernel.split("tc_mbar_init_fence();", 1)
    assert rest.lstrip().startswith("}\n    tc_cluster_sync();")
    assert kernel.rstrip().endswith("tc_cluster_sync();\n}")


def test_blocks_sharing_b_multicast_b():
    _, kernel = _lower(CL.sharing_b(), configs=MULTICAST)
    producer = kernel.split("} else {", 1)[0]
    assert re.search(r"tc_tma_load_multicast<2>\(B_s", producer) and re.search(
        r"tc_tma_load<2>\(A_s", producer
    )


def test_swizzled_panels_keep_a_clusters_blocks_together_so_they_still_share():
    """T.use_swizzle renumbers whole clusters: the blocks of one keep their offsets, the A row is theirs."""
    _, kernel = _lower(
        cluster_gemm(4096, 4096, 4096, TILE, "float16", "NN", (2, 1), panel=4), configs=MULTICAST
    )
    assert "const int32_t bx_r = ((bx % 2) + " in kernel and "(bx / 2)" in kernel
    assert "tc_tma_load_multicast<2>(A_s" in kernel


def _note(func, configs=MULTICAST) -> str:
    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        _, kernel = _lower(func, configs=configs)
    assert "tc_tma_load_multicast" not in kernel
    return kernel


def test_copies_the_blocks_do_not_share_keep_plain_loads_with_a_note(capsys):
    @T.prim_func
    def diagonal(A: T.Tensor((512, 512), "float16"), B: T.Tensor((512, 512), "float16"),
                 C: T.Tensor((512, 512), "float32")):  # fmt: skip
        with T.Kernel(4, 4, threads=128, cluster_dims=2) as (bx, by):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            T.clear(C_l)
            for k in T.Pipelined(8, num_stages=3):
                T.copy(A[(by + bx) % 4 * 128, k * 64], A_s)
                T.copy(B[k * 64, bx * 128], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 128, bx * 128])

    _note(diagonal)
    err = capsys.readouterr().err
    assert "test_clusters.py:" in err
    assert "TMA loads are not multicast in the cluster: no tile of the loop is shared by the cluster's blocks " \
           "(the tile's coordinates use bx, along which the cluster runs)" in err  # fmt: skip


def test_a_cluster_over_two_axes_and_a_persistent_loop_keep_plain_loads(capsys):
    _note(cluster_gemm(1024, 1024, 1024, TILE, "float16", "NN", (2, 2)))
    assert "cluster_dims=(2, 2, 1) spans more than one grid axis" in capsys.readouterr().err

    @T.prim_func
    def persistent(A: T.Tensor((512, 512), "float16"), B: T.Tensor((512, 512), "float16"),
                   C: T.Tensor((512, 512), "float32")):  # fmt: skip
        with T.Kernel(4, threads=128, cluster_dims=2) as block:
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            for bx, by in T.Persistent([4, 4], 4, block):
                T.clear(C_l)
                for k in T.Pipelined(8, num_stages=3):
                    T.copy(A[bx * 128, k * 64], A_s)
                    T.copy(B[k * 64, by * 128], B_s)
                    T.gemm(A_s, B_s, C_l)
                T.copy(C_l, C[bx * 128, by * 128])

    _note(persistent)
    assert "the loop is in a T.Persistent loop" in capsys.readouterr().err


@pytest.mark.parametrize(("layout", "cluster", "panel"), [("NN", (2, 1), 0), ("TN", (1, 2), 0), ("NT", (4, 1), 0),
                                                          ("NN", (2, 1), 3)])  # fmt: skip
def test_multicast_gemms_compile(nvcc, tmp_path, layout, cluster, panel):
    art, kernel = _lower(cluster_gemm(1000, 1032, 520, TILE, "bfloat16", layout, cluster, panel=panel),
                         configs=MULTICAST)  # fmt: skip
    assert "tc_tma_load_multicast<" in kernel
    path = tmp_path / "k.cu"
    path.write_text(art.device_sources["cuda-source"])
    done = subprocess.run([nvcc, "-arch=sm_90a", "-cubin", "-O3", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"),
                           str(path)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "0 bytes spill stores" in done.stderr, done.stderr
