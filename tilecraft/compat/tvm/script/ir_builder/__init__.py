"""TVM's `tvm.script.ir_builder`: only `base.IRBuilderFrame` is mapped (see `tvm.script`)."""

from __future__ import annotations

from tilecraft.compat.tvm._mapped import refusing

__getattr__ = refusing("tvm.script.ir_builder")
