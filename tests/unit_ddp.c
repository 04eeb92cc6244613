/* unit_ddp.c: the DDP module (03_ddp/ddp.c) on real ranks: bucket
 * formation, exact averaging in fp32 and bf16, no_sync, overlap on = off.
 * Runs on any number of ranks (the test list uses 3). */
#define UNIT_MAIN
#include "unit.h"

#include "03_ddp/ddp.h"
#include "data.h"
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

/* Ranges as model_backward reports them: from the end of the array down. */
static const size_t ranges[][2] = {{900, 100}, {600, 300}, {300, 300}, {250, 50}, {0, 250}};
enum { NR = 5, NP = 1000 };

static void backward(ddp_t *g) {
    for (int i = 0; i < NR; i++) ddp_grad_ready(g, ranges[i][0], ranges[i][1]);
}

TEST(ddp_buckets_are_whole_ranges_up_to_the_cap) {
    setup();
    float *grads = xcalloc(NP, sizeof(float));
    /* cap 350 floats: [900,1000)+[600,900) = 400 >= 350 closes a bucket; then
     * [300,600) = 300, + [250,300) = 350 closes; [0,250) is left for finish. */
    ddp_t g;
    ddp_init(&g, &cm, grads, NP, DT_F32, 350 * sizeof(float), 1);
    ddp_begin(&g, 1);
    backward(&g);
    EXPECT_EQ_INT(g.nbuckets, 2);
    ddp_finish(&g);
    size_t want[][2] = {{600, 400}, {250, 350}, {0, 250}};
    EXPECT_EQ_INT(g.nbuckets, 3);
    for (int i = 0; i < 3 && i < g.nbuckets; i++) {
        if (g.buckets[i].offset != want[i][0] || g.buckets[i].count != want[i][1])
            UNIT_FAIL("bucket %d is [%zu, +%zu), expected [%zu, +%zu)", i, g.buckets[i].offset,
                      g.buckets[i].count, want[i][0], want[i][1]);
    }
    ddp_free(&g);
    /* A cap below every range: one bucket per range. The default 25 MiB: one. */
    ddp_init(&g, &cm, grads, NP, DT_F32, 4, 1);
    ddp_begin(&g, 1);
    backward(&g);
    ddp_finish(&g);
    EXPECT_EQ_INT(g.nbuckets, NR);
    ddp_free(&g);
    ddp_init(&g, &cm, grads, NP, DT_F32, 25u << 20, 1);
    ddp_begin(&g, 1);
    backward(&g);
    ddp_finish(&g);
    EXPECT_EQ_INT(g.nbuckets, 1);
    ddp_free(&g);
    free(grads);
    teardown();
}

/* Integer-valued gradients: every sum is exact in fp32 and in bf16 (values
 * below 256), so the all-reduced result must equal the formula exactly. */
static void exact_sum(dtype_t wire, int overlap, size_t cap_bytes) {
    int r = unit_dist.rank, W = unit_dist.world;
    float *grads = xmalloc(NP * sizeof(float));
    for (int i = 0; i < NP; i++) grads[i] = (float)((r + 1) * (i % 7) - 3);
    ddp_t g;
    ddp_init(&g, &cm, grads, NP, wire, cap_bytes, overlap);
    ddp_begin(&g, 1);
    backward(&g);
    ddp_finish(&g);
    int bad = 0;
    for (int i = 0; i < NP; i++) {
        float want = (float)((i % 7) * W * (W + 1) / 2 - 3 * W);
        if (grads[i] != want && bad++ < 3)
            UNIT_FAIL("%s overlap %d: grads[%d] = %g, expected %g", dtype_name(wire), overlap, i, grads[i], want);
    }
    ddp_free(&g);
    free(grads);
}

TEST(ddp_allreduce_sums_exactly_fp32_and_bf16) {
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
TEST(ddp_no_sync_micro_batches_do_not_communicate) {
    setup();
    float *grads = xmalloc(NP * sizeof(float));
    for (int i = 0; i < NP; i++) grads[i] = (float)(unit_dist.rank + 1);
    ddp_t g;
    ddp_init(&g, &cm, grads, NP, DT_F32, 100 * 4, 1);
    ddp_begin(&g, 1);   /* a finished previous step leaves buckets behind... */
    backward(&g);
    ddp_finish(&g);
    for (int i = 0; i < NP; i++) grads[i] = (float)(unit_dist.rank + 1);
    ddp_begin(&g, 0);   /* ...a no_sync micro-batch must not touch them */
    backward(&g);
    int bad = 0;
    for (int i = 0; i < NP; i++) bad += grads[i] != (float)(unit_dist.rank + 1);
    EXPECT_EQ_INT(bad, 0);
    EXPECT_EQ_INT(g.lo, g.hi);
    ddp_free(&g);
    free(grads);
    teardown();
}

/* The same buckets launched during or after backward: bit-identical sums. */
TEST(ddp_overlap_on_equals_off_bit_for_bit) {
    setup();
    float *a = xmalloc(NP * sizeof(float)), *b = xmalloc(NP * sizeof(float));
    for (int i = 0; i < NP; i++)
        a[i] = b[i] = (float)(splitmix64((uint64_t)(unit_dist.rank * NP + i)) >> 40) * 1e-7f - 0.8f;
    for (int wire = 0; wire <= 1; wire++) {
        ddp_t g;
        ddp_init(&g, &cm, a, NP, (dtype_t)wire, 128 * 4, 1);
        ddp_begin(&g, 1);
        backward(&g);
        ddp_finish(&g);
        ddp_free(&g);
        ddp_init(&g, &cm, b, NP, (dtype_t)wire, 128 * 4, 0);
        ddp_begin(&g, 1);
        backward(&g);
        ddp_finish(&g);
        ddp_free(&g);
        int differ = 0;
        for (int i = 0; i < NP; i++) differ += memcmp(&a[i], &b[i], 4) != 0;
        if (differ) UNIT_FAIL("%s wire: %d of %d sums differ between overlap on and off",
                              dtype_name((dtype_t)wire), differ, NP);
    }
    free(a);
    free(b);
    teardown();
}
