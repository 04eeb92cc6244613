/* comm_test.c: the suite's collectives (comm.h) on emulated GPU buffers,
 * through both backends: NCCL (comm_nccl.cu, one emulated GPU per rank) and
 * MPI staging device buffers through the host. Integer-valued inputs keep
 * every sum exact in fp32 and bf16, so results are compared exactly.
 *
 * The NCCL test needs EMU_GPUS >= ranks per node; the MPI test runs with
 * ranks sharing one emulated GPU. */
#define UNIT_MAIN
#include "tests/unit.h"

#include "comm.h"
#include "device.h"
#include "dtype.h"
#include "ops.h"

static float val(int rank, size_t i) { return (float)((rank + 1) + (int)(i % 5)); }

/* Device buffer <-> host values of type t. */
static void put(const device_t *d, void *dst, const float *h, size_t n, dtype_t t) {
    void *tmp = xmalloc(n * dtype_size(t) + 1);
    for (size_t i = 0; i < n; i++) dtype_set(tmp, t, i, h[i]);
    dev_from_host(d, dst, tmp, n * dtype_size(t));
    free(tmp);
}
static void get(const device_t *d, float *h, const void *src, size_t n, dtype_t t) {
    void *tmp = xmalloc(n * dtype_size(t) + 1);
    dev_to_host(d, tmp, src, n * dtype_size(t));
    for (size_t i = 0; i < n; i++) h[i] = dtype_get(tmp, t, i);
    free(tmp);
}

#define CHECK_ALL(what, cnt, got_expr, want_expr)                                              \
    do {                                                                                       \
        for (size_t i_ = 0; i_ < (cnt); i_++) {                                                \
            float g_ = (got_expr), w_ = (want_expr);                                           \
            if (g_ != w_) {                                                                    \
                UNIT_FAIL("%s %s %s count %zu: element %zu = %g, expected %g", backend,        \
                          dtype_name(t), what, c, i_, g_, w_);                                 \
                break;                                                                         \
            }                                                                                  \
        }                                                                                      \
    } while (0)

static void check_backend(const char *backend) {
    device_t d;
    device_init(&d, "cuda", unit_dist.local_rank, unit_dist.local_world, 1);
    comm_t cm;
    comm_init(&cm, MPI_COMM_WORLD, backend, &d);
    int n = cm.size, me = cm.rank, rsum = n * (n + 1) / 2;
    size_t counts[] = {1, 7, 64, 1001};
    for (int ti = 0; ti < 2; ti++) {
        dtype_t t = ti ? DT_BF16 : DT_F32;
        for (size_t ci = 0; ci < 4; ci++) {
            size_t c = counts[ci], es = dtype_size(t);
            float *h = xcalloc(c * n, sizeof(float)), *r = xcalloc(c * n, sizeof(float));
            char *a = dev_alloc(&d, c * n * es), *b = dev_alloc(&d, c * n * es);
            /* all-reduce, out of place then in place */
            for (size_t i = 0; i < c; i++) h[i] = val(me, i);
            put(&d, a, h, c, t);
            comm_allreduce(&cm, a, b, c, t, RED_SUM);
            comm_allreduce(&cm, a, a, c, t, RED_SUM);
            get(&d, r, b, c, t);
            CHECK_ALL("allreduce", c, r[i_], (float)(rsum + n * (int)(i_ % 5)));
            get(&d, r, a, c, t);
            CHECK_ALL("allreduce in place", c, r[i_], (float)(rsum + n * (int)(i_ % 5)));
            /* max */
            put(&d, a, h, c, t);
            comm_allreduce(&cm, a, b, c, t, RED_MAX);
            get(&d, r, b, c, t);
            CHECK_ALL("max", c, r[i_], val(n - 1, i_));
            /* reduce-scatter */
            for (size_t i = 0; i < c * n; i++) h[i] = val(me, i);
            put(&d, a, h, c * n, t);
            comm_reduce_scatter(&cm, a, b, c, t, RED_SUM);
            get(&d, r, b, c, t);
            CHECK_ALL("reduce_scatter", c, r[i_], (float)(rsum + n * (int)((me * c + i_) % 5)));
            /* all-gather in place */
            for (size_t i = 0; i < c; i++) h[i] = val(me, i);
            put(&d, a + me * c * es, h, c, t);
            comm_allgather(&cm, a + me * c * es, a, c, t);
            get(&d, r, a, c * n, t);
            CHECK_ALL("allgather", c * n, r[i_], val((int)(i_ / c), i_ % c));
            /* broadcast from and reduce to the last rank */
            put(&d, a, h, c, t);
            comm_broadcast(&cm, a, c, t, n - 1);
            get(&d, r, a, c, t);
            CHECK_ALL("broadcast", c, r[i_], val(n - 1, i_));
            put(&d, a, h, c, t);
            comm_reduce(&cm, a, b, c, t, RED_SUM, n - 1);
            if (me == n - 1) {
                get(&d, r, b, c, t);
                CHECK_ALL("reduce", c, r[i_], (float)(rsum + n * (int)(i_ % 5)));
            }
            /* all-to-all */
            for (int p = 0; p < n; p++)
                for (size_t i = 0; i < c; i++) h[p * c + i] = (float)(me * 10 + p + (int)(i % 3));
            put(&d, a, h, c * n, t);
            comm_alltoall(&cm, a, b, c, t);
            get(&d, r, b, c * n, t);
            CHECK_ALL("alltoall", c * n, r[i_], (float)((int)(i_ / c) * 10 + me + (int)(i_ % c % 3)));
            /* ring exchange, and a send / receive pair */
            for (size_t i = 0; i < c; i++) h[i] = val(me, i);
            put(&d, a, h, c, t);
            comm_sendrecv(&cm, a, c, (me + 1) % n, b, c, (me + n - 1) % n, t);
            get(&d, r, b, c, t);
            CHECK_ALL("sendrecv", c, r[i_], val((me + n - 1) % n, i_));
            if (n > 1) {
                if (me == 0) comm_send(&cm, a, c, t, n - 1);
                if (me == n - 1) {
                    comm_recv(&cm, b, c, t, 0);
                    get(&d, r, b, c, t);
                    CHECK_ALL("send/recv", c, r[i_], val(0, i_));
                }
            }
            /* non-blocking: start, progress, wait; then the result is there */
            put(&d, a, h, c, t);
            comm_req_t q1, q2;
            comm_iallreduce(&cm, a, a, c, t, RED_SUM, &q1);
            for (size_t i = 0; i < c * n; i++) h[i] = val(me, i);
            put(&d, b, h, c * n, t);
            while (!comm_progress(&cm, &q1)) {}
            comm_wait(&cm, &q1);
            comm_ireduce_scatter(&cm, b, b + me * c * es, c, t, RED_SUM, &q2);
            comm_wait(&cm, &q2);
            get(&d, r, a, c, t);
            CHECK_ALL("iallreduce", c, r[i_], (float)(rsum + n * (int)(i_ % 5)));
            get(&d, r, b + me * c * es, c, t);
            CHECK_ALL("ireduce_scatter", c, r[i_], (float)(rsum + n * (int)((me * c + i_) % 5)));
            for (size_t i = 0; i < c; i++) h[i] = val(me, i);
            put(&d, a, h, c, t);
            comm_iallgather(&cm, a, b, c, t, &q1);
            comm_wait(&cm, &q1);
            get(&d, r, b, c * n, t);
            CHECK_ALL("iallgather", c * n, r[i_], val((int)(i_ / c), i_ % c));
            comm_barrier(&cm);
            dev_free(&d, a);
            dev_free(&d, b);
            free(h);
            free(r);
        }
    }
    comm_destroy(&cm);
    device_finalize(&d);
}

