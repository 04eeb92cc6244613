/* unit.h: a small test framework whose failures say what differed.
 *
 *   TEST(bf16_rounds_to_nearest_even) { EXPECT_EQ_INT(f32_to_bf16(1.0f), 0x3f80); }
 *
 * A test binary built from one or more files that include this header (and
 * exactly one that defines UNIT_MAIN first) answers `--list` with the test
 * names and `NAME...` by running those tests in turn, rank 0 printing
 * "unit: PASS|FAIL NAME MS" after each; tests/run.sh runs a binary's tests in
 * one process, under mpirun when the test list says so (and a test without a
 * PASS line alone again). MPI is started once before the tests (one rank
 * without mpirun) and the tests' dist_t is `unit_dist`. A failing EXPECT prints file, line, both values and goes on; the
 * test exits 1 if any EXPECT failed. */
#ifndef UNIT_H
#define UNIT_H

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "dist.h"

typedef void (*unit_fn)(void);
void unit_register(const char *name, unit_fn fn);
extern int unit_failures;
extern dist_t unit_dist;

#define TEST(name)                                                             \
    static void name(void);                                                    \
    __attribute__((constructor)) static void unit_reg_##name(void) {           \
        unit_register(#name, name);                                            \
    }                                                                          \
    static void name(void)

#define UNIT_FAIL(...)                                                         \
    do {                                                                       \
        fprintf(stderr, "rank %d: %s:%d: ", unit_dist.rank, __FILE__, __LINE__); \
        fprintf(stderr, __VA_ARGS__);                                          \
        fprintf(stderr, "\n");                                                 \
        unit_failures++;                                                       \
    } while (0)

#define EXPECT(cond)                                                           \
    do { if (!(cond)) UNIT_FAIL("expected %s", #cond); } while (0)
#define EXPECT_EQ_INT(a, b)                                                    \
    do { long long ua_ = (long long)(a), ub_ = (long long)(b);                 \
         if (ua_ != ub_) UNIT_FAIL("%s = %lld, expected %s = %lld", #a, ua_, #b, ub_); } while (0)
/* |a - b| <= tol * max(1, |b|) */
#define EXPECT_NEAR(a, b, tol)                                                 \
    do { double ua_ = (double)(a), ub_ = (double)(b);                          \
         double ue_ = fabs(ua_ - ub_) / fmax(1.0, fabs(ub_));                  \
         if (!(ue_ <= (tol))) UNIT_FAIL("%s = %.9g, expected %s = %.9g (rel. error %.3g > %.3g)", \
                                     #a, ua_, #b, ub_, ue_, (double)(tol)); } while (0)

#ifdef UNIT_MAIN
#define UNIT_MAX 512
static struct { const char *name; unit_fn fn; } unit_tests[UNIT_MAX];
static int unit_count;
int unit_failures;
dist_t unit_dist;

void unit_register(const char *name, unit_fn fn) {
    if (unit_count == UNIT_MAX) { fprintf(stderr, "too many tests\n"); exit(1); }
    unit_tests[unit_count].name = name;
    unit_tests[unit_count].fn = fn;
    unit_count++;
}

static double unit_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < unit_count; i++) printf("%s\n", unit_tests[i].name);
        return 0;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: %s --list | TEST_NAME...\n", argv[0]);
        return 2;
    }
    int n = argc - 1, idx[UNIT_MAX];
    if (n > UNIT_MAX) { fprintf(stderr, "error: more than %d test names\n", UNIT_MAX); return 2; }
    for (int a = 0; a < n; a++) {
        idx[a] = -1;
        for (int i = 0; i < unit_count; i++)
            if (strcmp(argv[a + 1], unit_tests[i].name) == 0) idx[a] = i;
        if (idx[a] < 0) { fprintf(stderr, "error: no test named %s\n", argv[a + 1]); return 2; }
    }
    dist_init(&argc, &argv, &unit_dist);
    int failed = 0;
    for (int a = 0; a < n; a++) {   /* each test in turn, its verdict on one line from rank 0 */
        double t0 = unit_ms();
        unit_failures = 0;
        unit_tests[idx[a]].fn();
        int mine = unit_failures, all = 0;
        MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (unit_dist.rank == 0) {
            printf("unit: %s %s %.0f\n", all ? "FAIL" : "PASS", unit_tests[idx[a]].name, unit_ms() - t0);
            fflush(stdout);
        }
        failed |= all != 0;
    }
    dist_finalize();
    return failed;
}
#endif
#endif
