"""Lower tile ops through a backend's op table (tile-op class -> lowering function).

The mechanism is shared; what each op becomes is the backend's: a pipeline builds this pass with its
own table. An op missing from the table fails with the kernel's line and the target.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from tilecraft.errors import LoweringError
from tilecraft.ir import stmt as S
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import BufferKeepingMutator

OpTable = Mapping[type, Callable[[S.TileOp, object], S.Stmt]]


class _LowerTileOps(BufferKeepingMutator):
    def __init__(self, table: OpTable, ctx) -> None:
        super().__init__()
        self.table = table
        self.ctx = ctx

    def mutate(self, node):
        if isinstance(node, S.TileOp):
            return self._lower(node)
        return super().mutate(node)

    def _lower(self, op: S.TileOp) -> S.Stmt:
        lower = self.table.get(type(op))
        if lower is None:
            supported = ", ".join(sorted(t.__name__ for t in self.table))
            raise LoweringError(
                f"tile op {type(op).__name__} is not supported on this target",
                op.span,
                f"supported tile ops: {supported}",
                target=self.ctx.target,
                unsupported=f"op:{type(op).__name__}",
            )
        return lower(op, self.ctx)


def lower_tile_ops(table: OpTable):
    """A pass (`lower-tile-ops`) that replaces every tile op by what `table` lowers it to."""
    from tilecraft.backend.pipeline import module_pass

    @module_pass("lower-tile-ops")
    def run(mod: IRModule, ctx) -> IRModule:
        """Every tile op is replaced by the backend's loops and calls."""
        mutator = _LowerTileOps(table, ctx)
        return mod.with_functions(f.with_body(mutator.mutate(f.body)) for f in mod.functions)

    return run
