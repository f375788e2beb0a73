"""Every IR node kind prints as kernel-language text that parses back to a structurally equal IR."""

from __future__ import annotations

import inspect
import math
import re

import pytest

import tilecraft.language as T
from tests.language.helpers import assert_roundtrip, node_types
from tilecraft.errors import SemanticError
from tilecraft.ir import IRModule, expr, stmt, walk
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.op import MATH_FLOAT
from tilecraft.ir.printer import print_ir
from tilecraft.transform.check import check_semantics

CASES: dict[str, object] = {}


def case(fn):
    """Register a kernel factory; its name is the case id."""
    CASES[fn.__name__.removeprefix("case_")] = fn
    return fn


def nodes_of(func, cls):
    return [n for n in walk(func.body) if isinstance(n, cls)]


# ---------------------------------------------------------------------------------- expressions


@case
def case_int_imms():
    @T.prim_func
    def int_imms(A: T.Tensor((8,), "int8"), B: T.Tensor((8,), "int64"), n: T.int32):
        with T.Kernel(1, threads=32):
            A[0] = -5
            B[1] = 2**40
            T.evaluate(T.int8(-7))
            T.evaluate(T.int16(-300))
            T.evaluate(T.int64(-(2**40)))
            T.evaluate(T.uint8(200))
            T.evaluate(T.uint32(4000000000))
            T.evaluate(T.uint64(2**63))
            T.evaluate(-3 + n)
            T.evaluate(True)
            B[T.int64(3)] = T.int64(5)

    return int_imms


@case
def case_float_imms():
    @T.prim_func
    def float_imms(A: T.Tensor((8,), "float16"), B: T.Tensor((8,), "bfloat16"), x: T.float32):
        with T.Kernel(1, threads=32):
            A[0] = -1.5
            A[1] = T.infinity("float16")
            B[0] = 0.1
            B[1] = -T.infinity("bfloat16")
            T.evaluate(T.float32(-2.5) * x)
            T.evaluate(T.float32(1e-6) * x)
            T.evaluate(T.float64(-0.125))
            T.evaluate(T.float64(math.inf))
            T.evaluate(T.float16(-math.inf))
            T.evaluate(T.bfloat16(3.0))
            T.evaluate(T.infinity("float32"))
            T.evaluate(-T.infinity("float32"))
            T.evaluate(T.max_value("float16"))
            T.evaluate(T.min_value("float32"))
            T.evaluate(T.max_value("int8"))
            T.evaluate(T.min_value("int32"))

    return float_imms


@case
def case_arithmetic():
    @T.prim_func
    def arithmetic(A: T.Tensor((16,), "int32"), F: T.Tensor((4,), "float32"), n: T.int32, m: T.int32):
        with T.Kernel(1, threads=32):
            A[0] = n + m
            A[1] = n - m
            A[2] = n * m
            A[3] = n / m
            A[4] = n // m
            A[5] = n % m
            A[6] = T.truncmod(n, m)
            A[7] = T.truncdiv(n, m)
            A[8] = T.min(n, m)
            A[9] = T.max(n, m, 3)
            A[10] = -n
            A[11] = (n + m) * (n - m) // (m - -2)
            A[12] = T.floordiv(n, 4) + T.floormod(n, 4) + T.ceildiv(n, 8)
            F[0] = T.cast(n, "float32") / 3.0

    return arithmetic


@case
def case_comparisons_and_logic():
    @T.prim_func
    def comparisons_and_logic(A: T.Tensor((16,), "int32"), n: T.int32, m: T.int32):
        with T.Kernel(1, threads=32):
            A[0] = T.if_then_else(n < m, 1, 0)
            A[1] = T.if_then_else(n <= m, 1, 0)
            A[2] = T.if_then_else(n > m, 1, 0)
            A[3] = T.if_then_else(n >= m, 1, 0)
            A[4] = T.if_then_else(n == m, 1, 0)
            A[5] = T.if_then_else(n != m, 1, 0)
            A[6] = T.if_then_else(n < m and m < 10, 1, 0)
            A[7] = T.if_then_else(n < m or m < 10, 1, 0)
            A[8] = T.if_then_else(not n < m, 1, 0)
            A[9] = T.if_then_else(0 < n < m, 1, 0)
            A[10] = T.if_then_else(T.And(n > 0, T.Or(m > 0, T.Not(n == m))), n, m)
            A[11] = n if n > m else m

    return comparisons_and_logic


@case
def case_casts():
    @T.prim_func
    def casts(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "int8"), n: T.int32, h: T.float16):
        with T.Kernel(1, threads=32):
            A[0] = T.cast(n, "float32")
            A[1] = T.Cast("float32", h)
            A[2] = T.float32(n)
            B[0] = T.cast(h, "int8")
            A[3] = h.astype("float32") + T.cast(T.cast(n, "float16"), "float32")

    return casts


