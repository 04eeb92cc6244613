/* ops_cpu.c: the CPU backend of ops.h.
 *
 * Matrix products go to OpenBLAS sgemm (its own threads are the rank's only
 * threads: no OpenMP here). Everything else is one plain pass over memory.
 * bf16 buffers hold real rounded bf16 values; they are widened to fp32 to
 * compute, and rounded once when stored, so the CPU exercises exactly the
 * precision of a mixed-precision GPU run. Semantics: see ops.h.
 *
 * Scratch buffers are static and grow on demand: a rank calls ops from one
 * thread. */
#include <cblas.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops.h"

/* ---- scratch --------------------------------------------------------------- */
enum { SCR_A, SCR_B, SCR_C, SCR_Q, SCR_K, SCR_V, SCR_O, SCR_DO, SCR_DQ, SCR_DK, SCR_DV,
       SCR_S, SCR_P, SCR_ROW, SCR_COUNT };
/* One set per thread: 03_ddp/dataparallel runs several models at once, one
 * per thread, in one process. */
static _Thread_local float *scr_buf[SCR_COUNT];
static _Thread_local size_t scr_len[SCR_COUNT];

static float *scratch(int which, size_t n) {
    if (scr_len[which] < n) {
        free(scr_buf[which]);
        scr_buf[which] = xmalloc(n * sizeof(float));
        scr_len[which] = n;
    }
    return scr_buf[which];
}

void ops_cpu_thread_end(void) {
    for (int i = 0; i < SCR_COUNT; i++) {
        free(scr_buf[i]);
        scr_buf[i] = NULL;
        scr_len[i] = 0;
    }
}

static inline float ld(const void *p, dtype_t t, size_t i) { return dtype_get(p, t, i); }
static inline void st(void *p, dtype_t t, size_t i, float v) { dtype_set(p, t, i, v); }

/* A rows x cols matrix with leading dimension ldx, as packed fp32 (ld = cols).
 * fp32 input is returned as is (the caller keeps its ld). */
static const float *widen(int which, const void *x, dtype_t t, int rows, int cols, int ldx,
                          int *ld_out) {
    if (t == DT_F32) { *ld_out = ldx; return (const float *)x; }
    float *w = scratch(which, (size_t)rows * cols);
    const bf16_t *h = (const bf16_t *)x;
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < cols; c++) w[(size_t)r * cols + c] = bf16_to_f32(h[(size_t)r * ldx + c]);
    *ld_out = cols;
    return w;
}

static float *widen_all(int which, const void *x, dtype_t t, size_t n) {
    if (t == DT_F32) return (float *)x;
    float *w = scratch(which, n);
    const bf16_t *h = (const bf16_t *)x;
    for (size_t i = 0; i < n; i++) w[i] = bf16_to_f32(h[i]);
    return w;
}

static void narrow_all(void *dst, const float *src, dtype_t t, size_t n) {
    if (t == DT_F32) { if (dst != src) memcpy(dst, src, n * sizeof(float)); return; }
    bf16_t *h = (bf16_t *)dst;
    for (size_t i = 0; i < n; i++) h[i] = f32_to_bf16(src[i]);
}

/* ---- fp32 building blocks ----------------------------------------------------
 * Written so that gcc vectorises them at -O3 -march=native without
 * -ffast-math: reductions keep 16 independent partial sums (one AVX-512
 * register's worth), and exp is a branch-free polynomial. */
#define LANES 16

static inline float vsum(const float *x, int n) {
    float acc[LANES] = {0};
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int k = 0; k < LANES; k++) acc[k] += x[j + k];
    float s = 0.0f;
    for (; j < n; j++) s += x[j];
    for (int k = 0; k < LANES; k++) s += acc[k];
    return s;
}

static inline float vdot(const float *a, const float *b, int n) {
    float acc[LANES] = {0};
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int k = 0; k < LANES; k++) acc[k] += a[j + k] * b[j + k];
    float s = 0.0f;
    for (; j < n; j++) s += a[j] * b[j];
    for (int k = 0; k < LANES; k++) s += acc[k];
    return s;
}

static inline float vmax(const float *x, int n) {
    float acc[LANES];
    for (int k = 0; k < LANES; k++) acc[k] = -INFINITY;
    int j = 0;
    for (; j + LANES <= n; j += LANES)
        for (int k = 0; k < LANES; k++) acc[k] = x[j + k] > acc[k] ? x[j + k] : acc[k];
    float m = -INFINITY;
    for (; j < n; j++) m = x[j] > m ? x[j] : m;
    for (int k = 0; k < LANES; k++) m = acc[k] > m ? acc[k] : m;
    return m;
}

/* e^x in fp32 to within 2 ulp over the range that matters here (results
 * below 2^-126 flush towards 0, x > 88.7 saturates near FLT_MAX): x = n ln2
 * + r with |r| <= ln2/2 (ln2 split in two for an exact reduction), e^r by
 * the degree-7 Taylor-like polynomial of Cephes' expf, 2^n built in the
 * exponent bits. libm's expf is a function call the loops cannot vectorise. */
