/* unit_grad_sync.c: gradient synchronisation (common/grad_sync.c) on real
 * ranks: bucket formation, exact sums in fp32 and bf16, no_sync, overlap on
 * = off, and the per-unit reduce-scatter of the sharded layout. The model is
 * a stand-in with five units whose backward the tests play by calling the
 * hook grad_sync added. Runs on any number of ranks (the test list uses 3). */
#define UNIT_MAIN
#include "unit.h"

#include "data.h"
#include "grad_sync.h"
#include "ops.h"

static device_t dev;
static comm_t cm;

static void setup(void) {
    device_init(&dev, "cpu", unit_dist.local_rank, unit_dist.local_world, 1);
    comm_init(&cm, MPI_COMM_WORLD, "mpi", &dev);
}

static void teardown(void) {
    comm_destroy(&cm);
    device_finalize(&dev);
}

/* Five units in flat order; backward reports them from the last. */
enum { NU = 5, NP = 1000 };
static const size_t unit_range[NU][2] = {{0, 250}, {250, 50}, {300, 300}, {600, 300}, {900, 100}};

static void fake_model(model_t *m, float *grads) {
    memset(m, 0, sizeof *m);
    m->n_units = NU;
    m->units = xcalloc(NU, sizeof *m->units);
    m->unit_g = xcalloc(NU, sizeof *m->unit_g);
    for (int u = 0; u < NU; u++) {
        m->units[u].offset = unit_range[u][0];
        m->units[u].count = unit_range[u][1];
        m->unit_g[u] = grads ? grads + unit_range[u][0] : NULL;
    }
    m->grads = grads;
    m->size = NP;
}

static void fake_model_free(model_t *m) {
    free(m->units);
    free(m->unit_g);
}

static void backward(model_t *m) {
    for (int u = NU - 1; u >= 0; u--)
        for (int h = 0; h < m->n_hooks; h++)
            if (m->hooks[h].after) m->hooks[h].after(m->hooks[h].ctx, m, u, PASS_BACKWARD);
}

TEST(grad_sync_buckets_are_whole_ranges_up_to_the_cap) {
    setup();
    float *grads = xcalloc(NP, sizeof(float));
    /* cap 350 floats: [900,1000)+[600,900) = 400 >= 350 closes a bucket; then
     * [300,600) = 300, + [250,300) = 350 closes; [0,250) is left for finish. */
    grad_sync_t g;
    model_t m;
    fake_model(&m, grads);
    grad_sync_init_allreduce(&g, &cm, &m, DT_F32, 350 * sizeof(float), 1);
    grad_sync_begin(&g, 1);
    backward(&m);
    EXPECT_EQ_INT(g.nbuckets, 2);
    grad_sync_finish(&g);
    size_t want[][2] = {{600, 400}, {250, 350}, {0, 250}};
    EXPECT_EQ_INT(g.nbuckets, 3);
    for (int i = 0; i < 3 && i < g.nbuckets; i++) {
        if (g.buckets[i].offset != want[i][0] || g.buckets[i].count != want[i][1])
            UNIT_FAIL("bucket %d is [%zu, +%zu), expected [%zu, +%zu)", i, g.buckets[i].offset,
                      g.buckets[i].count, want[i][0], want[i][1]);
    }
    grad_sync_free(&g);
    fake_model_free(&m);
    /* A cap below every range: one bucket per range. The default 25 MiB: one. */
    fake_model(&m, grads);
    grad_sync_init_allreduce(&g, &cm, &m, DT_F32, 4, 1);
    grad_sync_begin(&g, 1);
    backward(&m);
    grad_sync_finish(&g);
    EXPECT_EQ_INT(g.nbuckets, NU);
    grad_sync_free(&g);
    fake_model_free(&m);
    fake_model(&m, grads);
    grad_sync_init_allreduce(&g, &cm, &m, DT_F32, 25u << 20, 1);
    grad_sync_begin(&g, 1);
    backward(&m);
    grad_sync_finish(&g);
    EXPECT_EQ_INT(g.nbuckets, 1);
    grad_sync_free(&g);
    fake_model_free(&m);
    free(grads);
    teardown();
}

/* Integer-valued gradients: every sum is exact in fp32 and in bf16 (values
 * below 256), so the all-reduced result must equal the formula exactly. */
