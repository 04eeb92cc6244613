/* unit_model.c: the model's kernels and the model itself, against finite
 * differences and hand-computed values.
 *
 * Every test runs on the device under test (DEV=cpu|cuda, as tests/run.sh
 * sets it), so `make test DEVICE=cuda` checks the CUDA backend against the
 * same specifications. Finite differences are central, in fp32 through the
 * ops and summed in double on the host: L = sum_i R_i out_i with fixed random
 * weights R, so dL/dout = R is what each backward is fed. */
#define UNIT_MAIN
#include "unit.h"

#include <stdint.h>
#include <unistd.h>

#include "device.h"
#include "dtype.h"
#include "model.h"
#include "ops.h"
#include "optim.h"

/* ---- helpers ---------------------------------------------------------------- */
static device_t dev;

static void setup(void) {
    const char *want = getenv("DEV");
    device_init(&dev, want && *want ? want : "cpu", unit_dist.local_rank, unit_dist.local_world, 1);
}

static uint64_t rng_state = 12345;
static float frand(void) {   /* uniform in [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(rng_state >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}
static float *rand_host(size_t n, float scale) {
    float *h = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) h[i] = scale * frand();
    return h;
}
/* A device buffer of type t holding host values h (rounded for bf16). */
static void *up(const float *h, size_t n, dtype_t t) {
    void *p = dev_alloc(&dev, n * dtype_size(t) + 64);
    void *tmp = xmalloc(n * dtype_size(t) + 1);
    for (size_t i = 0; i < n; i++) dtype_set(tmp, t, i, h[i]);
    dev_from_host(&dev, p, tmp, n * dtype_size(t));
    free(tmp);
    return p;
}
static void put(void *p, const float *h, size_t n, dtype_t t) {
    void *tmp = xmalloc(n * dtype_size(t) + 1);
    for (size_t i = 0; i < n; i++) dtype_set(tmp, t, i, h[i]);
    dev_from_host(&dev, p, tmp, n * dtype_size(t));
    free(tmp);
}
static void down(float *h, const void *p, size_t n, dtype_t t) {
    void *tmp = xmalloc(n * dtype_size(t) + 1);
    dev_to_host(&dev, tmp, p, n * dtype_size(t));
    for (size_t i = 0; i < n; i++) h[i] = dtype_get(tmp, t, i);
    free(tmp);
}
static int *up_int(const int *h, size_t n) {
    int *p = dev_alloc(&dev, n * sizeof(int) + 64);
    dev_from_host(&dev, p, h, n * sizeof(int));
    return p;
}
static float rounded(float x, dtype_t t) { return t == DT_BF16 ? bf16_to_f32(f32_to_bf16(x)) : x; }
static double dot(const float *a, const float *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

/* Central differences of loss() in x[i] against grad[i]: for every i on the
 * CPU; on a CUDA device (where each evaluation is many kernel launches, and
 * very slow on the CUDA emulator) for at most max_checks indices spread over
 * the tensor:
 * |fd - grad| <= tol * max(1, |grad|); prints the first few misses and a
 * summary line naming the worst element. */
typedef double (*loss_fn)(void *ctx);
static void fd_check(const char *what, float *x, size_t n, const float *grad, loss_fn loss,
                     void *ctx, double h, double tol, size_t max_checks) {
    int bad = 0;
    double worst = 0;
    size_t worst_i = 0, checks = n < max_checks || dev.kind == DEV_CPU ? n : max_checks;
    for (size_t k = 0; k < checks; k++) {
        /* all of them, or a golden-ratio sequence: every head, row and lane */
        size_t i = checks == n ? k : (size_t)(fmod(k * 0.6180339887498949, 1.0) * n);
        float s = x[i];
        x[i] = s + (float)h;
        double lp = loss(ctx);
        x[i] = s - (float)h;
        double lm = loss(ctx);
        x[i] = s;
        double fd = (lp - lm) / (2 * h);
        double err = fabs(fd - grad[i]) / fmax(1.0, fabs(grad[i]));
        if (err > worst) { worst = err; worst_i = i; }
        if (err > tol && bad++ < 5)
            UNIT_FAIL("%s[%zu]: backward %.7g, finite difference %.7g (error %.2g > %.2g)",
                      what, i, grad[i], fd, err, tol);
    }
    if (bad) UNIT_FAIL("%s: %d of %zu elements checked differ; worst %s[%zu] error %.3g", what,
                       bad, checks, what, worst_i, worst);
    else printf("%-20s %5zu of %5zu elements, worst error %.2g (tolerance %.2g)\n", what, checks,
                n, worst, tol);
}

/* ---- matmul ------------------------------------------------------------------ */
TEST(model_op_matmul_matches_naive_product_for_every_transpose_and_type) {
    setup();
    const int M = 5, N = 7, K = 3, pad = 2;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++)
            for (int ab = 0; ab < 2; ab++)
                for (int ct = 0; ct < 2; ct++) {
                    dtype_t abt = ab ? DT_BF16 : DT_F32, cty = ct ? DT_BF16 : DT_F32;
                    if (!ab && ct) continue;   /* fp32 operands, bf16 result: not an op */
                    int ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
                    int lda = ac + pad, ldb = bc + pad, ldc = N + pad;
                    float *A = rand_host((size_t)ar * lda, 1), *B = rand_host((size_t)br * ldb, 1);
                    float *C = rand_host((size_t)M * ldc, 1);
                    /* round the inputs to the storage type so the reference sees them */
                    for (int i = 0; i < ar * lda; i++) A[i] = rounded(A[i], abt);
                    for (int i = 0; i < br * ldb; i++) B[i] = rounded(B[i], abt);
                    for (int i = 0; i < M * ldc; i++) C[i] = rounded(C[i], cty);
                    void *dA = up(A, (size_t)ar * lda, abt), *dB = up(B, (size_t)br * ldb, abt);
                    void *dC = up(C, (size_t)M * ldc, cty);
                    const float alpha = 0.75f, beta = 0.5f;
                    op_matmul(&dev, ta, tb, M, N, K, alpha, dA, lda, dB, ldb, abt, beta, dC, ldc, cty);
                    float *got = xmalloc(sizeof(float) * M * ldc);
                    down(got, dC, (size_t)M * ldc, cty);
                    double tol = ct ? 1.0 / 128 : 1e-5;   /* one bf16 rounding of the result */
                    for (int i = 0; i < M; i++)
                        for (int j = 0; j < N; j++) {
                            double s = 0;
                            for (int k = 0; k < K; k++)
                                s += (double)(ta ? A[k * lda + i] : A[i * lda + k]) *
                                     (tb ? B[j * ldb + k] : B[k * ldb + j]);
                            double want = alpha * s + beta * C[i * ldc + j];
                            if (fabs(got[i * ldc + j] - want) > tol * fmax(1, fabs(want)))
                                UNIT_FAIL("ta %d tb %d ab %s c %s: C[%d][%d] = %.7g, expected %.7g",
                                          ta, tb, dtype_name(abt), dtype_name(cty), i, j,
                                          got[i * ldc + j], want);
                        }
                    /* padding columns of C are untouched */
                    for (int i = 0; i < M; i++)
                        for (int j = N; j < ldc; j++) EXPECT(got[i * ldc + j] == C[i * ldc + j]);
                    /* beta = 0 ignores whatever C held, NaN included */
                    float *nan = xmalloc(sizeof(float) * M * ldc);
                    for (int i = 0; i < M * ldc; i++) nan[i] = NAN;
                    put(dC, nan, (size_t)M * ldc, cty);
                    op_matmul(&dev, ta, tb, M, N, K, 1.0f, dA, lda, dB, ldb, abt, 0.0f, dC, ldc, cty);
                    down(got, dC, (size_t)M * ldc, cty);
                    for (int i = 0; i < M; i++)
                        for (int j = 0; j < N; j++)
                            if (isnan(got[i * ldc + j])) {
                                UNIT_FAIL("beta 0 read C: NaN at [%d][%d] (ta %d tb %d)", i, j, ta, tb);
                                i = M;
                                break;
                            }
                    free(nan); free(got); free(A); free(B); free(C);
                    dev_free(&dev, dA); dev_free(&dev, dB); dev_free(&dev, dC);
                }
}

/* ---- RMSNorm ------------------------------------------------------------------ */
typedef struct { float *x, *w, *R; int N, C; void *dx, *dw, *dy; float *rstd; } norm_ctx;
static double norm_loss(void *p) {
    norm_ctx *c = p;
    size_t n = (size_t)c->N * c->C;
    put(c->dx, c->x, n, DT_F32);
    put(c->dw, c->w, c->C, DT_F32);
    op_rmsnorm_forward(&dev, DT_F32, c->dx, c->dw, c->dy, c->rstd, c->N, c->C, MODEL_NORM_EPS);
    float *y = xmalloc(n * sizeof(float));
    down(y, c->dy, n, DT_F32);
    double l = dot(y, c->R, n);
    free(y);
    return l;
}

TEST(model_op_rmsnorm_forward_and_backward_match_definition_and_finite_differences) {
    setup();
    const int N = 3, C = 7;
    const size_t n = (size_t)N * C;
    norm_ctx c = {rand_host(n, 1), rand_host(C, 1), rand_host(n, 1), N, C, NULL, NULL, NULL, NULL};
    c.dx = up(c.x, n, DT_F32); c.dw = up(c.w, C, DT_F32); c.dy = up(c.x, n, DT_F32);
    c.rstd = dev_alloc(&dev, N * sizeof(float));
    norm_loss(&c);
    /* forward against the definition, in double */
    float *y = xmalloc(n * sizeof(float));
    down(y, c.dy, n, DT_F32);
    for (int r = 0; r < N; r++) {
        double ss = 0;
        for (int k = 0; k < C; k++) ss += (double)c.x[r * C + k] * c.x[r * C + k];
        double rs = 1 / sqrt(ss / C + 1e-5);
        for (int k = 0; k < C; k++) EXPECT_NEAR(y[r * C + k], c.x[r * C + k] * rs * c.w[k], 1e-5);
    }
    /* backward */
    void *dR = up(c.R, n, DT_F32), *ddx = up(c.x, n, DT_F32);
    float *dwd = dev_alloc(&dev, C * sizeof(float));
    op_rmsnorm_backward(&dev, DT_F32, c.dx, c.dw, c.rstd, dR, NULL, ddx, dwd, N, C);
    float *gx = xmalloc(n * sizeof(float)), *gw = xmalloc(C * sizeof(float));
    down(gx, ddx, n, DT_F32);
    down(gw, dwd, C, DT_F32);
    fd_check("dx", c.x, n, gx, norm_loss, &c, 1e-2, 2e-3, 1000);
    fd_check("dw", c.w, C, gw, norm_loss, &c, 1e-2, 2e-3, 1000);
    /* dw accumulates; dres is added to dx; dx may alias dres */
    norm_loss(&c);   /* the device buffers again hold the unperturbed forward */
    float *dres = rand_host(n, 1);
    void *ddres = up(dres, n, DT_F32);
    op_rmsnorm_backward(&dev, DT_F32, c.dx, c.dw, c.rstd, dR, ddres, ddres, dwd, N, C);
    float *gx2 = xmalloc(n * sizeof(float)), *gw2 = xmalloc(C * sizeof(float));
    down(gx2, ddres, n, DT_F32);
    down(gw2, dwd, C, DT_F32);
    for (size_t i = 0; i < n; i++) EXPECT_NEAR(gx2[i], gx[i] + dres[i], 1e-6);
    for (int k = 0; k < C; k++) EXPECT_NEAR(gw2[k], 2 * gw[k], 1e-6);
}

/* ---- RoPE ---------------------------------------------------------------------- */
TEST(model_op_rope_rotates_adjacent_pairs_and_its_inverse_undoes_it) {
    setup();
    const int B = 2, T = 5, H = 3, hd = 6, pos0 = 4;
    const size_t n = (size_t)B * T * H * hd;
    float *cs = xmalloc(sizeof(float) * (pos0 + T) * hd);
    rope_table(cs, pos0 + T, hd, 10000.0);
    float *dcs = up(cs, (size_t)(pos0 + T) * hd, DT_F32);
    float *x = rand_host(n, 1), *y = xmalloc(n * sizeof(float));
    void *dx = up(x, n, DT_F32);
    op_rope(&dev, DT_F32, dx, dcs, B, T, H, hd, pos0, 0);
    down(y, dx, n, DT_F32);
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int h = 0; h < H; h++)
                for (int i = 0; i < hd / 2; i++) {
                    size_t o = (((size_t)b * T + t) * H + h) * hd + 2 * i;
                    double a = (pos0 + t) * pow(10000.0, -2.0 * i / hd);
                    EXPECT_NEAR(y[o], x[o] * cos(a) - x[o + 1] * sin(a), 1e-5);
                    EXPECT_NEAR(y[o + 1], x[o] * sin(a) + x[o + 1] * cos(a), 1e-5);
                }
    /* backward = rotation by -a: <R x, g> = <x, R^T g> for any g */
    float *g = rand_host(n, 1), *gt = xmalloc(n * sizeof(float));
    void *dg = up(g, n, DT_F32);
    op_rope(&dev, DT_F32, dg, dcs, B, T, H, hd, pos0, 1);
    down(gt, dg, n, DT_F32);
    EXPECT_NEAR(dot(y, g, n), dot(x, gt, n), 1e-5);
    op_rope(&dev, DT_F32, dx, dcs, B, T, H, hd, pos0, 1);
    down(y, dx, n, DT_F32);
    for (size_t i = 0; i < n; i++) EXPECT_NEAR(y[i], x[i], 1e-6);
}

