/* unit_replay.c: the replay engine (common/replay.h) on hand-built traces
 * whose times are worked out by hand in each test's comment, the record
 * file's reader, and the recorder on real ranks. */
#define UNIT_MAIN
#include "unit.h"

#include <unistd.h>

#include "comm.h"
#include "replay.h"
#include "trace.h"

static void compute(replay_trace_t *t, int r, double s) {
    rp_event_t e = {.op = RP_COMPUTE, .secs = s};
    replay_trace_add(t, r, &e);
}
static int call(replay_trace_t *t, int r, int g, coll_kind k, int nb, int peer, int src, double bytes) {
    rp_event_t e = {.op = RP_COMM, .kind = k, .nb = nb, .group = g, .peer = peer, .src = src, .bytes = bytes};
    return replay_trace_add(t, r, &e);
}
static void wait_for(replay_trace_t *t, int r, int ref) {
    rp_event_t e = {.op = RP_WAIT, .ref = ref};
    replay_trace_add(t, r, &e);
}
static void mark(replay_trace_t *t, int r, const char *name) {
    rp_event_t e = {.op = RP_MARK};
    snprintf(e.name, sizeof e.name, "%s", name);
    replay_trace_add(t, r, &e);
}

static replay_result_t run_ok(const replay_trace_t *t, const replay_links_t *l) {
    replay_result_t r;
    char err[200] = "";
    if (replay_run(t, l, NULL, NULL, &r, err, sizeof err)) UNIT_FAIL("replay failed: %s", err);
    return r;
}

/* 1 GB/s and 10 us inside a node; 0.1 GB/s and 1 ms between nodes */
static const replay_links_t links = {.node_size = 2, .intra_us = 10, .intra_gbps = 1, .inter_us = 1000, .inter_gbps = 0.1};

/* Rank 0 computes 1 s, rank 1 2 s, then a blocking all-reduce of 2 GB on 2
 * ranks of one node: the ring's 2 (N - 1) (alpha + X / (N B)) = 2 (1e-5 + 1)
 * = 2.00002 s, from when the later rank arrives: the step is 4.00002 s;
 * rank 0 idles 3.00002 s (1 s waiting, 2.00002 s communicating). */
TEST(blocking_allreduce_starts_when_the_last_rank_arrives) {
    replay_trace_t t;
    replay_trace_init(&t, 2);
    for (int r = 0; r < 2; r++) {
        compute(&t, r, r + 1.0);
        call(&t, r, 0, COLL_ALLREDUCE, 0, 0, 0, 2e9);
    }
    replay_result_t r = run_ok(&t, &links);
    EXPECT_NEAR(r.step, 4.00002, 1e-12);
    EXPECT_NEAR(r.busy[0], 1, 1e-12);
    EXPECT_NEAR(r.idle[0], 3.00002, 1e-12);
    EXPECT_NEAR(r.t0[0][1], 1, 1e-12);   /* called at 1 s */
    EXPECT_NEAR(r.t1[0][1], 4.00002, 1e-12);
    replay_result_free(&r);
    replay_trace_free(&t);
}

/* Non-blocking: compute 1 s, start an all-reduce of 2 GB (2.00002 s), compute
 * 3 s, wait: the all-reduce ends at 3.00002 s, under the compute, so the step
 * is 4 s. Two all-reduces started together queue on the link: the second
 * ends at 1 + 2 x 2.00002 = 5.00004 s, after the compute. */
TEST(nonblocking_allreduce_overlaps_compute_and_queues_behind_the_last) {
    for (int two = 0; two < 2; two++) {
        replay_trace_t t;
        replay_trace_init(&t, 2);
        for (int r = 0; r < 2; r++) {
            compute(&t, r, 1);
            int a = call(&t, r, 0, COLL_ALLREDUCE, 1, 0, 0, 2e9);
            int b = two ? call(&t, r, 0, COLL_ALLREDUCE, 1, 0, 0, 2e9) : -1;
            compute(&t, r, 3);
            wait_for(&t, r, a);
            if (two) wait_for(&t, r, b);
        }
        replay_result_t r = run_ok(&t, &links);
        EXPECT_NEAR(r.step, two ? 5.00004 : 4, 1e-12);
        EXPECT_NEAR(r.t1[1][1], 3.00002, 1e-12);
        replay_result_free(&r);
        replay_trace_free(&t);
    }
}

