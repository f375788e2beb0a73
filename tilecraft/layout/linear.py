"""Linear layouts: maps between named power-of-two index spaces that are linear over GF(2).

A `LinearLayout` maps a point of its *input* space (named dims such as ``register``, ``lane``, ``warp``
for a fragment, or ``row``, ``col`` for a shared tile) to a point of its *output* space (the logical
tensor dims, or a memory ``offset``). Every dim has a power-of-two size. The map is given by one basis
vector per input bit: the output of an input point is the XOR of the basis vectors of its set bits,

    out(x) = XOR over every input dim d and bit i with x[d] >> i & 1 of bases[d][i]

so the whole layout is a 0/1 matrix and inversion, composition, projection and replication questions
are linear algebra over GF(2). See docs/layouts.md for the model.

Flattening is row-major throughout: when several dims are viewed as one index (`reshape_outs`,
`reshape_ins`), the last dim varies fastest.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tilecraft.ir import expr as E
from tilecraft.ir.nodes import ir_value

Dims = tuple[tuple[str, int], ...]
Vector = tuple[int, ...]
Bases = tuple[tuple[str, tuple[Vector, ...]], ...]

__all__ = ["LinearLayout", "identity", "is_power_of_two", "log2", "zeros"]


def is_power_of_two(n: int) -> bool:
    """Whether `n` is 1, 2, 4, 8, ..."""
    return n >= 1 and n & (n - 1) == 0


def log2(n: int) -> int:
    """The exponent of the power of two `n`."""
    return n.bit_length() - 1


def next_power_of_two(n: int) -> int:
    """The smallest power of two >= `n` (1 for n <= 1): the padded size of a dim of extent `n`."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def _as_pairs(items: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> tuple[tuple[str, Any], ...]:
    pairs = tuple(items.items()) if isinstance(items, Mapping) else tuple((k, v) for k, v in items)
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names):
        raise ValueError(f"dimension names must be unique, got {names}")
    return pairs


