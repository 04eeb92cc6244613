/* failure.c: injected failures and the optimal checkpoint interval (failure.h). */
#include "failure.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1). */
static double uniform(uint64_t *x) { return ((double)(splitmix64(x) >> 11) + 0.5) * 0x1.0p-53; }

int failure_plan(failure_t *f, const char *at_steps, double every_s, int seed, int attempt, int world,
                 long steps, char *err, size_t len) {
    memset(f, 0, sizeof *f);
    uint64_t x = (uint64_t)seed * 0x100000001b3ull ^ (uint64_t)attempt * 0x9e3779b97f4a7c15ull;
    f->victim = (int)(splitmix64(&x) % (uint64_t)world);
    if (at_steps && *at_steps) {
        long prev = 0;
        int k = 0;
        for (const char *p = at_steps; *p; k++) {
            char *end;
            errno = 0;
            long s = strtol(p, &end, 10);
            if (end == p || errno || s <= prev || (*end && *end != ',')) {
                snprintf(err, len, "--fail-at-step %s: want increasing step numbers >= 1, like 5,12,20", at_steps);
                return -1;
            }
            if (s > steps) {
                snprintf(err, len, "--fail-at-step %s: step %ld is past the last step (%ld)", at_steps, s, steps);
                return -1;
            }
            if (k == attempt) f->at_step = s;
            prev = s;
            p = *end ? end + 1 : end;
        }
    }
    if (every_s > 0) f->after_s = -every_s * log(uniform(&x));   /* exponential, mean every_s */
    return 0;
}

static void die_now(const char *why) {
    fprintf(stderr, "failure: rank %d (pid %d) killed %s (injected)\n", check_rank, (int)getpid(), why);
    fflush(stderr);
    kill(getpid(), SIGKILL);
}

static int disarmed;

static void *timer(void *arg) {
    double s = *(const double *)arg;
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
    if (__atomic_load_n(&disarmed, __ATOMIC_ACQUIRE)) return NULL;
    char why[64];
    snprintf(why, sizeof why, "%.2f s after its start", s);
    die_now(why);
    return NULL;
}

void failure_arm(const failure_t *f, int rank) {
    static double after;
    if (f->after_s <= 0 || rank != f->victim) return;
    after = f->after_s;
    pthread_t t;
    if (pthread_create(&t, NULL, timer, &after) != 0) die("cannot start the failure timer");
    pthread_detach(t);
}

void failure_disarm(void) { __atomic_store_n(&disarmed, 1, __ATOMIC_RELEASE); }

void failure_at_step(const failure_t *f, int rank, long step) {
    if (f->at_step != step || rank != f->victim) return;
    char why[64];
    snprintf(why, sizeof why, "at the end of step %ld", step);
    die_now(why);
}

double young_interval(double delta, double mtbf) { return sqrt(2 * delta * mtbf); }

double daly_interval(double delta, double mtbf) {
    if (delta >= 2 * mtbf) return mtbf;
    double r = delta / (2 * mtbf);
    return sqrt(2 * delta * mtbf) * (1 + sqrt(r) / 3 + r / 9) - delta;
}

double daly_goodput(double tau, double delta, double restart, double mtbf) {
    /* W / T(tau) with T = M e^(R/M) (e^((tau + delta)/M) - 1) W / tau */
    return tau / (mtbf * exp(restart / mtbf) * expm1((tau + delta) / mtbf));
}
