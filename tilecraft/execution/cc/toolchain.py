"""The system C compiler for kernels: version, OpenMP support, and compiling to a shared library.

Which compiler, and the private build directories, are tilecraft/execution/system_cc.py's (the compiled
launcher finds it the same way); their names are re-exported here, where the `cc` backend's callers
have always found them.
"""

from __future__ import annotations

import functools
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tilecraft import settings
from tilecraft.errors import ToolchainError
from tilecraft.execution.system_cc import (  # noqa: F401 - re-exported
    BUILD_PREFIXES,
    CANDIDATES,
    INSTALL_HINT,
    LOCK_NAME,
    STALE_AFTER_S,
    UNLOCKED_STALE_AFTER_S,
    CompilerCommand,
    CompilerNotFound,
    build_dir,
    compiler_command,
    find_compiler_path,
    locate,
    sweep_stale_build_dirs,
)
from tilecraft.execution.system_cc.library import not_a_library_message, shared_library_problem

# -fno-trapping-math: kernels never read floating-point exception flags, and with gcc's default
# (-ftrapping-math) a conditional float operation (`c ? x * y : z`, a clamp before arithmetic) stops the
# vectorizer ("control flow in loop"). Values are unchanged: no reassociation, no reciprocal, same rounding.
BASE_FLAGS = ("-O3", "-march=native", "-fPIC", "-shared", "-std=gnu11", "-fno-math-errno", "-fno-trapping-math",
              "-fopenmp-simd")  # fmt: skip


@dataclass(frozen=True)
class Compiler:
    """A resolved compiler command: `program` (launcher words and compiler; the first word is a path) and
    the setting's own `options`, its version, OpenMP support, and the setting it came from."""

    program: tuple[str, ...]
    options: tuple[str, ...]
    version: str
    openmp: bool
    origin: str = "PATH"

    @property
    def path(self) -> str:
        """The executable that runs (the launcher when there is one)."""
        return self.program[0]

    @property
    def command(self) -> tuple[str, ...]:
        """The whole command as configured, for messages and the cache key."""
        return self.program + self.options

    def describe(self) -> str:
        return shlex.join(self.command)

    def flags(self, openmp: bool) -> tuple[str, ...]:
        """tilecraft's flags, then the setting's own options (later options win)."""
        return BASE_FLAGS + (("-fopenmp",) if openmp else ()) + self.options


def compiler() -> Compiler:
    """The compiler to use, described (version, OpenMP); a clear error when there is none."""
    found = locate()
    return _describe(found.program, found.options, found.origin)


@functools.lru_cache(maxsize=8)
def _describe(program: tuple[str, ...], options: tuple[str, ...], origin: str) -> Compiler:
    command = [*program, *options]
    try:
        out = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolchainError(
            f"the C compiler {shlex.join(command)} does not run: {exc}; {INSTALL_HINT}"
        ) from None
    lines = (out.stdout or out.stderr).splitlines()
    # A compiler without --version may still compile; a launcher that cannot find its compiler fails
    # the compile, whose error shows the launcher's message.
    if out.returncode != 0:
        version = f"unknown (--version exited {out.returncode})"
    else:
        version = lines[0] if lines else "unknown (--version printed nothing)"
    return Compiler(program, options, version, _probe_openmp(command), origin)


def _probe_openmp(command: list[str]) -> bool:
    source = "#include <omp.h>\nint f(void) { return omp_get_max_threads(); }\n"
    with build_dir("tilecraft-omp-") as tmp:
        src = tmp / "probe.c"
        out = tmp / "probe.so"
        src.write_text(source)
        try:
            result = subprocess.run([*command, "-fopenmp", "-fPIC", "-shared", str(src), "-o", str(out)],
                                    capture_output=True, timeout=60)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return False
        # A "compiler" that exits 0 without writing anything (/bin/true) supports nothing.
        return result.returncode == 0 and out.is_file()


def use_openmp(cc: Compiler) -> bool:
    """OpenMP threads when the compiler supports them, unless TILECRAFT_OPENMP turns them off."""
    wanted = settings.get("TILECRAFT_OPENMP")
    if wanted is False:
        return False
    if wanted is True and not cc.openmp:
        raise ToolchainError(
            f"TILECRAFT_OPENMP=1 but {cc.describe()} cannot build OpenMP code; install libgomp (gcc) or "
            "libomp (clang), or unset TILECRAFT_OPENMP"
        )
    return cc.openmp


