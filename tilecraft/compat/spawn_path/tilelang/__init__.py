"""Stand-in `tilelang` for child processes of `tilecraft run-tilelang`: it becomes tilecraft.

Found only through the runner's sys.path entry (inherited by multiprocessing's spawned children); it
installs the import hook, so `tilelang.X` loads `tilecraft.X` here as in the parent.
"""

import sys

import tilecraft
from tilecraft.compat import hook

sys.modules[__name__] = tilecraft  # the import returns what sys.modules holds once this module ran
hook.install()
