"""`driver.get_num_sms()`: how many blocks a target runs at once, for persistent kernels.

TileLang asks the GPU driver for the SM count. Here the selected target backend answers through its
`processor_count` callback: the SM count of a GPU, the usable cores of a host processor.
"""

from __future__ import annotations

from typing import Any

from tilecraft.errors import BackendError

PROCESSOR_COUNT = "processor_count"


def get_num_sms(device_id: int = 0, target: Any = "auto") -> int:
    """The number of processors (SMs, cores) of device `device_id` of `target` ("auto": this machine's)."""
    from tilecraft.backend.context import create_backend_context

    ctx = create_backend_context(target, require_available=False)
    device = ctx.target.attr("device", 0)
    if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id != device:
        raise BackendError(
            f"get_num_sms(device_id={device_id!r}): target {ctx.target} is device {device}; name the device "
            "in the target instead (its `device` attribute) and pass target="
        )
    if PROCESSOR_COUNT not in ctx.backend.callbacks:
        raise BackendError(
            f"backend {ctx.backend.name!r} (target {ctx.target}) does not say how many processors its device "
            f"has (no {PROCESSOR_COUNT!r} callback); use a fixed grid size for this target"
        )
    return int(ctx.callback(PROCESSOR_COUNT)(ctx))


__all__ = ["get_num_sms"]
