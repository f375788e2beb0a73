"""widen-index-arithmetic: index arithmetic that may leave int32 is computed in int64, the rest is not,
and simplification never drops a guard that only 32-bit wrap-around would make true."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.ir import IRModule, walk
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.transform.simplify import simplify_func
from tilecraft.transform.widen import widen_func

BIG = 2**31 + 8


def _guarded_fill(size: int):
    @T.prim_func
    def guarded_fill(A: T.Tensor((size,), "int8")):
        with T.Kernel(T.ceildiv(size, 1024)) as bx:
            for i in T.Parallel(1024):
                if bx * 1024 + i < size:
                    A[bx * 1024 + i] = 1

    return guarded_fill


def _exprs(func) -> list[E.Expr]:
    return [n for n in walk(func.body) if isinstance(n, E.Expr)]


def _guards(func) -> list[E.Expr]:
    return [n.condition for n in walk(func.body) if isinstance(n, S.IfThenElse)]


def test_guard_of_a_tensor_past_int32_survives_and_is_computed_in_64_bits() -> None:
    func = widen_func(simplify_func(_guarded_fill(BIG)))
    (guard,) = _guards(func)
    assert isinstance(guard, E.LT) and guard.a.dtype == dt.int64
    # No 32-bit sum is cast up after the fact: the arithmetic itself is 64-bit.
    assert not any(isinstance(e, E.Cast) and isinstance(e.value, (E.Add, E.Mul)) for e in walk(guard))


def test_kernels_whose_indices_fit_keep_32_bit_arithmetic() -> None:
    func = widen_func(simplify_func(_guarded_fill(100_000)))
    assert not any(e.dtype == dt.int64 for e in _exprs(func))


def test_a_loop_longer_than_int32_gets_a_64_bit_variable() -> None:
    @T.prim_func
    def long_loop(A: T.Tensor((BIG,), "int8")):
        with T.Kernel(1) as bx:
            for i in T.serial(BIG - bx):
                A[i] = 2

    func = widen_func(simplify_func(long_loop))
    (loop,) = [n for n in walk(func.body) if isinstance(n, S.For)]
    assert loop.loop_var.dtype == dt.int64


def _dynamic_guard(block: int):
    M = T.dynamic("M")

    @T.prim_func
    def dyn(A: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, block)) as bx:
            for i in T.Parallel(block):
                if bx * block + i < M:
                    A[bx * block + i] = 1.0
            for j in T.Parallel(block):
                A[j] = 2.0

    return widen_func(simplify_func(dyn))


def test_dynamic_int32_dims_widen_only_what_may_overflow() -> None:
    # With M up to 2**31 - 1, bx * 1000 + i reaches 2147483999: the guard compares in int64.
    func = _dynamic_guard(1000)
    (guard,) = _guards(func)
    assert guard.a.dtype == dt.int64
    stores = [n for n in walk(func.body) if isinstance(n, S.BufferStore)]
    assert stores[-1].indices[0].dtype == dt.int32  # j < 1000 stays 32-bit
    # With a 128-wide tile, bx * 128 + i stays below ceildiv(M, 128) * 128 <= 2**31: no widening.
    (guard,) = _guards(_dynamic_guard(128))
    assert guard.a.dtype == dt.int32


@pytest.mark.parametrize("target", ["c", "cuda -arch=sm_90a", "opencl"])
def test_every_target_keeps_the_guard(target: str) -> None:
    """The generated source of each target still tests the index against 2**31 + 8."""
    try:
        artifact = tilecraft.lower(_guarded_fill(BIG), target=target)
    except Exception as err:  # noqa: BLE001 - a target that cannot even lower here is not under test
        pytest.skip(f"cannot lower for {target} here: {err}")
    source = "\n".join(artifact.device_sources.values())
    assert str(BIG) in source


def test_a_tensor_past_int32_is_written_exactly_to_its_end() -> None:
    """Issue 10's reproducer: 1,016 bytes were written past the end. Run on the CPU (2 GiB)."""
    kernel = tilecraft.compile(_guarded_fill(BIG), target="c")
    tail = 4096
    memory = np.zeros(BIG + tail, dtype=np.int8)
    kernel(memory[:BIG])
    assert memory[BIG - 1] == 1 and memory[0] == 1
    assert not memory[BIG:].any(), "the kernel wrote past the end of its tensor"
    del memory


def test_the_pipeline_module_pass_runs_on_every_function() -> None:
    from tilecraft.transform.widen import widen_index_arithmetic

    mod = IRModule.from_func(simplify_func(_guarded_fill(BIG)))
    out = widen_index_arithmetic(mod, None)
    (guard,) = _guards(out.functions[0])
    assert guard.a.dtype == dt.int64
