/* unit.h: a small test framework whose failures say what differed.
 *
 *   TEST(bf16_rounds_to_nearest_even) { EXPECT_EQ_INT(f32_to_bf16(1.0f), 0x3f80); }
 *
 * A test binary built from one or more files that include this header (and
 * exactly one that defines UNIT_MAIN first) answers `--list` with the test
 * names and `NAME` by running that test; tests/run.sh runs each name under its
 * own time limit, under mpirun when the test list says so. MPI is started
 * before the test body (one rank without mpirun) and the test's dist_t is
 * `unit_dist`. A failing EXPECT prints file, line, both values and goes on; the
 * test exits 1 if any EXPECT failed. */
#ifndef UNIT_H
#define UNIT_H

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (int i = 0; i < unit_count; i++) printf("%s\n", unit_tests[i].name);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: %s --list | TEST_NAME\n", argv[0]);
        return 2;
    }
    for (int i = 0; i < unit_count; i++) {
        if (strcmp(argv[1], unit_tests[i].name) != 0) continue;
        dist_init(&argc, &argv, &unit_dist);
        unit_tests[i].fn();
        int mine = unit_failures, all = 0;
        MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        dist_finalize();
        return all == 0 ? 0 : 1;
    }
    fprintf(stderr, "error: no test named %s\n", argv[1]);
    return 2;
}
#endif
#endif
