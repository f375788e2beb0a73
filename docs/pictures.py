"""The pictures of the docs that are drawn from the code, written to docs/images/.

    python docs/pictures.py

- layout-mma-accumulator-64x64.png and layout-blocked-64x64.png (docs/layouts.md): which thread and
  register own each element of a 64 x 64 float32 fragment, as the CUDA backend's mma accumulator over a
  2 x 2 warp grid and as the free default `blocked` over 128 threads, drawn by tilecraft.layout.draw
  (no plotting library needed);
- pipelines.png (docs/architecture.md): the pass lists of the cpu and cuda (sm_90a) pipelines, read
  from the pipelines themselves (`tilecraft.testing.passes.pipeline_of`), in order; passes both run are
  coloured alike;
- layers.png (docs/architecture.md): the packages of tilecraft in their layers, as the layer test
  (tests/backend/test_layers.py) places them, with the path a kernel takes through them and where compat
  sits.

The last two need matplotlib, and carry what they show in the PNG's Description text, so that
tests/docs/test_pictures.py can tell without matplotlib that the committed files show the code as it is;
it also checks that the drawing runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

IMAGES = REPO / "docs" / "images"
PIPELINES = ("cpu", "cuda -arch=sm_90a")
TILE = (64, 64)
THREADS = 128


def layouts():
    """file name -> the LinearLayout each layout picture shows."""
    from tilecraft.cuda.intrinsics.mma_layouts import mma_accumulator
    from tilecraft.layout.fragment import blocked

    return {
        "layout-mma-accumulator-64x64.png": mma_accumulator(*TILE, 2, 2),
        "layout-blocked-64x64.png": blocked(TILE, threads=THREADS, vector=4, width=32),  # 16 bytes of float32
    }


def draw_layouts(images: Path = IMAGES) -> list[Path]:
    from tilecraft.layout.draw import draw_fragment

    return [draw_fragment(layout, images / name, scale=1) for name, layout in layouts().items()]


def pass_lists(targets: Sequence[str] = PIPELINES) -> dict[str, list[str]]:
    """target -> its pipeline's pass names, in the order they run."""
    from tilecraft.testing.passes import pipeline_of

    return {target: [p.name for p in pipeline_of(target)[0].passes] for target in targets}


