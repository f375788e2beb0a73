"""4-bit and microscaling dtypes on every available backend: casts bit for bit as ml_dtypes casts,
packed global memory (two values a byte, low nibble first, rows on whole bytes) written by copies and
fills at any column offset, with tiles of neighbouring blocks sharing bytes.

Packed outputs are poisoned bytes followed by a canary; the check is byte for byte: every element's
nibble, the unused high nibble of an odd row's last byte (left as the poison had it) and the canary
(nothing past the array is written).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import tilecraft.language as T
from tests.conformance.test_conformance import compile_or_skip
from tilecraft.testing.conformance.subbyte import pack_rows

FORMATS = {
    "float4_e2m1fn": ml_dtypes.float4_e2m1fn,
    "float6_e2m3fn": ml_dtypes.float6_e2m3fn,
    "float6_e3m2fn": ml_dtypes.float6_e3m2fn,
    "float8_e8m0fnu": ml_dtypes.float8_e8m0fnu,
    "int4": ml_dtypes.int4,
    "uint4": ml_dtypes.uint4,
}
PACKED = ("float4_e2m1fn", "int4", "uint4")
POISON, CANARY = 0xA5, 16  # poison byte; canary bytes after each packed output


def boundary_values(fmt: str) -> np.ndarray:
    """Every value of a float format, the midpoints between neighbours and the float32 values next to
    them on both sides, past the largest value, and the specials."""
    dtype = FORMATS[fmt]
    codes = np.arange(256, dtype=np.uint8)
    values = np.unique(codes.view(dtype).astype(np.float64))
    values = values[np.isfinite(values)]
    if fmt != "float8_e8m0fnu":
        values = np.unique(np.concatenate([values, -values]))
    mids = ((values[:-1] + values[1:]) / 2).astype(np.float32)
    top = np.float32(values.max())
    specials = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e30, -1e30, 1e-45, -1e-45, 2.0**-126, 2.0**-127,
                3 * 2.0**-128, -1.0, 2.0**127, 1.5 * 2.0**127, 3.4e38]  # fmt: skip
    with np.errstate(over="ignore"):  # float8_e8m0fnu's largest value doubled is infinite in float32
        edges = np.array([*specials, float(top) * 1.25, float(top) * 2], np.float64).astype(np.float32)
    around = [np.nextafter(mids, np.float32(np.inf)), np.nextafter(mids, np.float32(-np.inf))]
    return np.concatenate([values.astype(np.float32), mids, *around, edges]).astype(np.float32)


def inputs_for(fmt: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if fmt in ("int4", "uint4"):
        x = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
        x[:81] = np.arange(-40, 41)
        return rng.permutation(x)
    special = boundary_values(fmt)
    scale = 2.0 ** rng.integers(-8, 8, n)
    x = (rng.standard_normal(n) * scale).astype(np.float32)
    x[: special.size] = special[:n]
    return rng.permutation(x)


def expected_codes(x: np.ndarray, fmt: str) -> np.ndarray:
    """ml_dtypes' cast of `x` to `fmt`, as codes. float8_e8m0fnu's in-range values are computed here:
    the nearest power of two, a tie (1.5 * 2**k) going up, as ml_dtypes 0.7 rounds; earlier versions
    send float32 subnormals just below a tie up too."""
    with np.errstate(invalid="ignore", over="ignore"):
        codes = x.astype(FORMATS[fmt]).view(np.uint8)
    if fmt == "float8_e8m0fnu":
        wide = x.astype(np.float64)
        inside = np.isfinite(wide) & (wide >= 0.75 * 2.0**-127) & (wide < 1.5 * 2.0**127)
        mantissa, exponent = np.frexp(np.where(inside, wide, 1.0))  # wide = mantissa * 2**exponent
        power = np.where(mantissa >= 0.75, exponent, exponent - 1)
        codes = np.where(inside, power + 127, codes).astype(np.uint8)
    return codes


def expected_bytes(x: np.ndarray, fmt: str) -> np.ndarray:
    """The bytes a kernel's output holds for `x` cast to `fmt` (packed for 4-bit types)."""
    codes = expected_codes(x, fmt)
    return pack_rows(codes, POISON) if fmt in PACKED else codes


def poisoned(shape: tuple[int, ...]) -> np.ndarray:
    """Poisoned bytes of `shape` and a canary after them: CANARY more elements (1-D) or 2 more rows; the
    kernel gets the leading part (`leading`)."""
    extra = (shape[0] + CANARY,) if len(shape) == 1 else (shape[0] + 2, *shape[1:])
    return np.full(extra, POISON, np.uint8)


def leading(count: int):
    return lambda placed: placed[:count]


