/* unit_common.c: the shared library's pieces, each against exact answers. */
#define UNIT_MAIN
#include "unit.h"

#include <math.h>
#include <unistd.h>

#include "args.h"
#include "comm.h"
#include "device.h"
#include "dtype.h"
#include "perf.h"

TEST(bf16_rounds_to_nearest_even) {
    EXPECT_EQ_INT(f32_to_bf16(1.0f), 0x3f80);
    /* 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties go to the even one, 1. */
    EXPECT_EQ_INT(f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);
    /* 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6. */
    EXPECT_EQ_INT(f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
    EXPECT_EQ_INT(f32_to_bf16(1.0f + 1.0f / 256 + 1.0f / 65536), 0x3f81);
    EXPECT_EQ_INT(f32_to_bf16(-2.0f), 0xc000);
    EXPECT_EQ_INT(f32_to_bf16(INFINITY), 0x7f80);
    EXPECT(isnan(bf16_to_f32(f32_to_bf16(NAN))));
    /* The largest float rounds up to infinity, as on the GPU. */
    EXPECT_EQ_INT(f32_to_bf16(3.4028235e38f), 0x7f80);
    for (int i = -256; i <= 256; i++) EXPECT_EQ_INT(bf16_to_f32(f32_to_bf16((float)i)), i);
}

TEST(size_lists_parse_suffixes) {
    long v[8];
    int n = args_size_list("256,1K,3M", v, 8, "sizes");
    EXPECT_EQ_INT(n, 3);
    EXPECT_EQ_INT(v[0], 256);
    EXPECT_EQ_INT(v[1], 1024);
    EXPECT_EQ_INT(v[2], 3L << 20);
}

TEST(gpu_peaks_found_by_device_name) {
    const gpu_peak_t *g = perf_gpu_lookup("NVIDIA H100 80GB HBM3");
    EXPECT(g && g->tflops[PREC_BF16] == 989.4);
    g = perf_gpu_lookup("NVIDIA H100 PCIe");
    EXPECT(g && g->tflops[PREC_BF16] == 756.0);
    g = perf_gpu_lookup("NVIDIA L4");
    EXPECT(g && strcmp(g->label, "L4") == 0);
    g = perf_gpu_lookup("NVIDIA L40S");
    EXPECT(g && strcmp(g->label, "L40S") == 0);
    g = perf_gpu_lookup("NVIDIA A100-SXM4-40GB");
    EXPECT(g && g->tflops[PREC_TF32] == 156.0);
    EXPECT(perf_gpu_lookup("NVIDIA GeForce GTX 1080") == NULL);
    device_t d = {.kind = DEV_CUDA};
    snprintf(d.name, sizeof d.name, "Mystery GPU");
    EXPECT(perf_peak(&d, PREC_BF16, 0) == 0);
    char buf[64];
    EXPECT(strcmp(perf_util_str(buf, sizeof buf, 1e12, 0), "peak unknown, pass --peak") == 0);
    EXPECT(perf_peak(&d, PREC_BF16, 100) == 100e12);
}

TEST(cpu_peak_is_the_isas_flop_per_cycle_times_one_cores_clock_times_threads) {
    const cpu_peak_t *p = perf_cpu_peak(1);
    const double one = p->flops, ghz = p->ghz;
    const int fpc = p->flop_per_cycle, lanes = strcmp(p->isa, "AVX-512") == 0 ? 16 : 8;
    printf("%s\n", p->formula);
    EXPECT(ghz > 0.5 && ghz < 7);
    /* 2 FLOP per FMA x lanes x 1 or 2 FMAs per cycle */
    if (fpc != 2 * lanes && fpc != 4 * lanes)
        UNIT_FAIL("%d FLOP/cycle with %s: not 2 x %d lanes x 1 or 2 FMAs per cycle", fpc, p->isa, lanes);
    EXPECT(fabs(one - ghz * 1e9 * fpc) <= 1e-9 * one);
    p = perf_cpu_peak(3);
    printf("%s\n", p->formula);
    if (p->ghz != ghz || p->flop_per_cycle != fpc || fabs(p->flops - 3 * one) > 1e-9 * one)
        UNIT_FAIL("3 threads: %.6g FLOP/s at %.3f GHz x %d, not 3 x %.6g at %.3f GHz x %d", p->flops, p->ghz,
                  p->flop_per_cycle, one, ghz, fpc);
}

TEST(csv_header_written_once_and_every_row_ends_with_its_provenance) {
    char path[] = "/tmp/unit_csv_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    csv_set_threads(3);
    for (int i = 0; i < 2; i++) {
        FILE *f = csv_open(path, "a,b");
        fprintf(f, "%d,%d", i, i);
        csv_end_row(f, i ? "modeled" : "measured");
        fclose(f);
    }
    FILE *own = csv_open(path, "a,b");   /* the same columns: accepted */
    fclose(own);
    FILE *f = fopen(path, "r");
    char line[3][512] = {{0}};
    for (int i = 0; i < 3; i++)
        if (!fgets(line[i], sizeof line[i], f)) UNIT_FAIL("line %d missing", i + 1);
    char extra[8];
    if (fgets(extra, sizeof extra, f)) UNIT_FAIL("a fourth line: the header was written twice or a row added");
    fclose(f);
    unlink(path);
    EXPECT(strcmp(line[0], "a,b," CSV_PROVENANCE ",source\n") == 0);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < 3; i++) {
        /* a,b,cores,ranks,threads,cpu,load_before,load_after,run_s,source */
        char *field[16];
        int n = 0;
        line[i][strcspn(line[i], "\n")] = 0;
        for (char *p = strtok(line[i], ","); p && n < 16; p = strtok(NULL, ",")) field[n++] = p;
        if (n != 10) UNIT_FAIL("row %d has %d columns, the header 10", i, n);
        if (atoi(field[0]) != i - 1 || atol(field[2]) != cores || atoi(field[3]) != unit_dist.world ||
            atoi(field[4]) != 3)
            UNIT_FAIL("row %d: a %s, cores %s (this machine %ld), ranks %s (%d), threads %s (3)", i, field[0],
                      field[2], cores, field[3], unit_dist.world, field[4]);
        if (strchr(field[5], ',') || !*field[5]) UNIT_FAIL("row %d: cpu '%s'", i, field[5]);
        if (!(atof(field[6]) >= 0 && atof(field[7]) >= 0 && atof(field[8]) >= 0))
            UNIT_FAIL("row %d: load %s, %s, run %s s", i, field[6], field[7], field[8]);
        EXPECT(strcmp(field[9], i == 1 ? "measured" : "modeled") == 0);
    }
    csv_set_threads(1);
}

