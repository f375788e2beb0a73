/* The microscaling element and scale formats in integer arithmetic, bit for bit what ml_dtypes' casts do.
 * float4_e2m1fn, float6_e2m3fn and float6_e3m2fn have no infinity or NaN: a float32 rounds to nearest
 * even, values past the largest (6, 7.5, 28) and +-inf saturate to it, and NaN becomes the zero of the
 * opposite sign (ml_dtypes' choice). float8_e8m0fnu is the unsigned power of two 2^(code - 127) with
 * code 255 for NaN: a positive float32 rounds to the nearest power of two with ties upward, anything at
 * or past 2^127 * 1.5 and every zero, negative, infinite or NaN input is 255. A code lives in the low bits
 * of a byte (a 4-bit one is one nibble of packed memory). The including header defines TC_FN, the
 * fixed-width integer types, tc_bits_to_f32, tc_f32_to_bits and tc_rint (ties to even) first. */

/* A code of a sign-magnitude format of `mant` mantissa bits and exponent `bias`, sign at bit `sign_at`,
 * as float32 (every value of these formats is exact in float32). */
TC_FN float tc_small_to_f32(uint32_t code, uint32_t mant, uint32_t bias, uint32_t sign_at) {
    uint32_t mag = code & ((1u << sign_at) - 1u);
    float v = mag < (1u << mant) /* subnormal: a multiple of 2^(1 - bias - mant) */
        ? (float)mag * tc_bits_to_f32((128u - bias - mant) << 23)
        : tc_bits_to_f32((mag + ((127u - bias) << mant)) << (23u - mant));
    return (code >> sign_at) & 1u ? -v : v;
}

TC_FN uint8_t tc_f32_to_small(float f, uint32_t mant, uint32_t bias, uint32_t sign_at) {
    uint32_t x = tc_f32_to_bits(f);
    uint32_t sign = (x >> 31) << sign_at;
    uint32_t ax = x & 0x7fffffffu;
    uint32_t largest = (1u << sign_at) - 1u;
    if (ax > 0x7f800000u) return (uint8_t)(sign ^ (1u << sign_at)); /* NaN: the zero of the other sign */
    uint32_t code;
    if (ax < ((128u - bias) << 23)) { /* below the smallest normal: a multiple of the subnormal step */
        code = (uint32_t)tc_rint(tc_bits_to_f32(ax) * tc_bits_to_f32((126u + bias + mant) << 23));
    } else {
        uint32_t shift = 23u - mant;
        uint32_t r = ax + (1u << (shift - 1u)) - 1u + ((ax >> shift) & 1u); /* nearest even */
        code = (r >> shift) - ((127u - bias) << mant);
    }
    return (uint8_t)(sign | (code < largest ? code : largest));
}

TC_FN float tc_e2m1_to_f32(uint8_t b) { return tc_small_to_f32(b, 1u, 1u, 3u); }
TC_FN uint8_t tc_f32_to_e2m1(float f) { return tc_f32_to_small(f, 1u, 1u, 3u); }
TC_FN float tc_e2m3_to_f32(uint8_t b) { return tc_small_to_f32(b, 3u, 1u, 5u); }
TC_FN uint8_t tc_f32_to_e2m3(float f) { return tc_f32_to_small(f, 3u, 1u, 5u); }
TC_FN float tc_e3m2_to_f32(uint8_t b) { return tc_small_to_f32(b, 2u, 3u, 5u); }
TC_FN uint8_t tc_f32_to_e3m2(float f) { return tc_f32_to_small(f, 2u, 3u, 5u); }

TC_FN float tc_e8m0_to_f32(uint8_t b) {
    if (b == 255u) return tc_bits_to_f32(0x7fc00000u);
    return b == 0u ? tc_bits_to_f32(0x00400000u) : tc_bits_to_f32((uint32_t)b << 23); /* 2^-127: subnormal */
}

TC_FN uint8_t tc_f32_to_e8m0(float f) {
    uint32_t x = tc_f32_to_bits(f);
    if (x == 0u || x >= 0x7f800000u) return 255u; /* zero, negative, infinite, NaN */
    if (x < 0x00800000u) return x >= 0x00600000u ? 1u : 0u; /* subnormal: 1.5 * 2^-127 ties up to 2^-126 */
    uint32_t e = (x + 0x00400000u) >> 23; /* nearest power of two, ties up */
    return (uint8_t)(e < 255u ? e : 255u);
}

TC_FN float tc_round_e2m1(float f) { return tc_e2m1_to_f32(tc_f32_to_e2m1(f)); }
TC_FN float tc_round_e2m3(float f) { return tc_e2m3_to_f32(tc_f32_to_e2m3(f)); }
TC_FN float tc_round_e3m2(float f) { return tc_e3m2_to_f32(tc_f32_to_e3m2(f)); }
TC_FN float tc_round_e8m0(float f) { return tc_e8m0_to_f32(tc_f32_to_e8m0(f)); }

/* 4-bit integers: a byte's low nibble, sign-extended for int4; a value stored wraps to 4 bits. */
TC_FN int8_t tc_i4_from_nibble(uint32_t n) { return (int8_t)((int32_t)((n & 15u) ^ 8u) - 8); }
TC_FN int8_t tc_wrap_i4(int32_t v) { return tc_i4_from_nibble((uint32_t)v); }
TC_FN uint8_t tc_wrap_u4(int32_t v) { return (uint8_t)((uint32_t)v & 15u); }

/* Packed memory: element i is the low (even i) or high (odd i) nibble of byte i / 2. */
TC_FN uint8_t tc_nibble_at(uint8_t byte, int64_t i) { return (uint8_t)((byte >> ((i & 1) << 2)) & 15u); }
TC_FN uint8_t tc_nibble_pair(uint32_t low, uint32_t high) { return (uint8_t)((low & 15u) | ((high & 15u) << 4)); }