static inline float vexp(float x) {
    x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
    const float shift = 12582912.0f;                  /* 1.5 * 2^23: rounds to an integer */
    float n = (x * 1.44269504088896341f + shift) - shift;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t e = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &e, 4);
    return p * scale;
}

/* x = sqrt(x), correctly rounded as sqrtf. gcc vectorises sqrtf only under
 * -fno-math-errno, so the vector forms are spelled out. */
static inline void vsqrt(float *x, int n) {
    int i = 0;
#if defined(__AVX512F__)
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, _mm512_sqrt_ps(_mm512_loadu_ps(x + i)));
#elif defined(__AVX__)
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_sqrt_ps(_mm256_loadu_ps(x + i)));
#endif
    for (; i < n; i++) x[i] = sqrtf(x[i]);
}

/* Element-wise ops run on fp32 tiles: fp32 buffers directly, bf16 ones
 * widened into a small stack tile and rounded back. */
#define TILE 512

static inline const float *tile_in(const void *x, dtype_t t, size_t i0, int m, float *buf) {
    if (t == DT_F32) return (const float *)x + i0;
    const bf16_t *h = (const bf16_t *)x + i0;
    for (int i = 0; i < m; i++) buf[i] = bf16_to_f32(h[i]);
    return buf;
}
static inline float *tile_out(void *x, dtype_t t, size_t i0, float *buf) {
    return t == DT_F32 ? (float *)x + i0 : buf;
}
static inline void tile_store(void *x, dtype_t t, size_t i0, int m, const float *buf) {
    if (t == DT_F32) return;
    bf16_t *h = (bf16_t *)x + i0;
    for (int i = 0; i < m; i++) h[i] = f32_to_bf16(buf[i]);
}

/* ---- matmul ------------------------------------------------------------------ */
static void cpu_matmul(const device_t *d, int trans_a, int trans_b, int M, int N, int K, float alpha,
                const void *A, int lda, const void *B, int ldb, dtype_t ab_t, float beta,
                void *C, int ldc, dtype_t c_t) {
    (void)d;
    if (M <= 0 || N <= 0) return;
    int la, lb;
    const float *a = widen(SCR_A, A, ab_t, trans_a ? K : M, trans_a ? M : K, lda, &la);
    const float *b = widen(SCR_B, B, ab_t, trans_b ? N : K, trans_b ? K : N, ldb, &lb);
    float *c = (float *)C;
    int lc = ldc;
    if (c_t == DT_BF16) {
        c = scratch(SCR_C, (size_t)M * N);
        lc = N;
        if (beta != 0.0f)
            for (int r = 0; r < M; r++)
                for (int j = 0; j < N; j++)
                    c[(size_t)r * N + j] = bf16_to_f32(((const bf16_t *)C)[(size_t)r * ldc + j]);
    }
    if (K <= 0) {   /* sgemm with K = 0 is legal, but some BLAS builds skip the beta scaling */
        for (int r = 0; r < M; r++)
            for (int j = 0; j < N; j++) c[(size_t)r * lc + j] = beta == 0.0f ? 0.0f : beta * c[(size_t)r * lc + j];
    } else {
        cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                    trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha, a, la, b, lb, beta, c, lc);
    }
    if (c_t == DT_BF16)
        for (int r = 0; r < M; r++)
            for (int j = 0; j < N; j++)
                ((bf16_t *)C)[(size_t)r * ldc + j] = f32_to_bf16(c[(size_t)r * N + j]);
}

/* ---- embedding ------------------------------------------------------------- */
static void cpu_embedding_forward(const device_t *d, dtype_t t, const int *tokens,
                                  const void *table, void *out, int N, int C, int v0, int Vs) {
    (void)d;
    size_t es = dtype_size(t), row = (size_t)C * es;
    for (int n = 0; n < N; n++) {
        char *o = (char *)out + (size_t)n * row;
        int v = tokens[n] - v0;
        if (v >= 0 && v < Vs) memcpy(o, (const char *)table + (size_t)v * row, row);
        else memset(o, 0, row);   /* another shard's token (0 is 0 in bf16 too) */
    }
}

static void cpu_embedding_backward(const device_t *d, dtype_t t, const int *tokens,
                                   const void *dout, float *dtable, int N, int C, int v0, int Vs) {
    (void)d;
    for (int n = 0; n < N; n++) {
        int v = tokens[n] - v0;
        if (v < 0 || v >= Vs) continue;
        float *row = dtable + (size_t)v * C;
        for (int c = 0; c < C; c++) row[c] += ld(dout, t, (size_t)n * C + c);
    }
}

/* ---- RMSNorm --------------------------------------------------------------- */
static void cpu_rmsnorm_forward(const device_t *d, dtype_t t, const void *x, const void *w, void *y,
                         float *rstd, int N, int C, float eps) {
    (void)d;
    float *bx = scratch(SCR_A, (size_t)C), *by = scratch(SCR_C, (size_t)C);
    const float *W = widen_all(SCR_B, w, t, (size_t)C);
    for (int n = 0; n < N; n++) {
        size_t o = (size_t)n * C;
        const float *X = tile_in(x, t, o, C, bx);
        float *Y = tile_out(y, t, o, by);
        float r = 1.0f / sqrtf(vdot(X, X, C) / (float)C + eps);
        rstd[n] = r;
        for (int c = 0; c < C; c++) Y[c] = (X[c] * r) * W[c];
        tile_store(y, t, o, C, Y);
    }
}

