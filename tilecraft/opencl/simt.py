"""What the shared SIMT passes ask of an OpenCL device.

OpenCL C 1.2 has no sub-group functions, so work-items never exchange registers: `exchange` is None
and cross-work-item reductions go through local memory. The group width then only names how the
layouts split a work-group's work-items into (lane, group): it changes the index arithmetic of the
generated code, never what a work-item computes. 32 keeps that code, and the work-group sizes accepted
(32 to 1024), as they have been. A lowering through `sub_group_shuffle_xor` (cl_khr_subgroup_shuffle)
would read the device's sub-group size here instead.
"""

from __future__ import annotations

from tilecraft.backend.simt import SimtTarget

GROUP_WIDTH = 32
MAX_WORK_GROUP_SIZE = 1024  # the device's own limit (`max_work_group_size`) is checked before lowering
VECTOR_BYTES = 16  # a float4 / int4 access

WORK_GROUPS = SimtTarget(width=GROUP_WIDTH, max_threads=MAX_WORK_GROUP_SIZE, vector_bytes=VECTOR_BYTES)


def opencl_simt(target) -> SimtTarget:
    """The same for every OpenCL device: no sub-group exchange, work-items named in groups of 32."""
    return WORK_GROUPS
