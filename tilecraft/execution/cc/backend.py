"""The `cc` execution backend: compile `c-source` + `c-host-source` into a shared library, load it with
ctypes, and call `<function>_entry` with the arrays' pointers, the scalars and the symbolic dims."""

from __future__ import annotations

import ctypes
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tilecraft.errors import ArgumentError, OutOfBoundsError, TilecraftError, ToolchainError  # noqa: F401 - re-exported
from tilecraft.execution import native
from tilecraft.execution.base import CachedExecutionBackend
from tilecraft.execution.cc import forks, toolchain
from tilecraft.ir.dtype import DataType
from tilecraft.runtime.arrays import ArrayArg
from tilecraft.runtime.artifact import CompiledArtifact
from tilecraft.runtime.devices import describe_device
from tilecraft.runtime.launch import Built, Loaded, NativeLaunch
from tilecraft.runtime.plan import LaunchPlan

# Fast math (pass config tl.enable_fast_math): the parts of gcc's and clang's -ffast-math that keep NaN
# and infinity. Left out: -ffinite-math-only (folds isnan/isinf away, breaks reductions that start at
# -inf), -fno-signed-zeros (gcc 12 then folds a vectorized `x * 0.0f` to 0 even for infinite x, and
# -fassociative-math needs it), and -funsafe-math-optimizations (older gcc links crtfastmath.o into the
# library, and loading it switches denormals off for the whole process).
FAST_MATH_FLAGS = ("-fno-math-errno", "-fno-trapping-math", "-freciprocal-math", "-ffp-contract=fast")
LIBRARY = "kernel.so"
SOURCE = "kernel.c"
DEVICE_FORMAT = "c-source"
HOST_FORMAT = "c-host-source"

# The C type a packed-entry slot is read as, and the struct code the compiled launcher writes it with.
_SLOT_TYPES = {
    "bool": ("int32_t", "i"), "int8": ("int8_t", "b"), "int16": ("int16_t", "h"), "int32": ("int32_t", "i"),
    "int64": ("int64_t", "q"), "uint8": ("uint8_t", "B"), "uint16": ("uint16_t", "H"),
    "uint32": ("uint32_t", "I"), "uint64": ("uint64_t", "Q"), "float16": ("float", "f"),
    "bfloat16": ("float", "f"), "float32": ("float", "f"), "float64": ("double", "d"),
}  # fmt: skip
PACKED_ENTRY = "packed-v1"  # the `<function>_packed` wrapper's ABI, part of the cache key

_SCALAR_CTYPES = {
    "bool": ctypes.c_int, "int8": ctypes.c_int8, "int16": ctypes.c_int16, "int32": ctypes.c_int32,
    "int64": ctypes.c_int64, "uint8": ctypes.c_uint8, "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64, "float16": ctypes.c_float, "bfloat16": ctypes.c_float,
    "float32": ctypes.c_float, "float64": ctypes.c_double,
}  # fmt: skip


# A failure site whose text starts with this is a failed check the kernel made, reported as its text; any
# other site is an out-of-bounds access.
CHECK_MARK = "!"


class KernelCheckError(TilecraftError, RuntimeError):
    """A check the kernel made at run time failed (the message says which, with the kernel line)."""


def scalar_ctype(dtype: DataType):
    return _SCALAR_CTYPES[dtype.name]


