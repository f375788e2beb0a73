"""The `Capabilities` record: what each built-in target has (a table), that every limit key a record can
report is declared by its backend, how the record checks itself, and how a kind's record is found."""

from __future__ import annotations

import pytest

from tilecraft.backend.capabilities import (
    Atomics,
    Capabilities,
    Functions,
    Lack,
    Limit,
    MatrixInstruction,
    Memory,
    capabilities_of,
)
from tilecraft.backend.errors import BackendError, TargetError
from tilecraft.backend.registry import backend_for, isolated_registry, registered_backends
from tilecraft.backend.target import Target
from tilecraft.backend.target_kind import TargetKind, register_target_kind, registered_target_kinds


def _word(value) -> str:
    if isinstance(value, Lack):
        return f"no ({value.key})" if value.key else "no"
    return {True: "yes", None: "unknown"}[value]


SUPPORTS = ("mbarriers", "float64", "int64", "float16", "bfloat16", "float8", "narrow", "wide_shared", "print")


def facts(caps: Capabilities) -> dict:
    """The record in plain values: numbers, names, and yes / no (limit key) / unknown."""
    return {
        "refused": caps.refused is not None,
        "thread_group": caps.thread_group,
        "max_threads": caps.max_threads.most,
        "max_buffers": caps.max_buffers.most,
        "shared_memory": caps.shared_memory.bytes,
        "private_memory": caps.private_memory.bytes,
        "async_copies": caps.async_copies,
        "matrix": tuple(f"{m.name} {'x'.join(map(str, m.shape))}" for m in caps.matrix),
        "clusters": caps.clusters,
        **{name: _word(getattr(caps, name)) for name in SUPPORTS},
        "float64_math": caps.float64_math.allowed,
        "atomics": (caps.atomics.dtypes, caps.atomics.scopes),
    }


# A target that has everything the language has and states no limit (the CPU).
EVERYTHING = {
    "refused": False, "thread_group": 1, "max_threads": None, "max_buffers": None, "shared_memory": None,
    "private_memory": None, "async_copies": (), "matrix": (), "clusters": False,
    **dict.fromkeys(SUPPORTS, "yes"), "float64_math": None, "atomics": (None, None),
}  # fmt: skip
CUDA = {**EVERYTHING, "thread_group": 32, "max_threads": 1024, "private_memory": 512 * 1024}
HIP = {**EVERYTHING, "thread_group": 64, "max_threads": 1024, "shared_memory": 64 * 1024,
       "private_memory": 0x3FFC0, "matrix": ("mfma 16x16x16", "mfma 16x16x32"), "mbarriers": "no",
       "narrow": "no (dtype:4-bit-and-microscaling)", "print": "no (feature:print)",
       "float64_math": ("sqrt", "floor", "ceil", "round", "abs", "rsqrt")}  # fmt: skip
ATOMICS_32BIT = (("float16", "bfloat16", "float32", "int32", "uint32"), None)
OPENCL = {**EVERYTHING, "thread_group": None, "max_threads": 1024, "shared_memory": 65536,
          "private_memory": 512 * 1024, "mbarriers": "no"}  # fmt: skip
METAL = {**EVERYTHING, "thread_group": 32, "max_threads": 1024, "shared_memory": 32 * 1024,
         "private_memory": 64 * 1024, "matrix": ("simdgroup_matrix 8x8x8",), "mbarriers": "no",
         "float64": "no (dtype:float64)", "narrow": "no (dtype:4-bit-and-microscaling)", "print": "no (feature:print)",
         "atomics": ATOMICS_32BIT}  # fmt: skip
WEBGPU = {**EVERYTHING, "thread_group": None, "max_threads": 1024, "max_buffers": 32, "shared_memory": 65536,
          "private_memory": 64 * 1024, "mbarriers": "no", "float8": "no (dtype:float8)",
          "narrow": "no (dtype:4-bit-and-microscaling)", "print": "no (feature:print)",
          "float64_math": ("abs", "floor", "ceil", "round", "sqrt"),
          "atomics": (("int32", "uint32", "float32"), ("global",))}  # fmt: skip
