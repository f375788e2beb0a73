"""Errors of the backend infrastructure, each a `BackendError` (or `TilecraftError`) so callers can catch
them broadly, and distinct classes where a caller may want to react to one case only."""

from __future__ import annotations

from tilecraft.errors import BackendError, TilecraftError


class TargetError(BackendError):
    """A target string, dict or kind cannot be parsed, normalized or detected."""


class ManifestError(BackendError):
    """A `BackendModule` breaks a manifest rule, or conflicts with one already registered."""


class PluginAPIError(ManifestError):
    """A manifest or execution-backend spec declares a plugin API version this tilecraft does not support."""


class ExecutionBackendNotDeclared(BackendError):
    """An execution backend was named explicitly but the selected target backend does not declare it."""


class ExecutionBackendUnavailable(BackendError):
    """An execution backend was named explicitly and is declared, but cannot run here (reason and fix)."""


class NoExecutionBackendAvailable(BackendError):
    """`auto` found no declared execution backend that is available for the target."""


class ArtifactError(BackendError):
    """A compiled artifact or device code lacks the format that was asked for."""


class PassError(TilecraftError):
    """A pass failed with an exception that is not a tilecraft error (a bug in the pass, usually).

    The message starts with "pass '<name>' failed"; the original exception is chained as `__cause__`.
    """

    def __init__(self, message: str, pass_name: str) -> None:
        super().__init__(message)
        self.pass_name = pass_name
