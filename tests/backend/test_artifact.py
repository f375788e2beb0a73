"""CompiledArtifact and its records: typed, frozen, validated, with accessors that list the formats."""

import pickle

import pytest

from tilecraft.backend import DeviceCode, HostCode, Target
from tilecraft.backend.errors import ArtifactError
from tilecraft.ir import Buffer, PrimFunc, Var
from tilecraft.ir import dtype as dt
from tilecraft.ir.expr import const
from tilecraft.ir.stmt import Evaluate
from tilecraft.runtime import CompiledArtifact, KernelInfo, ParamInfo


@pytest.fixture
def func():
    n = Var(dt.int32, "n")
    a = Buffer("A", (n, const(4, dt.int32)), dt.float32)
    scale = Var(dt.float32, "scale")
    return PrimFunc("scale_rows", (a, scale), Evaluate(const(0, dt.int32)))


def kernel(params):
    return KernelInfo("scale_rows_kernel", params, grid=(const(8, dt.int32),), block=(128,), dynamic_smem=256)


def test_param_info_from_buffer_and_scalar(func):
    a, scale = (ParamInfo.from_param(p) for p in func.params)
    assert (a.name, a.kind, a.dtype, a.scope, len(a.shape)) == ("A", "buffer", dt.float32, "global", 2)
    assert (scale.name, scale.kind, scale.shape, scale.strides) == ("scale", "scalar", (), ())


def test_param_info_validation():
    with pytest.raises(ArtifactError, match=r"kind 'tensor' is not one of \('buffer', 'scalar'\)"):
        ParamInfo("x", "tensor", dt.float32)
    with pytest.raises(ArtifactError, match="dtype must be a DataType"):
        ParamInfo("x", "scalar", "float32")
    with pytest.raises(ArtifactError, match="cannot have a shape"):
        ParamInfo("x", "scalar", dt.float32, (const(1, dt.int32),))


def test_kernel_info_validation():
    with pytest.raises(ArtifactError, match="block must be 1 to 3 positive ints"):
        KernelInfo("k", (), (), block=(0,))
    with pytest.raises(ArtifactError, match="dynamic_smem must be a byte count"):
        KernelInfo("k", (), (), block=(32,), dynamic_smem=-1)
    assert KernelInfo("k", [], [], [32, 4]).block == (32, 4)


def test_assemble_and_accessors(func):
    params = tuple(ParamInfo.from_param(p) for p in func.params)
    device = DeviceCode(
        {"toy-source": "src"}, {"toy-binary": b"bin"}, ("scale_rows_kernel",), (kernel(params),)
    )
    art = CompiledArtifact.assemble(func, Target("toyk"), device, HostCode("host src", "toy-host"), "abc123")
    assert art.function_name == "scale_rows"
    assert [p.name for p in art.params] == ["A", "scale"]
    assert [v.name for v in art.symbolic_dims] == ["n"]
    assert art.kernels[0].block == (128,)
    assert art.source("toy-source") == "src"
    assert art.source("toy-host") == "host src"
    assert art.binary("toy-binary") == b"bin"
    assert art.formats == ("toy-source", "toy-binary", "toy-host")


def test_missing_formats_list_what_is_there(func):
    art = CompiledArtifact.assemble(func, Target("toyk"), DeviceCode({"toy-source": "s"}), None, "h")
    with pytest.raises(ArtifactError, match="has no source 'other'; sources: toy-source; binaries: none"):
        art.source("other")
    with pytest.raises(
        ArtifactError, match="has no binary 'toy-binary'; sources: toy-source; binaries: none"
    ):
        art.binary("toy-binary")


def test_artifact_is_immutable(func):
    sources = {"toy-source": "s"}
    art = CompiledArtifact.assemble(
        func, Target("toyk"), DeviceCode(sources), None, "h", extra=(("note", 1),)
    )
    sources["toy-source"] = "changed"
    assert art.source("toy-source") == "s"
    with pytest.raises(TypeError):
        art.device_sources["x"] = "y"
    with pytest.raises(AttributeError):
        art.ir_hash = "other"
    assert art.extra_value("note") == 1 and art.extra_value("missing", 0) == 0


def test_host_source_and_format_go_together(func):
    with pytest.raises(ArtifactError, match="give host_source and host_format together"):
        CompiledArtifact("f", Target("toyk"), (), (), (), host_source="x")


def test_artifact_pickles(func):
    params = tuple(ParamInfo.from_param(p) for p in func.params)
    device = DeviceCode({"toy-source": "src"}, kernels=(kernel(params),))
    art = CompiledArtifact.assemble(func, Target("toyk", {"arch": "x"}), device, None, "h")
    again = pickle.loads(pickle.dumps(art))
    assert again.target == art.target
    assert again.source("toy-source") == "src"
    assert again.kernels[0].params[0].name == "A"
    assert again.symbolic_dims[0] is again.params[0].shape[0]  # shared Vars stay shared


def test_device_code_checks_value_types():
    with pytest.raises(ArtifactError, match=r"binaries\['toy-binary'\] is str; expected bytes"):
        DeviceCode(binaries={"toy-binary": "not bytes"})
