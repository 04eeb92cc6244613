/* compare.c: are two training runs the same? (build/tests/compare), the
 * equivalence check of every trainer chapter's tests.
 *
 *   compare A B [--tol X] [--wtol Y] [--exact] [--no-norms]
 *                                       final-state files of any trainer's --save-final
 *   compare --dumps A B [--tol X]       gradient dumps of --dump (MODEL.md)
 *
 * Final-state files (common/train.c): the loss and the gradient norm (before
 * clipping) of each step run, and the full model's final fp32 master weights,
 * whatever mesh wrote them. The losses and norms of the steps both runs
 * computed are matched by step number. Errors are relative:
 *   loss, norm: |a - b| / |b| for each common step
 *   weights:    max_i |a_i - b_i| / max_i |b_i|   (norm-wise, so weights near
 *               zero do not turn rounding noise into huge ratios)
 * The gradient norm is what shows a wrongly scaled gradient even when
 * clipping or Adam's scale invariance hides it from the loss and weights.
 * --tol bounds the loss and norm errors, --wtol the weights' (default:
 * --tol); --exact asks for bit-for-bit equality instead (resumed runs);
 * --no-norms leaves the norms out (local SGD logs rank 0's own gradient's
 * norm, not the global batch's). Both
 * runs must end at the same step and share at least one step. Prints what was
 * compared and the worst difference; exit status 0 when within tolerance, 1
 * otherwise (with an "error:" line). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

static int check_norms = 1;

typedef struct {
    uint32_t nsteps;
    uint64_t n;
    int64_t *step;
    double *loss, *norm;
    float *w;
} final_t;

static void fail(const char *fmt, const char *a) {
    fprintf(stderr, "error: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n");
    exit(1);
}

static void read_final(const char *path, final_t *f) {
    FILE *fp = fopen(path, "rb");
    if (!fp) fail("cannot open %s", path);
    char magic[8];
    uint32_t version;
    if (fread(magic, 1, 8, fp) != 8 || memcmp(magic, "DDPFINAL", 8) != 0)
        fail("%s is not a --save-final file", path);
    if (fread(&version, 4, 1, fp) != 1 || version != 2) fail("%s: unknown version", path);
    if (fread(&f->nsteps, 4, 1, fp) != 1 || fread(&f->n, 8, 1, fp) != 1) fail("%s is truncated", path);
    f->step = malloc(sizeof(int64_t) * (f->nsteps + 1));
    f->loss = malloc(sizeof(double) * (f->nsteps + 1));
    f->norm = malloc(sizeof(double) * (f->nsteps + 1));
    f->w = malloc(sizeof(float) * (f->n + 1));
    if (!f->step || !f->loss || !f->norm || !f->w) fail("out of memory reading %s", path);
    for (uint32_t i = 0; i < f->nsteps; i++)
        if (fread(&f->step[i], 8, 1, fp) != 1 || fread(&f->loss[i], 8, 1, fp) != 1 ||
            fread(&f->norm[i], 8, 1, fp) != 1)
            fail("%s is truncated", path);
    if (fread(f->w, sizeof(float), f->n, fp) != f->n) fail("%s is truncated", path);
    fclose(fp);
}

static int compare_finals(const char *pa, const char *pb, double tol, double wtol, int exact) {
    final_t a, b;
    read_final(pa, &a);
    read_final(pb, &b);
    if (a.n != b.n) {
        fprintf(stderr, "error: %s has %llu weights, %s has %llu\n", pa, (unsigned long long)a.n, pb,
                (unsigned long long)b.n);
        return 1;
    }
    if (a.nsteps == 0 || b.nsteps == 0 || a.step[a.nsteps - 1] != b.step[b.nsteps - 1]) {
        fprintf(stderr, "error: the runs do not end at the same step (%lld vs %lld)\n",
                a.nsteps ? (long long)a.step[a.nsteps - 1] : -1LL,
                b.nsteps ? (long long)b.step[b.nsteps - 1] : -1LL);
        return 1;
    }
    int common = 0, bad = 0;
    double worst[2] = {0, 0};
    long long worst_step[2] = {-1, -1};
    for (uint32_t i = 0; i < a.nsteps; i++)
        for (uint32_t j = 0; j < b.nsteps; j++) {
            if (a.step[i] != b.step[j]) continue;
            common++;
            for (int k = 0; k < 1 + check_norms; k++) {   /* the loss, then the gradient norm */
                double x = k ? a.norm[i] : a.loss[i], y = k ? b.norm[j] : b.loss[j];
                double e = fabs(x - y) / fmax(fabs(y), 1e-30);
                int differs = exact ? memcmp(&x, &y, 8) != 0 : !(e <= tol);
                if (differs) {
                    if (bad < 5)
                        printf("  step %lld: %s %.17g vs %.17g (rel. diff %.3g)\n", (long long)a.step[i],
                               k ? "gradient norm" : "loss", x, y, e);
                    bad++;
                }
                if (e > worst[k] || worst_step[k] < 0) {
                    worst[k] = e;
                    worst_step[k] = a.step[i];
                }
            }
        }
    printf("losses:  %d common steps, max rel. diff %.3g (step %lld)\n", common, worst[0], worst_step[0]);
    if (check_norms)
        printf("norms:   gradient norms before clipping, max rel. diff %.3g (step %lld)\n", worst[1],
               worst_step[1]);
    else
        printf("norms:   not compared (--no-norms)\n");
    double maxdiff = 0, maxref = 0;
    uint64_t at = 0, nbits = 0;
    for (uint64_t i = 0; i < a.n; i++) {
        double d = fabs((double)a.w[i] - (double)b.w[i]);
        if (d > maxdiff) { maxdiff = d; at = i; }
        if (fabs(b.w[i]) > maxref) maxref = fabs(b.w[i]);
        nbits += memcmp(&a.w[i], &b.w[i], 4) != 0;
    }
    double werr = maxdiff / fmax(maxref, 1e-30);
    printf("weights: %llu compared, %llu differ in any bit, max |a-b| = %.3g at %llu (%.9g vs %.9g), "
           "/ max |b| = %.3g\n", (unsigned long long)a.n, (unsigned long long)nbits, maxdiff,
           (unsigned long long)at, a.w[at], b.w[at], werr);
    int ok = common > 0 && bad == 0 && (exact ? nbits == 0 : werr <= wtol);
    if (!ok) {
        if (common == 0) fprintf(stderr, "error: the runs share no step\n");
        else if (exact) fprintf(stderr, "error: not bit-identical: %d loss(es) or norm(s) and %llu weight(s) differ\n",
                                bad, (unsigned long long)nbits);
        else fprintf(stderr, "error: beyond tolerance: %d loss(es) or norm(s) differ by more than %.3g, weights "
                     "rel. diff %.3g (tolerance %.3g)\n", bad, tol, werr, wtol);
        return 1;
    }
    printf("same:    %s\n", exact ? "bit for bit" : "within tolerance");
    return 0;
}

