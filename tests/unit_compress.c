/* unit_compress.c: the gradient compressors (common/compress.h) against
 * what each must do exactly: round trips within their bound, pieces of the
 * formulas' bytes, error feedback against the definitions, and the compressed
 * all-reduce on real ranks (run on 3). */
#define UNIT_MAIN
#include "unit.h"

#include "args.h"
#include "comm.h"
#include "compress.h"
#include "device.h"

/* Values of very different size per block, deterministic per (seed, i). */
static void fill(float *x, size_t n, unsigned seed) {
    uint32_t s = 2654435761u * (seed + 1);
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        float u = (float)(s >> 8) / 16777216.0f - 0.5f;
        x[i] = u * (float)(1 + (i / 300) % 7) * (i % 5 == 0 ? 10.0f : 1.0f);
    }
}

static compress_spec_t spec_of(const char *s) {
    compress_spec_t c;
    if (compress_parse(s, &c)) UNIT_FAIL("compress_parse(\"%s\") refused it", s);
    return c;
}

TEST(parse_accepts_the_specs_and_refuses_the_rest) {
    const char *good[] = {"none", "int8", "sign", "topk:0.01", "topk:1", "powersgd:4"};
    for (int i = 0; i < ARRAY_LEN(good); i++) {
        char buf[32];
        compress_spec_t c = spec_of(good[i]);
        if (strcmp(compress_name(&c, buf), good[i])) UNIT_FAIL("%s is named %s", good[i], buf);
    }
    const char *bad[] = {"int4", "topk", "topk:0", "topk:1.5", "topk:x", "powersgd:0", "powersgd:", "sign:2", ""};
    compress_spec_t c;
    for (int i = 0; i < ARRAY_LEN(bad); i++)
        if (compress_parse(bad[i], &c) == 0) UNIT_FAIL("compress_parse accepted \"%s\"", bad[i]);
}

TEST(piece_bytes_match_the_formulas) {
    size_t ns[] = {1, 7, 256, 1000, 1672896};
    for (int t = 0; t < ARRAY_LEN(ns); t++) {
        size_t n = ns[t], nb = (n + 255) / 256, m, c;
        compress_spec_t s8 = spec_of("int8"), s1 = spec_of("sign"), tk = spec_of("topk:0.01"),
                        ps = spec_of("powersgd:4"), no = spec_of("none");
        size_t k = (size_t)ceil(0.01 * (double)n);
        compress_matrix(n, &m, &c);
        EXPECT(m * c >= n && (m - 1) * c < n);
        EXPECT_EQ_INT(compress_piece_bytes(&no, n, NULL, 0), 4 * n);
        EXPECT_EQ_INT(compress_piece_bytes(&s8, n, NULL, 0), (n + 4 * nb + 3) / 4 * 4);
        EXPECT_EQ_INT(compress_piece_bytes(&s1, n, NULL, 0), ((n + 7) / 8 + 4 * nb + 3) / 4 * 4);
        EXPECT_EQ_INT(compress_piece_bytes(&tk, n, NULL, 0), 8 * (k < 1 ? 1 : k));
        size_t r = m < 4 || c < 4 ? (m < c ? m : c) : 4;   /* min(R, m, c) */
        EXPECT_EQ_INT(compress_piece_bytes(&ps, n, NULL, 0), 4 * r * (m + c));
        for (int N = 1; N <= 5; N++) {
            EXPECT_NEAR(compress_sent_bytes(&no, n, NULL, 0, N), 2.0 * (N - 1) / N * 4 * n, 1e-12);
            EXPECT_NEAR(compress_sent_bytes(&s8, n, NULL, 0, N), (N - 1) * (double)compress_piece_bytes(&s8, n, NULL, 0), 1e-12);
            EXPECT_NEAR(compress_sent_bytes(&ps, n, NULL, 0, N), 2.0 * (N - 1) / N * 4 * r * (m + c), 1e-12);
        }
    }
}

/* x <- fill(seed), d <- D(C(x)). */
static void round_trip(const char *name, float *x, float *d, size_t n, unsigned seed) {
    compress_spec_t s = spec_of(name);
    void *piece = xmalloc(compress_piece_bytes(&s, n, NULL, 0));
    fill(x, n, seed);
    memset(d, 0, sizeof(float) * n);
    compress_encode(&s, x, n, piece);
    compress_decode_add(&s, piece, n, 1.0f, d);
    free(piece);
}

