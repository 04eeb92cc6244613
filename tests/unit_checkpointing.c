/* unit_checkpointing.c: chapter 06's models against what the code does.
 *
 *   - the recomputation policies' flag parsing and refusals;
 *   - the cost model's activation bytes against the bytes the model really
 *     allocates (device.h's counters), for every policy, fp32 and bf16, and
 *     against the closed forms written in recompute.h;
 *   - the meter's counts of recomputed layers and attention cores and their
 *     FLOPs against the cost model and the model's own FLOP formula;
 *   - Young's and Daly's intervals against their formulas and against the
 *     numerical optimum of Daly's goodput;
 *   - the injected failures: deterministic, exponential with the asked mean,
 *     bad step lists refused.
 * Runs on the device under test (DEV=cpu|cuda). */
#define UNIT_MAIN
#include "unit.h"

#include <stdint.h>

#include "06_checkpointing/failure.h"
#include "06_checkpointing/recompute.h"
#include "device.h"
#include "model.h"

static device_t dev;

static void setup(void) {
    const char *want = getenv("DEV");
    device_init(&dev, want && *want ? want : "cpu", unit_dist.local_rank, unit_dist.local_world, 1);
}

TEST(checkpointing_recompute_policies_parse_and_bad_ones_are_refused) {
    recompute_t r;
    char err[300];
    EXPECT_EQ_INT(recompute_parse("none", 16, &r, err, sizeof err), 0);
    EXPECT(r.keep.every == 0 && r.keep.block == 0 && !r.keep.selective);
    EXPECT_EQ_INT(recompute_parse("full", 16, &r, err, sizeof err), 0);
    EXPECT_EQ_INT(r.keep.every, 1);
    EXPECT_EQ_INT(recompute_parse("sqrt", 16, &r, err, sizeof err), 0);
    EXPECT_EQ_INT(r.keep.every, 4);
    EXPECT_EQ_INT(recompute_parse("sqrt", 32, &r, err, sizeof err), 0);
    EXPECT_EQ_INT(r.keep.every, 6);   /* round(5.66) */
    EXPECT_EQ_INT(recompute_parse("sqrt", 1, &r, err, sizeof err), 0);
    EXPECT_EQ_INT(r.keep.every, 1);
    EXPECT_EQ_INT(recompute_parse("every:16", 16, &r, err, sizeof err), 0);
    EXPECT_EQ_INT(r.keep.every, 16);
    EXPECT_EQ_INT(recompute_parse("block:3", 16, &r, err, sizeof err), 0);
    EXPECT_EQ_INT(r.keep.block, 3);
    EXPECT_EQ_INT(recompute_parse("selective", 16, &r, err, sizeof err), 0);
    EXPECT_EQ_INT(r.keep.selective, 1);
    const char *bad[] = {"every:0", "every:17", "every:", "every:2x", "every:-1", "block:0", "block:17",
                         "sqrt:2", "Full", ""};
    for (int i = 0; i < (int)(sizeof bad / sizeof bad[0]); i++) {
        err[0] = 0;
        if (recompute_parse(bad[i], 16, &r, err, sizeof err) == 0) UNIT_FAIL("'%s' accepted", bad[i]);
        else if (!strstr(err, "--recompute")) UNIT_FAIL("'%s' refused without naming the flag: %s", bad[i], err);
    }
}

/* Random weights on a whole model of this config on the device under test. */
static void make_model(model_t *m, const model_config_t *c, int B, dtype_t t) {
    model_shard_t s = model_shard_full(c);
    model_init(m, c, &s, B, t, &dev, 1);
    float *p = xmalloc(model_param_count(c) * sizeof(float));
    model_init_params(p, c, 5);
    model_load_params(m, p);
    free(p);
}

static void policies(int L, recompute_t *out, int *n) {
    char err[300], s[32];
    *n = 0;
    recompute_parse("none", L, &out[(*n)++], err, sizeof err);
    recompute_parse("selective", L, &out[(*n)++], err, sizeof err);
    for (int k = 1; k <= L; k++) {
        snprintf(s, sizeof s, "every:%d", k);
        recompute_parse(s, L, &out[(*n)++], err, sizeof err);
        snprintf(s, sizeof s, "block:%d", k);
        recompute_parse(s, L, &out[(*n)++], err, sizeof err);
    }
}

static void acts_init(model_t *m, model_acts_t *a, int B, const recompute_t *r) {
    model_acts_init(m, a, 0, B, r->keep);
}

/* The cost model's bytes are the bytes allocated, exactly; and they have
 * the closed forms of recompute.h. */
