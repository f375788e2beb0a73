"""The generated launcher, without a GPU: argument packing, grids, streams and errors, with the driver's
launch call replaced by a recorder."""

from __future__ import annotations

import ctypes
import struct
import types

import numpy as np
import pytest

from tilecraft.backend import Target
from tilecraft.errors import ArgumentError, TilecraftError
from tilecraft.execution.cuda_driver import launch as launch_module
from tilecraft.execution.cuda_driver.launch import (
    LaunchHooks,
    ParamBuffer,
    build_launcher,
    make_stream_resolver,
)
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.runtime import CompiledArtifact, KernelInfo, ParamInfo
from tilecraft.runtime.arrays import ArrayArg

# (dtype, value, the C type it reaches the kernel as, the value the kernel reads)
SCALARS = [
    ("bool", True, "<i", 1), ("int8", -5, "<b", -5), ("int16", -30000, "<h", -30000),
    ("int32", -(2**31), "<i", -(2**31)), ("int64", 2**62 + 3, "<q", 2**62 + 3), ("uint8", 255, "<B", 255),
    ("uint16", 65535, "<H", 65535), ("uint32", 2**32 - 1, "<I", 2**32 - 1), ("uint64", 2**64 - 1, "<Q", 2**64 - 1),
    ("float16", 1.5, "<f", 1.5), ("bfloat16", -2.25, "<f", -2.25), ("float32", 0.1, "<f", 0.1),
    ("float64", 0.1, "<d", 0.1),
]  # fmt: skip


def _unpack(slot: bytes, fmt: str):
    return struct.unpack_from(fmt, slot)[0]


@pytest.mark.parametrize(("dtype", "value", "fmt", "expected"), SCALARS, ids=[s[0] for s in SCALARS])
def test_each_scalar_dtype_is_passed_as_its_c_type(dtype, value, fmt, expected):
    buffer = ParamBuffer([ParamInfo("p", "buffer", dt.float32), ParamInfo("x", "scalar", dt.as_dtype(dtype))])
    buffer.pack([0xDEAD_BEEF_0000, value])
    assert _unpack(buffer.slot(0), "<Q") == 0xDEAD_BEEF_0000
    got = _unpack(buffer.slot(1), fmt)
    assert got == pytest.approx(expected) if fmt in ("<f", "<d") else got == expected
    size = struct.calcsize(fmt)
    assert buffer.slot(1)[size:] == b"\x00" * (8 - size)  # padding stays zero


def test_slots_are_eight_bytes_apart_and_the_pointer_array_points_at_them():
    buffer = ParamBuffer([ParamInfo(f"p{i}", "scalar", dt.int8) for i in range(5)])
    base = ctypes.addressof(buffer.storage)
    assert [buffer.pointers[i] for i in range(5)] == [base + 8 * i for i in range(5)]
    assert buffer.address == ctypes.addressof(buffer.pointers)
    assert ParamBuffer([]).address is None  # NULL kernelParams for a kernel without parameters


def test_numpy_scalars_take_the_slow_path_and_bad_values_are_named():
    buffer = ParamBuffer([ParamInfo("flag", "scalar", dt.bool_), ParamInfo("x", "scalar", dt.float32)])
    buffer.repack([np.bool_(True), np.float64(2.5)], "k")
    assert _unpack(buffer.slot(0), "<i") == 1 and _unpack(buffer.slot(1), "<f") == 2.5
    small = ParamBuffer([ParamInfo("n", "scalar", dt.int8)])
    with pytest.raises(ArgumentError, match=r"kernel k: parameter 'n' \(int8\) cannot take 300"):
        small.repack([300], "k")


def test_unsupported_scalar_dtypes_fail_at_load():
    with pytest.raises(TilecraftError, match="float8_e4m3fn, which a CUDA kernel cannot take by value"):
        ParamBuffer([ParamInfo("x", "scalar", dt.float8_e4m3fn)])


# ---------------------------------------------------------------------- the generated launcher


class Recorder:
    """Stands in for cuLaunchKernel: records each launch and the bytes of its parameter slots."""

    def __init__(self, counts: dict[int, int], results: list[int] | None = None) -> None:
        self.counts = counts
        self.results = list(results or [])
        self.launches: list[tuple] = []

    def __call__(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra) -> int:
        if self.results:
            return self.results.pop(0)
        slots = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p)) if params else None
        values = [ctypes.string_at(slots[i], 8) for i in range(self.counts[fn])]
        self.launches.append(((fn, gx, gy, gz, bx, by, bz, smem, stream), values, extra))
        return 0