/* ---- attention ---------------------------------------------------------------------- */
typedef struct {
    int B, Tq, Tk, H, KV, hd, q0, k0;
    float *q, *k, *v, *R;
    void *dq, *dk, *dv, *dout;
    float *lse;
} attn_ctx;

static void attn_alloc(attn_ctx *c) {
    size_t nq = (size_t)c->B * c->Tq * c->H * c->hd, nk = (size_t)c->B * c->Tk * c->KV * c->hd;
    c->q = rand_host(nq, 1.5f); c->k = rand_host(nk, 1.5f); c->v = rand_host(nk, 1);
    c->R = rand_host(nq, 1);
    c->dq = up(c->q, nq, DT_F32); c->dk = up(c->k, nk, DT_F32); c->dv = up(c->v, nk, DT_F32);
    c->dout = up(c->q, nq, DT_F32);
    c->lse = dev_alloc(&dev, sizeof(float) * c->B * c->H * c->Tq);
}

static void attn_run(attn_ctx *c) {
    size_t nq = (size_t)c->B * c->Tq * c->H * c->hd, nk = (size_t)c->B * c->Tk * c->KV * c->hd;
    put(c->dq, c->q, nq, DT_F32); put(c->dk, c->k, nk, DT_F32); put(c->dv, c->v, nk, DT_F32);
    op_attn_forward(&dev, DT_F32, c->dq, c->dk, c->dv, c->dout, c->lse, c->B, c->Tq, c->Tk, c->H,
                    c->KV, c->hd, c->q0, c->k0);
}

static double attn_loss(void *p) {
    attn_ctx *c = p;
    size_t nq = (size_t)c->B * c->Tq * c->H * c->hd;
    attn_run(c);
    float *o = xmalloc(nq * sizeof(float));
    down(o, c->dout, nq, DT_F32);
    double l = dot(o, c->R, nq);
    free(o);
    return l;
}

/* Reference attention in double, straight from the definition in ops.h. */
static void attn_reference(const attn_ctx *c, double *out, double *lse) {
    int g = c->H / c->KV;
    for (int b = 0; b < c->B; b++)
        for (int h = 0; h < c->H; h++)
            for (int i = 0; i < c->Tq; i++) {
                double s[512], mx = -INFINITY;
                int n = 0;
                for (int j = 0; j < c->Tk && c->k0 + j <= c->q0 + i; j++, n++) {
                    double d = 0;
                    for (int e = 0; e < c->hd; e++)
                        d += (double)c->q[(((size_t)b * c->Tq + i) * c->H + h) * c->hd + e] *
                             c->k[(((size_t)b * c->Tk + j) * c->KV + h / g) * c->hd + e];
                    s[j] = d / sqrt((double)c->hd);
                    mx = fmax(mx, s[j]);
                }
                double sum = 0;
                for (int j = 0; j < n; j++) sum += exp(s[j] - mx);
                lse[((size_t)b * c->H + h) * c->Tq + i] = n ? mx + log(sum) : -INFINITY;
                for (int e = 0; e < c->hd; e++) {
                    double o = 0;
                    for (int j = 0; j < n; j++)
                        o += exp(s[j] - mx) / sum * c->v[(((size_t)b * c->Tk + j) * c->KV + h / g) * c->hd + e];
                    out[(((size_t)b * c->Tq + i) * c->H + h) * c->hd + e] = o;
                }
            }
}

