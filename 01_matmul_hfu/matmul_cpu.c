/* matmul_cpu.c: CPU matrix products in numbered versions, naive to fast.
 *
 * Each version changes one thing, so the speed-up it buys can be read off the
 * chart. All versions split the rows of C into one contiguous range per
 * thread (plain pthreads, no OpenMP), so the comparison is about the memory
 * hierarchy, not about threading. OpenBLAS keeps its own threads; the two
 * never run at the same time. */
#include "matmul.h"

#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

/* ---- threads: one contiguous range of rows each ------------------------- */

typedef struct {
    const float *A, *B;
    float *C;
    int m, n, k;
    int r0, r1;           /* rows [r0, r1) of C */
} rows_t;

typedef void (*rows_fn)(const rows_t *);
typedef struct { rows_fn fn; rows_t rows; } job_t;

static void *job_run(void *p) {
    job_t *j = p;
    j->fn(&j->rows);
    return NULL;
}

/* Runs fn on `threads` row ranges, each a multiple of `align` rows (except
 * the last), the calling thread taking the last one. */
static void run_rows(rows_fn fn, const float *A, const float *B, float *C,
                     int m, int n, int k, int threads, int align) {
    enum { MAX_THREADS = 256 };
    if (m <= 0) return;
    int blocks = (m + align - 1) / align;
    if (threads > blocks) threads = blocks;
    if (threads > MAX_THREADS) threads = MAX_THREADS;
    if (threads < 1) threads = 1;
    job_t jobs[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        int b0 = (int)((long)blocks * t / threads), b1 = (int)((long)blocks * (t + 1) / threads);
        int r1 = b1 * align;
        jobs[t] = (job_t){fn, {A, B, C, m, n, k, b0 * align, r1 < m ? r1 : m}};
    }
    for (int t = 0; t < threads - 1; t++)
        if (pthread_create(&tid[t], NULL, job_run, &jobs[t]) != 0) die("pthread_create failed");
    job_run(&jobs[threads - 1]);
    for (int t = 0; t < threads - 1; t++) pthread_join(tid[t], NULL);
}

/* ---- naive: C[i][j] = sum_p A[i][p] B[p][j] ----------------------------- */
/* The inner loop walks B down a column: a stride of n floats, so every term
 * touches a new cache line, and once B outgrows the cache every term is a
 * trip to RAM. One accumulator also chains every add on the previous one. */
static void naive_rows(const rows_t *r) {
    for (int i = r->r0; i < r->r1; i++)
        for (int j = 0; j < r->n; j++) {
            float s = 0.0f;
            for (int p = 0; p < r->k; p++) s += r->A[(long)i * r->k + p] * r->B[(long)p * r->n + j];
            r->C[(long)i * r->n + j] = s;
        }
}

void matmul_cpu_naive(const float *A, const float *B, float *C, int m, int n, int k, int threads) {
    run_rows(naive_rows, A, B, C, m, n, k, threads, 1);
}

/* ---- v1: loop order i-p-j ------------------------------------------------
 * Same arithmetic, but the inner loop is now C[i][:] += A[i][p] * B[p][:]:
 * both rows are contiguous, so the compiler vectorises it (16 floats per
 * AVX-512 FMA) and each cache line is used whole. B is still streamed in
 * full for every row of C: at large sizes the speed is set by how fast the
 * cache level holding B delivers it. */
static void v1_rows(const rows_t *r) {
    const int n = r->n, k = r->k;
    for (int i = r->r0; i < r->r1; i++) {
        float *restrict c = r->C + (long)i * n;
        memset(c, 0, sizeof(float) * n);
        for (int p = 0; p < k; p++) {
            const float a = r->A[(long)i * k + p];
            const float *restrict b = r->B + (long)p * n;
            for (int j = 0; j < n; j++) c[j] += a * b[j];
        }
    }
}

void matmul_cpu_v1(const float *A, const float *B, float *C, int m, int n, int k, int threads) {
    run_rows(v1_rows, A, B, C, m, n, k, threads, 1);
}

/* ---- v2: v1 on cache-sized tiles -----------------------------------------
 * A tile of B (V2_KB x V2_NB floats, 256 KB) fits in the per-core L2 and is
 * reused by all V2_MB rows of a block of C before moving on, and each row
 * segment of C (V2_NB floats) stays in L1 while it accumulates. B now comes
 * from L2 instead of L3 or RAM. What still limits it: every FMA loads and
 * stores C through L1. */
#define V2_MB 64
#define V2_KB 128
#define V2_NB 512

