"""`T.im2col`: one tile of the im2col matrix of an NHWC image, for convolution as a GEMM.

The call expands while parsing into a `T.Parallel` nest over the tile, which every backend lowers:
row `m` of the tile is output pixel `nhw_step * block_M + m` (flattened over N, OH, OW), column `k` is
the patch element `c_step * block_K + k` (flattened over KH, KW, C, in that order), and the value is
`img[n, oh * stride + kh * dilation - pad, ow * stride + kw * dilation - pad, c]`, or zero where that
position is padding or the row or column lies past the output or the patch. The filter is square
(KH = KW = `kernel`), and `OH = (H + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1` (OW alike),
as in TileLang.
"""

from __future__ import annotations

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion
from tilecraft.ir.expr import Expr, IRError, Var
from tilecraft.language import builder

ON_CHIP = ("shared", "shared.dyn", "local.fragment", "local")


def im2col(img: Buffer, col: Buffer | BufferRegion, nhw_step, c_step, kernel, stride, dilation, pad,
           eviction_policy: str | None = None, annotations: dict | None = None) -> S.Stmt:  # fmt: skip
    """Fill the tile `col` (block_M, block_K) with rows `nhw_step` and columns `c_step` of the im2col
    matrix of the NHWC image `img`; `eviction_policy` and `annotations` are hints, accepted and unused."""
    b = builder.current("T.im2col")
    b.kernel("T.im2col")
    if not isinstance(img, Buffer) or img.ndim != 4:
        raise IRError(f"T.im2col reads an image of 4 dims (N, H, W, C); got {_describe(img)}")
    tile = _tile(col)
    rows, cols = _index("nhw_step", nhw_step), _index("c_step", c_step)
    geometry = (_param("kernel", kernel, 1), _param("stride", stride, 1), _param("dilation", dilation, 1))
    conv = _Conv(img, *geometry, _param("pad", pad, 0))
    i, j = Var(dt.int32, "i"), Var(dt.int32, "j")
    block_m, block_k = tile.ranges[-2].extent, tile.ranges[-1].extent
    body = conv.element(tile, i, j, _add(_mul(rows, block_m), i), _add(_mul(cols, block_k), j))
    loop = S.For(j, E.const(0), block_k, S.ForKind.PARALLEL, body, span=b.span)
    return S.For(i, E.const(0), block_m, S.ForKind.PARALLEL, loop, span=b.span)


c2d_im2col = im2col  # TileLang's earlier name


class _Conv:
    """The geometry of one convolution: image dims, output dims, filter size, stride, dilation, padding."""

    def __init__(self, img: Buffer, kernel: Expr, stride: Expr, dilation: Expr, pad: Expr) -> None:
        self.img = img
        self.n, self.h, self.w, self.c = img.shape
        self.kernel, self.stride, self.dilation, self.pad = kernel, stride, dilation, pad
        self.oh, self.ow = self._out(self.h), self._out(self.w)

    def _out(self, extent: Expr) -> Expr:
        reach = _add(_mul(self.dilation, _sub(self.kernel, 1)), 1)
        return _add(E.floordiv(_sub(_add(extent, _mul(self.pad, 2)), reach), self.stride), 1)

    def element(self, tile: BufferRegion, i: Var, j: Var, m: Expr, k: Expr) -> S.Stmt:
        """`tile[i, j] = patch element k of output pixel m` (zero outside), with m, k and the input
        position bound to names so the guard and the load share them."""
        mv, kv = Var(m.dtype, "m"), Var(k.dtype, "k")
        pixels = _mul(self.oh, self.ow)
        patch = _mul(self.kernel, self.c)
        kh, kw = E.floordiv(kv, patch), E.floormod(E.floordiv(kv, self.c), self.kernel)
        oh, ow = E.floordiv(E.floormod(mv, pixels), self.ow), E.floormod(mv, self.ow)
        h = _sub(_add(_mul(oh, self.stride), _mul(kh, self.dilation)), self.pad)
        w = _sub(_add(_mul(ow, self.stride), _mul(kw, self.dilation)), self.pad)
        hv, wv = Var(h.dtype, "h"), Var(w.dtype, "w")
        inside = [
            E.compare(E.LT, mv, _mul(self.n, pixels)),
            E.compare(E.LT, kv, _mul(self.kernel, patch)),
            E.compare(E.GE, hv, 0), E.compare(E.LT, hv, self.h),
            E.compare(E.GE, wv, 0), E.compare(E.LT, wv, self.w),
        ]  # fmt: skip
        guard = inside[0]
        for cond in inside[1:]:
            guard = E.logical_and(guard, cond)
        pixel = (E.floordiv(mv, pixels), hv, wv, E.floormod(kv, self.c))
        value = E.BufferLoad(self.img.dtype, self.img, pixel)
        index = _tile_index(tile, i, j)
        span = builder.current_span()
        store = S.BufferStore(tile.buffer, E.cast(value, tile.dtype), index, span=span)
        zero = S.BufferStore(tile.buffer, E.const(0, tile.dtype), index, span=span)
        body: S.Stmt = S.IfThenElse(guard, store, zero, span=span)
        for var, expr in reversed(((mv, m), (kv, k), (hv, h), (wv, w))):
            body = S.LetStmt(var, expr, body, span=span)
        return body


