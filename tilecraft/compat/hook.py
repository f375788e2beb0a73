"""The import hook that lets `import tilelang...` load tilecraft, in one process, on request.

`install()` puts a `TileLangFinder` first on `sys.meta_path`. It answers for the name `tilelang` and its
submodules: `tilelang.X.Y` loads `tilecraft.X.Y` and binds that very module under the TileLang name, so
`tilelang.language is tilecraft.language` and a kernel module sees one set of types. A submodule without
a tilecraft counterpart raises ImportError naming it and pointing at docs/compat.md, instead of Python's
bare "No module named ...". It also refuses `tvm` and `tilelang.tvm` (TileLang's bundled TVM, which
tilecraft does not have) with one line saying what to use instead.

Nothing installs the hook as a side effect: `import tilecraft` never does, and the command line installs
it only in the process it starts to run a TileLang script (`tilecraft run-tilelang`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from types import ModuleType

TILELANG = "tilelang"
TILECRAFT = "tilecraft"
COMPAT_DOC = "docs/compat.md"

# TileLang modules whose tilecraft counterpart lives under another path. Every other `tilelang.X`
# maps to `tilecraft.X` when that module exists.
RENAMED: dict[str, str] = {
    "tilelang.engine.callback": "tilecraft.cuda.callback",
    "tilelang.contrib": "tilecraft.compat.contrib",
}


TVM = "tvm"
NO_TVM = (
    "tilecraft has no TVM, so `{name}` cannot be supported: use `tilecraft.DataType` for "
    "`tvm.DataType` and tilecraft.language (T.*) for TVM's TIR ({doc})"
)


class UnmappedModuleError(ImportError):
    """A `tilelang` module that has no tilecraft counterpart was imported through the hook."""


class NoTvmError(UnmappedModuleError):
    """A TileLang program imported TVM (`import tvm`, `from tilelang import tvm`), which tilecraft lacks."""


def tvm_hint(err: BaseException) -> str | None:
    """The one-line explanation of a failed `import tvm`, or None for any other error."""
    name = getattr(err, "name", None) or ""
    if isinstance(err, ModuleNotFoundError) and _is_under(name, TVM):
        return NO_TVM.format(name=f"import {name}", doc=COMPAT_DOC)
    return None


def _is_under(fullname: str, package: str) -> bool:
    return fullname == package or fullname.startswith(package + ".")


def counterpart(name: str) -> str:
    """The tilecraft module that stands for the TileLang module `name` (`tilelang.language` ->
    `tilecraft.language`); ValueError for a name outside the `tilelang` package."""
    if name != TILELANG and not name.startswith(TILELANG + "."):
        raise ValueError(f"{name!r} is not a module of the {TILELANG} package")
    for old, new in RENAMED.items():
        if name == old or name.startswith(old + "."):
            return new + name[len(old) :]
    return TILECRAFT + name[len(TILELANG) :]


class _AliasLoader(importlib.abc.Loader):
    """Loads the tilecraft counterpart and puts it in `sys.modules` under the TileLang name."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # a placeholder; exec_module swaps the real module in

    def exec_module(self, module: ModuleType) -> None:
        # The import system returns whatever sys.modules holds once exec_module is done, so the
        # tilecraft module itself (with its own __spec__ and __name__ untouched) becomes `tilelang.X`.
        sys.modules[module.__name__] = importlib.import_module(self.target)


class TileLangFinder(importlib.abc.MetaPathFinder):
    """Finds `tilelang` and `tilelang.*` by mapping them onto tilecraft; ignores every other name."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if _is_under(fullname, f"{TILELANG}.{TVM}"):
            raise NoTvmError(NO_TVM.format(name=f"import {fullname}", doc=COMPAT_DOC), name=fullname)
        # A missing `tvm` stays a plain "not found" (None): libraries probe for it with find_spec (torch's
        # dynamo does, at import). The runner explains the ModuleNotFoundError (`tvm_hint`).
        if not _is_under(fullname, TILELANG):
            return None
        real = counterpart(fullname)
        if not _exists(real):
            raise UnmappedModuleError(
                f"TileLang module {fullname!r} has no tilecraft counterpart (looked for {real!r}); "
                f"{COMPAT_DOC} lists which parts of TileLang's API tilecraft supports and what to use instead",
                name=fullname,
            )
        is_package = importlib.util.find_spec(real).submodule_search_locations is not None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real), is_package=is_package)


def _exists(name: str) -> bool:
    """Whether the tilecraft module `name` can be imported (its parent packages are imported to tell)."""
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a missing parent package
        return False


def installed() -> bool:
    """Whether the hook is on `sys.meta_path` in this process."""
    return any(isinstance(finder, TileLangFinder) for finder in sys.meta_path)


def install() -> None:
    """Map `tilelang` onto tilecraft for the rest of this process (idempotent).

    Refuses when a real TileLang is already imported here: the two would be mixed in one program.
    """
    if installed():
        return
    loaded = sys.modules.get(TILELANG)
    if loaded is not None and loaded is not sys.modules.get(TILECRAFT):
        where = getattr(loaded, "__file__", None) or "an unknown location"
        raise ImportError(
            f"a real TileLang is already imported in this process (from {where}); run the script in a "
            f"fresh process (tilecraft run-tilelang SCRIPT) so that `import {TILELANG}` means tilecraft"
        )
    sys.meta_path.insert(0, TileLangFinder())


def uninstall() -> None:
    """Remove the hook and forget every module imported under a TileLang name."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, TileLangFinder)]
    for name in [n for n in sys.modules if n == TILELANG or n.startswith(TILELANG + ".")]:
        del sys.modules[name]
