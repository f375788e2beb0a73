/* T.rng_init / T.rng_rand / T.rng_rand_float: cuRAND's device generators Philox4_32_10, XORWOW and
 * MRG32k3a, written from their published algorithms so that every C-family target draws the same
 * numbers as curand_init / curand / curand_uniform[_double] / curand_normal[_double] do on a GPU.
 * Inserted into a kernel's source only when the kernel draws random numbers. The including header
 * defines TC_FN (and TC_PRIVATE where pointers to a thread's own memory need an address space) and may
 * name its math functions (TC_RNG_LOGF ...) before this text.
 *
 * A generator's state is 16 uint32 words of a thread's own array:
 *   Philox:   counter [0..3], key [4..5], the current block of four outputs [6..9], the next output's
 *             index in it [10]
 *   XORWOW:   d [0], v [1..5]
 *   MRG32k3a: s1 [0..2], s2 [3..5]
 *   all:      Box-Muller's spare float normal: flag [11], bits [13]; spare double: flag [12], bits [14..15]
 *
 * Jumps ahead: Philox adds to its counter. XORWOW's v is a linear map over GF(2) of period 2^160 - 1:
 * n steps are q(M) v for q = x^n mod P, P its minimal polynomial (degree 160); curand's subsequences are
 * 2^67 steps apart (x^(2^67) mod P below). MRG32k3a's components are 3x3 matrices modulo m1 and m2, raised
 * by squaring; subsequences are 2^76 steps apart (A^(2^76) below), the subsequence number taken modulo
 * 2^51 as curand documents. The constants are derived and checked in tests/language/rng_reference.py. */

#ifndef TC_PRIVATE
#define TC_PRIVATE
#endif
#ifndef TC_RNG_LOGF
#define TC_RNG_LOGF logf
#define TC_RNG_SQRTF sqrtf
#define TC_RNG_FMAF fmaf
#define TC_RNG_LOG log
#define TC_RNG_SQRT sqrt
#endif
#ifndef TC_RNG_SINCOSF /* curand on a GPU uses the fast __sincosf, on the host sinf and cosf */
#define TC_RNG_SINCOSF(x, s, c) (*(s) = sinf(x), *(c) = cosf(x))
#endif
#ifndef TC_RNG_SINCOSPI /* curand on a GPU uses sincospi, on the host sin and cos of x * pi */
#define TC_RNG_SINCOSPI(x, s, c) (*(s) = sin((x) * 3.1415926535897932), *(c) = cos((x) * 3.1415926535897932))
#endif

#define TC_RNG_2POW32_INV 2.3283064e-10f                /* 2^-32 */
#define TC_RNG_2POW32_INV_2PI (2.3283064e-10f * 6.2831855f)
#define TC_RNG_2POW53_INV_DOUBLE 1.1102230246251565e-16 /* 2^-53 */
#define TC_RNG_MRG_NORM 2.3283065498378288e-10          /* 1 / (m1 + 1) */
#define TC_RNG_MRG_BITS_NORM 1.000000048662
#define TC_RNG_M1 4294967087u
#define TC_RNG_M2 4294944443u

/* ------------------------------------------------------------------ Philox4_32_10 */

