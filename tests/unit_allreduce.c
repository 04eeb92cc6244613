/* unit_allreduce.c: chapter 02's checker, algorithms, alpha-beta fit and
 * model. Run with any rank count (the test list uses 4, and 3 and 5 for the
 * algorithms): the checker must catch a single wrong element, every
 * hand-written algorithm must be exact at awkward counts and roots with a
 * tiny chunk (and a hang is reported by the watchdog, not only by the time
 * limit), the fit must recover a known line, and each algorithm's cost must
 * be the textbook formula. */
#define UNIT_MAIN
#include "unit.h"

#include "args.h"
#include "02_allreduce/bench.h"

static const algo_t *find_algo(op_id op, const char *name) {
    for (int i = 0; i < bench_nalgos; i++)
        if (bench_algos[i].op == op && strcmp(bench_algos[i].name, name) == 0) return &bench_algos[i];
    return NULL;
}

/* Run algorithm a on a fresh case; returns this rank's wrong count and
 * leaves recv (host) holding the result. */
static size_t run_case(bench_ctx_t *x, const algo_t *a, bench_case_t *c, void **send, void **recv) {
    size_t es = dtype_size(c->dt);
    *send = xmalloc(c->send_count * es + 1);
    *recv = xmalloc(c->recv_count * es + 1);
    bench_fill(c, *send, *recv);
    a->run(x, c, bench_ops[c->op].in_place ? *recv : *send, *recv);
    return bench_check(c, *recv);
}

