"""The ABI between `wgsl-source` and the `wgpu` launcher: bindings, the uniform block, buffer element types.

A `wgsl-source` module holds one `@compute` entry point per kernel, in `CompiledArtifact.kernels` order,
all in bind group 0. Kernel k's bindings start at the sum of (1 + its buffer count) over the kernels
before it: first its uniform block, then one storage buffer per buffer parameter in `KernelInfo.params`
order. The uniform block holds the logical grid (three u32) and then every scalar parameter, in order,
each aligned to its size (`uniform_layout`). The launcher dispatches a folded grid when a dim passes the
device's limit; the kernel rebuilds its block indices from the logical grid.

Buffers whose dtype WGSL cannot hold in storage (no 8- or 16-bit integers, no bfloat16; float16 only
with `shader-f16`) are widened to 32-bit elements on the host and narrowed back when copied out
(`device_dtype`): the kernel sees one 32-bit word per element and rounds or wraps what it stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WGSL_SOURCE = "wgsl-source"
GRID_FIELDS = ("gx", "gy", "gz")

# dtype -> the WGSL type of a scalar parameter in the uniform block
SCALAR_TYPES = {
    "bool": "u32", "int8": "i32", "int16": "i32", "int32": "i32", "int64": "i64",
    "uint8": "u32", "uint16": "u32", "uint32": "u32", "uint64": "u64",
    "float16": "f32", "bfloat16": "f32", "float32": "f32", "float64": "f64",
}  # fmt: skip
TYPE_BYTES = {"u32": 4, "i32": 4, "f32": 4, "f16": 2, "i64": 8, "u64": 8, "f64": 8}
# dtype -> the numpy dtype of its device buffer, where it is not the dtype itself
WIDENED = {"bool": "uint32", "int8": "int32", "int16": "int32", "uint8": "uint32", "uint16": "uint32",
           "bfloat16": "float32"}  # fmt: skip
UNSTORABLE = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz")


def device_dtype(dtype: str, f16: bool) -> str:
    """The element type of a buffer of `dtype` on the device (a numpy dtype name)."""
    if dtype == "float16":
        return "float16" if f16 else "float32"
    if dtype in UNSTORABLE:
        raise ValueError(f"{dtype} has no WebGPU storage representation")
    return WIDENED.get(dtype, dtype)


@dataclass(frozen=True)
class UniformField:
    name: str
    wgsl_type: str
    offset: int


def uniform_layout(scalar_dtypes: Sequence[str]) -> tuple[tuple[UniformField, ...], int]:
    """The fields of a kernel's uniform block (the grid, then scalar k as field `p<k>`) and its size
    in bytes (a multiple of 16, as uniform buffers need)."""
    fields = [UniformField(name, "u32", 4 * k) for k, name in enumerate(GRID_FIELDS)]
    offset = 4 * len(GRID_FIELDS)
    for k, dtype in enumerate(scalar_dtypes):
        wgsl = SCALAR_TYPES[dtype]
        size = TYPE_BYTES[wgsl]
        offset = (offset + size - 1) // size * size
        fields.append(UniformField(f"p{k}", wgsl, offset))
        offset += size
    return tuple(fields), (offset + 15) // 16 * 16


def binding_bases(buffer_counts: Sequence[int]) -> list[int]:
    """The first binding (its uniform block) of each kernel, given each kernel's buffer count."""
    bases, next_binding = [], 0
    for count in buffer_counts:
        bases.append(next_binding)
        next_binding += 1 + count
    return bases


def fold_grid(grid: Sequence[int], limit: int) -> tuple[int, int, int]:
    """Workgroups to dispatch for logical grid `grid` (1 to 3 dims): the grid itself where every dim
    fits `limit`, else its product spread over up to three dims (the kernel skips the extra groups)."""
    dims = (tuple(grid) + (1, 1, 1))[:3]
    if all(d <= limit for d in dims):
        return dims
    total = dims[0] * dims[1] * dims[2]
    x = min(total, limit)
    rest = -(-total // x)
    y = min(rest, limit)
    z = -(-rest // y)
    if z > limit:
        raise ValueError(f"grid {tuple(grid)} has {total} workgroups, more than {limit}**3")
    return x, y, z
