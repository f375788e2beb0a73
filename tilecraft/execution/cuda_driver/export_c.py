"""The C API of an exported CUDA kernel: `<function>.h` and `<function>.c`, beside `kernel.cubin`.

    #include "add.h"
    cuInit(0); cuDevicePrimaryCtxRetain(&ctx, dev); cuCtxSetCurrent(ctx);    // the caller's context
    if (tilecraft_add_load("export/kernel.cubin") != CUDA_SUCCESS) ...
    CUresult rc = tilecraft_add(a, b, c, 2.0f, n, stream);                  // device pointers

The source loads the cubin into the current context with the driver API (`cuModuleLoadData` of the
file's bytes, one
`cuModuleGetFunction` per device kernel, the dynamic shared-memory attribute where a kernel needs more
than 48 KiB) and launches every kernel in order on `stream`, with the grid its launch metadata gives
(computed in C with the Python launcher's semantics: `//` and `%` floor, `Div` and `TruncMod`
truncate), its block and shared memory, and its parameters in ABI order. Build it with `nvcc` or any C
compiler and `-lcuda` (`-I<CUDA>/include`). Nothing checks the arrays in C: they must be device
pointers to contiguous row-major arrays of the shapes the header states, 16-byte aligned.
"""

from __future__ import annotations

from tilecraft.errors import TilecraftError
from tilecraft.execution.system_cc.c_api import c_name, shapes_comment
from tilecraft.ir import expr as E
from tilecraft.runtime.artifact import CompiledArtifact, KernelInfo

_SCALAR = {
    "bool": "int32_t", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float16": "float", "bfloat16": "float", "float32": "float", "float64": "double",
}  # fmt: skip
_BINARY = {E.Add: "+", E.Sub: "-", E.Mul: "*", E.Div: "/", E.TruncMod: "%", E.EQ: "==", E.NE: "!=", E.LT: "<",
           E.LE: "<=", E.GT: ">", E.GE: ">=", E.And: "&&", E.Or: "||"}  # fmt: skip
_CALLS = {E.FloorDiv: "tc_floordiv", E.FloorMod: "tc_floormod", E.Min: "tc_min", E.Max: "tc_max"}
DEFAULT_DYNAMIC_SMEM = 48 * 1024


class NotExportable(TilecraftError):
    """A kernel the C API cannot launch (the reason says what and why)."""


def grid_c(e: object, names: dict[str, str]) -> str:
    """C (int64_t arithmetic) computing grid expression `e` from the locals in `names`."""
    if isinstance(e, int):
        return f"INT64_C({e})"
    kind = type(e)
    if kind is E.IntImm:
        return f"INT64_C({int(e.value)})"
    if kind is E.Var:
        if e.name not in names or not (e.dtype.is_integer or e.dtype.is_bool):
            raise NotExportable(f"a grid uses {e.name!r}, which is not an integer parameter or symbolic dim")
        return f"(int64_t){names[e.name]}"
    if kind is E.Not:
        return f"(!{grid_c(e.a, names)})"
    if kind is E.Select:
        return f"({grid_c(e.condition, names)} ? {grid_c(e.true_value, names)} : {grid_c(e.false_value, names)})"
    if kind is E.Cast and (e.value.dtype.is_integer or e.value.dtype.is_bool) and e.dtype.is_integer:
        return f"(({_SCALAR.get(e.dtype.name, 'int64_t')})({grid_c(e.value, names)}))"
    if kind in _BINARY:
        return f"({grid_c(e.a, names)} {_BINARY[kind]} {grid_c(e.b, names)})"
    if kind in _CALLS:
        return f"{_CALLS[kind]}({grid_c(e.a, names)}, {grid_c(e.b, names)})"
    raise NotExportable(f"a grid uses {kind.__name__}, which the C API does not compute")


def _arguments(artifact: CompiledArtifact) -> list[tuple[str, str]]:
    args = [("CUdeviceptr ", c_name(p.name)) if p.kind == "buffer" else (_SCALAR[p.dtype.name] + " ", c_name(p.name))
            for p in artifact.params]  # fmt: skip
    args += [(_SCALAR[v.dtype.name] + " ", c_name(v.name)) for v in artifact.symbolic_dims]
    return args + [("CUstream ", "stream")]


def header(artifact: CompiledArtifact) -> str:
    name = c_name(artifact.function_name)
    signature = ", ".join(f"{t}{n}" for t, n in _arguments(artifact))
    guard = f"TILECRAFT_{name.upper()}_H"
    return f"""/* {name}.h: the C API of the tilecraft kernel {artifact.function_name} (target {artifact.target}).
 * Link {name}.c and -lcuda. Buffers are device pointers to contiguous row-major arrays of exactly these
 * shapes, 16-byte aligned (nothing checks them in C):
{shapes_comment(artifact)}
 */
#ifndef {guard}
#define {guard}
#include <cuda.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {{
#endif

/* Load the export's kernel.cubin into the current context (cuInit and a current context are the
 * caller's); a CUresult. */
CUresult tilecraft_{name}_load(const char *cubin_path);

/* Launch every kernel of {artifact.function_name} in order on `stream` (0: the legacy default stream);
 * CUDA_ERROR_INVALID_VALUE when the sizes give a grid beyond the device limits. Asynchronous. */
CUresult tilecraft_{name}({signature});

#ifdef __cplusplus
}}
#endif
#endif
"""