static void cpu_rmsnorm_backward(const device_t *d, dtype_t t, const void *x, const void *w,
                          const float *rstd, const void *dy, const void *dres, void *dx,
                          float *dw, int N, int C) {
    (void)d;
    float *bx = scratch(SCR_A, (size_t)C), *bg = scratch(SCR_C, (size_t)C);
    float *br = scratch(SCR_Q, (size_t)C), *bd = scratch(SCR_K, (size_t)C);
    float *xh = scratch(SCR_V, (size_t)C), *gw = scratch(SCR_O, (size_t)C);
    const float *W = widen_all(SCR_B, w, t, (size_t)C);
    for (int n = 0; n < N; n++) {
        size_t o = (size_t)n * C;
        const float *X = tile_in(x, t, o, C, bx), *G = tile_in(dy, t, o, C, bg);
        const float *R = dres ? tile_in(dres, t, o, C, br) : NULL;
        float r = rstd[n];
        for (int c = 0; c < C; c++) {
            xh[c] = X[c] * r;
            gw[c] = G[c] * W[c];
            dw[c] += G[c] * xh[c];
        }
        float mean = vdot(gw, xh, C) / (float)C;
        float *D = tile_out(dx, t, o, bd);   /* written after every read of this row */
        if (R) for (int c = 0; c < C; c++) D[c] = r * (gw[c] - xh[c] * mean) + R[c];
        else   for (int c = 0; c < C; c++) D[c] = r * (gw[c] - xh[c] * mean);
        tile_store(dx, t, o, C, D);
    }
}

/* ---- RoPE ------------------------------------------------------------------ */
void rope_table(float *cs, int max_pos, int hd, double base) {
    int half = hd / 2;
    for (int p = 0; p < max_pos; p++)
        for (int i = 0; i < half; i++) {
            double a = (double)p * pow(base, -2.0 * i / (double)hd);
            cs[((size_t)p * half + i) * 2] = (float)cos(a);
            cs[((size_t)p * half + i) * 2 + 1] = (float)sin(a);
        }
}

static void cpu_rope(const device_t *d, dtype_t t, void *x, const float *cs, int B, int T, int H,
              int hd, int pos0, int inverse) {
    (void)d;
    int half = hd / 2;
    float sgn = inverse ? -1.0f : 1.0f;
    for (int b = 0; b < B; b++)
        for (int tt = 0; tt < T; tt++) {
            const float *row = cs + (size_t)(pos0 + tt) * half * 2;
            for (int h = 0; h < H; h++) {
                size_t o = (((size_t)b * T + tt) * H + h) * hd;
                for (int i = 0; i < half; i++) {
                    float c = row[2 * i], s = sgn * row[2 * i + 1];
                    float x0 = ld(x, t, o + 2 * i), x1 = ld(x, t, o + 2 * i + 1);
                    st(x, t, o + 2 * i, x0 * c - x1 * s);
                    st(x, t, o + 2 * i + 1, x0 * s + x1 * c);
                }
            }
        }
}

/* ---- attention -------------------------------------------------------------
 * Blockwise, so that memory is linear in the sequence length: FlashAttention's
 * recurrence (Dao et al. 2022) with sgemm on blocks. Query rows go in chunks
 * of QCHUNK and keys in blocks of KCHUNK; a chunk visits only the key blocks
 * its last row can see (causal attention costs about half the full square),
 * keeping per row a running max m, sum l and unnormalised output o:
 *   s = q k^T / sqrt(hd)                  (sgemm, QCHUNK x KCHUNK)
 *   m' = max(m, max_j s_j)                p_j = exp(s_j - m')
 *   l = l e^(m - m') + sum_j p_j          o = o e^(m - m') + p v   (sgemm)
 * and at the end out = o / l, lse = m + log l. Scratch is QCHUNK x KCHUNK
 * scores and a few numbers per row, whatever Tq and Tk (bf16 inputs are also
 * widened to fp32 copies, linear in the length). The backward pass recomputes
 * p = exp(s - lse) per block from the saved lse, and accumulates the four
 * products of each block with sgemm. */
#define QCHUNK 64
#define KCHUNK 128

/* Keys [0, n) of the block that query row i (block-relative) may see: n = 0 if none. */
static inline int visible_keys(int i, int Tk, int q_pos0, int k_pos0) {
    int n = q_pos0 + i - k_pos0 + 1;
    return n < 0 ? 0 : (n > Tk ? Tk : n);
}

/* Keys of block [j0, j0 + kn) that query row i sees: [j0, j0 + n). */
static inline int block_visible(int i, int j0, int kn, int Tk, int q_pos0, int k_pos0) {
    int n = visible_keys(i, Tk, q_pos0, k_pos0) - j0;
    return n < 0 ? 0 : (n > kn ? kn : n);
}

