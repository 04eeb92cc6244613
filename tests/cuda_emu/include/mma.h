/* mma.h of the CUDA emulator: the warp matrix functions (nvcuda::wmma) for
 * the tiles the suite uses: 16x16x16, bf16 operands (matrix_a and matrix_b,
 * row- or column-major in memory) and fp32 accumulators, on sm_80 and later.
 *
 * On a GPU a fragment is spread over the 32 lanes of a warp (8 elements per
 * lane here), and which lane holds which element is unspecified: portable code
 * only loads, stores, multiplies and fills fragments, and touches x[i] only
 * uniformly over all num_elements (e.g. to scale). The emulator enforces that
 * by giving every fragment kind its own scrambled element-to-lane map, unlike
 * any GPU's: code that reads x[i] as "row lane / 4" gets wrong results.
 *
 * How the calls meet the fiber model (README.md, "The thread model"):
 * - load_matrix_sync and store_matrix_sync are per-lane memory accesses, as on
 *   the hardware: each lane reads or writes its own elements when it gets
 *   there, without waiting for the others. So a missing __syncwarp() or
 *   __syncthreads() between writing a tile and loading it (or between storing
 *   a fragment and another lane reading the result) shows up as stale values
 *   or NaN from 0xff-filled shared memory.
 * - mma_sync is the collective: each lane puts its elements of a, b and c in
 *   its warp's staging area, waits at a warp barrier for all 32 lanes, computes
 *   its elements of d from the whole matrices, and waits again before the
 *   staging area can be reused.
 * - Every call needs all 32 lanes of the warp (a GPU hangs or misbehaves
 *   otherwise), a 256-bit aligned pointer and a leading dimension that is a
 *   multiple of 16 bytes; a violation stops the program with a message.
 *
 * Arithmetic: the products of bf16 values are exact in fp32; each element of
 * d is c + (the 16 products summed in fp32, in order of k). A GPU's tensor
 * cores sum in another order, so results agree to fp32 rounding. */
#ifndef CUDA_EMU_MMA_H
#define CUDA_EMU_MMA_H

#include "cuda_runtime.h"
#include "cuda_bf16.h"

