"""TileLang programs, written as TileLang's documentation writes them, run unchanged through
`tilecraft run-tilelang` on the CPU target.

Each program is a file run in a subprocess (`python -m tilecraft run-tilelang --target c SCRIPT`), as a
user runs it; it checks its numbers against numpy and exits non-zero when they are wrong, so exit 0
means right answers. The torch programs skip when torch is not installed.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = pytest.mark.skipif(not HAS_TORCH, reason="needs torch (pip install torch)")


def run_tilelang(
    tmp_path: Path,
    source: str,
    *options: str,
    args: tuple[str, ...] = (),
    extra_env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Write `source` to a script and run it through `tilecraft run-tilelang` (CPU target by default)."""
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(source))
    if "--target" not in options:
        options = ("--target", "c", *options)
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH"))))
    )
    env.pop("TILECRAFT_TARGET", None)
    env.update(extra_env or {})
    command = [sys.executable, "-m", "tilecraft", "run-tilelang", *options, str(script), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)


def assert_ran(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, (
        f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    )
    return result.stdout


GEMM = """
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M, block_N, block_K, dtype="float16", accum_dtype="float32"):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return gemm


kernel = matmul(256, 192, 128, 64, 64, 32)
rng = np.random.default_rng()
a = rng.standard_normal((256, 128)).astype(np.float16)
b = rng.standard_normal((128, 192)).astype(np.float16)
c = kernel(a, b)
ref = a.astype(np.float64) @ b.astype(np.float64)
error = np.linalg.norm(c.astype(np.float64) - ref) / np.linalg.norm(ref)
assert error < 2e-3, error
print("source lines:", len(kernel.get_kernel_source().splitlines()) > 0)
print("ok", tilelang.__name__)
"""


def test_lazy_jit_gemm_with_pipelined_copies(tmp_path):
    """@tilelang.jit(out_idx=...), T.Kernel, T.alloc_*, T.Pipelined, T.copy, T.gemm, kernel source."""
    out = assert_ran(run_tilelang(tmp_path, GEMM))
    assert "ok tilecraft" in out and "source lines: True" in out


REDUCE = """
import numpy as np
import tilelang
from tilelang import language as T


def softmax_rows(M, N, block_M, dtype="float32"):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype), S: T.Tensor((M,), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            tile = T.alloc_fragment((block_M, N), dtype)
            row_max = T.alloc_fragment((block_M,), dtype)
            row_sum = T.alloc_fragment((block_M,), dtype)
            T.copy(X[bx * block_M, 0], tile)
            T.reduce_max(tile, row_max, dim=1)
            for i, j in T.Parallel(block_M, N):
                tile[i, j] = T.exp(tile[i, j] - row_max[i])
            T.reduce_sum(tile, row_sum, dim=1)
            for i, j in T.Parallel(block_M, N):
                tile[i, j] = tile[i, j] / row_sum[i]
            T.copy(tile, Y[bx * block_M, 0])
            T.copy(row_sum, S[bx * block_M])

    return main


kernel = tilelang.compile(softmax_rows(100, 64, 16), out_idx=[1, 2])
x = np.random.default_rng().standard_normal((100, 64)).astype(np.float32)
y, s = kernel(x)
e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
assert np.allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
assert np.allclose(s, e.sum(axis=1), rtol=1e-5)
print("ok")
"""


def test_compile_with_parallel_loops_and_reductions(tmp_path):
    """tilelang.compile, `from tilelang import language as T`, T.Parallel, T.exp, T.reduce_max/sum."""
    assert "ok" in assert_ran(run_tilelang(tmp_path, REDUCE))


EAGER = """
import numpy as np
import tilelang
import tilelang.language as T


@tilelang.jit
def add(A, B, block_M: int = 32, block_N: int = 32):
    M, N = T.const("M, N")
    A: T.Tensor((M, N), "float32")
    B: T.Tensor((M, N), "float32")
    C = T.empty((M, N), "float32")
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        for i, j in T.Parallel(block_M, block_N):
            C[by * block_M + i, bx * block_N + j] = A[by * block_M + i, bx * block_N + j] + B[
                by * block_M + i, bx * block_N + j
            ]
    return C


rng = np.random.default_rng()
a = rng.standard_normal((64, 96)).astype(np.float32)
b = rng.standard_normal((64, 96)).astype(np.float32)
assert np.array_equal(add(a, b), a + b)
assert np.array_equal(add(a, b, block_M=16), a + b)
print("ok")
"""


def test_eager_style(tmp_path):
    """The eager style: the jitted body is the kernel, T.const sizes from the arrays, T.empty output."""
    assert "ok" in assert_ran(run_tilelang(tmp_path, EAGER))


DYNAMIC = """
import sys

import numpy as np
import tilelang
import tilelang.language as T

K = int(sys.argv[1])  # the script's own argument
M = T.dynamic("M")


@tilelang.jit(out_idx=[1], pass_configs={tilelang.PassConfigKey.BOUNDS_CHECK: True})
def row_scale(block_M=16):
    @T.prim_func
    def main(X: T.Tensor((M, K), "float32"), Y: T.Tensor((M, K), "float32")):
        with T.Kernel(T.ceildiv(M, block_M), threads=128) as bx:
            tile = T.alloc_shared((block_M, K), "float32")
            T.copy(X[bx * block_M, 0], tile)
            for i, j in T.Parallel(block_M, K):
                tile[i, j] = tile[i, j] * 2.0
            T.copy(tile, Y[bx * block_M, 0])

    return main


kernel = row_scale()
for rows in (1, 17, 300):
    x = np.random.default_rng().standard_normal((rows, K)).astype(np.float32)
    assert np.array_equal(kernel(x), x * 2), rows
print("ok", sys.argv[1:])
"""


def test_dynamic_shapes_pass_configs_and_script_arguments(tmp_path):
    """T.dynamic dims (one kernel, three sizes), pass_configs through tilelang.PassConfigKey, argv."""
    out = assert_ran(run_tilelang(tmp_path, DYNAMIC, args=("48",)))
    assert "ok ['48']" in out


TESTING = """
import numpy as np
import tilelang
import tilelang.testing
import tilelang.language as T


def scale(n):
    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                Y[bx * 128 + i] = X[bx * 128 + i] * 3.0

    return main


def test_scale():
    tilelang.testing.set_random_seed(0)
    kernel = tilelang.compile(scale(512), out_idx=[1])
    x = np.random.rand(512).astype(np.float32)
    tilelang.testing.torch_assert_close(kernel(x), x * 3, rtol=1e-6, atol=1e-6)


@tilelang.testing.requires_cuda
def test_needs_a_gpu():
    raise AssertionError("ran without a CUDA device")


@tilelang.testing.requires_cuda_compute_version_ge(9, 0)
def test_needs_hopper():
    raise AssertionError("ran without a Hopper GPU")


@tilelang.testing.requires_package("no_such_package_for_tilecraft")
def test_needs_a_package():
    raise AssertionError("ran without its package")


if __name__ == "__main__":
    tilelang.testing.main()
"""


def test_tilelang_testing_main_runs_the_file_and_skips_unmet_requirements(tmp_path):
    """A TileLang test file run as a script: tilelang.testing.main() runs its tests under pytest; unmet
    requirements skip with their reason (-rs shows them)."""
    # Hide any GPU, so that the GPU requirements are unmet on a GPU machine too.
    no_gpu = {"CUDA_VISIBLE_DEVICES": ""}
    result = run_tilelang(tmp_path, TESTING, args=("-p", "no:cacheprovider", "-rs", "-q"), extra_env=no_gpu)
    out = assert_ran(result)
    assert "1 passed, 3 skipped" in out
    assert "Requires CUDA" in out and "no_such_package_for_tilecraft" in out


CUDA_WRITTEN = """
import torch
import tilelang
import tilelang.language as T
import tilelang.testing


@tilelang.jit(out_idx=[-1])
def add_one(N, block=256, dtype="float16"):
    @T.prim_func
    def main(A: T.Tensor((N,), dtype), B: T.Tensor((N,), dtype)):
        with T.Kernel(T.ceildiv(N, block), threads=128) as bx:
            for i in T.Parallel(block):
                B[bx * block + i] = A[bx * block + i] + 1.0

    return main


assert torch.cuda.is_available() and torch.cuda.get_device_capability() == (9, 0)
a = torch.randn(1024, device="cuda", dtype=torch.float16)
b = add_one(1024)(a.cuda())
torch.cuda.synchronize()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
ref = (a.to("cuda") + 1).to(torch.device("cuda"))
end.record()
assert start.elapsed_time(end) >= 0
torch.testing.assert_close(b, ref, rtol=1e-3, atol=1e-3)
assert b.device == torch.device("cuda")  # both "cuda" devices are the host's here
print("ok", b.device.type, torch.cuda.get_device_name())
"""


@needs_torch
def test_cuda_written_torch_script_runs_on_the_cpu_with_the_emulation(tmp_path):
    """device="cuda", .cuda(), .to("cuda"), torch.cuda.synchronize/Event/get_device_capability: with
    --cuda-on-cpu (and the chosen compute capability) the script runs on the CPU target."""
    out = assert_ran(run_tilelang(tmp_path, CUDA_WRITTEN, "--cuda-on-cpu", "--cuda-capability", "9.0"))
    assert "ok cpu" in out and "--cuda-on-cpu" in out


@needs_torch
def test_without_the_emulation_a_cuda_script_fails_with_a_hint(tmp_path):
    """No emulation unless asked for: on a machine without CUDA the script fails, and the runner says
    which option would emulate the device."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    result = run_tilelang(tmp_path, "import torch\ntorch.zeros(4, device='cuda')\n")
    assert result.returncode == 1
    assert "--cuda-on-cpu" in result.stderr


def test_script_runs_as_main_with_its_directory_on_the_path_and_its_exit_status(tmp_path):
    (tmp_path / "helper_module.py").write_text("VALUE = 41\n")
    source = """
    import sys
    import helper_module
    assert __name__ == "__main__" and sys.argv[1:] == ["--flag", "x"], (__name__, sys.argv)
    sys.exit(helper_module.VALUE + 1)
    """
    assert run_tilelang(tmp_path, source, args=("--flag", "x")).returncode == 42


def test_unmapped_submodule_names_itself_and_the_compat_doc(tmp_path):
    result = run_tilelang(tmp_path, "import tilelang.no_such_part\n")
    assert result.returncode == 1
    assert "tilelang.no_such_part" in result.stderr and "docs/compat.md" in result.stderr


@pytest.mark.parametrize(
    ("options", "words"),
    [
        (("--target", "tpu"), "unknown target kind 'tpu'"),
        (("--cuda-capability", "9.0"), "needs --cuda-on-cpu"),
    ],
)
def test_bad_options_are_usage_errors(tmp_path, options, words):
    result = run_tilelang(tmp_path, "print('ran')\n", *options)
    assert result.returncode == 2 and words in result.stderr and "ran" not in result.stdout


def test_a_missing_script_is_named(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, "-m", "tilecraft.compat", str(tmp_path / "nope.py")]
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 2 and "nope.py" in result.stderr and "is not a file" in result.stderr


SPAWNED = """
import multiprocessing as mp
import tilelang
import tilelang.language as T


def child(_):
    import tilelang.testing

    return tilelang.__name__, T.__name__, tilelang.testing.__name__


if __name__ == "__main__":
    for method in ("spawn", "forkserver"):
        with mp.get_context(method).Pool(1) as pool:
            assert pool.map(child, [0]) == [("tilecraft", "tilecraft.language", "tilecraft.testing")], method
    print("ok")
"""


def test_processes_started_by_multiprocessing_see_tilelang_too(tmp_path):
    """Spawned children re-import the script, `import tilelang` included (autotuners compile in them)."""
    assert "ok" in assert_ran(run_tilelang(tmp_path, SPAWNED))


TORCH_MACHINERY = """
import torch


@torch.compile  # importing torch's compiler checks every torch.cuda function object it knows
def ref(x):
    return x * 2


devices = list(range(torch.cuda.device_count()))
with torch.random.fork_rng(devices=devices):  # asks the tensors' (host) device module for its state
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    x = torch.randn(3, device="cuda")
print("ok", len(devices))
"""


@needs_torch
def test_the_emulation_keeps_torch_compile_and_fork_rng_working(tmp_path):
    """Found by TileLang's flash-attention and flash-decoding examples: one function object standing for
    several torch.cuda names broke `import torch._dynamo`, and fork_rng needs torch.cpu's rng state."""
    assert "ok 1" in assert_ran(run_tilelang(tmp_path, TORCH_MACHINERY, "--cuda-on-cpu"))


def test_a_script_using_an_unmapped_part_of_tvm_fails_in_one_line(tmp_path):
    result = run_tilelang(
        tmp_path, "import tilelang\nimport tvm\nprint(tvm.DataType('float16').bits)\ntvm.IRModule\n"
    )
    assert result.returncode == 1 and result.stdout.strip() == "16"
    assert "UnmappedTvmError: `tvm.IRModule` is not provided: tilecraft has no TVM" in result.stderr


NAMES_THE_CUDA_TARGET = """
import numpy as np
import torch
import tilelang
import tilelang.language as T
from tilelang import tvm


def scale_rows(m, n):
    @T.prim_func
    def kernel(A: T.Tensor((m, n), "float32"), s: T.Tensor((m,), "float32"), B: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(m, 8), threads=64) as bx:
            for i, j in T.Parallel(8, n):
                if bx * 8 + i < m:
                    B[bx * 8 + i, j] = A[bx * 8 + i, j] * s[bx * 8 + i] + 1.0

    return kernel


jitted = tilelang.jit(scale_rows, target="cuda")
rng = np.random.default_rng()
m, n = 13, 37
a = torch.from_numpy(rng.standard_normal((m, n)).astype(np.float32)).cuda()
s = torch.from_numpy(rng.standard_normal(m).astype(np.float32)).cuda()
ref = a.numpy().astype(np.float64) * s.numpy().astype(np.float64)[:, None] + 1.0
for kernel in (
    jitted(m, n),
    tilelang.compile(scale_rows(m, n), target="cuda -arch=sm_80"),
    tilelang.compile(scale_rows(m, n), target=tvm.target.Target("cuda")),
):
    b = torch.full((m, n), float("nan"), device="cuda")
    kernel(a, s, b)
    np.testing.assert_allclose(b.numpy(), ref, rtol=1e-6, atol=1e-6)
    print("target", kernel.context.target)
"""


@needs_torch
def test_the_emulation_runs_a_kernel_that_names_the_cuda_target_on_the_host_target(tmp_path):
    """Under --cuda-on-cpu, `target="cuda"` (with an arch, or TVM's Target) means the emulated device:
    the kernel runs on the target that `"auto"` resolves to, --target's."""
    out = assert_ran(run_tilelang(tmp_path, NAMES_THE_CUDA_TARGET, "--cuda-on-cpu"))
    assert out.count("target c") == 3, out