TEST(model_op_attention_forward_matches_causal_softmax_with_grouped_heads) {
    setup();
    /* whole sequence; then a query block whose keys lie partly in its past;
     * then one whose keys are all in its future (nothing visible); then
     * lengths that cross the CPU backend's blocks of 64 query rows and 128
     * keys, causal and with every key visible */
    int blocks[5][4] = {{70, 70, 0, 0}, {9, 13, 20, 15}, {5, 6, 3, 10}, {200, 200, 0, 0}, {9, 140, 200, 0}};
    for (int s = 0; s < 5; s++) {
        attn_ctx c = {2, blocks[s][0], blocks[s][1], 4, 2, 4, blocks[s][2], blocks[s][3],
                      NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
        attn_alloc(&c);
        attn_run(&c);
        size_t nq = (size_t)c.B * c.Tq * c.H * c.hd, nl = (size_t)c.B * c.H * c.Tq;
        double *want = xmalloc(nq * sizeof(double)), *wl = xmalloc(nl * sizeof(double));
        attn_reference(&c, want, wl);
        float *got = xmalloc(nq * sizeof(float)), *gl = xmalloc(nl * sizeof(float));
        down(got, c.dout, nq, DT_F32);
        dev_to_host(&dev, gl, c.lse, nl * sizeof(float));
        int bad = 0;
        for (size_t i = 0; i < nq; i++)
            if (fabs(got[i] - want[i]) > 1e-5 && bad++ < 5)
                UNIT_FAIL("block %d: out[%zu] = %.7g, expected %.7g", s, i, got[i], want[i]);
        for (size_t i = 0; i < nl; i++) {
            if (isinf(wl[i])) { if (!(isinf(gl[i]) && gl[i] < 0) && bad++ < 5) UNIT_FAIL("block %d: lse[%zu] = %g, expected -inf", s, i, gl[i]); }
            else if (fabs(gl[i] - wl[i]) > 1e-5 && bad++ < 5)
                UNIT_FAIL("block %d: lse[%zu] = %.7g, expected %.7g", s, i, gl[i], wl[i]);
        }
    }
}

TEST(model_op_attention_backward_matches_finite_differences) {
    setup();
    /* 70 query rows cross the CPU backend's 64-row chunks; 4 query heads
     * share 2 kv heads; odd lengths; a query block against a shifted key
     * block (context parallelism's case); 140 keys cross its 128-key blocks */
    int blocks[3][4] = {{70, 70, 0, 0}, {9, 13, 20, 15}, {9, 140, 200, 0}};
    for (int s = 0; s < 3; s++) {
        attn_ctx c = {1, blocks[s][0], blocks[s][1], 4, 2, 4, blocks[s][2], blocks[s][3],
                      NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
        attn_alloc(&c);
        attn_run(&c);
        size_t nq = (size_t)c.B * c.Tq * c.H * c.hd, nk = (size_t)c.B * c.Tk * c.KV * c.hd;
        void *dR = up(c.R, nq, DT_F32);
        float *z = calloc(nq > nk ? nq : nk, sizeof(float));
        void *gq = up(z, nq, DT_F32), *gk = up(z, nk, DT_F32), *gv = up(z, nk, DT_F32);
        op_attn_backward(&dev, DT_F32, c.dq, c.dk, c.dv, c.dout, dR, c.lse, gq, gk, gv, c.B, c.Tq,
                         c.Tk, c.H, c.KV, c.hd, c.q0, c.k0);
        float *hq = xmalloc(nq * 4), *hk = xmalloc(nk * 4), *hv = xmalloc(nk * 4);
        down(hq, gq, nq, DT_F32); down(hk, gk, nk, DT_F32); down(hv, gv, nk, DT_F32);
        fd_check("dq", c.q, nq, hq, attn_loss, &c, 1e-2, 2e-3, 64);
        fd_check("dk", c.k, nk, hk, attn_loss, &c, 1e-2, 2e-3, 64);
        fd_check("dv", c.v, nk, hv, attn_loss, &c, 1e-2, 2e-3, 64);
    }
}

TEST(model_op_attention_blocks_merged_online_equal_whole_attention) {
    setup();
    /* Keys split into [0, 7) and [7, 16); queries [0, 16) at positions 0..15. */
    const int B = 1, T = 16, H = 2, KV = 1, hd = 4, split = 7;
    attn_ctx whole = {B, T, T, H, KV, hd, 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    attn_alloc(&whole);
    attn_run(&whole);
    size_t nq = (size_t)B * T * H * hd, nl = (size_t)B * H * T;
    size_t kv_row = (size_t)KV * hd;
    /* the two key blocks as their own buffers */
    attn_ctx b1 = whole, b2 = whole;
    b1.Tk = split; b2.Tk = T - split; b2.k0 = split;
    b2.k = whole.k + split * kv_row; b2.v = whole.v + split * kv_row;
    b1.dk = up(whole.k, split * kv_row, DT_F32); b1.dv = up(whole.v, split * kv_row, DT_F32);
    b2.dk = up(b2.k, (T - split) * kv_row, DT_F32); b2.dv = up(b2.v, (T - split) * kv_row, DT_F32);
    b1.dout = up(whole.q, nq, DT_F32); b2.dout = up(whole.q, nq, DT_F32);
    b1.lse = dev_alloc(&dev, nl * 4); b2.lse = dev_alloc(&dev, nl * 4);
    attn_run(&b1);
    attn_run(&b2);
    op_attn_merge(&dev, DT_F32, b1.dout, b1.lse, b2.dout, b2.lse, B, T, H, hd);
    float *o = xmalloc(nq * 4), *ow = xmalloc(nq * 4), *l = xmalloc(nl * 4), *lw = xmalloc(nl * 4);
    down(o, b1.dout, nq, DT_F32); down(ow, whole.dout, nq, DT_F32);
    dev_to_host(&dev, l, b1.lse, nl * 4); dev_to_host(&dev, lw, whole.lse, nl * 4);
    for (size_t i = 0; i < nq; i++) EXPECT_NEAR(o[i], ow[i], 1e-5);
    for (size_t i = 0; i < nl; i++) EXPECT_NEAR(l[i], lw[i], 1e-5);
    /* backward per block, from the final out and lse, sums to the whole's */
    void *dR = up(whole.R, nq, DT_F32);
    size_t nk = (size_t)T * kv_row;
    float *z = calloc(nq + nk, sizeof(float));
    void *gq = up(z, nq, DT_F32), *gk = up(z, nk, DT_F32), *gv = up(z, nk, DT_F32);
    op_attn_backward(&dev, DT_F32, whole.dq, whole.dk, whole.dv, whole.dout, dR, whole.lse, gq, gk, gv,
                     B, T, T, H, KV, hd, 0, 0);
    void *bq = up(z, nq, DT_F32), *bk = up(z, nk, DT_F32), *bv = up(z, nk, DT_F32);
    op_attn_backward(&dev, DT_F32, whole.dq, b1.dk, b1.dv, whole.dout, dR, whole.lse, bq, bk, bv,
                     B, T, split, H, KV, hd, 0, 0);
    op_attn_backward(&dev, DT_F32, whole.dq, b2.dk, b2.dv, whole.dout, dR, whole.lse, bq,
                     (float *)bk + split * kv_row, (float *)bv + split * kv_row,
                     B, T, T - split, H, KV, hd, 0, split);
    float *x1 = xmalloc((nq + nk) * 4), *x2 = xmalloc((nq + nk) * 4);
    void *pairs[3][2] = {{gq, bq}, {gk, bk}, {gv, bv}};
    const char *names[3] = {"dq", "dk", "dv"};
    for (int p = 0; p < 3; p++) {
        size_t n = p ? nk : nq;
        down(x1, pairs[p][0], n, DT_F32); down(x2, pairs[p][1], n, DT_F32);
        for (size_t i = 0; i < n; i++)
            if (fabs(x1[i] - x2[i]) > 1e-5 * fmax(1, fabs(x1[i]))) {
                UNIT_FAIL("%s[%zu]: blockwise %.7g, whole %.7g", names[p], i, x2[i], x1[i]);
                break;
            }
    }
}

/* ---- SwiGLU ----------------------------------------------------------------------- */
typedef struct { float *a, *b, *R; size_t n; void *da, *db, *dout; } glu_ctx;
static double glu_loss(void *p) {
    glu_ctx *c = p;
    put(c->da, c->a, c->n, DT_F32); put(c->db, c->b, c->n, DT_F32);
    op_swiglu_forward(&dev, DT_F32, c->da, c->db, c->dout, c->n);
    float *o = xmalloc(c->n * 4);
    down(o, c->dout, c->n, DT_F32);
    double l = dot(o, c->R, c->n);
    free(o);
    return l;
}

TEST(model_op_swiglu_matches_definition_and_finite_differences) {
    setup();
    const size_t n = 37;
    glu_ctx c = {rand_host(n, 4), rand_host(n, 2), rand_host(n, 1), n, NULL, NULL, NULL};
    c.da = up(c.a, n, DT_F32); c.db = up(c.b, n, DT_F32); c.dout = up(c.a, n, DT_F32);
    glu_loss(&c);
    float *o = xmalloc(n * 4);
    down(o, c.dout, n, DT_F32);
    for (size_t i = 0; i < n; i++) EXPECT_NEAR(o[i], c.a[i] / (1 + exp(-c.a[i])) * c.b[i], 1e-5);
    void *dR = up(c.R, n, DT_F32), *ga = up(c.a, n, DT_F32), *gb = up(c.b, n, DT_F32);
    op_swiglu_backward(&dev, DT_F32, c.da, c.db, dR, ga, gb, n);
    float *ha = xmalloc(n * 4), *hb = xmalloc(n * 4);
    down(ha, ga, n, DT_F32); down(hb, gb, n, DT_F32);
    fd_check("da", c.a, n, ha, glu_loss, &c, 1e-2, 2e-3, 1000);
    fd_check("db", c.b, n, hb, glu_loss, &c, 1e-2, 2e-3, 1000);
    /* in place: da over a, db over b */
    put(c.da, c.a, n, DT_F32); put(c.db, c.b, n, DT_F32);
    op_swiglu_backward(&dev, DT_F32, c.da, c.db, dR, c.da, c.db, n);
    float *ia = xmalloc(n * 4), *ib = xmalloc(n * 4);
    down(ia, c.da, n, DT_F32); down(ib, c.db, n, DT_F32);
    for (size_t i = 0; i < n; i++) { EXPECT(ia[i] == ha[i]); EXPECT(ib[i] == hb[i]); }
}

/* ---- cross-entropy ---------------------------------------------------------------------- */
typedef struct { float *x; int N, V; int *tg, *tg_host; void *dx; float *picked, *lse; } xent_ctx;
/* The summed loss over the rows whose target is not ignored: lse - picked. */
static double xent_loss(void *p) {
    xent_ctx *c = p;
    put(c->dx, c->x, (size_t)c->N * c->V, DT_F32);
    op_xent_forward(&dev, DT_F32, c->dx, c->tg, c->picked, c->lse, c->N, c->V, 0);
    float *pk = xmalloc(c->N * 4), *l = xmalloc(c->N * 4);
    dev_to_host(&dev, pk, c->picked, c->N * 4);
    dev_to_host(&dev, l, c->lse, c->N * 4);
    double s = 0;
    for (int i = 0; i < c->N; i++)
        if (c->tg_host[i] >= 0) s += (double)l[i] - pk[i];
    free(pk);
    free(l);
    return s;
}

TEST(model_op_cross_entropy_matches_log_softmax_and_finite_differences) {
    setup();
    const int N = 4, V = 11;
    int tg[4] = {3, 0, -1, 10};   /* -1: ignored */
    xent_ctx c = {rand_host((size_t)N * V, 3), N, V, up_int(tg, N), tg, NULL, NULL, NULL};
    c.dx = up(c.x, (size_t)N * V, DT_F32);
    c.picked = dev_alloc(&dev, N * 4); c.lse = dev_alloc(&dev, N * 4);
    xent_loss(&c);
    float l[4], pk[4];
    dev_to_host(&dev, l, c.lse, sizeof l);
    dev_to_host(&dev, pk, c.picked, sizeof pk);
    for (int i = 0; i < N; i++) {
        double s = 0;
        for (int v = 0; v < V; v++) s += exp(c.x[i * V + v]);
        EXPECT_NEAR(l[i], log(s), 1e-5);
        EXPECT(pk[i] == (tg[i] < 0 ? 0.0f : c.x[i * V + tg[i]]));
    }
    const float scale = 0.5f;
    void *g = up(c.x, (size_t)N * V, DT_F32);
    op_xent_backward(&dev, DT_F32, c.dx, c.tg, c.lse, g, scale, N, V, 0);
    float *h = xmalloc((size_t)N * V * 4);
    down(h, g, (size_t)N * V, DT_F32);
    for (int i = 0; i < N * V; i++) h[i] /= scale;
    fd_check("dlogits", c.x, (size_t)N * V, h, xent_loss, &c, 1e-2, 2e-3, 1000);
    for (int v = 0; v < V; v++) EXPECT(h[2 * V + v] == 0.0f);
    /* in place over the logits */
    xent_loss(&c);
    op_xent_backward(&dev, DT_F32, c.dx, c.tg, c.lse, c.dx, scale, N, V, 0);
    float *h2 = xmalloc((size_t)N * V * 4);
    down(h2, c.dx, (size_t)N * V, DT_F32);
    for (int i = 0; i < N * V; i++) EXPECT(h2[i] == h[i] * scale);
}

/* Vocabulary-parallel cross-entropy: the logits' columns cut into shards
 * [0, 4), [4, 11); each shard's lse and picked logit, combined (lse_combine,
 * sum), give the full loss, and each shard's backward with the combined lse
 * gives its columns of the full dlogits. */
TEST(model_op_cross_entropy_over_vocab_shards_equals_whole) {
    setup();
    const int N = 4, V = 11, cut = 4;
    int tg[4] = {3, 7, -1, 10};
    float *x = rand_host((size_t)N * V, 3);
    int *dtg = up_int(tg, N);
    float *lse_full = dev_alloc(&dev, N * 4), *pk_full = dev_alloc(&dev, N * 4);
    void *dx = up(x, (size_t)N * V, DT_F32);
    op_xent_forward(&dev, DT_F32, dx, dtg, pk_full, lse_full, N, V, 0);
    float *parts = dev_alloc(&dev, 2 * N * 4), *pks = dev_alloc(&dev, 2 * N * 4);
    void *sh[2];
    int v0[2] = {0, cut}, vs[2] = {cut, V - cut};
    for (int p = 0; p < 2; p++) {
        float *hx = xmalloc((size_t)N * vs[p] * 4);
        for (int n = 0; n < N; n++)
            for (int v = 0; v < vs[p]; v++) hx[n * vs[p] + v] = x[n * V + v0[p] + v];
        sh[p] = up(hx, (size_t)N * vs[p], DT_F32);
        op_xent_forward(&dev, DT_F32, sh[p], dtg, pks + p * N, parts + p * N, N, vs[p], v0[p]);
        free(hx);
    }
    float *lse = dev_alloc(&dev, N * 4);
    op_lse_combine(&dev, parts, lse, 2, N);
    float a[4], b[4], pa[8], pf[4];
    dev_to_host(&dev, a, lse, sizeof a);
    dev_to_host(&dev, b, lse_full, sizeof b);
    dev_to_host(&dev, pa, pks, sizeof pa);
    dev_to_host(&dev, pf, pk_full, sizeof pf);
    for (int n = 0; n < N; n++) {
        EXPECT_NEAR(a[n], b[n], 2e-6);
        EXPECT(pa[n] + pa[N + n] == pf[n]);   /* one shard holds the target, the other adds 0 */
    }
    float *g = xmalloc((size_t)N * V * 4);
    op_xent_backward(&dev, DT_F32, dx, dtg, lse_full, dx, 1.0f, N, V, 0);
    down(g, dx, (size_t)N * V, DT_F32);
    for (int p = 0; p < 2; p++) {
        op_xent_backward(&dev, DT_F32, sh[p], dtg, lse, sh[p], 1.0f, N, vs[p], v0[p]);
        float *hs = xmalloc((size_t)N * vs[p] * 4);
        down(hs, sh[p], (size_t)N * vs[p], DT_F32);
        for (int n = 0; n < N; n++)
            for (int v = 0; v < vs[p]; v++) EXPECT_NEAR(hs[n * vs[p] + v], g[n * V + v0[p] + v], 1e-6);
        free(hs);
    }
}

/* ---- embedding, element-wise ---------------------------------------------------------- */
TEST(model_op_embedding_gathers_rows_and_backward_sums_repeated_tokens) {
    setup();
    const int V = 5, C = 3, N = 4;
    int tok[4] = {2, 0, 2, 4};
    float *tab = rand_host((size_t)V * C, 1), *dout = rand_host((size_t)N * C, 1);
    void *dt = up(tab, (size_t)V * C, DT_F32), *dO = up(dout, (size_t)N * C, DT_F32);
    int *dtok = up_int(tok, N);
    void *out = dev_alloc(&dev, (size_t)N * C * 4);
    op_embedding_forward(&dev, DT_F32, dtok, dt, out, N, C, 0, V);
    float o[12];
    down(o, out, (size_t)N * C, DT_F32);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < C; k++) EXPECT(o[n * C + k] == tab[tok[n] * C + k]);
    float *g = dev_alloc(&dev, (size_t)V * C * 4), hg[15];
    op_embedding_backward(&dev, DT_F32, dtok, dO, g, N, C, 0, V);
    op_embedding_backward(&dev, DT_F32, dtok, dO, g, N, C, 0, V);   /* accumulates */
    dev_to_host(&dev, hg, g, sizeof hg);
    for (int k = 0; k < C; k++) {
        EXPECT_NEAR(hg[2 * C + k], 2 * (dout[0 * C + k] + dout[2 * C + k]), 1e-6);
        EXPECT_NEAR(hg[0 * C + k], 2 * dout[1 * C + k], 1e-6);
        EXPECT_NEAR(hg[4 * C + k], 2 * dout[3 * C + k], 1e-6);
        EXPECT(hg[1 * C + k] == 0.0f && hg[3 * C + k] == 0.0f);
    }
}

/* Vocabulary-parallel embedding: shards [0, 2) and [2, 5) of the table each
 * give their tokens' rows and zeros elsewhere, so their sum is the whole
 * lookup; backward fills only the shard's rows. */
TEST(model_op_embedding_over_vocab_shards_sums_to_whole) {
    setup();
    const int V = 5, C = 3, N = 4, cut = 2;
    int tok[4] = {2, 0, 1, 4};
    float *tab = rand_host((size_t)V * C, 1), *dout = rand_host((size_t)N * C, 1);
    int *dtok = up_int(tok, N);
    void *dO = up(dout, (size_t)N * C, DT_F32);
    float o[2][12], g[2][15];
    int v0[2] = {0, cut}, vs[2] = {cut, V - cut};
    for (int p = 0; p < 2; p++) {
        void *dt = up(tab + (size_t)v0[p] * C, (size_t)vs[p] * C, DT_F32);
        void *out = dev_alloc(&dev, (size_t)N * C * 4);
        op_embedding_forward(&dev, DT_F32, dtok, dt, out, N, C, v0[p], vs[p]);
        down(o[p], out, (size_t)N * C, DT_F32);
        float *dg = dev_alloc(&dev, (size_t)vs[p] * C * 4);
        op_embedding_backward(&dev, DT_F32, dtok, dO, dg, N, C, v0[p], vs[p]);
        dev_to_host(&dev, g[p], dg, (size_t)vs[p] * C * 4);
    }
    for (int n = 0; n < N; n++)
        for (int k = 0; k < C; k++) {
            int mine = tok[n] >= cut;
            EXPECT(o[mine][n * C + k] == tab[tok[n] * C + k] && o[!mine][n * C + k] == 0.0f);
        }
    for (int n = 0; n < N; n++)
        for (int k = 0; k < C; k++) {
            int p = tok[n] >= cut;
            EXPECT(g[p][(tok[n] - v0[p]) * C + k] == dout[n * C + k]);   /* tokens distinct */
        }
}

TEST(model_op_add_cast_scale_sumsq_are_exact) {
    setup();
    const size_t n = 19;
    float a[19], b[19], got[19];
    for (size_t i = 0; i < n; i++) { a[i] = (float)i - 9.0f; b[i] = 0.5f * (float)i; }
    void *da = up(a, n, DT_F32), *db = up(b, n, DT_F32);
    op_add(&dev, DT_F32, da, db, da, n);
    down(got, da, n, DT_F32);
    for (size_t i = 0; i < n; i++) EXPECT(got[i] == a[i] + b[i]);
    op_scale(&dev, DT_F32, da, 0.25f, n);
    down(got, da, n, DT_F32);
    for (size_t i = 0; i < n; i++) EXPECT(got[i] == (a[i] + b[i]) * 0.25f);
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += (double)got[i] * got[i];
    EXPECT_NEAR(op_sumsq(&dev, DT_F32, da, n), ss, 1e-12);
    /* fp32 -> bf16 rounds to nearest even, as f32_to_bf16 */
    float x[4] = {1.0f + 1.0f / 256, 1.0f + 3.0f / 256, -2.5f, 3.1415926f};
    void *dx = up(x, 4, DT_F32), *dh = dev_alloc(&dev, 8), *back = dev_alloc(&dev, 16);
    op_cast(&dev, dx, DT_F32, dh, DT_BF16, 4);
    bf16_t h[4];
    dev_to_host(&dev, h, dh, 8);
    for (int i = 0; i < 4; i++) EXPECT_EQ_INT(h[i], f32_to_bf16(x[i]));
    op_cast(&dev, dh, DT_BF16, back, DT_F32, 4);
    float fb[4];
    dev_to_host(&dev, fb, back, 16);
    for (int i = 0; i < 4; i++) EXPECT(fb[i] == bf16_to_f32(h[i]));
}

/* ---- AdamW, schedule, clipping ---------------------------------------------------------- */
TEST(model_adamw_step_matches_hand_computed_values) {
    setup();
    /* Two steps on one element, by hand (beta1 0.9, beta2 0.95, eps 1e-8,
     * lr 0.1, wd 0.1, grad_scale 0.5):
     * step 1: g = 0.5*2 = 1; m = 0.1; v = 0.05; mhat = 1, vhat = 1;
     *   p = 1 * (1 - 0.01) - 0.1 * 1 / (1 + 1e-8) = 0.89 (+1e-9)
     * step 2: g = 0.5*(-4) = -2; m = 0.09 - 0.2 = -0.11; v = 0.0475 + 0.2 = 0.2475;
     *   mhat = -0.11 / 0.19; vhat = 0.2475 / 0.0975;
     *   p = 0.89 * 0.99 + 0.1 * (0.11/0.19) / sqrt(0.2475/0.0975) */
    float p0 = 1.0f, z = 0.0f;
    float *master = up(&p0, 1, DT_F32), *m = up(&z, 1, DT_F32), *v = up(&z, 1, DT_F32);
    float g1 = 2.0f, g2 = -4.0f;
    float *dg = up(&g1, 1, DT_F32);
    void *work = dev_alloc(&dev, 2);
    op_adamw(&dev, master, m, v, dg, work, DT_BF16, 1, 0.1f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 1);
    float got, gm, gv;
    dev_to_host(&dev, &got, master, 4);
    EXPECT_NEAR(got, 0.89, 1e-6);
    put(dg, &g2, 1, DT_F32);
    op_adamw(&dev, master, m, v, dg, work, DT_BF16, 1, 0.1f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 2);
    dev_to_host(&dev, &got, master, 4);
    dev_to_host(&dev, &gm, m, 4);
    dev_to_host(&dev, &gv, v, 4);
    double want = 0.89 * 0.99 + 0.1 * (0.11 / 0.19) / sqrt(0.2475 / 0.0975);
    EXPECT_NEAR(gm, -0.11, 1e-6);
    EXPECT_NEAR(gv, 0.2475, 1e-6);
    EXPECT_NEAR(got, want, 1e-6);
    bf16_t wb;
    dev_to_host(&dev, &wb, work, 2);
    EXPECT_EQ_INT(wb, f32_to_bf16(got));   /* the working copy is the rounded master */
}

TEST(model_optimizer_skips_weight_decay_on_norm_gains_also_in_a_shard) {
    setup();
    model_config_t c = {11, 8, 2, 2, 1, 0, 12, 5};
    model_shard_t full = model_shard_full(&c);
    size_t n = model_shard_size(&c, &full);
    float *ones = xmalloc(n * 4), *zero = calloc(n, 4);
    for (size_t i = 0; i < n; i++) ones[i] = 1.0f;
    float *dz = up(zero, n, DT_F32);
    /* zero gradient: only weight decay moves a parameter, to 1 - lr*wd. One
     * piece (the whole array), then two pieces cut across tensors with a gap
     * of padding between them (a ZeRO shard). */
    for (int sharded = 0; sharded < 2; sharded++) {
        optim_piece_t pc[2] = {{0, 0, n, dz, NULL}, {0}};
        int np = 1;
        size_t len = n;
        if (sharded) {
            pc[0] = (optim_piece_t){0, 3, 40, dz + 3, NULL};
            pc[1] = (optim_piece_t){50, 100, n - 105, dz + 100, NULL};
            np = 2;
            len = 50 + n - 105;
        }
        optim_t o;
        optim_init(&o, pc, np, len, ones, &c, &full, &dev);
        optim_step(&o, DT_F32, 0.5f, 1.0f, 1);
        float *got = xmalloc(len * 4);
        dev_to_host(&dev, got, o.master, len * 4);
        model_tensor_t ts[32];
        model_tensors(&c, &full, ts, 32);
        int bad = 0;
        for (int q = 0; q < np; q++)
            for (size_t e = 0; e < pc[q].count; e++) {
                size_t i = pc[q].flat + e;
                int k = 0;
                while (!(i >= ts[k].offset && i < ts[k].offset + ts[k].rows * ts[k].cols)) k++;
                float want = ts[k].is_norm ? 1.0f : 1.0f - 0.5f * OPTIM_WEIGHT_DECAY;
                if (fabsf(got[pc[q].off + e] - want) > 1e-6f && bad++ < 3)
                    UNIT_FAIL("pieces %d: %s element %zu = %g after a zero-gradient step, expected %g",
                              np, ts[k].name, i - ts[k].offset, got[pc[q].off + e], want);
            }
        optim_free(&o);
        free(got);
    }
}

TEST(model_lr_warms_up_linearly_then_follows_cosine_to_min) {
    EXPECT_NEAR(lr_at(1, 10, 100, 1.0f, 0.1f), 0.1, 1e-7);
    EXPECT_NEAR(lr_at(5, 10, 100, 1.0f, 0.1f), 0.5, 1e-7);
    EXPECT_NEAR(lr_at(10, 10, 100, 1.0f, 0.1f), 1.0, 1e-7);
    EXPECT_NEAR(lr_at(55, 10, 100, 1.0f, 0.1f), 0.55, 1e-6);   /* half way: the mean */
    EXPECT_NEAR(lr_at(100, 10, 100, 1.0f, 0.1f), 0.1, 1e-7);
    EXPECT_NEAR(lr_at(150, 10, 100, 1.0f, 0.1f), 0.1, 1e-7);
    double norm;
    EXPECT_NEAR(clip_factor(16.0, 1.0f, &norm), 0.25, 1e-6);
    EXPECT_NEAR(norm, 4.0, 1e-12);
    EXPECT_NEAR(clip_factor(0.25, 1.0f, NULL), 1.0, 0);
    EXPECT_NEAR(clip_factor(100.0, 0.0f, NULL), 1.0, 0);
}


/* ---- the model -------------------------------------------------------------------------------- */
static const model_config_t tiny = {11, 8, 2, 2, 1, 0, 12, 5};   /* vocab dim layers heads kv hd ffn seq */

static void tiny_batch(const model_config_t *c, int B, int *tok, int *tg, uint64_t seed) {
    uint64_t s = seed;
    for (int i = 0; i < B * c->seq; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        tok[i] = (int)((s >> 33) % c->vocab);
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        tg[i] = (int)((s >> 33) % c->vocab);
    }
}

/* A whole model on the device under test, with params p (host, full). */
static void whole(model_t *m, const model_config_t *c, int B, dtype_t t, const float *p) {
    model_shard_t s = model_shard_full(c);
    model_init(m, c, &s, B, t, &dev, 1);
    if (p) model_load_params(m, p);
}

static double fwd(model_t *m, model_acts_t *a, const int *tok, const int *tg) {
    model_set_batch(m, a, tok, tg);
    return model_forward(m, a);
}

static float *grads_of(const model_t *m) {
    float *g = xmalloc(m->size * 4);
    dev_to_host(&dev, g, m->grads, m->size * 4);
    return g;
}

TEST(model_layout_lists_every_tensor_once_in_documented_order) {
    model_config_t c = {13, 12, 3, 6, 2, 0, 20, 4};
    model_shard_t s = model_shard_full(&c);
    model_tensor_t ts[64];
    int nt = model_tensors(&c, &s, ts, 64);
    EXPECT_EQ_INT(nt, 1 + 9 * 3 + 2);
    size_t at = 0;
    for (int k = 0; k < nt; k++) {
        if (ts[k].offset != at) UNIT_FAIL("%s starts at %zu, expected %zu (gap or overlap)", ts[k].name, ts[k].offset, at);
        if (ts[k].full_offset != ts[k].offset) UNIT_FAIL("%s: the whole model is its own full layout", ts[k].name);
        at = ts[k].offset + ts[k].rows * ts[k].cols;
    }
    EXPECT_EQ_INT(at, model_shard_size(&c, &s));
    EXPECT_EQ_INT(at, model_param_count(&c));
    /* hd = 2, kv dims = 4: per layer 12 + 12*12 + 2*12*4 + 12*12 + 12 + 3*12*20 */
    EXPECT_EQ_INT(ts[11].offset - ts[2].offset, 12 + 144 + 96 + 144 + 12 + 720);
    EXPECT(!strcmp(ts[0].name, "tok_embedding") && !strcmp(ts[2].name, "layers.0.wq"));
    EXPECT(!strcmp(ts[9].name, "layers.0.w2") && !strcmp(ts[nt - 1].name, "lm_head"));
    EXPECT_EQ_INT(model_default_ffn(512), 1408);
    EXPECT_EQ_INT(model_default_ffn(256), 704);
    /* a middle stage: no embedding, no head, offsets from 0 */
    model_shard_t mid = s;
    mid.first = 1;
    mid.per_chunk = 1;
    nt = model_tensors(&c, &mid, ts, 64);
    EXPECT_EQ_INT(nt, 9);
    EXPECT(!strcmp(ts[0].name, "layers.1.attn_norm") && ts[0].offset == 0);
    /* an explicit head dim: q is (dim, heads * hd), not (dim, dim) */
    model_config_t h = c;
    h.head_dim = 4;
    model_tensors(&h, &s, ts, 64);
    EXPECT(ts[2].rows == 12 && ts[2].cols == 24 && ts[5].rows == 24 && ts[5].cols == 12);
}

TEST(model_init_is_deterministic_with_documented_scales) {
    model_config_t c = {64, 32, 4, 4, 2, 0, 96, 8};
    size_t n = model_param_count(&c);
    float *a = xmalloc(n * 4), *b = xmalloc(n * 4);
    model_init_params(a, &c, 42);
    model_init_params(b, &c, 42);
    EXPECT(memcmp(a, b, n * 4) == 0);
    model_init_params(b, &c, 43);
    EXPECT(memcmp(a, b, n * 4) != 0);
    model_shard_t s = model_shard_full(&c);
    model_tensor_t ts[64];
    int nt = model_tensors(&c, &s, ts, 64);
    double all = 0, nall = 0, out = 0, nout = 0;
    for (int k = 0; k < nt; k++) {
        size_t m = ts[k].rows * ts[k].cols;
        const char *base = strrchr(ts[k].name, '.');
        base = base ? base + 1 : ts[k].name;
        int is_out = !strcmp(base, "wo") || !strcmp(base, "w2");
        for (size_t e = 0; e < m; e++) {
            double x = a[ts[k].offset + e];
            if (ts[k].is_norm) { if (x != 1.0) { UNIT_FAIL("%s[%zu] = %g, norms start at 1", ts[k].name, e, x); break; } }
            else if (is_out) { out += x * x; nout++; }
            else { all += x * x; nall++; }
        }
    }
    EXPECT_NEAR(sqrt(all / nall), 0.02, 0.02 * 0.02);
    EXPECT_NEAR(sqrt(out / nout), 0.02 / sqrt(2.0 * c.layers), 0.002);
}

/* Every shard of a model, its blocks placed back, rebuilds the full array;
 * slicing the result gives each shard's array again. */
TEST(model_shard_slice_then_place_is_the_identity) {
    model_config_t c = {16, 16, 4, 4, 2, 0, 32, 8};
    size_t N = model_param_count(&c);
    float *full = xmalloc(N * 4), *back = xmalloc(N * 4);
    for (size_t i = 0; i < N; i++) full[i] = (float)i;
    const int tps[] = {1, 2, 4};
    for (int ti = 0; ti < 3; ti++)
        for (int P = 1; P <= 4; P *= 2) {
            memset(back, 0, N * 4);
            for (int st = 0; st < P; st++)
                for (int r = 0; r < tps[ti]; r++) {
                    model_shard_t s = model_shard_full(&c);
                    model_shard_stage(&s, &c, P, st, P == 2 ? 2 : 1);   /* P 2: interleaved */
                    s.tp = tps[ti];
                    s.tp_rank = r;
                    size_t n = model_shard_size(&c, &s);
                    float *part = xmalloc(n * 4), *again = xmalloc(n * 4);
                    model_shard_slice(&c, &s, 0, n, full, part);
                    model_shard_place(&c, &s, 0, n, part, back, 1);
                    model_shard_slice(&c, &s, 0, n, back, again);
                    EXPECT(memcmp(part, again, n * 4) == 0);
                    free(part);
                    free(again);
                }
            size_t bad = 0;
            for (size_t i = 0; i < N; i++) bad += back[i] != full[i];
            if (bad) UNIT_FAIL("tp %d, %d stages: %zu elements not rebuilt", tps[ti], P, bad);
        }
}

/* The whole model's loss as a function of the host parameter array. */
typedef struct { model_t *m; model_acts_t *a; float *p; int *tok, *tg; } mloss_ctx;
static double model_loss(void *p) {
    mloss_ctx *c = p;
    model_load_params(c->m, c->p);
    return fwd(c->m, c->a, c->tok, c->tg);
}

TEST(model_gradient_matches_finite_differences_in_every_tensor) {
    setup();
    const int B = 2;
    model_t m;
    whole(&m, &tiny, B, DT_F32, NULL);
    model_acts_t a;
    model_acts_init(&m, &a, 0, B, (model_recompute_t){0});
    size_t n = m.size;
    float *p = xmalloc(n * 4);
    model_init_params(p, &tiny, 7);
    /* Larger weights than the 0.02 init, so every path carries a gradient
     * well above fp32 noise; norm gains away from 1 too. */
    double sc = getenv("FDS") ? atof(getenv("FDS")) : 10, hh = getenv("FDH") ? atof(getenv("FDH")) : 3e-3;
    for (size_t i = 0; i < n; i++) p[i] = p[i] == 1.0f ? 1.0f + frand() * 0.3f : p[i] * (float)sc;
    int tok[10], tg[10];
    tiny_batch(&tiny, B, tok, tg, 3);
    tg[4] = -1;   /* an ignored target */
    mloss_ctx c = {&m, &a, p, tok, tg};
    model_zero_grads(&m);
    model_loss(&c);
    model_backward(&m, &a, 1.0f, NULL);
    float *g = grads_of(&m);
    model_tensor_t ts[32];
    int nt = model_tensors(&m.cfg, &m.shard, ts, 32);
    for (int k = 0; k < nt; k++) {
        size_t len = ts[k].rows * ts[k].cols;
        double gmax = 0;
        for (size_t e = 0; e < len; e++) gmax = fmax(gmax, fabs(g[ts[k].offset + e]));
        if (gmax < 1e-3) UNIT_FAIL("%s: gradient is (near) zero everywhere (max %g): test has no power", ts[k].name, gmax);
        fd_check(ts[k].name, p + ts[k].offset, len, g + ts[k].offset, model_loss, &c, hh, 2e-3, 24);
    }
    model_acts_free(&m, &a);
    model_free(&m);
}

/* A stage's full-model gradient slices, for comparison. */
static void expect_slices_equal(const model_config_t *c, const model_shard_t *s, const float *g,
                                const float *gfull, const char *what) {
    size_t n = model_shard_size(c, s), bad = 0;
    float *want = xmalloc(n * 4);
    model_shard_slice(c, s, 0, n, gfull, want);
    for (size_t i = 0; i < n; i++) bad += g[i] != want[i];
    if (bad) UNIT_FAIL("%s: %zu of %zu gradients differ from the full model's", what, bad, n);
    free(want);
}

/* Forward + backward of the full model and of pipeline stages passing the
 * activations and gradients by hand: [0, 1) + [1, 3), and the interleaved
 * cut of 4 layers over 2 stages x 2 chunks (stage 0: layers 0 and 2, stage
 * 1: layers 1 and 3), run chunk by chunk in pipeline order. Bit-identical. */
TEST(model_stages_compose_to_the_full_model) {
    setup();
    for (int inter = 0; inter < 2; inter++) {
        model_config_t c = {17, 16, inter ? 4 : 3, 4, 2, 0, 24, 6};
        const int B = 2;
        size_t n = model_param_count(&c), act = (size_t)B * c.seq * c.dim * 4;
        float *p = xmalloc(n * 4), *buf = xmalloc(act);
        model_init_params(p, &c, 11);
        for (size_t i = 0; i < n; i++) if (p[i] != 1.0f) p[i] *= 10;
        int tok[12], tg[12];
        tiny_batch(&c, B, tok, tg, 5);
        model_t full, st[2];
        model_acts_t af, as[2][2];   /* [stage][chunk] */
        whole(&full, &c, B, DT_F32, p);
        model_acts_init(&full, &af, 0, B, (model_recompute_t){0});
        model_zero_grads(&full);
        double lf = fwd(&full, &af, tok, tg);
        model_backward(&full, &af, 0.1f, NULL);
        float *gf = grads_of(&full);
        int V = inter ? 2 : 1;
        for (int k = 0; k < 2; k++) {
            model_shard_t s = model_shard_full(&c);
            if (inter) model_shard_stage(&s, &c, 2, k, 2);
            else { s.first = k ? 1 : 0; s.per_chunk = k ? 2 : 1; s.chunk_stride = s.per_chunk; }
            model_init(&st[k], &c, &s, B, DT_F32, &dev, 1);
            size_t ns = model_shard_size(&c, &s);
            float *ps = xmalloc(ns * 4);
            model_shard_slice(&c, &s, 0, ns, p, ps);
            model_load_params(&st[k], ps);
            free(ps);
            model_zero_grads(&st[k]);
            for (int v = 0; v < V; v++) model_acts_init(&st[k], &as[k][v], v, B, (model_recompute_t){0});
        }
        /* virtual stages in order: (stage 0, chunk 0), (1, 0), (0, 1), (1, 1) */
        double loss = 0;
        for (int vs = 0; vs < 2 * V; vs++) {
            int k = vs % 2, v = vs / 2;
            model_acts_t *a = &as[k][v];
            model_set_batch(&st[k], a, a->has_embedding ? tok : NULL, a->has_head ? tg : NULL);
            if (vs > 0) dev_from_host(&dev, a->resid[0], buf, act);
            loss = model_forward(&st[k], a);
            dev_to_host(&dev, buf, a->resid[a->n_layers], act);
        }
        EXPECT(loss == lf);
        for (int vs = 2 * V - 1; vs >= 0; vs--) {
            int k = vs % 2, v = vs / 2;
            model_backward(&st[k], &as[k][v], 0.1f, vs == 2 * V - 1 ? NULL : buf);
            if (vs > 0) dev_to_host(&dev, buf, model_grad_input(&st[k]), act);
        }
        for (int k = 0; k < 2; k++) {
            float *g = grads_of(&st[k]);
            expect_slices_equal(&c, &st[k].shard, g, gf, inter ? "interleaved stage" : "stage");
            free(g);
            for (int v = 0; v < V; v++) model_acts_free(&st[k], &as[k][v]);
            model_free(&st[k]);
        }
        model_acts_free(&full, &af);
        model_free(&full);
        free(gf);
        free(p);
        free(buf);
    }
}

/* The unit hooks: before and after every unit, forward in flat order and
 * backward head first, layers down, embedding last; after a unit's
 * backward its gradients are final for the micro-batch. */
typedef struct { int n, unit[64], pass[64], after[64]; float *snap[64]; model_t *m; } hook_log;
static void hook_rec(hook_log *r, int unit, model_pass_t pass, int after) {
    r->unit[r->n] = unit;
    r->pass[r->n] = pass;
    r->after[r->n] = after;
    r->snap[r->n] = NULL;
    if (after && pass == PASS_BACKWARD) {
        size_t cnt = r->m->units[unit].count;
        r->snap[r->n] = xmalloc(cnt * 4);
        dev_to_host(r->m->d, r->snap[r->n], r->m->unit_g[unit], cnt * 4);
    }
    r->n++;
}
static void hook_before(void *ctx, model_t *m, int u, model_pass_t p) { (void)m; hook_rec(ctx, u, p, 0); }
static void hook_after(void *ctx, model_t *m, int u, model_pass_t p) { (void)m; hook_rec(ctx, u, p, 1); }

TEST(model_unit_hooks_run_in_order_and_gradients_are_final_after_each_unit) {
    setup();
    const int B = 2;
    model_t m;
    float *p = xmalloc(model_param_count(&tiny) * 4);
    model_init_params(p, &tiny, 1);
    whole(&m, &tiny, B, DT_F32, p);
    hook_log r = {.n = 0, .m = &m};
    model_add_hook(&m, hook_before, hook_after, &r);
    model_acts_t a;
    model_acts_init(&m, &a, 0, B, (model_recompute_t){0});
    int tok[10], tg[10];
    tiny_batch(&tiny, B, tok, tg, 9);
    model_zero_grads(&m);
    fwd(&m, &a, tok, tg);
    model_backward(&m, &a, 0.1f, NULL);
    int U = m.n_units;
    EXPECT_EQ_INT(U, 1 + tiny.layers + 1);
    EXPECT_EQ_INT(r.n, 4 * U);
    for (int i = 0; i < 2 * U && i < r.n; i++)   /* forward: units 0, 1, ... */
        if (r.unit[i] != i / 2 || r.pass[i] != PASS_FORWARD || r.after[i] != i % 2)
            UNIT_FAIL("forward hook %d: unit %d pass %d after %d", i, r.unit[i], r.pass[i], r.after[i]);
    for (int i = 2 * U; i < 4 * U && i < r.n; i++)   /* backward: units U-1, ..., 0 */
        if (r.unit[i] != U - 1 - (i - 2 * U) / 2 || r.pass[i] != PASS_BACKWARD || r.after[i] != i % 2)
            UNIT_FAIL("backward hook %d: unit %d pass %d after %d", i, r.unit[i], r.pass[i], r.after[i]);
    EXPECT(m.units[0].layer == -1 && m.units[U - 1].layer == tiny.layers);
    float *g = grads_of(&m);
    for (int i = 0; i < r.n; i++)
        if (r.snap[i] && memcmp(r.snap[i], g + m.units[r.unit[i]].offset, m.units[r.unit[i]].count * 4) != 0)
            UNIT_FAIL("unit %d's gradients changed after its backward hook", r.unit[i]);
    model_acts_free(&m, &a);
    model_free(&m);
}

/* Gradient accumulation: micro-batches of 1 and 3 sequences accumulate to
 * the gradient of the 4 together (to rounding: different GEMM shapes), and
 * two micro-batches in flight (forward, forward, backward, backward: what a
 * pipeline does) give exactly the gradients of one after the other: a later
 * forward does not touch an earlier micro-batch's activations. Backward in
 * the reverse order adds the same terms in another order: equal to rounding. */
TEST(model_micro_batches_accumulate_and_can_be_in_flight_together) {
    setup();
    const int B = 4;
    model_t m;
    float *p = xmalloc(model_param_count(&tiny) * 4);
    model_init_params(p, &tiny, 2);
    whole(&m, &tiny, B, DT_F32, p);
    size_t n = m.size, T = tiny.seq;
    int tok[20], tg[20];
    tiny_batch(&tiny, B, tok, tg, 4);
    const float scale = 1.0f / (B * T);
    model_acts_t all, a1, a3;
    model_acts_init(&m, &all, 0, 4, (model_recompute_t){0});
    model_acts_init(&m, &a1, 0, 1, (model_recompute_t){0});
    model_acts_init(&m, &a3, 0, 3, (model_recompute_t){0});
    model_zero_grads(&m);
    double l = fwd(&m, &all, tok, tg);
    model_backward(&m, &all, scale, NULL);
    float *g1 = grads_of(&m);
    model_zero_grads(&m);
    double la = fwd(&m, &a1, tok, tg);
    model_backward(&m, &a1, scale, NULL);
    double lb = fwd(&m, &a3, tok + T, tg + T);
    model_backward(&m, &a3, scale, NULL);
    float *g2 = grads_of(&m);
    EXPECT_NEAR(la + lb, l, 1e-6);
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) { num += (g1[i] - g2[i]) * (double)(g1[i] - g2[i]); den += (double)g1[i] * g1[i]; }
    if (!(sqrt(num / den) < 1e-5)) UNIT_FAIL("accumulated gradient differs: relative error %g", sqrt(num / den));
    /* in flight: both forwards first */
    for (int reverse = 0; reverse < 2; reverse++) {
        model_zero_grads(&m);
        EXPECT(fwd(&m, &a1, tok, tg) == la);
        EXPECT(fwd(&m, &a3, tok + T, tg + T) == lb);
        model_backward(&m, reverse ? &a3 : &a1, scale, NULL);
        model_backward(&m, reverse ? &a1 : &a3, scale, NULL);
        float *g3 = grads_of(&m);
        size_t bad = 0;
        double worst = 0;
        for (size_t i = 0; i < n; i++) {
            bad += g3[i] != g2[i];
            worst = fmax(worst, fabs(g3[i] - g2[i]) / fmax(fabs(g2[i]), 1e-6));
        }
        if (!reverse && bad) UNIT_FAIL("%zu gradients differ with two micro-batches in flight", bad);
        if (reverse && !(worst < 1e-5)) UNIT_FAIL("backward in reverse order: relative difference %g", worst);
        free(g3);
    }
    model_acts_free(&m, &all);
    model_acts_free(&m, &a1);
    model_acts_free(&m, &a3);
    model_free(&m);
}

/* The backward split in two (B: input gradients, W: weight gradients, Qi et
 * al. 2023) adds the same terms in the same order as the fused backward, so
 * the gradients agree BIT FOR BIT, also with other work in between: two
 * micro-batches in flight, both Bs, then both Ws. On the whole model (W
 * includes the embedding's scatter-add) and on a last stage without the
 * embedding (its input gradient, what B sends back, compared too), fp32 and
 * bf16. What B keeps for W is the formula model_dout_bytes. */
TEST(model_split_backward_equals_fused_bit_for_bit_with_work_in_between) {
    setup();
    const int B = 4;
    model_config_t c = {17, 16, 2, 4, 2, 0, 24, 5};
    size_t np = model_param_count(&c);
    float *p = xmalloc(np * 4);
    model_init_params(p, &c, 21);
    for (size_t i = 0; i < np; i++) if (p[i] != 1.0f) p[i] *= 10;   /* gradients far from zero */
    int tok[20], tg[20];
    tiny_batch(&c, B, tok, tg, 6);
    const size_t T = c.seq, rows = (size_t)B * T;
    float *x0 = rand_host(rows * c.dim, 1.0f);
    for (int t = 0; t < 2; t++)
        for (int stage = 0; stage < 2; stage++) {   /* 0: the whole model; 1: the last of 2 stages */
            dtype_t dt = t ? DT_BF16 : DT_F32;
            model_t m;
            model_shard_t s = model_shard_full(&c);
            if (stage) model_shard_stage(&s, &c, 2, 1, 1);
            model_init(&m, &c, &s, B, dt, &dev, 1);
            float *ps = xmalloc(m.size * 4);
            model_shard_slice(&c, &s, 0, m.size, p, ps);
            model_load_params(&m, ps);
            float *g[2], *gin[2][2];
            for (int split = 0; split < 2; split++) {
                model_acts_t a[2];   /* one sequence and three */
                model_recompute_t keep = {.defer_w = split};
                for (int k = 0; k < 2; k++) {
                    model_acts_init(&m, &a[k], 0, k ? 3 : 1, keep);
                    if (stage) put(a[k].resid[0], x0 + (k ? T * c.dim : 0), a[k].rows * c.dim, dt);
                    model_set_batch(&m, &a[k], tok + (k ? T : 0), tg + (k ? T : 0));
                }
                model_zero_grads(&m);
                for (int k = 0; k < 2; k++) model_forward(&m, &a[k]);
                for (int k = 0; k < 2; k++) {
                    gin[split][k] = xmalloc(a[k].rows * c.dim * 4);
                    if (split) model_backward_input(&m, &a[k], 0.05f, NULL);
                    else model_backward(&m, &a[k], 0.05f, NULL);
                    down(gin[split][k], model_grad_input(&m), a[k].rows * c.dim, dt);
                }
                if (split)
                    for (int k = 0; k < 2; k++) {
                        size_t want = model_dout_bytes(&m, &a[k]);
                        if (a[k].dout_bytes != want)
                            UNIT_FAIL("B keeps %zu bytes for W, the formula says %zu", a[k].dout_bytes, want);
                        model_backward_weights(&m, &a[k]);
                    }
                g[split] = grads_of(&m);
                for (int k = 0; k < 2; k++) model_acts_free(&m, &a[k]);
            }
            size_t bad = 0, first = 0;
            for (size_t i = 0; i < m.size; i++)
                if (memcmp(&g[0][i], &g[1][i], 4) != 0 && bad++ == 0) first = i;
            if (bad)
                UNIT_FAIL("%s, %s: %zu of %zu gradients differ between split and fused backward "
                          "(first: element %zu, %.9g against %.9g)", dtype_name(dt),
                          stage ? "last stage" : "whole model", bad, m.size, first, g[1][first], g[0][first]);
            for (int k = 0; k < 2 && stage; k++)
                if (memcmp(gin[0][k], gin[1][k], (k ? 3 : 1) * T * c.dim * 4) != 0)
                    UNIT_FAIL("%s: the input gradient of micro-batch %d differs between split and fused",
                              dtype_name(dt), k);
            for (int k = 0; k < 2; k++) { free(gin[0][k]); free(gin[1][k]); }
            free(g[0]);
            free(g[1]);
            free(ps);
            model_free(&m);
        }
    free(x0);
    free(p);
}

/* The lecture's worked example of gradient accumulation, on the model: the
 * loss of a step is the MEAN over all B T tokens of the global batch, and
 * gradients are linear, so K micro-batches accumulate to the full batch's
 * gradient exactly when each micro-batch's backward is scaled by
 * 1 / (tokens of the WHOLE batch), which is what the trainers pass
 * (tr->loss_scale). Scaling each by its own tokens (the mean loss of the
 * micro-batch, what a loop calling loss.mean().backward() per micro-batch
 * does) gives K times the gradient with K equal micro-batches; dividing
 * that by K repairs it only when the micro-batches hold equal token counts.
 * Measured here: 2 x 2 sequences and 1 + 3 sequences of a batch of 4. */
static double rel_diff(const float *a, const float *b, double fa, size_t n) {   /* |fa a - b| / |b| */
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fa * a[i] - b[i];
        num += d * d;
        den += (double)b[i] * b[i];
    }
    return sqrt(num / den);
}
static double norm_ratio(const float *a, const float *b, size_t n) {   /* |a| / |b| */
    return sqrt(dot(a, a, n) / dot(b, b, n));
}

