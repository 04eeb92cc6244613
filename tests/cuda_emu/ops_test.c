/* ops_test.c: every op of ops.h on the emulated GPU (ops_cuda*.cu: its
 * kernels and its cuBLAS calls) against the CPU backend (ops_cpu.c) on the
 * same random inputs, in fp32 and bf16, at several shapes chosen to miss the
 * kernels' block sizes (256 threads, 32-lane warps, 64-row attention tiles,
 * 8-element vector chunks): a row shorter than a warp, rows longer than a
 * block, odd lengths, one element, pointers that are not 16-byte aligned.
 *
 * The GPU's ops are ops_cuda (the fast kernels) or, with
 * OPS_CUDA_TABLE=simple, ops_cuda_simple (the simple kernels they replaced).
 *
 * ops.h lets the two backends differ only in the order of fp32 sums, so an
 * fp32 result must agree to 1e-5 relative (|gpu - cpu| <= 1e-5 max(1, |cpu|),
 * the suite's fp32 bound) and a bf16 result to one rounding either way
 * (1/128, as tests/unit_model.c allows; two for the flash-attention kernels,
 * see below). Outputs that alias inputs, and gradients that accumulate (+=)
 * into non-zero buffers, are covered too. */
#define UNIT_MAIN
#include "tests/unit.h"

#include <stdint.h>

#include "device.h"
#include "dtype.h"
#include "compress.h"
#include "ops.h"

static device_t cpu, gpu;
extern const ops_t ops_cuda_simple;   /* ops_cuda.cu: the simple kernels */
static const ops_t *G = &ops_cuda;     /* the GPU's ops under test */

static void setup(void) {
    device_init(&cpu, "cpu", 0, 1, 1);
    device_init(&gpu, "cuda", 0, 1, 1);
    if (gpu.kind != DEV_CUDA) die("no emulated GPU");
    const char *tab = getenv("OPS_CUDA_TABLE");
    if (tab && strcmp(tab, "simple") == 0) G = &ops_cuda_simple;
    else if (tab && *tab && strcmp(tab, "fast") != 0) die("OPS_CUDA_TABLE=%s: expected fast or simple", tab);
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
                    G->matmul(&gpu, ta, tb, M, N, K, 0.7f, A.g, lda, B.g, ldb, ab, beta, C.g, ldc, ct);
                    char what[96];
                    snprintf(what, sizeof what, "matmul %dx%dx%d ta%d tb%d %s", M, N, K, ta, tb, dtype_name(ab));
                    compare(what, C, tol_of(ct));
                    pair_free(&A); pair_free(&B); pair_free(&C);
                }
}

/* ---- embedding ---------------------------------------------------------------- */
TEST(cuda_emu_op_embedding_matches_cpu_with_repeated_tokens) {
    setup();
    /* N, C, V; N > 2048 makes the fast backward's sort merge sorted runs */
    const int shapes[][3] = {{1, 1, 1}, {10, 37, 11}, {70, 300, 7}, {3000, 24, 5}, {5000, 13, 300}};
    for (int ti = 0; ti < 2; ti++)
        for (int s = 0; s < 5; s++) {
            dtype_t t = ti ? DT_BF16 : DT_F32;
            int N = shapes[s][0], C = shapes[s][1], V = shapes[s][2];
            int *tg, *tc = tokens_pair(&tg, N, V, 0);
            pair_t table = pair_rand((size_t)V * C, t, 1), out = pair_zero((size_t)N * C, t);
            /* the whole table, then rows [1, V) as a vocabulary shard */
            op_embedding_forward(&cpu, t, tc, table.c, out.c, N, C, 0, V);
            G->embedding_forward(&gpu, t, tg, table.g, out.g, N, C, 0, V);
            compare("embedding forward", out, 0);   /* a gather: exact */
            op_embedding_forward(&cpu, t, tc, table.c, out.c, N, C, 1, V - 1);
            G->embedding_forward(&gpu, t, tg, table.g, out.g, N, C, 1, V - 1);
            compare("embedding forward", out, 0);   /* a gather: exact */
            pair_t dout = pair_rand((size_t)N * C, t, 1), dtable = pair_rand((size_t)V * C, DT_F32, 1);
            op_embedding_backward(&cpu, t, tc, dout.c, dtable.c, N, C, 0, V);
            G->embedding_backward(&gpu, t, tg, dout.g, dtable.g, N, C, 0, V);
            op_embedding_backward(&cpu, t, tc, dout.c, dtable.c, N, C, 1, V - 1);
            G->embedding_backward(&gpu, t, tg, dout.g, dtable.g, N, C, 1, V - 1);
            compare("embedding backward (accumulates)", dtable, 1e-5);
            /* repeated tokens in order of n on both sides: the same sums */
            if (G == &ops_cuda) compare("embedding backward, bit for bit", dtable, 0);
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
                G->rmsnorm_forward(&gpu, t, x.g, w.g, y.g, rstd.g, N, C, 1e-5f);
                compare("rmsnorm forward y", y, tol_of(t));
                compare("rmsnorm forward rstd", rstd, 1e-5);
                pair_t dy = pair_rand(n, t, 1), dres = pair_rand(n, t, 1), dx = pair_zero(n, t);
                pair_t dw = pair_rand(C, DT_F32, 1);
                /* alias: dx is dres (the residual path's buffer), as the model does */
                pair_t *out = alias ? &dres : &dx;
                op_rmsnorm_backward(&cpu, t, x.c, w.c, rstd.c, dy.c, dres.c, out->c, dw.c, N, C);
                G->rmsnorm_backward(&gpu, t, x.g, w.g, rstd.g, dy.g, dres.g, out->g, dw.g, N, C);
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
                G->rope(&gpu, t, x.g, tab.g, B, T, H, hd, p0, inv);
                compare(inv ? "rope inverse" : "rope", x, tol_of(t));
                pair_free(&tab); pair_free(&x); free(cs);
            }
}

