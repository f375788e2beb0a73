"""Row-major addressing as source text, for the printers of lowered IR whatever language they write:
the strides of a compact buffer and the terms of an element's offset."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tilecraft.ir import expr as E
from tilecraft.ir.expr import Expr


def row_major_strides(
    shape: Sequence[Expr], extent_text: Callable[[Expr], str], even_row: Callable[[str], str] | None = None
) -> list[str]:
    """The strides of a compact row-major buffer of `shape`: a product of constant extents is folded into
    one number, another is multiplied by each extent as `extent_text` prints it. With `even_row`, the
    innermost extent counts as rounded up to even (each row of packed 4-bit elements starts on a byte),
    which `even_row` prints for a symbolic extent's text."""
    out, acc = [], "1"
    for k, dim in enumerate(reversed(shape)):
        out.append(acc)
        d = E.const_value(dim)
        padded = k == 0 and even_row is not None
        if acc.isdigit() and isinstance(d, int):
            acc = str(int(acc) * (d + (d & 1) if padded else d))
        elif padded:
            acc = f"{acc} * {even_row(extent_text(dim))}"
        else:
            acc = f"{acc} * {extent_text(dim)}"
    return list(reversed(out))


def offset_terms(
    indices: Sequence[Expr], strides: Sequence[str], index_text: Callable[[Expr], str]
) -> list[str]:
    """The terms of an element's offset, `index * stride` per dimension as `index_text` prints the
    index: none for an index of constant 0, the index alone for a stride of 1."""
    terms = []
    for index, stride in zip(indices, strides):
        if E.const_value(index) == 0:
            continue
        idx = index_text(index)
        terms.append(idx if stride == "1" else f"{idx} * {stride}")
    return terms