static void cpu_attn_forward(const device_t *d, dtype_t t, const void *q, const void *k,
                      const void *v, void *out, float *lse, int B, int Tq, int Tk, int H,
                      int KV, int hd, int q_pos0, int k_pos0) {
    (void)d;
    const float *Q = widen_all(SCR_Q, q, t, (size_t)B * Tq * H * hd);
    const float *K = widen_all(SCR_K, k, t, (size_t)B * Tk * KV * hd);
    const float *Vv = widen_all(SCR_V, v, t, (size_t)B * Tk * KV * hd);
    float *O = t == DT_F32 ? (float *)out : scratch(SCR_O, (size_t)B * Tq * H * hd);
    float *S = scratch(SCR_S, (size_t)QCHUNK * KCHUNK);
    float *m = scratch(SCR_ROW, 2 * QCHUNK), *l = m + QCHUNK;
    const float scale = 1.0f / sqrtf((float)hd);
    const int group = H / KV, ldq = H * hd, ldk = KV * hd;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const float *Qh = Q + (size_t)b * Tq * ldq + (size_t)h * hd;
            const float *Kh = K + (size_t)b * Tk * ldk + (size_t)(h / group) * hd;
            const float *Vh = Vv + (size_t)b * Tk * ldk + (size_t)(h / group) * hd;
            float *Oh = O + (size_t)b * Tq * ldq + (size_t)h * hd;
            float *L = lse + ((size_t)b * H + h) * Tq;
            for (int r0 = 0; r0 < Tq; r0 += QCHUNK) {
                const int rows = Tq - r0 < QCHUNK ? Tq - r0 : QCHUNK;
                const int nk = visible_keys(r0 + rows - 1, Tk, q_pos0, k_pos0);
                float *Oc = Oh + (size_t)r0 * ldq;
                for (int i = 0; i < rows; i++) {
                    m[i] = -INFINITY;
                    l[i] = 0.0f;
                    memset(Oc + (size_t)i * ldq, 0, (size_t)hd * sizeof(float));
                }
                for (int j0 = 0; j0 < nk; j0 += KCHUNK) {
                    const int kn = nk - j0 < KCHUNK ? nk - j0 : KCHUNK;
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, kn, hd, scale,
                                Qh + (size_t)r0 * ldq, ldq, Kh + (size_t)j0 * ldk, ldk, 0.0f, S, kn);
                    for (int i = 0; i < rows; i++) {
                        float *s = S + (size_t)i * kn, *o = Oc + (size_t)i * ldq;
                        const int n = block_visible(r0 + i, j0, kn, Tk, q_pos0, k_pos0);
                        for (int j = n; j < kn; j++) s[j] = 0.0f;      /* masked: p = 0 */
                        if (n == 0) continue;                          /* m, l, o unchanged */
                        const float mx = vmax(s, n), m_new = mx > m[i] ? mx : m[i];
                        const float alpha = m[i] == -INFINITY ? 0.0f : vexp(m[i] - m_new);
                        for (int j = 0; j < n; j++) s[j] = vexp(s[j] - m_new);
                        l[i] = l[i] * alpha + vsum(s, n);
                        m[i] = m_new;
                        if (alpha != 1.0f)
                            for (int c = 0; c < hd; c++) o[c] *= alpha;
                    }
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, hd, kn, 1.0f, S,
                                kn, Vh + (size_t)j0 * ldk, ldk, 1.0f, Oc, ldq);
                }
                for (int i = 0; i < rows; i++) {
                    float *o = Oc + (size_t)i * ldq;
                    if (l[i] == 0.0f) {                    /* the row saw no key */
                        L[r0 + i] = -INFINITY;
                        continue;                          /* o is still 0 */
                    }
                    const float inv = 1.0f / l[i];
                    for (int c = 0; c < hd; c++) o[c] *= inv;
                    L[r0 + i] = m[i] + logf(l[i]);
                }
            }
        }
    if (t != DT_F32) narrow_all(out, O, t, (size_t)B * Tq * H * hd);
}

static void cpu_attn_merge(const device_t *d, dtype_t t, void *out, float *lse, const void *out_b,
                    const float *lse_b, int B, int T, int H, int hd) {
    /* ASSIGNMENT 09-merge: the online-softmax merge (09_context_parallel/README.md, "Assignment: the online-softmax merge") */
    /* STUB: (void)d, (void)t, (void)out, (void)lse, (void)out_b, (void)lse_b, (void)B, (void)T, (void)H, (void)hd; */
    /* STUB: not_implemented("online-softmax merge (cpu_attn_merge)", "09_context_parallel/README.md, Assignment: the online-softmax merge"); */
    (void)d;
    for (int b = 0; b < B; b++)
        for (int tt = 0; tt < T; tt++) {
            for (int h = 0; h < H; h++) {
                size_t li = ((size_t)b * H + h) * T + tt;
                size_t o = (((size_t)b * T + tt) * H + h) * hd;
                float la = lse[li], lb = lse_b[li];
                if (lb == -INFINITY) continue;      /* nothing new: keep (out, lse) */
                if (la == -INFINITY) {              /* nothing yet: take block b */
                    lse[li] = lb;
                    for (int i = 0; i < hd; i++) st(out, t, o + i, ld(out_b, t, o + i));
                    continue;
                }
                float m = la > lb ? la : lb;
                float wa = expf(la - m), wb = expf(lb - m), inv = 1.0f / (wa + wb);
                for (int i = 0; i < hd; i++)
                    st(out, t, o + i, (wa * ld(out, t, o + i) + wb * ld(out_b, t, o + i)) * inv);
                lse[li] = m + logf(wa + wb);
            }
        }
    /* END ASSIGNMENT 09-merge */
}