TEST(int8_round_trip_within_half_a_step_of_its_block) {
    size_t n = 1000;
    float x[1000], d[1000];
    round_trip("int8", x, d, n, 1);
    for (size_t b = 0; b * 256 < n; b++) {
        float big = 0;
        for (size_t i = b * 256; i < n && i < (b + 1) * 256; i++) big = fmaxf(big, fabsf(x[i]));
        for (size_t i = b * 256; i < n && i < (b + 1) * 256; i++)
            if (fabsf(d[i] - x[i]) > big / 127 / 2 * 1.0001f)
                UNIT_FAIL("element %zu: %g decoded as %g, off by more than half a step (%g)", i, x[i], d[i],
                          big / 127 / 2);
    }
}

TEST(sign_decodes_to_the_block_mean_magnitude_with_the_sign) {
    size_t n = 600;
    float x[600], d[600];
    round_trip("sign", x, d, n, 2);
    for (size_t b = 0; b * 256 < n; b++) {
        size_t lo = b * 256, hi = lo + 256 < n ? lo + 256 : n;
        double l1 = 0;
        for (size_t i = lo; i < hi; i++) l1 += fabs(x[i]);
        float mean = (float)(l1 / (double)(hi - lo));
        for (size_t i = lo; i < hi; i++)
            if (d[i] != (x[i] >= 0 ? mean : -mean))
                UNIT_FAIL("element %zu: %g decoded as %g, expected %g", i, x[i], d[i], x[i] >= 0 ? mean : -mean);
    }
}

TEST(topk_keeps_the_k_largest_and_zeros_the_rest) {
    /* magnitudes 0..99 shuffled, with a tie at the threshold: topk:0.05 of
     * 100 keeps 5: 99, 98, 97, 96 and the first of the two 95s */
    size_t n = 100;
    float x[100], d[100] = {0};
    unsigned char piece[64];
    for (size_t i = 0; i < n; i++) x[i] = (float)((i * 37) % 100) * (i % 2 ? -1.0f : 1.0f);
    for (size_t i = 0; i < n; i++)
        if (fabsf(x[i]) == 94) x[i] = x[i] < 0 ? -95.0f : 95.0f;
    size_t first95 = 0;
    while (fabsf(x[first95]) != 95) first95++;
    compress_spec_t s = spec_of("topk:0.05");
    compress_encode(&s, x, n, piece);
    compress_decode_add(&s, piece, n, 1.0f, d);
    for (size_t i = 0; i < n; i++) {
        int kept = fabsf(x[i]) >= 96 || i == first95;
        if (d[i] != (kept ? x[i] : 0.0f))
            UNIT_FAIL("element %zu (%g): decoded %g, expected %s", i, x[i], d[i], kept ? "kept" : "zero");
    }
}

static device_t dev;
static comm_t cm;
static void start(void) {
    device_init(&dev, "cpu", unit_dist.local_rank, unit_dist.local_world, 1);
    comm_init(&cm, MPI_COMM_WORLD, "mpi", &dev);
}
static void stop(void) {
    comm_destroy(&cm);
    device_finalize(&dev);
}

