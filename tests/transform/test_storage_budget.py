"""Per-block storage budgets: the shared check, and each target's limits reported at the allocation that
crosses them, with the buffer's shape, dtype and bytes, the limit and what to do."""

from __future__ import annotations

import pytest

import tilecraft
import tilecraft.language as T
from tests.language.helpers import marker_line
from tilecraft.cpu.storage import DEFAULT_BLOCK_SCRATCH, MAX_BLOCK_SCRATCH
from tilecraft.errors import LoweringError
from tilecraft.ir import Buffer, PrimFunc, Var
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.transform.storage_budget import StorageBudget, check_storage_budgets, format_bytes

CUDA = "cuda -arch=sm_90a"
OPENCL = "opencl -fp16=false -fp64=true -int64_atomics=true -local_mem=65536 -max_work_group_size=1024"
MARKER = "# <- too big"


def lower(func: PrimFunc, target: str, **kwargs):
    backend = "nvrtc" if target.startswith("cuda") else "auto"
    return tilecraft.lower(func, target=target, execution_backend=backend, **kwargs)


def assert_at_marker(err: LoweringError, build) -> None:
    assert err.span is not None and err.span.line == marker_line(build, MARKER), str(err)
    assert MARKER in str(err)


# ---------------------------------------------------------------------------------- the shared check


def buf(name: str, shape, scope: str, dtype: str = "float32") -> Buffer:
    return Buffer(name, tuple(E.const(s) for s in shape), dt.as_dtype(dtype), scope)


def kernel(body: S.Stmt, threads: int = 128) -> PrimFunc:
    launch = S.KernelLaunch((E.const(1),), (threads,), (Var(dt.int32, "bx"),), (Var(dt.int32, "tx"),), body)
    return PrimFunc("f", (), launch)


def nest(*buffers: Buffer) -> S.Stmt:
    body: S.Stmt = S.SeqStmt(())
    for b in reversed(buffers):
        body = S.Allocate(b, body)
    return body


BLOCK = StorageBudget("shared memory", ("shared",), 1000)
THREAD = StorageBudget("registers", ("local.fragment", "local"), 400, per_thread=True)


def test_buffers_live_together_add_up_and_the_one_crossing_the_limit_is_named():
    a, b = buf("a", (100,), "shared"), buf("b", (200,), "shared")
    check_storage_budgets(kernel(nest(a)), (BLOCK,))
    with pytest.raises(LoweringError) as info:
        check_storage_budgets(kernel(nest(a, b)), (BLOCK,))
    message = info.value.message
    assert "shared buffer b (200,) float32 needs 800 bytes of shared memory per block" in message
    assert "with a live beside it, 1200 bytes" in message
    assert "the target allows 1000 bytes per block" in message


def test_a_buffer_whose_scope_ended_no_longer_counts():
    a, b = buf("a", (200,), "shared"), buf("b", (200,), "shared")
    check_storage_budgets(kernel(S.seq(nest(a), nest(b))), (BLOCK,))


def test_a_fragment_counts_its_share_per_thread_and_a_local_array_all_of_it():
    frag = buf("acc", (128, 100), "local.fragment")
    check_storage_budgets(kernel(nest(frag), threads=128), (THREAD,))
    with pytest.raises(LoweringError, match=r"over the block's 64 threads\); the target allows 400 bytes"):
        check_storage_budgets(kernel(nest(frag), threads=64), (THREAD,))
    with pytest.raises(LoweringError, match=r"local buffer v \(101,\) float32 needs 404 bytes of registers"):
        check_storage_budgets(kernel(nest(buf("v", (101,), "local")), threads=1024), (THREAD,))


def test_scopes_outside_every_budget_and_symbolic_shapes_are_not_charged():
    n = Var(dt.int32, "n")
    symbolic = Buffer("s", (n,), dt.float32, "shared")
    check_storage_budgets(kernel(nest(buf("g", (10**6,), "local.var"), symbolic)), (BLOCK,))


