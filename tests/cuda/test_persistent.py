"""`T.Persistent` on CUDA without a GPU: a warp-specialized GEMM in a persistent loop keeps one producer
across the block's tiles (the ring's use count runs on, each tile's last stage is released after its
loop), a loop the schedule cannot run on across tiles keeps the ring with a note saying why, the ring
path meets at a barrier before refilling stages its previous run may still read, and nvcc compiles
each. The protocol itself runs in tests/cuda/test_warp_specialize_protocol.py ("persistent-gemm")."""

from __future__ import annotations

import subprocess

import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.testing.conformance import persistent_tiles as PT

SM90A = "cuda -arch=sm_90a"
OFF = {"tl.disable_warp_specialized": True}


def _kernel(func, target=SM90A, configs=None):
    art = tilecraft.lower(func, target=target, execution_backend="nvrtc", pass_configs=configs)
    src = art.device_sources["cuda-source"]
    return art, src[src.index('extern "C" __global__') :]


def test_one_producer_serves_every_tile_of_the_block():
    art, kernel = _kernel(PT.persistent_gemm())
    producer, consumer = kernel.split("} else {", 1)
    assert "tc_setmaxnreg_dec<" in producer and "tc_setmaxnreg_inc<" in consumer
    # both roles walk the block's waves; the producer's one thread issues every tile of them
    # 9 tiles on 4 blocks: (9 - block + 3) // 4 waves, 3 for block 0 and 2 for the others
    waves = "for (int32_t wave = 0; wave < (((int32_t)tc_floordiv((block * (-1)), 4)) + 3); ++wave)"
    assert waves in producer and waves in consumer, kernel
    # the ring runs on: wave w's iteration k is use w * 7 + k (7 k-tiles on 3 stages)
    assert "(((wave * 7) + k) % 3)" in producer and "(((wave * 7) + k) % 3)" in consumer
    # each tile's last stage is released once its wgmmas completed, before the epilogue
    after_loop = consumer[consumer.index("tc_wgmma_wait<0>();") :]
    release = after_loop.index("tc_mbar_arrive(&tc_mbar[3 + (((wave * 7) + 6) % 3)])")
    assert release < after_loop.index("*(uint2*)(C + ")  # the epilogue's vector stores
    assert "__syncthreads" not in consumer


def test_a_trip_count_that_differs_between_tiles_keeps_the_ring_with_a_note(capsys):
    @T.prim_func
    def triangular(A: T.Tensor((512, 512), "float16"), B: T.Tensor((512, 512), "float16"),
                   C: T.Tensor((512, 512), "float32")):  # fmt: skip
        with T.Kernel(4, threads=128) as block:
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            for bx, by in T.Persistent([4, 4], 4, block):
                T.clear(C_l)
                for k in T.Pipelined((bx + 1) * 2, num_stages=3):
                    T.copy(A[bx * 128, k * 64], A_s)
                    T.copy(B[k * 64, by * 128], B_s)
                    T.gemm(A_s, B_s, C_l)
                T.copy(C_l, C[bx * 128, by * 128])

    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        _, kernel = _kernel(triangular)
    err = capsys.readouterr().err
    assert "not warp-specialized: the loop's trip count differs between the tiles" in err, err
    assert "test_persistent.py:" in err and "setmaxnreg" not in kernel


def test_a_branch_around_the_loop_keeps_the_ring_with_a_note(capsys):
    """A tile whose branch skips the loop would leave the ring's use count w * n + k behind."""

    @T.prim_func
    def some_tiles(A: T.Tensor((512, 512), "float16"), B: T.Tensor((512, 512), "float16"),
                   C: T.Tensor((512, 512), "float32")):  # fmt: skip
        with T.Kernel(4, threads=128) as block:
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            for bx, by in T.Persistent([4, 4], 4, block):
                if bx != by:
                    T.clear(C_l)
                    for k in T.Pipelined(8, num_stages=3):
                        T.copy(A[bx * 128, k * 64], A_s)
                        T.copy(B[k * 64, by * 128], B_s)
                        T.gemm(A_s, B_s, C_l)
                    T.copy(C_l, C[bx * 128, by * 128])

    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        _, kernel = _kernel(some_tiles)
    err = capsys.readouterr().err
    assert "not warp-specialized: the loop is in a branch within the T.Persistent loop" in err, err
    assert "setmaxnreg" not in kernel


@pytest.mark.parametrize("target", [SM90A, "cuda -arch=sm_80"])
def test_the_ring_meets_before_refilling_stages_its_previous_run_may_read(target):
    """Without a producer the pipeline's prologue runs again for every tile: the last tile's gemm may
    still read a stage the next prologue refills (sm_90a: wgmma in flight on another warpgroup; sm_80:
    ldmatrix after the loop's last barrier), so a barrier comes first."""
    _, kernel = _kernel(PT.persistent_gemm(), target, OFF)
    body = kernel[kernel.index("for (int32_t wave") :]
    clear = body.index("= (float)0;")
    first_copy = min(body.index(t) for t in ("tc_tma_load", "tc_cp_async") if t in body)
    assert "__syncthreads();" in body[clear:first_copy], body[:3000]


@pytest.mark.parametrize(("target", "configs"), [(SM90A, None), (SM90A, OFF), ("cuda -arch=sm_80", None)],
                         ids=["sm90a-specialized", "sm90a-ring", "sm80"])  # fmt: skip
def test_persistent_gemms_compile(nvcc, tmp_path, target, configs):
    art, _ = _kernel(PT.persistent_gemm(), target, configs)
    path = tmp_path / "k.cu"
    path.write_text(art.device_sources["cuda-source"])
    arch = target.split("=")[1]
    done = subprocess.run([nvcc, f"-arch={arch}", "-cubin", "-O3", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"),
                           str(path)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "0 bytes spill stores" in done.stderr, done.stderr
