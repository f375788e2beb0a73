// T.gemm on AMD MFMA (CDNA, wave64), appended by tilecraft's HIP codegen to tc_hip.h when a kernel uses
// it. tilecraft/hip/intrinsics/mfma_layouts.py states the lane layouts these loops follow, and
// tests/hip/test_mfma_model.py checks them against NumPy in a Python model of the instructions.
#ifndef TILECRAFT_TC_MFMA_H
#define TILECRAFT_TC_MFMA_H

typedef float tc_f32x4 __attribute__((ext_vector_type(4)));
typedef _Float16 tc_f16x4 __attribute__((ext_vector_type(4)));
typedef short tc_i16x4 __attribute__((ext_vector_type(4)));

namespace tc {

typedef unsigned int u32x4 __attribute__((ext_vector_type(4)));
typedef short i16x8 __attribute__((ext_vector_type(8)));
typedef unsigned char u8x16 __attribute__((ext_vector_type(16)));

// Where an LDS tile stores the element at row-major offset f: row_major, or a swizzle the codegen
// writes as a struct with the same `at` from the layout the tile's copies were addressed with
// (tilecraft/hip/lds_layout.py), so the gemm reads where the copies wrote.
struct row_major {
    TC_DEVICE int at(int f) { return f; }
};

// Element (r, c) of op(X), X a row-major tile of R x C in layout L (R x C is op(X)'s shape when not
// transposed).
template <bool TRANS, int ROWS, int COLS, typename L, typename T>
TC_DEVICE T at(const T* x, int r, int c) {
    return x[L::at(TRANS ? c * ROWS + r : r * COLS + c)];
}

// The 16 bytes at element offset f of tile x (a granule: 16-byte aligned, kept whole by every layout):
// one ds_read_b128.
template <typename T>
TC_DEVICE u32x4 granule(const T* x, int f) {
    u32x4 v;
    __builtin_memcpy(&v, __builtin_assume_aligned(x + f, 16), 16);
    return v;
}

// The 16 bytes of k (8 f16/bf16, 16 fp8) one lane feeds two MFMAs of a k step, k = k0 .. k0 + 16/sizeof(T),
// at row or column `mn` of op(X) (K_ROWS: op(X) is K x MN, as B; else MN x K, as A): one 16-byte read
// where the stored tile has k contiguous, an element read per k where it has MN contiguous.
template <bool K_ROWS, bool TRANS, int ROWS, int COLS, typename L, typename T>
TC_DEVICE u32x4 k_run(const T* x, int mn, int k0) {
    constexpr int N = 16 / sizeof(T);
    constexpr bool K_CONTIGUOUS = K_ROWS == TRANS;  // the stored row is op(X)'s row (A) or column (B)
    if constexpr (K_CONTIGUOUS) {
        return granule(x, L::at(K_ROWS ? mn * ROWS + k0 : mn * COLS + k0));
    } else {
        T e[N];
#pragma unroll
        for (int i = 0; i < N; ++i) e[i] = K_ROWS ? at<TRANS, ROWS, COLS, L>(x, k0 + i, mn) : at<TRANS, ROWS, COLS, L>(x, mn, k0 + i);
        return __builtin_bit_cast(u32x4, e);
    }
}

// The bits an fp8 MFMA of a FNUZ arch (gfx942) reads for the OCP byte `b`: the same bits mean half the
// value there (exponent bias 8 for e4m3, 16 for e5m2), except that FNUZ has no -0 (0x80 is its NaN)
// and no infinities. So -0 becomes +0 and NaN (and e5m2's infinities) become 0x80; the gemm scales
// its accumulator by 1/4 around the MFMAs to undo the two halvings.
template <bool E5M2>
TC_DEVICE uint64_t fnuz_byte(uint64_t b) {
    const bool special = E5M2 ? (b & 0x7cu) == 0x7cu : (b & 0x7fu) == 0x7fu;
    return special ? 0x80u : (b == 0x80u ? 0u : b);
}

template <bool E5M2, bool FNUZ>
TC_DEVICE long fp8_word(const uint8_t (&bytes)[8]) {
    uint64_t word = 0;
#pragma unroll
    for (int i = 0; i < 8; ++i) word |= (FNUZ ? fnuz_byte<E5M2>(bytes[i]) : (uint64_t)bytes[i]) << (8 * i);
    return (long)word;
}

template <bool E5M2_A, bool E5M2_B>
TC_DEVICE tc_f32x4 mfma_fp8(long a, long b, tc_f32x4 c) {
    if (!E5M2_A && !E5M2_B) return __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(a, b, c, 0, 0, 0);
    if (!E5M2_A && E5M2_B) return __builtin_amdgcn_mfma_f32_16x16x32_fp8_bf8(a, b, c, 0, 0, 0);
    if (E5M2_A && !E5M2_B) return __builtin_amdgcn_mfma_f32_16x16x32_bf8_fp8(a, b, c, 0, 0, 0);
    return __builtin_amdgcn_mfma_f32_16x16x32_bf8_bf8(a, b, c, 0, 0, 0);
}

TC_DEVICE tc_f32x4 mfma16(tc_i16x4 a, tc_i16x4 b, tc_f32x4 c, int kind) {
    if (kind == 0)
        return __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(tc_f16x4, a), __builtin_bit_cast(tc_f16x4, b), c, 0, 0, 0);
    return __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, 0, 0, 0);
}

