"""The intrinsic functions the common language exposes, shared by the language, printer and backends.

`MATH_FLOAT` take and return floating-point values; `MATH_ANY` work on integers too.
"""

from __future__ import annotations

MATH_FLOAT = (
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "floor", "ceil", "round",
    "sin", "cos", "pow",
)  # fmt: skip
MATH_ANY = ("abs",)
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left", "shift_right")
EFFECTS = ("sync_threads",)

ARITY = {"pow": 2, "bitwise_and": 2, "bitwise_or": 2, "bitwise_xor": 2, "shift_left": 2, "shift_right": 2,
         "sync_threads": 0}  # fmt: skip


def arity(op: str) -> int:
    return ARITY.get(op, 1)


KNOWN = frozenset(MATH_FLOAT + MATH_ANY + BITWISE + EFFECTS)
