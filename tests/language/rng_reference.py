"""cuRAND's device generators in Python, step by step, as the tests' reference for T.rng_*: Philox4_32_10,
XORWOW and MRG32k3a with curand_init's seeding and skip-ahead (done here by stepping, or by plain matrix
powers, never by the polynomial and table tricks of tilecraft/codegen/include/tc_rng.h), curand's integer
and uniform outputs, and the Box-Muller normals in float64. Also the derivation of tc_rng.h's constants."""

from __future__ import annotations

import functools
import math

import numpy as np

M32 = 0xFFFFFFFF
M1, M2 = 4294967087, 4294944443
A1 = ((0, 1, 0), (0, 0, 1), (M1 - 810728, 1403580, 0))
A2 = ((0, 1, 0), (0, 0, 1), (M2 - 1370589, 0, 527612))
TWO_PI_F32 = np.float32(6.2831855)


# ---------------------------------------------------------------------------- Philox4_32_10


def philox_block(ctr: list[int], key: list[int]) -> list[int]:
    c, k = list(ctr), list(key)
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k[0]) & M32, p1 & M32, ((p0 >> 32) ^ c[3] ^ k[1]) & M32, p0 & M32]
        k = [(k[0] + 0x9E3779B9) & M32, (k[1] + 0xBB67AE85) & M32]
    return c


class Philox:
    def __init__(self, seed: int, seq: int, off: int) -> None:
        seed, seq, off = (x % 2**64 for x in (seed, seq, off))
        self.key = [seed & M32, seed >> 32]
        counter = (seq << 64) + off // 4  # the subsequence is the counter's high half
        self.counter = counter % 2**128
        self.index = off % 4
        self.block = self._block()

    def _block(self) -> list[int]:
        words = [(self.counter >> (32 * i)) & M32 for i in range(4)]
        return philox_block(words, self.key)

    def next(self) -> int:
        out = self.block[self.index]
        self.index += 1
        if self.index == 4:
            self.counter = (self.counter + 1) % 2**128
            self.block, self.index = self._block(), 0
        return out


# ---------------------------------------------------------------------------- XORWOW


def xorwow_step(v: list[int]) -> list[int]:
    t = (v[0] ^ (v[0] >> 2)) & M32
    return [v[1], v[2], v[3], v[4], ((v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1))) & M32]


