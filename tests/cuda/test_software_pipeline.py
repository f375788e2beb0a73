"""inject-software-pipeline on CUDA without a GPU: every access of a staged tile in the loop body goes
to the iteration's stage (tests/conformance/pipelined_stages.py runs the kernel)."""

from __future__ import annotations

import tilecraft
from tilecraft.testing.conformance.pipelined_stages import copy_through_stages
from tilecraft.testing.filecheck import filecheck


def test_a_vector_copy_out_of_a_staged_tile_reads_the_iterations_stage():
    art = tilecraft.lower(copy_through_stages(), target="cuda -arch=sm_80")
    src = art.source("cuda-source")
    kernel = src[src.index('extern "C" __global__') :]
    tile = 64 * 64
    # each iteration waits for its stage's copy and meets the other threads, refills the stage two
    # ahead, then reads its own stage, k % 3
    checks = f"""
        CHECK: for (int32_t k = 0; k < 8; ++k) {{
        CHECK-NEXT: tc_cp_async_wait<1>();
        CHECK-NEXT: __syncthreads();
        CHECK-NEXT: if (((k + 2) < 8)) {{
        CHECK: tc_cp_async16(A_s + ((((k + 2) % 3) * {tile})
        CHECK: tc_cp_async_commit();
        CHECK: *(uint4*)(B +
        CHECK-SAME: = *(const uint4*)(A_s + (((int64_t)(((k % 3) * {tile}))) +
        CHECK: tc_cp_async_wait<0>();
    """
    filecheck(kernel, checks)


def test_a_tma_staged_tile_is_read_at_the_iterations_stage_on_sm90a():
    """On sm_90a the tile (no gemm reads it, no layout) is one unswizzled TMA box a stage, issued by a
    producer warpgroup; the consumers wait for stage k % 3, read it there and release it."""
    src = tilecraft.lower(copy_through_stages(), target="cuda -arch=sm_90a").source("cuda-source")
    kernel = src[src.index('extern "C" __global__') :]
    tile = 64 * 64
    checks = f"""
        CHECK: tc_setmaxnreg_dec<24>();
        CHECK: for (int32_t k = 0; k < 8; ++k) {{
        CHECK-NEXT: tc_mbar_wait(&tc_mbar[3 + (k % 3)], (uint32_t)((((k / 3) + 1) % 2)));
        CHECK-NEXT: tc_mbar_expect_tx(&tc_mbar[0 + (k % 3)], {tile * 2}u);
        CHECK-NEXT: tc_tma_load<2>(A_s + (((k % 3) * {tile}) + 0), tc_tmap0, {{(int32_t)(0), (int32_t)((k * 64))}}, &tc_mbar[0 + (k % 3)]);
        CHECK: tc_setmaxnreg_inc<232>();
        CHECK: for (int32_t k = 0; k < 8; ++k) {{
        CHECK-NEXT: tc_mbar_wait(&tc_mbar[0 + (k % 3)], (uint32_t)(((k / 3) % 2)));
        CHECK: *(uint4*)(B +
        CHECK-SAME: = *(const uint4*)(A_s + (((int64_t)(((k % 3) * {tile}))) +
        CHECK: tc_mbar_arrive(&tc_mbar[3 + (k % 3)]);
    """
    filecheck(kernel, checks)


def test_two_copies_into_one_tile_keep_the_loop_synchronous(capsys):
    """A stage holds one tile: with two copies into it per iteration the loop is not pipelined, so each
    gemm reads the half copied just before it (the conformance case checks the result)."""
    from tilecraft.testing.conformance.pipelined_stages import two_copies_per_tile

    for arch in ("sm_80", "sm_90a"):
        with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
            src = tilecraft.lower(two_copies_per_tile(), target=f"cuda -arch={arch}").source("cuda-source")
        kernel = src[src.index('extern "C" __global__') :]
        assert "(ko % 2)" not in kernel and "setmaxnreg" not in kernel  # no stages, no producer
    assert (
        "not warp-specialized: two copies of the loop fill A_s (a stage holds one tile)"
        in capsys.readouterr().err
    )
