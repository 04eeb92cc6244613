/* unit_shards.c: a model cut into tensor-, sequence- and context-parallel
 * shards, run on real ranks with their communication, equals the whole
 * model: the same loss, and every rank's gradients equal its slice of the
 * whole model's gradients (after the sums each technique owes: replicated
 * tensor-parallel blocks, context-parallel ranks). Every rank also runs the
 * whole model itself as the reference. Runs on 2 and 4 ranks (test list).
 *
 * Tensor parallelism uses the chapter's own seams (08_tensor_parallel/tp.c).
 * Context parallelism needs an attention core that sees the other ranks'
 * keys; the one here is the simplest possible: all-gather every rank's keys
 * and values, attend to all their chunks, and reduce-scatter the key/value
 * gradients back. Chapter 09's ring and Ulysses cores (09_context_parallel/
 * cp.c) are held to the same comparison, alone and under tensor
 * parallelism, as chapter 10 composes them. */
#define UNIT_MAIN
#include "unit.h"

#include "08_tensor_parallel/tp.h"
#include "09_context_parallel/cp.h"
#include "comm.h"
#include "model.h"
#include "ops.h"

static device_t dev;

static void setup(void) {
    const char *want = getenv("DEV");
    device_init(&dev, want && *want ? want : "cpu", unit_dist.local_rank, unit_dist.local_world, 1);
}

static void batch(const model_config_t *c, int B, int *tok, int *tg) {
    uint64_t s = 99;
    for (int i = 0; i < B * c->seq; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        tok[i] = (int)((s >> 33) % c->vocab);
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        tg[i] = (int)((s >> 33) % c->vocab);
    }
}

/* The whole model's loss and gradients (host, full layout). */
static double reference(const model_config_t *c, const float *p, int B, const int *tok,
                        const int *tg, float *grads) {
    model_t m;
    model_shard_t s = model_shard_full(c);
    model_init(&m, c, &s, B, DT_F32, &dev, 1);
    model_load_params(&m, p);
    model_acts_t a;
    model_acts_init(&m, &a, 0, B, (model_recompute_t){0});
    model_zero_grads(&m);
    model_set_batch(&m, &a, tok, tg);
    double loss = model_forward(&m, &a);
    model_backward(&m, &a, 0.05f, NULL);
    dev_to_host(&dev, grads, m.grads, m.size * sizeof(float));
    model_acts_free(&m, &a);
    model_free(&m);
    return loss;
}

/* ---- a context-parallel attention core: all-gather keys and values -------------- */
typedef struct {
    comm_t *cp;
    void *k_all, *v_all, *dk_all, *dv_all;   /* (cp, Rf, KV*hd) */
} gather_attn_t;

static void gather_kv(gather_attn_t *g, model_t *m, const model_acts_t *a, const void *k, const void *v) {
    size_t n = a->rows_full * m->KV * m->hd;
    comm_allgather(g->cp, k, g->k_all, n, m->dtype);
    comm_allgather(g->cp, v, g->v_all, n, m->dtype);
}

static void ga_forward(void *ctx, model_t *m, const model_acts_t *a, const void *q, const void *k,
                       const void *v, void *out, float *lse) {
    gather_attn_t *g = ctx;
    gather_kv(g, m, a, k, v);
    const int B = a->B, Tc = m->Tc, H = m->H, KV = m->KV, hd = m->hd, es = (int)dtype_size(m->dtype);
    const size_t cq = (size_t)B * Tc * H * hd, ck = (size_t)B * Tc * KV * hd, cl = (size_t)B * H * Tc;
    void *ob = dev_alloc(m->d, cq * es);
    float *lb = dev_alloc(m->d, cl * sizeof(float));
    for (int qk = 0; qk < m->nck; qk++) {
        int first = 1;
        for (int r = 0; r < g->cp->size; r++)
            for (int kk = 0; kk < m->nck; kk++) {
                int kp = model_cp_chunk_pos(m, r, kk);
                if (kp > m->chunk_pos[qk] + Tc - 1) continue;   /* all in the future */
                size_t koff = ((size_t)r * m->nck + kk) * ck * es;
                void *o = first ? (char *)out + qk * cq * es : ob;
                float *l = first ? lse + qk * cl : lb;
                op_attn_forward(m->d, m->dtype, (const char *)q + qk * cq * es, (char *)g->k_all + koff,
                                (char *)g->v_all + koff, o, l, B, Tc, Tc, H, KV, hd, m->chunk_pos[qk], kp);
                if (!first) op_attn_merge(m->d, m->dtype, (char *)out + qk * cq * es, lse + qk * cl, ob, lb, B, Tc, H, hd);
                first = 0;
            }
    }
    dev_free(m->d, ob);
    dev_free(m->d, lb);
}

