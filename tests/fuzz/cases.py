"""Random kernels of three families (elementwise, reduction, GEMM) as source text, with their runs.

A case is the text of a module defining one `@T.prim_func`, and the runs to make with it: per run every
parameter's array (inputs fresh and random, never zero; outputs poisoned with a sentinel) and a check
that compares the arrays after the launch with a NumPy reference and returns the problems found, each
a line naming the output, the element, the inputs there, the expected and the actual value.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tests.fuzz.choices import Chooser
from tests.fuzz.expressions import INPUT_SCALE, ExprGenerator, Node, evaluate, float_tolerance
from tests.fuzz.numerics import (
    DTYPES,
    int_range,
    is_float,
    np_dtype,
    random_values,
    sentinel,
    unit_roundoff,
    wrap,
)

MAX_REPORTED = 6  # mismatching elements listed per output


@dataclass
class Run:
    """One launch: the sizes it binds, every parameter's array, and the check of the results."""

    sizes: dict[str, int]
    arrays: list[np.ndarray]
    check: Callable[[list[np.ndarray]], list[str]]


@dataclass
class Case:
    family: str
    source: str
    params: list[str]
    make_runs: Callable[[np.random.Generator], list[Run]] = field(repr=False)
    spec: object = field(default=None, repr=False)  # what the case was made from (for minimizing)

    def describe(self) -> str:
        return f"{self.family} kernel:\n{self.source}"


def module(body: str, dynamic: tuple[str, ...] = ()) -> str:
    """A module defining one kernel, with its dynamic dims declared at the top."""
    lines = ["import tilecraft.language as T", ""]
    if dynamic:
        lines += [f'{", ".join(dynamic)} = T.dynamic("{", ".join(dynamic)}")', ""]
    return "\n".join(lines) + "\n" + textwrap.dedent(body).strip() + "\n"


