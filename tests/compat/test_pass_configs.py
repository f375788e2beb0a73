"""`pass_configs` takes TileLang's keys: same names, same strings; honoured keys change the build."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft import PassConfigKey as K
from tilecraft.backend.context import create_backend_context
from tilecraft.errors import TilecraftError, ToolchainError
from tilecraft.jit.lower import artifact_key
from tilecraft.jit.options import BACKEND_READ, HONOURED, NO_EFFECT, PassConfigError

ROOT = Path(__file__).resolve().parents[2]
TILELANG_MIRROR = Path("/work/.mirror/tile-ai+tilelang/repo")
# The keys TileLang's examples pass, with TileLang's strings.
EXAMPLE_KEYS = {
    "TL_ENABLE_FAST_MATH": "tl.enable_fast_math",
    "TL_DISABLE_WARP_SPECIALIZED": "tl.disable_warp_specialized",
    "TL_DISABLE_TMA_LOWER": "tl.disable_tma_lower",
    "TL_DISABLE_THREAD_STORAGE_SYNC": "tl.disable_thread_storage_sync",
    "TL_PTXAS_REGISTER_USAGE_LEVEL": "tl.ptxas_register_usage_level",
    "TL_LAYOUT_VISUALIZATION_ENABLE": "tl.layout_visualization_enable",
    "TL_LAYOUT_VISUALIZATION_FORMATS": "tl.layout_visualization_formats",
    "TL_ENABLE_PTXAS_VERBOSE_OUTPUT": "tl.enable_ptxas_verbose_output",
    "TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE": "tl.enable_aggressive_shared_memory_merge",
    "TL_DISABLE_FAST_MATH": "tl.disable_fast_math",
}


def scale(n: int = 256):
    @T.prim_func
    def f(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(n // 64, threads=64) as bx:
            for i in T.Parallel(64):
                B[bx * 64 + i] = T.exp(A[bx * 64 + i]) / (A[bx * 64 + i] + 3.0)

    return f


def specials(n: int = 64):
    """A max-reduction over rows (one row is all -inf) and `x * 0`, which is NaN for infinite x."""

    @T.prim_func
    def f(A: T.Tensor((4, n), "float32"), M: T.Tensor((4,), "float32"), P: T.Tensor((4, n), "float32")):
        with T.Kernel(1, threads=64):
            a = T.alloc_fragment((4, n), "float32")
            m = T.alloc_fragment((4,), "float32")
            T.copy(A, a)
            T.reduce_max(a, m, dim=1)
            T.copy(m, M)
            for i, j in T.Parallel(4, n):
                P[i, j] = A[i, j] * 0.0

    return f


def special_inputs(n: int = 64) -> np.ndarray:
    a = np.random.default_rng(0).uniform(-2.0, 2.0, (4, n)).astype("float32")
    a[0, :] = -np.inf
    a[1, 5] = np.inf
    a[2, 7] = np.nan
    return a


# ------------------------------------------------------------------ names


def test_examples_keys_exist_with_tilelangs_strings():
    for name, value in EXAMPLE_KEYS.items():
        assert getattr(K, name) == value
        assert str(getattr(K, name)) == value and f"{getattr(K, name)}" == value


def test_the_enum_is_at_tilelangs_transform_paths():
    """`from tilelang.transform import PassConfigKey` (TileLang's autotune example) and the module TileLang
    defines it in both give tilecraft's enum."""
    from tilecraft.compat import hook

    hook.install()
    try:
        import tilelang
        import tilelang.transform.pass_config
        from tilelang.transform import PassConfigKey

        assert PassConfigKey is K is tilelang.transform.PassConfigKey
        assert tilelang.transform.pass_config.PassConfigKey is K
    finally:
        hook.uninstall()
    import tilecraft.transform

    assert tilecraft.transform.PassConfigKey is K


def test_every_key_of_tilelangs_pass_config_exists():
    """Checked against TileLang's own file where its repository is at hand."""
    if not TILELANG_MIRROR.exists():
        pytest.skip(f"TileLang's repository is not at {TILELANG_MIRROR}")
    source = subprocess.run(
        ["git", "-C", str(TILELANG_MIRROR), "show", "HEAD:tilelang/transform/pass_config.py"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    keys = dict(re.findall(r'^    ([A-Z][A-Z0-9_]+) = "([^"]+)"', source, re.M))
    assert len(keys) > 40
    assert {name: getattr(K, name, None) for name in keys} == keys


def test_every_key_is_in_exactly_one_group():
    for member in K:
        groups = [member.value in group for group in (HONOURED, BACKEND_READ, NO_EFFECT)]
        assert groups.count(True) == 1, member


def test_compat_doc_lists_every_key():
    doc = (ROOT / "docs" / "compat.md").read_text()
    missing = [m.name for m in K if f"`{m.name}`" not in doc]
    assert not missing, f"docs/compat.md does not list {missing}"


# ------------------------------------------------------------------ checking


def test_unknown_key_names_the_close_matches():
    with pytest.raises(
        PassConfigError, match="unknown pass config 'tl.enable_fast_mat'.*'tl.enable_fast_math'"
    ):
        tilecraft.lower(scale(), "c", pass_configs={"tl.enable_fast_mat": True})


def test_a_member_name_given_as_a_string_suggests_its_key():
    with pytest.raises(PassConfigError, match="'TL_DISABLE_TMA_LOWER'.*did you mean 'tl.disable_tma_lower'"):
        tilecraft.lower(scale(), "c", pass_configs={"TL_DISABLE_TMA_LOWER": True})


def test_a_key_the_backend_does_not_read_is_an_error():
    with pytest.raises(
        PassConfigError, match="'tilecraft.bounds_check' is not supported by backend 'opencl'"
    ):
        tilecraft.lower(scale(), "opencl", pass_configs={K.BOUNDS_CHECK: True})


def test_a_key_of_another_backend_names_that_backend():
    with pytest.raises(
        PassConfigError, match="'tilecraft.cuda.tma_store' is read by backend 'cuda', not by 'cpu'"
    ):
        tilecraft.lower(scale(), "c", pass_configs={"tilecraft.cuda.tma_store": False})


@pytest.mark.parametrize(
    "configs, words",
    [
        ({K.TL_ENABLE_FAST_MATH: "yes"}, "'tl.enable_fast_math' must be True or False"),
        ({K.TL_DEVICE_COMPILE_FLAGS: 3}, "'tl.device_compile_flags' must be a string or a list"),
        ({K.TL_ENABLE_FAST_MATH: True, K.TL_DISABLE_FAST_MATH: True}, "both True"),
        ({3: True}, "pass config key 3 is a int"),
        ({"tir.Simplify": True, "tirx.Simplify": True}, "'tirx.Simplify' is given twice"),
    ],
)
def test_bad_values_are_named(configs, words):
    with pytest.raises(PassConfigError, match=re.escape(words)):
        tilecraft.lower(scale(), "c", pass_configs=configs)


def test_pass_configs_must_be_a_mapping():
    with pytest.raises(PassConfigError, match="pass_configs must be a dict"):
        tilecraft.lower(scale(), "c", pass_configs=[K.TL_ENABLE_FAST_MATH])


def test_compatibility_keys_are_accepted_and_change_nothing():
    plain = tilecraft.lower(scale(), "c")
    tuned = tilecraft.lower(
        scale(),
        "c",
        pass_configs={
            K.TL_DISABLE_WARP_SPECIALIZED: True,
            K.TL_DISABLE_TMA_LOWER: True,
            "tir.disable_vectorize": True,
        },  # fmt: skip
    )
    assert tuned.source("c-source") == plain.source("c-source")


# ------------------------------------------------------------------ cache keys


def test_a_key_and_its_string_share_the_cache_entry():
    ctx = create_backend_context("c")
    func = scale()
    as_member = artifact_key(func, ctx, {K.TL_ENABLE_FAST_MATH: True}, None)
    assert artifact_key(func, ctx, {"tl.enable_fast_math": True}, None) == as_member
    assert artifact_key(func, ctx, {"tl.enable_fast_math": False}, None) != as_member
    assert artifact_key(func, ctx, None, None) != as_member


def test_fast_math_changes_the_build_key_and_the_compile_command():
    ctx = create_backend_context("c")
    backend = ctx.execution_backend()
    plain = tilecraft.lower(scale(), "c")
    fast = tilecraft.lower(scale(), "c", pass_configs={K.TL_ENABLE_FAST_MATH: True})
    assert backend.cache_key(fast, ctx) != backend.cache_key(plain, ctx)
    flags = backend.build_options(fast, ctx)["flags"]
    assert "-freciprocal-math" in flags and "-fno-trapping-math" in flags
    # NaN and infinity must survive: nothing that lets the compiler assume they do not occur.
    assert not {"-ffast-math", "-ffinite-math-only", "-Ofast", "-fno-signed-zeros"} & set(flags)
    assert "-freciprocal-math" not in backend.build_options(plain, ctx)["flags"]


# ------------------------------------------------------------------ effects


@pytest.mark.parametrize("fast", [False, True])
def test_cpu_fast_math_keeps_nan_and_infinity(fast):
    kernel = tilecraft.compile(specials(), target="c", pass_configs={K.TL_ENABLE_FAST_MATH: fast})
    a = special_inputs()
    m = np.empty(4, "float32")
    p = np.empty_like(a)
    kernel(a, m, p)
    assert m[0] == -np.inf and m[1] == np.inf
    np.testing.assert_array_equal(m[2:], np.max(a, axis=1)[2:])  # row 2 holds a NaN: NumPy's max gives NaN
    with np.errstate(invalid="ignore"):
        expected = a * np.float32(0.0)
    np.testing.assert_array_equal(np.isnan(p), np.isnan(expected))
    assert np.isnan(p[0]).all()


def test_cpu_fast_math_result_is_close():
    kernel = tilecraft.compile(scale(), target="c", pass_configs={K.TL_ENABLE_FAST_MATH: True})
    a = np.random.default_rng(1).uniform(-2.0, 2.0, 256).astype("float32")
    b = np.empty_like(a)
    kernel(a, b)
    reference = np.exp(a.astype("float64")) / (a.astype("float64") + 3.0)
    assert np.max(np.abs(b - reference) / np.abs(reference)) < 1e-5


def _opencl_or_skip():
    try:
        ctx = create_backend_context("opencl")
    except TilecraftError as err:
        pytest.skip(f"no OpenCL device: {err}")
    return ctx


def test_opencl_fast_math_reaches_the_build_and_keeps_infinity():
    ctx = _opencl_or_skip()
    fast = tilecraft.lower(specials(), "opencl", pass_configs={K.TL_ENABLE_FAST_MATH: True})
    options = ctx.execution_backend().build_options(fast, ctx)["options"]
    assert "-cl-unsafe-math-optimizations" in options
    assert not {"-cl-fast-relaxed-math", "-cl-finite-math-only"} & set(options)
    kernel = tilecraft.compile(specials(), target="opencl", pass_configs={K.TL_ENABLE_FAST_MATH: True})
    a = special_inputs()
    m = np.empty(4, "float32")
    p = np.empty_like(a)
    kernel(a, m, p)
    assert m[0] == -np.inf and m[1] == np.inf
    assert np.isnan(p[0]).all()


def test_nvrtc_options_carry_fast_math():
    from tilecraft.execution.nvrtc.backend import NvrtcExecutionBackend
    from tilecraft.execution.nvrtc.spec import NVRTC

    ctx = create_backend_context("cuda -arch=sm_80", execution_backend="nvrtc", require_available=False)
    fast = tilecraft.lower(scale(), "cuda -arch=sm_80", execution_backend="nvrtc",
                           pass_configs={K.TL_ENABLE_FAST_MATH: True, K.TL_DEVICE_COMPILE_FLAGS: "-DX=1"})  # fmt: skip
    plain = tilecraft.lower(scale(), "cuda -arch=sm_80", execution_backend="nvrtc")
    backend = NvrtcExecutionBackend(NVRTC)
    try:
        options = backend.build_options(fast, ctx)["options"]
        assert "--use_fast_math" not in backend.build_options(plain, ctx)["options"]
    except ToolchainError as err:
        pytest.skip(f"NVRTC's options need the CUDA headers: {err}")
    assert options[-2:] == ["--use_fast_math", "-DX=1"]


def test_nvcc_in_codegen_compiles_with_fast_math(monkeypatch):
    """The nvcc execution backend compiles in codegen; fast math and flags must reach that compile too."""
    from tilecraft.execution.cuda_driver import toolkit
    from tilecraft.execution.nvcc import toolchain

    if toolkit.find_nvcc() is None:
        pytest.skip("nvcc is not installed (set TILECRAFT_NVCC or CUDA_HOME to run this test)")
    seen = []
    real = toolchain.compile_cubin

    def recording(source, arch, options=(), **kw):
        seen.append(tuple(options))
        return real(source, arch, options, **kw)

    monkeypatch.setattr(toolchain, "compile_cubin", recording)
    configs = {K.TL_ENABLE_FAST_MATH: True, K.TL_DEVICE_COMPILE_FLAGS: "-DX=1"}
    artifact = tilecraft.lower(scale(), "cuda -arch=sm_80", execution_backend="nvcc", pass_configs=configs)
    assert artifact.binary("cubin")[:4] == b"\x7fELF"
    assert seen == [("--use_fast_math", "-DX=1")]


def test_device_compile_flags_reach_the_compiler():
    with pytest.raises(ToolchainError, match="-fno-such-flag-for-tilecraft"):
        tilecraft.compile(
            scale(), target="c", pass_configs={K.TL_DEVICE_COMPILE_FLAGS: "-fno-such-flag-for-tilecraft"}
        )
    ctx = create_backend_context("c")
    artifact = tilecraft.lower(scale(), "c", compile_flags=["-O2"],
                               pass_configs={K.TL_DEVICE_COMPILE_FLAGS: ["-DA=1", "-DB=2"]})  # fmt: skip
    assert ctx.execution_backend().build_options(artifact, ctx)["flags"][-3:] == ["-O2", "-DA=1", "-DB=2"]


def test_dump_ir_writes_every_pass_even_on_a_cache_hit(tmp_path):
    configs = {K.TL_ENABLE_DUMP_IR: True, K.TL_DUMP_IR_DIR: str(tmp_path / "dump")}
    for _ in range(2):
        for old in (tmp_path / "dump").glob("*.py"):
            old.unlink()
        tilecraft.compile(scale(), target="c", pass_configs=configs)
        written = sorted(p.name for p in (tmp_path / "dump").glob("*.py"))
        assert written[0] == "00-input.py" and any("split-host-device" in n for n in written)


def test_pass_profile_prints_the_timing_table(capsys):
    tilecraft.compile(scale(), target="c", pass_configs={K.TL_PASS_PROFILE: True})
    assert "pass timing" in capsys.readouterr().err