namespace nvcuda {
namespace wmma {

struct row_major {};
struct col_major {};
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
enum layout_t { mem_row_major, mem_col_major };

namespace emu {
enum { KIND_A = 0, KIND_B = 1, KIND_ACC = 2 };

/* Element i of lane l of a fragment of this kind is cell (r * 16 + c) of the
 * logical 16x16 matrix (A: M x K, B: K x N, accumulator: M x N). An odd
 * multiplier makes each map a permutation of the 256 cells. */
static inline int cell(int kind, int lane, int i) {
    static const int mul[3] = {77, 45, 139}, add[3] = {5, 3, 11};
    return ((lane * 8 + i) * mul[kind] + add[kind]) & 255;
}

static inline int linear_tid() {
    return (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
}

static inline void check_warp(const char *what) {
    unsigned m = __activemask();
    if (m != 0xffffffffu)
        ::cuda_emu::fatal("wmma::%s called with active lanes 0x%08x: every lane of the warp must "
                          "call it (a partial warp, an exited lane or divergent code)", what, m);
}

static inline void check_mem(const char *what, const void *p, unsigned ldm, size_t elem) {
    if ((uintptr_t)p % 32 != 0)
        ::cuda_emu::fatal("wmma::%s: pointer %p is not 256-bit aligned", what, p);
    if ((ldm * elem) % 16 != 0)
        ::cuda_emu::fatal("wmma::%s: leading dimension %u is not a multiple of 16 bytes", what, ldm);
}

/* Per warp of the running block: the whole A, B and C of an mma_sync. Blocks
 * run one at a time, so one area per warp index serves every block. */
inline float stage[32][3][256];
}  // namespace emu

template <class Use, int M, int N, int K, class T, class Layout = void> class fragment;

template <class T, int Kind> struct emu_fragment_base {
    typedef T element_type;
    typedef T storage_element_type;
    static const int num_elements = 8;
    static const int emu_kind = Kind;
    T x[8];
};

template <> class fragment<matrix_a, 16, 16, 16, __nv_bfloat16, row_major>
    : public emu_fragment_base<__nv_bfloat16, emu::KIND_A> {};
template <> class fragment<matrix_a, 16, 16, 16, __nv_bfloat16, col_major>
    : public emu_fragment_base<__nv_bfloat16, emu::KIND_A> {};
template <> class fragment<matrix_b, 16, 16, 16, __nv_bfloat16, row_major>
    : public emu_fragment_base<__nv_bfloat16, emu::KIND_B> {};
template <> class fragment<matrix_b, 16, 16, 16, __nv_bfloat16, col_major>
    : public emu_fragment_base<__nv_bfloat16, emu::KIND_B> {};
template <> class fragment<accumulator, 16, 16, 16, float>
    : public emu_fragment_base<float, emu::KIND_ACC> {};

template <class F> static inline void fill_fragment(F &f, typename F::element_type v) {
    for (int i = 0; i < F::num_elements; i++) f.x[i] = v;
}

/* A (M x K): row-major A[r][k] = p[r * ldm + k], column-major p[k * ldm + r].
 * B (K x N): row-major B[k][n] = p[k * ldm + n], column-major p[n * ldm + k]. */
template <class Use, class Layout>
static inline void load_matrix_sync(fragment<Use, 16, 16, 16, __nv_bfloat16, Layout> &f,
                                    const __nv_bfloat16 *p, unsigned ldm) {
    emu::check_warp("load_matrix_sync");
    emu::check_mem("load_matrix_sync", p, ldm, sizeof(__nv_bfloat16));
    const bool row = std::is_same<Layout, row_major>::value;
    const int kind = std::is_same<Use, matrix_a>::value ? emu::KIND_A : emu::KIND_B;
    const int lane = emu::linear_tid() % 32;
    for (int i = 0; i < 8; i++) {
        int c = emu::cell(kind, lane, i), r = c / 16, k = c % 16;   /* logical [r][k] */
        f.x[i] = row ? p[(size_t)r * ldm + k] : p[(size_t)k * ldm + r];
    }
}

static inline void load_matrix_sync(fragment<accumulator, 16, 16, 16, float> &f, const float *p,
                                    unsigned ldm, layout_t layout) {
    emu::check_warp("load_matrix_sync");
    emu::check_mem("load_matrix_sync", p, ldm, sizeof(float));
    const int lane = emu::linear_tid() % 32;
    for (int i = 0; i < 8; i++) {
        int c = emu::cell(emu::KIND_ACC, lane, i), r = c / 16, n = c % 16;
        f.x[i] = layout == mem_row_major ? p[(size_t)r * ldm + n] : p[(size_t)n * ldm + r];
    }
}

static inline void store_matrix_sync(float *p, const fragment<accumulator, 16, 16, 16, float> &f,
                                     unsigned ldm, layout_t layout) {
    emu::check_warp("store_matrix_sync");
    emu::check_mem("store_matrix_sync", p, ldm, sizeof(float));
    const int lane = emu::linear_tid() % 32;
    for (int i = 0; i < 8; i++) {
        int c = emu::cell(emu::KIND_ACC, lane, i), r = c / 16, n = c % 16;
        if (layout == mem_row_major) p[(size_t)r * ldm + n] = f.x[i];
        else p[(size_t)n * ldm + r] = f.x[i];
    }
}

/* d = a b + c (d may be c). */
template <class LA, class LB>
static inline void mma_sync(fragment<accumulator, 16, 16, 16, float> &d,
                            const fragment<matrix_a, 16, 16, 16, __nv_bfloat16, LA> &a,
                            const fragment<matrix_b, 16, 16, 16, __nv_bfloat16, LB> &b,
                            const fragment<accumulator, 16, 16, 16, float> &c) {
    emu::check_warp("mma_sync");
    const int tid = emu::linear_tid(), lane = tid % 32;
    float(*s)[256] = emu::stage[tid / 32];
    for (int i = 0; i < 8; i++) {
        s[0][emu::cell(emu::KIND_A, lane, i)] = __bfloat162float(a.x[i]);
        s[1][emu::cell(emu::KIND_B, lane, i)] = __bfloat162float(b.x[i]);
        s[2][emu::cell(emu::KIND_ACC, lane, i)] = c.x[i];
    }
    __syncwarp();   /* every lane's a, b and c are staged */
    float out[8];
    for (int i = 0; i < 8; i++) {
        int cc = emu::cell(emu::KIND_ACC, lane, i), r = cc / 16, n = cc % 16;
        float sum = 0.0f;
        for (int k = 0; k < 16; k++) sum += s[0][r * 16 + k] * s[1][k * 16 + n];
        out[i] = s[2][cc] + sum;
    }
    __syncwarp();   /* every lane has read the staging area */
    for (int i = 0; i < 8; i++) d.x[i] = out[i];
}

}  // namespace wmma
}  // namespace nvcuda

#endif
