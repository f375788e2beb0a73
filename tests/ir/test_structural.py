"""Structural equality ignores names but not structure; the structural hash is stable across processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import tilecraft.language as T
from tilecraft.ir import IRModule, Var, structural_equal, structural_hash
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.testing.conformance import kernels

ROOT = Path(__file__).resolve().parents[2]


def scale_kernel(factor: float = 2.0, block: int = 32, scope: str = "shared.dyn", kind: str = "Parallel"):
    loop = getattr(T, kind)

    @T.prim_func
    def scale(A: T.Tensor((128, 64), "float32"), B: T.Tensor((128, 64), "float32")):
        with T.Kernel(128 // block, threads=128) as bx:
            tile = T.alloc_shared((block, 64), "float32", scope=scope)
            T.copy(A[bx * block, 0], tile)
            for i in loop(block):
                for j in T.serial(64):
                    B[bx * block + i, j] = tile[i, j] * factor

    return scale


def renamed_scale_kernel():
    """`scale_kernel()` with every parameter, buffer, loop and block variable renamed (the function's
    name is its symbol, so it stays)."""

    @T.prim_func
    def scale(X: T.Tensor((128, 64), "float32"), Y: T.Tensor((128, 64), "float32")):
        with T.Kernel(4, threads=128) as block_index:
            staged = T.alloc_shared((32, 64), "float32")
            T.copy(X[block_index * 32, 0], staged)
            for row in T.Parallel(32):
                for col in T.serial(64):
                    Y[block_index * 32 + row, col] = staged[row, col] * 2.0

    return scale


def test_equal_up_to_names():
    assert structural_equal(scale_kernel(), renamed_scale_kernel())
    assert structural_hash(scale_kernel()) == structural_hash(renamed_scale_kernel())


def test_function_names_count():
    """A function's name is its kernel symbol, not a bound name."""
    renamed = scale_kernel()
    renamed = type(renamed)("other", renamed.params, renamed.body, renamed.attrs)
    assert not structural_equal(scale_kernel(), renamed)


def test_names_count_when_asked():
    assert not structural_equal(scale_kernel(), renamed_scale_kernel(), map_names=False)
    assert structural_equal(scale_kernel(), scale_kernel(), map_names=False)


@pytest.mark.parametrize(
    "change",
    [{"factor": 3.0}, {"block": 16}, {"scope": "shared"}, {"kind": "serial"}],
    ids=["constant", "tile-size", "scope", "loop-kind"],
)
def test_structure_counts(change):
    assert not structural_equal(scale_kernel(), scale_kernel(**change))
    assert structural_hash(scale_kernel()) != structural_hash(scale_kernel(**change))


def test_binding_structure_counts():
    """Swapping which loop variable indexes which dim is a different kernel, whatever the names."""

    def make(transposed: bool):
        @T.prim_func
        def f(A: T.Tensor((16, 16), "float32")):
            with T.Kernel(1, threads=32):
                for i, j in T.Parallel(16, 16):
                    if transposed:
                        A[j, i] = 0.0
                    else:
                        A[i, j] = 0.0

        return f

    assert structural_equal(make(False), make(False))
    assert not structural_equal(make(False), make(True))


def test_buffer_identity_counts():
    """Copying a tile onto itself is not copying it to another tile of the same shape."""

    def make(same: bool):
        @T.prim_func
        def f(A: T.Tensor((16, 16), "float32")):
            with T.Kernel(1, threads=32):
                a = T.alloc_shared((16, 16), "float32")
                b = T.alloc_shared((16, 16), "float32")
                T.copy(a, a if same else b)

        return f

    assert not structural_equal(make(True), make(False))


def test_dtypes_count():
    i, j = Var(dt.int32, "i"), Var(dt.int64, "i")
    assert not structural_equal(i + 1, j + 1)
    assert not structural_equal(E.const(1, "int32"), E.const(1, "int64"))
    assert not structural_equal(E.const(1.0, "float16"), E.const(1.0, "bfloat16"))


def test_free_variables_match_up_to_renaming_but_not_reuse():
    x, y = Var(dt.int32, "x"), Var(dt.int32, "y")
    assert structural_equal(x + 1, y + 1)
    assert structural_equal(x + y, y + x)
    assert not structural_equal(x + x, x + y)


def test_structurally_equal_trees_hash_equal():
    for name, build in kernels.KERNELS.items():
        assert structural_hash(build()) == structural_hash(build()), name


def test_different_kernels_hash_differently():
    hashes = {name: structural_hash(build()) for name, build in kernels.KERNELS.items()}
    assert len(set(hashes.values())) == len(hashes)


def test_module_hash_depends_on_every_function():
    a, b = scale_kernel(), scale_kernel(factor=3.0)
    assert structural_hash(IRModule((a, b))) != structural_hash(IRModule((a, a)))
    assert structural_equal(IRModule((a, b)), IRModule((renamed_scale_kernel(), b)))


_HASH_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from tilecraft.testing.conformance import kernels
from tilecraft.ir import structural_hash
for name in sorted(kernels.KERNELS):
    print(name, structural_hash(kernels.KERNELS[name]()))
"""


def test_hash_is_stable_across_processes():
    """A cache key must not depend on id(), dict order or PYTHONHASHSEED of the process."""
    expected = "".join(
        f"{name} {structural_hash(kernels.KERNELS[name]())}\n" for name in sorted(kernels.KERNELS)
    )
    for seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run(
            [sys.executable, "-c", _HASH_SCRIPT.format(root=str(ROOT))],
            capture_output=True,
            text=True,
            env=env,
            check=True,
            cwd=ROOT,
        ).stdout
        assert out == expected


def test_spans_count_when_asked(tmp_path):
    """The compile cache's key: one kernel written at two lines hashes alike without spans, apart with."""
    text = (
        "import tilecraft.language as T\n\n"
        "@T.prim_func\n"
        "def copy(A: T.Tensor((64,), 'float32'), B: T.Tensor((64,), 'float32')):\n"
        "    with T.Kernel(1, threads=1) as bx:\n"
        "        for i in T.serial(64):\n"
        "            B[i] = A[i]\n"
    )
    funcs = []
    for name, blank in (("a.py", 0), ("b.py", 3)):
        path = tmp_path / name
        path.write_text("\n" * blank + text)
        namespace: dict = {}
        exec(compile(path.read_text(), str(path), "exec"), namespace)  # noqa: S102 - the test's kernel
        funcs.append(namespace["copy"])
    assert structural_hash(funcs[0], map_names=False) == structural_hash(funcs[1], map_names=False)
    assert structural_hash(funcs[0], spans=True) != structural_hash(funcs[1], spans=True)
    assert structural_hash(scale_kernel(), spans=True) == structural_hash(scale_kernel(), spans=True)
