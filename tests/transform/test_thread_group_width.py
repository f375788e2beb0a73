"""The shared SIMT passes at a thread-group width of 64, declared by a test-only backend: no shared file
knows the width, so a wave64 target is a `SimtTarget`, not an edit.

The backend `simt64` here is OpenCL's pipeline with its `infer-layouts` and `lower-to-threads` built
for groups of 64, OpenCL's codegen and the `opencl` execution backend (PoCL's CPU device in the
suite): its kernels really run, so a pass that still assumed 32 somewhere (a warp bit taken as thread
bit b + 5, a lane taken as tid % 32) combines the wrong threads and the numbers say so. A second,
lowering-only variant adds a lane exchange, to check which reductions it is asked for.
"""

from __future__ import annotations

import dataclasses
import zlib

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.transform.helpers import OPENCL
from tilecraft.backend import (
    BackendModule,
    PassContext,
    PassPipeline,
    SimtTarget,
    Target,
    TargetKind,
    register_backend,
    register_target_kind,
)
from tilecraft.backend.registry import unregister_backend
from tilecraft.backend.target_kind import unregister_target_kind
from tilecraft.ir import expr as E
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import walk
from tilecraft.layout.inference import infer_layouts
from tilecraft.testing.conformance.cases import CASES
from tilecraft.transform.simt.lower_threads import lower_to_threads

KIND = "simt64"
WAVE64 = SimtTarget(width=64, max_threads=1024, vector_bytes=16)
EXCHANGE = "lane_xor_for_tests"  # an intrinsic only this file emits: no printer is asked for it


def exchange(value: E.Expr, mask: int) -> E.Expr:
    return E.call(EXCHANGE, value, E.const(mask), dtype=value.dtype)


WAVE64_EXCHANGE = dataclasses.replace(WAVE64, exchange=exchange)


def wave_pipeline(simt: SimtTarget, until: str | None = None) -> PassPipeline:
    """OpenCL's passes with the two SIMT ones built for `simt` (up to and including `until`)."""
    from tilecraft.opencl.op import OP_TABLE
    from tilecraft.opencl.pipeline import PIPELINE

    rebuilt = {"infer-layouts": infer_layouts(lambda target: simt),
               "lower-to-threads": lower_to_threads(OP_TABLE, lambda target: simt)}  # fmt: skip
    passes = []
    for p in PIPELINE.passes:
        passes.append(rebuilt.get(p.name, p))
        if p.name == until:
            break
    assert {p.name for p in passes} >= set(rebuilt)
    return PassPipeline(KIND, tuple(passes))


@pytest.fixture(scope="module")
def simt64():
    """The `simt64` kind and backend, registered for this module only."""
    from tilecraft.backend import API_VERSION
    from tilecraft.backend.registry import registered_backends

    opencl = next(m for m in registered_backends() if KIND not in m.target_kinds and m.name == "opencl")
    register_target_kind(
        TargetKind(KIND, attributes=("platform", "device"), doc="tests: OpenCL, groups of 64")
    )
    manifest = BackendModule(
        name="simt64-test",
        target_kinds=(KIND,),
        pipelines={KIND: wave_pipeline(WAVE64)},
        device_codegens={KIND: next(iter(opencl.device_codegens.values()))},
        execution_backends=opencl.execution_backends,
        doc="tests: the OpenCL backend with thread groups of 64",
        api_version=API_VERSION,
    )
    register_backend(manifest)
    try:
        yield manifest
    finally:
        unregister_backend(manifest.name)
        unregister_target_kind(KIND)


@pytest.fixture(scope="module")
def simt64_ctx(simt64):
    from tilecraft.backend import create_backend_context
    from tilecraft.errors import BackendError

    try:
        return create_backend_context(KIND, execution_backend="opencl")
    except BackendError as err:
        pytest.skip(f"no OpenCL device: {err}")


def row_totals(rows: int = 2, cols: int = 1024, threads: int = 128):
    """Each row of a (2, 1024) float32 tile summed by 128 threads: every column bit above the 4-wide
    vector is a thread bit, so the sum combines all lanes and, at width 64, both groups."""

    @T.prim_func
    def totals(A: T.Tensor((rows, cols), "float32"), out: T.Tensor((rows,), "float32")):
        with T.Kernel(1, threads=threads) as _:
            tile = T.alloc_fragment((rows, cols), "float32")
            total = T.alloc_fragment((rows,), "float32")
            T.copy(A, tile)
            T.reduce_sum(tile, total, dim=1)
            T.copy(total, out)

    return totals


