"""Scalar data types of the tile IR, with the spellings TileLang accepts."""

from __future__ import annotations

from functools import cache

# "microfloat": the OCP microscaling element formats (float4_e2m1fn, float6_e2m3fn, float6_e3m2fn) and
# scale format (float8_e8m0fnu): storage formats without infinities, computed in float32.
_KINDS = ("bool", "int", "uint", "float", "bfloat", "float8", "microfloat")
_NO_VALUE = object()  # `T.int32()`, called without a value


class DataType(str):
    """A scalar type, optionally a short vector (`lanes` > 1) once a backend vectorizes.

    As in TileLang, a dtype is a `str` whose value is its name (`"float16"`, `"float32x4"` for a vector):
    `T.float16 == "float16"`, `getattr(torch, T.bfloat16)`, `f"{T.int8}"`, dict keys and `"float" in dt`
    all work, and a string and the dtype it names are equal and hash alike. `DataType(x)` (TileLang's
    `T.dtype(x)`) accepts what `as_dtype` accepts: a name, a numpy or torch dtype, or a dtype.
    """

    name: str
    kind: str
    bits: int
    lanes: int

    def __new__(cls, value: object, kind: str | None = None, bits: int | None = None, lanes: int = 1):
        if kind is None or bits is None:
            return as_dtype(value)
        name = str(value)
        self = super().__new__(cls, name if lanes == 1 else f"{name}x{lanes}")
        for field, item in (("name", name), ("kind", kind), ("bits", bits), ("lanes", lanes)):
            object.__setattr__(self, field, item)
        return self

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"DataType is immutable: cannot set {name!r} on {self}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"DataType is immutable: cannot delete {name!r} from {self}")

    def __reduce__(self):
        # Unpickled and copied through the parser, so the name is the whole state.
        return (as_dtype, (str(self),))

    def __copy__(self) -> DataType:
        return self

    def __deepcopy__(self, memo: dict) -> DataType:
        return self

    def __repr__(self) -> str:
        return f"DataType({self})"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_uint(self) -> bool:
        return self.kind == "uint"

    @property
    def is_integer(self) -> bool:
        """Signed or unsigned integer (bool excluded)."""
        return self.kind in ("int", "uint")

    @property
    def is_float(self) -> bool:
        """Any floating-point type, including bfloat16, the float8 and the microscaling formats."""
        return self.kind in ("float", "bfloat", "float8", "microfloat")

    @property
    def is_packed(self) -> bool:
        """A 4-bit type (int4, uint4, float4_e2m1fn): two elements per byte in global memory, element i
        in the low (even i) or high (odd i) nibble of byte i // 2; on-chip buffers hold one per byte."""
        return self.bits == 4

    @property
    def is_storage_only(self) -> bool:
        """A type values are stored in but not computed in: arithmetic takes a cast to a wider type
        (the float8 and microscaling formats, 4-bit integers)."""
        return self.kind in ("float8", "microfloat") or self.bits < 8

    @property
    def bytes(self) -> int:
        """Bytes of one value: a 4-bit pair (`float4_e2m1fnx2`) is one byte, a lone 4-bit value takes a byte
        of its own (on-chip buffers store one per byte)."""
        if self.is_packed and self.lanes > 1:
            return (self.lanes + 1) // 2
        return max(1, self.bits // 8) * self.lanes

    def with_lanes(self, lanes: int) -> DataType:
        if lanes == 1 and self.name in _BY_NAME:
            return _BY_NAME[self.name]  # the module's own scalar object, as `T.float32` is
        return DataType(self.name, self.kind, self.bits, lanes)

    def element(self) -> DataType:
        return self.with_lanes(1)

    @property
    def torch_name(self) -> str | None:
        """The name of the torch dtype that stores this type (`as_torch`), None for a vector."""
        return _TORCH_STORAGE.get(self.name, self.name) if self.lanes == 1 or self.is_packed else None

    def as_torch(self):
        """The torch dtype that stores this type (TileLang's `dtype.as_torch()`); needs torch installed.

        Packed 4-bit data is bytes: float4_e2m1fn (and float4_e2m1fnx2) is torch.float4_e2m1fn_x2, int4
        torch.int8 and uint4 torch.uint8, each element of which holds two values (TileLang's choice); the
        float6 formats are torch.uint8, a code a byte."""
        import torch

        name = self.torch_name
        found = getattr(torch, name, None) if name is not None else None
        if not isinstance(found, torch.dtype):
            raise TypeError(f"dtype {self} has no torch equivalent" + _torch_hint(self))
        return found

    def as_numpy(self):
        """The numpy dtype that stores this type (ml_dtypes for bfloat16 and float8)."""
        return numpy_dtype(self)

    def __call__(self, value=_NO_VALUE):
        """`T.float32(x)`: a constant or a cast to this type; `T.int32()` (no value): a new variable of
        this type, for `T.let(v, value)` to bind (TVMScript's spelling)."""
        from tilecraft.ir.expr import Var, cast, const

        if value is _NO_VALUE:
            return Var(self, "v")
        if isinstance(value, (bool, int, float)):
            return const(value, self)
        return cast(value, self)


def _make(name: str, kind: str, bits: int) -> DataType:
    return DataType(name, kind, bits)


bool_ = _make("bool", "bool", 8)
int8 = _make("int8", "int", 8)
int16 = _make("int16", "int", 16)
int32 = _make("int32", "int", 32)
int64 = _make("int64", "int", 64)
uint8 = _make("uint8", "uint", 8)
uint16 = _make("uint16", "uint", 16)
uint32 = _make("uint32", "uint", 32)
uint64 = _make("uint64", "uint", 64)
float16 = _make("float16", "float", 16)
bfloat16 = _make("bfloat16", "bfloat", 16)
float32 = _make("float32", "float", 32)
float64 = _make("float64", "float", 64)
float8_e4m3fn = _make("float8_e4m3fn", "float8", 8)
float8_e5m2 = _make("float8_e5m2", "float8", 8)
# The FNUZ float8 formats (AMD's before gfx950; ml_dtypes and torch have both): exponent bias 8 / 16, no
# infinity, no negative zero, 0x80 the one NaN. Storage and conversions only: no matrix instruction reads them.
float8_e4m3fnuz = _make("float8_e4m3fnuz", "float8", 8)
float8_e5m2fnuz = _make("float8_e5m2fnuz", "float8", 8)
FNUZ_FLOAT8 = ("float8_e4m3fnuz", "float8_e5m2fnuz")
int4 = _make("int4", "int", 4)
uint4 = _make("uint4", "uint", 4)
float4_e2m1fn = _make("float4_e2m1fn", "microfloat", 4)
float6_e2m3fn = _make("float6_e2m3fn", "microfloat", 6)
float6_e3m2fn = _make("float6_e3m2fn", "microfloat", 6)
float8_e8m0fnu = _make("float8_e8m0fnu", "microfloat", 8)

ALL_DTYPES: tuple[DataType, ...] = (
    bool_, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
    float16, bfloat16, float32, float64, float8_e4m3fn, float8_e5m2, float8_e4m3fnuz, float8_e5m2fnuz,
    int4, uint4, float4_e2m1fn, float6_e2m3fn, float6_e3m2fn, float8_e8m0fnu,
)  # fmt: skip

# T.tfloat32: TF32 is float32 with a 10-bit mantissa, the input format of tensor-core gemms. It is not a
# value type: every value, expression and array of it is float32 (`as_dtype` answers float32, and
# "tfloat32" parses as float32); a buffer declared with it records the request (`Buffer.tf32`), so that a
# T.gemm reading that buffer runs on TF32 tensor cores where the target has them.
tfloat32 = DataType("tfloat32", "float", 32)


class PointerType(DataType):
    """`T.ptr`, TileLang's pointer. A parameter annotated with it is a raw address (a uint64 scalar that a
    call passes as an int or as an array, whose data address is taken), which `T.make_tensor` views as a
    tensor; as an element dtype (`T.Tensor([n], T.ptr)`, a table of addresses) it is int64."""

    def __call__(self, dtype=None, storage_scope: str = "global", *, is_size_var: bool = False) -> PointerType:
        """TileLang's `T.ptr(dtype)`: the same annotation (the dtype is the tensor's, given to make_tensor)."""
        return self


ptr = PointerType("int64", "int", 64)


def is_tfloat32(value: object) -> bool:
    """Whether a dtype as written in a kernel (a DataType, a name) is `T.tfloat32`."""
    return isinstance(value, str) and str(value) == "tfloat32"


# The torch dtype whose elements store each packed type (as_torch); torch.float4_e2m1fn_x2 needs torch 2.8.
# torch has no float6: its codes live in uint8 bytes.
_TORCH_STORAGE = {"tfloat32": "float32", "float4_e2m1fn": "float4_e2m1fn_x2", "int4": "int8", "uint4": "uint8", "float6_e2m3fn": "uint8",
                  "float6_e3m2fn": "uint8"}  # fmt: skip


def _torch_hint(dtype: DataType) -> str:
    if dtype.element().name == "float4_e2m1fn":
        return (
            " in this torch (torch.float4_e2m1fn_x2 needs torch 2.8 or newer); pass the bytes as torch.uint8"
        )
    return ""


_ALIASES = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "int": "int32",
    "uint": "uint32",
    "short": "int16",
    "long": "int64",
    "ulong": "uint64",
    "bf16": "bfloat16",
    "fp16": "float16",
    "fp32": "float32",
    "fp64": "float64",
    "e4m3_float8": "float8_e4m3fn",
    "float8_e4m3": "float8_e4m3fn",
    "e5m2_float8": "float8_e5m2",
    "boolean": "bool",
    "float4_e2m1fn_x2": "float4_e2m1fnx2",  # torch's name of a byte holding two float4_e2m1fn values
    "tfloat32": "float32",  # storage and values; a buffer declared so records it (see `tfloat32`)
}
_BY_NAME = {dt.name: dt for dt in ALL_DTYPES}


