"""Deliberately wrong kernels: each error names the kernel's file, line and column, shows the source
line with a caret, says what is wrong and, where it helps, what would be valid.

No `from __future__ import annotations` here: parameter annotations run when Python defines each
kernel, before the parser, and their mistakes must still be located (future_kernels.py covers text
annotations)."""

import re

import pytest

import tilecraft.language as T
from tests.language.helpers import assert_located, marker_line
from tilecraft.errors import KernelError, ParseAssertionError, ParseError, ParseRuntimeError, SemanticError
from tilecraft.transform.check import check_semantics

CASES = []


def case(error: type[KernelError], message: str, hint: str | None = None):
    """Register a kernel builder whose one line marked `# <- error` must be reported."""

    def register(build):
        CASES.append(pytest.param(build, error, message, hint, id=build.__name__))
        return build

    return register


# ---------------------------------------------------------------------------------- names and types


@case(ParseError, r"name 'scael' is not defined", hint=r"did you mean 'scale'")
def undefined_name():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        scale = 2.0  # noqa: F841 - the name the hint suggests
        with T.Kernel(1, threads=32):
            A[0] = A[0] * scael  # <- error  # noqa: F821

    return k


@case(ParseError, r"has no attribute 'exq'", hint=r"did you mean 'exp'")
def unknown_language_function():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            A[0] = T.exq(A[0])  # <- error

    return k


@case(ParseError, r"parameter 'A' needs a type annotation before its first use", hint=r"T.Tensor\(\(M, N\), dtype\)")
def missing_parameter_annotation():
    @T.prim_func
    def k(A, n: T.int32):
        with T.Kernel(1, threads=32):
            A[0] = n  # <- error

    return k


@case(ParseError, r"parameter 'A': unknown dtype 'float17'; valid dtypes: bool, int8")
def unknown_dtype_in_a_parameter():
    @T.prim_func
    def k(A: T.Tensor((16,), "float17")):  # <- error
        with T.Kernel(1, threads=32):
            A[0] = 0

    return k


BAD_TENSOR = T.Tensor((16,), "int33")  # fails quietly here; reported where a kernel uses it


@case(ParseError, r"parameter 'A': unknown dtype 'int33'")
def invalid_tensor_type_alias():
    @T.prim_func
    def k(A: BAD_TENSOR):  # <- error
        with T.Kernel(1, threads=32):
            A[0] = 0

    return k


@case(ParseError, r"unknown dtype 'flaot16'; valid dtypes: .*float16.*aliases: half")
def unknown_dtype_in_an_allocation():
    @T.prim_func
    def k(A: T.Tensor((16,), "float16")):
        with T.Kernel(1, threads=32):
            tile = T.alloc_shared((16,), "flaot16")  # <- error
            T.copy(A, tile)

    return k


@case(ParseError, r"StridedTensor has 2 dims but 1 strides")
def strided_tensor_with_missing_strides():
    @T.prim_func
    def k(A: T.StridedTensor((16, 16), (16,), "float16")):  # <- error
        with T.Kernel(1, threads=32):
            A[0, 0] = 0

    return k


@case(ParseError, r"T.exp needs a floating-point argument, got int32; cast first")
def exp_of_an_integer():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32):
            A[0] = T.exp(n)  # <- error

    return k


@case(SemanticError, r"arithmetic on float8_e4m3fn is not supported", hint=r"cast to float32 first")
def float8_arithmetic():
    @T.prim_func
    def k(A: T.Tensor((16,), "float8_e4m3fn"), B: T.Tensor((16,), "float8_e4m3fn")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(16):
                B[i] = A[i] + B[i]  # <- error

    return k


# ---------------------------------------------------------------------------------- statements


@case(
    ParseError,
    r"the condition `i < n` reads no buffer, so nothing the loop body does can change it",
    hint=r"T.alloc_var",
)
def while_condition_that_nothing_changes():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32):
            i = n - 4
            while i < n:  # <- error
                A[0] = A[0] + 1.0

    return k


@case(ParseError, r"`while ... else` is not supported")
def while_else():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32):
            i = T.alloc_var("int32", init=0)
            while i < n:  # <- error
                i += 1
            else:
                A[0] = 1.0

    return k