@ir_value
class LinearLayout:
    """An immutable linear map over GF(2) from named input dims to named output dims.

    `LinearLayout({"lane": [(0, 1), (1, 0)]}, {"row": 2, "col": 2})` maps lane bit 0 to column 1 and
    lane bit 1 to row 1: lane 3 -> (row 1, col 1). Each input dim's size is 2 ** (number of its bases);
    each basis vector holds one coordinate per output dim, in `out_dims` order.
    """

    __slots__ = ("_bases", "_columns", "_hash", "_in_dims", "_out_dims")
    _in_dims: Dims
    _out_dims: Dims
    _bases: Bases
    _columns: tuple[int, ...]
    _hash: int

    def __init__(
        self,
        bases: Mapping[str, Sequence[Sequence[int]]] | Iterable[tuple[str, Sequence[Sequence[int]]]],
        out_dims: Mapping[str, int] | Iterable[tuple[str, int]],
    ) -> None:
        outs = tuple((str(name), int(size)) for name, size in _as_pairs(out_dims))
        base_pairs = _as_pairs(bases)
        checked = tuple(
            (str(name), tuple(_check_vector(v, outs, name) for v in vs)) for name, vs in base_pairs
        )
        for name, size in outs:
            if not is_power_of_two(size):
                raise ValueError(f"output dim {name!r} has size {size}, which is not a power of two")
        init = object.__setattr__
        init(self, "_out_dims", outs)
        init(self, "_in_dims", tuple((name, 1 << len(vs)) for name, vs in checked))
        init(self, "_bases", checked)
        init(self, "_columns", tuple(self._pack_out(v) for _, vs in checked for v in vs))
        init(self, "_hash", hash(self.structural_key()))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"LinearLayout is immutable; cannot set {name!r}")

    # ------------------------------------------------------------------ shape queries

    @property
    def in_dims(self) -> Dims:
        """The input dims as `(name, size)` pairs, in order."""
        return self._in_dims

    @property
    def out_dims(self) -> Dims:
        """The output dims as `(name, size)` pairs, in order."""
        return self._out_dims

    @property
    def bases(self) -> Bases:
        """For each input dim, `(name, vectors)`: one output vector per bit, lowest bit first."""
        return self._bases

    @property
    def in_names(self) -> tuple[str, ...]:
        """The input dim names, in order."""
        return tuple(name for name, _ in self._in_dims)

    @property
    def out_names(self) -> tuple[str, ...]:
        """The output dim names, in order."""
        return tuple(name for name, _ in self._out_dims)

    def in_size(self, name: str) -> int:
        """The size of input dim `name`."""
        return dict(self._in_dims)[self._require_in(name)]

    def out_size(self, name: str) -> int:
        """The size of output dim `name`."""
        return dict(self._out_dims)[self._require_out(name)]

    def in_bits(self, name: str) -> int:
        """log2 of the size of input dim `name`: its number of bases."""
        return log2(self.in_size(name))

    def out_bits(self, name: str) -> int:
        """log2 of the size of output dim `name`."""
        return log2(self.out_size(name))

    @property
    def total_in_size(self) -> int:
        """The number of input points (the product of the input sizes)."""
        return 1 << len(self._columns)

    @property
    def total_out_size(self) -> int:
        """The number of output points (the product of the output sizes)."""
        return 1 << self._total_out_bits()

    def basis(self, in_dim: str, bit: int) -> dict[str, int]:
        """The output point that bit `bit` of input dim `in_dim` contributes."""
        return dict(zip(self.out_names, self._vectors(in_dim)[bit]))

    def _vectors(self, in_dim: str) -> tuple[Vector, ...]:
        return dict(self._bases)[self._require_in(in_dim)]

    def _require_in(self, name: str) -> str:
        if name not in self.in_names:
            raise KeyError(f"no input dim {name!r}; input dims: {', '.join(self.in_names) or '(none)'}")
        return name

    def _require_out(self, name: str) -> str:
        if name not in self.out_names:
            raise KeyError(f"no output dim {name!r}; output dims: {', '.join(self.out_names) or '(none)'}")
        return name

    # ------------------------------------------------------------------ flat encodings

    def _total_out_bits(self) -> int:
        return sum(log2(size) for _, size in self._out_dims)

    def _pack_out(self, vector: Sequence[int]) -> int:
        """The row-major flat output index of `vector` (the last output dim in the low bits)."""
        flat = 0
        for (_, size), coord in zip(self._out_dims, vector):
            flat = flat * size + coord
        return flat

    def _unpack_out(self, flat: int) -> Vector:
        return _unpack(flat, self._out_dims)

    def _column_dims(self) -> list[tuple[str, int]]:
        """`(in_dim, bit)` of every input bit, in the order of `_columns`."""
        return [(name, bit) for name, vs in self._bases for bit in range(len(vs))]

    def _columns_to_inputs(self, mask: int) -> Vector:
        """The input point whose set bits are the columns set in `mask`."""
        coords = dict.fromkeys(self.in_names, 0)
        for index, (name, bit) in enumerate(self._column_dims()):
            if mask >> index & 1:
                coords[name] |= 1 << bit
        return tuple(coords.values())

    # ------------------------------------------------------------------ evaluation

    def apply(self, **inputs: int) -> dict[str, int]:
        """The output point of an input point given by name: `layout.apply(lane=5, warp=1)`.

        Input dims of size 1 may be omitted; every other input dim is required and must be in range.
        """
        self._check_input_names(inputs)
        flat, first = 0, 0
        for name, vectors in self._bases:
            value = int(inputs.get(name, 0))
            if not 0 <= value < 1 << len(vectors):
                raise ValueError(f"input {name}={value} is outside [0, {1 << len(vectors)})")
            flat ^= _xor_columns(value, self._columns[first : first + len(vectors)])
            first += len(vectors)
        return dict(zip(self.out_names, self._unpack_out(flat)))

    def _check_input_names(self, inputs: Mapping[str, object]) -> None:
        unknown = [name for name in inputs if name not in self.in_names]
        if unknown:
            raise KeyError(f"unknown input dims {unknown}; input dims: {', '.join(self.in_names)}")
        missing = [name for name, vs in self._bases if vs and name not in inputs]
        if missing:
            raise KeyError(f"missing values for input dims {missing}")

    def apply_expr(self, **inputs: E.Expr | int) -> dict[str, E.Expr]:
        """IR index expressions of the output dims in terms of input expressions.

        Bits that move as a contiguous run become `((x >> i) & mask) * 2**o`; runs landing on disjoint
        output bits are added, and only runs that really overlap are combined with `bitwise_xor`. The
        input expressions are assumed to lie in their dim's range (the top bits of a dim are not masked).
        """
        self._check_input_names(inputs)
        values = {name: E.convert(value) for name, value in inputs.items()}
        return {name: self._out_expr(k, values) for k, (name, _) in enumerate(self._out_dims)}

    def _out_expr(self, out_index: int, values: Mapping[str, E.Expr]) -> E.Expr:
        runs = [run for name, vectors in self._bases for run in _bit_runs(name, vectors, out_index)]
        groups = _overlap_groups(runs)
        exprs = [
            _xor_exprs([run.expr(values[run.in_dim], self.in_bits(run.in_dim)) for run in g]) for g in groups
        ]
        if not exprs:
            return E.const(0, next(iter(values.values())).dtype if values else "int32")
        total = exprs[0]
        for term in exprs[1:]:
            total = E.add(total, term)
        return total

    # ------------------------------------------------------------------ structure

    def ir_fields(self) -> dict[str, Any]:
        """The constructor's arguments, for printed IR (tilecraft.ir.nodes)."""
        return {"bases": dict(self._bases), "out_dims": dict(self._out_dims)}

    def structural_key(self) -> tuple:
        """A hashable key: equal keys mean equal layouts (used by the IR's structural hash)."""
        return ("LinearLayout", self._in_dims, self._out_dims, self._bases)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LinearLayout):
            return NotImplemented
        return self.structural_key() == other.structural_key()

    def __hash__(self) -> int:
        return self._hash

    def __repr__(self) -> str:
        bases = ", ".join(f"{name!r}: [{', '.join(_vector_str(v) for v in vs)}]" for name, vs in self._bases)
        outs = ", ".join(f"{name!r}: {size}" for name, size in self._out_dims)
        return f"LinearLayout({{{bases}}}, {{{outs}}})"

    # ------------------------------------------------------------------ algebra

    def compose(self, inner: LinearLayout) -> LinearLayout:
        """`self` after `inner`: inner's output dims feed self's input dims of the same name.

        The result has inner's input dims and self's output dims. Every output dim of `inner` must be
        an input dim of `self` at least as large; self's other input dims are held at zero.
        """
        for name, size in inner.out_dims:
            if name not in self.in_names or self.in_size(name) < size:
                raise ValueError(
                    f"cannot compose: inner output dim {name!r} (size {size}) is not an input dim of the "
                    f"outer layout at least as large; outer input dims: {list(self.in_dims)}"
                )
        bases = [(name, [self._apply_vector(inner, v) for v in vs]) for name, vs in inner.bases]
        return LinearLayout(bases, self._out_dims)

    def _apply_vector(self, inner: LinearLayout, vector: Vector) -> Vector:
        inputs = dict.fromkeys(self.in_names, 0)
        inputs.update(zip(inner.out_names, vector))
        return tuple(self.apply(**inputs).values())

    def __mul__(self, other: LinearLayout) -> LinearLayout:
        """The product: dims only one side has are joined; a dim both have is concatenated.

        For a shared input dim, `self`'s bits are the low ones and `other`'s follow. For a shared output
        dim, its size is the product and `other`'s coordinates are scaled by `self`'s size, so
        `identity("register", 4, "col") * identity("lane", 8, "col")` tiles 8 lanes of 4 columns each.
        """
        if not isinstance(other, LinearLayout):
            return NotImplemented
        outs = _joined_dims(self.out_dims, other.out_dims)
        out_names = [name for name, _ in outs]
        scale = {name: (self.out_size(name) if name in self.out_names else 1) for name in out_names}

        def lift(layout: LinearLayout, vector: Vector, scaled: bool) -> Vector:
            coords = dict(zip(layout.out_names, vector))
            return tuple(coords.get(name, 0) * (scale[name] if scaled else 1) for name in out_names)

        ins = _joined_dims(self.in_dims, other.in_dims)
        bases = []
        for name, _ in ins:
            low = [lift(self, v, False) for v in (self._vectors(name) if name in self.in_names else ())]
            high = [lift(other, v, True) for v in (other._vectors(name) if name in other.in_names else ())]
            bases.append((name, low + high))
        return LinearLayout(bases, outs)

    def transpose_outs(self, order: Sequence[str]) -> LinearLayout:
        """The same map with the output dims listed in `order` (a permutation of their names)."""
        _check_permutation(order, self.out_names, "output")
        index = [self.out_names.index(name) for name in order]
        bases = [(name, [tuple(v[i] for i in index) for v in vs]) for name, vs in self._bases]
        return LinearLayout(bases, [(name, self.out_size(name)) for name in order])

    def transpose_ins(self, order: Sequence[str]) -> LinearLayout:
        """The same map with the input dims listed in `order` (a permutation of their names)."""
        _check_permutation(order, self.in_names, "input")
        return LinearLayout([(name, self._vectors(name)) for name in order], self._out_dims)

    def reshape_outs(self, new_dims: Mapping[str, int] | Iterable[tuple[str, int]]) -> LinearLayout:
        """The output space flattened row-major and split again into `new_dims` (same total size)."""
        new = tuple(_as_pairs(new_dims))
        _check_same_total(new, self._out_dims, "output")
        bases = [(name, [_unpack(self._pack_out(v), new) for v in vs]) for name, vs in self._bases]
        return LinearLayout(bases, new)

    def reshape_ins(self, new_dims: Mapping[str, int] | Iterable[tuple[str, int]]) -> LinearLayout:
        """The input space flattened row-major and split again into `new_dims` (same total size)."""
        new = tuple(_as_pairs(new_dims))
        _check_same_total(new, self._in_dims, "input")
        for name, size in new:
            if not is_power_of_two(size):
                raise ValueError(f"input dim {name!r} has size {size}, which is not a power of two")
        flat = [v for _, vs in reversed(self._bases) for v in vs]
        bases = []
        for name, size in reversed(new):
            bits = log2(size)
            bases.append((name, flat[:bits]))
            flat = flat[bits:]
        return LinearLayout(list(reversed(bases)), self._out_dims)

    def rename_ins(self, mapping: Mapping[str, str]) -> LinearLayout:
        """The same layout with input dims renamed by `mapping` (names not in it stay)."""
        return LinearLayout([(mapping.get(name, name), vs) for name, vs in self._bases], self._out_dims)

    def rename_outs(self, mapping: Mapping[str, str]) -> LinearLayout:
        """The same layout with output dims renamed by `mapping` (names not in it stay)."""
        return LinearLayout(self._bases, [(mapping.get(name, name), size) for name, size in self._out_dims])

    def sublayout(self, ins: Iterable[str], outs: Iterable[str]) -> LinearLayout:
        """The restriction to input dims `ins` (others held at zero) and output dims `outs` (others
        dropped); dims keep this layout's order."""
        ins, outs = set(ins), set(outs)
        for name in ins:
            self._require_in(name)
        for name in outs:
            self._require_out(name)
        keep = [k for k, name in enumerate(self.out_names) if name in outs]
        bases = [(name, [tuple(v[k] for k in keep) for v in vs]) for name, vs in self._bases if name in ins]
        return LinearLayout(bases, [self._out_dims[k] for k in keep])

    def project(self, drop: Iterable[str]) -> LinearLayout:
        """The layout with output dims `drop` removed.

        This is what a reduction does to a fragment: input bits that only fed the dropped dims get zero
        bases, so the inputs that differed only in them now hold the same element (replication).
        """
        drop = set(drop)
        for name in drop:
            self._require_out(name)
        return self.sublayout(self.in_names, [name for name in self.out_names if name not in drop])

    def remove_zero_bases(self, in_dim: str) -> LinearLayout:
        """The layout with the zero (replicated) bits of `in_dim` removed, shrinking that dim."""
        self._require_in(in_dim)
        bases = [(name, [v for v in vs if any(v)] if name == in_dim else vs) for name, vs in self._bases]
        return LinearLayout(bases, self._out_dims)

    # ------------------------------------------------------------------ linear algebra

    def rank(self) -> int:
        """The dimension of the image: log2 of the number of distinct outputs."""
        return len(_echelon(self._columns))

    def is_injective(self) -> bool:
        """Whether distinct inputs always give distinct outputs (no replication)."""
        return self.rank() == len(self._columns)

    def is_surjective(self) -> bool:
        """Whether every output point is the image of some input point."""
        return self.rank() == self._total_out_bits()

    def is_bijective(self) -> bool:
        """Whether the layout is injective and surjective, so `invert()` exists."""
        return self.is_injective() and self.is_surjective()

    def invert(self) -> LinearLayout:
        """The inverse map (output dims become input dims); the layout must be bijective."""
        if not self.is_bijective():
            raise ValueError(
                f"layout is not bijective (rank {self.rank()}, {len(self._columns)} input bits, "
                f"{self._total_out_bits()} output bits); use pseudo_invert()\n{self!r}"
            )
        return self.pseudo_invert()

    def pseudo_invert(self) -> LinearLayout:
        """A linear map `P` from the output space back to the input space with `self(P(y)) == y` for
        every `y` in the image.

        Among the inputs that reach an output, it picks the one built from the earliest input bits
        (input dims in order, low bits first); zero (replicated) bits are never used, so e.g. a
        replicated fragment's element is mapped to the replica with those lane/warp bits clear. Output
        bits outside the image are ignored (mapped to zero).
        """
        pivots = _echelon(self._columns)
        bits = self._total_out_bits()
        vectors = [self._columns_to_inputs(_solve(pivots, 1 << b)) for b in range(bits)]
        bases = []
        for name, size in reversed(self._out_dims):
            count = log2(size)
            bases.append((name, vectors[:count]))
            vectors = vectors[count:]
        return LinearLayout(list(reversed(bases)), self._in_dims)

    def invert_and_compose(self, other: LinearLayout) -> LinearLayout:
        """`other.pseudo_invert().compose(self)`: for each input of `self`, an input of `other` that
        reaches the same output point, so that `other(result(x)) == self(x)` whenever self's image lies
        in other's image. This converts between two layouts of one tensor (which register of which
        thread of `other` holds the element that `self`'s register x holds)."""
        return other.pseudo_invert().compose(self)

    def free_input_bits(self, in_dim: str) -> tuple[int, ...]:
        """The bits of `in_dim` whose basis is zero: inputs differing only there hold the same point."""
        return tuple(bit for bit, v in enumerate(self._vectors(in_dim)) if not any(v))

    def input_bits_feeding(self, in_dim: str, out_dim: str) -> tuple[int, ...]:
        """The bits of `in_dim` whose basis moves along `out_dim`.

        For a fragment, `input_bits_feeding("lane", "dim1")` are the lane bits a reduction over dim1
        must combine with warp shuffles (XOR masks `1 << bit`); the same on "warp" says which warps must
        exchange through shared memory, and on "register" which locals a thread reduces by itself.
        """
        k = self.out_names.index(self._require_out(out_dim))
        return tuple(bit for bit, v in enumerate(self._vectors(in_dim)) if v[k])

    def num_consecutive(self, in_dim: str, out_dim: str) -> int:
        """How many consecutive values of `in_dim` (from 0) map to consecutive values of `out_dim` with
        every other output fixed: the widest vector access along `out_dim`."""
        k = self.out_names.index(self._require_out(out_dim))
        run = 0
        for bit, v in enumerate(self._vectors(in_dim)):
            if v[k] != 1 << bit or any(c for i, c in enumerate(v) if i != k):
                break
            run += 1
        return 1 << run