/* Every rank's result bit-identical to rank 0's. */
static void expect_same_on_every_rank(const float *x, size_t n, const char *what) {
    float *r0 = xmalloc(sizeof(float) * n);
    memcpy(r0, x, sizeof(float) * n);
    MPI_Bcast(r0, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    if (memcmp(r0, x, sizeof(float) * n)) UNIT_FAIL("%s: rank %d's sum differs from rank 0's", what, cm.rank);
    free(r0);
}

/* ---- error feedback against the compressors' definitions -------------------------- */

/* The compressors' D(C(e)) computed here from their definitions in
 * compress.h, independently of compress.c: int8 (one scale max|e| / 127 per
 * 256 values, codes round(e / s) in [-127, 127]), sign (the block's mean |e|
 * with e's sign, + for 0), top-k (the k = ceil(F n) largest |e|, lower index
 * first on ties, at their own index; zero elsewhere). */
static const float *ref_by_mag;
static int ref_mag_order(const void *a, const void *b) {
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    float x = fabsf(ref_by_mag[i]), y = fabsf(ref_by_mag[j]);
    return x > y ? -1 : x < y ? 1 : i < j ? -1 : i > j;
}
static void ref_decoded(const compress_spec_t *s, const float *e, size_t n, float *d) {
    memset(d, 0, sizeof(float) * n);
    if (s->kind == COMPRESS_TOPK) {
        size_t k = (size_t)ceil(s->frac * (double)n - 1e-9), *order = xmalloc(sizeof(size_t) * n);
        for (size_t i = 0; i < n; i++) order[i] = i;
        ref_by_mag = e;
        qsort(order, n, sizeof(size_t), ref_mag_order);
        for (size_t j = 0; j < k && j < n; j++) d[order[j]] = e[order[j]];
        free(order);
        return;
    }
    for (size_t lo = 0; lo < n; lo += 256) {
        size_t hi = lo + 256 < n ? lo + 256 : n;
        float big = 0;
        double l1 = 0;
        for (size_t i = lo; i < hi; i++) { big = fmaxf(big, fabsf(e[i])); l1 += fabs(e[i]); }
        float scale = s->kind == COMPRESS_INT8 ? big / 127.0f : (float)(l1 / (double)(hi - lo));
        for (size_t i = lo; i < hi; i++)
            d[i] = s->kind == COMPRESS_SIGN ? (e[i] >= 0 ? scale : -scale)
                   : scale > 0 ? scale * fminf(127.0f, fmaxf(-127.0f, rintf(e[i] / scale))) : 0.0f;
    }
}

/* PowerSGD's approximation of the sum of the N ranks' e (n flat values as
 * one zero-padded m x c matrix, c = ceil(sqrt n)), in double: P = (sum E) Q,
 * P's columns made orthonormal (Gram-Schmidt), Q = (sum E)^T P (kept for
 * the next call), out = P Q^T. */
static void ref_powersgd(int R, float *const *e, int N, size_t n, double *q, float *out) {
    size_t c = (size_t)ceil(sqrt((double)n)), m = (n + c - 1) / c;
    double *sum = calloc(m * c, sizeof(double)), *p = calloc(m * (size_t)R, sizeof(double));
    for (int r = 0; r < N; r++)
        for (size_t i = 0; i < n; i++) sum[i] += e[r][i];
    for (size_t i = 0; i < m; i++)
        for (int k = 0; k < R; k++)
            for (size_t j = 0; j < c; j++) p[i * R + k] += sum[i * c + j] * q[j * R + k];
    for (int k = 0; k < R; k++) {
        for (int l = 0; l < k; l++) {
            double dot = 0;
            for (size_t i = 0; i < m; i++) dot += p[i * R + l] * p[i * R + k];
            for (size_t i = 0; i < m; i++) p[i * R + k] -= dot * p[i * R + l];
        }
        double norm = 0;
        for (size_t i = 0; i < m; i++) norm += p[i * R + k] * p[i * R + k];
        for (size_t i = 0; i < m; i++) p[i * R + k] /= sqrt(norm);
    }
    for (size_t j = 0; j < c; j++)
        for (int k = 0; k < R; k++) {
            q[j * R + k] = 0;
            for (size_t i = 0; i < m; i++) q[j * R + k] += sum[i * c + j] * p[i * R + k];
        }
    for (size_t i = 0; i < n; i++) {
        double v = 0;
        for (int k = 0; k < R; k++) v += p[(i / c) * R + k] * q[(i % c) * R + k];
        out[i] = (float)v;
    }
    free(sum); free(p);
}

/* max |a - b| over n, against tol x max |b| (and at least tol); prints the
 * worst element and returns 1 when over. */
static int differs(const char *what, const float *a, const float *b, size_t n, double tol) {
    double big = 0, worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        big = fmax(big, fabs(b[i]));
        if (fabs((double)a[i] - b[i]) > worst) { worst = fabs((double)a[i] - b[i]); at = i; }
    }
    if (worst <= tol * fmax(big, 1.0)) return 0;
    UNIT_FAIL("%s: element %zu is %.9g, the definition gives %.9g (max error %g, max |value| %g)", what, at, a[at],
              b[at], worst, big);
    return 1;
}