static void exact_sum(dtype_t wire, int overlap, size_t cap_bytes) {
    int r = unit_dist.rank, W = unit_dist.world;
    float *grads = xmalloc(NP * sizeof(float));
    for (int i = 0; i < NP; i++) grads[i] = (float)((r + 1) * (i % 7) - 3);
    grad_sync_t g;
    model_t m;
    fake_model(&m, grads);
    grad_sync_init_allreduce(&g, &cm, &m, wire, cap_bytes, overlap);
    grad_sync_begin(&g, 1);
    backward(&m);
    grad_sync_finish(&g);
    int bad = 0;
    for (int i = 0; i < NP; i++) {
        float want = (float)((i % 7) * W * (W + 1) / 2 - 3 * W);
        if (grads[i] != want && bad++ < 3)
            UNIT_FAIL("%s overlap %d: grads[%d] = %g, expected %g", dtype_name(wire), overlap, i, grads[i], want);
    }
    grad_sync_free(&g);
    fake_model_free(&m);
    free(grads);
}

TEST(grad_sync_allreduce_sums_exactly_fp32_and_bf16) {
    setup();
    for (int overlap = 0; overlap <= 1; overlap++) {
        exact_sum(DT_F32, overlap, 350 * 4);
        exact_sum(DT_F32, overlap, 25u << 20);
        exact_sum(DT_BF16, overlap, 350 * 2);
        exact_sum(DT_BF16, overlap, 1);
    }
    teardown();
}

/* Micro-batches before the last one only accumulate: nothing is sent. */
TEST(grad_sync_no_sync_micro_batches_do_not_communicate) {
    setup();
    float *grads = xmalloc(NP * sizeof(float));
    for (int i = 0; i < NP; i++) grads[i] = (float)(unit_dist.rank + 1);
    grad_sync_t g;
    model_t m;
    fake_model(&m, grads);
    grad_sync_init_allreduce(&g, &cm, &m, DT_F32, 100 * 4, 1);
    grad_sync_begin(&g, 1);   /* a finished previous step leaves buckets behind... */
    backward(&m);
    grad_sync_finish(&g);
    for (int i = 0; i < NP; i++) grads[i] = (float)(unit_dist.rank + 1);
    grad_sync_begin(&g, 0);   /* ...a no_sync micro-batch must not touch them */
    backward(&m);
    int bad = 0;
    for (int i = 0; i < NP; i++) bad += grads[i] != (float)(unit_dist.rank + 1);
    EXPECT_EQ_INT(bad, 0);
    EXPECT_EQ_INT(g.lo, g.hi);
    grad_sync_free(&g);
    fake_model_free(&m);
    free(grads);
    teardown();
}

/* The same buckets launched during or after backward: bit-identical sums. */
TEST(grad_sync_overlap_on_equals_off_bit_for_bit) {
    setup();
    float *a = xmalloc(NP * sizeof(float)), *b = xmalloc(NP * sizeof(float));
    for (int i = 0; i < NP; i++)
        a[i] = b[i] = (float)(splitmix64((uint64_t)(unit_dist.rank * NP + i)) >> 40) * 1e-7f - 0.8f;
    for (int wire = 0; wire <= 1; wire++) {
        for (int overlap = 1; overlap >= 0; overlap--) {
            grad_sync_t g;
            model_t m;
            fake_model(&m, overlap ? a : b);
            grad_sync_init_allreduce(&g, &cm, &m, (dtype_t)wire, 128 * 4, overlap);
            grad_sync_begin(&g, 1);
            backward(&m);
            grad_sync_finish(&g);
            grad_sync_free(&g);
            fake_model_free(&m);
        }
        int differ = 0;
        for (int i = 0; i < NP; i++) differ += memcmp(&a[i], &b[i], 4) != 0;
        if (differ) UNIT_FAIL("%s wire: %d of %d sums differ between overlap on and off",
                              dtype_name((dtype_t)wire), differ, NP);
    }
    free(a);
    free(b);
    teardown();
}

/* A communicator of one rank: nothing is sent and nothing is cast, so bf16
 * communication leaves the fp32 gradients exactly as backward made them. */
TEST(grad_sync_one_rank_leaves_gradients_untouched) {
    device_init(&dev, "cpu", unit_dist.local_rank, unit_dist.local_world, 1);
    comm_t self;
    comm_init(&self, MPI_COMM_SELF, "mpi", &dev);
    float *grads = xmalloc(NP * sizeof(float)), *copy = xmalloc(NP * sizeof(float));
    for (int i = 0; i < NP; i++) copy[i] = grads[i] = 1.0f + (float)i * 1e-4f;   /* not bf16 values */
    grad_sync_t g;
    model_t m;
    fake_model(&m, grads);
    grad_sync_init_allreduce(&g, &self, &m, DT_BF16, 128 * 2, 1);
    grad_sync_begin(&g, 1);
    backward(&m);
    grad_sync_finish(&g);
    EXPECT(memcmp(grads, copy, NP * sizeof(float)) == 0);
    EXPECT(comm_sent_bytes(&self) == 0);
    EXPECT_EQ_INT(g.nbuckets, 0);
    grad_sync_free(&g);
    fake_model_free(&m);
    comm_destroy(&self);
    free(grads);
    free(copy);
    device_finalize(&dev);
}

