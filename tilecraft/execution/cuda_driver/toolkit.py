"""Where the CUDA toolkit is: its `nvcc` (TILECRAFT_NVCC, $CUDA_HOME/bin, $CUDA_PATH/bin, PATH,
/usr/local/cuda/bin) and the directories it may be installed in.

Both builds need it: the `nvcc` execution backend (and the CUDA target's eager compile step) runs that
nvcc; NVRTC ships no CUDA headers and takes them from the toolkit next to it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tilecraft import settings

INSTALL_HINT = (
    "install the CUDA toolkit (https://developer.nvidia.com/cuda-downloads, or `apt install "
    "nvidia-cuda-toolkit`) and put its bin directory on PATH, or point TILECRAFT_NVCC at nvcc"
)


def _configured() -> Path | None:
    # Unchecked: an unusable TILECRAFT_NVCC is diagnosed here, with where else nvcc was looked for.
    configured = settings.get("TILECRAFT_NVCC", check=False)
    return Path(configured) if configured else None


def _candidates() -> list[tuple[str, Path | None]]:
    """(where, path) in lookup order; a None path means "not set"."""
    found = [("TILECRAFT_NVCC", _configured())]
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        root = os.environ.get(variable)
        found.append((f"${variable}/bin", Path(root) / "bin" / "nvcc" if root else None))
    on_path = shutil.which("nvcc")
    found.append(("PATH", Path(on_path) if on_path else None))
    found.append(("/usr/local/cuda/bin", Path("/usr/local/cuda/bin/nvcc")))
    return found


def find_nvcc() -> str | None:
    """nvcc from TILECRAFT_NVCC, else $CUDA_HOME/bin, $CUDA_PATH/bin, PATH, /usr/local/cuda/bin; None when
    TILECRAFT_NVCC is set but unusable (it is never silently replaced by another nvcc)."""
    configured = _configured()
    if configured is not None:
        path = configured / "nvcc" if configured.is_dir() else configured
        return str(path) if _executable(path) else None
    for _, path in _candidates()[1:]:
        if path is not None and _executable(path):
            return str(path)
    return None


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def missing_reason() -> str:
    """Why there is no nvcc: what is wrong with TILECRAFT_NVCC, or that none was found, and where it looked."""
    configured = _configured()
    what = f"TILECRAFT_NVCC={configured} is not an executable nvcc" if configured else "nvcc not found"
    return f"{what} (looked in {describe_search()})"


def describe_search() -> str:
    return ", ".join(where for where, _ in _candidates())


def toolkit_roots() -> list[Path]:
    """Directories a CUDA toolkit may be installed in, most specific first: $CUDA_HOME, $CUDA_PATH, the
    one holding the nvcc found above, /usr/local/cuda."""
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = find_nvcc()
    roots.append(str(Path(nvcc).resolve().parents[1]) if nvcc else None)
    roots.append("/usr/local/cuda")
    return [Path(r) for r in roots if r]
