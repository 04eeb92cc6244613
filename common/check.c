/* check.c: die(), usage_error(), say() and checked allocation. */
#include "check.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