// C (registers, mfma_accumulator layout) += op(A) @ op(B) for an M x N x K tile; A is M x K (K x M
// stored when TA), B is K x N (N x K stored when TB), both in LDS in layouts LA, LB. KIND: 0 f16,
// 1 bf16. KPACK (K a multiple of 32): each lane reads 8 k at once, k0 + 8 * (lane / 16) + i, and feeds
// the first 4 to one MFMA and the last 4 to the next (the sum over k does not care which MFMA adds
// which k, as long as A and B agree); otherwise 4 k per MFMA, k0 + 4 * (lane / 16) + i, as the
// instruction numbers them.
template <int M, int N, int K, int WM, int WN, bool TA, bool TB, int KIND, bool KPACK, typename LA, typename LB>
TC_DEVICE void mfma_gemm(const uint16_t* A, const uint16_t* B, float* C) {
    constexpr int TM = M / WM / 16, TN = N / WN / 16;
    const int lane = tc_lane_id();
    const int wave = (int)__builtin_amdgcn_workitem_id_x() / 64;
    const int row0 = wave / WN * (M / WM), col0 = wave % WN * (N / WN);
    const int r16 = lane % 16;
    tc_f32x4 acc[TM * TN];
#pragma unroll
    for (int t = 0; t < TM * TN; ++t) acc[t] = tc_f32x4{C[4 * t], C[4 * t + 1], C[4 * t + 2], C[4 * t + 3]};
    if constexpr (KPACK) {
        const int kq = lane / 16 * 8;
        for (int k0 = 0; k0 < K; k0 += 32) {
            i16x8 a[TM], b[TN];
#pragma unroll
            for (int mi = 0; mi < TM; ++mi)
                a[mi] = __builtin_bit_cast(i16x8, (k_run<false, TA, M, K, LA>(A, row0 + mi * 16 + r16, k0 + kq)));
#pragma unroll
            for (int ni = 0; ni < TN; ++ni)
                b[ni] = __builtin_bit_cast(i16x8, (k_run<true, TB, K, N, LB>(B, col0 + ni * 16 + r16, k0 + kq)));
#pragma unroll
            for (int mi = 0; mi < TM; ++mi)
#pragma unroll
                for (int ni = 0; ni < TN; ++ni) {
                    tc_f32x4& c = acc[mi * TN + ni];
                    c = mfma16(a[mi].lo, b[ni].lo, c, KIND);
                    c = mfma16(a[mi].hi, b[ni].hi, c, KIND);
                }
        }
    } else {
        const int kq = lane / 16 * 4;
        for (int k0 = 0; k0 < K; k0 += 16) {
            tc_i16x4 a[TM], b[TN];
#pragma unroll
            for (int mi = 0; mi < TM; ++mi)
#pragma unroll
                for (int i = 0; i < 4; ++i) a[mi][i] = (short)at<TA, M, K, LA>(A, row0 + mi * 16 + r16, k0 + kq + i);
#pragma unroll
            for (int ni = 0; ni < TN; ++ni)
#pragma unroll
                for (int i = 0; i < 4; ++i) b[ni][i] = (short)at<TB, K, N, LB>(B, k0 + kq + i, col0 + ni * 16 + r16);
#pragma unroll
            for (int mi = 0; mi < TM; ++mi)
#pragma unroll
                for (int ni = 0; ni < TN; ++ni) acc[mi * TN + ni] = mfma16(a[mi], b[ni], acc[mi * TN + ni], KIND);
        }
    }
#pragma unroll
    for (int t = 0; t < TM * TN; ++t)
#pragma unroll
        for (int i = 0; i < 4; ++i) C[4 * t + i] = acc[t][i];
}