/* Rank 0 sends 0.5 GB to each of ranks 1 and 2 inside a node of 4
 * (node_size 4 here): each send holds its link 0.5 s, so the second leaves
 * at 0.5 s and arrives at 1.00001 s; rank 2's receive, posted at 0.2 s after
 * its compute, completes then. A blocking send returns when its bytes have
 * left: rank 0's clock is 1 s after both. */
TEST(messages_from_one_rank_queue_on_its_link) {
    replay_links_t l = links;
    l.node_size = 4;
    replay_trace_t t;
    replay_trace_init(&t, 4);
    call(&t, 0, 0, COLL_SEND, 0, 1, 0, 5e8);
    call(&t, 0, 0, COLL_SEND, 0, 2, 0, 5e8);
    call(&t, 1, 0, COLL_RECV, 0, 0, 0, 0);
    compute(&t, 2, 0.2);
    call(&t, 2, 0, COLL_RECV, 0, 0, 0, 0);
    replay_result_t r = run_ok(&t, &l);
    EXPECT_NEAR(r.t1[1][0], 0.50001, 1e-12);
    EXPECT_NEAR(r.t1[2][1], 1.00001, 1e-12);
    EXPECT_NEAR(r.t1[0][1], 1.0, 1e-12);
    EXPECT_NEAR(r.step, 1.00001, 1e-12);
    replay_result_free(&r);
    replay_trace_free(&t);
}

/* A ring step on 2 ranks: each send-receives 1 GB with the other; the sends
 * leave at once (different links) and arrive at 1.00001 s. Across nodes
 * (ranks 1 and 2 with node_size 2): 1 ms + 1 GB / 0.1 GB/s = 10.001 s. */
TEST(sendrecv_pays_the_link_between_its_ranks) {
    for (int across = 0; across < 2; across++) {
        replay_trace_t t;
        replay_trace_init(&t, 4);
        int a = across ? 1 : 0, b = a + 1;
        call(&t, a, 0, COLL_SENDRECV, 0, b, b, 1e9);
        call(&t, b, 0, COLL_SENDRECV, 0, a, a, 1e9);
        replay_result_t r = run_ok(&t, &links);
        EXPECT_NEAR(r.step, across ? 10.001 : 1.00001, 1e-12);
        replay_result_free(&r);
        replay_trace_free(&t);
    }
}

/* The costs of replay.h's table on 4 ranks, X = 4 GB, inside one node (1
 * GB/s, 10 us) and across two (0.1 GB/s, 1 ms). */
TEST(collective_costs_follow_the_bandwidth_optimal_algorithms) {
    int w[4] = {0, 1, 2, 3}, pair[2] = {2, 3};
    replay_links_t one = links;
    one.node_size = 0;
    double X = 4e9, a = 1e-5, b = 1e-9, A = 1e-3, B = 1e-8;
    EXPECT_NEAR(replay_coll_cost(COLL_ALLREDUCE, X, 4, w, &one), 6 * (a + 1e9 * b), 1e-12);
    EXPECT_NEAR(replay_coll_cost(COLL_ALLREDUCE, X, 4, w, &links), 6 * (A + 1e9 * B), 1e-12);
    EXPECT_NEAR(replay_coll_cost(COLL_ALLREDUCE, X, 2, pair, &links), 2 * (a + 2e9 * b), 1e-12);
    EXPECT_NEAR(replay_coll_cost(COLL_REDUCE_SCATTER, X, 4, w, &one), 3 * (a + 1e9 * b), 1e-12);
    EXPECT_NEAR(replay_coll_cost(COLL_ALLGATHER, X, 4, w, &one), 3 * (a + 1e9 * b), 1e-12);
    EXPECT_NEAR(replay_coll_cost(COLL_ALLTOALL, X, 4, w, &one), 3 * (a + 1e9 * b), 1e-12);
    EXPECT_NEAR(replay_coll_cost(COLL_BROADCAST, X, 4, w, &one), 2 * (a + X * b), 1e-12);
    EXPECT_NEAR(replay_coll_cost(COLL_BARRIER, 0, 4, w, &links), 2 * A, 1e-12);
    EXPECT_NEAR(replay_coll_cost(COLL_ALLREDUCE, X, 1, w, &links), 0, 1e-12);
}