static long long sum_ranks(long long v) {
    long long all = 0;
    MPI_Allreduce(&v, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    return all;
}

/* A correct ring all-reduce checks clean; one corrupted element on one rank,
 * and one element left unwritten on another, are each counted exactly once. */
static void checker_catches(dtype_t dt) {
    bench_ctx_t x = {0};
    p2p_init(&x.p2p, MPI_COMM_WORLD, dt, 64);
    bench_case_t c;
    bench_case_init(&c, OP_ALLREDUCE, 1000, unit_dist.rank, unit_dist.world, 0, dt, 7);
    void *send, *recv;
    size_t wrong = run_case(&x, find_algo(OP_ALLREDUCE, "ring"), &c, &send, &recv);
    EXPECT_EQ_INT(sum_ranks((long long)wrong), 0);

    int last = unit_dist.world - 1;
    if (unit_dist.rank == last)   /* off by one: still an integer, still wrong */
        dtype_set(recv, dt, 17, dtype_get(recv, dt, 17) + 1.0f);
    EXPECT_EQ_INT(sum_ranks((long long)bench_check(&c, recv)), 1);
    if (unit_dist.rank == 0) dtype_set(recv, dt, 999, -1.0f);   /* "never written" */
    EXPECT_EQ_INT(sum_ranks((long long)bench_check(&c, recv)), 2);
    free(send);
    free(recv);
    p2p_destroy(&x.p2p);
}

TEST(checker_counts_one_corrupted_element_fp32) { checker_catches(DT_F32); }
TEST(checker_counts_one_corrupted_element_bf16) { checker_catches(DT_BF16); }

/* A block delivered to the wrong place is caught: the pattern is not periodic. */
TEST(checker_catches_misplaced_block) {
    bench_ctx_t x = {0};
    p2p_init(&x.p2p, MPI_COMM_WORLD, DT_F32, 1024);
    bench_case_t c;
    bench_case_init(&c, OP_ALLGATHER, 64 * (size_t)unit_dist.world, unit_dist.rank,
                    unit_dist.world, 0, DT_F32, 3);
    void *send, *recv;
    EXPECT_EQ_INT(run_case(&x, find_algo(OP_ALLGATHER, "ring"), &c, &send, &recv), 0);
    float *r = recv;
    for (size_t i = 0; i < c.count; i++) {   /* block 0 := rank 0's block shifted by one */
        float t = r[i];
        r[i] = r[(i + 1) % c.count];
        r[(i + 1) % c.count] = t;
    }
    EXPECT(bench_check(&c, recv) > 0);
    free(send);
    free(recv);
    p2p_destroy(&x.p2p);
}

/* Every hand-written algorithm, every op, exact for counts below, at and
 * above the rank count, not divisible by it, with chunks of 3 elements (so
 * the pipelines have many stages and a short last chunk) and every root. */
TEST(every_handwritten_algorithm_exact_at_awkward_counts_and_roots) {
    const size_t totals[] = {1, 2, 3, 5, 7, 64, 1001};
    watchdog_start(20, "the test");   /* a deadlock names its case, before the time limit */
    for (int dti = 0; dti < 2; dti++) {
        dtype_t dt = dti ? DT_BF16 : DT_F32;
        bench_ctx_t x = {0};
        p2p_init(&x.p2p, MPI_COMM_WORLD, dt, 3 * dtype_size(dt));
        for (int ai = 0; ai < bench_nalgos; ai++) {
            const algo_t *a = &bench_algos[ai];
            if (a->lib) continue;
            for (int root = 0; root < unit_dist.world; root++) {
                for (size_t ti = 0; ti < sizeof totals / sizeof totals[0]; ti++) {
                    bench_case_t c;
                    bench_case_init(&c, a->op, totals[ti], unit_dist.rank, unit_dist.world, root,
                                    dt, 11);
                    void *send, *recv;
                    bench_doing("%s %s %s count %zu root %d on %d ranks", bench_ops[a->op].name,
                                   a->name, dtype_name(dt), c.count, root, unit_dist.world);
                    long long w = sum_ranks((long long)run_case(&x, a, &c, &send, &recv));
                    if (w != 0 && unit_dist.rank == 0)   /* w is the sum over ranks: say it once */
                        UNIT_FAIL("%s %s %s count %zu root %d: %lld wrong elements",
                                  bench_ops[a->op].name, a->name, dtype_name(dt), c.count, root, w);
                    free(send);
                    free(recv);
                }
            }
        }
        p2p_destroy(&x.p2p);
    }
}

/* The fit recovers alpha and beta from points on a line, and never goes
 * negative when the data show no latency. */
TEST(alpha_beta_fit_recovers_a_known_line) {
    double x[6], t[6];
    for (int i = 0; i < 6; i++) {
        x[i] = (double)(4 << (3 * i));
        t[i] = 12.5 + x[i] * 2e-4;   /* 12.5 us latency, 5 GB/s */
    }
    ab_fit_t f = ab_fit(x, t, 6);
    EXPECT(f.ok);
    EXPECT_NEAR(f.alpha_us, 12.5, 1e-9);
    EXPECT_NEAR(f.beta_us_per_byte * 1e4, 2.0, 1e-9);
    for (int i = 0; i < 6; i++) t[i] = x[i] * 1e-3 - 1e-3 * x[0] * 0.5;   /* would give alpha < 0 */
    f = ab_fit(x, t, 6);
    EXPECT(f.ok && f.alpha_us == 0 && f.beta_us_per_byte > 0);
    EXPECT(!ab_fit(x, t, 1).ok);
}

/* busbw factors exactly as nccl-tests (doc/PERFORMANCE.md). */
TEST(busbw_factors_match_nccl_tests) {
    EXPECT_NEAR(bench_ops[OP_ALLREDUCE].busbw_factor(4), 1.5, 1e-15);
    EXPECT_NEAR(bench_ops[OP_ALLGATHER].busbw_factor(4), 0.75, 1e-15);
    EXPECT_NEAR(bench_ops[OP_REDUCE_SCATTER].busbw_factor(8), 0.875, 1e-15);
    EXPECT_NEAR(bench_ops[OP_ALLTOALL].busbw_factor(2), 0.5, 1e-15);
    EXPECT_NEAR(bench_ops[OP_BROADCAST].busbw_factor(8), 1.0, 1e-15);
    EXPECT_NEAR(bench_ops[OP_REDUCE].busbw_factor(8), 1.0, 1e-15);
    EXPECT_NEAR(bench_ops[OP_ALLREDUCE].busbw_factor(1), 0.0, 1e-15);
}

/* Each algorithm's alpha-beta cost is the textbook formula (Thakur et al.
 * 2005; Patarasuk & Yuan 2009) for a message within one chunk, and every
 * further chunk adds one alpha per step. Computed here from the formulas,
 * independently of algos.c, for the rank counts 2 to 8. */
static const algo_t *algo_of(op_id op, const char *name) { return find_algo(op, name); }

TEST(alpha_beta_costs_are_the_textbook_formulas) {
    const ab_fit_t l = {10.0, 1e-3, 1};   /* 10 us, 1 GB/s */
    const size_t chunk = 1 << 20;
    for (int N = 2; N <= 8; N++) {
        bench_case_t c;
        bench_case_init(&c, OP_ALLREDUCE, 4096, 0, N, 0, DT_F32, 1);   /* X = 16 KiB < chunk */
        const double X = (double)c.bytes, a = l.alpha_us, b = l.beta_us_per_byte;
        int L = 0, lp = 0;
        while ((1 << L) < N) L++;        /* ceil(log2 N) */
        while ((2 << lp) <= N) lp++;     /* floor(log2 N) */
        const struct { const char *name; double want; } f[] = {
            {"ps", 2.0 * (N - 1) * (a + X * b)},
            {"tree", 2.0 * L * (a + X * b)},
            {"rd", (lp + ((1 << lp) < N ? 2 : 0)) * (a + X * b)},
            {"ring", 2.0 * (N - 1) * a + 2.0 * (N - 1) / N * X * b},
        };
        for (int i = 0; i < ARRAY_LEN(f); i++) {
            const double got = algo_of(OP_ALLREDUCE, f[i].name)->model(&c, l, chunk);
            if (fabs(got - f[i].want) > 1e-9 * f[i].want)
                UNIT_FAIL("allreduce %s on %d ranks, %.0f B: model %.6g us, formula %.6g us",
                          f[i].name, N, X, got, f[i].want);
        }
        bench_case_init(&c, OP_ALLGATHER, 4096, 0, N, 0, DT_F32, 1);
        const double Xg = (double)c.bytes, want_ag = (N - 1) * (a + Xg / N * b);
        EXPECT_NEAR(algo_of(OP_ALLGATHER, "ring")->model(&c, l, chunk), want_ag, 1e-12);
        bench_case_init(&c, OP_BROADCAST, 4096, 0, N, 0, DT_F32, 1);
        EXPECT_NEAR(algo_of(OP_BROADCAST, "tree")->model(&c, l, chunk), L * (a + X * b), 1e-12);
    }
    /* 4 MiB in 1 MiB chunks: the ring's blocks (1 MiB at 4 ranks) are one
     * chunk each, the tree pays four alphas per step */
    bench_case_t c;
    bench_case_init(&c, OP_ALLREDUCE, 1 << 20, 0, 4, 0, DT_F32, 1);
    const double X = (double)c.bytes;
    EXPECT_NEAR(algo_of(OP_ALLREDUCE, "ring")->model(&c, l, chunk), 6 * 10.0 + 1.5 * X * 1e-3, 1e-12);
    EXPECT_NEAR(algo_of(OP_ALLREDUCE, "tree")->model(&c, l, chunk), 4 * (4 * 10.0 + X * 1e-3), 1e-12);
    /* one rank sends nothing: no model; the library has none */
    bench_case_init(&c, OP_ALLREDUCE, 4096, 0, 1, 0, DT_F32, 1);
    EXPECT(isnan(algo_of(OP_ALLREDUCE, "ring")->model(&c, l, chunk)));
    EXPECT(algo_of(OP_ALLREDUCE, "lib")->model == NULL);
}

TEST(median_of_odd_and_even_counts) {
    double a[] = {5, 1, 3}, b[] = {4, 1, 3, 2};
    EXPECT_NEAR(median(a, 3), 3.0, 0);
    EXPECT_NEAR(median(b, 4), 2.5, 0);
    EXPECT(a[0] == 1 && a[2] == 5);   /* sorted: min first, max last */
}