static void v2_rows(const rows_t *r) {
    /* ASSIGNMENT 01-tiled: the tiled matmul (01_matmul_hfu/README.md, "Assignment: the tiled matmul") */
    /* STUB: (void)r; */
    /* STUB: not_implemented("tiled matmul", "01_matmul_hfu/README.md, Assignment: the tiled matmul"); */
    const int n = r->n, k = r->k;
    for (int i = r->r0; i < r->r1; i++) memset(r->C + (long)i * n, 0, sizeof(float) * n);
    for (int i0 = r->r0; i0 < r->r1; i0 += V2_MB) {
        int i1 = i0 + V2_MB < r->r1 ? i0 + V2_MB : r->r1;
        for (int j0 = 0; j0 < n; j0 += V2_NB) {
            int nb = j0 + V2_NB < n ? V2_NB : n - j0;
            for (int p0 = 0; p0 < k; p0 += V2_KB) {
                int p1 = p0 + V2_KB < k ? p0 + V2_KB : k;
                for (int i = i0; i < i1; i++) {
                    float *restrict c = r->C + (long)i * n + j0;
                    for (int p = p0; p < p1; p++) {
                        const float a = r->A[(long)i * k + p];
                        const float *restrict b = r->B + (long)p * n + j0;
                        for (int j = 0; j < nb; j++) c[j] += a * b[j];
                    }
                }
            }
        }
    }
    /* END ASSIGNMENT 01-tiled */
}

void matmul_cpu_v2(const float *A, const float *B, float *C, int m, int n, int k, int threads) {
    run_rows(v2_rows, A, B, C, m, n, k, threads, V2_MB);
}

/* ---- v3: packed panels and a register micro-kernel -----------------------
 * The scheme of Goto & van de Geijn, "Anatomy of high-performance matrix
 * multiplication" (ACM TOMS 2008), which OpenBLAS and BLIS use:
 *   - copy ("pack") a KC x NC block of B into strips NR columns wide and an
 *     MC x KC block of A into panels MR rows tall, so the micro-kernel reads
 *     both contiguously, with zero padding at the edges;
 *   - the micro-kernel keeps an MR x NR block of C in vector registers for
 *     the whole length KC: per step it loads NR floats of B and broadcasts MR
 *     floats of A, and does MR * NR / VEC independent FMAs. C is loaded and
 *     stored once per KC steps instead of once per FMA (v2's limit).
 * Sizes: the B strip (KC x NR) stays in L1, the A block (MC x KC) in L2, the
 * B block (KC x NC) in L3. */
#if defined(__AVX512F__)
#define VEC 16            /* floats per vector register */
#define MR 8              /* 8 x 2 = 16 accumulators of the 32 zmm registers */
#else
#define VEC 8
#define MR 6              /* 6 x 2 = 12 accumulators of the 16 ymm registers */
#endif
#define NR (2 * VEC)
#define KC 256
#define MC 128
#define NC 2048

typedef float vec_t __attribute__((vector_size(VEC * sizeof(float))));
typedef float vec_u __attribute__((vector_size(VEC * sizeof(float)), aligned(4)));  /* unaligned */

/* acc (MR, NR) = Ap (kc, MR)^T Bp (kc, NR): both packed, 64-byte aligned. */
static inline void micro_kernel(int kc, const float *restrict Ap, const float *restrict Bp,
                                float acc_out[MR][NR]) {
    vec_t acc[MR][2];
    for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = (vec_t){0};
    for (int p = 0; p < kc; p++) {
        const vec_t b0 = *(const vec_t *)(Bp + p * NR);
        const vec_t b1 = *(const vec_t *)(Bp + p * NR + VEC);
#pragma GCC unroll 16
        for (int r = 0; r < MR; r++) {
            const float a = Ap[p * MR + r];
            acc[r][0] += a * b0;
            acc[r][1] += a * b1;
        }
    }
    for (int r = 0; r < MR; r++) {
        *(vec_u *)&acc_out[r][0] = acc[r][0];
        *(vec_u *)&acc_out[r][VEC] = acc[r][1];
    }
}

/* Writes (first) or adds the valid mr x nr corner of acc into C. */
static inline void store_tile(float *C, long ldc, float acc[MR][NR], int mr, int nr, int first) {
    for (int r = 0; r < mr; r++) {
        float *c = C + r * ldc;
        if (nr == NR) {
            for (int v = 0; v < NR; v += VEC) {
                vec_t x = *(const vec_u *)&acc[r][v];
                if (!first) x += *(const vec_u *)(c + v);
                *(vec_u *)(c + v) = x;
            }
        } else {
            for (int j = 0; j < nr; j++) c[j] = first ? acc[r][j] : c[j] + acc[r][j];
        }
    }
}