TEST(checkpointing_activation_bytes_match_the_cost_model_for_every_policy) {
    setup();
    model_config_t c = {23, 24, 7, 4, 2, 0, 40, 10};   /* 7 layers: segments that do not divide */
    const int B = 3;
    for (int dt = 0; dt < 2; dt++) {
        dtype_t t = dt ? DT_BF16 : DT_F32;
        size_t before = dev_mem()->now[MEM_ACTS];
        model_t m;
        make_model(&m, &c, B, t);
        recompute_t pol[64];
        int np;
        policies(c.layers, pol, &np);
        for (int k = 0; k < np; k++) {
            recompute_cost_t cost;
            recompute_cost(&m, B, &pol[k], &cost);
            double scratch = (double)(dev_mem()->now[MEM_ACTS] - before);
            if (scratch != cost.scratch)
                UNIT_FAIL("%s %s: backward scratch %.0f bytes allocated, the model says %.0f", dtype_name(t),
                          pol[k].name, scratch, cost.scratch);
            model_acts_t a;
            acts_init(&m, &a, B, &pol[k]);
            double got = (double)(dev_mem()->now[MEM_ACTS] - before) - scratch;
            if (got != (double)a.bytes) UNIT_FAIL("%s: the object counts %zu bytes, the allocator %.0f", pol[k].name, a.bytes, got);
            if (got != cost.bytes)
                UNIT_FAIL("%s %s: %.0f activation bytes allocated, the cost model says %.0f (off by %.0f)",
                          dtype_name(t), pol[k].name, got, cost.bytes, got - cost.bytes);
            /* recompute.h's closed forms, with x = input, A = layer */
            double x = cost.input, A = cost.layer, L = c.layers, closed;
            if (pol[k].keep.every) closed = ceil(L / pol[k].keep.every) * x + pol[k].keep.every * A;
            else if (pol[k].keep.block && pol[k].keep.block < L) closed = (L + 1) * x + (L - pol[k].keep.block) * (A - x);
            else if (pol[k].keep.block) closed = L * x + A;
            else closed = x + L * A;
            if (fabs(closed + cost.head - cost.bytes) > 0.5)
                UNIT_FAIL("%s: closed form %.0f + head %.0f, cost model %.0f", pol[k].name, closed, cost.head, cost.bytes);
            model_acts_free(&m, &a);
        }
        model_free(&m);
    }
}

/* What the meter counted in one forward and backward is what the cost model
 * says each policy recomputes, and the FLOPs agree with the model's own
 * per-layer formula (model.h). */
TEST(checkpointing_meter_counts_what_backward_recomputed) {
    setup();
    model_config_t c = {17, 16, 5, 4, 2, 0, 24, 6};
    const int B = 2;
    model_t m;
    make_model(&m, &c, B, DT_F32);
    recompute_meter_t mt;
    recompute_meter_attach(&mt, &m);
    int tok[12], tg[12];
    for (int i = 0; i < B * c.seq; i++) { tok[i] = (i * 7 + 3) % c.vocab; tg[i] = (i * 5 + 1) % c.vocab; }
    double per_layer = model_layer_forward_flops_per_token(&c);
    EXPECT_NEAR(recompute_layer_flops(&m), per_layer, 1e-12);
    EXPECT_NEAR(recompute_attn_flops(&m), 4.0 * c.seq * c.heads * m.cfg.head_dim, 1e-12);
    recompute_t pol[64];
    int np;
    policies(c.layers, pol, &np);
    for (int k = 0; k < np; k++) {
        model_acts_t a;
        acts_init(&m, &a, B, &pol[k]);
        recompute_meter_t before = mt;
        model_zero_grads(&m);
        model_set_batch(&m, &a, tok, tg);
        model_forward(&m, &a);
        model_backward(&m, &a, 0.01f, NULL);
        recompute_cost_t cost;
        recompute_cost(&m, B, &pol[k], &cost);
        long fl = mt.fwd_layers - before.fwd_layers, rl = mt.rec_layers - before.rec_layers;
        long af = mt.attn_fwd - before.attn_fwd, ar = mt.attn_rec - before.attn_rec;
        if (fl != c.layers || af != c.layers) UNIT_FAIL("%s: forward counted %ld layers and %ld attention cores", pol[k].name, fl, af);
        if (rl != cost.layers_recomputed || rl != a.recomputed)
            UNIT_FAIL("%s: %ld layers recomputed, the cost model says %d, the model %ld", pol[k].name, rl,
                      cost.layers_recomputed, a.recomputed);
        if (ar != cost.attn_recomputed) UNIT_FAIL("%s: %ld attention cores recomputed, the cost model says %d", pol[k].name, ar, cost.attn_recomputed);
        double flops = recompute_meter_flops(&m, &before, &mt, (double)a.rows_full);
        double want = (double)B * c.seq * (cost.layers_recomputed * per_layer + cost.attn_recomputed * 4.0 * c.seq * c.heads * m.cfg.head_dim);
        if (fabs(flops - want) > 1e-9 * want || fabs(cost.flops - want) > 1e-9 * want)
            UNIT_FAIL("%s: %.6g recomputed FLOPs counted, %.6g in the cost model, %.6g from model.h's formula",
                      pol[k].name, flops, cost.flops, want);
        model_acts_free(&m, &a);
    }
    model_free(&m);
}

