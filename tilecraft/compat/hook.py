"""The import hook that lets `import tilelang...` load tilecraft, in one process, on request.

`install()` puts a `TileLangFinder` first on `sys.meta_path`. It answers for the name `tilelang` and its
submodules: `tilelang.X.Y` loads `tilecraft.X.Y` and binds that very module under the TileLang name, so
`tilelang.language is tilecraft.language` and a kernel module sees one set of types. A submodule without
a tilecraft counterpart raises ImportError naming it and pointing at docs/compat.md, instead of Python's
bare "No module named ...". `tvm`, `tilelang.tvm` and their submodules (TileLang's bundled TVM, which
tilecraft does not have) load `tilecraft.compat.tvm`, the part of TVM that TileLang's examples use mapped
onto tilecraft's IR; a TVM module it does not map raises `UnmappedTvmError` saying so in one line.

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
    "tilelang.rocm": "tilecraft.compat.rocm",
    # TileLang's warp-level MMA macro emitters (tilecraft.cuda.intrinsics is tilecraft's own, another API);
    # `tilelang.intrinsics` is their path in TileLang releases before the CUDA package.
    "tilelang.cuda.intrinsics": "tilecraft.compat.intrinsics",
    "tilelang.intrinsics": "tilecraft.compat.intrinsics",
}
INTRINSICS_PACKAGE = "tilecraft.compat.intrinsics"


# TileLang's execution backends that are its ways of passing arguments to a compiled kernel from Python
# (Cython, TVM-FFI, ctypes, DLPack wrappers): tilecraft's execution backend passes them itself, so a
# TileLang program that names one gets `auto`.
TILELANG_ADAPTERS = {"cython": "auto", "tvm_ffi": "auto", "ctypes": "auto", "dlpack": "auto"}

TVM = "tvm"
TVM_PACKAGE = "tilecraft.compat.tvm"
# TVM modules under their other spelling: TileLang's bundled TVM renamed `tir` to `tirx`.
TVM_RENAMED: dict[str, str] = {"tvm.tir": "tvm.tirx"}


class UnmappedModuleError(ImportError):
    """A `tilelang` module that has no tilecraft counterpart was imported through the hook."""


class UnmappedTvmError(UnmappedModuleError, ModuleNotFoundError):
    """A TileLang program used a part of TVM (a module or a name in one) that tilecraft's `tvm` namespace
    does not map. A ModuleNotFoundError too, so code probing for an optional TVM module still sees it
    absent."""


def unmapped_tvm_message(name: str, reason: str | None = None) -> str:
    """The one line that says `name` (a TVM module or attribute, TVM's spelling) is not provided, why,
    and where the mapped part is listed."""
    why = reason or "tilecraft maps only the names TileLang's examples use"
    return (
        f"`{name}` is not provided: tilecraft has no TVM, and its `tvm` namespace maps the part of TVM that "
        f"TileLang's examples use onto tilecraft's IR; {why} ({COMPAT_DOC}, section \"TVM\", lists what is "
        "mapped and what to use instead)"
    )


def tvm_hint(err: BaseException) -> str | None:
    """The one-line explanation of a failed import of a TVM module, or None for any other error."""
    name = getattr(err, "name", None) or ""
    if (
        isinstance(err, ModuleNotFoundError)
        and _is_under(name, TVM)
        and not isinstance(err, UnmappedTvmError)
    ):
        return unmapped_tvm_message(name)
    return None


def tvm_counterpart(name: str) -> str:
    """The tilecraft module that stands for the TVM module `name` (`tvm.tir.op` and `tilelang.tvm.tirx.op`
    -> `tilecraft.compat.tvm.tirx.op`)."""
    if _is_under(name, f"{TILELANG}.{TVM}"):
        name = name[len(TILELANG) + 1 :]
    for old, new in TVM_RENAMED.items():
        if _is_under(name, old):
            name = new + name[len(old) :]
    return TVM_PACKAGE + name[len(TVM) :]


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
        _alias_shadowed_submodules()


def _alias_shadowed_submodules() -> None:
    """Register under its TileLang name every loaded tilecraft submodule whose parent package binds
    another object under the same name (`tilecraft.jit` the function, `tilecraft.language.macro`...).

    Python binds a freshly imported submodule as an attribute of its parent, so `import tilelang.jit` (or
    a failed `from tilelang.jit.adapter import ...`) loading `tilelang.jit` for the first time would make
    `tilelang.jit` the module for the rest of the process, and `@tilelang.jit` fail with "'module' object
    is not callable". TileLang's own packages import those submodules before binding the functions, so
    there the function stays; a name already in sys.modules is not bound again, here as there."""
    for name, module in list(sys.modules.items()):
        parent, _, child = name.rpartition(".")
        owner = sys.modules.get(parent) if _is_under(name, TILECRAFT) else None
        if owner is None or getattr(owner, child, module) is module:
            continue
        alias = TILELANG + name[len(TILECRAFT) :]
        if counterpart(alias) == name:
            sys.modules.setdefault(alias, module)


class TileLangFinder(importlib.abc.MetaPathFinder):
    """Finds `tilelang` and `tilelang.*` by mapping them onto tilecraft; ignores every other name."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if _is_under(fullname, TVM) or _is_under(fullname, f"{TILELANG}.{TVM}"):
            return _tvm_spec(fullname)
        if not _is_under(fullname, TILELANG):
            return None
        real = counterpart(fullname)
        if not _exists(real) and real.startswith(INTRINSICS_PACKAGE + "."):
            from tilecraft.compat.intrinsics._refusing import unprovided

            raise unprovided(fullname)
        if not _exists(real):
            raise UnmappedModuleError(
                f"TileLang module {fullname!r} has no tilecraft counterpart (looked for {real!r}); "
                f"{COMPAT_DOC} lists which parts of TileLang's API tilecraft supports and what to use instead",
                name=fullname,
            )
        is_package = importlib.util.find_spec(real).submodule_search_locations is not None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(real), is_package=is_package)


