"""Device timers chosen by the execution backends: the host's wall clock for launches that return when
done, and for NVIDIA GPUs CUDA events through torch (or the wall clock with the device synchronized),
with an L2 flush between timed calls. The GPU paths run here against fake torch and driver objects that
record what they are asked to do; a GPU machine runs them for real (tests/cuda)."""

from __future__ import annotations

import sys
import types
from contextlib import contextmanager

from tilecraft.backend.context import create_backend_context
from tilecraft.execution.cuda_driver import timing
from tilecraft.profiler import do_bench
from tilecraft.runtime.timing import DeviceTimer


class Device:
    """A fake GPU: a clock that the benchmarked function advances, and a log of requests."""

    def __init__(self):
        self.now = 0.0
        self.log = []

    def work(self, ms=2.0):
        self.log.append("work")
        self.now += ms


def fake_torch(gpu):
    class Event:
        def __init__(self, enable_timing):
            assert enable_timing
            self.at = None

        def record(self, stream):
            gpu.log.append(("record", stream))
            self.at = gpu.now

        def elapsed_time(self, other):
            return other.at - self.at

    class Buffer:
        def __init__(self, numel, dtype, device):
            gpu.log.append(("alloc", numel, dtype, device))

        def zero_(self):
            gpu.log.append("flush")

    cuda = types.SimpleNamespace(
        is_initialized=lambda: True,
        Event=Event,
        synchronize=lambda device: gpu.log.append(("sync", device)),
        current_stream=lambda device: f"stream of device {device}",
    )
    return types.SimpleNamespace(
        cuda=cuda, int32="int32", device=lambda kind, index: (kind, index), empty=Buffer
    )


class FakeDriver:
    def __init__(self, gpu):
        self.gpu = gpu

    def primary_context(self, device):
        return 100 + device

    @contextmanager
    def using_context(self, context):
        self.gpu.log.append(("context", context))
        yield

    def synchronize(self):
        self.gpu.log.append("sync")

    def mem_alloc(self, nbytes):
        self.gpu.log.append(("alloc", nbytes))
        return 0xABC

    def memset_d32(self, pointer, value, count):
        self.gpu.log.append(("memset", pointer, value, count))

    def mem_free(self, pointer):
        self.gpu.log.append(("free", pointer))


def test_the_host_targets_time_with_the_wall_clock():
    ctx = create_backend_context("c")
    timer = ctx.execution_backend().timer(ctx.target, 1 << 20)
    assert type(timer) is DeviceTimer and timer.description == "wall clock"


def test_torch_events_on_the_current_stream_with_an_l2_flush(monkeypatch):
    gpu = Device()
    monkeypatch.setitem(sys.modules, "torch", fake_torch(gpu))
    timer = timing.cuda_timer(1, 4096)
    assert isinstance(timer, timing.TorchEventTimer)
    assert do_bench(gpu.work, _n_warmup=1, _n_repeat=3, timer=timer) == 2.0
    assert gpu.log.count(("alloc", 1024, "int32", ("cuda", 1))) == 1  # one flush buffer, reused
    timed = gpu.log[gpu.log.index("flush") :]
    step = ["flush", ("record", "stream of device 1"), "work", ("record", "stream of device 1")]
    assert timed[: 4 * 3] == step * 3
    assert ("sync", 1) in gpu.log


def test_without_torch_the_wall_clock_waits_for_the_device_and_flushes_with_the_driver(monkeypatch):
    gpu = Device()
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(timing, "get_driver", lambda: FakeDriver(gpu))
    timer = timing.cuda_timer(2, 4096)
    assert type(timer) is DeviceTimer
    timer.flush_cache()
    timer.flush_cache()
    start = timer.mark()
    assert isinstance(start, float)
    assert gpu.log.count(("alloc", 4096)) == 1
    assert gpu.log.count(("memset", 0xABC, 0, 1024)) == 2
    assert gpu.log[-2:] == [("context", 102), "sync"]  # a mark first waits for the device


def test_the_cuda_runtime_backends_pick_the_device_from_the_target(monkeypatch):
    from tilecraft.backend.target import Target
    from tilecraft.execution.nvrtc.backend import NVRTC, NvrtcExecutionBackend

    seen = []
    monkeypatch.setattr(timing, "cuda_timer", lambda device, nbytes: seen.append((device, nbytes)) or "timer")
    backend = NvrtcExecutionBackend(NVRTC)
    assert backend.timer(Target.parse("cuda -arch=sm_90 -device=3"), 123) == "timer"
    assert seen == [(3, 123)]
