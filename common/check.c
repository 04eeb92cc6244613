/* check.c: die(), usage_error(), say(), checked allocation and the watchdog. */
#include "check.h"

#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int check_rank = 0;
static int world_size = 1;
/* Kept for usage_error's barrier alone, so that it never meets another collective. */
static MPI_Comm refuse_comm = MPI_COMM_NULL;

static long long mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static void vline(FILE *f, const char *prefix, const char *fmt, va_list ap) {
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    fprintf(f, "%s%s\n", prefix, buf);
    fflush(f);
}

static int mpi_running(void) {
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    return up && !down;
}

void die(const char *fmt, ...) {
    fflush(stdout);   /* what the rank printed before comes first in a shared log */
    va_list ap;
    va_start(ap, fmt);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "error (rank %d): ", check_rank);
    vline(stderr, prefix, fmt, ap);
    va_end(ap);
    int world = 1;
    if (mpi_running()) {
        MPI_Comm_size(MPI_COMM_WORLD, &world);
        if (world > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    exit(1);
}

void not_implemented(const char *what, const char *where) {
    /* One thread reports and exits; any other (a matmul's row ranges) waits
     * here for the end, since two threads in exit() at once may crash. */
    static pthread_mutex_t one = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&one);
    die("not implemented: %s; see %s", what, where);
}

/* Every rank refuses: they all reach the refusals' barrier within the grace. */
static int every_rank_refuses(void) {
    MPI_Request r;
    if (refuse_comm == MPI_COMM_NULL || MPI_Ibarrier(refuse_comm, &r) != MPI_SUCCESS) return 0;
    long long end = mono_us() + REFUSE_GRACE_S * 1000000LL;
    int done = 0;
    while (MPI_Test(&r, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !done && mono_us() < end)
        usleep(1000);
    return done;
}

void usage_error(const char *fmt, ...) {
    fflush(stdout);   /* as in die() */
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int world = 1;
    if (mpi_running()) MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (world > 1 && !every_rank_refuses()) {
        fprintf(stderr, "error (rank %d): %s\n", check_rank, msg);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (check_rank == 0) {
        fprintf(stderr, "error: %s\n", msg);
        fflush(stderr);
    }
    check_finalize();
    exit(2);
}

void usage_error_any(const char *why) {
    int bad = why && *why;
    if (!mpi_running()) {
        if (bad) usage_error("%s", why);
        return;
    }
    int first = bad ? check_rank : world_size, lowest;
    watch_begin("the check every rank makes before it starts", "world", NULL, WATCH_WORLD);
    MPI_CHECK(MPI_Allreduce(&first, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    if (lowest < world_size) {
        char buf[1024] = "";
        if (lowest == check_rank) snprintf(buf, sizeof buf, "%s", why);
        MPI_CHECK(MPI_Bcast(buf, sizeof buf, MPI_CHAR, lowest, MPI_COMM_WORLD));
        watch_end();
        usage_error("%s", buf);
    }
    watch_end();
}

void usage_exit_ok(void) {
    check_finalize();
    exit(0);
}

void say(const char *fmt, ...) {
    if (check_rank != 0) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

void *xmalloc(size_t bytes) {
    void *p = NULL;
    if (bytes == 0) bytes = 1;
    if (posix_memalign(&p, 64, bytes) != 0)
        die("out of memory allocating %zu bytes", bytes);
    return p;
}

void *xcalloc(size_t n, size_t size) {
    void *p = xmalloc(n * size);
    memset(p, 0, n * size);
    return p;
}

/* ---- the watchdog --------------------------------------------------------------
 * Waits nest (a benchmark's timed loop around a library collective that
 * watches itself): a small stack of (what, since, peers). since is 0 for no
 * wait; the waiting thread writes the description and the peers first and
 * the start time last (release), the watchdog reads the depth and the time
 * first (acquire) and again after reading the rest: a wait that changed
 * meanwhile made progress.
 *
 * What the ranks of a node publish for each other's watchdogs: a slot each
 * in a shared-memory window. The watchdog thread beats (alive_us) every
 * round, so a stopped or hung process is one whose beat is old; the waiting
 * thread writes its innermost wait, and the watchdog which of that wait's
 * peers it finds silent (so that a rank waiting on a rank that waits on the
 * stopped one names it too). `what` changes under a sequence count (odd
 * while written), so a reader retries a half-written one. */
enum { WATCH_DEPTH = 4, WATCH_WHAT = 128, WATCH_ROUND_US = 200000, WATCH_SILENT_US = 1500000 };
typedef struct {
    long long alive_us;          /* the last beat of its watchdog thread; 0: none yet */
    long long since_us;          /* its innermost wait's last progress; 0: in no wait */
    int silent_peer;             /* a peer of that wait without sign of life (world rank); -1: none */
    unsigned version;            /* odd while `what` is being written */
    char what[WATCH_WHAT];       /* its innermost wait */
} watch_slot_t;

static char watch_what[WATCH_DEPTH][WATCH_WHAT];
static long long watch_since_us[WATCH_DEPTH];
static int *watch_peers[WATCH_DEPTH];      /* (world) each */
static int watch_npeers[WATCH_DEPTH];
static int watch_depth;
static double watch_timeout;
static const char *watch_flag = "--timeout-s";
static watch_slot_t own_slot = {.silent_peer = -1}, *mine = &own_slot;
static watch_slot_t *node_slots;         /* the node's table, NULL before check_init */
static int *slot_of;                     /* (world) a world rank's slot, -1: another node */
/* Held by the watchdog thread while it uses the table, which MPI_Finalize unmaps. */
static pthread_mutex_t watch_lock = PTHREAD_MUTEX_INITIALIZER;

void check_init(void) {
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &check_rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world_size));
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &refuse_comm));
    MPI_Comm node;
    int me, n;
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, check_rank, MPI_INFO_NULL, &node));
    MPI_CHECK(MPI_Comm_rank(node, &me));
    MPI_CHECK(MPI_Comm_size(node, &n));
    /* contiguous (MPI's default): slot i of the node at base + i; the window
     * lives until MPI_Finalize */
    watch_slot_t *base;
    MPI_Win win;
    MPI_Aint bytes;
    int unit;
    MPI_CHECK(MPI_Win_allocate_shared((MPI_Aint)sizeof(watch_slot_t), 1, MPI_INFO_NULL, node, &mine, &win));
    MPI_CHECK(MPI_Win_shared_query(win, 0, &bytes, &unit, &base));
    memset(mine, 0, sizeof *mine);
    mine->silent_peer = -1;
    int *world_of = xmalloc(sizeof(int) * (size_t)n);
    MPI_CHECK(MPI_Allgather(&check_rank, 1, MPI_INT, world_of, 1, MPI_INT, node));
    slot_of = xmalloc(sizeof(int) * (size_t)world_size);
    for (int r = 0; r < world_size; r++) slot_of[r] = -1;
    for (int i = 0; i < n; i++) slot_of[world_of[i]] = i;
    free(world_of);
    for (int d = 0; d < WATCH_DEPTH; d++) watch_peers[d] = xmalloc(sizeof(int) * (size_t)world_size);
    MPI_CHECK(MPI_Barrier(node));   /* every slot zeroed before anyone reads it */
    node_slots = base;
    MPI_Comm_free(&node);
}

