"""A bug in code generation is reported like a bug in a pass: the located internal-compiler-error
PassError naming the stage, the target and the kernel, with the original chained (fuzz-found: a
KeyError from a printer escaped bare)."""

from __future__ import annotations

import pytest

import tilecraft
import tilecraft.language as T
from tilecraft.backend.errors import PassError
from tilecraft.errors import LoweringError

OPENCL = "opencl -fp16=false -fp64=true -int64_atomics=true -local_mem=65536 -max_work_group_size=1024"


@T.prim_func
def scale(A: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=128):
        for i in T.Parallel(128):
            A[i] = A[i] * 2.0


def _broken(*args, **kwargs):
    raise KeyError("dim1")


@pytest.mark.parametrize(
    ("target", "printer"),
    [("c", "tilecraft.cpu.c_printer.CPrinter"), (OPENCL, "tilecraft.opencl.printer.OpenCLPrinter"),
     ("cuda -arch=sm_90a", "tilecraft.cuda.printer.CudaPrinter")],
)  # fmt: skip
def test_an_exception_in_device_codegen_is_an_internal_compiler_error(target, printer, monkeypatch):
    monkeypatch.setattr(f"{printer}._s_BufferStore", _broken)
    with pytest.raises(PassError, match=r"pass 'device-codegen' failed .*internal compiler error") as info:
        tilecraft.lower(scale, target=target)
    assert "test_codegen_errors.py" in str(info.value)  # the kernel being compiled
    assert "KeyError: 'dim1'" in str(info.value)
    assert isinstance(info.value.__cause__, KeyError)


def test_tilecraft_errors_in_codegen_keep_their_class(monkeypatch):
    def located(*args, **kwargs):
        raise LoweringError("not here")

    monkeypatch.setattr("tilecraft.cpu.c_printer.CPrinter._s_BufferStore", located)
    with pytest.raises(LoweringError, match="not here"):
        tilecraft.lower(scale, target="c")
