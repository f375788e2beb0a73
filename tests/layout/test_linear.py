"""The GF(2) linear-layout algebra: evaluation, IR expressions, composition and inversion."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tests.layout.bank_model import swizzled
from tilecraft.cuda.intrinsics.mma_layouts import mma_accumulator
from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir.eval import evaluate
from tilecraft.ir.structural import structural_hash
from tilecraft.layout import LinearLayout, identity, zeros
from tilecraft.layout.fragment import blocked

MMA_TILE = LinearLayout(
    {"register": [(0, 1), (8, 0)], "lane": [(0, 2), (0, 4), (1, 0), (2, 0), (4, 0)]}, {"row": 16, "col": 8}
)


def inputs_of(layout: LinearLayout):
    """Every input point of `layout` as a dict."""
    names = layout.in_names
    for values in itertools.product(*(range(size) for _, size in layout.in_dims)):
        yield dict(zip(names, values))


def outputs_of(layout: LinearLayout):
    names = layout.out_names
    for values in itertools.product(*(range(size) for _, size in layout.out_dims)):
        yield dict(zip(names, values))


@st.composite
def layouts(draw, max_in_dims: int = 3, max_out_dims: int = 2, max_bits: int = 3) -> LinearLayout:
    """Random small layouts: up to 3 input and 2 output dims of up to 8 values each."""
    out_dims = [
        (f"o{k}", 1 << draw(st.integers(0, max_bits))) for k in range(draw(st.integers(1, max_out_dims)))
    ]
    bases = {}
    for k in range(draw(st.integers(1, max_in_dims))):
        bits = draw(st.integers(0, max_bits))
        bases[f"i{k}"] = [tuple(draw(st.integers(0, size - 1)) for _, size in out_dims) for _ in range(bits)]
    return LinearLayout(bases, out_dims)


@st.composite
def square_layouts(draw) -> LinearLayout:
    """Random layouts with as many input bits as output bits (bijective about 30% of the time)."""
    out_bits = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(1, 2)))]
    total = sum(out_bits)
    split = sorted(draw(st.lists(st.integers(0, total), min_size=1, max_size=2)))
    counts = [b - a for a, b in zip([0, *split], [*split, total])]
    out_dims = [(f"o{k}", 1 << b) for k, b in enumerate(out_bits)]
    bases = {
        f"i{k}": [tuple(draw(st.integers(0, (1 << b) - 1)) for b in out_bits) for _ in range(n)]
        for k, n in enumerate(counts)
    }
    return LinearLayout(bases, out_dims)


# ---------------------------------------------------------------- construction and evaluation


def test_input_sizes_come_from_the_number_of_bases():
    """An input dim has 2 ** (number of its bases) values."""
    assert MMA_TILE.in_dims == (("register", 4), ("lane", 32))
    assert MMA_TILE.out_dims == (("row", 16), ("col", 8))
    assert MMA_TILE.basis("lane", 2) == {"row": 1, "col": 0}


@pytest.mark.parametrize(
    "bases, outs, message",
    [
        ({"a": [(1, 0)]}, {"x": 2}, "needs 1 coordinates"),
        ({"a": [(2,)]}, {"x": 2}, "outside"),
        ({"a": [(1,)]}, {"x": 3}, "not a power of two"),
        ([("a", []), ("a", [])], {"x": 2}, "unique"),
    ],
)
def test_invalid_layouts_are_rejected(bases, outs, message):
    with pytest.raises(ValueError, match=message):
        LinearLayout(bases, outs)


def test_apply_xors_the_bases_of_the_set_bits():
    """lane 5 = bits 0 and 2: col 2 xor row 1; register 3 adds col 1 and row 8."""
    assert MMA_TILE.apply(register=0, lane=5) == {"row": 1, "col": 2}
    assert MMA_TILE.apply(register=3, lane=5) == {"row": 9, "col": 3}


def test_apply_checks_names_and_ranges():
    with pytest.raises(KeyError, match="missing"):
        MMA_TILE.apply(lane=1)
    with pytest.raises(KeyError, match="unknown"):
        MMA_TILE.apply(lane=1, register=0, warp=0)
    with pytest.raises(ValueError, match="outside"):
        MMA_TILE.apply(lane=32, register=0)


def test_size_one_inputs_may_be_omitted():
    layout = mma_accumulator(16, 8, 1, 1)
    assert layout.in_size("warp") == 1
    assert layout.apply(register=1, lane=4) == {"dim0": 1, "dim1": 1}


# ---------------------------------------------------------------- IR expressions


def _vars(layout: LinearLayout) -> dict[str, E.Var]:
    return {name: E.Var(dt.int32, name) for name in layout.in_names}


def assert_expr_matches_apply(layout: LinearLayout) -> None:
    variables = _vars(layout)
    exprs = layout.apply_expr(**variables)
    for point in inputs_of(layout):
        env = {variables[name]: value for name, value in point.items()}
        got = {name: evaluate(expr, env) for name, expr in exprs.items()}
        assert got == layout.apply(**point), (point, {k: str(v) for k, v in exprs.items()})


@pytest.mark.parametrize(
    "layout",
    [
        MMA_TILE,
        mma_accumulator(32, 32, 2, 2),
        blocked((8, 16), 32, 4, width=32),
        swizzled(16, 64, 2),
        swizzled(8, 32, 2),
        LinearLayout({"a": [(3,), (6,), (5,)]}, {"x": 8}),
        zeros("a", 4, {"x": 2}) * identity("b", 4, "x"),
    ],
    ids=["mma-tile", "mma-2x2", "blocked", "swizzle-128B", "swizzle-64B", "dense-xor", "replicated"],
)
def test_apply_expr_evaluates_like_apply(layout):
    """The IR expressions give apply's result on every input point."""
    assert_expr_matches_apply(layout)


