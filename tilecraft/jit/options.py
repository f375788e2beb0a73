"""Keys of `pass_configs`: TileLang's, under the same names and strings, and tilecraft's own.

`pass_configs={PassConfigKey.TL_ENABLE_FAST_MATH: True}` and `{"tl.enable_fast_math": True}` are the
same request. Every key falls in one of three groups, and `resolve_pass_configs` checks each one:

* honoured everywhere (`HONOURED`): read here, on every target (fast math, extra device-compiler
  flags, IR dumps, pass timing);
* read by a target backend (`BACKEND_READ`, plus the keys a backend's manifest declares in
  `BackendModule.pass_configs`): a key the selected backend does not read is an error, not a no-op;
* accepted for compatibility (`NO_EFFECT`): TileLang tunes passes or hardware paths tilecraft does
  not have; each entry says why the key changes nothing here (docs/compat.md lists them).

An unknown key is an error that names the close matches.
"""

from __future__ import annotations

import difflib
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from os import PathLike
from typing import Any

from tilecraft.errors import TilecraftError
from tilecraft.transform.pass_config import PassConfigKey

K = PassConfigKey

HONOURED: Mapping[str, str] = {
    K.TL_ENABLE_FAST_MATH: "the device compiler's fast-math mode (each execution backend maps it onto its "
    "compiler's flags, docs/compat.md lists them); NaN and infinity keep working everywhere",
    K.TL_DISABLE_FAST_MATH: "TileLang's retired opposite of tl.enable_fast_math (fast math is off by default)",
    K.TL_DEVICE_COMPILE_FLAGS: "extra flags for the device compiler (a string, split as a shell would, or a "
    "list), appended to `compile_flags`",
    K.TL_ENABLE_DUMP_IR: "write the IR after every pass, as TILECRAFT_DUMP_IR does, to tl.dump_ir_path",
    K.TL_DUMP_IR_DIR: "where tl.enable_dump_ir writes (default ./dump_ir)",
    K.TL_PASS_PROFILE: "print a per-pass timing table to stderr, as TILECRAFT_PASS_TIMING does",
}

BACKEND_READ: Mapping[str, str] = {
    K.BOUNDS_CHECK: "check every buffer access (backends that read it declare it in their manifest)",
}

_NO_PASS = "tunes a TVM/TileLang pass that tilecraft does not have"
_DEBUG_OUTPUT = "debug output of TileLang's own passes; use TILECRAFT_DUMP_IR or Kernel.source here"
_PTXAS = "pass the ptxas option in tl.device_compile_flags (e.g. '--ptxas-options=-v') where ptxas is used"
_SIMPLIFY_SUBKEY = "an option inside TileLang's tl.Simplify dict; tilecraft's simplifier takes no options"