def _launch(k: int, info: KernelInfo, artifact: CompiledArtifact, names: dict[str, str]) -> str:
    grid = [grid_c(e, names) for e in info.grid] + ["INT64_C(1)"] * (3 - len(info.grid))
    block = tuple(info.block) + (1,) * (3 - len(info.block))
    params = ", ".join(f"&{names[p.name]}" for p in info.params) or "0"
    lines = [f"    {{ /* kernel {k}: {info.symbol} */"]
    lines += [f"        int64_t g{a} = {g};" for a, g in zip("xyz", grid)]
    lines.append("        if (gx < 0 || gy < 0 || gz < 0 || gx > INT64_C(2147483647) || gy > 65535 || gz > 65535)"
                 " return CUDA_ERROR_INVALID_VALUE;")  # fmt: skip
    clustered = [f"g{a} % {c}" for a, c in zip("xyz", info.cluster) if c > 1]
    if clustered:  # a launch runs whole thread-block clusters
        lines.append(f"        if ({' || '.join(clustered)}) return CUDA_ERROR_INVALID_CLUSTER_SIZE;")
    lines.append(f"        void *params[] = {{{params}}};")
    lines.append("        if (gx && gy && gz) {")
    lines.append(f"            CUresult rc = cuLaunchKernel(functions[{k}], (unsigned)gx, (unsigned)gy, (unsigned)gz, "
                 f"{block[0]}, {block[1]}, {block[2]}, {info.dynamic_smem}, stream, "
                 f"{'params' if info.params else 'NULL'}, NULL);")  # fmt: skip
    lines.append("            if (rc != CUDA_SUCCESS) return rc;")
    lines.append("        }")
    lines.append("    }")
    return "\n".join(lines)


def source(artifact: CompiledArtifact) -> str:
    name = c_name(artifact.function_name)
    if any(info.tensor_maps for info in artifact.kernels):
        raise NotExportable("its kernels take TMA tensor maps, which the C API does not encode yet")
    names = {p.name: c_name(p.name) for p in artifact.params}
    names.update({v.name: c_name(v.name) for v in artifact.symbolic_dims})
    signature = ", ".join(f"{t}{n}" for t, n in _arguments(artifact))
    symbols = ", ".join(f'"{info.symbol}"' for info in artifact.kernels)
    smem = ", ".join(str(info.dynamic_smem) for info in artifact.kernels)
    launches = "\n".join(_launch(k, info, artifact, names) for k, info in enumerate(artifact.kernels))
    count = len(artifact.kernels)
    return f"""/* {name}.c: loads {artifact.function_name}'s cubin and launches it with the CUDA driver API (see {name}.h). */
#include "{name}.h"
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

static const char *symbols[{count}] = {{{symbols}}};
static const int dynamic_smem[{count}] = {{{smem}}};
static CUfunction functions[{count}];

static int64_t tc_floordiv(int64_t a, int64_t b) {{ int64_t q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }}
static int64_t tc_floormod(int64_t a, int64_t b) {{ return a - b * tc_floordiv(a, b); }}
static int64_t tc_min(int64_t a, int64_t b) {{ return a < b ? a : b; }}
static int64_t tc_max(int64_t a, int64_t b) {{ return a > b ? a : b; }}

CUresult tilecraft_{name}_load(const char *cubin_path) {{
    FILE *file = fopen(cubin_path, "rb");
    if (file == NULL) return CUDA_ERROR_FILE_NOT_FOUND;
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *image = malloc(size > 0 ? (size_t)size : 1);
    size_t got = image != NULL && size > 0 ? fread(image, 1, (size_t)size, file) : 0;
    fclose(file);
    if (image == NULL || size <= 0 || got != (size_t)size) {{
        free(image);
        return CUDA_ERROR_INVALID_IMAGE;
    }}
    CUmodule module;
    CUresult rc = cuModuleLoadData(&module, image);
    free(image);
    if (rc != CUDA_SUCCESS) return rc;
    for (int k = 0; k < {count}; k++) {{
        rc = cuModuleGetFunction(&functions[k], module, symbols[k]);
        if (rc != CUDA_SUCCESS) return rc;
        if (dynamic_smem[k] > {DEFAULT_DYNAMIC_SMEM}) {{
            rc = cuFuncSetAttribute(functions[k], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, dynamic_smem[k]);
            if (rc != CUDA_SUCCESS) return rc;
        }}
    }}
    return CUDA_SUCCESS;
}}

CUresult tilecraft_{name}({signature}) {{
    (void)tc_floormod; (void)tc_min; (void)tc_max;
{launches}
    return CUDA_SUCCESS;
}}
"""


def c_api(artifact: CompiledArtifact) -> dict[str, bytes]:
    """The header and loader source; a note saying why, for a kernel the C API cannot launch."""
    name = c_name(artifact.function_name)
    try:
        return {f"{name}.h": header(artifact).encode(), f"{name}.c": source(artifact).encode()}
    except NotExportable as err:
        return {"C-API.txt": f"no C API for {artifact.function_name}: {err}\n".encode()}
