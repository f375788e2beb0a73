// A CPU emulator of the AMDGPU builtins tilecraft's HIP C++ uses, so that generated kernels run on the
// host: tests/hip/emulator.py compiles a kernel's `hip-source` as C++17 with the host clang, this header
// included first (-include) and -D__gfx942__ (or the arch it was generated for), and the fake HIP
// runtime (tests/hip/fake_libamdhip64.c) launches it. It emulates the semantics the ISA defines, not
// the hardware's timing:
//
// * A grid runs one work-group after another. The work-items of a work-group are fibers (ucontext) on
//   one OS thread, switched only at s_barrier and at wavefront-wide operations, so a work-item runs
//   alone between those points and atomics are plain read-modify-writes.
// * Wavefronts are the 64 consecutive work-items of the flattened work-group id (a work-group of 32 is
//   one partial wavefront). ds_bpermute and the MFMA builtins are wavefront collectives: every lane of
//   the wavefront must reach the same one before any of them goes on, as in lockstep.
// * s_barrier releases the work-group when every work-item has reached it; a work-item that finishes
//   while others wait, or work-items that never meet, are errors (undefined behaviour on the GPU).
// * MFMA computes from the operand registers as AMD's CDNA3 ISA guide lays them out per lane ("Matrix
//   fused multiply-add", and AMD's matrix instruction calculator): for 16x16x16 f16/bf16, lane l holds
//   A[l % 16][4 * (l / 16) + i] and B[4 * (l / 16) + i][l % 16], i < 4, and C/D[4 * (l / 16) + i][l % 16];
//   16x16x32 fp8/bf8 holds 8 k per lane. Products are summed in double and rounded to float once (the
//   hardware's internal rounding is not modelled). On gfx942 fp8/bf8 bytes are read in the FNUZ formats
//   (e4m3fnuz: bias 8, e5m2fnuz: bias 16; 0x80 is NaN, no infinities), as the hardware reads them.
// * LDS (`tc_smem`) is filled with 0xff bytes (NaN as float16 and float32) before each work-group runs.
//
// Everything named __builtin_amdgcn_* or __hip_* is a macro here: the host clang does not know AMDGPU
// builtins, and a builtin the generated code starts to use without an emulation fails to compile.
#pragma once
// The C++ headers first: the generated code typedefs int64_t and friends as the same types.
#include <ucontext.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

namespace tc_emu {

typedef float f32x4 __attribute__((ext_vector_type(4)));
typedef _Float16 f16x4 __attribute__((ext_vector_type(4)));
typedef short i16x4 __attribute__((ext_vector_type(4)));

enum State { RUNNABLE, AT_BARRIER, AT_WAVE, DONE };

struct Fiber;
typedef void (*Collective)(Fiber** lanes, int n);

struct Fiber {
    ucontext_t context;
    char* stack;
    State state;
    unsigned id[3];   // work-item id in the work-group
    int lane;         // flattened id % 64
    Collective collective;
    const char* what;  // the collective's name, for errors
    unsigned char in[32], out[16];
};

static const size_t STACK_BYTES = 256 * 1024;
static const int WAVE = 64;
static const long LDS_BYTES = 160 * 1024;  // the largest LDS of a CDNA arch (gfx950)
static ucontext_t scheduler;
static Fiber* current = nullptr;
static std::vector<Fiber> fibers;
static unsigned group_id[3], group_size[3];
static std::function<void()> body;
static char error_text[512];

inline void fail(const char* text) {
    if (!error_text[0]) std::snprintf(error_text, sizeof error_text, "%s", text);
}

inline void yield(State state) {
    Fiber* f = current;
    f->state = state;
    swapcontext(&f->context, &scheduler);
}

inline void entry() {
    body();
    current->state = DONE;  // uc_link returns to the scheduler
}

inline void start(int threads) {
    if ((int)fibers.size() < threads) {
        size_t old = fibers.size();
        fibers.resize(threads);
        for (size_t i = old; i < fibers.size(); ++i) fibers[i].stack = (char*)std::malloc(STACK_BYTES);
    }
    for (int i = 0; i < threads; ++i) {
        Fiber& f = fibers[i];
        f.state = RUNNABLE;
        f.id[0] = i % group_size[0];
        f.id[1] = (i / group_size[0]) % group_size[1];
        f.id[2] = i / (group_size[0] * group_size[1]);
        f.lane = i % WAVE;
        getcontext(&f.context);
        f.context.uc_stack.ss_sp = f.stack;
        f.context.uc_stack.ss_size = STACK_BYTES;
        f.context.uc_link = &scheduler;
        makecontext(&f.context, (void (*)())entry, 0);
    }
}

// Run the collective of every wavefront whose lanes all wait at the same one; true when one ran.
inline bool release_waves(int threads) {
    bool released = false;
    for (int w = 0; w * WAVE < threads; ++w) {
        int n = threads - w * WAVE < WAVE ? threads - w * WAVE : WAVE;
        Fiber* lanes[WAVE];
        int waiting = 0, runnable = 0;
        for (int l = 0; l < n; ++l) {
            lanes[l] = &fibers[w * WAVE + l];
            waiting += lanes[l]->state == AT_WAVE;
            runnable += lanes[l]->state == RUNNABLE;
        }
        if (waiting == 0 || runnable) continue;
        if (waiting < n) {
            char text[256];
            for (int l = 0; l < n; ++l)
                if (lanes[l]->state == AT_WAVE)
                    std::snprintf(text, sizeof text, "%s was not reached by every lane of wavefront %d",
                                  lanes[l]->what, w);
            fail(text);
            return false;
        }
        for (int l = 1; l < n; ++l)
            if (lanes[l]->collective != lanes[0]->collective) {
                fail("the lanes of a wavefront reached different wavefront operations");
                return false;
            }
        lanes[0]->collective(lanes, n);
        for (int l = 0; l < n; ++l) lanes[l]->state = RUNNABLE;
        released = true;
    }
    return released;
}

// Runs one work-group; false (error_text set) on a barrier or wavefront error.
inline bool run_group(int threads) {
    while (!error_text[0]) {
        for (int i = 0; i < threads && !error_text[0]; ++i) {
            if (fibers[i].state != RUNNABLE) continue;
            current = &fibers[i];
            swapcontext(&scheduler, &fibers[i].context);
        }
        if (error_text[0]) break;
        if (release_waves(threads)) continue;
        if (error_text[0]) break;
        int done = 0, barrier = 0;
        for (int i = 0; i < threads; ++i) {
            done += fibers[i].state == DONE;
            barrier += fibers[i].state == AT_BARRIER;
        }
        if (done == threads) return true;
        if (barrier == threads) {
            for (int i = 0; i < threads; ++i) fibers[i].state = RUNNABLE;
            continue;
        }
        std::snprintf(error_text, sizeof error_text,
                      "work-items never meet: %d at s_barrier, %d finished, %d at wavefront operations", barrier,
                      done, threads - done - barrier);
    }
    return false;
}

}  // namespace tc_emu

