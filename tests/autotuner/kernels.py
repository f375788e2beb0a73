"""Kernel factories for the autotuner tests (C target), with switches that make a candidate fail in each
of the ways the tuner must survive."""

from __future__ import annotations

import os
import time
from pathlib import Path

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


class Survived:
    """What a DieOnUnpickle becomes in a process it did not kill: the same to the kernel cache."""

    def structural_key(self) -> str:
        return "test.die"


def _die_on_unpickle(path: str, nth: int) -> Survived:
    """Count the unpickles in `path`; the `nth` one kills its process."""
    marker = Path(path)
    count = int(marker.read_text() or 0) + 1 if marker.exists() else 1
    marker.write_text(str(count))
    if count == nth:
        os._exit(3)
    return Survived()


class DieOnUnpickle:
    """Kills the `nth` process that unpickles it (1: the compile worker, 2: the benchmark worker that
    measures it), once: a worker killed in the middle of a candidate, which is then run again."""

    def __init__(self, path, nth: int) -> None:
        self.path, self.nth = str(path), nth

    def __reduce__(self):
        return (_die_on_unpickle, (self.path, self.nth))

    def structural_key(self) -> str:
        return "test.die"


def spin_or_add_factory(n: int = 256, die=None):
    """`factory(block, spin=False, die=None)`: add_factory's kernel, or with `spin` one that runs for
    hours (a kernel that hangs when measured); `die` names the DieOnUnpickle of a config by key."""
    add = add_factory(n)

    def factory(block: int = 64, spin: bool = False, die: str | None = None, fault: str | None = None):
        func = spin_kernel(n, block) if spin else add(block, fault)
        return func.with_attr("test.die", die_markers[die]) if die else func

    die_markers = dict(die or {})
    return factory


def spin_kernel(n: int, block: int):
    @T.prim_func
    def spin(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
            for i in T.Parallel(block):
                C[bx * block + i] = 2 * A[bx * block + i] + B[bx * block + i]
            # 2**60 rounds: it never finishes (2**30 did in about a minute on an idle machine)
            for _k in T.serial(1 << 30):
                for _j in T.serial(1 << 30):
                    for i in T.Parallel(block):
                        C[bx * block + i] = C[bx * block + i] * 0.999 + A[bx * block + i] * 0.001

    return spin


def _note_threads(path: str) -> Survived:
    """Append this process's OMP_NUM_THREADS (or "unset") to `path`, a line per unpickle."""
    with open(path, "a") as f:
        f.write(os.environ.get("OMP_NUM_THREADS", "unset") + "\n")
    return Survived()


class NoteThreadsOnUnpickle:
    """Notes the OpenMP thread budget of every process that unpickles it (the compile worker, then the
    benchmark worker, of the candidate it rides on)."""

    def __init__(self, path) -> None:
        self.path = str(path)

    def __reduce__(self):
        return (_note_threads, (self.path,))

    def structural_key(self) -> str:
        return "test.die"
