"""mark-bounds-checks: the opt-in debug checks of every buffer access, as a device-function attribute.

With pass config `tilecraft.bounds_check` (which TILECRAFT_BOUNDS_CHECK=1 sets for the backends that
declare it), each device function carries `tilecraft.bounds_check`, and the backend's code generator
wraps every load and store of a buffer in a check that records the first out-of-bounds access (its site:
buffer and kernel line) and skips it (a load gives 0).
"""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass

BOUNDS_CHECK = "tilecraft.bounds_check"


@module_pass("mark-bounds-checks")
def mark_bounds_checks(mod, ctx):
    """With pass config `tilecraft.bounds_check`, device functions check every buffer access."""
    if not ctx.config(BOUNDS_CHECK, False):
        return mod
    return mod.with_functions(
        f.with_attr(BOUNDS_CHECK, True) if f.attr("tilecraft.role") == "device" else f for f in mod.functions
    )