N = E.Var(dt.int32, "n")
A = ParamInfo("A", "buffer", dt.float32, (N,))
B = ParamInfo("B", "buffer", dt.float32, (N,))
ALPHA = ParamInfo("alpha", "scalar", dt.float64)
N_PARAM = ParamInfo("n", "scalar", dt.int32)


def two_kernel_artifact(second_grid=(4, 2), block=(32, 4)) -> CompiledArtifact:
    first = KernelInfo("scale", (A, B, ALPHA, N_PARAM), (E.floordiv(N + 127, 128),), (128,))
    second = KernelInfo("finish", (B,), second_grid, block, dynamic_smem=1024)
    return CompiledArtifact("f", Target.parse({"kind": "cuda", "arch": "sm_90a"}), (A, B, ALPHA), (N,),
                            (first, second), {"cuda-source": ""})  # fmt: skip


def array(ptr: int, library: str = "interface", device: int = 0, n: int = 300) -> ArrayArg:
    return ArrayArg(None, ptr, (n,), (1,), dt.float32, 2, device, library)


def make_launcher(artifact, recorder, device=0, failures=None, returns_tuple=False):
    buffers = [i for i, p in enumerate(artifact.params) if p.kind == "buffer"]
    hooks = LaunchHooks(
        recorder, returns_tuple, make_stream_resolver(buffers),
        failed=lambda k, rc, call: (failures.append((k, rc)) if failures is not None else None),
        wrong_device=lambda args: (_ for _ in ()).throw(ArgumentError("wrong device")),
    )  # fmt: skip
    return build_launcher(artifact, (11, 12), device, hooks)


def test_kernels_launch_in_order_with_their_grids_blocks_and_arguments(no_driver):
    recorder = Recorder({11: 4, 12: 1})
    launch = make_launcher(two_kernel_artifact(), recorder)
    launch([array(0x1000), array(0x2000), 0.5], [300])
    (first, values, extra), (second, values2, _) = recorder.launches
    assert first == (11, 3, 1, 1, 128, 1, 1, 0, 0) and extra == 0
    assert [_unpack(values[0], "<Q"), _unpack(values[1], "<Q")] == [0x1000, 0x2000]
    assert _unpack(values[2], "<d") == 0.5 and _unpack(values[3], "<i") == 300  # n comes from the dims
    assert second == (12, 4, 2, 1, 32, 4, 1, 1024, 0)
    assert _unpack(values2[0], "<Q") == 0x2000


def test_each_call_repacks_in_place(no_driver):
    recorder = Recorder({11: 4, 12: 1})
    launch = make_launcher(two_kernel_artifact(), recorder)
    launch([array(0x1000), array(0x2000), 0.5], [300])
    launch([array(0x3000, n=1), array(0x4000, n=1), 2.0], [1])
    first, values, _ = recorder.launches[2]
    assert first[1] == 1 and _unpack(values[0], "<Q") == 0x3000 and _unpack(values[3], "<i") == 1


def test_an_empty_grid_launches_nothing_and_a_negative_one_is_an_error(no_driver):
    recorder = Recorder({11: 4, 12: 1})
    launch = make_launcher(two_kernel_artifact(), recorder)
    launch([array(1), array(2), 1.0], [0])
    assert [call[0][0] for call in recorder.launches] == [12]  # only the constant-grid kernel
    with pytest.raises(ArgumentError, match=r"kernel scale: grid \(-1, 1, 1\) is out of range"):
        launch([array(1), array(2), 1.0], [-200])


def test_bad_launch_metadata_fails_at_load(no_driver):
    with pytest.raises(TilecraftError, match=r"block \(64, 32, 1\) \(2048 threads\) exceeds the CUDA limits"):
        make_launcher(two_kernel_artifact(block=(64, 32)), Recorder({}))
    with pytest.raises(TilecraftError, match="grid dim y is 70000; CUDA allows 1..65535"):
        make_launcher(two_kernel_artifact(second_grid=(1, 70000)), Recorder({}))