TEST(model_gradient_accumulation_needs_the_global_token_scale) {
    setup();
    const int B = 4, T = tiny.seq;
    model_t m;
    float *p = xmalloc(model_param_count(&tiny) * 4);
    model_init_params(p, &tiny, 5);
    whole(&m, &tiny, B, DT_F32, p);
    size_t n = m.size;
    int tok[4 * 5], tg[4 * 5];
    tiny_batch(&tiny, B, tok, tg, 11);
    model_acts_t a[5];   /* a[b]: a micro-batch of b sequences */
    for (int b = 1; b <= B; b++) model_acts_init(&m, &a[b], 0, b, (model_recompute_t){0});

    /* The reference: the whole batch at once, the mean over its B T tokens. */
    model_zero_grads(&m);
    fwd(&m, &a[B], tok, tg);
    model_backward(&m, &a[B], 1.0f / (B * T), NULL);
    float *full = grads_of(&m);

    /* Micro-batches of `sizes` sequences, one after the other into the same
     * gradients; own = 0: each scaled by 1 / (B T), own = 1: by 1 / (its own tokens). */
    float *acc[2][2];
    const int split[2][2] = {{2, 2}, {1, 3}};
    for (int s = 0; s < 2; s++)
        for (int own = 0; own < 2; own++) {
            model_zero_grads(&m);
            for (int k = 0, first = 0; k < 2; first += split[s][k], k++) {
                int b = split[s][k];
                fwd(&m, &a[b], tok + first * T, tg + first * T);
                model_backward(&m, &a[b], own ? 1.0f / (b * T) : 1.0f / (B * T), NULL);
            }
            acc[s][own] = grads_of(&m);
        }
    const int K = 2;
    double e_equal = rel_diff(acc[0][0], full, 1, n), e_unequal = rel_diff(acc[1][0], full, 1, n);
    double r_own = norm_ratio(acc[0][1], full, n), e_own = rel_diff(acc[0][1], full, 1.0 / K, n);
    double e_own_unequal = rel_diff(acc[1][1], full, 1.0 / K, n);
    printf("micro-batches   backward scale          |g| / |g_full|   |g/c - g_full| / |g_full|\n");
    printf("2 + 2 seqs      1 / (B T) (global)      %14.7f   %.2g (c = 1)\n", norm_ratio(acc[0][0], full, n), e_equal);
    printf("1 + 3 seqs      1 / (B T) (global)      %14.7f   %.2g (c = 1)\n", norm_ratio(acc[1][0], full, n), e_unequal);
    printf("2 + 2 seqs      1 / (own tokens)        %14.7f   %.2g (c = K = %d)\n", r_own, e_own, K);
    printf("1 + 3 seqs      1 / (own tokens)        %14.7f   %.2g (c = K = %d)\n",
           norm_ratio(acc[1][1], full, n), e_own_unequal, K);
    if (!(e_equal < 1e-5)) UNIT_FAIL("2 + 2 sequences at the global scale differ from the full batch by %.3g", e_equal);
    if (!(e_unequal < 1e-5)) UNIT_FAIL("1 + 3 sequences at the global scale differ from the full batch by %.3g", e_unequal);
    /* each micro-batch's mean: the sum is K times the full batch's gradient */
    if (!(fabs(r_own - K) < 1e-5 * K)) UNIT_FAIL("own-token scale: |g| / |g_full| = %.7g, expected K = %d", r_own, K);
    if (!(e_own < 1e-5)) UNIT_FAIL("own-token scale divided by K differs from the full batch by %.3g", e_own);
    /* ...and dividing by K is no repair when the micro-batches differ in size:
     * the 1-sequence micro-batch's tokens weigh 3 times the others' */
    if (!(e_own_unequal > 0.01))
        UNIT_FAIL("1 + 3 sequences, own-token scale / K is only %.3g from the full batch: expected a visible error",
                  e_own_unequal);
    for (int s = 0; s < 2; s++) { free(acc[s][0]); free(acc[s][1]); }
    free(full);
    free(p);
    for (int b = 1; b <= B; b++) model_acts_free(&m, &a[b]);
    model_free(&m);
}

