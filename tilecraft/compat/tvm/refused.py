"""The TVM names tilecraft's `tvm` namespace refuses, each with the reason and what to use instead.

Keys are TVM's spelling (`tvm.arith`, `tvm.tirx.IndexMap`). A name missing here and from the namespace
is refused with a generic reason. docs/compat.md, section "TVM", has the same table with the census
counts.
"""

from __future__ import annotations

_TVM_IR = (
    "TVM's IR objects and passes work on TVM's TIR, which tilecraft does not have: a tilecraft kernel is "
    "a tilecraft.ir PrimFunc (`kernel.get_tir()`, `tilecraft.lower`), built with tilecraft.language (T.*)"
)
_STATEMENTS = (
    "TVM statement nodes are not built by hand here: write the statement in the kernel body "
    "(assignment, `for ... in T.serial(...)`, `if`, T.* calls), which the parser turns into tilecraft IR"
)

REFUSED: dict[str, str] = {
    # modules
    "tvm.arith": "TVM's integer analysis works on TVM expressions; tilecraft.ir.arith simplifies tilecraft's",
    "tvm.script": _TVM_IR + " (TVMScript is not parsed; `T.prim_func` kernels are)",
    "tvm.te": "TVM's tensor expressions: write the computation as a tilecraft kernel",
    "tvm.tl": "the pre-release TileLang inside TVM (`tvm.tl.language`): use `import tilelang.language as T`",
    "tvm.relay": "TVM's graph compiler is not part of TileLang's kernel language",
    "tvm.relax": "TVM's graph compiler is not part of TileLang's kernel language",
    "tvm.transform": _TVM_IR + "; pass configs go to `tilelang.jit(pass_configs=...)`",
    "tvm.tirx.transform": _TVM_IR + "; each backend's pass list is its pipeline.py",
    "tvm.tirx.analysis": _TVM_IR,
    "tvm.tirx.stmt_functor": _TVM_IR
    + " (tilecraft.ir.visitor has the Visitor and Mutator of tilecraft's IR)",
    "tvm.tirx.script": _TVM_IR,
    "tvm.contrib": "TVM's contrib modules; `tilelang.contrib.nvcc` is provided (tilecraft.compat.contrib)",
    "tvm.ffi": "TVM's foreign-function registry: tilecraft compiles with its own backends, no TVM runtime",
    "tvm.error": "TVM's error classes: tilecraft raises tilecraft.errors (TilecraftError and subclasses)",
    "tvm.driver": _TVM_IR,
    "tvm.rpc": "TVM's remote runtime is not part of tilecraft",
    # top-level names
    "tvm.IRModule": _TVM_IR,
    "tvm.compile": _TVM_IR + "; compile with `tilelang.compile` / `tilelang.jit`",
    "tvm.build": _TVM_IR + "; compile with `tilelang.compile` / `tilelang.jit`",
    "tvm.lower": _TVM_IR + "; `tilelang.lower` lowers a tilecraft kernel",
    "tvm.get_global_func": "TVM's foreign-function registry: tilecraft has no TVM runtime",
    "tvm.register_func": "TVM's foreign-function registry: tilecraft has no TVM runtime",
    "tvm.TVMError": "TVM's error class: tilecraft raises tilecraft.errors.TilecraftError and subclasses",
    "tvm.nd": "TVM's arrays: tilecraft kernels take torch tensors and NumPy arrays",
    "tvm.ir.IRModule": _TVM_IR,
    "tvm.ir.Op": "TVM's operator registry: tilecraft's calls name their intrinsic by string "
    "(`T.call_intrin(dtype, 'exp', x)`)",
    "tvm.ir.assert_structural_equal": "TVM's structural equality of TVM IR: tilecraft.ir.structural has "
    "tilecraft's (`structural_equal`, `assert_structural_equal`)",
    "tvm.ir.structural_equal": "TVM's structural equality of TVM IR: tilecraft.ir.structural has tilecraft's",
    "tvm.ir.instrument": _TVM_IR,
    "tvm.runtime.tensor": "TVM's arrays: tilecraft kernels take torch tensors and NumPy arrays",
    "tvm.runtime.Module": "compiled TVM modules: a tilecraft Kernel is the compiled object (`kernel.export()`)",
    # tvm.tirx: IR construction that tilecraft's kernel language replaces
    "tvm.tirx.IndexMap": "TVM's index maps: T.Layout and T.Fragment are tilecraft's (forward functions of "
    "the indices, `T.Layout(shape, lambda i, j: ...)`)",
    "tvm.tirx.decl_buffer": "buffers are declared in the kernel: T.Tensor for parameters, T.alloc_shared / "
    "T.alloc_fragment / T.alloc_local inside T.Kernel",
    "tvm.tirx.PrimFunc": _TVM_IR,
    "tvm.tirx.Stmt": _STATEMENTS,
    "tvm.tirx.For": _STATEMENTS,
    "tvm.tirx.ForKind": _STATEMENTS,
    "tvm.tirx.BufferStore": _STATEMENTS,
    "tvm.tirx.Evaluate": _STATEMENTS + " (`T.evaluate(x)` is there)",
    "tvm.tirx.SeqStmt": _STATEMENTS,
    "tvm.tirx.IfThenElse": _STATEMENTS,
    "tvm.tirx.LetStmt": _STATEMENTS,
    "tvm.tirx.AttrStmt": _STATEMENTS + "; TVM attributes such as `reduce_scope` have no tilecraft meaning",
    "tvm.tirx.Allocate": _STATEMENTS,
    "tvm.tirx.SBlock": _STATEMENTS,
    "tvm.tirx.Block": _STATEMENTS,
    "tvm.tirx.Shuffle": "vector shuffles are not part of tilecraft's IR (vectorization is a backend pass)",
    "tvm.tirx.call_llvm_intrin": "tilecraft emits C, not LLVM IR: use T.* math or T.call_intrin",
    "tvm.tirx.call_llvm_pure_intrin": "tilecraft emits C, not LLVM IR: use T.* math or T.call_intrin",
}


def refusal_reason(name: str) -> str | None:
    """Why the TVM name `name` is refused: its own entry, else its nearest refused parent's
    (`tvm.script.tir` inherits `tvm.script`'s); None where neither is listed."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        reason = REFUSED.get(".".join(parts[:end]))
        if reason is not None:
            return reason
    return None
