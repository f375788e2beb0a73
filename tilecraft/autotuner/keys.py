"""The tuning cache's key: everything that decides which candidate wins (see record.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tilecraft.autotuner.record import FORMAT, NotKeyable, canonical, function_identity

if TYPE_CHECKING:
    from tilecraft.autotuner.session import Session


def _structure(session: Session) -> Any:
    """The first candidate's IR structure: catches edits in helpers the factory calls."""
    from tilecraft.ir.structural import structural_hash

    func = session._elaborate(0)
    if isinstance(func, BaseException):
        return ["error", type(func).__name__]
    try:
        return str(structural_hash(func))
    except TypeError as err:  # an attribute value the structural hash cannot read
        raise NotKeyable(f"the first candidate's IR ({err})") from None


def _compile_parts(session: Session) -> list[Any]:
    ctx, args = session.ctx, session.compile_args
    return [
        str(ctx.target), str(ctx.target_host), ctx.backend.name, ctx.execution.name,
        ctx.execution_backend().toolchain_version(), canonical(args.normalized_out_idx()),
        canonical(args.pass_configs), canonical(args.compile_flags),
    ]  # fmt: skip


def _callable(fn: Any) -> Any:
    return None if fn is None else function_identity(fn)


def _profile_parts(session: Session) -> list[Any]:
    p, o = session.profile, session.options
    return [
        p.supply_type.name, o.warmup, o.rep, p.backend, p.rtol, p.atol, p.max_mismatched_ratio, p.skip_check,
        p.cache_input_tensors, _callable(p.ref_prog), _callable(p.supply_prog), _callable(p.manual_check_prog),
        canonical(session.inputs), o.early_stop_factor,
    ]  # fmt: skip


def tuning_key(session: Session) -> str:
    """The key of `session`'s tuning; NotKeyable when a part has no identity across processes."""
    from tilecraft import __version__
    from tilecraft.execution.cache import cache_key, package_fingerprint

    return cache_key(
        "autotune", FORMAT, session.factory.identity(), canonical(session.configs), _structure(session),
        _compile_parts(session), _profile_parts(session), __version__, package_fingerprint(),
    )  # fmt: skip
