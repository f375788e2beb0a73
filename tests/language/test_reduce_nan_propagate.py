"""`nan_propagate=` of T.reduce_max / reduce_min / reduce_absmax: True (tilecraft's default) gives NaN for a
row with a NaN (NumPy's max), False ignores NaN (C's fmax, NumPy's fmax.reduce: the largest non-NaN
element, NaN only when every element is), with clear=True and clear=False (dst's value takes part), on
the CPU target against float64 NumPy references; tests/hip runs the same kernels across threads."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import SemanticError
from tilecraft.ir import stmt as S

REDUCE = {"max": T.reduce_max, "min": T.reduce_min, "absmax": T.reduce_absmax}
FLOATS = ("float32", "float16", "float64")


def row_reduce(m: int, n: int, kind: str, dtype: str = "float32", nan_propagate: bool | None = None,
               clear: bool = True, threads: int = 128):  # fmt: skip
    """B[i] = kind over A[i, :] (combined with B[i] when not clear); nan_propagate None: left out."""
    reduce = REDUCE[kind]
    extra = {} if nan_propagate is None else {"nan_propagate": nan_propagate}

    @T.prim_func
    def kernel(A: T.Tensor((m, n), dtype), B: T.Tensor((m,), dtype)):
        with T.Kernel(1, threads=threads):
            a = T.alloc_fragment((m, n), dtype)
            b = T.alloc_fragment((m,), dtype)
            T.copy(A, a)
            T.copy(B, b)
            reduce(a, b, dim=1, clear=clear, **extra)
            T.copy(b, B)

    return kernel


def nan_rows(m: int, n: int, dtype: str, seed: int) -> np.ndarray:
    """Normal values with NaN at random positions: some rows none, some one, some several, one all NaN."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, n)).astype(dtype)
    for row in range(m):
        count = rng.choice([0, 1, 3, n // 2])
        a[row, rng.choice(n, size=count, replace=False)] = np.nan
    a[rng.integers(m)] = np.nan
    return a


def reference(a: np.ndarray, kind: str, nan_propagate: bool, start: np.ndarray | None = None) -> np.ndarray:
    """The float64 result: NumPy's max / min (NaN propagates) or fmax / fmin (NaN ignored)."""
    x = a.astype(np.float64)
    if kind == "absmax":
        x = np.abs(x)
    if start is not None:  # clear=False: dst's value takes part as it is (not its absolute value)
        x = np.concatenate([x, start.astype(np.float64)[:, None]], axis=1)
    pick = {"max": np.fmax, "absmax": np.fmax, "min": np.fmin}[kind]
    if nan_propagate:
        pick = {"max": np.maximum, "absmax": np.maximum, "min": np.minimum}[kind]
    return pick.reduce(x, axis=1)


def run_cpu(func, *arrays) -> None:
    tilecraft.compile(func, target="c")(*arrays)


def check(out: np.ndarray, ref: np.ndarray) -> None:
    """Exact (a max or min picks an element), NaN exactly where the reference has NaN."""
    np.testing.assert_array_equal(np.isnan(out), np.isnan(ref))
    np.testing.assert_array_equal(out.astype(np.float64), ref.astype(out.dtype).astype(np.float64))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("kind", sorted(REDUCE))
@pytest.mark.parametrize("nan_propagate", [True, False])
def test_nan_rows(kind, dtype, nan_propagate):
    m, n = 13, 45  # ragged: neither a power of two
    a = nan_rows(m, n, dtype, seed=len(kind) + len(dtype))
    b = np.full(m, 12345.0, dtype)  # poison: every element must be written
    run_cpu(row_reduce(m, n, kind, dtype, nan_propagate), a, b)
    check(b, reference(a, kind, nan_propagate))


@pytest.mark.parametrize("kind", sorted(REDUCE))
@pytest.mark.parametrize("nan_propagate", [True, False])
def test_clear_false_combines_with_dst(kind, nan_propagate):
    """dst's value takes part: a NaN there is ignored (False) or kept (True); a finite one wins where it
    is the extremum, and is the result of an all-NaN row when NaN is ignored."""
    m, n = 11, 29
    a = nan_rows(m, n, "float32", seed=7)
    start = np.random.default_rng(8).standard_normal(m).astype(np.float32) * 3
    start[[1, 4]] = np.nan
    b = start.copy()
    run_cpu(row_reduce(m, n, kind, "float32", nan_propagate, clear=False), a, b)
    check(b, reference(a, kind, nan_propagate, start))


def test_every_element_nan_gives_nan_and_infinities_stay():
    m, n = 4, 9
    a = np.full((m, n), np.nan, np.float32)
    a[1, 3] = -np.inf
    a[2, 0] = np.inf
    a[3, 8] = -2.5
    for kind in ("max", "min"):
        b = np.zeros(m, np.float32)
        run_cpu(row_reduce(m, n, kind, nan_propagate=False), a, b)
        check(b, reference(a, kind, False))
        assert np.isnan(b[0]) and b[3] == -2.5


def test_integer_reductions_ignore_the_choice():
    a = np.random.default_rng(2).integers(-100, 100, (6, 17)).astype(np.int32)
    b = np.zeros(6, np.int32)
    run_cpu(row_reduce(6, 17, "max", "int32", nan_propagate=False), a, b)
    np.testing.assert_array_equal(b, a.max(1))


def test_the_default_is_nan_propagating_and_is_carried_in_the_ir():
    default = row_reduce(4, 8, "max")
    (op,) = [s for s in _walk(default.body) if isinstance(s, S.Reduce)]
    assert op.nan_propagate
    ignoring = row_reduce(4, 8, "max", nan_propagate=False)
    (op,) = [s for s in _walk(ignoring.body) if isinstance(s, S.Reduce)]
    assert not op.nan_propagate
    assert "nan_propagate=False" in ignoring.script() and "nan_propagate" not in default.script()


def test_the_printed_ir_parses_back_to_the_same_choice():
    from tests.ir.test_lowered_roundtrip import assert_round_trip
    from tilecraft.ir.function import IRModule

    assert_round_trip(IRModule.from_func(row_reduce(4, 8, "min", nan_propagate=False, clear=False)), "min")


def test_the_tilelang_hook_gives_tilelangs_default():
    """Under TileLang's names (the import hook), a call that does not say ignores NaN, as TileLang's does."""
    from tilecraft.compat import hook

    was = hook.installed()
    hook.install()
    try:
        (op,) = [s for s in _walk(row_reduce(4, 8, "absmax").body) if isinstance(s, S.Reduce)]
        assert not op.nan_propagate
    finally:
        if not was:
            hook.uninstall()
    if not was:
        (op,) = [s for s in _walk(row_reduce(4, 8, "absmax").body) if isinstance(s, S.Reduce)]
        assert op.nan_propagate


def test_nan_propagate_on_a_sum_is_refused():
    import dataclasses

    from tilecraft.transform.check import check_semantics

    func = row_reduce(4, 8, "max")
    op = next(s for s in _walk(func.body) if isinstance(s, S.Reduce))
    bad = dataclasses.replace(op, kind="sum", nan_propagate=False)
    with pytest.raises(SemanticError, match="no nan_propagate choice"):
        check_semantics(dataclasses.replace(func, body=_replace(func.body, op, bad)))


def _walk(node):
    from tilecraft.ir.visitor import walk

    return walk(node)


def _replace(body, old, new):
    from tilecraft.ir.visitor import Mutator

    class Swap(Mutator):
        def mutate_Reduce(self, s):
            return new if s is old else s

    return Swap().mutate(body)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_cuda_source_compiles_with_nvcc(dtype, tmp_path):
    """fmaxf / fminf (NaN-ignoring on CUDA) across lanes and warps, and with dst's value."""
    from tests.transform.helpers import assert_nvcc_compiles

    for kind in ("max", "min", "absmax"):
        source = assert_nvcc_compiles(row_reduce(8, 256, kind, dtype, False, clear=False, threads=256), tmp_path)
        call = "fminf(" if kind == "min" else "fmaxf("
        assert (call if dtype != "float64" else call[:-2] + "(") in source


# The NaN-ignoring combine as each target spells it: its own fmax where that ignores NaN, a helper that
# tests the bits where not (WGSL's max of a NaN is undefined), selects on NaN tests in the CuTe DSL.
TARGET_FORMS = {
    "hip -arch=gfx942": ("hip-source", {}, "__builtin_fmaxf(red0, "),
    "metal -family=apple7": ("metal-source", {}, "fmax(red0, "),
    "opencl": ("opencl-source", {"execution_backend": "opencl"}, "fmax(red0, "),
    "webgpu": ("wgsl-source", {"execution_backend": "wgpu"}, "tc_fmax_f32(red0, "),
}


@pytest.mark.parametrize("target", sorted(TARGET_FORMS))
def test_each_target_prints_a_nan_ignoring_combine(target):
    from tests.transform.helpers import OPENCL, WEBGPU

    fmt, options, form = TARGET_FORMS[target]
    spelled = {"opencl": OPENCL, "webgpu": WEBGPU}.get(target, target)
    ignoring = tilecraft.lower(row_reduce(8, 64, "max", nan_propagate=False), target=spelled, **options)
    assert form in ignoring.source(fmt)
    propagating = tilecraft.lower(row_reduce(8, 64, "max", nan_propagate=True), target=spelled, **options)
    assert form not in propagating.source(fmt)


def test_webgpu_helper_tests_the_bits():
    from tests.transform.helpers import WEBGPU

    source = tilecraft.lower(row_reduce(8, 64, "min", nan_propagate=False), target=WEBGPU,
                             execution_backend="wgpu").source("wgsl-source")  # fmt: skip
    assert "fn tc_fmin_f32(a: f32, b: f32) -> f32 {" in source
    assert "return select(select(min(a, b), a, b_nan), b, a_nan);" in source


def test_cutedsl_evaluates_a_shuffled_operand_once():
    """The DSL's form names an operand several times: a lane shuffle is bound to a name first, so that it
    runs once and in every lane."""
    from tests.cutedsl.test_cutedsl import device_code

    source = device_code(row_reduce(8, 64, "max", nan_propagate=False)).sources["cutedsl-source"]
    shuffles = [line for line in source.splitlines() if "shuffle_sync_bfly" in line]
    assert shuffles and all(line.strip().startswith("tc_v") for line in shuffles)
    assert "!= (tc_v" in source and "cutlass.max(red0[0], tc_v" in source


def test_cpu_vectorizes_the_nan_ignoring_loop():
    """OpenMP's max over the numbers with a flag for having seen one, not a scalar fmax chain."""
    from tests.transform.helpers import c_source

    source = c_source(row_reduce(8, 64, "max", nan_propagate=False))
    assert "#pragma omp simd reduction(max:tc_best) reduction(|:tc_seen)" in source
    assert "fmaxf(" not in source
