"""Keys of `pass_configs` that tilecraft's own pipelines read."""

from __future__ import annotations


class PassConfigKey:
    """`tilecraft.compile(..., pass_configs={PassConfigKey.BOUNDS_CHECK: True})`."""

    BOUNDS_CHECK = "tilecraft.bounds_check"
    """Check every buffer access and report the kernel line of an out-of-bounds one (debugging)."""