def lowered(func, simt: SimtTarget) -> IRModule:
    """`func` after `lower-to-threads` of the OpenCL pipeline built for `simt`."""
    pipeline = wave_pipeline(simt, until="lower-to-threads")
    return pipeline.run(IRModule.from_func(func), PassContext(Target.parse(OPENCL)))


def calls(mod: IRModule, op: str) -> list[E.Call]:
    return [n for f in mod.functions for n in walk(f.body) if isinstance(n, E.Call) and n.op == op]


def divisors(mod: IRModule, kind) -> set[int]:
    """The constant right operands of every `kind` (FloorMod, FloorDiv) node: how tid is split."""
    found = set()
    for f in mod.functions:
        for n in walk(f.body):
            if isinstance(n, kind) and isinstance(n.b, E.IntImm):
                found.add(n.b.value)
    return found


# ---------------------------------------------------------------- what the passes build at width 64


def test_lanes_and_groups_are_tid_mod_and_div_64():
    mod = lowered(row_totals(), WAVE64)
    assert 64 in divisors(mod, E.FloorMod) and 32 not in divisors(mod, E.FloorMod)
    assert 64 in divisors(mod, E.FloorDiv) and 32 not in divisors(mod, E.FloorDiv)


def test_without_an_exchange_every_thread_bit_goes_through_shared_memory():
    """Seven thread bits (6 lane bits, 1 group bit) split the row: a butterfly with partners 1..64."""
    mod = lowered(row_totals(), WAVE64)
    partners = {c.args[1].value for c in calls(mod, "bitwise_xor") if isinstance(c.args[1], E.IntImm)}
    assert partners == {1, 2, 4, 8, 16, 32, 64}
    assert not calls(mod, EXCHANGE)


def test_with_an_exchange_the_six_lane_bits_are_exchanged_and_the_group_bit_is_shared():
    mod = lowered(row_totals(), WAVE64_EXCHANGE)
    assert sorted(c.args[1].value for c in calls(mod, EXCHANGE)) == sorted([1, 2, 4, 8, 16, 32] * 2)  # 2 rows
    partners = {c.args[1].value for c in calls(mod, "bitwise_xor") if isinstance(c.args[1], E.IntImm)}
    assert partners == {64}  # group bit 0 is thread bit 6, not 5


def test_a_block_smaller_than_one_group_is_refused_with_the_width():
    with pytest.raises(tilecraft.errors.LoweringError, match="between 64 and 1024, got"):
        lowered(row_totals(threads=32), WAVE64)


def test_the_generated_opencl_names_groups_of_64(simt64):
    source = tilecraft.lower(row_totals(), target=KIND, execution_backend="opencl").source("opencl-source")
    kernel = source[source.index("__kernel") :]
    assert "64" in kernel and "% 32" not in kernel and "/ 32" not in kernel
    assert "^ 64" in kernel  # the group bit's partner


# ---------------------------------------------------------------- the numbers, on the OpenCL device

RUN = (
    "row_sum_ragged",
    "column_sum",
    "abs_and_min_reductions",
    "softmax_f16",
    "layer_norm",
    "cumsum",
    "row_vectors_across_a_tile",
    "fragment_reads_across_threads",
    "reduce_keep_dim_rows_and_columns",
    "gemm_f32_nn",
)


def run_on(ctx, func, arrays):
    backend = ctx.execution_backend()
    device = [backend.to_device(a) for a in arrays]
    tilecraft.compile(func, ctx=ctx)(*device)
    return [backend.to_host(d) for d in device]


def test_row_totals_across_both_groups_are_right(simt64_ctx):
    rng = np.random.default_rng(64)
    a = rng.standard_normal((2, 1024)).astype(np.float32)
    _, out = run_on(simt64_ctx, row_totals(), [a, np.full(2, np.nan, np.float32)])
    np.testing.assert_allclose(out, a.astype(np.float64).sum(1), rtol=1e-5)


@pytest.mark.parametrize("case", [c for c in CASES if c.name in RUN], ids=lambda c: c.name)
def test_conformance_kernels_run_with_groups_of_64(simt64_ctx, case):
    rng = np.random.default_rng(zlib.crc32(case.name.encode()))
    arrays = case.inputs(rng)
    expected = case.reference([a.copy() for a in arrays])
    out = run_on(simt64_ctx, case.build(), arrays)
    for index, ref in expected.items():
        got = np.asarray(out[index], dtype=np.float64)
        err = np.linalg.norm(got - ref) / max(np.linalg.norm(ref), 1e-30)
        assert err <= case.tol, f"{case.name}: output {index} relative error {err:.3e} > {case.tol:.1e}"


def test_every_case_picked_exists():
    assert set(RUN) <= {c.name for c in CASES}