def test_format_bytes():
    assert format_bytes(512) == "512 bytes"
    assert format_bytes(10_000_000_000) == "10000000000 bytes (9.3 GiB)"
    assert format_bytes(4 << 40) == "4398046511104 bytes (4 TiB)"


# ---------------------------------------------------------------------------------- cpu


def huge_fragment(n: int = 50000):
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((n, n), "float32")  # <- too big
            T.fill(f, 1.0)
            A[0] = f[0, 0]

    return k


def test_cpu_refuses_a_fragment_over_the_block_scratch_limit():
    with pytest.raises(LoweringError) as info:
        lower(huge_fragment(), "c")
    err = info.value
    assert_at_marker(err, huge_fragment)
    assert (
        "fragment f (50000, 50000) float32 needs 10000000000 bytes (9.3 GiB) of scratch memory" in err.message
    )
    assert "the target allows 1073741824 bytes (1 GiB) per block" in err.message
    assert "smaller tiles" in err.hint and MAX_BLOCK_SCRATCH in err.hint


def test_cpu_names_the_buffer_of_a_four_tebibyte_tile():
    with pytest.raises(LoweringError, match=r"fragment f \(1048576, 1048576\) float32 needs .*\(4 TiB\)"):
        lower(huge_fragment(1 << 20), "c")


def two_tiles():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((12000, 12000), "float32")
            b = T.alloc_fragment((12000, 12000), "float32")  # <- too big
            T.fill(a, 1.0)
            T.copy(a, b)
            A[0] = b[0, 0]

    return k


def test_cpu_adds_up_the_buffers_a_block_holds_at_once():
    with pytest.raises(LoweringError) as info:
        lower(two_tiles(), "c")
    assert_at_marker(info.value, two_tiles)
    assert "with a live beside it, 1152000000 bytes" in info.value.message


def test_cpu_limit_is_a_pass_config():
    assert DEFAULT_BLOCK_SCRATCH == 1 << 30
    lower(two_tiles(), "c", pass_configs={MAX_BLOCK_SCRATCH: 2 << 30})
    with pytest.raises(LoweringError, match="must be a positive int"):
        lower(two_tiles(), "c", pass_configs={MAX_BLOCK_SCRATCH: "2G"})


# ---------------------------------------------------------------------------------- gpus


@pytest.mark.parametrize("target, memory", [(CUDA, "registers and local memory"), (OPENCL, "private memory")])
def test_gpu_targets_refuse_a_fragment_whose_share_per_thread_is_huge(target, memory):
    with pytest.raises(LoweringError) as info:
        lower(huge_fragment(), target)
    err = info.value
    assert_at_marker(err, huge_fragment)
    assert f"fragment f (50000, 50000) float32 needs 78125000 bytes (74.5 MiB) of {memory} per thread" in (
        err.message
    )
    assert "over the block's 128 threads" in err.message and "allows 524288 bytes (512 KiB)" in err.message


def big_shared_tile():
    @T.prim_func
    def k(A: T.Tensor((256, 256), "float32")):
        with T.Kernel(1, threads=128):
            tile = T.alloc_shared((256, 256), "float32")  # <- too big
            T.copy(A, tile)
            T.copy(tile, A)

    return k


@pytest.mark.parametrize(
    "target, memory, limit",
    [
        (CUDA, "shared memory", "232448 bytes (227 KiB)"),
        (f"{CUDA} -max_shared_memory_per_block_optin=49152", "shared memory", "49152 bytes (48 KiB)"),
        (OPENCL, "shared (local) memory", "65536 bytes (64 KiB)"),
    ],
)
def test_gpu_targets_refuse_shared_tiles_over_the_targets_limit(target, memory, limit):
    with pytest.raises(LoweringError) as info:
        lower(big_shared_tile(), target)
    assert_at_marker(info.value, big_shared_tile)
    assert "shared buffer tile (256, 256) float32 needs 262144 bytes (256 KiB)" in info.value.message
    assert f"of {memory} per block" in info.value.message
    assert f"allows {limit} per block" in info.value.message