/* Each compressor's all-reduce, 4 calls with error feedback on and off,
 * against the definitions above run here for every rank: e = g + r (r = 0
 * with feedback off), the sum over ranks of D(C(e)) delivered (PowerSGD: its
 * P Q^T of the sum of e, from the compressor's starting Q), r = e - D(C(e))
 * (PowerSGD: e - P Q^T / N). The first call is the same on and off (no
 * residual yet); the later ones must differ, by what the residual changes. */
TEST(error_feedback_compresses_gradient_plus_residual_as_defined) {
    start();
    const char *specs[] = {"int8", "sign", "topk:0.02", "powersgd:2"};
    size_t n = 1100, c = (size_t)ceil(sqrt((double)n));
    int N = cm.size, steps = 4;
    float *x = xmalloc(sizeof(float) * n), *want = xmalloc(sizeof(float) * n), *d = xmalloc(sizeof(float) * n);
    float *off[2] = {xmalloc(sizeof(float) * n), xmalloc(sizeof(float) * n)}, *e[16], *res[16];
    if (N > 16) UNIT_FAIL("run on at most 16 ranks");
    for (int r = 0; r < N; r++) { e[r] = xmalloc(sizeof(float) * n); res[r] = xmalloc(sizeof(float) * n); }
    for (int t = 0; t < ARRAY_LEN(specs); t++) {
        compress_spec_t s = spec_of(specs[t]);
        int R = s.kind == COMPRESS_POWERSGD ? s.rank : 0;
        double tol = R ? 1e-4 : 1e-6, *q = xmalloc(sizeof(double) * c * (size_t)(R ? R : 1));
        for (int ef = 0; ef <= 1; ef++) {
            compressor_t z;
            compressor_init(&z, &s, ef, n, NULL, 0, &cm);
            for (size_t i = 0; R && i < c * (size_t)R; i++) q[i] = z.q[i];   /* the start every rank shares */
            for (int r = 0; r < N; r++) memset(res[r], 0, sizeof(float) * n);
            int bad = 0;
            for (int step = 0; step < steps && !bad; step++) {
                char what[96];
                snprintf(what, sizeof what, "%s, error feedback %s, call %d", specs[t], ef ? "on" : "off", step + 1);
                memset(want, 0, sizeof(float) * n);
                for (int r = 0; r < N; r++) {
                    fill(e[r], n, (unsigned)(100 * step + r));
                    for (size_t i = 0; i < n; i++) e[r][i] += res[r][i];
                    if (!R) {
                        ref_decoded(&s, e[r], n, d);
                        for (size_t i = 0; i < n; i++) { want[i] += d[i]; res[r][i] = ef ? e[r][i] - d[i] : 0; }
                    }
                }
                if (R) {
                    ref_powersgd(R, e, N, n, q, want);
                    for (int r = 0; r < N; r++)
                        for (size_t i = 0; i < n; i++) res[r][i] = ef ? e[r][i] - want[i] / (float)N : 0;
                }
                fill(x, n, (unsigned)(100 * step + cm.rank));
                compress_allreduce(&z, &cm, x);
                bad = differs(what, x, want, n, tol);
                strcat(what, ", this rank's residual");
                bad = bad || differs(what, z.residual, res[cm.rank], n, tol);
                if (step < 2 && !ef) memcpy(off[step], x, sizeof(float) * n);
                if (step < 2 && ef && !memcmp(off[step], x, sizeof(float) * n) != (step == 0))
                    UNIT_FAIL("%s: call %d is %s with error feedback on and off", specs[t], step + 1,
                              step ? "the same" : "different");
            }
            compressor_free(&z);
        }
        free(q);
    }
    for (int r = 0; r < N; r++) { free(e[r]); free(res[r]); }
    free(x); free(want); free(d); free(off[0]); free(off[1]);
    stop();
}

/* Without error feedback, the all-gathered compressors deliver exactly the
 * rank-order sum of every rank's decoded piece, and keep no residual. */
