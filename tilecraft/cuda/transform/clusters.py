"""Thread-block clusters (`T.Kernel(..., cluster_dims=...)`) on the CUDA target.

Clusters exist from sm_90 on. A kernel's results do not depend on its cluster shape (blocks of a cluster
only run at once), so on an older arch the annotation is dropped, with a note under TILECRAFT_VERBOSE,
and the grid launches as it is. On sm_90 and newer the kernel is compiled with `__cluster_dims__`;
a grid dim the cluster does not divide is refused at launch (the launchers check it). What the cluster
is used for, TMA multicast of the tiles its blocks share, is decided by inject-software-pipeline.
"""

from __future__ import annotations

import dataclasses

from tilecraft import settings
from tilecraft.backend.pipeline import module_pass
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import map_launches


def _drop_clusters(launch: S.KernelLaunch, arch: str) -> S.Stmt:
    cluster = S.annotation(launch.annotations, S.CLUSTER_DIMS)
    if cluster is None:
        return launch
    settings.verbose_note(launch.span, f"cluster_dims={cluster} dropped: thread-block clusters need sm_90 "
                          f"or newer, the target is {arch}")  # fmt: skip
    kept = tuple((k, v) for k, v in launch.annotations if k != S.CLUSTER_DIMS)
    return dataclasses.replace(launch, annotations=kept)


@module_pass("cluster-launches")
def cluster_launches(mod: IRModule, ctx) -> IRModule:
    """Kernels keep their cluster shape on sm_90+; older archs launch the grid without clusters."""
    if ctx.target.capabilities.clusters:
        return mod
    arch = ctx.target.attr("arch")
    return map_launches(mod, lambda launch: _drop_clusters(launch, arch))