@settings(max_examples=60, deadline=None)
@given(layouts())
def test_apply_expr_evaluates_like_apply_on_random_layouts(layout):
    assert_expr_matches_apply(layout)


def test_disjoint_bit_runs_become_shift_and_add():
    """Bases that move bits to distinct output bits need no XOR: `((lane >> 2) & 7) * 2`."""
    layout = LinearLayout({"lane": [(0,), (0,), (2,), (4,), (8,), (0,)]}, {"col": 16})
    lane = E.Var(dt.int32, "lane")
    col = layout.apply_expr(lane=lane)["col"]
    assert str(col) == "(lane >> 2 & 7) * 2"
    exprs = MMA_TILE.apply_expr(**_vars(MMA_TILE))
    assert all("^" not in str(e) for e in exprs.values())


def test_overlapping_bases_use_xor_only_where_they_overlap():
    """The swizzle XORs the row's low bits into the chunk bits and adds the row offset."""
    layout = swizzled(64, 64, 2)
    offset = layout.apply_expr(**_vars(layout))["offset"]
    assert str(offset).count("^") == 1
    assert str(offset).endswith("+ row * 64")


def test_apply_expr_of_an_unfed_output_is_zero():
    layout = zeros("lane", 4, {"x": 4})
    assert evaluate(layout.apply_expr(lane=E.Var(dt.int32, "lane"))["x"], {}) == 0


# ---------------------------------------------------------------- algebra


def test_compose_applies_the_inner_layout_first():
    """`outer.compose(inner)(x) == outer(inner(x))`, with inner's outputs feeding by name."""
    inner = blocked((8, 16), 32, 4, width=32)
    outer = LinearLayout({"dim0": [(16,), (32,), (64,)], "dim1": [(1,), (2,), (4,), (8,)]}, {"offset": 128})
    composed = outer.compose(inner)
    assert composed.in_dims == inner.in_dims and composed.out_dims == outer.out_dims
    for point in inputs_of(inner):
        assert composed.apply(**point) == outer.apply(**inner.apply(**point))


def test_compose_rejects_missing_or_smaller_dims():
    with pytest.raises(ValueError, match="not an input dim"):
        identity("a", 4, "x").compose(identity("b", 4, "y"))
    with pytest.raises(ValueError, match="at least as large"):
        identity("x", 2, "z").compose(identity("b", 4, "x"))


@settings(max_examples=40, deadline=None)
@given(layouts(max_out_dims=2), st.data())
def test_compose_matches_pointwise_composition(outer, data):
    inner_outs = list(outer.in_dims)
    bases = {
        "t": [
            tuple(data.draw(st.integers(0, s - 1)) for _, s in inner_outs)
            for _ in range(data.draw(st.integers(0, 3)))
        ]
    }
    inner = LinearLayout(bases, inner_outs)
    composed = outer.compose(inner)
    for point in inputs_of(inner):
        assert composed.apply(**point) == outer.apply(**inner.apply(**point))


def test_product_tiles_shared_output_dims():
    """register then lane along one dim: col = lane * 4 + register."""
    layout = identity("register", 4, "col") * identity("lane", 8, "col")
    assert layout.out_dims == (("col", 32),)
    for r, lane in itertools.product(range(4), range(8)):
        assert layout.apply(register=r, lane=lane) == {"col": lane * 4 + r}


