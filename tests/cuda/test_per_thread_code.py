"""Per-thread code on CUDA (TileLang's gemv example): thread blocks of several dims, per-thread atomics,
barriers for shared memory written and read by different threads, TVM's thread all-reduce and TileLang's
reducers. Hardware-free: the generated CUDA is checked for structure and compiled with nvcc for sm_90a
and sm_80; the conformance cases of tilecraft/testing/conformance/per_thread.py run them on a GPU."""

from __future__ import annotations

import re
import subprocess

import pytest

import tilecraft
from tilecraft.testing.conformance import per_thread as PR
from tilecraft.testing.filecheck import filecheck

ARCHS = ("sm_90a", "sm_80")
KERNELS = {
    "shared_tiles": PR.naive_gemv,
    "2d_block_atomics": PR.splitk_gemv,
    "allreduce_in_a_warp": PR.allreduce_gemv,
    "allreduce_across_warps": lambda: PR.allreduce_gemv(4, 16),
    "allreduce_max": lambda: PR.allreduce_gemv(8, 8, "max"),
    "reducer_gemv": PR.reducer_gemv,
    "reducers_over_short_loops": PR.reducer_short_loops,
    "local_arrays_through_tile_ops": PR.local_tiles,
    "allreduce_8_threads": lambda: PR.allreduce_gemv(2, 4),
    "shared_atomics_24_threads": lambda: PR.splitk_gemv(4, 6),
}


def kernel_text(func, arch: str = "sm_90a") -> str:
    source = tilecraft.lower(func, target=f"cuda -arch={arch}", execution_backend="nvrtc").source("cuda-source")
    return source[source.index("__global__") :]


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("name", sorted(KERNELS))
def test_the_kernels_compile(nvcc, tmp_path, name, arch):
    source = tilecraft.lower(KERNELS[name](), target=f"cuda -arch={arch}", execution_backend="nvrtc")
    path = tmp_path / "k.cu"
    path.write_text(source.source("cuda-source"))
    done = subprocess.run([nvcc, f"-arch={arch}", "-std=c++17", "-c", str(path), "-o", str(tmp_path / "k.o")],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_a_block_of_two_dims_is_one_linear_index_with_x_fastest():
    """threads=(16, 16): 256 threads, tn = tx % 16 and tk = tx / 16; every thread adds its partial sum
    into the shared slot (no `tx == 0` guard: the atomic's operand differs between threads), after a
    barrier that orders it behind the slot's zeroing, and a barrier before the slot is read."""
    text = kernel_text(PR.splitk_gemv())
    filecheck(text, """
        CHECK: __launch_bounds__(256)
        CHECK: if (((tx / 16) == 0)) {
        CHECK-NEXT: C_shared[(int32_t)(tx % 16)] = (float)0;
        CHECK: __syncthreads();
        CHECK-NEXT: tc_atomic_rmw_f32(&C_shared[(int32_t)(tx % 16)], acc[0], 0);
        CHECK-NEXT: __syncthreads();
        CHECK: = C_shared[(int32_t)(tx % 16)];
    """, name="splitk_gemv.cu")  # fmt: skip


def test_shared_tiles_written_per_thread_get_barriers_around_their_reads():
    """The K loop's stores and the other threads' reads are separated, and the next step's stores wait
    for this step's reads."""
    text = kernel_text(PR.naive_gemv())
    loop = text[text.index("for (int32_t bk") :]
    assert loop.count("__syncthreads();") == 2, loop


def test_an_allreduce_within_a_warp_is_shuffles_only():
    """(2, 32): threads 2 apart differ in bits 1..5 of 64 threads: four shuffles, then one shared round
    over the warp bit."""
    text = kernel_text(PR.allreduce_gemv())
    assert [int(m) for m in re.findall(r"__shfl_xor_sync\(0xffffffffu, \w+, (\d+)\)", text)] == [2, 4, 8, 16]
    assert "__syncthreads();" in text


def test_a_max_allreduce_of_an_8_by_8_block_shuffles_two_bits_and_shares_the_warp_bit():
    """(8, 8): the reduced bits 3..5 of 64 threads are lanes 8 and 16 (shuffles) and the warp bit
    (shared memory, starting from -inf)."""
    text = kernel_text(PR.allreduce_gemv(8, 8, "max"))
    shuffles = re.findall(r"tc_max_f32\(\w+, __shfl_xor_sync\(0xffffffffu, \w+, (\d+)\)\)", text)
    assert [int(m) for m in shuffles] == [8, 16]
    filecheck(text, """
        CHECK: __syncthreads();
        CHECK-NEXT: = (-TC_INFINITY);
        CHECK-NEXT: for (int32_t {{.*}} < 2;
    """, name="allreduce_max.cu")  # fmt: skip


def test_a_reducer_s_mirrored_updates_are_guarded_and_finalize_combines_the_copies():
    """In an 8-iteration loop over 128 threads, only the first thread of each replica group adds; finalize
    combines the copies by shuffles over the lanes and shared memory over the warps."""
    text = kernel_text(PR.reducer_short_loops())
    guard = re.escape("if (((((tx % 32) & 24) == 0) && (((tx / 32) & 3) == 0))) {")
    assert re.search(guard + r"\s*" + re.escape("total[0] = (total[0] + a[0]);"), text), text
    assert text.count("__shfl_xor_sync") >= 5


def test_a_reducer_gemv_is_laid_out_for_its_tile_not_for_its_row_sums():
    """TileLang's gemv_alloc_reducer at its sizes (128 x 128 tiles, 256 threads): the loop takes the tile's
    layout (8 rows of 8 consecutive elements a thread), so x arrives in vector loads (8 bytes where the
    conformance K leaves rows only that aligned) and each thread
    adds into 8 row sums, combined across the 16 threads of a row by shuffles at finalize. Laid out from
    the row sums instead (their allocation comes first), a thread held one row and read the tile
    column by column."""
    text = kernel_text(PR.reducer_gemv(block_m=128, block_n=128, threads=256))
    assert "float o_reducer[8]" in text, text
    assert re.search(re.escape("tc_v = __ldg((const uint") + "[24]" + re.escape("*)(x + "), text), text
    assert text.count("__shfl_xor_sync") >= 4 * 8, text