def _tvm_spec(fullname: str) -> importlib.machinery.ModuleSpec:
    """`tvm...` loads tilecraft's `tvm` namespace; a module it lacks is refused in one line (torch's dynamo
    probes `find_spec("tvm")` at import and takes the namespace for an installed TVM, which is harmless:
    it only skips tracing into its files)."""
    real = tvm_counterpart(fullname)
    if not _exists(real):
        from tilecraft.compat.tvm.refused import refusal_reason

        public = real.replace(TVM_PACKAGE, TVM, 1)
        raise UnmappedTvmError(unmapped_tvm_message(public, refusal_reason(public)), name=fullname)
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
    from tilecraft.backend.context import alias_execution_backends
    from tilecraft.backend.execution import OUTPUTS_WITHOUT_ARRAYS
    from tilecraft.language.tileops import NAN_PROPAGATE_DEFAULT

    OUTPUTS_WITHOUT_ARRAYS[0] = "torch"  # TileLang's kernels return torch tensors
    NAN_PROPAGATE_DEFAULT[0] = False  # TileLang's T.reduce_max / min / absmax ignore NaN unless asked
    alias_execution_backends(TILELANG_ADAPTERS)


def uninstall() -> None:
    """Remove the hook and forget every module imported under a TileLang name, and the `tvm` namespace
    bound under TVM's names."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, TileLangFinder)]
    from tilecraft.backend.context import alias_execution_backends
    from tilecraft.backend.execution import OUTPUTS_WITHOUT_ARRAYS
    from tilecraft.language.tileops import NAN_PROPAGATE_DEFAULT

    OUTPUTS_WITHOUT_ARRAYS[0] = "numpy"
    NAN_PROPAGATE_DEFAULT[0] = True
    alias_execution_backends(None)
    for name in [n for n in sys.modules if _is_under(n, TILELANG)]:
        del sys.modules[name]
    for name in [n for n in sys.modules if _is_under(n, TVM)]:
        if getattr(sys.modules[name], "__name__", "").startswith(TVM_PACKAGE):
            del sys.modules[name]
    sys.modules[TILECRAFT].__dict__.pop(TVM, None)  # bound by `import tilelang.tvm`
    # `import tilelang.cuda.intrinsics` bound the compat package as the attribute `intrinsics` of
    # tilecraft.cuda; give tilecraft its own module back
    for old in RENAMED:
        own = TILECRAFT + old[len(TILELANG) :]
        parent, _, child = own.rpartition(".")
        if own in sys.modules and parent in sys.modules:
            setattr(sys.modules[parent], child, sys.modules[own])
