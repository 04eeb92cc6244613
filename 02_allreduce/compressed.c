/* compressed.c: the compressed all-reduce (common/compress.h) as a
 * benchmark, --compress LIST.
 *
 * Every rank's input is random (compression is lossy: there is no exact
 * integer check here), and every rank can rebuild every other's, so the
 * exact sum is known everywhere. Per size and compressor:
 *   sent B/rank  bytes this rank sent per call as comm counts them (each
 *                collective call adds its ring algorithm's bytes: a count,
 *                not bytes observed on the wire), and the formula
 *                (compress.h); they must agree (else exit 1)
 *   time         mean per call of the slowest rank, compression included
 *   algbw/busbw  as nccl-tests for an all-reduce of the fp32 vector: the
 *                bandwidth an uncompressed ring would need to be as fast
 *   err 1        ||result - exact|| / ||exact|| of one call
 *   err mean     the same for the mean of --iters calls on the same input,
 *                without and with error feedback: feedback sends next time
 *                what this time dropped, so the mean tends to the exact sum. */
#include "compressed.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "check.h"
#include "outfile.h"
#include "perf.h"

static void fill(float *x, size_t n, unsigned seed) {
    uint64_t s = 0x2545f4914f6cdd1dull * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(s >> 11) / 9007199254740992.0 - 0.5);
    }
}

static double rel_err(const float *x, const double *exact, size_t n) {
    double d = 0, e = 0;
    for (size_t i = 0; i < n; i++) {
        d += (x[i] - exact[i]) * (x[i] - exact[i]);
        e += exact[i] * exact[i];
    }
    return e > 0 ? sqrt(d / e) : sqrt(d);
}

/* --iters calls on the same input; the mean result's error. Returns the
 * slowest rank's mean time per call (us); *sent: this rank's bytes per call. */
static double run(comm_t *cm, const compress_spec_t *spec, int ef, const float *in, const double *exact,
                  size_t n, int iters, float *x, double *mean, double *err_mean, double *err_one,
                  double *sent) {
    compressor_t z;
    compressor_init(&z, spec, ef, n, NULL, 0, cm);
    memset(mean, 0, sizeof(double) * n);
    float *xd = dev_alloc(z.dev, sizeof(float) * n);   /* where the compressor works */
    double t = 0, s0 = comm_sent_bytes(cm);
    for (int it = 0; it < iters; it++) {
        dev_from_host(z.dev, xd, in, sizeof(float) * n);
        MPI_CHECK(MPI_Barrier(cm->mpi));
        double t0 = now_s();
        compress_allreduce(&z, cm, xd);
        dev_sync(z.dev);
        t += now_s() - t0;
        watch_tick();
        dev_to_host(z.dev, x, xd, sizeof(float) * n);
        if (it == 0 && err_one) *err_one = rel_err(x, exact, n);
        for (size_t i = 0; i < n; i++) mean[i] += x[i] / iters;
    }
    *sent = (comm_sent_bytes(cm) - s0) / iters;
    float *m = xmalloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) m[i] = (float)mean[i];
    *err_mean = rel_err(m, exact, n);
    free(m);
    dev_free(z.dev, xd);
    compressor_free(&z);
    double mine = t / iters * 1e6, slowest;
    MPI_CHECK(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, cm->mpi));
    return slowest;
}

int compressed_sweep(comm_t *cm, const char *list, const size_t *counts, int nsizes, int iters,
                     FILE *csv, const char *csv_path) {
    char *specs = xmalloc(strlen(list) + 1), *save = NULL, name[32];
    int N = cm->size, bad = 0;
    say("\n# compressed all-reduce (fp32 gradients; common/compress.h): all-gather of the pieces, "
        "or PowerSGD's two all-reduces\n");
    say("# %11s %10s %12s %12s %12s %6s %9s %8s %8s %10s %10s %10s\n", "size (B)", "count", "compress",
        "sent B/rank", "formula", "ratio", "time(us)", "algbw", "busbw", "err 1", "mean noEF", "mean EF");
    for (int si = 0; si < nsizes; si++) {
        size_t n = counts[si];
        float *in = xmalloc(sizeof(float) * n), *g = xmalloc(sizeof(float) * n), *x = xmalloc(sizeof(float) * n);
        double *exact = xcalloc(n, sizeof(double)), *mean = xmalloc(sizeof(double) * n);
        for (int r = 0; r < N; r++) {
            fill(g, n, (unsigned)r);
            for (size_t i = 0; i < n; i++) exact[i] += g[i];
            if (r == cm->rank) memcpy(in, g, sizeof(float) * n);
        }
        strcpy(specs, list);
        for (char *tok = strtok_r(specs, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            compress_spec_t spec;
            if (compress_parse(tok, &spec)) die("--compress: %s", tok);   /* checked in main */
            compress_name(&spec, name);
            bench_doing("compressed all-reduce %s at %zu B on %d ranks", name, 4 * n, N);
            double err_one = 0, err_no, err_ef, sent, sent_ef;
            run(cm, &spec, 0, in, exact, n, iters, x, mean, &err_no, &err_one, &sent);
            double us = run(cm, &spec, 1, in, exact, n, iters, x, mean, &err_ef, NULL, &sent_ef);
            double formula = compress_sent_bytes(&spec, n, NULL, 0, N);
            if (fabs(sent - formula) > 1e-9 * formula || fabs(sent_ef - formula) > 1e-9 * formula) {
                say("# %s at %zu values: sent %.0f B, the formula says %.0f B\n", name, n, sent, formula);
                bad++;
            }
            double algbw = 4.0 * n / us / 1e3, busbw = N > 1 ? algbw * 2.0 * (N - 1) / N : 0;
            double ratio = N > 1 ? compress_sent_bytes(&(compress_spec_t){0}, n, NULL, 0, N) / sent : 0;
            say("  %11zu %10zu %12s %12.0f %12.0f %6.1f %9.1f %8.3f %8.3f %10.3g %10.3g %10.3g\n", 4 * n, n,
                name, sent, formula, ratio, us, algbw, busbw, err_one, err_no, err_ef);
            if (csv) {
                fprintf(csv, "%s,%d,%zu,%zu,%.0f,%.0f,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g", name, N, 4 * n, n, sent,
                        formula, us, algbw, busbw, err_one, err_no, err_ef);
                csv_end_row(csv, "measured");
            }
        }
        if (csv) out_flush(csv, csv_path);
        free(in); free(g); free(x); free(exact); free(mean);
    }
    say("# ratio: the uncompressed ring all-reduce's bytes / these; errors relative to the exact sum (L2)\n");
    free(specs);
    return bad;
}
