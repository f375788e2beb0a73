"""tilecraft: a tile-level kernel language with a pure-Python compiler and pluggable backends.

    import tilecraft
    import tilecraft.language as T

Importing stays light: the compiler, the backends and numpy load on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

from tilecraft.jit import compile, jit  # noqa: E402,A004 - light front doors; the compiler loads on use

_LAZY = {
    "JITFunction": "tilecraft.jit.api",
    "load": "tilecraft.jit.load",
    "lower": "tilecraft.jit.lower",
    "Kernel": "tilecraft.jit.kernel",
    "JITKernel": "tilecraft.jit.kernel",
    "Target": "tilecraft.backend.target",
    "create_backend_context": "tilecraft.backend.context",
    "PassConfigKey": "tilecraft.jit.options",
    "parse_script": "tilecraft.language.script",
    "par_compile": "tilecraft.jit.parallel",
    # TileLang's top-level names (docs/compat.md).
    "cdiv": "tilecraft.math",
    "next_power_of_2": "tilecraft.math",
    "DataType": "tilecraft.ir.dtype",
    "autotune": "tilecraft.autotuner",
    "TensorSupplyType": "tilecraft.profiler",
}
# Subpackages TileLang programs reach as attributes after `import tilelang` (`tilelang.layout.X`).
_SUBMODULES = (
    "autotuner",
    "carver",
    "engine",
    "env",
    "language",
    "layout",
    "math",
    "profiler",
    "tools",
    "torch",
    "transform",
)

__all__ = ["__version__", "compile", "jit", *_LAZY]


def __getattr__(name: str) -> Any:
    if name == "tvm":
        return _tvm()
    if name in _SUBMODULES:
        return importlib.import_module(f"tilecraft.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tilecraft' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def _tvm() -> Any:
    # `from tilelang import tvm` in a TileLang program run through the import hook: tilecraft's `tvm`
    # namespace (tilecraft.compat.tvm, the part of TVM TileLang's examples use); without the hook there is
    # no `tvm` here.
    from tilecraft._modules import imported

    hook = imported("tilecraft.compat.hook")
    if hook is None or not hook.installed():
        raise AttributeError("module 'tilecraft' has no attribute 'tvm'")
    return importlib.import_module(hook.TVM_PACKAGE)


def __dir__() -> list[str]:
    return sorted(__all__)
