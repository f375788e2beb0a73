"""AOT export on the CPU target: a C program built against an export's header and loader calls the
kernel and gets the numbers NumPy gets; `tilecraft.load` loads the export back without a compiler."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft import settings
from tilecraft.execution.cc import toolchain

CC = toolchain.find_compiler_path() or shutil.which("cc")
BLOCK = 64
MAIN = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "affine.h"

/* affine.bin: n (int32), then X (n x 3 float32), W (3 float32); writes Y (n x 3) and Cnt (n) to out.bin */
int main(int argc, char **argv) {
    if (tilecraft_affine_load(argv[1]) != 0) { fprintf(stderr, "load: %s\n", tilecraft_affine_last_error()); return 2; }
    FILE *in = fopen(argv[2], "rb");
    int32_t n;
    if (fread(&n, 4, 1, in) != 1) return 3;
    float *x = malloc(sizeof(float) * 3 * n), w[3], *y = malloc(sizeof(float) * 3 * n);
    int32_t *cnt = malloc(sizeof(int32_t) * n);
    if (fread(x, sizeof(float), 3 * (size_t)n, in) != 3 * (size_t)n || fread(w, sizeof(float), 3, in) != 3) return 3;
    fclose(in);
    for (int i = 0; i < 3 * n; i++) y[i] = NAN;  /* poisoned: every element must be written */
    for (int i = 0; i < n; i++) cnt[i] = -1;
    int32_t rc = tilecraft_affine(x, w, (int16_t)-3, 0.75, y, cnt, n);
    if (rc != 0) { fprintf(stderr, "run: %s\n", tilecraft_affine_error(rc)); return 4; }
    FILE *out = fopen(argv[3], "wb");
    fwrite(y, sizeof(float), 3 * (size_t)n, out);
    fwrite(cnt, sizeof(int32_t), (size_t)n, out);
    fclose(out);
    return 0;
}
"""


def _affine():
    n = T.dynamic("n")

    @T.prim_func
    def affine(X: T.Tensor((n, 3), "float32"), W: T.Tensor((3,), "float32"), k: T.int16, alpha: T.float64,
               Y: T.Tensor((n, 3), "float32"), Cnt: T.Tensor((n,), "int32")):  # fmt: skip
        with T.Kernel(T.ceildiv(n, BLOCK), threads=1) as bx:
            for i, j in T.Parallel(BLOCK, 3):
                if bx * BLOCK + i < n:
                    Y[bx * BLOCK + i, j] = X[bx * BLOCK + i, j] * W[j] * alpha + k
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    Cnt[bx * BLOCK + i] = n + k

    return affine


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    kernel = tilecraft.compile(_affine(), out_idx=[4, 5], target="c")
    return kernel.export(tmp_path_factory.mktemp("export") / "affine")


def reference(x, w, k, alpha):
    return x.astype(np.float64) * w.astype(np.float64) * alpha + k


def test_the_export_holds_the_library_the_header_and_the_loader(exported):
    names = {p.name for p in exported.iterdir()}
    assert {"kernel.so", "affine.h", "affine.c", "export.json"} <= names
    header = (exported / "affine.h").read_text()
    signature = "int32_t tilecraft_affine(float *X, float *W, int16_t k, double alpha, float *Y, int32_t *Cnt, int32_t n);"
    assert signature in header
    assert " *   X: (n, 3) float32\n" in header and " *   Y: (n, 3) float32, written\n" in header