/* Activation recomputation changes nothing: every policy gives the very
 * gradients of keeping everything (same kernels, same order), holds fewer
 * bytes of activations, and counts the layers it recomputed. Policies:
 * every C (C = 1 full, 4 not dividing the 6 layers, 6 one segment), the
 * block method (the first K layers alone), selective, and selective beside
 * each of the others. */
TEST(model_recomputation_policies_give_bit_identical_gradients) {
    setup();
    model_config_t c = {17, 16, 6, 4, 2, 0, 24, 6};
    const int B = 2;
    float *p = xmalloc(model_param_count(&c) * 4);
    model_init_params(p, &c, 13);
    int tok[12], tg[12];
    tiny_batch(&c, B, tok, tg, 6);
    model_t m;
    whole(&m, &c, B, DT_F32, p);
    const int every[] = {0, 1, 2, 4, 6, 0, 0, 0, 0, 0, 2, 0};
    const int block[] = {0, 0, 0, 0, 0, 1, 3, 6, 9, 0, 0, 2};
    const int sel[] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1};
    const int np = (int)(sizeof every / sizeof every[0]);
    float *ref = NULL;
    double lref = 0;
    size_t bytes0 = 0, bytes_full = 0;
    for (int k = 0; k < np; k++) {
        model_acts_t a;
        model_acts_init(&m, &a, 0, B, (model_recompute_t){.every = every[k], .block = block[k], .selective = sel[k]});
        model_zero_grads(&m);
        double l = fwd(&m, &a, tok, tg);
        model_backward(&m, &a, 0.05f, NULL);
        float *g = grads_of(&m);
        if (k == 0) { ref = g; lref = l; bytes0 = a.bytes; }
        else {
            size_t bad = 0;
            for (size_t i = 0; i < m.size; i++) bad += g[i] != ref[i];
            if (bad || l != lref) UNIT_FAIL("every %d block %d selective %d: %zu gradients differ, loss %.17g vs %.17g",
                                            every[k], block[k], sel[k], bad, l, lref);
            /* one segment of all 6 layers keeps as much as no recomputation */
            int saves = sel[k] || (every[k] && every[k] < c.layers) || block[k];
            if (saves ? !(a.bytes < bytes0) : a.bytes != bytes0)
                UNIT_FAIL("every %d block %d selective %d: %zu activation bytes against %zu without recomputation",
                          every[k], block[k], sel[k], a.bytes, bytes0);
            int rec = every[k] ? c.layers : block[k] < c.layers ? block[k] : c.layers;
            EXPECT_EQ_INT(a.recomputed, rec);
            EXPECT_EQ_INT(a.recompute_block, rec);
            if (every[k] == 1) bytes_full = a.bytes;
            /* recomputing every layer alone is every 1 by another name */
            if (block[k] >= c.layers && !sel[k] && a.bytes != bytes_full)
                UNIT_FAIL("block %d: %zu activation bytes, every 1 holds %zu", block[k], a.bytes, bytes_full);
            free(g);
        }
        model_acts_free(&m, &a);
    }
    free(ref);
    model_free(&m);
}

