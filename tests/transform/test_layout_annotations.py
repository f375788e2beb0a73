"""apply-layout-annotations: T.Layout on global buffers permutes their storage on every target; on-chip
layouts are hints; a user's T.Fragment is the fragment's layout on SIMT targets; the rest stops at the
annotation's line. (Numbers on every backend: tests/conformance/global_layouts.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.transform.helpers import OPENCL, assert_nvcc_compiles, c_source, cuda_source, opencl_source
from tilecraft.errors import LoweringError

TARGETS = ("c", "cuda -arch=sm_90a", OPENCL)
LOWER = {"c": c_source, "cuda -arch=sm_90a": cuda_source, OPENCL: opencl_source}


def _lower(func, target):
    return LOWER[target](func)


def _seq_layout(n=40):
    @T.prim_func
    def k(A: T.Tensor((n, 32), "float32"), B: T.Tensor((n, 32), "float32")):
        with T.Kernel(1, threads=128):
            T.annotate_layout({A: T.Layout(A.shape, lambda i, j: (i // 8, j, i % 8))})
            T.copy(A, B)

    return k


@pytest.mark.parametrize("target", TARGETS)
def test_a_layout_that_does_not_fit_its_buffer_stops_at_the_annotation(target):
    """i // 8 over 41 rows addresses 6 blocks of 8: more than the buffer holds."""
    with pytest.raises(LoweringError, match="addresses 1536 elements") as info:
        _lower(_seq_layout(41), target)
    assert "test_layout_annotations.py" in str(info.value)
    assert "T.annotate_layout" in str(info.value)


@pytest.mark.parametrize("target", TARGETS)
def test_a_tile_op_that_cannot_go_through_the_layout_is_refused(target):
    @T.prim_func
    def k(A: T.Tensor((32, 32), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=128):
            acc = T.alloc_fragment((32, 32), "float32")
            out = T.alloc_fragment((32,), "float32")
            T.annotate_layout({A: T.Layout(A.shape, lambda i, j: (j, i))})
            T.copy(A, acc)
            T.reduce_sum(acc, out, 1)
            T.copy(out, B)

    _lower(k, target)  # copies go through the layout

    @T.prim_func
    def g(A: T.Tensor((32, 32), "float32")):
        with T.Kernel(1, threads=128):
            T.annotate_layout({A: T.Layout(A.shape, lambda i, j: (j, i))})
            T.print(A[0:4, 0:4])

    with pytest.raises(LoweringError, match="whose storage is permuted by T.annotate_layout"):
        _lower(g, target)


@pytest.mark.parametrize("target", TARGETS)
def test_layout_kinds_must_match_the_scope(target):
    @T.prim_func
    def frag_on_global(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            T.annotate_layout({A: T.Fragment((128,), forward_thread_fn=lambda i: i)})
            for i in T.Parallel(128):
                A[i] = 1.0

    with pytest.raises(LoweringError, match=r"A \(global\) is annotated with a Fragment"):
        _lower(frag_on_global, target)

    @T.prim_func
    def layout_on_fragment(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((128,), "float32")
            T.annotate_layout({f: T.Layout((128,), lambda i: i)})
            T.copy(A, f)
            T.copy(f, A)

    with pytest.raises(LoweringError, match="a local.fragment buffer takes a T.Fragment"):
        _lower(layout_on_fragment, target)


def test_a_shared_layout_is_a_hint_on_every_target(tmp_path):
    """The swizzle of docs/language.md's example: the kernel reads the same values either way."""

    @T.prim_func
    def k(A: T.Tensor((64, 32), "float32"), B: T.Tensor((64, 32), "float32")):
        with T.Kernel(2, threads=128) as bx:
            tile = T.alloc_shared((32, 32), "float32")
            T.annotate_layout({tile: T.Layout((32, 32), lambda i, j: (i, j ^ (i % 8)))})
            T.copy(A[bx * 32, 0], tile)
            T.copy(tile, B[bx * 32, 0])

    for target in TARGETS:
        assert "annotate" not in _lower(k, target)
    assert_nvcc_compiles(k, tmp_path)


def _user_fragment(threads=128):
    @T.prim_func
    def k(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=threads):
            f = T.alloc_fragment((64, 64), "float32")
            s = T.alloc_fragment((64,), "float32")
            # thread t holds column t % 64 of rows 32 * (t // 64) ...: a transposed, non-default layout
            T.annotate_layout(
                {
                    f: T.Fragment(
                        (64, 64),
                        forward_thread_fn=lambda i, j: j + 64 * (i // 32),
                        forward_index_fn=lambda i, j: i % 32,
                    )
                }
            )
            T.copy(A, f)
            T.reduce_sum(f, s, 0)
            T.copy(s, B)

    return k


def test_a_user_fragment_is_the_fragments_layout_on_simt_targets():
    from tilecraft.backend import Target
    from tilecraft.ir import stmt as S
    from tilecraft.ir.visitor import walk
    from tilecraft.layout.inference import Inference
    from tilecraft.opencl.simt import WORK_GROUPS

    launch = next(n for n in walk(_user_fragment().body) if isinstance(n, S.KernelLaunch))
    inference = Inference(launch, 128, Target.parse(OPENCL), WORK_GROUPS)
    inference.run()
    layout = next(d for d in inference.layouts.values() if d.why == "T.annotate_layout").layout
    # element (i, j) lives in thread j + 64 * (i // 32), register i % 32
    coords = {}
    for reg in range(32):
        for tid in range(128):
            lane, warp = tid % 32, tid // 32
            out = layout.linear.apply(register=reg, lane=lane, warp=warp)
            coords[(out["dim0"], out["dim1"])] = (tid, reg)
    assert coords[(0, 5)] == (5, 0)
    assert coords[(33, 7)] == (71, 1)


@pytest.mark.parametrize("target", ("c", OPENCL))
def test_a_user_fragment_computes_the_same_values(target):
    from tilecraft.backend import create_backend_context

    ctx = create_backend_context(target)
    a = np.random.default_rng(5).standard_normal((64, 64)).astype(np.float32)
    b = np.full(64, np.nan, np.float32)
    backend = ctx.execution_backend()
    da, db = backend.to_device(a), backend.to_device(b)
    tilecraft.compile(_user_fragment(), ctx=ctx)(da, db)
    np.testing.assert_allclose(backend.to_host(db), a.astype(np.float64).sum(0), rtol=1e-5, atol=1e-5)


def test_a_user_fragment_compiles_for_cuda(tmp_path):
    assert_nvcc_compiles(_user_fragment(), tmp_path)


@pytest.mark.parametrize("target", ("cuda -arch=sm_90a", OPENCL))
def test_a_user_fragment_must_cover_the_block(target):
    with pytest.raises(LoweringError, match="spreads it over 128 threads, but the kernel has 256"):
        _lower(_user_fragment(256), target)


@pytest.mark.parametrize("name", ["dq_accumulate", "region_ops"])
def test_permuted_globals_compile_for_cuda(name, tmp_path):
    """TileLang's flash-attention backward pattern, no longer refused on CUDA (the GPU run is
    tests/conformance, cases global_layout_*)."""
    from tilecraft.testing.conformance import global_layouts

    source = assert_nvcc_compiles(getattr(global_layouts, name)(), tmp_path)
    assert "tc_atomic" in source
