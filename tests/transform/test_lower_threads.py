"""lower-to-threads (the shared SIMT lowering) on shapes TileLang's examples use, and how a bug inside
a pass reaches the user: as an internal compiler error that names the pass, the kernel and the target."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.transform.helpers import OPENCL, assert_nvcc_compiles, run
from tilecraft.backend.errors import PassError
from tilecraft.testing.conformance.regressions import (
    head_of_a_wide_fragment,
    online_softmax,
    sink_logsumexp,
    sink_logsumexp_reference,
)


def partial_fill(n: int = 64):
    """T.fill of a unit fragment, of part of a fragment, and of one element of a shared buffer."""

    @T.prim_func
    def partial_fill(Y: T.Tensor((2, n), "float32"), Z: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((2, n), "float32")
            one = T.alloc_fragment((1,), "float32")
            s = T.alloc_shared((4,), "float32")
            T.fill(f, 1.0)
            T.fill(f[1, 8:24], 2.0)
            T.fill(one, 3.0)
            T.fill(s[2:3], 4.0)
            T.copy(f, Y)
            for i in T.Parallel(1):
                Z[i] = one[i] + s[2]

    return partial_fill


def test_online_softmax_with_unit_fragments_runs_on_opencl(opencl):
    x = np.random.default_rng(1).standard_normal((4, 512)).astype(np.float16)
    y = np.full_like(x, np.nan)
    run(online_softmax(), opencl, x, y)
    ref = np.exp(x.astype(np.float64))
    ref /= ref.sum(1, keepdims=True)
    assert np.abs(y.astype(np.float64) - ref).max() < 1e-3


def test_online_softmax_with_unit_fragments_compiles_for_cuda(nvcc, tmp_path):
    assert_nvcc_compiles(online_softmax(), tmp_path)


def test_fills_of_unit_and_partial_regions_write_exactly_their_elements(opencl):
    y, z = np.full((2, 64), np.nan, np.float32), np.full(1, np.nan, np.float32)
    run(partial_fill(), opencl, y, z)
    expected = np.ones((2, 64), np.float32)
    expected[1, 8:24] = 2.0
    np.testing.assert_array_equal(y, expected)
    assert z[0] == 7.0


def test_fills_of_unit_and_partial_regions_compile_for_cuda(nvcc, tmp_path):
    assert_nvcc_compiles(partial_fill(), tmp_path)


def partial_copies(m: int = 64, n: int = 32, rows: int = 4):
    """Copies of part of a fragment, as flash decoding's `T.copy(acc_o[:valid_block_H, :], O_shared)`:
    the first rows out to shared memory, a row at an offset out to global memory, and global rows into
    the middle of another fragment."""

    @T.prim_func
    def partial_copies(
        X: T.Tensor((m, n), "float32"), Y: T.Tensor((rows + 1, n), "float32"), Z: T.Tensor((m, n), "float32")
    ):
        with T.Kernel(1, threads=128):
            x = T.alloc_fragment((m, n), "float32")
            z = T.alloc_fragment((m, n), "float32")
            head = T.alloc_shared((rows, n), "float32")
            T.copy(X, x)
            T.copy(x[:rows, :], head)
            T.copy(head, Y[:rows, :])
            T.copy(x[5, :], Y[rows, :])
            T.fill(z, -1.0)
            T.copy(X[0:rows, :], z[8 : 8 + rows, :])
            T.copy(z, Z)

    return partial_copies


def test_copies_of_part_of_a_fragment_move_exactly_that_part(opencl):
    x = np.random.default_rng(3).standard_normal((64, 32)).astype(np.float32)
    y, z = np.full((5, 32), np.nan, np.float32), np.full((64, 32), np.nan, np.float32)
    run(partial_copies(), opencl, x, y, z)
    expected_y = np.concatenate([x[:4], x[5:6]])
    expected_z = np.full((64, 32), -1.0, np.float32)
    expected_z[8:12] = x[:4]
    np.testing.assert_array_equal(y, expected_y)
    np.testing.assert_array_equal(z, expected_z)


def test_copies_of_part_of_a_fragment_compile_for_cuda(nvcc, tmp_path):
    assert_nvcc_compiles(partial_copies(), tmp_path)


def test_a_bug_inside_a_pass_is_an_internal_compiler_error_naming_pass_kernel_and_target(monkeypatch):
    from tilecraft.transform.simt import lower_threads

    def broken(self, s):
        raise AttributeError("'BufferStore' object has no attribute 'loop_var'")

    monkeypatch.setattr(lower_threads.LowerToThreads, "_partition", broken)
    kernel = partial_fill()
    with pytest.raises(PassError) as info:
        tilecraft.lower(kernel, target=OPENCL, execution_backend="opencl")
    text = str(info.value)
    assert "internal compiler error" in text
    assert "'lower-to-threads'" in text
    assert f"partial_fill ({kernel.span.file}:{kernel.span.line})" in text
    assert "target opencl" in text
    assert "please report it" in text
    assert "AttributeError: 'BufferStore' object has no attribute 'loop_var'" in text
    assert isinstance(info.value.__cause__, AttributeError)
    assert info.value.__cause__.__traceback__ is not None


def test_a_fragment_wider_than_the_loop_that_fills_it_runs_on_opencl(opencl):
    """`sinks = T.alloc_fragment([wide])` filled by `T.Parallel(bm)` takes the loop's layout for its
    first bm elements (registers of the same threads for the rest); it used to be refused."""
    rng = np.random.default_rng(5)
    sinks, x = rng.standard_normal(3).astype(np.float32), rng.standard_normal((3, 100, 64)).astype(np.float32)
    y = np.full((3, 100), np.nan, np.float32)
    run(sink_logsumexp(), opencl, sinks, x, y)
    assert np.abs(y - sink_logsumexp_reference(sinks, x)).max() < 1e-5


def test_a_loop_over_the_head_of_a_laid_out_fragment_runs_on_opencl(opencl):
    """A T.Parallel loop over the first elements of a fragment laid out before it iterates that layout,
    masked past its extent, so each thread writes only registers it holds."""
    w = np.random.default_rng(6).standard_normal(64).astype(np.float32)
    y = np.full(64, np.nan, np.float32)
    run(head_of_a_wide_fragment(), opencl, w, y)
    assert np.array_equal(y, np.concatenate([w[:32] * 2, w[32:]]))


@pytest.mark.parametrize("build", [sink_logsumexp, head_of_a_wide_fragment])
def test_fragments_wider_than_their_loops_compile_for_cuda(build, nvcc, tmp_path):
    assert_nvcc_compiles(build(), tmp_path)
