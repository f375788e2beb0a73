"""Pictures of fragment layouts: which thread (and register) owns each element of a tile, as a PNG.

No plotting library is needed: cells are painted into a numpy array, digits come from a built-in 3x5
bitmap font, and the PNG is encoded with `zlib` and `struct`.
"""

from __future__ import annotations

import colorsys
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from tilecraft.layout.linear import LinearLayout

__all__ = ["draw_fragment", "encode_png", "owners", "render_fragment"]

# 3x5 glyphs of the digits, one string of 15 pixels per glyph, row by row.
_DIGITS = {
    "0": "111101101101111",
    "1": "010110010010111",
    "2": "111001111100111",
    "3": "111001111001111",
    "4": "101101111001001",
    "5": "111100111001111",
    "6": "111100111101111",
    "7": "111001001001001",
    "8": "111101111101111",
    "9": "111101111001111",
}
_GLYPH_W, _GLYPH_H = 3, 5
_GRID = (96, 96, 96)
_MASKED = (200, 200, 200)
_UNOWNED = (255, 255, 255)
_INK = (0, 0, 0)
_FRAGMENT_INS = ("register", "lane", "warp")


def owners(layout: LinearLayout) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For every element of the (padded) output space, flattened row-major: the owning thread
    (warp * lanes + lane) and register, and how many (thread, register) pairs hold it. The owner shown
    is the lowest thread, then the lowest register; elements nobody holds get thread -1. Also returns
    the warp of the owner."""
    for name in layout.in_names:
        if name not in _FRAGMENT_INS:
            raise ValueError(f"a fragment layout has input dims {_FRAGMENT_INS}, not {name!r}")
    sizes = {name: layout.in_size(name) if name in layout.in_names else 1 for name in _FRAGMENT_INS}
    warp, lane, register = np.meshgrid(
        *(np.arange(sizes[n], dtype=np.int64) for n in ("warp", "lane", "register")), indexing="ij"
    )
    warp, lane, register = warp.ravel(), lane.ravel(), register.ravel()
    flat = np.zeros_like(warp)
    for name, values in (("register", register), ("lane", lane), ("warp", warp)):
        if name in layout.in_names:
            flat ^= _apply_dim(layout, name, values)
    total = layout.total_out_size
    first = np.full(total, -1, dtype=np.int64)
    elements, index, counts = np.unique(flat, return_index=True, return_counts=True)
    first[elements] = index
    count = np.zeros(total, dtype=np.int64)
    count[elements] = counts
    owned = first >= 0
    thread = np.where(owned, warp[first] * sizes["lane"] + lane[first], -1)
    return thread, np.where(owned, register[first], -1), count, np.where(owned, warp[first], -1)


def _apply_dim(layout: LinearLayout, name: str, values: np.ndarray) -> np.ndarray:
    """The flat row-major outputs that input dim `name` contributes for each of `values`."""
    result = np.zeros_like(values)
    for bit, vector in enumerate(dict(layout.bases)[name]):
        flat = 0
        for (_, size), coord in zip(layout.out_dims, vector):
            flat = flat * size + coord
        result ^= np.where((values >> bit) & 1, flat, 0)
    return result


def render_fragment(layout: LinearLayout, shape: Sequence[int] | None = None) -> np.ndarray:
    """An RGB image (height x width x 3, uint8) of a 1-D or 2-D fragment layout.

    Each cell shows the owning thread (top) and register (bottom); its hue follows the lane and its
    brightness the warp. A small black square in a corner marks a replicated element (held by more
    than one thread or register); grey cells lie outside the logical `shape` (the padding).
    """
    if len(layout.out_dims) not in (1, 2):
        raise ValueError(f"can only draw 1-D or 2-D fragments, this one has dims {layout.out_names}")
    rows, cols = (
        (1, layout.out_dims[0][1]) if len(layout.out_dims) == 1 else tuple(s for _, s in layout.out_dims)
    )
    logical = _logical_shape(shape, rows, cols, len(layout.out_dims))
    thread, register, count, warp = owners(layout)
    lanes = layout.in_size("lane") if "lane" in layout.in_names else 1
    warps = layout.in_size("warp") if "warp" in layout.in_names else 1
    digits = max(len(str(max(int(thread.max()), 0))), len(str(max(int(register.max()), 0))))
    cell_w, cell_h = digits * (_GLYPH_W + 1) + 3, 2 * (_GLYPH_H + 1) + 3
    image = np.full((rows * cell_h + 1, cols * cell_w + 1, 3), _GRID, dtype=np.uint8)
    for r in range(rows):
        for c in range(cols):
            k = r * cols + c
            y, x = r * cell_h + 1, c * cell_w + 1
            box = image[y : y + cell_h - 1, x : x + cell_w - 1]
            if r >= logical[0] or c >= logical[1]:
                box[:] = _MASKED
                continue
            if thread[k] < 0:
                box[:] = _UNOWNED
                continue
            box[:] = _thread_color(int(thread[k]) % lanes, lanes, int(warp[k]), warps)
            _text(box, 2, 2, str(thread[k]))
            _text(box, 2, _GLYPH_H + 3, str(register[k]))
            if count[k] > 1:
                box[:2, -2:] = _INK
    return image


def _logical_shape(shape: Sequence[int] | None, rows: int, cols: int, ndim: int) -> tuple[int, int]:
    if shape is None:
        return rows, cols
    shape = tuple(int(s) for s in shape)
    if len(shape) != ndim:
        raise ValueError(f"shape {shape} has {len(shape)} dims, the layout has {ndim}")
    return (1, shape[0]) if ndim == 1 else (shape[0], shape[1])


def _thread_color(lane: int, lanes: int, warp: int, warps: int) -> tuple[int, int, int]:
    hue = lane / lanes
    value = 1.0 - 0.45 * warp / max(warps, 1)
    r, g, b = colorsys.hsv_to_rgb(hue, 0.45, value)
    return int(r * 255), int(g * 255), int(b * 255)


def _text(box: np.ndarray, x: int, y: int, text: str) -> None:
    for ch in text:
        glyph = _DIGITS[ch]
        for gy in range(_GLYPH_H):
            for gx in range(_GLYPH_W):
                if glyph[gy * _GLYPH_W + gx] == "1":
                    box[y + gy, x + gx] = _INK
        x += _GLYPH_W + 1


def encode_png(pixels: np.ndarray) -> bytes:
    """A truecolor PNG of an (height x width x 3) uint8 array: signature, IHDR, one IDAT, IEND."""
    if pixels.ndim != 3 or pixels.shape[2] != 3 or pixels.dtype != np.uint8:
        raise ValueError(f"expected an (h, w, 3) uint8 array, got {pixels.shape} {pixels.dtype}")
    height, width, _ = pixels.shape
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    rows = np.concatenate([np.zeros((height, 1), dtype=np.uint8), pixels.reshape(height, width * 3)], axis=1)
    return b"".join(
        [
            b"\x89PNG\r\n\x1a\n",
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", zlib.compress(rows.tobytes(), 9)),
            _chunk(b"IEND", b""),
        ]
    )


def _chunk(kind: bytes, data: bytes) -> bytes:
    return (
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    )


def draw_fragment(
    layout: LinearLayout, path: str | Path, shape: Sequence[int] | None = None, scale: int = 2
) -> Path:
    """Write a PNG of `layout` (see `render_fragment`), magnified `scale` times, to `path`."""
    pixels = render_fragment(layout, shape)
    if scale > 1:
        pixels = pixels.repeat(scale, axis=0).repeat(scale, axis=1)
    path = Path(path)
    path.write_bytes(encode_png(pixels))
    return path
