"""Running TileLang programs unchanged on tilecraft.

`tilecraft run-tilelang SCRIPT [ARGS]` (or `python -m tilecraft.compat SCRIPT [ARGS]`) runs a TileLang
script in a process where `import tilelang` and its submodules load tilecraft (see `hook`), optionally
with torch's CUDA device emulated on the host (see `cuda_on_cpu`). `tilecraft.testing` is TileLang's
`tilelang.testing` for tilecraft. Nothing here runs on `import tilecraft`: the hook is installed only by
`install()` or the runner, in the process that asks for it.
"""

from tilecraft.compat.hook import (
    TileLangFinder,
    UnmappedModuleError,
    counterpart,
    install,
    installed,
    uninstall,
)

__all__ = ["TileLangFinder", "UnmappedModuleError", "counterpart", "install", "installed", "uninstall"]
