"""check-target-support refuses what a target's `Capabilities` lack: one case per field the check reads,
each refused at the kernel's line with the record's reason, fix and limit key, and the target named.

A test-only kind builds the record each case gives (its `case` attribute picks one), so the check is
tested on the record alone; tests/<backend>/passes/test_target_support.py check the built-in records
through their pipelines. The fields the check does not read (thread_group, async_copies, matrix,
clusters) are read by the lowering passes that pick instructions, tested per backend.
"""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tilecraft.backend.capabilities import Atomics, Capabilities, Functions, Lack, Limit, Memory
from tilecraft.backend.pipeline import PassContext
from tilecraft.backend.registry import isolated_registry
from tilecraft.backend.target import Target
from tilecraft.backend.target_kind import TargetKind, register_target_kind
from tilecraft.errors import LoweringError
from tilecraft.ir import IRModule
from tilecraft.transform.target_support import check_capabilities, check_target_support

FIX = "do the other thing"


def lack(key: str | None = "feature:toy") -> Lack:
    return Lack("the toy lacks it", FIX, key)


LIMIT = Limit(64, "the toy runs at most 64", "resource:toy-threads")
CASES = {
    "refused": Capabilities(refused=Lack("the toy backend lowers nothing for this toy", FIX)),
    "max_threads": Capabilities(max_threads=LIMIT),
    "max_buffers": Capabilities(max_buffers=Limit(1, "the toy binds at most 1 buffer", "resource:toy-buffers")),
    "shared_memory": Capabilities(shared_memory=Memory(256, "toy shared memory", 16, FIX, "resource:toy-shared")),
    "private_memory": Capabilities(private_memory=Memory(64, "toy registers", fix=FIX, key="resource:toy-private")),
    "mbarriers": Capabilities(mbarriers=Lack("mbarriers are not supported on the toy", FIX)),
    "float64": Capabilities(float64=lack("dtype:float64")),
    "int64": Capabilities(int64=lack("feature:int64")),
    "float16": Capabilities(float16=lack("dtype:float16")),
    "bfloat16": Capabilities(bfloat16=lack("dtype:bfloat16")),
    "float8": Capabilities(float8=lack("dtype:float8")),
    "narrow": Capabilities(narrow=lack("dtype:4-bit-and-microscaling")),
    "wide_shared": Capabilities(float64=True, wide_shared=lack("feature:64-bit-shared")),
    "float64_math": Capabilities(float64_math=Functions(("sqrt",), lack("feature:float64-math"))),
    "atomic_dtypes": Capabilities(atomics=Atomics(dtypes=("float32",), lack=lack("feature:atomics"))),
    "atomic_scopes": Capabilities(atomics=Atomics(scopes=("global",), lack=lack("feature:atomics"))),
    "atomic_ops": Capabilities(atomics=Atomics(ops=("add",), lack=lack("feature:atomics"))),
    "print": Capabilities(print=lack("feature:print")),
    "unknown": Capabilities(),
}


@pytest.fixture(autouse=True)
def toycaps():
    with isolated_registry():
        register_target_kind(TargetKind("toycaps", attributes=("case",),
                                        capabilities=lambda t: CASES[t.attr("case")]))  # fmt: skip
        yield


def refused(case: str, func) -> LoweringError:
    """The error check-target-support raises for `func` on the toy target of `case`."""
    target = Target.parse(f"toycaps -case={case}")
    with pytest.raises(LoweringError) as info:
        check_capabilities(IRModule.from_func(func), target)
    error = info.value
    assert f"(target: {target})" in str(error) and f"hint: {error.hint}" in str(error)
    return error


def located(error: LoweringError, line: str) -> None:
    """The error points into this file, at the line that holds `line`."""
    assert f"{__file__}:" in str(error) and line in str(error), str(error)


@T.prim_func
def everything(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=128):
        s = T.alloc_shared((128,), "float32")
        acc = T.alloc_fragment((128,), "float32")
        T.copy(A, s)
        T.copy(s, acc)
        T.copy(acc, B)


def test_a_record_that_knows_nothing_refuses_nothing():
    """Capabilities() (unknown everywhere) passes a kernel through the pass unchanged."""
    mod = IRModule.from_func(everything)
    ctx = PassContext(Target.parse("toycaps -case=unknown"))
    assert check_target_support()(mod, ctx) is mod


def test_a_refused_target_refuses_every_kernel_with_its_reason():
    error = refused("refused", everything)
    assert str(error).startswith("the toy backend lowers nothing for this toy") and error.hint == FIX
    assert error.unsupported is None


def test_threads_past_the_limit_are_refused_at_the_kernel():
    error = refused("max_threads", everything)
    assert "the kernel asks for 128 threads per block; the toy runs at most 64" in str(error)
    assert error.hint == "use threads=64 or fewer" and error.unsupported == "resource:toy-threads"
    located(error, "with T.Kernel(1, threads=128):")


def test_buffers_past_the_binding_limit_are_refused_at_the_function():
    error = refused("max_buffers", everything)
    assert "everything takes 2 buffers; the toy binds at most 1 buffer" in str(error)
    assert error.unsupported == "resource:toy-buffers" and "views of one tensor count once" in error.hint
    located(error, "def everything(")


def test_shared_memory_past_the_record_is_refused_at_the_allocation():
    error = refused("shared_memory", everything)
    assert "shared buffer s (128,) float32 needs 512 bytes of toy shared memory per block" in str(error)
    assert "the target allows 256 bytes per block" in str(error)
    assert error.hint == FIX and error.unsupported == "resource:toy-shared"
    located(error, 's = T.alloc_shared((128,), "float32")')