NO_EFFECT: Mapping[str, str] = {
    K.TL_SIMPLIFY: "tilecraft's simplifier takes no options",
    K.TL_SIMPLIFY_TRANSITIVELY_PROVE_INEQUALITIES: _SIMPLIFY_SUBKEY,
    K.TL_SIMPLIFY_CONVERT_BOOLEAN_TO_AND_OF_ORS: _SIMPLIFY_SUBKEY,
    K.TL_SIMPLIFY_APPLY_CONSTRAINTS_TO_BOOLEAN_BRANCHES: _SIMPLIFY_SUBKEY,
    K.TL_SIMPLIFY_PROPAGATE_KNOWNS_TO_PROVE_CONDITIONAL: _SIMPLIFY_SUBKEY,
    K.TL_SIMPLIFY_PROPAGATE_KNOWNS_TO_SIMPLIFY_EXPRESSIONS: _SIMPLIFY_SUBKEY,
    K.TL_SIMPLIFY_ENABLE_LET_INLINE: _SIMPLIFY_SUBKEY,
    K.TL_DISABLE_BUFFER_INIT_CHECK: "tilecraft has no buffer-initialization warning to silence",
    K.TL_DISABLE_DATA_RACE_CHECK: "tilecraft has no data-race checker to switch",
    K.TL_DISABLE_PRELOWER_SEMANTIC_CHECK: "tilecraft's semantic check always runs: lowering relies on it",
    K.TL_DISABLE_WARP_SPECIALIZED: "read by the backends that warp-specialize pipelines (sm_90a), which then "
    "issue the TMA loads from the kernel's own threads; elsewhere there is no producer warpgroup to turn off",
    K.TL_PTXAS_REGISTER_USAGE_LEVEL: _PTXAS,
    K.TL_ENABLE_PTXAS_VERBOSE_OUTPUT: _PTXAS,
    K.TL_EMIT_LINE_DIRECTIVES: "generated sources carry no #line directives yet",
    K.TL_CONFIG_INDEX_BITWIDTH: "index arithmetic is widened to int64 automatically where it may overflow",
    K.TL_ENABLE_REDUCER_PLAN_VERBOSE: _DEBUG_OUTPUT,
    K.TL_LAYOUT_COST_MODEL: "tilecraft's layout inference has a single cost model",
    K.TL_REDUCER_FORCE_BASELINE: _NO_PASS,
    K.TL_DISABLE_TMA_LOWER: "read by the backends that have TMA loads (sm_90a), which then fill wgmma operand "
    "tiles with cp.async; elsewhere there is no TMA path to turn off",
    K.TL_DISABLE_SAFE_MEMORY_ACCESS: _NO_PASS,
    K.TL_DISABLE_VECTORIZE_256: "256-bit LDG/STG are not generated",
    K.TL_ENABLE_ASYNC_COPY: "cp.async is used for copies inside T.Pipelined on targets that have it",
    K.TL_ENABLE_LOWER_LDGSTG: "LDG/STG intrinsics are not generated",
    K.TL_ENABLE_LOWER_LDGSTG_PREDICATED: "LDG/STG intrinsics are not generated",
    K.TL_DISABLE_LOWER_LDGSTG_PREDICATED: "LDG/STG intrinsics are not generated",
    K.TL_ENABLE_VECTORIZE_PLANNER_VERBOSE: _DEBUG_OUTPUT,
    K.TL_DISABLE_WGMMA: "read by the backends that have a wgmma path (sm_90a), which then keep T.gemm on "
    "mma.sync; elsewhere there is no wgmma path to turn off",
    K.TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS: _DEBUG_OUTPUT,
    K.TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE: _NO_PASS,
    K.TL_DISABLE_SHARED_MEMORY_REUSE: _NO_PASS,
    K.TL_DISABLE_SHUFFLE_ELECT: _NO_PASS,
    K.TL_DISABLE_LOOP_UNSWITCHING: _NO_PASS,
    K.TL_LOOP_UNSWITCHING_ALLOW_NON_TRIVIAL_ELSE: _NO_PASS,
    K.TL_IF_STMT_BINDING_INLINE_REPLAYABLE_BINDS: _NO_PASS,
    K.TL_DISABLE_THREAD_STORAGE_SYNC: "barriers between shared-memory writes and reads are always planned: "
    "without them the kernel races",
    K.TL_DEBUG_THREAD_STORAGE_SYNC_SUMMARY: _DEBUG_OUTPUT,
    K.TL_DISABLE_DYNAMIC_TAIL_SPLIT: _NO_PASS,
    K.TL_DYNAMIC_ALIGNMENT: _NO_PASS,
    K.TL_FORCE_LET_INLINE: _NO_PASS,
    K.TL_AST_PRINT_ENABLE: _DEBUG_OUTPUT,
    K.TL_LAYOUT_VISUALIZATION_ENABLE: "use tilecraft.layout's plot_layout to draw a layout",
    K.TL_LAYOUT_VISUALIZATION_FORMATS: "use tilecraft.layout's plot_layout to draw a layout",
    K.TL_STORAGE_REWRITE_DETECT_INPLACE: _NO_PASS,
    K.TIR_ENABLE_EQUIV_TERMS_IN_CSE: _NO_PASS,
    K.TIR_DISABLE_CSE: _NO_PASS,
    K.TIR_SIMPLIFY: "the simplifier always runs: later passes rely on folded indices",
    K.TIR_DISABLE_STORAGE_REWRITE: _NO_PASS,
    K.TIR_DISABLE_VECTORIZE: _NO_PASS,
    K.TIR_USE_ASYNC_COPY: "cp.async is used for copies inside T.Pipelined on targets that have it",
    K.TIR_ENABLE_DEBUG: _DEBUG_OUTPUT,
    K.TIR_MERGE_STATIC_SMEM: "shared memory is always planned as one arena",
    K.TIR_ADD_LOWER_PASS: "TVM passes cannot run on tilecraft's IR; a backend's pipeline.py lists its passes",
    K.TIR_NOALIAS: "buffer parameters are always declared non-aliasing where the target allows it",
    K.CUDA_KERNELS_OUTPUT_DIR: "read the generated source from Kernel.source / get_kernel_source()",
    K.TL_DISABLE_OUT_OF_BOUND_WARNING: "tilecraft issues no out-of-bound warnings; see tilecraft.bounds_check",
    K.TL_PASS_PROFILE_THRESHOLD_MS: "the tl.pass_profile table lists every pass",
}

