"""Where a gemm's operand tiles live, decided from what the kernel does with them.

The header's kernel (`tc_matmul_*`, include/tc_cpu.h) broadcasts A's elements, so it reads A through any
strides, and streams B along n a vector at a time. Two rewrites follow from which ops touch a tile:

- `gemm-a-in-place`: an A tile that only one `T.copy` from a tensor writes and only one `T.gemm`
  after it (in the same statement sequence) reads needs no copy when the region lies inside the
  tensor: the gemm reads the tensor's region where it is, and the copy runs only for tiles that cross
  the tensor's edge (where it reads zeros past it).
- `gemm-b-panels`: a B tile that only `T.copy`s write and only `T.gemm`s read as B is stored as column
  panels one cache line wide (`PanelCopy`, `PanelGemm` in tilecraft/cpu/ir.py): the copy writes each
  row of a panel as one line, and the kernel's k loop reads a panel contiguously instead of a row of
  the tile per k.
- `gemm-live-rows`: where the A tile was copied across the tensor's last row (its rows past the edge
  are zeros), the gemm updates only the accumulator's rows inside the tensor, when the accumulator's
  other rows never reach memory (it is only filled, accumulated and copied into the tensor, whose copy
  drops the rows past the edge). Those rows would only have gained `0 * B` (NaN where B holds an
  infinity or NaN), and nothing reads them.

Both look only at the ops that read and write a tile, its shape and its dtype, never at how the
kernel text was written.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from contextlib import ExitStack

from tilecraft.backend.pipeline import module_pass
from tilecraft.cpu.ir import PanelCopy, PanelGemm
from tilecraft.cpu.target import gemm_panel_bytes
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.arith.analyzer import Analyzer
from tilecraft.ir.buffer import Buffer, BufferRegion, Range
from tilecraft.ir.function import IRModule
from tilecraft.ir.visitor import BufferKeepingMutator, Visitor, walk
from tilecraft.transform.tile_loops import conjunction, whole_region, whole_tile_conditions

ON_CHIP = ("shared", "shared.dyn", "local", "local.fragment")
COMPUTE_DTYPES = (dt.float32, dt.float64)  # the dtypes tc_matmul_* computes in


class _Uses(Visitor):
    """Every reference to each buffer, and the roles of those made by allocations, copies and gemms."""

    def __init__(self) -> None:
        self.refs: Counter[Buffer] = Counter()
        self.roles: defaultdict[Buffer, list[tuple[str, S.Stmt]]] = defaultdict(list)

    def visit_Buffer(self, buf: Buffer) -> None:
        self.refs[buf] += 1
        if buf.base is not None:
            self.visit(buf.base)

    def visit_Allocate(self, s: S.Allocate) -> None:
        self.roles[s.buffer].append(("alloc", s))
        self.generic_visit(s)

    def visit_Copy(self, s: S.Copy) -> None:
        self.roles[s.src.buffer].append(("copy-src", s))
        self.roles[s.dst.buffer].append(("copy-dst", s))
        self.generic_visit(s)

    def visit_Gemm(self, s: S.Gemm) -> None:
        for role, region in (("gemm-a", s.a), ("gemm-b", s.b), ("gemm-c", s.c)):
            self.roles[region.buffer].append((role, s))
        self.generic_visit(s)

    def visit_Fill(self, s: S.Fill) -> None:
        self.roles[s.dst.buffer].append(("fill", s))
        self.generic_visit(s)

    def visit_PanelCopy(self, s: PanelCopy) -> None:
        self.roles[s.src.buffer].append(("copy-src", s))
        self.roles[s.dst].append(("panel-dst", s))
        self.generic_visit(s)

    def visit_PanelGemm(self, s: PanelGemm) -> None:
        for role, buf in (("gemm-a", s.a.buffer), ("panel-b", s.b), ("gemm-c", s.c.buffer)):
            self.roles[buf].append((role, s))
        self.generic_visit(s)

    def only(self, buf: Buffer) -> list[tuple[str, S.Stmt]] | None:
        """The roles of `buf`'s references when allocations, copies and gemms make all of them."""
        roles = self.roles.get(buf, [])
        return roles if len(roles) == self.refs[buf] else None