static void cpu_attn_backward(const device_t *d, dtype_t t, const void *q, const void *k,
                       const void *v, const void *out, const void *dout, const float *lse,
                       void *dq, void *dk, void *dv, int B, int Tq, int Tk, int H, int KV,
                       int hd, int q_pos0, int k_pos0) {
    (void)d;
    size_t nq = (size_t)B * Tq * H * hd, nkv = (size_t)B * Tk * KV * hd;
    const float *Q = widen_all(SCR_Q, q, t, nq);
    const float *K = widen_all(SCR_K, k, t, nkv);
    const float *Vv = widen_all(SCR_V, v, t, nkv);
    const float *O = widen_all(SCR_O, out, t, nq);
    const float *dO = widen_all(SCR_DO, dout, t, nq);
    float *dQ = widen_all(SCR_DQ, dq, t, nq);
    float *dK = widen_all(SCR_DK, dk, t, nkv);
    float *dV = widen_all(SCR_DV, dv, t, nkv);
    float *P = scratch(SCR_P, (size_t)QCHUNK * KCHUNK);
    float *dS = scratch(SCR_S, (size_t)QCHUNK * KCHUNK);
    float *D = scratch(SCR_ROW, QCHUNK);
    const float scale = 1.0f / sqrtf((float)hd);
    const int group = H / KV, ldq = H * hd, ldk = KV * hd;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            size_t qo = (size_t)b * Tq * ldq + (size_t)h * hd;
            size_t ko = (size_t)b * Tk * ldk + (size_t)(h / group) * hd;
            const float *L = lse + ((size_t)b * H + h) * Tq;
            for (int r0 = 0; r0 < Tq; r0 += QCHUNK) {
                int rows = Tq - r0 < QCHUNK ? Tq - r0 : QCHUNK;
                int nk = visible_keys(r0 + rows - 1, Tk, q_pos0, k_pos0);
                if (nk == 0) continue;
                size_t qc = qo + (size_t)r0 * ldq;
                for (int i = 0; i < rows; i++)   /* D_i = dout_i . out_i */
                    D[i] = vdot(dO + qc + (size_t)i * ldq, O + qc + (size_t)i * ldq, hd);
                for (int j0 = 0; j0 < nk; j0 += KCHUNK) {
                    const int kn = nk - j0 < KCHUNK ? nk - j0 : KCHUNK;
                    const size_t kc = ko + (size_t)j0 * ldk;
                    /* p = exp(s - lse), recomputed from q, k and the saved lse */
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, kn, hd, scale,
                                Q + qc, ldq, K + kc, ldk, 0.0f, P, kn);
                    /* dp = dout v^T */
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, kn, hd, 1.0f,
                                dO + qc, ldq, Vv + kc, ldk, 0.0f, dS, kn);
                    for (int i = 0; i < rows; i++) {
                        float *p = P + (size_t)i * kn, *ds = dS + (size_t)i * kn;
                        const float l = L[r0 + i];
                        const int n = l == -INFINITY ? 0 : block_visible(r0 + i, j0, kn, Tk, q_pos0, k_pos0);
                        for (int j = 0; j < n; j++) {
                            p[j] = vexp(p[j] - l);
                            ds[j] = p[j] * (ds[j] - D[i]);
                        }
                        for (int j = n; j < kn; j++) { p[j] = 0.0f; ds[j] = 0.0f; }
                    }
                    /* dv += p^T dout;  dq += scale ds k;  dk += scale ds^T q */
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kn, hd, rows, 1.0f, P, kn,
                                dO + qc, ldq, 1.0f, dV + kc, ldk);
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, hd, kn, scale, dS,
                                kn, K + kc, ldk, 1.0f, dQ + qc, ldq);
                    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, kn, hd, rows, scale, dS,
                                kn, Q + qc, ldq, 1.0f, dK + kc, ldk);
                }
            }
        }
    if (t != DT_F32) {
        narrow_all(dq, dQ, t, nq);
        narrow_all(dk, dK, t, nkv);
        narrow_all(dv, dV, t, nkv);
    }
}

