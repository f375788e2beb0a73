"""nvcc failures stay clear without a GPU or a real nvcc: a compiler that writes nothing, and a keep
directory that cannot be written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tilecraft import settings
from tilecraft.errors import ToolchainError
from tilecraft.execution.nvcc import toolchain

SOURCE = 'extern "C" __global__ void k() {}\n'


def fake_nvcc(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "nvcc"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return path


def test_an_nvcc_that_writes_nothing_is_a_toolchain_error_with_its_command(tmp_path):
    nvcc = fake_nvcc(tmp_path, "exit 0\n")
    with settings.override(TILECRAFT_NVCC=nvcc), pytest.raises(ToolchainError) as info:
        toolchain.compile_cubin(SOURCE, "sm_90a", keep_dir=tmp_path / "keep")
    text = str(info.value)
    assert (
        "nvcc exited 0 but wrote no kernel.cubin" in text and f"command: {nvcc} -cubin -arch=sm_90a" in text
    )
    assert (tmp_path / "keep" / "kernel.cu").read_text() == SOURCE


def test_an_unwritable_keep_directory_still_shows_nvccs_output(tmp_path):
    nvcc = fake_nvcc(tmp_path, "echo 'kernel.cu(1): error: planted failure' >&2\nexit 2\n")
    blocker = tmp_path / "cache"
    blocker.write_text("a file where the cache directory should be")
    with settings.override(TILECRAFT_NVCC=nvcc), pytest.raises(ToolchainError) as info:
        toolchain.compile_cubin(SOURCE, "sm_90a", keep_dir=blocker / "failed" / "key")
    text = str(info.value)
    assert "nvcc failed (exit 2)" in text and "planted failure" in text
    assert f"could not write {blocker / 'failed' / 'key'}" in text
    kept = Path(text.split("generated source: ")[1].split(" (")[0])
    assert kept.read_text() == SOURCE and not kept.is_relative_to(blocker)
    shutil.rmtree(kept.parent)
