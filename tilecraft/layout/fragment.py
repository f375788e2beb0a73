"""Fragment (register) layouts as linear layouts: the generic algebra every SIMT backend shares.

Every constructor returns a `LinearLayout` with input dims ``("register", "lane", "warp")`` (a thread's
local index, its lane in its thread group and its group in the block; thread = warp * width + lane, the
group `width` being the target's: see `tilecraft.backend.simt.SimtTarget`) and output dims ``dim0, dim1,
...``: the fragment's logical dims, each padded to a power of two.

Layouts an instruction imposes (the mma.sync and wgmma operand and accumulator layouts, say) live in the
`intrinsics` package of the backend that emits the instruction, not here.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product

from tilecraft.layout.linear import LinearLayout, is_power_of_two, log2, next_power_of_two

__all__ = [
    "FRAGMENT_INS",
    "blocked",
    "fragment_dims",
    "linear_from_fragment",
    "linear_from_layout",
    "slice_layout",
    "thread_dims",
]

FRAGMENT_INS = ("register", "lane", "warp")


def fragment_dims(ndim: int) -> tuple[str, ...]:
    """The output dim names of an `ndim`-dimensional fragment: dim0, dim1, ..."""
    return tuple(f"dim{k}" for k in range(ndim))


def thread_dims(threads: int, width: int) -> tuple[tuple[str, int], tuple[str, int]]:
    """`(("lane", n), ("warp", m))` for a block of `threads` threads in groups of `width` (both powers
    of two); a block smaller than one group is all lanes."""
    _require_power_of_two("threads", threads)
    _require_power_of_two("width", width)
    lanes = min(threads, width)
    return ("lane", lanes), ("warp", threads // lanes)


def _require_power_of_two(what: str, value: int) -> None:
    if not is_power_of_two(value):
        raise ValueError(f"{what} must be a power of two, got {value}")


# ---------------------------------------------------------------- free default


def blocked(shape: Sequence[int], threads: int, vector: int = 1, *, width: int) -> LinearLayout:
    """The default layout: the tile flattened row-major, each thread owning `vector` contiguous
    elements of the innermost dim per step, consecutive threads owning consecutive vectors.

    With f = flat index of the padded tile, v = log2(vector), t = log2(threads):
    register bits 0..v-1 -> f bits 0..v-1, thread bits -> f bits v..v+t-1 (lane bits first, then
    warp bits, in groups of `width` lanes), remaining register bits -> the f bits above. `vector` is
    capped at the padded innermost size. When the tile has fewer than threads * vector elements, the thread bits that find
    no flat bit get zero bases: those threads replicate the ones below them.
    """
    padded = tuple(next_power_of_two(int(s)) for s in shape)
    if not padded:
        raise ValueError("blocked() needs at least one dim")
    _require_power_of_two("vector", vector)
    (_, lanes), (_, warps) = thread_dims(threads, width)
    vector = min(vector, padded[-1])
    total_bits = sum(log2(s) for s in padded)
    v_bits, t_bits = log2(vector), log2(threads)
    thread = [1 << (v_bits + b) if v_bits + b < total_bits else 0 for b in range(t_bits)]
    used = v_bits + sum(1 for t in thread if t)
    register = [1 << b for b in range(v_bits)] + [1 << b for b in range(used, total_bits)]
    flat = LinearLayout(
        {
            "register": [(f,) for f in register],
            "lane": [(f,) for f in thread[: log2(lanes)]],
            "warp": [(f,) for f in thread[log2(lanes) :]],
        },
        {"flat": 1 << total_bits},
    )
    return flat.reshape_outs(list(zip(fragment_dims(len(padded)), padded)))


def slice_layout(layout: LinearLayout, dim: int | str) -> LinearLayout:
    """The layout of a reduction's result over `dim` (index or name) of `layout`.

    The dim is projected away: lanes and warps that split it now hold the same element (zero bases,
    the threads a cross-thread reduction combines), and registers that only walked along it are
    removed (a thread keeps one copy). The remaining dims are renamed dim0, dim1, ... in order.
    """
    name = layout.out_names[dim] if isinstance(dim, int) else dim
    projected = layout.project([name]).remove_zero_bases("register")
    renames = {old: new for old, new in zip(projected.out_names, fragment_dims(len(projected.out_names)))}
    return projected.rename_outs(renames)


# ---------------------------------------------------------------- from legacy fragments

MAX_PROBE_POINTS = 1 << 18


def linear_from_fragment(fragment, width: int) -> LinearLayout:
    """The linear layout of a `tilecraft.layout.Fragment` whose thread and local index expressions are
    linear over GF(2) on a power-of-two shape, its threads split into groups of `width` lanes; raises
    ValueError otherwise.

    The fragment's forward map (logical index, replica) -> (local index, thread) is sampled at every
    point, checked to be linear and bijective, inverted, and the replica dim is projected away.
    """
    from tilecraft.ir.eval import evaluate

    if len(fragment.index) != 1:
        raise ValueError(f"only fragments with one local index are linear layouts, got {len(fragment.index)}")
    dims = [*zip(fragment_dims(len(fragment.shape)), fragment.shape), ("rep", fragment.replicate)]
    _check_probe_domain(dims)
    points = {}
    for point in product(*(range(size) for _, size in dims)):
        env = dict(zip(fragment.vars, point[:-1]))
        env[fragment.replica_var] = point[-1]
        points[point] = (int(evaluate(fragment.index[0], env)), int(evaluate(fragment.thread, env)))
    forward = _probe_linear(dims, points, ("register", "thread"))
    if not forward.is_bijective():
        raise ValueError(f"fragment {fragment!r} does not map its elements one to one onto (thread, local)")
    inverse = forward.invert().project(["rep"])
    threads = inverse.in_size("thread")
    (lane, lanes), (warp, warps) = thread_dims(threads, width)
    split = inverse.reshape_ins([("register", inverse.in_size("register")), (warp, warps), (lane, lanes)])
    return split.transpose_ins(FRAGMENT_INS)


def linear_from_layout(layout) -> LinearLayout:
    """The linear layout ("dim0", ...) -> ("offset",) of a `tilecraft.layout.Layout` with one linear
    storage index on a power-of-two shape; raises ValueError otherwise."""
    from tilecraft.ir.eval import evaluate

    if len(layout.index) != 1:
        raise ValueError(f"only layouts with one storage index are linear layouts, got {len(layout.index)}")
    dims = list(zip(fragment_dims(len(layout.shape)), layout.shape))
    _check_probe_domain(dims)
    points = {
        point: (int(evaluate(layout.index[0], dict(zip(layout.vars, point)))),)
        for point in product(*(range(size) for _, size in dims))
    }
    return _probe_linear(dims, points, ("offset",))


def _check_probe_domain(dims: list[tuple[str, int]]) -> None:
    total = 1
    for name, size in dims:
        if not is_power_of_two(size):
            raise ValueError(f"dim {name} has extent {size}, not a power of two, so the layout is not linear")
        total *= size
    if total > MAX_PROBE_POINTS:
        raise ValueError(f"layout has {total} points; at most {MAX_PROBE_POINTS} are checked for linearity")


def _probe_linear(dims, points: dict[tuple[int, ...], tuple[int, ...]], out_names) -> LinearLayout:
    """The linear layout through `points` (input point -> output point), checked at every point."""
    sizes = [
        next_power_of_two(max(values[k] for values in points.values()) + 1) for k in range(len(out_names))
    ]
    bases = {}
    for index, (name, size) in enumerate(dims):
        unit = [0] * len(dims)
        vectors = []
        for bit in range(log2(size)):
            unit[index] = 1 << bit
            vectors.append(points[tuple(unit)])
        bases[name] = vectors
    layout = LinearLayout(bases, list(zip(out_names, sizes)))
    for point, values in points.items():
        if tuple(layout.apply(**dict(zip(bases, point))).values()) != values:
            raise ValueError(
                f"the layout is not linear over GF(2): at {dict(zip(bases, point))} it gives {values}"
            )
    return layout