/* ---- SwiGLU ------------------------------------------------------------------ */
static void cpu_swiglu_forward(const device_t *d, dtype_t t, const void *a, const void *b, void *out,
                        size_t n) {
    (void)d;
    float ba[TILE], bb[TILE], bo[TILE];
    for (size_t i0 = 0; i0 < n; i0 += TILE) {
        int m = n - i0 < TILE ? (int)(n - i0) : TILE;
        const float *A = tile_in(a, t, i0, m, ba), *Bv = tile_in(b, t, i0, m, bb);
        float *O = tile_out(out, t, i0, bo);
        for (int i = 0; i < m; i++) O[i] = A[i] / (1.0f + vexp(-A[i])) * Bv[i];
        tile_store(out, t, i0, m, O);
    }
}

static void cpu_swiglu_backward(const device_t *d, dtype_t t, const void *a, const void *b,
                         const void *dout, void *da, void *db, size_t n) {
    (void)d;
    float ba[TILE], bb[TILE], bg[TILE], bda[TILE], bdb[TILE];
    for (size_t i0 = 0; i0 < n; i0 += TILE) {
        int m = n - i0 < TILE ? (int)(n - i0) : TILE;
        const float *A = tile_in(a, t, i0, m, ba), *Bv = tile_in(b, t, i0, m, bb);
        const float *G = tile_in(dout, t, i0, m, bg);
        /* da, db may alias a, b: compute into the tile first when they do */
        float *DA = (t == DT_F32 && da != a) ? (float *)da + i0 : bda;
        float *DB = (t == DT_F32 && db != b) ? (float *)db + i0 : bdb;
        for (int i = 0; i < m; i++) {
            float s = 1.0f / (1.0f + vexp(-A[i]));
            DA[i] = G[i] * Bv[i] * s * (1.0f + A[i] * (1.0f - s));
            DB[i] = G[i] * A[i] * s;
        }
        if (DA == bda) { if (t == DT_F32) memcpy((float *)da + i0, bda, m * 4); else tile_store(da, t, i0, m, bda); }
        if (DB == bdb) { if (t == DT_F32) memcpy((float *)db + i0, bdb, m * 4); else tile_store(db, t, i0, m, bdb); }
    }
}

/* ---- cross-entropy ------------------------------------------------------------ */
static void cpu_xent_forward(const device_t *d, dtype_t t, const void *logits,
                             const int *targets, float *picked, float *lse, int N, int V, int v0) {
    (void)d;
    float *bl = scratch(SCR_A, (size_t)V), *e = scratch(SCR_B, (size_t)V);
    for (int n = 0; n < N; n++) {
        const float *L = tile_in(logits, t, (size_t)n * V, V, bl);
        float mx = vmax(L, V);
        for (int j = 0; j < V; j++) e[j] = vexp(L[j] - mx);
        lse[n] = mx + logf(vsum(e, V));
        int y = targets[n] - v0;
        picked[n] = targets[n] >= 0 && y >= 0 && y < V ? L[y] : 0.0f;
    }
}

static void cpu_xent_backward(const device_t *d, dtype_t t, const void *logits,
                              const int *targets, const float *lse, void *dlogits, float scale,
                              int N, int V, int v0) {
    (void)d;
    float *bl = scratch(SCR_A, (size_t)V), *bd = scratch(SCR_B, (size_t)V);
    for (int n = 0; n < N; n++) {
        size_t o = (size_t)n * V;
        const float *L = tile_in(logits, t, o, V, bl);
        float *D = tile_out(dlogits, t, o, bd);   /* may alias L: element-wise */
        const int y = targets[n] - v0;
        if (targets[n] < 0) {
            for (int j = 0; j < V; j++) D[j] = 0.0f;
        } else {
            const float l = lse[n];
            const int mine = y >= 0 && y < V;
            const float ly = mine ? L[y] : 0.0f;   /* read before D (maybe L) is written */
            for (int j = 0; j < V; j++) D[j] = vexp(L[j] - l) * scale;
            if (mine) D[y] = (vexp(ly - l) - 1.0f) * scale;
        }
        tile_store(dlogits, t, o, V, D);
    }
}

static void cpu_lse_combine(const device_t *d, const float *parts, float *out, int P, int N) {
    (void)d;
    for (int n = 0; n < N; n++) {
        float mx = -INFINITY;
        for (int p = 0; p < P; p++) mx = fmaxf(mx, parts[(size_t)p * N + n]);
        if (mx == -INFINITY) { out[n] = -INFINITY; continue; }
        double s = 0;
        for (int p = 0; p < P; p++) s += exp((double)parts[(size_t)p * N + n] - mx);
        out[n] = mx + (float)log(s);
    }
}

/* ---- element-wise and reductions -------------------------------------------------- */
static void cpu_add(const device_t *d, dtype_t t, const void *a, const void *b, void *out, size_t n) {
    (void)d;
    float ba[TILE], bb[TILE], bo[TILE];
    for (size_t i0 = 0; i0 < n; i0 += TILE) {
        int m = n - i0 < TILE ? (int)(n - i0) : TILE;
        const float *A = tile_in(a, t, i0, m, ba), *Bv = tile_in(b, t, i0, m, bb);
        float *O = tile_out(out, t, i0, bo);
        for (int i = 0; i < m; i++) O[i] = A[i] + Bv[i];
        tile_store(out, t, i0, m, O);
    }
}

