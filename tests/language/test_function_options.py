"""Kernel-level compile options written in the kernel (TileLang's lazy style): tensor parameters
declared in the body of a @T.prim_func, `T.annotate_pass_configs`, `T.annotate_compile_flags`, outputs
returned from T.empty (with `out_idx` a conflict), an output sized by a scalar parameter, and the
attributes readable by key as TVM's `func.attrs`; kernels run on the CPU target against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.language.helpers import assert_roundtrip
from tilecraft.errors import OptionError, ParseError
from tilecraft.ir.function import COMPILE_FLAGS_ATTR, PASS_CONFIGS_ATTR
from tilecraft.jit.lower import with_function_options
from tilecraft.transform import PassConfigKey

RNG = np.random.default_rng(34)


def doubled(m: int, n: int, configs: dict | None = None, flags: list | None = None):
    """`B = 2 A`, A declared in the body, B a returned T.empty output; options annotated if given."""

    @T.prim_func
    def k(A):
        if configs is not None:
            T.annotate_pass_configs(configs)
        A: T.Tensor[[m, n], T.float32]
        if flags is not None:
            T.annotate_compile_flags(flags)
        B = T.empty([m, n], T.float32)
        with T.Kernel(T.ceildiv(m, 16), threads=64) as bx:
            for i, j in T.Parallel(16, n):
                B[bx * 16 + i, j] = A[bx * 16 + i, j] * 2.0
        return B

    return k


def test_a_parameter_declared_in_the_body_and_a_returned_output():
    m, n = 37, 19
    k = doubled(m, n)
    assert [p.name for p in k.params] == ["A", "B"] and k.attrs["tilecraft.out_idx"] == (1,)
    a = RNG.standard_normal((m, n)).astype(np.float32)
    np.testing.assert_allclose(tilecraft.compile(k, target="c")(a), a.astype(np.float64) * 2, rtol=1e-6)


def test_two_parameters_declared_in_the_body_with_out_idx():
    @T.prim_func
    def k(A, B):
        A: T.Tensor[[29], T.float32]
        B: T.Tensor[[29], T.float32]
        with T.Kernel(1, threads=32):
            for i in T.Parallel(32):
                B[i] = A[i] + 1.0

    a = RNG.standard_normal(29).astype(np.float32)
    np.testing.assert_allclose(tilecraft.compile(k, out_idx=[-1], target="c")(a), a.astype(np.float64) + 1, rtol=1e-6)


def test_annotated_pass_configs_and_flags_are_attributes_that_compile_uses():
    k = doubled(8, 8, {PassConfigKey.TL_ENABLE_FAST_MATH: True}, ["-DTC_EXAMPLE_FLAG=1"])
    assert k.attrs[PASS_CONFIGS_ATTR] == (("tl.enable_fast_math", True),)
    assert k.attrs[COMPILE_FLAGS_ATTR] == ("-DTC_EXAMPLE_FLAG=1",)
    # TileLang's names of the same attributes read through (its programs test `"tilelang_..." in f.attrs`)
    assert "tilelang_pass_configs" in k.attrs and "tilelang_compile_flags" in k.attrs
    assert list(k.attrs["tilelang_out_idx"]) == [1] and k.attrs.get("tilelang_missing") is None
    artifact = tilecraft.lower(k, target="c")
    assert artifact.extra_value("fast_math") is True
    assert tuple(artifact.extra_value("compile_flags")) == ("-DTC_EXAMPLE_FLAG=1",)
    a = RNG.standard_normal((8, 8)).astype(np.float32)
    np.testing.assert_allclose(tilecraft.compile(k, target="c")(a), a.astype(np.float64) * 2, rtol=1e-6)


def test_the_callers_options_override_the_kernels_and_add_flags():
    k = doubled(8, 8, {"tl.enable_fast_math": True}, ["-DA=1"])
    configs, flags = with_function_options(k, {PassConfigKey.TL_ENABLE_FAST_MATH: False}, ["-DB=2"])
    assert configs == {"tl.enable_fast_math": False}
    assert flags == ["-DA=1", "-DB=2"]
    assert tilecraft.lower(k, target="c", pass_configs={"tl.enable_fast_math": False}).extra_value("fast_math") is False


def test_annotations_print_and_parse_back():
    text = assert_roundtrip(doubled(4, 4, {"tl.enable_fast_math": True}, ["-O2"]))
    assert "tilecraft.pass_configs" in text and "tilecraft.compile_flags" in text


def test_out_idx_for_a_kernel_that_returns_its_outputs_is_a_conflict():
    with pytest.raises(OptionError, match=r"Out index conflict: kernel k returns its T.empty outputs \(parameters 1\)"):
        tilecraft.compile(doubled(8, 8), out_idx=[-1], target="c")
    assert issubclass(OptionError, ValueError)


def test_a_parameter_used_before_its_declaration_is_located():
    with pytest.raises(ParseError, match=r"parameter 'A' needs a type annotation before its first use") as info:

        @T.prim_func
        def k(A):
            with T.Kernel(1, threads=32):
                A[0] = 1.0

    assert "A: T.Tensor((M, N), dtype)" in str(info.value)


def test_an_output_sized_by_a_scalar_parameter():
    @tilecraft.jit(target="c")
    def k(m: T.int32):
        B = T.empty([m * 2 + 1], T.float32)
        with T.Kernel(1, threads=32):
            for i in T.serial(m * 2 + 1):
                B[i] = T.cast(i, T.float32) * 0.5
        return B

    for m in (5, 12):
        np.testing.assert_array_equal(k(m), np.arange(2 * m + 1, dtype=np.float32) * 0.5)
