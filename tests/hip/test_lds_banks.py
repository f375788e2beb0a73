"""LDS bank conflicts of MFMA gemm tiles, counted instruction by instruction in the bank model
(lds_banks.py) for the gemm shapes the plan makes (gemms.py): the reads tc::mfma_gemm issues, with the
plan's wave grid, k-packing and the tiles' layouts taken from the lowered kernel's MFMA call, and the
writes of the copies that fill the tiles, evaluated per work-item from the lowered kernel's own stores.

Row-major tiles, read as tc_mfma.h read them before the swizzle (8 bytes or one element per lane and
MFMA), conflict up to 16 ways; the swizzled tiles are read and written without a conflict. The code
objects confirm the instruction widths the model assumes (ds_read_b128, ds_write_b128)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tests.hip.gemms import SHAPES, Shape, kernel
from tests.hip.helpers import disassembly, lowered
from tests.hip.lds_banks import WAVE, Access, Operand, conflicts, gemm_reads
from tests.hip.test_compile import MFMA_CASES
from tilecraft.hip.ir import MfmaGemm
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.eval import evaluate
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import Visitor, free_vars, walk
from tilecraft.testing.conformance.cases import CASES
from tilecraft.testing.passes import run_pass

HIP = "hip -arch=gfx942"


def after(shape: Shape, pass_name: str) -> IRModule:
    return run_pass(HIP, pass_name, kernel(shape), prefix=True)


def mfma_calls(mod: IRModule) -> list[MfmaGemm]:
    return list({id(n): n for f in mod.functions for n in walk(f.body) if isinstance(n, MfmaGemm)}.values())


def mfma_call(mod: IRModule) -> MfmaGemm:
    (call,) = mfma_calls(mod)
    return call


def threads_of(mod: IRModule, call: MfmaGemm) -> int:
    launches = [n for f in mod.functions for n in walk(f.body) if isinstance(n, S.KernelLaunch)]
    (launch,) = [k for k in launches if any(n is call for n in walk(k.body))]
    return math.prod(E.const_value(t) for t in launch.threads)


# ---------------------------------------------------------------- the model itself


def test_the_model_counts_distinct_dwords_of_one_bank_in_one_phase():
    """Consecutive dwords are free; a 128-byte stride puts every lane of a phase on one bank; lanes on one
    dword share it; ds_read_b128 phases pair lanes 0-3 with 20-23, so those may not share banks."""
    assert conflicts([Access("read", 4, {lane: 4 * lane for lane in range(WAVE)})]) == (0, 1)
    assert conflicts([Access("read", 4, {lane: 128 * lane for lane in range(WAVE)})]) == (2 * 31, 32)
    assert conflicts([Access("read", 2, {lane: 2 * (lane // 2) * 2 for lane in range(WAVE)})]) == (0, 1)
    plain = {lane: 16 * lane for lane in range(WAVE)}
    assert conflicts([Access("read", 16, plain)]) == conflicts([Access("write", 16, plain)]) == (0, 1)
    # slots of lanes 16-23 turned by 4: write phases (8 consecutive lanes) stay distinct, read phases
    # (lanes 0-3 with 20-23, ...) meet twice on every bank
    turned = {lane: 16 * ((lane % 8) ^ (4 * (lane // 16 % 2))) + 128 * (lane // 8) for lane in range(WAVE)}
    assert conflicts([Access("write", 16, turned)]) == (0, 1)
    assert conflicts([Access("read", 16, turned)]) == (8, 2)
    assert conflicts([Access("read", 8, {lane: 8 * lane for lane in range(WAVE)})]) == (0, 1)


# ---------------------------------------------------------------- the gemm's reads


def operands(call: MfmaGemm) -> list[tuple[Operand, int, int, object]]:
    """Per operand and wavefront: how it is stored and read, the first row (or column) of op(X) the
    wavefront reads, its MFMA tiles, and its layout."""
    e = call.a.dtype.bits // 8
    out = []
    for wave in range(call.waves_m * call.waves_n):
        wm, wn = divmod(wave, call.waves_n)
        row0, col0 = wm * (call.m // call.waves_m), wn * (call.n // call.waves_n)
        a = Operand(call.k, call.m, e, False) if call.trans_a else Operand(call.m, call.k, e, True)
        b = Operand(call.n, call.k, e, True) if call.trans_b else Operand(call.k, call.n, e, False)
        out.append((a, row0, call.m // call.waves_m // 16, call.layout_a))
        out.append((b, col0, call.n // call.waves_n // 16, call.layout_b))
    return out


def reads(call: MfmaGemm, swizzled: bool) -> list[Access]:
    """The gemm's LDS reads: as tc_mfma.h issues them now (the call's layouts, k-packed where it is),
    or as it did before the swizzle (row-major, one MFMA's k per read)."""
    out = []
    for op, start, tiles, layout in operands(call):
        offset = layout.offset if swizzled and layout is not None else (lambda f: f)
        out += gemm_reads(op, start, tiles, call.k, call.kpack and swizzled, offset)
    return out


# ---------------------------------------------------------------- the copies' writes


class _Stores(Visitor):
    """The stores into `targets`, each with the loops around it."""

    def __init__(self, targets: set[int]) -> None:
        self.targets = targets
        self.loops: list[S.For] = []
        self.found: list[tuple[S.BufferStore, tuple[S.For, ...]]] = []

    def visit_For(self, s: S.For) -> None:
        self.loops.append(s)
        self.generic_visit(s)
        self.loops.pop()

    def visit_BufferStore(self, s: S.BufferStore) -> None:
        if id(s.buffer) in self.targets:
            self.found.append((s, tuple(self.loops)))


NUMPY_OPS = {E.Add: np.add, E.Sub: np.subtract, E.Mul: np.multiply, E.FloorDiv: np.floor_divide,
             E.FloorMod: np.mod, E.Div: np.floor_divide, E.TruncMod: np.mod, E.Min: np.minimum, E.Max: np.maximum}  # fmt: skip
NUMPY_CALLS = {"shift_right": np.right_shift, "shift_left": np.left_shift, "bitwise_and": np.bitwise_and,
               "bitwise_xor": np.bitwise_xor, "bitwise_or": np.bitwise_or}  # fmt: skip


def values(e: E.Expr, env: dict) -> np.ndarray:
    """An index expression over numpy arrays of its variables (non-negative: C's truncating division is
    then the floor); `evaluate` is the reference for anything else."""
    if isinstance(e, E.IntImm):
        return np.int64(e.value)
    if isinstance(e, E.Var):
        return env[e]
    if isinstance(e, E.Cast) and e.dtype.is_integer:
        return values(e.value, env)
    if type(e) in NUMPY_OPS:
        return NUMPY_OPS[type(e)](values(e.a, env), values(e.b, env))
    if isinstance(e, E.Call) and e.op in NUMPY_CALLS:
        return NUMPY_CALLS[e.op](*(values(a, env) for a in e.args))
    raise NotImplementedError(type(e).__name__)


def writes(mod: IRModule, call: MfmaGemm, threads: int) -> list[Access]:
    """The copies' LDS writes into the call's tiles, per wavefront: each store's offset evaluated for
    every work-item and iteration of its (unrolled) loop, other variables 0; runs of one 16-byte granule
    per work-item, as clang merges them, are one ds_write_b128, other stores one write each."""
    launches = [n for f in mod.functions for n in walk(f.body) if isinstance(n, S.KernelLaunch)]
    (launch,) = [k for k in launches if any(n is call for n in walk(k.body))]
    (tx,) = launch.thread_vars
    finder = _Stores({id(call.a), id(call.b)})
    finder.visit(launch.body)
    out = []
    for store, loops in finder.found:
        e = store.buffer.dtype.bits // 8
        index = store.indices[0]
        if len(store.indices) == 2:  # a row-major tile before apply-lds-layouts
            index = E.add(E.mul(index, E.const_value(store.buffer.shape[1])), store.indices[1])
        loop = loops[-1]
        extent = E.const_value(loop.extent)
        env = {v: np.int64(0) for v in free_vars(index)}
        env[tx], env[loop.loop_var] = np.arange(threads)[:, None], np.arange(extent)[None, :]
        grid = np.broadcast_to(values(index, env), (threads, extent)) * e
        assert grid[5, 1] == evaluate(index, {**{v: 0 for v in env}, tx: 5, loop.loop_var: 1 % extent}) * e
        run = 16 // e
        table = {t: [int(o) for o in grid[t]] for t in range(threads)}
        merged = extent % run == 0 and all(
            o[q] % 16 == 0 and o[q : q + run] == list(range(o[q], o[q] + 16, e))
            for o in table.values() for q in range(0, extent, run)
        )  # fmt: skip
        for wave in range(threads // WAVE):
            lanes = range(wave * WAVE, (wave + 1) * WAVE)
            for r in range(0, extent, run if merged else 1):
                out.append(Access("write", 16 if merged else e, {t % WAVE: table[t][r] for t in lanes}))
    return out


# ---------------------------------------------------------------- the counts


SWIZZLED = [s for s in SHAPES if s.bk != 48]  # K = 48: 96-byte rows stay row-major


@pytest.mark.parametrize("shape", SWIZZLED, ids=lambda s: s.id)
def test_the_swizzled_tiles_are_read_and_written_without_bank_conflicts(shape):
    """Every LDS instruction of the gemm and of the copies that fill its tiles runs in one cycle per
    phase, except the 8-byte reads of k-major tiles when K is not k-packed (two lanes per bank)."""
    mod = after(shape, "apply-lds-layouts")
    call = mfma_call(mod)
    assert call.layout_a is not None and call.layout_b is not None
    assert conflicts(writes(mod, call, shape.threads)) == (0, 1)
    extra, ways = conflicts(reads(call, swizzled=True))
    if call.kpack:
        assert (extra, ways) == (0, 1)
    else:
        assert ways <= 2


@pytest.mark.parametrize("name", MFMA_CASES + ("shared_tile_read_by_a_128_row_and_a_32_row_gemm",))
def test_the_conformance_gemms_tiles_are_read_and_written_without_bank_conflicts(name):
    """The kit's MFMA gemms, among them fragments staged through LDS (attention's P, a register A) and
    one tile read as A by one gemm and as B by another: no conflict in any read or write."""
    case = next(c for c in CASES if c.name == name)
    mod = run_pass(HIP, "apply-lds-layouts", case.build(), prefix=True)
    for call in mfma_calls(mod):
        assert call.kpack
        assert conflicts(writes(mod, call, threads_of(mod, call))) == (0, 1)
        assert conflicts(reads(call, swizzled=True)) == (0, 1)


@pytest.mark.parametrize("shape", SWIZZLED, ids=lambda s: s.id)
def test_row_major_tiles_conflict(shape):
    """The same gemm with row-major tiles, read as before the swizzle, has bank conflicts."""
    mod = after(shape, "lower-buffer-views")
    _, ways = conflicts(reads(mfma_call(mod), swizzled=False))
    assert ways >= 2


def test_tiles_whose_rows_are_not_a_power_of_two_stay_row_major():
    """K = 48: A's 96-byte rows keep the row-major layout (B's 64-element rows are swizzled), and its
    k is read one MFMA at a time."""
    call = mfma_call(after(next(s for s in SHAPES if s.bk == 48), "apply-lds-layouts"))
    assert call.layout_a is None and call.layout_b is not None and not call.kpack


@pytest.mark.parametrize("shape", [s for s in SWIZZLED if s.bk in (32, 64)][:6], ids=lambda s: s.id)
def test_the_code_object_reads_and_writes_the_widths_the_model_counts(clang, objdump, shape):
    """The copies are ds_write_b128; k-major operand tiles are read by ds_read_b128 (k-packed), M- or
    N-major ones element by element."""
    code = disassembly(objdump, lowered(kernel(shape), "gfx942").binary("hsaco"), "gfx942")
    ops = set(re.findall(r"\bds_(?:read|write)\w*", code))
    assert "ds_write_b128" in ops and not ops & {"ds_write_b16", "ds_write_b8", "ds_write_b64"}
    k_major = not shape.ta or shape.tb
    assert ("ds_read_b128" in ops) == k_major
    assert not ops & {"ds_read_b64", "ds_read2_b64"}