def _uses(node) -> _Uses:
    uses = _Uses()
    uses.visit(node)
    return uses


def _static_shape(buf: Buffer) -> tuple[int, ...] | None:
    shape = tuple(E.const_value(d) for d in buf.shape)
    return shape if all(isinstance(d, int) for d in shape) else None


# ---------------------------------------------------------------------------------------- gemm-a-in-place


def _in_place_source(copy: S.Copy, tile: Buffer) -> bool:
    """The copy reads a compact tensor of the tile's dtype, over a region whose two trailing dims are the
    tile's (leading dims of extent 1), with bounds that no statement can change (no loads)."""
    src = copy.src
    buf = src.buffer
    shape = _static_shape(tile)
    if buf.scope != "global" or buf.base is not None or buf.strides or _static_shape(buf) is None:
        return False
    if buf.dtype != tile.dtype or shape is None or len(shape) != 2 or len(src.ranges) < 2:
        return False
    extents = [E.const_value(r.extent) for r in src.ranges]
    if any(e != 1 for e in extents[:-2]) or tuple(extents[-2:]) != shape:
        return False
    return not any(isinstance(n, E.BufferLoad) for r in src.ranges for n in walk(r.min))


def _sole_copy_into(tile: Buffer, uses: _Uses) -> S.Copy | None:
    """The one copy that writes the whole of a gemm's A `tile`, from a tensor it can be read in place of
    (`_in_place_source`), when nothing but that copy and the gemm touches the tile."""
    roles = uses.only(tile)
    if roles is None or sorted(r for r, _ in roles) != ["alloc", "copy-dst", "gemm-a"]:
        return None
    copy = next(s for r, s in roles if r == "copy-dst")
    if not whole_region(copy.dst) or not _in_place_source(copy, tile):
        return None
    return copy


def _a_tile(gemm: S.Gemm, uses: _Uses) -> tuple[Buffer, S.Copy] | None:
    """The on-chip A tile of `gemm` and the one copy that writes it, when nothing else touches the tile."""
    tile = gemm.a.buffer
    if tile.scope not in ON_CHIP or tile.dtype not in COMPUTE_DTYPES or not whole_region(gemm.a):
        return None
    copy = _sole_copy_into(tile, uses)
    return None if copy is None else (tile, copy)


def _reads_only(stmts: list[S.Stmt], buf: Buffer) -> bool:
    """The statements use `buf` only as the source of copies (so its elements do not change)."""
    uses = _uses(tuple(stmts))
    roles = uses.only(buf)
    return uses.refs[buf] == 0 or (roles is not None and all(r == "copy-src" for r, _ in roles))