def poisoned(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    return np.full(shape, sentinel(dtype), dtype=np_dtype(dtype))


def size_text(name: str, dynamic: bool, value: int) -> str:
    return name if dynamic else str(value)


# ------------------------------------------------------------------------------------- comparison


def compare(name: str, got: np.ndarray, expected: np.ndarray, tolerance: np.ndarray | None,
            skip: np.ndarray | None, context: Callable[[tuple[int, ...]], str]) -> list[str]:  # fmt: skip
    """Mismatches of one output: exact for integers, within `tolerance` for floats; `skip` marks
    elements whose result depends on rounding. NaN or inf in a float output is always a mismatch."""
    if tolerance is None:
        bad = got != expected
    else:
        values = got.astype(np.float64)
        bad = ~np.isfinite(values) | (np.abs(values - expected) > tolerance)
    if skip is not None:
        bad &= ~skip if tolerance is None else ~(skip & np.isfinite(got.astype(np.float64)))
    where = np.argwhere(bad)
    lines = []
    for index in (tuple(int(i) for i in row) for row in where[:MAX_REPORTED]):
        allowed = "" if tolerance is None else f" (+- {float(tolerance[index]):.3g})"
        lines.append(f"{name}{list(index)}: expected {show(expected[index])}{allowed}, got {show(got[index])}"
                     f"; {context(index)}")  # fmt: skip
    if len(where) > MAX_REPORTED:
        lines.append(f"... {len(where)} of {got.size} elements of {name} differ")
    return lines


def show(value) -> str:
    """A plain number: 120 or 0.25 rather than np.int8(120)."""
    return repr(value.item()) if isinstance(value, np.generic) else repr(value)


def untouched(name: str, got: np.ndarray, dtype: str) -> list[str]:
    """Elements that must keep the poison value (outside the region a kernel writes)."""
    keep = np.isnan(got.astype(np.float64)) if is_float(dtype) else got == sentinel(dtype)
    if keep.all():
        return []
    first = tuple(int(i) for i in np.argwhere(~keep)[0])
    return [f"{name}{list(first)} is outside the written region but was overwritten with {show(got[first])} "
            f"({int((~keep).sum())} such elements)"]  # fmt: skip


def unchanged_inputs(names: list[str], before: list[np.ndarray], after: list[np.ndarray]) -> list[str]:
    return [f"input {n} was modified by the kernel" for n, b, a in zip(names, before, after)
            if not np.array_equal(b, a, equal_nan=True)]  # fmt: skip


# ------------------------------------------------------------------------------------ elementwise

LAYOUTS = ("direct1d", "fragment1d", "direct2d", "fragment2d")
BROADCASTS = ("full", "row", "col")  # a 2-D input: (m, n), or (n,) shared by the rows, or (m,) by the columns


@dataclass
class Elementwise:
    """Outputs Y0, Y1 ... each an expression of the inputs X0, X1 ... (one kernel tests several)."""

    exprs: list[Node]
    input_dtypes: list[str]
    out_dtypes: list[str]
    layout: str
    dynamic: bool
    block: tuple[int, ...]
    threads: int
    broadcast: list[str]
    scopes: list[str]  # fragment layouts: where each input tile lives
    run_sizes: list[dict[str, int]]
    pad: int  # direct1d: the outputs are longer than n by this many never-written elements


def elementwise_case(choose: Chooser) -> Case:
    input_dtypes = [choose.choice(DTYPES) for _ in range(choose.integer(1, 3))]
    out_dtypes = [choose.choice(DTYPES) for _ in range(choose.integer(1, 3))]
    generator = ExprGenerator(choose, input_dtypes)
    exprs = [generator.expr(d, choose.integer(2, 4)) for d in out_dtypes]
    layout = choose.choice(LAYOUTS)
    dynamic = choose.chance(35)
    two_d = layout.endswith("2d")
    if two_d:
        block = (choose.choice((8, 16, 4, 32, 1)), choose.choice((32, 16, 64, 8)))
    else:
        block = (choose.choice((128, 64, 256, 32, 96, 48)),)
    spec = Elementwise(
        exprs=exprs, input_dtypes=input_dtypes, out_dtypes=out_dtypes, layout=layout, dynamic=dynamic,
        block=block, threads=choose.choice((128, 32, 64, 256)),
        broadcast=[choose.choice(BROADCASTS) if two_d else "full" for _ in input_dtypes],
        scopes=[choose.choice(("fragment", "shared")) for _ in input_dtypes],
        run_sizes=[_elementwise_sizes(choose, two_d) for _ in range(2 if dynamic else 1)],
        pad=choose.integer(0, 5) if layout == "direct1d" else 0,
    )  # fmt: skip
    return elementwise_from(spec)


def elementwise_from(spec: Elementwise) -> Case:
    runs = lambda rng: [_elementwise_run(spec, sizes, rng) for sizes in spec.run_sizes]  # noqa: E731
    return Case("elementwise", _elementwise_source(spec), _elementwise_params(spec), runs, spec)


def _elementwise_sizes(choose: Chooser, two_d: bool) -> dict[str, int]:
    if two_d:
        return {"m": choose.integer(1, 40), "n": choose.integer(1, 90)}
    return {"n": choose.integer(1, 1200)}


def _elementwise_params(spec: Elementwise) -> list[str]:
    return [f"X{k}" for k in range(len(spec.input_dtypes))] + [f"Y{k}" for k in range(len(spec.exprs))]


def _input_shape(spec: Elementwise, k: int, sizes: dict[str, int], text: bool = False) -> tuple:
    """Input k's shape for these sizes (as source text when `text`: the dynamic dims by name)."""
    dims = {d: size_text(d, spec.dynamic, v) if text else v for d, v in sizes.items() if d in "mn"}
    if "m" not in dims:
        return (dims["n"],)
    return {"full": (dims["m"], dims["n"]), "row": (dims["n"],), "col": (dims["m"],)}[spec.broadcast[k]]


def _tuple_text(shape: tuple) -> str:
    return f"({shape[0]},)" if len(shape) == 1 else f"({', '.join(map(str, shape))})"


def _elementwise_source(spec: Elementwise) -> str:
    sizes = spec.run_sizes[0]
    two_d = "m" in sizes
    params = [f'X{k}: T.Tensor({_tuple_text(_input_shape(spec, k, sizes, True))}, "{d}")'
              for k, d in enumerate(spec.input_dtypes)]  # fmt: skip
    if two_d:
        out_shape = _tuple_text(_dims(spec))
    elif spec.pad:
        out_shape = "(n_out,)" if spec.dynamic else f"({sizes['n'] + spec.pad},)"
    else:
        out_shape = _tuple_text((size_text("n", spec.dynamic, sizes["n"]),))
    params += [f'Y{k}: T.Tensor({out_shape}, "{d}")' for k, d in enumerate(spec.out_dtypes)]
    body = {"direct1d": _direct1d, "fragment1d": _fragment1d, "direct2d": _direct2d,
            "fragment2d": _fragment2d}[spec.layout](spec)  # fmt: skip
    dynamic = (("m", "n") if two_d else ("n", "n_out") if spec.pad else ("n",)) if spec.dynamic else ()
    head = "@T.prim_func\ndef fuzz_elementwise(" + ", ".join(params) + "):\n"
    return module(head + textwrap.indent(body, "    "), dynamic)


def _dims(spec: Elementwise) -> tuple[str, str]:
    sizes = spec.run_sizes[0]
    return size_text("m", spec.dynamic, sizes.get("m", 0)), size_text("n", spec.dynamic, sizes["n"])


def _stores(spec: Elementwise, target: str, leaves: list[str], indent: str) -> list[str]:
    """One line per output: `target` (a format with {k}) = expression k."""
    return [f"{indent}{target.format(k=k)} = {e.text(leaves)}" for k, e in enumerate(spec.exprs)]


def _direct1d(spec: Elementwise) -> str:
    (b,), n = spec.block, _dims(spec)[1]
    leaves = [f"X{k}[idx]" for k in range(len(spec.input_dtypes))]
    lines = [
        f"with T.Kernel(T.ceildiv({n}, {b}), threads={spec.threads}) as bx:",
        f"    for i in T.Parallel({b}):",
        f"        idx = bx * {b} + i",
        f"        if idx < {n}:",
        *_stores(spec, "Y{k}[idx]", leaves, " " * 12),
    ]
    return "\n".join(lines) + "\n"


def _fragment1d(spec: Elementwise) -> str:
    (b,), n = spec.block, _dims(spec)[1]
    lines = [f"with T.Kernel(T.ceildiv({n}, {b}), threads={spec.threads}) as bx:"]
    for k, d in enumerate(spec.input_dtypes):
        lines.append(f'    x{k} = T.alloc_{spec.scopes[k]}(({b},), "{d}")')
        lines.append(f"    T.copy(X{k}[bx * {b}], x{k})")
    lines += [f'    y{k} = T.alloc_fragment(({b},), "{d}")' for k, d in enumerate(spec.out_dtypes)]
    lines.append(f"    for i in T.Parallel({b}):")
    lines += _stores(spec, "y{k}[i]", [f"x{k}[i]" for k in range(len(spec.input_dtypes))], " " * 8)
    lines += [f"    T.copy(y{k}, Y{k}[bx * {b}])" for k in range(len(spec.exprs))]
    return "\n".join(lines) + "\n"


def _direct2d(spec: Elementwise) -> str:
    (bm, bn), (m, n) = spec.block, _dims(spec)
    index = {"full": "r, c", "row": "c", "col": "r"}
    leaves = [f"X{k}[{index[spec.broadcast[k]]}]" for k in range(len(spec.input_dtypes))]
    lines = [
        f"with T.Kernel(T.ceildiv({n}, {bn}), T.ceildiv({m}, {bm}), threads={spec.threads}) as (bx, by):",
        f"    for i, j in T.Parallel({bm}, {bn}):",
        f"        r = by * {bm} + i",
        f"        c = bx * {bn} + j",
        f"        if r < {m} and c < {n}:",
        *_stores(spec, "Y{k}[r, c]", leaves, " " * 12),
    ]
    return "\n".join(lines) + "\n"


def _fragment2d(spec: Elementwise) -> str:
    (bm, bn), (m, n) = spec.block, _dims(spec)
    lines = [
        f"with T.Kernel(T.ceildiv({n}, {bn}), T.ceildiv({m}, {bm}), threads={spec.threads}) as (bx, by):"
    ]
    tile = {"full": (f"({bm}, {bn})", f"[by * {bm}, bx * {bn}]", "[i, j]"),
            "row": (f"({bn},)", f"[bx * {bn}]", "[j]"), "col": (f"({bm},)", f"[by * {bm}]", "[i]")}  # fmt: skip
    leaves = []
    for k, d in enumerate(spec.input_dtypes):
        shape, start, index = tile[spec.broadcast[k]]
        lines.append(f'    x{k} = T.alloc_{spec.scopes[k]}({shape}, "{d}")')
        lines.append(f"    T.copy(X{k}{start}, x{k})")
        leaves.append(f"x{k}{index}")
    lines += [f'    y{k} = T.alloc_fragment(({bm}, {bn}), "{d}")' for k, d in enumerate(spec.out_dtypes)]
    lines.append(f"    for i, j in T.Parallel({bm}, {bn}):")
    lines += _stores(spec, "y{k}[i, j]", leaves, " " * 8)
    lines += [f"    T.copy(y{k}, Y{k}[by * {bm}, bx * {bn}])" for k in range(len(spec.exprs))]
    return "\n".join(lines) + "\n"


def _elementwise_run(spec: Elementwise, sizes: dict[str, int], rng: np.random.Generator) -> Run:
    inputs = [
        random_values(rng, _input_shape(spec, k, sizes), d, INPUT_SCALE)
        for k, d in enumerate(spec.input_dtypes)
    ]
    if "m" in sizes:
        shape = out_shape = (sizes["m"], sizes["n"])
        run_sizes = dict(sizes)
    else:
        shape, out_shape = (sizes["n"],), (sizes["n"] + spec.pad,)
        run_sizes = {**sizes, "n_out": sizes["n"] + spec.pad} if spec.pad and spec.dynamic else dict(sizes)
    outputs = [poisoned(out_shape, d) for d in spec.out_dtypes]
    full = [np.broadcast_to(_broadcastable(x, spec.broadcast[k]), shape) for k, x in enumerate(inputs)]
    saved = [x.copy() for x in inputs]
    n_in = len(inputs)

    def check(after: list[np.ndarray]) -> list[str]:
        problems = unchanged_inputs(_elementwise_params(spec)[:n_in], saved, after[:n_in])
        for k, (expr, dtype) in enumerate(zip(spec.exprs, spec.out_dtypes)):
            problems += _check_output(f"Y{k}", expr, dtype, full, after[n_in + k], shape, spec.pad)
        return problems

    return Run(run_sizes, [*inputs, *outputs], check)


def _check_output(name, expr, dtype, full, got, shape, pad) -> list[str]:
    root = evaluate(expr, full)
    tolerance = float_tolerance(root, dtype) if is_float(dtype) else None
    expected = root.v if is_float(dtype) else root.v.astype(np_dtype(dtype))

    def context(index):
        return "inputs there: " + ", ".join(f"X{k}={show(full[k][index])}" for k in sorted(expr.uses()))

    written = got[: shape[0]] if len(shape) == 1 else got
    problems = compare(name, written, expected, tolerance, root.amb, context)
    if len(shape) == 1 and pad:
        problems += untouched(f"{name}[n:]", got[shape[0] :], dtype)
    return problems


def _broadcastable(x: np.ndarray, broadcast: str) -> np.ndarray:
    return x[:, None] if broadcast == "col" else x


# ------------------------------------------------------------------------------------- reductions

REDUCE_DTYPES = {  # source dtype: accumulator dtypes allowed for it (the first is the plain choice)
    "float32": ("float32", "float64"), "float64": ("float64",), "float16": ("float32", "float16"),
    "bfloat16": ("float32",), "int32": ("int32", "int64"), "int8": ("int32", "int8", "int16"),
    "uint8": ("int32", "uint8", "uint32"), "int16": ("int32", "int16"), "int64": ("int64",),
    "uint32": ("uint32", "uint64"), "uint16": ("int32", "uint16"),
}  # fmt: skip
REDUCE_KINDS = ("sum", "max", "min", "abssum", "absmax")


@dataclass
class Reduction:
    kind: str
    dtype: str
    acc_dtype: str
    out_dtype: str
    dim: int  # 1: one result per row; 0: one result per column
    chunked: bool  # the reduced dim is walked in tiles with clear=False
    block: tuple[int, int]  # (rows, cols) of the tile
    threads: int
    scope: str
    dynamic: bool
    keep_dim: bool
    run_sizes: list[dict[str, int]]


def reduction_case(choose: Chooser) -> Case:
    dtype = choose.choice(tuple(REDUCE_DTYPES))
    acc_dtype = choose.choice(REDUCE_DTYPES[dtype])
    kind = choose.choice(REDUCE_KINDS if is_float(dtype) else REDUCE_KINDS[:3])
    out_dtype = acc_dtype
    if choose.chance(20):
        out_dtype = choose.choice(
            ("float16", "bfloat16", "float32") if is_float(acc_dtype) else ("int8", "int16", "int32")
        )
    dynamic = choose.chance(30)
    chunked = dynamic or choose.chance(50)
    spec = Reduction(
        kind=kind, dtype=dtype, acc_dtype=acc_dtype, out_dtype=out_dtype, dim=choose.choice((1, 0)),
        chunked=chunked, block=(choose.choice((16, 8, 32, 4, 1)), choose.choice((32, 64, 16, 8))),
        threads=choose.choice((128, 32, 64)), scope=choose.choice(("fragment", "staged")), dynamic=dynamic,
        keep_dim=choose.chance(15),
        run_sizes=[{"m": choose.integer(1, 70), "n": choose.integer(1, 150)} for _ in range(2 if dynamic else 1)],
    )  # fmt: skip
    if not chunked:  # the whole reduced dim is one tile
        sizes = spec.run_sizes[0]
        spec.block = (spec.block[0], sizes["n"]) if spec.dim == 1 else (sizes["m"], spec.block[1])
    runs = lambda rng: [_reduction_run(spec, sizes, rng) for sizes in spec.run_sizes]  # noqa: E731
    return Case("reduction", _reduction_source(spec), ["X", "Out"], runs, spec)


def _identity(spec: Reduction) -> str:
    acc = spec.acc_dtype
    if spec.kind in ("sum", "abssum", "absmax"):
        return "0"
    if is_float(acc):
        return f'{"-" if spec.kind == "max" else ""}T.infinity("{acc}")'
    return f'T.{"min_value" if spec.kind == "max" else "max_value"}("{acc}")'


def _reduction_source(spec: Reduction) -> str:
    sizes = spec.run_sizes[0]
    m, n = size_text("m", spec.dynamic, sizes["m"]), size_text("n", spec.dynamic, sizes["n"])
    bm, bn = spec.block
    kept, reduced, bkept, breduced = (m, n, bm, bn) if spec.dim == 1 else (n, m, bn, bm)
    acc_shape = (f"({bkept}, 1)" if spec.dim == 1 else f"(1, {bkept})") if spec.keep_dim else f"({bkept},)"
    out_shape = (f"({kept}, 1)" if spec.dim == 1 else f"(1, {kept})") if spec.keep_dim else f"({kept},)"
    start = lambda k: f"[bx * {bm}, {k}]" if spec.dim == 1 else f"[{k}, bx * {bn}]"  # noqa: E731
    out_start = (
        (f"[bx * {bkept}, 0]" if spec.dim == 1 else f"[0, bx * {bkept}]")
        if spec.keep_dim
        else f"[bx * {bkept}]"
    )
    lines = [
        "@T.prim_func",
        f'def fuzz_reduce(X: T.Tensor(({m}, {n}), "{spec.dtype}"), Out: T.Tensor({out_shape}, "{spec.out_dtype}")):',
        f"    with T.Kernel(T.ceildiv({kept}, {bkept}), threads={spec.threads}) as bx:",
        f'        tile = T.alloc_fragment(({bm}, {bn}), "{spec.dtype}")',
        f'        acc = T.alloc_fragment({acc_shape}, "{spec.acc_dtype}")',
    ]  # fmt: skip
    if spec.scope == "staged":  # through shared memory: global -> shared -> fragment
        lines.insert(-2, f'        staged = T.alloc_shared(({bm}, {bn}), "{spec.dtype}")')
    load = lambda k, pad: ([f"{pad}T.copy(X{start(k)}, staged)", f"{pad}T.copy(staged, tile)"]  # noqa: E731
                           if spec.scope == "staged" else [f"{pad}T.copy(X{start(k)}, tile)"])  # fmt: skip
    if spec.chunked:
        lines += [
            f"        T.fill(acc, {_identity(spec)})",
            f"        for k in T.serial(T.ceildiv({reduced}, {breduced})):",
            *load(f"k * {breduced}", " " * 12),
            f"            T.reduce_{spec.kind}(tile, acc, dim={spec.dim}, clear=False)",
        ]
    else:
        dim = spec.dim if spec.dim == 0 else -1
        lines += [*load(0, " " * 8), f"        T.reduce_{spec.kind}(tile, acc, dim={dim})"]
    lines.append(f"        T.copy(acc, Out{out_start})")
    return module("\n".join(lines), ("m", "n") if spec.dynamic else ())


def _reduction_run(spec: Reduction, sizes: dict[str, int], rng: np.random.Generator) -> Run:
    m, n = sizes["m"], sizes["n"]
    x = random_values(rng, (m, n), spec.dtype)
    kept = m if spec.dim == 1 else n
    out_shape = ((kept, 1) if spec.dim == 1 else (1, kept)) if spec.keep_dim else (kept,)
    saved = x.copy()

    def check(after: list[np.ndarray]) -> list[str]:
        problems = unchanged_inputs(["X"], [saved], after[:1])
        expected, tolerance = _reduction_reference(spec, saved)
        got = after[1].reshape(-1)

        def context(index):
            line = saved[index[0], :] if spec.dim == 1 else saved[:, index[0]]
            return f"the reduced {'row' if spec.dim == 1 else 'column'} starts {line[:6].tolist()}"

        return problems + compare("Out", got, expected, tolerance, None, context)

    return Run(dict(sizes), [x, poisoned(out_shape, spec.out_dtype)], check)


def _reduction_reference(spec: Reduction, x: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """Over the tensor padded with zeros to whole tiles: a T.copy past the edge loads zeros."""
    bm, bn = spec.block
    m, n = x.shape
    padded = np.zeros((-(-m // bm) * bm, -(-n // bn) * bn), dtype=x.dtype)
    padded[:m, :n] = x
    padded = padded[:m, :] if spec.dim == 1 else padded[:, :n]  # rows (columns) past the edge are not stored
    axis = spec.dim
    if not is_float(spec.acc_dtype):
        acc = padded.astype(np_dtype(spec.acc_dtype))
        with np.errstate(all="ignore"):
            result = {"sum": lambda: acc.sum(axis=axis, dtype=acc.dtype), "max": lambda: acc.max(axis=axis),
                      "min": lambda: acc.min(axis=axis)}[spec.kind]()  # fmt: skip
        return wrap(result.astype(object), spec.out_dtype), None
    values = padded.astype(np.float64)
    if spec.kind.startswith("abs"):
        values = np.abs(values)
    kind = spec.kind.removeprefix("abs")
    result = {"sum": values.sum, "max": values.max, "min": values.min}[kind](axis=axis)
    tolerance = np.zeros(result.shape)
    if kind == "sum":
        terms = values.shape[axis]
        tolerance = 2 * terms * unit_roundoff(spec.acc_dtype) * np.abs(values).sum(axis=axis)
    tolerance = tolerance + unit_roundoff(spec.out_dtype) * np.abs(result)
    return result, tolerance


# ------------------------------------------------------------------------------------------ GEMM

GEMM_DTYPES = (  # (A and B, accumulator, possible C dtypes)
    ("float32", "float32", ("float32",)), ("float16", "float32", ("float32", "float16")),
    ("bfloat16", "float32", ("float32", "bfloat16")), ("float64", "float64", ("float64",)),
    ("float16", "float16", ("float16",)), ("int8", "int32", ("int32",)), ("uint8", "int32", ("int32",)),
)  # fmt: skip


@dataclass
class Gemm:
    dtype: str
    acc_dtype: str
    out_dtype: str
    trans_a: bool
    trans_b: bool
    block: tuple[int, int, int]
    threads: int
    stages: int
    a_scope: str
    dynamic: bool
    run_sizes: list[dict[str, int]]


def gemm_case(choose: Chooser) -> Case:
    dtype, acc, outs = choose.choice(GEMM_DTYPES)
    dynamic = choose.chance(30)
    # A in registers is the flash-attention pattern: 16-bit operands into float32, FullRow warps.
    registers_ok = acc == "float32" and dtype in ("float16", "bfloat16")
    spec = Gemm(
        dtype=dtype, acc_dtype=acc, out_dtype=choose.choice(outs), trans_a=choose.chance(40),
        trans_b=choose.chance(40),
        block=(choose.choice((32, 64, 16)), choose.choice((32, 64, 16)), choose.choice((32, 16, 64))),
        threads=choose.choice((128, 64, 256)), stages=choose.integer(0, 3),
        a_scope=choose.choice(("shared", "fragment") if registers_ok else ("shared",)), dynamic=dynamic,
        run_sizes=[{"M": choose.integer(1, 150), "N": choose.integer(1, 150), "K": choose.integer(1, 150)}
                   for _ in range(2 if dynamic else 1)],
    )  # fmt: skip
    runs = lambda rng: [_gemm_run(spec, sizes, rng) for sizes in spec.run_sizes]  # noqa: E731
    return Case("gemm", _gemm_source(spec), ["A", "B", "C"], runs, spec)


def _gemm_source(spec: Gemm) -> str:
    sizes = spec.run_sizes[0]
    M, N, K = (size_text(d, spec.dynamic, sizes[d]) for d in "MNK")
    bm, bn, bk = spec.block
    a_shape, a_tile, a_start = ((K, M), (bk, bm), f"[k * {bk}, by * {bm}]") if spec.trans_a else \
        ((M, K), (bm, bk), f"[by * {bm}, k * {bk}]")  # fmt: skip
    b_shape, b_tile, b_start = ((N, K), (bn, bk), f"[bx * {bn}, k * {bk}]") if spec.trans_b else \
        ((K, N), (bk, bn), f"[k * {bk}, bx * {bn}]")  # fmt: skip
    d = spec.dtype
    policy = ", policy=T.GemmWarpPolicy.FullRow" if spec.a_scope == "fragment" else ""
    lines = [
        "@T.prim_func",
        f'def fuzz_gemm(A: T.Tensor({_tuple_text(a_shape)}, "{d}"), B: T.Tensor({_tuple_text(b_shape)}, "{d}"),',
        f'              C: T.Tensor(({M}, {N}), "{spec.out_dtype}")):',
        f"    with T.Kernel(T.ceildiv({N}, {bn}), T.ceildiv({M}, {bm}), threads={spec.threads}) as (bx, by):",
        f'        A_tile = T.alloc_{spec.a_scope}({_tuple_text(a_tile)}, "{d}")',
        f'        B_tile = T.alloc_shared({_tuple_text(b_tile)}, "{d}")',
        f'        C_local = T.alloc_fragment(({bm}, {bn}), "{spec.acc_dtype}")',
        "        T.clear(C_local)",
        f"        for k in T.Pipelined(T.ceildiv({K}, {bk}), num_stages={spec.stages}):",
        f"            T.copy(A{a_start}, A_tile)",
        f"            T.copy(B{b_start}, B_tile)",
        f"            T.gemm(A_tile, B_tile, C_local, transpose_A={spec.trans_a}, transpose_B={spec.trans_b}{policy})",
        f"        T.copy(C_local, C[by * {bm}, bx * {bn}])",
    ]  # fmt: skip
    return module("\n".join(lines), ("M", "N", "K") if spec.dynamic else ())


def _gemm_run(spec: Gemm, sizes: dict[str, int], rng: np.random.Generator) -> Run:
    M, N, K = sizes["M"], sizes["N"], sizes["K"]
    a_shape = (K, M) if spec.trans_a else (M, K)
    b_shape = (N, K) if spec.trans_b else (K, N)
    a, b = (random_values(rng, s, spec.dtype, scale=2.0) for s in (a_shape, b_shape))
    saved = [a.copy(), b.copy()]

    def check(after: list[np.ndarray]) -> list[str]:
        problems = unchanged_inputs(["A", "B"], saved, after[:2])
        a64, b64 = (x.astype(np.float64) for x in saved)
        a64, b64 = a64.T if spec.trans_a else a64, b64.T if spec.trans_b else b64
        expected = a64 @ b64
        tolerance = None
        if is_float(spec.acc_dtype):
            magnitude = np.abs(a64) @ np.abs(b64)
            tolerance = 2 * K * unit_roundoff(spec.acc_dtype) * magnitude + unit_roundoff(
                spec.out_dtype
            ) * np.abs(expected)
        else:
            lo, hi = int_range(spec.acc_dtype)
            assert lo <= expected.min() and expected.max() <= hi, "the reference must not overflow"
            expected = expected.astype(np_dtype(spec.acc_dtype))

        def context(index):
            i, j = index
            return f"row {i} of op(A) starts {a64[i, :4].tolist()}, column {j} of op(B) starts {b64[:4, j].tolist()}"

        return problems + compare("C", after[2], expected, tolerance, None, context)

    return Run(dict(sizes), [a, b, poisoned((M, N), spec.out_dtype)], check)


FAMILIES: dict[str, Callable[[Chooser], Case]] = {
    "elementwise": elementwise_case,
    "reduction": reduction_case,
    "gemm": gemm_case,
}
