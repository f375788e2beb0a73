"""`T.gemm_sp`: a GEMM whose A operand is 2:4 structured-sparse, given compressed with its metadata.

A (M x K, dense) keeps at most `kept` of every `group` consecutive elements along K (2 of 4 for 8- and
16-bit types, 1 of 2 for float32); `A_sparse` (M x K/2) holds the kept values of each group in order and
`E` says where they sit. Each 4-bit nibble of a metadata word describes one group: bits [1:0] are the
position of the group's first kept value, bits [3:2] the second's (for float32 the position counts 16-bit
halves, so the nibble is 0b0100 for element 0 and 0b1110 for element 1, as sparse tensor cores take it).
A word of `bits` bits holds `bits / 4` nibbles for consecutive groups, the lowest nibble first, and
`E` is (M x K / e_factor) with `e_factor = bits / 4 * group` (TileLang's natural row-major metadata, what
its `compress` writes). A transposed operand (`transpose_A`, `transpose_E`) is stored K-major.

The call expands while parsing into tile ops every backend lowers: a `T.Parallel` nest that writes the
dense tile (`A[m, group * g + p]` is the kept value whose position is `p`, zero where none is), then
`T.gemm` of that tile. So it computes the dense product of the expanded tile; no target uses sparse tensor
cores (mma.sp) for it yet.
"""

from __future__ import annotations

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion, Range
from tilecraft.ir.expr import Expr, Var
from tilecraft.language import builder
from tilecraft.language.tileops import Operand, gemm, region_of

# Bits of one metadata nibble: it describes one group of A's elements along K.
NIBBLE_BITS = 4
ON_CHIP = ("shared", "shared.dyn", "local.fragment", "local")


def sparsity(a_dtype) -> tuple[int, int]:
    """(kept, group) of the 2:4 scheme for elements of `a_dtype`: 2 of 4 for 8- and 16-bit types, 1 of 2
    for float32 (TileLang's GROUP_CONFIG)."""
    d = dt.as_dtype(a_dtype)
    if d.lanes == 1 and d.bits in (8, 16) and not d.is_bool:
        return 2, 4
    if d == dt.float32:
        return 1, 2
    raise builder.error(
        f"T.gemm_sp has no sparse format for A of dtype {d}",
        hint="A may be an 8- or 16-bit type (2 of every 4 elements kept) or float32 (1 of every 2)",
    )


def e_factor(a_dtype, meta_dtype) -> int:
    """How many elements of A (dense, along K) one metadata element of `meta_dtype` describes."""
    meta = _metadata_dtype(meta_dtype)
    return meta.bits // NIBBLE_BITS * sparsity(a_dtype)[1]


def _metadata_dtype(meta_dtype) -> dt.DataType:
    d = dt.as_dtype(meta_dtype)
    if not d.is_integer or d.lanes != 1 or d.bits not in (8, 16, 32):
        raise builder.error(
            f"T.gemm_sp metadata must be an 8-, 16- or 32-bit integer type, got {d}",
            hint="use int16 (or int8 / int32) metadata as TileLang's compress writes it",
        )
    return d


