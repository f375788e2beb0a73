"""On a real GPU: `do_bench(backend="cupti")` counts the kernels' time, not the launch.

A tilecraft kernel of a few microseconds timed with CUDA events includes the host's launch; CUPTI's
records count only the kernel. Marked `gpu`: skips, with the reason, without a CUDA device and torch.
"""

from __future__ import annotations

import time

import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.errors import ArgumentError
from tilecraft.profiler import do_bench

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA device visible to torch", allow_module_level=True)


@tilecraft.jit(out_idx=[-1], target="cuda")
def add_one(n: int):
    @T.prim_func
    def main(x: T.Tensor((n,), "float32"), y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 256), threads=256) as bx:
            for i in T.Parallel(256):
                if bx * 256 + i < n:
                    y[bx * 256 + i] = x[bx * 256 + i] + 1.0

    return main


def test_cupti_times_a_small_kernel_below_its_event_time():
    kernel = add_one(4096)
    x = torch.randn(4096, device="cuda")
    torch.testing.assert_close(kernel(x), x + 1)
    events = do_bench(lambda: kernel(x), _n_warmup=10, _n_repeat=200)
    kernel_only = do_bench(lambda: kernel(x), _n_warmup=10, _n_repeat=200, backend="cupti")
    assert 0 < kernel_only < events, (kernel_only, events)
    assert kernel_only < 0.05  # a 16 KiB elementwise kernel runs in a few microseconds


def test_cupti_does_not_count_host_time_between_kernels():
    kernel = add_one(4096)
    x = torch.randn(4096, device="cuda")

    def slow_host():
        time.sleep(0.002)
        kernel(x)

    assert do_bench(slow_host, _n_warmup=1, _n_repeat=20, backend="cupti") < 0.5


def test_cupti_sums_every_kernel_of_a_call_and_leaves_the_flush_out():
    kernel = add_one(1 << 24)
    x = torch.randn(1 << 24, device="cuda")
    one = do_bench(lambda: kernel(x), _n_warmup=5, _n_repeat=50, backend="cupti")
    two = do_bench(lambda: (kernel(x), kernel(x)), _n_warmup=5, _n_repeat=50, backend="cupti")
    assert 1.6 * one < two < 2.6 * one, (one, two)


def test_cupti_with_a_function_that_launches_nothing_is_an_error():
    with pytest.raises((ArgumentError, RuntimeError), match="no GPU kernel"):
        do_bench(lambda: None, _n_warmup=1, _n_repeat=3, backend="cupti", target="cuda")