class CCExecutionBackend(CachedExecutionBackend):
    """Build: one C translation unit -> shared library. Load: ctypes. Launch: a direct C call."""

    def toolchain_version(self) -> str:
        return toolchain.compiler().version

    def build_options(self, artifact: CompiledArtifact, ctx) -> Mapping[str, Any]:
        cc = toolchain.compiler()
        openmp = toolchain.use_openmp(cc)
        fast = list(FAST_MATH_FLAGS) if artifact.extra_value("fast_math", False) else []
        # Fast math first, so the user's own flags can override a part of it.
        extra = fast + list(artifact.extra_value("compile_flags", ()) or ())
        # The whole command: launcher, compiler and the setting's options (in `flags`), so `gcc -O0` and
        # `gcc` never share a build.
        return {
            "compiler": list(cc.program),
            "flags": list(cc.flags(openmp)) + extra,
            "openmp": openmp,
            "extra_flags": extra,
            "packed_entry": PACKED_ENTRY,
        }

    def compile(self, artifact: CompiledArtifact, ctx) -> tuple[Mapping[str, bytes], Mapping[str, Any]]:
        if artifact.host_format != HOST_FORMAT:
            raise TilecraftError(
                f"the cc execution backend needs host source of format {HOST_FORMAT!r}, "
                f"got {artifact.host_format!r}"
            )
        source = artifact.source(DEVICE_FORMAT) + "\n" + (artifact.host_source or "") + packed_entry(artifact)
        options = self.build_options(artifact, ctx)
        # Only used when the compile fails (the cache says where a failed build keeps its source).
        keep = self.cache.failure_dir(self.cache_key(artifact, ctx))
        library = toolchain.compile_shared(source, [], options["openmp"], keep, tuple(options["extra_flags"]))
        return {LIBRARY: library, SOURCE: source.encode()}, options

    def load(self, built: Built) -> Loaded:
        lib = self._open_library(built)
        art = built.artifact
        forks.single_threaded_after_fork(lib, art.function_name)
        entry = getattr(lib, f"{art.function_name}_entry")
        entry.argtypes = [
            ctypes.c_void_p if p.kind == "buffer" else scalar_ctype(p.dtype) for p in art.params
        ]
        entry.argtypes += [scalar_ctype(v.dtype) for v in art.symbolic_dims]
        entry.restype = ctypes.c_int32
        message = getattr(lib, f"{art.function_name}_oob_message")
        message.argtypes = [ctypes.c_int32, ctypes.POINTER(ctypes.c_int64)]
        message.restype = ctypes.c_char_p
        return Loaded(built, (lib, entry, message))

    def _open_library(self, built: Built) -> ctypes.CDLL:
        """The built library, loaded; a library that does not load (a compiler command that made something
        else, cached by an older version) is evicted from the cache, so the next compile builds it anew."""
        path = built.path(LIBRARY)
        try:
            return ctypes.CDLL(str(path))
        except OSError as err:
            cached = path.parent == self.cache.entry_dir(built.key)
            if cached:
                self.cache.evict(built.key)
            words = [*built.entry.meta.get("compiler", ()), *built.entry.meta.get("flags", ())]
            command = shlex.join(str(w) for w in words)
            raise ToolchainError(
                f"the kernel library {path} of {built.artifact.function_name} does not load: {err}\n"
                f"  built with: {command or 'unknown'}\n"
                + (
                    "  it was removed from the cache: compiling again builds it anew (check TILECRAFT_CC)"
                    if cached
                    else "  export the kernel again on a machine like this one"
                )
            ) from None

    def native_launch(self, loaded: Loaded) -> NativeLaunch | None:
        """The compiled launcher calls `<function>_packed(void **slots)` (None for a library built
        without it: an export from an older version)."""
        lib, _, message = loaded.handle
        art = loaded.built.artifact
        try:
            packed = getattr(lib, f"{art.function_name}_packed")
        except AttributeError:
            return None
        n = len(art.params)
        slots = tuple((i, slot_code(p)) for i, p in enumerate(art.params))
        slots += tuple((n + j, _SLOT_TYPES[v.dtype.name][1]) for j, v in enumerate(art.symbolic_dims))
        return NativeLaunch("packed-call", ctypes.cast(packed, ctypes.c_void_p).value,
                            lambda rc: _raise_failure(rc, message), device=-1, alignment=art.buffer_alignment,
                            host_arrays=True, slots=slots,
                            keep_alive=loaded.handle)  # fmt: skip

    def c_api(self, built: Built) -> Mapping[str, bytes]:
        """`<function>.h` and `<function>.c`: load kernel.so with dlopen and call its entry (export_c.py)."""
        from tilecraft.execution.cc.export_c import c_api

        return c_api(built.artifact)

    def compiled_launcher(self, loaded: Loaded, plan: LaunchPlan, miss: Any) -> Callable[..., Any] | None:
        """The compiled launcher over `native_launch` (tilecraft/execution/native)."""
        return native.compiled_launcher(self.native_launch(loaded), plan, miss)

    def launcher(self, loaded: Loaded) -> Callable[..., Any]:
        _, entry, message = loaded.handle

        def launch(args: Sequence[Any], dims: Sequence[int], stream: Any = None) -> None:
            values = [a.ptr if isinstance(a, ArrayArg) else a for a in args]
            rc = entry(*values, *dims)
            if rc != 0:
                _raise_failure(rc, message)

        return launch

    def check_device(self, arg: ArrayArg, name: str) -> None:
        """Arrays must live in host memory (the spec's device type); outputs are host arrays (`empty`'s
        default)."""
        if not self.accepts_device(arg):
            raise ArgumentError(
                f"parameter {name!r} is on {describe_device(arg.device_type, arg.device_id)}, but this "
                "kernel runs on the host; pass a host array (for torch: tensor.cpu())"
            )


def slot_code(param: Any) -> str:
    return "p" if param.kind == "buffer" else _SLOT_TYPES[param.dtype.name][1]


def packed_entry(artifact: CompiledArtifact) -> str:
    """`int32_t <function>_packed(void **slots)`: the entry with every argument read from a slot (the
    parameters, then the symbolic dims), which the compiled launcher calls."""
    reads = [
        f"*(void**)tc_slots[{i}]"
        if p.kind == "buffer"
        else f"*({_SLOT_TYPES[p.dtype.name][0]}*)tc_slots[{i}]"
        for i, p in enumerate(artifact.params)
    ]
    n = len(artifact.params)
    reads += [
        f"*({_SLOT_TYPES[v.dtype.name][0]}*)tc_slots[{n + j}]" for j, v in enumerate(artifact.symbolic_dims)
    ]
    name = artifact.function_name
    return (f"\nint32_t {name}_packed(void** tc_slots) {{\n    (void)tc_slots;\n"
            f"    return {name}_entry({', '.join(reads)});\n}}\n")  # fmt: skip


def _raise_failure(rc: int, message) -> None:
    if rc < 0:
        raise TilecraftError("the kernel could not allocate its per-block storage (out of memory)")
    index = ctypes.c_int64(0)
    where = message(rc, ctypes.byref(index)).decode()
    if where.startswith(CHECK_MARK):
        raise KernelCheckError(where[len(CHECK_MARK) :])
    raise OutOfBoundsError(f"out-of-bounds access to {where} (element offset {index.value})")
