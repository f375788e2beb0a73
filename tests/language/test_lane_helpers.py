"""TileLang's lane helpers (`T.get_lane_idx`, `T.get_warp_idx_sync`, `T.get_warp_idx`,
`T.get_warp_group_idx`, `T.shuffle_elect`): each thread's position from its index, against NumPy
references, outputs poisoned before the run; the default width is the target's thread-group width."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.transform.allreduce import DEFAULT_GROUP_WIDTH


def per_thread(n: int, helper: str, *args, dims: tuple[int, ...] | None = None):
    """A[t] = T.<helper>(*args) for each thread t of one block (of `dims` threads, x fastest)."""
    f = getattr(T, helper)
    shape = dims or (n,)

    @T.prim_func
    def kernel(A: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=shape) as _:
            if len(shape) == 1:
                t = T.get_thread_binding()
            else:
                t = T.get_thread_binding(0) + T.get_thread_binding(1) * shape[0]
            A[t] = f(*args)

    return kernel


def reference(helper: str, idx: np.ndarray, width: int, *args) -> np.ndarray:
    w = args[0] if args and args[0] is not None else width
    if helper == "get_lane_idx":
        return idx % w
    if helper in ("get_warp_idx_sync", "get_warp_idx"):
        return idx // w
    if helper == "get_warp_group_idx":
        per_group = args[1] if len(args) > 1 and args[1] is not None else 4
        return idx // (w * per_group)
    extent = args[0] if args else 0
    return (idx == 0) * 1 if extent == 0 else (idx % extent == 0) * 1


CASES = [
    ("get_lane_idx", 128, ()),
    ("get_lane_idx", 256, (64,)),
    ("get_warp_idx_sync", 256, (16,)),
    ("get_warp_idx", 320, (20,)),
    ("get_warp_idx", 96, ()),
    ("get_warp_group_idx", 512, (32, 5)),
    ("get_warp_group_idx", 384, ()),
    ("shuffle_elect", 256, (64,)),
    ("shuffle_elect", 96, (0,)),
]


def check(run, width: int, helper: str, n: int, args: tuple, dims=None) -> None:
    a = np.full(n, -7, np.int32)
    run(per_thread(n, helper, *args, dims=dims), a)
    np.testing.assert_array_equal(a, reference(helper, np.arange(n), width, *args))


@pytest.mark.parametrize("helper, n, args", CASES)
def test_lane_helpers_on_the_cpu(helper, n, args):
    check(lambda f, *a: tilecraft.compile(f, target="c")(*a), DEFAULT_GROUP_WIDTH, helper, n, args)


def test_two_thread_dims_number_threads_x_fastest():
    check(lambda f, *a: tilecraft.compile(f, target="c")(*a), DEFAULT_GROUP_WIDTH, "get_lane_idx", 96, (),
          dims=(48, 2))  # fmt: skip
