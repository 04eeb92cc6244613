/* selftest.cu: the CUDA emulator tested on small kernels written the way the
 * suite writes them (LAUNCH, shared memory, shuffles), each checked against a
 * host computation with exact (integer-valued) data where possible.
 *
 * Run as a unit test binary: `cuda_emu_selftest --list`, `cuda_emu_selftest
 * NAME`; the NCCL tests also run under mpirun with EMU_GPUS >= ranks. */
#include "cuda_common.cuh"

#include <nccl.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define UNIT_MAIN
#include "dtype.h"
#include "tests/unit.h"

/* ---- helpers --------------------------------------------------------------------------- */
template <class T> static T *dalloc(size_t n) {
    T *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, n * sizeof(T)));
    return p;
}
template <class T> static void up(T *d, const T *h, size_t n) {
    CUDA_CHECK(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice));
}
template <class T> static void down(T *h, const T *d, size_t n) {
    CUDA_CHECK(cudaMemcpy(h, d, n * sizeof(T), cudaMemcpyDeviceToHost));
}
static unsigned rng_state = 12345;
static int rnd_int(int lo, int hi) {   /* [lo, hi] */
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (int)((rng_state >> 8) % (unsigned)(hi - lo + 1));
}
static float rnd_f(void) { return (float)rnd_int(-1000000, 1000000) / 1000000.0f; }

/* ---- block reduction in shared memory ---------------------------------------------------------- */
/* out[block] = sum of x over the block's range: the classic tree with a
 * barrier per level (blockDim a power of two). */
__global__ void block_sum_tree(const float *x, float *out, int n) {
    __shared__ float s[1024];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0.0f;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if ((int)threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

TEST(cuda_emu_block_reduction_with_shared_memory_and_barriers_is_exact) {
    const int sizes[] = {1, 31, 256, 1000, 4099};
    const int blocks[] = {32, 64, 256, 1024};
    for (int si = 0; si < 5; si++)
        for (int bi = 0; bi < 4; bi++) {
            int n = sizes[si], bs = blocks[bi], g = (int)ceil_div(n, bs);
            float *hx = (float *)malloc(n * sizeof(float)), *ho = (float *)malloc(g * sizeof(float));
            for (int i = 0; i < n; i++) hx[i] = (float)rnd_int(-100, 100);
            float *x = dalloc<float>(n), *o = dalloc<float>(g);
            up(x, hx, n);
            LAUNCH(block_sum_tree, g, bs, 0, 0, x, o, n);
            down(ho, o, g);
            for (int b = 0; b < g; b++) {
                float want = 0;
                for (int i = b * bs; i < n && i < (b + 1) * bs; i++) want += hx[i];
                if (ho[b] != want) UNIT_FAIL("n=%d block=%d: block %d sum %g, expected %g", n, bs, b, ho[b], want);
            }
            CUDA_CHECK(cudaFree(x));
            CUDA_CHECK(cudaFree(o));
            free(hx);
            free(ho);
        }
}

/* ---- warp shuffles ------------------------------------------------------------------------------- */
__device__ __forceinline__ float warp_sum_xor(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ __forceinline__ float warp_sum_down(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    return v;
}

/* Block sum through warp shuffles: each warp reduces, lane 0 writes its
 * warp's sum to shared memory, warp 0 reduces those. */
__global__ void block_sum_shuffle(const float *x, float *out, int n, int use_xor) {
    __shared__ float warp_sums[32];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    v = use_xor ? warp_sum_xor(v) : warp_sum_down(v);
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = (blockDim.x + 31) / 32;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < nwarps ? warp_sums[lane] : 0.0f;
        v = use_xor ? warp_sum_xor(v) : warp_sum_down(v);
        if (lane == 0) out[blockIdx.x] = v;
    }
}

TEST(cuda_emu_warp_shuffle_block_reduction_is_exact) {
    const int sizes[] = {5, 100, 1000, 3333};
    const int blocks[] = {32, 96, 256, 1024};
    for (int mode = 0; mode < 2; mode++)
        for (int si = 0; si < 4; si++)
            for (int bi = 0; bi < 4; bi++) {
                int n = sizes[si], bs = blocks[bi], g = (int)ceil_div(n, bs);
                float *hx = (float *)malloc(n * sizeof(float)), *ho = (float *)malloc(g * sizeof(float));
                for (int i = 0; i < n; i++) hx[i] = (float)rnd_int(-50, 50);
                float *x = dalloc<float>(n), *o = dalloc<float>(g);
                up(x, hx, n);
                LAUNCH(block_sum_shuffle, g, bs, 0, 0, x, o, n, mode);
                down(ho, o, g);
                for (int b = 0; b < g; b++) {
                    float want = 0;
                    for (int i = b * bs; i < n && i < (b + 1) * bs; i++) want += hx[i];
                    if (ho[b] != want)
                        UNIT_FAIL("%s n=%d block=%d: block %d sum %g, expected %g",
                                  mode ? "xor" : "down", n, bs, b, ho[b], want);
                }
                CUDA_CHECK(cudaFree(x));
                CUDA_CHECK(cudaFree(o));
                free(hx);
                free(ho);
            }
}

/* Every shuffle flavour, for every lane, with widths 32, 16 and 8. */
__global__ void shuffle_table(int *out, int arg, int width) {
    int lane = threadIdx.x % 32;
    int v = 100 + lane;
    int *o = out + threadIdx.x * 4;
    o[0] = __shfl_sync(0xffffffffu, v, arg, width);
    o[1] = __shfl_up_sync(0xffffffffu, v, arg, width);
    o[2] = __shfl_down_sync(0xffffffffu, v, arg, width);
    o[3] = __shfl_xor_sync(0xffffffffu, v, arg, width);
}

TEST(cuda_emu_shuffles_follow_cuda_lane_rules_for_every_width) {
    int *d = dalloc<int>(64 * 4), h[64 * 4];
    const int widths[] = {32, 16, 8};
    const int args[] = {0, 1, 3, 5, 12, 31};
    for (int wi = 0; wi < 3; wi++)
        for (int ai = 0; ai < 6; ai++) {
            int w = widths[wi], a = args[ai];
            LAUNCH(shuffle_table, 1, 64, 0, 0, d, a, w);
            down(h, d, 64 * 4);
            for (int t = 0; t < 64; t++) {
                int l = t % 32, start = l / w * w, end = start + w - 1;
                /* CUDA Programming Guide, warp shuffle functions */
                int idx = start + a % w;
                int upl = l - a >= start ? l - a : l;
                int dnl = l + a <= end ? l + a : l;
                int xl = (l ^ a) <= end ? (l ^ a) : l;
                int want[4] = {100 + idx, 100 + upl, 100 + dnl, 100 + xl};
                for (int k = 0; k < 4; k++)
                    if (h[t * 4 + k] != want[k]) {
                        static const char *nm[] = {"__shfl_sync", "__shfl_up_sync", "__shfl_down_sync", "__shfl_xor_sync"};
                        UNIT_FAIL("%s(arg %d, width %d) on lane %d gave %d, expected %d", nm[k], a, w, l, h[t * 4 + k], want[k]);
                    }
            }
        }
    CUDA_CHECK(cudaFree(d));
}

/* A partial last warp: reading a lane that does not exist is undefined; the
 * emulator makes it -1 (0xff bytes), and lanes that exist exchange normally. */
__global__ void partial_warp_down(int *out) {
    int v = (int)threadIdx.x;
    out[threadIdx.x] = __shfl_down_sync(0xffffffffu, v, 4);
}

TEST(cuda_emu_partial_warp_reads_of_missing_lanes_are_poisoned) {
    int *d = dalloc<int>(40), h[40];
    LAUNCH(partial_warp_down, 1, 40, 0, 0, d);
    down(h, d, 40);
    for (int t = 0; t < 40; t++) {
        int l = t % 32, want = l + 4 <= 31 ? t + 4 : t;
        if (t >= 32 && want >= 40) want = -1;   /* lane of a missing thread */
        EXPECT_EQ_INT(h[t], want);
    }
    CUDA_CHECK(cudaFree(d));
}

/* ---- votes and counting barriers --------------------------------------------------------------------- */
__global__ void votes(const int *pred, unsigned *ballot, int *any, int *all, int *count, int *and_, int *or_) {
    int t = threadIdx.x, p = pred[t];
    unsigned b = __ballot_sync(0xffffffffu, p);
    int a = __any_sync(0xffffffffu, p), l = __all_sync(0xffffffffu, p);
    int c = __syncthreads_count(p), ad = __syncthreads_and(p), o = __syncthreads_or(p);
    if (t % 32 == 0) { ballot[t / 32] = b; any[t / 32] = a; all[t / 32] = l; }
    if (t == 0) { *count = c; *and_ = ad; *or_ = o; }
}

TEST(cuda_emu_votes_and_counting_barriers_match_the_predicates) {
    int n = 96, hp[96];
    for (int i = 0; i < n; i++) hp[i] = (i % 7 == 0) || (i >= 64);   /* warp 2: all true */
    int *p = dalloc<int>(n), *any = dalloc<int>(3), *all = dalloc<int>(3), *c = dalloc<int>(3);
    unsigned *bal = dalloc<unsigned>(3);
    up(p, hp, n);
    LAUNCH(votes, 1, n, 0, 0, p, bal, any, all, c, c + 1, c + 2);
    unsigned hb[3];
    int ha[3], hl[3], hc[3];
    down(hb, bal, 3); down(ha, any, 3); down(hl, all, 3); down(hc, c, 3);
    int count = 0;
    for (int w = 0; w < 3; w++) {
        unsigned want = 0;
        for (int l = 0; l < 32; l++) if (hp[w * 32 + l]) want |= 1u << l;
        EXPECT_EQ_INT(hb[w], want);
        EXPECT_EQ_INT(ha[w], want != 0);
        EXPECT_EQ_INT(hl[w], want == 0xffffffffu);
        count += __builtin_popcount(want);
    }
    EXPECT_EQ_INT(hc[0], count);
    EXPECT_EQ_INT(hc[1], 0);
    EXPECT_EQ_INT(hc[2], 1);
    cudaFree(p); cudaFree(any); cudaFree(all); cudaFree(c); cudaFree(bal);
}

/* ---- 2D blocks, template kernels, dynamic shared memory ---------------------------------------------------- */
/* Transpose through a padded shared tile, 2D grid and block. */
template <int TILE>
__global__ void transpose_tiled(const float *in, float *out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + 1];
    int c = blockIdx.x * TILE + threadIdx.x, r = blockIdx.y * TILE + threadIdx.y;
    if (r < rows && c < cols) tile[threadIdx.y][threadIdx.x] = in[(size_t)r * cols + c];
    __syncthreads();
    int oc = blockIdx.y * TILE + threadIdx.x, orow = blockIdx.x * TILE + threadIdx.y;
    if (orow < cols && oc < rows) out[(size_t)orow * rows + oc] = tile[threadIdx.x][threadIdx.y];
}

template <int TILE> static void check_transpose(int rows, int cols) {
    size_t n = (size_t)rows * cols;
    float *h = (float *)malloc(n * 4), *ht = (float *)malloc(n * 4);
    for (size_t i = 0; i < n; i++) h[i] = (float)i;
    float *d = dalloc<float>(n), *dt = dalloc<float>(n);
    up(d, h, n);
    dim3 grid(ceil_div(cols, TILE), ceil_div(rows, TILE));
    LAUNCH(transpose_tiled<TILE>, grid, dim3(TILE, TILE), 0, 0, d, dt, rows, cols);
    down(ht, dt, n);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++)
            if (ht[(size_t)c * rows + r] != h[(size_t)r * cols + c]) {
                UNIT_FAIL("transpose<%d> %dx%d: out[%d][%d] = %g, expected %g", TILE, rows, cols, c, r,
                          ht[(size_t)c * rows + r], h[(size_t)r * cols + c]);
                r = rows; break;
            }
    cudaFree(d); cudaFree(dt); free(h); free(ht);
}