/* ---- attention ---------------------------------------------------------------------- */
/* ops_cuda_attention.cu's flash-attention kernels run for bf16 at head dims 16, 32, 64
 * and 128 (tiles of 64 queries and 64 keys, 16 query rows per warp); fp32
 * and other head dims take the simple cuBLAS path, and ops_cuda_simple
 * always does. The flash kernels round p and ds to bf16 for their tensor-core
 * products (relative 2^-9 per term, inside fp32 sums), so their bf16 results
 * are held to two bf16 roundings instead of one. */
static int flash_path(dtype_t t, int hd) {
    return G == &ops_cuda && t == DT_BF16 && (hd == 16 || hd == 32 || hd == 64 || hd == 128);
}

/* Bit-identical device buffers (two runs of the same op). */
static void same_bits(const char *what, const void *a, const void *b, size_t bytes) {
    unsigned char *ha = xmalloc(bytes + 1), *hb = xmalloc(bytes + 1);
    dev_to_host(&gpu, ha, a, bytes);
    dev_to_host(&gpu, hb, b, bytes);
    size_t i = 0;
    while (i < bytes && ha[i] == hb[i]) i++;
    if (i < bytes) UNIT_FAIL("%s: run 2 differs from run 1 at byte %zu of %zu", what, i, bytes);
    else printf("%-34s %8zu bytes, bit-identical in two runs\n", what, bytes);
    free(ha);
    free(hb);
}

/* One attention shape through forward and backward on both devices (the
 * backward accumulating into non-zero dq, dk, dv); with `twice`, the GPU runs everything a second time from the same inputs
 * and must give the same bits. */
