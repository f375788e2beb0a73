"""The launch benchmark's tiny kernel written for TileLang (no `from __future__ import annotations`: the
parameter annotations name a variable of the enclosing function, which string annotations would not
capture). Imported only when TileLang is."""

import tilelang
import tilelang.language as T


def tiny(n=32, out_idx=(-1,)):
    @tilelang.jit(out_idx=list(out_idx) if out_idx else None)
    def make(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(1, threads=32) as _:
                for i in T.Parallel(n):
                    B[i] = A[i] + 1.0

        return main

    return make(n)