/* A header with a source column of its own gets no second one. */
TEST(csv_header_with_its_own_source_column_gets_no_second) {
    char buf[256];
    EXPECT(strcmp(csv_header(buf, sizeof buf, "source,x"), "source,x," CSV_PROVENANCE) == 0);
    EXPECT(strcmp(csv_header(buf, sizeof buf, "x,sources"), "x,sources," CSV_PROVENANCE ",source") == 0);
}

/* Each rank's sub-communicator along an axis joins the ranks that differ
 * only in that coordinate: summing world ranks along it gives a sum that the
 * rank formula predicts. */
TEST(mesh_axes_join_ranks_differing_in_one_coordinate) {
    int w = unit_dist.world;
    int shapes[][4] = {{1, 1, 1, 1}, {2, 1, 1, 1}, {1, 1, 1, 2}, {2, 1, 1, 2}, {1, 2, 2, 1}, {3, 1, 1, 1}, {1, 1, 3, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int *sz = shapes[s];
        if (sz[0] * sz[1] * sz[2] * sz[3] != w) continue;
        mesh_t m;
        mesh_init(&m, &unit_dist, sz[0], sz[1], sz[2], sz[3]);
        EXPECT_EQ_INT(mesh_rank(&m, m.coord), unit_dist.rank);
        for (int a = 0; a < AXES; a++) {
            int r, n, sum = 0, want = 0;
            MPI_Comm_rank(m.axis[a], &r);
            MPI_Comm_size(m.axis[a], &n);
            EXPECT_EQ_INT(r, m.coord[a]);
            EXPECT_EQ_INT(n, m.size[a]);
            MPI_Allreduce(&unit_dist.rank, &sum, 1, MPI_INT, MPI_SUM, m.axis[a]);
            int c[AXES];
            memcpy(c, m.coord, sizeof c);
            for (int i = 0; i < m.size[a]; i++) { c[a] = i; want += mesh_rank(&m, c); }
            EXPECT_EQ_INT(sum, want);
        }
        mesh_destroy(&m);
    }
}

/* The layout the suite promises (tp fastest): world rank = tp + TP x (cp + CP x
 * (pp + PP x dp)), so the tp group is the block of TP consecutive ranks, and
 * the ranks of the group of axis a, in order, step by the product of the
 * sizes of the axes below a. Shapes with a 3 catch a digit taken modulo the
 * wrong size. */
TEST(mesh_ranks_are_laid_out_tp_fastest) {
    int w = unit_dist.world, me = unit_dist.rank;
    int shapes[][4] = {{2, 1, 1, 2}, {1, 2, 2, 1}, {2, 2, 1, 1}, {1, 1, 2, 2}, {4, 1, 1, 1},
                       {3, 1, 1, 2}, {1, 2, 3, 1}, {2, 1, 1, 3}, {1, 3, 2, 1}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        int *sz = shapes[s];
        if (sz[0] * sz[1] * sz[2] * sz[3] != w) continue;
        mesh_t m;
        mesh_init(&m, &unit_dist, sz[0], sz[1], sz[2], sz[3]);
        int stride = 1;
        for (int a = 0; a < AXES; a++) {
            int want = me / stride % sz[a];
            if (m.coord[a] != want)
                UNIT_FAIL("mesh %dx%dx%dx%d: rank %d has %s coordinate %d, expected %d", sz[0], sz[1], sz[2],
                          sz[3], me, axis_name[a], m.coord[a], want);
            int n = 0;
            MPI_Comm_size(m.axis[a], &n);
            int *got = xmalloc(sizeof(int) * (size_t)n);
            dist_world_ranks(m.axis[a], got);
            for (int i = 0; i < n && n == sz[a]; i++) {
                int expect = me + (i - want) * stride;
                if (got[i] != expect) {
                    UNIT_FAIL("mesh %dx%dx%dx%d: rank %d's %s group holds world rank %d at %d, expected %d", sz[0],
                              sz[1], sz[2], sz[3], me, axis_name[a], got[i], i, expect);
                    break;
                }
            }
            EXPECT_EQ_INT(n, sz[a]);
            free(got);
            stride *= sz[a];
        }
        int c[AXES] = {sz[0] - 1, sz[1] - 1, sz[2] - 1, 0};
        EXPECT_EQ_INT(mesh_rank(&m, c), sz[0] * sz[1] * sz[2] - 1);
        mesh_destroy(&m);
    }
}

/* Integer-valued inputs keep every sum exact in fp32 and in bf16. */
static float val(int rank, size_t i) { return (float)((rank + 1) + (int)(i % 5)); }

static void check_collectives(dtype_t t) {
    device_t d;
    device_init(&d, "cpu", 0, 1, 1);
    comm_t cm;
    comm_init(&cm, MPI_COMM_WORLD, "mpi", &d);
    int n = cm.size, me = cm.rank;
    size_t counts[] = {1, 7, 64, 1001};
    for (size_t ci = 0; ci < 4; ci++) {
        size_t c = counts[ci], es = dtype_size(t);
        void *a = xcalloc(c * n, es), *b = xcalloc(c * n, es);
        int rsum = n * (n + 1) / 2;
        /* all-reduce, in place and out of place */
        for (size_t i = 0; i < c; i++) dtype_set(a, t, i, val(me, i));
        comm_allreduce(&cm, a, b, c, t, RED_SUM);
        comm_allreduce(&cm, a, a, c, t, RED_SUM);
        for (size_t i = 0; i < c; i++) {
            float want = (float)(rsum + n * (int)(i % 5));
            if (dtype_get(b, t, i) != want || dtype_get(a, t, i) != want) {
                UNIT_FAIL("%s allreduce count %zu: element %zu = %g / %g, expected %g", dtype_name(t), c, i,
                          dtype_get(b, t, i), dtype_get(a, t, i), want);
                break;
            }
        }
        /* max */
        for (size_t i = 0; i < c; i++) dtype_set(a, t, i, val(me, i));
        comm_allreduce(&cm, a, b, c, t, RED_MAX);
        for (size_t i = 0; i < c; i++)
            if (dtype_get(b, t, i) != val(n - 1, i)) { UNIT_FAIL("%s max count %zu at %zu", dtype_name(t), c, i); break; }
        /* reduce-scatter: block r of the sum */
        for (size_t i = 0; i < c * n; i++) dtype_set(a, t, i, val(me, i));
        comm_reduce_scatter(&cm, a, b, c, t, RED_SUM);
        for (size_t i = 0; i < c; i++) {
            size_t g = me * c + i;
            float want = (float)(rsum + n * (int)(g % 5));
            if (dtype_get(b, t, i) != want) { UNIT_FAIL("%s reduce_scatter count %zu at %zu", dtype_name(t), c, i); break; }
        }
        /* all-gather, in place: rank r's block sits at offset r*c */
        for (size_t i = 0; i < c; i++) dtype_set(a, t, me * c + i, val(me, i));
        comm_allgather(&cm, (char *)a + me * c * es, a, c, t);
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < c; i++)
                if (dtype_get(a, t, r * c + i) != val(r, i)) { UNIT_FAIL("%s allgather block %d at %zu", dtype_name(t), r, i); r = n; break; }
        /* broadcast from the last rank; reduce to it */
        for (size_t i = 0; i < c; i++) dtype_set(a, t, i, val(me, i));
        comm_broadcast(&cm, a, c, t, n - 1);
        for (size_t i = 0; i < c; i++)
            if (dtype_get(a, t, i) != val(n - 1, i)) { UNIT_FAIL("%s broadcast at %zu", dtype_name(t), i); break; }
        for (size_t i = 0; i < c; i++) dtype_set(a, t, i, val(me, i));
        comm_reduce(&cm, a, b, c, t, RED_SUM, n - 1);
        if (me == n - 1)
            for (size_t i = 0; i < c; i++)
                if (dtype_get(b, t, i) != (float)(rsum + n * (int)(i % 5))) { UNIT_FAIL("%s reduce at %zu", dtype_name(t), i); break; }
        /* all-to-all: block p of rank r goes to block r of rank p */
        for (int p = 0; p < n; p++)
            for (size_t i = 0; i < c; i++) dtype_set(a, t, p * c + i, (float)(me * 10 + p + (int)(i % 3)));
        comm_alltoall(&cm, a, b, c, t);
        for (int r = 0; r < n; r++)
            for (size_t i = 0; i < c; i++)
                if (dtype_get(b, t, r * c + i) != (float)(r * 10 + me + (int)(i % 3))) { UNIT_FAIL("%s alltoall block %d", dtype_name(t), r); r = n; break; }
        /* ring exchange: send to the right, receive from the left */
        for (size_t i = 0; i < c; i++) dtype_set(a, t, i, val(me, i));
        comm_sendrecv(&cm, a, c, (me + 1) % n, b, c, (me + n - 1) % n, t);
        for (size_t i = 0; i < c; i++)
            if (dtype_get(b, t, i) != val((me + n - 1) % n, i)) { UNIT_FAIL("%s sendrecv at %zu", dtype_name(t), i); break; }
        free(a);
        free(b);
    }
    comm_destroy(&cm);
    device_finalize(&d);
}