void check_finalize(void) {
    pthread_mutex_lock(&watch_lock);
    node_slots = NULL;
    mine = &own_slot;
    pthread_mutex_unlock(&watch_lock);
    if (mpi_running()) MPI_Finalize();
}

static void publish(const char *what) {
    unsigned v = mine->version;
    __atomic_store_n(&mine->version, v + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    memcpy(mine->what, what, WATCH_WHAT);
    __atomic_store_n(&mine->version, v + 2, __ATOMIC_RELEASE);
}

void watch_begin(const char *what, const char *where, const int *peers, int npeers) {
    if (watch_timeout <= 0) return;
    int d = watch_depth;
    if (d == WATCH_DEPTH) die("watch_begin: waits nested deeper than %d", WATCH_DEPTH);
    snprintf(watch_what[d], sizeof watch_what[d], "%s%s%s%s", what, where ? " on the " : "",
             where ? where : "", where ? " communicator" : "");
    int n = 0;
    if (npeers == WATCH_WORLD) npeers = world_size;
    if (watch_peers[d])
        for (int i = 0; i < npeers && n < world_size; i++) {
            int r = peers ? peers[i] : i;
            if (r >= 0 && r < world_size) watch_peers[d][n++] = r;
        }
    watch_npeers[d] = n;
    publish(watch_what[d]);
    long long now = mono_us();
    __atomic_store_n(&watch_since_us[d], now, __ATOMIC_RELEASE);
    __atomic_store_n(&watch_depth, d + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&mine->since_us, now, __ATOMIC_RELEASE);
}

void watch_end(void) {
    if (watch_timeout <= 0 || watch_depth == 0) return;
    int d = watch_depth - 1;
    __atomic_store_n(&watch_depth, d, __ATOMIC_RELEASE);
    __atomic_store_n(&watch_since_us[d], 0LL, __ATOMIC_RELEASE);
    if (d > 0) {   /* the inner wait ended: the outer one progressed */
        publish(watch_what[d - 1]);
        watch_tick();
    } else {
        __atomic_store_n(&mine->since_us, 0LL, __ATOMIC_RELEASE);
    }
}

void watch_tick(void) {
    if (watch_timeout <= 0 || watch_depth == 0) return;
    long long now = mono_us();
    __atomic_store_n(&watch_since_us[watch_depth - 1], now, __ATOMIC_RELEASE);
    __atomic_store_n(&mine->since_us, now, __ATOMIC_RELEASE);
}

/* ---- the watchdog's report: what each peer of the stalled wait is doing ---------- */
enum { PEER_SILENT, PEER_BLOCKED, PEER_ELSEWHERE, PEER_IDLE, PEER_SAME, PEER_UNKNOWN, PEER_KINDS };

typedef struct {
    int kind;
    double secs;                 /* silent: since its last beat; elsewhere: in that wait */
    int blocked_on;              /* blocked: the silent rank its wait depends on */
    char what[WATCH_WHAT];       /* blocked, elsewhere: its wait */
} peer_state_t;

/* How long world rank r has shown no sign of life (0: it has, or unknown). */
static long long silence_us(int r, long long now) {
    if (!node_slots || slot_of[r] < 0) return 0;
    long long alive = __atomic_load_n(&node_slots[slot_of[r]].alive_us, __ATOMIC_ACQUIRE);
    return alive && now - alive > WATCH_SILENT_US ? now - alive : 0;
}

static void peer_state(int r, const char *my_what, long long now, peer_state_t *p) {
    p->kind = PEER_UNKNOWN;
    if (!node_slots || slot_of[r] < 0) return;
    const watch_slot_t *s = &node_slots[slot_of[r]];
    if (__atomic_load_n(&s->alive_us, __ATOMIC_ACQUIRE) == 0) return;
    long long silent = silence_us(r, now);
    if (silent) {
        p->kind = PEER_SILENT;
        p->secs = (double)silent * 1e-6;
        return;
    }
    for (int tries = 0; tries < 100; tries++) {
        unsigned v = __atomic_load_n(&s->version, __ATOMIC_ACQUIRE);
        long long since = __atomic_load_n(&s->since_us, __ATOMIC_ACQUIRE);
        memcpy(p->what, s->what, WATCH_WHAT);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if ((v & 1) || __atomic_load_n(&s->version, __ATOMIC_RELAXED) != v) continue;
        p->what[WATCH_WHAT - 1] = 0;
        p->blocked_on = __atomic_load_n(&s->silent_peer, __ATOMIC_RELAXED);
        if (since == 0) p->kind = PEER_IDLE;
        else if (p->blocked_on >= 0 && p->blocked_on != check_rank) p->kind = PEER_BLOCKED;
        else if (strcmp(p->what, my_what) == 0) p->kind = PEER_SAME;
        else {
            p->kind = PEER_ELSEWHERE;
            p->secs = (double)(now - since) * 1e-6;
        }
        return;
    }
}

static void append(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...) {
    size_t n = strlen(buf);
    if (n + 1 >= len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, len - n, fmt, ap);
    va_end(ap);
}

/* "; ranks 2, 3 <tail>" for the peers of one kind (the silent, the blocked
 * and the elsewhere one by one, with their own numbers). */
static void append_kind(char *buf, size_t len, const int *ranks, const peer_state_t *st, int n, int kind) {
    static const char *const tail[PEER_KINDS] = {
        "", "", "", "waiting on no rank (computing)", "in the same wait", "of unknown state (on another node, or its watchdog not started)"};
    int count = 0, shown = 0;
    for (int i = 0; i < n; i++) count += st[i].kind == kind;
    if (!count) return;
    for (int i = 0; i < n && shown < 8; i++) {
        if (st[i].kind != kind) continue;
        if (kind == PEER_SILENT)
            append(buf, len, "; rank %d shows no sign of life for %.1f s (stopped or hung)", ranks[i], st[i].secs);
        else if (kind == PEER_BLOCKED)
            append(buf, len, "; rank %d waits in %s, where rank %d shows no sign of life", ranks[i], st[i].what,
                   st[i].blocked_on);
        else if (kind == PEER_ELSEWHERE)
            append(buf, len, "; rank %d is in %s for %.1f s", ranks[i], st[i].what, st[i].secs);
        else
            append(buf, len, "%s %d", shown ? "," : count == 1 ? "; rank" : "; ranks", ranks[i]);
        shown++;
    }
    if (kind == PEER_SILENT || kind == PEER_BLOCKED || kind == PEER_ELSEWHERE) {
        if (count > shown) append(buf, len, "; %d more like them", count - shown);
        return;
    }
    if (count > shown) append(buf, len, " and %d more", count - shown);
    append(buf, len, " %s %s", count == 1 ? "is" : "are", tail[kind]);
}

/* The line for the wait at depth d, or 0 when it changed while being read. */
static int report(int d, long long since, char *buf, size_t len) {
    long long now = mono_us();
    int n = watch_npeers[d], *ranks = xmalloc(sizeof(int) * (size_t)(n ? n : 1)), k = 0;
    peer_state_t *st = xmalloc(sizeof *st * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++) {
        int r = watch_peers[d][i];
        if (r == check_rank) continue;
        ranks[k] = r;
        peer_state(r, watch_what[d], now, &st[k++]);
    }
    snprintf(buf, len, "error (rank %d): no progress for %.0f s in %s", check_rank, watch_timeout, watch_what[d]);
    if (k == 0) append(buf, len, ": a peer rank is stopped, hung or gone, or a message never comes");
    for (int kind = 0; kind < PEER_KINDS; kind++) append_kind(buf, len, ranks, st, k, kind);
    append(buf, len, "; ending the job (%s sets the limit)", watch_flag);
    free(ranks);
    free(st);
    return __atomic_load_n(&watch_depth, __ATOMIC_ACQUIRE) == d + 1 &&
           __atomic_load_n(&watch_since_us[d], __ATOMIC_ACQUIRE) == since;
}

/* Only time this process ran counts: a rank that was itself stopped (and
 * is resumed, as mpirun does before it ends a job) has no peer to blame, so
 * a gap in its own beats starts its clock again. */
static void *watchdog(void *arg) {
    (void)arg;
    long long awake_since = 0, last = mono_us();
    for (;;) {
        usleep(WATCH_ROUND_US);
        pthread_mutex_lock(&watch_lock);
        long long now = mono_us();
        if (now - last > WATCH_SILENT_US) awake_since = now;
        last = now;
        __atomic_store_n(&mine->alive_us, now, __ATOMIC_RELEASE);
        int d = __atomic_load_n(&watch_depth, __ATOMIC_ACQUIRE);
        long long since = d ? __atomic_load_n(&watch_since_us[d - 1], __ATOMIC_ACQUIRE) : 0;
        long long from = since > awake_since ? since : awake_since;
        int silent_peer = -1;
        for (int i = 0; since > 0 && i < watch_npeers[d - 1] && silent_peer < 0; i++) {
            int r = watch_peers[d - 1][i];
            if (r != check_rank && silence_us(r, now)) silent_peer = r;
        }
        __atomic_store_n(&mine->silent_peer, silent_peer, __ATOMIC_RELAXED);
        char line[2048];
        if (since > 0 && (double)(now - from) * 1e-6 > watch_timeout && report(d - 1, since, line, sizeof line)) {
            fprintf(stderr, "%s\n", line);
            fflush(stderr);
            _exit(1);
        }
        pthread_mutex_unlock(&watch_lock);
    }
    return NULL;
}

void watchdog_start(double timeout_s, const char *flag) {
    if (timeout_s <= 0 || watch_timeout > 0) return;
    watch_timeout = timeout_s;
    if (flag) watch_flag = flag;
    __atomic_store_n(&mine->alive_us, mono_us(), __ATOMIC_RELEASE);
    pthread_t t;
    if (pthread_create(&t, NULL, watchdog, NULL) != 0) die("cannot start the watchdog thread");
    pthread_detach(t);
}
