"""Fragment pictures: a valid PNG whose pixels depend on the layout."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from tilecraft.cuda.intrinsics.mma_layouts import mma_accumulator
from tilecraft.layout import identity
from tilecraft.layout.draw import draw_fragment, encode_png, owners, render_fragment
from tilecraft.layout.fragment import blocked, slice_layout


def read_png(data: bytes) -> tuple[int, int, np.ndarray]:
    """Width, height and pixels of an unfiltered truecolor PNG, checking every chunk's CRC."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks.append((kind, body))
        pos += 12 + length
    assert [k for k, _ in chunks] == [b"IHDR", b"IDAT", b"IEND"]
    width, height, depth, color, _, _, _ = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, color) == (8, 2)
    raw = np.frombuffer(zlib.decompress(chunks[1][1]), dtype=np.uint8).reshape(height, 1 + width * 3)
    assert not raw[:, 0].any(), "every scanline uses filter 0"
    return width, height, raw[:, 1:].reshape(height, width, 3)


def test_draw_fragment_writes_a_valid_png(tmp_path):
    layout = mma_accumulator(32, 32, 2, 2)
    path = draw_fragment(layout, tmp_path / "acc.png", scale=2)
    width, height, pixels = read_png(path.read_bytes())
    image = render_fragment(layout)
    assert (height, width) == (image.shape[0] * 2, image.shape[1] * 2)
    assert np.array_equal(pixels[::2, ::2], image)


def test_different_layouts_give_different_images(tmp_path):
    a = draw_fragment(mma_accumulator(32, 32, 2, 2), tmp_path / "a.png").read_bytes()
    b = draw_fragment(blocked((32, 32), 128, 8, width=32), tmp_path / "b.png").read_bytes()
    c = draw_fragment(mma_accumulator(32, 32, 2, 2), tmp_path / "c.png").read_bytes()
    assert a != b and a == c


def test_owners_reports_the_first_thread_and_replication():
    """Element (3, 5) of one mma tile: lane 3 * 4 + 2 = 14, register 1; the row slice is held 4 times."""
    thread, register, count, _ = owners(mma_accumulator(16, 8, 1, 1))
    assert (thread[3 * 8 + 5], register[3 * 8 + 5]) == (14, 1)
    assert set(count) == {1}
    thread, _, count, _ = owners(slice_layout(mma_accumulator(16, 8, 1, 1), 1))
    assert list(thread[:3]) == [0, 4, 8] and set(count) == {4}


def test_padding_outside_the_logical_shape_is_grey():
    layout = blocked((6, 6), 32, 2, width=32)
    image = render_fragment(layout, shape=(6, 6))
    assert image.shape[0] > 0
    assert tuple(image[-2, -2]) == (200, 200, 200)
    assert tuple(render_fragment(layout)[-2, -2]) != (200, 200, 200)


def test_one_dimensional_fragments_draw_as_one_row():
    image = render_fragment(slice_layout(mma_accumulator(32, 32, 2, 2), 1))
    assert image.shape[1] > image.shape[0] * 8


def test_non_fragment_layouts_are_rejected():
    with pytest.raises(ValueError, match="input dims"):
        render_fragment(identity("row", 4))
    with pytest.raises(ValueError, match="expected"):
        encode_png(np.zeros((2, 2), dtype=np.uint8))