TEST(mpi_collectives_exact_fp32) { check_collectives(DT_F32); }
TEST(mpi_collectives_exact_bf16) { check_collectives(DT_BF16); }

TEST(nonblocking_allreduce_equals_blocking) {
    device_t d;
    device_init(&d, "cpu", 0, 1, 1);
    comm_t cm;
    comm_init(&cm, MPI_COMM_WORLD, "auto", &d);
    EXPECT_EQ_INT(cm.backend, COMM_MPI);
    size_t c = 100000;
    float *a = xmalloc(c * 4), *b = xmalloc(c * 4), *x = xmalloc(c * 4);
    for (size_t i = 0; i < c; i++) a[i] = b[i] = val(cm.rank, i);
    comm_req_t req;
    comm_iallreduce(&cm, a, a, c, DT_F32, RED_SUM, &req);
    while (!comm_progress(&cm, &req)) {}
    comm_wait(&cm, &req);
    comm_allreduce(&cm, b, x, c, DT_F32, RED_SUM);
    EXPECT(memcmp(a, x, c * 4) == 0);
    comm_iallgather(&cm, b, x, c / cm.size, DT_F32, &req);
    comm_wait(&cm, &req);
    size_t blk = c / cm.size;
    for (size_t i = 0; i < blk * cm.size; i++)
        if (x[i] != val((int)(i / blk), i % blk)) { UNIT_FAIL("iallgather at %zu", i); break; }
    free(a); free(b); free(x);
    comm_destroy(&cm);
}