def compile_shared(
    source: str, include_dirs: list[Path], openmp: bool, keep_dir: Path, extra_flags: tuple[str, ...] = ()
) -> bytes:
    """Compile `source` to a shared library and return its bytes.

    On failure the source is kept in `keep_dir` (created only then; a new temporary directory when
    `keep_dir` cannot be written) and the error shows the command and the compiler output.
    """
    cc = compiler()
    with build_dir("tilecraft-cc-") as tmp:
        src = tmp / "kernel.c"
        out = tmp / "kernel.so"
        src.write_text(source)
        cmd = [*cc.program, *cc.flags(openmp), *extra_flags, *(f"-I{d}" for d in include_dirs), str(src), "-o",
               str(out), "-lm"]  # fmt: skip
        return checked_library(_run(cmd, source, src, out, keep_dir), cc, cmd)


def checked_library(data: bytes, cc: Compiler, cmd: list[str]) -> bytes:
    """`data` when it is a shared library this process can load; else a ToolchainError naming the setting
    the compiler came from, the command and what it made (raised before anything is cached)."""
    problem = shared_library_problem(data)
    if problem is not None:
        raise ToolchainError(not_a_library_message(problem, cc.origin, cc.command, cmd))
    return data


def compile_object(source: str) -> bytes:
    """Compile `source` to an object file (no linking) and return its bytes."""
    cc = compiler()
    with build_dir("tilecraft-cc-") as tmp:
        src = tmp / "kernel.c"
        out = tmp / "kernel.o"
        src.write_text(source)
        flags = [f for f in cc.flags(False) if f != "-shared"]
        return _run([*cc.program, *flags, "-c", str(src), "-o", str(out)], source, src, out, None)


def _run(cmd: list[str], source: str, src: Path, out: Path, keep_dir: Path | None) -> bytes:
    """Run one compile; the output file's bytes, or a ToolchainError with the command and its output."""
    if settings.get("TILECRAFT_VERBOSE"):  # -O3 over a large kernel can take a minute: say what runs
        lines = source.count("\n") + 1
        print(f"[tilecraft] cc: {shlex.join(cmd)} ({lines} lines of C)", file=sys.stderr, flush=True)
    try:
        result = subprocess.run(cmd, capture_output=True, text=True)
    except OSError as err:
        raise ToolchainError(f"the C compiler does not run: {err}\n  command: {shlex.join(cmd)}") from None
    output = "\n".join(text.strip() for text in (result.stderr, result.stdout) if text.strip())
    if result.returncode != 0:
        raise _failure(
            f"the C compiler failed (exit {result.returncode})", cmd, source, src, keep_dir, output
        )
    if not out.is_file():
        raise _failure(f"the C compiler exited 0 but wrote no {out.name}", cmd, source, src, keep_dir, output)
    return out.read_bytes()


def _failure(what: str, cmd: list[str], source: str, src: Path, keep_dir: Path | None, output: str
             ) -> ToolchainError:  # fmt: skip
    shown = shlex.join(cmd)
    if keep_dir is None:
        return ToolchainError(f"{what}\n  command: {shown}\n{output}".rstrip())
    kept, note = keep_source(source, keep_dir)
    if kept is not None:
        shown = shown.replace(str(src), str(kept))
    where = str(kept) if kept is not None else "not kept"
    return ToolchainError(f"{what}\n  command: {shown}\n  generated source: {where}{note}\n{output}".rstrip())


def keep_source(source: str, keep_dir: Path) -> tuple[Path | None, str]:
    """Write a failed compile's source where the user can open it: `keep_dir`, else a new temporary
    directory. Returns the file (None when neither can be written) and a note saying what went wrong."""
    problems = []
    for make_dir in (lambda: _made(keep_dir), lambda: Path(tempfile.mkdtemp(prefix="tilecraft-failed-"))):
        try:
            path = make_dir() / "kernel.c"
            path.write_text(source)
        except OSError as err:
            problems.append(str(err))
            continue
        note = f" (could not write {keep_dir}: {problems[0]})" if problems else ""
        return path, note
    return None, f" (could not write {keep_dir} nor a temporary directory: {'; '.join(problems)})"


def _made(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    return directory
