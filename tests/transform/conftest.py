"""Fixtures for pass tests that check generated code with a real toolchain or run it on a device."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(scope="module")
def nvcc():
    """The nvcc executable; tests that compile generated CUDA skip with the reason without it."""
    from tilecraft.execution.cuda_driver.toolkit import find_nvcc

    path = find_nvcc() or shutil.which("nvcc")
    if path is None:
        pytest.skip("nvcc is not installed (set TILECRAFT_NVCC or CUDA_HOME to run this test)")
    return path


@pytest.fixture(scope="module")
def opencl():
    """A BackendContext for OpenCL device 0 (PoCL's CPU driver in the suite), or a skip saying why not."""
    from tilecraft.backend import create_backend_context
    from tilecraft.errors import BackendError

    try:
        return create_backend_context("opencl", execution_backend="opencl")
    except BackendError as err:
        pytest.skip(f"no OpenCL device: {err}")
