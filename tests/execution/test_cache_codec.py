"""The on-disk form of a CompiledArtifact: JSON plus code files, read back into an equivalent artifact,
with anything that is not a valid artifact refused (ArtifactDecodeError), never half-decoded."""

import json

import pytest

import tilecraft
from tilecraft.backend import DeviceCode, HostCode, Target
from tilecraft.execution.base import artifact_content_hash
from tilecraft.ir import Buffer, PrimFunc, Var
from tilecraft.ir import dtype as dt
from tilecraft.ir.expr import BufferLoad, FloorDiv, const, select
from tilecraft.ir.stmt import Evaluate
from tilecraft.runtime import CompiledArtifact, KernelInfo, ParamInfo
from tilecraft.runtime.artifact import ArtifactDecodeError, ArtifactError, artifact_files, artifact_from_files
from tilecraft.testing.conformance import cases as C


def toy_artifact(extra=(("compile_flags", ("-O2", "-DX=1")),), grid=None):
    n = Var(dt.int32, "n")
    a = Buffer("A", (n, const(4, dt.int32)), dt.float16)
    scale = Var(dt.float32, "scale")
    func = PrimFunc("scale_rows", (a, scale), Evaluate(const(0, dt.int32)))
    params = tuple(ParamInfo.from_param(p) for p in func.params)
    grid = grid or (FloorDiv(dt.int32, n + 127, const(128, dt.int32)), select(n > 4, n, const(1, dt.int32)))
    kernel = KernelInfo("scale_rows_kernel", params, grid, (128, 2), dynamic_smem=512)
    device = DeviceCode({"toy-source": "int main() { return 0; }\n"}, {"toy-binary": b"\x00\xffbin"},
                        ("scale_rows_kernel",), (kernel,), buffer_alignment=16)  # fmt: skip
    target = Target("toyk", {"arch": "x1", "count": 132, "fast": True})
    return CompiledArtifact.assemble(func, target, device, HostCode("host ü", "toy-host"), "hash", extra)


def roundtrip(art):
    files = artifact_files(art)
    return artifact_from_files(files.__getitem__), files


def test_every_field_survives_and_vars_stay_shared():
    art = toy_artifact()
    back, files = roundtrip(art)
    assert artifact_files(back) == files
    assert (back.function_name, back.target, back.ir_hash, back.extra, back.buffer_alignment) == (
        art.function_name, art.target, art.ir_hash, art.extra, 16)  # fmt: skip
    assert back.source("toy-source") == art.source("toy-source") and back.source("toy-host") == "host ü"
    assert back.binary("toy-binary") == b"\x00\xffbin"
    kernel = back.kernels[0]
    assert (kernel.block, kernel.dynamic_smem) == ((128, 2), 512)
    assert [str(g) for g in kernel.grid] == [str(g) for g in art.kernels[0].grid]
    n = back.symbolic_dims[0]
    assert back.params[0].shape[0] is n and kernel.params[0].shape[0] is n
    assert artifact_content_hash(back) == artifact_content_hash(art)  # same build key after a cache hit


def test_extra_keeps_tuples_and_lists_apart():
    """The build key hashes repr(extra), so a list must not come back as a tuple."""
    art = toy_artifact(extra=(("flags", ["-a", "-b"]), ("nested", (1, 2.5, None, True, ("x",)))))
    back, _ = roundtrip(art)
    assert repr(back.extra) == repr(art.extra)


def test_values_without_a_json_form_are_refused_when_storing():
    with pytest.raises(ArtifactError, match=r"extra\[0\]\[1\] holds a dict.*tuples and lists"):
        artifact_files(toy_artifact(extra=(("opts", {"a": 1}),)))
    buf = Buffer("B", (const(4, dt.int32),), dt.int32)
    with pytest.raises(ArtifactError, match="BufferLoad has no JSON form"):
        artifact_files(toy_artifact(grid=(BufferLoad(dt.int32, buf, (const(0, dt.int32),)),)))


@pytest.mark.parametrize("target", ["c", "cuda -arch=sm_90a", "opencl"])
def test_lowered_conformance_kernels_roundtrip(target):
    """Every kind of launch metadata the backends produce (dynamic dims, several kernels, gemm, flash)."""
    for case in C.CASES[::5] + [C.Case("dynamic", C.dynamic_scale, None, None)]:
        art = tilecraft.lower(case.build(), target=target, compile_flags=["-DX"])
        back, files = roundtrip(art)
        assert artifact_files(back) == files, case.name
        assert {id(v) for v in back.symbolic_dims} >= {
            id(e) for p in back.params for e in p.shape if isinstance(e, Var)
        }, case.name


