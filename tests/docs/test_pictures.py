"""The pictures docs/pictures.py draws from the code are committed as the code draws them now: the layout
pictures byte for byte, the pipeline and layer pictures by what they carry; and the drawing runs (the
pipeline and layer pictures where matplotlib is)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("docs_pictures", ROOT / "docs" / "pictures.py")
pictures = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(pictures)


def test_the_layout_pictures_are_what_the_layouts_draw(tmp_path):
    for path in pictures.draw_layouts(tmp_path):
        committed = pictures.IMAGES / path.name
        assert committed.read_bytes() == path.read_bytes(), (
            f"{committed.name} is stale: run python docs/pictures.py"
        )
        assert path.stat().st_size < 200_000


DESCRIBED = {"pipelines.png": (pictures.draw_pipelines, pictures.pass_lists),
             "layers.png": (pictures.draw_layers, pictures.layers)}  # fmt: skip


@pytest.mark.parametrize("name", sorted(DESCRIBED))
def test_the_described_pictures_show_the_code_as_it_is(name):
    drawn = pictures.described(pictures.IMAGES / name)
    assert drawn == DESCRIBED[name][1](), f"docs/images/{name} is stale: run python docs/pictures.py"


@pytest.mark.parametrize("name", sorted(DESCRIBED))
def test_the_described_pictures_are_drawn(name, tmp_path):
    pytest.importorskip("matplotlib", reason=f"{name} needs matplotlib")
    draw, shown = DESCRIBED[name]
    path = draw(tmp_path / name)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size < 200_000
    assert pictures.described(path) == shown()


def test_the_docs_show_the_pictures():
    layouts = (ROOT / "docs" / "layouts.md").read_text()
    assert all(f"(images/{name})" in layouts for name in pictures.layouts())
    architecture = (ROOT / "docs" / "architecture.md").read_text()
    assert all(f"(images/{name})" in architecture for name in DESCRIBED)