class _AInPlace(BufferKeepingMutator):
    def __init__(self, uses: _Uses) -> None:
        super().__init__()
        self.uses = uses
        self.copy_free: set[Buffer] = set()  # tiles whose copy is gone: their allocation goes too
        # block indices and loop variables in scope, to drop edge tests that always hold
        self.ranges = Analyzer()

    def mutate_KernelLaunch(self, launch: S.KernelLaunch) -> S.Stmt:
        with ExitStack() as scope:
            for var, extent in zip(launch.block_vars, launch.grid):
                scope.enter_context(self.ranges.binding(var, Range(E.const(0, var.dtype), extent)))
            return self.generic_mutate(launch)

    def mutate_For(self, s: S.For) -> S.Stmt:
        with self.ranges.binding(s.loop_var, Range(s.min, s.extent)):
            return self.generic_mutate(s)

    def mutate_SeqStmt(self, seq: S.SeqStmt) -> S.Stmt:
        stmts = list(self.generic_mutate(seq).stmts)
        for j, gemm in enumerate(stmts):
            if isinstance(gemm, S.Gemm):
                self._rewrite(stmts, j)
        return S.seq(*stmts)

    def _rewrite(self, stmts: list[S.Stmt], j: int) -> None:
        gemm = stmts[j]
        found = _a_tile(gemm, self.uses)
        if found is None:
            return
        tile, copy = found
        i = next((i for i in range(j) if stmts[i] is copy), None)
        if i is None or not _reads_only(stmts[i + 1 : j], copy.src.buffer):
            return
        in_place = dataclasses.replace(gemm, a=copy.src)
        inside = conjunction([c for c in whole_tile_conditions(copy.src) if not self.ranges.can_prove(c)])
        if inside is None:
            stmts[i], stmts[j] = S.SeqStmt(()), in_place
            self.copy_free.add(tile)
            return
        stmts[i] = S.IfThenElse(E.logical_not(inside), copy, span=copy.span)
        stmts[j] = S.IfThenElse(inside, in_place, gemm, span=gemm.span)

    def mutate_Allocate(self, s: S.Allocate) -> S.Stmt:
        body = self.mutate(s.body)
        if s.buffer in self.copy_free:
            return body
        return s if body is s.body else S.Allocate(s.buffer, body, span=s.span)


@module_pass("gemm-a-in-place")
def gemm_a_in_place(mod: IRModule, ctx) -> IRModule:
    """A gemm reads an A tile inside its tensor where it lies, when only its copy writes the on-chip tile
    and only the gemm reads it; the copy runs for tiles that cross the tensor's edge."""
    out = []
    for func in mod.functions:
        out.append(func.with_body(_AInPlace(_uses(func.body)).mutate(func.body)))
    return mod.with_functions(out)


# ---------------------------------------------------------------------------------------- gemm-b-panels


def _panel_width(tile: Buffer, ctx) -> int | None:
    """Columns per panel of a B tile, when it can be stored as panels: a static 2-D tile of a compute
    dtype whose columns fill whole panels."""
    shape = _static_shape(tile)
    if tile.scope not in ON_CHIP or tile.dtype not in COMPUTE_DTYPES or shape is None or len(shape) != 2:
        return None
    width = gemm_panel_bytes(ctx.target) // tile.dtype.bytes
    rows, cols = shape
    return width if rows > 1 and cols % width == 0 else None


def _panel_roles_ok(tile: Buffer, roles: list[tuple[str, S.Stmt]]) -> bool:
    """Copies write the whole tile, gemms read it whole as an untransposed B of their compute dtype."""
    kinds = Counter(r for r, _ in roles)
    if set(kinds) != {"alloc", "copy-dst", "gemm-b"}:
        return False
    for role, s in roles:
        if role == "copy-dst" and not whole_region(s.dst):
            return False
        if role == "gemm-b" and (s.transpose_b or not whole_region(s.b) or _compute_dtype(s) != tile.dtype):
            return False
    return True


def _compute_dtype(gemm: S.Gemm) -> dt.DataType | None:
    """What tc_matmul_* computes a float gemm in (float64 for float64 A, else float32); None for integers."""
    if gemm.a.dtype.is_integer:
        return None
    return dt.float64 if gemm.a.dtype == dt.float64 else dt.float32


class _BPanels(BufferKeepingMutator):
    def __init__(self, panels: dict[Buffer, Buffer]) -> None:
        super().__init__()
        self.panels = panels

    def mutate_Allocate(self, s: S.Allocate) -> S.Stmt:
        body = self.mutate(s.body)
        buf = self.panels.get(s.buffer, s.buffer)
        return s if body is s.body and buf is s.buffer else S.Allocate(buf, body, span=s.span)

    def mutate_Copy(self, s: S.Copy) -> S.Stmt:
        panels = self.panels.get(s.dst.buffer)
        return s if panels is None else PanelCopy(s.src, panels, span=s.span)

    def mutate_Gemm(self, s: S.Gemm) -> S.Stmt:
        panels = self.panels.get(s.b.buffer)
        if panels is None:
            return s
        return PanelGemm(s.a, panels, s.c, s.transpose_a, s.clear_accum, span=s.span)


