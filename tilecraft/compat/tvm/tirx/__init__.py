"""TVM's `tvm.tirx` (`tvm.tir` before TileLang's TVM renamed it): the expression classes of `expr` and the
builders of `op`, mapped onto tilecraft's IR. Statements, buffers declared by hand, index maps and TVM's
passes are refused (`tilecraft.compat.tvm.refused` says why, and what to write instead)."""

from __future__ import annotations

from tilecraft.compat.tvm._mapped import refusing
from tilecraft.compat.tvm.tirx import expr, op
from tilecraft.compat.tvm.tirx.expr import *  # noqa: F403 - TVM's tirx holds the names of both
from tilecraft.compat.tvm.tirx.op import *  # noqa: F403

__all__ = ["expr", "op", *expr.__all__, *op.__all__]
__getattr__ = refusing("tvm.tirx")