/* bf16 against fp32 on the same (bf16-representable) weights and tokens,
 * so only the arithmetic differs. Bound: bf16 keeps 8 significant bits, a
 * relative rounding error of at most 2^-9 = 0.2% per stored value; a block
 * stores ~10 activations in a chain, and independent rounding errors add
 * like a random walk, so activations carry ~1% and the loss, an average of
 * log-sum-exps over tokens in which the errors largely cancel, far less
 * (measured 1.4e-5 here): we require 0.2% of the loss. Gradients go through
 * twice as many roundings and the softmax's differences (measured worst
 * tensor 1.3%): we require 5% relative L2 error per tensor. */
TEST(model_bf16_loss_and_gradients_are_close_to_fp32) {
    setup();
    model_config_t c = {64, 32, 2, 4, 2, 0, 96, 16};
    const int B = 2, N = B * c.seq;
    size_t n = model_param_count(&c);
    float *p = xmalloc(n * 4);
    model_init_params(p, &c, 5);
    for (size_t i = 0; i < n; i++) if (p[i] != 1.0f) p[i] *= 5;
    /* bf16 weights: give fp32 the same (rounded) weights, so only the
     * arithmetic differs */
    for (size_t i = 0; i < n; i++) p[i] = bf16_to_f32(f32_to_bf16(p[i]));
    int tok[32], tg[32];
    tiny_batch(&c, B, tok, tg, 8);
    model_t f, h;
    whole(&f, &c, B, DT_F32, p);
    whole(&h, &c, B, DT_BF16, p);
    model_acts_t af, ah;
    model_acts_init(&f, &af, 0, B, (model_recompute_t){0});
    model_acts_init(&h, &ah, 0, B, (model_recompute_t){0});
    model_zero_grads(&f); model_zero_grads(&h);
    double lf = fwd(&f, &af, tok, tg) / N, lh = fwd(&h, &ah, tok, tg) / N;
    model_backward(&f, &af, 1.0f / N, NULL);
    model_backward(&h, &ah, 1.0f / N, NULL);
    printf("loss fp32 %.6f bf16 %.6f (relative difference %.2e)\n", lf, lh, fabs(lh - lf) / lf);
    EXPECT_NEAR(lh, lf, 2e-3 * lf);
    float *gf = grads_of(&f), *gh = grads_of(&h);
    model_tensor_t ts[32];
    int nt = model_tensors(&f.cfg, &f.shard, ts, 32);
    double worst = 0;
    for (int k = 0; k < nt; k++) {
        double num = 0, den = 0;
        for (size_t e = 0; e < ts[k].rows * ts[k].cols; e++) {
            double a = gf[ts[k].offset + e], b = gh[ts[k].offset + e];
            num += (a - b) * (a - b);
            den += a * a;
        }
        double rel = sqrt(num / den);
        worst = fmax(worst, rel);
        if (!(rel < 0.05)) UNIT_FAIL("%s: bf16 gradient relative L2 error %.3g > 0.05", ts[k].name, rel);
    }
    printf("worst per-tensor gradient relative L2 error %.3g\n", worst);
    model_acts_free(&f, &af);
    model_acts_free(&h, &ah);
    model_free(&f);
    model_free(&h);
}

