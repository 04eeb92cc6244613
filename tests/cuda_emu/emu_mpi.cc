/* emu_mpi.cc: the program's blocking MPI calls, made while the emulated GPU
 * keeps working.
 *
 * On a GPU, collectives queued on a stream run while the host blocks in an
 * MPI call. The emulator's deferred streams (emu_streams.cc) move only when
 * the emulator runs, so a rank blocked in MPI_Allreduce would never start
 * the NCCL collective its peer waits for: a deadlock no GPU has. MPI's
 * profiling interface lets the emulator in: the program's MPI_X calls
 * resolve to the functions below (the library's own, weak, are overridden),
 * and PMPI_X does the work. Each blocking call the suite makes becomes its
 * non-blocking form and a loop that tests it and pumps the streams, which
 * starts the collectives whose dependencies are done and moves those in
 * flight. Calls without a non-blocking form (communicator creation) pump
 * first; MPI_Finalize first finishes all queued work. With
 * EMU_STREAMS=sync, every call goes straight to the library.
 *
 * Not wrapped: calls that do not block (MPI_Isend, MPI_Test, MPI_Comm_rank,
 * ...), and any blocking call the suite does not make (the list is below);
 * a new one blocks without pumping, which only matters if a peer waits for a
 * collective this rank has queued but not started. */
#include <mpi.h>

#include "emu_streams.h"

namespace {

int wait(MPI_Request *r, MPI_Status *st) {
    long spins = 0;
    for (;;) {
        int done = 0, e = PMPI_Test(r, &done, st);
        if (e != MPI_SUCCESS || done) return e;
        if (!cuda_emu::pump()) cuda_emu::idle(&spins);
        else spins = 0;
    }
}

int wait_all(int n, MPI_Request *r, MPI_Status *st) {
    long spins = 0;
    for (;;) {
        int done = 0, e = PMPI_Testall(n, r, &done, st);
        if (e != MPI_SUCCESS || done) return e;
        if (!cuda_emu::pump()) cuda_emu::idle(&spins);
        else spins = 0;
    }
}

bool sync_mode() { return !cuda_emu::deferred(); }

}  // namespace

/* Each wrapper: the blocking call itself in sync mode, else the
 * non-blocking one and a wait that pumps. */
#define NONBLOCKING(icall)                               \
    do {                                                 \
        MPI_Request r_;                                  \
        int e_ = icall;                                  \
        return e_ != MPI_SUCCESS ? e_ : wait(&r_, MPI_STATUS_IGNORE); \
    } while (0)

extern "C" {

int MPI_Barrier(MPI_Comm c) {
    if (sync_mode()) return PMPI_Barrier(c);
    NONBLOCKING(PMPI_Ibarrier(c, &r_));
}

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c) {
    if (sync_mode()) return PMPI_Bcast(b, n, t, root, c);
    NONBLOCKING(PMPI_Ibcast(b, n, t, root, c, &r_));
}

int MPI_Allreduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
    if (sync_mode()) return PMPI_Allreduce(s, r, n, t, op, c);
    NONBLOCKING(PMPI_Iallreduce(s, r, n, t, op, c, &r_));
}

int MPI_Reduce(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
    if (sync_mode()) return PMPI_Reduce(s, r, n, t, op, root, c);
    NONBLOCKING(PMPI_Ireduce(s, r, n, t, op, root, c, &r_));
}

int MPI_Reduce_scatter_block(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
    if (sync_mode()) return PMPI_Reduce_scatter_block(s, r, n, t, op, c);
    NONBLOCKING(PMPI_Ireduce_scatter_block(s, r, n, t, op, c, &r_));
}

int MPI_Allgather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                  MPI_Comm c) {
    if (sync_mode()) return PMPI_Allgather(s, sn, st, r, rn, rt, c);
    NONBLOCKING(PMPI_Iallgather(s, sn, st, r, rn, rt, c, &r_));
}

int MPI_Gather(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root,
               MPI_Comm c) {
    if (sync_mode()) return PMPI_Gather(s, sn, st, r, rn, rt, root, c);
    NONBLOCKING(PMPI_Igather(s, sn, st, r, rn, rt, root, c, &r_));
}

