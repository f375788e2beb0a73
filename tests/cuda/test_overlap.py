"""The gemm-softmax overlap of warp-specialized attention (sm_90a, `tilecraft.cuda.gemm_softmax_overlap`)
without a GPU: the rotation keeps every dependence of the loop (an interpreter of the rotated schedule
against the loop as written, registers included, wgmma groups in flight from issue to wait), the
generated code's structure, ptxas's report, the loops it leaves alone with a note, and that it is on
by default. tests/cuda/test_warp_specialize_protocol.py runs its mbarrier protocol."""

from __future__ import annotations

import dataclasses
import itertools
import re
import subprocess

import pytest

import tilecraft
from benchmarks.hopper_attention import build
from tests.cuda.helpers import check_in_order
from tilecraft.cuda.ir import GemmCall, MbarWait, TmaCopy, TmaLoad, WgmmaWait
from tilecraft.cuda.transform.overlap import OVERLAP, Overlap, accesses, overlap_plan, overlapped
from tilecraft.cuda.transform.warp_specialize import GENERAL, entry_registers
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.eval import evaluate
from tilecraft.testing.conformance import attention_bhsd as AB

SM90A = "cuda -arch=sm_90a"
ON = {OVERLAP: True}

# ---------------------------------------------------------------- the rotation, interpreted


def _buf(name: str, scope: str = "local.fragment") -> Buffer:
    return Buffer(name, (E.const(64),), dt.float32, scope)


Q, K, V = (_buf(n, "shared.dyn") for n in "QKV")
SCORES, P, ACC, M, L = (_buf(n) for n in ("S", "P", "O", "m", "l"))
KG = _buf("Kg", "global")


def _store(dst: Buffer, *srcs: Buffer) -> S.Stmt:
    value = E.const(0.0, dt.float32)
    for src in srcs:
        value = E.add(value, E.BufferLoad(dt.float32, src, (E.const(0),)))
    return S.BufferStore(dst, value, (E.const(0),))


def _copy(tile: Buffer) -> TmaCopy:
    return TmaCopy((TmaLoad(tile, E.const(0), KG, (64, 64), 128, (E.const(0), E.const(0))),), 8192)


def _gemm(a: Buffer, b: Buffer, c: Buffer, variant: str) -> GemmCall:
    return GemmCall(variant, a, b, c, 128, 128, 128, 2, 1, False, True, False)


# flash attention's loop body as the consumers run it, one statement per step of the kernel text
BODY = [
    _copy(K),
    _store(SCORES),  # the mask
    _gemm(Q, K, SCORES, "wgmma"),  # S = Q @ K^T
    _store(M, M, SCORES),  # row max
    _store(SCORES, SCORES, M),  # exp2
    _store(L, L, SCORES, M),  # row sum, logsum
    _store(P, SCORES),  # P = cast(S)
    _store(ACC, ACC, M),  # rescale
    _copy(V),
    _gemm(P, V, ACC, "wgmma_rs"),  # O += P @ V
]


def _tagged(s: S.Stmt, pos: int, it: E.Expr) -> S.Stmt:
    """The consumer form of `s` in iteration `it`, carrying (position, iteration) in a field the rotation
    keeps (it re-makes gemms with another `wait`)."""
    tag = E.add(E.mul(it, 1000), pos)
    if isinstance(s, TmaCopy):
        return MbarWait(1, tag, E.const(0))
    if isinstance(s, GemmCall):
        return dataclasses.replace(s, a_offset=tag)
    return dataclasses.replace(s, indices=(tag,))


def _tag(s: S.Stmt, env: dict) -> tuple[int, int]:
    field = s.stage if isinstance(s, MbarWait) else s.a_offset if isinstance(s, GemmCall) else s.indices[0]
    value = int(evaluate(field, env))
    return value % 1000, value // 1000


def _rotated(n: int) -> list[S.Stmt]:
    plan, reason = overlap_plan(BODY)
    assert plan == Overlap(first=2, tail=8), reason

    def pieces_at(it):
        return [(_tagged(s, pos, it), []) for pos, s in enumerate(BODY)]

    return overlapped(plan, BODY, pieces_at, E.Var(dt.int32, "k"), E.const(n), (), None)


