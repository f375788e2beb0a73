"""TileLang's fixed fragment layouts of an 8x8 tile: `make_gemm_fragment_8x8` and its transpose.

They are the register layout of one 8x8 matrix of a warp-level matrix instruction (ldmatrix /
stmatrix, the m16n8 mma operands): 32 threads, two consecutive elements each. TileLang exposes them
to build fragment annotations (`make_gemm_fragment_8x8_transposed().repeat([2, 1])`); tilecraft's
layout inference treats them as any other `T.Fragment` annotation.
"""

from __future__ import annotations

from tilecraft.layout.layout import Fragment


def make_gemm_fragment_8x8() -> Fragment:
    """Element (i, j) of an 8x8 tile is held by thread `4 * i + j // 2`, in its local slot `j % 2`:
    each row spread over four threads, two adjacent columns per thread."""
    return Fragment((8, 8), forward_fn=lambda i, j: (4 * i + j // 2, j % 2))


def make_gemm_fragment_8x8_transposed() -> Fragment:
    """The transpose of `make_gemm_fragment_8x8`: element (i, j) is held by thread `4 * j + i // 2`, in
    its local slot `i % 2` (two adjacent rows per thread)."""
    return Fragment((8, 8), forward_fn=lambda i, j: (4 * j + i // 2, i % 2))
