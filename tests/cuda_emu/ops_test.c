/* ops_test.c: every op of ops.h on the emulated GPU (ops_cuda.cu: its
 * kernels and its cuBLAS calls) against the CPU backend (ops_cpu.c) on the
 * same random inputs, in fp32 and bf16, at several shapes chosen to miss the
 * kernels' block sizes (256 threads, 32-lane warps): a row shorter than a
 * warp, rows longer than a block, odd lengths, one element.
 *
 * ops.h lets the two backends differ only in the order of fp32 sums, so an
 * fp32 result must agree to 1e-5 relative (|gpu - cpu| <= 1e-5 max(1, |cpu|),
 * the suite's fp32 bound) and a bf16 result to one rounding either way
 * (1/128, as tests/unit_model.c allows). Outputs that alias inputs, and
 * gradients that accumulate (+=) into non-zero buffers, are covered too. */
#define UNIT_MAIN
#include "tests/unit.h"

#include <stdint.h>

#include "device.h"
#include "dtype.h"
#include "ops.h"

static device_t cpu, gpu;

static void setup(void) {
    device_init(&cpu, "cpu", 0, 1, 1);
    device_init(&gpu, "cuda", 0, 1, 1);
    if (gpu.kind != DEV_CUDA) die("no emulated GPU");
}

