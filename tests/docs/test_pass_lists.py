"""The docs' lists of each target's passes are the pipelines the code runs, in order.

A list is marked in the markdown with `<!-- pipeline: TARGET -->` on the line before it: a table (the
pass is the first `code` span of each row), a numbered list (the first `code` span of each item) or a
paragraph (every `code` span that names a pass). The `NN-<pass>.py` files TILECRAFT_DUMP_IR writes,
where the CPU's docs name them, are numbered as the CPU pipeline runs its passes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tilecraft.testing.passes import pipeline_of

DOCS = Path(__file__).resolve().parents[2] / "docs"
MARKER = re.compile(r"^<!-- pipeline: (.+?) -->\n(.*?)(?:\n\n|\Z)", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"`([^`]+)`")


def marked_lists() -> list[tuple[str, str, str]]:
    """(doc name, target, the list's text) of every marked list."""
    return [
        (p.name, m.group(1), m.group(2))
        for p in sorted(DOCS.glob("*.md"))
        for m in MARKER.finditer(p.read_text())
    ]


def pass_names(target: str) -> list[str]:
    pipeline, _ = pipeline_of(target)
    return [p.name for p in pipeline.passes]


def listed_passes(text: str, known: set[str]) -> list[str]:
    lines = text.splitlines()
    if lines[0].startswith("|"):
        rows = [line for line in lines if line.startswith("|") and not set(line) <= set("|- ")]
        return [CODE.search(row).group(1) for row in rows[1:]]  # rows[0]: the header
    if re.match(r"\d+\. ", lines[0]):
        return [CODE.search(line).group(1) for line in lines if re.match(r"\d+\. ", line)]
    return [name for name in CODE.findall(text) if name in known]


MARKED = marked_lists()
KNOWN = {name for _, target, _ in MARKED for name in pass_names(target)}


def test_every_target_kind_has_a_marked_list():
    assert {target.split()[0] for _, target, _ in MARKED} == {
        "cpu",
        "cuda",
        "opencl",
        "webgpu",
        "metal",
        "hip",
    }


@pytest.mark.parametrize(("doc", "target", "text"), MARKED, ids=[doc for doc, _, _ in MARKED])
def test_the_list_is_the_pipeline(doc: str, target: str, text: str):
    assert listed_passes(text, KNOWN) == pass_names(target), f"docs/{doc}: the list of {target}'s passes"


@pytest.mark.parametrize("doc", ["cpu.md", "quickstart.md"])
def test_dump_file_names_follow_the_cpu_pipeline(doc: str):
    names = pass_names("cpu")
    found = re.findall(r"\b(\d\d)-([a-z][a-z-]*)\.py\b", (DOCS / doc).read_text())
    assert found, f"docs/{doc} names no dump file"
    for number, name in found:
        expected = "input" if number == "00" else names[int(number) - 1]
        assert name == expected, f"docs/{doc}: {number}-{name}.py, but pass {number} is {expected}"
