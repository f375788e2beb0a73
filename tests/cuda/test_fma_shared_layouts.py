"""Float32 gemms that stay on per-thread FMA read their operand tiles along rows (A (M, K), B (N, K)):
at each k a warp reads one element of several rows, which rows of a multiple of 32 floats put on one
bank (TileLang's mhc_pre as a float32 gemm: 4- and 8-way conflicts on every load). Such tiles, and the
shared copy of a fragment A, take the `xor_rows` layout. Checked on the generated loads: every lane's
address evaluated from the IR after apply-shared-layouts, per load and k step."""

from __future__ import annotations

from collections import defaultdict

import pytest

import tilecraft.language as T
from tests.transform.helpers import SM80
from tilecraft.cuda.shared_layout import SharedLayout, xor_rows, xor_rows_mask
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.eval import evaluate
from tilecraft.ir.visitor import free_vars, walk
from tilecraft.testing.conformance import cases as C
from tilecraft.testing.passes import run_pass


def mhc_float32(tokens: int = 64, hidden: int = 512, block: int = 256):
    """example_mhc_pre's gemm with float32 operands (no TF32 request): a fragment A (32, 256) and a
    shared B (32, 256) read along K, 128 threads."""

    @T.prim_func
    def mhc_float32(X: T.Tensor((tokens, hidden), "float32"), Fn: T.Tensor((32, hidden), "float32"),
                    Out: T.Tensor((tokens, 32), "float32")):  # fmt: skip
        with T.Kernel(T.ceildiv(tokens, 32), threads=128) as px:
            out = T.alloc_fragment((32, 32), "float32")
            T.clear(out)
            for pz in T.Pipelined(hidden // block, num_stages=2):
                x_s = T.alloc_shared((32, block), "float32")
                fn_s = T.alloc_shared((32, block), "float32")
                T.copy(X[px * 32, pz * block], x_s)
                T.copy(Fn[0, pz * block], fn_s)
                x = T.alloc_fragment((32, block), "float32")
                T.copy(x_s, x)
                T.gemm(x, fn_s, out, transpose_B=True)
            T.copy(out, Out[px * 32, 0])

    return mhc_float32


def _case(name):
    return next(c for c in C.CASES if c.name == name).build


KERNELS = {
    "mhc_float32": mhc_float32,
    "gemm_f32_nn": _case("gemm_f32_nn"),
    "gemm_float32_register_a_transposed_in_registers": _case(
        "gemm_float32_register_a_transposed_in_registers"
    ),
}
# The worst bank conflict of any shared load of the k loop, with the layouts (row-major before: mhc 8-way
# on B and 4-way on the staged A, the register-A case 32-way on its B rows 4 apart, gemm_f32_nn 2-way on
# A). gemm_f32_nn's B (K, N) is read along N, each thread's 4 consecutive columns at one k (2-way as
# single loads; they are 16 contiguous bytes, one vector load per thread); it keeps row-major.
WORST = {"mhc_float32": 1, "gemm_f32_nn": 2, "gemm_float32_register_a_transposed_in_registers": 4}


def _fma_loop(func) -> S.For:
    """The serial k loop of the FMA gemm: the loop whose body multiplies two shared loads."""
    for loop in walk(func.body):
        serial = (
            isinstance(loop, S.For) and loop.kind is S.ForKind.SERIAL and loop.loop_var.name.startswith("k")
        )
        if serial and any(isinstance(n, E.Mul) and _shared_loads(n) for n in walk(loop.body)):
            return loop
    raise AssertionError("no FMA k loop")


def _shared_loads(node) -> list[E.BufferLoad]:
    return [n for n in walk(node) if isinstance(n, E.BufferLoad) and n.buffer.scope.startswith("shared")]


def _flat(load: E.BufferLoad) -> E.Expr:
    """The load's row-major element offset in its buffer (a laid-out tile is already 1-D)."""
    offset: E.Expr = E.const(0)
    for index, dim in zip(load.indices, load.buffer.shape):
        offset = E.add(E.mul(offset, dim), index)
    return offset


def worst_conflict(func) -> int:
    """The most distinct 4-byte words one bank serves for one load of one warp (warp 0) at one k."""
    loop = _fma_loop(func)
    unrolled = [f for f in walk(loop.body) if isinstance(f, S.For)]
    worst = 1
    for load in _shared_loads(loop.body):
        index = _flat(load)
        names = {v.name: v for v in free_vars(index)}
        for k in range(4):
            for reg in range(E.const_value(unrolled[0].extent) if unrolled else 1):
                banks = defaultdict(set)
                for lane in range(32):
                    env = {v: 0 for v in names.values()}
                    env[loop.loop_var] = k
                    if unrolled:
                        env[unrolled[0].loop_var] = reg
                    env.update({v: lane for n, v in names.items() if n == "tx"})
                    address = evaluate(index, env)
                    banks[address % 32].add(address)
                worst = max(worst, max(len(words) for words in banks.values()))
    return worst


@pytest.mark.parametrize("name", KERNELS)
def test_fma_operand_reads_spread_over_the_banks(name):
    func = run_pass(SM80, "apply-shared-layouts", KERNELS[name](), prefix=True).functions[0]
    assert worst_conflict(func) <= WORST[name]


def test_fma_operand_tiles_and_the_staged_a_take_xor_rows():
    """mhc's B tile (read along K) and the shared copy of its fragment A get the layout; the tile the
    fragment is loaded from (not a gemm operand) keeps row-major."""
    func = run_pass(SM80, "lower-to-threads", mhc_float32(), prefix=True).functions[0]
    laid_out = {s.buffer.name: s.layout for s in walk(func.body)
                if isinstance(s, S.AnnotateLayout) and isinstance(s.layout, SharedLayout)}  # fmt: skip
    assert laid_out == {"fn_s": xor_rows(256), "x_staged": xor_rows(256)}


def test_xor_rows_is_a_permutation_that_keeps_16_byte_chunks():
    for width in (32, 96, 256):
        layout = xor_rows(width)
        size = 40 * width
        assert sorted(layout.offset(i) for i in range(size)) == list(range(size))
        assert all(layout.offset(i) // 4 == layout.offset(i - i % 4) // 4 for i in range(size))
    assert xor_rows(48) is None  # rows that do not all start on bank 0 keep row-major


@pytest.mark.parametrize("stride", [1, 2, 4, 8, 16])
def test_eight_rows_spaced_by_a_power_of_two_get_eight_masks(stride):
    assert sorted(xor_rows_mask(r * stride) for r in range(8)) == list(range(8))
