/* unit_link.c: the link model (common/comm.h) on 4 ranks in 2 simulated
 * nodes of 2: a message between nodes takes latency + bytes / bandwidth, one
 * inside a node goes at the machine's speed, and a collective that crosses
 * nodes takes at least the ring model's time. Prints set against measured.
 * The model promises "no earlier than", which is checked on the clock: a
 * busy machine only makes things later. How much later depends on the
 * machine's load (four busy loops beside the ranks made a 4 MB message 50
 * times slower), so "not later than the model" is checked on the model's own
 * numbers instead: the link time it books, and the completion time it gives
 * a call, between the clock before and after the call. The README's table
 * of set against measured is taken on a quiet machine. */
#define UNIT_MAIN
#include "unit.h"

#include <time.h>

#include "comm.h"

enum { NODE = 2 };

static device_t dev;
static comm_t cm;

static void setup(double gbps, double us) {
    comm_link_t l = {NODE, gbps, us};
    comm_link_set(&l);
    device_init(&dev, "cpu", unit_dist.local_rank, unit_dist.local_world, 1);
    comm_init(&cm, MPI_COMM_WORLD, "mpi", &dev);
}

static void teardown(void) {
    comm_destroy(&cm);
    device_finalize(&dev);
    comm_link_t off = {0, 0, 0};
    comm_link_set(&off);
}

/* Best one-way time of `reps` ping-pongs of n floats between ranks a and b
 * (best: the noise of a shared machine only adds). */
static double ping_pong(int a, int b, size_t n, int reps) {
    float *buf = xcalloc(n ? n : 1, sizeof(float));
    double best = 1e30;
    for (int i = 0; i < reps; i++) {
        comm_barrier(&cm);
        double t0 = now_s();
        if (cm.rank == a) {
            comm_send(&cm, buf, n, DT_F32, b);
            comm_recv(&cm, buf, n, DT_F32, b);
        } else if (cm.rank == b) {
            comm_recv(&cm, buf, n, DT_F32, a);
            comm_send(&cm, buf, n, DT_F32, a);
        }
        double t = (now_s() - t0) / 2;
        if (t < best) best = t;
    }
    free(buf);
    MPI_Bcast(&best, 1, MPI_DOUBLE, a, MPI_COMM_WORLD);
    return best;
}

/* Latency from an empty message, the time of 4 MB against latency + bytes / bandwidth. */
TEST(link_messages_between_nodes_cost_latency_plus_bytes_over_bandwidth) {
    if (unit_dist.world != 4) { UNIT_FAIL("run on 4 ranks"); return; }
    const double gbps[2] = {1.0, 0.25}, us[2] = {200, 50};
    for (int k = 0; k < 2; k++) {
        setup(gbps[k], us[k]);
        size_t n = 1 << 20;   /* 4 MB */
        double t0 = ping_pong(0, 2, 0, 5), t1 = ping_pong(0, 2, n, 3);
        double lat_us = t0 * 1e6, bw = n * 4.0 / (t1 - t0) / 1e9;
        if (unit_dist.rank == 0)
            printf("between nodes: set %.3g GB/s, %.0f us; measured %.3g GB/s, %.0f us\n", gbps[k], us[k],
                   bw, lat_us);
        /* no earlier than the model: an empty message takes at least the set
         * latency, 4 MB at least latency + bytes / bandwidth (2% for the
         * timer). Bounds on each time alone: a busy machine only adds to
         * either, while the bandwidth printed above, from their difference,
         * can come out high when the empty message waited longer. */
        double least = us[k] * 1e-6 + n * 4.0 / (gbps[k] * 1e9);
        if (!(lat_us >= us[k]))
            UNIT_FAIL("latency %.1f us, below the set %.0f us", lat_us, us[k]);
        if (!(t1 >= 0.98 * least))
            UNIT_FAIL("4 MB took %.1f us, less than the set latency + bytes / bandwidth, %.1f us", t1 * 1e6,
                      least * 1e6);
        /* no later in the model: the sender books bytes / bandwidth on its link */
        if (cm.rank == 0) {   /* (the ping-pongs' replies came after their bookings ended) */
            float *buf = xcalloc(n, sizeof(float));
            comm_req_t rq;
            double before = now_s();
            comm_isend(&cm, buf, n, DT_F32, 2, &rq);   /* books the link at once, returns at once */
            double after = now_s(), busy = n * 4.0 / (gbps[k] * 1e9);
            if (!(cm.link_free[2] >= before + busy - 1e-9 && cm.link_free[2] <= after + busy + 1e-9))
                UNIT_FAIL("4 MB booked the link until %.1f us after the send began, not %.1f us (bytes / bandwidth)",
                          (cm.link_free[2] - before) * 1e6, busy * 1e6);
            comm_wait(&cm, &rq);
            free(buf);
        } else if (cm.rank == 2) {
            float *buf = xcalloc(n, sizeof(float));
            comm_recv(&cm, buf, n, DT_F32, 0);
            free(buf);
        }
        teardown();
    }
}

