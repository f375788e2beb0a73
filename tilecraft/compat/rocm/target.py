"""TileLang's `tilelang.rocm.target`: whether kernels run on an AMD GPU here, answered by tilecraft's
`hip` execution backend (the HIP runtime loads and reports a device)."""

from __future__ import annotations


def check_hip_availability() -> bool:
    """True when the `hip` execution backend can run kernels here (TileLang's programs then expect
    64-wide wavefronts from the lane helpers' defaults)."""
    from tilecraft.execution.hip.spec import HIP

    return HIP.availability().ok