/* Young: sqrt(2 delta M). Daly: his closed form, which is within a few
 * percent of the true maximum of his goodput (found here by golden section). */
TEST(checkpointing_young_and_daly_intervals_match_their_formulas_and_the_optimum) {
    EXPECT_NEAR(young_interval(0.1, 10), sqrt(2.0), 1e-12);
    EXPECT_NEAR(young_interval(60, 3 * 3600), sqrt(2.0 * 60 * 3 * 3600), 1e-12);
    double r = 0.1 / 20;
    EXPECT_NEAR(daly_interval(0.1, 10), sqrt(2.0) * (1 + sqrt(r) / 3 + r / 9) - 0.1, 1e-12);
    EXPECT_NEAR(daly_interval(30, 10), 10, 1e-12);   /* delta >= 2M: checkpoint every M */
    const double cases[][3] = {{0.1, 10, 1}, {0.5, 6, 2}, {60, 3 * 3600, 600}, {0.02, 5, 0.5}};
    for (int i = 0; i < 4; i++) {
        double d = cases[i][0], M = cases[i][1], R = cases[i][2];
        double lo = d / 100, hi = 5 * M, g = (sqrt(5.0) - 1) / 2;
        for (int it = 0; it < 200; it++) {   /* goodput is unimodal in tau */
            double a = hi - g * (hi - lo), b = lo + g * (hi - lo);
            if (daly_goodput(a, d, R, M) > daly_goodput(b, d, R, M)) hi = b; else lo = a;
        }
        double best = (lo + hi) / 2, td = daly_interval(d, M), ty = young_interval(d, M);
        double gb = daly_goodput(best, d, R, M), gd = daly_goodput(td, d, R, M), gy = daly_goodput(ty, d, R, M);
        printf("delta %g M %g R %g: optimum %.4g s (goodput %.5f), Daly %.4g s (%.5f), Young %.4g s (%.5f)\n",
               d, M, R, best, gb, td, gd, ty, gy);
        if (fabs(td - best) > 0.03 * best) UNIT_FAIL("Daly's interval %.5g is %.1f%% from the optimum %.5g", td, 100 * fabs(td - best) / best, best);
        if (!(gd <= gb + 1e-12 && gd > gb - 1e-4)) UNIT_FAIL("Daly's goodput %.6f against the best %.6f", gd, gb);
        if (!(gb < 1 && gb > 0)) UNIT_FAIL("goodput %.6f outside (0, 1)", gb);
        /* no failures to speak of: goodput -> tau / (tau + delta) */
        EXPECT_NEAR(daly_goodput(1.0, 0.1, 0, 1e9), 1.0 / 1.1, 1e-6);
    }
}

TEST(checkpointing_injected_failures_are_deterministic_exponential_and_checked) {
    failure_t a, b;
    char err[300];
    EXPECT_EQ_INT(failure_plan(&a, "5,12,20", 0, 7, 1, 4, 30, err, sizeof err), 0);
    EXPECT_EQ_INT(a.at_step, 12);
    EXPECT(a.victim >= 0 && a.victim < 4);
    EXPECT_EQ_INT(failure_plan(&b, "5,12,20", 0, 7, 1, 4, 30, err, sizeof err), 0);
    EXPECT_EQ_INT(b.victim, a.victim);
    EXPECT_EQ_INT(failure_plan(&a, "5,12,20", 0, 7, 3, 4, 30, err, sizeof err), 0);
    EXPECT_EQ_INT(a.at_step, 0);   /* past the list: no failure */
    const char *bad[] = {"5,3", "0", "5,,7", "x", "5,40", "4 5"};
    for (int i = 0; i < 6; i++)
        if (failure_plan(&a, bad[i], 0, 7, 0, 4, 30, err, sizeof err) == 0) UNIT_FAIL("'%s' accepted", bad[i]);
        else if (!strstr(err, "--fail-at-step")) UNIT_FAIL("'%s' refused without naming the flag: %s", bad[i], err);
    /* exponential times: the mean over many attempts is M (standard error 1/sqrt(n)) */
    const int n = 20000;
    double sum = 0, sum2 = 0;
    int victims[4] = {0};
    for (int k = 0; k < n; k++) {
        failure_plan(&a, NULL, 3.0, 11, k, 4, 30, err, sizeof err);
        sum += a.after_s;
        sum2 += a.after_s * a.after_s;
        victims[a.victim]++;
    }
    double mean = sum / n, sd = sqrt(sum2 / n - mean * mean);
    printf("mean time to failure %.4f s (asked 3), standard deviation %.4f (exponential: 3); victims %d %d %d %d\n",
           mean, sd, victims[0], victims[1], victims[2], victims[3]);
    EXPECT_NEAR(mean, 3.0, 0.05);
    EXPECT_NEAR(sd, 3.0, 0.1);
    for (int r = 0; r < 4; r++)
        if (abs(victims[r] - n / 4) > 400) UNIT_FAIL("rank %d is the victim %d times of %d", r, victims[r], n);
}