@case(ParseError, r"still true after 4096 passes while parsing", hint=r"T.alloc_var")
def while_on_a_python_condition_that_stays_true():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            steps = 3
            while steps > 0:  # <- error
                A[0] = A[0] + 1.0

    return k


@case(ParseError, r"was a Python value when the loop started and is a run-time value now")
def while_condition_that_turns_symbolic():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32):
            limit = 4
            while limit > 0:  # <- error
                A[0] = A[0] + 1.0
                limit = n

    return k


@case(
    ParseError,
    r"a `while` loop with a run-time condition is only valid inside `with T.Kernel",
    hint=r"inside the kernel",
)
def while_outside_a_kernel():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), n: T.int32):
        while A[0] < n:  # <- error
            A[0] = A[0] + 1.0
        with T.Kernel(1, threads=32):
            A[0] = 1.0

    return k


@case(ParseError, r"`Break` statements are not supported", hint=r"guard the rest of the body")
def break_in_a_loop():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.serial(16):
                if A[i] < 0.0:
                    break  # <- error

    return k


@case(ParseError, r"symbolic asserts are not supported", hint=r"guard run-time values with `if`")
def symbolic_assert():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32):
            assert n < 16  # <- error
            A[n] = 0.0

    return k


@case(
    ParseError, r"'acc' is bound outside this loop .* cannot be re-bound", hint=r"acc = T.alloc_var\(dtype\)"
)
def rebinding_an_outer_name_in_a_loop():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            acc = A[0] * 0.0
            for i in T.serial(16):
                acc = acc + A[i]  # <- error
            A[0] = acc

    return k


@case(ParseError, r"'best' is bound outside this loop or branch", hint=r"T.alloc_var")
def rebinding_an_outer_name_in_a_branch():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32):
            best = A[0]
            if n > 3:
                best = A[1]  # <- error
            A[2] = best

    return k


@case(ParseError, r"slice assignment is not supported", hint=r"T.fill or T.copy")
def slice_assignment():
    @T.prim_func
    def k(A: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32):
            A[0:4, 0] = 1.0  # <- error

    return k


@case(ParseError, r"cannot store a Buffer into buffer A")
def storing_a_buffer_into_an_element():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            A[0] = B  # <- error

    return k


@case(ParseError, r"`return` inside a loop, a symbolic `if` or a T.Kernel block", hint=r"T.if_then_else")
def return_inside_a_kernel():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.serial(16):
                A[i] = 0.0
            return A  # <- error

    return k


@case(ParseError, r"`return` inside a loop, a symbolic `if`", hint=r"select values with T.if_then_else")
def macro_returning_from_a_symbolic_if():
    @T.macro
    def clamp(x, hi):
        if x > hi:
            return hi  # <- error
        return x

    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            A[0] = clamp(A[0], 1.0)

    return k


@case(ParseError, r"macro walk calls itself without end \(walk -> walk -> \.\.\.\): still expanding after 32",
      hint=r"recursion must stop on a Python value")  # fmt: skip
def recursive_macro():
    @T.macro
    def walk(x):
        return walk(x + 1.0)  # <- error

    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            A[0] = walk(A[0])

    return k


@case(ParseError, r"macro pong calls itself without end \(pong -> ping -> pong -> \.\.\.\)")
def mutually_recursive_macros():
    @T.macro
    def ping(x):
        return pong(x) * 2.0  # <- error

    @T.macro
    def pong(x):
        return ping(x)

    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            A[0] = pong(A[0])

    return k


# ---------------------------------------------------------------------------------- loops and kernels


@case(ParseError, r"a loop's step must be a constant integer, got s")
def loop_with_a_run_time_step():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), s: T.int32):
        with T.Kernel(1, threads=32):
            for i in range(0, 16, s):  # <- error
                A[i] = 0.0

    return k


@case(ParseError, r"a loop's step must not be zero")
def loop_with_step_zero():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.serial(0, 16, 0):  # <- error
                A[i] = 0.0

    return k


@case(ParseError, r"loop step 2 is not supported here; iterate with step 1 and scale the index")
def vectorized_loop_with_a_step():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.vectorized(0, 16, 2):  # <- error
                A[i] = 0.0

    return k


