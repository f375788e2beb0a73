"""`python -m tilecraft.compat SCRIPT [ARGS]`: run a TileLang script unchanged (see tilecraft.compat.runner)."""

import sys

from tilecraft.compat.runner import main

sys.exit(main())