/* The stream order comm.h promises, with no host synchronisation between:
 * a collective sees the compute work queued before it (its input is doubled
 * by a kernel still queued when it is called), and compute queued after it
 * (after comm_wait for the non-blocking ones) sees its result (which a
 * kernel halves). */
static void check_stream_order(const char *backend) {
    device_t d;
    device_init(&d, "cuda", unit_dist.local_rank, unit_dist.local_world, 1);
    comm_t cm;
    comm_init(&cm, MPI_COMM_WORLD, backend, &d);
    int n = cm.size, me = cm.rank;
    const size_t c = 1001;
    float *h = xcalloc(c, sizeof(float)), *r = xcalloc(c, sizeof(float));
    float *a = dev_alloc(&d, c * sizeof(float));
    for (int round = 0; round < 6; round++) {
        for (size_t i = 0; i < c; i++) h[i] = val(me, i + (size_t)round);
        put(&d, a, h, c, DT_F32);
        op_scale(&d, DT_F32, a, 2.0f, c);
        comm_req_t q;
        if (round % 2) {
            comm_iallreduce(&cm, a, a, c, DT_F32, RED_SUM, &q);
            comm_wait(&cm, &q);
        } else {
            comm_allreduce(&cm, a, a, c, DT_F32, RED_SUM);
        }
        op_scale(&d, DT_F32, a, 0.5f, c);
        get(&d, r, a, c, DT_F32);
        for (size_t i = 0; i < c; i++) {
            float want = (float)(n * (n + 1) / 2 + n * (int)((i + (size_t)round) % 5));
            if (r[i] != want) {
                UNIT_FAIL("%s %s round %d: element %zu = %g, expected %g", backend,
                          round % 2 ? "comm_iallreduce + comm_wait" : "comm_allreduce", round, i,
                          r[i], want);
                break;
            }
        }
    }
    dev_free(&d, a);
    free(h);
    free(r);
    comm_destroy(&cm);
    device_finalize(&d);
}

TEST(cuda_emu_comm_nccl_collectives_on_device_buffers_are_exact) { check_backend("nccl"); }
TEST(cuda_emu_comm_nccl_collectives_follow_the_compute_stream) { check_stream_order("nccl"); }
TEST(cuda_emu_comm_mpi_staged_collectives_follow_the_compute_stream) { check_stream_order("mpi"); }
TEST(cuda_emu_comm_mpi_staged_collectives_on_device_buffers_are_exact) { check_backend("mpi"); }