@case(ParseError, r"this loop binds 2 variable\(s\); write `for i, j in ...`")
def too_few_parallel_loop_variables():
    @T.prim_func
    def k(A: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(16, 16):  # <- error
                A[i, 0] = 0.0

    return k


@case(ParseError, r"loop bounds must be integers, got int32 and float32")
def float_loop_bound():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), x: T.float32):
        with T.Kernel(1, threads=32):
            for i in T.serial(x):  # <- error
                A[i] = 0.0

    return k


@case(ParseError, r"cannot iterate over Buffer", hint=r"T.serial, T.Parallel")
def iterating_over_a_buffer():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            for x in A:  # <- error
                A[0] = x

    return k


@case(ParseError, r"T.Kernel takes one to three grid extents, got 4")
def kernel_with_four_grid_dims():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(2, 2, 2, 2, threads=32) as (bx, by, bz, bw):  # <- error
            A[bx] = 0.0

    return k


@case(ParseError, r"T.Kernel has 2 grid dims; bind at most that many")
def kernel_with_too_many_bindings():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(2, 2, threads=32) as (bx, by, bz):  # <- error
            A[bx] = 0.0

    return k


@case(ParseError, r"T.Kernel cannot be nested inside another T.Kernel", hint=r"one after another")
def nested_kernels():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(2, threads=32) as bx:  # noqa: SIM117 - nesting is the mistake under test
            with T.Kernel(2, threads=32) as by:  # <- error
                A[bx + by] = 0.0

    return k


@case(ParseError, r"T.copy is only valid inside `with T.Kernel\(...\)`", hint=r"put them in a `with T.Kernel")
def tile_op_outside_a_kernel():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        T.copy(A, B)  # <- error

    return k


@case(
    SemanticError,
    r"allocating tile is only valid inside `with T.Kernel\(...\)`",
    r"shared.dyn memory belongs to a kernel's blocks",
)
def allocation_outside_a_kernel():
    """It parses, as in TileLang (a function that only declares buffers prints); lowering refuses it."""

    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        tile = T.alloc_shared((16,), "float32")  # <- error
        with T.Kernel(1, threads=32):
            T.copy(A, tile)

    return k


# ---------------------------------------------------------------------------------- memory and indices


@case(ParseError, r"T.alloc_shared needs a static positive shape, got n: n is known only at run time",
      hint=r"T.const or a Python int")  # fmt: skip
def allocation_with_a_symbolic_shape():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32):
            tile = T.alloc_shared((n, 16), "float32")  # <- error
            T.clear(tile)

    return k


@case(SemanticError, r"index 16 is out of bounds for dim 1 of A \(size 16\)")
def constant_index_out_of_bounds():
    @T.prim_func
    def k(A: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=32):
            A[0, 0] = A[7, 15]
            A[1, 0] = A[0, 16] + 1.0  # <- error

    return k


@case(ParseError, r"buffer A has 2 dimensions but is indexed with 1")
def wrong_number_of_indices():
    @T.prim_func
    def k(A: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=32):
            A[0, 0] = A[3] * 2.0  # <- error

    return k


@case(SemanticError, r"region \[16, 48\) is out of bounds for dim 0 of tile \(size 32\)")
def on_chip_region_out_of_bounds():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=32):
            tile = T.alloc_shared((32, 32), "float32")
            T.copy(A[0:32, 0:32], tile[16:48, 0:32])  # <- error

    return k


@case(ParseError, r"index 1.5 of A has dtype float32; indices must be integers", hint=r"T.cast\(x, 'int32'\)")
def float_constant_index_in_a_store():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            A[1.5] = 0.0  # <- error

    return k


@case(ParseError, r"index x of A has dtype float32; indices must be integers", hint=r"T.floor")
def float_scalar_index_in_an_updating_store():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), x: T.float32):
        with T.Kernel(1, threads=32):
            A[x] += 1.0  # <- error

    return k


@case(ParseError, r"buffer index .* \+ 2.7 has dtype float32; indices must be integers")
def float_index_in_a_load():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(4, threads=32) as bx:
            A[0] = A[bx + 2.7]  # <- error

    return k


@case(ParseError, r"buffer index .* has dtype float32; indices must be integers")
def float_slice_bound_in_a_copy():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(4, threads=32) as bx:
            tile = T.alloc_shared((4,), "float32")
            T.copy(A[bx * 4.0 : bx * 4 + 4], tile)  # <- error

    return k