def make_math_case(op: str):
    def build():
        @T.prim_func
        def math_call(A: T.Tensor((4,), "float32"), x: T.float32, h: T.float16):
            with T.Kernel(1, threads=32):
                if op == "pow":
                    A[0] = T.pow(x, 2.5)
                    A[1] = T.pow(h, h)
                else:
                    A[0] = getattr(T, op)(x)
                    A[1] = getattr(T, op)(h)

        return math_call

    build.__name__ = f"case_math_{op}"
    return build


for _op in MATH_FLOAT:
    case(make_math_case(_op))


@case
def case_abs_and_bitwise():
    @T.prim_func
    def abs_and_bitwise(A: T.Tensor((16,), "int32"), B: T.Tensor((4,), "uint8"), n: T.int32, m: T.int32):
        with T.Kernel(1, threads=32):
            A[0] = T.abs(n)
            A[1] = n & m
            A[2] = n | m
            A[3] = n ^ m
            A[4] = ~n
            A[5] = n << 2
            A[6] = n >> m
            A[7] = (n & 255) | (m << 8) ^ (~m >> 1)
            A[8] = n + m & n - m
            B[0] = B[1] & B[2] | ~B[3]

    return abs_and_bitwise


@case
def case_call_intrin_and_strings():
    @T.prim_func
    def call_intrin_and_strings(A: T.Tensor((4,), "int32"), n: T.int32, x: T.float32):
        with T.Kernel(1, threads=32):
            A[0] = T.call_intrin("int32", "popcount", n)
            A[1] = T.call_intrin("int32", "clz", n) + 1
            T.evaluate(T.call_intrin("int32", "printf", "n=%d x=%f\n", n, x))
            T.evaluate(T.call_intrin("float32", "exp", n))
            T.evaluate(T.call_intrin("int32", "__nanosleep"))

    return call_intrin_and_strings


@case
def case_loads_ramp_broadcast():
    @T.prim_func
    def loads_ramp_broadcast(A: T.Tensor((4, 8), "float32"), idx: T.Tensor((4,), "int32"), x: T.float32):
        with T.Kernel(1, threads=32):
            A[idx[0], idx[1] + 1] = A[0, idx[2]] * A[idx[3], 7]
            T.evaluate(T.Ramp(idx[0], 2, 4))
            T.evaluate(T.Broadcast(x, 8))
            T.evaluate(T.Ramp(T.int64(0), T.int64(1), 2))

    return loads_ramp_broadcast


# ---------------------------------------------------------------------------------- statements


@case
def case_scalar_statements():
    @T.prim_func
    def scalar_statements(A: T.Tensor((8,), "float32"), n: T.int32):
        with T.Kernel(2, threads=64) as bx:
            x: T.int32 = n * 2
            y = n + bx
            h: T.float16 = A[0]
            z = x + y
            T.sync_threads()
            T.evaluate(z)
            if z > 3:
                A[0] = 1.0
            if y > 4:
                A[1] = 2.0
            else:
                A[2] = h
            if n > 0:
                if n > 1:
                    A[3] = 3.0
                else:
                    pass
            else:
                A[4] = 4.0

    return scalar_statements


@case
def case_loops():
    @T.prim_func
    def loops(A: T.Tensor((64, 64), "float32"), n: T.int32):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((16, 64), "float32")
            for i in T.serial(4):
                A[i, 0] = 0.0
            for i in T.serial(2, n):
                A[i, 1] = 0.0
            for i in range(8):
                A[i, 2] = 0.0
            for i in range(3, 9):
                A[i, 3] = 0.0
            for i in T.unroll(4):
                A[i, 4] = 0.0
            for i in T.unroll(1, 5):
                A[i, 5] = 0.0
            for i in T.vectorized(4):
                A[i, 6] = 0.0
            for i in T.vectorized(4, 8):
                A[i, 7] = 0.0
            for i in T.Parallel(64):
                A[i, 8] = 0.0
            for i, j in T.Parallel(4, (8, 16)):
                A[i, j] = 1.0
            for i, j, k in T.Parallel((1, 3), 4, (2, n)):
                A[i + j, k] = 2.0
            for i, j in T.Parallel(16, 64, coalesced_width=4):
                s[i, j] = A[i, j]
            for i in T.Parallel(8):
                for j in T.Parallel(i + 1):
                    A[i, j] = 3.0
            for k in T.Pipelined(8):
                T.copy(A[k * 8, 0], s)
            for k in T.Pipelined(1, 4, num_stages=3):
                T.copy(A[k * 16, 0], s)
            for k in T.Pipelined(4, num_stages=2, order=[1, 0], stage=[0, 1], group=[[0], [1, 2]]):
                T.copy(A[k * 16, 0], s)
            for k in T.serial(2, annotations={"pragma_unroll_explicit": 0}):
                A[k, 9] = 0.0

    return loops


