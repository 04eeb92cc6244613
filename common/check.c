/* check.c: die(), usage_error(), say() and checked allocation. */
#include "check.h"

#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int check_rank = 0;

static void vline(FILE *f, const char *prefix, const char *fmt, va_list ap) {
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    fprintf(f, "%s%s\n", prefix, buf);
    fflush(f);
}

void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char prefix[32];
    snprintf(prefix, sizeof prefix, "error (rank %d): ", check_rank);
    vline(stderr, prefix, fmt, ap);
    va_end(ap);
    int up = 0, down = 0, world = 1;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down) {
        MPI_Comm_size(MPI_COMM_WORLD, &world);
        if (world > 1) MPI_Abort(MPI_COMM_WORLD, 1);
    }
    exit(1);
}

void usage_error(const char *fmt, ...) {
    if (check_rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        vline(stderr, "error: ", fmt, ap);
        va_end(ap);
    }
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down) MPI_Finalize();
    exit(2);
}

void usage_exit_ok(void) {
    int up = 0, down = 0;
    MPI_Initialized(&up);
    MPI_Finalized(&down);
    if (up && !down) MPI_Finalize();
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
 * watches itself): a small stack of (what, since). since is 0 for no wait;
 * the waiting thread writes the description first and the start time last
 * (release), the watchdog reads the depth and the time first (acquire), so it
 * never prints a half-written description. */
enum { WATCH_DEPTH = 4 };
static char watch_what[WATCH_DEPTH][128];
static long long watch_since_us[WATCH_DEPTH];
static int watch_depth;
static double watch_timeout;
static const char *watch_flag = "--timeout-s";

static long long mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

void watch_begin(const char *what, const char *where) {
    if (watch_timeout <= 0) return;
    int d = watch_depth;
    if (d == WATCH_DEPTH) die("watch_begin: waits nested deeper than %d", WATCH_DEPTH);
    snprintf(watch_what[d], sizeof watch_what[d], "%s%s%s%s", what, where ? " on the " : "",
             where ? where : "", where ? " communicator" : "");
    __atomic_store_n(&watch_since_us[d], mono_us(), __ATOMIC_RELEASE);
    __atomic_store_n(&watch_depth, d + 1, __ATOMIC_RELEASE);
}

void watch_end(void) {
    if (watch_timeout <= 0 || watch_depth == 0) return;
    int d = watch_depth - 1;
    __atomic_store_n(&watch_depth, d, __ATOMIC_RELEASE);
    __atomic_store_n(&watch_since_us[d], 0LL, __ATOMIC_RELEASE);
    if (d > 0) watch_tick();   /* the inner wait ended: the outer one progressed */
}

void watch_tick(void) {
    if (watch_timeout <= 0 || watch_depth == 0) return;
    __atomic_store_n(&watch_since_us[watch_depth - 1], mono_us(), __ATOMIC_RELEASE);
}

static void *watchdog(void *arg) {
    (void)arg;
    for (;;) {
        usleep(200000);
        int d = __atomic_load_n(&watch_depth, __ATOMIC_ACQUIRE);
        if (d == 0) continue;
        long long since = __atomic_load_n(&watch_since_us[d - 1], __ATOMIC_ACQUIRE);
        if (since > 0 && (double)(mono_us() - since) * 1e-6 > watch_timeout) {
            fprintf(stderr, "error (rank %d): no progress for %.0f s in %s: a peer rank is stopped, "
                    "hung or gone, or a message never comes; ending the job (%s sets the limit)\n",
                    check_rank, watch_timeout, watch_what[d - 1], watch_flag);
            fflush(stderr);
            _exit(1);
        }
    }
    return NULL;
}

void watchdog_start(double timeout_s, const char *flag) {
    if (timeout_s <= 0 || watch_timeout > 0) return;
    watch_timeout = timeout_s;
    if (flag) watch_flag = flag;
    pthread_t t;
    if (pthread_create(&t, NULL, watchdog, NULL) != 0) die("cannot start the watchdog thread");
    pthread_detach(t);
}
