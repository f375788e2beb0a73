"""The HIP target kind `hip` (alias `rocm`): an AMD GPU, named by its LLVM processor (`gfx942`).

Attributes (all canonical after normalization):

* `arch`: the processor: `gfx90a` (CDNA2, MI200), `gfx942` (CDNA3, MI300), `gfx950` (CDNA4, MI350; needs
  clang 20 or newer to compile), `gfx1100` (RDNA3). Accepted spellings: `gfx942`, `942`, `-arch=gfx942`,
  `--offload-arch=gfx942`.
* `device`: the device index (default 0); kernels are loaded on that device.
* `wavefront`: lanes of one wavefront: 64 on CDNA (the only width it has), 32 on RDNA (the width HIP
  compiles RDNA for by default).
* `lds`: bytes of LDS (shared memory) one work-group may use: 64 KiB on gfx90a/gfx942/gfx1100, 160 KiB on
  gfx950 (AMD's CDNA ISA guides). A smaller value may be given for a device that reports less.

A target without `arch` is read from the device, through the amdgpu kernel driver's topology
(`/sys/class/kfd/kfd/topology/nodes/*/properties`, `gfx_target_version`); a target that names its
arch is never completed from hardware, so it means the same on every machine. Everything the backend
decides per arch (wavefront, MFMA, fp8) comes from ARCHS, and `capabilities(target)` states it as the
record tilecraft/backend/capabilities.py describes, with what the HIP backend lacks without ROCm's
device libraries (float64 transcendentals, T.print) and the dtypes it does not lower.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tilecraft.backend.capabilities import (
    EVERY_DTYPE,
    Capabilities,
    Functions,
    Lack,
    Limit,
    MatrixInstruction,
    Memory,
    no_mbarriers,
)
from tilecraft.backend.errors import TargetError
from tilecraft.backend.target import Target
from tilecraft.backend.target_kind import TargetKind, register_target_kind
from tilecraft.hip.intrinsics.simt import MAX_THREADS_PER_BLOCK
from tilecraft.transform.narrow_dtypes import narrow_lack

KIND = "hip"
ALIASES = ("rocm",)
ATTRIBUTES = ("arch", "device", "wavefront", "lds")
KFD_TOPOLOGY = Path("/sys/class/kfd/kfd/topology/nodes")


# The MFMA forms the backend emits: 16x16x16 of float16 or bfloat16 (CDNA2 and newer), 16x16x32 of
# float8 (e4m3 / e5m2 in any pairing; CDNA3 and newer); both into float32.
MFMA_HALF = MatrixInstruction("mfma", (16, 16, 16), ("float16", "bfloat16"), ("float32",))
MFMA_FP8 = MatrixInstruction("mfma", (16, 16, 32), ("float8_e4m3fn", "float8_e5m2"), ("float32",))


@dataclass(frozen=True)
class ArchInfo:
    """What tilecraft uses of one AMD processor: its family, wavefront width, LDS per work-group, and
    the MFMA forms the backend emits on it (none on RDNA, whose WMMA it does not use)."""

    family: str
    wavefront: int
    lds: int
    mfma: tuple[MatrixInstruction, ...]
    # The fp8 encodings its fp8 MFMA reads: "fnuz" (gfx942: bias 8/16, no infinities, one NaN 0x80) or
    # "ocp" (gfx950: the e4m3fn / e5m2 formats tilecraft's float8 dtypes are).
    fp8_encoding: str = ""


ARCHS: dict[str, ArchInfo] = {
    "gfx90a": ArchInfo("CDNA2", 64, 64 * 1024, (MFMA_HALF,)),
    "gfx942": ArchInfo("CDNA3", 64, 64 * 1024, (MFMA_HALF, MFMA_FP8), fp8_encoding="fnuz"),
    "gfx950": ArchInfo("CDNA4", 64, 160 * 1024, (MFMA_HALF, MFMA_FP8), fp8_encoding="ocp"),
    "gfx1100": ArchInfo("RDNA3", 32, 64 * 1024, ()),
}
_ARCH = re.compile(r"(?:-{0,2}(?:offload-)?arch=)?(?:gfx)?([0-9a-f]{3,4})")


def parse_arch(value: Any) -> str:
    """The canonical `gfxNNN` spelling of an arch; TargetError listing the known ones."""
    text = str(value).strip().lower() if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    match = _ARCH.fullmatch(text)
    arch = f"gfx{match.group(1)}" if match else None
    if arch not in ARCHS:
        raise TargetError(
            f"target {KIND}: unknown arch {value!r}; known: {', '.join(ARCHS)} (also written 942, "
            "-arch=gfx942, --offload-arch=gfx942)"
        )
    return arch


def arch_info(target: Target) -> ArchInfo:
    return ARCHS[target.attr("arch")]


def normalize(attrs: dict[str, Any]) -> dict[str, Any]:
    """Canonical attributes: `arch` (read from the device when not given), `device` (default 0), and the
    arch's wavefront and LDS size unless given; idempotent."""
    device = _int(attrs.get("device", 0), "device", 0)
    arch = parse_arch(attrs["arch"]) if attrs.get("arch") is not None else _device_arch(device)
    info = ARCHS[arch]
    wavefront = _int(attrs.get("wavefront", info.wavefront), "wavefront", 1)
    if wavefront != info.wavefront:
        raise TargetError(
            f"target {KIND}: {arch} ({info.family}) runs wavefronts of {info.wavefront} lanes here, not "
            f"{wavefront}; leave -wavefront out"
        )
    lds = _int(attrs.get("lds", info.lds), "lds", 1)
    if lds > info.lds:
        raise TargetError(f"target {KIND}: {arch} has {info.lds} bytes of LDS per work-group, not {lds}")
    return {"arch": arch, "device": device, "wavefront": wavefront, "lds": lds}


