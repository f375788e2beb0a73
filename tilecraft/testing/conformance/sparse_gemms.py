"""`T.gemm_sp`: A given 2:4-compressed (its kept values and their metadata), as TileLang's gemm_sp tests
write the kernel: every tile copied into shared memory inside a pipelined loop, A_sparse or B through a
register fragment where asked, A_sparse and E stored K-major for `transpose_A`.

The inputs are built here in NumPy: a random dense A keeping `kept` of every `group` elements along K at
random positions (some kept values zero, as a compressor writes for a group with fewer nonzeros), its
compressed form, and the metadata words (language/gemm_sp.py's format, TileLang's natural row-major
one). The reference is the dense A times B in float64.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import tilecraft.language as T
from tilecraft.ir import dtype as dt
from tilecraft.language.gemm_sp import e_factor, sparsity


@dataclass(frozen=True)
class SparseGemm:
    m: int
    n: int
    k: int
    bm: int
    bn: int
    bk: int
    dtype: str = "float16"
    meta: str = "int16"
    transpose_a: bool = False
    transpose_b: bool = True
    register_a: bool = False
    register_b: bool = False
    stages: int = 2
    transpose_e: bool | None = None  # E stored K-major; as A is unless given

    @property
    def e_k_major(self) -> bool:
        return self.transpose_a if self.transpose_e is None else self.transpose_e

    @property
    def accum(self) -> str:
        return "int32" if dt.as_dtype(self.dtype).is_integer else "float32"

    @property
    def factor(self) -> int:
        return e_factor(self.dtype, self.meta)


def build(g: SparseGemm):
    """The kernel of TileLang's test_gemm_ss / rs / sr / rr for the sizes and options of `g`."""
    ef, ta, te, tb = g.factor, g.transpose_a, g.e_k_major, g.transpose_b
    a_shape = (g.k // 2, g.m) if ta else (g.m, g.k // 2)
    e_shape = (g.k // ef, g.m) if te else (g.m, g.k // ef)
    a_tile = (g.bk // 2, g.bm) if ta else (g.bm, g.bk // 2)
    e_tile = (g.bk // ef, g.bm) if te else (g.bm, g.bk // ef)
    b_tile = (g.bn, g.bk) if tb else (g.bk, g.bn)

    @T.prim_func
    def gemm_sp(A_sparse: T.Tensor(a_shape, g.dtype), E: T.Tensor(e_shape, g.meta),
                B: T.Tensor((g.n, g.k) if tb else (g.k, g.n), g.dtype), C: T.Tensor((g.m, g.n), g.accum)):  # fmt: skip
        with T.Kernel(T.ceildiv(g.n, g.bn), T.ceildiv(g.m, g.bm), threads=128) as (bx, by):
            A_shared = T.alloc_shared(a_tile, g.dtype)
            E_shared = T.alloc_shared(e_tile, g.meta)
            B_shared = T.alloc_shared(b_tile, g.dtype)
            A_frag = T.alloc_fragment(a_tile, g.dtype)
            B_frag = T.alloc_fragment(b_tile, g.dtype)
            C_frag = T.alloc_fragment((g.bm, g.bn), g.accum)
            T.clear(C_frag)
            for k in T.Pipelined(T.ceildiv(g.k, g.bk), num_stages=g.stages):
                if te:
                    T.copy(E[k * g.bk // ef, by * g.bm], E_shared)
                else:
                    T.copy(E[by * g.bm, k * g.bk // ef], E_shared)
                if ta:
                    T.copy(A_sparse[k * g.bk // 2, by * g.bm], A_shared)
                else:
                    T.copy(A_sparse[by * g.bm, k * g.bk // 2], A_shared)
                if tb:
                    T.copy(B[bx * g.bn, k * g.bk], B_shared)
                else:
                    T.copy(B[k * g.bk, bx * g.bn], B_shared)
                if g.register_a:
                    T.copy(A_shared, A_frag)
                if g.register_b:
                    T.copy(B_shared, B_frag)
                a = A_frag if g.register_a else A_shared
                b = B_frag if g.register_b else B_shared
                T.gemm_sp(a, E_shared, b, C_frag, ta, te, tb)
            T.copy(C_frag, C[by * g.bm, bx * g.bn])

    return gemm_sp


def compress(rng: np.random.Generator, m: int, k: int, dtype: str, meta: str):
    """(dense, sparse, metadata): a random A of m x k keeping `kept` of every `group` elements at random
    positions, its kept values in order, and the metadata words."""
    kept, group = sparsity(dtype)
    groups = k // group
    positions = np.sort(np.argsort(rng.random((m, groups, group)), axis=-1)[..., :kept], axis=-1)
    values = _values(rng, (m, groups, kept), dtype)
    dense = np.zeros((m, groups, group), values.dtype)
    np.put_along_axis(dense, positions, values, axis=-1)
    if kept == 2:  # two 2-bit positions a nibble, the first kept value's low
        nibbles = positions[..., 0] | positions[..., 1] << 2
    else:  # float32: 1 of 2, positions counted in 16-bit halves
        nibbles = np.where(positions[..., 0] == 0, 0b0100, 0b1110)
    bits = dt.as_dtype(meta).bits
    per_word = bits // 4
    shifts = 4 * np.arange(per_word, dtype=np.uint64)
    words = (nibbles.astype(np.uint64).reshape(m, groups // per_word, per_word) << shifts).sum(axis=-1)
    metadata = words.astype(f"uint{bits}").view(meta)
    return dense.reshape(m, k), values.reshape(m, k * kept // group), metadata


def _values(rng: np.random.Generator, shape, dtype: str) -> np.ndarray:
    d = dt.as_dtype(dtype)
    if d.is_integer:
        values = rng.integers(-8, 8, shape)
    else:
        values = rng.standard_normal(shape)
    values[rng.random(shape) < 0.1] = 0  # a group with fewer nonzeros than kept values
    return values.astype(d.as_numpy())


def inputs(g: SparseGemm):
    def make(rng: np.random.Generator) -> list[np.ndarray]:
        dense, sparse, metadata = compress(rng, g.m, g.k, g.dtype, g.meta)
        if g.transpose_a:
            sparse = np.ascontiguousarray(sparse.T)
        if g.e_k_major:
            metadata = np.ascontiguousarray(metadata.T)
        b = _values(rng, (g.n, g.k) if g.transpose_b else (g.k, g.n), g.dtype)
        poisoned = np.full((g.m, g.n), np.iinfo(np.int32).min if g.accum == "int32" else np.nan, g.accum)
        return [sparse, metadata, b, poisoned]

    return make


def reference(g: SparseGemm):
    """C = A @ B in float64, with A decompressed by the format's definition (not by the helper above)."""

    def ref(arrays: list[np.ndarray]) -> dict[int, np.ndarray]:
        sparse, metadata, b = arrays[:3]
        sparse = sparse.T if g.transpose_a else sparse
        metadata = metadata.T if g.e_k_major else metadata
        a = decompress(sparse, metadata, g.k, g.dtype)
        b = np.asarray(b, np.float64)
        return {3: a @ (b.T if g.transpose_b else b)}

    return ref


def decompress(sparse: np.ndarray, metadata: np.ndarray, k: int, dtype: str) -> np.ndarray:
    """The dense A (float64) that `sparse` and its metadata describe, element by element."""
    kept, group = sparsity(dtype)
    bits = metadata.dtype.itemsize * 8
    per_word = bits // 4
    words = metadata.view(f"uint{bits}").astype(np.int64)
    m = sparse.shape[0]
    dense = np.zeros((m, k))
    for g in range(k // group):
        nibble = (words[:, g // per_word] >> (4 * (g % per_word))) & 15
        for t in range(kept):
            position = (nibble >> (2 * t)) & 3
            if kept == 1:
                position = position // 2
            dense[np.arange(m), group * g + position] = sparse[:, kept * g + t]
    return dense
