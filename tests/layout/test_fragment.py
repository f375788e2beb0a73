"""Fragment layouts: the blocked default for any thread-group width, slices, expression fragments."""

from __future__ import annotations

import itertools

import pytest

import tilecraft.language as T
from tests.layout.bank_model import swizzled
from tilecraft.cuda.intrinsics.mma_layouts import mma_accumulator
from tilecraft.layout import LinearLayout
from tilecraft.layout.fragment import blocked, linear_from_layout, slice_layout, thread_dims

WARP = 32  # the width most tests use; the wave64 tests say 64


def points(layout: LinearLayout):
    """Every (register, lane, warp) of a fragment layout."""
    yield from itertools.product(*(range(layout.in_size(n)) for n in ("register", "lane", "warp")))


def coords(layout: LinearLayout, reg: int, lane: int, warp: int) -> tuple[int, int]:
    out = layout.apply(register=reg, lane=lane, warp=warp)
    return out["dim0"], out["dim1"]


# ---------------------------------------------------------------- blocked


def test_blocked_gives_each_thread_contiguous_vectors():
    """128 threads x 4 elements over a 16x64 tile: thread t's register r < 4 holds flat t * 4 + r."""
    layout = blocked((16, 64), 128, 4, width=WARP)
    assert layout.in_dims == (("register", 8), ("lane", 32), ("warp", 4))
    assert layout.is_bijective()
    assert layout.num_consecutive("register", "dim1") == 4
    for reg, lane, warp in points(layout):
        flat = (reg // 4) * 512 + (warp * 32 + lane) * 4 + reg % 4
        assert coords(layout, reg, lane, warp) == divmod(flat, 64)


def test_blocked_replicates_threads_beyond_a_small_tile():
    """A 4x4 tile with 4-wide vectors needs 4 threads; the other lane and all warp bits replicate."""
    layout = blocked((4, 4), 128, 4, width=WARP)
    assert layout.free_input_bits("lane") == (2, 3, 4)
    assert layout.free_input_bits("warp") == (0, 1)
    assert layout.in_size("register") == 4
    assert layout.is_surjective() and not layout.is_injective()


def test_blocked_pads_to_powers_of_two_and_caps_the_vector():
    layout = blocked((10, 3), 16, 8, width=WARP)
    assert layout.out_dims == (("dim0", 16), ("dim1", 4))
    assert layout.num_consecutive("register", "dim1") == 4
    assert layout.is_bijective()
    assert blocked((10, 3), 32, 8, width=WARP).free_input_bits("lane") == (4,)


def test_blocked_for_fewer_threads_than_a_warp():
    layout = blocked((8,), 4, 1, width=WARP)
    assert layout.in_dims == (("register", 2), ("lane", 4), ("warp", 1))
    flat = [layout.apply(register=r, lane=lane)["dim0"] for r in range(2) for lane in range(4)]
    assert flat == list(range(8))


def test_blocked_in_groups_of_64_puts_six_thread_bits_on_lanes():
    """A wave64 target: the same flat order over threads, named (lane, warp) = (t % 64, t / 64)."""
    layout = blocked((16, 64), 128, 4, width=64)
    assert layout.in_dims == (("register", 8), ("lane", 64), ("warp", 2))
    for reg, lane, warp in points(layout):
        flat = (reg // 4) * 512 + (warp * 64 + lane) * 4 + reg % 4
        assert coords(layout, reg, lane, warp) == divmod(flat, 64)


@pytest.mark.parametrize("threads, width, split", [(128, 32, (32, 4)), (128, 64, (64, 2)), (32, 64, (32, 1))])
def test_thread_dims_split_a_block_into_groups_of_the_width(threads, width, split):
    assert thread_dims(threads, width) == (("lane", split[0]), ("warp", split[1]))


def test_thread_dims_reject_a_width_that_is_not_a_power_of_two():
    with pytest.raises(ValueError, match="width must be a power of two, got 48"):
        thread_dims(128, 48)


# ---------------------------------------------------------------- slices


def test_slice_of_the_accumulator_is_a_replicated_row_vector():
    """Reducing over columns: rows keep their threads; lane bits 0-1 and warp bit 0 replicate; a
    thread keeps one register per row it held."""
    acc = mma_accumulator(32, 32, 2, 2)
    rows = slice_layout(acc, 1)
    assert rows.out_dims == (("dim0", 32),)
    assert (acc.in_size("register"), rows.in_size("register")) == (8, 2)
    assert rows.free_input_bits("lane") == (0, 1)
    assert rows.free_input_bits("warp") == (0,)
    assert rows.free_input_bits("register") == ()
    for lane, warp in itertools.product(range(32), range(4)):
        held = {acc.apply(register=r, lane=lane, warp=warp)["dim0"] for r in range(acc.in_size("register"))}
        kept = {rows.apply(register=r, lane=lane, warp=warp)["dim0"] for r in range(rows.in_size("register"))}
        assert held == kept


def test_slice_over_rows_renames_the_remaining_dim():
    cols = slice_layout(mma_accumulator(32, 32, 2, 2), "dim0")
    assert cols.out_names == ("dim0",)
    assert cols.free_input_bits("lane") == (2, 3, 4)


# ---------------------------------------------------------------- legacy fragments


def test_fragment_to_linear_turns_replicas_into_zero_bases():
    fragment = T.Fragment((32,), forward_thread_fn=lambda i, rep: i + rep * 32, replicate=4)
    layout = fragment.to_linear(WARP)
    assert layout.in_dims == (("register", 1), ("lane", 32), ("warp", 4))
    assert layout.free_input_bits("warp") == (0, 1)


def test_fragment_to_linear_splits_threads_by_the_width_it_is_given():
    """One T.Fragment over 128 threads is 4 groups of 32 lanes or 2 groups of 64: the same threads."""
    fragment = T.Fragment((128,), forward_thread_fn=lambda i: i)
    for width in (32, 64):
        layout = fragment.to_linear(width)
        assert layout.in_dims == (("register", 1), ("lane", width), ("warp", 128 // width))
        for lane, warp in itertools.product(range(width), range(128 // width)):
            assert layout.apply(lane=lane, warp=warp) == {"dim0": warp * width + lane}


def test_fragment_to_linear_rejects_nonlinear_maps():
    fragment = T.Fragment((8,), forward_thread_fn=lambda i: (i * 3) % 8)
    with pytest.raises(ValueError, match="not linear"):
        fragment.to_linear(WARP)
    with pytest.raises(ValueError, match="not a power of two"):
        T.Fragment((6,), forward_thread_fn=lambda i: i).to_linear(WARP)


def test_layout_to_linear_recovers_the_swizzle():
    layout = T.Layout((32, 32), lambda i, j: i * 32 + (j ^ ((i % 8) * 4)))
    linear = linear_from_layout(layout)
    assert layout.to_linear() == linear
    assert linear.rename_ins({"dim0": "row", "dim1": "col"}) == swizzled(32, 32, 4)
