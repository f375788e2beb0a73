/* Helpers every C-family device header shares. The including header defines TC_FN (how a helper
 * function is declared on its target: static inline, __device__ ...) before this text. */

/* ------------------------------------------------------------------ min / max (operands evaluated once) */

/* Floats follow NumPy's minimum and maximum: a NaN operand gives NaN, whichever side it is on (a plain
 * `a > b ? a : b` gives NaN or the other operand depending on the order). `b > a ? b : a` already
 * keeps a NaN `a` (the comparison is false), so only `b` is tested: in a reduction `acc = max(acc, x)`
 * the test is on the element, off the accumulator's dependency chain, and the rest is one max
 * instruction where the target has one with this order (x86's maxps). A header whose target has a
 * NaN-propagating instruction (CUDA's max.NaN) defines TC_OWN_FLOAT_MINMAX and its own. */
#define TC_FLOAT_MINMAX(NAME, T)                                                 \
    TC_FN T tc_min_##NAME(T a, T b) { return b != b ? b : (b < a ? b : a); } \
    TC_FN T tc_max_##NAME(T a, T b) { return b != b ? b : (b > a ? b : a); }
#ifndef TC_OWN_FLOAT_MINMAX
TC_FLOAT_MINMAX(f32, float)
#ifndef TC_NO_FP64 /* defined by device headers for devices without double support */
TC_FLOAT_MINMAX(f64, double)
#endif
#endif

#define TC_MINMAX(NAME, T)                                     \
    TC_FN T tc_min_##NAME(T a, T b) { return a < b ? a : b; } \
    TC_FN T tc_max_##NAME(T a, T b) { return a > b ? a : b; }
TC_MINMAX(i32, int32_t)
TC_MINMAX(i64, int64_t)
TC_MINMAX(u32, uint32_t)
TC_MINMAX(u64, uint64_t)

/* ------------------------------------------------------------------ rounding once to a narrow float */

/* float16, bfloat16 and float8 are rounded from float32. A float64 (or an integer of 32 bits or more)
 * rounded to float32 first and then to the narrow type is rounded twice, and a value just off a
 * midpoint of the narrow type can land on it and then go the wrong way. Rounding to float32 *to odd*
 * instead (truncate, then set the last bit when anything was cut off) keeps that information: float32
 * has at least two bits more than any of the narrow types, so the second rounding, to nearest even,
 * gives the directly rounded result. */
TC_FN float tc_u64_to_f32_odd(uint64_t m) {
    float f = (float)m; /* to nearest even */
    uint32_t u = tc_f32_to_bits(f);
    if (u >= 0x5f800000u) return tc_bits_to_f32(0x5f7fffffu); /* rounded up to 2^64: the float below is odd */
    uint64_t back = (uint64_t)f;
    if (back == m) return f;
    if (back > m) u -= 1u;
    return tc_bits_to_f32(u | 1u);
}
TC_FN float tc_i64_to_f32_odd(int64_t x) {
    float f = tc_u64_to_f32_odd(x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x);
    return x < 0 ? -f : f;
}
#ifndef TC_NO_FP64
TC_FN float tc_f64_to_f32_odd(double d) {
    float f = (float)d; /* to nearest even */
    double back = (double)f;
    if (back == d || f != f) return f; /* exact, or NaN */
    uint32_t u = tc_f32_to_bits(f);
    if (d > 0.0 ? back > d : back < d) u -= 1u; /* rounded away from zero: step back to the truncation */
    return tc_bits_to_f32(u | 1u);
}

/* x * y + z of float16 or bfloat16 values (held in float), rounded once: the exact result rounded to
 * float32 *to odd* (as tc_f64_to_f32_odd), so that the store's rounding to the 16-bit type is the only
 * one that counts. The product of two 16-bit floats is exact in double; TwoSum gives the sum's error
 * exactly, and where the sum is itself a float32 value the error says on which side of it the exact
 * result lies. (A contraction of the product into an fma by the compiler changes nothing: it is exact.) */
TC_FN float tc_fma_odd(float x, float y, float z) {
    double p = (double)x * (double)y;
    double s = p + (double)z;
    double pv = s - (double)z;
    double zv = s - pv;
    double err = (p - pv) + ((double)z - zv);
    float f = tc_f64_to_f32_odd(s);
    if (err != 0.0 && (double)f == s && f - f == 0.0f) {
        uint32_t u = tc_f32_to_bits(f);
        if ((u & 1u) == 0u) u = ((err > 0.0) == (f > 0.0f)) ? u + 1u : u - 1u; /* the odd neighbour */
        f = tc_bits_to_f32(u);
    }
    return f;
}
#endif

/* ------------------------------------------------------------------ integer division */

TC_FN int64_t tc_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
TC_FN int64_t tc_floormod(int64_t a, int64_t b) {
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
