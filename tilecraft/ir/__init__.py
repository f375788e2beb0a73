"""The tile IR: dtypes, expressions, statements, buffers, functions and their utilities."""

from tilecraft.ir import dtype
from tilecraft.ir.buffer import SCOPES, Buffer, BufferRegion, Range
from tilecraft.ir.dtype import DataType, as_dtype
from tilecraft.ir.expr import *  # noqa: F403
from tilecraft.ir.expr import Expr, IRError, Node, Var
from tilecraft.ir.function import IRModule, PrimFunc
from tilecraft.ir.span import Span
from tilecraft.ir.stmt import *  # noqa: F403
from tilecraft.ir.structural import structural_equal, structural_hash
from tilecraft.ir.visitor import Mutator, Visitor, free_vars, substitute, walk

__all__ = [
    "SCOPES", "Buffer", "BufferRegion", "DataType", "Expr", "IRError", "IRModule", "Mutator", "Node",
    "PrimFunc", "Range", "Span", "Var", "Visitor", "as_dtype", "dtype", "free_vars", "structural_equal",
    "structural_hash", "substitute", "walk",
]  # fmt: skip
