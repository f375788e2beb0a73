"""TileLang's `tvm` for tilecraft: the part of TVM that TileLang's examples use, mapped onto tilecraft's IR.

tilecraft has no TVM. Under `tilecraft run-tilelang` (the import hook of tilecraft.compat), `import tvm`,
`from tilelang import tvm` and `tvm.tir` / `tvm.tirx` load this package, which holds:

- `tvm.DataType`, `tvm.runtime.DataType`: tilecraft's DataType (`DataType("float16").bits`);
- `tvm.tirx` / `tvm.tir` (`.expr`, `.op`): expression classes and builders over tilecraft.ir
  (`tirx.const(1, "uint16")`, `tirx.reinterpret(T.float16, x)`, `tirx.Cast`, `tirx.Select`, `tirx.Min`,
  `isinstance(x, tirx.PrimExpr)`), usable in kernels, macros and the helpers they call;
- `tvm.target.Target`: tilecraft's Target, parsed from TVM's spelling (`llvm`, `rocm`, `-mcpu=`);
- `tvm.ir.Range`, `tvm.runtime.convert`, `tvm.testing.requires_package`.

Any other name raises `UnmappedTvmError` (an ImportError) naming it, with the reason where it is a known
TVM name (`tilecraft.compat.tvm.refused`); docs/compat.md, section "TVM", has the table and the census
of what TileLang's examples and tests use.
"""

from __future__ import annotations

from tilecraft.compat.tvm import ir, runtime, target, testing, tirx
from tilecraft.compat.tvm._mapped import refusing
from tilecraft.ir.dtype import DataType

tir = tirx

__all__ = ["DataType", "ir", "runtime", "target", "testing", "tir", "tirx"]
__getattr__ = refusing("tvm")