static uint64_t rng = 88172645463325252ull;
static float frand(void) {   /* uniform in [-1, 1) */
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return (float)((double)(rng >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

static double tol_of(dtype_t t) { return t == DT_BF16 ? 1.0 / 128 : 1e-5; }

/* The same values on both devices. */
typedef struct { void *c, *g; size_t n; dtype_t t; } pair_t;

static pair_t pair_from(const float *h, size_t n, dtype_t t) {
    pair_t p = {dev_alloc(&cpu, n * dtype_size(t) + 1), dev_alloc(&gpu, n * dtype_size(t) + 1), n, t};
    void *tmp = xmalloc(n * dtype_size(t) + 1);
    for (size_t i = 0; i < n; i++) dtype_set(tmp, t, i, h[i]);
    dev_from_host(&cpu, p.c, tmp, n * dtype_size(t));
    dev_from_host(&gpu, p.g, tmp, n * dtype_size(t));
    free(tmp);
    return p;
}

static pair_t pair_rand(size_t n, dtype_t t, float scale) {
    float *h = xmalloc(n * sizeof(float) + 1);
    for (size_t i = 0; i < n; i++) h[i] = scale * frand();
    pair_t p = pair_from(h, n, t);
    free(h);
    return p;
}

static pair_t pair_zero(size_t n, dtype_t t) {
    float *h = xcalloc(n + 1, sizeof(float));
    pair_t p = pair_from(h, n, t);
    free(h);
    return p;
}

static void pair_free(pair_t *p) {
    dev_free(&cpu, p->c);
    dev_free(&gpu, p->g);
}

/* Compare the GPU's values with the CPU's; print the worst and the first misses. */
static void compare(const char *what, pair_t p, double tol) {
    size_t bytes = p.n * dtype_size(p.t) + 1;
    void *hc = xmalloc(bytes), *hg = xmalloc(bytes);
    dev_to_host(&cpu, hc, p.c, p.n * dtype_size(p.t));
    dev_to_host(&gpu, hg, p.g, p.n * dtype_size(p.t));
    double worst = 0;
    size_t bad = 0, at = 0;
    for (size_t i = 0; i < p.n; i++) {
        double a = dtype_get(hg, p.t, i), b = dtype_get(hc, p.t, i);
        double e = a == b ? 0 : fabs(a - b) / fmax(1.0, fabs(b));   /* equal infinities too */
        if (!(e <= tol)) {   /* NaN fails */
            if (bad++ < 3)
                UNIT_FAIL("%s [%s]: element %zu of %zu: gpu %.9g, cpu %.9g (rel. error %.3g > %.3g)",
                          what, dtype_name(p.t), i, p.n, a, b, e, tol);
        }
        if (e > worst || e != e) { worst = e; at = i; }
    }
    if (bad > 3) UNIT_FAIL("%s: %zu of %zu elements differ", what, bad, p.n);
    printf("%-34s %-4s %8zu elements, worst rel. error %.2g at %zu (tolerance %.2g)\n", what,
           dtype_name(p.t), p.n, worst, at, tol);
    free(hc);
    free(hg);
}

static int *tokens_pair(int **g, int n, int V, int allow_negative) {
    int *h = xmalloc(n * sizeof(int) + 1);
    for (int i = 0; i < n; i++) {
        h[i] = (int)((frand() + 1.0f) * 0.5f * V) % V;
        if (allow_negative && i % 5 == 3) h[i] = -1;           /* ignored targets */
    }
    int *c = dev_alloc(&cpu, n * sizeof(int) + 1);
    *g = dev_alloc(&gpu, n * sizeof(int) + 1);
    dev_from_host(&cpu, c, h, n * sizeof(int));
    dev_from_host(&gpu, *g, h, n * sizeof(int));
    free(h);
    return c;
}

/* ---- matmul ------------------------------------------------------------------ */
TEST(cuda_emu_op_matmul_matches_cpu_for_every_transpose_type_and_stride) {
    setup();
    const int shapes[][3] = {{1, 1, 1}, {5, 7, 3}, {33, 17, 70}, {64, 40, 257}};
    const dtype_t types[][2] = {{DT_F32, DT_F32}, {DT_BF16, DT_BF16}, {DT_BF16, DT_F32}};
    for (int s = 0; s < 4; s++)
        for (int ty = 0; ty < 3; ty++)
            for (int ta = 0; ta < 2; ta++)
                for (int tb = 0; tb < 2; tb++) {
                    int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
                    dtype_t ab = types[ty][0], ct = types[ty][1];
                    int lda = (ta ? M : K) + s, ldb = (tb ? K : N) + 2 * s, ldc = N + 1;
                    pair_t A = pair_rand((size_t)(ta ? K : M) * lda, ab, 1);
                    pair_t B = pair_rand((size_t)(tb ? N : K) * ldb, ab, 1);
                    pair_t C = pair_rand((size_t)M * ldc, ct, 1);
                    float beta = (ta + tb) % 2 ? 0.5f : 0.0f;
                    op_matmul(&cpu, ta, tb, M, N, K, 0.7f, A.c, lda, B.c, ldb, ab, beta, C.c, ldc, ct);
                    op_matmul(&gpu, ta, tb, M, N, K, 0.7f, A.g, lda, B.g, ldb, ab, beta, C.g, ldc, ct);
                    char what[96];
                    snprintf(what, sizeof what, "matmul %dx%dx%d ta%d tb%d %s", M, N, K, ta, tb, dtype_name(ab));
                    compare(what, C, tol_of(ct));
                    pair_free(&A); pair_free(&B); pair_free(&C);
                }
}

/* ---- embedding ---------------------------------------------------------------- */
TEST(cuda_emu_op_embedding_matches_cpu_with_repeated_tokens) {
    setup();
    const int shapes[][3] = {{1, 1, 1}, {10, 37, 11}, {70, 300, 7}};   /* N, C, V */
    for (int ti = 0; ti < 2; ti++)
        for (int s = 0; s < 3; s++) {
            dtype_t t = ti ? DT_BF16 : DT_F32;
            int N = shapes[s][0], C = shapes[s][1], V = shapes[s][2];
            int *tg, *tc = tokens_pair(&tg, N, V, 0);
            pair_t table = pair_rand((size_t)V * C, t, 1), out = pair_zero((size_t)N * C, t);
            /* the whole table, then rows [1, V) as a vocabulary shard */
            op_embedding_forward(&cpu, t, tc, table.c, out.c, N, C, 0, V);
            op_embedding_forward(&gpu, t, tg, table.g, out.g, N, C, 0, V);
            compare("embedding forward", out, 0);   /* a gather: exact */
            op_embedding_forward(&cpu, t, tc, table.c, out.c, N, C, 1, V - 1);
            op_embedding_forward(&gpu, t, tg, table.g, out.g, N, C, 1, V - 1);
            compare("embedding forward", out, 0);   /* a gather: exact */
            pair_t dout = pair_rand((size_t)N * C, t, 1), dtable = pair_rand((size_t)V * C, DT_F32, 1);
            op_embedding_backward(&cpu, t, tc, dout.c, dtable.c, N, C, 0, V);
            op_embedding_backward(&gpu, t, tg, dout.g, dtable.g, N, C, 0, V);
            op_embedding_backward(&cpu, t, tc, dout.c, dtable.c, N, C, 1, V - 1);
            op_embedding_backward(&gpu, t, tg, dout.g, dtable.g, N, C, 1, V - 1);
            compare("embedding backward (accumulates)", dtable, 1e-5);
            pair_free(&table); pair_free(&out); pair_free(&dout); pair_free(&dtable);
            dev_free(&cpu, tc); dev_free(&gpu, tg);
        }
}

/* ---- RMSNorm ------------------------------------------------------------------- */
TEST(cuda_emu_op_rmsnorm_matches_cpu_forward_and_backward_with_aliases) {
    setup();
    const int shapes[][2] = {{1, 1}, {3, 37}, {5, 300}, {300, 64}};   /* N > 256 rows: several per block */
    for (int ti = 0; ti < 2; ti++)
        for (int s = 0; s < 4; s++)
            for (int alias = 0; alias < 2; alias++) {
                dtype_t t = ti ? DT_BF16 : DT_F32;
                int N = shapes[s][0], C = shapes[s][1];
                size_t n = (size_t)N * C;
                pair_t x = pair_rand(n, t, 2), w = pair_rand(C, t, 1), y = pair_zero(n, t);
                pair_t rstd = pair_zero(N, DT_F32);
                op_rmsnorm_forward(&cpu, t, x.c, w.c, y.c, rstd.c, N, C, 1e-5f);
                op_rmsnorm_forward(&gpu, t, x.g, w.g, y.g, rstd.g, N, C, 1e-5f);
                compare("rmsnorm forward y", y, tol_of(t));
                compare("rmsnorm forward rstd", rstd, 1e-5);
                pair_t dy = pair_rand(n, t, 1), dres = pair_rand(n, t, 1), dx = pair_zero(n, t);
                pair_t dw = pair_rand(C, DT_F32, 1);
                /* alias: dx is dres (the residual path's buffer), as the model does */
                pair_t *out = alias ? &dres : &dx;
                op_rmsnorm_backward(&cpu, t, x.c, w.c, rstd.c, dy.c, dres.c, out->c, dw.c, N, C);
                op_rmsnorm_backward(&gpu, t, x.g, w.g, rstd.g, dy.g, dres.g, out->g, dw.g, N, C);
                compare(alias ? "rmsnorm backward dx (aliases dres)" : "rmsnorm backward dx", *out, tol_of(t));
                compare("rmsnorm backward dw (accumulates)", dw, 1e-5);
                pair_free(&x); pair_free(&w); pair_free(&y); pair_free(&rstd);
                pair_free(&dy); pair_free(&dres); pair_free(&dx); pair_free(&dw);
            }
}

/* ---- RoPE ----------------------------------------------------------------------- */
TEST(cuda_emu_op_rope_matches_cpu_forward_and_inverse) {
    setup();
    const int shapes[][5] = {{1, 1, 1, 2, 0}, {2, 5, 3, 8, 3}, {2, 33, 4, 16, 0}};   /* B T H hd pos0 */
    for (int ti = 0; ti < 2; ti++)
        for (int s = 0; s < 3; s++)
            for (int inv = 0; inv < 2; inv++) {
                dtype_t t = ti ? DT_BF16 : DT_F32;
                int B = shapes[s][0], T = shapes[s][1], H = shapes[s][2], hd = shapes[s][3], p0 = shapes[s][4];
                int max_pos = p0 + T;
                float *cs = xmalloc((size_t)max_pos * hd * sizeof(float));
                rope_table(cs, max_pos, hd, 10000.0);
                pair_t tab = pair_from(cs, (size_t)max_pos * hd, DT_F32);
                pair_t x = pair_rand((size_t)B * T * H * hd, t, 1);
                op_rope(&cpu, t, x.c, tab.c, B, T, H, hd, p0, inv);
                op_rope(&gpu, t, x.g, tab.g, B, T, H, hd, p0, inv);
                compare(inv ? "rope inverse" : "rope", x, tol_of(t));
                pair_free(&tab); pair_free(&x); free(cs);
            }
}

/* ---- attention ---------------------------------------------------------------------- */
TEST(cuda_emu_op_attention_matches_cpu_forward_merge_and_backward) {
    setup();
    /* B Tq Tk H KV hd q_pos0 k_pos0: whole causal sequences, grouped heads, a
     * query block against a shifted key block (context parallelism), a key
     * block entirely in the future (rows that see nothing), one token. */
    const int shapes[][8] = {{1, 1, 1, 1, 1, 2, 0, 0}, {2, 9, 9, 4, 2, 8, 0, 0},
                             {2, 9, 13, 4, 2, 8, 20, 15}, {1, 5, 7, 2, 1, 4, 0, 10},
                             {1, 33, 33, 2, 2, 16, 0, 0}};
    for (int ti = 0; ti < 2; ti++)
        for (int s = 0; s < 5; s++) {
            dtype_t t = ti ? DT_BF16 : DT_F32;
            const int *z = shapes[s];
            int B = z[0], Tq = z[1], Tk = z[2], H = z[3], KV = z[4], hd = z[5], q0 = z[6], k0 = z[7];
            size_t nq = (size_t)B * Tq * H * hd, nk = (size_t)B * Tk * KV * hd, nl = (size_t)B * H * Tq;
            pair_t q = pair_rand(nq, t, 1), k = pair_rand(nk, t, 1), v = pair_rand(nk, t, 1);
            pair_t out = pair_zero(nq, t), lse = pair_zero(nl, DT_F32);
            op_attn_forward(&cpu, t, q.c, k.c, v.c, out.c, lse.c, B, Tq, Tk, H, KV, hd, q0, k0);
            op_attn_forward(&gpu, t, q.g, k.g, v.g, out.g, lse.g, B, Tq, Tk, H, KV, hd, q0, k0);
            compare("attention forward out", out, tol_of(t));
            compare("attention forward lse", lse, 1e-5);
            /* merge with a second block of keys (disjoint: an earlier block) */
            if (Tq == Tk && q0 == k0) {
                pair_t k2 = pair_rand(nq / H * KV, t, 1), v2 = pair_rand(nq / H * KV, t, 1);
                pair_t out2 = pair_zero(nq, t), lse2 = pair_zero(nl, DT_F32);
                op_attn_forward(&cpu, t, q.c, k2.c, v2.c, out2.c, lse2.c, B, Tq, Tq, H, KV, hd, q0 + Tq, q0);
                op_attn_forward(&gpu, t, q.g, k2.g, v2.g, out2.g, lse2.g, B, Tq, Tq, H, KV, hd, q0 + Tq, q0);
                op_attn_merge(&cpu, t, out.c, lse.c, out2.c, lse2.c, B, Tq, H, hd);
                op_attn_merge(&gpu, t, out.g, lse.g, out2.g, lse2.g, B, Tq, H, hd);
                compare("attention merge out", out, tol_of(t));
                compare("attention merge lse", lse, 1e-5);
                pair_free(&k2); pair_free(&v2); pair_free(&out2); pair_free(&lse2);
                /* back to the single block for the backward pass */
                op_attn_forward(&cpu, t, q.c, k.c, v.c, out.c, lse.c, B, Tq, Tk, H, KV, hd, q0, k0);
                op_attn_forward(&gpu, t, q.g, k.g, v.g, out.g, lse.g, B, Tq, Tk, H, KV, hd, q0, k0);
            }
            pair_t dout = pair_rand(nq, t, 1);
            pair_t dq = pair_rand(nq, t, 1), dk = pair_rand(nk, t, 1), dv = pair_rand(nk, t, 1);
            op_attn_backward(&cpu, t, q.c, k.c, v.c, out.c, dout.c, lse.c, dq.c, dk.c, dv.c, B, Tq, Tk, H, KV, hd, q0, k0);
            op_attn_backward(&gpu, t, q.g, k.g, v.g, out.g, dout.g, lse.g, dq.g, dk.g, dv.g, B, Tq, Tk, H, KV, hd, q0, k0);
            compare("attention backward dq (accumulates)", dq, tol_of(t));
            compare("attention backward dk (accumulates)", dk, tol_of(t));
            compare("attention backward dv (accumulates)", dv, tol_of(t));
            pair_free(&q); pair_free(&k); pair_free(&v); pair_free(&out); pair_free(&lse);
            pair_free(&dout); pair_free(&dq); pair_free(&dk); pair_free(&dv);
        }
}

/* ---- SwiGLU ----------------------------------------------------------------------------- */
TEST(cuda_emu_op_swiglu_matches_cpu_with_in_place_backward) {
    setup();
    const size_t sizes[] = {1, 255, 1000, 300000};   /* the last: a grid-stride loop */
    for (int ti = 0; ti < 2; ti++)
        for (int s = 0; s < 4; s++) {
            dtype_t t = ti ? DT_BF16 : DT_F32;
            size_t n = sizes[s];
            pair_t a = pair_rand(n, t, 4), b = pair_rand(n, t, 2), out = pair_zero(n, t);
            op_swiglu_forward(&cpu, t, a.c, b.c, out.c, n);
            op_swiglu_forward(&gpu, t, a.g, b.g, out.g, n);
            compare("swiglu forward", out, tol_of(t));
            pair_t dout = pair_rand(n, t, 1);
            op_swiglu_backward(&cpu, t, a.c, b.c, dout.c, a.c, b.c, n);   /* da = a, db = b */
            op_swiglu_backward(&gpu, t, a.g, b.g, dout.g, a.g, b.g, n);
            compare("swiglu backward da (in place)", a, tol_of(t));
            compare("swiglu backward db (in place)", b, tol_of(t));
            pair_free(&a); pair_free(&b); pair_free(&out); pair_free(&dout);
        }
}

/* ---- cross-entropy ------------------------------------------------------------------------ */
TEST(cuda_emu_op_cross_entropy_matches_cpu_with_ignored_targets) {
    setup();
    const int shapes[][2] = {{1, 1}, {7, 300}, {20, 1000}, {3, 31}};
    for (int ti = 0; ti < 2; ti++)
        for (int s = 0; s < 4; s++) {
            dtype_t t = ti ? DT_BF16 : DT_F32;
            int N = shapes[s][0], V = shapes[s][1];
            int *yg, *yc = tokens_pair(&yg, N, V, 1);
            pair_t logits = pair_rand((size_t)N * V, t, 5), picked = pair_zero(N, DT_F32), lse = pair_zero(N, DT_F32);
            /* v0 = 1: the logits are columns [1, V + 1) of a larger vocabulary */
            for (int v0 = 0; v0 < 2; v0++) {
                op_xent_forward(&cpu, t, logits.c, yc, picked.c, lse.c, N, V, v0);
                op_xent_forward(&gpu, t, logits.g, yg, picked.g, lse.g, N, V, v0);
                compare("cross-entropy picked logit", picked, 0);
                compare("cross-entropy lse", lse, 1e-5);
            }
            pair_t parts = pair_rand(3 * (size_t)N, DT_F32, 5), comb = pair_zero(N, DT_F32);
            op_lse_combine(&cpu, parts.c, comb.c, 3, N);
            op_lse_combine(&gpu, parts.g, comb.g, 3, N);
            compare("lse of 3 shards combined", comb, 1e-6);
            /* dlogits aliases logits */
            op_xent_backward(&cpu, t, logits.c, yc, lse.c, logits.c, 1.0f / N, N, V, 1);
            op_xent_backward(&gpu, t, logits.g, yg, lse.g, logits.g, 1.0f / N, N, V, 1);
            compare("cross-entropy dlogits (in place)", logits, tol_of(t));
            pair_free(&logits); pair_free(&picked); pair_free(&lse); pair_free(&parts); pair_free(&comb);
            dev_free(&cpu, yc); dev_free(&gpu, yg);
        }
}

/* ---- element-wise and reductions ------------------------------------------------------------- */
TEST(cuda_emu_op_add_cast_scale_sumsq_match_cpu) {
    setup();
    const size_t sizes[] = {1, 257, 5000, 300000};
    for (int ti = 0; ti < 2; ti++)
        for (int s = 0; s < 4; s++) {
            dtype_t t = ti ? DT_BF16 : DT_F32, o = ti ? DT_F32 : DT_BF16;
            size_t n = sizes[s];
            pair_t a = pair_rand(n, t, 3), b = pair_rand(n, t, 3), out = pair_zero(n, t);
            op_add(&cpu, t, a.c, b.c, out.c, n);
            op_add(&gpu, t, a.g, b.g, out.g, n);
            compare("add", out, tol_of(t));
            op_add(&cpu, t, a.c, b.c, a.c, n);   /* out aliases a */
            op_add(&gpu, t, a.g, b.g, a.g, n);
            compare("add (in place)", a, tol_of(t));
            pair_t c = pair_zero(n, o), same = pair_zero(n, t);
            op_cast(&cpu, b.c, t, c.c, o, n);
            op_cast(&gpu, b.g, t, c.g, o, n);
            compare("cast", c, 0);   /* widening is exact; narrowing rounds once, identically */
            op_cast(&cpu, b.c, t, same.c, t, n);
            op_cast(&gpu, b.g, t, same.g, t, n);
            compare("cast to the same type (copy)", same, 0);
            op_scale(&cpu, t, b.c, -0.37f, n);
            op_scale(&gpu, t, b.g, -0.37f, n);
            compare("scale", b, 0);
            double sc = op_sumsq(&cpu, t, a.c, n), sg = op_sumsq(&gpu, t, a.g, n);
            EXPECT_NEAR(sg, sc, 1e-5);
            printf("%-34s %-4s %8zu elements, gpu %.9g cpu %.9g\n", "sumsq", dtype_name(t), n, sg, sc);
            pair_free(&a); pair_free(&b); pair_free(&out); pair_free(&c); pair_free(&same);
        }
}

/* ---- AdamW ------------------------------------------------------------------------------------- */
TEST(cuda_emu_op_adamw_matches_cpu_over_steps_with_and_without_working_copy) {
    setup();
    const size_t sizes[] = {1, 1000, 70001};
    for (int s = 0; s < 3; s++)
        for (int wt = 0; wt < 3; wt++) {   /* working copy: none, fp32, bf16 */
            size_t n = sizes[s];
            dtype_t t = wt == 2 ? DT_BF16 : DT_F32;
            pair_t master = pair_rand(n, DT_F32, 1), m = pair_zero(n, DT_F32), v = pair_zero(n, DT_F32);
            pair_t work = pair_zero(n, t);
            for (int step = 1; step <= 3; step++) {
                pair_t g = pair_rand(n, DT_F32, 1);
                op_adamw(&cpu, master.c, m.c, v.c, g.c, wt ? work.c : NULL, t, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, step);
                op_adamw(&gpu, master.g, m.g, v.g, g.g, wt ? work.g : NULL, t, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, step);
                pair_free(&g);
            }
            compare("adamw master", master, 1e-5);
            compare("adamw m", m, 1e-5);
            compare("adamw v", v, 1e-5);
            if (wt) compare("adamw working copy", work, tol_of(t));
            pair_free(&master); pair_free(&m); pair_free(&v); pair_free(&work);
        }
}
