"""T.fill / T.clear of one element (`T.clear(var)` of a T.alloc_var, `T.fill(tile[i], v)`), as TileLang
(gdn/example_chunk_o_bwd clears its alloc_var accumulators with T.clear)."""

from __future__ import annotations

import numpy as np

import tilecraft
import tilecraft.language as T
from tilecraft.ir import stmt as S


def fill_elements(n: int):
    @T.prim_func
    def main(
        A: T.Tensor((n, 128), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n, 128), "float32")
    ):
        with T.Kernel(n, threads=128) as bx:
            acc = T.alloc_var("float32")
            tile = T.alloc_shared((128,), "float32")
            acc = 5.0
            T.clear(acc)
            T.copy(A[bx, :], tile)
            T.fill(tile[3], 7.0)
            T.clear(tile[bx % 4 + 5])
            for i in T.serial(128):
                acc = acc + tile[i]
            B[bx] = acc
            T.copy(tile, C[bx, :])

    return main


def reference(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    c = a.astype(np.float64)
    c[:, 3] = 7.0
    c[np.arange(len(a)), np.arange(len(a)) % 4 + 5] = 0.0
    return c.sum(axis=1), c


def test_a_single_element_is_a_one_element_region():
    fills = [s for s in _walk(fill_elements(3).body) if isinstance(s, S.Fill)]
    assert [tuple(int(r.extent.value) for r in f.dst.ranges) for f in fills] == [(1,), (1,), (1,)]


def test_fill_and_clear_of_one_element_on_the_cpu():
    a = np.random.default_rng(1).standard_normal((7, 128)).astype(np.float32)
    b, c = np.zeros(7, np.float32), np.zeros((7, 128), np.float32)
    tilecraft.compile(fill_elements(7), target="c")(a, b, c)
    ref_b, ref_c = reference(a)
    assert np.abs(c - ref_c).max() == 0
    assert np.abs(b - ref_b).max() / np.abs(ref_b).max() < 1e-5


def _walk(node):
    from tilecraft.ir.visitor import walk

    return walk(node)