@case(ParseError, r"tensor dimension -4 is negative; dims must be >= 0 \(0 is an empty tensor\)")
def negative_tensor_dim():
    @T.prim_func
    def k(
        A: T.Tensor((-4,), "float32"),  # <- error
    ):
        with T.Kernel(1, threads=32):
            A[0] = 1.0

    return k


@case(ParseError, r"tensor dimension 2.5 has dtype float32; dims must be integers")
def float_tensor_dim():
    @T.prim_func
    def k(A: T.Tensor((2.5, 4), "float32")):  # <- error
        with T.Kernel(1, threads=32):
            A[0, 0] = 1.0

    return k


@case(ParseError, r"tensor dimension -2 is negative")
def negative_output_dim():
    @T.prim_func
    def k(A: T.Tensor((4,), "float32")):
        B = T.empty((-2,), "float32")  # <- error
        with T.Kernel(1, threads=32):
            A[0] = 1.0
        return B

    return k


@case(ParseError, r"T.alloc_fragment needs a static positive shape, got -8")
def negative_allocation_dim():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_fragment((16, -8), "float32")  # <- error
            T.clear(acc)

    return k


# ---------------------------------------------------------------------------------- division by zero


@case(SemanticError, r"integer division by zero: the divisor of A\[bx\] // 0 is 0", hint=r"SIGFPE")
def integer_floordiv_by_zero():
    @T.prim_func
    def k(A: T.Tensor((16,), "int32")):
        with T.Kernel(4, threads=32) as bx:
            A[bx] = A[bx] // 0  # <- error

    return k


@case(SemanticError, r"integer division by zero: the divisor of A\[bx\] // 0")
def integer_division_by_a_folded_zero():
    @T.prim_func
    def k(A: T.Tensor((16,), "int32")):
        with T.Kernel(4, threads=32) as bx:
            A[bx] = A[bx] // (2 - 2)  # <- error

    return k


@case(SemanticError, r"integer division by zero: the divisor of 5 // 0 is 0")
def folding_a_constant_division_by_zero():
    @T.prim_func
    def k(A: T.Tensor((16,), "int32")):
        with T.Kernel(4, threads=32) as bx:
            five = T.int32(5)
            A[bx] = A[bx] + five // 0  # <- error

    return k


@case(SemanticError, r"integer division by zero: the divisor of \(bx \+ -1\) // 0")
def ceildiv_grid_by_zero():
    @T.prim_func
    def k(A: T.Tensor((16,), "int32")):
        with T.Kernel(4, threads=32) as bx:
            for i in T.serial(T.ceildiv(bx, 0)):  # <- error
                A[i] = 0

    return k


@case(ParseError, r"T.truncmod: division by zero \(the divisor is the Python value 0\)")
def python_truncmod_by_zero():
    @T.prim_func
    def k(A: T.Tensor((16,), "int32")):
        with T.Kernel(4, threads=32) as bx:
            A[bx] = T.truncmod(7, 0)  # <- error

    return k


# ---------------------------------------------------------------------------------- launch and loop extents


@case(ParseError, r"T.Kernel grid extent 0 is less than 1", hint=r"skip the launch with a Python `if`")
def empty_grid():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(0, threads=32) as bx:  # <- error
            A[bx] = 0.0

    return k


@case(ParseError, r"T.Kernel grid extent -3 is less than 1; a launch needs at least one block")
def negative_grid():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(4, -3, threads=32) as (bx, by):  # <- error
            A[bx] = 0.0

    return k


@case(ParseError, r"T.Kernel threads must be a positive int or a tuple of up to three, got \(-32,\)")
def negative_threads():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=-32):  # <- error
            A[0] = 0.0

    return k


@case(ParseError, r"loop over \[0, -5\) has a negative extent \(-5\)", hint=r"start <= stop")
def negative_parallel_extent():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(-5):  # <- error
                A[i] = 0.0

    return k


@case(ParseError, r"loop over \[5, 2\) has a negative extent \(-3\)")
def serial_loop_with_reversed_bounds():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.serial(5, 2):  # <- error
                A[i] = 0.0

    return k


@case(ParseError, r"loop over \[0, -1\) has a negative extent")
def negative_pipelined_extent():
    @T.prim_func
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Pipelined(-1, num_stages=2):  # <- error
                A[i] = 0.0

    return k