TEST(cuda_emu_2d_blocks_and_template_kernels_with_shared_tiles) {
    check_transpose<16>(33, 70);
    check_transpose<32>(64, 5);
    check_transpose<8>(1, 1);
}

/* Dynamic shared memory: each block stages its slice in reverse. */
__global__ void reverse_in_blocks(const float *x, float *y, int n) {
    extern __shared__ float buf[];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[threadIdx.x] = i < n ? x[i] : -1.0f;
    __syncthreads();
    int j = blockIdx.x * blockDim.x + (blockDim.x - 1 - threadIdx.x);
    if (j < n) y[j] = buf[threadIdx.x];
}

TEST(cuda_emu_dynamic_shared_memory_has_the_launch_size) {
    int n = 777, bs = 128, g = (int)ceil_div(n, bs);
    float hx[777], hy[777];
    for (int i = 0; i < n; i++) hx[i] = (float)i;
    float *x = dalloc<float>(n), *y = dalloc<float>(n);
    up(x, hx, n);
    LAUNCH(reverse_in_blocks, g, bs, bs * sizeof(float), 0, x, y, n);
    down(hy, y, n);
    for (int j = 0; j < n; j++) {
        int b = j / bs, t = bs - 1 - j % bs, i = b * bs + t;
        float want = i < n ? hx[i] : -1.0f;
        if (hy[j] != want) { UNIT_FAIL("y[%d] = %g, expected %g", j, hy[j], want); break; }
    }
    cudaFree(x); cudaFree(y);
}

/* Shared memory starts as 0xff bytes (NaN), in every block. */
__global__ void read_before_write(float *out) {
    __shared__ float s[64];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s[threadIdx.x];
    s[threadIdx.x] = 1.0f;
}

TEST(cuda_emu_uninitialised_shared_memory_reads_as_nan_in_every_block) {
    float *d = dalloc<float>(3 * 64), h[3 * 64];
    LAUNCH(read_before_write, 3, 64, 0, 0, d);
    down(h, d, 3 * 64);
    for (int i = 0; i < 3 * 64; i++)
        if (!isnan(h[i])) { UNIT_FAIL("element %d: %g, expected NaN", i, h[i]); break; }
    cudaFree(d);
}

/* Every form of __shared__ declaration the build step rewrites: several
 * declarators in one statement, a scalar, alignment specifiers, a pointer, a
 * declaration over two lines, dynamic memory as bytes and as rows. */
