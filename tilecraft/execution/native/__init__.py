"""The compiled launcher: `launcher.c`, one CPython extension built once per interpreter and platform.

`launcher_module()` builds it with the system C compiler the CPU target uses (found as
tilecraft/execution/system_cc.py says) on first use, keeps it in the kernel cache (an atomic, checked entry, like every build;
an unwritable or disabled cache gets a private scratch copy) and loads it; a warm process only loads
it. Nothing is built at install time. Where no compiler exists (or the build fails) calls take the
Python path, after one warning; `TILECRAFT_LAUNCHER=compiled` makes that an error instead, `python`
never builds it.

`program(expr, slots)` turns a grid expression into the bytecode the extension evaluates (grid.py's
semantics: `//` and `%` floor, `Div` and `TruncMod` truncate, as in C); plan.py writes a kernel's
`LaunchPlan` and an execution backend's `NativeLaunch` as the extension's Plan (`compiled_launcher`).
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import sys
import sysconfig
import threading
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

from tilecraft import settings
from tilecraft.errors import ToolchainError
from tilecraft.execution.grid import preserves_value
from tilecraft.ir import expr as E

SOURCE = Path(__file__).with_name("launcher.c")
MODULE_NAME = "_tclaunch"
FILE_NAME = MODULE_NAME + (importlib.machinery.EXTENSION_SUFFIXES[0] if importlib.machinery.EXTENSION_SUFFIXES
                           else ".so")  # fmt: skip
FLAGS = ("-O2", "-shared", "-fPIC", "-std=gnu11", "-fvisibility=hidden")

_lock = threading.Lock()
_state: dict[str, Any] = {}


class LauncherUnavailable(ToolchainError):
    """The compiled launcher cannot be built or loaded here; the message says why and what to do."""


def launcher_module() -> ModuleType | None:
    """The loaded extension, or None when calls take the Python path (TILECRAFT_LAUNCHER=python, or no
    compiler under 'auto', said once); LauncherUnavailable under TILECRAFT_LAUNCHER=compiled."""
    mode = settings.get("TILECRAFT_LAUNCHER")
    if mode == "python":
        return None
    with _lock:
        if "module" not in _state and "error" not in _state:
            try:
                _state["module"] = _build_and_load()
            except LauncherUnavailable as err:
                _state["error"] = err
        error = _state.get("error")
    if error is None:
        return _state["module"]
    if mode == "compiled":
        raise error
    if not _state.get("warned"):
        _state["warned"] = True
        warnings.warn(f"tilecraft: {error}; kernel calls take the Python launch path, which is slower",
                      RuntimeWarning, stacklevel=3)  # fmt: skip
    return None


def compiled_launcher(launch: Any, plan: Any, miss: Any) -> Any:
    """The compiled launcher's Plan of a kernel's `LaunchPlan` over an execution backend's `NativeLaunch`
    (None where the backend has none for this kernel, or the plan cannot be written as its tables): the
    body of `ExecutionBackend.compiled_launcher` for a backend with a `native_launch`."""
    from tilecraft.execution.native.plan import build_plan

    return None if launch is None else build_plan(plan, launch, miss)


def reset() -> None:
    """Forget the loaded module or the reason it is missing (tests)."""
    with _lock:
        _state.clear()


def _build_and_load() -> ModuleType:
    from tilecraft.execution import system_cc
    from tilecraft.execution.cache import KernelCache, cache_key

    source = SOURCE.read_bytes()
    include = sysconfig.get_paths()["include"]
    # The extension depends on the interpreter's ABI and the source, not on which compiler built it: a
    # warm process loads it without looking for (or running) a compiler.
    key = cache_key(
        "native-launcher", hashlib.sha256(source).hexdigest(), sys.version, sys.platform, FILE_NAME,
        sysconfig.get_platform(), FLAGS, include,
    )  # fmt: skip
    cache = KernelCache()
    entry = cache.get(key)
    if entry is not None:
        try:
            return _load(entry.path(FILE_NAME))
        except LauncherUnavailable:
            cache.evict(key)  # a cached file that does not load (an older version cached it): build anew
    try:
        cc = system_cc.locate()
    except system_cc.CompilerNotFound as err:
        raise LauncherUnavailable(f"no C compiler for the compiled launcher ({err})") from None
    library = _compile(cc, source.decode(), include)
    entry = cache.put(key, {FILE_NAME: library}, {"what": "tilecraft's compiled launcher"})
    return _load(entry.path(FILE_NAME))


def _compile(cc: Any, source: str, include: str) -> bytes:
    import subprocess

    from tilecraft.execution.system_cc import build_dir
    from tilecraft.execution.system_cc.library import not_a_library_message, shared_library_problem

    if not Path(include, "Python.h").is_file():
        raise LauncherUnavailable(
            f"the Python headers are missing ({include}/Python.h), so the compiled launcher cannot be built; "
            "install them (Debian/Ubuntu: apt install python3-dev)"
        )
    with build_dir("tilecraft-cc-") as tmp:
        src, out = tmp / "launcher.c", tmp / FILE_NAME
        src.write_text(source)
        cmd = [*cc.program, *FLAGS, *cc.options, f"-I{include}", str(src), "-o", str(out)]
        try:
            result = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise LauncherUnavailable(
                f"the C compiler does not run for the compiled launcher: {err}"
            ) from None
        if result.returncode != 0 or not out.is_file():
            raise LauncherUnavailable(
                f"building the compiled launcher failed (exit {result.returncode}): {' '.join(cmd)}\n"
                f"{(result.stderr or result.stdout).strip()[-2000:]}"
            )
        library = out.read_bytes()
    problem = shared_library_problem(library)
    if problem is not None:
        raise LauncherUnavailable(
            "the compiled launcher cannot be built: "
            + not_a_library_message(problem, cc.origin, cc.program + cc.options, cmd)
        )
    return library


def _load(path: Path) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(MODULE_NAME, str(path))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, str(path), loader=loader)
    if spec is None:
        raise LauncherUnavailable(f"cannot load the compiled launcher from {path}")
    try:
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    except (ImportError, OSError) as err:
        raise LauncherUnavailable(f"the compiled launcher at {path} does not load: {err}") from None
    return module


# ---------------------------------------------------------------------- grid programs

OPS = {name: code for code, name in enumerate((
    "const", "load", "add", "sub", "mul", "floordiv", "floormod", "tdiv", "tmod", "min", "max",
    "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "select", "inrange",
))}  # fmt: skip
_BINARY = {
    E.Add: "add", E.Sub: "sub", E.Mul: "mul", E.FloorDiv: "floordiv", E.FloorMod: "floormod", E.Div: "tdiv",
    E.TruncMod: "tmod", E.Min: "min", E.Max: "max", E.EQ: "eq", E.NE: "ne", E.LT: "lt", E.LE: "le",
    E.GT: "gt", E.GE: "ge", E.And: "and", E.Or: "or",
}  # fmt: skip
_INT64 = (-(2**63), 2**63 - 1)


class NotCompilable(Exception):
    """A grid expression the bytecode cannot express (the Python path launches that kernel)."""


def program(e: E.Expr | int, slots: dict[str, int]) -> tuple[int, ...]:
    """Bytecode computing integer `e`; `slots` maps a variable's name to the index of its value.
    NotCompilable for what only the interpreter evaluates (floats, casts that change values)."""
    code: list[int] = []
    _emit(e, slots, code)
    return tuple(code)


def _emit(e: Any, slots: dict[str, int], code: list[int]) -> None:
    if isinstance(e, int):
        return _const(int(e), code)
    kind = type(e)
    if kind is E.IntImm:
        return _const(int(e.value), code)
    if kind is E.Var:
        if not (e.dtype.is_integer or e.dtype.is_bool) or e.name not in slots:
            raise NotCompilable(e.name)
        code += [OPS["load"], slots[e.name]]
        return None
    if kind is E.Not:
        _emit(e.a, slots, code)
        code.append(OPS["not"])
        return None
    if kind is E.Select:
        for part in (e.condition, e.true_value, e.false_value):
            _emit(part, slots, code)
        code.append(OPS["select"])
        return None
    if kind is E.Cast and preserves_value(e.value.dtype, e.dtype):
        return _emit(e.value, slots, code)
    if kind is E.Cast and e.dtype.is_integer and e.value.dtype.is_integer and e.dtype.bits <= 64:
        # Narrowing (widen-index-arithmetic's int64 grid cast back to int32): exact where the value fits;
        # a value that does not fit takes the Python path, which reports it.
        _emit(e.value, slots, code)
        lo, hi = _integer_range(e.dtype)
        code += [OPS["const"], max(lo, _INT64[0]), OPS["const"], min(hi, _INT64[1]), OPS["inrange"]]
        return None
    if kind in _BINARY and all(x.dtype.is_integer or x.dtype.is_bool for x in (e.a, e.b)):
        _emit(e.a, slots, code)
        _emit(e.b, slots, code)
        code.append(OPS[_BINARY[kind]])
        return None
    raise NotCompilable(type(e).__name__)


def _integer_range(dtype: Any) -> tuple[int, int]:
    bits = dtype.bits
    return (0, 2**bits - 1) if dtype.kind == "uint" else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


def _const(value: int, code: list[int]) -> None:
    if not _INT64[0] <= value <= _INT64[1]:
        raise NotCompilable(str(value))
    code += [OPS["const"], value]