TEST(compressed_allreduce_is_the_rank_order_sum_of_decoded_pieces) {
    start();
    const char *specs[] = {"int8", "sign", "topk:0.1"};
    size_t n = 777;
    float *x = xmalloc(sizeof(float) * n), *g = xmalloc(sizeof(float) * n), *want = xmalloc(sizeof(float) * n);
    for (int t = 0; t < ARRAY_LEN(specs); t++) {
        compress_spec_t s = spec_of(specs[t]);
        void *piece = xmalloc(compress_piece_bytes(&s, n, NULL, 0));
        memset(want, 0, sizeof(float) * n);
        for (int r = 0; r < cm.size; r++) {
            fill(g, n, (unsigned)r + 7);
            compress_encode(&s, g, n, piece);
            compress_decode_add(&s, piece, n, 1.0f, want);
        }
        compressor_t z;
        compressor_init(&z, &s, 0, n, NULL, 0, &cm);
        double before = comm_sent_bytes(&cm);
        fill(x, n, (unsigned)cm.rank + 7);
        compress_allreduce(&z, &cm, x);
        EXPECT_NEAR(comm_sent_bytes(&cm) - before, compress_sent_bytes(&s, n, NULL, 0, cm.size), 1e-12);
        for (size_t i = 0; i < n; i++)
            if (x[i] != want[i]) { UNIT_FAIL("%s: element %zu is %.9g, the decoded pieces sum to %.9g", specs[t], i, x[i], want[i]); break; }
        for (size_t i = 0; i < n; i++)
            if (z.residual[i] != 0) { UNIT_FAIL("%s: residual %g at %zu with error feedback off", specs[t], z.residual[i], i); break; }
        compressor_free(&z);
        free(piece);
    }
    free(x); free(g); free(want);
    stop();
}

/* PowerSGD is linear: a sum of rank-1 matrices u v_r^T is rank 1, and one
 * power iteration of rank 1 recovers it exactly (up to rounding); its bytes
 * are the two factors all-reduced. */
TEST(powersgd_rank_1_recovers_a_rank_1_sum) {
    start();
    size_t m = 12, c = 12, n = m * c;
    float *x = xmalloc(sizeof(float) * n), *want = xmalloc(sizeof(float) * n);
    memset(want, 0, sizeof(float) * n);
    for (int r = 0; r <= cm.size; r++)
        for (size_t i = 0; i < n; i++) {
            float u = (float)(i / c) - 5.5f, v = (float)((i % c) * (size_t)(r + 1) % 7) - 3.0f;
            if (r == cm.rank) x[i] = u * v;
            if (r < cm.size) want[i] += u * v;
        }
    compress_spec_t s = spec_of("powersgd:1");
    compressor_t z;
    compressor_init(&z, &s, 0, n, NULL, 0, &cm);
    EXPECT_EQ_INT(z.t[0].rows, m);
    EXPECT_EQ_INT(z.t[0].cols, c);
    double before = comm_sent_bytes(&cm);
    compress_allreduce(&z, &cm, x);
    EXPECT_NEAR(comm_sent_bytes(&cm) - before, compress_sent_bytes(&s, n, NULL, 0, cm.size), 1e-12);
    double big = 0, worst = 0;
    for (size_t i = 0; i < n; i++) {
        big = fmax(big, fabs(want[i]));
        worst = fmax(worst, fabs(x[i] - want[i]));
    }
    if (worst > 1e-5 * big) UNIT_FAIL("rank-1 sum recovered with max error %g (max |sum| %g)", worst, big);
    expect_same_on_every_rank(x, n, "powersgd:1");
    compressor_free(&z);
    free(x); free(want);
    stop();
}

/* PowerSGD per tensor (Vogels et al. 2019): each matrix of the list gets its
 * own rank-R factors, so a gradient whose every matrix is a rank-1 sum comes
 * back exactly at R = 1 (the flat view of the same values is not rank 1);
 * vectors are all-reduced as they are, and the bytes are
 * 2 (N-1)/N 4 (sum R (m + c) + the vectors' values). */
