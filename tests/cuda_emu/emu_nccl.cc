/* emu_nccl.cc: NCCL over MPI for the CUDA emulator (see include/nccl.h).
 *
 * Building a communicator involves only its members: the unique id carries
 * its creator's world rank and a per-creator counter; every member sends
 * (rank, world rank, device, host) to the creator, which checks the ranks
 * and devices and answers with the world ranks in NCCL rank order; then the
 * members alone call MPI_Comm_create_group. So communicators of disjoint
 * groups (the rows and columns of a mesh) can be built in any order.
 *
 * An operation (or a group of them) is checked when it is called and queued
 * on its stream as communication (emu_streams.cc): when the stream reaches
 * it, it copies its send buffers and posts non-blocking MPI calls; while
 * they are in flight the stream is busy; once they have completed, it
 * writes its receive buffers (when something needs them). The operations of
 * one communicator run in call order, as NCCL's do. Sends never block: a
 * send copies its data and posts MPI_Isend, which completes in the
 * background (checked at every later NCCL call and waited for at
 * ncclCommDestroy); on a GPU a send only queues work on a stream, so a rank
 * that sends and then blocks elsewhere must not hang here either.
 *
 * The MPI calls of queued work are PMPI_ ones: emu_mpi.cc wraps the
 * program's blocking MPI calls (MPI_X) so that they move this work on. */
#include <nccl.h>
#include <cuda_bf16.h>

#include "emu_streams.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <list>
#include <mutex>
#include <set>
#include <vector>

struct ncclComm {
    MPI_Comm mpi;
    int rank, size, device;
};