# ---------------------------------------------------------------- constructors


def identity(name: str, size: int, out_name: str | None = None) -> LinearLayout:
    """The identity from input dim `name` to output dim `out_name` (default: the same name)."""
    if not is_power_of_two(size):
        raise ValueError(f"size {size} of {name!r} is not a power of two")
    return LinearLayout({name: [(1 << b,) for b in range(log2(size))]}, {out_name or name: size})


def zeros(name: str, size: int, out_dims: Mapping[str, int] | Iterable[tuple[str, int]] = ()) -> LinearLayout:
    """Input dim `name` of `size` mapping everything to the origin of `out_dims` (a broadcast)."""
    if not is_power_of_two(size):
        raise ValueError(f"size {size} of {name!r} is not a power of two")
    outs = _as_pairs(out_dims)
    return LinearLayout({name: [(0,) * len(outs)] * log2(size)}, outs)


# ---------------------------------------------------------------- helpers


def _check_vector(vector: Sequence[int], outs: Dims, in_name: str) -> Vector:
    vector = tuple(int(c) for c in vector)
    if len(vector) != len(outs):
        raise ValueError(f"basis {vector} of input dim {in_name!r} needs {len(outs)} coordinates ({outs})")
    for coord, (name, size) in zip(vector, outs):
        if not 0 <= coord < size:
            raise ValueError(
                f"basis {vector} of input dim {in_name!r}: {name}={coord} is outside [0, {size})"
            )
    return vector