@T.prim_func
def big_fragment(A: T.Tensor((4096,), "float32")):
    with T.Kernel(1, threads=32):
        acc = T.alloc_fragment((4096,), "float32")
        T.copy(A, acc)
        T.copy(acc, A)


def test_private_memory_past_the_record_is_refused_at_the_allocation():
    error = refused("private_memory", big_fragment)
    assert "fragment acc (4096,) float32 needs 512 bytes of toy registers per thread" in str(error)
    assert error.hint == FIX and error.unsupported == "resource:toy-private"
    located(error, 'acc = T.alloc_fragment((4096,), "float32")')


@T.prim_func
def barriers(A: T.Tensor((4,), "float32")):
    with T.Kernel(1, threads=128):
        bar = T.alloc_barrier(128)
        T.barrier_arrive(bar)
        T.barrier_wait(bar, 0)
        A[0] = 1.0


def test_mbarriers_are_refused_at_the_allocation_with_the_whole_reason():
    error = refused("mbarriers", barriers)
    assert str(error).startswith(f"{__file__}:") and "mbarriers are not supported on the toy" in str(error)
    located(error, "bar = T.alloc_barrier(128)")


def _buffer_of(dtype: str):
    @T.prim_func
    def kernel(A: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                A[i] = A[i]

    return kernel


@pytest.mark.parametrize(
    "case,dtype",
    [("float64", "float64"), ("int64", "int64"), ("int64", "uint64"), ("float16", "float16"),
     ("bfloat16", "bfloat16"), ("float8", "float8_e4m3fn"), ("float8", "float8_e5m2")],
)  # fmt: skip
def test_a_buffer_of_a_dtype_the_record_lacks_is_refused(case, dtype):
    error = refused(case, _buffer_of(dtype))
    assert f"buffer A is {dtype}, but the toy lacks it" in str(error)
    assert error.hint == FIX and error.unsupported == getattr(CASES[case], case).key
    located(error, "def kernel(A: T.Tensor((64,), dtype)):")


def test_a_4_bit_or_microscaling_value_is_refused_where_it_is_used():
    error = refused("narrow", _buffer_of("float8_e8m0fnu"))
    assert "buffer A is float8_e8m0fnu: the toy lacks it" in str(error)
    assert error.unsupported == "dtype:4-bit-and-microscaling"


@T.prim_func
def wide_tile(A: T.Tensor((64,), "float64")):
    with T.Kernel(1, threads=64):
        s = T.alloc_shared((64,), "float64")
        T.copy(A, s)
        T.copy(s, A)


def test_64_bit_shared_elements_are_refused_at_the_shared_buffer():
    error = refused("wide_shared", wide_tile)
    assert "shared buffer s is float64; the toy lacks it" in str(error)
    assert error.unsupported == "feature:64-bit-shared"
    located(error, 's = T.alloc_shared((64,), "float64")')


@T.prim_func
def float64_math(A: T.Tensor((64,), "float64"), B: T.Tensor((64,), "float64")):
    with T.Kernel(1, threads=64):
        for i in T.Parallel(64):
            B[i] = T.sqrt(A[i]) + T.exp(A[i])


def test_a_float64_function_the_record_leaves_out_is_refused_at_its_statement():
    error = refused("float64_math", float64_math)
    assert "T.exp of a float64 value: the toy lacks it" in str(error)  # T.sqrt is allowed
    assert error.unsupported == "feature:float64-math"
    located(error, "B[i] = T.sqrt(A[i]) + T.exp(A[i])")


def _atomic(dtype: str, shared: bool = False, op=T.atomic_add):
    @T.prim_func
    def kernel(A: T.Tensor((64,), dtype), B: T.Tensor((64,), dtype)):
        with T.Kernel(1, threads=64):
            s = T.alloc_shared((64,), dtype)
            T.copy(A, s)
            for i in T.Parallel(64):
                op(s[i] if shared else A[i], B[i])

    return kernel


@pytest.mark.parametrize(
    "case,kernel,words",
    [("atomic_dtypes", _atomic("float64"), "an atomic update of float64 buffer A"),
     ("atomic_scopes", _atomic("float32", shared=True), "an atomic update of shared.dyn float32 buffer s"),
     ("atomic_ops", _atomic("float32", op=T.atomic_max), "an atomic max of float32 buffer A")],
)  # fmt: skip
def test_an_atomic_update_the_record_leaves_out_is_refused_at_its_statement(case, kernel, words):
    error = refused(case, kernel)
    assert f"{words}: the toy lacks it" in str(error) and error.unsupported == "feature:atomics"
    located(error, "op(s[i] if shared else A[i], B[i])")


def test_an_atomic_update_on_the_record_passes():
    check_capabilities(IRModule.from_func(_atomic("float32")), Target.parse("toycaps -case=atomic_dtypes"))


@T.prim_func
def printing(A: T.Tensor((64,), "float32")):
    with T.Kernel(1, threads=64):
        T.print(A[0], msg="a")


def test_print_is_refused_at_its_statement():
    error = refused("print", printing)
    assert "T.print is not supported on this target: the toy lacks it" in str(error)
    assert error.unsupported == "feature:print"
    located(error, 'T.print(A[0], msg="a")')


@pytest.mark.parametrize("kernel", [everything, big_fragment, barriers, wide_tile, float64_math, printing,
                                    _atomic("float64", shared=True, op=T.atomic_min), _buffer_of("int4")])  # fmt: skip
def test_unknown_capabilities_refuse_no_kernel(kernel):
    check_capabilities(IRModule.from_func(kernel), Target.parse("toycaps -case=unknown"))