static void attention_case(dtype_t t, const int *z, int twice) {
    int B = z[0], Tq = z[1], Tk = z[2], H = z[3], KV = z[4], hd = z[5], q0 = z[6], k0 = z[7];
    size_t nq = (size_t)B * Tq * H * hd, nk = (size_t)B * Tk * KV * hd, nl = (size_t)B * H * Tq;
    double tol = tol_of(t) * (flash_path(t, hd) ? 2 : 1);
    char what[160];
    snprintf(what, sizeof what, "attention%s B%d Tq%d Tk%d H%d KV%d hd%d q0 %d k0 %d",
             flash_path(t, hd) ? " (flash)" : "", B, Tq, Tk, H, KV, hd, q0, k0);
    printf("%s\n", what);
    pair_t q = pair_rand(nq, t, 2), k = pair_rand(nk, t, 2), v = pair_rand(nk, t, 1);
    pair_t out = pair_rand(nq, t, 1), lse = pair_rand(nl, DT_F32, 1);   /* overwritten */
    op_attn_forward(&cpu, t, q.c, k.c, v.c, out.c, lse.c, B, Tq, Tk, H, KV, hd, q0, k0);
    G->attn_forward(&gpu, t, q.g, k.g, v.g, out.g, lse.g, B, Tq, Tk, H, KV, hd, q0, k0);
    compare("  forward out", out, tol);
    compare("  forward lse", lse, 1e-5);
    pair_t dout = pair_rand(nq, t, 1);
    pair_t dq = pair_rand(nq, t, 1), dk = pair_rand(nk, t, 1), dv = pair_rand(nk, t, 1);
    pair_t dq2 = pair_zero(nq, t), dk2 = pair_zero(nk, t), dv2 = pair_zero(nk, t);
    size_t bq = nq * dtype_size(t), bk = nk * dtype_size(t);
    if (twice) {   /* the same starting values for the second run */
        dev_copy(&gpu, dq2.g, dq.g, bq); dev_copy(&gpu, dk2.g, dk.g, bk); dev_copy(&gpu, dv2.g, dv.g, bk);
    }
    op_attn_backward(&cpu, t, q.c, k.c, v.c, out.c, dout.c, lse.c, dq.c, dk.c, dv.c, B, Tq, Tk, H, KV, hd, q0, k0);
    G->attn_backward(&gpu, t, q.g, k.g, v.g, out.g, dout.g, lse.g, dq.g, dk.g, dv.g, B, Tq, Tk, H, KV, hd, q0, k0);
    compare("  backward dq (accumulates)", dq, tol);
    compare("  backward dk (accumulates)", dk, tol);
    compare("  backward dv (accumulates)", dv, tol);
    if (twice) {
        pair_t out2 = pair_zero(nq, t), lse2 = pair_zero(nl, DT_F32);
        G->attn_forward(&gpu, t, q.g, k.g, v.g, out2.g, lse2.g, B, Tq, Tk, H, KV, hd, q0, k0);
        same_bits("  forward out", out.g, out2.g, bq);
        same_bits("  forward lse", lse.g, lse2.g, nl * 4);
        G->attn_backward(&gpu, t, q.g, k.g, v.g, out.g, dout.g, lse.g, dq2.g, dk2.g, dv2.g, B, Tq, Tk, H, KV, hd, q0, k0);
        same_bits("  backward dq", dq.g, dq2.g, bq);
        same_bits("  backward dk", dk.g, dk2.g, bk);
        same_bits("  backward dv", dv.g, dv2.g, bk);
        pair_free(&out2); pair_free(&lse2);
    }
    pair_free(&q); pair_free(&k); pair_free(&v); pair_free(&out); pair_free(&lse);
    pair_free(&dout); pair_free(&dq); pair_free(&dk); pair_free(&dv);
    pair_free(&dq2); pair_free(&dk2); pair_free(&dv2);
}

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
            double tol = tol_of(t) * (flash_path(t, hd) ? 2 : 1);
            pair_t q = pair_rand(nq, t, 1), k = pair_rand(nk, t, 1), v = pair_rand(nk, t, 1);
            pair_t out = pair_zero(nq, t), lse = pair_zero(nl, DT_F32);
            op_attn_forward(&cpu, t, q.c, k.c, v.c, out.c, lse.c, B, Tq, Tk, H, KV, hd, q0, k0);
            G->attn_forward(&gpu, t, q.g, k.g, v.g, out.g, lse.g, B, Tq, Tk, H, KV, hd, q0, k0);
            compare("attention forward out", out, tol);
            compare("attention forward lse", lse, 1e-5);
            /* merge with a second block of keys (disjoint: an earlier block) */
            if (Tq == Tk && q0 == k0) {
                pair_t k2 = pair_rand(nq / H * KV, t, 1), v2 = pair_rand(nq / H * KV, t, 1);
                pair_t out2 = pair_zero(nq, t), lse2 = pair_zero(nl, DT_F32);
                op_attn_forward(&cpu, t, q.c, k2.c, v2.c, out2.c, lse2.c, B, Tq, Tq, H, KV, hd, q0 + Tq, q0);
                G->attn_forward(&gpu, t, q.g, k2.g, v2.g, out2.g, lse2.g, B, Tq, Tq, H, KV, hd, q0 + Tq, q0);
                op_attn_merge(&cpu, t, out.c, lse.c, out2.c, lse2.c, B, Tq, H, hd);
                G->attn_merge(&gpu, t, out.g, lse.g, out2.g, lse2.g, B, Tq, H, hd);
                compare("attention merge out", out, tol);
                compare("attention merge lse", lse, 1e-5);
                pair_free(&k2); pair_free(&v2); pair_free(&out2); pair_free(&lse2);
                /* back to the single block for the backward pass */
                op_attn_forward(&cpu, t, q.c, k.c, v.c, out.c, lse.c, B, Tq, Tk, H, KV, hd, q0, k0);
                G->attn_forward(&gpu, t, q.g, k.g, v.g, out.g, lse.g, B, Tq, Tk, H, KV, hd, q0, k0);
            }
            pair_t dout = pair_rand(nq, t, 1);
            pair_t dq = pair_rand(nq, t, 1), dk = pair_rand(nk, t, 1), dv = pair_rand(nk, t, 1);
            op_attn_backward(&cpu, t, q.c, k.c, v.c, out.c, dout.c, lse.c, dq.c, dk.c, dv.c, B, Tq, Tk, H, KV, hd, q0, k0);
            G->attn_backward(&gpu, t, q.g, k.g, v.g, out.g, dout.g, lse.g, dq.g, dk.g, dv.g, B, Tq, Tk, H, KV, hd, q0, k0);
            compare("attention backward dq (accumulates)", dq, tol);
            compare("attention backward dk (accumulates)", dk, tol);
            compare("attention backward dv (accumulates)", dv, tol);
            pair_free(&q); pair_free(&k); pair_free(&v); pair_free(&out); pair_free(&lse);
            pair_free(&dout); pair_free(&dq); pair_free(&dk); pair_free(&dv);
        }
}