def _unpack(flat: int, dims: Dims) -> Vector:
    coords = []
    for _, size in reversed(dims):
        coords.append(flat % size)
        flat //= size
    return tuple(reversed(coords))


def _xor_columns(value: int, columns: Sequence[int]) -> int:
    flat = 0
    for bit, column in enumerate(columns):
        if value >> bit & 1:
            flat ^= column
    return flat


def _vector_str(v: Vector) -> str:
    return f"({v[0]},)" if len(v) == 1 else f"({', '.join(map(str, v))})"


def _joined_dims(a: Dims, b: Dims) -> Dims:
    sizes = dict(a)
    for name, size in b:
        sizes[name] = sizes.get(name, 1) * size
    return tuple(sizes.items())


def _check_permutation(order: Sequence[str], names: tuple[str, ...], kind: str) -> None:
    if sorted(order) != sorted(names):
        raise ValueError(f"{list(order)} is not a permutation of the {kind} dims {list(names)}")


def _check_same_total(new: Dims, old: Dims, kind: str) -> None:
    def total(dims: Dims) -> int:
        result = 1
        for _, size in dims:
            result *= size
        return result

    if total(new) != total(old):
        raise ValueError(f"cannot reshape {kind} dims {list(old)} (size {total(old)}) to {list(new)}")


