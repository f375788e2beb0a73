"""Thread safety of everything a compile or a kernel call reaches, on every available target.

The built-in backends load lazily on the first lookup, so the race that matters most happens only in a
fresh process: `test_first_compiles_in_a_fresh_process` runs this file as a script in a new interpreter
(with an empty kernel cache), where 8 threads compile at once and check their results against NumPy.
Targets come from the registry (tests/conformance/targets.py): `c` always, `opencl` with PoCL or a
driver, `cuda` on a GPU machine; the others skip with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
THREADS = 8
# Five different kernels; the first three are compiled by two threads at once.
FIRST_COMPILES = ("elementwise_add_ragged", "row_sum_ragged", "softmax_f16", "transpose_shared",
                  "gemm_f32_ragged", "elementwise_add_ragged", "row_sum_ragged", "softmax_f16")  # fmt: skip


def run_in_threads(work: Callable[[int], Any], count: int = THREADS) -> list[Any]:
    """`work(i)` for i in range(count), each in its own thread, all released at once by a barrier.

    Returns the results in order; the first exception of any thread is raised here, with its thread.
    """
    barrier = threading.Barrier(count)
    results: list[Any] = [None] * count
    errors: list[tuple[int, BaseException]] = []

    def body(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)
        except BaseException as err:  # noqa: BLE001 - reported below, with the thread it came from
            errors.append((i, err))

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    if any(t.is_alive() for t in threads):
        raise AssertionError("a thread did not finish within 600 s (deadlock?)")
    if errors:
        i, err = errors[0]
        raise AssertionError(f"thread {i} of {count} failed: {type(err).__name__}: {err}") from err
    return results


def rel_error(out: Any, ref: np.ndarray) -> float:
    out = np.asarray(out, dtype=np.float64)
    if np.isnan(out).any():
        return float("inf")
    return float(np.linalg.norm(out - ref) / max(np.linalg.norm(ref), 1e-30))


# ---------------------------------------------------------------- the fresh-process script


def compile_and_check(case_name: str, target: str, execution_backend: str, seed: int) -> None:
    """Compile one conformance case, run it on fresh inputs, compare with its float64 reference."""
    import tilecraft
    from tilecraft.testing.conformance.cases import CASES

    case = next(c for c in CASES if c.name == case_name)
    kernel = tilecraft.compile(case.build(), target=target, execution_backend=execution_backend)
    arrays = case.inputs(np.random.default_rng(seed))
    expected = case.reference([a.copy() for a in arrays])
    device = [kernel.to_device(a) for a in arrays]
    kernel(*device)
    kernel.synchronize()
    for index, ref in expected.items():
        err = rel_error(kernel.to_host(device[index]), ref)
        assert err <= case.tol, f"{case_name}: output {index} relative error {err:.3e} > {case.tol:.1e}"


def backend_packages() -> list[str]:
    """The package of every backend entry point (read from the metadata; nothing is imported)."""
    from tilecraft.backend import _loader

    return [
        ep.module.rpartition(".")[0]
        for ep in _loader.discovered_entry_points()
        if ep.group == _loader.BACKENDS
    ]


def fresh_process_main(target: str, execution_backend: str) -> None:
    """In a new interpreter: 8 threads make the process's first compiles at the same moment."""
    import tilecraft  # noqa: F401 - what a user imports; must not load the backends yet

    loaded = [p for p in backend_packages() if p in sys.modules]
    assert not loaded, f"backend packages {loaded} loaded before the first compile; the race is not exercised"
    run_in_threads(lambda i: compile_and_check(FIRST_COMPILES[i], target, execution_backend, seed=i))
    print("ok")


def imports_main() -> None:
    """In a new interpreter: threads import the backend packages themselves while others look targets
    up; nobody deadlocks, and everybody sees every package registered."""
    import importlib

    from tilecraft.backend.registry import registered_backends

    packages = backend_packages()

    def work(i: int) -> int:
        if i < len(packages):
            importlib.import_module(packages[i])
        return len(registered_backends())

    counts = run_in_threads(work)
    expected = len(packages)
    assert counts == [expected] * len(counts), f"threads saw registries of {counts} manifests, not {expected}"
    print("ok")


