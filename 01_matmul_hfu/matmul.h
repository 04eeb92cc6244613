/* matmul.h: the chapter's technique, matrix products from naive to fast.
 *
 * Every product is C = A B with row-major A (m, k), B (k, n), C (m, n),
 * and costs 2 m n k FLOPs (one multiply and one add per term of each of the
 * m n dot products of length k). The CPU kernels grow in numbered versions,
 * each one step further along the memory hierarchy:
 *   naive  i-j-p triple loop: B walked down a column, one cache line per term
 *   v1     i-p-j loop order: B and C walked along rows, the inner loop vectorises
 *   v2     v1 on tiles that stay in cache, so B is read from L2 instead of RAM
 *   v3     packed panels and a register-blocked micro-kernel (the Goto / BLIS
 *          scheme OpenBLAS uses): C accumulates in vector registers
 * The GPU kernels (matmul_cuda.cu) are the same story on an SM: a naive
 * kernel and a shared-memory tiled one, then cuBLAS on FP32 units and on
 * tensor cores.
 *
 * Results are checked against double-precision dot products (matmul_ref_t);
 * the error is max |C - ref| / rms(ref) over the checked entries. */
#ifndef MATMUL_H
#define MATMUL_H

#include <stdint.h>

#include "device.h"
#include "dtype.h"
#include "perf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* FLOPs of one (m, k) x (k, n) product: 2 m n k. */
static inline double matmul_flops(long m, long n, long k) { return 2.0 * m * n * k; }

/* ---- CPU kernels (matmul_cpu.c); rows of C are split over `threads` ---- */
typedef void (*matmul_cpu_fn)(const float *A, const float *B, float *C,
                              int m, int n, int k, int threads);
void matmul_cpu_naive(const float *A, const float *B, float *C, int m, int n, int k, int threads);
void matmul_cpu_v1(const float *A, const float *B, float *C, int m, int n, int k, int threads);
void matmul_cpu_v2(const float *A, const float *B, float *C, int m, int n, int k, int threads);
void matmul_cpu_v3(const float *A, const float *B, float *C, int m, int n, int k, int threads);
/* OpenBLAS: sgemm in fp32; sbgemm with bf16 inputs and fp32 output, present
 * only in libraries built with bf16 support (matmul_openblas_has_sbgemm). */
int matmul_openblas_has_sbgemm(void);
/* Call matmul_blas_mark after anything that wakes OpenBLAS's threads (the
 * calls below do it themselves); matmul_blas_settle sleeps until they have
 * stopped spinning (~0.25 s after), before our own threads run. */
void matmul_blas_mark(void);
void matmul_blas_settle(void);
void matmul_openblas_sgemm(const float *A, const float *B, float *C, int m, int n, int k);
void matmul_openblas_sbgemm(const bf16_t *A, const bf16_t *B, float *C, int m, int n, int k);

/* ---- GPU (matmul_cuda.cu); device pointers, work queued on d->stream ---- */
#ifdef USE_CUDA
void matmul_cuda_naive(const device_t *d, const float *A, const float *B, float *C, int m, int n, int k);
void matmul_cuda_tiled(const device_t *d, const float *A, const float *B, float *C, int m, int n, int k);
/* tf32 = 0: FP32 units (default math); 1: tensor cores with tf32 inputs. */
void matmul_cublas_f32(const device_t *d, const float *A, const float *B, float *C,
                       int m, int n, int k, int tf32);
/* bf16 inputs, fp32 accumulation and output, on the tensor cores. */
void matmul_cublas_bf16(const device_t *d, const bf16_t *A, const bf16_t *B, float *C,
                        int m, int n, int k);
/* Free memory on the GPU, bytes (decides whether the default sweep reaches 32K). */
size_t matmul_cuda_free_bytes(const device_t *d);
#endif

/* ---- checking against double precision (matmul_check.c) ----------------
 * Every entry is checked when m n k <= budget FMAs. Above that, whole rows
 * and whole columns are checked: the first, the last and random ones, as many
 * as the budget allows (at least 4 of each), so edge tiles are always seen. */
typedef struct {
    int m, n, k;
    int nrows, ncols;     /* checked rows and columns (nrows = m: all entries) */
    int *rows, *cols;     /* their indices */
    double *ref_rows;     /* (nrows, n) exact dot products */
    double *ref_cols;     /* (m, ncols) */
    double rms;           /* root mean square of the checked reference values */
} matmul_ref_t;

#define MATMUL_CHECK_BUDGET (1L << 28)

void matmul_ref_init(matmul_ref_t *r, const float *A, const float *B, int m, int n, int k,
                     long budget, uint64_t seed);
void matmul_ref_free(matmul_ref_t *r);
/* max |C - ref| / rms(ref) over the checked entries; +inf when C holds a
 * NaN or infinity there. *worst_i, *worst_j (may be NULL) get the worst entry. */
double matmul_ref_error(const matmul_ref_t *r, const float *C, int *worst_i, int *worst_j);
/* The largest error accepted for arithmetic of precision p (see matmul_check.c). */
double matmul_tolerance(precision_t p);

/* Uniform values in [-1, 1) from a seeded generator (splitmix64). */
void fill_uniform(float *x, long count, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