static int compare_dumps(const char *pa, const char *pb, double tol) {
    model_config_t ca, cb;
    int Ba, Bb;
    float *pa_, *pb_, *ga, *gb;
    int *ta, *tb, *ya, *yb;
    double la, lb;
    model_dump_read(pa, &ca, &Ba, &pa_, &ta, &ya, &la, &ga);
    model_dump_read(pb, &cb, &Bb, &pb_, &tb, &yb, &lb, &gb);
    if (memcmp(&ca, &cb, sizeof ca) != 0 || Ba != Bb) {
        fprintf(stderr, "error: the dumps are of different configurations or batches\n");
        return 1;
    }
    size_t n = model_param_count(&ca), nt = (size_t)Ba * ca.seq;
    int ok = 1;
    if (memcmp(pa_, pb_, n * 4) != 0) { fprintf(stderr, "error: parameters differ\n"); ok = 0; }
    if (memcmp(ta, tb, nt * 4) != 0 || memcmp(ya, yb, nt * 4) != 0) {
        fprintf(stderr, "error: tokens or targets differ\n");
        ok = 0;
    }
    double le = fabs(la - lb) / fabs(lb), maxd = 0, maxr = 0;
    for (size_t i = 0; i < n; i++) {
        maxd = fmax(maxd, fabs((double)ga[i] - gb[i]));
        maxr = fmax(maxr, fabs((double)gb[i]));
    }
    double ge = maxd / fmax(maxr, 1e-30);
    printf("dumps:   loss %.9g vs %.9g (rel. diff %.3g), gradients max |a-b| / max |b| = %.3g\n", la, lb,
           le, ge);
    if (!(le <= tol) || !(ge <= tol)) {
        fprintf(stderr, "error: beyond tolerance %.3g\n", tol);
        ok = 0;
    }
    free(pa_); free(pb_); free(ga); free(gb); free(ta); free(tb); free(ya); free(yb);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    double tol = 1e-5, wtol = -1;
    int exact = 0, dumps = 0;
    const char *files[2];
    int nf = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--tol") == 0 && i + 1 < argc) tol = atof(argv[++i]);
        else if (strcmp(argv[i], "--wtol") == 0 && i + 1 < argc) wtol = atof(argv[++i]);
        else if (strcmp(argv[i], "--exact") == 0) exact = 1;
        else if (strcmp(argv[i], "--dumps") == 0) dumps = 1;
        else if (strcmp(argv[i], "--no-norms") == 0) check_norms = 0;
        else if (argv[i][0] != '-' && nf < 2) files[nf++] = argv[i];
        else nf = 3;
    }
    if (nf != 2) {
        fprintf(stderr, "usage: compare A B [--tol X] [--wtol Y] [--exact] [--no-norms]  |  compare --dumps A B [--tol X]\n");
        return 2;
    }
    printf("compare: %s vs %s (%s)\n", files[0], files[1],
           exact ? "bit for bit" : dumps ? "gradient dumps" : "relative tolerance");
    if (wtol < 0) wtol = tol;
    if (!exact) printf("tol:     losses and norms %.3g, weights %.3g\n", tol, wtol);
    return dumps ? compare_dumps(files[0], files[1], tol)
                 : compare_finals(files[0], files[1], tol, wtol, exact);
}
