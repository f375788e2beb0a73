"""`python -m tilecraft`: the command line (see tilecraft.tools.cli)."""

import sys

import tilecraft._origin  # noqa: F401 - first: says so when a folder named tilecraft hides this package
from tilecraft.tools.cli import main

sys.exit(main())
