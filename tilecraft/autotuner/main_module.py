"""The main script and the worker processes: whether Python's `spawn` start method may import it.

A process started with `spawn` first imports the parent's `__main__` (by its path, or by module name
under `python -m`) so that functions pickled by reference to it resolve. A script that tunes at its top
level, outside `if __name__ == "__main__":` (a plain script, as TileLang's examples often are), would
tune again in every worker, and the worker dies while starting. TileLang compiles in threads, so such
scripts work there; here the workers are started without the main module instead (`hidden_main`): a
compile worker receives the candidate's IR and needs nothing from the script, and a measurement whose
options refer to the script's functions (`ref_prog` defined in it) is made in the tuning process.
"""

from __future__ import annotations

import ast
import contextlib
import io
import pickle
import sys
import types
from collections.abc import Iterator
from typing import Any

MAIN = "__main__"


def reimports_safely() -> bool:
    """Whether a spawned process may import `__main__`: there is no script to import (an interactive
    session, `python -c`), or the code running the tuning in the script's top level stands under an
    `if __name__ == "__main__":` guard (or the script is not running its top level at all)."""
    main = sys.modules.get(MAIN)
    source = _source_file(main)
    if source is None:
        return True
    line = _top_level_line(main)
    if line is None:
        return True
    guards = _main_guards(source)
    return guards is not None and any(first <= line <= last for first, last in guards)


def _source_file(main: types.ModuleType | None) -> str | None:
    if main is None:
        return None
    spec = getattr(main, "__spec__", None)
    if spec is not None and getattr(spec, "name", None):
        return getattr(spec, "origin", None) or getattr(main, "__file__", None) or "<module>"
    return getattr(main, "__file__", None)


def _top_level_line(main: types.ModuleType) -> int | None:
    """The line of the script's top-level code that is running now (it led to this call), if any."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_globals is main.__dict__ and frame.f_code.co_name == "<module>":
            return frame.f_lineno
        frame = frame.f_back
    return None


def _main_guards(path: str) -> list[tuple[int, int]] | None:
    """The line ranges of the script's top-level `if __name__ == "__main__":` blocks; None when its source
    cannot be read (the guard is then assumed absent)."""
    try:
        with io.open_code(path) as file:
            tree = ast.parse(file.read())
    except (OSError, SyntaxError, ValueError):
        return None
    return [(node.lineno, node.end_lineno or node.lineno) for node in tree.body if _is_main_guard(node)]


def _is_main_guard(node: ast.stmt) -> bool:
    if (
        not isinstance(node, ast.If)
        or not isinstance(node.test, ast.Compare)
        or len(node.test.comparators) != 1
    ):
        return False
    sides = [node.test.left, node.test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    strings = [s for s in sides if isinstance(s, ast.Constant) and s.value == MAIN]
    return bool(names) and bool(strings) and isinstance(node.test.ops[0], ast.Eq)


@contextlib.contextmanager
def hidden_main() -> Iterator[None]:
    """Processes started inside see no main module to import (as after `python -c`): `spawn` reads
    `__main__.__spec__` and `__main__.__file__` when it starts a process, and both are restored after."""
    main = sys.modules.get(MAIN)
    if main is None:
        yield
        return
    saved = {name: main.__dict__[name] for name in ("__file__", "__spec__") if name in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__spec__ = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


class RefersToMain(pickle.PicklingError):
    """A pickle names functions or classes defined in the main script."""


class _MainReferences(pickle.Pickler):
    """A pickler that notes whether the pickle names anything defined in `__main__`."""

    found = False

    def persistent_id(self, obj: Any) -> None:
        if isinstance(obj, (type, types.FunctionType)) and getattr(obj, "__module__", None) == MAIN:
            self.found = True
        return None


def dumps_without_main(obj: Any) -> bytes:
    """`pickle.dumps(obj)`, or RefersToMain when the pickle names something defined in the main script
    (a process started without it could not load it)."""
    buffer = io.BytesIO()
    pickler = _MainReferences(buffer)
    pickler.dump(obj)
    if pickler.found:
        raise RefersToMain("it refers to functions or classes defined in the main script")
    return buffer.getvalue()


__all__ = ["RefersToMain", "dumps_without_main", "hidden_main", "reimports_safely"]