def run(kernel, backend_ctx, arrays, views):
    """Run with `arrays` placed where the kernel reads them; `views[i]` (a function of the placed array)
    is what parameter i gets (a leading part of a canaried buffer)."""
    backend = backend_ctx.execution_backend()
    device = [backend.to_device(a) for a in arrays]
    kernel(*[v(d) for v, d in zip(views, device)])
    return [np.asarray(backend.to_host(d)) for d in device]


def whole(a):
    return a


def _cast_kernel(n: int, fmt: str, block: int = 128):
    """Y = X as fmt (through a fragment); Z = X cast to fmt and back to float32 inside an expression."""
    src = "int32" if fmt in ("int4", "uint4") else "float32"

    @T.prim_func
    def cast(X: T.Tensor((n,), src), Y: T.Tensor((n,), fmt), Z: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            y = T.alloc_fragment((block,), fmt)
            for i in T.Parallel(block):
                y[i] = X[bx * block + i]
            T.copy(y, Y[bx * block])
            for i in T.Parallel(block):
                Z[bx * block + i] = T.cast(T.cast(X[bx * block + i], fmt), "float32")

    return cast


@pytest.mark.parametrize("fmt", FORMATS)
def test_casts_match_ml_dtypes(backend_ctx, fmt):
    n = 999  # odd: the last byte of a packed output has one value
    x = inputs_for(fmt, n, np.random.default_rng(1))
    kernel = compile_or_skip(_cast_kernel(n, fmt), backend_ctx)
    packed = fmt in PACKED
    nbytes = (n + 1) // 2 if packed else n
    arrays = [x, poisoned((nbytes,)), np.full(n, np.nan, np.float32)]
    _, got, z = run(kernel, backend_ctx, arrays, [whole, leading(nbytes), whole])
    want = expected_bytes(x, fmt)
    bad = got[:nbytes] != want
    assert not bad.any(), (
        f"{fmt}: {np.nonzero(bad)[0][:8]}: got {got[:nbytes][bad][:8]}, want {want[bad][:8]}"
    )
    assert (got[nbytes:] == POISON).all(), f"{fmt}: the kernel wrote past the end of Y"
    with np.errstate(invalid="ignore"):
        zwant = expected_codes(x, fmt).view(FORMATS[fmt]).astype(np.float32)
    assert np.array_equal(z, zwant, equal_nan=True), f"{fmt}: in-expression casts differ"


def _tiles_kernel(m: int, n: int, start: int, width: int, fmt: str, bm: int = 8):
    """Columns start + b * width ... of X copied to Y through a shared tile, and W filled with 1.5, block
    b of each row block taking one `width`-wide tile: an odd start or width has neighbouring blocks
    writing the two halves of one byte."""

    @T.prim_func
    def tiles(X: T.Tensor((m, n), fmt), Y: T.Tensor((m, n), fmt), W: T.Tensor((m, n), fmt)):
        with T.Kernel(T.ceildiv(n - start, width), T.ceildiv(m, bm), threads=64) as (bx, by):
            t = T.alloc_shared((bm, width), fmt)
            T.copy(X[by * bm, start + bx * width], t)
            T.copy(t, Y[by * bm, start + bx * width])
            T.fill(W[by * bm : by * bm + bm, start + bx * width : start + bx * width + width], 1.5)

    return tiles


@pytest.mark.parametrize("fmt", PACKED)
@pytest.mark.parametrize("start,width,n", [(3, 5, 67), (0, 6, 66), (1, 8, 64), (2, 7, 31)])
def test_packed_tiles_at_any_column(backend_ctx, fmt, start, width, n):
    m = 21
    rng = np.random.default_rng(start * 100 + width)
    nbytes = (n + 1) // 2
    x = rng.integers(0, 256, (m, nbytes), dtype=np.uint8)
    kernel = compile_or_skip(_tiles_kernel(m, n, start, width, fmt), backend_ctx)
    arrays = [x, poisoned((m, nbytes)), poisoned((m, nbytes))]
    _, y, w = run(kernel, backend_ctx, arrays, [whole, leading(m), leading(m)])
    codes = np.stack([x & 15, x >> 4], axis=-1).reshape(m, -1)[:, :n]
    poison = np.tile(np.array([POISON & 15, POISON >> 4], np.uint8), (m, (n + 1) // 2))[:, :n]
    columns = np.arange(n) >= start
    want_y = pack_rows(np.where(columns, codes, poison), POISON)
    one_and_a_half = np.float32(1.5).astype(FORMATS[fmt]).view(np.uint8) & 15
    want_w = pack_rows(np.where(columns, one_and_a_half, poison), POISON)
    for name, got, want in (("copy", y, want_y), ("fill", w, want_w)):
        bad = got[:m] != want
        where = np.argwhere(bad)[:6].tolist()
        assert not bad.any(), f"{name}: bytes {where} got {got[:m][bad][:6]}, want {want[bad][:6]}"
        assert (got[m:] == POISON).all(), f"{name}: the kernel wrote past the end of the array"