def test_product_concatenates_shared_input_dims():
    """self's bits come first: register bit 0 -> a, register bit 1 -> b."""
    layout = identity("register", 2, "a") * identity("register", 2, "b")
    assert layout.in_dims == (("register", 4),)
    assert layout.apply(register=2) == {"a": 0, "b": 1}


def test_product_of_disjoint_layouts_joins_dims():
    layout = identity("lane", 32, "x") * zeros("warp", 4)
    assert layout.in_dims == (("lane", 32), ("warp", 4))
    assert layout.free_input_bits("warp") == (0, 1)


def test_transpose_outs_and_ins_permute_dims():
    t = MMA_TILE.transpose_outs(["col", "row"]).transpose_ins(["lane", "register"])
    assert t.out_names == ("col", "row") and t.in_names == ("lane", "register")
    for point in inputs_of(MMA_TILE):
        assert t.apply(**point) == MMA_TILE.apply(**point)
    with pytest.raises(ValueError, match="permutation"):
        MMA_TILE.transpose_outs(["row"])


def test_reshape_outs_flattens_row_major():
    flat = MMA_TILE.reshape_outs([("flat", 128)])
    for point in inputs_of(MMA_TILE):
        out = MMA_TILE.apply(**point)
        assert flat.apply(**point) == {"flat": out["row"] * 8 + out["col"]}
    assert flat.reshape_outs(MMA_TILE.out_dims) == MMA_TILE


def test_reshape_ins_flattens_row_major():
    """("warp", "lane") flattened row-major is the thread index warp * 32 + lane."""
    layout = mma_accumulator(32, 32, 2, 2)
    threads = layout.transpose_ins(["register", "warp", "lane"]).reshape_ins(
        [("register", 8), ("thread", 128)]
    )
    for point in inputs_of(layout):
        thread = point["warp"] * 32 + point["lane"]
        assert threads.apply(register=point["register"], thread=thread) == layout.apply(**point)
    with pytest.raises(ValueError, match="cannot reshape"):
        layout.reshape_ins([("x", 8)])


def test_sublayout_and_renames():
    sub = MMA_TILE.sublayout(["lane"], ["col"])
    assert sub.in_dims == (("lane", 32),) and sub.out_dims == (("col", 8),)
    assert sub.apply(lane=7) == {"col": 6}
    renamed = MMA_TILE.rename_ins({"lane": "l"}).rename_outs({"row": "r"})
    assert renamed.in_names == ("register", "l") and renamed.out_names == ("r", "col")


def test_project_turns_bits_that_fed_the_dropped_dim_into_replication():
    """Dropping the columns of an mma tile: lane bits 0-1 and register bit 0 only moved along them."""
    rows = MMA_TILE.project(["col"])
    assert rows.out_dims == (("row", 16),)
    assert rows.free_input_bits("lane") == (0, 1)
    assert rows.free_input_bits("register") == (0,)
    assert rows.remove_zero_bases("register").in_dims == (("register", 2), ("lane", 32))


def test_input_bits_feeding_names_the_shuffle_lanes():
    """A row reduction of the 2x2-warp accumulator shuffles over lane bits 0-1 (xor 1, 2) and
    combines warp bit 0 (the warps side by side) through shared memory."""
    acc = mma_accumulator(32, 32, 2, 2)
    assert acc.input_bits_feeding("lane", "dim1") == (0, 1)
    assert acc.input_bits_feeding("lane", "dim0") == (2, 3, 4)
    assert acc.input_bits_feeding("warp", "dim1") == (0,)
    assert acc.input_bits_feeding("warp", "dim0") == (1,)
    assert acc.input_bits_feeding("register", "dim1") == (0, 2)


def test_num_consecutive_measures_vector_width():
    assert blocked((16, 64), 128, 8, width=32).num_consecutive("register", "dim1") == 8
    assert MMA_TILE.num_consecutive("register", "col") == 2
    assert MMA_TILE.num_consecutive("lane", "col") == 1


# ---------------------------------------------------------------- inversion


def test_injective_and_surjective():
    assert MMA_TILE.is_injective() and MMA_TILE.is_surjective()
    replicated = MMA_TILE.project(["col"])
    assert replicated.is_surjective() and not replicated.is_injective()
    padded = identity("lane", 4, "x").reshape_outs([("x", 4)]) * zeros("r", 1, {"y": 2})
    assert padded.is_injective() and not padded.is_surjective()


