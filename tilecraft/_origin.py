"""Importing this module checks that `tilecraft` is this package, not a folder that hides it.

Python imports a folder without `__init__.py` as a namespace package. A clone of the repository is such
a folder (the package is one level down, `<clone>/tilecraft/`), so when the clone's folder is named
`tilecraft`, a script in the folder that holds the clone (or `python -c`, `-m` or the REPL started there)
imports the clone's folder as `tilecraft`: Python searches the script's folder before the installed
package when the package is found by an import finder (Python asks those after every sys.path entry;
tilecraft's own editable install is a sys.path entry instead, see pyproject.toml). That module has no
`jit`, `compile`... With such an install the subpackages still load (from the installed path);
`tilecraft.language`, `tilecraft.backend` and `python -m tilecraft` import this module first, so the script
fails here, saying why, instead of later with "module 'tilecraft' has no attribute 'jit'".
"""

from __future__ import annotations

import os
import sys


def check_package_origin() -> None:
    """Raise ImportError when the imported `tilecraft` is a namespace package (a folder named tilecraft
    that is not the package, usually the clone of the repository)."""
    top = sys.modules.get("tilecraft")
    if top is None or getattr(top, "__file__", None) is not None:
        return  # the real package (a namespace package has no __file__)
    folders = ", ".join(str(p) for p in getattr(top, "__path__", ())) or "a folder without __init__.py"
    package = os.path.dirname(os.path.abspath(__file__))
    raise ImportError(
        f"`import tilecraft` found {folders}, a folder named tilecraft that is not the tilecraft package "
        f"(the package is {package}). Python searches the script's folder first (the current folder for "
        "`python -c`, `python -m` and the REPL), and that folder holds a folder named tilecraft, usually "
        "the clone of the repository, which hides the package from an install through an import finder. "
        "Reinstall with `pip install -e .` from the clone (which puts the clone on sys.path, where the "
        "package wins), keep scripts in another folder and start Python elsewhere, or rename the clone's folder."
    )


check_package_origin()
