"""Test helpers for kernels, with the names TileLang's `tilelang.testing` gives its examples.

`main()`, the `requires_*` skip decorators, `set_random_seed`, `process_func`, `regression` and
`torch_assert_close`; they are described in tilecraft.compat.testing, where they live beside the rest of
the TileLang compatibility layer. `tilecraft.testing.conformance` is the conformance kit every backend
runs (docs/backends.md).
"""

from tilecraft.compat.testing import *  # noqa: F403 - this module is their public path
from tilecraft.compat.testing import __all__  # noqa: F401