static void v3_rows(const rows_t *r) {
    const int n = r->n, k = r->k;
    float *Bp = xmalloc(sizeof(float) * KC * (NC + NR));
    float *Ap = xmalloc(sizeof(float) * KC * (MC + MR));
    float acc[MR][NR] __attribute__((aligned(64)));
    for (int jc = 0; jc < n; jc += NC) {
        const int nc = jc + NC < n ? NC : n - jc;
        for (int pc = 0; pc < k; pc += KC) {
            const int kc = pc + KC < k ? KC : k - pc;
            /* Bp[strip s][p][0..NR) = B[pc + p][jc + s NR + ...], zero padded */
            for (int s = 0; s * NR < nc; s++) {
                float *dst = Bp + (long)s * kc * NR;
                const int w = nc - s * NR < NR ? nc - s * NR : NR;
                for (int p = 0; p < kc; p++) {
                    const float *src = r->B + (long)(pc + p) * n + jc + s * NR;
                    for (int j = 0; j < w; j++) dst[p * NR + j] = src[j];
                    for (int j = w; j < NR; j++) dst[p * NR + j] = 0.0f;
                }
            }
            for (int ic = r->r0; ic < r->r1; ic += MC) {
                const int mc = ic + MC < r->r1 ? MC : r->r1 - ic;
                /* Ap[panel q][p][0..MR) = A[ic + q MR + ...][pc + p], zero padded */
                for (int q = 0; q * MR < mc; q++) {
                    float *dst = Ap + (long)q * kc * MR;
                    const int h = mc - q * MR < MR ? mc - q * MR : MR;
                    for (int i = 0; i < MR; i++) {
                        const float *src = r->A + (long)(ic + q * MR + i) * k + pc;
                        if (i < h) for (int p = 0; p < kc; p++) dst[p * MR + i] = src[p];
                        else for (int p = 0; p < kc; p++) dst[p * MR + i] = 0.0f;
                    }
                }
                for (int s = 0; s * NR < nc; s++) {
                    const int nr = nc - s * NR < NR ? nc - s * NR : NR;
                    for (int q = 0; q * MR < mc; q++) {
                        const int mr = mc - q * MR < MR ? mc - q * MR : MR;
                        micro_kernel(kc, Ap + (long)q * kc * MR, Bp + (long)s * kc * NR, acc);
                        store_tile(r->C + (long)(ic + q * MR) * n + jc + s * NR, n, acc, mr, nr, pc == 0);
                    }
                }
            }
        }
    }
    free(Bp);
    free(Ap);
}

void matmul_cpu_v3(const float *A, const float *B, float *C, int m, int n, int k, int threads) {
    run_rows(v3_rows, A, B, C, m, n, k, threads, MR);
}

/* ---- OpenBLAS ------------------------------------------------------------
 * After each call (and after openblas_set_num_threads) OpenBLAS's worker
 * threads spin for about 0.2 s before they sleep. Our own threads started in
 * that window share the cores with them and run up to 2x slower, so the
 * program waits for them to settle before timing anything else. */
static double blas_last;

void matmul_blas_mark(void) { blas_last = now_s(); }

void matmul_blas_settle(void) {
    double wait = blas_last + 0.25 - now_s();
    if (wait > 0) usleep((useconds_t)(wait * 1e6));
}

void matmul_openblas_sgemm(const float *A, const float *B, float *C, int m, int n, int k) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k,
                1.0f, A, k, B, n, 0.0f, C, n);
    matmul_blas_mark();
}

/* cblas_sbgemm is declared by every cblas.h since 0.3.10 but exists only in
 * libraries built with BUILD_BFLOAT16=1 (Debian's is not), so it is looked
 * up when the program runs instead of when it links. */
typedef void (*sbgemm_fn)(enum CBLAS_ORDER, enum CBLAS_TRANSPOSE, enum CBLAS_TRANSPOSE,
                          blasint, blasint, blasint, float, const bfloat16 *, blasint,
                          const bfloat16 *, blasint, float, float *, blasint);

static sbgemm_fn sbgemm_lookup(void) {
    static sbgemm_fn fn;
    static int looked;
    if (!looked) {
        *(void **)&fn = dlsym(RTLD_DEFAULT, "cblas_sbgemm");
        looked = 1;
    }
    return fn;
}

int matmul_openblas_has_sbgemm(void) { return sbgemm_lookup() != NULL; }

void matmul_openblas_sbgemm(const bf16_t *A, const bf16_t *B, float *C, int m, int n, int k) {
    sbgemm_fn fn = sbgemm_lookup();
    if (!fn) die("this OpenBLAS has no cblas_sbgemm (built without BUILD_BFLOAT16)");
    fn(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, A, k, B, n, 0.0f, C, n);
    matmul_blas_mark();
}
