"""The CUDA target kind `cuda` (alias `nvidia`): an NVIDIA GPU, named by its architecture.

Attributes (all canonical after normalization):

* `arch`: `sm_XY` or `sm_XYa` (`sm_80`, `sm_90a`, `sm_100a`). Accepted spellings: `sm_90a`, `sm90a`,
  `90a`, `compute_90a`, `-arch=sm_90a`, `--gpu-architecture=sm_90a`, the int `90`, and a compute
  capability `"9.0"` (which names the portable `sm_90`).
* `device`: the device index (default 0); kernels are loaded on that device.
* `sm_count`: number of SMs.
* `max_shared_memory_per_block_optin`: bytes of shared memory one block may opt into.

`capabilities(target)` is what the arch has (the record tilecraft/backend/capabilities.py describes):
sm_80 and newer (older archs are refused), warps of 32, cp.async and mma.sync m16n8k16 from sm_80, TMA,
mbarriers and thread-block clusters from sm_90, wgmma on sm_90a.

A target without `arch` (`"cuda"`, or `"auto"` through the detector) is read from the device: its arch,
SM count and shared-memory limit. A target that names its `arch` is never completed from hardware, so it
means the same on every machine and parsing it never initializes CUDA (which would break processes
forked afterwards); it gets the arch's documented shared-memory limit. The driver is reached lazily
(never at import) and at most once per process for each device.
"""

from __future__ import annotations

import re
from typing import Any

from tilecraft.backend.capabilities import (
    EVERY_DTYPE,
    Capabilities,
    Lack,
    Limit,
    MatrixInstruction,
    Memory,
)
from tilecraft.backend.errors import TargetError
from tilecraft.backend.target import Target
from tilecraft.backend.target_kind import TargetKind, register_target_kind
from tilecraft.cuda.intrinsics.mma_layouts import WARP_SIZE
from tilecraft.cuda.intrinsics.simt import MAX_THREADS_PER_BLOCK
from tilecraft.cuda.storage import SHARED_ALIGN

KIND = "cuda"
ALIASES = ("nvidia",)
ATTRIBUTES = ("arch", "device", "sm_count", "max_shared_memory_per_block_optin")

# Shared memory a block may opt into, by compute capability (CUDA C++ Programming Guide, "Technical
# Specifications per Compute Capability").
SHARED_MEMORY_OPTIN: dict[tuple[int, int], int] = {
    (7, 0): 96 * 1024, (7, 2): 96 * 1024, (7, 5): 64 * 1024,
    (8, 0): 163 * 1024, (8, 6): 99 * 1024, (8, 7): 163 * 1024, (8, 9): 99 * 1024,
    (9, 0): 227 * 1024, (10, 0): 227 * 1024, (10, 3): 227 * 1024,
    (12, 0): 99 * 1024, (12, 1): 99 * 1024,
}  # fmt: skip
# Compute capabilities whose arch-specific features (wgmma, TMA multicast, tcgen05) need the `a` suffix.
ARCH_SPECIFIC = ((9, 0), (10, 0))

_ARCH = re.compile(r"(?:-{0,2}(?:arch|gpu-architecture)=)?(?:sm_?|compute_?)?(\d{2,3})(a?)")
_CAPABILITY = re.compile(r"(\d{1,2})\.(\d)")


def parse_arch(value: Any) -> str:
    """The canonical `sm_XY[a]` spelling of an arch; TargetError listing the accepted forms."""
    if isinstance(value, bool):
        raise _bad_arch(value)
    if isinstance(value, int):
        value = str(value)
    if not isinstance(value, str):
        raise _bad_arch(value)
    text = value.strip().lower()
    dotted = _CAPABILITY.fullmatch(text)
    if dotted:
        return f"sm_{dotted.group(1)}{dotted.group(2)}"
    match = _ARCH.fullmatch(text)
    if match is None:
        raise _bad_arch(value)
    arch = f"sm_{match.group(1)}{match.group(2)}"
    if match.group(2) and capability(arch) < ARCH_SPECIFIC[0]:
        raise TargetError(
            f"target {KIND}: arch {arch} does not exist: the arch-specific 'a' suffix starts at sm_90a "
            f"(sm_90a, sm_100a, ...); write sm_{match.group(1)} for this GPU"
        )
    return arch


def _bad_arch(value: Any) -> TargetError:
    return TargetError(
        f"target {KIND}: cannot read arch {value!r}; write sm_XY or sm_XYa (e.g. sm_80, sm_90a, sm_100a); "
        "also accepted: 90a, sm90a, compute_90a, -arch=sm_90a, 90, or a compute capability such as '9.0'"
    )


def capability(arch: str) -> tuple[int, int]:
    """The compute capability of a canonical arch: sm_90a -> (9, 0), sm_120 -> (12, 0)."""
    digits = arch[3:].rstrip("a")
    return int(digits[:-1]), int(digits[-1])


def arch_for_capability(major: int, minor: int) -> str:
    """The arch to compile for on a device: `sm_90a` on 9.0 and `sm_100a` on 10.0 (their wgmma/TMA
    and tcgen05 instructions need the arch-specific target), else the portable `sm_XY`."""
    suffix = "a" if (major, minor) in ARCH_SPECIFIC else ""
    return f"sm_{major}{minor}{suffix}"


