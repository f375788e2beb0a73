"""The CPU target kind `c` (alias `cpu`): attributes name the host's vector ISA.

Its capabilities (tilecraft/backend/capabilities.py): a block runs as one thread; every dtype, atomic
update, mbarrier (emulated) and T.print; no matrix instructions or asynchronous copies. A block's scratch
is bounded by a pass config, not by the target (cpu/storage.py).
"""

from __future__ import annotations

import platform
from functools import cache

from tilecraft.backend.capabilities import EVERY_DTYPE, Capabilities, Lack
from tilecraft.backend.errors import TargetError
from tilecraft.backend.target import Target
from tilecraft.backend.target_kind import TargetKind, register_target_kind

KIND = "c"
ISAS = ("avx512", "avx2", "sse", "neon", "generic")
# Each processor family's ISAs, widest first: a host runs its own ISA and every narrower one.
FAMILIES = (("avx512", "avx2", "sse", "generic"), ("neon", "generic"), ("generic",))


@cache
def host_isa() -> str:
    """The widest vector ISA the host offers (read from /proc/cpuinfo on Linux)."""
    machine = platform.machine().lower()
    if machine in ("arm64", "aarch64"):
        return "neon"
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
    except OSError:
        flags = ""
    for isa, flag in (("avx512", " avx512f"), ("avx2", " avx2"), ("sse", " sse2")):
        if flag in flags:
            return isa
    return "sse" if machine in ("x86_64", "amd64") else "generic"


def host_isas() -> tuple[str, ...]:
    """The ISAs a target for this host may name: the host's widest and the narrower ones of its family."""
    widest = host_isa()
    family = next(f for f in FAMILIES if widest in f)
    return family[family.index(widest) :]


def normalize(attrs: dict) -> dict:
    """Fill `isa` from the host and check that this host has it; idempotent."""
    isa = attrs.get("isa") or host_isa()
    if isa not in ISAS:
        raise TargetError(f"target {KIND}: unknown isa {isa!r}; valid here: {', '.join(host_isas())}")
    if isa not in host_isas():
        # The library is built for this machine (-march=native); a target naming an ISA it lacks would lie.
        raise TargetError(
            f"target {KIND}: isa {isa!r} is not available on this host ({platform.machine()}, widest: "
            f"{host_isa()}); valid here: {', '.join(host_isas())}"
        )
    return {**attrs, "isa": isa}


def gemm_panel_bytes(target: Target) -> int:
    """The width of a column panel of a gemm's B tile (`gemm-b-panels`): one cache line, 64 bytes on
    every processor the target builds for, and a multiple of each vector width tc_cpu.h uses (16, 32
    and 64 bytes), so a vector never straddles two panels."""
    return 64


def capabilities(target: Target) -> Capabilities:
    """Everything the language has, run by one thread per block."""
    return Capabilities(
        thread_group=1,
        mbarriers=True,
        print=True,
        imported_source=Lack(
            "the CPU target compiles C for the host, which cannot hold T.import_source's CUDA device code "
            "(__device__ functions, inline PTX such as lop3)",
            "run the kernel on a CUDA target, or write what the imported function computes in T.* "
            "(TileLang's dequantize examples have such a path: fast_decoding=False / fast_dequant=False)",
        ),
        **EVERY_DTYPE,
    )


def detect() -> Target:
    """The host processor is always there."""
    return Target.parse({"kind": KIND})


CPU_TARGET_KIND = register_target_kind(
    TargetKind(
        KIND,
        aliases=("cpu",),
        attributes=("isa",),
        normalize=normalize,
        detect=detect,
        detect_priority=99,
        capabilities=capabilities,
        doc="the host processor: a block runs as one thread, blocks run in parallel (OpenMP)",
        examples=("c", "cpu", "c -isa=generic", {"kind": "cpu"}),
    )
)
