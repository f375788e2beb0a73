"""`tilecraft run-tilelang` / `python -m tilecraft.compat`: run a TileLang script unchanged.

The script runs in this process as `__main__` (as `python SCRIPT ARGS` would run it: its directory first
on sys.path, sys.argv set to the script and its arguments), after the import hook has mapped `tilelang`
onto tilecraft. `-m MODULE` runs a module the same way (`-m pytest test_x.py` runs TileLang's tests).
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from tilecraft.compat import cuda_on_cpu, hook

SPAWN_PATH = Path(__file__).resolve().parent / "spawn_path"
# The CPU target's kind; --cuda-on-cpu runs kernels there unless --target says otherwise.
HOST_TARGET = "c"
_CUDA_MISSING = ("Torch not compiled with CUDA", "Found no NVIDIA driver", "No CUDA GPUs are available")

DESCRIPTION = """\
Run a TileLang script unchanged: in this process `import tilelang` (and its submodules) load tilecraft.
The script runs as __main__ with its directory on sys.path and ARGS as its arguments."""

EPILOG = """\
--cuda-on-cpu makes torch's "cuda" device mean the host for this run (device="cuda" allocates host
tensors, .cuda() keeps a tensor where it is, torch.cuda.synchronize() returns at once, torch.cuda reports
one emulated device), so scripts written for NVIDIA GPUs run on the CPU target. It needs torch, is never
on unless asked for, and cannot run what needs real CUDA (CUDA extensions, CUDA-only torch operators).
See docs/quickstart.md, "Running TileLang scripts"."""


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--target", help="target for kernels that ask for 'auto' (sets TILECRAFT_TARGET)")
    parser.add_argument(
        "--cuda-on-cpu", action="store_true", help="emulate torch's CUDA device on the host (needs torch)"
    )
    parser.add_argument(
        "--cuda-capability", default=None, metavar="MAJOR.MINOR",
        help="compute capability the emulated device reports (default 8.0); only with --cuda-on-cpu",
    )  # fmt: skip
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module as __main__, as python -m")
    parser.add_argument("script", nargs="?", help="the TileLang script to run")
    parser.add_argument("args", nargs="*", help="arguments passed to the script (or the module)")
    return parser


# Options of the runner that take a value: what follows them is not the script.
_VALUED = ("--target", "--cuda-capability")


def split_command_line(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """The runner's own options, and the script (or `-m MODULE`) with its arguments: everything from the
    first word that is not a runner option on belongs to the script, as with `python [options] SCRIPT`."""
    argv = list(argv)
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "-m" or word == "--" or not word.startswith("-"):
            break
        i += 2 if word in _VALUED else 1
    if i < len(argv) and argv[i] == "--":
        return argv[:i], argv[i + 1 :]
    if i < len(argv) and argv[i] == "-m":
        return argv[: i + 2], argv[i + 2 :]
    return argv[:i], argv[i:]


def main(argv: Sequence[str] | None = None, prog: str = "python -m tilecraft.compat") -> int:
    """Parse the options, prepare the process and run the script; returns the exit status."""
    parser = _parser(prog)
    own, rest = split_command_line(sys.argv[1:] if argv is None else argv)
    options = parser.parse_args(own)
    if options.module is None:
        if not rest:
            parser.error("name a SCRIPT to run, or -m MODULE")
        options.script, options.args = rest[0], rest[1:]
    else:
        options.args = rest
    problem = _prepare(options)
    if problem:
        parser.error(problem)
    return _run(options.script, options.module, options.args, options.cuda_on_cpu)


def _prepare(options: argparse.Namespace) -> str:
    """Set up the process for the run; returns what is wrong with the options, or ""."""
    if options.script is not None and not Path(options.script).is_file():
        return f"script {options.script!r} is not a file"
    if options.cuda_capability is not None and not options.cuda_on_cpu:
        return "--cuda-capability sets the emulated device's capability; it needs --cuda-on-cpu"
    target = options.target or (HOST_TARGET if options.cuda_on_cpu else None)
    if target is not None:
        problem = _target_problem(target)
        if problem:
            return f"--target {target!r}: {problem}"
        os.environ["TILECRAFT_TARGET"] = target
    if options.cuda_on_cpu:
        try:
            capability = cuda_on_cpu.parse_capability(options.cuda_capability or "8.0")
            cuda_on_cpu.enable(capability)
        except (ValueError, ImportError) as err:
            return str(err)
    hook.install()
    # Children started by multiprocessing (spawn, forkserver) get this sys.path and find a stand-in
    # `tilelang` there that installs the hook in them; in this process the hook answers first.
    sys.path.insert(0, str(SPAWN_PATH))
    return ""


def _target_problem(target: str) -> str:
    from tilecraft.backend import Target
    from tilecraft.errors import TilecraftError

    try:
        Target.parse(target)
    except TilecraftError as err:
        return str(err)
    return ""


def _run(script: str | None, module: str | None, args: Sequence[str], emulating: bool) -> int:
    try:
        if module is not None:
            sys.argv = [module, *args]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            path = Path(script).resolve()
            sys.argv = [script, *args]
            sys.path.insert(0, str(path.parent))
            runpy.run_path(str(path), run_name="__main__")
    except SystemExit as done:
        return _exit_status(done.code)
    except BaseException as err:
        traceback.print_exc()
        no_tvm = hook.tvm_hint(err)
        if no_tvm is not None:
            print(f"hint: {no_tvm}", file=sys.stderr)
        if not emulating and any(words in str(err) for words in _CUDA_MISSING):
            print(
                "hint: the script uses torch's CUDA device, which this machine lacks; rerun with "
                "--cuda-on-cpu to emulate it on the CPU (see --help)",
                file=sys.stderr,
            )
        return 1
    return 0


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message"), as Python prints it
    return 1