TC_FN void tc_philox_block(TC_PRIVATE uint32_t* st) {
    uint32_t c0 = st[0], c1 = st[1], c2 = st[2], c3 = st[3], k0 = st[4], k1 = st[5];
    for (int r = 0; r < 10; ++r) {
        const uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        c0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        c1 = (uint32_t)p1;
        c2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c3 = (uint32_t)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    st[6] = c0; st[7] = c1; st[8] = c2; st[9] = c3;
}
/* The counter's low 64 bits (words 0, 1) advanced by n, carrying into the high ones. */
TC_FN void tc_philox_advance(TC_PRIVATE uint32_t* st, uint64_t n) {
    const uint32_t lo = (uint32_t)n;
    uint32_t hi = (uint32_t)(n >> 32);
    st[0] += lo;
    if (st[0] < lo) hi++;
    st[1] += hi;
    if (hi <= st[1]) return;
    if (++st[2]) return;
    ++st[3];
}
TC_FN void tc_rng_init_philox(TC_PRIVATE uint32_t* st, uint64_t seed, uint64_t seq, uint64_t off) {
    for (int i = 0; i < 16; ++i) st[i] = 0u;
    st[4] = (uint32_t)seed;
    st[5] = (uint32_t)(seed >> 32);
    /* the subsequence is the counter's high 64 bits */
    const uint32_t lo = (uint32_t)seq;
    uint32_t hi = (uint32_t)(seq >> 32);
    st[2] += lo;
    if (st[2] < lo) hi++;
    st[3] += hi;
    /* the offset: whole blocks of four, then the position in the block */
    uint64_t blocks = off / 4u;
    st[10] = (uint32_t)(off & 3u);
    tc_philox_advance(st, blocks);
    tc_philox_block(st);
}
TC_FN uint32_t tc_rng_philox(TC_PRIVATE uint32_t* st) {
    const uint32_t out = st[6 + st[10]];
    if (++st[10] == 4u) {
        tc_philox_advance(st, 1u);
        tc_philox_block(st);
        st[10] = 0u;
    }
    return out;
}

/* ------------------------------------------------------------------ XORWOW */

TC_FN void tc_xorwow_step(TC_PRIVATE uint32_t* v) {
    const uint32_t t = v[0] ^ (v[0] >> 2);
    v[0] = v[1]; v[1] = v[2]; v[2] = v[3]; v[3] = v[4];
    v[4] = (v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1));
}
/* r = a * b mod P over GF(2): polynomials of degree < 160, coefficient i in bit i % 32 of word i / 32. */
TC_FN void tc_xorwow_mulmod(TC_PRIVATE uint32_t* r, TC_PRIVATE const uint32_t* a, TC_PRIVATE const uint32_t* b) {
    const uint32_t p[5] = {0x00060001u, 0x08610030u, 0x00062121u, 0x0f3c0035u, 0x00000f0eu}; /* P - x^160 */
    uint32_t acc[5] = {0u, 0u, 0u, 0u, 0u};
    for (int i = 159; i >= 0; --i) {
        const uint32_t top = acc[4] >> 31;
        for (int k = 4; k > 0; --k) acc[k] = (acc[k] << 1) | (acc[k - 1] >> 31);
        acc[0] <<= 1;
        if (top) for (int k = 0; k < 5; ++k) acc[k] ^= p[k];
        if ((a[i >> 5] >> (i & 31)) & 1u) for (int k = 0; k < 5; ++k) acc[k] ^= b[k];
    }
    for (int k = 0; k < 5; ++k) r[k] = acc[k];
}
/* v advanced by n * 2^s steps, `base` being x^(2^s) mod P. */
TC_FN void tc_xorwow_jump(TC_PRIVATE uint32_t* v, uint64_t n, TC_PRIVATE const uint32_t* base) {
    if (n == 0u) return;
    uint32_t q[5] = {1u, 0u, 0u, 0u, 0u}, g[5], w[5], acc[5] = {0u, 0u, 0u, 0u, 0u};
    for (int k = 0; k < 5; ++k) g[k] = base[k];
    for (; n != 0u; n >>= 1) {
        if (n & 1u) tc_xorwow_mulmod(q, q, g);
        if (n > 1u) tc_xorwow_mulmod(g, g, g);
    }
    for (int k = 0; k < 5; ++k) w[k] = v[k];
    for (int i = 0; i < 160; ++i) { /* q(M) v */
        if ((q[i >> 5] >> (i & 31)) & 1u) for (int k = 0; k < 5; ++k) acc[k] ^= w[k];
        tc_xorwow_step(w);
    }
    for (int k = 0; k < 5; ++k) v[k] = acc[k];
}
TC_FN void tc_rng_init_xorwow(TC_PRIVATE uint32_t* st, uint64_t seed, uint64_t seq, uint64_t off) {
    const uint32_t x[5] = {2u, 0u, 0u, 0u, 0u};                                              /* x */
    const uint32_t x67[5] = {0x26294934u, 0x77bbc248u, 0x1a87dad0u, 0x930052d4u, 0x947e6dd2u}; /* x^(2^67) mod P */
    for (int i = 0; i < 16; ++i) st[i] = 0u;
    const uint32_t t0 = 1099087573u * ((uint32_t)seed ^ 0xaad26b49u);
    const uint32_t t1 = 2591861531u * ((uint32_t)(seed >> 32) ^ 0xf7dcefddu);
    st[0] = 6615241u + t1 + t0;
    st[1] = 123456789u + t0;
    st[2] = 362436069u ^ t0;
    st[3] = 521288629u + t1;
    st[4] = 88675123u ^ t1;
    st[5] = 5783321u + t0;
    tc_xorwow_jump(st + 1, seq, x67);
    tc_xorwow_jump(st + 1, off, x);
    st[0] += 362437u * (uint32_t)off;
}
TC_FN uint32_t tc_rng_xorwow(TC_PRIVATE uint32_t* st) {
    tc_xorwow_step(st + 1);
    st[0] += 362437u;
    return st[5] + st[0];
}

