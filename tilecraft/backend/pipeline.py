"""Passes and pass pipelines.

A pass is a small object with a kebab-case `name` and `__call__(mod, ctx) -> IRModule`: either a
`Pass` subclass (a frozen dataclass whose fields are its options) or a function wrapped with
`@module_pass("name")`. A `PassPipeline` is one flat, ordered tuple of passes; each backend's
`pipeline.py` builds one per target kind.

Errors raised inside a pass:

* A tilecraft error (`KernelError`, `LoweringError`, `BackendError`...) keeps its class, so
  `except LoweringError` still works, and its text keeps the user's `file:line`; a line
  "note: raised in pass '<name>' of pipeline '<kind>'" is appended and `.pass_name` is set.
* Any other exception is a bug in the compiler, never the user's: it is re-raised as `PassError`, whose
  message starts with "pass '<name>' failed", says "internal compiler error", names the target and the
  kernels being lowered (`name (file:line)` of each function of the module), includes the original (and
  its `file:line` when it carries a span) and asks for a report; the original is chained as `__cause__`,
  so its traceback is printed below the message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tilecraft.backend.errors import PassError
from tilecraft.backend.formats import KEBAB_NAME, first_doc_line, frozen_mapping
from tilecraft.backend.instrument import CompositeInstrument, PassInstrument, instruments_from_settings
from tilecraft.errors import BackendError, TilecraftError

if TYPE_CHECKING:
    from tilecraft.backend.context import BackendContext
    from tilecraft.backend.target import Target
    from tilecraft.ir import IRModule


def check_pass_name(name: Any) -> str:
    """Pass names are kebab-case (`lower-tile-copy`), so dumps and error messages can name them."""
    if not isinstance(name, str) or not KEBAB_NAME.fullmatch(name):
        raise BackendError(f"pass name {name!r} must be kebab-case, e.g. 'lower-tile-copy'")
    return name


class Pass:
    """Base of passes: set a class attribute `name` and implement `__call__`.

    The class docstring's first line says what the pass guarantees after it runs.
    """

    name: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__ and isinstance(cls.__dict__["name"], str):
            check_pass_name(cls.__dict__["name"])

    def __call__(self, mod: IRModule, ctx: PassContext) -> IRModule:
        raise NotImplementedError(f"pass {type(self).__name__} does not implement __call__")

    @property
    def doc(self) -> str:
        return first_doc_line(type(self))


@dataclass(frozen=True)
class FunctionPass(Pass):
    """A pass made from a function by `@module_pass`."""

    name: str
    fn: Callable[[IRModule, PassContext], IRModule]

    def __post_init__(self) -> None:
        check_pass_name(self.name)

    def __call__(self, mod: IRModule, ctx: PassContext) -> IRModule:
        return self.fn(mod, ctx)

    @property
    def doc(self) -> str:
        return first_doc_line(self.fn)


def module_pass(name: str) -> Callable[[Callable[[IRModule, PassContext], IRModule]], FunctionPass]:
    """Decorator: `@module_pass("fold-constants") def fold(mod, ctx): ...` makes a Pass."""
    check_pass_name(name)
    return lambda fn: FunctionPass(name, fn)


@dataclass(frozen=True)
class PassContext:
    """What a pass may consult: the target, the user's pass configs, the backend context, a scratch dict.

    `scratch` lets passes of one run hand facts to later ones; it starts empty for every run.
    """

    target: Target
    pass_configs: Mapping[str, Any] = field(default_factory=dict)
    backend_context: BackendContext | None = None
    scratch: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pass_configs", frozen_mapping(self.pass_configs))

    def config(self, key: str, default: Any = None) -> Any:
        return self.pass_configs.get(key, default)


@dataclass(frozen=True)
class PassPipeline:
    """One target kind's complete, ordered pass list; `name` is the kind it lowers for."""

    name: str
    passes: tuple[Pass, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "passes", tuple(self.passes))
        if not isinstance(self.name, str) or not self.name:
            raise BackendError(f"pipeline name {self.name!r} must be the target kind it lowers for")
        for p in self.passes:
            check_pass_name(getattr(p, "name", None))
            if not callable(p):
                raise BackendError(f"pipeline {self.name!r}: pass {p.name!r} is not callable")

    @property
    def pass_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.passes)

    def describe(self) -> str:
        """The pass order, one line each with the pass's one-line doc."""
        return "\n".join(
            f"{i:>3} {p.name}  {getattr(p, 'doc', '')}".rstrip() for i, p in enumerate(self.passes, 1)
        )

    def run(self, mod: IRModule, ctx: PassContext, instrument: PassInstrument | None = None) -> IRModule:
        """Run every pass in order; instruments from `instrument` and from the settings observe it."""
        inst = CompositeInstrument(*([instrument] if instrument else []), *instruments_from_settings())
        inst.enter_pipeline(self, mod)
        for index, p in enumerate(self.passes, 1):
            inst.before_pass(index, p, mod)
            start = time.perf_counter()
            mod = self._run_pass(p, mod, ctx)
            inst.after_pass(index, p, mod, time.perf_counter() - start)
        inst.exit_pipeline(self, mod)
        return mod

    def _run_pass(self, p: Pass, mod: IRModule, ctx: PassContext) -> IRModule:
        from tilecraft.ir import IRModule

        try:
            result = p(mod, ctx)
        except TilecraftError as err:
            _note_pass(err, p.name, self.name)
            raise
        except Exception as err:
            raise PassError(_failure_text(p.name, self.name, ctx.target, mod, err), p.name) from err
        if not isinstance(result, IRModule):
            raise PassError(
                f"pass '{p.name}' failed in pipeline '{self.name}': it returned {type(result).__name__}, "
                "not an IRModule; a pass must return the (possibly unchanged) module",
                p.name,
            )
        return result