def _echelon(columns: Sequence[int]) -> dict[int, tuple[int, int]]:
    """Gaussian elimination over GF(2): leading bit -> (vector, mask of the columns it combines)."""
    pivots: dict[int, tuple[int, int]] = {}
    for index, vector in enumerate(columns):
        combo = 1 << index
        while vector:
            lead = vector.bit_length() - 1
            if lead not in pivots:
                pivots[lead] = (vector, combo)
                break
            pivot, pivot_combo = pivots[lead]
            vector ^= pivot
            combo ^= pivot_combo
    return pivots


def _solve(pivots: Mapping[int, tuple[int, int]], target: int) -> int:
    """A mask of columns whose XOR is `target`, dropping the part outside their span.

    Each step clears the current top bit with a fixed vector whose leading bit it is, so the result
    is a linear function of `target`.
    """
    combo = 0
    while target:
        lead = target.bit_length() - 1
        if lead in pivots:
            vector, pivot_combo = pivots[lead]
            target ^= vector
            combo ^= pivot_combo
        else:
            target ^= 1 << lead
    return combo


class _Run:
    """Input bits `in_lo .. in_lo+length-1` of `in_dim` landing on output bits `out_lo ..` of one
    output dim."""

    __slots__ = ("in_dim", "in_lo", "length", "out_lo")

    def __init__(self, in_dim: str, in_lo: int, length: int, out_lo: int) -> None:
        self.in_dim, self.in_lo, self.length, self.out_lo = in_dim, in_lo, length, out_lo

    @property
    def out_mask(self) -> int:
        return ((1 << self.length) - 1) << self.out_lo

    def expr(self, value: E.Expr, in_bits: int) -> E.Expr:
        """`((value >> in_lo) & mask) * 2**out_lo`, leaving out the steps that do nothing."""
        term = value
        if self.in_lo:
            term = E.int_call("shift_right", term, self.in_lo)
        if self.in_lo + self.length < in_bits:
            term = E.int_call("bitwise_and", term, (1 << self.length) - 1)
        if self.out_lo:
            term = E.mul(term, 1 << self.out_lo)
        return term


