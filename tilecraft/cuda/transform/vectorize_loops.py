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
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith.analyzer import Analyzer
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import Mutator, free_vars, substitute

VECTOR_BYTES = (4, 8, 16)
# scopes whose buffers start on 16 bytes: kernel arguments and workspaces, per-thread arrays
ALIGNED_SCOPES = ("global", "local", "local.fragment")


def vector_copies(loop: S.For) -> S.Stmt | None:
    """The loop as one VectorCopy per store of its body, or None where that is not provably the same
    accesses. Several stores (a GEMV loading a run of A and one of B in one loop) are copied one after
    the other, which is the scalar loop's interleaving only where no store writes what another reads
    or writes."""
    n = E.const_value(loop.extent)
    if loop.kind is not S.ForKind.VECTORIZED or E.const_value(loop.min) != 0 or not isinstance(n, int):
        return None
    stores = list(loop.body.stmts) if isinstance(loop.body, S.SeqStmt) else [loop.body]
    copies = [_vector_copy(loop, store, n) for store in stores]
    if not copies or any(c is None for c in copies):
        return None
    written = [id(c.dst) for c in copies]
    if len(set(written)) != len(written) or set(written) & {id(c.src) for c in copies}:
        return None
    return S.seq(*copies)


def _vector_copy(loop: S.For, store: S.Stmt, n: int) -> VectorCopy | None:
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
    ana = Analyzer()
    dst_offset = _run_start(dst, store.indices, loop.loop_var, n, ana)
    src_offset = _run_start(src, load.indices, loop.loop_var, n, ana)
    if dst_offset is None or src_offset is None:
        return None
    return VectorCopy(dst, dst_offset, src, src_offset, n * dtype.bytes, span=store.span or loop.span)


def _run_start(buf: Buffer, indices, v: E.Var, n: int, ana: Analyzer) -> E.Expr | None:
    """The flat element offset of the run `indices` address as `v` goes over 0..n-1, when the run is
    contiguous and starts on a multiple of n elements of a 16-byte aligned buffer; else None."""
    if buf.scope not in ALIGNED_SCOPES or buf.strides or len(indices) != len(buf.shape):
        return None
    *outer, last = indices
    if any(x is v for i in outer for x in free_vars(i)):
        return None
    start = substitute(last, {v: E.const(0, v.dtype)})
    if not ana.can_prove_equal(E.sub(last, start), v):
        return None
    if not ana.can_prove(E.compare(E.EQ, E.floormod(start, n), 0)):
        return None
    if outer and not ana.can_prove(E.compare(E.EQ, E.floormod(buf.shape[-1], n), 0)):
        return None
    wide = "int64" if buf.scope == "global" else "int32"
    offset: E.Expr = E.const(0, wide)
    stride: E.Expr = E.const(1, wide)
    for idx, dim in reversed(list(zip((*outer, start), buf.shape))):
        offset = E.add(offset, E.mul(E.cast(idx, wide), stride))
        stride = E.mul(stride, E.cast(dim, wide))
    return ana.simplify(offset)


class _Vectorize(Mutator):
    def mutate_Buffer(self, buf):
        return buf

    def mutate_For(self, s: S.For) -> S.Stmt:
        s = self.generic_mutate(s)
        return vector_copies(s) or s


@module_pass("vectorize-loops")
def vectorize_loops(mod: IRModule, ctx) -> IRModule:
    """`T.vectorized` copies of contiguous, aligned runs -> one 4-, 8- or 16-byte access each."""
    return mod.with_functions(f.with_body(_Vectorize().mutate(f.body)) for f in mod.functions)
