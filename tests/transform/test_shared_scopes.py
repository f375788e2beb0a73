"""narrow-shared-scopes: shared buffers are in scope only from their first to their last use, so
tiles used one after the other share bytes, and the barrier pass separates the reuse."""

from __future__ import annotations

import pytest

import tilecraft
from tests.transform.helpers import CUDA, OPENCL
from tilecraft.errors import LoweringError
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.testing.conformance import shared_reuse as SR
from tilecraft.transform.shared_scopes import narrow_kernel_body


def _shared(name: str) -> Buffer:
    return Buffer(name, (E.const(64),), dt.float32, "shared")


def _touch(first: Buffer, *others: Buffer) -> S.Stmt:
    """One statement that uses every buffer: `first[0] = 0 + others[0][0] + ...`."""
    value: E.Expr = E.const(0.0, dt.float32)
    for b in others:
        value = E.add(value, E.BufferLoad(dt.float32, b, (E.const(0),)))
    return S.BufferStore(first, value, (E.const(0),))


def _scopes(stmt: S.Stmt, depth: int = 0, out=None) -> list[tuple[int, str]]:
    """(nesting depth, buffer name) of every Allocate, in order."""
    out = [] if out is None else out
    if isinstance(stmt, S.Allocate):
        out.append((depth, stmt.buffer.name))
        _scopes(stmt.body, depth + 1, out)
    elif isinstance(stmt, S.SeqStmt):
        for child in stmt.stmts:
            _scopes(child, depth, out)
    return out


def test_buffers_used_one_after_the_other_become_siblings():
    a, b, c = _shared("a"), _shared("b"), _shared("c")
    body = S.Allocate(a, S.Allocate(b, S.Allocate(c, S.seq(_touch(a), _touch(a, b), _touch(c)))))
    assert _scopes(narrow_kernel_body(body, ("shared",))) == [(0, "a"), (1, "b"), (0, "c")]


def test_partly_overlapping_uses_widen_the_outer_scope_until_they_nest():
    a, b, c = _shared("a"), _shared("b"), _shared("c")
    body = S.Allocate(a, S.Allocate(b, S.Allocate(c, S.seq(_touch(a), _touch(a, b), _touch(b), _touch(c)))))
    narrowed = narrow_kernel_body(body, ("shared",))
    assert _scopes(narrowed) == [(0, "a"), (1, "b"), (0, "c")]
    first = narrowed.stmts[0] if isinstance(narrowed, S.SeqStmt) else narrowed
    # a widened to b's last use, with b's scope (both of its statements) inside it
    inner = first.body.stmts[-1]
    assert first.buffer is a and isinstance(inner, S.Allocate) and inner.buffer is b
    assert len(inner.body.stmts) == 2


def test_other_scopes_stay_around_everything():
    a, c = _shared("a"), _shared("c")
    reg = Buffer("r", (E.const(4),), dt.float32, "local.fragment")
    body = S.Allocate(a, S.Allocate(reg, S.Allocate(c, S.seq(_touch(a, reg), _touch(c, reg)))))
    narrowed = narrow_kernel_body(body, ("shared",))
    assert isinstance(narrowed, S.Allocate) and narrowed.buffer is reg
    assert _scopes(narrowed.body) == [(0, "a"), (0, "c")]


def test_a_binding_before_the_loop_does_not_keep_the_epilogue_tile_beside_the_loop_tiles():
    """`n = ...` holds every later statement in its body; the scopes are narrowed inside it."""
    a, b, c = _shared("a"), _shared("b"), _shared("c")
    n = E.Var(dt.int32, "n")
    let = S.LetStmt(n, E.const(3), S.seq(_touch(b), _touch(b, a), _touch(c)))
    body = S.Allocate(a, S.Allocate(b, S.Allocate(c, S.seq(_touch(a), let))))
    assert _scopes(narrow_kernel_body(body, ("shared",))) == [(0, "a"), (1, "b"), (2, "c")]  # not asked
    narrowed = narrow_kernel_body(body, ("shared",), bindings=True)
    assert isinstance(narrowed, S.Allocate) and narrowed.buffer is a
    inner = narrowed.body.stmts[-1]
    assert isinstance(inner, S.LetStmt) and inner.var is n
    assert _scopes(inner.body) == [(0, "b"), (0, "c")]


