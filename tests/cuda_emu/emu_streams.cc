/* emu_streams.cc: streams, events, and the order in which the emulated GPU
 * runs the work queued on them.
 *
 * EMU_STREAMS=sync runs every kernel, copy, memset, cuBLAS call and
 * collective when it is called, in program order. That hides every missing
 * stream dependency: whatever the program forgot to wait for has already
 * happened.
 *
 * EMU_STREAMS=defer (the default) queues each of them on its stream and runs
 * it only when something forces it, keeping nothing but what CUDA
 * guarantees:
 *
 * - order within a stream;
 * - cudaStreamWaitEvent: the stream waits for the latest record of the
 *   event at the time of the wait call (a later record does not count);
 * - the legacy default stream (0, cudaStreamLegacy): an operation on it
 *   waits for all work queued before it on the device's blocking streams
 *   (cudaStreamCreate, cudaStreamPerThread), and work on a blocking stream
 *   waits for the legacy stream's work queued before it; a stream created
 *   with cudaStreamNonBlocking has no such edge, either way;
 * - the host waits only where the runtime says it does: cudaStreamSynchronize,
 *   cudaEventSynchronize, cudaDeviceSynchronize, a blocking cudaMemcpy to the
 *   host or from pinned memory (emu_runtime.cc), a cuBLAS result returned to
 *   host memory. cudaMemset, device-to-device cudaMemcpy and cudaFree do not
 *   wait (cudaFree "may" synchronise, says the runtime's documentation, so a
 *   program cannot rely on it: freeing memory that queued work still uses
 *   is reported there, see pending_use).
 *
 * Forced work runs together with everything it depends on and nothing else,
 * one operation at a time; among the operations that are ready, the next is
 * drawn at random (EMU_SEED). Work that nothing forces stays queued, which
 * is the worst case for a missing dependency: the consumer runs before the
 * producer it forgot to wait for, the producer lands later and overwrites
 * what it should not. cudaEventQuery and cudaStreamQuery advance the work
 * they ask about by one step and say cudaErrorNotReady until it is done, so
 * a polling loop ends but a single query usually says "not ready".
 *
 * Collectives (NCCL over MPI, emu_nccl.cc) involve other processes, which
 * drive their own queues. A collective queued here and never forced would
 * leave a peer waiting for it while this rank waits for the peer in some
 * host MPI call: a deadlock no GPU has, because a GPU runs the collective
 * while its host blocks. So communication is eager and computation lazy:
 *
 * 1. A collective starts (posts its non-blocking MPI calls) as soon as the
 *    work it depends on is done; to get there, that work is forced, at the
 *    collective's own call when possible.
 * 2. Whenever the host waits (every synchronisation above, and every
 *    blocking MPI call the program makes: emu_mpi.cc turns each into its
 *    non-blocking form and a loop), pump() tests the collectives in flight
 *    and starts the ones whose dependencies completed. So a rank blocked in
 *    MPI keeps taking part in the collectives its peers wait for.
 * 3. The collectives of one NCCL communicator run in the order they were
 *    called, whatever their streams, as NCCL runs them.
 * 4. A collective that has completed writes its results only when something
 *    forces it (or a later collective of its stream must start), so a
 *    reader that forgot to wait for it still reads the old data.
 *
 * Within the limits the README lists, ranks deadlock only where GPUs would
 * (collectives called in different orders on different ranks). A wait that
 * makes no progress for EMU_WAIT_S seconds (default 20) stops the program
 * with what it waits for instead of hanging the test.
 *
 * 4 also lets a collective check its buffers: emu_nccl.cc keeps a copy of
 * them from start to end and reports work that wrote them in between.
 *
 * One host thread drives the emulated devices of a process (as in the
 * suite); nothing here is locked. */
#include "emu_streams.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <map>
#include <random>
#include <set>