@cache
def _parse_name(text: str) -> DataType:
    name = _ALIASES.get(text, text)
    base, sep, lanes = name.rpartition("x")
    if sep and lanes.isdigit() and base in _BY_NAME:
        return _BY_NAME[base].with_lanes(int(lanes))
    if name not in _BY_NAME:
        valid = ", ".join(dt.name for dt in ALL_DTYPES)
        raise ValueError(f"unknown dtype {text!r}; valid dtypes: {valid} (aliases: {', '.join(_ALIASES)})")
    return _BY_NAME[name]


def as_dtype(value: object) -> DataType:
    """Convert a DataType, a string spelling, a numpy dtype or a torch dtype to a DataType."""
    if isinstance(value, PointerType):
        return int64  # a table of addresses
    if isinstance(value, DataType):
        return float32 if value.name == "tfloat32" else value
    if isinstance(value, str):
        return _parse_name(value)
    if value is bool:
        return bool_
    if value is int:
        return int32
    if value is float:
        return float32
    text = str(value)
    if text.startswith("torch."):
        return _parse_name(text[len("torch.") :])
    try:
        import numpy as np

        return _parse_name(np.dtype(value).name)
    except TypeError:
        pass
    raise TypeError(f"cannot interpret {value!r} as a dtype; use a name such as 'float16' or T.float16")


