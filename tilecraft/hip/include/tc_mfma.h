// T.gemm on AMD MFMA (CDNA, wave64), appended by tilecraft's HIP codegen to tc_hip.h when a kernel uses
// it. tilecraft/hip/intrinsics/mfma_layouts.py states the lane layouts these loops follow, and
// tests/hip/test_mfma_model.py checks them against NumPy in a Python model of the instructions.
#ifndef TILECRAFT_TC_MFMA_H
#define TILECRAFT_TC_MFMA_H

typedef float tc_f32x4 __attribute__((ext_vector_type(4)));
typedef _Float16 tc_f16x4 __attribute__((ext_vector_type(4)));
typedef short tc_i16x4 __attribute__((ext_vector_type(4)));

namespace tc {

// Element (r, c) of op(X), X a row-major tile of R x C (R x C is op(X)'s shape when not transposed).
template <bool TRANS, int ROWS, int COLS, typename T>
TC_DEVICE T at(const T* x, int r, int c) {
    return TRANS ? x[c * ROWS + r] : x[r * COLS + c];
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

// C (registers, mfma_accumulator layout) += op(A) @ op(B) for an M x N x K tile; A is M x K (K x M
// stored when TA), B is K x N (N x K stored when TB), both in LDS. KIND: 0 f16, 1 bf16.
template <int M, int N, int K, int WM, int WN, bool TA, bool TB, int KIND>
TC_DEVICE void mfma_gemm(const uint16_t* A, const uint16_t* B, float* C) {
    constexpr int TM = M / WM / 16, TN = N / WN / 16;
    const int lane = tc_lane_id();
    const int wave = (int)__builtin_amdgcn_workitem_id_x() / 64;
    const int row0 = wave / WN * (M / WM), col0 = wave % WN * (N / WN);
    const int r16 = lane % 16, kq = lane / 16 * 4;
    tc_f32x4 acc[TM * TN];
#pragma unroll
    for (int t = 0; t < TM * TN; ++t) acc[t] = tc_f32x4{C[4 * t], C[4 * t + 1], C[4 * t + 2], C[4 * t + 3]};
    for (int k0 = 0; k0 < K; k0 += 16) {
        tc_i16x4 a[TM], b[TN];
#pragma unroll
        for (int mi = 0; mi < TM; ++mi)
#pragma unroll
            for (int i = 0; i < 4; ++i) a[mi][i] = (short)at<TA, M, K>(A, row0 + mi * 16 + r16, k0 + kq + i);
#pragma unroll
        for (int ni = 0; ni < TN; ++ni)
#pragma unroll
            for (int i = 0; i < 4; ++i) b[ni][i] = (short)at<TB, K, N>(B, k0 + kq + i, col0 + ni * 16 + r16);
#pragma unroll
        for (int mi = 0; mi < TM; ++mi)
#pragma unroll
            for (int ni = 0; ni < TN; ++ni) {
                tc_f32x4& c = acc[mi * TN + ni];
                if (KIND == 0)
                    c = __builtin_amdgcn_mfma_f32_16x16x16f16(__builtin_bit_cast(tc_f16x4, a[mi]),
                                                              __builtin_bit_cast(tc_f16x4, b[ni]), c, 0, 0, 0);
                else
                    c = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a[mi], b[ni], c, 0, 0, 0);
            }
    }
#pragma unroll
    for (int t = 0; t < TM * TN; ++t)
#pragma unroll
        for (int i = 0; i < 4; ++i) C[4 * t + i] = acc[t][i];
}

#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__) || defined(__gfx950__)
// The fp8 form: 16x16x32, eight k per lane. FNUZ: the arch reads fp8 as its FNUZ encodings (gfx942).
template <int M, int N, int K, int WM, int WN, bool TA, bool TB, bool E5M2_A, bool E5M2_B, bool FNUZ>
TC_DEVICE void mfma_gemm_fp8(const uint8_t* A, const uint8_t* B, float* C) {
    constexpr int TM = M / WM / 16, TN = N / WN / 16;
    constexpr float SCALE = FNUZ ? 0.25f : 1.0f;
    const int lane = tc_lane_id();
    const int wave = (int)__builtin_amdgcn_workitem_id_x() / 64;
    const int row0 = wave / WN * (M / WM), col0 = wave % WN * (N / WN);
    const int r16 = lane % 16, kq = lane / 16 * 8;
    tc_f32x4 acc[TM * TN];
#pragma unroll
    for (int t = 0; t < TM * TN; ++t)
        acc[t] = tc_f32x4{C[4 * t], C[4 * t + 1], C[4 * t + 2], C[4 * t + 3]} * SCALE;
    for (int k0 = 0; k0 < K; k0 += 32) {
        long a[TM], b[TN];
#pragma unroll
        for (int mi = 0; mi < TM; ++mi) {
            uint8_t bytes[8];
#pragma unroll
            for (int i = 0; i < 8; ++i) bytes[i] = at<TA, M, K>(A, row0 + mi * 16 + r16, k0 + kq + i);
            a[mi] = fp8_word<E5M2_A, FNUZ>(bytes);
        }
#pragma unroll
        for (int ni = 0; ni < TN; ++ni) {
            uint8_t bytes[8];
#pragma unroll
            for (int i = 0; i < 8; ++i) bytes[i] = at<TB, K, N>(B, k0 + kq + i, col0 + ni * 16 + r16);
            b[ni] = fp8_word<E5M2_B, FNUZ>(bytes);
        }
#pragma unroll
        for (int mi = 0; mi < TM; ++mi)
#pragma unroll
            for (int ni = 0; ni < TN; ++ni) acc[mi * TN + ni] = mfma_fp8<E5M2_A, E5M2_B>(a[mi], b[ni], acc[mi * TN + ni]);
    }
#pragma unroll
    for (int t = 0; t < TM * TN; ++t)
#pragma unroll
        for (int i = 0; i < 4; ++i) C[4 * t + i] = acc[t][i] / SCALE;
}
#endif

}  // namespace tc

#endif  // TILECRAFT_TC_MFMA_H
