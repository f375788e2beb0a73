"""`tvm.script.ir_builder.base.IRBuilderFrame`: in TileLang, what `with` and `for` statements of a kernel
take (`T.Kernel(...)`, `T.serial(...)`, `T.Parallel(...)`). Here it is an abstract class that tilecraft's
counterparts are registered with, so `isinstance(T.serial(0, n), IRBuilderFrame)` holds as in TileLang;
it is not constructed (tilecraft's parser, not an IR builder, turns the kernel's statements into IR)."""

from __future__ import annotations

import abc

from tilecraft.compat.tvm._mapped import refusing
from tilecraft.language.kernel import KernelSpec
from tilecraft.language.loops import LoopSpec, PersistentSpec

__all__ = ["IRBuilderFrame"]


class IRBuilderFrame(abc.ABC):  # noqa: B024 - a marker: tilecraft's frame classes are registered with it
    """The frames of a kernel's `with` and `for` statements (tilecraft's KernelSpec and loop specs)."""


for _frame in (KernelSpec, LoopSpec, PersistentSpec):
    IRBuilderFrame.register(_frame)

__getattr__ = refusing("tvm.script.ir_builder.base")