def pyplot(picture: str):
    """matplotlib's pyplot, drawing to files; an error naming `picture` where matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit(f"{picture} needs matplotlib, which is not installed: pip install matplotlib") from None
    return plt


def save(fig, path: Path, shown: dict) -> Path:
    """Write `fig` to `path` with `shown` (what it depicts) in its Description text chunk."""
    fig.savefig(path, dpi=90, metadata={"Software": None, "Description": json.dumps(shown)})
    return path


def draw_pipelines(path: Path, lists: dict[str, list[str]] | None = None) -> Path:
    """Each pipeline a column of numbered boxes, top to bottom; a pass every column runs in one colour."""
    plt = pyplot("pipelines.png")
    lists = lists or pass_lists()
    shared = set.intersection(*(set(names) for names in lists.values()))
    rows = max(len(names) for names in lists.values())
    fig, ax = plt.subplots(figsize=(3.4 * len(lists), 0.32 * rows + 1.2))
    for column, (target, names) in enumerate(lists.items()):
        x = column * 1.1
        ax.text(x + 0.5, -0.9, f"{target}", ha="center", va="center", fontsize=10, weight="bold")
        for row, name in enumerate(names):
            color = "#cfe3f7" if name in shared else "#f7dfc4"
            ax.add_patch(
                plt.Rectangle((x, row - 0.4), 1.0, 0.8, facecolor=color, edgecolor="#555555", linewidth=0.6)
            )
            ax.text(x + 0.04, row, f"{row + 1:>2}", ha="left", va="center", fontsize=7, color="#555555")
            ax.text(x + 0.5, row, name, ha="center", va="center", fontsize=8, family="monospace")
            if row:
                ax.annotate("", (x + 0.5, row - 0.4), (x + 0.5, row - 0.6),
                            arrowprops=dict(arrowstyle="->", linewidth=0.6, color="#555555"))  # fmt: skip
    ax.set_xlim(-0.1, 1.1 * len(lists))
    ax.set_ylim(rows, -1.4)
    ax.axis("off")
    ax.set_title("Pass pipelines, in order (blue: in both; orange: in one)", fontsize=9, y=0.995)
    fig.tight_layout()
    save(fig, path, lists)
    plt.close(fig)
    return path


# What each package does, in a few words; a package not named here is drawn without a caption.
ROLES = {
    "jit": "compile, Kernel", "tools": "the command line", "autotuner": "autotune", "profiler": "timing",
    "engine": "tilelang.engine", "compat": "TileLang programs", "testing": "conformance kit",
    "utils": "tilelang.utils", "execution": "cache, shared base", "language": "T.*, parser", "ir": "tile IR",
    "transform": "shared passes", "layout": "layouts", "codegen": "C-family printers",
    "backend": "the contract", "runtime": "artifact, arrays", "carver": "tilelang.carver",
    "cuda_driver": "CUDA runtime", "native": "compiled launcher", "system_cc": "C compiler",
}  # fmt: skip
# The path of a kernel, in order: (package, or a layer's name for every package in it; what happens there).
FLOW = (
    ("language", "parse"),
    ("ir", "tile IR"),
    ("transform", "passes"),
    ("target backend", "pipeline and codegen"),
    ("execution", "build, load"),
    ("runtime", "launch"),
)
# Packages drawn first in their layer, in this order (the flow's, then the rest); others follow by name.
ORDER = ("language", "ir", "transform", "layout", "codegen", "backend", "runtime", "jit", "compat", "cpu",
         "cuda", "opencl", "webgpu", "hip", "metal")  # fmt: skip


def layers() -> dict[str, list[str]]:
    """layer name -> its packages, the top layer first: the layers tests/backend/test_layers.py enforces,
    and in the execution layer the packages of tilecraft/execution (execution backends and the runtimes
    they share)."""
    from tests.backend import test_layers as rules

    table = rules.layer_table(rules.PACKAGE)
    packages = {p.name for p in rules.PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    rank = {name: i for i, name in enumerate(ORDER)}
    found = {}
    for layer in sorted(rules.LAYER_NAMES, reverse=True):
        parts = sorted((p for p in packages if table.get(p) == layer), key=lambda p: (rank.get(p, len(rank)), p))
        if layer == rules.EXECUTION:
            below = rules.PACKAGE / "execution"
            parts += sorted(p.name for p in below.iterdir() if (p / "__init__.py").is_file())
        found[rules.LAYER_NAMES[layer]] = parts
    return found


def draw_layers(path: Path, shown: dict[str, list[str]] | None = None) -> Path:
    """Each layer a band of package boxes, the top layer first; numbers follow a kernel from the language
    to the runtime (blue); compat, at the top, runs TileLang programs on all of it (orange)."""
    plt = pyplot("layers.png")
    shown = shown or layers()
    width, gap, height, left, pitch = 1.45, 0.1, 0.8, 2.2, 1.2
    columns = max(len(parts) for parts in shown.values())
    fig, ax = plt.subplots(figsize=(1.0 + 1.05 * columns, pitch * len(shown) + 1.0))
    step = {name: n for n, (name, _) in enumerate(FLOW, 1)}
    for row, (layer, parts) in enumerate(shown.items()):
        y = row * pitch
        right = left + len(parts) * (width + gap)
        ax.add_patch(plt.Rectangle((0, y - 0.5), right, 1.0, facecolor="#f2f2f2", edgecolor="none"))
        ax.text(0.1, y, layer, ha="left", va="center", fontsize=10, weight="bold")
        previous = None
        for i, part in enumerate(parts):
            x = left + i * (width + gap)
            n = step.get(part, step.get(layer))
            color = "#f7dfc4" if part == "compat" else "#cfe3f7" if n else "#ffffff"
            ax.add_patch(plt.Rectangle((x, y - height / 2), width, height, facecolor=color, edgecolor="#555555",
                                       linewidth=0.6))  # fmt: skip
            ax.text(x + width / 2, y - 0.08, part, ha="center", va="center", fontsize=9, family="monospace")
            ax.text(x + width / 2, y + 0.2, ROLES.get(part, ""), ha="center", va="center", fontsize=6,
                    color="#444444")  # fmt: skip
            if n:
                ax.text(x + 0.05, y - height / 2 + 0.04, str(n), ha="left", va="top", fontsize=8, weight="bold",
                        color="#1f4e79")  # fmt: skip
            if n and previous == n - 1:
                ax.annotate("", (x, y), (x - gap, y), arrowprops=dict(arrowstyle="->", color="#1f4e79"))
            previous = n
    steps = ", ".join(f"{n} {what} ({name})" for n, (name, what) in enumerate(FLOW, 1))
    ax.set_xlim(-0.05, left + columns * (width + gap))
    ax.set_ylim((len(shown) - 1) * pitch + 0.55, -0.6)
    ax.axis("off")
    ax.set_title(
        "The layers of tilecraft: each imports only the layers below it (tests/backend/test_layers.py).\n"
        f"Blue, a kernel's path: {steps}.\nOrange: compat runs TileLang programs, resolving their tilelang.* "
        "imports to the packages here.",
        fontsize=8.5,
    )
    fig.tight_layout()
    save(fig, path, shown)
    plt.close(fig)
    return path


def described(path: Path) -> dict:
    """What `draw_pipelines` or `draw_layers` wrote into the PNG at `path` (its Description text chunk)."""
    data = path.read_bytes()
    at = 8
    while at < len(data):
        length = int.from_bytes(data[at : at + 4], "big")
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        if kind == b"tEXt" and body.startswith(b"Description\0"):
            return json.loads(body.split(b"\0", 1)[1].decode("latin-1"))
        at += 12 + length
    raise ValueError(f"{path} holds no description (not written by docs/pictures.py)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=IMAGES, help="the directory to write to (docs/images)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    drawn = [*draw_layouts(args.out), draw_pipelines(args.out / "pipelines.png"), draw_layers(args.out / "layers.png")]
    for path in drawn:
        print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