/* The flash kernels' tiles against the CPU: lengths that are not multiples
 * of 64 (1, 17, 33, 100, 130), several tiles with the causal skip, Tq != Tk,
 * query and key blocks at offsets (context parallelism): keys partly
 * visible, all visible, all in the future (every row sees nothing), and rows
 * with no visible key inside a tile; grouped heads (H = 4 with KV = 1, 2);
 * head dims 16, 32, 64, 128, and 48, which falls back to the simple path;
 * two runs bit for bit. */
static const int flash_shapes[][8] = {
    /* B  Tq   Tk  H KV   hd  q0   k0 */
    {1, 1, 1, 4, 1, 16, 0, 0},
    {2, 17, 17, 4, 2, 32, 0, 0},
    {1, 33, 33, 4, 1, 64, 0, 0},
    {1, 100, 100, 4, 2, 64, 0, 0},
    {1, 17, 33, 2, 1, 128, 40, 20},
    {1, 33, 17, 4, 2, 16, 0, 50},
    {1, 70, 20, 2, 1, 32, 0, 40},
    {1, 20, 130, 4, 2, 64, 130, 0},
    {1, 20, 20, 2, 1, 48, 0, 0},      /* a head dim without flash kernels: the simple path */
};
enum { FLASH_SHAPES = sizeof flash_shapes / sizeof flash_shapes[0] };

TEST(cuda_emu_op_flash_attention_matches_cpu_at_tile_edges_offsets_and_head_dims) {
    setup();
    for (int s = 0; s < FLASH_SHAPES; s++) attention_case(DT_BF16, flash_shapes[s], s % 3 == 0);
}

/* The same shapes in fp32, which the simple path serves. */
TEST(cuda_emu_op_fp32_attention_matches_cpu_at_the_flash_shapes) {
    setup();
    for (int s = 0; s < FLASH_SHAPES; s++) attention_case(DT_F32, flash_shapes[s], s == 3);
}

/* ---- determinism ------------------------------------------------------------------------ */
/* The fast reductions sum in an order fixed by the shapes (partials per
 * block, then the blocks in order), never by which block or warp finishes
 * first: a second run gives the same bits, whatever order the emulator runs
 * the blocks, warps and lanes in (EMU_SCHEDULE; the shuffled order differs
 * between the two runs). */
