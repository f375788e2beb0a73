"""The `tilelang` import hook, the --cuda-on-cpu emulation and tilecraft.testing, in-process.

Each test that installs the hook or the emulation undoes it before it ends (fixtures below), so the
rest of the worker's tests see neither.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from tilecraft.compat import cuda_on_cpu, hook

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def hooked():
    assert not hook.installed()
    hook.install()
    try:
        yield
    finally:
        hook.uninstall()


def test_counterparts_keep_the_submodule_path():
    assert hook.counterpart("tilelang") == "tilecraft"
    assert hook.counterpart("tilelang.language") == "tilecraft.language"
    assert hook.counterpart("tilelang.carver.arch") == "tilecraft.carver.arch"
    with pytest.raises(ValueError, match="not a module of the tilelang package"):
        hook.counterpart("tilelangx.language")


def test_tilelang_names_are_the_tilecraft_modules_themselves(hooked):
    import tilelang
    import tilelang.language as T
    import tilelang.testing

    import tilecraft
    import tilecraft.language
    import tilecraft.testing

    assert tilelang is tilecraft and T is tilecraft.language and tilelang.testing is tilecraft.testing
    assert sys.modules["tilelang.language"] is tilecraft.language
    assert tilecraft.__spec__.name == "tilecraft"  # the real module is not renamed by its alias


def test_an_unmapped_module_is_an_import_error_naming_it(hooked):
    with pytest.raises(ImportError, match=r"'tilelang\.no_such_part'.*docs/compat.md") as caught:
        import tilelang.no_such_part  # noqa: F401
    assert caught.value.name == "tilelang.no_such_part"


def test_uninstall_forgets_the_aliases(hooked):
    import tilelang  # noqa: F401

    hook.uninstall()
    assert "tilelang" not in sys.modules and not hook.installed()
    hook.install()  # the fixture uninstalls it again


def test_install_refuses_when_a_real_tilelang_is_loaded(monkeypatch):
    monkeypatch.setitem(sys.modules, "tilelang", types.ModuleType("tilelang"))
    with pytest.raises(ImportError, match="a real TileLang is already imported"):
        hook.install()
    assert not hook.installed()


def test_importing_tilecraft_installs_nothing():
    """The hook exists only in processes that ask for it: `import tilecraft` (and the command line's
    other commands) leave `import tilelang` to whatever is installed."""
    code = (
        "import sys, tilecraft, tilecraft.language, tilecraft.testing, tilecraft.tools.cli\n"
        "assert not any(type(f).__name__ == 'TileLangFinder' for f in sys.meta_path)\n"
        "try:\n    import tilelang\nexcept ImportError:\n    print('no tilelang')\n"
        "else:\n    print('real' if tilelang is not tilecraft else 'aliased')\n"
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() in ("no tilelang", "real")


@pytest.fixture
def emulated():
    pytest.importorskip("torch")
    cuda_on_cpu.enable((8, 6))
    try:
        yield __import__("torch")
    finally:
        cuda_on_cpu.disable()


def test_cuda_device_arguments_mean_the_host(emulated):
    torch = emulated
    x = torch.randn(4, device="cuda")
    y = torch.empty((2, 3), device=torch.device("cuda", 0), dtype=torch.float16)
    z = torch.zeros(3, device=0)
    assert {t.device.type for t in (x, y, z)} == {"cpu"}
    assert (
        x.cuda() is x
        and x.to("cuda").device.type == "cpu"
        and x.to("cuda:0", torch.float16).dtype == torch.float16
    )
    assert torch.device("cuda") == torch.device("cpu")
    assert torch.nn.Linear(2, 2).cuda().weight.device.type == "cpu"


def test_cuda_generators_are_host_generators(emulated):
    torch = emulated
    gen = torch.Generator(device="cuda")
    gen.manual_seed(7)
    first = torch.randn(5, device="cuda", generator=gen)
    gen.manual_seed(7)
    assert isinstance(gen, torch._C.Generator) and gen.device.type == "cpu"
    assert torch.equal(first, torch.randn(5, generator=gen))


def test_torch_cuda_answers_as_one_emulated_device(emulated):
    torch = emulated
    assert torch.cuda.is_available() and torch.cuda.device_count() == 1
    assert torch.cuda.get_device_capability() == (8, 6)
    assert torch.cuda.get_device_properties(0).multi_processor_count == (os.cpu_count() or 1)
    free, total = torch.cuda.mem_get_info()  # the host's memory, where the emulated tensors live
    assert 0 < free <= total == torch.cuda.get_device_properties(0).total_memory
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    end.record()
    assert start.elapsed_time(end) >= 0
    with pytest.raises(RuntimeError, match="recorded"):
        torch.cuda.Event().elapsed_time(end)
    torch.manual_seed(0)  # seeding CUDA too must not reach for a real device
    torch.cuda.manual_seed_all(0)


def test_disable_restores_torch():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a real CUDA device is present")
    cuda_on_cpu.enable()
    cuda_on_cpu.disable()
    assert not torch.cuda.is_available() and not cuda_on_cpu.active()
    with pytest.raises((RuntimeError, AssertionError)):
        torch.zeros(1, device="cuda")


@pytest.mark.parametrize("text", ["8", "9.0", " 10.3 "])
def test_capabilities_parse(text):
    assert cuda_on_cpu.parse_capability(text) == tuple(int(p) for p in (text.strip() + ".0").split(".")[:2])


@pytest.mark.parametrize("text", ["sm_80", "9.x", ""])
def test_bad_capabilities_say_how_to_write_one(text):
    with pytest.raises(ValueError, match="MAJOR.MINOR"):
        cuda_on_cpu.parse_capability(text)


def test_compute_version_requirements_compare_with_the_emulated_device(emulated):
    import tilecraft.testing as testing

    assert testing.requires_cuda.reason() is None
    assert testing.requires_cuda_compute_version_ge(8, 0).reason() is None
    assert testing.requires_cuda_compute_version_le(8, 9).reason() is None
    reason = testing.requires_cuda_compute_version_eq(9, 0).reason()
    assert "Requires CUDA compute eq 9.0, but have 8.6" in reason and "--cuda-capability" in reason
    with pytest.raises(ValueError, match="mode 'ne' is not one of ge, gt, le, lt, eq"):
        testing.requires_cuda_compute_version(9, 0, mode="ne")


def test_requirements_skip_with_their_reason():
    import tilecraft.testing as testing

    @testing.requires_package("no_such_package_for_tilecraft", "numpy")
    def needs_package():
        pass

    (mark,) = needs_package.pytestmark
    assert mark.args == (True,) and "no_such_package_for_tilecraft" in mark.kwargs["reason"]
    assert "numpy" not in mark.kwargs["reason"]
    assert "ROCm" in testing.requires_rocm.reason()
    assert testing.requires_package("numpy").reason() is None


def test_torch_assert_close_allows_a_ratio_of_mismatches():
    from tilecraft.testing import torch_assert_close

    a = np.linspace(1, 2, 1000, dtype=np.float32)
    b = a.copy()
    b[7] += 1
    assert torch_assert_close(a, b, max_mismatched_ratio=0.001)
    b[8] += 1
    with pytest.raises(AssertionError, match=r"2 of 1000 elements differ.*first at index \[7\]"):
        torch_assert_close(a, b, max_mismatched_ratio=0.001)
    with pytest.raises(AssertionError, match="dtypes differ"):
        torch_assert_close(a, a.astype(np.float64))


def test_process_func_and_regression_record_latencies(capsys):
    import tilecraft.testing as testing

    calls = []
    namespace = {
        "regression_fast": lambda: testing.process_func(lambda scale: 0.5 * scale, "fast", scale=2),
        "regression_zero": lambda: testing.process_func(lambda: calls.append(1) or 0.0, "zero"),
        "helper": lambda: calls.append("not a case"),
    }
    code = compile("results = regression()", "<caller>", "exec")
    with pytest.warns(RuntimeWarning, match="zero reported latency 0.0"):
        exec(code, {**namespace, "regression": testing.regression}, namespace)
    assert [(r.name, r.latency, r.case) for r in namespace["results"]] == [("fast", 1.0, "fast")]
    assert "fast: 1.0" in capsys.readouterr().out and "not a case" not in calls


def test_regression_selects_cases_and_prints_json_as_tilelang_does(capsys, monkeypatch):
    """TL_PERF_REGRESSION_ONLY (glob or substring, with or without the prefix) and
    TL_PERF_REGRESSION_FORMAT=json, which benchmarks/tilelang_regression.py drives both compilers with;
    `[r]egression_gemm` is a glob that matches one name exactly."""
    import json

    import tilecraft.testing as testing
    from tilecraft.compat.testing import RESULTS_JSON_PREFIX

    namespace = {
        "regression_gemm": lambda: testing.process_func(lambda: 2.0, "gemm"),
        "regression_gemm_autotune": lambda: testing.process_func(lambda: 3.0, "gemm_autotune"),
        "regression_cast": lambda: testing.process_func(lambda: 1.0, "cast"),
    }
    code = compile("results = regression()", "<caller>", "exec")
    monkeypatch.setenv("TL_PERF_REGRESSION_FORMAT", "json")
    for only, expected in [
        ("gemm", ["gemm", "gemm_autotune"]),
        ("[r]egression_gemm", ["gemm"]),
        ("", ["cast", "gemm", "gemm_autotune"]),
    ]:
        monkeypatch.setenv("TL_PERF_REGRESSION_ONLY", only)
        exec(code, {**namespace, "regression": testing.regression}, namespace)
        line = [x for x in capsys.readouterr().out.splitlines() if x.startswith(RESULTS_JSON_PREFIX)]
        rows = json.loads(line[0][len(RESULTS_JSON_PREFIX) :])
        assert [r["name"] for r in rows] == expected
        assert all(r["case"] == r["name"] for r in rows)


def test_set_random_seed_repeats_numpy_draws():
    from tilecraft.testing import set_random_seed

    set_random_seed(3)
    first = np.random.rand(3)
    set_random_seed(3)
    assert np.array_equal(first, np.random.rand(3))


def test_importing_a_submodule_keeps_the_function_of_the_same_name(hooked):
    """`import tilelang.jit` (here a failed `from tilelang.jit.adapter...`, as TileLang's tests probe for
    CuTeDSL) leaves `tilelang.jit` the decorator, as in TileLang, and a kernel it makes still computes."""
    import tilelang

    with pytest.raises(ImportError):
        from tilelang.jit.adapter.cutedsl.checks import check_cutedsl_available  # noqa: F401
    import tilelang.jit  # noqa: F401
    import tilelang.language as T
    import tilelang.language.macro  # noqa: F401

    assert callable(tilelang.jit) and callable(T.macro)

    @tilelang.jit(out_idx=[1], target="c")
    def scale(n: int, block: int):
        @T.prim_func
        def main(A: T.Tensor((n,), T.float32), B: T.Tensor((n,), T.float32)):
            with T.Kernel(T.ceildiv(n, block)) as bx:
                for i in T.Parallel(block):
                    B[bx * block + i] = A[bx * block + i] * 3.0 + 1.0

        return main

    a = np.random.default_rng(0).uniform(-2, 2, 96).astype(np.float32)
    expected = a.astype(np.float64) * 3.0 + 1.0
    np.testing.assert_allclose(scale(96, 32)(a), expected, rtol=1e-6)
