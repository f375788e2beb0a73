"""TVM's `tvm.script`: TVMScript's parser and IR builder, which tilecraft does not have. One name is
mapped, `tvm.script.ir_builder.base.IRBuilderFrame`, the class TileLang's frames derive from (programs
test what `T.serial(...)` or `T.Kernel(...)` returned with it); every other name is refused with the
reason (`tilecraft.compat.tvm.refused`)."""

from __future__ import annotations

from tilecraft.compat.tvm._mapped import refusing

__getattr__ = refusing("tvm.script")