def _int(value: Any, key: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise TargetError(f"target {KIND}: {key} must be an int >= {low}, got {value!r}")
    return value


def gpu_archs(topology: Path | None = None) -> list[str]:
    """The processors of the GPUs the amdgpu kernel driver lists, in device order (empty without one)."""
    root = KFD_TOPOLOGY if topology is None else topology
    found = []
    try:
        nodes = sorted((p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    except OSError:
        return []
    for node in nodes:
        version = _target_version(node / "properties")
        if version:
            found.append(arch_of_version(version))
    return found


def _target_version(path: Path) -> int:
    try:
        for line in path.read_text().splitlines():
            key, _, value = line.partition(" ")
            if key == "gfx_target_version":
                return int(value)
    except (OSError, ValueError):
        return 0
    return 0


def arch_of_version(version: int) -> str:
    """KFD's gfx_target_version (major * 10000 + minor * 100 + stepping) as the processor name:
    90402 -> gfx942, 90010 -> gfx90a, 110000 -> gfx1100."""
    major, minor, stepping = version // 10000, version // 100 % 100, version % 100
    return f"gfx{major}{minor:x}{stepping:x}"


def _device_arch(device: int) -> str:
    archs = gpu_archs()
    if device >= len(archs):
        raise TargetError(
            f"target {KIND} names no arch and there is no AMD GPU {device} to read it from "
            f"({len(archs)} found through {KFD_TOPOLOGY}); name the arch, e.g. '{KIND} -arch=gfx942'"
        )
    arch = archs[device]
    if arch not in ARCHS:
        raise TargetError(
            f"AMD GPU {device} is a {arch}, which the HIP backend does not know (known: {', '.join(ARCHS)})"
        )
    return arch


# The limits the capabilities report (LoweringError.unsupported), declared in the manifest.
LDS = "resource:lds"
FLOAT64_MATH = "feature:float64-math"
PRINT = "feature:print"
# clang expands these float64 functions for AMDGPU without ocml; the others (exp, log, sin, ...) would
# be calls into a device library the code object does not link.
FLOAT64_MATH_OK = ("sqrt", "floor", "ceil", "round", "abs", "rsqrt")
# A scratch (private) segment of a work-item: the most AMD's HSA runtime gives one (its
# max_scratch_per_work_item on CDNA is 0x3ffc0 bytes); fragments spill there past 512 VGPRs.
PRIVATE_MEMORY_PER_WORK_ITEM = 0x3FFC0
# What to do with a kernel of 4-bit or microscaling dtypes (transform/narrow_dtypes.py).
NARROW_HINT = (
    "convert the data to int8, float16 or float32 on the host, or run the kernel on a target that has these "
    "dtypes (cpu, cuda, opencl)"
)


def capabilities(target: Target) -> Capabilities:
    """What the arch has, and what the generated code compiles to without ROCm's device libraries."""
    info = ARCHS.get(target.attr("arch"))
    return Capabilities(
        thread_group=target.attr("wavefront"),
        max_threads=Limit(MAX_THREADS_PER_BLOCK, f"an AMD work-group has at most {MAX_THREADS_PER_BLOCK} work-items"),
        shared_memory=Memory(target.attr("lds"), "LDS (shared memory)", 128, key=LDS),
        private_memory=Memory(PRIVATE_MEMORY_PER_WORK_ITEM, "private memory",
                              fix="use smaller tiles or more work-items; registers past 512 VGPRs spill to scratch"),
        matrix=info.mfma if info is not None else (),
        mbarriers=no_mbarriers("the HIP target"),
        **EVERY_DTYPE | {"narrow": narrow_lack(target, NARROW_HINT)},
        float64_math=Functions(FLOAT64_MATH_OK, Lack(
            f"without ROCm's ocml device library clang has only {', '.join(FLOAT64_MATH_OK)} of float64 for AMD GPUs",
            "compute it in float32 (cast the operand), or use another target", FLOAT64_MATH)),
        print=Lack("device printf needs ROCm's hostcall buffer, which this backend does not set up",
                   "copy the values to an output buffer and print them on the host", PRINT),
    )  # fmt: skip


def detect() -> Target | str:
    """AMD GPU 0 through the amdgpu driver's topology, or why there is none."""
    archs = gpu_archs()
    if not archs:
        return f"no AMD GPU: the amdgpu kernel driver lists none under {KFD_TOPOLOGY}"
    if archs[0] not in ARCHS:
        return f"AMD GPU 0 is a {archs[0]}, which the HIP backend does not know (known: {', '.join(ARCHS)})"
    return Target.parse({"kind": KIND, "arch": archs[0]})


HIP_TARGET_KIND = register_target_kind(
    TargetKind(
        KIND,
        aliases=ALIASES,
        attributes=ATTRIBUTES,
        normalize=normalize,
        detect=detect,
        detect_priority=12,
        capabilities=capabilities,
        doc="an AMD GPU through HIP: work-groups of 64-lane wavefronts (CDNA) and MFMA, named by arch (gfx942)",
        examples=(
            "hip -arch=gfx942",
            "hip -arch=gfx90a",
            "rocm -arch=942",
            {"kind": "hip", "arch": "gfx942", "device": 0},
        ),
    )
)
