"""TVM's `tvm.testing`: `requires_package(name)`, the pytest marker TileLang's examples use."""

from __future__ import annotations

import importlib.util

from tilecraft.compat.tvm._mapped import refusing


def requires_package(*names: str):
    """Skip the test (pytest) unless every named package can be imported; as a plain decorator outside
    pytest the function is returned unchanged."""
    import pytest

    missing = [n for n in names if importlib.util.find_spec(n) is None]
    return pytest.mark.skipif(bool(missing), reason=f"needs package(s): {', '.join(missing)}")


__all__ = ["requires_package"]
__getattr__ = refusing("tvm.testing")