TEST(model_dump_round_trips_through_the_documented_format) {
    model_config_t c = tiny;
    c.head_dim = 6;   /* explicit, not dim / heads = 4: the header must carry it */
    const int B = 2;
    size_t n = model_param_count(&c);
    float *p = xmalloc(n * 4), *g = xmalloc(n * 4);
    model_init_params(p, &c, 1);
    for (size_t i = 0; i < n; i++) g[i] = (float)i * 0.5f;
    int tok[10], tg[10];
    tiny_batch(&c, B, tok, tg, 2);
    char path[64];
    snprintf(path, sizeof path, "/tmp/unit_model_dump_%d.bin", (int)getpid());
    model_dump_write(path, &c, p, tok, tg, B, 2.5, g);
    /* the header as MODEL.md states it */
    FILE *f = fopen(path, "rb");
    unsigned char hdr[64];
    EXPECT(fread(hdr, 1, 64, f) == 64);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    EXPECT(memcmp(hdr, "LLMDUMP1", 8) == 0);
    int32_t v[9];
    memcpy(v, hdr + 8, sizeof v);
    EXPECT_EQ_INT(v[0], MODEL_DUMP_VERSION);
    EXPECT(v[1] == 11 && v[2] == 8 && v[3] == 2 && v[4] == 2 && v[5] == 1 && v[6] == 12 && v[7] == 5 && v[8] == 2);
    uint32_t hd;
    memcpy(&hd, hdr + 52, 4);
    EXPECT_EQ_INT(hd, 6);
    uint64_t np;
    memcpy(&np, hdr + 56, 8);
    EXPECT_EQ_INT(np, n);
    EXPECT_EQ_INT(size, 64 + 2 * 4 * (long)n + 2 * 4 * B * c.seq + 8);
    model_config_t c2;
    int B2, *tok2, *tg2;
    float *p2, *g2;
    double loss;
    model_dump_read(path, &c2, &B2, &p2, &tok2, &tg2, &loss, &g2);
    EXPECT(memcmp(&c2, &c, sizeof c) == 0 && B2 == B && loss == 2.5);
    EXPECT(memcmp(p2, p, n * 4) == 0 && memcmp(g2, g, n * 4) == 0);
    EXPECT(memcmp(tok2, tok, sizeof tok) == 0 && memcmp(tg2, tg, sizeof tg) == 0);
    remove(path);
}