static void cpu_cast(const device_t *d, const void *src, dtype_t src_t, void *dst, dtype_t dst_t,
              size_t n) {
    (void)d;
    if (src_t == dst_t) {
        if (dst != src) memmove(dst, src, n * dtype_size(src_t));
        return;
    }
    if (src_t == DT_F32) {   /* fp32 -> bf16 */
        const float *x = src;
        bf16_t *y = dst;
        for (size_t i = 0; i < n; i++) y[i] = f32_to_bf16(x[i]);
    } else {                 /* bf16 -> fp32 */
        const bf16_t *x = src;
        float *y = dst;
        for (size_t i = 0; i < n; i++) y[i] = bf16_to_f32(x[i]);
    }
}

static void cpu_scale(const device_t *d, dtype_t t, void *x, float s, size_t n) {
    (void)d;
    float bx[TILE];
    for (size_t i0 = 0; i0 < n; i0 += TILE) {
        int m = n - i0 < TILE ? (int)(n - i0) : TILE;
        const float *X = tile_in(x, t, i0, m, bx);
        float *O = tile_out(x, t, i0, bx);
        for (int i = 0; i < m; i++) O[i] = X[i] * s;
        tile_store(x, t, i0, m, O);
    }
}

static double cpu_sumsq(const device_t *d, dtype_t t, const void *x, size_t n) {
    (void)d;
    double acc[LANES] = {0}, sum = 0.0;   /* independent partial sums: vectorised */
    float bx[TILE];
    for (size_t i0 = 0; i0 < n; i0 += TILE) {
        int m = n - i0 < TILE ? (int)(n - i0) : TILE;
        const float *X = tile_in(x, t, i0, m, bx);
        int j = 0;
        for (; j + LANES <= m; j += LANES)
            for (int k = 0; k < LANES; k++) acc[k] += (double)X[j + k] * X[j + k];
        for (; j < m; j++) sum += (double)X[j] * X[j];
    }
    for (int k = 0; k < LANES; k++) sum += acc[k];
    return sum;
}

/* AdamW touches 32 bytes per parameter and should run at memory speed, not
 * at the speed of scalar square roots: a tile at a time, in two vectorised
 * passes around vsqrt. */
static void cpu_adamw(const device_t *d, float *master, float *m, float *v, const float *grad,
               void *working, dtype_t working_t, size_t n, float lr, float beta1, float beta2,
               float eps, float wd, float grad_scale, int step) {
    (void)d;
    const float c1 = (float)(1.0 - pow((double)beta1, step));
    const float c2 = (float)(1.0 - pow((double)beta2, step));
    const float decay = 1.0f - lr * wd, a1 = 1.0f - beta1, a2 = 1.0f - beta2;
    float den[TILE], bw[TILE];
    for (size_t i0 = 0; i0 < n; i0 += TILE) {
        const int cnt = n - i0 < TILE ? (int)(n - i0) : TILE;
        float *restrict P = master + i0, *restrict M = m + i0, *restrict Vv = v + i0;
        const float *restrict G = grad + i0;
        float *restrict W = working && working_t == DT_F32 ? (float *)working + i0 : bw;
        for (int i = 0; i < cnt; i++) {
            const float g = G[i] * grad_scale;
            M[i] = beta1 * M[i] + a1 * g;
            Vv[i] = beta2 * Vv[i] + a2 * g * g;
            den[i] = Vv[i] / c2;
        }
        vsqrt(den, cnt);
        for (int i = 0; i < cnt; i++) {
            float p = P[i] * decay;
            p = p - lr * (M[i] / c1) / (den[i] + eps);
            P[i] = p;
            W[i] = p;
        }
        if (working && working_t != DT_F32) tile_store(working, working_t, i0, cnt, bw);
    }
}

/* ---- gradient codes: compress.h's int8, sign and top-k, PowerSGD's Gram-Schmidt ---------- */

size_t ops_block_code_bytes(int sign, size_t n) {
    size_t nb = (n + OPS_CODE_BLOCK - 1) / OPS_CODE_BLOCK;
    return ((sign ? (n + 7) / 8 : n) + 4 * nb + 3) / 4 * 4;
}

static void cpu_block_encode(const device_t *d, int sign, const float *x, size_t n, void *out) {
    (void)d;
    size_t nb = (n + OPS_CODE_BLOCK - 1) / OPS_CODE_BLOCK;
    memset(out, 0, ops_block_code_bytes(sign, n));
    float *scale = out;                          /* (nb) */
    uint8_t *codes = (uint8_t *)(scale + nb);    /* int8: (n); sign: (ceil(n / 8)) bits */
    for (size_t b = 0; b < nb; b++) {
        size_t lo = b * OPS_CODE_BLOCK, hi = lo + OPS_CODE_BLOCK < n ? lo + OPS_CODE_BLOCK : n;
        double big = 0, l1 = 0;
        for (size_t i = lo; i < hi; i++) {
            double a = fabs(x[i]);
            l1 += a;
            if (a > big) big = a;
        }
        if (!sign) {
            float s = (float)(big / 127.0);
            scale[b] = s;
            for (size_t i = lo; i < hi; i++) {
                long q = s > 0 ? lrintf(x[i] / s) : 0;
                codes[i] = (uint8_t)(int8_t)(q > 127 ? 127 : q < -127 ? -127 : q);
            }
        } else {
            scale[b] = (float)(l1 / (double)(hi - lo));   /* mean |x|: keeps the block's L1 norm */
            for (size_t i = lo; i < hi; i++)
                if (x[i] >= 0) codes[i / 8] |= (uint8_t)(1u << (i % 8));
        }
    }
}

