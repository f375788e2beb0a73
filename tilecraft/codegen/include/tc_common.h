/* Helpers every C-family device header shares. The including header defines TC_FN (how a helper
 * function is declared on its target: static inline, __device__ ...) before this text. */

/* ------------------------------------------------------------------ min / max (operands evaluated once) */

#define TC_MINMAX(NAME, T)                                     \
    TC_FN T tc_min_##NAME(T a, T b) { return a < b ? a : b; } \
    TC_FN T tc_max_##NAME(T a, T b) { return a > b ? a : b; }
TC_MINMAX(f32, float)
#ifndef TC_NO_FP64 /* defined by device headers for devices without double support */
TC_MINMAX(f64, double)
#endif
TC_MINMAX(i32, int32_t)
TC_MINMAX(i64, int64_t)
TC_MINMAX(u32, uint32_t)
TC_MINMAX(u64, uint64_t)

/* ------------------------------------------------------------------ integer division */

TC_FN int64_t tc_floordiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
TC_FN int64_t tc_floormod(int64_t a, int64_t b) {
    int64_t r = a % b;
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