TEST(link_messages_inside_a_node_are_not_slowed) {
    if (unit_dist.world != 4) { UNIT_FAIL("run on 4 ranks"); return; }
    setup(0.25, 200);
    double t = ping_pong(2, 3, 1 << 18, 3);   /* 1 MB inside node 1 */
    if (unit_dist.rank == 0) printf("inside a node: 1 MB in %.0f us (the link would take %.0f us)\n",
                                    t * 1e6, (200e-6 + 1048576 / 0.25e9) * 1e6);
    /* the model books nothing on a link inside a node (and so delays nothing
     * there), and books the link to the other node */
    if (cm.rank == 2 || cm.rank == 3) {
        int peer = cm.rank == 2 ? 3 : 2;
        if (cm.link_free[peer] != 0)
            UNIT_FAIL("rank %d booked its link to rank %d, in its own node: messages inside a node are slowed",
                      cm.rank, peer);
        comm_send(&cm, NULL, 0, DT_F32, cm.rank - 2);   /* to the other node */
        if (!(cm.link_free[cm.rank - 2] > 0))
            UNIT_FAIL("rank %d booked nothing for a message to rank %d, in the other node", cm.rank, cm.rank - 2);
    } else {
        comm_recv(&cm, NULL, 0, DT_F32, cm.rank + 2);
    }
    teardown();
}

/* A ring all-reduce over 4 ranks in 2 nodes crosses the slow links in every
 * one of its 2 (N-1) steps of X/N bytes: at least 6 (alpha + X/4 / beta). */
TEST(link_allreduce_across_nodes_takes_the_ring_model_time) {
    if (unit_dist.world != 4) { UNIT_FAIL("run on 4 ranks"); return; }
    setup(1.0, 100);
    size_t n = 1 << 18;   /* X = 1 MB */
    float *a = xcalloc(n, sizeof(float));
    for (size_t i = 0; i < n; i++) a[i] = 1.0f;
    double best = 1e30, model = 6 * (100e-6 + n * 4.0 / 4 / 1e9);
    for (int i = 0; i < 3; i++) {
        comm_barrier(&cm);
        comm_req_t rq;
        double t0 = now_s();
        comm_iallreduce(&cm, a, a, n, DT_F32, RED_SUM, &rq);
        double t1 = now_s(), due = rq.arrival;
        comm_wait(&cm, &rq);
        best = fmin(best, now_s() - t0);
        /* the model's completion: the ring's time after the call began (the
         * link was free: the barrier waited for the last one) */
        if (!(due >= t0 + model - 1e-9 && due <= t1 + model + 1e-9))
            UNIT_FAIL("the model completes the all-reduce %.0f us after its call, the ring model says %.0f us",
                      (due - t0) * 1e6, model * 1e6);
    }
    if (unit_dist.rank == 0) printf("all-reduce of 1 MB over 2 nodes of 2: %.0f us, ring model %.0f us\n",
                                    best * 1e6, model * 1e6);
    if (!(best >= model))
        UNIT_FAIL("all-reduce took %.0f us, less than the ring model's %.0f us", best * 1e6, model * 1e6);
    EXPECT(a[0] == 64.0f);   /* and the sums are right: 4 x 4 x 4 after three all-reduces of ones */
    free(a);
    teardown();
}
