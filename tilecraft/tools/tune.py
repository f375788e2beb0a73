"""`tilecraft tune`: run a tuning spec into a tuning database, merge databases, list one.

    tilecraft tune SPEC.py --db tuning.sqlite [--executor local|ray] [--retune]
    tilecraft tune --merge a.sqlite b.sqlite -o merged.sqlite
    tilecraft tune --list tuning.sqlite

A spec is a Python file whose `TUNE` lists what to tune: each entry an `@tilecraft.autotune` kernel with
the arguments to tune it for, `(kernel, args)` or `(kernel, args, kwargs)`:

    from mykernels import matmul
    TUNE = [(matmul, (4096, 4096, 4096)), (matmul, (8192, 8192, 1024))]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from tilecraft import settings
from tilecraft.errors import TilecraftError


class SpecError(TilecraftError):
    """A tuning spec that cannot be loaded or read."""


def add_parser(commands: Any) -> None:
    text = "tune the kernels a spec lists into a SQLite tuning database; merge or list databases"
    tune = commands.add_parser("tune", help=text, description=text)
    tune.add_argument("spec", nargs="?", type=Path, help="a Python file whose TUNE lists (kernel, args[, kwargs])")
    tune.add_argument("--db", type=Path, help="the tuning database to read and write (created if missing)")
    tune.add_argument("--executor", choices=("local", "ray"), help="where to compile and measure (default: local)")
    tune.add_argument("--retune", action="store_true", help="tune again what the database holds")
    tune.add_argument("--merge", nargs="+", type=Path, metavar="DB", help="merge these databases into -o")
    tune.add_argument("-o", "--output", type=Path, help="the merged database (with --merge)")
    tune.add_argument("--list", type=Path, metavar="DB", help="print every tuning a database holds")
    tune.set_defaults(run=cmd_tune, takes_args=True)


def cmd_tune(args: argparse.Namespace) -> int:
    if args.merge:
        return _merge(args)
    if args.list is not None:
        return _list(args.list)
    if args.spec is None or args.db is None:
        raise SpecError("give a spec and a database: tilecraft tune SPEC.py --db tuning.sqlite")
    entries = load_spec(args.spec)
    overrides = {"TILECRAFT_TUNING_DB": args.db}
    if args.executor:
        overrides["TILECRAFT_AUTOTUNE_EXECUTOR"] = args.executor
    if args.retune:
        overrides["TILECRAFT_RETUNE"] = True
    with settings.override(**overrides):
        if (args.executor or settings.get("TILECRAFT_AUTOTUNE_EXECUTOR")) == "ray":
            from tilecraft.autotuner.ray_executor import send_by_value

            for module in _spec_modules(args.spec):
                send_by_value(module)
        for kernel, call_args, call_kwargs, _ in entries:
            _tune_one(kernel, call_args, call_kwargs)
    print(f"tuning database: {args.db}")
    return 0


def _tune_one(kernel: Any, args: tuple, kwargs: dict) -> None:
    start = time.perf_counter()
    result = kernel.tune(*args, **kwargs)
    origin = "from the tuning database" if result.from_database else (
        "from the tuning cache" if result.from_cache else "tuned")  # fmt: skip
    ok = sum(c.ok for c in result.candidates)
    shown = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
    print(f"{kernel.__name__}({shown}): best {result.config} {result.latency:.4g} ms ({origin}; "
          f"{ok}/{len(result.candidates)} candidates ok; {time.perf_counter() - start:.1f} s)", flush=True)  # fmt: skip


def load_spec(path: Path) -> list[tuple[Any, tuple, dict, str]]:
    """The spec's entries as (kernel, args, kwargs, module name). Its folder goes first on sys.path, so
    that it imports its neighbours and worker processes import it."""
    from tilecraft.autotuner import AutoTuneImpl

    module = _import(path)
    entries = getattr(module, "TUNE", None)
    if not isinstance(entries, (list, tuple)) or not entries:
        raise SpecError(f"{path} must define TUNE, a non-empty list of (kernel, args) or (kernel, args, kwargs)")
    out = []
    for i, entry in enumerate(entries):
        entry = entry if isinstance(entry, tuple) and 1 <= len(entry) <= 3 else (entry, None)
        kernel, args, kwargs = (*entry, (), {})[:3] if len(entry) == 1 else (*entry, {})[:3]
        if not isinstance(kernel, AutoTuneImpl) or not isinstance(args, (tuple, list)) or not isinstance(kwargs, dict):
            raise SpecError(
                f"{path}: TUNE[{i}] must be (kernel, args) or (kernel, args, kwargs) with an @tilecraft.autotune "
                f"kernel, a tuple and a dict; got {entry!r}"
            )
        out.append((kernel, tuple(args), dict(kwargs), module.__name__))
    return out


def _import(path: Path) -> ModuleType:
    if not path.is_file():
        raise SpecError(f"tuning spec {path} does not exist")
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise SpecError(f"{path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # worker processes find its functions under this name
    spec.loader.exec_module(module)
    return module


def _spec_modules(spec: Path) -> list[ModuleType]:
    """The spec and the modules it imported from its folder: Ray's workers get them by value."""
    folder = spec.resolve().parent
    found = []
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if file and Path(file).resolve().parent == folder:
            found.append(module)
    return found


def _merge(args: argparse.Namespace) -> int:
    from tilecraft.autotuner.database import merge_databases

    if args.output is None:
        raise SpecError("--merge needs -o OUTPUT: the database to write")
    count = merge_databases(args.merge, args.output)
    print(f"merged {len(args.merge)} database(s) into {args.output}: {count} results")
    return 0


def _list(path: Path) -> int:
    from tilecraft.autotuner.database import TuningDatabase, TuningDatabaseError

    if not path.is_file():
        raise TuningDatabaseError(f"tuning database {path} does not exist")
    with TuningDatabase(path) as db:
        for t in db.tunings():
            state = "complete" if t["complete"] else f"partial ({t['results']}/{t['configs']})"
            best = f"best {t['best']} {t['latency']:.4g} ms" if t["best"] is not None else "no candidate ok"
            print(f"{t['kernel']} {t['signature']} on {t['device']} ({t['arch']}, {t['target']}), "
                  f"tilecraft {t['version']}: {state}, {best}")  # fmt: skip
    return 0