__global__ void shared_forms(int *out) {
    __shared__ float a[4], b[8];
    __shared__ int count;
    __shared__ __align__(16) float4 quad[2];
    __shared__ alignas(8) double wide[2];
    __shared__ float *where;
    __shared__ unsigned short
        split[3];
    extern __shared__ __align__(16) unsigned char raw[];
    int t = threadIdx.x;
    if (t < 4) a[t] = (float)t;
    if (t < 8) b[t] = (float)(10 * t);
    if (t == 0) { count = 0; where = &b[7]; quad[1].w = 5.0f; wide[1] = 0.25; split[2] = 7; }
    ((float *)raw)[t] = (float)(100 + t);
    __syncthreads();
    atomicAdd(&count, 1);
    __syncthreads();
    float (*rows)[4] = reinterpret_cast<float (*)[4]>(raw);
    if (t == 0) {
        out[0] = (int)(a[3] + b[7]);                           /* 3 + 70 */
        out[1] = count;                                        /* blockDim.x */
        out[2] = (int)*where + (int)quad[1].w + (int)(4 * wide[1]) + split[2];   /* 70 + 5 + 1 + 7 */
        out[3] = (int)rows[1][2];                              /* raw float 6 */
        out[4] = (int)(((uintptr_t)quad % 16) == 0) + (int)(((uintptr_t)raw % 16) == 0);
        out[5] = (int)(sizeof(a) + sizeof(b) + sizeof(quad));  /* 16 + 32 + 32 */
    }
}

TEST(cuda_emu_every_form_of_shared_declaration_is_per_block_and_sized) {
    int *d = dalloc<int>(6 * 3), h[6 * 3];
    LAUNCH(shared_forms, 1, 32, 32 * sizeof(float), 0, d);
    down(h, d, 6);
    EXPECT_EQ_INT(h[0], 73);
    EXPECT_EQ_INT(h[1], 32);
    EXPECT_EQ_INT(h[2], 83);
    EXPECT_EQ_INT(h[3], 106);
    EXPECT_EQ_INT(h[4], 2);
    EXPECT_EQ_INT(h[5], 80);
    cudaFree(d);
}

/* ---- atomics ----------------------------------------------------------------------------------------------- */
__global__ void histogram(const int *x, int *bins, float *fsum, int *imax, unsigned *cas_count, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    atomicAdd(&bins[x[i] % 8], 1);
    atomicAdd(fsum, (float)x[i]);
    atomicMax(imax, x[i]);
    unsigned old = *cas_count, assumed;
    do {
        assumed = old;
        old = atomicCAS(cas_count, assumed, assumed + 2u);
    } while (old != assumed);
}

TEST(cuda_emu_atomics_from_every_block_add_up) {
    int n = 1500, hx[1500];
    for (int i = 0; i < n; i++) hx[i] = rnd_int(0, 1000);
    int *x = dalloc<int>(n), *bins = dalloc<int>(8), *imax = dalloc<int>(1);
    float *fsum = dalloc<float>(1);
    unsigned *cas = dalloc<unsigned>(1);
    up(x, hx, n);
    CUDA_CHECK(cudaMemset(bins, 0, 8 * sizeof(int)));
    CUDA_CHECK(cudaMemset(fsum, 0, sizeof(float)));
    CUDA_CHECK(cudaMemset(imax, 0, sizeof(int)));
    CUDA_CHECK(cudaMemset(cas, 0, sizeof(unsigned)));
    LAUNCH(histogram, ceil_div(n, 128), 128, 0, 0, x, bins, fsum, imax, cas, n);
    int hb[8], want[8] = {0}, hm, wm = 0;
    float hs, ws = 0;
    unsigned hc;
    down(hb, bins, 8); down(&hs, fsum, 1); down(&hm, imax, 1); down(&hc, cas, 1);
    for (int i = 0; i < n; i++) { want[hx[i] % 8]++; ws += (float)hx[i]; if (hx[i] > wm) wm = hx[i]; }
    for (int b = 0; b < 8; b++) EXPECT_EQ_INT(hb[b], want[b]);
    EXPECT_NEAR(hs, ws, 0.0);
    EXPECT_EQ_INT(hm, wm);
    EXPECT_EQ_INT(hc, 2 * n);
    cudaFree(x); cudaFree(bins); cudaFree(imax); cudaFree(fsum); cudaFree(cas);
}

/* ---- bf16 ---------------------------------------------------------------------------------------------------- */
__global__ void to_bf16(const float *x, __nv_bfloat16 *y, float *back, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = __float2bfloat16(x[i]);
        back[i] = __bfloat162float(y[i]);
    }
}

static float from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

TEST(cuda_emu_bf16_rounding_matches_dtype_h_on_edge_cases_and_random_bits) {
    enum { N = 4096 };
    static float hx[N];
    int n = 0;
    const uint32_t edges[] = {
        0x00000000u, 0x80000000u, 0x3f800000u, 0x3f808000u /* tie, even: down */,
        0x3f818000u /* tie, odd: up */, 0x3f808001u, 0x3f807fffu, 0x7f7fffffu /* max: inf */,
        0x7f7f7fffu, 0x7f7f8000u /* tie to inf */, 0x00000001u /* smallest subnormal */,
        0x00008000u /* subnormal tie */, 0x00018000u, 0x007fffffu, 0x00800000u, 0x80008001u,
        0x7f800000u, 0xff800000u, 0xbf808000u, 0xc0490fdbu /* -pi */};
    for (uint32_t e : edges) hx[n++] = from_bits(e);
    while (n < N) {
        uint32_t u = ((uint32_t)rnd_int(0, 65535) << 16) | (uint32_t)rnd_int(0, 65535);
        if ((u & 0x7f800000u) == 0x7f800000u) continue;   /* NaN/inf below */
        hx[n++] = from_bits(u);
    }
    float *x = dalloc<float>(N), *back = dalloc<float>(N);
    __nv_bfloat16 *y = dalloc<__nv_bfloat16>(N);
    up(x, hx, N);
    LAUNCH(to_bf16, ceil_div(N, 256), 256, 0, 0, x, y, back, N);
    static uint16_t hy[N];
    static float hb[N];
    CUDA_CHECK(cudaMemcpy(hy, y, N * 2, cudaMemcpyDeviceToHost));
    down(hb, back, N);
    for (int i = 0; i < N; i++) {
        uint16_t want = f32_to_bf16(hx[i]);
        if (hy[i] != want) {
            uint32_t u; memcpy(&u, &hx[i], 4);
            UNIT_FAIL("__float2bfloat16(0x%08x = %g) = 0x%04x, dtype.h gives 0x%04x", u, hx[i], hy[i], want);
        }
        uint32_t widened = (uint32_t)hy[i] << 16;
        if (memcmp(&hb[i], &widened, 4) != 0) UNIT_FAIL("__bfloat162float is not exact at %d", i);
    }
    /* NaN: the hardware gives the canonical 0x7fff; dtype.h keeps the sign
     * and payload. Both must be NaN. */
    __nv_bfloat16 q = __float2bfloat16(from_bits(0xffc00001u));
    EXPECT(isnan(bf16_to_f32(q.__x)) && isnan(bf16_to_f32(f32_to_bf16(from_bits(0xffc00001u)))));
    EXPECT_EQ_INT(q.__x, 0x7fff);
    /* Directed roundings and the double path. */
    EXPECT_EQ_INT(__float2bfloat16_rz(from_bits(0x3f80ffffu)).__x, 0x3f80);
    EXPECT_EQ_INT(__float2bfloat16_ru(from_bits(0x3f800001u)).__x, 0x3f81);
    EXPECT_EQ_INT(__float2bfloat16_rd(from_bits(0xbf800001u)).__x, 0xbf81);
    EXPECT_EQ_INT(__double2bfloat16(1.0 + 1.0 / 256 + 1e-12).__x, 0x3f81);   /* just above a tie */
    EXPECT_EQ_INT(__double2bfloat16(1.0 + 1.0 / 256).__x, 0x3f80);          /* tie: even */
    cudaFree(x); cudaFree(back); cudaFree(y);
}