TEST(powersgd_factors_each_matrix_and_sends_vectors_whole) {
    start();
    compress_shape_t t[] = {{6, 5}, {1, 7}, {4, 9}, {3, 1}};
    size_t n = 6 * 5 + 7 + 4 * 9 + 3, words = (6 + 5) + 7 + (4 + 9) + 3;
    float *x = xmalloc(sizeof(float) * n), *want = xmalloc(sizeof(float) * n);
    memset(want, 0, sizeof(float) * n);
    for (int r = 0; r < cm.size; r++) {
        size_t off = 0;
        for (int k = 0; k < ARRAY_LEN(t); k++) {
            for (size_t i = 0; i < t[k].rows * t[k].cols; i++) {
                size_t row = i / t[k].cols, col = i % t[k].cols;
                float u = (float)row - 1.5f * (float)k, v = (float)((col + 2 * (size_t)k + 1) * (size_t)(r + 1) % 5) - 2.0f;
                if (r == cm.rank) x[off + i] = u * v;
                want[off + i] += u * v;
            }
            off += t[k].rows * t[k].cols;
        }
    }
    compress_spec_t s = spec_of("powersgd:1");
    compressor_t z;
    compressor_init(&z, &s, 0, n, t, ARRAY_LEN(t), &cm);
    double before = comm_sent_bytes(&cm), formula = 2.0 * (cm.size - 1) / cm.size * 4 * (double)words;
    EXPECT_NEAR(compress_sent_bytes(&s, n, t, ARRAY_LEN(t), cm.size), formula, 1e-9);
    compress_allreduce(&z, &cm, x);
    EXPECT_NEAR(comm_sent_bytes(&cm) - before, formula, 1e-9);
    double big = 0, worst = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        big = fmax(big, fabs(want[i]));
        if (fabs(x[i] - want[i]) > worst) { worst = fabs(x[i] - want[i]); at = i; }
    }
    if (worst > 1e-5 * big) UNIT_FAIL("max error %g at %zu (%g, the sum %g; max |sum| %g)", worst, at, x[at], want[at], big);
    for (size_t i = 30; i < 37; i++)   /* the 1 x 7 vector: the exact sum */
        if (x[i] != want[i]) { UNIT_FAIL("vector element %zu is %.9g, the sum %.9g", i, x[i], want[i]); break; }
    expect_same_on_every_rank(x, n, "powersgd:1 per tensor");
    compressor_free(&z);
    free(x); free(want);
    stop();
}

/* A matrix with a side at or below R gets rank min(R, m, c), whose
 * approximation is the matrix itself: the sum comes back exact up to
 * rounding, for R at the side and above it (flat 32 x 32, and a 5 x 3
 * matrix of a list), with the clamped rank's bytes. */
TEST(powersgd_rank_at_or_above_a_side_gives_the_exact_sum) {
    start();
    struct { size_t n; compress_shape_t t[2]; int nt; int R[3]; } cases[] = {
        {1024, {{0, 0}}, 0, {32, 33, 64}},
        {5 * 3 + 4, {{5, 3}, {1, 4}}, 2, {3, 4, 8}},
    };
    for (int c = 0; c < ARRAY_LEN(cases); c++) {
        size_t n = cases[c].n;
        const compress_shape_t *t = cases[c].nt ? cases[c].t : NULL;
        float *x = xmalloc(sizeof(float) * n), *g = xmalloc(sizeof(float) * n);
        double *want = xcalloc(n, sizeof(double));
        for (int r = 0; r < cm.size; r++) {
            fill(g, n, (unsigned)r + 11);
            for (size_t i = 0; i < n; i++) want[i] += g[i];
        }
        for (int k = 0; k < 3; k++) {
            char name[32];
            snprintf(name, sizeof name, "powersgd:%d", cases[c].R[k]);
            compress_spec_t s = spec_of(name);
            compressor_t z;
            compressor_init(&z, &s, 0, n, t, cases[c].nt, &cm);
            fill(x, n, (unsigned)cm.rank + 11);
            double before = comm_sent_bytes(&cm);
            compress_allreduce(&z, &cm, x);
            size_t side = t ? 3 : 32, words = t ? side * (5 + 3) + 4 : side * (32 + 32);
            EXPECT_NEAR(comm_sent_bytes(&cm) - before, 2.0 * (cm.size - 1) / cm.size * 4 * (double)words, 1e-9);
            double d = 0, e = 0;
            for (size_t i = 0; i < n; i++) {
                d += (x[i] - want[i]) * (x[i] - want[i]);
                e += want[i] * want[i];
            }
            if (sqrt(d / e) > 1e-5)
                UNIT_FAIL("%s on %zu values%s: relative error %.3g against the exact sum", name, n,
                          t ? " (5 x 3 and a vector)" : " (32 x 32)", sqrt(d / e));
            compressor_free(&z);
        }
        free(x); free(g); free(want);
    }
    stop();
}
