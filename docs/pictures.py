"""The pictures of the docs that are drawn from the code, written to docs/images/.

    python docs/pictures.py

- layout-mma-accumulator-64x64.png and layout-blocked-64x64.png (docs/layouts.md): which thread and
  register own each element of a 64 x 64 float32 fragment, as the CUDA backend's mma accumulator over a
  2 x 2 warp grid and as the free default `blocked` over 128 threads, drawn by tilecraft.layout.draw
  (no plotting library needed);
- pipelines.png (docs/architecture.md): the pass lists of the cpu and cuda (sm_90a) pipelines, read
  from the pipelines themselves (`tilecraft.testing.passes.pipeline_of`), in order; passes both run are
  coloured alike. This one needs matplotlib.

tests/docs/test_pictures.py checks that the committed files show the code as it is, and that the drawing runs.
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


def draw_pipelines(path: Path, lists: dict[str, list[str]] | None = None) -> Path:
    """Each pipeline a column of numbered boxes, top to bottom; a pass every column runs in one colour."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise SystemExit(
            "pipelines.png needs matplotlib, which is not installed: pip install matplotlib"
        ) from None
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
    # the pass lists ride in the file, so a test can tell a stale picture without matplotlib
    fig.savefig(path, dpi=90, metadata={"Software": None, "Description": json.dumps(lists)})
    plt.close(fig)
    return path


def described_pass_lists(path: Path) -> dict[str, list[str]]:
    """The pass lists `draw_pipelines` wrote into the PNG at `path` (its Description text chunk)."""
    data = path.read_bytes()
    at = 8
    while at < len(data):
        length = int.from_bytes(data[at : at + 4], "big")
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        if kind == b"tEXt" and body.startswith(b"Description\0"):
            return json.loads(body.split(b"\0", 1)[1].decode("latin-1"))
        at += 12 + length
    raise ValueError(f"{path} holds no pass lists (not written by docs/pictures.py)")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=IMAGES, help="the directory to write to (docs/images)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for path in [*draw_layouts(args.out), draw_pipelines(args.out / "pipelines.png")]:
        print(f"wrote {path} ({path.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
