"""TileLang's `TensorCoreIntrinEmitter` (tilelang.cuda.intrinsics.macro.mma_macro_generator) for tilecraft.

Constructed with TileLang's arguments, it has TileLang's attributes (`micro_size_x/y/k`, `warp_rows`,
`warp_cols`, `local_size_a/b/out`, `mma_prefix`, the dtype abbreviations, `threads`), and its methods
take TileLang's arguments:

- `ldmatrix_a(A_local, A_shared, ki, rk=0)` / `ldmatrix_b(B_local, B_shared, ki, rk=0)`: the K step `ki`
  (of `micro_size_k` columns, after `rk * chunk`) of the block's A (block_M rows) or B (block_N rows)
  operand, from a shared buffer or a region of one (its start in the last two dims is the tile's origin);
- `mma(A_local, B_local, C_local)`: C += A @ B^T over that step, for the whole block;
- `stmatrix(C_local, C_buf)` into a 2-D buffer or TileLang's 4-D `(M // 16, N // n, 16, n)` shared
  layout, or `stmatrix(C_local, C, pid_m, pid_n)` into the block's tile of a global matrix.

TileLang's versions write per-thread code (ldmatrix, mma.sync and stores of each thread's registers in
`T.alloc_local` arrays); these write the tile operations the block's threads perform together
(tilecraft.compat.intrinsics.lifting), so the same kernel computes the same result on every tilecraft
target, and CUDA lowers the gemm to mma.sync (sm_80) or wgmma (sm_90a). The `T.alloc_local` arrays
passed in hold the block's tiles instead of one thread's registers, and are only used through these
methods and `T.clear`.
"""

from __future__ import annotations

import dataclasses

from tilecraft.compat.intrinsics import lifting
from tilecraft.compat.intrinsics._refusing import REASONS, refusing, unprovided
from tilecraft.compat.intrinsics.layout.utils import mma_store_index_map, mma_store_index_map_fp64
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer, BufferRegion, Range
from tilecraft.language import builder as B

__all__ = ["TensorCoreIntrinEmitter"]

_ABBREVIATIONS = {
    "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64", "int4": "int4",
    "int8": "int8", "uint8": "uint8", "int32": "int32", "float8_e4m3": "e4m3", "float8_e4m3fn": "e4m3",
    "float8_e4m3fnuz": "e4m3", "float8_e5m2": "e5m2", "float8_e5m2fnuz": "e5m2", "float6_e2m3fn": "e2m3",
    "float6_e3m2fn": "e3m2", "float4_e2m1fn": "e2m1",
}  # fmt: skip
_PREFIXES = {4: "m8n8k4", 8: "m16n8k8", 16: "m16n8k16", 32: "m16n8k32", 64: "m16n8k64", 128: "m16n8k128",
             256: "m16n8k256"}  # fmt: skip
_SHARED = ("shared", "shared.dyn")


