"""The shared semantic check: what it accepts, and the rules it enforces on IR that did not come from the
parser (passes build nodes without spans)."""

from __future__ import annotations

import pytest

import tilecraft.language as T
from tilecraft.errors import SemanticError
from tilecraft.ir import Buffer, BufferRegion, IRModule, PrimFunc, Range, Var
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.visitor import substitute
from tilecraft.testing.conformance import kernels
from tilecraft.transform.check import GEMM_ACCUMULATORS, check_semantics


def launch(body: S.Stmt, threads=(128,)) -> S.KernelLaunch:
    return S.KernelLaunch((E.const(1),), threads, (Var(dt.int32, "bx"),), (Var(dt.int32, "tx"),), body)


def func_of(body: S.Stmt, *params) -> PrimFunc:
    return PrimFunc("f", params, body)


def buf(shape, dtype="float32", scope="local.fragment", name="x") -> Buffer:
    return Buffer(name, tuple(E.const(s) for s in shape), dt.as_dtype(dtype), scope)


def test_every_shared_kernel_passes():
    check_semantics(IRModule(tuple(build() for build in kernels.KERNELS.values())))


@pytest.mark.parametrize(
    ("operand", "accumulator"), [(a, c) for a, cs in GEMM_ACCUMULATORS.items() for c in cs]
)
def test_gemm_accepts_every_listed_accumulator(operand, accumulator):
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 32), operand)
            b = T.alloc_fragment((32, 64), operand)
            c = T.alloc_fragment((64, 64), accumulator)
            T.gemm(a, b, c)

    check_semantics(k)


def test_gemm_mixes_float8_formats_and_allows_leading_unit_dims():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((1, 64, 32), "float8_e4m3fn")
            b = T.alloc_shared((32, 64), "float8_e5m2")
            c = T.alloc_fragment((64, 64), "float32")
            T.gemm(a, b, c)

    check_semantics(k)


def test_symbolic_extents_that_may_match_pass():
    """The check only rejects what it can prove wrong; edges of dynamic shapes are run-time matters."""
    n = T.dynamic("n")

    @T.prim_func
    def k(A: T.Tensor((n, 64), "float16"), B: T.Tensor((n, 64), "float16")):
        with T.Kernel(T.ceildiv(n, 32), threads=128) as bx:
            tile = T.alloc_shared((32, 64), "float16")
            T.copy(A[bx * 32 : n, 0:64], tile)
            T.copy(tile, B[bx * 32, 0])

    check_semantics(k)


