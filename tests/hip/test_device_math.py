"""tc_hip.h's software tanhf and erff (clang has no AMDGPU expansion of them without ROCm's ocml), compiled
for the host by the system C compiler and compared with float64 references over their whole range."""

from __future__ import annotations

import ctypes
import math
from pathlib import Path

import numpy as np
import pytest

import tilecraft.hip

HEADER = Path(tilecraft.hip.__file__).parent / "include" / "tc_hip.h"
START, END = (
    "// Without ocml",
    "// ------------------------------------------------------------------ atomics",
)


@pytest.fixture(scope="module")
def device_math(tmp_path_factory):
    """The header's math section as a host library exporting tanh_f32 and erf_f32."""
    from tilecraft.errors import ToolchainError
    from tilecraft.execution.cc import toolchain

    text = HEADER.read_text()
    section = text[text.index(START) : text.index(END)]
    source = (
        "#define TC_DEVICE static inline\n" + section
        + "float tanh_f32(float x) { return tc_tanhf(x); }\nfloat erf_f32(float x) { return tc_erff(x); }\n"
    )  # fmt: skip
    try:
        binary = toolchain.compile_shared(source, [], False, tmp_path_factory.mktemp("math-failed"))
    except ToolchainError as err:
        pytest.skip(f"no host C compiler: {err}")
    path = tmp_path_factory.mktemp("math") / "libtc_math.so"
    path.write_bytes(binary)
    lib = ctypes.CDLL(str(path))
    for name in ("tanh_f32", "erf_f32"):
        getattr(lib, name).argtypes, getattr(lib, name).restype = [ctypes.c_float], ctypes.c_float
    return lib


POINTS = np.concatenate([np.linspace(-12, 12, 4001), np.geomspace(1e-8, 3, 400), -np.geomspace(1e-8, 3, 400)])


@pytest.mark.parametrize("name, reference", [("tanh_f32", math.tanh), ("erf_f32", math.erf)])
def test_within_a_few_float32_ulps_everywhere(device_math, name, reference):
    fn = getattr(device_math, name)
    worst = 0.0
    for x in POINTS.astype(np.float32):
        ref = reference(float(x))
        got = fn(float(x))
        worst = max(worst, abs(got - ref) / max(abs(ref), 1e-30))
    assert worst < 5e-7, f"{name}: worst relative error {worst:.2e}"


def test_signs_and_limits(device_math):
    assert device_math.tanh_f32(0.0) == 0.0 and device_math.erf_f32(0.0) == 0.0
    assert device_math.tanh_f32(30.0) == 1.0 and device_math.tanh_f32(-30.0) == -1.0
    assert device_math.erf_f32(-6.0) == -1.0
    assert math.isnan(device_math.tanh_f32(float("nan"))) and math.isnan(device_math.erf_f32(float("nan")))