/* ------------------------------------------------------------------ MRG32k3a */

TC_FN uint32_t tc_mrg_mulmod(uint32_t a, uint32_t b, uint32_t m) { return (uint32_t)(((uint64_t)a * b) % m); }
/* r = a b mod m of 3x3 matrices (row major); r may be a or b. */
TC_FN void tc_mrg_matmul(TC_PRIVATE uint32_t* r, TC_PRIVATE const uint32_t* a, TC_PRIVATE const uint32_t* b,
                         uint32_t m) {
    uint32_t t[9];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) {
            uint64_t s = 0u;
            for (int k = 0; k < 3; ++k) s += tc_mrg_mulmod(a[3 * i + k], b[3 * k + j], m);
            t[3 * i + j] = (uint32_t)(s % m);
        }
    for (int i = 0; i < 9; ++i) r[i] = t[i];
}
/* s (three words) advanced by n * 2^k steps, `base` being A^(2^k) mod m. */
TC_FN void tc_mrg_jump(TC_PRIVATE uint32_t* s, uint64_t n, TC_PRIVATE const uint32_t* base, uint32_t m) {
    if (n == 0u) return;
    uint32_t q[9] = {1u, 0u, 0u, 0u, 1u, 0u, 0u, 0u, 1u}, g[9], t[3];
    for (int i = 0; i < 9; ++i) g[i] = base[i];
    for (; n != 0u; n >>= 1) {
        if (n & 1u) tc_mrg_matmul(q, q, g, m);
        if (n > 1u) tc_mrg_matmul(g, g, g, m);
    }
    for (int i = 0; i < 3; ++i) {
        uint64_t acc = 0u;
        for (int k = 0; k < 3; ++k) acc += tc_mrg_mulmod(q[3 * i + k], s[k], m);
        t[i] = (uint32_t)(acc % m);
    }
    for (int i = 0; i < 3; ++i) s[i] = t[i];
}
TC_FN void tc_rng_init_mrg32k3a(TC_PRIVATE uint32_t* st, uint64_t seed, uint64_t seq, uint64_t off) {
    const uint32_t a1[9] = {0u, 1u, 0u, 0u, 0u, 1u, TC_RNG_M1 - 810728u, 1403580u, 0u};
    const uint32_t a2[9] = {0u, 1u, 0u, 0u, 0u, 1u, TC_RNG_M2 - 1370589u, 0u, 527612u};
    const uint32_t a1p76[9] = {82758667u, 1871391091u, 4127413238u, 3672831523u, 69195019u, 1871391091u,
                               3672091415u, 3528743235u, 69195019u};
    const uint32_t a2p76[9] = {1511326704u, 3759209742u, 1610795712u, 4292754251u, 1511326704u, 3889917532u,
                               3859662829u, 4292754251u, 3708466080u};
    for (int i = 0; i < 16; ++i) st[i] = i < 6 ? 12345u : 0u;
    if (seed != 0u) {
        const uint32_t x1 = (uint32_t)seed ^ 0x55555555u, x2 = (uint32_t)(seed >> 32) ^ 0xAAAAAAAAu;
        st[0] = tc_mrg_mulmod(x1, 12345u, TC_RNG_M1);
        st[1] = tc_mrg_mulmod(x2, 12345u, TC_RNG_M1);
        st[2] = tc_mrg_mulmod(x1, 12345u, TC_RNG_M1);
        st[3] = tc_mrg_mulmod(x2, 12345u, TC_RNG_M2);
        st[4] = tc_mrg_mulmod(x1, 12345u, TC_RNG_M2);
        st[5] = tc_mrg_mulmod(x2, 12345u, TC_RNG_M2);
    }
    seq &= ((uint64_t)1 << 51) - 1u;
    tc_mrg_jump(st, seq, a1p76, TC_RNG_M1);
    tc_mrg_jump(st + 3, seq, a2p76, TC_RNG_M2);
    tc_mrg_jump(st, off, a1, TC_RNG_M1);
    tc_mrg_jump(st + 3, off, a2, TC_RNG_M2);
}
/* One step of both components; the combination in (0, m1], as curand_MRG32k3a returns it. */
TC_FN uint32_t tc_mrg_next(TC_PRIVATE uint32_t* st) {
    const uint64_t p1 = ((uint64_t)1403580u * st[1] + (uint64_t)810728u * (TC_RNG_M1 - st[0])) % TC_RNG_M1;
    st[0] = st[1]; st[1] = st[2]; st[2] = (uint32_t)p1;
    const uint64_t p2 = ((uint64_t)527612u * st[5] + (uint64_t)1370589u * (TC_RNG_M2 - st[3])) % TC_RNG_M2;
    st[3] = st[4]; st[4] = st[5]; st[5] = (uint32_t)p2;
    return p1 <= p2 ? (uint32_t)(p1 - p2 + TC_RNG_M1) : (uint32_t)(p1 - p2);
}
#ifndef TC_NO_FP64 /* MRG32k3a's outputs are scaled in float64 (targets without it refuse the generator) */
TC_FN uint32_t tc_rng_mrg32k3a(TC_PRIVATE uint32_t* st) {
    return (uint32_t)((double)tc_mrg_next(st) * TC_RNG_MRG_BITS_NORM);
}
#endif

