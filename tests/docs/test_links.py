"""Every link between the README and the docs leads somewhere: the file exists and, where the link names
a heading (`page.md#anchor`), the page has that heading (GitHub's anchors); a file named in code
(`SOMETHING.md`) exists in the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_BLOCK = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of the page's headings: lower case, punctuation dropped, spaces as hyphens,
    repeats numbered."""
    found: set[str] = set()
    for heading in re.findall(r"^#+ (.+)$", CODE_BLOCK.sub("", page.read_text()), re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n, candidate = 0, slug
        while candidate in found:
            n += 1
            candidate = f"{slug}-{n}"
        found.add(candidate)
    return found


def links(page: Path) -> list[str]:
    text = CODE_BLOCK.sub("", page.read_text())
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_links_lead_somewhere(page: Path):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(
                f"{target}: no file {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}"
            )
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: {dest.name} has no heading with anchor #{anchor}")
    assert not broken, f"{page.name}:\n" + "\n".join(broken)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_markdown_files_named_in_the_text_exist(page: Path):
    named = set(re.findall(r"`(?:[\w./-]*/)?([A-Za-z][\w-]*\.md)`", page.read_text()))
    present = {p.name for p in ROOT.rglob("*.md") if ".venv" not in p.parts and ".git" not in p.parts}
    assert named <= present, (
        f"{page.name} names files the repository does not hold: {sorted(named - present)}"
    )


TOPICS = ("Getting started", "The language", "Targets", "Tuning", "Migrating from TileLang", "Backends",
          "Reliability", "Performance")  # fmt: skip


def test_the_index_lists_every_page_by_topic():
    index = ROOT / "docs" / "index.md"
    linked = {Path(t.partition("#")[0]).name for t in links(index)}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages <= linked, f"docs/index.md does not list {sorted(pages - linked)}"
    headings = re.findall(r"^## (.+)$", index.read_text(), re.MULTILINE)
    assert tuple(headings) == TOPICS, headings
    assert "docs/index.md" in links(ROOT / "README.md")

