"""The C API of an exported CPU kernel: `<function>.h` and `<function>.c`, beside `kernel.so`.

    #include "scale.h"
    if (tilecraft_scale_load("export/kernel.so") != 0) { puts(tilecraft_scale_last_error()); ... }
    int32_t rc = tilecraft_scale(x, 2.0f, y, n);   /* 0, or see tilecraft_scale_error(rc) */

The header declares one entry point with plain pointer and integer arguments: the kernel's parameters
in order (a buffer as a pointer to its element type, a scalar as its C type), then its symbolic dims.
The source loads the library with dlopen and calls its `<function>_entry`. Nothing checks the arrays in
C: they must have the shapes the header's comment states, contiguous and row-major.
"""

from __future__ import annotations

from typing import Any

from tilecraft.execution.system_cc.c_api import c_name, shapes_comment
from tilecraft.runtime.artifact import CompiledArtifact

_ELEMENT = {
    "bool": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "float16": "uint16_t", "bfloat16": "uint16_t", "float32": "float", "float64": "double",
    "float8_e4m3fn": "uint8_t", "float8_e5m2": "uint8_t", "float8_e4m3fnuz": "uint8_t", "float8_e5m2fnuz": "uint8_t",
}  # fmt: skip
_SCALAR = {**_ELEMENT, "bool": "int", "float16": "float", "bfloat16": "float"}


def arguments(artifact: CompiledArtifact, buffer_type: Any = None) -> list[tuple[str, str]]:
    """(C type, name) of each argument of the entry: parameters, then symbolic dims."""
    args = []
    for p in artifact.params:
        if p.kind == "buffer":
            args.append((buffer_type or f"{_ELEMENT[p.dtype.name]} *", c_name(p.name)))
        else:
            args.append((_SCALAR[p.dtype.name] + " ", c_name(p.name)))
    args += [(_SCALAR[v.dtype.name] + " ", c_name(v.name)) for v in artifact.symbolic_dims]
    return args


def header(artifact: CompiledArtifact) -> str:
    name = c_name(artifact.function_name)
    signature = ", ".join(f"{t}{n}" for t, n in arguments(artifact)) or "void"
    guard = f"TILECRAFT_{name.upper()}_H"
    return f"""/* {name}.h: the C API of the tilecraft kernel {artifact.function_name} (target {artifact.target}).
 * Link {name}.c (and -ldl); load kernel.so once, then call tilecraft_{name} (a bounds-checked build
 * keeps its out-of-bounds report in process-wide state: call it from one thread at a time).
 * Arguments, contiguous row-major arrays of exactly these shapes (nothing checks them in C):
{shapes_comment(artifact)}
 */
#ifndef {guard}
#define {guard}
#include <stdint.h>
#ifdef __cplusplus
extern "C" {{
#endif

/* Load the kernel's shared library (the export's kernel.so); 0 on success, else -1 and
 * tilecraft_{name}_last_error() says why. */
int tilecraft_{name}_load(const char *library_path);
const char *tilecraft_{name}_last_error(void);

/* Run the kernel; 0 on success, else a code tilecraft_{name}_error describes. */
int32_t tilecraft_{name}({signature});
const char *tilecraft_{name}_error(int32_t code);

#ifdef __cplusplus
}}
#endif
#endif
"""


def source(artifact: CompiledArtifact) -> str:
    name = c_name(artifact.function_name)
    args = arguments(artifact)
    signature = ", ".join(f"{t}{n}" for t, n in args) or "void"
    pointer = ", ".join(t.strip() for t, _ in args) or "void"
    call = ", ".join(n for _, n in args)
    return f"""/* {name}.c: loads and calls the tilecraft kernel {artifact.function_name} (see {name}.h). */
#include "{name}.h"
#include <dlfcn.h>
#include <stdio.h>

typedef int32_t (*entry_t)({pointer});
typedef const char *(*message_t)(int32_t, int64_t *);
static entry_t entry;
static message_t message;
static char last_error[512];

int tilecraft_{name}_load(const char *library_path) {{
    void *library = dlopen(library_path, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {{
        snprintf(last_error, sizeof last_error, "%s", dlerror());
        return -1;
    }}
    entry = (entry_t)dlsym(library, "{artifact.function_name}_entry");
    message = (message_t)dlsym(library, "{artifact.function_name}_oob_message");
    if (entry == NULL || message == NULL) {{
        snprintf(last_error, sizeof last_error, "%s has no {artifact.function_name}_entry: not this kernel's library",
                 library_path);
        return -1;
    }}
    return 0;
}}

const char *tilecraft_{name}_last_error(void) {{ return last_error; }}

int32_t tilecraft_{name}({signature}) {{
    if (entry == NULL) return -2;
    return entry({call});
}}

const char *tilecraft_{name}_error(int32_t code) {{
    static __thread char text[512];
    if (code == 0) return "success";
    if (code == -2) return "tilecraft_{name}_load has not succeeded";
    if (code < 0) return "the kernel could not allocate its per-block storage (out of memory)";
    int64_t index = 0;
    const char *where = message(code, &index);
    if (where[0] == '!')
        snprintf(text, sizeof text, "%s", where + 1);
    else
        snprintf(text, sizeof text, "out-of-bounds access to %s (element offset %lld)", where, (long long)index);
    return text;
}}
"""


def c_api(artifact: CompiledArtifact) -> dict[str, bytes]:
    name = c_name(artifact.function_name)
    return {f"{name}.h": header(artifact).encode(), f"{name}.c": source(artifact).encode()}