TEST(cuda_emu_op_reductions_give_the_same_bits_run_after_run) {
    setup();
    const dtype_t t = DT_BF16;
    const int N = 300, C = 64, V = 1000;
    pair_t x = pair_rand((size_t)N * C, t, 2), w = pair_rand(C, t, 1), dy = pair_rand((size_t)N * C, t, 1);
    pair_t rstd = pair_zero(N, DT_F32), y = pair_zero((size_t)N * C, t);
    pair_t dw1 = pair_zero(C, DT_F32), dw2 = pair_zero(C, DT_F32), dx = pair_zero((size_t)N * C, t);
    G->rmsnorm_forward(&gpu, t, x.g, w.g, y.g, rstd.g, N, C, 1e-5f);
    G->rmsnorm_backward(&gpu, t, x.g, w.g, rstd.g, dy.g, NULL, dx.g, dw1.g, N, C);
    G->rmsnorm_backward(&gpu, t, x.g, w.g, rstd.g, dy.g, NULL, dx.g, dw2.g, N, C);
    same_bits("rmsnorm backward dw", dw1.g, dw2.g, C * sizeof(float));
    pair_t logits = pair_rand((size_t)N * V, t, 5), p1 = pair_zero(N, DT_F32), l1 = pair_zero(N, DT_F32);
    pair_t l2 = pair_zero(N, DT_F32);
    int *yg, *yc = tokens_pair(&yg, N, V, 1);
    G->xent_forward(&gpu, t, logits.g, yg, p1.g, l1.g, N, V, 0);
    G->xent_forward(&gpu, t, logits.g, yg, p1.g, l2.g, N, V, 0);
    same_bits("cross-entropy lse", l1.g, l2.g, N * sizeof(float));
    double s1 = G->sumsq(&gpu, t, logits.g, (size_t)N * V), s2 = G->sumsq(&gpu, t, logits.g, (size_t)N * V);
    if (s1 != s2) UNIT_FAIL("sumsq: %.17g then %.17g", s1, s2);
    pair_t e1 = pair_zero((size_t)V * C, DT_F32), e2 = pair_zero((size_t)V * C, DT_F32);
    int *tg, *tc = tokens_pair(&tg, 3000, 7, 0);   /* 7 rows, each repeated ~430 times */
    pair_t dout = pair_rand((size_t)3000 * C, t, 1);
    G->embedding_backward(&gpu, t, tg, dout.g, e1.g, 3000, C, 0, V);
    G->embedding_backward(&gpu, t, tg, dout.g, e2.g, 3000, C, 0, V);
    same_bits("embedding backward", e1.g, e2.g, (size_t)V * C * sizeof(float));
    pair_free(&x); pair_free(&w); pair_free(&dy); pair_free(&rstd); pair_free(&y);
    pair_free(&dw1); pair_free(&dw2); pair_free(&dx); pair_free(&logits); pair_free(&p1);
    pair_free(&l1); pair_free(&l2); pair_free(&e1); pair_free(&e2); pair_free(&dout);
    dev_free(&cpu, yc); dev_free(&gpu, yg); dev_free(&cpu, tc); dev_free(&gpu, tg);
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
            G->swiglu_forward(&gpu, t, a.g, b.g, out.g, n);
            compare("swiglu forward", out, tol_of(t));
            pair_t dout = pair_rand(n, t, 1);
            op_swiglu_backward(&cpu, t, a.c, b.c, dout.c, a.c, b.c, n);   /* da = a, db = b */
            G->swiglu_backward(&gpu, t, a.g, b.g, dout.g, a.g, b.g, n);
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
                G->xent_forward(&gpu, t, logits.g, yg, picked.g, lse.g, N, V, v0);
                compare("cross-entropy picked logit", picked, 0);
                compare("cross-entropy lse", lse, 1e-5);
            }
            pair_t parts = pair_rand(3 * (size_t)N, DT_F32, 5), comb = pair_zero(N, DT_F32);
            op_lse_combine(&cpu, parts.c, comb.c, 3, N);
            G->lse_combine(&gpu, parts.g, comb.g, 3, N);
            compare("lse of 3 shards combined", comb, 1e-6);
            /* dlogits aliases logits */
            op_xent_backward(&cpu, t, logits.c, yc, lse.c, logits.c, 1.0f / N, N, V, 1);
            G->xent_backward(&gpu, t, logits.g, yg, lse.g, logits.g, 1.0f / N, N, V, 1);
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
            G->add(&gpu, t, a.g, b.g, out.g, n);
            compare("add", out, tol_of(t));
            op_add(&cpu, t, a.c, b.c, a.c, n);   /* out aliases a */
            G->add(&gpu, t, a.g, b.g, a.g, n);
            compare("add (in place)", a, tol_of(t));
            pair_t c = pair_zero(n, o), same = pair_zero(n, t);
            op_cast(&cpu, b.c, t, c.c, o, n);
            G->cast(&gpu, b.g, t, c.g, o, n);
            compare("cast", c, 0);   /* widening is exact; narrowing rounds once, identically */
            op_cast(&cpu, b.c, t, same.c, t, n);
            G->cast(&gpu, b.g, t, same.g, t, n);
            compare("cast to the same type (copy)", same, 0);
            op_scale(&cpu, t, b.c, -0.37f, n);
            G->scale(&gpu, t, b.g, -0.37f, n);
            compare("scale", b, 0);
            double sc = op_sumsq(&cpu, t, a.c, n), sg = G->sumsq(&gpu, t, a.g, n);
            EXPECT_NEAR(sg, sc, 1e-5);
            printf("%-34s %-4s %8zu elements, gpu %.9g cpu %.9g\n", "sumsq", dtype_name(t), n, sg, sc);
            pair_free(&a); pair_free(&b); pair_free(&out); pair_free(&c); pair_free(&same);
        }
}

/* ---- gradient compression --------------------------------------------------------------------- */
TEST(cuda_emu_op_int8_and_sign_codes_match_cpu_bit_for_bit) {
    setup();
    const size_t sizes[] = {1, 7, 256, 257, 5000, 70001};
    for (int sign = 0; sign < 2; sign++)
        for (int s = 0; s < 6; s++) {
            size_t n = sizes[s];
            compress_spec_t spec = {sign ? COMPRESS_SIGN : COMPRESS_INT8, 0, 0};
            size_t bytes = compress_piece_bytes(&spec, n, NULL, 0);
            float *h = xmalloc(sizeof(float) * n);
            for (size_t i = 0; i < n; i++)   /* one block of zeros (scale 0), the rest wide-ranged */
                h[i] = i >= OPS_CODE_BLOCK && i < 2 * OPS_CODE_BLOCK ? 0.0f : frand() * (float)(1 + i % 37);
            pair_t x = pair_from(h, n, DT_F32), acc = pair_rand(n, DT_F32, 2);
            uint8_t *pc = dev_alloc(&cpu, bytes), *pg = dev_alloc(&gpu, bytes), *hg = xmalloc(bytes);
            op_block_encode(&cpu, sign, x.c, n, pc);
            G->block_encode(&gpu, sign, x.g, n, pg);
            dev_to_host(&gpu, hg, pg, bytes);
            size_t i = 0;
            while (i < bytes && hg[i] == pc[i]) i++;
            if (i < bytes) UNIT_FAIL("%s encode, %zu values: byte %zu of %zu differs (gpu %u, cpu %u)",
                                     sign ? "sign" : "int8", n, i, bytes, hg[i], pc[i]);
            op_block_decode_add(&cpu, sign, pc, n, -0.75f, acc.c);
            G->block_decode_add(&gpu, sign, pg, n, -0.75f, acc.g);
            compare(sign ? "sign decode_add" : "int8 decode_add", acc, 0);
            printf("%-34s %8zu values, %zu bytes, identical to the cpu's\n", sign ? "sign encode" : "int8 encode",
                   n, bytes);
            free(h); free(hg);
            dev_free(&cpu, pc); dev_free(&gpu, pg);
            pair_free(&x); pair_free(&acc);
        }
}