/* Point-to-point without waiting, as pipelines and ring attention use it:
 * every rank sends to the next and receives from the previous around a ring,
 * twice in flight at once, and a chain of isend/irecv pairs keeps its order. */
TEST(nonblocking_point_to_point_rings_and_chains) {
    device_t d;
    device_init(&d, "cpu", 0, 1, 1);
    comm_t cm;
    comm_init(&cm, MPI_COMM_WORLD, "mpi", &d);
    int r = cm.rank, N = cm.size, next = (r + 1) % N, prev = (r + N - 1) % N;
    size_t c = 5000;
    float *s1 = xmalloc(c * 4), *s2 = xmalloc(c * 4), *r1 = xmalloc(c * 4), *r2 = xmalloc(c * 4);
    for (size_t i = 0; i < c; i++) { s1[i] = val(r, i); s2[i] = val(r + 100, i); }
    comm_req_t a, b;
    comm_isendrecv(&cm, s1, c, next, r1, c, prev, DT_F32, &a);
    comm_isendrecv(&cm, s2, c, next, r2, c, prev, DT_F32, &b);
    comm_wait(&cm, &b);
    comm_wait(&cm, &a);
    for (size_t i = 0; i < c; i++)
        if (r1[i] != val(prev, i) || r2[i] != val(prev + 100, i)) { UNIT_FAIL("ring element %zu", i); break; }
    /* rank 0 sends three messages to the last rank, which receives them in order */
    if (N > 1 && (r == 0 || r == N - 1)) {
        comm_req_t q[3];
        float *bufs[3] = {s1, s2, r1};
        for (int k = 0; k < 3; k++) {
            if (r == 0) { for (size_t i = 0; i < c; i++) bufs[k][i] = (float)(k * 1000 + (int)(i % 97)); }
            if (r == 0) comm_isend(&cm, bufs[k], c, DT_F32, N - 1, &q[k]);
            else comm_irecv(&cm, bufs[k], c, DT_F32, 0, &q[k]);
        }
        for (int k = 2; k >= 0; k--) comm_wait(&cm, &q[k]);
        if (r == N - 1)
            for (int k = 0; k < 3; k++)
                if (bufs[k][5] != (float)(k * 1000 + 5)) UNIT_FAIL("message %d arrived out of order", k);
    }
    free(s1); free(s2); free(r1); free(r2);
    comm_destroy(&cm);
}

