/* float8 FNUZ (e4m3fnuz, e5m2fnuz: exponent bias 8 and 16, no infinity, no negative zero, one NaN 0x80)
 * conversions in integer arithmetic, bit for bit what ml_dtypes and torch's casts do: round to nearest
 * even; a result past the largest finite value (240, 57344), +-inf and NaN give NaN (0x80); a negative
 * value that rounds to zero is +0. Every FNUZ value is exact in float32. Added to a source whose kernels
 * use an FNUZ dtype (tilecraft/codegen/headers.py), after the backend's header, which defines TC_FN,
 * the fixed-width integer types, tc_bits_to_f32, tc_f32_to_bits and tc_rint (ties to even). */

TC_FN float tc_e4m3fnuz_to_f32(uint8_t b) {
    uint32_t mag = b & 0x7fu;
    float sign = (b & 0x80u) ? -1.0f : 1.0f;
    if (b == 0x80u) return tc_bits_to_f32(0x7fc00000u);
    if (mag < 8u) return sign * (float)mag * 0.0009765625f; /* subnormal: a multiple of 2^-10 */
    return sign * tc_bits_to_f32((mag + (119u << 3)) << 20); /* rebias the exponent: 127 - 8 */
}

TC_FN float tc_e5m2fnuz_to_f32(uint8_t b) {
    uint32_t mag = b & 0x7fu;
    float sign = (b & 0x80u) ? -1.0f : 1.0f;
    if (b == 0x80u) return tc_bits_to_f32(0x7fc00000u);
    if (mag < 4u) return sign * (float)mag * 0.00000762939453125f; /* subnormal: a multiple of 2^-17 */
    return sign * tc_bits_to_f32((mag + (111u << 2)) << 21); /* rebias the exponent: 127 - 16 */
}

/* The code of |f| (bits ax, finite) with `mant` mantissa bits and exponent bias `bias`: below the
 * smallest normal (2^(1 - bias)) a multiple of the smallest subnormal, rounded (its largest carries
 * into the normals), else the float32 rounded to nearest even at `mant` bits and rebiased; a code past
 * 0x7f is an overflow. */
TC_FN uint32_t tc_fnuz_code(uint32_t ax, uint32_t mant, uint32_t bias) {
    uint32_t shift = 23u - mant;
    if (ax < ((128u - bias) << 23)) {
        float scale = tc_bits_to_f32((127u + bias - 1u + mant) << 23); /* 2^(bias - 1 + mant) */
        return (uint32_t)tc_rint(tc_bits_to_f32(ax) * scale);
    }
    uint32_t r = ax + ((1u << (shift - 1u)) - 1u) + ((ax >> shift) & 1u);
    return (r - ((127u - bias) << 23)) >> shift;
}

TC_FN uint8_t tc_f32_to_fnuz(float f, uint32_t mant, uint32_t bias) {
    uint32_t x = tc_f32_to_bits(f);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint8_t)0x80u; /* NaN and +-inf */
    uint32_t code = tc_fnuz_code(ax, mant, bias);
    if (code > 0x7fu) return (uint8_t)0x80u;
    return (uint8_t)(code == 0u ? 0u : ((x >> 24) & 0x80u) | code);
}

TC_FN uint8_t tc_f32_to_e4m3fnuz(float f) { return tc_f32_to_fnuz(f, 3u, 8u); }
TC_FN uint8_t tc_f32_to_e5m2fnuz(float f) { return tc_f32_to_fnuz(f, 2u, 16u); }
TC_FN float tc_round_e4m3fnuz(float f) { return tc_e4m3fnuz_to_f32(tc_f32_to_e4m3fnuz(f)); }
TC_FN float tc_round_e5m2fnuz(float f) { return tc_e5m2fnuz_to_f32(tc_f32_to_e5m2fnuz(f)); }
