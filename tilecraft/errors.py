"""Errors that point into the user's kernel.

A `KernelError` carries a Span; its message shows `file:line:col`, the source line with a caret, what
went wrong and what would be valid. User mistakes are raised with the internal traceback suppressed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tilecraft.ir.span import Span


class TilecraftError(Exception):
    """Base of every error tilecraft raises on purpose."""


class KernelError(TilecraftError):
    """A mistake in a kernel, located in the user's source."""

    def __init__(self, message: str, span: Span | None = None, hint: str | None = None) -> None:
        self.message = message
        self.span = span
        self.hint = hint
        super().__init__(self._format())

    def _format(self) -> str:
        parts = []
        if self.span is not None:
            parts.append(f"{self.span}: {self.message}")
            excerpt = self.span.excerpt()
            if excerpt:
                parts.append(excerpt)
        else:
            parts.append(self.message)
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)


class KernelWarning(UserWarning):
    """A kernel compiles, but with a meaning its author may not expect; the message says where and why."""


class PluginWarning(UserWarning):
    """An installed backend plugin (an entry point) could not be loaded; the other backends still work."""


class ParseError(KernelError):
    """The kernel's Python source cannot be turned into tile IR."""


class ParseAssertionError(ParseError, AssertionError):
    """A T.* call refused arguments that TileLang checks with an `assert` (the element counts of
    `T.reshape` / `T.view`): located like any ParseError, and still an AssertionError for code that
    catches TileLang's."""


class ParseRuntimeError(ParseError, RuntimeError):
    """A construct TileLang's parser refuses with a RuntimeError (a buffer slice with a step,
    `A[0:10:2]`): located like any ParseError, and still a RuntimeError for code that catches TileLang's."""


class SemanticError(KernelError):
    """The kernel parsed but breaks a rule of the language (shapes, ranks, dtypes, placement)."""


class LoweringError(KernelError):
    """A backend cannot lower a construct of the kernel for its target.

    `unsupported` names the limit the error reports when it is one a backend may declare in its
    manifest's `unsupported` (`"dtype:float64"`, `"op:Cumsum"`, `"feature:..."`, `"resource:..."`): the
    conformance kit skips a kernel only for a limit its backend declares, and fails it otherwise.
    """

    def __init__(
        self,
        message: str,
        span: Span | None = None,
        hint: str | None = None,
        target=None,
        unsupported: str | None = None,
    ):
        self.target = target
        self.unsupported = unsupported
        if target is not None:
            message = f"{message} (target: {target})"
        super().__init__(message, span, hint)


class BackendError(TilecraftError):
    """Backend registration, target resolution or execution-backend selection failed."""


class ToolchainError(TilecraftError):
    """An external compiler or runtime failed or is missing."""


class Unavailable(ToolchainError):
    """A runtime, library or device a step needs is not usable here: `reason` says why, `fix` what to do."""

    def __init__(self, reason: str, fix: str) -> None:
        self.reason = reason
        self.fix = fix
        super().__init__(f"{reason} (fix: {fix})")


class ToolchainNotFound(ToolchainError):
    """The compiler or runtime a step needs is not installed or not usable here (the message says which,
    where it was looked for and how to get one); `tilecraft backend check` skips a compile check on it."""


class ArgumentError(TilecraftError, TypeError):
    """A kernel was called with arrays or scalars that do not match its parameters."""


class OptionError(TilecraftError, ValueError):
    """Compile options that contradict each other or the kernel (an `out_idx` for a kernel that returns
    its T.empty outputs)."""


class UnpicklingKernelError(TilecraftError):
    """A pickled Kernel that cannot be built or loaded in the process unpickling it (the message says why
    and names the alternative: an export loaded with `tilecraft.load`)."""


class OutOfBoundsError(TilecraftError):
    """A bounds-checked kernel (pass config `tilecraft.bounds_check`, or TILECRAFT_BOUNDS_CHECK=1) accessed a
    buffer outside its extent; the message names the buffer, the kernel's line and the element offset."""


def short_repr(value: object, limit: int = 80) -> str:
    """`value` as an error message shows it: an array as its type, shape and dtype (its repr would print
    the elements, thousands of them), anything else as its repr cut to `limit` characters."""
    shape, dtype = getattr(value, "shape", None), getattr(value, "dtype", None)
    if isinstance(shape, tuple) and shape and dtype is not None:  # not a scalar (numpy's have shape ())
        kind = type(value)
        return f"{kind.__module__.split('.')[0]}.{kind.__name__} of shape {tuple(shape)} and dtype {dtype}"
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