WEBGPU_LIMITS = "-max_workgroups=65535 -max_binding_size=134217728"

TABLE = {
    "cpu": EVERYTHING,
    "cuda -arch=sm_75": {**CUDA, "refused": True, "shared_memory": 64 * 1024, "async_copies": ("cp.async",),
                         "matrix": ("mma.sync 16x8x16",), "mbarriers": "no"},
    "cuda -arch=sm_80": {**CUDA, "shared_memory": 163 * 1024, "async_copies": ("cp.async",),
                         "matrix": ("mma.sync 16x8x16",), "mbarriers": "no"},
    "cuda -arch=sm_86": {**CUDA, "shared_memory": 99 * 1024, "async_copies": ("cp.async",),
                         "matrix": ("mma.sync 16x8x16",), "mbarriers": "no"},
    "cuda -arch=sm_90": {**CUDA, "shared_memory": 227 * 1024, "async_copies": ("cp.async", "tma"),
                         "matrix": ("mma.sync 16x8x16",), "clusters": True},
    "cuda -arch=sm_90a": {**CUDA, "shared_memory": 227 * 1024, "async_copies": ("cp.async", "tma"),
                          "matrix": ("mma.sync 16x8x16", "wgmma 64x256x16", "wgmma 64x256x32"), "clusters": True},
    "cuda -arch=sm_100a -max_shared_memory_per_block_optin=1024": {
        **CUDA, "shared_memory": 1024, "async_copies": ("cp.async", "tma"), "matrix": ("mma.sync 16x8x16",),
        "clusters": True},
    "hip -arch=gfx942": HIP,
    "hip -arch=gfx950": {**HIP, "shared_memory": 160 * 1024},
    "hip -arch=gfx90a": {**HIP, "matrix": ("mfma 16x16x16",)},
    "hip -arch=gfx1100 -lds=32768": {**HIP, "thread_group": 32, "shared_memory": 32768, "matrix": ()},
    "opencl -fp16=false -fp64=true -int64_atomics=true -local_mem=65536 -max_work_group_size=1024": OPENCL,
    "opencl -fp16=true -fp64=false -int64_atomics=false -local_mem=16384 -max_work_group_size=256": {
        **OPENCL, "max_threads": 256, "shared_memory": 16384, "float64": "no (dtype:float64)",
        "atomics": ATOMICS_32BIT},
    "metal -family=apple6": {**METAL, "matrix": ()},
    "metal -family=apple7": METAL,
    "metal -family=apple9 -max_threads=256 -threadgroup_memory=16384": {
        **METAL, "max_threads": 256, "shared_memory": 16384},
    f"webgpu -f16=true -f64=true -int64=true -float32_atomics=true -subgroups=false -max_workgroup_size=1024 "
    f"-workgroup_memory=65536 -max_storage_buffers=32 {WEBGPU_LIMITS}": WEBGPU,
    f"webgpu -f16=false -f64=false -int64=false -float32_atomics=false -subgroups=true -subgroup_size=16 "
    f"-max_workgroup_size=256 -workgroup_memory=16384 -max_storage_buffers=8 {WEBGPU_LIMITS}": {
        **WEBGPU, "thread_group": 16, "max_threads": 256, "max_buffers": 8, "shared_memory": 16384,
        "float64": "no (dtype:float64)", "int64": "no (feature:int64)",
        "wide_shared": "no (feature:64-bit-workgroup-memory)"},
}  # fmt: skip


@pytest.mark.parametrize("spelling", TABLE)
def test_each_built_in_target_has_its_record(spelling):
    assert facts(Target.parse(spelling).capabilities) == TABLE[spelling]