namespace {

const char MAGIC[8] = {'e', 'm', 'u', 'n', 'c', 'c', 'l', 0};
const int TAG_JOIN = 30000, TAG_REPLY = 30400, TAG_P2P = 31000;

struct IdBody {
    char magic[8];
    int creator;          /* world rank */
    int counter;
    unsigned long long nonce;
};

struct Member {
    int rank, world, device, nranks;
    unsigned long long host, nonce;
};

std::set<const void *> comms;
int id_counter = 0;

/* Sends in flight: data copied, MPI_Isend posted. */
struct Pending { MPI_Request req; std::vector<unsigned char> data; };
std::list<Pending> pending;

ncclResult_t fail(ncclResult_t r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
ncclResult_t fail(ncclResult_t r, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cuda_emu: NCCL: %s\n", msg);
    fflush(stderr);
    return r;
}

void progress() {
    for (auto it = pending.begin(); it != pending.end();) {
        int done = 0;
        PMPI_Test(&it->req, &done, MPI_STATUS_IGNORE);
        it = done ? pending.erase(it) : std::next(it);
    }
}

bool mpi_up() {
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    return up && !down;
}

unsigned long long host_hash() {
    char name[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    MPI_Get_processor_name(name, &len);
    unsigned long long h = 1469598103934665603ull;
    for (int i = 0; i < len; i++) h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
    return h;
}

size_t type_size(ncclDataType_t t) {
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

/* The type arithmetic happens in: bf16 widens to fp32. */
MPI_Datatype work_type(ncclDataType_t t) {
    switch (t) {
    case ncclInt8: return MPI_INT8_T;
    case ncclUint8: return MPI_UINT8_T;
    case ncclInt32: return MPI_INT32_T;
    case ncclUint32: return MPI_UINT32_T;
    case ncclInt64: return MPI_INT64_T;
    case ncclUint64: return MPI_UINT64_T;
    case ncclFloat32: case ncclBfloat16: return MPI_FLOAT;
    case ncclFloat64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
    }
}
size_t work_size(ncclDataType_t t) { return t == ncclBfloat16 ? 4 : type_size(t); }

/* Copy count elements from a user buffer into work scratch (bf16 widened). */
void to_work(const void *src, ncclDataType_t t, size_t count, void *dst) {
    if (t == ncclBfloat16) {
        const __nv_bfloat16 *s = (const __nv_bfloat16 *)src;
        float *d = (float *)dst;
        for (size_t i = 0; i < count; i++) d[i] = __bfloat162float(s[i]);
    } else {
        memcpy(dst, src, count * type_size(t));
    }
}
void from_work(const void *src, ncclDataType_t t, size_t count, void *dst) {
    if (t == ncclBfloat16) {
        const float *s = (const float *)src;
        __nv_bfloat16 *d = (__nv_bfloat16 *)dst;
        for (size_t i = 0; i < count; i++) d[i] = __float2bfloat16(s[i]);   /* one rounding */
    } else {
        memcpy(dst, src, count * type_size(t));
    }
}

MPI_Op mpi_op(ncclRedOp_t op) {
    switch (op) {
    case ncclSum: case ncclAvg: return MPI_SUM;
    case ncclProd: return MPI_PROD;
    case ncclMax: return MPI_MAX;
    case ncclMin: return MPI_MIN;
    default: return MPI_OP_NULL;
    }
}

/* ncclAvg: divide the sum by the rank count (in the work type). */
void average(void *buf, ncclDataType_t t, size_t count, int n) {
    switch (work_type(t) == MPI_FLOAT ? 0 : work_type(t) == MPI_DOUBLE ? 1 : 2) {
    case 0: for (size_t i = 0; i < count; i++) ((float *)buf)[i] /= (float)n; break;
    case 1: for (size_t i = 0; i < count; i++) ((double *)buf)[i] /= n; break;
    default: break;   /* integer averages are refused earlier */
    }
}

/* ---- queued operations (groups) ------------------------------------------------------------- */
enum Kind { ALLREDUCE, REDUCE_SCATTER, ALLGATHER, BROADCAST, REDUCE, SEND, RECV };
struct Op {
    Kind kind;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t type;
    ncclRedOp_t op;
    int root;   /* root, or peer */
    ncclComm_t comm;
    cudaStream_t stream;
};
int group_depth = 0;
std::vector<Op> queued;

const char *kind_name(Kind k) {
    static const char *n[] = {"ncclAllReduce", "ncclReduceScatter", "ncclAllGather",
                              "ncclBroadcast", "ncclReduce", "ncclSend", "ncclRecv"};
    return n[k];
}

/* Bytes op o reads from its send buffer and writes to its receive buffer
 * on this rank. */
void extents(const Op &o, size_t *send_bytes, size_t *recv_bytes) {
    int n = o.comm->size, r = o.comm->rank;
    size_t c = o.count * type_size(o.type);
    *send_bytes = *recv_bytes = 0;
    switch (o.kind) {
    case ALLREDUCE: *send_bytes = *recv_bytes = c; break;
    case REDUCE_SCATTER: *send_bytes = c * n; *recv_bytes = c; break;
    case ALLGATHER: *send_bytes = c; *recv_bytes = c * n; break;
    case BROADCAST: *send_bytes = r == o.root ? c : 0; *recv_bytes = c; break;
    case REDUCE: *send_bytes = c; *recv_bytes = r == o.root ? c : 0; break;
    case SEND: *send_bytes = c; break;
    case RECV: *recv_bytes = c; break;
    }
}

ncclResult_t check(const Op &o, cudaStream_t stream) {
    const char *call = kind_name(o.kind);
    if (!o.comm || !comms.count(o.comm)) return fail(ncclInvalidArgument, "%s: not a live communicator", call);
    if (!cuda_emu::stream_valid(stream)) return fail(ncclInvalidArgument, "%s: not a live stream", call);
    size_t es = type_size(o.type);
    if (!es || work_type(o.type) == MPI_DATATYPE_NULL)
        return fail(ncclInvalidArgument, "%s: data type %d is not emulated", call, (int)o.type);
    if (o.kind != ALLGATHER && o.kind != BROADCAST && o.kind != SEND && o.kind != RECV) {
        if (mpi_op(o.op) == MPI_OP_NULL) return fail(ncclInvalidArgument, "%s: reduction %d", call, (int)o.op);
        if (o.op == ncclAvg && work_type(o.type) != MPI_FLOAT && work_type(o.type) != MPI_DOUBLE)
            return fail(ncclInvalidArgument, "%s: ncclAvg needs a floating-point type", call);
    }
    int n = o.comm->size;
    if ((o.kind == BROADCAST || o.kind == REDUCE || o.kind == SEND || o.kind == RECV) &&
        (o.root < 0 || o.root >= n))
        return fail(ncclInvalidArgument, "%s: %s %d of %d ranks", call,
                    o.kind == SEND || o.kind == RECV ? "peer" : "root", o.root, n);
    if (o.count > (size_t)1 << 30) return fail(ncclInvalidArgument, "%s: count %zu is more than the emulator moves", call, o.count);
    size_t send_bytes, recv_bytes;
    extents(o, &send_bytes, &recv_bytes);
    if (cuda_emu::device_range_error(call, "the send buffer", o.send, send_bytes) ||
        cuda_emu::device_range_error(call, "the receive buffer", o.recv, recv_bytes))
        return fail(ncclInvalidArgument, "%s: a buffer is not (entirely) device memory", call);
    return ncclSuccess;
}

void post_send(const Op &o) {
    size_t bytes = o.count * type_size(o.type);
    pending.emplace_back();
    Pending &p = pending.back();
    p.data.assign((const unsigned char *)o.send, (const unsigned char *)o.send + bytes);
    PMPI_Isend(p.data.data(), (int)bytes, MPI_BYTE, o.root, TAG_P2P, o.comm->mpi, &p.req);
}

/* A group (or one operation) as queued communication. start() posts every
 * receive, then every send, then the collectives in call order, all
 * non-blocking, so no order of sends and receives among the ranks can
 * deadlock; finish() reduces what needs it and writes the results.
 *
 * On a GPU the collective reads its send buffer and writes its receive
 * buffer at any time while it runs, so work that writes either of them
 * then, without waiting for the collective, races with it. Here the
 * collective reads at start() and writes at finish(); in between it keeps
 * a copy of both buffers, and finish() reports any byte that changed. */
struct Group : cuda_emu::CommWork {
    std::vector<Op> ops;
    std::vector<std::vector<unsigned char>> in, out;   /* scratch per op */
    std::vector<std::vector<unsigned char>> sent, held; /* the buffers at start() */
    std::vector<MPI_Request> reqs;

    void start() override {
        in.assign(ops.size(), {});
        out.assign(ops.size(), {});
        sent.assign(ops.size(), {});
        held.assign(ops.size(), {});
        for (size_t i = 0; i < ops.size(); i++) {   /* the buffers may have been freed since the call */
            const Op &o = ops[i];
            size_t sb, rb;
            extents(o, &sb, &rb);
            if (cuda_emu::device_range_error(kind_name(o.kind), "the send buffer", o.send, sb) ||
                cuda_emu::device_range_error(kind_name(o.kind), "the receive buffer", o.recv, rb))
                cuda_emu::fatal("%s ran after a buffer it was given had been freed (see above)",
                                kind_name(o.kind));
            sent[i].assign((const unsigned char *)o.send, (const unsigned char *)o.send + sb);
            held[i].assign((const unsigned char *)o.recv, (const unsigned char *)o.recv + rb);
        }
        for (size_t i = 0; i < ops.size(); i++)
            if (ops[i].kind == RECV) {
                const Op &o = ops[i];
                out[i].resize(o.count * type_size(o.type));
                reqs.emplace_back();
                PMPI_Irecv(out[i].data(), (int)out[i].size(), MPI_BYTE, o.root, TAG_P2P,
                           o.comm->mpi, &reqs.back());
            }
        for (const Op &o : ops)
            if (o.kind == SEND) post_send(o);
        for (size_t i = 0; i < ops.size(); i++)
            if (ops[i].kind != SEND && ops[i].kind != RECV) post_collective(i);
        progress();
    }

    void post_collective(size_t i) {
        const Op &o = ops[i];
        ncclComm_t cm = o.comm;
        int n = cm->size, r = cm->rank;
        size_t ws = work_size(o.type), es = type_size(o.type), count = o.count;
        MPI_Datatype wt = work_type(o.type);
        std::vector<unsigned char> &a = in[i], &b = out[i];
        reqs.emplace_back();
        MPI_Request *q = &reqs.back();
        switch (o.kind) {
        case ALLREDUCE:
            a.resize(count * ws);
            to_work(o.send, o.type, count, a.data());
            PMPI_Iallreduce(MPI_IN_PLACE, a.data(), (int)count, wt, mpi_op(o.op), cm->mpi, q);
            break;
        case REDUCE_SCATTER:
            a.resize(count * n * ws);
            b.resize(count * ws);
            to_work(o.send, o.type, count * n, a.data());
            PMPI_Ireduce_scatter_block(a.data(), b.data(), (int)count, wt, mpi_op(o.op), cm->mpi, q);
            break;
        case ALLGATHER:
            a.resize(count * es);
            b.resize(count * es * n);
            memcpy(a.data(), o.send, count * es);
            PMPI_Iallgather(a.data(), (int)(count * es), MPI_BYTE, b.data(), (int)(count * es),
                            MPI_BYTE, cm->mpi, q);
            break;
        case BROADCAST:
            a.resize(count * es);
            if (r == o.root) memcpy(a.data(), o.send, count * es);
            PMPI_Ibcast(a.data(), (int)(count * es), MPI_BYTE, o.root, cm->mpi, q);
            break;
        case REDUCE:
            a.resize(count * ws);
            b.resize(count * ws);
            to_work(o.send, o.type, count, a.data());
            PMPI_Ireduce(a.data(), b.data(), (int)count, wt, mpi_op(o.op), o.root, cm->mpi, q);
            break;
        default:
            break;
        }
    }

    bool test() override {
        progress();
        int done = 1;
        if (!reqs.empty()) PMPI_Testall((int)reqs.size(), reqs.data(), &done, MPI_STATUSES_IGNORE);
        return done != 0;
    }

    /* A buffer of op i that other work changed while the op was in flight. */
    void unchanged(size_t i, const char *which, const void *p, const std::vector<unsigned char> &was) {
        const unsigned char *now = (const unsigned char *)p;
        for (size_t b = 0; b < was.size(); b++)
            if (now[b] != was[b])
                cuda_emu::fatal("%s of %zu elements: its %s buffer (%p) changed at byte %zu while "
                                "the operation was in flight: work not ordered after the operation "
                                "wrote it (on a GPU the two race; wait for the operation's stream or "
                                "an event recorded after it first)",
                                kind_name(ops[i].kind), ops[i].count, which, p, b);
    }

    void finish() override {
        for (size_t i = 0; i < ops.size(); i++) {
            unchanged(i, "send", ops[i].send, sent[i]);
            unchanged(i, "receive", ops[i].recv, held[i]);
        }
        for (size_t i = 0; i < ops.size(); i++) {
            const Op &o = ops[i];
            int n = o.comm->size;
            size_t es = type_size(o.type);
            switch (o.kind) {
            case ALLREDUCE:
                if (o.op == ncclAvg) average(in[i].data(), o.type, o.count, n);
                from_work(in[i].data(), o.type, o.count, o.recv);
                break;
            case REDUCE_SCATTER:
                if (o.op == ncclAvg) average(out[i].data(), o.type, o.count, n);
                from_work(out[i].data(), o.type, o.count, o.recv);
                break;
            case ALLGATHER: memcpy(o.recv, out[i].data(), out[i].size()); break;
            case BROADCAST: memcpy(o.recv, in[i].data(), o.count * es); break;
            case REDUCE:
                if (o.comm->rank == o.root) {
                    if (o.op == ncclAvg) average(out[i].data(), o.type, o.count, n);
                    from_work(out[i].data(), o.type, o.count, o.recv);
                }
                break;
            case RECV:
                if (!out[i].empty()) memcpy(o.recv, out[i].data(), out[i].size());
                break;
            case SEND: break;
            }
        }
    }
};

/* Queue a group on the stream of its first operation (and make its other
 * streams, if any, wait for it). */
void queue_group(std::vector<Op> &ops) {
    if (ops.empty()) return;
    std::unique_ptr<Group> g(new Group);
    std::vector<cuda_emu::Use> uses;
    std::vector<cudaStream_t> streams;
    for (const Op &o : ops) {
        size_t sb, rb;
        extents(o, &sb, &rb);
        if (sb) uses.push_back({o.send, sb});
        if (rb) uses.push_back({o.recv, rb});
        if (std::find(streams.begin(), streams.end(), o.stream) == streams.end())
            streams.push_back(o.stream);
        if (o.comm != ops[0].comm)
            cuda_emu::fatal("an NCCL group over two communicators is not emulated");
    }
    char what[200];
    const Op &o = ops[0];
    if (ops.size() == 1)
        snprintf(what, sizeof what, "%s of %zu elements on rank %d of an NCCL communicator of %d",
                 kind_name(o.kind), o.count, o.comm->rank, o.comm->size);
    else
        snprintf(what, sizeof what, "an NCCL group of %zu operations on rank %d of a communicator of %d",
                 ops.size(), o.comm->rank, o.comm->size);
    g->ops = ops;
    cuda_emu::enqueue_comm(o.stream, o.comm, what, uses, std::move(g), streams);
}

ncclResult_t submit(Op o, cudaStream_t stream) {
    progress();
    ncclResult_t r = check(o, stream);
    if (r) return r;
    o.stream = stream;
    if (group_depth > 0) {
        queued.push_back(o);
        return ncclSuccess;
    }
    std::vector<Op> one(1, o);
    queue_group(one);
    return ncclSuccess;
}

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int *v) {
    if (!v) return ncclInvalidArgument;
    *v = NCCL_VERSION_CODE;
    return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t r) {
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}
const char *ncclGetLastError(ncclComm_t) { return ""; }

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
    if (!id) return fail(ncclInvalidArgument, "ncclGetUniqueId: null pointer");
    if (!mpi_up()) return fail(ncclInvalidUsage, "ncclGetUniqueId: the emulator's NCCL needs MPI to be initialised");
    IdBody b;
    memcpy(b.magic, MAGIC, 8);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.creator);
    b.counter = id_counter++;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    b.nonce = ((unsigned long long)getpid() << 32) ^ (unsigned long long)ts.tv_nsec ^
              ((unsigned long long)b.counter << 48);
    memset(id, 0, sizeof *id);
    memcpy(id->internal, &b, sizeof b);
    return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
    if (!comm) return fail(ncclInvalidArgument, "ncclCommInitRank: null communicator pointer");
    *comm = nullptr;
    if (!mpi_up()) return fail(ncclInvalidUsage, "ncclCommInitRank: the emulator's NCCL needs MPI to be initialised");
    IdBody b;
    memcpy(&b, id.internal, sizeof b);
    if (memcmp(b.magic, MAGIC, 8) != 0)
        return fail(ncclInvalidArgument, "ncclCommInitRank: the unique id was not made by ncclGetUniqueId (not broadcast?)");
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return fail(ncclInvalidArgument, "ncclCommInitRank: rank %d of %d", rank, nranks);
    int device = 0;
    if (cudaGetDevice(&device) != cudaSuccess) {
        (void)cudaGetLastError();
        return fail(ncclUnhandledCudaError, "ncclCommInitRank: no current CUDA device");
    }
    int world_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    Member me = {rank, world_rank, device, nranks, host_hash(), b.nonce};
    int tag_join = TAG_JOIN + b.counter % 256, tag_reply = TAG_REPLY + b.counter % 256;
    /* reply: status, then the world ranks in NCCL rank order */
    std::vector<int> reply(1 + nranks, 0);
    if (world_rank == b.creator) {
        std::vector<Member> all(nranks);
        std::vector<int> seen(nranks, 0);
        all[rank] = me;
        seen[rank] = 1;
        std::vector<Member> got(nranks);
        for (int i = 0; i < nranks - 1; i++) {
            Member m;
            MPI_Recv(&m, sizeof m, MPI_BYTE, MPI_ANY_SOURCE, tag_join, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            got[i] = m;
        }
        int status = 0;
        char why[512] = "";
        for (int i = 0; i < nranks - 1 && !status; i++) {
            const Member &m = got[i];
            if (m.nonce != b.nonce || m.nranks != nranks || m.rank < 0 || m.rank >= nranks || seen[m.rank]) {
                status = ncclInvalidUsage;
                snprintf(why, sizeof why, "ranks disagree on the communicator (rank %d of %d, world rank %d)",
                         m.rank, m.nranks, m.world);
            } else {
                all[m.rank] = m;
                seen[m.rank] = 1;
            }
        }
        for (int i = 0; i < nranks && !status; i++)
            for (int j = 0; j < i && !status; j++)
                if (all[i].host == all[j].host && all[i].device == all[j].device) {
                    status = ncclInvalidUsage;
                    snprintf(why, sizeof why, "Duplicate GPU detected: rank %d and rank %d both on "
                             "CUDA device %d (NCCL needs one GPU per rank; EMU_GPUS sets how many "
                             "the emulator shows)", i, j, all[i].device);
                }
        reply[0] = status;
        for (int i = 0; i < nranks; i++) reply[1 + i] = seen[i] ? all[i].world : -1;
        for (int i = 0; i < nranks - 1; i++)
            MPI_Send(reply.data(), 1 + nranks, MPI_INT, got[i].world, tag_reply, MPI_COMM_WORLD);
        if (status) return fail((ncclResult_t)status, "ncclCommInitRank: %s", why);
    } else {
        MPI_Send(&me, sizeof me, MPI_BYTE, b.creator, tag_join, MPI_COMM_WORLD);
        MPI_Recv(reply.data(), 1 + nranks, MPI_INT, b.creator, tag_reply, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (reply[0]) return fail((ncclResult_t)reply[0], "ncclCommInitRank: refused (rank %d of the communicator explains)", 0);
    }
    MPI_Group world_group, group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, nranks, reply.data() + 1, &group);
    MPI_Comm mc;
    MPI_Comm_create_group(MPI_COMM_WORLD, group, tag_join, &mc);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    ncclComm *c = new ncclComm{mc, rank, nranks, device};
    comms.insert(c);
    *comm = c;
    return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t c) {
    if (!c || !comms.count(c)) return fail(ncclInvalidArgument, "ncclCommFinalize: not a live communicator");
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) {
    if (!c || !comms.count(c)) return fail(ncclInvalidArgument, "ncclCommDestroy: not a live communicator");
    cuda_emu::sync_channel(c, "ncclCommDestroy");   /* its queued operations first */
    for (auto &p : pending) {
        long spins = 0;
        for (int done = 0; !done;) {
            PMPI_Test(&p.req, &done, MPI_STATUS_IGNORE);
            if (!done && !cuda_emu::pump()) cuda_emu::idle(&spins);
        }
    }
    pending.clear();
    comms.erase(c);
    MPI_Comm_free(&c->mpi);
    delete c;
    return ncclSuccess;
}
ncclResult_t ncclCommAbort(ncclComm_t c) { return ncclCommDestroy(c); }

ncclResult_t ncclCommCount(const ncclComm_t c, int *n) {
    if (!c || !comms.count(c) || !n) return ncclInvalidArgument;
    *n = c->size;
    return ncclSuccess;
}
ncclResult_t ncclCommUserRank(const ncclComm_t c, int *r) {
    if (!c || !comms.count(c) || !r) return ncclInvalidArgument;
    *r = c->rank;
    return ncclSuccess;
}
ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *d) {
    if (!c || !comms.count(c) || !d) return ncclInvalidArgument;
    *d = c->device;
    return ncclSuccess;
}
ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *e) {
    if (!c || !comms.count(c) || !e) return ncclInvalidArgument;
    *e = ncclSuccess;
    return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                           ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    return submit(Op{ALLREDUCE, send, recv, count, type, op, 0, comm, nullptr}, stream);
}
ncclResult_t ncclReduceScatter(const void *send, void *recv, size_t recvcount, ncclDataType_t type,
                               ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
    return submit(Op{REDUCE_SCATTER, send, recv, recvcount, type, op, 0, comm, nullptr}, stream);
}
ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount, ncclDataType_t type,
                           ncclComm_t comm, cudaStream_t stream) {
    return submit(Op{ALLGATHER, send, recv, sendcount, type, ncclSum, 0, comm, nullptr}, stream);
}
ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type,
                           int root, ncclComm_t comm, cudaStream_t stream) {
    return submit(Op{BROADCAST, send, recv, count, type, ncclSum, root, comm, nullptr}, stream);
}
ncclResult_t ncclBcast(void *buf, size_t count, ncclDataType_t type, int root, ncclComm_t comm,
                       cudaStream_t stream) {
    return ncclBroadcast(buf, buf, count, type, root, comm, stream);
}
ncclResult_t ncclReduce(const void *send, void *recv, size_t count, ncclDataType_t type,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
    return submit(Op{REDUCE, send, recv, count, type, op, root, comm, nullptr}, stream);
}
ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t type, int peer,
                      ncclComm_t comm, cudaStream_t stream) {
    return submit(Op{SEND, send, nullptr, count, type, ncclSum, peer, comm, nullptr}, stream);
}
ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t type, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
    return submit(Op{RECV, nullptr, recv, count, type, ncclSum, peer, comm, nullptr}, stream);
}

ncclResult_t ncclGroupStart(void) {
    group_depth++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) {
    if (group_depth == 0) return fail(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--group_depth > 0) return ncclSuccess;
    std::vector<Op> ops;
    ops.swap(queued);
    queue_group(ops);
    return ncclSuccess;
}

}  // extern "C"
