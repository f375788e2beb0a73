"""The one typed registry of every `TILECRAFT_*` environment variable.

Each variable is declared once, here, as a `Setting` with its type, default and doc, and read only
through this module, either by name or in attribute style::

    from tilecraft import settings

    settings.get("TILECRAFT_CACHE_DIR")    # a Path
    settings.cache_dir                     # the same value
    with settings.override(TILECRAFT_DUMP_IR=tmp_path):
        ...                                # scoped; restored on exit, also on error

Values are read from the environment on every access (so `monkeypatch.setenv` works) and parsed by
type: bools accept 1/0/true/false/yes/no/on/off (any case), ints are decimal, paths expand `~`. An
empty variable counts as unset. A bad value raises `SettingError` naming the variable and what is valid;
a setting may also declare a `check` of the parsed value, run at each read (TILECRAFT_DUMP_IR must name
a directory that exists or can be created, TILECRAFT_CC a command line whose program exists). Overrides
are process-wide (threads started inside the block see them) and never touch `os.environ`.

`problems()` lists every invalid value and every `TILECRAFT_*` variable that is set but declared nowhere
(with the closest declared name), without raising: `tilecraft doctor` prints it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilecraft.errors import TilecraftError

PREFIX = "TILECRAFT_"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


class SettingError(TilecraftError, ValueError):
    """A `TILECRAFT_*` variable has a value of the wrong type, or an unknown setting was named."""


def _default_cache_dir() -> Path:
    # XDG_CACHE_HOME is the freedesktop convention; honouring it keeps CI caches where CI expects them.
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache")
    return Path(base).expanduser() / "tilecraft"


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"use one of {', '.join(_TRUE + _FALSE)} (any case)")


def _parse_int(text: str) -> int:
    try:
        return int(text.strip(), 10)
    except ValueError:
        raise ValueError("use a decimal integer such as 0 or 4") from None


def _parse_path(text: str) -> Path:
    try:
        return Path(text).expanduser()
    except RuntimeError:  # `~user` for a user that does not exist, or no home directory
        raise ValueError(f"{text.split('/')[0]} names no home directory here; write the full path") from None


def split_command(text: str) -> list[str]:
    """A command-line setting's words, split as a shell splits them; ValueError saying what is wrong."""
    import shlex  # here and below: importing the settings stays light

    try:
        words = shlex.split(text)
    except ValueError as err:
        raise ValueError(
            f"it cannot be read as a command line ({err}); write it as in a shell, e.g. 'ccache gcc' or "
            "'gcc -O0'"
        ) from None
    if not words or words[0].startswith("-"):
        raise ValueError("it names no program before its options; write the program first, e.g. 'gcc -O0'")
    return words


def find_program(word: str) -> str:
    """The executable that `word` names: a path, or a name looked up on PATH; ValueError naming both."""
    import shutil

    if os.sep in word or (os.altsep and os.altsep in word):
        path = Path(os.path.expanduser(word))  # unlike Path.expanduser, never raises for `~nouser`
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
        what = (
            "is not executable" if path.is_file() else "is a directory" if path.is_dir() else "does not exist"
        )
        raise ValueError(f"program {word!r} {what}")
    found = shutil.which(word)
    if found is None:
        raise ValueError(f"program {word!r} was not found on PATH ({os.environ.get('PATH', '')})")
    return found


def _check_command(text: str) -> None:
    find_program(split_command(text)[0])


def _check_program_or_directory(path: Path) -> None:
    """An executable file, or a directory (where the setting's owner looks for its program)."""
    if path.is_dir() or (path.is_file() and os.access(path, os.X_OK)):
        return
    raise ValueError(f"{path} {'is not executable' if path.is_file() else 'does not exist'}")


def _check_launcher(text: str) -> None:
    if text not in ("auto", "compiled", "python"):
        raise ValueError(f"must be 'auto', 'compiled' or 'python', got {text!r}")