def gemm_sp(A_sparse: Operand, E_meta: Operand, B: Operand, C: Operand, transpose_A: bool = False,
            transpose_E: bool = False, transpose_B: bool = False,
            policy: S.GemmWarpPolicy = S.GemmWarpPolicy.Square, clear_accum: bool = False,
            annotations: dict | None = None, *, k_pack: int = 1, wg_wait: int = 0) -> S.Stmt:  # fmt: skip  # noqa: N803
    """`C (+)= op(A) @ op(B)` where A is given 2:4-compressed: `A_sparse` holds its kept values and
    `E_meta` their positions (module docstring); `transpose_E` says E is stored K-major. The arguments
    after C are T.gemm's."""
    b = builder.current("T.gemm_sp")
    b.kernel("T.gemm_sp")
    a, e, b_region, c = (_tile(x, name) for x, name in ((A_sparse, "A_sparse"), (E_meta, "E"), (B, "B"),
                                                          (C, "C")))  # fmt: skip
    kept, group = sparsity(a.dtype)
    meta = _metadata_dtype(e.dtype)
    m, n = _static(c.shape[-2], "M"), _static(c.shape[-1], "N")
    sparse_k = _static(a.shape[-2] if transpose_A else a.shape[-1], "K / 2")
    k = sparse_k * group // kept
    a_m = _static(a.shape[-1] if transpose_A else a.shape[-2], "M")
    b_k = _static(b_region.shape[-1] if transpose_B else b_region.shape[-2], "K")
    b_n = _static(b_region.shape[-2] if transpose_B else b_region.shape[-1], "N")
    if a_m != m or b_k != k or b_n != n:
        raise builder.error(
            f"T.gemm_sp: A_sparse {_dims(a)} holds an A of {a_m} x {k} (K = {group // kept} * {sparse_k}), "
            f"which does not fit B {_dims(b_region)} and C {_dims(c)} (transpose_A={bool(transpose_A)}, "
            f"transpose_B={bool(transpose_B)})"
        )
    factor = meta.bits // NIBBLE_BITS * group
    want = (k // factor, m) if transpose_E else (m, k // factor)
    got = (_static(e.shape[-2], "E"), _static(e.shape[-1], "E"))
    if k % factor or got != want:
        raise builder.error(
            f"T.gemm_sp: E {got} does not describe A of {m} x {k}: {meta} metadata covers {factor} "
            f"elements of K each, so E must be {want} (transpose_E={bool(transpose_E)})"
        )
    # The dense tile is M x K whatever A_sparse's orientation: tensor cores take a register A only so.
    dense = Buffer(f"{a.buffer.name}_dense", (E.const(m), E.const(k)), a.dtype, "local.fragment")
    expand = _Expansion(a, e, dense, kept, group, meta, bool(transpose_A), bool(transpose_E)).loop()
    product = gemm(dense, B, C, False, transpose_B, policy, clear_accum, k_pack, wg_wait, annotations)
    return S.Allocate(dense, S.seq(expand, product), span=builder.current_span())


class _Expansion:
    """The T.Parallel nest that writes the dense tile of A from A_sparse and E."""

    def __init__(self, a: BufferRegion, e: BufferRegion, dense: Buffer, kept: int, group: int,
                 meta: dt.DataType, transpose_a: bool, transpose_e: bool) -> None:  # fmt: skip
        self.a, self.e, self.dense = a, e, dense
        self.kept, self.group = kept, group
        self.per_word = meta.bits // NIBBLE_BITS
        self.transpose_a, self.transpose_e = transpose_a, transpose_e

    def loop(self) -> S.Stmt:
        span = builder.current_span()
        i, j = Var(dt.int32, "i"), Var(dt.int32, "j")
        body = S.BufferStore(self.dense, self.element(i, j), (i, j), span=span)
        extents = self.dense.shape
        inner = S.For(j, E.const(0), extents[1], S.ForKind.PARALLEL, body, span=span)
        return S.For(i, E.const(0), extents[0], S.ForKind.PARALLEL, inner, span=span)

    def element(self, row: Expr, kk: Expr) -> Expr:
        """A[row, kk]: the kept value whose position in its group is kk's, or zero."""
        g, p = E.floordiv(kk, self.group), E.floormod(kk, self.group)
        word = self._word(row, E.floordiv(g, self.per_word))
        shift = E.mul(E.floormod(g, self.per_word), NIBBLE_BITS)
        first = self._position(word, shift)
        zero = E.const(0, self.a.dtype)
        if self.kept == 1:  # float32: positions count 16-bit halves, so element p sits at position 2p
            return E.select(E.compare(E.EQ, first, E.mul(p, 2)), self._kept(row, g, 0), zero)
        second = self._position(word, E.add(shift, 2))
        return E.select(E.compare(E.EQ, first, p), self._kept(row, g, 0),
                        E.select(E.compare(E.EQ, second, p), self._kept(row, g, 1), zero))  # fmt: skip

    def _word(self, row: Expr, column: Expr) -> Expr:
        index = (column, row) if self.transpose_e else (row, column)
        load = _load(self.e, index)
        # Shifts of at most 30 bits, then a mask: the int32 view of any word gives the same nibbles.
        return load if load.dtype == dt.int32 else E.cast(load, dt.int32)

    def _position(self, word: Expr, shift: Expr) -> Expr:
        """The 2-bit position at bit `shift` of `word`."""
        return E.int_call("bitwise_and", E.int_call("shift_right", word, shift), E.const(3, dt.int32))

    def _kept(self, row: Expr, g: Expr, t: int) -> Expr:
        column = E.add(E.mul(g, self.kept), t) if self.kept > 1 else g
        return _load(self.a, (column, row) if self.transpose_a else (row, column))


def _load(region: BufferRegion, index: tuple[Expr, Expr]) -> Expr:
    """The element at `index` (the region's last two dims) of the region."""
    *lead, r0, r1 = region.ranges
    full = (*(r.min for r in lead), _offset(r0, index[0]), _offset(r1, index[1]))
    return E.BufferLoad(region.buffer.dtype, region.buffer, full)


def _offset(r: Range, i: Expr) -> Expr:
    return i if E.const_value(r.min) == 0 else E.add(r.min, i)


def _tile(x: Operand, name: str) -> BufferRegion:
    region = region_of(x, "T.gemm_sp")
    if region is None:
        raise builder.error(
            f"T.gemm_sp's {name} must be a whole buffer or a sliced region, not a start index"
        )
    if len(region.ranges) < 2 or any(E.const_value(r.extent) != 1 for r in region.ranges[:-2]):
        raise builder.error(
            f"T.gemm_sp's {name} must be a 2-D tile; {region.buffer.name} has extents "
            f"{tuple(str(r.extent) for r in region.ranges)}"
        )
    if region.buffer.scope not in ON_CHIP:
        raise builder.error(
            f"T.gemm_sp's {name} must be on chip (shared memory or a fragment), but {region.buffer.name} is "
            f"a {region.buffer.scope} buffer",
            hint="T.copy the tile into T.alloc_shared or T.alloc_fragment storage first",
        )
    return region


def _dims(region: BufferRegion) -> tuple:
    return tuple(E.const_value(x) if E.const_value(x) is not None else str(x) for x in region.shape)


def _static(extent: Expr, what: str) -> int:
    value = E.const_value(extent)
    if not isinstance(value, int):
        raise builder.error(f"T.gemm_sp needs static tile dimensions; {what} is {extent}")
    return value
