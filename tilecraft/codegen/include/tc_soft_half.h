/* float16 and bfloat16 conversions in integer arithmetic (round to nearest even), for devices with
 * no conversion instructions the compiler can rely on. The including header defines TC_FN, the
 * fixed-width integer types, tc_bits_to_f32, tc_f32_to_bits and tc_rint (round to nearest integer,
 * ties to even) before this text. */

TC_FN float tc_h2f(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return tc_bits_to_f32(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        float sub = (float)man * 5.9604644775390625e-8f; /* 2^-24 */
        return sign ? -sub : sub;
    }
    return tc_bits_to_f32(sign | ((exp + 112u) << 23) | (man << 13));
}

TC_FN uint16_t tc_f2h(float f) {
    uint32_t x = tc_f32_to_bits(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past the largest half */
    if (ax < 0x38800000u) { /* subnormal or zero: round to a multiple of 2^-24 */
        float a = tc_bits_to_f32(ax) * 16777216.0f;
        return (uint16_t)(sign | (uint32_t)tc_rint(a));
    }
    uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u); /* round to nearest even */
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
}

TC_FN float tc_bf2f(uint16_t b) { return tc_bits_to_f32((uint32_t)b << 16); }

TC_FN uint16_t tc_f2bf(float f) {
    uint32_t x = tc_f32_to_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

TC_FN float tc_round_f16(float f) { return tc_h2f(tc_f2h(f)); }
TC_FN float tc_round_bf16(float f) { return tc_bf2f(tc_f2bf(f)); }