def _check_directory(path: Path) -> None:
    """A directory that exists, or can be created: nothing on the way to it is a file."""
    for candidate in (path, *path.parents):
        if candidate.is_dir():
            return
        if candidate.exists():
            what = "it" if candidate == path else str(candidate)
            raise ValueError(
                f"{what} is an existing file, not a directory; name a directory (it is created when missing)"
            )


_PARSERS: dict[type, Callable[[str], Any]] = {bool: _parse_bool, int: _parse_int, Path: _parse_path, str: str}


@dataclass(frozen=True)
class Setting:
    """One environment variable: its name, value type (bool, int, Path or str), default and doc.

    `default` may be a zero-argument callable, evaluated on each read (the cache directory depends on
    `XDG_CACHE_HOME`), or None for "unset". `check`, when given, receives each value that is set (not
    the default) when it is read and raises ValueError saying what is wrong and what to do (an OSError
    from looking at a path counts the same).
    """

    name: str
    type: type
    default: Any
    doc: str
    check: Callable[[Any], None] | None = None

    def __post_init__(self) -> None:
        if not self.name.startswith(PREFIX) or not self.name.replace("_", "").isalnum():
            raise SettingError(f"setting name {self.name!r} must look like {PREFIX}SOMETHING")
        if self.type not in _PARSERS:
            allowed = ", ".join(t.__name__ for t in _PARSERS)
            raise SettingError(f"setting {self.name} has type {self.type!r}; allowed types: {allowed}")

    @property
    def attribute(self) -> str:
        """The attribute-style name: TILECRAFT_CACHE_DIR -> cache_dir."""
        return self.name[len(PREFIX) :].lower()

    def default_value(self) -> Any:
        return self.default() if callable(self.default) else self.default

    def parse(self, text: str) -> Any:
        """Parse an environment string; the error names the variable and the accepted values."""
        try:
            return _PARSERS[self.type](text)
        except ValueError as err:
            raise SettingError(f"{self.name}={text!r} is not a valid {self.type.__name__}: {err}") from None

    def checked(self, value: Any, shown: Any) -> Any:
        """`value` once the setting's `check` accepts it; SettingError naming the variable otherwise."""
        if self.check is not None:
            try:
                self.check(value)
            except (ValueError, OSError) as err:  # OSError: a path that cannot even be looked at
                raise SettingError(f"{self.name}={shown!r} cannot be used: {err}") from None
        return value

    def coerce(self, value: Any) -> Any:
        """Accept an override given as a string (parsed) or as a value of the declared type."""
        if value is None:
            return None
        if isinstance(value, str):
            return self.parse(value)
        if self.type is Path and isinstance(value, os.PathLike):
            return Path(value)
        if isinstance(value, self.type) and not (self.type is int and isinstance(value, bool)):
            return value
        raise SettingError(
            f"override {self.name}={value!r} has type {type(value).__name__}; "
            f"give a {self.type.__name__} or a string to parse"
        )


_UNSET = object()