namespace cuda_emu {

int visible_devices();
int set_error(int e);
[[noreturn]] void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

namespace {

/* ---- the queues -------------------------------------------------------------------------- */
enum State { QUEUED, STARTED, ARRIVED, DONE };   /* STARTED, ARRIVED: collectives only */

struct Queue;
struct Op {
    uint64_t seq;                          /* issue order over all queues */
    Queue *q;
    int device;
    std::string what;
    std::vector<Use> uses;
    std::function<void()> run;             /* local work; empty for markers */
    std::unique_ptr<CommWork> comm;        /* or communication */
    std::vector<std::shared_ptr<Op>> deps; /* must finish first (events, legacy stream, channel) */
    State state = QUEUED;
    double t = 0;                          /* when it finished (event records) */
};
typedef std::shared_ptr<Op> OpP;

struct Queue {
    int device;
    bool legacy, blocking, live;   /* live: the handle may still be used */
    unsigned flags;
    int priority;
    std::deque<OpP> ops;           /* unfinished, in stream order */
    OpP last;                      /* the newest operation, finished or not */
    uint64_t mark_gen = 0, mark_upto = 0;   /* ops up to mark_upto are needed */
};

std::vector<Queue *> queues;                    /* all, created or implicit */
std::set<const void *> handles;                 /* live created streams */
std::map<int, Queue *> legacy_queues, per_thread_queues;
std::map<const void *, OpP> channel_last;       /* newest op per communicator */
std::vector<OpP> unstarted;                     /* queued collectives */
std::vector<OpP> in_flight;                     /* started, not arrived */
uint64_t next_seq = 1;
uint64_t gen = 0;
bool stale_marks = false;   /* a collective started: what is needed shrank */
Op *running = nullptr;                          /* the deferred op running now */
const char *forced_by = nullptr;                /* the call that made it run */

struct Event {
    unsigned flags;
    OpP last;   /* the latest record */
};
std::set<const void *> events;

double now() {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int mode() {   /* 1 defer, 0 sync */
    static int m = -1;
    if (m < 0) {
        const char *s = getenv("EMU_STREAMS");
        if (!s || !*s || !strcmp(s, "defer")) m = 1;
        else if (!strcmp(s, "sync")) m = 0;
        else fatal("EMU_STREAMS=%s: expected defer or sync", s);
    }
    return m;
}

std::mt19937_64 &rng() {
    static std::mt19937_64 r;
    static bool seeded = false;
    if (!seeded) {
        const char *s = getenv("EMU_SEED");
        r.seed(s ? (unsigned long long)atoll(s) : 12345ull);
        seeded = true;
    }
    return r;
}

/* EMU_ONE_ORDER=1: a run that must not depend on EMU_SEED, which
 * tests/cuda_emu.tests runs under one seed only: two operations ready at
 * once, whose order the seed would draw, stop it. */
bool one_order() {
    static int v = -1;
    if (v < 0) {
        const char *s = getenv("EMU_ONE_ORDER");
        v = s && strcmp(s, "1") == 0;
    }
    return v;
}

double wait_limit() {
    static double w = -1;
    if (w < 0) {
        const char *s = getenv("EMU_WAIT_S");
        w = s && *s ? atof(s) : 20.0;
    }
    return w;
}

cudaError_t fail(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
cudaError_t fail(cudaError_t e, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cuda_emu: %s\n", msg);
    fflush(stderr);
    set_error(e);
    return e;
}

Queue *new_queue(int device, bool legacy, bool blocking, unsigned flags, int priority) {
    Queue *q = new Queue;
    q->device = device;
    q->legacy = legacy;
    q->blocking = blocking;
    q->live = true;
    q->flags = flags;
    q->priority = priority;
    queues.push_back(q);
    return q;
}

Queue *implicit_queue(std::map<int, Queue *> &m, bool legacy) {
    int dev = get_current_device();
    auto it = m.find(dev);
    if (it != m.end()) return it->second;
    return m[dev] = new_queue(dev, legacy, true, 0, 0);
}

Queue *queue_of(cudaStream_t s) {
    if (s == nullptr || s == cudaStreamLegacy) return implicit_queue(legacy_queues, true);
    if (s == cudaStreamPerThread) return implicit_queue(per_thread_queues, false);
    return (Queue *)s;
}

const char *stream_name(const Queue *q, char *buf, size_t n) {
    if (q->legacy) snprintf(buf, n, "the legacy default stream of device %d", q->device);
    else if (per_thread_queues.count(q->device) && per_thread_queues[q->device] == q)
        snprintf(buf, n, "the per-thread default stream of device %d", q->device);
    else snprintf(buf, n, "stream %p", (const void *)q);
    return buf;
}

bool done(const OpP &op) { return !op || op->state == DONE; }

bool deps_done(const Op *op) {
    for (const OpP &d : op->deps)
        if (d->state != DONE) return false;
    return true;
}

/* A new operation at the end of q, with the legacy stream's implicit edges. */
OpP add(Queue *q, std::string what, std::vector<Use> uses) {
    OpP op = std::make_shared<Op>();
    op->seq = next_seq++;
    op->q = q;
    op->device = q->device;
    op->what = std::move(what);
    op->uses = std::move(uses);
    if (q->legacy) {
        for (Queue *b : queues)
            if (b != q && b->device == q->device && b->blocking && !b->legacy && !done(b->last))
                op->deps.push_back(b->last);
    } else if (q->blocking) {
        auto it = legacy_queues.find(q->device);
        if (it != legacy_queues.end() && !done(it->second->last)) op->deps.push_back(it->second->last);
    }
    q->ops.push_back(op);
    q->last = op;
    return op;
}

void forget_queue(Queue *q) {
    queues.erase(std::find(queues.begin(), queues.end(), q));
    delete q;
}

/* op (the head of its queue) has finished. */
void retire(const OpP &op) {
    Queue *q = op->q;
    op->state = DONE;
    op->t = now();
    op->run = nullptr;      /* release what the closures captured */
    op->comm.reset();
    op->deps.clear();       /* no chains of finished operations */
    op->uses.clear();
    if (!q->ops.empty() && q->ops.front() == op) q->ops.pop_front();
    if (!q->live && q->ops.empty()) forget_queue(q);   /* destroyed with work queued */
}

/* Run one step of op: the whole of local work, the start of a collective,
 * or the end of one whose messages have arrived. */
void step(const OpP &op, const char *call) {
    Op *outer = running;
    const char *outer_call = forced_by;
    int dev = get_current_device();
    running = op.get();
    forced_by = call;
    set_current_device(op->device);
    if (op->state == ARRIVED) {
        op->comm->finish();
        retire(op);
    } else if (op->comm) {
        op->comm->start();
        op->state = STARTED;
        unstarted.erase(std::find(unstarted.begin(), unstarted.end(), op));
        in_flight.push_back(op);
        stale_marks = true;   /* its own end is not needed any more, unless a target needs it */
    } else {
        if (op->run) op->run();
        retire(op);
    }
    set_current_device(dev);
    running = outer;
    forced_by = outer_call;
}

/* Mark what the operations in `work` need: a prefix of each queue. */
void mark(std::vector<Op *> &work) {
    while (!work.empty()) {
        Op *op = work.back();
        work.pop_back();
        if (op->state == DONE) continue;
        Queue *q = op->q;
        uint64_t upto = q->mark_gen == gen ? q->mark_upto : 0;
        if (op->seq <= upto) continue;
        q->mark_gen = gen;
        q->mark_upto = op->seq;
        auto first = std::upper_bound(q->ops.begin(), q->ops.end(), upto,
                                      [](uint64_t s, const OpP &o) { return s < o->seq; });
        for (auto it = first; it != q->ops.end() && (*it)->seq <= op->seq; ++it)
            for (const OpP &d : (*it)->deps)
                if (d->state != DONE) work.push_back(d.get());
    }
}

/* Needed from now on: the targets and every collective not yet started. */
void mark_needed(const std::vector<OpP> &targets) {
    ++gen;
    stale_marks = false;
    std::vector<Op *> work;
    for (const OpP &t : targets)
        if (!done(t)) work.push_back(t.get());
    for (const OpP &c : unstarted) work.push_back(c.get());
    mark(work);
}

/* One move of the device: test the collectives in flight, then run one
 * needed operation whose turn it is, drawn at random. */
bool move(const char *call) {
    bool moved = false;
    for (size_t i = 0; i < in_flight.size();) {
        OpP op = in_flight[i];
        Op *outer = running;
        running = op.get();
        bool arrived = op->comm->test();
        running = outer;
        if (arrived) {
            op->state = ARRIVED;
            in_flight.erase(in_flight.begin() + (long)i);
            moved = true;
        } else {
            i++;
        }
    }
    std::vector<OpP> ready;
    for (Queue *q : queues) {
        if (q->ops.empty() || q->mark_gen != gen) continue;
        const OpP &h = q->ops.front();
        if (h->seq > q->mark_upto) continue;
        if (h->state == ARRIVED || (h->state == QUEUED && deps_done(h.get()))) ready.push_back(h);
    }
    if (ready.empty()) return moved;
    if (ready.size() > 1 && one_order())
        fatal("%s: %zu operations ready at once, so their order depends on EMU_SEED (EMU_ONE_ORDER=1: "
              "run this test under both seeds, tests/cuda_emu.tests)", call, ready.size());
    step(ready[rng()() % ready.size()], call);
    return true;
}

bool all_done(const std::vector<OpP> &targets) {
    for (const OpP &t : targets)
        if (!done(t)) return false;
    return true;
}

[[noreturn]] void hang(const char *call, double waited) {
    std::string s;
    char b[160];
    for (const OpP &o : in_flight) s += "\n  in flight, waiting for the other ranks: " + o->what;
    for (const OpP &o : unstarted) s += "\n  not started: " + o->what;
    for (Queue *q : queues) {
        if (q->ops.empty()) continue;
        const OpP &h = q->ops.front();
        s += std::string("\n  next on ") + stream_name(q, b, sizeof b) + ": " + h->what;
        for (const OpP &d : h->deps)
            if (d->state != DONE) s += "\n    which waits for " + d->what;
    }
    fatal("%s waited %.0f s without progress (EMU_WAIT_S): a collective whose peers never "
          "call it, or called it in another order?%s", call, waited, s.c_str());
}

/* Block until every target has finished, moving the device. */
void drive(const std::vector<OpP> &targets, const char *call) {
    if (all_done(targets)) return;
    if (running) fatal("%s called while deferred work runs (%s)", call, running->what.c_str());
    mark_needed(targets);
    long spins = 0;
    double since = now();
    while (!all_done(targets)) {
        if (move(call)) {
            spins = 0;
            since = now();
            if (stale_marks) mark_needed(targets);
            continue;
        }
        idle(&spins);
        double waited = now() - since;
        if (wait_limit() > 0 && waited > wait_limit()) hang(call, waited);
    }
}

std::vector<OpP> tails(int device) {   /* device < 0: every device */
    std::vector<OpP> t;
    for (Queue *q : queues)
        if ((device < 0 || q->device == device) && !done(q->last)) t.push_back(q->last);
    return t;
}

/* Sync mode: op was just queued on an idle stream; run it to the end. */
void run_now(const OpP &op, const char *call) {
    std::vector<OpP> t(1, op);
    if (op->comm) unstarted.push_back(op);
    drive(t, call);
}

}  // namespace

/* ---- the interface (emu_streams.h) ------------------------------------------------------ */
bool deferred() { return mode() == 1; }

bool stream_valid(cudaStream_t s) {
    return s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread ||
           handles.count((const void *)s) != 0;
}

void enqueue(cudaStream_t s, std::string what, std::vector<Use> uses, std::function<void()> run) {
    if (running) fatal("%s queued while deferred work runs (%s)", what.c_str(), running->what.c_str());
    OpP op = add(queue_of(s), std::move(what), std::move(uses));
    op->run = std::move(run);
    if (!deferred()) run_now(op, "the call");
    else if (!unstarted.empty() || !in_flight.empty()) pump();
}

void queue_kernel(const char *name, const char *file, int line, cudaStream_t s,
                  std::vector<const void *> pointers, std::function<void()> run) {
    std::vector<Use> uses;
    for (const void *p : pointers) uses.push_back(Use{p, 0});
    char what[512];
    snprintf(what, sizeof what, "kernel %s launched at %s:%d", name, file, line);
    enqueue(s, what, std::move(uses), std::move(run));
}

void enqueue_comm(cudaStream_t s, const void *channel, std::string what, std::vector<Use> uses,
                  std::unique_ptr<CommWork> work, const std::vector<cudaStream_t> &also) {
    if (running) fatal("%s queued while deferred work runs (%s)", what.c_str(), running->what.c_str());
    Queue *q = queue_of(s);
    OpP op = add(q, what, std::move(uses));
    op->comm = std::move(work);
    auto it = channel_last.find(channel);
    if (it != channel_last.end() && !done(it->second)) op->deps.push_back(it->second);
    channel_last[channel] = op;
    /* A group over several streams: it waits for each of them, and each of
     * them waits for it. */
    for (cudaStream_t o : also) {
        Queue *oq = queue_of(o);
        if (oq == q) continue;
        if (!done(oq->last)) op->deps.push_back(oq->last);
        OpP join = add(oq, "the end of " + what, {});
        join->deps.push_back(op);
    }
    if (!deferred()) {
        run_now(op, what.c_str());
        for (cudaStream_t o : also) drive(std::vector<OpP>(1, queue_of(o)->last), what.c_str());
        return;
    }
    unstarted.push_back(op);
    pump();
}

void sync_stream(cudaStream_t s, const char *call) {
    drive(std::vector<OpP>(1, queue_of(s)->last), call);
}

void sync_channel(const void *channel, const char *call) {
    auto it = channel_last.find(channel);
    if (it == channel_last.end()) return;
    OpP last = it->second;
    channel_last.erase(it);
    drive(std::vector<OpP>(1, last), call);
}

void sync_all(const char *call) { drive(tails(-1), call); }

bool pump() {
    if (running || (unstarted.empty() && in_flight.empty())) return false;
    mark_needed({});
    bool moved = false;
    while (move("a collective")) {
        moved = true;
        if (stale_marks) mark_needed({});
    }
    return moved;
}

void idle(long *spins) {
    if (++*spins < 200) sched_yield();
    else usleep(50);
}

std::string pending_use(const void *base, size_t size) {
    uintptr_t lo = (uintptr_t)base, hi = lo + size;
    char b[160];
    for (Queue *q : queues)
        for (const OpP &op : q->ops)
            for (const Use &u : op->uses) {
                uintptr_t p = (uintptr_t)u.p;
                bool hit = u.bytes ? (p < hi && p + u.bytes > lo) : (p >= lo && p < hi);
                if (hit)
                    return op->what + " on " + stream_name(q, b, sizeof b) +
                           (op->state == QUEUED ? ", not yet run" : ", still running");
            }
    return "";
}

const char *running_op() {
    static std::string s;
    if (!running) return nullptr;
    s = running->what + " (deferred; run by " + (forced_by ? forced_by : "the emulator") + ")";
    return s.c_str();
}

}  // namespace cuda_emu

using namespace cuda_emu;

/* ---- the API: streams, events, device synchronisation ------------------------------------- */
extern "C" {

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int priority) {
    if (!s) return fail(cudaErrorInvalidValue, "cudaStreamCreate: null pointer");
    if (visible_devices() == 0) return fail(cudaErrorNoDevice, "cudaStreamCreate: no device");
    Queue *q = new_queue(get_current_device(), false, !(flags & cudaStreamNonBlocking), flags, priority);
    handles.insert(q);
    *s = (cudaStream_t)q;
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithPriority(s, 0, 0); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
    return cudaStreamCreateWithPriority(s, flags, 0);
}

/* Work still queued runs to its end; the stream goes when it is empty. */
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (!s || !handles.erase((const void *)s))
        return fail(cudaErrorInvalidResourceHandle, "cudaStreamDestroy(%p): not a live stream", (void *)s);
    Queue *q = (Queue *)s;
    q->live = false;
    if (q->ops.empty()) forget_queue(q);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s) {
    if (!stream_valid(s))
        return fail(cudaErrorInvalidResourceHandle, "cudaStreamSynchronize: stream %p is not a live stream (destroyed?)", (void *)s);
    sync_stream(s, "cudaStreamSynchronize");
    return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t s) {
    if (!stream_valid(s))
        return fail(cudaErrorInvalidResourceHandle, "cudaStreamQuery: stream %p is not a live stream (destroyed?)", (void *)s);
    OpP last = queue_of(s)->last;
    if (done(last)) return cudaSuccess;
    mark_needed(std::vector<OpP>(1, last));
    move("cudaStreamQuery");
    return done(last) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int) {
    if (!stream_valid(s))
        return fail(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: stream %p is not a live stream (destroyed?)", (void *)s);
    if (!e || !events.count((const void *)e))
        return fail(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent: event %p is not live", (void *)e);
    if (!deferred()) return cudaSuccess;
    OpP rec = ((Event *)e)->last;
    OpP w = add(queue_of(s), "cudaStreamWaitEvent", {});
    if (!done(rec)) {
        w->what += " for " + rec->what;
        w->deps.push_back(rec);
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void) {
    if (visible_devices() == 0) return fail(cudaErrorNoDevice, "cudaDeviceSynchronize: no device");
    drive(tails(get_current_device()), "cudaDeviceSynchronize");
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags) {
    if (!e) return fail(cudaErrorInvalidValue, "cudaEventCreate: null pointer");
    if (visible_devices() == 0) return fail(cudaErrorNoDevice, "cudaEventCreate: no device");
    Event *ev = new Event{flags, nullptr};
    events.insert(ev);
    *e = (cudaEvent_t)ev;
    return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }

/* A record still queued completes anyway (waits on it keep their edge). */
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    if (!e || !events.erase((const void *)e))
        return fail(cudaErrorInvalidResourceHandle, "cudaEventDestroy(%p): not a live event", (void *)e);
    delete (Event *)e;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
    if (!e || !events.count((const void *)e))
        return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord: event %p is not live", (void *)e);
    if (!stream_valid(s))
        return fail(cudaErrorInvalidResourceHandle, "cudaEventRecord: stream %p is not a live stream (destroyed?)", (void *)s);
    Queue *q = queue_of(s);
    char b[160];
    OpP op = add(q, std::string("cudaEventRecord on ") + stream_name(q, b, sizeof b), {});
    ((Event *)e)->last = op;
    if (!deferred()) run_now(op, "cudaEventRecord");
    return cudaSuccess;
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int) {
    return cudaEventRecord(e, s);
}

cudaError_t cudaEventSynchronize(cudaEvent_t e) {
    if (!e || !events.count((const void *)e))
        return fail(cudaErrorInvalidResourceHandle, "cudaEventSynchronize: event %p is not live", (void *)e);
    drive(std::vector<OpP>(1, ((Event *)e)->last), "cudaEventSynchronize");
    return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
    if (!e || !events.count((const void *)e))
        return fail(cudaErrorInvalidResourceHandle, "cudaEventQuery: event %p is not live", (void *)e);
    OpP rec = ((Event *)e)->last;
    if (done(rec)) return cudaSuccess;
    mark_needed(std::vector<OpP>(1, rec));
    move("cudaEventQuery");
    return done(rec) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
    if (!ms) return fail(cudaErrorInvalidValue, "cudaEventElapsedTime: null pointer");
    if (!a || !b || !events.count((const void *)a) || !events.count((const void *)b))
        return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: an event is not live");
    Event *x = (Event *)a, *y = (Event *)b;
    if ((x->flags | y->flags) & cudaEventDisableTiming)
        return fail(cudaErrorInvalidResourceHandle,
                    "cudaEventElapsedTime: an event was created with cudaEventDisableTiming");
    if (!x->last || !y->last)
        return fail(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime: an event was never recorded");
    if (!done(x->last) || !done(y->last))
        return cudaErrorNotReady;   /* not an error: the events have not happened yet */
    *ms = (float)((y->last->t - x->last->t) * 1e3);
    return cudaSuccess;
}

}  // extern "C"
