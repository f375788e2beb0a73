"""TileLang's random numbers: `T.rng_init(seed, seq=None, off=0, generator=...)`, `T.rng_rand()` and
`T.rng_rand_float(bit=32, dist="uniform")`, cuRAND's device API (`curand_init`, `curand`,
`curand_uniform[_double]`, `curand_normal[_double]`) for its generators Philox4_32_10 (the default),
XORWOW and MRG32k3a.

Each `T.rng_init` gives the calling thread a generator state of its own (a 16-word uint32 array allocated
at the top of the kernel, so that it outlives the branch or loop the call is in, as TileLang declares
curand's state at function scope), and later draws of the kernel use the latest one. The generators are
shared device functions (tilecraft/codegen/include/tc_rng.h) that every C-family target compiles, so a
kernel draws the same numbers on each: the integers and uniform values bit for bit as cuRAND does;
normal values through the target's logf / sinf / cosf (each target's header may name cuRAND's own).
"""

from __future__ import annotations

from tilecraft.ir import dtype as dt
from tilecraft.ir import expr as E
from tilecraft.ir import stmt as S
from tilecraft.ir.buffer import Buffer
from tilecraft.ir.op import RNG_INIT, RNG_RAND, RNG_RAND_FLOAT, RNG_STATE_WORDS
from tilecraft.language import builder
from tilecraft.language.extern import access_ptr

__all__ = ["rng_init", "rng_rand", "rng_rand_float"]

# TileLang's (curand's) state type names and tilecraft's short names for the three generators.
GENERATORS = {
    "curandStatePhilox4_32_10_t": "philox",
    "curandStateXORWOW_t": "xorwow",
    "curandStateMRG32k3a_t": "mrg32k3a",
    "philox": "philox",
    "xorwow": "xorwow",
    "mrg32k3a": "mrg32k3a",
}
DISTRIBUTIONS = ("uniform", "normal")


def _generator(name) -> str:
    short = GENERATORS.get(name) if isinstance(name, str) else None
    if short is None:
        raise builder.error(f"T.rng_init: unknown generator {name!r}",
                            hint=f"use one of {', '.join(repr(g) for g in GENERATORS)}")  # fmt: skip
    return short


def _u64(value, what: str) -> E.Expr:
    x = E.convert(value)
    if not (x.dtype.is_integer or x.dtype.is_bool) or x.dtype.lanes != 1:
        raise builder.error(f"T.rng_init: {what} must be an integer, got {x.dtype}")
    return E.cast(x, dt.uint64)


def _default_subsequence(ctx: builder.KernelContext) -> E.Expr:
    """TileLang's default: the thread's global index along x, `tx + bx * threads_x`."""
    return E.add(ctx.thread_vars[0], E.mul(ctx.block_vars[0], ctx.thread_extents[0]))


def rng_init(seed, seq=None, off=0, generator: str = "curandStatePhilox4_32_10_t") -> S.Evaluate:
    """Start this thread's generator at `seed`, subsequence `seq` (default: the thread's global index
    along x) and offset `off`, as `curand_init(seed, seq, off, &state)`."""
    b = builder.current("T.rng_init")
    ctx = b.kernel("T.rng_init")
    short = _generator(generator)
    if seq is None:
        seq = _default_subsequence(ctx)
    args = (_u64(seed, "seed"), _u64(seq, "seq"), _u64(off, "off"))
    state = Buffer(f"rng_state{len(ctx.rng_states)}", (E.const(RNG_STATE_WORDS),), dt.uint32, "local",
                   span=b.span)  # fmt: skip
    ctx.rng_states.append(state)
    ctx.rng_current = (state, short)
    call = E.Call(dt.int32, RNG_INIT, (access_ptr(state, "rw"), *args, E.StringImm(dt.int8, short)))
    return S.Evaluate(call, span=b.span)


def _current(what: str) -> tuple[Buffer, str]:
    ctx = builder.current(what).kernel(what)
    if ctx.rng_current is None:
        raise builder.error(f"{what} draws from the generator of a T.rng_init, and none came before it in this "
                            "kernel", hint="call T.rng_init(seed, ...) first")  # fmt: skip
    return ctx.rng_current


def rng_rand() -> E.Expr:
    """The next 32 random bits of this thread's generator (a uint32), as `curand(&state)`."""
    state, short = _current("T.rng_rand")
    return E.Call(dt.uint32, RNG_RAND, (access_ptr(state, "rw"), E.StringImm(dt.int8, short)))


def rng_rand_float(bit: int = 32, dist: str = "uniform") -> E.Expr:
    """The next random float of this thread's generator: `dist="uniform"` in (0, 1], as curand_uniform
    (`bit=64`: curand_uniform_double); `dist="normal"`, standard normal, as curand_normal[_double]."""
    if bit not in (32, 64):
        raise builder.error(f"T.rng_rand_float: bit must be 32 or 64, got {bit!r}")
    if dist not in DISTRIBUTIONS:
        raise builder.error(f"T.rng_rand_float: dist must be 'uniform' or 'normal', got {dist!r}")
    state, short = _current("T.rng_rand_float")
    args = (access_ptr(state, "rw"), E.StringImm(dt.int8, short), E.StringImm(dt.int8, dist))
    return E.Call(dt.float64 if bit == 64 else dt.float32, RNG_RAND_FLOAT, args)