class SettingsRegistry:
    """Declared settings, plus the stack of scoped overrides that tests install."""

    def __init__(self) -> None:
        self._settings: dict[str, Setting] = {}
        self._overrides: dict[str, Any] = {}
        self._lock = threading.Lock()

    def declare(self, setting: Setting) -> Setting:
        """Add a setting; declaring the same one twice is harmless, a different one is an error."""
        existing = self._settings.get(setting.name)
        if existing is not None and existing != setting:
            raise SettingError(f"setting {setting.name} is already declared differently: {existing}")
        self._settings[setting.name] = setting
        return setting

    def setting(self, name: str) -> Setting:
        """The declaration of `name` (the full `TILECRAFT_*` name or the attribute-style name)."""
        found = self._settings.get(name) or self._settings.get(PREFIX + name.upper())
        if found is None:
            raise SettingError(f"unknown setting {name!r}; declared: {', '.join(self._settings)}")
        return found

    def all(self) -> tuple[Setting, ...]:
        return tuple(self._settings.values())

    def get(self, name: str, check: bool = True) -> Any:
        """The current value: a scoped override, else the environment (parsed), else the default.

        `check=False` skips the setting's `check`, for an owner that diagnoses the value itself.
        """
        setting = self.setting(name)
        value = self._overrides.get(setting.name, _UNSET)
        if value is None or (value is _UNSET and not os.environ.get(setting.name)):
            return setting.default_value()
        text = str(value) if value is not _UNSET else os.environ[setting.name]
        value = setting.parse(text) if value is _UNSET else value
        return setting.checked(value, text) if check else value

    def source(self, name: str) -> str:
        """Where the current value comes from: 'override', 'environment' or 'default'."""
        setting = self.setting(name)
        if setting.name in self._overrides:
            return "override"
        return "environment" if os.environ.get(setting.name) else "default"

    def override(self, **values: Any) -> AbstractContextManager[None]:
        """Set settings for the extent of a `with` block; None means "as if unset".

        Names and values are checked here, when the override is made, not when the block is entered.
        """
        return self._applied({self.setting(k).name: self.setting(k).coerce(v) for k, v in values.items()})

    @contextmanager
    def _applied(self, parsed: dict[str, Any]) -> Iterator[None]:
        with self._lock:
            saved = {name: self._overrides.get(name, _UNSET) for name in parsed}
            self._overrides.update(parsed)
        try:
            yield
        finally:
            with self._lock:
                for name, old in saved.items():
                    if old is _UNSET:
                        self._overrides.pop(name, None)
                    else:
                        self._overrides[name] = old

    def problems(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """Variable name -> what is wrong, for every invalid value and every `TILECRAFT_*` variable that is
        set but not declared (with the closest declared name); never raises."""
        import difflib

        found: dict[str, str] = {}
        for setting in self._settings.values():
            try:
                self.get(setting.name)
            except SettingError as err:
                found[setting.name] = str(err)
        environ = os.environ if environ is None else environ
        # Names are compared without the common prefix, which would make every name look close.
        suffixes = {n[len(PREFIX) :]: n for n in self._settings}
        for name in sorted(n for n in environ if n.startswith(PREFIX) and n not in self._settings):
            close = difflib.get_close_matches(name[len(PREFIX) :], suffixes, n=1)
            hint = (
                f"; did you mean {suffixes[close[0]]}?"
                if close
                else f"; declared: {', '.join(self._settings)}"
            )
            found[name] = f"{name} is set but is not a tilecraft setting, so it does nothing{hint}"
        return found

    def describe(self, invalid: Mapping[str, str] | None = None) -> str:
        """A plain-text table of every setting: name, type, current value, where it comes from, doc.

        A value that does not parse or check is shown as invalid, as is one that `invalid` names (a caller
        that knows more, such as `tilecraft doctor` parsing TILECRAFT_TARGET, passes those).
        """
        rows = [("name", "type", "value", "from", "doc")]
        for s in self._settings.values():
            shown = self._shown_value(s, bool(invalid and s.name in invalid))
            rows.append((s.name, s.type.__name__, shown, self.source(s.name), s.doc))
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        return "\n".join(
            "  ".join(cell.ljust(w) for cell, w in zip(r[:4], widths)) + "  " + r[4] for r in rows
        )

    def _shown_value(self, setting: Setting, invalid: bool) -> str:
        # The table is for diagnosing settings, so a bad value is shown, not raised.
        try:
            value = self.get(setting.name)
        except SettingError:
            invalid = True
        if invalid:
            raw = self._overrides.get(setting.name, os.environ.get(setting.name))
            return f"invalid: {str(raw)!r}"
        return "(unset)" if value is None else str(value)


REGISTRY = SettingsRegistry()

for _setting in (
    Setting("TILECRAFT_CACHE_DIR", Path, _default_cache_dir,
            "kernel cache directory; default $XDG_CACHE_HOME/tilecraft, else ~/.cache/tilecraft"),
    Setting("TILECRAFT_DISABLE_CACHE", bool, False,
            "compile every kernel afresh; nothing is read from or written to the cache"),
    Setting("TILECRAFT_DUMP_IR", Path, None,
            "directory; each pipeline writes NN-<pass-name>.py there with the IR after every pass",
            check=_check_directory),
    Setting("TILECRAFT_PASS_TIMING", bool, False, "print a per-pass timing table after each pipeline run"),
    Setting("TILECRAFT_VERBOSE", bool, False, "print progress on long work (compiling, autotuning)"),
    Setting("TILECRAFT_TUNE_WORKERS", int, None,
            "processes that compile autotuning candidates; 0: compile in the tuning process; default: one per core"),
    Setting("TILECRAFT_RETUNE", bool, False, "autotune again instead of reusing a tuning kept in the cache"),
    Setting("TILECRAFT_AUTOTUNE_EXECUTOR", str, None,
            "where autotuning compiles and measures: local (processes on this machine, the default) or ray"),
    Setting("TILECRAFT_TUNING_DB", Path, None,
            "SQLite tuning database: tunings read from it (a deployment never tunes) and written to it"),
    Setting("TILECRAFT_CC", str, None,
            "C compiler command line for generated C sources (e.g. 'ccache gcc', 'gcc -O0'); takes precedence "
            "over $CC, which is honoured too", check=_check_command),
    Setting("TILECRAFT_OPENMP", bool, None,
            "run blocks of host-compiled kernels on OpenMP threads; unset: whenever the compiler supports it"),
    Setting("TILECRAFT_NVCC", Path, None,
            "path of the NVIDIA GPU compiler driver (or its directory) for ahead-of-time device builds; "
            "default: found on PATH", check=_check_program_or_directory),
    Setting("TILECRAFT_TARGET", str, None,
            "target used when a kernel asks for 'auto' or gives none; default: detect the hardware"),
    Setting("TILECRAFT_LAUNCHER", str, "auto",
            "how kernel calls are checked and launched: 'compiled' (the C extension built once into the cache; "
            "an error where it cannot be built), 'python' (the generated Python path), 'auto' (compiled "
            "where a C compiler exists, else python with a one-time warning)", check=_check_launcher),
    Setting("TILECRAFT_BOUNDS_CHECK", bool, False,
            "check every buffer access of every kernel compiled, on the targets that can (an out-of-bounds "
            "access raises naming the kernel line; docs/reliability.md lists the targets); the same as the "
            "pass config tilecraft.bounds_check where a kernel does not set it"),
):  # fmt: skip
    REGISTRY.declare(_setting)


def declare(setting: Setting) -> Setting:
    """Declare one more setting in the registry (for settings owned by a pluggable backend)."""
    return REGISTRY.declare(setting)


def get(name: str, check: bool = True) -> Any:
    """The current value of a setting, by full or attribute-style name (`check=False`: without its check)."""
    return REGISTRY.get(name, check)


def override(**values: Any) -> AbstractContextManager[None]:
    """Scoped override: `with settings.override(TILECRAFT_DUMP_IR=path): ...`; restored on exit."""
    return REGISTRY.override(**values)


def all_settings() -> tuple[Setting, ...]:
    """Every declared setting, in declaration order."""
    return REGISTRY.all()


def verbose_note(span, message: str) -> None:
    """`tilecraft: <file>:<line>: <message>` on stderr under TILECRAFT_VERBOSE: a choice lowering made for
    the kernel at `span` (a Span or None) that its author may want to know of."""
    if get("TILECRAFT_VERBOSE"):
        import sys

        where = f"{span.file}:{span.line}: " if span is not None else ""
        print(f"tilecraft: {where}{message}", file=sys.stderr)


def describe(invalid: Mapping[str, str] | None = None) -> str:
    """A plain-text table of every setting with its current value, for docs and the CLI."""
    return REGISTRY.describe(invalid)


def problems() -> dict[str, str]:
    """Variable name -> what is wrong: invalid values and unknown `TILECRAFT_*` variables; never raises."""
    return REGISTRY.problems()


def __getattr__(name: str) -> Any:
    # Attribute style (`settings.cache_dir`) reads through the registry like `get`.
    if name.startswith("_"):
        raise AttributeError(name)
    try:
        REGISTRY.setting(name)
    except SettingError as err:
        raise AttributeError(str(err)) from None
    return REGISTRY.get(name)  # a bad value stays a SettingError naming the variable