@pytest.mark.skipif(CC is None, reason="no C compiler to build the C program with")
@pytest.mark.parametrize("n", [1, 64, 203])
def test_a_c_program_calls_the_exported_kernel(exported, tmp_path, n):
    (tmp_path / "main.c").write_text(MAIN)
    program = tmp_path / "main"
    build = subprocess.run([CC, "-O1", "-Wall", "-Werror", f"-I{exported}", str(tmp_path / "main.c"),
                            str(exported / "affine.c"), "-o", str(program), "-ldl", "-lm"],
                           capture_output=True, text=True)  # fmt: skip
    assert build.returncode == 0, build.stderr
    rng = np.random.default_rng(n)
    x, w = rng.standard_normal((n, 3)).astype(np.float32), rng.standard_normal(3).astype(np.float32)
    (tmp_path / "in.bin").write_bytes(np.int32(n).tobytes() + x.tobytes() + w.tobytes())
    run = subprocess.run([str(program), str(exported / "kernel.so"), str(tmp_path / "in.bin"), str(tmp_path / "out.bin")],
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = (tmp_path / "out.bin").read_bytes()
    y = np.frombuffer(out[: 12 * n], np.float32).reshape(n, 3)
    cnt = np.frombuffer(out[12 * n :], np.int32)
    np.testing.assert_allclose(y, reference(x, w, -3, 0.75), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(cnt, np.full(n, n - 3, np.int32))


@pytest.mark.skipif(CC is None, reason="no C compiler to build the C program with")
def test_loading_something_else_says_why(exported, tmp_path):
    (tmp_path / "main.c").write_text(MAIN)
    program = tmp_path / "main"
    subprocess.run([CC, f"-I{exported}", str(tmp_path / "main.c"), str(exported / "affine.c"), "-o", str(program),
                    "-ldl", "-lm"], check=True)  # fmt: skip
    run = subprocess.run([str(program), str(tmp_path / "missing.so"), "x", "y"], capture_output=True, text=True)
    assert run.returncode == 2 and "missing.so" in run.stderr


def test_tilecraft_load_needs_no_compiler(exported, monkeypatch):
    monkeypatch.setattr(toolchain, "compile_shared", lambda *a, **k: pytest.fail("load compiled a kernel"))
    with settings.override(TILECRAFT_CC="/nonexistent/cc", TILECRAFT_LAUNCHER="python"):
        kernel = tilecraft.load(exported)
        x = np.random.default_rng(5).standard_normal((70, 3)).astype(np.float32)
        w = np.random.default_rng(6).standard_normal(3).astype(np.float32)
        y, cnt = kernel(x, w, 2, -1.5)  # the out_idx it was exported with
    np.testing.assert_allclose(y, reference(x, w, 2, -1.5), rtol=1e-5, atol=1e-6)
    assert (cnt == 72).all()


def test_a_damaged_export_is_refused(exported, tmp_path):
    damaged = tmp_path / "damaged"
    shutil.copytree(exported, damaged)
    (damaged / "kernel.so").write_bytes(b"not a library")
    with pytest.raises(Exception, match="not a valid tilecraft export"):
        tilecraft.load(damaged)


@pytest.mark.skipif(CC is None, reason="no C compiler to build the C API with")
def test_the_c_api_of_parameters_named_after_c_and_loader_names_compiles(tmp_path):
    """A parameter named after a C macro (NULL), a library object (errno) or the loader's own globals
    (entry) gets a trailing underscore in the C API, so the loader compiles and calls the kernel."""

    @T.prim_func
    def c_names(NULL: T.Tensor((64,), "float32"), entry: T.Tensor((64,), "float32"), errno: T.float32):
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(64):
                entry[i] = NULL[i] * errno

    with settings.override(TILECRAFT_DISABLE_CACHE=True):
        kernel = tilecraft.compile(c_names, target="c")
    path = kernel.export(tmp_path / "c_names")
    assert "tilecraft_c_names(float *NULL_, float *entry_, float errno_);" in (path / "c_names.h").read_text()
    build = subprocess.run([CC, "-Wall", "-Werror", "-c", f"-I{path}", str(path / "c_names.c"), "-o",
                            str(tmp_path / "c_names.o")], capture_output=True, text=True)  # fmt: skip
    assert build.returncode == 0, build.stderr
    x, y = np.random.default_rng(5).standard_normal(64).astype(np.float32), np.full(64, np.nan, np.float32)
    kernel(x, y, 2.5)
    np.testing.assert_allclose(y, x * np.float32(2.5), rtol=1e-6)