@contextmanager
def internal_errors(stage: str, pipeline_name: str, target: Target, mod: IRModule) -> Iterator[None]:
    """Any non-tilecraft exception raised by `stage` (code generation, say) becomes the same located
    internal-compiler-error `PassError` a failing pass raises."""
    try:
        yield
    except TilecraftError:
        raise
    except Exception as err:
        raise PassError(_failure_text(stage, pipeline_name, target, mod, err), stage) from err


def _note_pass(err: TilecraftError, pass_name: str, pipeline_name: str) -> None:
    # The innermost pass is the informative one when pipelines nest; do not annotate twice.
    if getattr(err, "pass_name", None) is not None:
        return
    err.pass_name = pass_name
    note = f"note: raised in pass '{pass_name}' of pipeline '{pipeline_name}'"
    err.args = (f"{err.args[0]}\n{note}" if err.args else note, *err.args[1:])


def _failure_text(pass_name: str, pipeline_name: str, target: Target, mod: IRModule, err: Exception) -> str:
    span = getattr(err, "span", None)
    where = f"{span}: " if span is not None else ""
    return (
        f"pass '{pass_name}' failed in pipeline '{pipeline_name}' (target {target}): internal compiler "
        f"error while lowering {_kernels(mod)}: {where}{type(err).__name__}: {err}\n"
        "This is a bug in tilecraft, not in the kernel: please report it with the kernel's source and this "
        "message (TILECRAFT_DUMP_IR=<dir> writes the IR before and after each pass, which helps). "
        "The original traceback is shown above this message."
    )


def _kernels(mod: IRModule) -> str:
    """`kernel name (file:line)` for each function of the module, so a report can say which kernel."""
    names = []
    for func in mod.functions:
        span = func.span
        names.append(f"{func.name} ({span.file}:{span.line})" if span is not None else func.name)
    if not names:
        return "an empty module"
    return ("kernel " if len(names) == 1 else "kernels ") + ", ".join(names)
