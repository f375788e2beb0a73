"""The pictures docs/pictures.py draws from the code are committed as the code draws them now: the layout
pictures byte for byte, the pipeline picture by the pass lists it carries; and the drawing runs (the
pipeline picture where matplotlib is)."""

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


def test_the_pipeline_picture_shows_the_pipelines_as_they_are():
    drawn = pictures.described_pass_lists(pictures.IMAGES / "pipelines.png")
    assert drawn == pictures.pass_lists(), "docs/images/pipelines.png is stale: run python docs/pictures.py"


def test_the_pipeline_picture_is_drawn(tmp_path):
    pytest.importorskip("matplotlib", reason="pipelines.png needs matplotlib")
    path = pictures.draw_pipelines(tmp_path / "pipelines.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert path.stat().st_size < 200_000
    assert pictures.described_pass_lists(path) == pictures.pass_lists()


def test_the_docs_show_the_pictures():
    layouts = (ROOT / "docs" / "layouts.md").read_text()
    assert all(f"(images/{name})" in layouts for name in pictures.layouts())
    assert "(images/pipelines.png)" in (ROOT / "docs" / "architecture.md").read_text()
