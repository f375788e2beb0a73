"""WGSL types of tilecraft dtypes: the type a value is computed in, and the one a buffer stores.

Values of 16-bit floats (and bfloat16) are computed in f32, 8- and 16-bit integers in i32 or u32 (WGSL
has nothing narrower), and wrapped or rounded to their dtype where they are stored or cast. A buffer
stores f16 where the adapter has `shader-f16`; every other narrow dtype is one 32-bit word per element:
global buffers are widened by the launcher (`tilecraft.execution.wgpu.abi.device_dtype`), workgroup and
private ones are declared so.
"""

from __future__ import annotations

from tilecraft.ir.dtype import DataType

VALUE_TYPES = {
    "bool": "bool", "int8": "i32", "int16": "i32", "int32": "i32", "int64": "i64",
    "uint8": "u32", "uint16": "u32", "uint32": "u32", "uint64": "u64",
    "float16": "f32", "bfloat16": "f32", "float32": "f32", "float64": "f64",
}  # fmt: skip
WORD_STORAGE = {"bool": "u32", "int8": "i32", "int16": "i32", "uint8": "u32", "uint16": "u32", "bfloat16": "f32"}
TYPE_BYTES = {"u32": 4, "i32": 4, "f32": 4, "f16": 2, "i64": 8, "u64": 8, "f64": 8, "bool": 4}


def value_type(dtype: DataType) -> str:
    """The WGSL type a value of `dtype` is computed in."""
    try:
        return VALUE_TYPES[dtype.name]
    except KeyError:
        raise ValueError(f"WGSL has no type for {dtype}") from None


def storage_type(dtype: DataType, scope: str, f16: bool) -> str:
    """The WGSL element type a buffer of `dtype` in `scope` holds (`f16`: the adapter has shader-f16)."""
    if dtype.name == "float16":
        return "f16" if f16 else "f32"
    if dtype.name == "bool" and scope in ("local", "local.fragment", "local.var"):
        return "bool"
    return WORD_STORAGE.get(dtype.name) or value_type(dtype)