def _trace(stmts, env: dict) -> list[tuple[str, object, int]]:
    """What a consumer runs, in order: ("run", (position, iteration), groups it leaves in flight) or
    ("wait", pending, 0)."""
    out = []
    for s in stmts:
        if isinstance(s, S.SeqStmt):
            out += _trace(s.stmts, env)
        elif isinstance(s, S.IfThenElse):
            out += _trace([s.then_case], env) if evaluate(s.condition, env) else []
        elif isinstance(s, S.For):
            start = int(evaluate(s.min, env))
            for k in range(start, start + int(evaluate(s.extent, env))):
                out += _trace([s.body], {**env, s.loop_var: k})
        elif isinstance(s, WgmmaWait):
            out.append(("wait", s.pending, 0))
        else:
            out.append(("run", _tag(s, env), s.wait if isinstance(s, GemmCall) else 0))
    return out


def _spans(trace) -> dict[tuple[int, int], tuple[int, int]]:
    """Instance -> (start, end) in steps: a gemm lasts until the wait that retires its group (groups
    retire in order; a gemm call itself leaves at most its `wait` groups in flight)."""
    spans: dict[tuple[int, int], tuple[int, int]] = {}
    in_flight: list[tuple[int, int]] = []
    for t, (kind, what, wait) in enumerate(trace):
        pending = what
        if kind == "run":
            spans[what] = (t, t)
            if not isinstance(BODY[what[0]], GemmCall):
                continue
            in_flight.append(what)
            pending = wait
        while len(in_flight) > pending:
            done = in_flight.pop(0)
            spans[done] = (spans[done][0], t)
    assert not in_flight, "a wgmma group is never waited for"
    return spans


def _conflict(a: S.Stmt, b: S.Stmt) -> bool:
    """Both touch one buffer and one of them writes it (a copy's tile is the mbarrier protocol's)."""
    if isinstance(a, TmaCopy) or isinstance(b, TmaCopy):
        return False
    ra, wa = accesses([a])
    rb, wb = accesses([b])
    return bool(wa & (rb | wb) or wb & ra)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_the_rotation_keeps_every_dependence_of_the_loop(n):
    """Every pair of statement instances that touch one buffer (one of them writing) runs in the loop's
    order, a gemm's instance lasting until its group retires; every instance runs once; and P @ V of a
    tile does run beside the next tile's softmax."""
    trace = _trace(_rotated(n), {})
    runs = [what for kind, what, _ in trace if kind == "run"]
    instances = [(pos, it) for it in range(n) for pos in range(len(BODY))]
    assert sorted(runs) == sorted(instances)
    spans = _spans(trace)
    for a, b in itertools.combinations(instances, 2):  # a before b in the loop as written
        if _conflict(BODY[a[0]], BODY[b[0]]):
            assert spans[a][1] < spans[b][0], f"{a} must end before {b} starts: {spans[a]} {spans[b]}"
    beside = [(a, b) for a in spans for b in spans if a[0] == 9 and spans[a][0] < spans[b][0] < spans[a][1]]
    assert (n < 2) == (not any(BODY[b[0]] is BODY[4] for _, b in beside))  # exp2 of the next tile


# ---------------------------------------------------------------- generated code