def test_a_binding_whose_value_reads_the_buffer_stays_inside_its_scope():
    a, b = _shared("a"), _shared("b")
    n = E.Var(dt.float32, "n")
    let = S.LetStmt(n, E.BufferLoad(dt.float32, b, (E.const(0),)), S.seq(_touch(b), _touch(a)))
    body = S.Allocate(a, S.Allocate(b, S.seq(_touch(a), let)))
    narrowed = narrow_kernel_body(body, ("shared",), bindings=True)
    assert _scopes(narrowed) == [(0, "a"), (1, "b")]
    assert isinstance(narrowed.body.stmts[-1].body, S.LetStmt)


def _cuda_kernel():
    return tilecraft.lower(
        SR.gemm_with_shared_epilogue(), target=CUDA, execution_backend="nvrtc", pass_configs=NO_WS
    )


NO_WS = {"tl.disable_warp_specialized": True}


def test_the_epilogue_tile_reuses_the_operand_tiles_bytes():
    for target, backend, configs in (
        (CUDA, "nvrtc", NO_WS), ("cuda -arch=sm_80", "nvrtc", {}), (OPENCL, "opencl", {})
    ):  # fmt: skip
        art = tilecraft.lower(
            SR.gemm_with_shared_epilogue(), target=target, execution_backend=backend, pass_configs=configs
        )
        smem = art.kernels[0].dynamic_smem
        assert smem < SR.OPERAND_BYTES + SR.EPILOGUE_BYTES, (target, smem)
        assert smem >= max(SR.OPERAND_BYTES, SR.EPILOGUE_BYTES), (target, smem)


def test_a_warp_specialized_kernel_keeps_its_staged_tiles_for_both_roles_and_then_reuses_them():
    """The producer branch and the consumers' both use the staged tiles, so warp-specialize scopes them
    around the split; the epilogue, which allocates a tile of its own, runs after the split (the producer
    warpgroup returns), so its tile takes the staged tiles' bytes."""
    art = tilecraft.lower(SR.gemm_with_shared_epilogue(), target=CUDA, execution_backend="nvrtc")
    src = art.source("cuda-source")
    assert "tc_setmaxnreg_dec" in src
    producer, after = src.split("tc_setmaxnreg_dec", 1)[1].split("return;", 1)
    assert "tc_setmaxnreg_inc" in after and "C_s = " not in producer
    epilogue = after[after.index("if ((tx < 128))") :]
    assert "C_s = " in epilogue
    assert art.kernels[0].dynamic_smem < SR.OPERAND_BYTES + SR.EPILOGUE_BYTES


def test_a_barrier_separates_the_loop_tiles_from_the_tile_that_reuses_them():
    src = _cuda_kernel().source("cuda-source")
    body = src.split('extern "C"')[1]
    before_epilogue = body[: body.index("C_s = ")]
    tail = before_epilogue[before_epilogue.rindex("for (int32_t k") :]
    assert "__syncthreads();" in tail.split("}")[-1] or "__syncthreads();\n" in tail[-200:]


def test_the_budget_counts_tiles_that_are_never_live_together_once(monkeypatch):
    """The check before lowering counts live bytes the way the planner will place them."""
    need = max(SR.OPERAND_BYTES, SR.EPILOGUE_BYTES)
    total = SR.OPERAND_BYTES // 2 + SR.EPILOGUE_BYTES  # one stage each, as the check counts them
    limit = (need + total) // 2
    assert need <= limit < total
    target = f"cuda -arch=sm_80 -max_shared_memory_per_block_optin={limit}"
    tilecraft.lower(SR.gemm_with_shared_epilogue(), target=target, execution_backend="nvrtc")
    with pytest.raises(LoweringError, match="shared memory per block"):
        tilecraft.lower(
            SR.gemm_with_shared_epilogue(),
            target=f"cuda -arch=sm_80 -max_shared_memory_per_block_optin={need // 2}",
            execution_backend="nvrtc",
        )


def test_a_shared_buffer_nothing_names_is_dropped():
    # TileLang's mxfp4 example allocates a bias tile it uses only with a bias: no bytes without one
    a, unused, c = _shared("a"), _shared("unused"), _shared("c")
    body = S.Allocate(a, S.Allocate(unused, S.Allocate(c, S.seq(_touch(a), _touch(c)))))
    assert _scopes(narrow_kernel_body(body, ("shared",))) == [(0, "a"), (0, "c")]
    one = S.Allocate(a, S.Allocate(unused, _touch(a)))  # one statement: nothing to narrow, still dropped
    assert _scopes(narrow_kernel_body(one, ("shared",))) == [(0, "a")]
    kept = S.Allocate(a, S.Allocate(c, _touch(a, c)))  # one statement using both: unchanged
    assert narrow_kernel_body(kept, ("shared",)) is kept