static void cpu_block_decode_add(const device_t *d, int sign, const void *in, size_t n, float alpha, float *acc) {
    (void)d;
    size_t nb = (n + OPS_CODE_BLOCK - 1) / OPS_CODE_BLOCK;
    const float *scale = in;
    const uint8_t *codes = (const uint8_t *)(scale + nb);
    for (size_t i = 0; i < n; i++) {
        float s = scale[i / OPS_CODE_BLOCK];
        float v = !sign ? s * (float)(int8_t)codes[i] : (codes[i / 8] >> (i % 8) & 1u) ? s : -s;
        acc[i] += alpha * v;
    }
}

/* Quickselect: the k-th largest of v[0..n) (1 <= k <= n), reordering v. */
static float kth_largest(float *v, size_t n, size_t k) {
    size_t lo = 0, hi = n, want = k - 1;
    while (hi - lo > 1) {
        float p = v[lo + (hi - lo) / 2], t;
        size_t lt = lo, i = lo, gt = hi;   /* [lo, lt) > p, [lt, gt) == p, [gt, hi) < p */
        while (i < gt) {
            if (v[i] > p) { t = v[lt]; v[lt++] = v[i]; v[i++] = t; }
            else if (v[i] < p) { t = v[--gt]; v[gt] = v[i]; v[i] = t; }
            else i++;
        }
        if (want < lt) hi = lt;
        else if (want >= gt) lo = gt;
        else return p;
    }
    return v[lo];
}

static void cpu_topk_encode(const device_t *d, const float *x, size_t n, size_t k, void *out) {
    (void)d;
    float *val = out;
    uint32_t *idx = (uint32_t *)(val + k);
    float *mag = xmalloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) mag[i] = fabsf(x[i]);
    float thr = kth_largest(mag, n, k);
    free(mag);
    size_t above = 0, j = 0;
    for (size_t i = 0; i < n; i++) above += fabsf(x[i]) > thr;
    size_t ties = k - above;   /* values equal to the threshold: the first ones */
    for (size_t i = 0; i < n && j < k; i++) {
        float a = fabsf(x[i]);
        if (a > thr || (a == thr && ties > 0)) {
            if (a == thr) ties--;
            val[j] = x[i];
            idx[j++] = (uint32_t)i;
        }
    }
}

static void cpu_topk_decode_add(const device_t *d, const void *in, size_t k, float alpha, float *acc) {
    (void)d;
    const float *val = in;
    const uint32_t *idx = (const uint32_t *)(val + k);
    for (size_t j = 0; j < k; j++) acc[idx[j]] += alpha * val[j];
}

/* Sums in double; a column that vanishes stays zero. */
static void cpu_orthonormalise(const device_t *d, float *a, size_t rows, int R) {
    (void)d;
    for (int j = 0; j < R; j++) {
        for (int i = 0; i < j; i++) {
            double dot = 0;
            for (size_t r = 0; r < rows; r++) dot += (double)a[r * R + i] * a[r * R + j];
            for (size_t r = 0; r < rows; r++) a[r * R + j] -= (float)dot * a[r * R + i];
        }
        double norm = 0;
        for (size_t r = 0; r < rows; r++) norm += (double)a[r * R + j] * a[r * R + j];
        norm = sqrt(norm);
        for (size_t r = 0; r < rows; r++) a[r * R + j] = norm > 1e-30 ? (float)(a[r * R + j] / norm) : 0.0f;
    }
}

const ops_t ops_cpu = {
    .matmul = cpu_matmul,
    .embedding_forward = cpu_embedding_forward,
    .embedding_backward = cpu_embedding_backward,
    .rmsnorm_forward = cpu_rmsnorm_forward,
    .rmsnorm_backward = cpu_rmsnorm_backward,
    .rope = cpu_rope,
    .attn_forward = cpu_attn_forward,
    .attn_merge = cpu_attn_merge,
    .attn_backward = cpu_attn_backward,
    .swiglu_forward = cpu_swiglu_forward,
    .swiglu_backward = cpu_swiglu_backward,
    .xent_forward = cpu_xent_forward,
    .xent_backward = cpu_xent_backward,
    .lse_combine = cpu_lse_combine,
    .add = cpu_add,
    .cast = cpu_cast,
    .scale = cpu_scale,
    .sumsq = cpu_sumsq,
    .block_encode = cpu_block_encode,
    .block_decode_add = cpu_block_decode_add,
    .topk_encode = cpu_topk_encode,
    .topk_decode_add = cpu_topk_decode_add,
    .orthonormalise = cpu_orthonormalise,
    .adamw = cpu_adamw,
};