def numpy_dtype(dtype: DataType):
    """The numpy dtype that stores `dtype` (ml_dtypes for bfloat16, float8, the microscaling formats and
    4-bit integers, one value per byte; a packed pair such as float4_e2m1fnx2 is a uint8 byte)."""
    import numpy as np

    if dtype.is_packed and dtype.lanes == 2:
        return np.dtype(np.uint8)
    dtype = as_dtype(dtype)
    if dtype.kind in ("bfloat", "float8", "microfloat") or dtype.is_packed:
        import ml_dtypes

        return np.dtype(getattr(ml_dtypes, dtype.name))
    return np.dtype(dtype.name)


def torch_bit_view(dtype: DataType) -> str | None:
    """The NumPy integer whose bits carry `dtype` through torch.from_numpy and Tensor.numpy, which take
    only NumPy's own dtypes: int16 for bfloat16, uint8 for every one-byte ml_dtypes type (the float8
    formats with e8m0, float6, 4-bit values) and for packed float4 pairs; None for NumPy's own."""
    import numpy as np

    if dtype.is_packed and dtype.lanes == 2:
        return "uint8"
    host = np.dtype(numpy_dtype(dtype))
    if host.isbuiltin != 2:  # NumPy's own type, not one registered by ml_dtypes
        return None
    return "int16" if host.itemsize == 2 else "uint8"


def promote(a: DataType, b: DataType) -> DataType:
    """The result type of a binary arithmetic operation between two operands."""
    if a == b:
        return a
    if a.lanes != b.lanes and 1 in (a.lanes, b.lanes):  # a scalar meets a vector: it is in every lane
        return promote(a.element(), b.element()).with_lanes(max(a.lanes, b.lanes))
    if a.is_float != b.is_float:
        return a if a.is_float else b
    if a.is_float:
        return a if a.bits > b.bits or (a.bits == b.bits and a.kind == "float") else b
    if a.is_bool:
        return b
    if b.is_bool:
        return a
    return a if a.bits >= b.bits else b