/* Top-k on both backends: the same threshold, the same ties kept (the lower
 * indices), the same bytes. Values either repeat (few distinct magnitudes,
 * signs mixed: the k-th largest is tied) or are all distinct; one block is
 * all zeros; F from a single value to all of them. */
TEST(cuda_emu_op_topk_codes_match_cpu_bit_for_bit) {
    setup();
    const size_t sizes[] = {1, 7, 256, 257, 5000, 70001};
    const double fracs[] = {1e-6, 0.01, 0.3, 0.999, 1.0};
    for (int tied = 0; tied < 2; tied++)
    for (int s = 0; s < 6; s++)
        for (int f = 0; f < 5; f++) {
            size_t n = sizes[s];
            compress_spec_t spec = {COMPRESS_TOPK, fracs[f], 0};
            size_t k = compress_topk_k(&spec, n), bytes = compress_piece_bytes(&spec, n, NULL, 0);
            float *h = xmalloc(sizeof(float) * n);
            for (size_t i = 0; i < n; i++)   /* tied: magnitudes 0..4 in steps of 0.5; zeros in block 1 */
                h[i] = i >= OPS_CODE_BLOCK && i < 2 * OPS_CODE_BLOCK ? 0.0f
                       : tied ? (float)((i * 7919) % 9) * 0.5f * (i % 3 ? 1 : -1)
                              : frand() * (float)(1 + i % 37);
            pair_t x = pair_from(h, n, DT_F32), acc = pair_rand(n, DT_F32, 3);
            uint8_t *pc = dev_alloc(&cpu, bytes), *pg = dev_alloc(&gpu, bytes), *hg = xmalloc(bytes);
            op_topk_encode(&cpu, x.c, n, k, pc);
            G->topk_encode(&gpu, x.g, n, k, pg);
            dev_to_host(&gpu, hg, pg, bytes);
            size_t i = 0;
            while (i < bytes && hg[i] == pc[i]) i++;
            if (i < bytes) UNIT_FAIL("topk:%g encode, %zu values (k %zu): byte %zu of %zu differs (gpu %u, cpu %u)",
                                     fracs[f], n, k, i, bytes, hg[i], pc[i]);
            op_topk_decode_add(&cpu, pc, k, -0.75f, acc.c);
            G->topk_decode_add(&gpu, pg, k, -0.75f, acc.g);
            compare("topk decode_add", acc, 0);
            printf("topk:%-8g encode %8zu %s values, k %6zu, identical to the cpu's\n", fracs[f], n,
                   tied ? "tied" : "distinct", k);
            free(h); free(hg);
            dev_free(&cpu, pc); dev_free(&gpu, pg);
            pair_free(&x); pair_free(&acc);
        }
}

/* PowerSGD's Gram-Schmidt: the same walk in double on both backends (here
 * the same bits; a CPU build that contracts a multiply-add may differ in
 * the last place: within 1e-6). A zero column stays zero on both. */
TEST(cuda_emu_op_orthonormalise_matches_cpu) {
    setup();
    const size_t rows[] = {1, 5, 300};
    const int ranks[] = {1, 2, 4};
    for (int r = 0; r < 3; r++)
        for (int k = 0; k < 3; k++) {
            size_t m = rows[r];
            int R = ranks[k];
            float *h = xmalloc(sizeof(float) * m * (size_t)R);
            for (size_t i = 0; i < m * (size_t)R; i++)   /* column 1 zero when R > 2 */
                h[i] = R > 2 && i % (size_t)R == 1 ? 0.0f : frand();
            pair_t a = pair_from(h, m * (size_t)R, DT_F32);
            op_orthonormalise(&cpu, a.c, m, R);
            G->orthonormalise(&gpu, a.g, m, R);
            char what[48];
            snprintf(what, sizeof what, "orthonormalise %zu x %d", m, R);
            compare(what, a, 1e-6);
            free(h);
            pair_free(&a);
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
                G->adamw(&gpu, master.g, m.g, v.g, g.g, wt ? work.g : NULL, t, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, step);
                pair_free(&g);
            }
            compare("adamw master", master, 1e-5);
            compare("adamw m", m, 1e-5);
            compare("adamw v", v, 1e-5);
            if (wt) compare("adamw working copy", work, tol_of(t));
            pair_free(&master); pair_free(&m); pair_free(&v); pair_free(&work);
        }
}

