"""Tile layouts of a fragment wider than a T.Parallel nest over its leading part, and of such a nest."""

from __future__ import annotations

import itertools

from tilecraft.backend.simt import SimtTarget
from tilecraft.layout.tile import blocked_layout, covers, register_map, widen, within

GROUPS = SimtTarget(width=32, max_threads=1024, vector_bytes=16)


def holders(layout, threads):
    """{element: {(thread, register)}} of every unmasked position of a 1-D or 2-D tile layout."""
    out = {}
    for tid, reg in itertools.product(range(threads), range(layout.num_registers)):
        coords = layout.linear.apply(register=reg, lane=tid % GROUPS.width, warp=tid // GROUPS.width)
        element = tuple(coords[f"dim{d}"] for d in range(len(layout.shape)))
        if all(c < s for c, s in zip(element, layout.shape)):
            out.setdefault(element, set()).add((tid, reg))
    return out


def test_covers_is_a_strict_leading_part():
    assert covers((128,), (64,)) and covers((64, 32), (48, 32))
    assert not covers((64,), (64,)) and not covers((64,), (128,)) and not covers((64, 32), (64,))


def test_widen_keeps_the_part_in_place_and_adds_registers_of_the_same_threads():
    part = blocked_layout((64,), 128, GROUPS)  # 64 elements over 128 threads: two replicas
    wide = widen(part, (100,))
    held, old = holders(wide, 128), holders(part, 128)
    assert set(held) == {(e,) for e in range(100)}
    for element, places in old.items():
        assert places <= held[element]  # every replica still holds its element in the same register
    threads_of = {e: {t for t, _ in p} for e, p in held.items()}
    assert all(threads_of[(e + 64,)] == threads_of[(e,)] for e in range(36))


def test_a_nest_within_a_wider_fragment_reads_its_own_registers():
    frag = blocked_layout((128, 16), 128, GROUPS)
    nest = within(frag, (96, 16))
    assert set(holders(nest, 128)) == set(itertools.product(range(96), range(16)))
    mapping = register_map(nest, [0, 1], frag)
    assert mapping is not None
    for reg, tid in itertools.product(range(nest.num_registers), range(128)):
        assert (
            mapping.apply(register=reg, lane=tid % GROUPS.width, warp=tid // GROUPS.width)["register"] == reg
        )
