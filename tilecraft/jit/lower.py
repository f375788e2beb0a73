"""`tilecraft.lower`: kernel -> backend pipeline -> codegen -> CompiledArtifact (nothing is built)."""

from __future__ import annotations

import functools
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from tilecraft import settings
from tilecraft.backend.context import BackendContext, create_backend_context
from tilecraft.backend.instrument import CompositeInstrument, IRDumper, PassInstrument, PassTiming
from tilecraft.backend.registry import registered_backends
from tilecraft.errors import LoweringError
from tilecraft.ir.arith.analyzer import assumed_divisible
from tilecraft.ir.function import COMPILE_FLAGS_ATTR, PASS_CONFIGS_ATTR, IRModule, PrimFunc
from tilecraft.ir.structural import structural_hash
from tilecraft.jit.options import PassConfigKey, PassConfigs, resolve_pass_configs
from tilecraft.runtime.artifact import (
    ArtifactDecodeError,
    CompiledArtifact,
    artifact_files,
    artifact_from_files,
)
from tilecraft.transform.check import check_semantics
from tilecraft.transform.expression_depth import bound_expression_depth
from tilecraft.transform.widen_fragments import widen_fragments
from tilecraft.transform.written import written_params


def resolve_context(
    target: Any = "auto",
    target_host: Any = None,
    execution_backend: str = "auto",
    ctx: BackendContext | None = None,
) -> BackendContext:
    return ctx if ctx is not None else create_backend_context(target, target_host, execution_backend)


def artifact_key(func: PrimFunc, ctx: BackendContext, pass_configs: Mapping | None, compile_flags) -> str:
    """What determines the artifact: the kernel's structure, the names and source locations that its code
    and messages show (parameter and buffer names, file:line and the lines' text), the target and every
    option. Two kernels that differ only in a name or a line never share an artifact."""
    from tilecraft import __version__
    from tilecraft.backend.postproc import fingerprint
    from tilecraft.execution.cache import cache_key, package_fingerprint

    # Checked and canonical, so `PassConfigKey.X` and its string share an entry.
    configs = checked_pass_configs(pass_configs, ctx).canonical()
    # What is lowered is the split function (a parsed kernel is split already: this is the same object).
    func = bound_expression_depth(func)
    return cache_key(
        "artifact", structural_hash(func, map_names=False, spans=True), str(ctx.target), str(ctx.target_host),
        ctx.backend.name, ctx.execution.name, configs, repr(compile_flags), __version__, package_fingerprint(),
        fingerprint(),
    )  # fmt: skip


def checked_pass_configs(pass_configs: Mapping | None, ctx: BackendContext) -> PassConfigs:
    """`pass_configs` checked against tilecraft's keys and those the selected backend declares, with the
    bounds checks TILECRAFT_BOUNDS_CHECK asks for (so they are part of the cache key)."""
    others = lambda: {m.name: m.pass_configs for m in registered_backends()}  # noqa: E731 - asked on a miss
    return resolve_pass_configs(with_bounds_checks(pass_configs, ctx), ctx.backend.pass_configs, ctx.backend.name,
                                others)  # fmt: skip


def with_bounds_checks(pass_configs: Mapping | None, ctx: BackendContext) -> Mapping | None:
    """`pass_configs` with `tilecraft.bounds_check` on under TILECRAFT_BOUNDS_CHECK=1, where the backend
    reads that key and the kernel's own configs do not set it; a backend that cannot check says so once."""
    if not settings.get("TILECRAFT_BOUNDS_CHECK"):
        return pass_configs
    key = PassConfigKey.BOUNDS_CHECK.value
    if key not in ctx.backend.pass_configs:
        _warn_unchecked(ctx.backend.name)
        return pass_configs
    if any(k == key for k in pass_configs or {}):  # a PassConfigKey equals its string
        return pass_configs
    return {**(pass_configs or {}), key: True}


@functools.cache
def _warn_unchecked(backend: str) -> None:
    warnings.warn(
        f"TILECRAFT_BOUNDS_CHECK=1, but backend {backend!r} cannot check buffer accesses: its kernels run "
        "unchecked (docs/reliability.md lists what each target guarantees)",
        RuntimeWarning,
        stacklevel=4,
    )


def _instruments(configs: PassConfigs) -> PassInstrument | None:
    """IR dumps and pass timing that the pass configs ask for (the settings can ask for them too)."""
    found: list[PassInstrument] = []
    if configs.dump_dir is not None:
        found.append(IRDumper(configs.dump_dir))
    if configs.profile:
        found.append(PassTiming(stream=sys.stderr))
    return CompositeInstrument(*found) if found else None


def lower_uncached(
    func: PrimFunc, ctx: BackendContext, pass_configs=None, compile_flags=None
) -> CompiledArtifact:
    """Run the check, the pipeline and both codegens (where the dims the kernel was specialized on
    being multiples of a number are, for every proof, such multiples)."""
    try:
        with assumed_divisible(func.attr("tilecraft.divisible_dims")):
            return _lower(func, ctx, pass_configs, compile_flags)
    except RecursionError:
        # Deep expressions are split into locals first (bound-expression-depth); a kernel that still
        # exhausts Python's stack (hundreds of nested statements) is named, not a bare RecursionError.
        raise LoweringError(
            f"kernel {func.name} nests too deeply to compile for {ctx.target} (Python's recursion limit was "
            "reached while lowering it)",
            func.span,
            "split deeply nested statements or very long expressions into several statements or a loop",
        ) from None


