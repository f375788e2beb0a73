"""The CPU emulator behind the fake Metal device is strict where the GPU is: without a barrier another
thread's threadgroup-memory writes are not seen, a barrier some threads skip is an error, and SIMD-group
functions are collectives of 32 lanes. Hand-written MSL, run through the fake device's API."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from tests.metal.fake_metal import fake_metal_module

HEAD = "#include <metal_stdlib>\nusing namespace metal;\n"
NEIGHBOUR = (
    HEAD
    + """
kernel void neighbour(device float* out [[buffer(0)]], threadgroup float* smem [[threadgroup(0)]],
                      uint3 tid [[thread_position_in_threadgroup]]) {
    smem[tid.x] = (float)tid.x;
    BARRIER
    out[tid.x] = smem[(tid.x + 1) % 64];
}
"""
)
SIMD = (
    HEAD
    + """
kernel void lanes(device float* out [[buffer(0)]], uint3 tid [[thread_position_in_threadgroup]]) {
    float v = (float)tid.x;
    out[tid.x] = simd_sum(v) + 1000.0f * simd_shuffle_xor(v, (ushort)3);
}
"""
)


def run(module, source: str, threads: int, smem: int = 0) -> tuple[np.ndarray, str]:
    device = module.device
    library, error = device.newLibraryWithSource_options_error_(source, module.MTLCompileOptions.new(), None)
    assert library is not None, error.localizedDescription()
    name = library.functionNames()[0]
    pipeline, _ = device.newComputePipelineStateWithFunction_error_(library.newFunctionWithName_(name), None)
    out = device.newBufferWithBytes_length_options_(bytes(4 * threads), 4 * threads, 0)
    command = device.newCommandQueue().commandBuffer()
    encoder = command.computeCommandEncoder()
    encoder.setComputePipelineState_(pipeline)
    encoder.setBuffer_offset_atIndex_(out, 0, 0)
    if smem:
        encoder.setThreadgroupMemoryLength_atIndex_(smem, 0)
    encoder.dispatchThreadgroups_threadsPerThreadgroup_((1, 1, 1), (threads, 1, 1))
    encoder.endEncoding()
    command.commit()
    error = command.error()
    return np.array(
        struct.unpack(f"<{threads}f", bytes(out.data))
    ), error.localizedDescription() if error else ""


@pytest.fixture(scope="module")
def module(emulator_compiler, emulator_build_dir):
    return fake_metal_module(7, emulator_compiler, emulator_build_dir)


def test_a_barrier_makes_other_threads_writes_visible(module):
    out, error = run(
        module, NEIGHBOUR.replace("BARRIER", "threadgroup_barrier(mem_flags::mem_threadgroup);"), 64, 256
    )
    assert not error and list(out) == [(i + 1) % 64 for i in range(64)]


def test_without_the_barrier_the_writes_are_not_seen(module):
    out, error = run(module, NEIGHBOUR.replace("BARRIER", ""), 64, 256)
    assert not error and np.isnan(out).any()  # threadgroup memory starts as 0xff bytes


def test_a_barrier_some_threads_skip_is_an_error(module):
    out, error = run(
        module,
        NEIGHBOUR.replace("BARRIER", "if (tid.x < 32) threadgroup_barrier(mem_flags::mem_threadgroup);"),
        64,
        256,
    )
    assert "threads never meet" in error


def test_simd_functions_are_collectives_of_32_lanes(module):
    out, error = run(module, SIMD, 64)
    expected = [sum(range(32 * (i // 32), 32 * (i // 32) + 32)) + 1000.0 * (i ^ 3) for i in range(64)]
    assert not error and list(out) == expected


def test_a_simd_function_half_a_group_calls_is_an_error(module):
    source = SIMD.replace("out[tid.x] = simd_sum(v)", "if (tid.x % 32 < 16) out[tid.x] = simd_sum(v)")
    _, error = run(module, source, 64)
    assert "was not called by every lane" in error or "threads never meet" in error
