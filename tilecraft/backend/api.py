"""The plugin API version: what a backend package (a manifest, an execution-backend spec) declares it was
written for, and the range this tilecraft accepts.

The version counts incompatible changes of what a plugin builds on: `BackendModule`, `TargetKind`,
`ExecutionBackendSpec`, `PassPipeline`, the codegen records and the tile IR they see. A plugin declares
`api_version=API_VERSION` of the tilecraft it was written against; a tilecraft that no longer supports
that version refuses it at load, naming the plugin, its version and the supported range, instead of
failing later in a pass.
"""

from __future__ import annotations

API_VERSION = 1
"""The plugin API this tilecraft implements."""

MIN_API_VERSION = 1
"""The oldest plugin API this tilecraft still accepts."""


def supported_range() -> str:
    """The accepted versions in words, for messages."""
    if MIN_API_VERSION == API_VERSION:
        return f"{API_VERSION}"
    return f"{MIN_API_VERSION} to {API_VERSION}"


def api_version_problem(what: str, version: object) -> str:
    """Why `version` (declared by `what`) cannot be loaded, or "" when it can."""
    if version is None:
        return (
            f"{what} declares no api_version; declare the plugin API it was written for "
            f"(api_version=tilecraft.backend.API_VERSION, {API_VERSION} in this tilecraft)"
        )
    if not isinstance(version, int) or isinstance(version, bool):
        return f"{what}: api_version must be an int, got {version!r}"
    if MIN_API_VERSION <= version <= API_VERSION:
        return ""
    advice = (
        "upgrade tilecraft, or install a version of the plugin written for this tilecraft"
        if version > API_VERSION
        else "update the plugin to the current API (docs/backends.md lists what changed), or install an "
        "older tilecraft"
    )
    return (
        f"{what} was written for tilecraft plugin API {version}; this tilecraft supports plugin API "
        f"{supported_range()}; {advice}"
    )