/* ------------------------------------------------------------------ distributions */

TC_FN float tc_rng_unit_f32(uint32_t x) { return (float)x * TC_RNG_2POW32_INV + TC_RNG_2POW32_INV / 2.0f; }
/* Box-Muller of two words (float): the first result, the second kept in the state for the next call. */
TC_FN float tc_rng_box_muller_f32(TC_PRIVATE uint32_t* st, float u, float v) {
    float s, c;
    const float r = TC_RNG_SQRTF(-2.0f * TC_RNG_LOGF(u));
    TC_RNG_SINCOSF(v, &s, &c);
    st[11] = 1u;
    st[13] = tc_f32_to_bits(c * r);
    return s * r;
}
#define TC_RNG_NORMAL_F32(NAME, UV)                                         \
    TC_FN float tc_rng_normal_f32_##NAME(TC_PRIVATE uint32_t* st) {        \
        if (st[11] == 1u) { st[11] = 0u; return tc_bits_to_f32(st[13]); } \
        UV                                                                  \
        return tc_rng_box_muller_f32(st, u, v);                             \
    }
#define TC_RNG_WORDS_UV(NAME)                                                  \
    const uint32_t x = tc_rng_##NAME(st), y = tc_rng_##NAME(st);              \
    const float u = tc_rng_unit_f32(x);                                        \
    const float v = TC_RNG_FMAF((float)y, TC_RNG_2POW32_INV_2PI, TC_RNG_2POW32_INV_2PI / 2.0f);
TC_RNG_NORMAL_F32(philox, TC_RNG_WORDS_UV(philox))
TC_RNG_NORMAL_F32(xorwow, TC_RNG_WORDS_UV(xorwow))

TC_FN float tc_rng_uniform_f32_philox(TC_PRIVATE uint32_t* st) { return tc_rng_unit_f32(tc_rng_philox(st)); }
TC_FN float tc_rng_uniform_f32_xorwow(TC_PRIVATE uint32_t* st) { return tc_rng_unit_f32(tc_rng_xorwow(st)); }