/* Bytes sent are nccl-tests' bus bytes, per kind of call. */
TEST(bytes_sent_are_bus_bytes_per_kind) {
    device_t d;
    device_init(&d, "cpu", 0, 1, 1);
    comm_t cm;
    comm_init(&cm, MPI_COMM_WORLD, "mpi", &d);
    double N = cm.size;
    size_t c = 6000;
    float *a = xcalloc(c * (size_t)cm.size, 4), *b = xcalloc(c * (size_t)cm.size, 4);
    comm_allreduce(&cm, a, a, c, DT_F32, RED_SUM);
    comm_reduce_scatter(&cm, a, b, c, DT_F32, RED_SUM);
    comm_allgather(&cm, a, b, c, DT_BF16);
    comm_broadcast(&cm, a, c, DT_F32, 0);
    comm_alltoall(&cm, a, b, c / (size_t)cm.size, DT_F32);
    comm_sendrecv(&cm, a, c, (cm.rank + 1) % cm.size, b, c, (cm.rank + cm.size - 1) % cm.size, DT_F32);
    double X = c * 4.0;
    EXPECT_NEAR(cm.sent[COLL_ALLREDUCE], cm.size > 1 ? 2 * (N - 1) / N * X : 0, 1e-12);
    EXPECT_NEAR(cm.sent[COLL_REDUCE_SCATTER], (N - 1) * X, 1e-12);
    EXPECT_NEAR(cm.sent[COLL_ALLGATHER], (N - 1) * c * 2.0, 1e-12);
    EXPECT_NEAR(cm.sent[COLL_BROADCAST], cm.size > 1 ? X : 0, 1e-12);
    EXPECT_NEAR(cm.sent[COLL_ALLTOALL], (N - 1) * (double)(c / (size_t)cm.size) * 4.0, 1e-12);
    EXPECT_NEAR(cm.sent[COLL_SENDRECV], X, 1e-12);
    EXPECT_NEAR(comm_sent_bytes(&cm), cm.sent[COLL_ALLREDUCE] + cm.sent[COLL_REDUCE_SCATTER] +
                cm.sent[COLL_ALLGATHER] + cm.sent[COLL_BROADCAST] + cm.sent[COLL_ALLTOALL] + X, 1e-12);
    free(a); free(b);
    comm_destroy(&cm);
}

