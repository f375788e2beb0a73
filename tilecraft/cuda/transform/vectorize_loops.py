"""vectorize-loops: a `T.vectorized` loop that copies one contiguous run is one vector access.

    for v in T.vectorized(8):
        A_local[v] = A[by, ko * 256 + kr * 8 + v]        # 8 float16: one 16-byte load

becomes `VectorCopy(A_local, 0, A, by * K + ko * 256 + kr * 8, 16)` (`*(uint4*)dst = *(const uint4*)src`)
where the arithmetic proves it safe: each store of the body is of a load of the same dtype (8, 16 or
32 bits; several stores only where none writes what another reads or writes), the loop's n elements
take 4, 8 or 16 bytes, each side's last index is `base + v` with the other indices free of `v`, `base`
is a multiple of n and so is the row length of a multi-dimensional buffer
(so the flat offset is too), and both buffers start on 16 bytes: global buffers (BUFFER_ALIGN, which
the launchers check) and per-thread arrays (declared aligned). The vector touches exactly the elements
the scalar loop touched, so it adds no access outside the arrays. Anything else stays a loop of scalar
accesses, as written; shared memory is left alone (its tiles may be swizzled).

What is decided follows from the index arithmetic, not from names or the loop's text: the same copy
written with another loop variable or index order gets the same access (TileLang vectorizes such
loops too; without this, a dequantizing GEMV loads its 16-byte rows one element at a time).
"""

from __future__ import annotations

from tilecraft.backend.pipeline import module_pass
from tilecraft.cuda.ir import VectorCopy
from tilecraft.cuda.shared_layout import SharedLayout
from tilecraft.cuda.storage import SHARED_SCOPES as SHARED
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith.analyzer import Analyzer
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import BufferKeepingMutator, free_vars, substitute, walk

VECTOR_BYTES = (4, 8, 16)
# scopes whose buffers start on 16 bytes: kernel arguments and workspaces, per-thread arrays
ALIGNED_SCOPES = ("global", "local", "local.fragment")


def vector_copies(loop: S.For, layouts: dict[int, SharedLayout] | None = None,
                  lets: dict[E.Var, E.Expr] | None = None) -> S.Stmt | None:
    """The loop as one VectorCopy per store of its body, or None where that is not provably the same
    accesses. Several stores (a GEMV loading a run of A and one of B in one loop) are copied one after
    the other, which is the scalar loop's interleaving only where no store writes what another reads
    or writes. `layouts`: the swizzled layouts of shared tiles (by buffer id), whose runs are addressed
    physically; `lets`: the values of the pure lets around the loop, which the proofs may read
    (`index_base = i * 1024 + tx * 4` is a multiple of 4)."""
    n = E.const_value(loop.extent)
    if loop.kind is not S.ForKind.VECTORIZED or E.const_value(loop.min) != 0 or not isinstance(n, int):
        return None
    body = _inline_lets(loop.body)
    stores = list(body.stmts) if isinstance(body, S.SeqStmt) else [body]
    copies = [_vector_copy(loop, store, n, layouts or {}, lets or {}) for store in stores]
    if not copies or any(c is None for c in copies):
        return None
    written = [id(c.dst) for c in copies]
    if len(set(written)) != len(written) or set(written) & {id(c.src) for c in copies}:
        return None
    return S.seq(*copies)


def _inline_lets(body: S.Stmt) -> S.Stmt:
    """The body with its lets of pure arithmetic (`index = base + v`, TileLang's dequantize macros)
    substituted into the statements below them; a let that reads memory stays (no copy then)."""
    if isinstance(body, S.LetStmt) and not any(isinstance(n, E.BufferLoad) for n in walk(body.value)):
        return _inline_lets(substitute(body.body, {body.var: body.value}))
    if isinstance(body, S.SeqStmt):
        return S.seq(*(_inline_lets(s) for s in body.stmts))
    return body


def _vector_copy(loop: S.For, store: S.Stmt, n: int, layouts: dict[int, SharedLayout],
                 lets: dict[E.Var, E.Expr]) -> VectorCopy | None:  # fmt: skip
    """One store of the loop's body as a VectorCopy of its n elements, or None."""
    if not isinstance(store, S.BufferStore) or not isinstance(store.value, E.BufferLoad):
        return None
    load = store.value
    dst, src = store.buffer, load.buffer
    dtype = dst.dtype
    if src.dtype != dtype or dtype.is_packed or dtype.is_bool or dtype.bits not in (8, 16, 32):
        return None
    if n * dtype.bytes not in VECTOR_BYTES or dst is src:
        return None
    ana = Analyzer({loop.loop_var: (0, n - 1)})
    dst_offset = _run_start(dst, store.indices, loop.loop_var, n, ana, layouts, lets)
    src_offset = _run_start(src, load.indices, loop.loop_var, n, ana, layouts, lets)
    if dst_offset is None or src_offset is None:
        return None
    return VectorCopy(dst, dst_offset, src, src_offset, n * dtype.bytes, span=store.span or loop.span)