def test_kernel_parameters_must_come_from_the_function():
    stray = KernelInfo("k", (ParamInfo("Z", "buffer", dt.float32),), (1,), (32,))
    artifact = CompiledArtifact("f", Target.parse({"kind": "cuda", "arch": "sm_80"}), (A,), (N,), (stray,))
    with pytest.raises(
        TilecraftError, match=r"parameter 'Z' is neither a parameter nor a symbolic dim of f \(known: A, n\)"
    ):
        make_launcher(artifact, Recorder({}))
    clash = KernelInfo("k", (ParamInfo("A", "scalar", dt.int32),), (1,), (32,))
    artifact = CompiledArtifact("f", Target.parse({"kind": "cuda", "arch": "sm_80"}), (A,), (N,), (clash,))
    with pytest.raises(TilecraftError, match="parameter 'A' is a scalar but the function's parameter"):
        make_launcher(artifact, Recorder({}))


def test_a_launch_function_returning_a_tuple(no_driver):
    """cuda-python's cuLaunchKernel returns `(CUresult,)`; the launcher unpacks it."""
    failures: list = []

    class TupleRecorder(Recorder):
        def __call__(self, *args):
            return (super().__call__(*args),)

    recorder = TupleRecorder({11: 4, 12: 1}, results=[202])
    launch = make_launcher(two_kernel_artifact(), recorder, failures=failures, returns_tuple=True)
    launch([array(1), array(2), 1.0], [10])
    assert failures == [(0, 202)] and len(recorder.launches) == 1
    assert "rc, = _launch(" in launch.__source__


def test_arrays_on_another_device_are_refused(no_driver):
    launch = make_launcher(two_kernel_artifact(), Recorder({11: 4, 12: 1}), device=1)
    with pytest.raises(ArgumentError, match="wrong device"):
        launch([array(1, device=1), array(2, device=0), 1.0], [10])


def test_a_failed_launch_goes_to_the_failure_handler(no_driver):
    failures: list = []
    launch = make_launcher(
        two_kernel_artifact(), Recorder({11: 4, 12: 1}, results=[0, 201]), failures=failures
    )
    launch([array(1), array(2), 1.0], [10])
    assert failures == [(1, 201)]


# ---------------------------------------------------------------------- streams


def test_stream_choice(no_driver, monkeypatch):
    recorder = Recorder({11: 4, 12: 1})
    launch = make_launcher(two_kernel_artifact(), recorder)
    args = [array(1), array(2), 1.0]

    def stream_of(**kw):
        launch(kw.get("args", args), [10], kw.get("stream"))
        return recorder.launches[-1][0][8]

    assert stream_of() == 0  # no torch tensor, no stream: the default stream
    assert stream_of(stream=0x77) == 0x77
    assert stream_of(stream=types.SimpleNamespace(cuda_stream=0x88)) == 0x88  # torch.cuda.Stream
    assert stream_of(stream=types.SimpleNamespace(__cuda_stream__=lambda: (0, 0x99))) == 0x99
    assert stream_of(stream=types.SimpleNamespace(ptr=0xAA)) == 0xAA  # a CuPy stream
    seen = []
    monkeypatch.setattr(launch_module, "_torch_stream", [lambda device: seen.append(device) or 0x1234])
    torch_args = [array(1, "torch"), array(2, "torch"), 1.0]
    assert stream_of(args=torch_args) == 0x1234 and seen[-1] == 0  # torch's current stream on the device
    assert stream_of(args=torch_args, stream=5) == 5  # an explicit stream wins
    with pytest.raises(ArgumentError, match="stream= must be a CUDA stream"):
        stream_of(stream="default")


def test_concurrent_calls_do_not_mix_their_arguments(no_driver):
    """The driver reads the slots during the launch, with the GIL released; other threads must wait."""
    import threading
    import time

    mixed = []

    class SlowRecorder(Recorder):
        def __call__(self, fn, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
            time.sleep(0.0002)  # another thread would run here, as during a real driver call
            if fn == 11:
                slots = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
                n = _unpack(ctypes.string_at(slots[3], 8), "<i")
                if (n + 127) // 128 != gx:
                    mixed.append((n, gx))
            return 0

    launch = make_launcher(two_kernel_artifact(), SlowRecorder({}))

    def worker(n):
        for _ in range(50):
            launch([array(1, n=n), array(2, n=n), 1.0], [n])

    threads = [threading.Thread(target=worker, args=(128 * (i + 1),)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert mixed == []