/* A mark is a barrier of no cost: segment 1 starts when the slower rank
 * (2 s) reaches it, and ends 1 s later. */
TEST(marks_end_segments_at_the_slowest_rank) {
    replay_trace_t t;
    replay_trace_init(&t, 2);
    for (int r = 0; r < 2; r++) {
        compute(&t, r, r ? 2 : 0.5);
        mark(&t, r, "step_1");
        compute(&t, r, 1);
        mark(&t, r, "step_2");
    }
    replay_result_t r = run_ok(&t, &links);
    EXPECT_EQ_INT(r.nmarks, 2);
    EXPECT_NEAR(r.mark_t[0], 2, 1e-12);
    EXPECT_NEAR(r.mark_t[1], 3, 1e-12);
    EXPECT(strcmp(r.mark_name[1], "step_2") == 0);
    replay_result_free(&r);
    replay_trace_free(&t);
}

/* A receive nobody sends to is a deadlock that names its rank. */
TEST(a_receive_without_its_send_is_reported_as_a_deadlock) {
    replay_trace_t t;
    replay_trace_init(&t, 2);
    call(&t, 1, 0, COLL_RECV, 0, 0, 0, 0);
    replay_result_t r;
    char err[200] = "";
    EXPECT(replay_run(&t, &links, NULL, NULL, &r, err, sizeof err) == -1);
    EXPECT(strstr(err, "rank 1") != NULL);
    EXPECT_EQ_INT(r.at[1], 0);
    replay_result_free(&r);
    replay_trace_free(&t);
}

static const char *write_tmp(const char *text) {
    static char path[64];
    snprintf(path, sizeof path, "/tmp/unit_replay_%d.txt", (int)getpid());
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    return path;
}

/* The record format of trace.h, by hand: two communicators of the same two
 * ranks (told apart by their order), a non-blocking all-reduce waited for,
 * and a message. Times: rank 1 computes 1 s, both all-reduce 2 GB (2.00002 s)
 * on the second communicator, then rank 0 sends 1 GB (1.00001 s). */
TEST(a_record_file_reads_back_into_the_same_replay) {
    const char *path = write_tmp(
        "record 1 2\n"
        "group 0 0 2 0 1\ngroup 0 1 2 0 1\n"
        "0 compute 0.5 1e9 F0\n0 all-reduce 1 1 0 0 2000000000\n0 wait 1\n0 send 0 0 1 0 1000000000\n"
        "group 1 0 2 0 1\ngroup 1 1 2 0 1\n"
        "1 compute 1 0 -\n1 all-reduce 1 1 0 0 2000000000\n1 wait 1\n1 receive 0 0 0 0 0\n1 mark end\n0 mark end\n");
    replay_trace_t t;
    char err[200] = "";
    EXPECT(replay_trace_read(&t, path, err, sizeof err) == 0);
    if (*err) UNIT_FAIL("%s", err);
    EXPECT_EQ_INT(t.world, 2);
    EXPECT_EQ_INT(t.ngroups, 3);   /* the world, and the two */
    EXPECT_EQ_INT(t.ev[1][1].group, 2);
    EXPECT_NEAR(t.ev[0][0].flops, 1e9, 0);
    replay_links_t l = links;
    l.node_size = 0;
    replay_result_t r = run_ok(&t, &l);
    EXPECT_NEAR(r.step, 1 + 2.00002 + 1.00001, 1e-12);
    replay_result_free(&r);
    replay_trace_free(&t);
    unlink(path);
}

