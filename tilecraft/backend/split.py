"""The host/device split of a lowered module.

A backend's pipeline ends by marking every function with the attribute `tilecraft.role`: "host" for
the function that runs on the host (argument checks, launches) and "device" for kernels. Shared code
splits on that attribute only; it never guesses a function's role from its body or the target.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tilecraft.errors import BackendError

if TYPE_CHECKING:
    from tilecraft.ir import IRModule, PrimFunc

ROLE_ATTR = "tilecraft.role"
HOST = "host"
DEVICE = "device"
ROLES = (HOST, DEVICE)


def mark_role(func: PrimFunc, role: str) -> PrimFunc:
    """`func` with its role set (what a pipeline's final split pass does to each function)."""
    if role not in ROLES:
        raise BackendError(f"function role {role!r} is not one of {ROLES}")
    return func.with_attr(ROLE_ATTR, role)


def split_host_device(mod: IRModule) -> tuple[IRModule, IRModule]:
    """(host module, device module); both keep the module's attributes. Every function needs a role."""
    roles = {f.name: f.attr(ROLE_ATTR) for f in mod.functions}
    bad = {name: role for name, role in roles.items() if role not in ROLES}
    if bad:
        listed = ", ".join(f"{name} ({role!r})" for name, role in bad.items())
        raise BackendError(
            f"cannot split the lowered module into host and device parts: function(s) {listed} have no valid "
            f"{ROLE_ATTR!r} attribute (allowed: {', '.join(ROLES)}); the backend's pipeline must end with a "
            "pass that marks every function"
        )
    host = tuple(f for f in mod.functions if roles[f.name] == HOST)
    device = tuple(f for f in mod.functions if roles[f.name] == DEVICE)
    return mod.with_functions(host), mod.with_functions(device)
