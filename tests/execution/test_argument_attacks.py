"""Attacks on argument checking: every bad call is an ArgumentError naming the parameter, on every
execution backend.

The same cases run on every (target, execution backend) pair the registry declares and can run here
(tests/conformance/targets.py skips the others with the reason): the host backends on any machine, the
GPU ones on a GPU machine. Arrays are made with the backend's `to_device`; the cases that need host
memory (huge shapes, byte-swapped dtypes) rely on shapes and dtypes being checked before the device,
which is what a call does first. Nothing here launches a kernel on bad input: a huge shape is an
untouched allocation or a view of a few bytes.

Every case runs against both launchers (TILECRAFT_LAUNCHER=python and =compiled): the compiled one
must refuse exactly what the Python path refuses, with the same message.
"""

from __future__ import annotations

import numpy as np
import pytest

import tilecraft
import tilecraft.language as T
from tests.conformance.targets import declared_cases, resolve
from tilecraft import settings
from tilecraft.errors import ArgumentError, LoweringError

CASES = declared_cases()
HUGE = 2**31 + 8  # one more than int32 can count, plus a little
INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


def int_range(name: str) -> tuple[int, int]:
    info = np.iinfo(name)
    return int(info.min), int(info.max)


@pytest.fixture(scope="module", params=["python", "compiled"], autouse=True)
def launcher(request):
    """The launcher every call of the module goes through."""
    with settings.override(TILECRAFT_LAUNCHER=request.param):
        yield request.param


@pytest.fixture(scope="module", params=CASES, ids=[c.id for c in CASES])
def ctx(request, launcher):
    return resolve(request.param)


@pytest.fixture
def backend(ctx):
    return ctx.execution_backend()


_compiled: dict = {}


def compiled(ctx, make, **options):
    """`make()` compiled for `ctx`, once per module and backend; a LoweringError is a skip reason."""
    key = (id(ctx), make.__name__, tuple(sorted(options.items())), settings.get("TILECRAFT_LAUNCHER"))
    if key not in _compiled:
        try:
            _compiled[key] = tilecraft.compile(make(), ctx=ctx, **options)
        except LoweringError as err:
            pytest.skip(f"not supported on {ctx.target}: {err.message}")
    return _compiled[key]


def on_host(backend) -> bool:
    """Whether this backend's kernels take host (numpy) arrays."""
    return isinstance(backend.to_device(np.zeros(1, np.float32)), np.ndarray)


def read_only(backend, array: np.ndarray):
    """`array` on the backend's device, marked read-only (skips where the device has no such arrays)."""
    device = backend.to_device(array.copy())
    if isinstance(device, np.ndarray):
        device.flags.writeable = False
        return device
    interface = getattr(device, "__cuda_array_interface__", None)
    if interface is None:
        pytest.skip(f"no read-only arrays of {type(device).__name__} to test with")
    return _ReadOnlyView(device, interface)


class _ReadOnlyView:
    """A device array re-exported with the read-only flag of the CUDA array interface."""

    def __init__(self, base, interface) -> None:
        self.base = base
        self.__cuda_array_interface__ = {**interface, "data": (interface["data"][0], True)}


# ---------------------------------------------------------------------------------------------- kernels

M = T.dynamic("M")


