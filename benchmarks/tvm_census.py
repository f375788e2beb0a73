"""Count every use of TVM and of TileLang's intrinsic emitters in TileLang's examples and tests.

TileLang programs reach TVM through `import tvm`, `from tilelang import tvm` and `from tvm[.x] import y`,
and TileLang's warp-level MMA macros through `tilelang.cuda.intrinsics` (older releases:
`tilelang.intrinsics`). This script parses every `*.py` file under the given roots (it runs nothing) and
counts, per dotted name, how often it is used:

- every name an import binds is followed through the file: `tvm.tirx.IntImm(...)`, `tirx.Cast(...)`
  after `from tvm import tirx`, `DataType(x).bits` after `from tvm import DataType`;
- the longest attribute chain on such a name is the name used (`tvm.target.Target`), and a call of it
  is counted with its shape (positional and keyword arguments);
- an object made by calling an intrinsic-emitter class (`e = TensorCoreIntrinEmitter(...)`) is followed
  too: `e.ldmatrix_a(...)` counts as `...TensorCoreIntrinEmitter().ldmatrix_a`.

Names are written with TVM's spelling at TileLang a35008a (`tvm.tirx`; TVM's older `tvm.tir` is the same
namespace). `tilelang.tvm` is `tvm`.

    python benchmarks/tvm_census.py --tilelang PATH/TO/tilelang                # examples + testing/python
    python benchmarks/tvm_census.py --tilelang PATH --only examples/gemm examples/gemv --markdown out.md
    PYTHONPATH=. python benchmarks/tvm_census.py --tilelang PATH --only examples --status   # + tilecraft's answer

docs/compat.md, "TVM", records the counts.
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

# Module prefixes whose names are counted, as a file may import them; each maps to its canonical spelling.
ROOTS = {
    "tilelang.tvm": "tvm",
    "tvm": "tvm",
    "tvm_ffi": "tvm_ffi",
    "tilelang.cuda.intrinsics": "tilelang.cuda.intrinsics",
    "tilelang.intrinsics": "tilelang.intrinsics",
}
DEFAULT_PARTS = ("examples", "testing/python")


def canonical(module: str) -> str | None:
    """The canonical dotted name of `module` if it lies under a counted root, else None."""
    for prefix, name in ROOTS.items():
        if module == prefix or module.startswith(prefix + "."):
            return name + module[len(prefix) :]
    return None


@dataclass
class Use:
    name: str
    file: str
    line: int
    kind: str  # import, call, ref
    shape: str = ""  # for calls: "(2 args, dtype=)"


@dataclass
class FileUses:
    aliases: dict[str, str] = field(default_factory=dict)  # local name -> canonical dotted name
    instances: dict[str, str] = field(default_factory=dict)  # local name -> "Class()"
    uses: list[Use] = field(default_factory=list)


def _call_shape(call: ast.Call) -> str:
    words = [f"{len(call.args)} arg{'s' if len(call.args) != 1 else ''}"] if call.args else []
    words += [f"{k.arg}=" if k.arg else "**" for k in call.keywords]
    return "(" + ", ".join(words) + ")"


def _chain(node: ast.expr) -> tuple[str, list[str]] | None:
    """`a.b.c` -> ("a", ["b", "c"]), for a chain rooted at a plain name."""
    attrs = []
    while isinstance(node, ast.Attribute):
        attrs.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return node.id, attrs[::-1]
    return None


class _Collector(ast.NodeVisitor):
    def __init__(self, path: str) -> None:
        self.path = path
        self.state = FileUses()
        self.parents: dict[int, ast.AST] = {}

    def run(self, tree: ast.AST) -> FileUses:
        for parent in ast.walk(tree):
            for child in ast.iter_child_nodes(parent):
                self.parents[id(child)] = parent
        self._imports(tree)
        self._instances(tree)
        self.visit(tree)
        return self.state

    def _imports(self, tree: ast.AST) -> None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    name = canonical(alias.name)
                    if name is None:
                        continue
                    # `import tvm.tirx` binds `tvm`; `import tvm.tirx as t` binds t to the submodule
                    local = alias.asname or alias.name.split(".")[0]
                    bound = name if alias.asname else canonical(alias.name.split(".")[0]) or name
                    self.state.aliases[local] = bound
                    self._use(name, node, "import")
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    full = canonical(f"{node.module}.{alias.name}")
                    if full is None:
                        continue
                    self.state.aliases[alias.asname or alias.name] = full
                    self._use(full, node, "import")

    def _instances(self, tree: ast.AST) -> None:
        """`x = Emitter(...)` where Emitter is a counted name: x stands for an instance."""
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
                continue
            resolved = self._resolve(node.value.func)
            if resolved is None or not resolved.split(".")[-1][:1].isupper():
                continue
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.state.instances[target.id] = resolved + "()"

    def _resolve(self, node: ast.expr) -> str | None:
        chain = _chain(node)
        if chain is None:
            return None
        base, attrs = chain
        root = self.state.aliases.get(base) or self.state.instances.get(base)
        if root is None:
            return None
        return ".".join([root, *attrs])

    def _use(self, name: str, node: ast.AST, kind: str, shape: str = "") -> None:
        self.state.uses.append(Use(name, self.path, getattr(node, "lineno", 0), kind, shape))

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        if node.id not in self.state.aliases and node.id not in self.state.instances:
            return
        top: ast.expr = node
        parent = self.parents.get(id(top))
        while isinstance(parent, ast.Attribute) and parent.value is top:
            top, parent = parent, self.parents.get(id(parent))
        name = self._resolve(top)
        if name is None:
            return
        if top is node and node.id in self.state.instances:
            return  # an instance passed around is no use of TVM; its attributes and methods are
        if isinstance(parent, ast.Call) and parent.func is top:
            self._use(name, top, "call", _call_shape(parent))
        else:
            self._use(name, top, "ref")


def collect(files: list[Path], base: Path) -> list[Use]:
    uses: list[Use] = []
    for path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        except (SyntaxError, UnicodeDecodeError) as err:
            print(f"skipped {path}: {err}", file=sys.stderr)
            continue
        uses += _Collector(str(path.relative_to(base))).run(tree).uses
    return uses


def python_files(base: Path, parts: list[str]) -> list[Path]:
    files: list[Path] = []
    for part in parts:
        root = base / part
        files += sorted(root.rglob("*.py")) if root.is_dir() else [root] if root.suffix == ".py" else []
    return files


def tilecraft_status(name: str) -> str:
    """What tilecraft's namespaces (tilecraft.compat.tvm, tilecraft.compat.intrinsics) do with `name`:
    "mapped", or "refused: <the reason its error gives>"."""
    import importlib
    import re

    from tilecraft.compat import hook

    if name.startswith("tvm_ffi"):
        return "refused: TVM's FFI package; tilecraft has no TVM runtime"
    head = (
        "tvm"
        if name.startswith("tvm")
        else next(p for p in ("tilelang.cuda.intrinsics", "tilelang.intrinsics") if name.startswith(p))
    )
    obj = importlib.import_module(hook.tvm_counterpart(head) if head == "tvm" else hook.counterpart(head))
    for part in [p for p in name[len(head) :].split(".") if p]:
        instance = part.endswith("()")
        try:
            owner = obj
            obj = _attribute(obj, part.removesuffix("()"))
        except ImportError as err:
            found = re.search(r"(?:onto tilecraft's IR; |intrinsics\): )(.*) \(docs/compat\.md", str(err))
            return f"refused: {found.group(1) if found else err}"
        except AttributeError:
            return f"missing: tilecraft's {type(owner).__name__} has no `{part.removesuffix('()')}`"
        if instance:
            obj = _SAMPLES.get(getattr(obj, "__name__", ""), lambda c: c)(obj)
    return "mapped"


def _attribute(obj, name: str):
    """`obj.name`; a TVM class of the namespace also answers with the tilecraft class it stands for."""
    try:
        return getattr(obj, name)
    except AttributeError:
        if isinstance(obj, type) and "ir_class" in obj.__dict__:
            return getattr(obj.__dict__["ir_class"], name)
        raise


# Objects of the classes whose instance attributes the census counts (`DataType(x).bits`).
_SAMPLES = {
    "DataType": lambda cls: cls("float16"),
    "Target": lambda cls: cls("c"),
    "Var": lambda cls: cls("v", "int32"),
    "TensorCoreIntrinEmitter": lambda cls: cls(warp_row_tiles=16, warp_col_tiles=16),
}


def tabulate(uses: list[Use]) -> list[dict]:
    """One row per name: uses in code (calls and references), imports, files, call shapes."""
    rows: dict[str, dict] = defaultdict(
        lambda: {"uses": 0, "imports": 0, "files": set(), "shapes": Counter()}
    )
    for use in uses:
        row = rows[use.name]
        row["files"].add(use.file)
        if use.kind == "import":
            row["imports"] += 1
        else:
            row["uses"] += 1
            row["shapes"][use.shape or "ref"] += 1
    table = []
    for name, row in rows.items():
        table.append({
            "name": name, "uses": row["uses"], "imports": row["imports"], "files": len(row["files"]),
            "shapes": dict(row["shapes"].most_common()),
        })  # fmt: skip
    table.sort(key=lambda r: (-(r["uses"] + r["imports"]), r["name"]))
    return table


def markdown(table: list[dict]) -> str:
    status = any("tilecraft" in row for row in table)
    lines = ["| name | uses | imports | files | call shapes |" + (" tilecraft |" if status else "")]
    lines.append("|---|---|---|---|---|" + ("---|" if status else ""))
    for row in table:
        shapes = ", ".join(f"{s} x{n}" for s, n in row["shapes"].items())
        extra = f" {row['tilecraft']} |" if status else ""
        lines.append(
            f"| `{row['name']}` | {row['uses']} | {row['imports']} | {row['files']} | {shapes} |{extra}"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tilelang", required=True, type=Path, help="a checkout of TileLang")
    parser.add_argument("--only", nargs="*", default=list(DEFAULT_PARTS), help="paths under it to scan")
    parser.add_argument("--prefix", default="", help="count only names starting with this")
    parser.add_argument(
        "--status",
        action="store_true",
        help="add what tilecraft's tvm namespace and emitters do with each name",
    )
    parser.add_argument("--json", type=Path, help="write the table as JSON")
    parser.add_argument("--markdown", type=Path, help="write the table as Markdown")
    args = parser.parse_args(argv)
    files = python_files(args.tilelang, args.only)
    uses = [u for u in collect(files, args.tilelang) if u.name.startswith(args.prefix)]
    table = tabulate(uses)
    if args.status:
        for row in table:
            row["tilecraft"] = tilecraft_status(row["name"])
    users = {u.file for u in uses}
    print(f"{len(files)} files scanned, {len(users)} use TVM or the intrinsic emitters, {len(table)} names")
    for folder, count in sorted(Counter(str(Path(f).parent) for f in users).items()):
        print(f"  {count:4d} files in {folder}")
    for row in table:
        shapes = ", ".join(f"{s} x{n}" for s, n in row["shapes"].items())
        status = f"  [{row['tilecraft']}]" if args.status else ""
        print(f"{row['uses']:5d} {row['imports']:4d} {row['files']:4d}  {row['name']}  {shapes}{status}")
    if args.json:
        args.json.write_text(json.dumps({"files": sorted(users), "names": table}, indent=1))
    if args.markdown:
        args.markdown.write_text(markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