# ---------------------------------------------------------------------------------- tile ops


@case(
    SemanticError,
    r"T.copy extents differ: source \(16, 32\) vs destination \(32, 32\)",
    hint=r"after dropping unit dims both sides must have the same extents",
)
def copy_extent_mismatch():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            tile = T.alloc_shared((32, 32), "float16")
            T.copy(A[0:16, 0:32], tile)  # <- error

    return k


@case(
    SemanticError, r"T.gemm shape mismatch in K \(A's reduction dim vs B's\): 32 vs 16", hint=r"transpose_A"
)
def gemm_k_mismatch():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 32), "float16")
            b = T.alloc_shared((16, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.gemm(a, b, c)  # <- error

    return k


@case(SemanticError, r"T.gemm shape mismatch in K .*: 32 vs 64", hint=r"check transpose_A / transpose_B")
def gemm_forgotten_transpose():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            q = T.alloc_shared((64, 32), "float16")
            kt = T.alloc_shared((64, 32), "float16")
            s = T.alloc_fragment((64, 64), "float32")
            T.gemm(q, kt, s)  # <- error

    return k


@case(
    SemanticError,
    r"T.gemm does not accept bfloat16 x bfloat16 -> bfloat16",
    hint=r"supported: .*bfloat16 x bfloat16 -> float32",
)
def gemm_bfloat16_accumulator():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "bfloat16")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 32), "bfloat16")
            b = T.alloc_shared((32, 64), "bfloat16")
            c = T.alloc_fragment((64, 64), "bfloat16")
            T.gemm(a, b, c)  # <- error

    return k


