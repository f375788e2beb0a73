"""Thread groups on CUDA: `if T.get_thread_binding() < 32: A else: B` runs A's and B's tile-level code on
their own threads, and a block of 96 threads (not a power of two) spreads its tiles over 64 of them while
the third warp mirrors the first (transform/thread_groups.py).

The kernel is TileLang's deepseek mHC `mhc_pre_big_fuse` reduced to what made layout inference fail:
block-wide mixes through shared memory, a one-warp group doing a row softmax and column sums of a 4x4
fragment, and a two-warp group streaming a tile through a cp.async pipeline. GPU tests are marked `gpu`
and skip without a device; the rest check the generated CUDA and compile it with nvcc.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import LoweringError

SM90 = "cuda -arch=sm_90a"


@pytest.fixture
def torch_cuda():
    from tilecraft.execution.cuda_driver import driver as cuda_driver

    status = cuda_driver.device_status(0)
    if isinstance(status, Exception):
        pytest.skip(f"no CUDA device: {status.reason}")
    torch = pytest.importorskip("torch", reason="the GPU tests use torch tensors; pip install torch")
    if not torch.cuda.is_available():
        pytest.skip("torch was built without CUDA or sees no device")
    return torch


TOKENS, HIDDEN, BLOCK = 5, 256, 128


@T.prim_func
def mhc_reduced(
    X: T.Tensor((TOKENS, 24), T.float32),
    Res: T.Tensor((TOKENS, 4, HIDDEN), T.float32),
    Post: T.Tensor((TOKENS, 4), T.float32),
    Comb: T.Tensor((TOKENS, 16), T.float32),
    Out: T.Tensor((TOKENS, HIDDEN), T.float32),
):
    with T.Kernel(TOKENS, threads=96) as i:
        mixes = T.alloc_fragment(24, T.float32)
        for j in T.Parallel(24):
            mixes[j] = X[i, j] * 2.0
        mixes_s = T.alloc_shared(24, T.float32)
        T.copy(mixes, mixes_s)
        if T.get_thread_binding() < 32:
            cm = T.alloc_fragment((4, 4), T.float32)
            for j in T.Parallel(4):
                Post[i, j] = T.sigmoid(mixes_s[j + 4])
            for j, k in T.Parallel(4, 4):
                cm[j, k] = mixes_s[8 + j * 4 + k]
            row_max = T.alloc_fragment(4, T.float32)
            T.reduce_max(cm, row_max, dim=1)
            for j, k in T.Parallel(4, 4):
                cm[j, k] = T.exp(cm[j, k] - row_max[j])
            col = T.alloc_fragment(4, T.float32)
            T.reduce_sum(cm, col, dim=0)
            for j, k in T.Parallel(4, 4):
                Comb[i, j * 4 + k] = cm[j, k] / col[k]
        else:
            pre_s = T.alloc_shared(4, T.float32)
            for j in T.Parallel(4):
                pre_s[j] = T.sigmoid(mixes_s[j])
            for h in T.Pipelined(HIDDEN // BLOCK, num_stages=2):
                xs = T.alloc_shared((4, BLOCK), T.float32)
                xl = T.alloc_fragment((4, BLOCK), T.float32)
                T.copy(Res[i, 0, h * BLOCK], xs)
                T.copy(xs, xl)
                ol = T.alloc_fragment(BLOCK, T.float32)
                T.clear(ol)
                for c in T.serial(4):
                    for t in T.Parallel(BLOCK):
                        ol[t] += pre_s[c] * xl[c, t]
                T.copy(ol, Out[i, h * BLOCK])


def reference(x, res):
    mixes = x.astype(np.float64) * 2.0
    sigmoid = lambda v: 1.0 / (1.0 + np.exp(-v))  # noqa: E731
    post = sigmoid(mixes[:, 4:8])
    cm = mixes[:, 8:24].reshape(-1, 4, 4)
    cm = np.exp(cm - cm.max(axis=2, keepdims=True))
    comb = (cm / cm.sum(axis=1, keepdims=True)).reshape(-1, 16)
    out = np.einsum("tc,tch->th", sigmoid(mixes[:, 0:4]), res.astype(np.float64))
    return post, comb, out


def inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((TOKENS, 24)).astype(np.float32)
    res = rng.standard_normal((TOKENS, 4, HIDDEN)).astype(np.float32)
    outs = [np.full(shape, np.nan, np.float32) for shape in ((TOKENS, 4), (TOKENS, 16), (TOKENS, HIDDEN))]
    return x, res, outs


def kernel_text(func, target: str = SM90) -> str:
    source = tilecraft.lower(func, target=target, execution_backend="nvrtc").source("cuda-source")
    return source.split('extern "C" __global__')[-1]


def branch_sides(text: str) -> tuple[str, str]:
    """The then and else side of the thread-group branch (the first `if ((tx < 32))`)."""
    start = text.index("if ((tx < 32)) {")
    split = text.index("} else {", start)
    return text[start:split], text[split:]


def test_the_groups_lower_with_their_own_barriers():
    text = kernel_text(mhc_reduced)
    assert "__launch_bounds__(96)" in text
    then_side, else_side = branch_sides(text)
    # the one-warp group reduces with shuffles only; the two-warp group meets at its own barrier
    assert (
        "__shfl_xor_sync" in then_side
        and "__syncthreads" not in then_side
        and "named_barrier" not in then_side
    )
    assert "__syncthreads" not in else_side and "tc_named_barrier(2, 64);" in else_side
    assert "tc_cp_async" in else_side  # the pipeline's copies are asynchronous, its barrier the group's
    # warp 2 mirrors warp 0 in block-wide code and writes no memory
    before = text[: text.index("if ((tx < 32)) {")]
    assert "(tx < 64)" in before and "__syncthreads();" in before


def test_the_groups_compile(nvcc, tmp_path):
    import subprocess

    source = tilecraft.lower(mhc_reduced, target=SM90, execution_backend="nvrtc").source("cuda-source")
    path = tmp_path / "k.cu"
    path.write_text(source)
    done = subprocess.run([nvcc, "-arch=sm_90a", "-std=c++17", "-c", str(path), "-o", str(tmp_path / "k.o")],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_the_groups_run_on_the_cpu():
    x, res, (post, comb, out) = inputs(1)
    tilecraft.compile(mhc_reduced, target="c")(x, res, post, comb, out)
    for got, want in zip((post, comb, out), reference(x, res)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
def test_the_groups_run_on_the_gpu(torch_cuda):
    torch = torch_cuda
    x, res, (post, comb, out) = inputs(2)
    args = [torch.from_numpy(a).cuda() for a in (x, res, post, comb, out)]
    tilecraft.compile(mhc_reduced, target="cuda")(*args)
    for got, want in zip(args[2:], reference(x, res)):
        np.testing.assert_allclose(got.cpu().numpy(), want, rtol=1e-5, atol=1e-5)


N_TWINS = 1000


@T.prim_func
def twins(
    A: T.Tensor((N_TWINS,), T.float32), Total: T.Tensor((1,), T.float32), B: T.Tensor((N_TWINS,), T.float32)
):
    """A block of 96 threads: the tiles are spread over 64, the third warp mirrors the first; a twin that
    wrote memory would add its share twice."""
    with T.Kernel(T.ceildiv(N_TWINS, 256), threads=96) as bx:
        tile = T.alloc_fragment(256, T.float32)
        part = T.alloc_fragment(1, T.float32)
        for t in T.Parallel(256):
            tile[t] = T.if_then_else(bx * 256 + t < N_TWINS, A[bx * 256 + t], 0.0)
        T.reduce_sum(tile, part, dim=0)
        T.atomic_add(Total[0], part[0])
        for t in T.Parallel(256):
            if bx * 256 + t < N_TWINS:
                B[bx * 256 + t] = tile[t] * 3.0


def test_twins_write_no_memory():
    text = kernel_text(twins)
    assert "__launch_bounds__(96)" in text
    for write in ("tc_atomic_rmw_f32(&Total[0]", "B[(int64_t)"):
        at = text.index(write)
        assert re.search(r"if \(\(tx < 64\)\) \{\s*$", text[:at]), write


@pytest.mark.gpu
def test_twins_run_on_the_gpu(torch_cuda):
    torch = torch_cuda
    a = np.random.default_rng(3).standard_normal(N_TWINS).astype(np.float32)
    args = [
        torch.from_numpy(a).cuda(),
        torch.zeros(1, device="cuda"),
        torch.full((N_TWINS,), float("nan"), device="cuda"),
    ]
    tilecraft.compile(twins, target="cuda")(*args)
    np.testing.assert_allclose(args[1].item(), a.astype(np.float64).sum(), rtol=1e-4)
    np.testing.assert_allclose(args[2].cpu().numpy(), a * 3.0, rtol=1e-6)


def test_a_group_that_is_not_whole_warps_is_located():
    @T.prim_func
    def half_warp(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64):
            if T.get_thread_binding() < 16:
                for t in T.Parallel(64):  # <- the group
                    A[t] = 1.0

    with pytest.raises(LoweringError) as info:
        kernel_text(half_warp)
    err = info.value
    assert "runs on threads 0..15" in err.message and "whole groups of 32 threads" in err.message
    assert err.span is not None and "T.get_thread_binding() < 16" in err.span.source_line()


def test_a_fragment_two_groups_use_is_located():
    @T.prim_func
    def shared_fragment(A: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64):
            f = T.alloc_fragment(64, T.float32)
            if T.get_thread_binding() < 32:
                for t in T.Parallel(64):
                    f[t] = A[t]
            else:
                for t in T.Parallel(64):
                    A[t] = f[t] * 2.0  # <- the other group's fragment

    with pytest.raises(LoweringError) as info:
        kernel_text(shared_fragment)
    err = info.value
    assert (
        "fragment f is used by two thread groups: threads [0, 32)" in err.message
        and "[32, 64)" in err.message
    )
    assert "shared memory" in err.hint


def test_a_kernel_split_into_groups_says_why_it_has_no_wgmma(capsys):
    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        kernel_text(mhc_reduced)
    assert "the kernel's tiles run on part of its threads" in capsys.readouterr().err


# ------------------------------------------------------------------ explicit warp specialization

WS = 64


@T.prim_func
def ws_gemm(
    A: T.Tensor((WS, 128), T.float16), B: T.Tensor((128, WS), T.float16), C: T.Tensor((WS, WS), T.float32)
):
    """TileLang's warp_specialize GEMM reduced: warpgroup 0 loads each k tile into a two-stage ring and
    hands it over through mbarriers, warpgroup 1 multiplies."""
    with T.Kernel(1, threads=256):
        A_s = T.alloc_shared((2, WS, 32), T.float16)
        B_s = T.alloc_shared((2, 32, WS), T.float16)
        C_l = T.alloc_fragment((WS, WS), T.float32)
        bars = T.alloc_barrier([128] * 4)  # full 0, 1; empty 2, 3
        with T.ws(1):
            T.clear(C_l)
        for ko in range(4):
            with T.ws(0):
                T.mbarrier_wait_parity(bars[ko % 2 + 2], (ko // 2) % 2 ^ 1)
                T.tma_copy(A[0, ko * 32], A_s[ko % 2, :, :], barrier=bars[ko % 2])
                T.tma_copy(B[ko * 32, 0], B_s[ko % 2, :, :], barrier=bars[ko % 2])
                T.mbarrier_arrive(bars[ko % 2])
            with T.ws(1):
                T.mbarrier_wait_parity(bars[ko % 2], (ko // 2) % 2)
                T.gemm(A_s[ko % 2, :, :], B_s[ko % 2, :, :], C_l)
                T.mbarrier_arrive(bars[ko % 2 + 2])
        with T.ws(1):
            T.copy(C_l, C)


def ws_inputs(seed: int):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((WS, 128)).astype(np.float16)
    b = rng.standard_normal((128, WS)).astype(np.float16)
    return a, b, a.astype(np.float64) @ b.astype(np.float64)


def test_warp_specialization_lowers_to_mbarriers():
    text = kernel_text(ws_gemm)
    assert text.count("tc_mbar_init(&bars[") == 4 and "tc_mbar_init_fence();" in text
    loop = text[text.index("for (int32_t ko") :]
    # the groups order themselves through the mbarriers: no barrier of the block between them
    assert "__syncthreads" not in loop and "named_barrier" not in loop
    assert "tc_mbar_wait(&bars[" in loop and "tc_mbar_arrive(&bars[" in loop
    # the consumer warpgroup's gemm runs on its own warps 0..3, on the ring stage it waited for
    assert re.search(r"tc::gemm_ss<64, 64, 32, 2, 2, false, false, false>\(A_s \+ \(0 \+ \(\(ko % 2\) \* 2048\)\), "
                     r"B_s \+ \(0 \+ \(\(ko % 2\) \* 2048\)\), C_l, [^;]*\(tx - 128\)", loop)  # fmt: skip


def test_warp_specialization_compiles(nvcc, tmp_path):
    import subprocess

    path = tmp_path / "ws.cu"
    path.write_text(tilecraft.lower(ws_gemm, target=SM90, execution_backend="nvrtc").source("cuda-source"))
    done = subprocess.run([nvcc, "-arch=sm_90a", "-std=c++17", "-c", str(path), "-o", str(tmp_path / "ws.o")],
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_mbarriers_need_sm90():
    with pytest.raises(LoweringError, match=r"T.alloc_barrier needs sm_90 or newer"):
        kernel_text(ws_gemm, "cuda -arch=sm_80")


def test_mbarriers_are_refused_where_there_are_none():
    with pytest.raises(LoweringError, match=r"mbarriers \(T.alloc_barrier.*\) are not supported on"):
        tilecraft.lower(ws_gemm, target="opencl", execution_backend="opencl")


@pytest.mark.gpu
def test_warp_specialization_runs_on_the_gpu(torch_cuda):
    torch = torch_cuda
    a, b, want = ws_inputs(4)
    c = torch.full((WS, WS), float("nan"), device="cuda")
    tilecraft.compile(ws_gemm, target="cuda")(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda(), c)
    np.testing.assert_allclose(c.cpu().numpy(), want, rtol=2e-3, atol=2e-3)