@case
def case_while_loops():
    @T.prim_func
    def while_loops(A: T.Tensor((64,), "float32"), bounds: T.Tensor((2,), "int32")):
        with T.Kernel(1, threads=64):
            t = T.alloc_var("int32")
            t = bounds[0]
            while t < bounds[1]:
                A[t] = A[t] * 2.0
                t = t + 1
            while A[0] > 1.0 and t > 0:
                if A[1] > 0.0:
                    A[0] = A[0] * 0.5
                t = t - 1
                while A[2] < 0.0:
                    A[2] = A[2] + 1.0

    return while_loops


@case
def case_allocations():
    @T.prim_func
    def allocations(A: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((16, 16), "float32")
            b = T.alloc_shared((16, 16), "float16", scope="shared")
            c = T.alloc_fragment((16, 16), "float32")
            d = T.alloc_local((4,), "int32")
            e = T.alloc_local(1, "float32")
            v = T.alloc_var("int32", init=3)
            w = T.alloc_var("float32")
            u = T.alloc_var(T.int64, 7)
            T.copy(A, a)
            T.copy(a, b)
            T.copy(b, c)
            d[0] = v
            e[0] = w
            w = c[0, 0] + e[0]
            v += 1
            u = u * 2
            A[0, 0] = w + T.cast(d[0], "float32") + T.cast(u, "float32")

    return allocations


@case
def case_mbarriers():
    @T.prim_func
    def mbarriers(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=256):
            tile = T.alloc_shared((128,), "float32")
            one = T.alloc_barrier(128)
            ring = T.alloc_barrier([128, 128])
            for k in T.serial(4):
                with T.ws(0):
                    T.barrier_wait(ring[k % 2], k // 2 % 2 ^ 1)
                    T.tma_copy(A, tile, barrier=one)
                    T.mbarrier_arrive_expect_tx(one, 512)
                with T.ws(1):
                    T.mbarrier_wait_parity(one, k % 2)
                    T.copy(tile, B)
                    T.barrier_arrive(ring[k % 2])

    return mbarriers


@case
def case_kernel_launches():
    @T.prim_func
    def kernel_launches(A: T.Tensor((64, 64), "float32"), n: T.int32):
        with T.Kernel(4, threads=32) as bx:
            tx = T.get_thread_binding()
            A[bx, tx] = 0.0
        with T.Kernel(2, T.ceildiv(n, 32), threads=(16, 8)) as (bx, by):
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            A[bx * 16 + tx, by * 8 + ty] = 1.0
        with T.Kernel(2, 3, 4, threads=(8, 4, 2)) as (bx, by, bz):
            tz = T.get_thread_binding(2)
            A[bx + T.get_block_binding(2), by + tz] = 2.0
            A[bz, T.get_block_binding(0)] = 3.0
        with T.Kernel(2, 2, threads=64, annotations={"cluster_dims": 2}):
            A[T.get_block_binding(0), T.get_block_binding(1)] = 4.0
        with T.Kernel(1) as (bx,):
            A[bx, 0] = 5.0

    return kernel_launches


@case
def case_copies():
    @T.prim_func
    def copies(A: T.Tensor((64, 64), "float16"), X: T.Tensor((4, 1, 64, 32), "float16"), n: T.int32):
        with T.Kernel(2, threads=128) as bx:
            s = T.alloc_shared((32, 32), "float16")
            f = T.alloc_fragment((32, 32), "float32")
            whole = T.alloc_shared((64, 64), "float16")
            row = T.alloc_fragment((32,), "float32")
            T.copy(A, whole)
            T.copy(A[0:32, 32:64], s)
            T.copy(A[bx * 32 : (bx + 1) * 32, n : n + 32], s)
            T.copy(A[bx * 32, 0], s)
            T.copy(s, A[bx * 32, 32])
            T.copy(s, f)
            T.copy(f, A[32:, :32])
            T.copy(X[bx, 0, 0, 0], s)
            T.copy(X[bx, 0, 32:64, :], s)
            T.copy(A[bx, 0:32], row)
            T.copy(A[bx * 32, 0], s, coalesced_width=8)
            T.copy(s, A[0, 0], disable_tma=True, eviction_policy="evict_last")

    return copies


@case
def case_fills():
    @T.prim_func
    def fills(A: T.Tensor((64, 64), "float16"), x: T.float32):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((32, 32), "float32")
            i = T.alloc_fragment((32,), "int32")
            T.fill(f, 1.5)
            T.fill(f, x)
            T.fill(f[0:16, :], -T.infinity("float32"))
            T.fill(i, 7)
            T.clear(f)
            T.clear(i[8:16])
            T.fill(A[0:32, 0:32], 0)

    return fills


def make_gemm_case(policy_name: str):
    def build():
        policy = getattr(T.GemmWarpPolicy, policy_name)

        @T.prim_func
        def gemms(A: T.Tensor((64, 64), "float16")):
            with T.Kernel(1, threads=128):
                a = T.alloc_shared((64, 32), "float16")
                at = T.alloc_shared((32, 64), "float16")
                b = T.alloc_shared((32, 64), "float16")
                bt = T.alloc_shared((64, 32), "float16")
                c = T.alloc_fragment((64, 64), "float32")
                c16 = T.alloc_fragment((64, 64), "float16")
                af = T.alloc_fragment((64, 32), "float16")
                T.gemm(a, b, c, policy=policy)
                T.gemm(at, b, c, transpose_A=True, policy=policy)
                T.gemm(a, bt, c, transpose_B=True, policy=policy)
                T.gemm(at, bt, c16, transpose_A=True, transpose_B=True, policy=policy)
                T.gemm(af, b, c, clear_accum=True, k_pack=2, wg_wait=-1, policy=policy)
                T.gemm(a[0:64, 0:16], b[0:16, :], c, policy=policy)

        return gemms

    build.__name__ = f"case_gemm_{policy_name}"
    return build


for _policy in T.GemmWarpPolicy:
    case(make_gemm_case(_policy.name))


@case
def case_reductions():
    @T.prim_func
    def reductions(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((32, 16), "float32")
            rows = T.alloc_fragment((32,), "float32")
            cols = T.alloc_fragment((16,), "float32")
            kept = T.alloc_fragment((32, 1), "float32")
            T.reduce_max(x, rows, dim=1)
            T.reduce_min(x, cols, dim=0)
            T.reduce_sum(x, rows)
            T.reduce_abssum(x, cols, dim=0, clear=False)
            T.reduce_absmax(x, rows, dim=-1, clear=False)
            T.reduce_sum(x, kept, dim=1)
            T.reduce_max(x, rows, dim=1, clear=False)
            T.reduce_min(x, rows, 1, False)

    return reductions


@case
def case_cumsums():
    @T.prim_func
    def cumsums(A: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            x = T.alloc_shared((32, 16), "float32")
            y = T.alloc_shared((32, 16), "float32")
            v = T.alloc_fragment((16,), "float32")
            T.cumsum(x, y, dim=1)
            T.cumsum(x, y, dim=0, reverse=True)
            T.cumsum(x, dim=-1)
            T.cumsum(v, reverse=True)

    return cumsums


@case
def case_atomics():
    @T.prim_func
    def atomics(C: T.Tensor((64, 64), "float32"), counts: T.Tensor((8,), "int32"), x: T.float32):
        with T.Kernel(2, threads=128) as bx:
            f = T.alloc_fragment((32, 32), "float32")
            s = T.alloc_shared((32, 32), "float32")
            T.atomic_add(C[bx, 0], x)
            T.atomic_max(C[bx, 1], f[0, 0])
            T.atomic_min(C[bx, 2], 1.0)
            T.atomic_add(counts[bx], 1)
            T.atomic_add(s[0, 0], x)
            T.atomic_add(C[bx * 32, 0], f)
            T.atomic_max(C[0:32, 32:64], s)
            T.atomic_min(C[bx * 32 : bx * 32 + 32, 0:32], f, memory_order="relaxed")

    return atomics


@case
def case_atomic_values():
    @T.prim_func
    def atomic_values(C: T.Tensor((64,), "float32"), counts: T.Tensor((8,), "int32"), P: T.Tensor((64,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            P[bx] = T.atomic_add(C[bx], 1.0, return_prev=True)
            P[bx + 2] = T.atomic_max(C[bx + 4], 2.0, memory_order="acquire", return_prev=True)
            P[bx + 8] = T.atomic_load(C[bx + 16], memory_order="relaxed")
            T.atomic_store(counts[bx], 3, memory_order="release")

    return atomic_values


@case
def case_cross_thread_reductions():
    @T.prim_func
    def cross_thread_reductions(A: T.Tensor((64, 32), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(2, threads=(4, 32)) as bx:
            tn = T.get_thread_binding(0)
            tk = T.get_thread_binding(1)
            r = T.alloc_reducer(32, "float32", op="max", replication="all")
            T.fill(r, -T.infinity("float32"))
            for i, j in T.Parallel(32, 32):
                r[i] = T.max(r[i], A[bx * 32 + i, j])
            T.finalize_reducer(r)
            acc = T.alloc_local((1,), "float32")
            out = T.alloc_local((1,), "float32")
            acc[0] = A[bx * 32 + tn, tk] + r[tn]
            with T.attr(T.comm_reducer(lambda x, y: x + y, [T.float32(0)]), "reduce_scope",
                        T.reinterpret(T.uint64(0), dtype="handle")):  # fmt: skip
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, out[0], tk, dtype="handle"))
            B[bx * 4 + tn] = out[0]

    return cross_thread_reductions


@case
def case_hints_and_prints():
    @T.prim_func
    def hints_and_prints(A: T.Tensor((64, 64), "float16"), n: T.int32):
        with T.Kernel(4, 4, threads=128) as (bx, by):
            T.use_swizzle(panel_size=10)
            T.use_swizzle(4, order="col")
            T.use_swizzle(8, enable=False)
            s = T.alloc_shared((32, 32), "float16")
            f = T.alloc_fragment((32, 32), "float32")
            r = T.alloc_fragment((32,), "float32")
            T.annotate_layout({s: T.Layout((32, 32), lambda i, j: (i, j ^ (i % 8)))})
            T.annotate_layout({s: T.Layout((32, 32), lambda i, j: i * 32 + j)})
            T.annotate_layout(
                {
                    f: T.Fragment(
                        (32, 32),
                        forward_thread_fn=lambda i, j: (i % 16) * 8 + j % 8,
                        forward_index_fn=lambda i, j: (i // 16, j // 8),
                    ),
                    r: T.Fragment((32,), forward_thread_fn=lambda i, rep: i + rep * 32, replicate=4),
                }
            )
            T.annotate_safe_value({A: n * 2 - 1})
            T.print(n)
            T.print(n * 2 + bx, msg="scaled")
            T.print(s)
            T.print(f, msg="acc")
            T.print(f[0:4, 0:4], msg="corner")
            T.print(A[by, 0])

    return hints_and_prints


# ---------------------------------------------------------------------------------- functions

M, N = T.dynamic("M, N")
K = T.symbolic("K", "int64")
S0, S1 = T.dynamic("S0, S1")


@case
def case_dynamic_dims():
    @T.prim_func
    def dynamic_dims(
        A: T.Tensor((M, N), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((K, 4), "int8")
    ):
        with T.Kernel(T.ceildiv(M, 32), threads=128) as bx:
            for i, j in T.Parallel(32, N):
                if bx * 32 + i < M:
                    A[bx * 32 + i, j] = A[bx * 32 + i, j] + B[j]
            C[K - 1, 0] = 1

    return dynamic_dims


@case
def case_strided_tensors():
    @T.prim_func
    def strided_tensors(
        A: T.StridedTensor((M, N), (S0, 1), "float16"),
        B: T.StridedTensor((4, M, 8), (S1, S0, 1), "float16"),
        C: T.StridedTensor((16, 16), (1, 16), "float16"),
    ):
        with T.Kernel(T.ceildiv(M, 16), threads=128) as bx:
            s = T.alloc_shared((16, 8), "float16")
            T.copy(A[bx * 16, 0], s)
            T.copy(s, B[0, bx * 16, 0])
            C[0, 1] = A[0, 0]

    return strided_tensors


@case
def case_scalar_params():
    @T.prim_func
    def scalar_params(
        A: T.Tensor((128,), "float32"), n: T.int32, alpha: T.float32, flag: T.bool, big: T.int64, h: T.float16
    ):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i in T.Parallel(32):
                if flag and bx * 32 + i < n:
                    A[bx * 32 + i] = A[bx * 32 + i] * alpha + T.cast(big, "float32") + h

    return scalar_params


@case
def case_several_kernels():
    @T.prim_func
    def several_kernels(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32"), n: T.int32):
        m = n * 2
        with T.Kernel(4, threads=32) as bx:
            for i in T.Parallel(32):
                B[bx * 32 + i] = A[bx * 32 + i] + T.cast(m, "float32")
        with T.Kernel(2, threads=64) as bx:
            for i in T.Parallel(64):
                A[bx * 64 + i] = B[bx * 64 + i] * 2.0
        with T.Kernel(1, threads=1):
            A[0] = 0.0

    return several_kernels


@case
def case_buffer_views():
    """Views of two parameters: one sized by a name bound before it and read by two kernels, one made
    inside a kernel."""
    N, C = T.dynamic("N, C")

    @T.prim_func
    def buffer_views(
        W: T.Tensor((3, 3, C, 16), "float16"), Out: T.Tensor((N, 4, 4, 16), "float16"), n: T.int32
    ):
        rows = N * 16
        out_flat = T.Tensor((rows, 16), "float16", Out.data)
        with T.Kernel(T.ceildiv(rows, 32), threads=128) as bx:
            w_flat = T.Tensor((9 * C, 16), "float16", W.data)
            tile = T.alloc_shared((32, 16), "float16")
            T.copy(w_flat[bx * 32, 0], tile)
            T.copy(tile, out_flat[bx * 32, 0])
        with T.Kernel(1, threads=32):
            out_flat[n, 3] = out_flat[n, 2] + W[0, 0, 0, 0]

    return buffer_views


@case
def case_im2col():
    @T.prim_func
    def im2col(img: T.Tensor((2, 9, 9, 3), "float16"), out: T.Tensor((162, 27), "float16")):
        with T.Kernel(T.ceildiv(162, 64), threads=128) as bx:
            col = T.alloc_shared((64, 32), "float16")
            T.im2col(img, col, bx, 0, 3, 1, 1, 1)
            T.copy(col, out[bx * 64, 0])

    return im2col


@case
def case_gemm_sp():
    @T.prim_func
    def gemm_sp(A: T.Tensor((64, 32), "float16"), E: T.Tensor((4, 64), "int16"), B: T.Tensor((64, 32), "float16"),
                C: T.Tensor((64, 32), "float32")):  # fmt: skip
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, 32), "float16")
            E_s = T.alloc_shared((4, 64), "int16")
            B_s = T.alloc_shared((64, 32), "float16")
            C_f = T.alloc_fragment((64, 32), "float32")
            T.copy(A, A_s)
            T.copy(E, E_s)
            T.copy(B, B_s)
            T.gemm_sp(A_s, E_s, B_s, C_f, transpose_E=True, clear_accum=True)
            T.copy(C_f, C)

    return gemm_sp


@case
def case_device_assert():
    @T.prim_func
    def device_assert(A: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(64):
                T.device_assert(A[i] >= 0, "negative \"count\"")
                T.device_assert(A[i])

    return device_assert


def module_of_two():
    @T.prim_func
    def producer(A: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, 64), threads=64) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < M:
                    A[bx * 64 + i] = 1.0

    @T.prim_func
    def consumer(A: T.Tensor((M,), "float32"), B: T.Tensor((M,), "float32")):
        with T.Kernel(T.ceildiv(M, 64), threads=64) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < M:
                    B[bx * 64 + i] = A[bx * 64 + i] * 2.0

    return IRModule((producer, consumer))


CASES["module_of_two"] = module_of_two


# ---------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("name", sorted(CASES))
def test_roundtrip(name):
    """The case prints, parses back structurally equal, and re-prints to the identical text."""
    assert_roundtrip(CASES[name]())


# Vector values as expressions of their own: printed and parsed back, but no kernel may leave one in its
# IR (a store of a vector becomes a store per lane while parsing, tilecraft/language/packed.py).
VECTOR_CASES = ("loads_ramp_broadcast",)


@pytest.mark.parametrize("name", sorted(set(CASES) - set(VECTOR_CASES)))
def test_cases_pass_the_semantic_check(name):
    """The corpus is made of valid kernels, so its round trips say something about real IR."""
    check_semantics(CASES[name]())


@pytest.mark.parametrize("name", VECTOR_CASES)
def test_a_vector_left_in_the_ir_is_refused(name):
    with pytest.raises(SemanticError, match="vector value is used where only scalars are supported"):
        check_semantics(CASES[name]())


def _concrete_node_classes() -> set[str]:
    abstract = {"Expr", "Stmt", "BinaryOp", "CmpOp", "TileOp"}
    found = set()
    for module in (expr, stmt):
        for name, cls in vars(module).items():
            if (
                inspect.isclass(cls)
                and issubclass(cls, (expr.Expr, stmt.Stmt))
                and cls.__module__ == module.__name__
            ):
                found.add(name)
    return found - abstract


def test_corpus_covers_every_node_kind():
    """Adding a node kind without a round-trip case fails here."""
    covered = set()
    for build in CASES.values():
        covered |= node_types(build())
    missing = _concrete_node_classes() - covered
    assert not missing, f"node kinds without a round-trip case: {sorted(missing)}"


def _imms(func, cls):
    return {(str(n.dtype), n.value) for n in nodes_of(func, cls)}


def test_int_imms_keep_their_dtype_and_sign():
    imms = _imms(CASES["int_imms"](), expr.IntImm)
    for dtype, value in [("int8", -7), ("int16", -300), ("int64", -(2**40)), ("uint8", 200), ("int8", -5)]:
        assert (dtype, value) in imms
    assert ("uint64", 2**63) in imms and ("bool", 1) in imms


def test_float_imms_keep_their_dtype_sign_and_infinity():
    imms = _imms(CASES["float_imms"](), expr.FloatImm)
    for dtype, value in [
        ("float16", -1.5),
        ("float16", math.inf),
        ("bfloat16", -math.inf),
        ("float32", -2.5),
    ]:
        assert (dtype, value) in imms
    assert ("float64", math.inf) in imms and ("float64", -0.125) in imms and ("bfloat16", 3.0) in imms
    assert ("float32", -math.inf) in imms and ("float16", 65504.0) in imms


def test_every_binary_op_and_comparison_is_in_the_corpus():
    kinds = node_types(CASES["arithmetic"]()) | node_types(CASES["comparisons_and_logic"]())
    assert {"Add", "Sub", "Mul", "Div", "FloorDiv", "FloorMod", "TruncMod", "Min", "Max"} <= kinds
    assert {"LT", "LE", "GT", "GE", "EQ", "NE", "And", "Or", "Not", "Select"} <= kinds


def test_math_and_bitwise_calls_print_in_their_natural_spelling():
    text = print_ir(CASES["abs_and_bitwise"]())
    for piece in ("T.abs(n)", "n & m", "n | m", "n ^ m", "~n", "n << 2", "n >> m"):
        assert piece in text
    ops = {n.op for n in nodes_of(CASES["abs_and_bitwise"](), expr.Call)}
    assert {
        "abs",
        "bitwise_and",
        "bitwise_or",
        "bitwise_xor",
        "bitwise_not",
        "shift_left",
        "shift_right",
    } <= ops
    for op in MATH_FLOAT:
        assert f"T.{op}(" in print_ir(CASES[f"math_{op}"]())


def test_string_arguments_of_intrinsics_are_string_imms():
    func = CASES["call_intrin_and_strings"]()
    strings = [n for n in nodes_of(func, expr.StringImm)]
    assert [s.value for s in strings] == ["n=%d x=%f\n"]
    assert "T.call_intrin(\"int32\", 'printf', 'n=%d x=%f\\n', n, x)" in print_ir(func)


def test_views_print_as_tensors_over_their_base_data():
    """A view is declared once, before the first statement that uses it; a name bound before the view
    is replaced in its shape by what it stands for (the shape is computed where no LetStmt is)."""
    text = print_ir(CASES["buffer_views"]())
    lines = [line.strip() for line in text.splitlines()]
    assert lines.count('out_flat = T.Tensor((N * 16, 16), "float16", Out.data)') == 1
    assert lines.count('w_flat = T.Tensor((9 * C, 16), "float16", W.data)') == 1
    assert lines.index('out_flat = T.Tensor((N * 16, 16), "float16", Out.data)') < lines.index(
        "with T.Kernel((rows + 31) // 32, threads=128) as bx:"
    )
    views = [b for b in walk(CASES["buffer_views"]().body) if isinstance(b, Buffer) and b.base is not None]
    assert {(v.name, v.base.name) for v in views} == {("out_flat", "Out"), ("w_flat", "W")}


def test_im2col_expands_to_a_guarded_parallel_nest():
    """T.im2col is a T.Parallel nest over the tile: no node of its own, so no backend needs one."""
    func = CASES["im2col"]()
    loops = nodes_of(func, stmt.For)
    assert [(f.kind, expr.const_value(f.extent)) for f in loops] == [
        (stmt.ForKind.PARALLEL, 64),
        (stmt.ForKind.PARALLEL, 32),
    ]
    assert len(nodes_of(func, stmt.IfThenElse)) == 1
    assert "for i, j in T.Parallel(64, 32):" in print_ir(func)


def test_gemm_sp_expands_to_a_dense_tile_and_a_gemm():
    """T.gemm_sp is a T.Parallel nest writing A's dense tile (decoded from A_sparse and E), then T.gemm of
    it: no node of its own, so no backend needs one."""
    func = CASES["gemm_sp"]()
    (dense,) = [a.buffer for a in nodes_of(func, stmt.Allocate) if a.buffer.name == "A_s_dense"]
    assert (dense.scope, [expr.const_value(d) for d in dense.shape]) == ("local.fragment", [64, 64])
    loops = nodes_of(func, stmt.For)
    assert [(f.kind, expr.const_value(f.extent)) for f in loops] == [(stmt.ForKind.PARALLEL, 64)] * 2
    (gemm,) = nodes_of(func, stmt.Gemm)
    assert gemm.a.buffer is dense and gemm.clear_accum and not gemm.transpose_a and not gemm.transpose_b


def test_device_assert_is_an_effect_call_with_its_message():
    func = CASES["device_assert"]()
    calls = [n.value for n in nodes_of(func, stmt.Evaluate)]
    assert [(c.op, c.args[1].value) for c in calls] == [("device_assert", 'negative "count"'), ("device_assert", "")]
    assert calls[1].args[0].dtype.is_bool  # an integer condition is compared with zero


def test_for_kinds_and_starts():
    func = CASES["loops"]()
    loops = nodes_of(func, stmt.For)
    assert {f.kind for f in loops} == set(stmt.ForKind)
    assert any(f.kind is stmt.ForKind.UNROLLED and expr.const_value(f.min) == 1 for f in loops)
    assert any(f.kind is stmt.ForKind.PARALLEL and expr.const_value(f.min) == 8 for f in loops)
    pipelined = [dict(f.annotations) for f in loops if f.kind is stmt.ForKind.PIPELINED]
    assert {"num_stages": 2, "order": (1, 0), "stage": (0, 1), "group": ((0,), (1, 2))} in pipelined


def test_parallel_loop_whose_extent_uses_the_outer_variable_prints_nested():
    """`T.Parallel(8, i + 1)` would not parse: the inner extent needs `i`, so the loops print nested."""
    text = print_ir(CASES["loops"]())
    assert re.search(r"for (i_\d+) in T\.Parallel\(8\):\n +for j_\d+ in T\.Parallel\(\1 \+ 1\):", text), text


def test_allocation_scopes():
    scopes = {n.buffer.scope for n in nodes_of(CASES["allocations"](), stmt.Allocate)}
    assert scopes == {"shared", "shared.dyn", "local.fragment", "local", "local.var"}


def test_kernel_grid_ranks_and_thread_tuples():
    launches = nodes_of(CASES["kernel_launches"](), stmt.KernelLaunch)
    assert [len(k.grid) for k in launches] == [1, 2, 3, 2, 1]
    assert [k.threads for k in launches] == [(32,), (16, 8), (8, 4, 2), (64,), (128,)]
    assert dict(launches[3].annotations) == {"cluster_dims": 2}


def test_gemm_flags_survive():
    func = CASES["gemm_FullCol"]()
    gemms = nodes_of(func, stmt.Gemm)
    assert {g.policy for g in gemms} == {stmt.GemmWarpPolicy.FullCol}
    last_but_one = gemms[4]
    assert (last_but_one.clear_accum, last_but_one.k_pack, last_but_one.wg_wait) == (True, 2, -1)
    assert gemms[3].transpose_a and gemms[3].transpose_b


def test_reduce_kinds_dims_and_clear():
    reduces = nodes_of(CASES["reductions"](), stmt.Reduce)
    assert {r.kind for r in reduces} == set(stmt.REDUCE_KINDS)
    assert [(r.dim, r.clear) for r in reduces] == [
        (1, True), (0, True), (1, True), (0, False), (1, False), (1, True), (1, False), (1, False)
    ]  # fmt: skip


def test_atomics_element_and_region_forms():
    atomics = nodes_of(CASES["atomics"](), stmt.AtomicOp)
    element = [a.kind for a in atomics if isinstance(a.value, expr.Expr)]
    region = [a.kind for a in atomics if not isinstance(a.value, expr.Expr)]
    assert set(element) == set(region) == set(stmt.ATOMIC_KINDS)


def test_layout_annotations_and_prints():
    func = CASES["hints_and_prints"]()
    layouts = [type(a.layout).__name__ for a in nodes_of(func, stmt.AnnotateLayout)]
    assert layouts == ["Layout", "Layout", "Fragment", "Fragment"]
    prints = nodes_of(func, stmt.Print)
    assert [p.msg for p in prints] == ["", "scaled", "", "acc", "corner", ""]
    assert len(nodes_of(func, stmt.UseSwizzle)) == 2


def test_module_declares_shared_dynamic_dims_once():
    text = assert_roundtrip(module_of_two())
    assert text.count('M = T.dynamic("M", "int32")') == 1
    assert "def producer(" in text and "def consumer(" in text


def test_dynamic_dims_keep_their_dtype():
    text = print_ir(CASES["dynamic_dims"]())
    assert 'K = T.dynamic("K", "int64")' in text


def test_printed_names_are_unique_and_avoid_builtins_the_printer_uses():
    """A variable called `float` or `T` would shadow what the printed text needs."""

    @T.prim_func
    def shadowing(A: T.Tensor((4,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32):
            float = n * 2
            A[0] = T.cast(float, "float32") + T.infinity("float16")
            for T_ in T.serial(2):
                A[T_] = 1.0

    text = assert_roundtrip(shadowing)
    assert "float_1: T.int32 = n * 2" in text
