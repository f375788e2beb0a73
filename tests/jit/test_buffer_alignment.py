"""What the generated code assumes of buffer addresses is one fact: codegen records it in the artifact
(`buffer_alignment`), the JIT's full path checks it, and the setting that changes the code
(`tilecraft.cuda.assume_aligned`) is a pass config, so it is part of the artifact's cache key."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ArgumentError, LoweringError
from tilecraft.jit.lower import artifact_key

CUDA = "cuda -arch=sm_80"
ASSUME = "tilecraft.cuda.assume_aligned"


def scale(n=256):
    @T.prim_func
    def scale(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                Y[bx * 128 + i] = X[bx * 128 + i] * 2.0

    return scale


def test_the_cuda_alignment_assumption_is_an_input_of_the_cache_key():
    """Both settings of the pass config lower to different sources under different keys (it was a module
    global, so a second process got the other setting's cached artifact)."""
    func = scale()
    ctx = tilecraft.create_backend_context(CUDA, None, "nvrtc", require_available=False)
    keys = {flag: artifact_key(func, ctx, {ASSUME: flag}, None) for flag in (True, False)}
    sources = {flag: tilecraft.lower(func, CUDA, None, "nvrtc", {ASSUME: flag}).source("cuda-source")
               for flag in (True, False)}  # fmt: skip
    assert keys[True] != keys[False]
    assert "__builtin_assume_aligned(X_arg, 16)" in sources[True]
    assert "__builtin_assume_aligned" not in sources[False]
    assert tilecraft.lower(func, CUDA, None, "nvrtc").source("cuda-source") == sources[True]  # the default


def test_the_alignment_setting_must_be_a_bool():
    with pytest.raises(LoweringError, match="tilecraft.cuda.assume_aligned' must be True or False, got 1"):
        tilecraft.lower(scale(), CUDA, None, "nvrtc", {ASSUME: 1})


@pytest.mark.parametrize(
    "target, execution, alignment",
    [(CUDA, "nvrtc", 16), ("c", "cc", 1), ("opencl -fp64=true", "opencl", 1)],
)
def test_codegen_records_the_alignment_its_code_assumes(target, execution, alignment):
    """CUDA's 16-byte copies and cp.async need 16-byte aligned buffers whatever the setting; C and
    OpenCL code assumes nothing."""
    for configs in ({}, {ASSUME: False}) if execution == "nvrtc" else ({},):
        assert tilecraft.lower(scale(), target, None, execution, configs).buffer_alignment == alignment


def aligned(n: int, alignment: int) -> np.ndarray:
    """n float32 zeros starting on an `alignment`-byte boundary."""
    storage = np.zeros(n + alignment // 4, dtype=np.float32)
    first = (-storage.ctypes.data % alignment) // 4
    return storage[first : first + n]


def test_the_full_path_refuses_a_buffer_that_lacks_the_artifacts_alignment():
    kernel = tilecraft.compile(scale(), target="c", execution_backend="cc")
    built = replace(kernel.built, artifact=replace(kernel.artifact, buffer_alignment=64))
    strict = tilecraft.Kernel(replace(kernel.loaded, built=built), kernel.context)
    x, y = aligned(256, 64), aligned(256, 64)
    x[:] = np.arange(256)
    strict(x, y)
    np.testing.assert_array_equal(y, x * 2)
    shifted = aligned(257, 64)[1:]
    with pytest.raises(ArgumentError, match="'X' starts at an address that is not 64-byte aligned"):
        strict(shifted, y)
    kernel(shifted, y)  # the C code itself assumes nothing