# Strings older TileLang releases used for the same keys ("tir." became "tirx.").
ALIASES: Mapping[str, str] = {
    "tir.disable_cse_tir": K.TIR_DISABLE_CSE.value,
    "tir.Simplify": K.TIR_SIMPLIFY.value,
    "tir.disable_storage_rewrite": K.TIR_DISABLE_STORAGE_REWRITE.value,
    "tir.disable_vectorize": K.TIR_DISABLE_VECTORIZE.value,
    "tir.use_async_copy": K.TIR_USE_ASYNC_COPY.value,
    "tir.enable_debug": K.TIR_ENABLE_DEBUG.value,
    "tir.merge_static_smem": K.TIR_MERGE_STATIC_SMEM.value,
    "tir.add_lower_pass": K.TIR_ADD_LOWER_PASS.value,
    "tir.noalias": K.TIR_NOALIAS.value,
}

DEFAULT_DUMP_DIR = "./dump_ir"


class PassConfigError(TilecraftError, ValueError):
    """A `pass_configs` key is unknown, not read by the selected backend, or has a value of the wrong type."""


@dataclass(frozen=True)
class PassConfigs:
    """Checked pass configs: canonical string keys for the pipeline, and what the shared layer does."""

    values: Mapping[str, Any]
    fast_math: bool = False
    device_flags: tuple[str, ...] = ()
    dump_dir: str | None = None
    profile: bool = False

    def canonical(self) -> dict[str, str]:
        """Keys and value reprs in a fixed order: what the cache key hashes."""
        return {key: repr(self.values[key]) for key in sorted(self.values)}


def resolve_pass_configs(
    configs: Mapping[Any, Any] | None,
    backend_keys: Mapping[str, str] | None = None,
    backend: str = "?",
    other_backends: Callable[[], Mapping[str, Mapping[str, str]]] | None = None,
) -> PassConfigs:
    """Check `configs` for the selected backend (`backend_keys`: the keys its manifest declares;
    `other_backends`: gives name -> keys of the registered backends, asked only for a key that is not
    the selected backend's or tilecraft's, so that a key another backend reads is reported as that
    backend's rather than as unknown).

    Raises PassConfigError naming the key, what is wrong, and the keys it may have meant.
    """
    if configs is not None and not isinstance(configs, Mapping):
        raise PassConfigError(
            f"pass_configs must be a dict of key -> value, got {type(configs).__name__}; "
            "e.g. pass_configs={tilecraft.PassConfigKey.TL_ENABLE_FAST_MATH: True}"
        )
    backend_keys = backend_keys or {}
    values: dict[str, Any] = {}
    for key, value in (configs or {}).items():
        name = _canonical_key(key, backend_keys, backend, other_backends or dict)
        if name in values:
            raise PassConfigError(f"pass config {name!r} is given twice (as {key!r} and another spelling)")
        values[name] = value
    return PassConfigs(
        values,
        fast_math=_fast_math(values),
        device_flags=_device_flags(values.get(K.TL_DEVICE_COMPILE_FLAGS.value)),
        dump_dir=_dump_dir(values),
        profile=_flag(values, K.TL_PASS_PROFILE),
    )


