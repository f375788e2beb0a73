"""Every ```python block of the README and of docs/*.md runs, as a program of its own, on the CPU target.

Each block is written to a file (kernels are parsed from their source) and run in a subprocess with
TILECRAFT_TARGET=cpu, so `"auto"` means the CPU whatever else the machine has. A block that cannot run
everywhere says so on the line before it, and is reported as skipped with that reason:

- `<!-- skip: REASON -->`: never run here (it needs a GPU, or it is an excerpt rather than a program);
- `<!-- needs: torch -->`, `<!-- needs: backend opencl -->`, `<!-- needs: command clang-19 -->`: run where
  the module imports, the execution backend is available and the program is on PATH, skipped with the
  reason elsewhere (a failure instead where CI_REQUIRE_EXECUTION_BACKENDS requires that execution
  backend, as in `.ci/run`). Several are comma-separated.

A block that starts with `# expect: ErrorType: message` must fail with that error. Three pages have
runners of their own, which check more than that the blocks run (`DEDICATED`).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.required import skip_unless_required

ROOT = Path(__file__).resolve().parents[2]
DEDICATED = {
    "language.md": "tests/language/test_docs.py",  # also: round trips, the semantic check, every T.* name
    "layouts.md": "tests/layout/test_docs.py",  # also: every public name of tilecraft/layout
    "autotuning.md": "tests/autotuner/test_docs.py",  # also: every public name of the autotuner and profiler
}
PAGES = [ROOT / "README.md", *(p for p in sorted((ROOT / "docs").glob("*.md")) if p.name not in DEDICATED)]
FENCE = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)
MARKER = re.compile(r"<!-- (skip|needs): (.+?) -->\s*$")
EXPECT = re.compile(r"# expect: (\w+): (.*)")
OPTIONAL_MODULES = ("torch", "ray", "wgpu", "pyopencl", "cuda", "ml_dtypes")  # ml_dtypes: a hard dependency
TIMEOUT_S = 300


@dataclass(frozen=True)
class Block:
    page: str
    number: int
    line: int
    code: str
    skip: str | None  # the reason of a `skip` marker
    needs: tuple[str, ...]  # the items of a `needs` marker

    @property
    def id(self) -> str:
        return f"{self.page}-{self.number}"


def blocks_of(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for number, match in enumerate(FENCE.finditer(text), 1):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.match(before.strip())
        skip = marker.group(2) if marker and marker.group(1) == "skip" else None
        needs = (
            tuple(n.strip() for n in marker.group(2).split(","))
            if marker and marker.group(1) == "needs"
            else ()
        )
        line = text.count("\n", 0, match.start()) + 1
        found.append(Block(page.name, number, line, match.group(1), skip, needs))
    return found


BLOCKS = [b for page in PAGES for b in blocks_of(page)]


def missing(need: str) -> str | None:
    """Why `need` (a module, `backend NAME` or `command NAME`) is not available here; None when it is."""
    if need.startswith("command "):
        name = need.split()[1]
        return None if shutil.which(name) else f"{name} is not on PATH"
    if need.startswith("backend "):
        from tilecraft.backend.execution_registry import get_spec

        name = need.split()[1]
        status = get_spec(name).check()
        return None if status.ok else f"the {name} execution backend cannot run here: {status.describe()}"
    return None if importlib.util.find_spec(need) else f"{need} is not installed"


def run(block: Block, tmp_path: Path) -> subprocess.CompletedProcess:
    script = tmp_path / "block.py"
    script.write_text(block.code)
    env = dict(os.environ, TILECRAFT_TARGET="cpu")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    return subprocess.run([sys.executable, script.name], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)  # fmt: skip


def test_the_pages_have_blocks():
    """The glob and the fence found them (an empty parametrization would pass silently)."""
    assert len(BLOCKS) >= 20 and {"README.md", "quickstart.md", "runtime.md"} <= {b.page for b in BLOCKS}


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_the_block_runs(block: Block, tmp_path: Path):
    where = f"{block.page}:{block.line}"
    if block.skip:
        pytest.skip(f"{where}: {block.skip}")
    imported = set(re.findall(r"^\s*(?:import|from) (\w+)", block.code, re.MULTILINE))
    undeclared = [m for m in OPTIONAL_MODULES[:-1] if m in imported and m not in block.needs]
    assert not undeclared, f"{where} imports {undeclared}: mark it <!-- needs: {', '.join(undeclared)} -->"
    for need in block.needs:
        reason = missing(need)
        if reason is not None:
            if need.startswith("backend "):
                skip_unless_required(need.split()[1], f"{where}: {reason}")
            pytest.skip(f"{where}: {reason}")
    done = run(block, tmp_path)
    output = f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-5000:]}"
    expect = EXPECT.match(block.code)
    if expect:
        assert done.returncode != 0, f"{where}: the block should fail with {expect.group(1)}\n{output}"
        assert f"{expect.group(1)}: " in done.stderr and expect.group(2) in done.stderr, output
    else:
        assert done.returncode == 0, f"{where}: the block exited {done.returncode}\n{block.code}\n{output}"


@pytest.mark.parametrize(("page", "runner"), sorted(DEDICATED.items()))
def test_pages_left_out_have_runners_of_their_own(page: str, runner: str):
    assert f'"docs" / "{page}"' in (ROOT / runner).read_text(), f"{runner} should run the blocks of {page}"