def _lower(func: PrimFunc, ctx: BackendContext, pass_configs=None, compile_flags=None) -> CompiledArtifact:
    configs = checked_pass_configs(pass_configs, ctx)
    # Parsed kernels are bounded already; a function built in Python may not be.
    func = bound_expression_depth(func)
    # Strings, as the compilers take them (a Path is one); stored artifacts hold only plain data.
    flags = tuple(str(flag) for flag in compile_flags or ()) + configs.device_flags
    # TileLang sizes a fragment from the T.Parallel loops that index it; the check then sees that shape.
    mod = widen_fragments(IRModule.from_func(func))
    check_semantics(mod)
    # Read from the kernel as written, where every construct's role is known (see transform/written.py).
    written = written_params(func)
    lowered = ctx.lower(mod, configs.values, _instruments(configs))
    host_mod, device_mod = ctx.split(lowered)
    # What the device compiler is asked for; a compile step in codegen applies it as a build would.
    compile_options = {"fast_math": configs.fast_math, "flags": flags}
    device = ctx.codegen_device(device_mod, options=compile_options)
    host = ctx.codegen_host(ctx.preprocess_host(host_mod))
    return CompiledArtifact.assemble(
        func,
        ctx.target,
        device,
        host,
        structural_hash(func),
        (("compile_flags", flags), ("fast_math", configs.fast_math)),
        written,
    )


FlagRewrite = Callable[[tuple[str, ...]], tuple[tuple[str, ...], Mapping[str, Any]]]
# A process-wide translation of compile flags, installed by an emulation that runs programs written for
# one device on another (tilecraft.compat.cuda_on_cpu: nvcc's flags, given to a host compiler); None:
# flags pass as given.
_flag_rewrite: list[FlagRewrite | None] = [None]


def set_compile_flag_rewrite(rewrite: FlagRewrite | None) -> None:
    """Install `rewrite(flags) -> (flags, pass_configs)` (None removes it): every compilation's flags go
    through it before they enter the cache key, and the pass configs it returns go under the caller's."""
    _flag_rewrite[0] = rewrite


def with_function_options(func: PrimFunc, pass_configs: Mapping | None, compile_flags) -> tuple[Mapping | None, Any]:
    """The caller's `pass_configs` over the kernel's own (T.annotate_pass_configs), and the kernel's own
    compile flags (T.annotate_compile_flags) followed by the caller's (then `set_compile_flag_rewrite`'s
    translation, where one is installed)."""
    own_configs, own_flags = func.attr(PASS_CONFIGS_ATTR), func.attr(COMPILE_FLAGS_ATTR)
    if own_configs:
        pass_configs = _over(dict(own_configs), pass_configs)
    if own_flags:
        flags = [compile_flags] if isinstance(compile_flags, str) else list(compile_flags or ())
        compile_flags = [*own_flags, *flags]
    rewrite = _flag_rewrite[0]
    if rewrite is not None and compile_flags:
        flags, configs = rewrite(tuple([compile_flags] if isinstance(compile_flags, str) else compile_flags))
        compile_flags, pass_configs = list(flags), _over(dict(configs), pass_configs) if configs else pass_configs
    return pass_configs, compile_flags


def _over(base: dict, configs: Mapping | None) -> dict:
    """`configs` over `base`; str(key): a PassConfigKey is its string, so either spelling replaces the other."""
    return {**{str(k): v for k, v in base.items()}, **{str(k): v for k, v in (configs or {}).items()}}


def lower_artifact(
    func: PrimFunc, ctx: BackendContext, pass_configs=None, compile_flags=None
) -> CompiledArtifact:
    """The artifact for `func`, from the disk cache when an identical lowering was done before."""
    from tilecraft.execution.cache import KernelCache

    pass_configs, compile_flags = with_function_options(func, pass_configs, compile_flags)
    cache = KernelCache()
    func = bound_expression_depth(func)  # before anything walks it (a cache hit sizes its fragments)
    key = artifact_key(func, ctx, pass_configs, compile_flags)
    # A user who asks for IR dumps or pass timings wants the pipeline to run.
    configs = checked_pass_configs(pass_configs, ctx)
    observed = (
        settings.get("TILECRAFT_DUMP_IR") is not None
        or settings.get("TILECRAFT_PASS_TIMING")
        or _instruments(configs) is not None
    )
    entry = None if observed else cache.get(key)
    if entry is not None:
        # A cached artifact still reports the fragments it sized (only the warnings are wanted here).
        widen_fragments(IRModule.from_func(func))
        try:
            return artifact_from_files(entry.read)
        except ArtifactDecodeError:
            cache.evict(key)  # valid checksums but not an artifact: rebuild it rather than fail each time
    start = time.perf_counter()
    artifact = lower_uncached(func, ctx, pass_configs, compile_flags)
    if settings.get("TILECRAFT_VERBOSE"):
        print(f"[tilecraft] lowered {func.name} for {ctx.target} in {time.perf_counter() - start:.2f} s")
    cache.put(key, artifact_files(artifact), {"function": func.name})
    return artifact


def lower(func: PrimFunc, target: Any = "auto", target_host: Any = None, execution_backend: str = "auto",
          pass_configs: Mapping | None = None, compile_flags=None) -> CompiledArtifact:  # fmt: skip
    """Lower and generate code for `func` without building it (no device or runtime is needed)."""
    ctx = create_backend_context(target, target_host, execution_backend, require_available=False)
    pass_configs, compile_flags = with_function_options(func, pass_configs, compile_flags)
    return lower_uncached(func, ctx, pass_configs, compile_flags)