@case(SemanticError, r"T.gemm operand A \(A\) is in global memory", hint=r"copy the tile to shared memory")
def gemm_operand_in_global_memory():
    @T.prim_func
    def k(A: T.Tensor((64, 32), "float16")):
        with T.Kernel(1, threads=128):
            b = T.alloc_shared((32, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.gemm(A, b, c)  # <- error

    return k


@case(SemanticError, r"T.gemm operand A must be 2-D \(leading unit dims allowed\), got \(2, 64, 32\)")
def gemm_operand_with_a_batch_dim():
    @T.prim_func
    def k(A: T.Tensor((64, 32), "float16")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((2, 64, 32), "float16")
            b = T.alloc_shared((32, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            T.gemm(a, b, c)  # <- error

    return k


@case(SemanticError, r"T.reduce_max dim 2 is out of range for a 2-D source", hint=r"valid dims: -2 .. 1")
def reduce_dim_out_of_range():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((64, 64), "float32")
            r = T.alloc_fragment((64,), "float32")
            T.reduce_max(x, r, dim=2)  # <- error

    return k


@case(
    SemanticError,
    r"T.reduce_sum output \(32,\) does not match the source \(64, 32\) without dim 1",
    hint=r"the output must have shape \(64,\)",
)
def reduce_output_shape_mismatch():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((64, 32), "float32")
            r = T.alloc_fragment((32,), "float32")
            T.reduce_sum(x, r, dim=1)  # <- error

    return k


@case(SemanticError, r"T.cumsum dim 2 is out of range for a 2-D source", hint=r"valid dims")
def cumsum_dim_out_of_range():
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_shared((64, 32), "float32")
            T.cumsum(x, dim=2)  # <- error

    return k


@case(SemanticError, r"T.atomic_add on int8 is not supported", hint=r"supported dtypes: float16, .*int32")
def atomic_on_int8():
    @T.prim_func
    def k(C: T.Tensor((16,), "int8")):
        with T.Kernel(1, threads=32):
            T.atomic_add(C[0], 1)  # <- error

    return k


@case(SemanticError, r"T.atomic_max needs a global or shared destination, got local.fragment")
def atomic_into_a_fragment():
    @T.prim_func
    def k(C: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_fragment((16,), "float32")
            T.atomic_max(acc[0], C[0])  # <- error

    return k


@case(SemanticError, r"T.use_swizzle panel_size must be positive, got 0")
def swizzle_with_an_empty_panel():
    @T.prim_func
    def k(C: T.Tensor((16,), "float32")):
        with T.Kernel(4, 4, threads=32):
            T.use_swizzle(panel_size=0)  # <- error

    return k


# ---------------------------------------------------------------------------------- views and im2col


@case(ParseError, r"the view \(64, 16\) holds 1024 elements but W \(3, 3, 8, 12\) holds 864",
      hint=r"a view covers at most the elements of W")  # fmt: skip
def view_larger_than_its_base():
    @T.prim_func
    def k(W: T.Tensor((3, 3, 8, 12), "float32")):
        with T.Kernel(1, threads=32):
            flat = T.Tensor((64, 16), "float32", W.data)  # <- error
            flat[0, 0] = 1.0

    return k


@case(ParseError, r"the view \(K \* K \* C \* F \+ 1,\) holds .* elements but W \(K, K, C, F\)")
def symbolic_view_provably_larger():
    K, C, F = T.dynamic("K, C, F")

    @T.prim_func
    def k(W: T.Tensor((K, K, C, F), "float32")):
        with T.Kernel(1, threads=32):
            flat = T.Tensor((K * K * C * F + 1,), "float32", W.data)  # <- error
            flat[0] = 1.0

    return k


@case(
    SemanticError,
    r"the view flat of shape \(72, 12\) holds 864 elements but W of shape \(3, 3, 8, 6\) holds 432",
)
def view_larger_once_the_consts_are_bound():
    import tilecraft

    @tilecraft.jit
    def k(W):
        K, C, F = T.const("K, C, F")
        W: T.Tensor((K, K, C, F), "float32")
        with T.Kernel(1, threads=32):
            flat = T.Tensor((K * K * C, 2 * F), "float32", W.data)  # <- error
            flat[0, 0] = 1.0

    return k.get_tir(K=3, C=8, F=6)


@case(ParseError, r"a view of fragment acc keeps its dtype float32 \(got float16\)",
      hint=r"T.copy acc into a shared tile and view that")  # fmt: skip
def fragment_view_with_another_dtype():
    @T.prim_func
    def k(W: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=32):
            acc = T.alloc_fragment((4, 8), "float32")
            T.copy(W, acc)
            halves = T.view(acc, (4, 16), dtype="float16")  # <- error
            W[0, 0] = halves[0, 0]

    return k


@case(ParseAssertionError, r"T.reshape of tile \(4, 8\) as \(4, 9\): the view holds 36 elements but tile holds 32",
      hint=r"a reshape or view keeps the number of elements")  # fmt: skip
def reshape_to_another_size():
    @T.prim_func
    def k(A: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=32):
            tile = T.alloc_shared((4, 8), "float32")
            T.copy(A, tile)
            wide = T.reshape(tile, (4, 9))  # <- error
            A[0, 0] = wide[3, 8]

    return k


@case(ParseError, r"A.data, the memory of A, is only valid as the third argument of T.Tensor",
      hint=r"index it \(A\[i, j\]\) or pass A itself")  # fmt: skip
def buffer_data_outside_a_view():
    @T.prim_func
    def k(A: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=32):
            tile = T.alloc_shared((4, 8), "float32")
            T.copy(A.data, tile)  # <- error

    return k


@case(ParseError, r"the third argument of T.Tensor is the memory of a tensor, `A.data`; got Buffer")
def view_of_a_buffer_not_its_data():
    @T.prim_func
    def k(A: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=32):
            flat = T.Tensor((32,), "float32", A)  # <- error
            flat[0] = 1.0

    return k


@case(ParseError, r"the view's shape uses i, which is bound inside the kernel")
def view_shaped_by_a_loop_variable():
    @T.prim_func
    def k(A: T.Tensor((4, 8), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.serial(4):
                rows = T.Tensor((i, 8), "float32", A.data)  # <- error
                rows[0, 0] = 1.0

    return k


@case(ParseError, r"A has explicit strides, so its memory is not one row-major block")
def view_of_a_strided_tensor():
    @T.prim_func
    def k(A: T.StridedTensor((4, 8), (16, 1), "float32")):
        with T.Kernel(1, threads=32):
            flat = T.Tensor((32,), "float32", A.data)  # <- error
            flat[0] = 1.0

    return k


@case(ParseError, r"T.im2col reads an image of 4 dims \(N, H, W, C\); got img with 3 dims")
def im2col_of_a_3d_image():
    @T.prim_func
    def k(img: T.Tensor((8, 8, 4), "float16"), out: T.Tensor((64, 36), "float16")):
        with T.Kernel(1, threads=128):
            col = T.alloc_shared((64, 32), "float16")
            T.im2col(img, col, 0, 0, 3, 1, 1, 1)  # <- error
            T.copy(col, out)

    return k


@case(ParseError, r"T.im2col fills an on-chip tile, but out is a global buffer")
def im2col_into_global_memory():
    @T.prim_func
    def k(img: T.Tensor((1, 8, 8, 4), "float16"), out: T.Tensor((64, 36), "float16")):
        with T.Kernel(1, threads=128):
            T.im2col(img, out, 0, 0, 3, 1, 1, 1)  # <- error

    return k


@case(ParseError, r"T.im2col's stride is 0; it must be at least 1")
def im2col_with_stride_zero():
    @T.prim_func
    def k(img: T.Tensor((1, 8, 8, 4), "float16"), out: T.Tensor((64, 36), "float16")):
        with T.Kernel(1, threads=128):
            col = T.alloc_shared((64, 32), "float16")
            T.im2col(img, col, 0, 0, 3, 0, 1, 1)  # <- error
            T.copy(col, out)

    return k


@case(ParseError, r"T.im2col is only valid inside `with T.Kernel\(...\)`")
def im2col_outside_a_kernel():
    @T.prim_func
    def k(img: T.Tensor((1, 8, 8, 4), "float16"), out: T.Tensor((64, 36), "float16")):
        T.im2col(img, out, 0, 0, 3, 1, 1, 1)  # <- error

    return k


@case(ParseRuntimeError, r"buffer A: slices with a step are not supported; .* loop over the elements")
def slice_with_a_step_read():
    """A RuntimeError too, as TileLang's parser raises (its test_buffer_slice_step catches one)."""

    @T.prim_func
    def k(A: T.Tensor((10,), "int32"), B: T.Tensor((5,), "int32")):
        with T.Kernel(1, threads=32):
            T.copy(A[0:10:2], B)  # <- error

    return k


@case(ParseRuntimeError, r"buffer B: slices with a step are not supported")
def slice_with_a_step_stored():
    @T.prim_func
    def k(A: T.Tensor((10,), "int32"), B: T.Tensor((5,), "int32")):
        with T.Kernel(1, threads=32):
            B[0:5:2] = A[0]  # <- error

    return k


def test_enough_cases():
    assert len(CASES) >= 15


@pytest.mark.parametrize("build, error, message, hint", CASES)
def test_error_is_located(build, error, message, hint):
    with pytest.raises(KernelError) as info:
        check_semantics(build())
    err = info.value
    # the category (ParseError, SemanticError, ...); a refused value is also a ValueError (ParseValueError)
    assert isinstance(err, error), f"{type(err).__name__}: {err}"
    if error is ParseRuntimeError:
        assert isinstance(err, RuntimeError)
    text = assert_located(err, build)
    assert re.search(message, err.message), err.message
    if hint is not None:
        assert err.hint is not None and re.search(hint, err.hint), err.hint
        assert f"\nhint: {err.hint}" in text


def test_macro_recursion_beyond_pythons_limit_is_located(monkeypatch):
    """Deep caller stacks can reach Python's recursion limit before the parser's depth limit."""
    from tilecraft.language.parser import core

    monkeypatch.setattr(core, "MAX_MACRO_DEPTH", 10**6)
    with pytest.raises(ParseError) as info:
        recursive_macro()
    err = info.value
    assert "macro walk calls itself without end" in err.message
    assert "exceeded Python's recursion limit" in err.message
    assert err.span.line == marker_line(recursive_macro, "A[0] = walk(A[0])")
    assert len(str(err).splitlines()) < 6


def test_message_layout():
    """The whole message: location and what is wrong, then the line and its caret, then the hint."""
    with pytest.raises(KernelError) as info:
        check_semantics(copy_extent_mismatch())
    lines = str(info.value).splitlines()
    assert re.fullmatch(r".*test_errors\.py:\d+:13: T\.copy extents differ: .*", lines[0])
    assert lines[1] == "                T.copy(A[0:16, 0:32], tile)  # <- error"
    assert lines[2] == "                ^^^^^^^^^^^^^^^^^^^^^^^^^^^"
    assert lines[3].startswith("hint: after dropping unit dims")
