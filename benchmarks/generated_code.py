"""Generated code of every conformance kernel x target, to show that a change leaves it as it was.

    PYTHONPATH=<tree A> python benchmarks/generated_code.py write OUT_A
    PYTHONPATH=<tree B> python benchmarks/generated_code.py write OUT_B
    python benchmarks/generated_code.py compare OUT_A OUT_B

`write` lowers every kernel of tilecraft.testing.conformance for each target (no GPU or device compiler
needed) and writes OUT/<target>/<kernel>.txt: the device sources by format, the host source, the kernel
records and, for a kernel the target declines, its error message. `compare` counts the pairs per target
and names those that differ, with the two trees' paths (which messages quote) made equal. Run `write`
with PYTHONPATH set to the tree to lower, so that no installed tilecraft is imported instead (`git
archive <commit> | tar -x -C dir` gives a tree of another commit).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

TARGETS = ("cuda -arch=sm_90a", "cuda -arch=sm_80", "cuda -arch=sm_90a -backend=cutedsl", "cpu", "opencl",
           "webgpu", "hip -arch=gfx942", "metal -family=apple8")  # fmt: skip
TREE = re.compile(r"^=== tree (.*)$", re.MULTILINE)


def lowered_text(case, ctx) -> str:
    from tilecraft.jit.lower import lower_uncached

    try:
        artifact = lower_uncached(case.build(), ctx)
    except Exception as err:  # a kernel the target declines: its message is its output
        return f"=== error\n{type(err).__name__}: {err}\n"
    text = "".join(f"=== {fmt}\n{src}\n" for fmt, src in sorted(artifact.device_sources.items()))
    return (
        text
        + f"=== host ({artifact.host_format})\n{artifact.host_source}\n=== kernels\n{artifact.kernels!r}\n"
    )


def write(out: Path, targets: list[str]) -> None:
    import tilecraft
    from tilecraft.backend import create_backend_context
    from tilecraft.testing.conformance import CASES

    tree = Path(tilecraft.__file__).resolve().parents[1]
    for target in targets:
        ctx = create_backend_context(target, require_available=False)
        folder = out / re.sub(r"\W+", "_", target)
        folder.mkdir(parents=True, exist_ok=True)
        for case in CASES:
            (folder / f"{case.name}.txt").write_text(f"=== tree {tree}\n" + lowered_text(case, ctx))
        print(f"{target}: {len(CASES)} kernels", flush=True)


def _normalized(path: Path) -> str:
    text = path.read_text()
    found = TREE.search(text)
    return text.replace(found.group(1), "<tree>") if found else text


def compare(a: Path, b: Path) -> int:
    pairs = changed = 0
    for folder in sorted(p for p in b.iterdir() if p.is_dir()):
        names = sorted(p.name for p in folder.glob("*.txt"))
        new = [n for n in names if not (a / folder.name / n).exists()]  # kernels only tree B has
        names = [n for n in names if n not in new]
        differ = [n for n in names if _normalized(a / folder.name / n) != _normalized(folder / n)]
        pairs, changed = pairs + len(names), changed + len(differ)
        print(
            f"{folder.name}: {len(names)} pairs, {len(differ)} differ" + "".join(f"\n  {n}" for n in differ)
            + "".join(f"\n  (new) {n}" for n in new)
        )
    print(f"total: {pairs} pairs, {changed} differ")
    return 1 if changed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="lower every conformance kernel for each target into OUT")
    w.add_argument("out", type=Path)
    w.add_argument("targets", nargs="*", default=list(TARGETS))
    c = sub.add_parser("compare", help="the pairs of two `write` outputs that differ")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = parser.parse_args(argv)
    if args.command == "write":
        write(args.out, args.targets)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