class TensorCoreIntrinEmitter:
    """TileLang's MMA macro emitter, writing tile operations (module docstring)."""

    M_DIM = 16
    n_dim = 16
    WARP_SIZE = 32
    dtype_abbrv = dict(_ABBREVIATIONS)
    is_m_first = False
    warp_rows = 1
    warp_cols = 1

    def __init__(
        self,
        a_dtype="float16",
        b_dtype="float16",
        accum_dtype="float16",
        a_transposed: bool = False,
        b_transposed: bool = False,
        block_row_warps: int = 2,
        block_col_warps: int = 2,
        warp_row_tiles: int = 8,
        warp_col_tiles: int = 8,
        chunk: int = 16,
        reduce_k: int = 1,
        num_elems_per_byte: int = 1,
        is_m_first: bool | None = False,
        thread_var=None,
    ):
        self.a_dtype, self.b_dtype, self.accum_dtype = (
            dt.as_dtype(d) for d in (a_dtype, b_dtype, accum_dtype)
        )
        self.a_transposed, self.b_transposed = bool(a_transposed), bool(b_transposed)
        self.block_row_warps, self.block_col_warps = int(block_row_warps), int(block_col_warps)
        self.warp_row_tiles, self.warp_col_tiles = int(warp_row_tiles), int(warp_col_tiles)
        self.chunk = int(chunk)
        self.k_dim = min(256 // self.a_dtype.bits, self.chunk)
        if self.a_dtype.bits == 64:
            self.M_DIM = 8
        self._micro_sizes(self.M_DIM, self.k_dim)
        self.local_size_a = self.M_DIM * self.k_dim // self.WARP_SIZE
        self.local_size_b = self.n_dim * self.k_dim // self.WARP_SIZE
        self.local_size_out = self.M_DIM * self.n_dim // self.WARP_SIZE
        self.a_dtype_abbrv, self.b_dtype_abbrv, self.accum_dtype_abbrv = (
            self._get_dtype_abbrv(d) for d in (self.a_dtype, self.b_dtype, self.accum_dtype)
        )
        for side, dtype in (("a", self.a_dtype), ("b", self.b_dtype)):
            if dtype == dt.float32 and self.accum_dtype == dt.float32:
                setattr(self, f"{side}_dtype_abbrv", "tf32")
        if self.k_dim not in _PREFIXES:
            raise ValueError(f"Unsupported k_dim {self.k_dim}")
        self.mma_prefix = _PREFIXES[self.k_dim]
        if is_m_first is not None:
            self.is_m_first = bool(is_m_first)
        if reduce_k != 1:
            raise unprovided(
                "TensorCoreIntrinEmitter(reduce_k=...)",
                "split-K over thread groups (reduce_k > 1) reduces per-thread partial tiles by thread index, "
                "which tilecraft's tile-level emitter does not write; split K with T.gemm on separate blocks",
            )
        if num_elems_per_byte != 1:
            raise unprovided(
                "TensorCoreIntrinEmitter(num_elems_per_byte=...)",
                REASONS["TensorCoreIntrinEmitterWithLadderTransform"],
            )
        self.reduce_k = 1
        self.num_elems_per_byte = 1
        self.threads = self.WARP_SIZE * self.block_row_warps * self.block_col_warps
        self.thread_var = thread_var
        if self.warp_rows == 0 or self.warp_cols == 0:
            raise ValueError(
                f"Invalid threads configuration for this tile shape, {self.warp_rows} x {self.warp_cols} "
                f"with threads {self.threads}"
            )

    def _micro_sizes(self, m_dim: int, k_dim: int) -> None:
        if k_dim == 4:
            self.n_dim = self.micro_size_y = 8
            self.warp_rows, self.warp_cols = self.warp_row_tiles // m_dim, self.warp_col_tiles // 8
        else:
            for what, value, step in (("warp_row_tiles", self.warp_row_tiles, 16), ("warp_col_tiles", self.warp_col_tiles, 8)):  # fmt: skip
                if value < step or value % step:
                    raise ValueError(f"{what} must be a positive multiple of {step}, got {value}")
            self.warp_rows = self.warp_row_tiles // m_dim
            self.n_dim = self.micro_size_y = 16 if self.warp_col_tiles % 16 == 0 else 8
            self.warp_cols = self.warp_col_tiles // self.n_dim
        self.micro_size_x = m_dim
        self.micro_size_k = k_dim

    def _get_dtype_abbrv(self, dtype) -> str:
        if dtype not in self.dtype_abbrv:
            raise ValueError(f"Unsupported dtype: {dtype}")
        return self.dtype_abbrv[dtype]

    # ---------------------------------------------------------------- sizes of the block's tiles

    @property
    def block_M(self) -> int:  # noqa: N802 - TileLang's name for the block tile
        return self.block_row_warps * self.warp_row_tiles

    @property
    def block_N(self) -> int:  # noqa: N802
        return self.block_col_warps * self.warp_col_tiles

    @property
    def mma_num_inst_m(self) -> int:
        return self.warp_rows

    @property
    def mma_num_inst_n(self) -> int:
        return self.warp_cols

    # ---------------------------------------------------------------- TileLang's thread helpers

    def get_thread_binding(self):
        """The thread index the macros would use (`thread_var`, else the kernel's threadIdx.x)."""
        if self.thread_var is not None:
            return self.thread_var
        return (
            B.current("TensorCoreIntrinEmitter.get_thread_binding")
            .kernel("get_thread_binding")
            .thread_vars[0]
        )

    def extract_thread_binding(self, thread_id, is_m_first: bool | None = None):
        """(lane, warp_n, warp_m) of `thread_id`, as TileLang's macros split it."""
        m_first = self.is_m_first if is_m_first is None else is_m_first
        lane, warp = thread_id % self.WARP_SIZE, thread_id // self.WARP_SIZE
        if m_first:
            return lane, warp % self.block_col_warps, (warp // self.block_col_warps) % self.block_row_warps
        return lane, (warp // self.block_row_warps) % self.block_col_warps, warp % self.block_row_warps

    def _use_fp64_store_index_map(self) -> bool:
        return self.accum_dtype.bits == 64 or self.local_size_out == 2

    def store_index_map(self):
        """TileLang's (lane, register) -> (row, col) map of the accumulator of one mma tile."""
        return mma_store_index_map_fp64 if self._use_fp64_store_index_map() else mma_store_index_map

    # ---------------------------------------------------------------- the macros, as tile operations

    def ldmatrix_a(self, A_local_buf, A_shared_buf, ki, rk=0):  # noqa: N803 - TileLang's names
        """Load the K step `ki` of the block's A operand into the tile `A_local_buf` stands for."""
        return self._load("A", A_local_buf, A_shared_buf, ki, rk)

    def ldmatrix_b(self, B_local_buf, B_shared_buf, ki, rk=0):  # noqa: N803
        """Load the K step `ki` of the block's B operand into the tile `B_local_buf` stands for."""
        return self._load("B", B_local_buf, B_shared_buf, ki, rk)

    def mma(self, A_local_buf, B_local_buf, C_local_buf, k_inner=0):  # noqa: N803
        """C += A @ B^T over the loaded K step, for the block's whole tile."""
        if not (isinstance(k_inner, int) and k_inner == 0):
            raise self._error("mma(..., k_inner=...) indexes K steps kept in fragment buffers, which the "
                              "tile-level emitter does not keep; load each step and call mma(A, B, C)")  # fmt: skip
        state = self._state()
        a = self._tile(state, "A", A_local_buf, require_loaded=True)
        b = self._tile(state, "B", B_local_buf, require_loaded=True)
        c = self._tile(state, "C", C_local_buf)
        gemm = S.Gemm(
            a.full_region(), b.full_region(), c.full_region(), transpose_b=True, span=B.current_span()
        )
        state.mmas[id(gemm)] = lifting.Mma(a, b, c)
        return gemm

    def mma_atom(self, *args, **kwargs):
        raise unprovided("TensorCoreIntrinEmitter.mma_atom")

    def stmatrix(self, C_local_buf, C_buf, pid_m=None, pid_n=None):  # noqa: N803
        """Store the block's accumulator tile into `C_buf`: a 2-D buffer at its origin, TileLang's 4-D
        (M // micro_x, N // micro_y, micro_x, micro_y) layout, or with `pid_m` and `pid_n` the block's
        tile of a global matrix."""
        state = self._state()
        c = self._tile(state, "C", C_local_buf)
        whole = C_buf.full_region() if isinstance(C_buf, Buffer) else None
        region = C_buf if isinstance(C_buf, BufferRegion) else whole
        if region is None:
            raise self._error(f"stmatrix stores into a buffer or a region of one, got {type(C_buf).__name__}")
        target = region.buffer
        global_tile = pid_m is not None and pid_n is not None
        if target.ndim not in (2, 4) or (global_tile and target.ndim != 2):
            raise self._error(f"stmatrix stores into a 2-D buffer or TileLang's 4-D tile layout, {target.name} "
                              f"has {target.ndim} dims")  # fmt: skip
        i, j = E.Var(dt.int32, "i"), E.Var(dt.int32, "j")
        if global_tile:
            index = (E.add(E.mul(pid_m, self.block_M), i), E.add(E.mul(pid_n, self.block_N), j))
        elif target.ndim == 4:
            mx, my = self.micro_size_x, self.micro_size_y
            index = (E.floordiv(i, mx), E.floordiv(j, my), E.floormod(i, mx), E.floormod(j, my))
        else:
            index = (i, j)
        index = tuple(_plus(r.min, x) for r, x in zip(region.ranges, index))  # a region starts at its origin
        store = S.BufferStore(target, E.cast(c[i, j], target.dtype), index)
        return _with_span(_parallel((i, self.block_M), (j, self.block_N), store))

    def make_mma_load_layout(self, local_buf, matrix="A"):
        raise unprovided("TensorCoreIntrinEmitter.make_mma_load_layout")

    def make_mma_store_layout(self, local_buf):
        raise unprovided("TensorCoreIntrinEmitter.make_mma_store_layout")

    def get_store_index_map(self, inverse: bool = False):
        raise unprovided("TensorCoreIntrinEmitter.get_store_index_map")

    # ---------------------------------------------------------------- helpers

    def _load(self, role: str, local, shared, ki, rk) -> S.Stmt:
        state = self._state()
        tile = self._tile(state, role, local)
        region = _region(shared)
        if region is None or region.buffer.ndim < 2:
            raise self._error(f"ldmatrix_{role.lower()} reads a shared buffer (or a region of one) of at least 2 "
                              f"dims, got {shared!r}")  # fmt: skip
        source = region.buffer
        if source.scope not in _SHARED:
            raise self._error(
                f"ldmatrix_{role.lower()} reads shared memory; {source.name} is in {source.scope}"
            )
        lead = tuple(r.min for r in region.ranges[:-2])
        base = (region.ranges[-2].min, region.ranges[-1].min)
        # A (M, K) unless a_transposed; B (N, K) when b_transposed, else (K, N)
        k_major = not self.a_transposed if role == "A" else self.b_transposed
        rows = self.block_M if role == "A" else self.block_N
        k_step = self.micro_size_k
        k_offset = _plus(E.mul(E.convert(rk), self.chunk))
        start = _plus(k_offset, E.mul(E.convert(ki), k_step))
        r, k = E.Var(dt.int32, "r"), E.Var(dt.int32, "k")
        rows_at, k_at = _plus(base[0 if k_major else 1], r), _plus(base[1 if k_major else 0], start, k)
        index = (rows_at, k_at) if k_major else (k_at, rows_at)
        load = E.cast(source[(*lead, *index)], tile.dtype)
        stmt = _parallel((r, rows), (k, k_step), S.BufferStore(tile, load, (r, k)))
        stmt = _with_span(stmt)
        state.loads[id(stmt)] = lifting.Load(
            tile, source, lead, base, k_offset, E.convert(ki), k_step, rows, k_major
        )
        return stmt

    def _tile(self, state: lifting.LiftState, role: str, local, require_loaded: bool = False) -> Buffer:
        """The block tile that the program's array `local` stands for (made on its first use)."""
        if not isinstance(local, Buffer):
            raise self._error(
                f"the {role} operand must be the T.alloc_local array, got {type(local).__name__}"
            )
        shape = {"A": (self.block_M, self.micro_size_k), "B": (self.block_N, self.micro_size_k),
                 "C": (self.block_M, self.block_N)}[role]  # fmt: skip
        lifted = state.tile_of(local)
        if lifted is not None:
            if lifted.role != role:
                raise self._error(
                    f"{local.name} holds the {lifted.role} tile; it cannot also be the {role} operand"
                )
            held = tuple(E.const_value(d) for d in lifted.tile.shape)
            if held != shape:
                raise self._error(
                    f"{local.name} holds a {held} {role} tile of another emitter; this one's is {shape}"
                )
            return lifted.tile
        if require_loaded:
            raise self._error(f"mma reads {local.name} before any ldmatrix_{role.lower()} loaded it")
        dtype = {"A": self.a_dtype, "B": self.b_dtype, "C": self.accum_dtype}[role]
        per_thread = {"A": self.warp_rows * self.local_size_a, "B": self.warp_cols * self.local_size_b,
                      "C": self.warp_rows * self.warp_cols * self.local_size_out}[role]  # fmt: skip
        size = [E.const_value(d) for d in local.shape]
        if local.scope != "local" or len(size) != 1 or not isinstance(size[0], int) or size[0] < per_thread:
            raise self._error(
                f"the {role} operand {local.name} must be a per-thread T.alloc_local array of at least "
                f"{per_thread} elements (TileLang's {'warp_rows * local_size_a' if role == 'A' else 'warp_cols * local_size_b' if role == 'B' else 'warp_rows * warp_cols * local_size_out'}), "
                f"got a {local.scope} buffer of shape {tuple(local.shape)}"
            )  # fmt: skip
        if local.dtype != dtype:
            raise self._error(
                f"the {role} operand {local.name} is {local.dtype}; the emitter was made for {dtype}"
            )
        self._check_threads()
        scope = "local.fragment" if role == "C" else "shared.dyn"
        return state.lift(local, Buffer(local.name, tuple(E.const(d) for d in shape), dtype, scope), role)

    def _check_threads(self) -> None:
        extents = B.current("TensorCoreIntrinEmitter").kernel("TensorCoreIntrinEmitter").thread_extents
        threads = 1
        for n in extents:
            threads *= int(n)
        if threads < self.threads:
            raise self._error(
                f"the emitter's {self.block_row_warps} x {self.block_col_warps} warps need {self.threads} threads; "
                f"the kernel has {threads} (TileLang would leave part of the tile uncomputed)"
            )

    def _state(self) -> lifting.LiftState:
        return lifting.state(B.current("TensorCoreIntrinEmitter"))

    def _error(self, message: str) -> Exception:
        return B.error(message, 'docs/compat.md, section "TVM", describes the emitters')


def _region(obj) -> BufferRegion | None:
    """TileLang's `_legalize_to_buffer_region`: a buffer is its whole region; an element is where the
    region starts."""
    if isinstance(obj, BufferRegion):
        return obj
    if isinstance(obj, Buffer):
        return obj.full_region()
    if isinstance(obj, E.BufferLoad):
        return BufferRegion(obj.buffer, tuple(Range(i, E.const(1)) for i in obj.indices))
    return None


def _plus(*terms) -> E.Expr:
    """The sum of `terms`, leaving out constant zeros (the printed kernel stays readable)."""
    kept = [E.convert(t) for t in terms if E.const_value(t) != 0]
    total = kept[0] if kept else E.const(0)
    for term in kept[1:]:
        total = E.add(total, term)
    return total


def _parallel(*loops_and_body) -> S.Stmt:
    *loops, body = loops_and_body
    for var, extent in reversed(loops):
        body = S.For(var, E.const(0), E.const(extent), S.ForKind.PARALLEL, body)
    return body


def _with_span(stmt: S.Stmt) -> S.Stmt:
    """The statement with the span of the call being parsed (so the parser emits this very object)."""
    span = B.current_span()
    return stmt if span is None else dataclasses.replace(stmt, span=span)


__getattr__ = refusing("tilelang.cuda.intrinsics.macro.mma_macro_generator")
