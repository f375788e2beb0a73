"""The system C compiler as tilecraft finds it, and private build directories, shared by the `cc`
execution backend (tilecraft/execution/cc/toolchain.py describes and runs the compiler for kernels) and
the compiled launcher (tilecraft/execution/native).

The compiler is a command line: TILECRAFT_CC, else CC, else the first of gcc, clang, cc on PATH. A
setting is split as a shell would split it, so `ccache gcc` and `gcc -O0` work. The words before the
first option are the program (a launcher such as ccache, then the compiler); the options after them
are passed after tilecraft's own flags, so they win (`gcc -O0` really builds with -O0).

Each compile works in a private directory `<tmp>/tilecraft-cc-<pid>-*` that holds a lock while it is in
use; a directory whose owner died (a process killed mid-compile) is swept at the next compile.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tilecraft import settings
from tilecraft.errors import ToolchainNotFound

try:
    import fcntl
except ImportError:  # not on Windows: stale directories are then told by their owner's pid alone
    fcntl = None  # type: ignore[assignment]

CANDIDATES = ("gcc", "clang", "cc")
INSTALL_HINT = (
    "install a C compiler (Debian/Ubuntu: `apt install gcc`; Fedora: `dnf install gcc`; macOS: "
    "`xcode-select --install`) or point TILECRAFT_CC or CC at one"
)
BUILD_PREFIXES = ("tilecraft-cc-", "tilecraft-omp-")
LOCK_NAME = "owner.lock"
# A free lock whose pid is alive again (pid reuse) is stale once this old; no live compile is unlocked
# for more than a moment (between creating its directory and locking it).
STALE_AFTER_S = 60.0
# Directories without a lock (written by older versions) are swept once this old.
UNLOCKED_STALE_AFTER_S = 24 * 3600.0
# `<prefix><pid>-<random>`; `<prefix><random>` is how versions before the pid was added named them.
_BUILD_DIR = re.compile(r"(?:" + "|".join(map(re.escape, BUILD_PREFIXES)) + r")(?:(\d+)-)?[a-z0-9_]{8}")


@dataclass(frozen=True)
class CompilerCommand:
    """A compiler command located on this machine, before it has been run."""

    program: tuple[str, ...]
    options: tuple[str, ...]
    origin: str


def _requested() -> tuple[str, str] | None:
    """(variable, text) of the compiler setting in force, or None when neither is set."""
    try:
        configured = settings.get("TILECRAFT_CC")
    except settings.SettingError as err:
        raise CompilerNotFound(str(err), _fix("TILECRAFT_CC")) from None
    if configured:
        return "TILECRAFT_CC", configured
    cc = os.environ.get("CC")
    return ("CC", cc) if cc else None


def _fix(variable: str) -> str:
    return (
        f"correct or unset {variable} (unset, {', '.join(CANDIDATES)} are looked for on PATH); {INSTALL_HINT}"
    )


class CompilerNotFound(ToolchainNotFound):
    """No usable compiler command: `reason` says what is wrong and where it looked, `fix` what to do."""

    def __init__(self, reason: str, fix: str = INSTALL_HINT) -> None:
        self.reason = reason
        self.fix = fix
        super().__init__(f"{reason}; {fix}")


def compiler_command(variable: str, text: str) -> CompilerCommand:
    """The compiler a setting names: its program words, resolved, and its options; CompilerNotFound
    naming `variable` and what is wrong."""
    try:
        words = settings.split_command(text)
        path = settings.find_program(words[0])
    except (ValueError, OSError) as err:
        raise CompilerNotFound(f"{variable}={text!r} cannot be used: {err}", _fix(variable)) from None
    first_option = next((i for i, word in enumerate(words) if word.startswith("-")), len(words))
    return CompilerCommand((path, *words[1:first_option]), tuple(words[first_option:]), variable)


def locate() -> CompilerCommand:
    """The compiler command to use, resolved but not run; CompilerNotFound saying what is missing and
    where it looked."""
    requested = _requested()
    if requested is not None:
        return compiler_command(*requested)
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return CompilerCommand((path,), (), "PATH")
    raise CompilerNotFound(
        f"no C compiler found (TILECRAFT_CC and CC are unset; looked for {', '.join(CANDIDATES)} on PATH "
        f"{os.environ.get('PATH', '')})"
    )


def find_compiler_path() -> str | None:
    """The executable of the compiler command in force, or None when there is none."""
    try:
        return locate().program[0]
    except CompilerNotFound:
        return None


@contextmanager
def build_dir(prefix: str) -> Iterator[Path]:
    """A private directory `<tmp>/<prefix><pid>-*`, locked while in use and removed afterwards; stale
    ones left by dead processes are swept first."""
    sweep_stale_build_dirs()
    directory = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-"))
    lock = _hold_lock(directory)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if lock is not None:
            os.close(lock)


def _hold_lock(directory: Path) -> int | None:
    """An exclusive lock on `directory`'s lock file, released when the descriptor is closed or the process
    dies; None where locks are not available."""
    if fcntl is None:
        return None
    fd = os.open(directory / LOCK_NAME, os.O_CREAT | os.O_WRONLY, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def sweep_stale_build_dirs(root: Path | None = None) -> list[Path]:
    """Remove build directories whose owner is gone (killed mid-compile); returns those removed."""
    root = Path(root) if root is not None else Path(tempfile.gettempdir())
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    removed = []
    for entry in entries:
        match = _BUILD_DIR.fullmatch(entry.name)
        pid = int(match.group(1)) if match is not None and match.group(1) else None
        if match is None or pid == os.getpid() or not entry.is_dir(follow_symlinks=False):
            continue
        if _is_stale(Path(entry.path), pid):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


def _is_stale(directory: Path, pid: int | None) -> bool:
    try:
        age = time.time() - directory.stat().st_mtime
    except OSError:
        return False
    lock = directory / LOCK_NAME
    if pid is None or fcntl is None or not lock.exists():
        return (pid is not None and not _alive(pid) and age > STALE_AFTER_S) or age > UNLOCKED_STALE_AFTER_S
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:
        return False  # another user's: not ours to judge
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # the owner holds it: a compile is running
    finally:
        os.close(fd)
    return not _alive(pid) or age > STALE_AFTER_S


def _alive(pid: int) -> bool:
    if os.name == "nt":
        return True  # os.kill there terminates the process instead of probing it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, owned by someone else
    return True
