/* float8 (OCP e4m3fn and e5m2) conversions in integer arithmetic, bit for bit what torch's casts do:
 * round to nearest even; NaN stays NaN (sign kept, all other bits set); e4m3fn has no infinity, so
 * finite values past its largest (448) and +-inf saturate to +-448, while e5m2 overflows to +-inf.
 * (ml_dtypes gives NaN for an e4m3fn overflow; torch 2.x saturates, and tensors come from torch.)
 * Every float8 value is exact in float16 and float32. The including header defines TC_FN, the
 * fixed-width integer types, tc_bits_to_f32, tc_f32_to_bits, tc_rint (ties to even) and tc_h2f first. */

TC_FN float tc_e4m3_to_f32(uint8_t b) {
    uint32_t sign = (uint32_t)(b & 0x80u) << 24;
    uint32_t mag = b & 0x7fu;
    if (mag == 0x7fu) return tc_bits_to_f32(sign | 0x7fc00000u);
    if (mag < 8u) { /* subnormal: a multiple of 2^-9 */
        float sub = (float)mag * 0.001953125f;
        return sign ? -sub : sub;
    }
    return tc_bits_to_f32(sign | ((mag + (120u << 3)) << 20)); /* rebias the exponent: 127 - 7 */
}

/* e5m2 is float16 with the low 8 mantissa bits dropped. */
TC_FN float tc_e5m2_to_f32(uint8_t b) { return tc_h2f((uint16_t)((uint16_t)b << 8)); }

TC_FN uint8_t tc_f32_to_e4m3(float f) {
#ifdef TC_E4M3_HW
    /* a including header's conversion instruction (CUDA sm_89+), which saturates as torch does */
    return TC_E4M3_HW(f);
#endif
    uint32_t x = tc_f32_to_bits(f);
    uint32_t sign = (x >> 24) & 0x80u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint8_t)(sign | 0x7fu);
    /* 448 and up (464 ties to 448, everything above rounds past it, +inf): saturate */
    if (ax >= 0x43e00000u) return (uint8_t)(sign | 0x7eu);
    if (ax < 0x3c800000u) /* below 2^-6: round to a multiple of 2^-9 (8 carries into the normals) */
        return (uint8_t)(sign | (uint32_t)tc_rint(tc_bits_to_f32(ax) * 512.0f));
    uint32_t r = ax + 0x7ffffu + ((ax >> 20) & 1u); /* nearest even at 3 mantissa bits */
    return (uint8_t)(sign | ((r - 0x3c000000u) >> 20));
}

TC_FN uint8_t tc_f32_to_e5m2(float f) {
    uint32_t x = tc_f32_to_bits(f);
    uint32_t sign = (x >> 24) & 0x80u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) return (uint8_t)(sign | 0x7fu);
    /* 61440 and up round past 57344 (61440 ties to the even 65536): infinity */
    if (ax >= 0x47700000u) return (uint8_t)(sign | 0x7cu);
    if (ax < 0x38800000u) /* below 2^-14: round to a multiple of 2^-16 */
        return (uint8_t)(sign | (uint32_t)tc_rint(tc_bits_to_f32(ax) * 65536.0f));
    uint32_t r = ax + 0xfffffu + ((ax >> 21) & 1u); /* nearest even at 2 mantissa bits */
    return (uint8_t)(sign | ((r - 0x38000000u) >> 21));
}

TC_FN float tc_round_e4m3(float f) { return tc_e4m3_to_f32(tc_f32_to_e4m3(f)); }
TC_FN float tc_round_e5m2(float f) { return tc_e5m2_to_f32(tc_f32_to_e5m2(f)); }