/* ---- cuBLAS --------------------------------------------------------------------------------------------------------- */
/* Column-major reference: C = alpha op(A) op(B) + beta C in double. */
static void ref_gemm(int ta, int tb, int m, int n, int k, float alpha, const float *A, int lda,
                     const float *B, int ldb, float beta, float *C, int ldc) {
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) {
            double acc = 0;
            for (int p = 0; p < k; p++) {
                double a = ta ? A[(size_t)i * lda + p] : A[(size_t)p * lda + i];
                double b = tb ? B[(size_t)p * ldb + j] : B[(size_t)j * ldb + p];
                acc += a * b;
            }
            C[(size_t)j * ldc + i] = (float)(alpha * acc + (beta == 0 ? 0.0 : beta * C[(size_t)j * ldc + i]));
        }
}

TEST(cuda_emu_cublas_gemm_fp32_bf16_tf32_with_transposes_and_leading_dimensions) {
    cublasHandle_t h;
    CUBLAS_CHECK(cublasCreate(&h));
    const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {33, 17, 65}, {64, 64, 64}};
    for (int s = 0; s < 4; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int mode = 0; mode < 4; mode++) {   /* fp32, tf32, bf16->fp32, bf16->bf16 */
                    int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
                    int ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
                    int lda = ar + 3, ldb = br + 1, ldc = m + 2;
                    size_t na = (size_t)lda * ac, nb = (size_t)ldb * bc, nc = (size_t)ldc * n;
                    float *A = (float *)malloc(na * 4), *B = (float *)malloc(nb * 4), *C = (float *)malloc(nc * 4), *R = (float *)malloc(nc * 4);
                    bool bf = mode >= 2;
                    for (size_t i = 0; i < na; i++) A[i] = bf ? bf16_to_f32(f32_to_bf16(rnd_f())) : rnd_f();
                    for (size_t i = 0; i < nb; i++) B[i] = bf ? bf16_to_f32(f32_to_bf16(rnd_f())) : rnd_f();
                    for (size_t i = 0; i < nc; i++) R[i] = C[i] = mode == 3 ? bf16_to_f32(f32_to_bf16(rnd_f())) : rnd_f();
                    float alpha = 0.75f, beta = (s % 2) ? 0.5f : 0.0f;
                    ref_gemm(ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, R, ldc);
                    cudaDataType abt = bf ? CUDA_R_16BF : CUDA_R_32F, ct = mode == 3 ? CUDA_R_16BF : CUDA_R_32F;
                    size_t abs_ = bf ? 2 : 4, cs = mode == 3 ? 2 : 4;
                    void *dA = dalloc<char>(na * abs_), *dB = dalloc<char>(nb * abs_), *dC = dalloc<char>(nc * cs);
                    void *tmp = malloc((na > nb ? (na > nc ? na : nc) : (nb > nc ? nb : nc)) * 4);
                    for (int which = 0; which < 3; which++) {
                        const float *src = which == 0 ? A : which == 1 ? B : C;
                        size_t cnt = which == 0 ? na : which == 1 ? nb : nc, es = which == 2 ? cs : abs_;
                        void *dst = which == 0 ? dA : which == 1 ? dB : dC;
                        for (size_t i = 0; i < cnt; i++) {
                            if (es == 2) ((uint16_t *)tmp)[i] = f32_to_bf16(src[i]);
                            else ((float *)tmp)[i] = src[i];
                        }
                        CUDA_CHECK(cudaMemcpy(dst, tmp, cnt * es, cudaMemcpyHostToDevice));
                    }
                    if (beta == 0) CUDA_CHECK(cudaMemset(dC, 0xff, nc * cs));   /* NaN must not leak in */
                    cublasComputeType_t comp = mode == 1 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
                    CUBLAS_CHECK(cublasGemmEx(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                              m, n, k, &alpha, dA, abt, lda, dB, abt, ldb, &beta, dC, ct, ldc,
                                              comp, CUBLAS_GEMM_DEFAULT));
                    CUDA_CHECK(cudaMemcpy(tmp, dC, nc * cs, cudaMemcpyDeviceToHost));
                    double tol = mode == 1 ? 2e-3 * sqrt((double)k) : mode == 3 ? 8e-3 : 1e-5;
                    for (int j = 0; j < n; j++)
                        for (int i = 0; i < m; i++) {
                            size_t at = (size_t)j * ldc + i;
                            float got = cs == 2 ? bf16_to_f32(((uint16_t *)tmp)[at]) : ((float *)tmp)[at];
                            double err = fabs(got - R[at]) / fmax(1.0, fabs(R[at]));
                            if (!(err <= tol)) {
                                UNIT_FAIL("mode %d m=%d n=%d k=%d ta=%d tb=%d: C[%d,%d] = %g, expected %g", mode, m, n, k, ta, tb, i, j, got, R[at]);
                                i = m; j = n;
                            }
                        }
                    /* tf32 must actually round: 1 + 2^-12 is not representable */
                    free(A); free(B); free(C); free(R); free(tmp);
                    cudaFree(dA); cudaFree(dB); cudaFree(dC);
                }
    /* Leading dimensions below the rows are refused, as by cuBLAS. */
    float one = 1, zero = 0;
    float *d = dalloc<float>(16);
    EXPECT_EQ_INT(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, d, 3, d, 4, &zero, d, 4), CUBLAS_STATUS_INVALID_VALUE);
    cudaFree(d);
    CUBLAS_CHECK(cublasDestroy(h));
}

TEST(cuda_emu_cublas_tf32_rounds_inputs_and_strided_batches_are_separate) {
    cublasHandle_t h;
    CUBLAS_CHECK(cublasCreate(&h));
    /* 1 x 1 x 1 product of (1 + 2^-12) by 1: fp32 keeps it, tf32 does not. */
    float ha = 1.0f + 1.0f / 4096, hb = 1.0f, one = 1, zero = 0, out;
    float *a = dalloc<float>(1), *b = dalloc<float>(1), *c = dalloc<float>(1);
    up(a, &ha, 1); up(b, &hb, 1);
    CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, a, 1, b, 1, &zero, c, 1));
    down(&out, c, 1);
    EXPECT_EQ_INT(out == ha, 1);
    CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
    CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, a, 1, b, 1, &zero, c, 1));
    down(&out, c, 1);
    EXPECT_EQ_INT(out == 1.0f, 1);
    CUBLAS_CHECK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    /* Strided batch: batch i uses A_i = i * I (2x2), B = all ones. */
    int batch = 3;
    float hA[3 * 4], hB[4] = {1, 1, 1, 1}, hC[3 * 4];
    for (int i = 0; i < batch; i++) { hA[i * 4 + 0] = (float)i; hA[i * 4 + 1] = 0; hA[i * 4 + 2] = 0; hA[i * 4 + 3] = (float)i; }
    float *dA = dalloc<float>(12), *dB = dalloc<float>(4), *dC = dalloc<float>(12);
    up(dA, hA, 12); up(dB, hB, 4);
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, dA, CUDA_R_32F, 2, 4,
                                            dB, CUDA_R_32F, 2, 0, &zero, dC, CUDA_R_32F, 2, 4, batch,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    down(hC, dC, 12);
    for (int i = 0; i < 12; i++) EXPECT_EQ_INT((int)hC[i], i / 4);
    cudaFree(a); cudaFree(b); cudaFree(c); cudaFree(dA); cudaFree(dB); cudaFree(dC);
    CUBLAS_CHECK(cublasDestroy(h));
}

