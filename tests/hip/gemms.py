"""Gemm kernels over the tile shapes the HIP plan makes MFMA gemms of (float16, bfloat16 and float8,
transposed and not, k-packed or not, one to four wavefronts), as conformance cases: inputs, a float64
reference. test_lds_banks.py counts their LDS bank conflicts, test_conformance_emulated.py runs them."""

from __future__ import annotations

from dataclasses import dataclass

import ml_dtypes
import numpy as np

import tilecraft.language as T
from tilecraft.testing import conformance as kit

NUMPY = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float8_e4m3fn": ml_dtypes.float8_e4m3fn,
         "float8_e5m2": ml_dtypes.float8_e5m2}  # fmt: skip
SHORT = {"float16": "f16", "bfloat16": "bf16", "float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}


@dataclass(frozen=True)
class Shape:
    a: str  # dtypes
    b: str
    bm: int  # the work-group's tile
    bn: int
    bk: int
    ta: bool = False
    tb: bool = False
    threads: int = 128

    @property
    def fp8(self) -> bool:
        return self.a.startswith("float8")

    @property
    def id(self) -> str:
        dtypes = SHORT[self.a] if self.a == self.b else f"{SHORT[self.a]}x{SHORT[self.b]}"
        t = ("t" if self.ta else "n") + ("t" if self.tb else "n")
        return f"{dtypes}_{self.bm}x{self.bn}x{self.bk}_{t}_{self.threads}"


F16, BF16, E4M3, E5M2 = "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2"
SHAPES = [
    Shape(F16, F16, 64, 64, 32),  # the kit's gemms
    Shape(F16, F16, 64, 64, 32, tb=True),
    Shape(F16, F16, 64, 64, 32, ta=True),
    Shape(F16, F16, 64, 64, 32, ta=True, tb=True),
    Shape(F16, F16, 128, 128, 64, threads=256),  # 128- and 256-byte rows, 2 x 2 wavefronts
    Shape(F16, F16, 128, 64, 128, ta=True, tb=True, threads=256),  # attention's P @ V shapes, 256-byte rows
    Shape(F16, F16, 64, 32, 256, tb=True),  # 512-byte rows
    Shape(F16, F16, 64, 16, 32, threads=64),  # one wavefront, 32-byte rows of B
    Shape(F16, F16, 32, 32, 16, threads=64),  # K = 16: one MFMA's k per read (no k-pack)
    Shape(F16, F16, 64, 64, 48),  # K = 48: rows of 96 bytes stay row-major
    Shape(BF16, BF16, 64, 64, 32),
    Shape(BF16, BF16, 64, 64, 64, ta=True, tb=True),
    Shape(E4M3, E4M3, 64, 64, 64),
    Shape(E4M3, E5M2, 64, 64, 64, tb=True),
    Shape(E5M2, E4M3, 64, 64, 64, ta=True),
    Shape(E5M2, E5M2, 64, 64, 64, ta=True, tb=True),
    Shape(E4M3, E4M3, 128, 128, 128, tb=True, threads=256),
    Shape(E4M3, E4M3, 64, 64, 32),  # K = 32: one MFMA's k per read (no k-pack)
]  # fmt: skip


def kernel(s: Shape, blocks: int = 2, ksteps: int = 2):
    """C = op(A) @ op(B) over `blocks` x `blocks` work-groups, `ksteps` k tiles each."""
    m, n, k = s.bm * blocks, s.bn * blocks, s.bk * ksteps
    a_shape, b_shape = ((k, m) if s.ta else (m, k)), ((n, k) if s.tb else (k, n))
    a_tile, b_tile = ((s.bk, s.bm) if s.ta else (s.bm, s.bk)), ((s.bn, s.bk) if s.tb else (s.bk, s.bn))
    bm, bn, bk, ta, tb = s.bm, s.bn, s.bk, s.ta, s.tb

    @T.prim_func
    def gemm(A: T.Tensor(a_shape, s.a), B: T.Tensor(b_shape, s.b), C: T.Tensor((m, n), "float32")):
        with T.Kernel(n // bn, m // bm, threads=s.threads) as (bx, by):
            A_shared = T.alloc_shared(a_tile, s.a)
            B_shared = T.alloc_shared(b_tile, s.b)
            C_local = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_local)
            for ko in T.serial(k // bk):
                if ta:
                    T.copy(A[ko * bk, by * bm], A_shared)
                else:
                    T.copy(A[by * bm, ko * bk], A_shared)
                if tb:
                    T.copy(B[bx * bn, ko * bk], B_shared)
                else:
                    T.copy(B[ko * bk, bx * bn], B_shared)
                T.gemm(A_shared, B_shared, C_local, transpose_A=ta, transpose_B=tb)
            T.copy(C_local, C[by * bm, bx * bn])

    return gemm


def case(s: Shape, blocks: int = 2, ksteps: int = 2) -> kit.Case:
    m, n, k = s.bm * blocks, s.bn * blocks, s.bk * ksteps

    def inputs(rng):
        a = (rng.standard_normal((k, m) if s.ta else (m, k)) * 2).astype(NUMPY[s.a])
        b = (rng.standard_normal((n, k) if s.tb else (k, n)) * 2).astype(NUMPY[s.b])
        return [a, b, kit.poison((m, n))]

    def reference(arrays):
        a, b = (np.asarray(x, np.float64) for x in arrays[:2])
        return {2: (a.T if s.ta else a) @ (b.T if s.tb else b)}

    return kit.Case(f"gemm_{s.id}", lambda: kernel(s, blocks, ksteps), inputs, reference, tol=1e-5)