def _gf2_matrix() -> list[int]:
    """XORWOW's step as a 160x160 matrix over GF(2): column j (an int of 160 bits) is the image of bit j."""
    columns = []
    for j in range(160):
        v = [0] * 5
        v[j // 32] = 1 << (j % 32)
        columns.append(_bits(xorwow_step(v)))
    return columns


def _bits(v: list[int]) -> int:
    return sum(w << (32 * i) for i, w in enumerate(v))


def _apply(columns: list[int], x: int) -> int:
    out, j = 0, 0
    while x:
        if x & 1:
            out ^= columns[j]
        x >>= 1
        j += 1
    return out


def _compose(a: list[int], b: list[int]) -> list[int]:
    """The matrix a @ b (b first)."""
    return [_apply(a, col) for col in b]


@functools.cache
def _xorwow_power_of_two(k: int) -> tuple[int, ...]:
    """XORWOW's step matrix to the power 2**k, kept: every thread's skip-ahead reuses the same squares."""
    if k == 0:
        return tuple(_gf2_matrix())
    half = _xorwow_power_of_two(k - 1)
    return tuple(_compose(half, half))


def xorwow_jump(n: int, state: int) -> int:
    """The 160-bit state after n steps: one matrix-vector product per set bit of n."""
    k = 0
    while n:
        if n & 1:
            state = _apply(_xorwow_power_of_two(k), state)
        n >>= 1
        k += 1
    return state


class Xorwow:
    def __init__(self, seed: int, seq: int, off: int) -> None:
        seed, seq, off = (x % 2**64 for x in (seed, seq, off))
        t0 = (1099087573 * ((seed & M32) ^ 0xAAD26B49)) & M32
        t1 = (2591861531 * ((seed >> 32) ^ 0xF7DCEFDD)) & M32
        self.d = (6615241 + t1 + t0) & M32
        v = [
            (123456789 + t0) & M32,
            362436069 ^ t0,
            (521288629 + t1) & M32,
            88675123 ^ t1,
            (5783321 + t0) & M32,
        ]
        x = xorwow_jump(seq * 2**67 + off, _bits(v)) if seq or off > 4096 else None
        if x is None:
            for _ in range(off):
                v = xorwow_step(v)
        else:
            v = [(x >> (32 * i)) & M32 for i in range(5)]
        self.v = v
        self.d = (self.d + 362437 * (off & M32)) & M32

    def next(self) -> int:
        self.v = xorwow_step(self.v)
        self.d = (self.d + 362437) & M32
        return (self.v[4] + self.d) & M32


# ---------------------------------------------------------------------------- MRG32k3a


def mat_mul(a, b, m: int):
    return tuple(tuple(sum(a[i][k] * b[k][j] for k in range(3)) % m for j in range(3)) for i in range(3))


def mat_pow(a, n: int, m: int):
    result = ((1, 0, 0), (0, 1, 0), (0, 0, 1))
    while n:
        if n & 1:
            result = mat_mul(result, a, m)
        a = mat_mul(a, a, m)
        n >>= 1
    return result


def _jump(a, n: int, m: int, s: list[int]) -> list[int]:
    p = mat_pow(a, n, m)
    return [sum(p[i][k] * s[k] for k in range(3)) % m for i in range(3)]


class Mrg32k3a:
    def __init__(self, seed: int, seq: int, off: int) -> None:
        seed, seq, off = (x % 2**64 for x in (seed, seq, off))
        s1, s2 = [12345] * 3, [12345] * 3
        if seed:
            x1, x2 = (seed & M32) ^ 0x55555555, (seed >> 32) ^ 0xAAAAAAAA
            s1 = [x1 * 12345 % M1, x2 * 12345 % M1, x1 * 12345 % M1]
            s2 = [x2 * 12345 % M2, x1 * 12345 % M2, x2 * 12345 % M2]
        n = (seq % 2**51) * 2**76 + off
        self.s1, self.s2 = _jump(A1, n, M1, s1), _jump(A2, n, M2, s2)

    def raw(self) -> int:
        """curand_MRG32k3a: the combination of one step, in (0, m1]."""
        p1 = (1403580 * self.s1[1] - 810728 * self.s1[0]) % M1
        self.s1 = [self.s1[1], self.s1[2], p1]
        p2 = (527612 * self.s2[2] - 1370589 * self.s2[0]) % M2
        self.s2 = [self.s2[1], self.s2[2], p2]
        return p1 - p2 + M1 if p1 <= p2 else p1 - p2

    def next(self) -> int:
        return int(float(self.raw()) * 1.000000048662)


GENERATORS = {"philox": Philox, "xorwow": Xorwow, "mrg32k3a": Mrg32k3a}


# ---------------------------------------------------------------------------- distributions


def _unit_f32(x: int) -> np.float32:
    return np.float32(np.float32(x) * np.float32(2.0**-32) + np.float32(2.0**-33))


def _hq(x: int, y: int) -> float:
    return float(x ^ (y << 21)) * 2.0**-53 + 2.0**-54


def uniform_f32(g) -> np.float32:
    if isinstance(g, Mrg32k3a):
        return np.float32(float(g.raw()) * 2.3283065498378288e-10)
    return _unit_f32(g.next())


def uniform_f64(g) -> float:
    if isinstance(g, Philox):
        return float(g.next()) * 2.0**-32 + 2.0**-32
    if isinstance(g, Xorwow):
        return _hq(g.next(), g.next())
    return float(g.raw()) * 2.3283065498378288e-10


def normal_pairs(g, bits: int):
    """Box-Muller's pair (the first is returned, the second kept), in float64 from the same uniforms
    cuRAND forms (the float32 angle from its fused multiply-add)."""
    if bits == 32:
        if isinstance(g, Mrg32k3a):
            u, v = uniform_f32(g), np.float32(uniform_f32(g) * TWO_PI_F32)
        else:
            x, y = g.next(), g.next()
            step = np.float32(2.0**-32) * TWO_PI_F32
            u, v = _unit_f32(x), np.float32(float(np.float32(y)) * float(step) + float(step) / 2)
        r = math.sqrt(-2.0 * math.log(float(u)))
        return r * math.sin(float(v)), r * math.cos(float(v))
    if isinstance(g, Mrg32k3a):
        u, v = uniform_f64(g), uniform_f64(g) * 2.0
    else:
        x0, x1, y0, y1 = g.next(), g.next(), g.next(), g.next()
        u, v = _hq(x0, x1), float(y0 ^ (y1 << 21)) * 2.0**-52 + 2.0**-53
    r = math.sqrt(-2.0 * math.log(u))
    return r * math.sin(v * math.pi), r * math.cos(v * math.pi)


# ---------------------------------------------------------------------------- tc_rng.h's constants


def berlekamp_massey(bits: list[int]) -> int:
    """The connection polynomial (bit i: coefficient of x^i) of the shortest LFSR giving `bits`."""
    c, b, length, shift = 1, 1, 0, 1
    for n, bit in enumerate(bits):
        d = bit
        for i in range(1, length + 1):
            d ^= ((c >> i) & 1) & bits[n - i]
        if not d:
            shift += 1
        elif 2 * length <= n:
            c, b, length, shift = c ^ (b << shift), c, n + 1 - length, 1
        else:
            c ^= b << shift
            shift += 1
    return c


def xorwow_polynomial() -> int:
    """XORWOW's minimal polynomial, from 400 output bits (degree 160: its period is 2^160 - 1)."""
    v, bits = [123456789, 362436069, 521288629, 88675123, 5783321], []
    for _ in range(400):
        v = xorwow_step(v)
        bits.append(v[4] & 1)
    c = berlekamp_massey(bits)
    degree = c.bit_length() - 1
    return sum(1 << (degree - i) for i in range(degree + 1) if (c >> i) & 1)  # the reciprocal


def poly_pow_x(n: int, p: int) -> int:
    """x^n mod p over GF(2)."""
    degree = p.bit_length() - 1

    def mulmod(a: int, b: int) -> int:
        r = 0
        while b:
            if b & 1:
                r ^= a
            b >>= 1
            a <<= 1
            if (a >> degree) & 1:
                a ^= p
        return r

    result, base = 1, 2
    while n:
        if n & 1:
            result = mulmod(result, base)
        base = mulmod(base, base)
        n >>= 1
    return result