#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
template <bool E5M2, bool FNUZ>
TC_DEVICE long fp8_half(u8x16 bytes, int half) {
    uint8_t b[8];
#pragma unroll
    for (int i = 0; i < 8; ++i) b[i] = bytes[8 * half + i];
    return fp8_word<E5M2, FNUZ>(b);
}

// The fp8 form: 16x16x32, eight k per lane. FNUZ: the arch reads fp8 as its FNUZ encodings (gfx942).
// KPACK (K a multiple of 64): each lane reads 16 k at once, k0 + 16 * (lane / 16) + i, 8 for each of
// two MFMAs, as the 16-bit form does.
template <int M, int N, int K, int WM, int WN, bool TA, bool TB, bool E5M2_A, bool E5M2_B, bool FNUZ, bool KPACK,
          typename LA, typename LB>
TC_DEVICE void mfma_gemm_fp8(const uint8_t* A, const uint8_t* B, float* C) {
    constexpr int TM = M / WM / 16, TN = N / WN / 16;
    constexpr float SCALE = FNUZ ? 0.25f : 1.0f;
    const int lane = tc_lane_id();
    const int wave = (int)__builtin_amdgcn_workitem_id_x() / 64;
    const int row0 = wave / WN * (M / WM), col0 = wave % WN * (N / WN);
    const int r16 = lane % 16;
    tc_f32x4 acc[TM * TN];
#pragma unroll
    for (int t = 0; t < TM * TN; ++t)
        acc[t] = tc_f32x4{C[4 * t], C[4 * t + 1], C[4 * t + 2], C[4 * t + 3]} * SCALE;
    if constexpr (KPACK) {
        const int kq = lane / 16 * 16;
        for (int k0 = 0; k0 < K; k0 += 64) {
            u8x16 a[TM], b[TN];
#pragma unroll
            for (int mi = 0; mi < TM; ++mi)
                a[mi] = __builtin_bit_cast(u8x16, (k_run<false, TA, M, K, LA>(A, row0 + mi * 16 + r16, k0 + kq)));
#pragma unroll
            for (int ni = 0; ni < TN; ++ni)
                b[ni] = __builtin_bit_cast(u8x16, (k_run<true, TB, K, N, LB>(B, col0 + ni * 16 + r16, k0 + kq)));
#pragma unroll
            for (int mi = 0; mi < TM; ++mi)
#pragma unroll
                for (int ni = 0; ni < TN; ++ni)
#pragma unroll
                    for (int h = 0; h < 2; ++h)
                        acc[mi * TN + ni] = mfma_fp8<E5M2_A, E5M2_B>(fp8_half<E5M2_A, FNUZ>(a[mi], h),
                                                                     fp8_half<E5M2_B, FNUZ>(b[ni], h), acc[mi * TN + ni]);
        }
    } else {
        const int kq = lane / 16 * 8;
        for (int k0 = 0; k0 < K; k0 += 32) {
            long a[TM], b[TN];
#pragma unroll
            for (int mi = 0; mi < TM; ++mi) {
                uint8_t bytes[8];
#pragma unroll
                for (int i = 0; i < 8; ++i) bytes[i] = at<TA, M, K, LA>(A, row0 + mi * 16 + r16, k0 + kq + i);
                a[mi] = fp8_word<E5M2_A, FNUZ>(bytes);
            }
#pragma unroll
            for (int ni = 0; ni < TN; ++ni) {
                uint8_t bytes[8];
#pragma unroll
                for (int i = 0; i < 8; ++i) bytes[i] = at<TB, K, N, LB>(B, k0 + kq + i, col0 + ni * 16 + r16);
                b[ni] = fp8_word<E5M2_B, FNUZ>(bytes);
            }
#pragma unroll
            for (int mi = 0; mi < TM; ++mi)
#pragma unroll
                for (int ni = 0; ni < TN; ++ni)
                    acc[mi * TN + ni] = mfma_fp8<E5M2_A, E5M2_B>(a[mi], b[ni], acc[mi * TN + ni]);
        }
    }
#pragma unroll
    for (int t = 0; t < TM * TN; ++t)
#pragma unroll
        for (int i = 0; i < 4; ++i) C[4 * t + i] = acc[t][i] / SCALE;
}
#endif

}  // namespace tc

#endif  // TILECRAFT_TC_MFMA_H