/* The link model: with every rank its own simulated node, two all-reduces in
 * flight at once queue on the rank's link, so the second completes no
 * earlier than twice the modelled cost of one (a lower bound the model's
 * sleeps guarantee, whatever the machine's speed). One rank has no link. */
TEST(link_model_queues_crossing_collectives) {
    device_t d;
    device_init(&d, "cpu", 0, 1, 1);
    comm_link_t l = {1, 1.0, 50000.0};   /* nodes of 1 rank, 1 GB/s, 50 ms: the model dominates */
    comm_link_set(&l);
    comm_t cm;
    comm_init(&cm, MPI_COMM_WORLD, "mpi", &d);
    size_t c = 1024;
    float *a = xcalloc(c, 4), *b = xcalloc(c, 4);
    double N = cm.size, one = N > 1 ? 2 * (N - 1) * (50e-3 + 4.0 * c / N / 1e9) : 0;   /* comm.h's ring */
    MPI_Barrier(cm.mpi);
    comm_req_t ra, rb;
    double t0 = now_s();
    comm_iallreduce(&cm, a, a, c, DT_F32, RED_SUM, &ra);
    comm_iallreduce(&cm, b, b, c, DT_F32, RED_SUM, &rb);
    comm_wait(&cm, &ra);
    double ta = now_s() - t0;
    comm_wait(&cm, &rb);
    double tb = now_s() - t0;
    printf("one all-reduce costs %.2f ms by the model; done after %.2f and %.2f ms\n", one * 1e3, ta * 1e3, tb * 1e3);
    if (ta < one) UNIT_FAIL("the first all-reduce finished after %.3f ms, before its modelled %.3f ms", ta * 1e3, one * 1e3);
    if (tb < 2 * one) UNIT_FAIL("the second finished after %.3f ms, before the %.3f ms of both in a row", tb * 1e3, 2e3 * one);
    free(a);
    free(b);
    comm_destroy(&cm);
    comm_link_t off = {0, 1.0, 0.0};
    comm_link_set(&off);
}

TEST(device_cpu_buffers_copy_round_trip) {
    device_t d;
    device_init(&d, "cpu", 0, 1, 1);   /* the CPU, whether or not a GPU answers */
    EXPECT_EQ_INT(d.kind, DEV_CPU);
    float h[5] = {1, 2, 3, 4, 5}, g[5] = {0};
    float *p = dev_alloc(&d, sizeof h), *q = dev_alloc(&d, sizeof h);
    EXPECT(p[0] == 0 && p[4] == 0);
    dev_from_host(&d, p, h, sizeof h);
    dev_copy(&d, q, p, sizeof h);
    dev_to_host(&d, g, q, sizeof h);
    EXPECT(memcmp(g, h, sizeof h) == 0);
    dev_free(&d, p);
    dev_free(&d, q);
}
