"""Where each argument of a device kernel comes from: a kernel's parameters (its `KernelInfo.params`,
in ABI order) name the function's parameters or symbolic dims, and every launcher resolves them the
same way, by name and kind."""

from __future__ import annotations

from dataclasses import dataclass

from tilecraft.errors import TilecraftError
from tilecraft.runtime.artifact import CompiledArtifact, ParamInfo


@dataclass(frozen=True)
class ArgSource:
    """Function parameter `index` (kind "buffer" or "scalar"), or symbolic dim `index` (kind "dim")."""

    kind: str
    index: int


def arg_source(param: ParamInfo, artifact: CompiledArtifact, symbol: str) -> ArgSource:
    """The function parameter or symbolic dim kernel `symbol`'s parameter `param` names, of the same kind;
    TilecraftError naming the kernel and what it could have named otherwise."""
    for i, p in enumerate(artifact.params):
        if p.name == param.name:
            if p.kind != param.kind:
                raise TilecraftError(
                    f"kernel {symbol}: parameter {param.name!r} is a {param.kind} but the function's "
                    f"parameter of that name is a {p.kind}"
                )
            return ArgSource(p.kind, i)
    for j, var in enumerate(artifact.symbolic_dims):
        if var.name == param.name and param.kind == "scalar":
            return ArgSource("dim", j)
    known = [p.name for p in artifact.params] + [v.name for v in artifact.symbolic_dims]
    raise TilecraftError(
        f"kernel {symbol}: parameter {param.name!r} is neither a parameter nor a symbolic dim of "
        f"{artifact.function_name} (known: {', '.join(known) or 'none'})"
    )