static void ga_backward(void *ctx, model_t *m, const model_acts_t *a, const void *q, const void *k,
                        const void *v, const void *out, const void *dout, const float *lse, void *dq,
                        void *dk, void *dv) {
    gather_attn_t *g = ctx;
    gather_kv(g, m, a, k, v);
    const int B = a->B, Tc = m->Tc, H = m->H, KV = m->KV, hd = m->hd, es = (int)dtype_size(m->dtype);
    const size_t cq = (size_t)B * Tc * H * hd, ck = (size_t)B * Tc * KV * hd, cl = (size_t)B * H * Tc;
    size_t n = a->rows_full * KV * hd;
    dev_memset0(m->d, g->dk_all, n * g->cp->size * es);
    dev_memset0(m->d, g->dv_all, n * g->cp->size * es);
    for (int qk = 0; qk < m->nck; qk++)
        for (int r = 0; r < g->cp->size; r++)
            for (int kk = 0; kk < m->nck; kk++) {
                int kp = model_cp_chunk_pos(m, r, kk);
                if (kp > m->chunk_pos[qk] + Tc - 1) continue;
                size_t koff = ((size_t)r * m->nck + kk) * ck * es;
                op_attn_backward(m->d, m->dtype, (const char *)q + qk * cq * es, (char *)g->k_all + koff,
                                 (char *)g->v_all + koff, (const char *)out + qk * cq * es,
                                 (const char *)dout + qk * cq * es, lse + qk * cl, (char *)dq + qk * cq * es,
                                 (char *)g->dk_all + koff, (char *)g->dv_all + koff, B, Tc, Tc, H, KV, hd,
                                 m->chunk_pos[qk], kp);
            }
    /* each rank's key/value gradients: the sum over every rank's queries */
    void *tmp = dev_alloc(m->d, n * es);
    comm_reduce_scatter(g->cp, g->dk_all, tmp, n, m->dtype, RED_SUM);
    op_add(m->d, m->dtype, dk, tmp, dk, n);
    comm_reduce_scatter(g->cp, g->dv_all, tmp, n, m->dtype, RED_SUM);
    op_add(m->d, m->dtype, dv, tmp, dv, n);
    dev_free(m->d, tmp);
}

/* ---- one shard against the whole model ---------------------------------------------- */
typedef enum { CORE_GATHER, CORE_RING, CORE_ULYSSES } core_t;
typedef struct { int tp, sp, cp, balance; core_t core; } layout_t;

