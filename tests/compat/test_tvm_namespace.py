"""tilecraft's `tvm` namespace (tilecraft.compat.tvm): every mapped name builds tilecraft IR with TVM's
calling convention, TileLang's dequantization helpers written with it compute the right values in a
kernel, and every unmapped name fails with one line naming it and pointing at docs/compat.md."""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.compat.tvm as tvm
import tilecraft.language as T
from tilecraft.backend.errors import TargetError
from tilecraft.compat import hook
from tilecraft.compat.hook import UnmappedTvmError
from tilecraft.compat.tvm import tirx
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.buffer import Buffer, BufferRegion, Range


@pytest.fixture
def hooked():
    assert not hook.installed()
    hook.install()
    try:
        yield
    finally:
        hook.uninstall()


def test_datatype_is_tilecraft_datatype():
    assert tvm.DataType is tvm.runtime.DataType is dt.DataType
    assert tvm.DataType("float16").bits == 16 and tvm.DataType(T.int8).bits == 8
    assert tvm.DataType("bfloat16") == "bfloat16"


X = E.Var(dt.int32, "x")
Y = E.Var(dt.int32, "y")
F = E.Var(dt.float32, "f")

BUILDERS = [
    ("const int", lambda: tirx.const(3, "uint16"), E.IntImm, "uint16", "T.uint16(3)"),
    ("const default int", lambda: tirx.const(3), E.IntImm, "int32", "3"),
    ("const default float", lambda: tirx.const(1.5), E.FloatImm, "float32", "1.5"),
    ("op.const", lambda: tirx.op.const(2, T.int8), E.IntImm, "int8", "T.int8(2)"),
    ("IntImm", lambda: tirx.IntImm("int64", 7), E.IntImm, "int64", "T.int64(7)"),
    ("FloatImm", lambda: tirx.FloatImm("float16", 0.5), E.FloatImm, "float16", "T.float16(0.5)"),
    ("StringImm", lambda: tirx.StringImm("abc"), E.StringImm, "int8", None),
    ("Var", lambda: tirx.Var("n", "int64"), E.Var, "int64", "n"),
    ("SizeVar", lambda: tirx.SizeVar("m", "int32"), E.Var, "int32", "m"),
    ("Cast", lambda: tirx.Cast("float32", X), E.Cast, "float32", 'T.cast(x, "float32")'),
    ("Select", lambda: tirx.Select(X > 1, X, Y), E.Select, "int32", "T.if_then_else(x > 1, x, y)"),
    (
        "if_then_else",
        lambda: tirx.if_then_else(X > 1, X, Y),
        E.Select,
        "int32",
        "T.if_then_else(x > 1, x, y)",
    ),
    ("Min", lambda: tirx.Min(X, Y), E.Min, "int32", "T.min(x, y)"),
    ("Max", lambda: tirx.Max(X, 4), E.Max, "int32", "T.max(x, 4)"),
    ("op.min", lambda: tirx.min(X, Y), E.Min, "int32", "T.min(x, y)"),
    ("Add", lambda: tirx.Add(X, Y), E.Add, "int32", "x + y"),
    ("Sub", lambda: tirx.Sub(X, Y), E.Sub, "int32", "x - y"),
    ("Mul", lambda: tirx.Mul(X, Y), E.Mul, "int32", "x * y"),
    ("FloorDiv", lambda: tirx.FloorDiv(X, Y), E.FloorDiv, "int32", "x // y"),
    ("FloorMod", lambda: tirx.FloorMod(X, Y), E.FloorMod, "int32", "x % y"),
    ("floordiv", lambda: tirx.floordiv(X, 4), E.FloorDiv, "int32", "x // 4"),
    ("floormod", lambda: tirx.floormod(X, 4), E.FloorMod, "int32", "x % 4"),
    ("truncdiv", lambda: tirx.truncdiv(X, 4), None, "int32", None),
    ("EQ", lambda: tirx.EQ(X, Y), E.EQ, "bool", "x == y"),
    ("LT", lambda: tirx.LT(X, Y), E.LT, "bool", "x < y"),
    ("And", lambda: tirx.And(X > 0, Y > 0), E.And, "bool", None),
    ("Not", lambda: tirx.Not(X > 0), E.Not, "bool", None),
    ("all", lambda: tirx.all(X > 0, Y > 0, X < Y), E.And, "bool", None),
    ("any", lambda: tirx.any(X > 0, Y > 0), E.Or, "bool", None),
    (
        "reinterpret",
        lambda: tirx.reinterpret("float16", tirx.const(0x3C00, "uint16")),
        E.FloatImm,
        "float16",
        "T.float16(1.0)",
    ),
    ("reinterpret expr", lambda: tirx.reinterpret(T.uint32, F), E.Call, "uint32", None),
    ("exp of a number", lambda: tirx.exp(1.0), E.Call, "float32", None),
    ("exp", lambda: tirx.exp(F), E.Call, "float32", None),
    ("shift_left", lambda: tirx.shift_left(X, 2), E.Call, "int32", "x << 2"),
    ("bitwise_and", lambda: tirx.bitwise_and(X, 3), E.Call, "int32", "x & 3"),
    ("max_value", lambda: tirx.max_value("int8"), E.IntImm, "int8", "T.int8(127)"),
    ("call_intrin", lambda: tirx.call_intrin("float32", "tirx.exp", F), E.Call, "float32", None),
    ("Call", lambda: tirx.Call("float32", "exp", [F]), E.Call, "float32", None),
    ("Ramp", lambda: tirx.Ramp(X, 1, 4), E.Ramp, "int32x4", None),
    ("Broadcast", lambda: tirx.Broadcast(F, 4), E.Broadcast, "float32x4", None),
    ("runtime.convert", lambda: tvm.runtime.convert(8) // 2, E.IntImm, "int32", "4"),
]


@pytest.mark.parametrize(
    ("builder", "ir_class", "dtype", "text"), [b[1:] for b in BUILDERS], ids=[b[0] for b in BUILDERS]
)
def test_a_tirx_builder_makes_the_tilecraft_expression(builder, ir_class, dtype, text):
    value = builder()
    if ir_class is not None:
        assert isinstance(value, ir_class)
    assert value.dtype == dtype
    if text is not None:
        assert str(value) == text


# Every name of tvm.tirx (its `op` builders and `expr` classes): a call with TVM's arguments, the tilecraft
# class of the result and its dtype.
EVERY_TIRX_NAME = {
    "abs": (lambda: tirx.abs(F), E.Call, "float32"),
    "fabs": (lambda: tirx.fabs(F), E.Call, "float32"),
    "all": (lambda: tirx.all(X > 0), E.GT, "bool"),
    "any": (lambda: tirx.any(X > 0, Y > 0), E.Or, "bool"),
    "bitwise_and": (lambda: tirx.bitwise_and(X, Y), E.Call, "int32"),
    "bitwise_or": (lambda: tirx.bitwise_or(X, Y), E.Call, "int32"),
    "bitwise_xor": (lambda: tirx.bitwise_xor(X, Y), E.Call, "int32"),
    "bitwise_not": (lambda: tirx.bitwise_not(X), E.Call, "int32"),
    "shift_left": (lambda: tirx.shift_left(X, 1), E.Call, "int32"),
    "shift_right": (lambda: tirx.shift_right(X, 1), E.Call, "int32"),
    "call_intrin": (lambda: tirx.call_intrin("float32", "exp", F), E.Call, "float32"),
    "call_extern": (lambda: tirx.call_extern("float32", "my_fn", F), E.Call, "float32"),
    "call_pure_extern": (lambda: tirx.call_pure_extern("int32", "my_fn", X), E.Call, "int32"),
    "const": (lambda: tirx.const(2, "int16"), E.IntImm, "int16"),
    "reinterpret": (lambda: tirx.reinterpret("int32", F), E.Call, "int32"),
    "if_then_else": (lambda: tirx.if_then_else(X > 0, F, 1.0), E.Select, "float32"),
    "div": (lambda: tirx.div(F, 2.0), E.Div, "float32"),
    "floordiv": (lambda: tirx.floordiv(X, Y), E.FloorDiv, "int32"),
    "floormod": (lambda: tirx.floormod(X, Y), E.FloorMod, "int32"),
    "indexdiv": (lambda: tirx.indexdiv(X, Y), E.FloorDiv, "int32"),
    "indexmod": (lambda: tirx.indexmod(X, Y), E.FloorMod, "int32"),
    "truncdiv": (lambda: tirx.truncdiv(X, Y), E.Expr, "int32"),
    "truncmod": (lambda: tirx.truncmod(X, Y), E.TruncMod, "int32"),
    "max": (lambda: tirx.max(X, Y), E.Max, "int32"),
    "min": (lambda: tirx.min(X, Y), E.Min, "int32"),
    "max_value": (lambda: tirx.max_value("float16"), E.FloatImm, "float16"),
    "min_value": (lambda: tirx.min_value("int16"), E.IntImm, "int16"),
    "infinity": (lambda: tirx.infinity("float32"), E.FloatImm, "float32"),
    "pow": (lambda: tirx.pow(F, 2.0), E.Call, "float32"),
    "power": (lambda: tirx.power(F, 2.0), E.Call, "float32"),
    **{
        name: ((lambda name=name: getattr(tirx, name)(F)), E.Call, "float32")
        for name in (
            "ceil",
            "cos",
            "erf",
            "exp",
            "exp2",
            "floor",
            "log",
            "log2",
            "round",
            "rsqrt",
            "sigmoid",
            "sin",
            "sqrt",
            "tanh",
        )
    },  # fmt: skip
    "Add": (lambda: tirx.Add(X, 1), E.Add, "int32"),
    "Sub": (lambda: tirx.Sub(X, 1), E.Sub, "int32"),
    "Mul": (lambda: tirx.Mul(X, Y), E.Mul, "int32"),
    "Div": (lambda: tirx.Div(F, 3.0), E.Div, "float32"),
    "FloorDiv": (lambda: tirx.FloorDiv(X, Y), E.FloorDiv, "int32"),
    "FloorMod": (lambda: tirx.FloorMod(X, Y), E.FloorMod, "int32"),
    "Mod": (lambda: tirx.Mod(X, Y), E.TruncMod, "int32"),
    "Min": (lambda: tirx.Min(X, Y), E.Min, "int32"),
    "Max": (lambda: tirx.Max(X, Y), E.Max, "int32"),
    "EQ": (lambda: tirx.EQ(X, Y), E.EQ, "bool"),
    "NE": (lambda: tirx.NE(X, Y), E.NE, "bool"),
    "LT": (lambda: tirx.LT(X, Y), E.LT, "bool"),
    "LE": (lambda: tirx.LE(X, Y), E.LE, "bool"),
    "GT": (lambda: tirx.GT(X, Y), E.GT, "bool"),
    "GE": (lambda: tirx.GE(X, Y), E.GE, "bool"),
    "And": (lambda: tirx.And(X > 0, Y > 0), E.And, "bool"),
    "Or": (lambda: tirx.Or(X > 0, Y > 0), E.Or, "bool"),
    "Not": (lambda: tirx.Not(X > 0), E.Not, "bool"),
    "Select": (lambda: tirx.Select(X > 0, F, F), E.Select, "float32"),
    "Cast": (lambda: tirx.Cast("float16", F), E.Cast, "float16"),
    "IntImm": (lambda: tirx.IntImm("uint8", 255), E.IntImm, "uint8"),
    "FloatImm": (lambda: tirx.FloatImm("bfloat16", 2.0), E.FloatImm, "bfloat16"),
    "StringImm": (lambda: tirx.StringImm("s"), E.StringImm, "int8"),
    "Var": (lambda: tirx.Var("v", "float32"), E.Var, "float32"),
    "SizeVar": (lambda: tirx.SizeVar("n", "int64"), E.Var, "int64"),
    "Call": (lambda: tirx.Call("float32", "exp", [F]), E.Call, "float32"),
    "Ramp": (lambda: tirx.Ramp(X, 2, 8), E.Ramp, "int32x8"),
    "Broadcast": (lambda: tirx.Broadcast(X, 2), E.Broadcast, "int32x2"),
    "BufferLoad": (
        lambda: tirx.BufferLoad(Buffer("S", (E.const(4),), dt.float16, "shared"), [X]),
        E.BufferLoad,
        "float16",
    ),
    "PrimExpr": (lambda: tirx.PrimExpr, None, None),  # isinstance only (test below)
    "Buffer": (lambda: tirx.Buffer, None, None),  # isinstance only (test below)
    "BufferRegion": (
        lambda: tirx.BufferRegion(Buffer("S", (E.const(4),), dt.float16, "shared"), [tvm.ir.Range(2)]),
        BufferRegion,
        "float16",
    ),
}


def test_every_tirx_name_has_a_case():
    assert sorted(EVERY_TIRX_NAME) == sorted(set(tirx.__all__) - {"expr", "op"})


@pytest.mark.parametrize("name", sorted(EVERY_TIRX_NAME))
def test_every_tirx_name_builds_tilecraft_ir(name):
    build, ir_class, dtype = EVERY_TIRX_NAME[name]
    value = build()
    if ir_class is None:
        return
    assert isinstance(value, ir_class) and value.dtype == dtype
    tvm_class = getattr(tirx, name)
    if isinstance(tvm_class, type):  # a TVM class answers isinstance for what it builds
        assert isinstance(value, tvm_class)


def test_tvm_classes_are_tilecraft_classes_for_isinstance():
    assert isinstance(tirx.const(1), tirx.IntImm) and isinstance(tirx.const(1), tirx.PrimExpr)
    assert isinstance(X, tirx.Var) and not isinstance(X, tirx.IntImm)
    assert isinstance(tirx.const(1.0), tirx.expr.FloatImm) and issubclass(E.Var, tirx.PrimExpr)
    buf = Buffer("A", (E.const(4), E.const(8)), dt.float16, "shared")
    assert isinstance(buf, tirx.Buffer)
    load = tirx.BufferLoad(buf, [X, Y])
    assert isinstance(load, E.BufferLoad) and isinstance(load, tirx.BufferLoad) and load.buffer is buf
    region = tirx.BufferRegion(buf, [tvm.ir.Range(0, 4), tvm.ir.Range.from_min_extent(2, 4)])
    assert isinstance(region, BufferRegion) and isinstance(region, tirx.BufferRegion)
    assert [(E.const_value(r.min), E.const_value(r.extent)) for r in region.ranges] == [(0, 4), (2, 4)]


def test_the_tir_spelling_and_the_op_and_expr_modules_are_the_same_names():
    assert tvm.tir is tirx
    assert tirx.const is tirx.op.const and tirx.reinterpret is tirx.op.reinterpret
    assert tirx.IntImm is tirx.expr.IntImm and tirx.Select is tirx.expr.Select


def test_tvm_checks_that_tilecraft_keeps():
    with pytest.raises(E.IRError, match="does not fit int8"):
        tirx.IntImm("int8", 300)
    with pytest.raises(E.IRError, match="floating-point dtype"):
        tirx.FloatImm("int32", 1.0)
    with pytest.raises(E.IRError, match="same width"):
        tirx.reinterpret("float32", tirx.const(1, "uint16"))


def test_ir_range_takes_tvms_begin_end():
    assert (E.const_value(tvm.ir.Range(3).min), E.const_value(tvm.ir.Range(3).extent)) == (0, 3)
    r = tvm.ir.Range(2, 10)
    assert (E.const_value(r.min), E.const_value(r.extent)) == (2, 8)
    assert isinstance(r, Range) and isinstance(r, tvm.ir.Range)


@pytest.mark.parametrize(
    ("spec", "kind", "attrs"),
    [
        ("llvm", "c", {}),
        ("llvm -mtriple=x86_64-linux-gnu -mcpu=skylake", "c", {}),
        ("c", "c", {}),
        ("cuda -arch=sm_80", "cuda", {"arch": "sm_80"}),
        ("hip -mcpu=gfx942", "hip", {"arch": "gfx942"}),
        ("rocm -mcpu=gfx950", "hip", {"arch": "gfx950"}),
    ],
)
def test_target_is_a_tilecraft_target_parsed_from_tvms_spelling(spec, kind, attrs):
    target = tvm.target.Target(spec)
    assert isinstance(target, tilecraft.Target) and isinstance(target, tvm.target.Target)
    assert target.kind == kind
    assert all(target.attr(k) == v for k, v in attrs.items())


def test_target_host_and_current():
    assert tvm.target.Target("cuda -arch=sm_90a", host="llvm").kind == "cuda"
    with pytest.raises(TargetError, match="host code runs on the host CPU"):
        tvm.target.Target("c", host="cuda")
    assert tvm.target.Target.current() is None
    with pytest.raises(TargetError, match="no `with target:` scopes"):
        tvm.target.Target.current(allow_none=False)


def test_testing_requires_package_is_a_skip_marker():
    present, absent = tvm.testing.requires_package("numpy"), tvm.testing.requires_package("no_such_package_x")
    assert present.mark.args == (False,) and absent.mark.args == (True,)
    assert "no_such_package_x" in absent.mark.kwargs["reason"]


UNMAPPED = [
    (lambda: tvm.IRModule, "tvm.IRModule", "a tilecraft kernel is a tilecraft.ir PrimFunc"),
    (lambda: tvm.foo_bar, "tvm.foo_bar", "tilecraft maps only the names TileLang's examples use"),
    (lambda: tirx.IndexMap, "tvm.tirx.IndexMap", "T.Layout and T.Fragment are tilecraft's"),
    (lambda: tirx.decl_buffer, "tvm.tirx.decl_buffer", "T.alloc_shared"),
    (lambda: tirx.op.Op, "tvm.tirx.op.Op", "tilecraft maps only"),
    (lambda: tirx.expr.Shuffle, "tvm.tirx.expr.Shuffle", "tilecraft maps only"),
    (lambda: tvm.ir.Op, "tvm.ir.Op", "operator registry"),
    (lambda: tvm.runtime.tensor, "tvm.runtime.tensor", "torch tensors and NumPy arrays"),
    (lambda: tvm.target.cuda, "tvm.target.cuda", "tilecraft maps only"),
    (lambda: tirx.Buffer((4,), "float16"), "tvm.tirx.Buffer(...)", "isinstance checks"),
]


@pytest.mark.parametrize(("access", "name", "reason"), UNMAPPED, ids=[u[1] for u in UNMAPPED])
def test_an_unmapped_name_fails_in_one_line_naming_it(access, name, reason):
    with pytest.raises(UnmappedTvmError) as info:
        access()
    message = str(info.value)
    assert message.startswith(f"`{name}` is not provided: tilecraft has no TVM")
    assert reason in message and 'docs/compat.md, section "TVM"' in message and "\n" not in message
    assert isinstance(info.value, ImportError) and isinstance(info.value, ModuleNotFoundError)


def test_from_import_of_an_unmapped_name_keeps_the_message(hooked):
    with pytest.raises(ImportError, match=r"^`tvm.tirx.IndexMap` is not provided"):
        exec("from tvm.tirx import IndexMap", {})
    with pytest.raises(ImportError, match=r"^`tvm.arith` is not provided: .*TVM's integer analysis"):
        exec("from tvm import arith", {})
    with pytest.raises(ImportError, match=r"^`tvm.script.tirx` is not provided: .*TVMScript is not parsed"):
        exec("from tvm.script import tirx as T", {})
    with pytest.raises(ImportError, match=r"^`tvm.script.parser` is not provided: .*TVMScript is not parsed"):
        exec("import tvm.script.parser", {})


def test_ir_builder_frame_is_what_kernels_loops_and_persistent_specs_are(hooked):
    import tilecraft.language as T

    namespace: dict = {}
    exec("from tvm.script.ir_builder.base import IRBuilderFrame", namespace)
    frame = namespace["IRBuilderFrame"]
    assert isinstance(T.serial(1, 10, 1), frame) and isinstance(T.Parallel(4, 8), frame)
    assert isinstance(T.Kernel(4, threads=128), frame)
    assert not isinstance(T.int32, frame) and not isinstance(3, frame)


def test_private_names_stay_attribute_errors_for_the_tools_that_probe_them():
    assert not hasattr(tvm, "__wrapped__") and not hasattr(tirx, "_private")
    assert not hasattr(tvm.target.Target, "__wrapped__")


def test_tilelang_cuda_intrinsics_is_the_emitters_and_tilecrafts_own_module_stays_reachable(hooked):
    import tilecraft.cuda.intrinsics.mma_layouts as own_layouts

    scope: dict = {}
    exec(
        "import tilelang.cuda.intrinsics as emitters\nimport tilecraft.cuda.intrinsics.mma_layouts as own",
        scope,
    )
    import tilecraft.compat.intrinsics

    assert scope["emitters"] is tilecraft.compat.intrinsics
    assert scope["own"] is own_layouts and tilecraft.cuda.intrinsics.mma_layouts is own_layouts


def test_uninstalling_the_hook_gives_tilecraft_cuda_its_intrinsics_back():
    import tilecraft.cuda.intrinsics as own

    hook.install()
    try:
        exec("import tilelang.cuda.intrinsics", {})
    finally:
        hook.uninstall()
    assert tilecraft.cuda.intrinsics is own


# TileLang's dequantization helpers, as its examples write them (dequantize_gemm/example_dequant_gemm_
# fp4_hopper.py, example_dequant_gemm_w4a8.py and quantize/quantization.py), with this namespace's tirx.


def _u8_to_f4_to_f16(nbit, val: tirx.PrimExpr, pos: tirx.PrimExpr, dtype: str):
    mask = tirx.const((1 << nbit) - 1, T.uint16)
    f4 = (val >> (pos.astype(T.uint16) * tirx.const(nbit, T.uint16))) & mask
    s = f4 >> tirx.const(3, T.uint16)
    e_f4 = (f4 & tirx.const(6, T.uint16)) >> tirx.const(1, T.uint16)
    e_f16 = e_f4 + tirx.const(14, T.uint16)
    m_f16 = f4 & tirx.const(1, T.uint16)
    bits = (e_f16 | (s << tirx.const(5, T.uint16))) << tirx.const(10, T.uint16) | m_f16 << tirx.const(
        9, T.uint16
    )
    return tirx.reinterpret(T.float16, bits.astype(T.uint16))


def _u8_to_i4_to_i8(nbit, val: tirx.PrimExpr, pos: tirx.PrimExpr, dtype: str):
    mask = tirx.const((1 << nbit) - 1, T.uint8)
    i4 = (val >> (pos.astype(T.uint8) * tirx.const(nbit, T.uint8))) & mask
    return tirx.reinterpret(T.int8, i4 << tirx.const(4, T.uint8)) >> tirx.const(4, T.int8)


def _u32_to_f4_to_f32(nbit, val: tirx.PrimExpr, pos: tirx.PrimExpr, dtype: str):
    mask = tvm.tirx.const((1 << nbit) - 1, T.uint32)
    f4 = (val >> (pos.astype(T.uint32) * tirx.const(nbit, T.uint32))) & mask
    s = f4 >> tirx.const(3, T.uint32)
    e_f4 = f4 & tirx.const(7, T.uint32)
    e_f32 = e_f4 | tirx.const(120, T.uint32)
    val_f32 = tirx.reinterpret(
        T.float32, (e_f32 | (s << tirx.const(8, T.uint32))) << tirx.const(23, T.uint32)
    )
    return tirx.Select(e_f4 == tirx.const(0, T.uint32), tirx.const(0, T.float32), val_f32)


def _f32_to_f4(val: tirx.PrimExpr):
    bits = tirx.reinterpret(T.uint32, val)
    m_h = (bits >> tirx.const(22, T.uint32)) & tirx.const(1, T.uint32)
    e_f32 = (bits >> tirx.const(23, T.uint32)) & tirx.const(255, T.uint32)
    s = bits >> tirx.const(31, T.uint32)
    e_f4 = tirx.Select(
        e_f32 > tirx.const(120, T.uint32),
        tirx.Min(e_f32 - tirx.const(120, T.uint32) + m_h, tirx.const(7, T.uint32)),
        tirx.Select(e_f32 == tirx.const(120, T.uint32), tirx.const(1, T.uint32), tirx.const(0, T.uint32)),
    )
    return (s << tirx.const(3, T.uint32)) | e_f4


def _decode(helper, storage, out, per_word, words):
    """A kernel decoding `words` packed values of `storage`, `per_word` 4-bit codes each, with `helper`."""

    @tilecraft.jit
    def decode(Q, helper=helper, storage=storage, out=out, per_word=per_word, n=words * per_word):
        Q: T.Tensor((n // per_word,), storage)
        R = T.empty((n,), out)
        with T.Kernel(1, threads=128):
            for j in T.Parallel(n):
                R[j] = helper(4, Q[j // per_word], j % per_word, out)
        return R

    return decode


def test_tileLangs_fp4_to_f16_helper_decodes_every_code():
    codes = np.arange(256, dtype=np.uint8)
    got = _decode(_u8_to_f4_to_f16, T.uint8, T.float16, 2, 256)(codes)
    nibbles = np.stack((codes & 15, codes >> 4), -1).reshape(-1).astype(np.int32)
    bits = ((nibbles >> 3) << 15) | ((((nibbles & 6) >> 1) + 14) << 10) | ((nibbles & 1) << 9)
    np.testing.assert_array_equal(got.view(np.uint16), bits.astype(np.uint16))


def test_tileLangs_int4_to_int8_helper_sign_extends_every_code():
    codes = np.arange(256, dtype=np.uint8)
    got = _decode(_u8_to_i4_to_i8, T.uint8, T.int8, 2, 256)(codes)
    nibbles = np.stack((codes & 15, codes >> 4), -1).reshape(-1).astype(np.int32)
    np.testing.assert_array_equal(got, np.where(nibbles >= 8, nibbles - 16, nibbles).astype(np.int8))


def test_tileLangs_fp4_helpers_with_select_and_min_round_trip():
    rng = np.random.default_rng(3)
    words = rng.integers(0, 2**32, 32, dtype=np.uint64).astype(np.uint32)
    decoded = _decode(_u32_to_f4_to_f32, T.uint32, T.float32, 8, 32)(words)
    nibbles = ((words[:, None] >> (4 * np.arange(8, dtype=np.uint32))) & 15).reshape(-1)
    e, s = nibbles & 7, nibbles >> 3
    expected = np.where(e == 0, 0.0, ((e | 120 | (s << 8)) << 23).astype(np.uint32).view(np.float32))
    np.testing.assert_array_equal(decoded, expected.astype(np.float32))

    @tilecraft.jit
    def encode(V):
        V: T.Tensor((64,), T.float32)
        R = T.empty((64,), T.uint32)
        with T.Kernel(1, threads=64):
            for j in T.Parallel(64):
                R[j] = _f32_to_f4(V[j])
        return R

    values = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, -4.0, -6.0] * 8, dtype=np.float32)
    bits = values.view(np.uint32)
    e32, m_h = (bits >> 23) & 255, (bits >> 22) & 1
    e4 = np.where(e32 > 120, np.minimum(e32 - 120 + m_h, 7), np.where(e32 == 120, 1, 0))
    np.testing.assert_array_equal(encode(values), ((bits >> 31) << 3) | e4)


@T.macro
def _decode_nibble(Q, j):
    # a macro that builds IR through the namespace, as TileLang's dequantization macros do
    return tirx.Cast(
        T.float32, (Q[j // 2] >> tirx.const(4, T.uint8) * (j % 2).astype(T.uint8)) & tirx.const(15, T.uint8)
    )


@T.prim_func
def _nibbles(Q: T.Tensor((32,), T.uint8), R: T.Tensor((64,), T.float32)):
    with T.Kernel(1, threads=64):
        for j in T.Parallel(64):
            R[j] = tirx.Select(j < 64, _decode_nibble(Q, j), tirx.const(-1.0, T.float32))


def test_prim_func_and_macro_bodies_build_ir_through_the_namespace():
    kernel = tilecraft.compile(_nibbles)
    codes = np.arange(32, dtype=np.uint8) * 7
    out = np.full(64, np.nan, dtype=np.float32)
    kernel(codes, out)
    np.testing.assert_array_equal(out, np.stack((codes & 15, codes >> 4), -1).reshape(-1).astype(np.float32))
