"""Kernel factories for the autotuner tests (C target), with switches that make a candidate fail in each
of the ways the tuner must survive."""

from __future__ import annotations

import os
import time

import tilecraft.language as T


class CrashOnArrival:
    """Kills the process that unpickles it: a compile worker that receives a candidate carrying it dies
    (standing in for a compiler that crashes)."""

    def __reduce__(self):
        return (os._exit, (3,))


class HangOnArrival:
    """Blocks the process that unpickles it for a minute (standing in for a compiler that hangs)."""

    def __reduce__(self):
        return (time.sleep, (60,))


def add_factory(n: int = 256):
    """`factory(block, fault=None)`: C = 2 * A + B in blocks of `block`; `fault` makes the candidate fail:
    "elaborate" (the factory raises), "compile" (lowering fails: scratch beyond the CPU budget), "crash"
    and "hang" (in the compile worker), "wrong" (computes A + B)."""

    def factory(block: int = 64, fault: str | None = None):
        if fault == "elaborate":
            raise ValueError(f"block {block} is not supported")
        scratch = 1 << 29 if fault == "compile" else block
        scale = 1.0 if fault == "wrong" else 2.0

        @T.prim_func
        def add(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
            with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
                S = T.alloc_shared((scratch,), "float32")
                for i in T.Parallel(block):
                    S[i] = A[bx * block + i] * scale
                for i in T.Parallel(block):
                    C[bx * block + i] = S[i] + B[bx * block + i]

        if fault == "crash":
            return add.with_attr("test.fault", CrashOnArrival())
        if fault == "hang":
            return add.with_attr("test.fault", HangOnArrival())
        return add

    return factory


def reference(a, b):
    return 2 * a + b