def _tile(col) -> BufferRegion:
    """The on-chip tile `col` fills: a buffer or region whose extents are 1 but in the last two dims."""
    if isinstance(col, Buffer):
        col = col.full_region()
    if not isinstance(col, BufferRegion):
        raise IRError(
            f"T.im2col fills a tile: a shared buffer, a fragment or a region of one; got {type(col).__name__}"
        )
    buf = col.buffer
    if buf.scope not in ON_CHIP:
        raise IRError(
            f"T.im2col fills an on-chip tile, but {buf.name} is a {buf.scope} buffer; "
            "fill a T.alloc_shared tile (or a fragment) and T.copy it out"
        )
    if len(col.ranges) < 2 or any(E.const_value(r.extent) != 1 for r in col.ranges[:-2]):
        raise IRError(
            f"T.im2col fills a 2-D tile (block_M, block_K); {buf.name} has {len(col.ranges)} dims "
            f"with extents {tuple(str(r.extent) for r in col.ranges)}"
        )
    return col


def _tile_index(tile: BufferRegion, i: Var, j: Var) -> tuple[Expr, ...]:
    *lead, row, column = tile.ranges
    return (*(r.min for r in lead), _add(row.min, i), _add(column.min, j))


# Arithmetic that leaves out adding 0 and multiplying by 1, so a stride of 1 or a first tile reads plainly.
def _add(a, b) -> Expr:
    return E.convert(b) if E.const_value(a) == 0 else E.convert(a) if E.const_value(b) == 0 else E.add(a, b)


def _sub(a, b) -> Expr:
    return E.convert(a) if E.const_value(b) == 0 else E.sub(a, b)


def _mul(a, b) -> Expr:
    return E.convert(b) if E.const_value(a) == 1 else E.convert(a) if E.const_value(b) == 1 else E.mul(a, b)


def _index(name: str, value) -> Expr:
    e = E.convert(value)
    if not e.dtype.is_integer:
        raise IRError(f"T.im2col's {name} must be an integer, got {e} of dtype {e.dtype}")
    return e


def _param(name: str, value, minimum: int) -> Expr:
    """A convolution parameter: an integer (a Python int, or a T.const symbol) of at least `minimum`."""
    e = _index(name, value)
    known = E.const_value(e)
    if known is not None and known < minimum:
        raise IRError(f"T.im2col's {name} is {known}; it must be at least {minimum}")
    return e


def _describe(x) -> str:
    if isinstance(x, Buffer):
        return f"{x.name} with {x.ndim} dims"
    return type(x).__name__