def _canonical_key(
    key: Any,
    backend_keys: Mapping[str, str],
    backend: str,
    other_backends: Callable[[], Mapping[str, Mapping[str, str]]],
) -> str:
    if not isinstance(key, str):
        raise PassConfigError(
            f"pass config key {key!r} is a {type(key).__name__}; use a string or a tilecraft.PassConfigKey"
        )
    name = ALIASES.get(str(key), str(key))
    if name in backend_keys or name in HONOURED or name in NO_EFFECT:
        return name
    readers = ", ".join(sorted(backend_keys)) or "none"
    if name in BACKEND_READ:
        raise PassConfigError(
            f"pass config {name!r} is not supported by backend {backend!r} (its own pass configs: {readers}); "
            "remove it for this target"
        )
    owners = sorted(other for other, keys in other_backends().items() if other != backend and name in keys)
    if owners:
        raise PassConfigError(
            f"pass config {name!r} is read by backend {' and '.join(map(repr, owners))}, not by {backend!r}, "
            f"the backend of this target (its own pass configs: {readers}); remove it for this target"
        )
    raise PassConfigError(f"unknown pass config {name!r}; {_suggest(name, backend_keys)}")


def _suggest(name: str, backend_keys: Mapping[str, str]) -> str:
    """Close matches among key strings and member names (`"TL_ENABLE_FAST_MATH"` names a member)."""
    by_spelling = {m.value: m.value for m in PassConfigKey}
    by_spelling.update({m.name: m.value for m in PassConfigKey})
    by_spelling.update({k: k for k in backend_keys})
    matches = difflib.get_close_matches(name, list(by_spelling), n=3, cutoff=0.6)
    if not matches:
        matches = difflib.get_close_matches(name.upper(), list(by_spelling), n=3, cutoff=0.6)
    if matches:
        return "did you mean " + " or ".join(repr(by_spelling[m]) for m in dict.fromkeys(matches)) + "?"
    return "the keys are the members of tilecraft.PassConfigKey (docs/compat.md lists them)"


def _flag(values: Mapping[str, Any], key: PassConfigKey) -> bool:
    value = values.get(key.value, False)
    if not isinstance(value, bool):
        raise PassConfigError(f"pass config {key.value!r} must be True or False, got {value!r}")
    return value


def _fast_math(values: Mapping[str, Any]) -> bool:
    enable = _flag(values, K.TL_ENABLE_FAST_MATH)
    disable = _flag(values, K.TL_DISABLE_FAST_MATH)
    if enable and disable:
        raise PassConfigError(
            f"pass configs {K.TL_ENABLE_FAST_MATH.value!r} and {K.TL_DISABLE_FAST_MATH.value!r} are both "
            "True; keep one"
        )
    return enable


def _device_flags(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError as err:
            raise PassConfigError(
                f"pass config {K.TL_DEVICE_COMPILE_FLAGS.value!r}: {err} in {value!r}"
            ) from None
    if isinstance(value, (list, tuple)) and all(isinstance(flag, str) for flag in value):
        return tuple(value)
    raise PassConfigError(
        f"pass config {K.TL_DEVICE_COMPILE_FLAGS.value!r} must be a string or a list of strings, got {value!r}"
    )


def _dump_dir(values: Mapping[str, Any]) -> str | None:
    directory = values.get(K.TL_DUMP_IR_DIR.value, DEFAULT_DUMP_DIR)
    if not isinstance(directory, (str, PathLike)):
        raise PassConfigError(
            f"pass config {K.TL_DUMP_IR_DIR.value!r} must be a directory path, got {directory!r}"
        )
    return str(directory) if _flag(values, K.TL_ENABLE_DUMP_IR) else None
