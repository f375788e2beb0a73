"""TileLang's host-side integer helpers (`tilelang.math`): `cdiv` and `next_power_of_2`.

Both work on Python ints; `cdiv` also takes kernel expressions (a `T.dynamic` dim), as TileLang's does.
"""

from __future__ import annotations

from typing import Any


def _check_int(value: Any, name: str, where: str) -> None:
    from tilecraft.ir.expr import Expr

    if isinstance(value, bool) or not isinstance(value, (int, Expr)):
        raise TypeError(f"{where}: {name} must be an int (or a kernel integer expression), got {value!r}")
    if isinstance(value, Expr) and not value.dtype.is_integer:
        raise TypeError(f"{where}: {name} is a {value.dtype} expression; it must be an integer")


def cdiv(a: Any, b: Any) -> Any:
    """`ceil(a / b)` for a positive divisor: how many blocks of `b` cover `a`."""
    _check_int(a, "a", "cdiv")
    _check_int(b, "b", "cdiv")
    if isinstance(b, int) and b <= 0:
        raise ValueError(f"cdiv: the divisor b must be positive, got {b}")
    return (a + b - 1) // b


def next_power_of_2(x: int) -> int:
    """The smallest power of two >= x (x >= 1): 1, 2, 4, 8, ..."""
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"next_power_of_2: x must be an int, got {x!r}")
    if x < 1:
        raise ValueError(f"next_power_of_2: x must be >= 1, got {x}")
    return 1 << (x - 1).bit_length()


__all__ = ["cdiv", "next_power_of_2"]