def _bit_runs(in_dim: str, vectors: Sequence[Vector], out_index: int) -> list[_Run]:
    """The maximal runs of consecutive input bits that shift by one amount into output dim `out_index`."""
    pairs = sorted(
        (out_bit - in_bit, in_bit)
        for in_bit, v in enumerate(vectors)
        for out_bit in range(v[out_index].bit_length())
        if v[out_index] >> out_bit & 1
    )
    runs: list[_Run] = []
    for shift, in_bit in pairs:
        last = runs[-1] if runs else None
        if last and last.out_lo - last.in_lo == shift and last.in_lo + last.length == in_bit:
            last.length += 1
        else:
            runs.append(_Run(in_dim, in_bit, 1, in_bit + shift))
    return runs


def _overlap_groups(runs: list[_Run]) -> list[list[_Run]]:
    """Runs grouped so that runs sharing an output bit (directly or through others) are together."""
    groups: list[tuple[int, list[_Run]]] = []
    for run in runs:
        mask, members = run.out_mask, [run]
        rest = []
        for group_mask, group in groups:
            if group_mask & mask:
                mask |= group_mask
                members = group + members
            else:
                rest.append((group_mask, group))
        groups = [*rest, (mask, members)]
    return [members for _, members in sorted(groups, key=lambda g: g[0] & -g[0])]


def _xor_exprs(terms: list[E.Expr]) -> E.Expr:
    total = terms[0]
    for term in terms[1:]:
        total = E.int_call("bitwise_xor", total, term)
    return total


LinearLayout.identity = staticmethod(identity)  # type: ignore[attr-defined]
LinearLayout.zeros = staticmethod(zeros)  # type: ignore[attr-defined]
