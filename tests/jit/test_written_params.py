"""Which buffer parameters a kernel writes: found in the kernel as written, recorded in the artifact."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.backend.codegen import DeviceCode
from tilecraft.backend.errors import ArtifactError
from tilecraft.backend.target import Target
from tilecraft.ir import dtype as dt
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import PrimFunc
from tilecraft.runtime.artifact import CompiledArtifact, ParamInfo
from tilecraft.testing.conformance.cases import CASES
from tilecraft.transform.written import written_params


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_the_written_parameters_are_the_outputs_of_every_conformance_kernel(case):
    """The conformance references name exactly the parameters each kernel writes."""
    func = case.build()
    expected = set(case.reference(case.inputs(np.random.default_rng(0))))
    assert {i for i, w in enumerate(written_params(func)) if w} == expected


def test_each_tile_op_writes_its_destination_only():
    @T.prim_func
    def ops(
        A: T.Tensor((64, 64), "float16"),
        B: T.Tensor((64, 64), "float16"),
        C: T.Tensor((64, 64), "float32"),
        R: T.Tensor((64,), "float32"),
        F: T.Tensor((64,), "float32"),
        K: T.Tensor((64, 64), "float32"),
        P: T.Tensor((64,), "float32"),
        Q: T.Tensor((64,), "float32"),
        n: T.int32,
    ):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            red = T.alloc_fragment((64,), "float32")
            T.copy(A, a)
            T.gemm(a, B, acc, clear_accum=True)
            T.copy(acc, C)
            T.reduce_sum(acc, red, dim=1)
            T.copy(red, R)
            T.fill(F, 0.0)
            T.cumsum(acc, dim=1)
            T.copy(acc, K)
            T.atomic_add(Q, P)  # P is the value: read; Q is updated

    assert written_params(ops) == (False, False, True, True, True, True, False, True, False)


def test_loads_and_prints_read_and_stores_write():
    @T.prim_func
    def k(X: T.Tensor((32,), "float32"), Y: T.Tensor((32,), "float32"), Z: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as _:
            T.print(Z[0:4], msg="z")
            for i in T.Parallel(32):
                Y[i] = X[i] + Z[i]

    assert written_params(k) == (False, True, False)


def test_an_unknown_construct_counts_as_a_write():
    """A node this analysis does not know must never make a parameter look read-only."""
    buffers = [Buffer(name, (8,), dt.float32) for name in "XY"]
    body = S.seq(S.Evaluate(buffers[0][0]), S.AnnotateLayout(buffers[1], None))
    assert written_params(PrimFunc("f", tuple(buffers), body)) == (False, False)
    fill = S.Fill(buffers[1].full_region(), buffers[0][0])  # a store into Y, reading X
    assert written_params(PrimFunc("f", tuple(buffers), fill)) == (False, True)
    assert written_params(PrimFunc("f", tuple(buffers), _Unknown(buffers[0]))) == (True, False)


@S.node
class _Unknown(S.Stmt):
    """A statement kind the analysis has never heard of, holding a buffer."""

    buffer: Buffer


def test_lowering_records_the_flags_in_the_artifact():
    @T.prim_func
    def k(X: T.Tensor((32,), "float32"), Y: T.Tensor((32,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(32):
                Y[i] = X[i]

    artifact = tilecraft.lower(k, target="c")
    assert [p.written for p in artifact.params] == [False, True, False]


def test_param_info_defaults_to_written_and_scalars_never_are():
    assert ParamInfo("X", "buffer", dt.float32).written
    assert not ParamInfo("X", "buffer", dt.float32, written=False).written
    assert not ParamInfo("n", "scalar", dt.int32, written=True).written


def test_assemble_takes_one_flag_per_parameter():
    @T.prim_func
    def k(X: T.Tensor((32,), "float32"), n: T.int32):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(32):
                X[i] = 0.0

    device = DeviceCode({"c-source": ""})
    art = CompiledArtifact.assemble(k, Target("c", ()), device, None, "h")
    assert [p.written for p in art.params] == [True, False]  # nobody said: assume written
    with pytest.raises(ArtifactError, match="`written` has 1 entries for 2 parameters"):
        CompiledArtifact.assemble(k, Target("c", ()), device, None, "h", written=(True,))