def test_copy_converts_dtypes_and_drops_unit_dims():
    @T.prim_func
    def k(A: T.Tensor((4, 64, 64), "float16"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            tile = T.alloc_fragment((64, 64), "float32")
            row = T.alloc_fragment((1, 64), "float32")
            T.copy(A[1, :, :], tile)
            T.copy(tile[3:4, :], row)
            T.copy(row, B)

    check_semantics(k)


def test_reduce_output_may_keep_the_reduced_dim_as_one():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((64, 32), "float32")
            kept = T.alloc_fragment((64, 1), "float32")
            T.reduce_sum(x, kept, dim=1)

    check_semantics(k)


def test_error_in_the_second_function_of_a_module():
    good = kernels.transpose()

    @T.prim_func
    def bad(A: T.Tensor((16,), "int8")):
        with T.Kernel(1, threads=32):
            T.atomic_add(A[0], 1)

    with pytest.raises(SemanticError, match="atomic_add on int8"):
        check_semantics(IRModule((good, bad)))


# ------------------------------------------------------------------ on-chip indices carried past the shape


def test_a_fragment_indexed_past_its_shape_by_a_parallel_loop():
    """TileLang's attention-sink examples: `sinks = T.alloc_fragment([heads])` filled by
    `for i in T.Parallel(block_M): sinks[i] = Sinks[by]` with heads < block_M wrote past the fragment."""

    @T.prim_func
    def k(Sinks: T.Tensor((2,), "float32"), Y: T.Tensor((2, 64), "float32")):
        with T.Kernel(4, 2, threads=128) as (bx, by):
            sinks = T.alloc_fragment((2,), "float32")
            for i in T.Parallel(16):
                sinks[i] = Sinks[by]
            for i in T.Parallel(16):
                Y[by, bx * 16 + i] = sinks[i]

    with pytest.raises(SemanticError) as info:
        check_semantics(k)
    message = str(info.value)
    assert "fragment sinks of shape (2,), allocated at line" in message
    assert "index i runs over 0..15 in the loops around it, but dim 0 has size 2" in message
    assert "sinks[i] = Sinks[by]" in message  # the located source line
    assert "allocate dim 0 with at least 16 elements" in message


def test_indices_past_the_shape_in_every_on_chip_scope_and_through_names():
    """Shared and local buffers have no edge predicates either; the index may be an affine sum of
    loop variables, through names bound to it."""

    @T.prim_func
    def shared(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((8, 32), "float32")
            for i, j in T.Parallel(8, 16):
                k = j * 2 + 2
                s[i, k] = A[j]

    @T.prim_func
    def below_zero(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_local((16,), "float32")
            for i in T.serial(16):
                x[15 - i - 1] = A[i]

    with pytest.raises(SemanticError, match=r"index k runs over 2\.\.32 .* dim 1 has size 32"):
        check_semantics(shared)
    with pytest.raises(
        SemanticError, match=r"outside its shape: index .* runs over -1\.\.14 .* dim 0 has size 16"
    ):
        check_semantics(below_zero)


def test_indices_that_may_stay_inside_are_accepted():
    """Only an index every value of which is reached is judged: a guard, a select, a loop whose extent
    is known at run time only, or anything but loop variables (block indices, data) leaves it alone; a
    fragment wider than the loop that indexes it is fine."""
    n = T.dynamic("n")

    @T.prim_func
    def k(A: T.Tensor((n,), "int32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(T.ceildiv(n, 64), threads=128) as bx:
            small = T.alloc_fragment((8,), "float32")
            wide = T.alloc_fragment((128,), "float32")
            for i in T.Parallel(64):
                wide[i] = 1.0
                if i < 8:
                    small[i] = wide[i]
                Y[i] = T.if_then_else(i < 8, small[i], 0.0)
            for i in T.serial(n):
                small[i] = 2.0
            for i in T.Parallel(8):
                small[i + bx] = wide[A[i]]

    check_semantics(k)


# ---------------------------------------------------------------------------------- IR without spans


def test_allocation_outside_a_kernel():
    x = buf((4,))
    with pytest.raises(SemanticError, match="allocating x is only valid inside `with T.Kernel") as info:
        check_semantics(func_of(S.Allocate(x, S.SeqStmt(()))))
    assert "allocate it inside the T.Kernel block that uses it" in str(info.value)
    assert info.value.span is None


def test_loop_outside_a_kernel_and_float_extent():
    i = Var(dt.int32, "i")
    loop = S.For(i, E.const(0), E.const(4), S.ForKind.SERIAL, S.SeqStmt(()))
    with pytest.raises(SemanticError, match="a loop is only valid inside"):
        check_semantics(func_of(loop))
    bad = S.For(i, E.const(0), E.const(4.0), S.ForKind.SERIAL, S.SeqStmt(()))
    with pytest.raises(SemanticError, match="loop extent must be an integer, got float32"):
        check_semantics(func_of(launch(bad)))


def test_nested_launch_built_by_a_pass():
    with pytest.raises(SemanticError, match="cannot be nested"):
        check_semantics(func_of(launch(launch(S.SeqStmt(())))))


def test_error_falls_back_to_the_function_span():
    from tilecraft.ir import Span

    span = Span("kernel.py", 7, 4)
    func = PrimFunc("f", (), S.Allocate(buf((4,)), S.SeqStmt(())), span=span)
    with pytest.raises(SemanticError) as info:
        check_semantics(func)
    assert info.value.span is span and str(info.value).startswith("kernel.py:7:5: ")


def test_reduce_rules():
    x, out = buf((8, 8)), buf((8,), name="out")
    with pytest.raises(SemanticError, match="unknown reduction 'mean'; valid: sum, max, min, abssum, absmax"):
        check_semantics(func_of(launch(S.Reduce("mean", x.full_region(), out.full_region(), 1))))
    flags = buf((8, 8), "bool")
    with pytest.raises(SemanticError, match="reduce_sum of a bool buffer"):
        check_semantics(func_of(launch(S.Reduce("sum", flags.full_region(), out.full_region(), 1))))


def test_cumsum_shapes_must_match():
    x, y = buf((8, 8), scope="shared"), buf((8, 4), scope="shared", name="y")
    with pytest.raises(SemanticError, match=r"T.cumsum source \(8, 8\) and destination \(8, 4\) differ"):
        check_semantics(func_of(launch(S.Cumsum(x.full_region(), y.full_region(), 1))))


def test_region_atomic_extents_must_match():
    C = buf((64, 64), scope="global", name="C")
    f = buf((32, 32))
    dst = BufferRegion(C, (Range(E.const(0), E.const(32)), Range(E.const(0), E.const(16))))
    with pytest.raises(SemanticError, match=r"T.atomic_add extents differ: \(32, 16\) vs \(32, 32\)"):
        check_semantics(func_of(launch(S.AtomicOp("add", dst, f.full_region())), C))


def test_gemm_accumulator_in_global_memory():
    a, b = buf((16, 16), "float16", "shared", "a"), buf((16, 16), "float16", "shared", "b")
    C = buf((16, 16), scope="global", name="C")
    gemm = S.Gemm(a.full_region(), b.full_region(), C.full_region())
    with pytest.raises(SemanticError, match="accumulator C is in global memory") as info:
        check_semantics(func_of(launch(gemm), C))
    assert "accumulate into T.alloc_fragment" in str(info.value)


def test_print_outside_a_kernel():
    with pytest.raises(SemanticError, match="T.print is only valid inside"):
        check_semantics(func_of(S.Print(E.const(1))))


def test_errors_carry_no_checker_frames():
    with pytest.raises(SemanticError) as info:
        check_semantics(func_of(S.Print(E.const(1))))
    frames = []
    tb = info.value.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_name)
        tb = tb.tb_next
    assert "visit" not in frames and "fail" not in frames


# ---------------------------------------------------------------------------------- values without meaning


def store(buffer: Buffer, index: E.Expr, value=0.0) -> S.BufferStore:
    return S.BufferStore(buffer, E.const(value, buffer.dtype), (index,))


@pytest.mark.parametrize(
    "index, dtype",
    [(E.const(1.5), "float32"), (Var(dt.float16, "h"), "float16"), (E.const(True), "bool")],
)
def test_indices_must_be_integers(index, dtype):
    A = buf((16,), scope="global", name="A")
    with pytest.raises(SemanticError, match=f"index .* of A has dtype {dtype}; indices must be integers"):
        check_semantics(func_of(launch(store(A, index)), A))
    load = S.BufferStore(A, E.BufferLoad(dt.float32, A, (index,)), (E.const(0),))
    with pytest.raises(SemanticError, match=f"has dtype {dtype}; indices must be integers"):
        check_semantics(func_of(launch(load), A))


def test_region_bounds_must_be_integers():
    A, tile = buf((16,), scope="global", name="A"), buf((4,), scope="shared", name="tile")
    region = BufferRegion(A, (Range(E.const(2.0), E.const(4)),))
    with pytest.raises(SemanticError, match="region start 2.0 of A has dtype float32") as info:
        check_semantics(func_of(launch(S.Copy(region, tile.full_region())), A))
    assert "T.cast" in info.value.hint


def test_a_zero_divisor_left_by_specialization_is_found():
    """`T.const` values are substituted without re-folding, so `x // (K - 64)` reaches the check unfolded."""
    A = buf((16,), "int32", scope="global", name="A")
    K = Var(dt.int32, "K")
    body = S.BufferStore(A, E.floordiv(E.BufferLoad(dt.int32, A, (E.const(1),)), K - 64), (E.const(0),))
    check_semantics(func_of(launch(body), A))
    specialized = substitute(func_of(launch(body), A), {K: E.const(64)})
    with pytest.raises(
        SemanticError, match=r"division by zero: the divisor of A\[1\] // \(64 - 64\) is .*= 0"
    ):
        check_semantics(specialized)


@pytest.mark.parametrize("make", [E.truncdiv, E.truncmod, E.floormod, E.div])
def test_every_integer_division_by_zero(make):
    A = buf((16,), "int64", scope="global", name="A")
    body = S.BufferStore(A, make(E.BufferLoad(dt.int64, A, (E.const(1),)), 0), (E.const(0),))
    with pytest.raises(SemanticError, match="integer division by zero"):
        check_semantics(func_of(launch(body), A))


def test_float_division_by_zero_is_ieee_and_allowed():
    A = buf((16,), scope="global", name="A")
    body = S.BufferStore(A, E.div(E.BufferLoad(dt.float32, A, (E.const(1),)), 0.0), (E.const(0),))
    check_semantics(func_of(launch(body), A))


def test_constant_folding_leaves_a_division_by_zero_unfolded():
    assert isinstance(E.floordiv(E.const(5), 0), E.FloorDiv)
    assert isinstance(E.truncmod(E.const(5), 0), E.TruncMod)


def test_grid_extents_must_be_at_least_one():
    n = Var(dt.int32, "n")

    def grid(extent) -> PrimFunc:
        bx, tx = Var(dt.int32, "bx"), Var(dt.int32, "tx")
        return func_of(S.KernelLaunch((extent,), (128,), (bx,), (tx,), S.SeqStmt(())))

    check_semantics(grid(E.floordiv(n, 128)))
    with pytest.raises(SemanticError, match=r"grid extent 0 is less than 1"):
        check_semantics(grid(E.const(0)))
    with pytest.raises(SemanticError, match=r"grid extent 64 - 128 \(= -64\) is less than 1"):
        check_semantics(substitute(grid(n - 128), {n: E.const(64)}))


def test_a_grid_empty_only_after_specialization_launches_nothing():
    """`T.const` symbols take the shapes of the call's arrays; an empty array gives an empty grid, which
    launches nothing, as a dynamic dim that is 0 at run time does."""
    n = Var(dt.int32, "n")
    bx, tx = Var(dt.int32, "bx"), Var(dt.int32, "tx")
    func = func_of(S.KernelLaunch((E.floordiv(n + 127, 128),), (128,), (bx,), (tx,), S.SeqStmt(())))
    check_semantics(substitute(func, {n: E.const(0)}))


def test_thread_counts_must_be_positive():
    with pytest.raises(SemanticError, match=r"threads must be positive, got \(0,\)"):
        check_semantics(func_of(launch(S.SeqStmt(()), threads=(0,))))


def test_loop_extents_may_be_zero_but_not_negative():
    i = Var(dt.int32, "i")
    empty = S.For(i, E.const(0), E.const(0), S.ForKind.PARALLEL, S.SeqStmt(()))
    check_semantics(func_of(launch(empty)))
    negative = S.For(i, E.const(0), E.const(-2), S.ForKind.SERIAL, S.SeqStmt(()))
    with pytest.raises(SemanticError, match="loop extent -2 is negative"):
        check_semantics(func_of(launch(negative)))


def test_tensors_may_be_empty_but_on_chip_buffers_may_not():
    empty = buf((0, 4), scope="global", name="E")
    check_semantics(func_of(launch(S.SeqStmt(())), empty))
    negative = buf((-1,), scope="global", name="N")
    with pytest.raises(SemanticError, match="dim 0 of N is -1; it must be at least 0"):
        check_semantics(func_of(launch(S.SeqStmt(())), negative))
    with pytest.raises(SemanticError, match="dim 1 of x is 0; it must be at least 1"):
        check_semantics(func_of(launch(S.Allocate(buf((4, 0)), S.SeqStmt(())))))


def guarded_division(how: str) -> PrimFunc:
    """`A[0] = A[1] // (K % 32)`, guarded by `if K % 32 != 0` (how="if"), by a select, or not at all."""
    A = buf((16,), "int32", scope="global", name="A")
    K = Var(dt.int32, "K")
    divide = E.floordiv(E.BufferLoad(dt.int32, A, (E.const(1),)), K % 32)
    nonzero = E.NE(dt.bool_, K % 32, E.const(0))
    if how == "if":
        body = S.IfThenElse(nonzero, S.BufferStore(A, divide, (E.const(0),)))
    elif how == "select":
        body = S.BufferStore(A, E.Select(dt.int32, nonzero, divide, E.const(0)), (E.const(0),))
    else:
        body = S.BufferStore(A, divide, (E.const(0),))
    return substitute(func_of(launch(body), A), {K: E.const(64)})


@pytest.mark.parametrize("how", ["if", "select"])
def test_code_a_specialized_guard_skips_is_not_judged(how):
    """With K = 64 the guard `K % 32 != 0` is false, so the division never runs."""
    check_semantics(guarded_division(how))
    with pytest.raises(SemanticError, match="integer division by zero"):
        check_semantics(guarded_division("unguarded"))