#ifndef TC_NO_FP64
TC_FN float tc_rng_uniform_f32_mrg32k3a(TC_PRIVATE uint32_t* st) {
    return (float)((double)tc_mrg_next(st) * TC_RNG_MRG_NORM);
}
TC_RNG_NORMAL_F32(mrg32k3a, const float u = tc_rng_uniform_f32_mrg32k3a(st);
                  const float v = tc_rng_uniform_f32_mrg32k3a(st) * 6.2831855f;)

TC_FN double tc_rng_f64_from_bits(uint64_t u) { union { uint64_t u; double d; } x; x.u = u; return x.d; }
TC_FN uint64_t tc_rng_f64_to_bits(double d) { union { uint64_t u; double d; } x; x.d = d; return x.u; }
TC_FN double tc_rng_unit_f64_hq(uint32_t x, uint32_t y) {
    const uint64_t z = (uint64_t)x ^ ((uint64_t)y << 21);
    return (double)z * TC_RNG_2POW53_INV_DOUBLE + TC_RNG_2POW53_INV_DOUBLE / 2.0;
}
TC_FN double tc_rng_uniform_f64_philox(TC_PRIVATE uint32_t* st) {
    return (double)tc_rng_philox(st) * 2.3283064365386963e-10 + 2.3283064365386963e-10;
}
TC_FN double tc_rng_uniform_f64_xorwow(TC_PRIVATE uint32_t* st) {
    const uint32_t x = tc_rng_xorwow(st), y = tc_rng_xorwow(st);
    return tc_rng_unit_f64_hq(x, y);
}
TC_FN double tc_rng_uniform_f64_mrg32k3a(TC_PRIVATE uint32_t* st) { return (double)tc_mrg_next(st) * TC_RNG_MRG_NORM; }
/* Box-Muller of u in (0, 1] and an angle v * pi (double). */
TC_FN double tc_rng_box_muller_f64(TC_PRIVATE uint32_t* st, double u, double v) {
    double s, c;
    const double r = TC_RNG_SQRT(-2.0 * TC_RNG_LOG(u));
    TC_RNG_SINCOSPI(v, &s, &c);
    const uint64_t bits = tc_rng_f64_to_bits(c * r);
    st[12] = 1u;
    st[14] = (uint32_t)bits;
    st[15] = (uint32_t)(bits >> 32);
    return s * r;
}
#define TC_RNG_NORMAL_F64(NAME, UV)                                                               \
    TC_FN double tc_rng_normal_f64_##NAME(TC_PRIVATE uint32_t* st) {                             \
        if (st[12] == 1u) {                                                                      \
            st[12] = 0u;                                                                         \
            return tc_rng_f64_from_bits((uint64_t)st[14] | ((uint64_t)st[15] << 32));            \
        }                                                                                        \
        UV                                                                                       \
        return tc_rng_box_muller_f64(st, u, v);                                                  \
    }
#define TC_RNG_FOUR_WORDS_UV(NAME)                                                                \
    const uint32_t x0 = tc_rng_##NAME(st), x1 = tc_rng_##NAME(st);                               \
    const uint32_t y0 = tc_rng_##NAME(st), y1 = tc_rng_##NAME(st);                               \
    const double u = tc_rng_unit_f64_hq(x0, x1);                                                 \
    const double v = (double)((uint64_t)y0 ^ ((uint64_t)y1 << 21)) * (TC_RNG_2POW53_INV_DOUBLE * 2.0) \
                     + TC_RNG_2POW53_INV_DOUBLE;
TC_RNG_NORMAL_F64(philox, TC_RNG_FOUR_WORDS_UV(philox))
TC_RNG_NORMAL_F64(xorwow, TC_RNG_FOUR_WORDS_UV(xorwow))
TC_RNG_NORMAL_F64(mrg32k3a, const double u = tc_rng_uniform_f64_mrg32k3a(st);
                  const double v = tc_rng_uniform_f64_mrg32k3a(st) * 2.0;)
#endif