def _lower(func, configs=None):
    # without ON: the general schedule alone, to compare against
    art = tilecraft.lower(func, target=SM90A, pass_configs={OVERLAP: False, **(configs or {})})
    src = art.device_sources["cuda-source"]
    return art, src[src.index('extern "C" __global__') :]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_the_next_qk_is_issued_before_the_previous_pv_and_the_softmax_runs_beside_it(causal):
    art, kernel = _lower(build(8, 16, 4096, causal), ON)
    n = "(bx + 1)" if causal else "32"
    consumer = kernel[kernel.index("tc_setmaxnreg_inc<240>();") :]
    steady = "for (int32_t k = 0; k < " + ("(loop_range - 1)" if causal else "31")
    check_in_order(consumer,
           # prologue: tile 0's Q @ K^T and softmax, the gemm completing in place
           "tc_mbar_wait(&tc_mbar[1], (uint32_t)(0));", "tc::gemm_wgmma<128, 128, 128, 2, 1, false, true, false, 64, 64>"
           "(Q_shared, K_shared, acc_s);", "tc_mbar_arrive(&tc_mbar[3]);", "exp2f(", "acc_s_cast[(int32_t)r11] = ",
           steady,
           "tc_mbar_wait(&tc_mbar[1 + ((k + 1) % 2)], (uint32_t)((((k + 1) / 2) % 2)));",  # K of tile k + 1
           "tc::gemm_wgmma<128, 128, 128, 2, 1, false, true, false, 64, 64, 1>(Q_shared, K_shared + ((((k + 1) % 2)"
           " * 16384) + 0), acc_s);",  # left in flight
           "tc_mbar_wait(&tc_mbar[5 + (k % 2)], (uint32_t)(((k / 2) % 2)));",  # V of tile k
           "tc::gemm_wgmma_rs<128, 128, 128, 2, 1, false, false, 64, 1>((const uint32_t*)acc_s_cast, V_shared + (((k"
           " % 2) * 16384) + 0), acc_o);",
           "tc_wgmma_wait<1>();", "tc_wgmma_fence_operands<64>(acc_s);",  # Q @ K^T has completed
           "tc_mbar_arrive(&tc_mbar[3 + ((k + 1) % 2)]);", "tc_max_f32(", "exp2f(", "logsum[(int32_t)r10] = ",
           "tc_wgmma_wait<0>();", "tc_wgmma_fence_operands<64>(acc_o);",  # P @ V has completed
           "tc_wgmma_keep_operands<32>((const uint32_t*)acc_s_cast);", "tc_mbar_arrive(&tc_mbar[7 + (k % 2)]);",
           "acc_s_cast[(int32_t)r11] = ", "acc_o[(int32_t)r12] = (acc_o[(int32_t)r12] * scores_scale",
           "}",
           "tc_mbar_wait(&tc_mbar[5 + ", "tc::gemm_wgmma_rs<128, 128, 128, 2, 1, false, false, 64>(", "/ logsum[")  # fmt: skip
    assert art.kernels[0].block == (384,) and n in kernel


def test_the_overlap_is_on_by_default_and_each_switch_turns_it_off():
    def kernel(configs):
        art = tilecraft.lower(build(8, 16, 4096, False), target=SM90A, pass_configs=configs)
        src = art.device_sources["cuda-source"]
        return src[src.index('extern "C" __global__') :]

    assert "tc_wgmma_wait<1>" in kernel(None) and ", 1>(Q_shared" in kernel(None)
    for off in ({OVERLAP: False}, {GENERAL: False}, {GENERAL: False, OVERLAP: True}):
        text = kernel(off)
        assert "tc_wgmma_wait<1>" not in text and ", 1>(Q_shared" not in text, off
    assert "setmaxnreg" in kernel({OVERLAP: False}) and "setmaxnreg" not in kernel({GENERAL: False})


def test_loops_of_other_shapes_keep_their_gemms_apart_with_a_note(capsys):
    from tests.cuda.test_warp_specialize import gemm_with_a_scale

    with tilecraft.settings.override(TILECRAFT_VERBOSE=True):
        _, kernel = _lower(gemm_with_a_scale, ON)
    assert "keeps its gemms apart (no gemm-softmax overlap): the loop has 1 gemms" in capsys.readouterr().err
    assert "tc_setmaxnreg_inc<" in kernel and "tc_wgmma_wait<1>" not in kernel


@pytest.mark.parametrize(
    "name",
    ["full", "causal", "causal_one_warpgroup", "one_tile_three_stages", "p_shared"],
    ids=lambda n: n.replace("_", "-"),
)
def test_overlapped_attention_compiles_without_spills(nvcc, tmp_path, name):
    art, kernel = _lower(AB.build(name)(), ON)
    # one tile: the prologue and the epilogue alone (the loop of n - 1 = 0 trips is gone)
    assert ("tc_wgmma_wait<1>" in kernel) == (name != "one_tile_three_stages"), kernel
    path = tmp_path / "k.cu"
    path.write_text(art.device_sources["cuda-source"])
    done = subprocess.run([nvcc, "-arch=sm_90a", "-cubin", "-O3", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin"),
                           str(path)], capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "0 bytes spill stores, 0 bytes spill loads" in done.stderr and "serialized" not in done.stderr
    threads = AB.CONFIGS[name][8]
    used = int(re.search(r"Used (\d+) registers", done.stderr).group(1))
    assert used == entry_registers(threads + 128, 1 if threads == 256 else 2), done.stderr
