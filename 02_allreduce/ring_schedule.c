/* ring_schedule.c: 02_allreduce/ring_schedule, the ring all-reduce's
 * schedule as ring.c runs it: which chunk each rank sends and receives at
 * each of the 2(P - 1) steps, for the chart ring_steps.png.
 *
 *   mpirun -np 4 ./02_allreduce/ring_schedule --csv plots/data/ring_steps.csv
 *
 * It runs allreduce_ring (ring.c, unchanged) on a vector of P elements, one
 * per chunk, and watches its messages through MPI's profiling interface:
 * this file defines MPI_Isend and MPI_Irecv, which note where in the input
 * or output vector each message starts and pass the call on to PMPI_Isend
 * and PMPI_Irecv (each step posts its send, then its receive). A
 * message received outside the output vector (into scratch, to be added
 * there) belongs to the reduce-scatter; one received in place into the
 * output vector, to the all-gather. The chunk a rank receives is the one
 * its left neighbour sent in the same step. Rank r's input in chunk c is
 * 2^r (1 + c 2^P), so the result, (2^P - 1)(1 + c 2^P), shows that no
 * rank's contribution was added twice, lost or put in another chunk
 * (checked: the program dies if not; exact in fp32 up to 8 ranks).
 *
 * CSV (replaced): step,phase,rank,send_chunk,to,recv_chunk,from
 *   phase: reduce-scatter or all-gather; steps from 1. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "check.h"
#include "coll.h"
#include "dist.h"

enum { MAX_RANKS = 8, MAX_STEPS = 2 * (MAX_RANKS - 1) };

static const float *g_in, *g_out;    /* the all-reduce's vectors while watched */
static int g_n, g_steps;
static int g_send[MAX_STEPS], g_to[MAX_STEPS], g_inplace[MAX_STEPS];

/* The chunk a buffer starts at in v (P elements), or -1 outside it. */
static int chunk_of(const void *p, const float *v) {
    const float *f = p;
    return v && f >= v && f < v + g_n ? (int)(f - v) : -1;
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dst, int tag, MPI_Comm comm, MPI_Request *req) {
    if (g_in) {
        if (g_steps == MAX_STEPS) die("more than %d messages in one all-reduce", MAX_STEPS);
        int c = chunk_of(buf, g_in);
        g_send[g_steps] = c >= 0 ? c : chunk_of(buf, g_out);
        g_to[g_steps] = dst;
        g_steps++;
    }
    return PMPI_Isend(buf, count, type, dst, tag, comm, req);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm, MPI_Request *req) {
    if (g_in && g_steps > 0) g_inplace[g_steps - 1] = chunk_of(buf, g_out) >= 0;
    return PMPI_Irecv(buf, count, type, src, tag, comm, req);
}

int main(int argc, char **argv) {
    dist_t d;
    dist_init(&argc, &argv, &d);
    const char *csv = NULL;
    arg_t flags[] = {
        {"csv", ARG_STRING, &csv, "write the schedule here (replaced): step,phase,rank,send_chunk,to,recv_chunk,from", NULL, 0, 0},
    };
    args_parse(argc, argv, "02_allreduce/ring_schedule",
               "The ring all-reduce's schedule on the ranks of mpirun: which chunk each rank sends\n"
               "and receives at each of the 2(P-1) steps, watched as ring.c runs it.", flags, ARRAY_LEN(flags));
    int P = d.world, r = d.rank;
    if (P < 2) usage_error("the ring needs at least 2 ranks (mpirun -np P)");
    if (P > MAX_RANKS) usage_error("at most %d ranks (got %d)", MAX_RANKS, P);
    args_check_output(MPI_COMM_WORLD, "csv", csv, NULL);

    p2p_comm_t pc;
    p2p_init(&pc, MPI_COMM_WORLD, DT_F32, 1 << 20);   /* one message per chunk */
    float *in = xmalloc(sizeof(float) * (size_t)P), *out = xmalloc(sizeof(float) * (size_t)P);
    for (int i = 0; i < P; i++) in[i] = (float)((1 << r) * (1 + i * (1 << P)));
    g_n = P, g_in = in, g_out = out;
    allreduce_ring(&pc, in, out, (size_t)P);
    g_in = g_out = NULL;
    for (int i = 0; i < P; i++) {
        float want = (float)(((1 << P) - 1) * (1 + i * (1 << P)));
        if (out[i] != want) die("chunk %d sums to %g, not %g", i, out[i], want);
    }
    if (g_steps != 2 * (P - 1)) die("%d messages, not 2(P - 1) = %d", g_steps, 2 * (P - 1));

    /* rank 0 gathers every rank's sends; a rank receives what its left neighbour sent */
    int mine[3 * MAX_STEPS], *all = xmalloc(sizeof mine * (size_t)P);
    for (int s = 0; s < g_steps; s++) mine[3 * s] = g_send[s], mine[3 * s + 1] = g_to[s], mine[3 * s + 2] = g_inplace[s];
    MPI_CHECK(MPI_Gather(mine, 3 * MAX_STEPS, MPI_INT, all, 3 * MAX_STEPS, MPI_INT, 0, MPI_COMM_WORLD));
    if (r == 0) {
        FILE *f = csv ? fopen(csv, "w") : stdout;
        if (!f) die("cannot write %s: %s", csv, strerror(errno));
        fprintf(f, "step,phase,rank,send_chunk,to,recv_chunk,from\n");
        for (int s = 0; s < g_steps; s++)
            for (int q = 0; q < P; q++) {
                const int *e = all + q * 3 * MAX_STEPS + 3 * s;
                int left = mod(q - 1, P);
                fprintf(f, "%d,%s,%d,%d,%d,%d,%d\n", s + 1, e[2] ? "all-gather" : "reduce-scatter", q, e[0], e[1],
                        all[left * 3 * MAX_STEPS + 3 * s], left);
            }
        if (csv) {
            if (fclose(f)) die("cannot write %s: %s", csv, strerror(errno));
            say("ring schedule of %d ranks, %d steps: %s\n", P, g_steps, csv);
        }
    }
    free(in);
    free(out);
    free(all);
    p2p_destroy(&pc);
    dist_finalize();
    return 0;
}