static void shard_matches_whole(layout_t L) {
    setup();
    const int W = unit_dist.world;
    if (L.tp * L.cp != W) { UNIT_FAIL("layout for %d ranks run on %d", L.tp * L.cp, W); return; }
    /* 4 heads on 2 kv heads: tp 4 shares each kv head between 2 ranks */
    model_config_t c = {16, 16, 2, 4, 2, 0, 32, 8};
    model_config_check(&c);
    const int B = 2;
    size_t N = model_param_count(&c);
    float *p = xmalloc(N * 4), *gfull = xmalloc(N * 4);
    model_init_params(p, &c, 5);
    for (size_t i = 0; i < N; i++) p[i] = p[i] == 1.0f ? 1.0f + 0.01f * (float)(i % 7) : p[i] * 8;
    int tok[16], tg[16];
    batch(&c, B, tok, tg);
    tg[3] = -1;   /* an ignored target */
    double lref = reference(&c, p, B, tok, tg, gfull);

    mesh_t mesh;
    mesh_init(&mesh, &unit_dist, L.tp, L.cp, 1, 1);
    comm_t tpc, cpc;
    comm_init(&tpc, mesh.axis[AXIS_TP], "auto", &dev);   /* NCCL on GPUs of their own */
    comm_init(&cpc, mesh.axis[AXIS_CP], "auto", &dev);
    model_shard_t s = model_shard_full(&c);
    s.tp = L.tp;
    s.tp_rank = mesh.coord[AXIS_TP];
    s.sp = L.sp;
    s.cp = L.cp;
    s.cp_rank = mesh.coord[AXIS_CP];
    s.cp_balance = L.balance;
    model_t m;
    model_init(&m, &c, &s, B, DT_F32, &dev, 1);
    float *ps = xmalloc(m.size * 4), *g = xmalloc(m.size * 4), *want = xmalloc(m.size * 4);
    model_shard_slice(&c, &s, 0, m.size, p, ps);
    model_load_params(&m, ps);
    tp_t tp;
    if (L.tp > 1) tp_init(&tp, &tpc, &m);
    size_t kvn = (size_t)B * m.T * m.KV * m.hd * (size_t)L.cp * sizeof(float);
    gather_attn_t ga = {&cpc, dev_alloc(&dev, kvn), dev_alloc(&dev, kvn), dev_alloc(&dev, kvn), dev_alloc(&dev, kvn)};
    cp_t cpcore;
    if (L.cp > 1 && L.core == CORE_GATHER) m.attn = (model_attn_t){&ga, ga_forward, ga_backward};
    if (L.cp > 1 && L.core != CORE_GATHER)
        cp_init(&cpcore, &cpc, &m, L.core == CORE_RING ? CP_RING : CP_ULYSSES);
    model_acts_t a;
    model_acts_init(&m, &a, 0, B, (model_recompute_t){0});
    model_zero_grads(&m);
    model_set_batch(&m, &a, tok, tg);
    double loss = model_forward(&m, &a);
    model_backward(&m, &a, 0.05f, NULL);
    /* what each technique owes: replicated tensor-parallel blocks summed
     * over their replicas; context-parallel ranks' gradients and losses
     * summed (as data-parallel ones would be) */
    optim_piece_t whole = {0, 0, m.size, m.grads, NULL};
    optim_t o = {.npieces = 1, .pieces = &whole};
    if (L.tp > 1) tp_reduce_replicated_grads(&tp, &m, &o);
    if (L.cp > 1) comm_allreduce(&cpc, m.grads, m.grads, m.size, DT_F32, RED_SUM);
    double total = model_counts_loss(&m) ? loss : 0.0;
    MPI_Allreduce(MPI_IN_PLACE, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    dev_to_host(&dev, g, m.grads, m.size * 4);
    model_shard_slice(&c, &s, 0, m.size, gfull, want);
    double maxd = 0, maxr = 0;
    size_t at = 0;
    for (size_t i = 0; i < m.size; i++) {
        double d = fabs((double)g[i] - want[i]);
        if (d > maxd) { maxd = d; at = i; }
        maxr = fmax(maxr, fabs((double)want[i]));
    }
    double lerr = fabs(total - lref) / fabs(lref), gerr = maxd / maxr;
    if (unit_dist.rank == 0 || gerr > 1e-5)
        printf("rank %d: tp %d%s cp %d%s%s: loss %.9g vs whole %.9g (rel. %.2g); gradients max |diff| / max = %.2g (element %zu)\n",
               unit_dist.rank, L.tp, L.sp ? " sp" : "", L.cp, L.cp > 1 ? (L.balance ? " balanced" : " in order") : "",
               L.cp > 1 ? (const char *[]){" all-gather", " ring", " ulysses"}[L.core] : "",
               total, lref, lerr, gerr, at);
    if (!(lerr < 1e-6)) UNIT_FAIL("loss %.9g differs from the whole model's %.9g", total, lref);
    if (!(gerr < 1e-5)) UNIT_FAIL("gradients differ from the whole model's slice: %.3g", gerr);
    model_acts_free(&m, &a);
    if (L.tp > 1) tp_free(&tp);
    if (L.cp > 1 && L.core != CORE_GATHER) cp_free(&cpcore);
    model_free(&m);
    dev_free(&dev, ga.k_all); dev_free(&dev, ga.v_all); dev_free(&dev, ga.dk_all); dev_free(&dev, ga.dv_all);
    comm_destroy(&tpc);
    comm_destroy(&cpc);
    mesh_destroy(&mesh);
    free(p); free(gfull); free(ps); free(g); free(want);
}

/* Whatever the world (2 or 4 ranks): */
TEST(shards_tensor_parallel_equal_the_whole_model) {
    shard_matches_whole((layout_t){unit_dist.world, 0, 1, 1, CORE_GATHER});
}
TEST(shards_sequence_parallel_equal_the_whole_model) {
    shard_matches_whole((layout_t){unit_dist.world, 1, 1, 1, CORE_GATHER});
}
TEST(shards_context_parallel_balanced_equal_the_whole_model) {
    shard_matches_whole((layout_t){1, 0, unit_dist.world, 1, CORE_GATHER});
}
TEST(shards_context_parallel_in_order_equal_the_whole_model) {
    shard_matches_whole((layout_t){1, 0, unit_dist.world, 0, CORE_GATHER});
}
/* 4 ranks: both at once. */
TEST(shards_tensor_x_context_parallel_equal_the_whole_model) {
    shard_matches_whole((layout_t){2, 1, unit_dist.world / 2, 1, CORE_GATHER});
}
/* Chapter 09's cores, alone (2 or 4 ranks: Ulysses on 4 shares each kv head
 * between 2) and under tensor parallelism with sp (4 ranks: 2 x 2). */
TEST(shards_context_parallel_ring_balanced_equal_the_whole_model) {
    shard_matches_whole((layout_t){1, 0, unit_dist.world, 1, CORE_RING});
}
TEST(shards_context_parallel_ring_in_order_equal_the_whole_model) {
    shard_matches_whole((layout_t){1, 0, unit_dist.world, 0, CORE_RING});
}
TEST(shards_context_parallel_ulysses_equal_the_whole_model) {
    shard_matches_whole((layout_t){1, 0, unit_dist.world, 1, CORE_ULYSSES});
}
TEST(shards_tensor_x_context_parallel_ring_equal_the_whole_model) {
    shard_matches_whole((layout_t){2, 1, unit_dist.world / 2, 1, CORE_RING});
}
TEST(shards_tensor_x_context_parallel_ulysses_equal_the_whole_model) {
    shard_matches_whole((layout_t){2, 1, unit_dist.world / 2, 1, CORE_ULYSSES});
}

/* ---- the layouts context parallelism relies on, element by element ------------------ */
/* 4 heads on 2 kv heads, 24 tokens: 2C chunks for C up to 4 (balanced) and C chunks. */
static const model_config_t LAYOUT_CFG = {.vocab = 16, .dim = 16, .layers = 1, .heads = 4, .kv_heads = 2,
                                          .ffn = 32, .seq = 24};

static void shard_cp(model_t *m, const model_config_t *c, int C, int r, int balance, int B) {
    model_shard_t s = model_shard_full(c);
    s.cp = C;
    s.cp_rank = r;
    s.cp_balance = balance;
    model_init(m, c, &s, B, DT_F32, &dev, 1);
}

/* Balanced, rank i holds chunks i and 2C-1-i of the 2C (one early, one
 * late: equal causal work); in order, chunk i of C. Every rank's positions,
 * as it sees itself and as the others see it, for C = 1..4 (one rank holds
 * the sequence as one chunk either way). */
TEST(cp_balanced_layout_gives_rank_i_chunks_i_and_2c_minus_1_minus_i) {
    setup();
    model_config_t c = LAYOUT_CFG;
    model_config_check(&c);
    const int T = c.seq;
    for (int C = 1; C <= 4; C++)
        for (int balance = 0; balance <= (C > 1); balance++)
            for (int r = 0; r < C; r++) {
                model_t m;
                shard_cp(&m, &c, C, r, balance, 1);
                const int nck = balance ? 2 : 1, Tc = T / (nck * C);
                EXPECT_EQ_INT(m.nck, nck);
                EXPECT_EQ_INT(m.Tc, Tc);
                for (int k = 0; k < nck; k++) {
                    int want = balance ? (k == 0 ? r : 2 * C - 1 - r) * Tc : r * Tc;
                    if (m.chunk_pos[k] != want)
                        UNIT_FAIL("C %d %s, rank %d: chunk %d starts at token %d, want %d", C,
                                  balance ? "balanced" : "in order", r, k, m.chunk_pos[k], want);
                    for (int j = 0; j < C; j++) {   /* rank r's view of rank j */
                        int wj = balance ? (k == 0 ? j : 2 * C - 1 - j) * Tc : j * Tc;
                        if (model_cp_chunk_pos(&m, j, k) != wj)
                            UNIT_FAIL("C %d %s, rank %d sees rank %d's chunk %d at %d, want %d", C,
                                      balance ? "balanced" : "in order", r, j, k, model_cp_chunk_pos(&m, j, k), wj);
                    }
                }
                model_free(&m);
            }
    printf("C = 1..4, balanced and in order: every rank's chunks where the layout puts them\n");
}

/* Ulysses's all-to-all: after it, rank r holds heads r H/C.. of q and the kv
 * heads those query heads read (KV/C of them when C divides KV, else the
 * one of its group) for every token of every sequence. Each element of q,
 * k, v carries its own (sequence, token, head, column) as its value, so
 * the head layout is compared element by element with the one an
 * independent gather from every rank's tokens gives. 2 ranks split the 2
 * kv heads; 4 share each between 2. */
static float code(int which, int b, int t, int h, int d, int T, int heads, int hd) {
    return (float)(which * 10000 + ((b * T + t) * heads + h) * hd + d);
}

TEST(ulysses_all_to_all_gives_each_rank_its_heads_of_every_token) {
    setup();
    model_config_t c = LAYOUT_CFG;
    model_config_check(&c);
    const int C = unit_dist.world, r = unit_dist.rank, B = 2, T = c.seq;
    comm_t cpc;
    comm_init(&cpc, MPI_COMM_WORLD, "auto", &dev);
    model_t m;
    shard_cp(&m, &c, C, r, 1, B);
    cp_t u;
    cp_init(&u, &cpc, &m, CP_ULYSSES);
    model_acts_t a;
    model_acts_init(&m, &a, 0, B, (model_recompute_t){0});
    const int H = m.H, KV = m.KV, hd = m.hd, Hc = H / C, KVc = KV >= C ? KV / C : 1;
    const size_t Rf = a.rows_full;
    float *q = xmalloc(Rf * H * hd * 4), *k = xmalloc(Rf * KV * hd * 4), *v = xmalloc(Rf * KV * hd * 4);
    for (int ck = 0; ck < m.nck; ck++)   /* this rank's rows: chunk, sequence, token */
        for (int b = 0; b < B; b++)
            for (int tt = 0; tt < m.Tc; tt++) {
                size_t row = ((size_t)ck * B + b) * m.Tc + tt;
                int t = m.chunk_pos[ck] + tt;
                for (int h = 0; h < H; h++)
                    for (int d = 0; d < hd; d++) q[row * H * hd + h * hd + d] = code(0, b, t, h, d, T, H, hd);
                for (int h = 0; h < KV; h++)
                    for (int d = 0; d < hd; d++) {
                        k[row * KV * hd + h * hd + d] = code(1, b, t, h, d, T, KV, hd);
                        v[row * KV * hd + h * hd + d] = code(2, b, t, h, d, T, KV, hd);
                    }
            }
    void *qd = dev_alloc(&dev, Rf * H * hd * 4), *kd = dev_alloc(&dev, Rf * KV * hd * 4),
         *vd = dev_alloc(&dev, Rf * KV * hd * 4), *out = dev_alloc(&dev, Rf * H * hd * 4);
    float *lse = dev_alloc(&dev, Rf * H * 4);
    dev_from_host(&dev, qd, q, Rf * H * hd * 4);
    dev_from_host(&dev, kd, k, Rf * KV * hd * 4);
    dev_from_host(&dev, vd, v, Rf * KV * hd * 4);
    m.attn.forward(m.attn.ctx, &m, &a, qd, kd, vd, out, lse);
    float *qh = xmalloc((size_t)B * T * Hc * hd * 4), *kh = xmalloc((size_t)B * T * KVc * hd * 4),
          *vh = xmalloc((size_t)B * T * KVc * hd * 4);
    dev_to_host(&dev, qh, u.qh, (size_t)B * T * Hc * hd * 4);
    dev_to_host(&dev, kh, u.kh, (size_t)B * T * KVc * hd * 4);
    dev_to_host(&dev, vh, u.vh, (size_t)B * T * KVc * hd * 4);
    /* query head h reads kv head h / (H / KV) */
    const int kv0 = r * Hc / (H / KV);
    int wrong = 0;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++)
            for (int d = 0; d < hd; d++) {
                for (int j = 0; j < Hc; j++) {
                    float got = qh[(((size_t)b * T + t) * Hc + j) * hd + d], want = code(0, b, t, r * Hc + j, d, T, H, hd);
                    if (got != want && wrong++ < 5)
                        UNIT_FAIL("q: sequence %d token %d head %d column %d is %g, want %g", b, t, r * Hc + j, d, got, want);
                }
                for (int j = 0; j < KVc; j++) {
                    size_t at = (((size_t)b * T + t) * KVc + j) * hd + d;
                    float wk = code(1, b, t, kv0 + j, d, T, KV, hd), wv = code(2, b, t, kv0 + j, d, T, KV, hd);
                    if (kh[at] != wk && wrong++ < 5)
                        UNIT_FAIL("k: sequence %d token %d kv head %d column %d is %g, want %g", b, t, kv0 + j, d, kh[at], wk);
                    if (vh[at] != wv && wrong++ < 5)
                        UNIT_FAIL("v: sequence %d token %d kv head %d column %d is %g, want %g", b, t, kv0 + j, d, vh[at], wv);
                }
            }
    printf("rank %d of %d: heads %d-%d, kv heads %d-%d of every token: %d elements wrong\n", r, C, r * Hc,
           r * Hc + Hc - 1, kv0, kv0 + KVc - 1, wrong);
    dev_free(&dev, qd); dev_free(&dev, kd); dev_free(&dev, vd); dev_free(&dev, out); dev_free(&dev, lse);
    free(q); free(k); free(v); free(qh); free(kh); free(vh);
    model_acts_free(&m, &a);
    cp_free(&u);
    model_free(&m);
    comm_destroy(&cpc);
}
