/* matmul_check.c: is a product right? Compared with double-precision dot
 * products of the same fp32 inputs.
 *
 * Error measure: max |C - ref| / rms(ref) over the checked entries. Scaling
 * by the typical size of an entry (rather than by each entry) keeps entries
 * that happen to be near zero from looking wrong, and makes the measure
 * independent of k for random inputs: both the rounding error of a dot
 * product and its value grow like sqrt(k). A wrong result (a missed tile, a
 * wrong index, an unwritten output) scores about 1 or more.
 *
 * Large products are not recomputed in full (an O(n^3) double loop would take
 * minutes at 8192): whole rows and whole columns are, the first, the last and
 * random ones, so edge tiles are always among them and interior tiles are hit
 * at random. */
#include "matmul.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void fill_uniform(float *x, long count, uint64_t seed) {
    uint64_t s = seed;
    for (long i = 0; i < count; i++)
        x[i] = (float)((double)(splitmix64(&s) >> 40) / (double)(1ull << 23) - 1.0);
}

/* count distinct indices of [0, total): 0 and total-1 first, the rest random. */
static int *pick_lines(int total, int count, uint64_t *s) {
    int *all = xmalloc(sizeof(int) * total);
    for (int i = 0; i < total; i++) all[i] = i;
    if (total > 1) { all[1] = total - 1; all[total - 1] = 1; }
    for (int i = 2; i < count; i++) {   /* partial Fisher-Yates over the rest */
        int j = i + (int)(splitmix64(s) % (uint64_t)(total - i));
        int t = all[i]; all[i] = all[j]; all[j] = t;
    }
    return all;
}

void matmul_ref_init(matmul_ref_t *r, const float *A, const float *B, int m, int n, int k,
                     long budget, uint64_t seed) {
    memset(r, 0, sizeof *r);
    r->m = m; r->n = n; r->k = k;
    uint64_t s = seed ^ 0x5eedull;
    if ((double)m * n * k <= (double)budget) {
        r->nrows = m;                  /* every entry */
    } else {
        long nr = budget / (2L * n * k), nc = budget / (2L * m * k);
        r->nrows = (int)(nr < 4 ? 4 : nr > m ? m : nr);
        r->ncols = (int)(nc < 4 ? 4 : nc > n ? n : nc);
    }
    r->rows = pick_lines(m, r->nrows, &s);
    r->cols = r->ncols ? pick_lines(n, r->ncols, &s) : NULL;

    double sumsq = 0.0;
    r->ref_rows = xmalloc(sizeof(double) * r->nrows * (long)n);
    for (int t = 0; t < r->nrows; t++) {      /* ref row = A[i][:] B, in double */
        double *acc = r->ref_rows + (long)t * n;
        const float *a = A + (long)r->rows[t] * k;
        for (int j = 0; j < n; j++) acc[j] = 0.0;
        for (int p = 0; p < k; p++) {
            const double ap = a[p];
            const float *b = B + (long)p * n;
            for (int j = 0; j < n; j++) acc[j] += ap * b[j];
        }
        for (int j = 0; j < n; j++) sumsq += acc[j] * acc[j];
    }
    r->ref_cols = xmalloc(sizeof(double) * (long)m * (r->ncols ? r->ncols : 1));
    double *bcol = xmalloc(sizeof(double) * k);
    for (int t = 0; t < r->ncols; t++) {      /* ref column = A B[:][j] */
        for (int p = 0; p < k; p++) bcol[p] = B[(long)p * n + r->cols[t]];
        for (int i = 0; i < m; i++) {
            const float *a = A + (long)i * k;
            double dot = 0.0;
            for (int p = 0; p < k; p++) dot += a[p] * bcol[p];
            r->ref_cols[(long)i * r->ncols + t] = dot;
            sumsq += dot * dot;
        }
    }
    free(bcol);
    long count = (long)r->nrows * n + (long)r->ncols * m;
    r->rms = sqrt(sumsq / (double)count);
    if (!(r->rms > 0.0)) r->rms = 1.0;        /* all-zero inputs: absolute error */
}

void matmul_ref_free(matmul_ref_t *r) {
    free(r->rows);
    free(r->cols);
    free(r->ref_rows);
    free(r->ref_cols);
    memset(r, 0, sizeof *r);
}

static void consider(double c, double ref, int i, int j, double *worst, int *wi, int *wj) {
    double e = fabs(c - ref);
    if (!isfinite(e)) e = INFINITY;           /* NaN or inf in C */
    if (e > *worst || (*wi < 0)) { *worst = e; *wi = i; *wj = j; }
}

double matmul_ref_error(const matmul_ref_t *r, const float *C, int *worst_i, int *worst_j) {
    double worst = 0.0;
    int wi = -1, wj = -1;
    for (int t = 0; t < r->nrows; t++) {
        const int i = r->rows[t];
        for (int j = 0; j < r->n; j++)
            consider(C[(long)i * r->n + j], r->ref_rows[(long)t * r->n + j], i, j, &worst, &wi, &wj);
    }
    for (int t = 0; t < r->ncols; t++) {
        const int j = r->cols[t];
        for (int i = 0; i < r->m; i++)
            consider(C[(long)i * r->n + j], r->ref_cols[(long)i * r->ncols + t], i, j, &worst, &wi, &wj);
    }
    if (worst_i) *worst_i = wi;
    if (worst_j) *worst_j = wj;
    return worst / r->rms;
}

/* Tolerances, with the errors measured on uniform [-1, 1) inputs beside them.
 * Rounding the inputs to a format with unit roundoff u perturbs each product
 * by up to 2u, with random sign; relative to rms(ref) that is about u, and
 * the maximum over many entries a few times more. fp32 accumulation adds
 * about 2^-24 sqrt(k) for a plain running sum (the naive loop), less for
 * blocked sums.
 *   fp32  u = 2^-24                       measured 2e-6 (blocked), 8e-6 (running sums), k = 2048
 *   tf32  u = 2^-11 (2^-10 if truncated)  measured 3e-3 (truncated inputs, k = 4096, unit test)
 *   bf16  u = 2^-8                        measured 6e-3 (rounded inputs, k = 4096, unit test)
 * Each tolerance leaves a margin of about 3 to 10 over what a right result
 * scores, and stays far below the ~1 a wrong one scores. */
double matmul_tolerance(precision_t p) {
    switch (p) {
    case PREC_FP32: return 1e-4;
    case PREC_TF32: return 2e-2;
    case PREC_BF16: return 5e-2;
    case PREC_FP8: return 0.5;
    }
    return 0.0;
}