def tamper(files, edit):
    doc = json.loads(files["artifact.json"])
    edit(doc)
    return {**files, "artifact.json": json.dumps(doc).encode()}


def _set(path, value):
    def edit(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return edit


BAD_DOCUMENTS = {
    "not an object": lambda d: d.clear() or d.update({"x": 1}),
    "future version": _set(["version"], 99),
    "extra top-level key": _set(["pickle"], "x"),
    "param dtype is a number": _set(["fields", "params", 0, "dtype"], 5),
    "unknown dtype": _set(["fields", "params", 0, "dtype"], "float128"),
    "param kind invalid": _set(["fields", "params", 0, "kind"], "tensor"),
    "param field missing": lambda d: d["fields"]["params"][0].pop("scope"),
    "param field unknown": _set(["fields", "params", 0, "evil"], True),
    "block holds a string": _set(["fields", "kernels", 0, "block"], ["128"]),
    "block holds a bool": _set(["fields", "kernels", 0, "block"], [True]),
    "smem negative": _set(["fields", "kernels", 0, "dynamic_smem"], -1),
    "grid node unknown": _set(["fields", "kernels", 0, "grid", 0], {"node": "BufferLoad", "dtype": "int32"}),
    "grid node is a list": _set(["fields", "kernels", 0, "grid", 0], [1, 2]),
    "var reference dangles": _set(["fields", "symbolic_dims", 0], {"var": 7}),
    "var reference negative": _set(["fields", "symbolic_dims", 0], {"var": -1}),
    "symbolic dim is not a var": _set(
        ["fields", "symbolic_dims", 0], {"node": "IntImm", "dtype": "int32", "value": 1}
    ),  # fmt: skip
    "IntImm holds a float": _set(
        ["fields", "kernels", 0, "grid", 0, "b"], {"node": "IntImm", "dtype": "int32", "value": 1.5}
    ),  # fmt: skip
    "target attrs malformed": _set(["fields", "target", "attrs"], [["arch"]]),
    "target attr value invalid": _set(["fields", "target", "attrs"], [["arch", [1]]]),
    "extra is an object": _set(["fields", "extra"], {"a": 1}),
    "format name bad": _set(["device_sources"], ["../etc/passwd"]),
    "host flag not bool": _set(["host_source"], "yes"),
    "buffer alignment not a power of two": _set(["fields", "buffer_alignment"], 24),
    "vars not a list": _set(["vars"], {}),
}


@pytest.mark.parametrize("edit", BAD_DOCUMENTS.values(), ids=BAD_DOCUMENTS.keys())
def test_documents_of_the_wrong_shape_are_refused(edit):
    files = tamper(artifact_files(toy_artifact()), edit)
    with pytest.raises(ArtifactDecodeError, match="artifact"):
        artifact_from_files(files.__getitem__)


def _format_1(doc):
    """An entry as the first format stored it: kernels with a `cluster`, no `buffer_alignment`."""
    doc["version"] = 1
    del doc["fields"]["buffer_alignment"]
    for kernel in doc["fields"]["kernels"]:
        kernel["cluster"] = [1, 1, 1]


def test_an_entry_of_the_first_format_is_a_clean_miss():
    """A cache entry written before `buffer_alignment` existed is refused whole (the cache rebuilds it), by
    its version and by its keys alike, rather than read with the alignment it never recorded (version 2
    entries, before KernelInfo.cluster, are refused by their version)."""
    for edit in (_format_1, lambda doc: _format_1(doc) or doc.update(version=2)):
        files = tamper(artifact_files(toy_artifact()), edit)
        with pytest.raises(ArtifactDecodeError, match="version [12]|exactly the keys"):
            artifact_from_files(files.__getitem__)


@pytest.mark.parametrize(
    "files_edit",
    [
        lambda f: f.update({"artifact.json": f["artifact.json"][:40]}),  # truncated
        lambda f: f.update({"artifact.json": b"\x80\x81 garbage"}),
        lambda f: f.update({"artifact.json": b"[" * 100000 + b"]" * 100000}),  # absurd nesting
        lambda f: f.pop("artifact.source.toy-source"),
        lambda f: f.update({"artifact.host-source": b"\xff\xfe not utf-8"}),
        lambda f: f.pop("artifact.json"),
    ],
    ids=["truncated", "garbage", "deep-nesting", "missing-source", "bad-utf8", "no-json"],
)
def test_damaged_files_are_refused(files_edit):
    files = artifact_files(toy_artifact())
    files_edit(files)

    def read(name):
        if name not in files:
            raise OSError(f"no file {name}")
        return files[name]

    with pytest.raises(ArtifactDecodeError):
        artifact_from_files(read)
