/* membw.c: 01_matmul_hfu/membw, the memory bandwidth of this CPU, the slope
 * of its roofline (roofline.png): the STREAM triad a[i] = b[i] + s c[i]
 * (McCalpin 1995) over three arrays far larger than the caches, split over
 * T threads, the best of --repeats passes.
 *
 *   ./01_matmul_hfu/membw --threads 2
 *
 * Each element moves 12 bytes (b and c read, a written; the cache's read of
 * a before the write is not counted, as STREAM does not) for 2 FLOPs, an
 * arithmetic intensity of 1/6 FLOP per byte. Prints one line:
 *   triad MIB_PER_ARRAY THREADS GB_PER_S GFLOP_PER_S */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "args.h"
#include "check.h"
#include "device.h"

typedef struct {
    float *a, *b, *c;
    size_t lo, hi;
} part_t;

static void *triad(void *arg) {
    part_t *p = arg;
    for (size_t i = p->lo; i < p->hi; i++) p->a[i] = p->b[i] + 3.0f * p->c[i];
    return NULL;
}

int main(int argc, char **argv) {
    int mib = 128, threads = 1, repeats = 10;
    arg_t flags[] = {
        {"mib", ARG_INT, &mib, "MiB per array (three arrays)", NULL, 16, 1 << 16},
        {"threads", ARG_INT, &threads, "threads, each a contiguous share of the arrays", NULL, 1, 1024},
        {"repeats", ARG_INT, &repeats, "passes; the fastest counts", NULL, 1, 1e6},
    };
    args_parse(argc, argv, "01_matmul_hfu/membw",
               "The STREAM triad a = b + s c on this CPU: its memory bandwidth, the roofline's slope.",
               flags, ARRAY_LEN(flags));
    size_t n = (size_t)mib << 18;   /* floats per array */
    float *a = xmalloc(n * sizeof(float)), *b = xmalloc(n * sizeof(float)), *c = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) a[i] = 0, b[i] = (float)(i % 7), c[i] = (float)(i % 5);
    part_t *parts = xmalloc(sizeof(part_t) * (size_t)threads);
    pthread_t *tid = xmalloc(sizeof(pthread_t) * (size_t)threads);
    double best = 1e30;
    for (int r = 0; r < repeats; r++) {
        double t0 = now_s();
        for (int t = 0; t < threads; t++) {
            parts[t] = (part_t){a, b, c, n * (size_t)t / (size_t)threads, n * (size_t)(t + 1) / (size_t)threads};
            if (pthread_create(&tid[t], NULL, triad, &parts[t])) die("cannot start thread %d", t);
        }
        for (int t = 0; t < threads; t++) pthread_join(tid[t], NULL);
        double dt = now_s() - t0;
        best = dt < best ? dt : best;
    }
    for (size_t i = 0; i < n; i += n / 17 + 1)   /* the work was done, and right */
        if (a[i] != (float)(i % 7) + 3.0f * (float)(i % 5)) die("a[%zu] = %g is wrong", i, a[i]);
    printf("triad %d %d %.6g %.6g\n", mib, threads, 12.0 * (double)n / best / 1e9, 2.0 * (double)n / best / 1e9);
    free(a);
    free(b);
    free(c);
    free(parts);
    free(tid);
    return 0;
}
