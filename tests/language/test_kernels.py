"""Kernels of the usual TileLang shapes parse, pass the semantic check, print and round-trip."""

from __future__ import annotations

import pytest

from tests.language.helpers import assert_roundtrip, node_types
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir import walk
from tilecraft.testing.conformance import kernels
from tilecraft.transform.check import check_semantics


def nodes(func, cls):
    return [n for n in walk(func.body) if isinstance(n, cls)]


@pytest.mark.parametrize("name", sorted(kernels.KERNELS))
def test_kernel_checks_and_round_trips(name):
    func = kernels.KERNELS[name]()
    check_semantics(func)
    assert_roundtrip(func)


def test_elementwise_add_guards_the_ragged_tail():
    func = kernels.elementwise_add(n=1000, block=256)
    (launch,) = nodes(func, S.KernelLaunch)
    assert E.const_value(launch.grid[0]) == 4
    (guard,) = nodes(func, S.IfThenElse)
    assert isinstance(guard.condition, E.LT) and E.const_value(guard.condition.b) == 1000


def test_softmax_and_norms_reduce_rows():
    for func in (kernels.softmax(), kernels.rms_norm(), kernels.layer_norm()):
        reduces = nodes(func, S.Reduce)
        assert reduces and all(r.dim == 1 for r in reduces)
    assert [r.kind for r in nodes(kernels.softmax(), S.Reduce)] == ["max", "sum"]
    assert {c.op for c in nodes(kernels.rms_norm(), E.Call)} == {"rsqrt"}


@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
def test_gemm_transposes(transpose_a, transpose_b):
    func = kernels.gemm(m=128, n=256, k=64, transpose_a=transpose_a, transpose_b=transpose_b)
    (gemm,) = nodes(func, S.Gemm)
    assert (gemm.transpose_a, gemm.transpose_b) == (transpose_a, transpose_b)
    a_copy, b_copy = nodes(func, S.Copy)[:2]
    assert [E.const_value(e) for e in a_copy.src.shape] == ([32, 64] if transpose_a else [64, 32])
    assert [E.const_value(e) for e in b_copy.src.shape] == ([64, 32] if transpose_b else [32, 64])
    (loop,) = nodes(func, S.For)
    assert loop.kind is S.ForKind.PIPELINED and E.const_value(loop.extent) == 2


def test_batched_gemm_copies_3d_slices_into_2d_tiles():
    func = kernels.batched_gemm()
    copies = nodes(func, S.Copy)
    assert [len(c.src.ranges) for c in copies[:2]] == [3, 3]
    for c in copies[:2]:
        assert E.const_value(c.src.ranges[0].extent) == 1
        assert [E.const_value(e) for e in c.src.shape[1:]] == [E.const_value(e) for e in c.dst.shape]


def test_split_k_accumulates_with_a_region_atomic():
    (atomic,) = nodes(kernels.split_k_gemm(), S.AtomicOp)
    assert atomic.kind == "add" and atomic.dst.buffer.scope == "global"
    assert atomic.value.buffer.scope == "local.fragment"
    assert [E.const_value(e) for e in atomic.dst.shape] == [64, 64]


def test_column_sum_accumulates_across_row_tiles():
    (reduce,) = nodes(kernels.column_sum(), S.Reduce)
    assert (reduce.kind, reduce.dim, reduce.clear) == ("sum", 0, False)


def test_flash_attention_structure():
    func = kernels.flash_attention()
    kinds = node_types(func)
    assert {"Gemm", "Reduce", "Copy", "Fill", "Select", "Call"} <= kinds
    gemms = nodes(func, S.Gemm)
    assert [g.transpose_b for g in gemms] == [True, False]
    assert {g.policy for g in gemms} == {S.GemmWarpPolicy.FullRow}
    reduces = nodes(func, S.Reduce)
    assert [(r.kind, r.clear) for r in reduces] == [("max", False), ("sum", True)]
    assert {c.op for c in nodes(func, E.Call)} == {"exp2"}
    (loop,) = [f for f in nodes(func, S.For) if f.kind is S.ForKind.PIPELINED]
    assert dict(loop.annotations) == {"num_stages": 1}
    casts = [c for c in nodes(func, S.Copy) if c.src.buffer.name == "acc_s"]
    assert [c.dst.buffer.dtype.name for c in casts] == ["float16"]
    (causal,) = nodes(func, E.Select)
    assert E.const_value(causal.false_value) == float("-inf")


def test_flash_attention_without_causal_mask_clears_instead():
    func = kernels.flash_attention(is_causal=False)
    assert "Select" not in node_types(func)
    assert any(f.dst.buffer.name == "acc_s" for f in nodes(func, S.Fill))


def test_transpose_goes_through_shared_memory():
    func = kernels.transpose()
    (store,) = nodes(func, S.BufferStore)
    assert store.buffer.scope == "shared.dyn"
    load = store.value
    assert [v.name for v in store.indices] == ["i", "j"] and [v.name for v in load.indices] == ["j", "i"]


def test_cumsum_in_place_and_reverse():
    (forward,) = nodes(kernels.cumsum(), S.Cumsum)
    (backward,) = nodes(kernels.cumsum(reverse=True), S.Cumsum)
    assert forward.src.buffer is forward.dst.buffer and forward.dim == 1
    assert (forward.reverse, backward.reverse) == (False, True)


def test_copy_carries_extra_annotations_and_an_element_copy_is_a_store():
    import tilecraft.language as T

    @T.prim_func
    def k(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float16")):
        with T.Kernel(1, threads=32):
            tile = T.alloc_shared((64,), "float32")
            T.copy(A, tile, annotations={"test.copy": "sync"})
            T.copy(tile[3], B[5])

    copies = [n for n in walk(k.body) if isinstance(n, S.Copy)]
    assert [S.annotation(c.annotations, "test.copy") for c in copies] == ["sync"]
    stores = [n for n in walk(k.body) if isinstance(n, S.BufferStore) and n.buffer.name == "B"]
    assert len(stores) == 1 and stores[0].value.dtype == "float16"
    assert_roundtrip(k)