TEST(a_bad_record_line_is_refused_with_its_line_number) {
    const char *bad[3] = {"record 1 2\n0 compute x\n", "record 1 2\ngroup 0 0 2 0 1\n0 all-reduce 1 5 0 0 8\n",
                          "record 1 2\n0 wait 0\n"};
    for (int i = 0; i < 3; i++) {
        replay_trace_t t;
        char err[200] = "";
        const char *path = write_tmp(bad[i]);
        EXPECT(replay_trace_read(&t, path, err, sizeof err) == -1);
        EXPECT(i == 2 ? strstr(err, "waits for") != NULL : strstr(err, ":2:") != NULL || strstr(err, ":3:") != NULL);
        unlink(path);
    }
}

/* On real ranks: a recorded busy loop, a blocking all-reduce and a
 * non-blocking one waited for come back as events of the right kinds, bytes
 * and order on every rank, and the compute is the loop's CPU time, not the
 * time the ranks waited on each other (rank 0 sleeps 0.2 s before its call:
 * the others' compute stays under it). */
TEST(the_recorder_writes_each_rank_s_calls_and_compute) {
    int rank = unit_dist.rank, world = unit_dist.world;
    device_t dev;
    device_init(&dev, "cpu", 0, 1, 1);
    comm_t cm;
    comm_init(&cm, MPI_COMM_WORLD, "mpi", &dev);
    char path[64];   /* rank 0's name, so that two runs side by side do not share it */
    snprintf(path, sizeof path, "/tmp/unit_replay_rec_%d.txt", (int)getpid());
    MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
    record_init(MPI_COMM_WORLD, path);
    record_pause(0);
    record_action_begin();
    volatile double s = 0;
    for (int i = 0; i < 20000000; i++) s += i * 1e-9;
    record_action_end("loop", 4e7);
    if (rank == 0) usleep(200000);
    float x[256] = {0}, y[256];
    comm_allreduce(&cm, x, y, 256, DT_F32, RED_SUM);
    comm_req_t q;
    comm_iallreduce(&cm, x, y, 64, DT_F32, RED_SUM, &q);
    comm_wait(&cm, &q);
    record_mark("end");
    if (world > 1 && rank < 2) {   /* a message from rank 1 to rank 0: the replay must match it */
        if (rank == 1) comm_send(&cm, x, 16, DT_F32, 0);
        else comm_recv(&cm, y, 16, DT_F32, 1);
    }
    record_write();
    comm_destroy(&cm);
    if (rank != 0) return;
    replay_trace_t t;
    char err[200] = "";
    if (replay_trace_read(&t, path, err, sizeof err)) { UNIT_FAIL("%s", err); return; }
    for (int r = 0; r < world; r++) {
        const rp_event_t *e[5];
        int n = 0;
        double other = 0;   /* unnamed compute: rank 0's sleep is no CPU time */
        for (int i = 0; i < t.n[r]; i++) {
            if (t.ev[r][i].op == RP_COMPUTE && strcmp(t.ev[r][i].name, "-") == 0) other += t.ev[r][i].secs;
            else if (n < 5) e[n++] = &t.ev[r][i];
        }
        EXPECT_EQ_INT(n, 5);
        if (n < 5) continue;
        EXPECT(other < 0.05);
        EXPECT(e[0]->op == RP_COMPUTE && strcmp(e[0]->name, "loop") == 0);
        EXPECT_NEAR(e[0]->flops, 4e7, 1e-9);
        EXPECT(e[0]->secs > 1e-3 && e[0]->secs < 10);
        EXPECT(e[1]->op == RP_COMM && e[1]->kind == COLL_ALLREDUCE && !e[1]->nb);
        EXPECT_NEAR(e[1]->bytes, 1024, 0);
        EXPECT(e[2]->op == RP_COMM && e[2]->nb && e[2]->bytes == 256);
        EXPECT(e[3]->op == RP_WAIT && &t.ev[r][e[3]->ref] == e[2]);
        EXPECT(e[4]->op == RP_MARK);
    }
    replay_links_t l = {.intra_us = 10, .intra_gbps = 1};
    replay_result_t res;
    char why[200] = "";
    EXPECT(replay_run(&t, &l, NULL, NULL, &res, why, sizeof why) == 0);
    if (*why) UNIT_FAIL("the recorded calls do not replay: %s", why);
    replay_result_free(&res);
    replay_trace_free(&t);
    unlink(path);
}
