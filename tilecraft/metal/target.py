"""The Metal target kind `metal`: an Apple GPU, named by its GPU family.

Attributes (all canonical after normalization):

* `family`: the Apple GPU family, `apple6` to `apple9` (A13 to A17 / M3 and later). It decides the
  instructions: `simdgroup_matrix` multiply-accumulate and `atomic_float` in device memory from
  `apple7` (Metal 3). On macOS it is read from the default device when not given; elsewhere it must be
  given (`metal -family=apple8`), since there is no device to ask.
* `threadgroup_memory`: bytes of threadgroup memory a threadgroup may use (Apple GPUs: 32 KiB).
* `max_threads`: threads per threadgroup (Apple GPUs: 1024).

The SIMD-group width (32 on every Apple GPU) is a fact of the backend's `SimtTarget`, not an attribute.
`capabilities(target)` states what the family has as the record tilecraft/backend/capabilities.py
describes: no float64, 32-bit atomics, no printf, simdgroup_matrix from apple7, and the attributes' limits.
`"auto"` never picks this kind (`auto=False`): name it.
"""

from __future__ import annotations

from typing import Any

from tilecraft.backend.capabilities import (
    ATOMIC_DTYPES_32BIT,
    EVERY_DTYPE,
    Atomics,
    Capabilities,
    Lack,
    Limit,
    MatrixInstruction,
    Memory,
    no_mbarriers,
)
from tilecraft.backend.errors import TargetError
from tilecraft.backend.target import Target
from tilecraft.backend.target_kind import TargetKind, register_target_kind
from tilecraft.metal.simt import SIMD_WIDTH
from tilecraft.transform.narrow_dtypes import narrow_lack

KIND = "metal"
FAMILIES = ("apple6", "apple7", "apple8", "apple9")
SIMDGROUP_MATRIX_FAMILY = 7  # simdgroup_matrix<T, 8, 8> and its multiply-accumulate
ATOMIC_FLOAT_FAMILY = 7  # atomic_float (device memory only), Metal 3
THREADGROUP_MEMORY = 32 * 1024
MAX_THREADS = 1024
ATTRIBUTES = ("family", "threadgroup_memory", "max_threads")


def family_number(target: Target) -> int:
    """6 for apple6 ... 9 for apple9."""
    return int(str(target.attr("family"))[len("apple") :])


def normalize(attrs: dict[str, Any]) -> dict[str, Any]:
    """Canonical attributes; the family read from the device when it is not given; idempotent."""
    family = attrs.get("family")
    if family is None:
        family = _device_family()
    return {
        "family": _family(family),
        "threadgroup_memory": _limit(
            attrs.get("threadgroup_memory", THREADGROUP_MEMORY), "threadgroup_memory", THREADGROUP_MEMORY
        ),  # fmt: skip
        "max_threads": _limit(attrs.get("max_threads", MAX_THREADS), "max_threads", MAX_THREADS),
    }


def _family(value: Any) -> str:
    text = str(value).lower()
    if text.isdigit():
        text = "apple" + text
    if text not in FAMILIES:
        raise TargetError(f"target {KIND}: family must be one of {', '.join(FAMILIES)}, got {value!r}")
    return text


def _limit(value: Any, key: str, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= most:
        raise TargetError(f"target {KIND}: {key} must be an int in 1..{most}, got {value!r}")
    return value


def _device_family() -> str:
    """The default device's family; TargetError saying to name one when there is no device."""
    from tilecraft.execution.metal.device import MetalUnavailable, device_family

    try:
        return device_family()
    except MetalUnavailable as why:
        raise TargetError(
            f"target {KIND}: no family given and none can be read here ({why.reason}); name the Apple GPU "
            f"family, e.g. 'metal -family=apple8' (one of {', '.join(FAMILIES)})"
        ) from None


# The limits the capabilities report (LoweringError.unsupported), declared in the manifest.
FLOAT64 = "dtype:float64"
INT64_ATOMICS = "feature:int64-atomics"
PRINT = "feature:print"
THREADGROUP_SIZE = "resource:threadgroup-size"
THREADGROUP_MEMORY_KEY = "resource:threadgroup-memory"
# Metal does not publish a per-thread limit; past this a kernel spills far beyond what Apple GPUs keep
# on chip, and the Metal compiler refuses much larger private arrays.
THREAD_MEMORY = 64 * 1024
NO_PRINTF = Lack("MSL has no printf", "print on another target (cpu, cuda, opencl), or copy the values to an output "
                 "buffer", PRINT)  # fmt: skip
SIMDGROUP_MATRIX = MatrixInstruction("simdgroup_matrix", (8, 8, 8), ("float32", "float16"), ("float32",))
# What to do with a kernel of 4-bit or microscaling dtypes (transform/narrow_dtypes.py).
NARROW_HINT = (
    "convert the data to int8, float16 or float32 on the host, or run the kernel on a target that has these "
    "dtypes (cpu, cuda, opencl)"
)


def capabilities(target: Target) -> Capabilities:
    """What Metal and the target's family have."""
    threads = target.attr("max_threads")
    return Capabilities(
        thread_group=SIMD_WIDTH,
        max_threads=Limit(threads, f"a Metal threadgroup has at most {threads}", THREADGROUP_SIZE),
        shared_memory=Memory(target.attr("threadgroup_memory"), "threadgroup memory", 16, key=THREADGROUP_MEMORY_KEY),
        private_memory=Memory(THREAD_MEMORY, "thread memory", fix="use smaller tiles or more threads per threadgroup"),
        matrix=(SIMDGROUP_MATRIX,) if family_number(target) >= SIMDGROUP_MATRIX_FAMILY else (),
        mbarriers=no_mbarriers("the Metal target"),
        **EVERY_DTYPE | {
            "float64": Lack("Metal has no double precision",
                            "use float32 (or run float64 kernels on the cpu or cuda target)", FLOAT64),
            "narrow": narrow_lack(target, NARROW_HINT),
        },
        atomics=Atomics(dtypes=ATOMIC_DTYPES_32BIT, lack=Lack(
            "Metal has 32-bit atomics only (atomic_int, atomic_uint; atomic_float in device memory from apple7)",
            "accumulate in a float32 or int32 buffer", INT64_ATOMICS)),
        print=NO_PRINTF,
    )  # fmt: skip


def detect() -> Target | str:
    """The default Metal device (macOS), or why there is none."""
    from tilecraft.execution.metal.device import MetalUnavailable, device_family

    try:
        return Target.parse({"kind": KIND, "family": device_family()})
    except MetalUnavailable as why:
        return why.reason


METAL_TARGET_KIND = register_target_kind(
    TargetKind(
        KIND,
        attributes=ATTRIBUTES,
        normalize=normalize,
        detect=detect,
        detect_priority=20,
        capabilities=capabilities,
        doc="an Apple GPU through Metal (SIMD groups of 32, simdgroup_matrix from apple7), named by its family",
        examples=(
            "metal -family=apple7",
            "metal -family=apple9",
            "metal -family=apple6",
            {"kind": "metal", "family": "apple8", "threadgroup_memory": 16384},
        ),
        auto=False,
    )
)