/* ---- the 16-byte paths' fallbacks ------------------------------------------------------------ */
/* The fast kernels move 16 bytes at a time only when every pointer is
 * 16-byte aligned (and rows are whole chunks); one element into a buffer,
 * they must take their scalar loops and give the same results. Each buffer
 * here has one element more than the op uses; element 0 is never touched. */
static void *at1(void *p, dtype_t t) { return (char *)p + dtype_size(t); }

TEST(cuda_emu_op_vector_kernels_take_scalar_loops_one_element_off_alignment) {
    setup();
    for (int ti = 0; ti < 2; ti++) {
        dtype_t t = ti ? DT_BF16 : DT_F32, o = ti ? DT_F32 : DT_BF16;
        const size_t n = 1000;
        pair_t a = pair_rand(n + 1, t, 3), b = pair_rand(n + 1, t, 3), out = pair_zero(n + 1, t);
        op_add(&cpu, t, at1(a.c, t), at1(b.c, t), at1(out.c, t), n);
        G->add(&gpu, t, at1(a.g, t), at1(b.g, t), at1(out.g, t), n);
        compare("add, unaligned", out, tol_of(t));
        pair_t c = pair_zero(n + 1, o);
        op_cast(&cpu, at1(a.c, t), t, at1(c.c, o), o, n);
        G->cast(&gpu, at1(a.g, t), t, at1(c.g, o), o, n);
        compare("cast, unaligned", c, 0);
        op_scale(&cpu, t, at1(b.c, t), 0.3f, n);
        G->scale(&gpu, t, at1(b.g, t), 0.3f, n);
        compare("scale, unaligned", b, 0);
        op_swiglu_forward(&cpu, t, at1(a.c, t), at1(b.c, t), at1(out.c, t), n);
        G->swiglu_forward(&gpu, t, at1(a.g, t), at1(b.g, t), at1(out.g, t), n);
        compare("swiglu forward, unaligned", out, tol_of(t));
        op_swiglu_backward(&cpu, t, at1(a.c, t), at1(b.c, t), at1(out.c, t), at1(a.c, t), at1(b.c, t), n);
        G->swiglu_backward(&gpu, t, at1(a.g, t), at1(b.g, t), at1(out.g, t), at1(a.g, t), at1(b.g, t), n);
        compare("swiglu backward da, unaligned", a, tol_of(t));
        compare("swiglu backward db, unaligned", b, tol_of(t));
        pair_free(&a); pair_free(&b); pair_free(&out); pair_free(&c);

        /* AdamW: fp32 state one float in, the working copy one element in */
        pair_t master = pair_rand(n + 1, DT_F32, 1), m = pair_zero(n + 1, DT_F32), v = pair_zero(n + 1, DT_F32);
        pair_t g = pair_rand(n + 1, DT_F32, 1), work = pair_zero(n + 1, t);
        op_adamw(&cpu, at1(master.c, DT_F32), at1(m.c, DT_F32), at1(v.c, DT_F32), at1(g.c, DT_F32), at1(work.c, t), t, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1);
        G->adamw(&gpu, at1(master.g, DT_F32), at1(m.g, DT_F32), at1(v.g, DT_F32), at1(g.g, DT_F32), at1(work.g, t), t, n, 1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.0f, 1);
        compare("adamw master, unaligned", master, 1e-5);
        compare("adamw working copy, unaligned", work, tol_of(t));
        pair_free(&master); pair_free(&m); pair_free(&v); pair_free(&g); pair_free(&work);

        /* rows of 64: whole chunks, but every row one element off */
        const int N = 5, C = 64;
        pair_t x = pair_rand((size_t)N * C + 1, t, 2), w = pair_rand(C + 1, t, 1), y = pair_zero((size_t)N * C + 1, t);
        pair_t rstd = pair_zero(N, DT_F32), dy = pair_rand((size_t)N * C + 1, t, 1), dw = pair_rand(C, DT_F32, 1);
        op_rmsnorm_forward(&cpu, t, at1(x.c, t), at1(w.c, t), at1(y.c, t), rstd.c, N, C, 1e-5f);
        G->rmsnorm_forward(&gpu, t, at1(x.g, t), at1(w.g, t), at1(y.g, t), rstd.g, N, C, 1e-5f);
        compare("rmsnorm forward, unaligned", y, tol_of(t));
        op_rmsnorm_backward(&cpu, t, at1(x.c, t), at1(w.c, t), rstd.c, at1(dy.c, t), NULL, at1(y.c, t), dw.c, N, C);
        G->rmsnorm_backward(&gpu, t, at1(x.g, t), at1(w.g, t), rstd.g, at1(dy.g, t), NULL, at1(y.g, t), dw.g, N, C);
        compare("rmsnorm backward dx, unaligned", y, tol_of(t));
        compare("rmsnorm backward dw, unaligned", dw, 1e-5);
        int *yg, *yc = tokens_pair(&yg, N, 8, 1);   /* targets, and tokens of an 8-row table */
        pair_t picked = pair_zero(N, DT_F32), lse = pair_zero(N, DT_F32);
        op_xent_forward(&cpu, t, at1(x.c, t), yc, picked.c, lse.c, N, C, 0);
        G->xent_forward(&gpu, t, at1(x.g, t), yg, picked.g, lse.g, N, C, 0);
        compare("cross-entropy lse, unaligned", lse, 1e-5);
        op_xent_backward(&cpu, t, at1(x.c, t), yc, lse.c, at1(x.c, t), 0.5f, N, C, 0);
        G->xent_backward(&gpu, t, at1(x.g, t), yg, lse.g, at1(x.g, t), 0.5f, N, C, 0);
        compare("cross-entropy dlogits, unaligned", x, tol_of(t));
        pair_t e = pair_zero((size_t)N * 8 + 1, t);   /* rows of 8 from the table w: (8, 8) */
        op_embedding_forward(&cpu, t, yc, at1(w.c, t), at1(e.c, t), N, 8, 0, 8);
        G->embedding_forward(&gpu, t, yg, at1(w.g, t), at1(e.g, t), N, 8, 0, 8);
        compare("embedding forward, unaligned", e, 0);
        pair_free(&e);
        float *cs = xmalloc(4 * C * sizeof(float));
        rope_table(cs, 4, 16, 10000.0);
        pair_t tab = pair_from(cs, 4 * 16, DT_F32);
        op_rope(&cpu, t, at1(dy.c, t), tab.c, 1, 4, 2, 16, 0, 0);
        G->rope(&gpu, t, at1(dy.g, t), tab.g, 1, 4, 2, 16, 0, 0);
        compare("rope, unaligned", dy, tol_of(t));
        free(cs);
        pair_free(&x); pair_free(&w); pair_free(&y); pair_free(&rstd); pair_free(&dy); pair_free(&dw);
        pair_free(&picked); pair_free(&lse); pair_free(&tab);
        dev_free(&cpu, yc); dev_free(&gpu, yg);

        /* attention: the flash kernels' scalar tile loads and stores */
        const int B = 1, T = 33, H = 2, KV = 1, hd = 16;
        size_t nq = (size_t)B * T * H * hd, nk = (size_t)B * T * KV * hd;
        double atol = tol_of(t) * (flash_path(t, hd) ? 2 : 1);
        pair_t q = pair_rand(nq + 1, t, 2), k = pair_rand(nk + 1, t, 2), vv = pair_rand(nk + 1, t, 1);
        pair_t ao = pair_zero(nq + 1, t), al = pair_zero((size_t)B * H * T, DT_F32);
        pair_t dq = pair_rand(nq + 1, t, 1), dk = pair_rand(nk + 1, t, 1), dv = pair_rand(nk + 1, t, 1);
        op_attn_forward(&cpu, t, at1(q.c, t), at1(k.c, t), at1(vv.c, t), at1(ao.c, t), al.c, B, T, T, H, KV, hd, 0, 0);
        G->attn_forward(&gpu, t, at1(q.g, t), at1(k.g, t), at1(vv.g, t), at1(ao.g, t), al.g, B, T, T, H, KV, hd, 0, 0);
        compare("attention forward, unaligned", ao, atol);
        op_attn_backward(&cpu, t, at1(q.c, t), at1(k.c, t), at1(vv.c, t), at1(ao.c, t), at1(q.c, t), al.c, at1(dq.c, t), at1(dk.c, t), at1(dv.c, t), B, T, T, H, KV, hd, 0, 0);
        G->attn_backward(&gpu, t, at1(q.g, t), at1(k.g, t), at1(vv.g, t), at1(ao.g, t), at1(q.g, t), al.g, at1(dq.g, t), at1(dk.g, t), at1(dv.g, t), B, T, T, H, KV, hd, 0, 0);
        compare("attention backward dq, unaligned", dq, atol);
        compare("attention backward dk, unaligned", dk, atol);
        compare("attention backward dv, unaligned", dv, atol);
        pair_free(&q); pair_free(&k); pair_free(&vv); pair_free(&ao); pair_free(&al);
        pair_free(&dq); pair_free(&dk); pair_free(&dv);
    }
}