/* Writes two dumps for tests/model_reference.py (an independent plain-Python
 * implementation of MODEL.md; see tests/model.tests): the initial weights of
 * seed 7, and the same weights scaled up so that attention is far from
 * uniform and RoPE and the grouped heads matter (the reference fails if it
 * pairs RoPE dimensions differently or maps query heads to kv heads
 * differently). */
TEST(model_writes_dumps_for_the_independent_reference) {
    setup();
    /* 4 query heads on 2 kv heads, so the head mapping h / (H/KV) matters;
     * an explicit head dim, so the reference must read it from the header */
    const model_config_t c = {11, 16, 2, 4, 2, 6, 12, 5};   /* head dim 6, not 16 / 4 */
    const int B = 2, N = B * c.seq;
    const char *dir = getenv("MODEL_DUMP_DIR") ? getenv("MODEL_DUMP_DIR") : "build/tests";
    model_t m;
    whole(&m, &c, B, DT_F32, NULL);
    model_acts_t a;
    model_acts_init(&m, &a, 0, B, (model_recompute_t){0});
    size_t n = m.size;
    float *p = xmalloc(n * 4);
    int tok[10], tg[10];
    tiny_batch(&c, B, tok, tg, 21);
    for (int k = 0; k < 2; k++) {
        model_init_params(p, &c, 7);
        if (k == 1)
            for (size_t i = 0; i < n; i++) p[i] = p[i] == 1.0f ? 1.0f + 0.25f * frand() : 15.0f * p[i];
        model_load_params(&m, p);
        model_zero_grads(&m);
        double loss = fwd(&m, &a, tok, tg) / N;
        model_backward(&m, &a, 1.0f / N, NULL);
        float *g = grads_of(&m);
        char path[512];
        snprintf(path, sizeof path, "%s/model_ref_%s.bin", dir, k ? "scaled" : "init");
        model_dump_write(path, &m.cfg, p, tok, tg, B, loss, g);
        printf("wrote %s (loss %.6f)\n", path, loss);
        free(g);
    }
    model_acts_free(&m, &a);
    model_free(&m);
}

/* 6 N_matmul + 12 L H hd T per token, worked by hand for a small model:
 * dim 64, 2 layers, 4 heads (hd 16), 2 kv heads, ffn 192, vocab 100, seq 32.
 * Per layer: q 64*64 + k, v 2 * 64*32 + o 64*64 + 3 * 64*192 = 49152;
 * N_matmul = 2 * 49152 + 64 * 100 = 104704; attention 12 * 2 * 64 * 32.
 * With head dim 24 instead: q, o 64*96 each, k, v 64*48 each. */
TEST(model_flops_per_token_is_6_n_matmul_plus_attention) {
    model_config_t c = {.vocab = 100, .dim = 64, .layers = 2, .heads = 4, .kv_heads = 2, .ffn = 192, .seq = 32};
    EXPECT_NEAR(model_flops_per_token(&c), 6.0 * 104704 + 12.0 * 2 * 64 * 32, 1e-12);
    c.head_dim = 24;
    double layer = 2 * 64 * 96 + 2 * 64 * 48 + 3 * 64 * 192;
    EXPECT_NEAR(model_flops_per_token(&c), 6.0 * (2 * layer + 6400) + 12.0 * 2 * 96 * 32, 1e-12);
    EXPECT_NEAR(model_layer_forward_flops_per_token(&c), 2.0 * layer + 4.0 * 96 * 32, 1e-12);
}