def _run_start(buf: Buffer, indices, v: E.Var, n: int, ana: Analyzer, layouts: dict[int, SharedLayout],
               lets: dict[E.Var, E.Expr]) -> E.Expr | None:  # fmt: skip
    """The element offset where the run `indices` address as `v` goes over 0..n-1 starts, when the run
    is contiguous in the row-major order of `buf` and starts on a multiple of n elements of a 16-byte
    aligned buffer; else None. In a shared tile with a swizzled layout (which moves whole 16-byte
    chunks, so an aligned run of at most 16 bytes stays one) the offset is the physical one, as
    apply-shared-layouts would address the run's first element."""
    shared = buf.scope in SHARED
    layout = layouts.get(id(buf)) if shared else None
    if not (buf.scope in ALIGNED_SCOPES or shared) or buf.strides or len(indices) != len(buf.shape):
        return None
    flat = _flat([_expand(i, lets) for i in indices], buf.shape, None)  # proofs in the indices' arithmetic
    start = substitute(flat, {v: E.const(0, v.dtype)})
    if not ana.can_prove_equal(E.sub(flat, start), v):
        return None
    if not ana.can_prove(E.compare(E.EQ, E.floormod(start, n), 0)):
        return None
    if len(indices) > 1 and not ana.can_prove(E.compare(E.EQ, E.floormod(buf.shape[-1], n), 0)):
        return None
    firsts = [ana.simplify(substitute(i, {v: E.const(0, v.dtype)})) for i in indices]
    if layout is None:
        return ana.simplify(_flat(firsts, buf.shape, "int64" if buf.scope == "global" else "int32"))
    return _physical(layout, firsts, [E.const_value(d) for d in buf.shape])


def _expand(e: E.Expr, lets: dict[E.Var, E.Expr]) -> E.Expr:
    """`e` with the enclosing lets' values in place of their names (repeatedly: lets of lets)."""
    for _ in range(8):
        if not any(v in lets for v in free_vars(e)):
            return e
        e = substitute(e, lets)
    return e


def _flat(indices, shape, wide: str | None) -> E.Expr:
    """The row-major element offset of `indices`, computed in `wide` (None: the indices' own type)."""
    offset: E.Expr = E.const(0, wide or indices[-1].dtype)
    stride: E.Expr = E.const(1, wide or indices[-1].dtype)
    for idx, dim in reversed(list(zip(indices, shape))):
        offset = E.add(offset, E.mul(E.cast(idx, wide) if wide else idx, stride))
        stride = E.mul(stride, E.cast(dim, wide) if wide else dim)
    return offset


def _physical(layout: SharedLayout, indices: list[E.Expr], dims: list[int]) -> E.Expr:
    """What apply-shared-layouts computes for the element at `indices` (tilecraft.transform.
    physical_layouts): the trailing 2-D tile through the layout, leading dims as whole tiles."""
    if len(dims) == 1:
        return layout.physical(indices[0])
    rows, cols = dims[-2:]
    tile = layout.physical_at(indices[-2], indices[-1], cols)
    lead: E.Expr = E.const(0)
    for idx, dim in zip(indices[:-2], dims[:-2]):
        lead = E.add(E.mul(lead, dim), idx)
    return E.add(E.mul(lead, rows * cols), tile) if len(dims) > 2 else tile


class _Vectorize(BufferKeepingMutator):
    def __init__(self, layouts: dict[int, SharedLayout]) -> None:
        super().__init__()
        self.layouts = layouts
        self.lets: dict[E.Var, E.Expr] = {}

    def mutate_LetStmt(self, s: S.LetStmt) -> S.Stmt:
        pure = not any(isinstance(n, E.BufferLoad) for n in walk(s.value))
        if pure:
            self.lets[s.var] = s.value
        try:
            return self.generic_mutate(s)
        finally:
            self.lets.pop(s.var, None)

    def mutate_For(self, s: S.For) -> S.Stmt:
        s = self.generic_mutate(s)
        return vector_copies(s, self.layouts, self.lets) or s


def _shared_layouts(body: S.Stmt) -> dict[int, SharedLayout]:
    return {id(n.buffer): n.layout for n in walk(body) if isinstance(n, S.AnnotateLayout)
            and isinstance(n.layout, SharedLayout)}  # fmt: skip


@module_pass("vectorize-loops")
def vectorize_loops(mod: IRModule, ctx) -> IRModule:
    """`T.vectorized` copies of contiguous, aligned runs -> one 4-, 8- or 16-byte access each."""
    return mod.with_functions(f.with_body(_Vectorize(_shared_layouts(f.body)).mutate(f.body)) for f in mod.functions)