int MPI_Gatherv(const void *s, int sn, MPI_Datatype st, void *r, const int rn[], const int displs[],
                MPI_Datatype rt, int root, MPI_Comm c) {
    if (sync_mode()) return PMPI_Gatherv(s, sn, st, r, rn, displs, rt, root, c);
    NONBLOCKING(PMPI_Igatherv(s, sn, st, r, rn, displs, rt, root, c, &r_));
}

int MPI_Scatter(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt, int root,
                MPI_Comm c) {
    if (sync_mode()) return PMPI_Scatter(s, sn, st, r, rn, rt, root, c);
    NONBLOCKING(PMPI_Iscatter(s, sn, st, r, rn, rt, root, c, &r_));
}

int MPI_Alltoall(const void *s, int sn, MPI_Datatype st, void *r, int rn, MPI_Datatype rt,
                 MPI_Comm c) {
    if (sync_mode()) return PMPI_Alltoall(s, sn, st, r, rn, rt, c);
    NONBLOCKING(PMPI_Ialltoall(s, sn, st, r, rn, rt, c, &r_));
}

int MPI_Send(const void *b, int n, MPI_Datatype t, int dest, int tag, MPI_Comm c) {
    if (sync_mode()) return PMPI_Send(b, n, t, dest, tag, c);
    NONBLOCKING(PMPI_Isend(b, n, t, dest, tag, c, &r_));
}

int MPI_Recv(void *b, int n, MPI_Datatype t, int src, int tag, MPI_Comm c, MPI_Status *st) {
    if (sync_mode()) return PMPI_Recv(b, n, t, src, tag, c, st);
    MPI_Request r;
    int e = PMPI_Irecv(b, n, t, src, tag, c, &r);
    return e != MPI_SUCCESS ? e : wait(&r, st);
}

int MPI_Sendrecv(const void *sb, int sn, MPI_Datatype stype, int dest, int stag, void *rb, int rn,
                 MPI_Datatype rtype, int src, int rtag, MPI_Comm c, MPI_Status *st) {
    if (sync_mode()) return PMPI_Sendrecv(sb, sn, stype, dest, stag, rb, rn, rtype, src, rtag, c, st);
    MPI_Request r[2];
    MPI_Status sts[2];
    int e = PMPI_Irecv(rb, rn, rtype, src, rtag, c, &r[0]);
    if (e == MPI_SUCCESS) e = PMPI_Isend(sb, sn, stype, dest, stag, c, &r[1]);
    if (e == MPI_SUCCESS) e = wait_all(2, r, sts);
    if (e == MPI_SUCCESS && st != MPI_STATUS_IGNORE) *st = sts[0];
    return e;
}

int MPI_Wait(MPI_Request *r, MPI_Status *st) {
    if (sync_mode()) return PMPI_Wait(r, st);
    return wait(r, st);
}

int MPI_Waitall(int n, MPI_Request r[], MPI_Status st[]) {
    if (sync_mode()) return PMPI_Waitall(n, r, st);
    return wait_all(n, r, st);
}

int MPI_Comm_dup(MPI_Comm c, MPI_Comm *out) {
    if (sync_mode()) return PMPI_Comm_dup(c, out);
    NONBLOCKING(PMPI_Comm_idup(c, out, &r_));
}

/* No non-blocking forms: start what can start, then block. */
int MPI_Comm_split(MPI_Comm c, int color, int key, MPI_Comm *out) {
    cuda_emu::pump();
    return PMPI_Comm_split(c, color, key, out);
}

int MPI_Comm_split_type(MPI_Comm c, int type, int key, MPI_Info info, MPI_Comm *out) {
    cuda_emu::pump();
    return PMPI_Comm_split_type(c, type, key, info, out);
}

int MPI_Comm_create_group(MPI_Comm c, MPI_Group g, int tag, MPI_Comm *out) {
    cuda_emu::pump();
    return PMPI_Comm_create_group(c, g, tag, out);
}

/* Queued work finishes before MPI goes (the collectives need it). */
int MPI_Finalize(void) {
    cuda_emu::sync_all("MPI_Finalize");
    return PMPI_Finalize();
}

}  // extern "C"