/* ---- runtime ----------------------------------------------------------------------------------------------------------- */
__global__ void fill(float *x, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v;
}

TEST(cuda_emu_runtime_refuses_what_a_gpu_refuses) {
    float *d = dalloc<float>(8), h[8] = {0};
    /* fresh device memory is not zero */
    down(h, d, 8);
    EXPECT(isnan(h[0]));
    /* copy directions must match the pointers */
    EXPECT_EQ_INT(cudaMemcpy(d, h, 32, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    EXPECT_EQ_INT(cudaMemcpy(h, h + 4, 16, cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    EXPECT_EQ_INT(cudaMemcpy(d, h, 36, cudaMemcpyHostToDevice), cudaErrorInvalidValue);   /* past the end */
    EXPECT_EQ_INT(cudaMemcpy(d, h, 32, cudaMemcpyDefault), cudaSuccess);
    (void)cudaGetLastError();
    /* launch configuration */
    cuda_emu_launch(fill, dim3(0), dim3(32), 0, 0, d, 1.0f, 8);
    EXPECT_EQ_INT(cudaGetLastError(), cudaErrorInvalidConfiguration);
    cuda_emu_launch(fill, dim3(1), dim3(1025), 0, 0, d, 1.0f, 8);
    EXPECT_EQ_INT(cudaGetLastError(), cudaErrorInvalidConfiguration);
    cuda_emu_launch(fill, dim3(1), dim3(32), 64 * 1024, 0, d, 1.0f, 8);
    EXPECT_EQ_INT(cudaGetLastError(), cudaErrorInvalidValue);
    CUDA_CHECK(cudaFuncSetAttribute(fill, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
    cuda_emu_launch(fill, dim3(1), dim3(32), 64 * 1024, 0, d, 1.0f, 8);
    EXPECT_EQ_INT(cudaGetLastError(), cudaSuccess);
    EXPECT_EQ_INT(cudaGetLastError(), cudaSuccess);   /* reading clears it */
    /* streams and events */
    cudaStream_t s;
    cudaEvent_t a, b, nt;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    CUDA_CHECK(cudaEventCreateWithFlags(&nt, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(a, s));
    LAUNCH(fill, 1, 32, 0, s, d, 2.0f, 8);
    CUDA_CHECK(cudaEventRecord(b, s));
    CUDA_CHECK(cudaEventRecord(nt, s));
    CUDA_CHECK(cudaStreamWaitEvent(0, b, 0));
    float ms = -1;
    /* b may not have happened yet: timing it needs it done */
    cudaError_t early = cudaEventElapsedTime(&ms, a, b);
    EXPECT(early == cudaSuccess || early == cudaErrorNotReady);
    CUDA_CHECK(cudaEventSynchronize(b));
    CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    EXPECT(ms >= 0);
    EXPECT_EQ_INT(cudaEventElapsedTime(&ms, a, nt), cudaErrorInvalidResourceHandle);
    CUDA_CHECK(cudaDeviceSynchronize());   /* cudaFree below does not wait for queued work */
    CUDA_CHECK(cudaStreamDestroy(s));
    EXPECT_EQ_INT(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
    EXPECT_EQ_INT(cudaFree(d + 1), cudaErrorInvalidValue);
    CUDA_CHECK(cudaFree(d));
    EXPECT_EQ_INT(cudaFree(d), cudaErrorInvalidValue);
    (void)cudaGetLastError();
    cudaEventDestroy(a); cudaEventDestroy(b); cudaEventDestroy(nt);
}

/* ---- the stream model (emu_streams.cc) ----------------------------------------------------------------------
 * Each test holds under any order CUDA allows; the ones marked "deferred"
 * also check that the default mode delays work as long as it may, which is
 * what makes a missing dependency show (EMU_STREAMS=sync skips those checks). */
namespace cuda_emu {
bool deferred();
}

__global__ void affine(float *x, float a, float b, int n) {   /* x = a x + b */
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i] + b;
}
__global__ void copy_plus(const float *x, float *y, float b, int n) {   /* y = x + b */
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] + b;
}

/* One element of device memory, read on the host after all work is done. */
static float settled(const float *d) {
    CUDA_CHECK(cudaDeviceSynchronize());
    float h;
    down(&h, d, 1);
    return h;
}

TEST(cuda_emu_streams_keep_the_order_of_each_stream) {
    const int n = 40, S = 3, K = 12;
    cudaStream_t s[S];
    float *x[S];
    for (int k = 0; k < S; k++) {
        CUDA_CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
        x[k] = dalloc<float>(n);
    }
    for (int round = 0; round < 10; round++) {
        float want[S];
        for (int k = 0; k < S; k++) {
            LAUNCH(fill, 1, 64, 0, s[k], x[k], (float)k, n);
            want[k] = (float)k;
        }
        /* x = 2x + j does not commute with itself for different j: any
         * reordering within a stream changes the result */
        for (int j = 0; j < K; j++)
            for (int k = 0; k < S; k++) {
                LAUNCH(affine, 1, 64, 0, s[k], x[k], 2.0f, (float)(j + round), n);
                want[k] = 2.0f * want[k] + (float)(j + round);
            }
        CUDA_CHECK(cudaDeviceSynchronize());
        for (int k = 0; k < S; k++) {
            float h[40];
            down(h, x[k], n);
            for (int i = 0; i < n; i++)
                if (h[i] != want[k]) {
                    UNIT_FAIL("round %d stream %d element %d: %g, expected %g", round, k, i, h[i], want[k]);
                    break;
                }
        }
    }
    for (int k = 0; k < S; k++) {
        CUDA_CHECK(cudaStreamDestroy(s[k]));
        CUDA_CHECK(cudaFree(x[k]));
    }
}

TEST(cuda_emu_streams_event_waits_order_work_across_streams) {
    const int n = 100;
    cudaStream_t a, b;
    cudaEvent_t e;
    CUDA_CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    float *x = dalloc<float>(n), *y = dalloc<float>(n), h[100];
    for (int round = 0; round < 20; round++) {
        /* a: x = round, then 3x + 1; b waits for that, then y = x + 1, and
         * a waits for b before the next round writes x again */
        LAUNCH(fill, 1, 128, 0, a, x, (float)round, n);
        LAUNCH(affine, 1, 128, 0, a, x, 3.0f, 1.0f, n);
        CUDA_CHECK(cudaEventRecord(e, a));
        CUDA_CHECK(cudaStreamWaitEvent(b, e, 0));
        LAUNCH(copy_plus, 1, 128, 0, b, x, y, 1.0f, n);
        CUDA_CHECK(cudaEventRecord(e, b));
        CUDA_CHECK(cudaStreamWaitEvent(a, e, 0));
        CUDA_CHECK(cudaMemcpyAsync(h, y, sizeof h, cudaMemcpyDeviceToHost, a));
        CUDA_CHECK(cudaStreamSynchronize(a));
        for (int i = 0; i < n; i++)
            if (h[i] != 3.0f * round + 2.0f) {
                UNIT_FAIL("round %d: y[%d] = %g, expected %g", round, i, h[i], 3.0f * round + 2.0f);
                break;
            }
    }
    cudaEventDestroy(e);
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
    cudaFree(x);
    cudaFree(y);
}

/* A wait is for the record of the event made before it; recording the
 * event again later does not move the wait. */
TEST(cuda_emu_streams_event_wait_is_for_the_record_before_it_not_a_later_one) {
    cudaStream_t a, b;
    cudaEvent_t e;
    CUDA_CHECK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    float *x = dalloc<float>(1), *z = dalloc<float>(1), *y = dalloc<float>(2);
    LAUNCH(fill, 1, 1, 0, a, x, 1.0f, 1);
    CUDA_CHECK(cudaEventRecord(e, a));
    CUDA_CHECK(cudaStreamWaitEvent(b, e, 0));
    LAUNCH(fill, 1, 1, 0, a, z, 5.0f, 1);   /* after the first record only */
    CUDA_CHECK(cudaEventRecord(e, a));
    LAUNCH(copy_plus, 1, 1, 0, b, x, y, 0.0f, 1);       /* ordered after x = 1 */
    LAUNCH(copy_plus, 1, 1, 0, b, z, y + 1, 0.0f, 1);   /* not ordered after z = 5 */
    CUDA_CHECK(cudaStreamSynchronize(b));
    float h[2];
    CUDA_CHECK(cudaMemcpyAsync(h, y, sizeof h, cudaMemcpyDeviceToHost, b));
    CUDA_CHECK(cudaStreamSynchronize(b));
    EXPECT(h[0] == 1.0f);
    if (cuda_emu::deferred()) EXPECT(isnan(h[1]));   /* z was never written before b read it */
    EXPECT(settled(z) == 5.0f);
    cudaEventDestroy(e);
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
    cudaFree(x); cudaFree(y); cudaFree(z);
}

TEST(cuda_emu_streams_non_blocking_streams_are_not_ordered_with_the_legacy_stream) {
    cudaStream_t nb;
    CUDA_CHECK(cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking));
    float *x = dalloc<float>(1), *y = dalloc<float>(1);
    LAUNCH(fill, 1, 1, 0, nb, x, 7.0f, 1);
    CUDA_CHECK(cudaStreamSynchronize(nb));
    /* legacy writes x, the non-blocking stream reads it: no order */
    LAUNCH(fill, 1, 1, 0, 0, x, 1.0f, 1);
    LAUNCH(copy_plus, 1, 1, 0, nb, x, y, 0.0f, 1);
    CUDA_CHECK(cudaStreamSynchronize(nb));
    float got;
    CUDA_CHECK(cudaMemcpyAsync(&got, y, 4, cudaMemcpyDeviceToHost, nb));
    CUDA_CHECK(cudaStreamSynchronize(nb));
    EXPECT(got == 7.0f || got == 1.0f);
    if (cuda_emu::deferred()) EXPECT(got == 7.0f);   /* the legacy write came later */
    EXPECT(settled(x) == 1.0f);
    /* and the other way: the non-blocking stream writes, legacy reads */
    LAUNCH(fill, 1, 1, 0, nb, x, 2.0f, 1);
    LAUNCH(copy_plus, 1, 1, 0, 0, x, y, 0.0f, 1);
    down(&got, y, 1);   /* waits for the legacy stream only */
    EXPECT(got == 1.0f || got == 2.0f);
    if (cuda_emu::deferred()) EXPECT(got == 1.0f);
    EXPECT(settled(x) == 2.0f);
    cudaStreamDestroy(nb);
    cudaFree(x);
    cudaFree(y);
}

TEST(cuda_emu_streams_blocking_streams_are_ordered_with_the_legacy_stream) {
    cudaStream_t bl[2];
    CUDA_CHECK(cudaStreamCreate(&bl[0]));   /* blocking, like the per-thread default stream */
    bl[1] = cudaStreamPerThread;
    float *x = dalloc<float>(1), *y = dalloc<float>(1);
    for (int k = 0; k < 2; k++)
        for (int round = 0; round < 5; round++) {
            float v = (float)(10 * k + round), got;
            LAUNCH(fill, 1, 1, 0, 0, x, v, 1);                 /* legacy, then ... */
            LAUNCH(copy_plus, 1, 1, 0, bl[k], x, y, 1.0f, 1);   /* ... a blocking stream */
            CUDA_CHECK(cudaMemcpyAsync(&got, y, 4, cudaMemcpyDeviceToHost, bl[k]));
            CUDA_CHECK(cudaStreamSynchronize(bl[k]));
            EXPECT(got == v + 1.0f);
            LAUNCH(fill, 1, 1, 0, bl[k], x, v + 5.0f, 1);      /* a blocking stream, then ... */
            LAUNCH(copy_plus, 1, 1, 0, 0, x, y, 0.0f, 1);      /* ... legacy */
            down(&got, y, 1);
            EXPECT(got == v + 5.0f);
        }
    cudaStreamDestroy(bl[0]);
    cudaFree(x);
    cudaFree(y);
}

/* Every way of waiting makes the results visible to the host; before it,
 * a deferred copy's destination holds 0xff bytes. */
TEST(cuda_emu_streams_synchronisation_makes_results_visible) {
    cudaStream_t s;
    cudaEvent_t e;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreate(&e));
    float *x = dalloc<float>(64), h[64];
    for (int way = 0; way < 5; way++) {
        LAUNCH(fill, 1, 64, 0, s, x, (float)way, 64);
        LAUNCH(affine, 1, 64, 0, s, x, 1.0f, 1.0f, 64);
        CUDA_CHECK(cudaMemcpyAsync(h, x, sizeof h, cudaMemcpyDeviceToHost, s));
        CUDA_CHECK(cudaEventRecord(e, s));
        if (cuda_emu::deferred()) EXPECT(isnan(h[0]) && isnan(h[63]));
        int polls = 0;
        switch (way) {
        case 0: CUDA_CHECK(cudaStreamSynchronize(s)); break;
        case 1: CUDA_CHECK(cudaEventSynchronize(e)); break;
        case 2: CUDA_CHECK(cudaDeviceSynchronize()); break;
        case 3:
            while (cudaStreamQuery(s) == cudaErrorNotReady) polls++;
            CUDA_CHECK(cudaGetLastError());
            break;
        case 4:
            while (cudaEventQuery(e) == cudaErrorNotReady) polls++;
            break;
        }
        /* a query moves the queried work on by one operation */
        if (way >= 3 && cuda_emu::deferred()) EXPECT(polls >= 1);
        for (int i = 0; i < 64; i++)
            if (h[i] != way + 1.0f) {
                UNIT_FAIL("way %d: h[%d] = %g, expected %g", way, i, h[i], way + 1.0f);
                break;
            }
    }
    cudaEventDestroy(e);
    cudaStreamDestroy(s);
    cudaFree(x);
}

/* The bug a real H100 run found: buffers zeroed with cudaMemset (legacy
 * stream) and written at once on a non-blocking stream. The memset may land
 * after the writes; the deferred mode makes it. */
TEST(cuda_emu_streams_legacy_memset_may_land_after_non_blocking_writes) {
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float *w = dalloc<float>(8);
    CUDA_CHECK(cudaMemset(w, 0, 8 * sizeof(float)));
    LAUNCH(fill, 1, 8, 0, s, w, 3.0f, 8);   /* "load the weights" */
    CUDA_CHECK(cudaStreamSynchronize(s));
    float got = settled(w);
    EXPECT(got == 0.0f || got == 3.0f);
    if (cuda_emu::deferred()) EXPECT(got == 0.0f);   /* the weights are lost */
    /* the fix: zero on the stream that uses the buffer */
    CUDA_CHECK(cudaMemsetAsync(w, 0, 8 * sizeof(float), s));
    LAUNCH(fill, 1, 8, 0, s, w, 3.0f, 8);
    CUDA_CHECK(cudaStreamSynchronize(s));
    EXPECT(settled(w) == 3.0f);
    cudaStreamDestroy(s);
    cudaFree(w);
}

/* A stream destroyed with work queued finishes it, as CUDA promises. */
TEST(cuda_emu_streams_destroyed_with_work_queued_still_run_it) {
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    float *x = dalloc<float>(4);
    LAUNCH(fill, 1, 4, 0, s, x, 9.0f, 4);
    CUDA_CHECK(cudaStreamDestroy(s));
    EXPECT_EQ_INT(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
    (void)cudaGetLastError();
    EXPECT(settled(x) == 9.0f);
    cudaFree(x);
}

/* cuBLAS runs on its handle's stream, after the kernels queued before it. */
TEST(cuda_emu_streams_cublas_runs_in_order_on_its_handles_stream) {
    cudaStream_t s;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cublasHandle_t h;
    CUBLAS_CHECK(cublasCreate(&h));
    CUBLAS_CHECK(cublasSetStream(h, s));
    const int m = 5;
    float *A = dalloc<float>(m * m), *B = dalloc<float>(m * m), *C = dalloc<float>(m * m), hc[25];
    const float one = 1.0f, zero = 0.0f;
    LAUNCH(fill, 1, 32, 0, s, A, 2.0f, m * m);
    LAUNCH(fill, 1, 32, 0, s, B, 3.0f, m * m);
    CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, A, m, B, m, &zero, C, m));
    LAUNCH(affine, 1, 32, 0, s, C, 1.0f, 1.0f, m * m);
    CUDA_CHECK(cudaMemcpyAsync(hc, C, sizeof hc, cudaMemcpyDeviceToHost, s));
    CUDA_CHECK(cudaStreamSynchronize(s));
    for (int i = 0; i < m * m; i++) EXPECT(hc[i] == 2.0f * 3.0f * m + 1.0f);
    CUBLAS_CHECK(cublasDestroy(h));
    cudaStreamDestroy(s);
    cudaFree(A); cudaFree(B); cudaFree(C);
}

/* ---- NCCL over MPI --------------------------------------------------------------------------------------------------------- */
TEST(cuda_emu_nccl_collectives_are_exact_on_integers) {
    int r = unit_dist.rank, n = unit_dist.world;
    CUDA_CHECK(cudaSetDevice(r));
    ncclUniqueId id;
    if (r == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t c;
    NCCL_CHECK(ncclCommInitRank(&c, n, id, r));
    const int cnt = 37;
    float hs[64 * 8], hr[64 * 8];
    float *ds = dalloc<float>(cnt * n), *dr = dalloc<float>(cnt * n);
    __nv_bfloat16 *bs = dalloc<__nv_bfloat16>(cnt), *br = dalloc<__nv_bfloat16>(cnt);
    for (int i = 0; i < cnt * n; i++) hs[i] = (float)(r + 1) * (float)(i % 11);
    up(ds, hs, cnt * n);
    /* all-reduce, out of place and in place */
    NCCL_CHECK(ncclAllReduce(ds, dr, cnt, ncclFloat32, ncclSum, c, 0));
    down(hr, dr, cnt);
    for (int i = 0; i < cnt; i++) EXPECT_EQ_INT((int)hr[i], n * (n + 1) / 2 * (i % 11));
    NCCL_CHECK(ncclAllReduce(dr, dr, cnt, ncclFloat32, ncclMax, c, 0));
    down(hr, dr, cnt);
    for (int i = 0; i < cnt; i++) EXPECT_EQ_INT((int)hr[i], n * (n + 1) / 2 * (i % 11));
    /* bf16: integers up to 256 are exact */
    uint16_t hb[64];
    for (int i = 0; i < cnt; i++) hb[i] = f32_to_bf16((float)(i % 5));
    CUDA_CHECK(cudaMemcpy(bs, hb, cnt * 2, cudaMemcpyHostToDevice));
    NCCL_CHECK(ncclAllReduce(bs, br, cnt, ncclBfloat16, ncclSum, c, 0));
    CUDA_CHECK(cudaMemcpy(hb, br, cnt * 2, cudaMemcpyDeviceToHost));
    for (int i = 0; i < cnt; i++) EXPECT_EQ_INT((int)bf16_to_f32(hb[i]), n * (i % 5));
    /* reduce-scatter in place: rank r keeps block r */
    CUDA_CHECK(cudaMemcpy(dr, ds, cnt * n * 4, cudaMemcpyDeviceToDevice));
    NCCL_CHECK(ncclReduceScatter(dr, dr + r * cnt, cnt, ncclFloat32, ncclSum, c, 0));
    down(hr, dr + r * cnt, cnt);
    for (int i = 0; i < cnt; i++) EXPECT_EQ_INT((int)hr[i], n * (n + 1) / 2 * ((r * cnt + i) % 11));
    /* all-gather in place */
    float mine[64];
    for (int i = 0; i < cnt; i++) mine[i] = (float)(100 * r + i);
    up(dr + r * cnt, mine, cnt);
    NCCL_CHECK(ncclAllGather(dr + r * cnt, dr, cnt, ncclFloat32, c, 0));
    down(hr, dr, cnt * n);
    for (int q = 0; q < n; q++)
        for (int i = 0; i < cnt; i++) EXPECT_EQ_INT((int)hr[q * cnt + i], 100 * q + i);
    /* broadcast and reduce from the last rank */
    NCCL_CHECK(ncclBroadcast(ds, dr, cnt, ncclFloat32, n - 1, c, 0));
    down(hr, dr, cnt);
    for (int i = 0; i < cnt; i++) EXPECT_EQ_INT((int)hr[i], n * (i % 11));
    NCCL_CHECK(ncclReduce(ds, dr, cnt, ncclFloat32, ncclSum, n - 1, c, 0));
    if (r == n - 1) {
        down(hr, dr, cnt);
        for (int i = 0; i < cnt; i++) EXPECT_EQ_INT((int)hr[i], n * (n + 1) / 2 * (i % 11));
    }
    /* a ring of sends and receives in one group: no deadlock whatever the order */
    NCCL_CHECK(ncclGroupStart());
    NCCL_CHECK(ncclRecv(dr, cnt, ncclFloat32, (r + n - 1) % n, c, 0));
    NCCL_CHECK(ncclSend(ds, cnt, ncclFloat32, (r + 1) % n, c, 0));
    NCCL_CHECK(ncclGroupEnd());
    down(hr, dr, cnt);
    int from = (r + n - 1) % n;
    for (int i = 0; i < cnt; i++) EXPECT_EQ_INT((int)hr[i], (from + 1) * (i % 11));
    /* a host pointer is refused */
    EXPECT_EQ_INT(ncclAllReduce(hs, hr, cnt, ncclFloat32, ncclSum, c, 0), ncclInvalidArgument);
    NCCL_CHECK(ncclCommDestroy(c));
    cudaFree(ds); cudaFree(dr); cudaFree(bs); cudaFree(br);
}

/* Sub-communicators: the even and the odd ranks, built at the same time. */
TEST(cuda_emu_nccl_split_communicators_are_independent) {
    int r = unit_dist.rank, n = unit_dist.world;
    CUDA_CHECK(cudaSetDevice(r));
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &half);
    int hr_, hn;
    MPI_Comm_rank(half, &hr_);
    MPI_Comm_size(half, &hn);
    ncclUniqueId id;
    if (hr_ == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, half);
    ncclComm_t c;
    NCCL_CHECK(ncclCommInitRank(&c, hn, id, hr_));
    float v = (float)r, *d = dalloc<float>(1), got;
    up(d, &v, 1);
    NCCL_CHECK(ncclAllReduce(d, d, 1, ncclFloat32, ncclSum, c, 0));
    down(&got, d, 1);
    int want = 0;
    for (int q = r % 2; q < n; q += 2) want += q;
    EXPECT_EQ_INT((int)got, want);
    NCCL_CHECK(ncclCommDestroy(c));
    MPI_Comm_free(&half);
    cudaFree(d);
}

/* Deferred collectives and blocking host MPI: rank 0 has an all-reduce in
 * flight and a second one queued behind it when it enters MPI_Barrier (the
 * other ranks start late, so the first cannot have completed); the other
 * ranks wait for the second one before they reach the barrier. A GPU runs
 * the queued collective while its host blocks; the emulator must too
 * (emu_mpi.cc), or this deadlocks. */
TEST(cuda_emu_nccl_ranks_blocked_in_host_mpi_keep_collectives_moving) {
    int r = unit_dist.rank, n = unit_dist.world;
    CUDA_CHECK(cudaSetDevice(r));
    ncclUniqueId id;
    if (r == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t c;
    NCCL_CHECK(ncclCommInitRank(&c, n, id, r));
    cudaStream_t s, t;
    cudaEvent_t e;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    float *a = dalloc<float>(16), *b = dalloc<float>(16), h[16];
    for (int round = 0; round < 3; round++) {
        if (r != 0) usleep(100 * 1000);
        LAUNCH(fill, 1, 16, 0, s, a, (float)(r + 1), 16);
        NCCL_CHECK(ncclAllReduce(a, a, 16, ncclFloat32, ncclSum, c, s));
        CUDA_CHECK(cudaEventRecord(e, s));
        CUDA_CHECK(cudaStreamWaitEvent(t, e, 0));
        LAUNCH(affine, 1, 16, 0, t, a, 2.0f, 0.0f, 16);
        NCCL_CHECK(ncclAllReduce(a, b, 16, ncclFloat32, ncclSum, c, t));
        CUDA_CHECK(cudaMemcpyAsync(h, b, sizeof h, cudaMemcpyDeviceToHost, t));
        if (r == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            CUDA_CHECK(cudaStreamSynchronize(t));
        } else {
            CUDA_CHECK(cudaStreamSynchronize(t));
            MPI_Barrier(MPI_COMM_WORLD);
        }
        float want = 2.0f * n * (n * (n + 1) / 2.0f);
        for (int i = 0; i < 16; i++) EXPECT(h[i] == want);
    }
    NCCL_CHECK(ncclCommDestroy(c));
    cudaEventDestroy(e);
    cudaStreamDestroy(s);
    cudaStreamDestroy(t);
    cudaFree(a);
    cudaFree(b);
}

/* Collectives of one communicator on two unordered streams, of different
 * sizes: every rank must run them in the order they were called (as NCCL
 * does), whatever order the streams' work is drawn in. Rank 0 calls the
 * third while the second still waits behind the first (the other ranks
 * start late), and the other ranks run the second before they call the
 * third: only that rule keeps rank 0 from starting the third first. */
TEST(cuda_emu_nccl_collectives_of_one_communicator_run_in_call_order_across_streams) {
    int r = unit_dist.rank, n = unit_dist.world;
    CUDA_CHECK(cudaSetDevice(r));
    ncclUniqueId id;
    if (r == 0) NCCL_CHECK(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t c;
    NCCL_CHECK(ncclCommInitRank(&c, n, id, r));
    cudaStream_t s[2];
    for (int k = 0; k < 2; k++) CUDA_CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
    float *w = dalloc<float>(20), *x = dalloc<float>(10), *y = dalloc<float>(30);
    float hw[20], hx[10], hy[30];
    for (int round = 0; round < 5; round++) {
        if (r != 0) usleep(20 * 1000);
        LAUNCH(fill, 1, 32, 0, s[0], w, 1.0f, 20);
        LAUNCH(fill, 1, 32, 0, s[0], x, (float)(r + round), 10);
        LAUNCH(fill, 1, 32, 0, s[1], y, (float)(10 * r), 30);
        NCCL_CHECK(ncclAllReduce(w, w, 20, ncclFloat32, ncclSum, c, s[0]));
        NCCL_CHECK(ncclAllReduce(x, x, 10, ncclFloat32, ncclSum, c, s[0]));
        if (r != 0) CUDA_CHECK(cudaStreamSynchronize(s[0]));   /* the second, before the third */
        NCCL_CHECK(ncclAllReduce(y, y, 30, ncclFloat32, ncclMax, c, s[1]));
        CUDA_CHECK(cudaMemcpyAsync(hw, w, sizeof hw, cudaMemcpyDeviceToHost, s[0]));
        CUDA_CHECK(cudaMemcpyAsync(hx, x, sizeof hx, cudaMemcpyDeviceToHost, s[0]));
        CUDA_CHECK(cudaMemcpyAsync(hy, y, sizeof hy, cudaMemcpyDeviceToHost, s[1]));
        CUDA_CHECK(cudaDeviceSynchronize());
        for (int i = 0; i < 20; i++) EXPECT(hw[i] == (float)n);
        for (int i = 0; i < 10; i++) EXPECT(hx[i] == n * (n - 1) / 2.0f + n * round);
        for (int i = 0; i < 30; i++) EXPECT(hy[i] == 10.0f * (n - 1));
    }
    NCCL_CHECK(ncclCommDestroy(c));
    for (int k = 0; k < 2; k++) cudaStreamDestroy(s[k]);
    cudaFree(w);
    cudaFree(x);
    cudaFree(y);
}