/* Reduce-scatter mode, the ZeRO layout: every unit's gradient (padded to
 * size x piece) summed over the ranks, piece r added into rank r's shard. With
 * integer values the sum is exact: the shard must equal the formula, the
 * padding must stay zero, and `release` must see every unit once. */
static int released[NU];
static void on_release(void *ctx, int unit) { (void)ctx; released[unit]++; }

static void rs_case(dtype_t wire, int overlap, int max_inflight) {
    int r = unit_dist.rank, W = unit_dist.world;
    model_t m;
    fake_model(&m, NULL);
    optim_piece_t pieces[NU];
    size_t len = grad_sync_pieces(&m, W, r, pieces);
    float *unit_buf[NU];
    for (int u = 0; u < NU; u++) {
        size_t per = (unit_range[u][1] + (size_t)W - 1) / (size_t)W;
        unit_buf[u] = xcalloc(per * (size_t)W, sizeof(float));
        for (size_t i = 0; i < unit_range[u][1]; i++)
            unit_buf[u][i] = (float)((r + 1) * (int)((unit_range[u][0] + i) % 5) - 2);
        m.unit_g[u] = unit_buf[u];
    }
    float *shard = xcalloc(len, sizeof(float));
    for (size_t i = 0; i < len; i++) shard[i] = 1.0f;   /* the sums are ADDED */
    memset(released, 0, sizeof released);
    grad_sync_t g;
    grad_sync_init_reduce_scatter(&g, &cm, &m, wire, shard, pieces, overlap, max_inflight,
                                  on_release, NULL);
    if (max_inflight) EXPECT_EQ_INT(g.nslots, max_inflight);
    grad_sync_begin(&g, 0);   /* no_sync: nothing sent, nothing added, nothing released */
    backward(&m);
    grad_sync_finish(&g);
    for (int u = 0; u < NU; u++)
        if (released[u]) UNIT_FAIL("no_sync: unit %d released", u);
    for (size_t i = 0; i < len; i++)
        if (shard[i] != 1.0f) { UNIT_FAIL("no_sync: shard element %zu changed to %g", i, shard[i]); break; }
    grad_sync_begin(&g, 1);
    backward(&m);
    grad_sync_finish(&g);
    int bad = 0;
    for (int u = 0; u < NU; u++) {
        size_t per = (unit_range[u][1] + (size_t)W - 1) / (size_t)W;
        if (released[u] != 1) UNIT_FAIL("unit %d released %d times", u, released[u]);
        for (size_t i = 0; i < per; i++) {
            size_t e = (size_t)r * per + i;   /* the element of the unit */
            float want = 1.0f + (e < unit_range[u][1]
                                 ? (float)((int)((unit_range[u][0] + e) % 5) * W * (W + 1) / 2 - 2 * W) : 0.0f);
            float got = shard[pieces[u].off + i];
            if (got != want && bad++ < 3)
                UNIT_FAIL("%s overlap %d, %d in flight: unit %d piece element %zu = %g, expected %g",
                          dtype_name(wire), overlap, max_inflight, u, i, got, want);
        }
        free(unit_buf[u]);
    }
    grad_sync_free(&g);
    fake_model_free(&m);
    free(shard);
}

TEST(grad_sync_reduce_scatter_adds_each_units_piece_exactly) {
    setup();
    for (int overlap = 0; overlap <= 1; overlap++)
        for (int inflight = 0; inflight <= 2; inflight++) {   /* 0: every unit at once */
            rs_case(DT_F32, overlap, inflight);
            rs_case(DT_BF16, overlap, inflight);
        }
    teardown();
}

/* The sharded layout: pieces of ceil(count / size), the last ones padded;
 * together the ranks' pieces cover every element of every unit once. */
TEST(grad_sync_pieces_cover_every_unit_once) {
    model_t m;
    fake_model(&m, NULL);
    for (int W = 1; W <= 7; W++) {
        int seen[NP] = {0};
        for (int r = 0; r < W; r++) {
            optim_piece_t p[NU];
            size_t len = grad_sync_pieces(&m, W, r, p), want = 0;
            for (int u = 0; u < NU; u++) {
                want += (unit_range[u][1] + (size_t)W - 1) / (size_t)W;
                for (size_t i = 0; i < p[u].count; i++) seen[p[u].flat + i]++;
            }
            EXPECT_EQ_INT(len, want);
        }
        int bad = 0;
        for (int i = 0; i < NP; i++) bad += seen[i] != 1;
        if (bad) UNIT_FAIL("%d ranks: %d elements not covered exactly once", W, bad);
    }
    fake_model_free(&m);
}
