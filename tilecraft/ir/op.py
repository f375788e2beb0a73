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
# C's fmax / fmin of float values: a NaN operand gives the other one (NaN only when both are); the combine
# of the reductions that ignore NaN (T.reduce_max(..., nan_propagate=False)). Each target prints its own
# where that ignores NaN, and a select on a NaN test of the bits where its max / min do not.
FMAX = "fmax"
FMIN = "fmin"
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left", "shift_right")
# `T.device_assert(condition, message)`: a check the kernel makes where it runs (a statement, Evaluate).
DEVICE_ASSERT = "device_assert"
# `T.assume(condition, text)`: what the kernel may assume from this statement on (a statement, Evaluate;
# `text` is the condition as written). Targets that check conditions where the kernel runs check it.
ASSUME = "assume"
EFFECTS = ("sync_threads", DEVICE_ASSERT, ASSUME)
# cuRAND's device generators (T.rng_init / T.rng_rand / T.rng_rand_float, tilecraft/language/random.py):
# rng_init(state, seed, subsequence, offset, generator) fills a thread's state array; rng_rand(state,
# generator) draws a uint32 and rng_rand_float(state, generator, distribution) a float32 or float64, each
# advancing the state (calls with an effect: never merged, hoisted or folded).
RNG_INIT = "rng_init"
RNG_RAND = "rng_rand"
RNG_RAND_FLOAT = "rng_rand_float"
RNG_CALLS = (RNG_INIT, RNG_RAND, RNG_RAND_FLOAT)
# The generators by the short name the IR records, and the words of state each needs (at most RNG_STATE_WORDS).
RNG_GENERATORS = ("philox", "xorwow", "mrg32k3a")
RNG_STATE_WORDS = 16

KNOWN = frozenset(MATH_FLOAT + MATH_ANY + BITWISE + EFFECTS)
