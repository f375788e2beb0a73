"""The profiler with torch tensors (skipped without torch)."""

from __future__ import annotations

import pytest

from tilecraft.profiler import TensorSupplyType

torch = pytest.importorskip("torch")

from tests.profiler.kernels import scaled_add  # noqa: E402


@pytest.fixture(scope="module")
def kernel():
    return scaled_add(512)


def test_torch_inputs_and_a_torch_reference(kernel):
    profiler = kernel.get_profiler(TensorSupplyType.Randn, library="torch")
    inputs = profiler._get_inputs()
    assert all(isinstance(x, torch.Tensor) for x in inputs)
    profiler.assert_allclose(lambda a, b: torch.add(a * 2, b), atol=1e-5, rtol=1e-5)
    assert profiler.do_bench(n_warmup=1, n_repeat=2) > 0.0


def test_the_default_library_is_torch_once_the_program_imported_it(kernel):
    assert kernel.get_profiler().library == "torch"


def test_bfloat16_inputs_become_torch_bfloat16():
    profiler = scaled_add(64, "bfloat16").get_profiler(TensorSupplyType.Uniform, library="torch")
    a, b = profiler._get_inputs()
    assert a.dtype == torch.bfloat16
    profiler.assert_allclose(lambda x, y: x * 2 + y)
