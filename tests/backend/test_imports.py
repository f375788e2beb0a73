"""Every infrastructure module imports on its own in a fresh interpreter (no import cycles)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = (
    "tilecraft.settings", "tilecraft.backend", "tilecraft.backend.codegen", "tilecraft.backend.context",
    "tilecraft.backend.detection", "tilecraft.backend.module", "tilecraft.backend.pipeline",
    "tilecraft.backend.registry", "tilecraft.backend.target", "tilecraft.backend.execution",
    "tilecraft.backend.execution_registry", "tilecraft.runtime", "tilecraft.runtime.artifact",
    "tilecraft.runtime.arrays", "tilecraft.runtime.launch", "tilecraft.runtime.timing", "tilecraft.execution", "tilecraft.execution.base", "tilecraft.execution.cache",
    "tilecraft.execution.cuda_driver.runtime", "tilecraft.execution.nvrtc.backend",
    "tilecraft.execution.nvcc.backend", "tilecraft.tools.cli",
)  # fmt: skip


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_alone(module):
    result = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