def _panel_buffer(tile: Buffer, width: int) -> Buffer:
    rows, cols = _static_shape(tile)
    shape = (E.const(cols // width), E.const(rows), E.const(width))
    return Buffer(tile.name, shape, tile.dtype, tile.scope)


@module_pass("gemm-b-panels")
def gemm_b_panels(mod: IRModule, ctx) -> IRModule:
    """A B tile that only copies write and only gemms read is stored as column panels one cache line wide:
    the copies write the panels, the gemms pass them to the kernel."""
    out = []
    for func in mod.functions:
        uses = _uses(func.body)
        panels = {}
        for buf in uses.refs:
            roles = uses.only(buf)
            width = _panel_width(buf, ctx) if roles is not None else None
            if width is not None and _panel_roles_ok(buf, roles):
                panels[buf] = _panel_buffer(buf, width)
        out.append(func.with_body(_BPanels(panels).mutate(func.body)) if panels else func)
    return mod.with_functions(out)


# ---------------------------------------------------------------------------------------- gemm-live-rows


def _a_tile_rows(gemm: PanelGemm, uses: _Uses) -> tuple[E.Expr, E.Expr, E.Expr] | None:
    """For a gemm on an on-chip A tile that only one copy from a tensor writes: the tensor's first row the
    copy reads, how many it reads, and the tensor's rows (past them the copy wrote zeros)."""
    tile = gemm.a.buffer
    if gemm.transpose_a or gemm.rows is not None or tile.scope not in ON_CHIP or not whole_region(gemm.a):
        return None
    copy = _sole_copy_into(tile, uses)
    if copy is None:
        return None
    rows = copy.src.ranges[-2]
    return rows.min, rows.extent, copy.src.buffer.shape[-2]


def _rows_never_stored(acc: BufferRegion, first: E.Expr, tensor_rows: E.Expr, uses: _Uses) -> bool:
    """Rows of the accumulator at or past `tensor_rows - first` reach no memory: it is only filled, copied
    into, accumulated by gemms (row i from row i) and copied whole into a tensor at row `first` whose
    rows end no later than `tensor_rows` (the copy skips the rows past its tensor's edge)."""
    buf = acc.buffer
    roles = uses.only(buf) if buf.scope in ON_CHIP and len(buf.shape) == 2 and whole_region(acc) else None
    if roles is None:
        return False
    facts = Analyzer()
    for role, s in roles:
        if role in ("alloc", "fill", "copy-dst", "gemm-c"):
            continue
        if role != "copy-src" or not isinstance(s, S.Copy) or not whole_region(s.src):
            return False
        dst = s.dst
        if dst.buffer.scope != "global" or len(dst.ranges) != 2 or dst.buffer.base is not None:
            return False
        if not facts.can_prove_equal(dst.ranges[0].min, first):
            return False
        if not facts.can_prove(E.compare(E.LE, dst.buffer.shape[0], tensor_rows)):
            return False
    return True


class _LiveRows(BufferKeepingMutator):
    def __init__(self, uses: _Uses) -> None:
        super().__init__()
        self.uses = uses

    def mutate_PanelGemm(self, s: PanelGemm) -> S.Stmt:
        found = _a_tile_rows(s, self.uses)
        if found is None or not _rows_never_stored(s.c, found[0], found[2], self.uses):
            return s
        first, extent, tensor_rows = found
        return dataclasses.replace(s, rows=E.min_(extent, E.sub(tensor_rows, first)))


@module_pass("gemm-live-rows")
def gemm_live_rows(mod: IRModule, ctx) -> IRModule:
    """A gemm on an A tile copied across the tensor's last row updates only the accumulator rows that
    can reach memory, when the accumulator's other rows are never stored."""
    return mod.with_functions(f.with_body(_LiveRows(_uses(f.body)).mutate(f.body)) for f in mod.functions)
