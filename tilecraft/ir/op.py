"""The intrinsic functions the common language exposes, shared by the language, printer and backends.

`MATH_FLOAT` take and return floating-point values; `MATH_ANY` work on integers too.
"""

from __future__ import annotations

MATH_FLOAT = (
    "exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "floor", "ceil", "round",
    "sin", "cos", "pow",
)  # fmt: skip
MATH_ANY = ("abs",)
# `x * y + z` rounded once (the lanes of T.fma2); every float dtype, 16-bit ones rounded once when stored.
FMA = "fma"
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left", "shift_right")
# `T.device_assert(condition, message)`: a check the kernel makes where it runs (a statement, Evaluate).
DEVICE_ASSERT = "device_assert"
EFFECTS = ("sync_threads", DEVICE_ASSERT)

KNOWN = frozenset(MATH_FLOAT + MATH_ANY + BITWISE + EFFECTS)
