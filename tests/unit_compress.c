/* unit_compress.c: the gradient compressors (common/compress.h) against
 * what each must do exactly: round trips within their bound, pieces of the
 * formulas' bytes, error feedback's bookkeeping, and the compressed
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

/* Error feedback drops nothing: after T steps, what the all-reduces
 * delivered plus every rank's residual = the sum of every gradient (up to
 * fp32 rounding); and the result is the same on every rank. */
TEST(error_feedback_delivered_plus_residuals_equals_every_gradient) {
    start();
    const char *specs[] = {"int8", "sign", "topk:0.02", "powersgd:2"};
    size_t n = 1100;
    float *g = xmalloc(sizeof(float) * n), *x = xmalloc(sizeof(float) * n);
    double *want = xmalloc(sizeof(double) * n), *got = xmalloc(sizeof(double) * n);
    for (int t = 0; t < ARRAY_LEN(specs); t++) {
        compress_spec_t s = spec_of(specs[t]);
        compressor_t z;
        compressor_init(&z, &s, 1, n, NULL, 0, &cm);
        memset(want, 0, sizeof(double) * n);
        memset(got, 0, sizeof(double) * n);
        for (int step = 0; step < 4; step++) {
            for (int r = 0; r < cm.size; r++) {
                fill(g, n, (unsigned)(100 * step + r));
                for (size_t i = 0; i < n; i++) want[i] += g[i];
            }
            fill(x, n, (unsigned)(100 * step + cm.rank));
            compress_allreduce(&z, &cm, x);
            expect_same_on_every_rank(x, n, specs[t]);
            for (size_t i = 0; i < n; i++) got[i] += x[i];
        }
        double *res = xmalloc(sizeof(double) * n), scale = 0, worst = 0;
        for (size_t i = 0; i < n; i++) res[i] = z.residual[i];
        MPI_Allreduce(MPI_IN_PLACE, res, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        size_t at = 0;
        for (size_t i = 0; i < n; i++) {
            scale = fmax(scale, fabs(want[i]));
            double e = fabs(got[i] + res[i] - want[i]);
            if (e > worst) { worst = e; at = i; }
        }
        if (worst > 1e-5 * scale)
            UNIT_FAIL("%s: delivered + residuals differ from the gradients' sum by %g at %zu (%g + %g vs %g; "
                      "scale %g)", specs[t], worst, at, got[at], res[at], want[at], scale);
        free(res);
        compressor_free(&z);
    }
    free(g); free(x); free(want); free(got);
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
