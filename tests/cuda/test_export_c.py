"""The C API of a CUDA export: the header and the loader source compile with the CUDA headers, and a C
program linked against the fake driver launches the kernel with the grid, block and parameter bytes the
Python launcher uses. On a GPU (marked `gpu`), a C program built with gcc and libcuda runs an exported
kernel and checks its numbers."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.cuda.helpers import FakeContext, add_artifact
from tilecraft.execution.cc import toolchain
from tilecraft.execution.cuda_driver import driver as cuda_driver
from tilecraft.execution.cuda_driver.export_c import NotExportable, grid_c
from tilecraft.execution.cuda_driver.toolkit import toolkit_roots
from tilecraft.execution.nvcc.backend import NvccExecutionBackend
from tilecraft.execution.nvcc.spec import NVCC

CC = toolchain.find_compiler_path() or shutil.which("cc")
FAKE_MAIN = r"""
#include <stdio.h>
#include <stdint.h>
#include "add.h"
extern unsigned fake_dims[7];
extern unsigned char fake_params[64 * 8];
extern int fake_param_count, fake_launch_count;
extern uintptr_t fake_stream;

int main(int argc, char **argv) {
    CUcontext ctx;
    cuInit(0);
    cuDevicePrimaryCtxRetain(&ctx, 0);
    cuCtxSetCurrent(ctx);
    CUresult rc = tilecraft_add_load(argv[1]);
    if (rc != CUDA_SUCCESS) { printf("load %d\n", rc); return 2; }
    fake_param_count = 5;
    rc = tilecraft_add((CUdeviceptr)0xA000, (CUdeviceptr)0xB000, (CUdeviceptr)0xC000, 2.5f, 1000, (CUstream)0x5000);
    printf("%d %d %u %u %u %u %u %u %u %lx\n", rc, fake_launch_count, fake_dims[0], fake_dims[1], fake_dims[2],
           fake_dims[3], fake_dims[4], fake_dims[5], fake_dims[6], (unsigned long)fake_stream);
    fwrite(fake_params, 8, 5, stderr);
    rc = tilecraft_add(0, 0, 0, 1.0f, 0, 0);  /* an empty grid launches nothing */
    printf("%d %d\n", rc, fake_launch_count);
    return 0;
}
"""


def cuda_include() -> Path:
    for root in toolkit_roots():
        if (root / "include" / "cuda.h").is_file():
            return root / "include"
    pytest.skip("no CUDA toolkit headers (cuda.h) found")


@pytest.fixture
def exported(cache, tmp_path):
    backend = NvccExecutionBackend(NVCC, cache)
    built = backend.build(add_artifact(binaries={"cubin": b"\x7fELF fake cubin"}), FakeContext())
    return backend.export(built, tmp_path / "add", (2,))


def test_the_export_holds_the_cubin_the_header_and_the_loader(exported):
    assert {"kernel.cubin", "add.h", "add.c"} <= {p.name for p in exported.iterdir()}
    header = (exported / "add.h").read_text()
    assert ("CUresult tilecraft_add(CUdeviceptr A, CUdeviceptr B, CUdeviceptr C, float alpha, int32_t n, "
            "CUstream stream);") in header  # fmt: skip


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_the_c_api_compiles_and_launches_through_the_driver_api(exported, fake_library_path, tmp_path):
    (tmp_path / "main.c").write_text(FAKE_MAIN)
    program = tmp_path / "main"
    build = subprocess.run([CC, "-Wall", "-Werror", f"-I{cuda_include()}", f"-I{exported}", str(tmp_path / "main.c"),
                            str(exported / "add.c"), str(fake_library_path), f"-Wl,-rpath,{fake_library_path.parent}",
                            "-o", str(program)], capture_output=True, text=True)  # fmt: skip
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(program), str(exported / "kernel.cubin")], capture_output=True)
    assert run.returncode == 0, run.stdout
    first, second = run.stdout.decode().split("\n")[:2]
    assert first.split() == ["0", "1", "8", "1", "1", "128", "1", "1", "0", "5000"]  # ceil(1000 / 128) = 8
    assert second.split() == ["0", "1"]
    slots = [run.stderr[8 * i : 8 * i + 8] for i in range(5)]
    assert [struct.unpack("<Q", s)[0] for s in slots[:3]] == [0xA000, 0xB000, 0xC000]
    assert struct.unpack("<f", slots[3][:4])[0] == 2.5 and struct.unpack("<i", slots[4][:4])[0] == 1000


def test_grids_in_c_follow_the_launcher(tmp_path):
    from tilecraft.ir import dtype as dt
    from tilecraft.ir import expr as E

    n = E.Var(dt.int32, "n")
    assert grid_c(E.floordiv(n + 127, 128), {"n": "n"}) == "tc_floordiv(((int64_t)n + INT64_C(127)), INT64_C(128))"
    with pytest.raises(NotExportable, match="not an integer parameter"):
        grid_c(E.Var(dt.float32, "x") + 1.0, {"x": "x"})


@pytest.mark.gpu
def test_a_c_program_runs_an_exported_kernel_on_the_gpu(tmp_path):
    import tilecraft
    import tilecraft.language as T

    status = cuda_driver.device_status(0)
    if isinstance(status, Exception):
        pytest.skip(f"no CUDA device: {status.reason}")
    if CC is None:
        pytest.skip("no C compiler")
    library = _loaded_libcuda()
    n = T.dynamic("n")

    @T.prim_func
    def axpy(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), alpha: T.float32):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    Y[bx * 128 + i] = X[bx * 128 + i] * alpha + Y[bx * 128 + i]

    kernel = tilecraft.compile(axpy, execution_backend="nvcc")
    path = kernel.export(tmp_path / "axpy")
    main = tmp_path / "main.c"
    main.write_text(GPU_MAIN)
    program = tmp_path / "main"
    build = subprocess.run([CC, "-O1", f"-I{cuda_include()}", f"-I{path}", str(main), str(path / "axpy.c"), library,
                            "-o", str(program)], capture_output=True, text=True)  # fmt: skip
    assert build.returncode == 0, build.stderr
    count = 1000
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(count).astype(np.float32), rng.standard_normal(count).astype(np.float32)
    (tmp_path / "in.bin").write_bytes(x.tobytes() + y.tobytes())
    run = subprocess.run([str(program), str(path / "kernel.cubin"), str(tmp_path / "in.bin"), str(tmp_path / "out.bin"),
                          str(count)], capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    out = np.frombuffer((tmp_path / "out.bin").read_bytes(), np.float32)
    np.testing.assert_allclose(out, x.astype(np.float64) * 1.5 + y, rtol=1e-6)


def _loaded_libcuda() -> str:
    """The driver library this process loaded (device_status loaded it): it may sit outside the linker's
    search path (the GPU machines keep it in a driver directory named by LD_LIBRARY_PATH)."""
    maps = Path("/proc/self/maps")
    paths = [line.split()[-1] for line in maps.read_text().splitlines()] if maps.exists() else []
    return next((p for p in paths if Path(p).name.startswith("libcuda.so")), "-lcuda")


GPU_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include "axpy.h"

int main(int argc, char **argv) {
    int n = atoi(argv[4]);
    CUdevice dev; CUcontext ctx; CUdeviceptr x, y;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx)) return 2;
    CUresult rc = tilecraft_axpy_load(argv[1]);
    if (rc) { printf("load failed: %d\n", rc); return 3; }
    float *host = malloc(sizeof(float) * 2 * n);
    FILE *in = fopen(argv[2], "rb");
    if (fread(host, sizeof(float), 2 * (size_t)n, in) != 2 * (size_t)n) return 4;
    fclose(in);
    if (cuMemAlloc(&x, 4 * n) || cuMemAlloc(&y, 4 * n)) return 5;
    cuMemcpyHtoD(x, host, 4 * n);
    cuMemcpyHtoD(y, host + n, 4 * n);
    rc = tilecraft_axpy(x, y, 1.5f, n, 0);
    if (rc || cuCtxSynchronize()) { printf("launch failed: %d\n", rc); return 6; }
    cuMemcpyDtoH(host, y, 4 * n);
    FILE *out = fopen(argv[3], "wb");
    fwrite(host, sizeof(float), (size_t)n, out);
    fclose(out);
    return 0;
}
"""
