"""The `hip` target kind (alias `rocm`): arch spellings, per-arch wavefront and LDS, errors that list the
choices, and reading the arch from the amdgpu driver's topology."""

from __future__ import annotations

import pytest

from tilecraft.backend import Target, create_backend_context
from tilecraft.backend.errors import TargetError
from tilecraft.hip import target as hip_target


@pytest.mark.parametrize("text", ["hip -arch=gfx942", "rocm -arch=942", "hip -arch=GFX942"])
def test_spellings_of_an_arch_are_one_target(text):
    assert str(Target.parse(text)) == "hip -arch=gfx942 -device=0 -lds=65536 -wavefront=64"


def test_each_arch_brings_its_wavefront_and_lds():
    assert Target.parse("hip -arch=gfx90a").attr("lds") == 64 * 1024
    assert Target.parse("hip -arch=gfx950").attr("lds") == 160 * 1024
    assert Target.parse("hip -arch=gfx1100").attr("wavefront") == 32


def test_normalizing_is_idempotent():
    once = Target.parse("hip -arch=gfx942 -lds=32768 -device=1")
    assert Target.parse(str(once)) == once


@pytest.mark.parametrize(
    "text, message",
    [
        ("hip -arch=gfx908", "unknown arch 'gfx908'; known: gfx90a, gfx942, gfx950, gfx1100"),
        ("hip -arch=gfx942 -wavefront=32", "runs wavefronts of 64 lanes here, not 32"),
        ("hip -arch=gfx942 -lds=100000", "has 65536 bytes of LDS per work-group, not 100000"),
        ("hip -arch=gfx942 -device=-1", "device must be an int >= 0"),
    ],
)
def test_impossible_targets_are_refused_with_the_choices(text, message):
    with pytest.raises(TargetError, match=message):
        Target.parse(text)


def test_a_target_without_arch_reads_the_device_or_says_to_name_one(monkeypatch, tmp_path):
    monkeypatch.setattr(hip_target, "KFD_TOPOLOGY", tmp_path / "missing")
    with pytest.raises(TargetError, match="name the arch, e.g. 'hip -arch=gfx942'"):
        Target.parse("hip")


def kfd_nodes(root, versions):
    for index, version in enumerate(versions):
        node = root / str(index)
        node.mkdir(parents=True)
        (node / "properties").write_text(f"cpu_cores_count 0\ngfx_target_version {version}\nsimd_count 4\n")


def test_the_arch_comes_from_the_kfd_topology(monkeypatch, tmp_path):
    kfd_nodes(tmp_path, [0, 90010, 90402])  # node 0 is the CPU (version 0)
    monkeypatch.setattr(hip_target, "KFD_TOPOLOGY", tmp_path)
    assert hip_target.gpu_archs() == ["gfx90a", "gfx942"]
    assert Target.parse("hip -device=1").attr("arch") == "gfx942"
    assert str(hip_target.detect()) == "hip -arch=gfx90a -device=0 -lds=65536 -wavefront=64"


def test_versions_name_processors():
    assert [hip_target.arch_of_version(v) for v in (90010, 90402, 90500, 110000)] == [
        "gfx90a", "gfx942", "gfx950", "gfx1100"]  # fmt: skip


def test_without_a_gpu_detection_says_why(monkeypatch, tmp_path):
    monkeypatch.setattr(hip_target, "KFD_TOPOLOGY", tmp_path)
    assert "no AMD GPU" in hip_target.detect()


def test_the_context_names_the_hip_execution_backend():
    ctx = create_backend_context("rocm -arch=gfx90a", require_available=False)
    assert ctx.backend.name == "hip" and ctx.execution.name == "hip"


def test_gfx950_fails_to_compile_with_clang_19_saying_what_is_needed(clang):
    import re

    from tilecraft.hip.toolchain import clang_version, compile_code_object

    if int(re.search(r"version (\d+)", clang_version(clang)).group(1)) >= 20:
        pytest.skip(f"{clang_version(clang)} knows gfx950")
    from tilecraft.errors import ToolchainError

    with pytest.raises(ToolchainError, match="does not know gfx950; use a newer clang"):
        compile_code_object('extern "C" __attribute__((global)) void k() {}', "gfx950")