def normalize(attrs: dict[str, Any]) -> dict[str, Any]:
    """Canonical attributes: `arch` as sm_XY[a] (read from the device when not given), `device`
    (default 0), and the limits known for the arch; idempotent. Unknown attribute names never get here:
    target parsing rejects them against ATTRIBUTES."""
    device = _non_negative(attrs.get("device", 0), "device")
    out: dict[str, Any] = {"device": device}
    info = None
    if attrs.get("arch") is None:
        info = _require_device(device)
        out["arch"] = arch_for_capability(info.major, info.minor)
    else:
        out["arch"] = parse_arch(attrs["arch"])
    for key in ("sm_count", "max_shared_memory_per_block_optin"):
        if attrs.get(key) is not None:
            out[key] = _positive(attrs[key], key)
        elif info is not None:
            out[key] = getattr(info, key)
    if "max_shared_memory_per_block_optin" not in out:
        known = SHARED_MEMORY_OPTIN.get(capability(out["arch"]))
        if known is not None:
            out["max_shared_memory_per_block_optin"] = known
    return out


def _non_negative(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TargetError(f"target {KIND}: {key} must be an int >= 0, got {value!r}")
    return value


def _positive(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise TargetError(f"target {KIND}: {key} must be an int > 0, got {value!r}")
    return value


def _device_status(index: int) -> Any:
    """The driver's DeviceInfo for `index`, or a DriverUnavailable saying why there is none."""
    from tilecraft.execution.cuda_driver.driver import device_status

    return device_status(index)


def _require_device(index: int) -> Any:
    status = _device_status(index)
    if isinstance(status, Exception):
        raise TargetError(
            f"target {KIND} names no arch and it cannot be read from CUDA device {index}: {status.reason}; "
            f"name the arch, e.g. '{KIND} -arch=sm_90a' (fix for the device: {status.fix})"
        )
    return status


MIN_CAPABILITY = (8, 0)  # cp.async, bf16, ldmatrix
SM90 = (9, 0)  # TMA, mbarrier.try_wait.parity, thread-block clusters, stmatrix
WGMMA_ARCH = "sm_90a"
# "Maximum amount of local memory per thread: 512 KB" for every compute capability (CUDA C++ Programming
# Guide, Technical Specifications). Fragments live in registers and spill there; past it a launch fails.
LOCAL_MEMORY_PER_THREAD = 512 * 1024
SHARED_MEMORY = "resource:shared-memory"  # the limit of a kernel over the shared-memory budget (declared)
HALF_TYPES = ("float16", "bfloat16")
FLOAT8_TYPES = ("float8_e4m3fn", "float8_e5m2")
MMA_SYNC = MatrixInstruction("mma.sync", (16, 8, 16), HALF_TYPES, ("float32",))
WGMMA = (
    MatrixInstruction("wgmma", (64, 256, 16), HALF_TYPES, ("float32",)),
    MatrixInstruction("wgmma", (64, 256, 32), FLOAT8_TYPES, ("float32",)),
)


def capabilities(target: Target) -> Capabilities:
    """What the target's arch has; an arch before sm_80 is refused as a whole."""
    arch = target.attr("arch")
    cc = capability(arch) if arch is not None else None
    refused = None
    if cc is not None and cc < MIN_CAPABILITY:
        refused = Lack(f"the CUDA backend needs sm_80 or newer (cp.async, bf16, ldmatrix); target arch is {arch}",
                       "use a target with -arch=sm_80 or newer")  # fmt: skip
    sm90 = cc is not None and cc >= SM90
    mbarriers = True if sm90 else None
    if cc is not None and not sm90:
        mbarriers = Lack(f"T.alloc_barrier needs sm_90 or newer (mbarrier.try_wait.parity); target arch is {arch}",
                         "use a target with -arch=sm_90a, or hand tiles between thread groups through shared "
                         "memory and T.sync_threads()")  # fmt: skip
    return Capabilities(
        refused=refused,
        thread_group=WARP_SIZE,
        max_threads=Limit(MAX_THREADS_PER_BLOCK, f"a CUDA block has at most {MAX_THREADS_PER_BLOCK} threads"),
        shared_memory=Memory(target.attr("max_shared_memory_per_block_optin"), "shared memory", SHARED_ALIGN,
                             key=SHARED_MEMORY),
        private_memory=Memory(LOCAL_MEMORY_PER_THREAD, "registers and local memory",
                              fix="use smaller tiles or more threads; a CUDA thread has at most 512 KiB of local "
                              "memory, and anything past its 255 registers spills there"),  # fmt: skip
        async_copies=("cp.async", "tma") if sm90 else ("cp.async",),
        matrix=(MMA_SYNC, *WGMMA) if arch == WGMMA_ARCH else (MMA_SYNC,),
        mbarriers=mbarriers,
        clusters=sm90,
        print=True,
        imported_source=True,
        **EVERY_DTYPE,
    )  # fmt: skip


def detect() -> Target | str:
    """Device 0 through the CUDA driver, or why there is none."""
    status = _device_status(0)
    if isinstance(status, Exception):
        return status.reason
    return Target.parse({"kind": KIND, "device": 0})


CUDA_TARGET_KIND = register_target_kind(
    TargetKind(
        KIND,
        aliases=ALIASES,
        attributes=ATTRIBUTES,
        normalize=normalize,
        detect=detect,
        detect_priority=10,
        capabilities=capabilities,
        doc="an NVIDIA GPU: blocks of threads over SMs, named by arch (sm_80, sm_90a, sm_100a)",
        examples=(
            "cuda -arch=sm_90a",
            "cuda -arch=sm_80 -sm_count=108",
            "nvidia -arch=90a",
            {"kind": "cuda", "arch": "compute_100a", "device": 1},
            {"kind": "cuda", "arch": 89},
        ),
    )
)