@pytest.mark.parametrize(
    "layout",
    [MMA_TILE, mma_accumulator(64, 32, 2, 2), blocked((16, 32), 128, 4, width=32), swizzled(32, 64, 2)],
)
def test_invert_round_trips(layout):
    """inverse after layout is the identity on inputs, layout after inverse the identity on outputs."""
    inverse = layout.invert()
    assert inverse.in_dims == layout.out_dims and inverse.out_dims == layout.in_dims
    for point in inputs_of(layout):
        assert inverse.apply(**layout.apply(**point)) == point
    assert inverse.compose(layout) == _identity_on(layout.in_dims)
    assert layout.compose(inverse) == _identity_on(layout.out_dims)


def _identity_on(dims) -> LinearLayout:
    result = LinearLayout({}, {})
    for name, size in dims:
        result = result * identity(name, size)
    return result


@settings(max_examples=80, deadline=None)
@given(square_layouts())
def test_invert_round_trips_on_random_bijections(layout):
    assume(layout.is_bijective())
    inverse = layout.invert()
    assert inverse.compose(layout) == _identity_on(layout.in_dims)
    assert layout.compose(inverse) == _identity_on(layout.out_dims)


def test_invert_rejects_non_bijective_layouts():
    with pytest.raises(ValueError, match="not bijective"):
        MMA_TILE.project(["col"]).invert()


@settings(max_examples=80, deadline=None)
@given(layouts())
def test_pseudo_invert_is_a_right_inverse_on_the_image(layout):
    """For every reachable output y: layout(pseudo(y)) == y."""
    pseudo = layout.pseudo_invert()
    for point in inputs_of(layout):
        y = layout.apply(**point)
        assert layout.apply(**pseudo.apply(**y)) == y


def test_pseudo_invert_picks_the_replica_with_free_bits_clear():
    """A row vector replicated over lane bits 0-1 maps each row back to the lane with those bits 0."""
    rows = MMA_TILE.project(["col"])
    pseudo = rows.pseudo_invert()
    for row in range(16):
        owner = pseudo.apply(row=row)
        assert owner["lane"] & 3 == 0 and owner["register"] & 1 == 0
        assert rows.apply(**owner) == {"row": row}


def test_pseudo_invert_of_an_injective_layout_is_a_left_inverse():
    layout = identity("lane", 8, "x") * zeros("r", 1, {"y": 4})
    pseudo = layout.pseudo_invert()
    for point in inputs_of(layout):
        assert pseudo.apply(**layout.apply(**point)) == point


def test_invert_and_compose_converts_between_layouts_of_one_tensor():
    """For each (register, lane, warp) of the accumulator, the blocked layout's owner of the same element."""
    acc = mma_accumulator(32, 32, 2, 2)
    dst = blocked((32, 32), 128, 4, width=32)
    conversion = acc.invert_and_compose(dst)
    assert conversion.in_dims == acc.in_dims and conversion.out_dims == dst.in_dims
    for point in inputs_of(acc):
        assert dst.apply(**conversion.apply(**point)) == acc.apply(**point)


# ---------------------------------------------------------------- identity and printing


def test_equal_layouts_compare_and_hash_equal():
    again = LinearLayout(dict(MMA_TILE.bases), dict(MMA_TILE.out_dims))
    assert again == MMA_TILE and hash(again) == hash(MMA_TILE)
    assert again.structural_key() == MMA_TILE.structural_key()
    assert structural_hash(again) == structural_hash(MMA_TILE)
    transposed = MMA_TILE.transpose_outs(["col", "row"])
    assert transposed != MMA_TILE
    assert len({MMA_TILE, again, MMA_TILE.project(["col"])}) == 2


@pytest.mark.parametrize("layout", [MMA_TILE, swizzled(8, 16, 4), zeros("a", 2), LinearLayout({}, {})])
def test_repr_evaluates_back_to_the_layout(layout):
    assert eval(repr(layout), {"LinearLayout": LinearLayout}) == layout


def test_identity_and_zeros():
    assert [identity("a", 8, "x").apply(a=v) for v in range(8)] == [{"x": v} for v in range(8)]
    assert zeros("a", 4, {"x": 2}).apply(a=3) == {"x": 0}
    with pytest.raises(ValueError, match="power of two"):
        identity("a", 6)


def test_layouts_are_immutable():
    with pytest.raises(AttributeError, match="immutable"):
        MMA_TILE._bases = ()  # type: ignore[misc]