// The work-group's LDS (the generated kernel declares it `extern __shared__ char tc_smem[]`).
alignas(128) static char tc_smem[tc_emu::LDS_BYTES];

namespace tc_emu {

// Runs a grid of `groups` work-groups of `size` work-items with `lds` bytes of dynamic LDS, each
// work-item calling `kernel`; 0, or 1 with `error`.
inline int run_grid(const unsigned groups[3], const unsigned size[3], unsigned lds, std::function<void()> kernel,
                    char* error, int error_len) {
    error_text[0] = 0;
    int threads = (int)(size[0] * size[1] * size[2]);
    if (lds > LDS_BYTES) {
        std::snprintf(error, error_len, "%u bytes of LDS requested, the emulator has %ld", lds, LDS_BYTES);
        return 1;
    }
    body = std::move(kernel);
    for (int k = 0; k < 3; ++k) group_size[k] = size[k];
    for (unsigned gz = 0; gz < groups[2]; ++gz)
        for (unsigned gy = 0; gy < groups[1]; ++gy)
            for (unsigned gx = 0; gx < groups[0]; ++gx) {
                group_id[0] = gx, group_id[1] = gy, group_id[2] = gz;
                std::memset(tc_smem, 0xff, sizeof tc_smem);
                start(threads);
                if (!run_group(threads)) {
                    std::snprintf(error, error_len, "work-group (%u, %u, %u): %s", gx, gy, gz, error_text);
                    return 1;
                }
            }
    return 0;
}

inline unsigned workitem(int k) { return current->id[k]; }
inline unsigned workgroup(int k) { return group_id[k]; }

// mbcnt: `acc` plus the set bits of `mask` below this lane, in the low (lanes 0-31) or high half.
inline unsigned mbcnt_lo(unsigned mask, unsigned acc) {
    int below = current->lane < 32 ? current->lane : 32;
    return acc + __builtin_popcount(below == 32 ? mask : mask & ((1u << below) - 1u));
}
inline unsigned mbcnt_hi(unsigned mask, unsigned acc) {
    int below = current->lane > 32 ? current->lane - 32 : 0;
    return acc + __builtin_popcount(mask & ((1u << below) - 1u));
}

inline void barrier() { yield(AT_BARRIER); }

template <typename In, typename Out>
inline Out collective(const In& value, Collective op, const char* what) {
    static_assert(sizeof(In) <= sizeof(Fiber::in) && sizeof(Out) <= sizeof(Fiber::out), "collective operand size");
    Fiber* f = current;
    std::memcpy(f->in, &value, sizeof(In));
    f->collective = op;
    f->what = what;
    yield(AT_WAVE);
    Out out;
    std::memcpy(&out, f->out, sizeof(Out));
    return out;
}

// ds_bpermute_b32: lane l gets the value of the lane whose byte address (bits 7:2) lane l gave.
struct Permute {
    int address, value;
};
inline void bpermute(Fiber** lanes, int n) {
    for (int l = 0; l < n; ++l) {
        Permute p;
        std::memcpy(&p, lanes[l]->in, sizeof p);
        int from = (p.address >> 2) & (WAVE - 1);
        if (from >= n) {
            fail("ds_bpermute reads a lane past the (partial) wavefront");
            return;
        }
        Permute src;
        std::memcpy(&src, lanes[from]->in, sizeof src);
        std::memcpy(lanes[l]->out, &src.value, sizeof src.value);
    }
}
inline int ds_bpermute(int address, int value) {
    return collective<Permute, int>(Permute{address, value}, &bpermute, "ds_bpermute");
}

// ------------------------------------------------------------------ MFMA

inline float bf16_value(unsigned short bits) {
    unsigned u = (unsigned)bits << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

// An fp8 byte as gfx942 reads it: E5M2 ("bf8") or E4M3 ("fp8"), FNUZ (bias one higher than OCP's, NaN
// at 0x80, no infinities) where FNUZ, else OCP (e4m3fn: NaN at 0x7f/0xff; e5m2: IEEE-like).
inline double fp8_value(unsigned char b, bool e5m2, bool fnuz) {
    const int man_bits = e5m2 ? 2 : 3, bias = (e5m2 ? 15 : 7) + (fnuz ? 1 : 0);
    const int exp = (b >> man_bits) & (e5m2 ? 31 : 15), man = b & ((1 << man_bits) - 1);
    const double sign = (b & 0x80) ? -1.0 : 1.0;
    if (fnuz && b == 0x80) return NAN;
    if (!fnuz && e5m2 && exp == 31) return man ? NAN : sign * INFINITY;
    if (!fnuz && !e5m2 && exp == 15 && man == 7) return NAN;
    if (exp == 0) return sign * std::ldexp((double)man, 1 - bias - man_bits);
    return sign * std::ldexp(1.0 + std::ldexp((double)man, -man_bits), exp - bias);
}

// Operands of one 16x16xK MFMA as the wavefront holds them: per lane `per_lane` k of A and B, 4 of C.
struct MfmaIn {
    double a[8], b[8];
    float c[4];
};

// One 16x16xK MFMA over the wavefront. Each lane passes a pointer to its operands, which stay on its
// (suspended) fiber's stack until the collective has run.
template <int PER_LANE>
inline void mfma(Fiber** lanes, int n) {
    if (n != WAVE) {
        fail("an MFMA ran in a partial wavefront");
        return;
    }
    const int k = 4 * PER_LANE;
    double a[16][32], b[32][16], c[16][16];
    for (int l = 0; l < WAVE; ++l) {
        const MfmaIn* in;
        std::memcpy(&in, lanes[l]->in, sizeof in);
        for (int i = 0; i < PER_LANE; ++i) {
            a[l % 16][(l / 16) * PER_LANE + i] = in->a[i];
            b[(l / 16) * PER_LANE + i][l % 16] = in->b[i];
        }
        for (int i = 0; i < 4; ++i) c[(l / 16) * 4 + i][l % 16] = in->c[i];
    }
    for (int l = 0; l < WAVE; ++l) {
        float d[4];
        for (int i = 0; i < 4; ++i) {
            const int row = (l / 16) * 4 + i, col = l % 16;
            double acc = c[row][col];
            for (int kk = 0; kk < k; ++kk) acc += a[row][kk] * b[kk][col];
            d[i] = (float)acc;
        }
        std::memcpy(lanes[l]->out, d, sizeof d);
    }
}

template <int PER_LANE>
inline f32x4 run_mfma(const MfmaIn& in, const char* what) {
    return collective<const MfmaIn*, f32x4>(&in, &mfma<PER_LANE>, what);
}

inline f32x4 mfma_f16(f16x4 a, f16x4 b, f32x4 c) {
    MfmaIn in;
    for (int i = 0; i < 4; ++i) in.a[i] = (double)(float)a[i], in.b[i] = (double)(float)b[i], in.c[i] = c[i];
    return run_mfma<4>(in, "v_mfma_f32_16x16x16_f16");
}

inline f32x4 mfma_bf16(i16x4 a, i16x4 b, f32x4 c) {
    MfmaIn in;
    for (int i = 0; i < 4; ++i)
        in.a[i] = bf16_value((unsigned short)a[i]), in.b[i] = bf16_value((unsigned short)b[i]), in.c[i] = c[i];
    return run_mfma<4>(in, "v_mfma_f32_16x16x16_bf16");
}

#if defined(__gfx940__) || defined(__gfx941__) || defined(__gfx942__)
static const bool FP8_FNUZ = true;
#else
static const bool FP8_FNUZ = false;
#endif

template <bool E5M2_A, bool E5M2_B>
inline f32x4 mfma_fp8(long a, long b, f32x4 c) {
    MfmaIn in;
    for (int i = 0; i < 8; ++i) {
        in.a[i] = fp8_value((unsigned char)((unsigned long)a >> (8 * i)), E5M2_A, FP8_FNUZ);
        in.b[i] = fp8_value((unsigned char)((unsigned long)b >> (8 * i)), E5M2_B, FP8_FNUZ);
    }
    for (int i = 0; i < 4; ++i) in.c[i] = c[i];
    return run_mfma<8>(in, "v_mfma_f32_16x16x32_fp8");
}

// ------------------------------------------------------------------ atomics (one OS thread: plain RMW)

template <typename T, typename V>
inline T atomic_add(T* p, V v) {
    T old = *p;
    *p = old + (T)v;
    return old;
}
template <typename T, typename V>
inline T atomic_max(T* p, V v) {
    T old = *p;
    *p = (T)v > old ? (T)v : old;
    return old;
}
template <typename T, typename V>
inline T atomic_min(T* p, V v) {
    T old = *p;
    *p = (T)v < old ? (T)v : old;
    return old;
}
template <typename T>
inline T atomic_load(T* p) {
    return *p;
}
template <typename T, typename V>
inline bool atomic_cas(T* p, T* expected, V desired) {
    if (*p == *expected) {
        *p = (T)desired;
        return true;
    }
    *expected = *p;
    return false;
}

}  // namespace tc_emu

// amdgpu_flat_work_group_size applies to kernels only, which a host function is not: it becomes
// __attribute__(()) (the runner checks the launch against it instead).
#define amdgpu_flat_work_group_size(lo, hi)
#define __builtin_amdgcn_workitem_id_x() tc_emu::workitem(0)
#define __builtin_amdgcn_workitem_id_y() tc_emu::workitem(1)
#define __builtin_amdgcn_workitem_id_z() tc_emu::workitem(2)
#define __builtin_amdgcn_workgroup_id_x() tc_emu::workgroup(0)
#define __builtin_amdgcn_workgroup_id_y() tc_emu::workgroup(1)
#define __builtin_amdgcn_workgroup_id_z() tc_emu::workgroup(2)
#define __builtin_amdgcn_mbcnt_lo(mask, acc) tc_emu::mbcnt_lo(mask, acc)
#define __builtin_amdgcn_mbcnt_hi(mask, acc) tc_emu::mbcnt_hi(mask, acc)
#define __builtin_amdgcn_s_barrier() tc_emu::barrier()
#define __builtin_amdgcn_fence(order, scope) ((void)(order), (void)(scope))
#define __builtin_amdgcn_ds_bpermute(address, value) tc_emu::ds_bpermute(address, value)
#define __builtin_amdgcn_mfma_f32_16x16x16f16(a, b, c, cbsz, abid, blgp) tc_emu::mfma_f16(a, b, c)
#define __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a, b, c, cbsz, abid, blgp) tc_emu::mfma_bf16(a, b, c)
#define __builtin_amdgcn_mfma_f32_16x16x32_fp8_fp8(a, b, c, cbsz, abid, blgp) tc_emu::mfma_fp8<false, false>(a, b, c)
#define __builtin_amdgcn_mfma_f32_16x16x32_fp8_bf8(a, b, c, cbsz, abid, blgp) tc_emu::mfma_fp8<false, true>(a, b, c)
#define __builtin_amdgcn_mfma_f32_16x16x32_bf8_fp8(a, b, c, cbsz, abid, blgp) tc_emu::mfma_fp8<true, false>(a, b, c)
#define __builtin_amdgcn_mfma_f32_16x16x32_bf8_bf8(a, b, c, cbsz, abid, blgp) tc_emu::mfma_fp8<true, true>(a, b, c)
#define __HIP_MEMORY_SCOPE_AGENT 3
#define __hip_atomic_fetch_add(p, v, order, scope) tc_emu::atomic_add(p, v)
#define __hip_atomic_fetch_max(p, v, order, scope) tc_emu::atomic_max(p, v)
#define __hip_atomic_fetch_min(p, v, order, scope) tc_emu::atomic_min(p, v)
#define __hip_atomic_load(p, order, scope) tc_emu::atomic_load(p)
#define __hip_atomic_compare_exchange_strong(p, expected, desired, success, failure, scope) \
    tc_emu::atomic_cas(p, expected, desired)