def test_an_unset_device_attribute_is_unknown_and_refuses_nothing():
    """An OpenCL target naming no capability, on a machine where none is read: float64, atomics and the
    limits are unknown (None), not refused."""
    caps = Target("opencl", (("device", 0), ("platform", 0))).capabilities
    assert caps.float64 is None and caps.atomics == Atomics() and caps.max_threads.most is None
    assert caps.shared_memory.bytes is None and not caps.limit_keys()


def test_every_built_in_kind_declares_its_capabilities():
    assert {k.name for k in registered_target_kinds() if k.capabilities is None} == set()


@pytest.mark.parametrize("spelling", TABLE)
def test_every_limit_a_record_reports_is_declared_by_its_backend(spelling):
    """The conformance kit counts a refusal as a skip only for a limit the manifest declares, so every key
    a target's record can report (for the table's targets and every kind's examples) is declared."""
    target = Target.parse(spelling)
    assert target.capabilities.limit_keys() <= set(backend_for(target).unsupported)


def test_every_kind_s_examples_report_only_declared_limits():
    for manifest in registered_backends():
        for kind in manifest.target_kinds:
            for example in next(k for k in registered_target_kinds() if k.name == kind).examples:
                target = Target.parse(example)
                assert target.capabilities.limit_keys() <= set(manifest.unsupported), target


def test_the_record_reads_instructions_and_dtypes():
    caps = Target.parse("cuda -arch=sm_90a").capabilities
    assert caps.matrix_instruction("wgmma", "float8_e5m2").shape == (64, 256, 32)
    assert caps.matrix_instruction("mfma") is None and caps.matrix_instruction("mma.sync", "float32") is None
    webgpu = Target.parse(next(s for s in TABLE if "-subgroup_size=16" in s)).capabilities
    from tilecraft.ir import dtype as dt

    assert webgpu.dtype_support(dt.uint64).key == "feature:int64" and webgpu.dtype_support(dt.int32) is True
    assert webgpu.dtype_support(dt.float4_e2m1fn) is webgpu.narrow
    assert not webgpu.atomics.allows("add", "float32", "shared") and webgpu.atomics.allows("max", "int32", "global")


@pytest.mark.parametrize(
    "make,words",
    [
        (lambda: Lack("", "fix"), "reason must be a non-empty string"),
        (lambda: Lack("why", "fix", "float64"), "key must be None or a limit key"),
        (lambda: Limit(0, "none"), "most must be None (unknown) or an int >= 1"),
        (lambda: Limit(4), "reason must be a non-empty string"),
        (lambda: Memory(-1), "bytes must be None (unknown) or an int >= 1"),
        (lambda: MatrixInstruction("mma", (16, 8), ("float16",), ("float32",)), "shape must be (m, n, k)"),
        (lambda: Atomics(dtypes=("float32",)), "needs a Lack"),
        (lambda: Functions(("sqrt",)), "need a Lack"),
        (lambda: Capabilities(float64=False), "float64 must be True (the target has it), a Lack"),
        (lambda: Capabilities(thread_group=0), "thread_group must be None (unknown) or an int >= 1"),
        (lambda: Capabilities(matrix=("mma.sync",)), "matrix must be a tuple of MatrixInstruction"),
        (lambda: Capabilities(shared_memory=65536), "shared_memory must be a Memory"),
        (lambda: Capabilities(clusters=None), "clusters must be True or False"),
    ],
)
def test_the_record_checks_itself_when_built(make, words):
    with pytest.raises(BackendError, match=words.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_a_kind_without_capabilities_gets_a_record_that_refuses_nothing():
    with isolated_registry():
        register_target_kind(TargetKind("toybare"))
        assert capabilities_of(Target.parse("toybare")) == Capabilities()


def test_a_capabilities_function_must_return_the_record():
    with isolated_registry():
        register_target_kind(TargetKind("toywrong", capabilities=lambda target: {"float64": True}))
        with pytest.raises(BackendError, match="are a dict; the kind's capabilities function must return"):
            capabilities_of(Target.parse("toywrong"))
    with pytest.raises(TargetError, match="capabilities must be callable or None"):
        TargetKind("toyodd", capabilities="yes")
