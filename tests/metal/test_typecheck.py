"""Every conformance kernel's MSL type-checks as C++17 against the metal_stdlib shim, on the FMA path
(apple6) and the simdgroup_matrix path (apple7), or fails to lower with a limit the manifest declares."""

from __future__ import annotations

import functools

import pytest

import tilecraft
from tests.metal.msl import find_compiler, typecheck
from tilecraft.errors import LoweringError
from tilecraft.metal.backend import METAL_BACKEND
from tilecraft.testing import conformance as kit

FAMILIES = ("apple6", "apple7")


@functools.cache
def library_sources(family: str) -> tuple[dict[str, str], dict[str, str]]:
    """(MSL by case name, declared limit by case name of those that do not lower)."""
    sources, skipped = {}, {}
    for case in kit.CASES:
        try:
            artifact = tilecraft.lower(case.build(), target=f"metal -family={family}")
        except LoweringError as err:
            if err.unsupported not in METAL_BACKEND.unsupported:
                raise
            skipped[case.name] = err.unsupported
            continue
        sources[case.name] = artifact.source("metal-source")
    return sources, skipped


@pytest.fixture(scope="module")
def compiler():
    found = find_compiler()
    if found is None:
        pytest.skip("no C++ compiler (clang++ or g++) to type-check MSL with; set TILECRAFT_MSL_CXX")
    return found


@pytest.mark.parametrize("family", FAMILIES)
def test_every_conformance_kernel_typechecks(family, compiler):
    sources, skipped = library_sources(family)
    assert len(sources) + len(skipped) == len(kit.CASES)
    assert len(sources) >= 50, f"only {len(sources)} kernels lower for {family}; skipped: {skipped}"
    errors = typecheck(sources, compiler)
    assert not errors, "\n".join(f"{name}: {msgs[:3]}" for name, msgs in errors.items())


def test_the_typecheck_catches_type_errors(compiler):
    """The shim declares MSL's functions with their types: a wrong argument or an unknown name fails."""
    source, _ = library_sources("apple7")
    good = source["gemm_f16_nn"]
    assert "tc_simdgroup_gemm(" in good and "simd" in good
    broken = {
        "wrong_barrier": good.replace("mem_flags::mem_threadgroup", "mem_threadgroup", 1),
        "unknown_builtin": good.replace("simdgroup_multiply_accumulate(acc", "simdgroup_multiply(acc", 1),
        "wrong_matrix_arg": good.replace("simdgroup_store(acc, ct,", "simdgroup_store(acc, 1.0f,", 1),
    }
    errors = typecheck(broken, compiler)
    assert set(errors) == set(broken), errors


def test_apple6_has_no_simdgroup_matrix_and_apple7_does():
    case = next(c for c in kit.CASES if c.name == "gemm_f16_nn")
    old = tilecraft.lower(case.build(), target="metal -family=apple6").source("metal-source")
    new = tilecraft.lower(case.build(), target="metal -family=apple7").source("metal-source")
    assert "tc_simdgroup_gemm(" not in old.split("kernel void", 1)[1]
    assert "tc_simdgroup_gemm(" in new.split("kernel void", 1)[1]
