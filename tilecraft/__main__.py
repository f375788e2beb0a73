"""`python -m tilecraft`: the command line (see tilecraft.tools.cli)."""

import sys

from tilecraft.tools.cli import main

sys.exit(main())