def run_fresh(args: list[str], tmp_path: Path) -> None:
    """Run this file as a script in a new interpreter, with an empty kernel cache."""
    env = dict(os.environ, TILECRAFT_CACHE_DIR=str(tmp_path / "cache"))
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    command = [sys.executable, __file__, *args]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), (
        f"{' '.join(command)} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    )


# ---------------------------------------------------------------- tests


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # At collection, not at import: run as a script, this module must not load the backends early.
    if "target_case" in metafunc.fixturenames:
        from tests.conformance.targets import declared_cases

        cases = declared_cases()
        metafunc.parametrize("target_case", cases, ids=[c.id for c in cases])


@pytest.fixture
def backend_ctx(target_case):
    """The context of one declared (target, execution backend) pair, or a skip saying why not here."""
    from tests.conformance.targets import resolve

    return resolve(target_case)


def test_a_lookup_during_a_backend_package_import_leaves_loading_unfinished(tmp_path, monkeypatch):
    """A lookup made while a backend package is still importing cannot mark the backends loaded:
    another thread would then trust a registry that package has not filled yet."""
    import importlib
    from importlib.metadata import EntryPoint

    from tilecraft.backend import _loader
    from tilecraft.backend.registry import isolated_registry, registered_backends

    package = tmp_path / "tctest_lookup_on_import"
    package.mkdir()
    (package / "__init__.py").write_text(
        "from tilecraft.backend import _loader\n"
        "from tilecraft.backend.registry import registered_backends\n"
        "registered_backends()\n"
        "LOADED_DURING_IMPORT = _loader._loaded\n"
    )
    (package / "backend.py").write_text("MANIFEST = 'registered by a test double'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry_point = EntryPoint("lookup-on-import", f"{package.name}.backend:MANIFEST", _loader.BACKENDS)
    monkeypatch.setattr(_loader, "discovered_entry_points", lambda: [entry_point])
    monkeypatch.setattr(_loader, "_register", lambda ep, obj: None)  # only the loading order is tested
    monkeypatch.delitem(sys.modules, package.name, raising=False)
    with isolated_registry():
        _loader._loaded = False  # re-armed; isolated_registry restores it on exit
        imported = importlib.import_module(package.name)
        assert imported.LOADED_DURING_IMPORT is False
        registered_backends()
        assert _loader._loaded, "a lookup after the import finished must mark the backends loaded"
    del sys.modules[package.name]


def test_first_compiles_in_a_fresh_process(backend_ctx, tmp_path):
    """8 threads compiling at once as the first thing a process does all get correct kernels."""
    run_fresh([str(backend_ctx.target), backend_ctx.execution.name], tmp_path)


def test_importing_backend_packages_from_threads_in_a_fresh_process(tmp_path):
    """Threads importing backend packages while others look targets up: no deadlock, one registry."""
    run_fresh(["--imports"], tmp_path)


# Run in a fresh interpreter: the shared modules that importing every plugin loads (tilecraft's
# shared_compiler stubbed out, so it does not load them itself), in the order they finished loading.
# Packages under tilecraft/execution/ are execution backends' code and stay out, as plugins do.
MEASURE_SHARED_MODULES = """
import importlib, sys, types
import tilecraft.backend.registry
before = set(sys.modules)
sys.modules["tilecraft.backend.shared_compiler"] = types.ModuleType("tilecraft.backend.shared_compiler")
from tilecraft.backend import _loader
entry_points = _loader.discovered_entry_points()
plugins = {ep.module.rpartition(".")[0] for ep in entry_points}
for ep in entry_points:
    importlib.import_module(ep.module)


def execution_package(name):  # tilecraft/execution/<name>/: execution backends' code (cuda_driver too)
    parts = name.split(".")
    if parts[:2] != ["tilecraft", "execution"] or len(parts) < 3:
        return False
    return len(parts) > 3 or hasattr(sys.modules[name], "__path__")


for name in list(sys.modules):
    if name.startswith("tilecraft.") and name not in before and name != "tilecraft.backend.shared_compiler" \\
            and not any(name == p or name.startswith(p + ".") for p in plugins) and not execution_package(name):
        print(name)
"""


def fresh_output(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_the_shared_compiler_lists_every_module_the_plugins_share():
    """A shared module missing from tilecraft/backend/shared_compiler.py is imported by threads racing again."""
    from tilecraft.backend.shared_compiler import SHARED_MODULES

    measured = fresh_output(MEASURE_SHARED_MODULES)
    listed = "\n".join(f'    "{name}",' for name in measured)
    assert sorted(SHARED_MODULES) == sorted(measured), (
        f"SHARED_MODULES in tilecraft/backend/shared_compiler.py is stale; the measured tuple is:\n{listed}"
    )


def test_the_shared_compiler_imports_no_plugin():
    """A plugin module loaded from shared_compiler would wait for a thread that waits for this one."""
    code = (
        "import sys, tilecraft.backend.shared_compiler\n"
        "from tilecraft.backend import _loader\n"
        "plugins = {ep.module.rpartition('.')[0] for ep in _loader.discovered_entry_points()}\n"
        "print(*[m for m in sys.modules if any(m == p or m.startswith(p + '.') for p in plugins)])\n"
    )
    assert fresh_output(code) == []


def test_concurrent_calls_of_one_kernel(backend_ctx):
    """One compiled kernel called from 8 threads at once: each call gets its own inputs' result."""
    import tilecraft
    from tilecraft.testing.conformance.cases import dynamic_scale

    kernel = tilecraft.compile(dynamic_scale(), ctx=backend_ctx)

    def calls(i: int) -> None:
        rng = np.random.default_rng(i)
        for step in range(20):
            n = 100 + 37 * i + step  # a different size (symbolic dim) in every thread and call
            x = rng.standard_normal(n).astype(np.float32)
            y = kernel.to_device(np.full(n, np.nan, np.float32))
            kernel(kernel.to_device(x), y, float(i + 1))
            kernel.synchronize()
            assert rel_error(kernel.to_host(y), x.astype(np.float64) * (i + 1)) <= 1e-6, (i, step)

    run_in_threads(calls)


@pytest.fixture
def frequent_thread_switches():
    """Threads switch every microsecond instead of every 5 ms, so interleavings that are rare in
    practice happen within a few parses."""
    saved = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(saved)


def test_parsing_in_threads_builds_the_same_ir(frequent_thread_switches):
    """Kernels parsed by 8 threads at once are the kernels parsed one at a time (the parser's state is
    per thread)."""
    from tilecraft.ir.structural import structural_hash
    from tilecraft.testing.conformance import kernels as K

    factories = [lambda: K.softmax(256, 128, 16), lambda: K.layer_norm(256, 128, 8), lambda: K.gemm(128, 128, 64),
                 lambda: K.transpose(256, 128, 32), lambda: K.cumsum(128, 64, 32), lambda: K.rms_norm(256, 128, 8),
                 lambda: K.column_sum(512, 256, 64, 64), lambda: K.elementwise_add(1000, 256)]  # fmt: skip
    expected = [structural_hash(make()) for make in factories]

    def parse(i: int) -> None:
        for _ in range(10):
            assert structural_hash(factories[i]()) == expected[i], f"thread {i} parsed a different IR"

    run_in_threads(parse)


class _CyclicGarbage:
    """Garbage only the cycle collector frees; its finalizer runs Python code, wherever a collection
    happens (inside the AST constructor too), which lets another thread run there."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        sum(range(50))


def test_parsing_in_threads_with_garbage_collection_during_parses():
    """CPython's AST constructor keeps its recursion count per interpreter, not per thread: two threads
    converting at once fail with "SystemError: AST constructor recursion depth mismatch" when a garbage
    collection inside one lets the other run. tilecraft's parses take turns, so kernels parsed (and
    jit functions defined) in threads of a busy program still work."""
    import tilecraft
    from tilecraft.testing.conformance import kernels as K

    def parse(i: int) -> None:
        for _ in range(50):
            for _ in range(200):
                _CyclicGarbage()
            if i % 2:
                K.layer_norm(256, 128, 8)  # @T.prim_func parses the kernel's source
            else:
                tilecraft.jit(K.softmax)  # @tilecraft.jit parses it to tell the eager style from the lazy

    run_in_threads(parse)


@pytest.fixture
def counted_compiles(monkeypatch) -> list[str]:
    """The names of the kernels `@tilecraft.jit` functions compile, one entry per compile."""
    from tilecraft.jit import api

    compiled: list[str] = []
    real = api.compile

    def counting(func, **options):
        compiled.append(func.name)
        return real(func, **options)

    monkeypatch.setattr(api, "compile", counting)
    return compiled


def test_a_jit_function_compiles_each_key_once_across_threads(counted_compiles, frequent_thread_switches):
    """8 threads call one lazy @tilecraft.jit function, 4 with each of two sizes: two compiles, and
    the threads asking for the same size get the same Kernel."""
    import tilecraft
    from tilecraft.testing.conformance import kernels as K

    @tilecraft.jit(target="c", out_idx=2)
    def add(n: int):
        return K.elementwise_add(n, 256)

    sizes = [300 + 100 * (i % 2) for i in range(THREADS)]
    kernels = run_in_threads(lambda i: add(sizes[i]))
    assert sorted(counted_compiles) == ["elementwise_add"] * 2
    for i in range(THREADS):
        assert kernels[i] is kernels[i % 2], f"thread {i} got its own Kernel for n={sizes[i]}"
        a, b = np.arange(sizes[i], dtype=np.float32), np.ones(sizes[i], np.float32)
        np.testing.assert_array_equal(kernels[i](a, b), a + b)


def test_an_eager_jit_function_compiles_once_across_threads(counted_compiles, frequent_thread_switches):
    """8 threads call one eager-style @tilecraft.jit function with arrays of one shape: one parse and
    one compile, and every thread gets its correct result."""
    import tilecraft
    import tilecraft.language as T

    @tilecraft.jit(target="c")
    def scaled(A, block: int = 64):
        n = T.const("n")
        A: T.Tensor((n,), "float32")
        B = T.empty((n,), "float32")
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    B[bx * block + i] = A[bx * block + i] * 3.0
        return B

    inputs = [np.random.default_rng(i).standard_normal(500).astype(np.float32) for i in range(THREADS)]
    outputs = run_in_threads(lambda i: scaled(inputs[i]))
    assert counted_compiles == ["scaled"]
    for x, y in zip(inputs, outputs):
        np.testing.assert_allclose(y, x * 3.0, rtol=1e-6)


def test_an_availability_probe_runs_once_across_threads():
    """8 threads asking whether an execution backend is available run its probe once, not 8 times."""
    import time

    from tilecraft.backend.execution import Availability, ExecutionBackendSpec

    runs: list[int] = []

    def slow_probe() -> Availability:
        runs.append(1)
        time.sleep(0.05)  # a toolchain or driver probe takes a while; the others arrive meanwhile
        return Availability(True)

    spec = ExecutionBackendSpec(
        "threadprobe", slow_probe, "tilecraft.backend.execution:ExecutionBackend", ("c-source",)
    )
    assert all(status.ok for status in run_in_threads(lambda i: spec.check()))
    assert len(runs) == 1, f"the probe ran {len(runs)} times"


if __name__ == "__main__":
    if sys.argv[1:] == ["--imports"]:
        imports_main()
    else:
        fresh_process_main(sys.argv[1], sys.argv[2])