def add_one():
    """Y = X + 1 over a dynamic int32 length M."""

    @T.prim_func
    def add_one(X: T.Tensor((M,), "int8"), Y: T.Tensor((M,), "int8")):
        with T.Kernel(T.ceildiv(M, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < M:
                    Y[bx * 128 + i] = X[bx * 128 + i] + 1

    return add_one


def add_one_int64():
    """add_one with an int64 length."""
    n = T.dynamic("n", "int64")

    @T.prim_func
    def add_one_int64(X: T.Tensor((n,), "int8"), Y: T.Tensor((n,), "int8")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    Y[bx * 128 + i] = X[bx * 128 + i] + 1

    return add_one_int64


def strided_ends():
    """Y = (X[0], X[n - 1]) for X of dynamic int32 length n and dynamic int32 stride s."""
    n, s = T.dynamic("n, s")

    @T.prim_func
    def strided_ends(X: T.StridedTensor((n,), (s,), "float32"), Y: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(32):
                if i == 0:
                    Y[0] = X[0]
                    Y[1] = X[n - 1]

    return strided_ends


def accumulate():
    """Y += X in place: Y is read and written, X only read."""

    @T.prim_func
    def accumulate(X: T.Tensor((256,), "float32"), Y: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            for i in T.Parallel(128):
                Y[bx * 128 + i] = Y[bx * 128 + i] + X[bx * 128 + i]

    return accumulate


def scale():
    """Y = X * alpha on a static (4, 64) shape."""

    @T.prim_func
    def scale(X: T.Tensor((4, 64), "float32"), Y: T.Tensor((4, 64), "float32"), alpha: T.float32):
        with T.Kernel(4, threads=64) as bx:
            for j in T.Parallel(64):
                Y[bx, j] = X[bx, j] * alpha

    return scale


def echo():
    """Each integer scalar written to an output of its dtype; `x` (or -x when not `flag`) to O_f."""

    @T.prim_func
    def echo(O_int8: T.Tensor((128,), "int8"), O_uint8: T.Tensor((128,), "uint8"),
             O_int16: T.Tensor((128,), "int16"), O_uint16: T.Tensor((128,), "uint16"),
             O_int32: T.Tensor((128,), "int32"), O_uint32: T.Tensor((128,), "uint32"),
             O_int64: T.Tensor((128,), "int64"), O_uint64: T.Tensor((128,), "uint64"),
             O_f: T.Tensor((128,), "float32"),
             a_int8: T.int8, a_uint8: T.uint8, a_int16: T.int16, a_uint16: T.uint16,
             a_int32: T.int32, a_uint32: T.uint32, a_int64: T.int64, a_uint64: T.uint64,
             x: T.float32, flag: T.bool):  # fmt: skip
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(128):
                O_int8[i] = a_int8
                O_uint8[i] = a_uint8
                O_int16[i] = a_int16
                O_uint16[i] = a_uint16
                O_int32[i] = a_int32
                O_uint32[i] = a_uint32
                O_int64[i] = a_int64
                O_uint64[i] = a_uint64
                if flag:
                    O_f[i] = x
                else:
                    O_f[i] = -x

    return echo


def ramp():
    """Y[i] = a * i + b: every input is a scalar."""

    @T.prim_func
    def ramp(a: T.float32, b: T.int32, Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as _:
            for i in T.Parallel(64):
                Y[i] = a * i + b

    return ramp


ECHO_DTYPES = (*INTS, "float32")
GOOD = {"a_" + name: 1 for name in INTS} | {"x": 1.5, "flag": True}


def echo_call(ctx, **changes):
    """Call echo with GOOD scalars, some replaced; returns the outputs on the host. The outputs are
    passed (a GPU backend allocates outputs next to an input array, and echo has none)."""
    backend = ctx.execution_backend()
    outputs = [backend.to_device(np.zeros(128, name)) for name in ECHO_DTYPES]
    compiled(ctx, echo)(*outputs, *{**GOOD, **changes}.values())
    return [backend.to_host(o) for o in outputs]


# ------------------------------------------------------------------------------------- dynamic dims


@pytest.mark.parametrize("allocate_output", [False, True], ids=["given", "allocated"])
def test_a_dynamic_dim_beyond_its_dtype_is_refused(ctx, allocate_output):
    """Issue 10 item 2: an int32 dim bound to 2**31 + 8 used to wrap and silently do nothing."""
    huge = np.empty(HUGE, np.int8)  # never touched: the call fails before anything runs
    kernel = compiled(ctx, add_one, out_idx=(1,) if allocate_output else ())
    with pytest.raises(ArgumentError) as info:
        kernel(huge) if allocate_output else kernel(huge, huge)
    message = str(info.value)
    for words in ("parameter 'X'", "shape[0]", str(HUGE), "M (int32", 'T.dynamic("M", "int64")'):
        assert words in message


def test_a_huge_non_contiguous_shape_is_refused(ctx):
    """A strided view of a few bytes with 2**31 + 8 elements: n does not fit int32."""
    view = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=(HUGE,), strides=(0,))
    kernel = compiled(ctx, strided_ends)
    with pytest.raises(ArgumentError, match=r"parameter 'X': shape\[0\] is 2147483656, which does not fit n"):
        kernel(view, backend_array(ctx, np.zeros(2, np.float32)))


def test_a_symbolic_stride_beyond_its_dtype_is_refused(ctx):
    """A stride of 2**31 elements bound to an int32 stride dim would wrap the same way."""
    view = np.lib.stride_tricks.as_strided(np.zeros(1, np.float32), shape=(1,), strides=(2**31 * 4,))
    kernel = compiled(ctx, strided_ends)
    with pytest.raises(
        ArgumentError, match=r"parameter 'X': strides\[0\] is 2147483648, which does not fit s"
    ):
        kernel(view, backend_array(ctx, np.zeros(2, np.float32)))


def test_dims_that_fit_still_run(ctx, backend):
    x = np.arange(300, dtype=np.int8)
    for make in (add_one, add_one_int64):
        y = backend.to_host(compiled(ctx, make, out_idx=(1,))(backend.to_device(x)))
        np.testing.assert_array_equal(y, x + np.int8(1))
    base = np.arange(600, dtype=np.float32)
    y = backend.to_device(np.zeros(2, np.float32))
    compiled(ctx, strided_ends)(backend.to_device(base)[::3], y)
    np.testing.assert_array_equal(backend.to_host(y), [0, 597])


def backend_array(ctx, array: np.ndarray):
    return ctx.execution_backend().to_device(array)


# -------------------------------------------------------------------------------- read-only memory


def test_a_read_only_output_is_refused(ctx, backend):
    """Issue 10 item 3: it used to be written (cc) or silently not copied back (opencl)."""
    kernel = compiled(ctx, add_one)
    x = backend.to_device(np.arange(256, dtype=np.int8))
    y = read_only(backend, np.zeros(256, np.int8))
    with pytest.raises(ArgumentError, match=r"parameter 'Y' is read-only memory, but the kernel writes it"):
        kernel(x, y)


def test_a_read_only_in_place_parameter_is_refused(ctx, backend):
    kernel = compiled(ctx, accumulate)
    x = backend.to_device(np.ones(256, np.float32))
    y = read_only(backend, np.zeros(256, np.float32))
    with pytest.raises(ArgumentError, match=r"parameter 'Y' is read-only memory"):
        kernel(x, y)


def test_read_only_inputs_are_read_without_a_copy(ctx, backend):
    x = np.arange(256, dtype=np.int8)
    y = backend.to_device(np.zeros(256, np.int8))
    compiled(ctx, add_one)(read_only(backend, x), y)
    np.testing.assert_array_equal(backend.to_host(y), x + np.int8(1))


def host_only(backend) -> None:
    if not on_host(backend):
        pytest.skip("host memory cannot be passed to this backend's kernels")


def test_bytes_are_never_written(ctx, backend):
    """`np.frombuffer(bytes)` is read-only: writing it would change an immutable bytes object."""
    host_only(backend)
    data = bytes(range(256))
    kernel = compiled(ctx, add_one)
    frozen = np.frombuffer(data, np.int8)
    with pytest.raises(ArgumentError, match=r"parameter 'Y' is read-only memory"):
        kernel(np.zeros(256, np.int8), frozen)
    assert data == bytes(range(256))
    y = np.zeros(256, np.int8)
    kernel(frozen, y)  # as an input it is fine
    np.testing.assert_array_equal(y, frozen + np.int8(1))


def test_a_memmap_opened_read_only_is_refused_as_output(ctx, backend, tmp_path):
    """A mode="r" memmap is mapped without write permission: writing it crashed the process."""
    host_only(backend)
    path = tmp_path / "data.bin"
    np.arange(256, dtype=np.int8).tofile(path)
    mapped = np.memmap(path, np.int8, mode="r", shape=(256,))
    kernel = compiled(ctx, add_one)
    with pytest.raises(ArgumentError, match=r"parameter 'Y' is read-only memory.*mode='r\+'"):
        kernel(np.zeros(256, np.int8), mapped)
    y = np.zeros(256, np.int8)
    kernel(mapped, y)
    np.testing.assert_array_equal(y, np.arange(256, dtype=np.int8) + np.int8(1))


class _Interface:
    """Host memory offered through the array interface, with its read-only flag."""

    def __init__(self, array: np.ndarray, read_only: bool) -> None:
        self.array = array
        self.__array_interface__ = {**array.__array_interface__, "data": (array.ctypes.data, read_only)}


def test_a_read_only_array_interface_is_refused_as_output(ctx, backend):
    host_only(backend)
    kernel = compiled(ctx, add_one)
    with pytest.raises(ArgumentError, match=r"parameter 'Y' is read-only memory"):
        kernel(np.zeros(256, np.int8), _Interface(np.zeros(256, np.int8), True))
    y = np.zeros(256, np.int8)
    kernel(_Interface(np.arange(256, dtype=np.int8), True), _Interface(y, False))
    np.testing.assert_array_equal(y, np.arange(256, dtype=np.int8) + np.int8(1))


# ------------------------------------------------------------------------------------- byte order


def swapped(array: np.ndarray) -> np.ndarray:
    """The same values stored in the other byte order."""
    return array.astype(array.dtype.newbyteorder("S"))


@pytest.mark.parametrize("position", ["input", "output"])
def test_a_byte_swapped_array_is_refused(ctx, backend, position):
    """Issue 10 item 4: the kernel used to read the swapped bytes as numbers."""
    x, y = np.ones((4, 64), np.float32), np.zeros((4, 64), np.float32)
    name = "X" if position == "input" else "Y"
    args = [swapped(x), y] if position == "input" else [backend.to_device(x), swapped(y)]
    with pytest.raises(ArgumentError) as info:
        compiled(ctx, scale)(*args, 2.0)
    message = str(info.value)
    for words in (f"parameter {name!r}", "non-native", "x.astype(x.dtype.newbyteorder('='))"):
        assert words in message


def test_a_byte_swapped_array_interface_is_refused(ctx):
    swapped_x = _Interface(swapped(np.ones((4, 64), np.float32)), False)
    with pytest.raises(ArgumentError, match=r"parameter 'X'.*non-native"):
        compiled(ctx, scale)(swapped_x, np.zeros((4, 64), np.float32), 2.0)


# ------------------------------------------------------------------------------------------ scalars


def out_of_range_cases():
    for name in INTS:
        low, high = int_range(name)
        yield name, high + 1
        yield name, low - 1
    yield "int32", 2**32 + 5
    yield "uint32", 2**32 + 5
    yield "uint64", 2**64


@pytest.mark.parametrize("dtype, value", list(out_of_range_cases()), ids=lambda v: str(v))
def test_an_integer_scalar_out_of_range_is_refused(ctx, dtype, value):
    """Issue 10 item 5: out-of-range integers used to wrap silently."""
    low, high = int_range(dtype)
    with pytest.raises(ArgumentError) as info:
        echo_call(ctx, **{f"a_{dtype}": value})
    message = str(info.value)
    for words in (f"parameter 'a_{dtype}'", f"({dtype} scalar)", f"from {low} to {high}", f"got {value}"):
        assert words in message


def test_a_numpy_integer_out_of_range_is_refused(ctx):
    with pytest.raises(ArgumentError, match=r"parameter 'a_int32' \(int32 scalar\).*got 1099511627776"):
        echo_call(ctx, a_int32=np.int64(2**40))


@pytest.mark.parametrize("end", ["min", "max"])
def test_integer_scalars_at_their_limits_pass_exactly(ctx, end):
    values = {f"a_{name}": int_range(name)[0 if end == "min" else 1] for name in INTS}
    outputs = echo_call(ctx, **values)
    for name, out in zip(INTS, outputs):
        assert out.dtype == np.dtype(name)
        assert {int(v) for v in out} == {values[f"a_{name}"]}


def test_numpy_scalars_of_the_right_kind_pass(ctx):
    outputs = echo_call(ctx, a_int8=np.int64(-5), a_uint64=np.uint64(2**64 - 1), a_int32=np.array(7),
                        x=np.float32(0.25), flag=np.bool_(False))  # fmt: skip
    assert int(outputs[0][0]) == -5 and int(outputs[7][0]) == 2**64 - 1 and int(outputs[4][0]) == 7
    assert float(outputs[8][0]) == -0.25


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")], ids=["nan", "inf", "-inf"])
def test_nan_and_infinities_are_valid_float_scalars(ctx, value):
    out = echo_call(ctx, x=value)[8]
    np.testing.assert_array_equal(out, np.full(128, value, np.float32))


@pytest.mark.parametrize(
    "name, value, got",
    [
        ("a_int32", 2.0, "takes an integer; got float 2.0"),
        ("a_int32", True, "takes an integer; got bool True"),
        ("a_int32", np.float32(2.0), "takes an integer; got float32"),
        ("a_int32", np.bool_(True), "takes an integer; got bool"),
        ("a_uint8", "7", "takes an integer; got str '7'"),
        ("flag", 1, "takes a bool; got int 1"),
        ("x", "1.5", "takes an int or a float; got str '1.5'"),
        ("x", 1j, "takes an int or a float; got complex"),
    ],
    ids=lambda v: repr(v),
)
def test_a_scalar_of_the_wrong_kind_is_refused(ctx, name, value, got):
    with pytest.raises(ArgumentError) as info:
        echo_call(ctx, **{name: value})
    message = str(info.value)
    assert f"parameter {name!r} (" in message and got in message


def test_a_kernel_whose_inputs_are_all_scalars_allocates_its_output(ctx, backend):
    """No input array says where an output goes: the compiled launcher once read an argument that does
    not exist and crashed the process; now the Python path allocates (a host array on the host targets,
    an ArgumentError asking for the outputs where a GPU must be chosen)."""
    kernel = compiled(ctx, ramp, out_idx=(2,))
    expected = 1.5 * np.arange(64) - 3
    if on_host(backend):
        np.testing.assert_allclose(backend.to_host(kernel(1.5, -3)), expected, rtol=1e-6)
    else:
        with pytest.raises(ArgumentError, match="pass the outputs as arguments"):
            kernel(1.5, -3)
    y = backend.to_device(np.full(64, np.nan, np.float32))
    kernel(1.5, -3, y)
    np.testing.assert_allclose(backend.to_host(y), expected, rtol=1e-6)


# ------------------------------------------------------------------ dtype, rank, shape, stride, count


def test_the_existing_checks_name_the_parameter(ctx, backend):
    kernel = compiled(ctx, scale)
    good = np.ones((4, 64), np.float32)
    x, y = backend.to_device(good), backend.to_device(np.zeros((4, 64), np.float32))
    attacks = [
        ((backend.to_device(good.astype(np.float64)), y, 1.0), r"parameter 'X': expected dtype float32, got float64"),
        ((backend.to_device(good[0]), y, 1.0), r"parameter 'X': expected 2 dims"),
        ((x, backend.to_device(np.zeros((4, 32), np.float32)), 1.0), r"parameter 'Y': shape\[1\] must be 64, got 32"),
        ((x, backend.to_device(np.zeros((8, 64), np.float32))[::2], 1.0), r"parameter 'Y' must be contiguous"),
        (([1.0] * 256, y, 1.0), r"parameter 'X' expects an array"),
        ((x, y), r"kernel scale takes 3 inputs \(X, Y, alpha\), got 2"),
    ]  # fmt: skip
    for args, expected in attacks:
        with pytest.raises(ArgumentError, match=expected):
            kernel(*args)


def test_dynamic_dims_must_agree(ctx, backend):
    kernel = compiled(ctx, add_one)
    x, y = backend.to_device(np.zeros(300, np.int8)), backend.to_device(np.zeros(200, np.int8))
    with pytest.raises(ArgumentError, match=r"parameter 'Y': shape\[0\] is 200, but M = 300"):
        kernel(x, y)


def test_a_static_stride_must_match(ctx, backend):
    @T.prim_func
    def column(X: T.StridedTensor((8,), (4,), "float32"), Y: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32) as _:
            for i in T.Parallel(8):
                Y[i] = X[i]

    try:
        kernel = tilecraft.compile(column, ctx=ctx)
    except LoweringError as err:
        pytest.skip(f"not supported on {ctx.target}: {err.message}")
    base = np.arange(64, dtype=np.float32)
    y = backend.to_device(np.zeros(8, np.float32))
    with pytest.raises(ArgumentError, match=r"parameter 'X': strides\[0\] must be 4, got 2"):
        kernel(backend.to_device(base)[::2][:8], y)
    kernel(backend.to_device(base)[::4][:8], y)
    np.testing.assert_array_equal(backend.to_host(y), base[::4][:8])


def test_the_compiled_launcher_runs_the_good_calls(ctx, backend, launcher):
    """Under TILECRAFT_LAUNCHER=compiled, a backend with a native launch never reaches the Python one."""
    kernel = compiled(ctx, scale, out_idx=(1,))
    x = backend.to_device(np.random.rand(4, 64).astype(np.float32))
    kernel(x, 2.0)
    if launcher == "python" or backend.native_launch(kernel.loaded) is None:
        assert not kernel._plan
        return
    assert type(kernel._plan).__name__ == "Plan"
    python_launch = kernel._launch

    def refuse(*args, **kwargs):
        raise AssertionError("the Python launcher ran a call the compiled one accepts")

    kernel._launch = refuse
    try:
        y = kernel(x, 3.0)
    finally:
        kernel._launch = python_launch
    np.testing.assert_allclose(backend.to_host(y), backend.to_host(x).astype(np.float64) * 3.0, rtol=1e-6)
