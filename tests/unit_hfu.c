/* unit_hfu.c: chapter 01's kernels, its result checker and its MLP.
 *
 * The checker is what turns a wrong kernel into a failing run, so it is
 * tested on results known to be wrong: a corrupted entry, a NaN, an unwritten
 * output, a wrong index; and on results known to be right but rounded the
 * way tf32 and bf16 hardware rounds, to show each tolerance admits the
 * precision it is meant for and not the one below. */
#define UNIT_MAIN
#include "unit.h"

#include "args.h"
#include "dtype.h"
#include "01_matmul_hfu/matmul.h"
#include "01_matmul_hfu/mlp.h"

/* C (m, n) = A B in double from possibly rounded copies of A and B. */
static void product_double(const float *A, const float *B, float *C, int m, int n, int k) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int p = 0; p < k; p++) s += (double)A[(long)i * k + p] * B[(long)p * n + j];
            C[(long)i * n + j] = (float)s;
        }
}

typedef struct { float *A, *B, *C; matmul_ref_t ref; } problem_t;

static void problem_init(problem_t *p, int m, int n, int k, long budget) {
    p->A = xmalloc(sizeof(float) * (long)m * k);
    p->B = xmalloc(sizeof(float) * (long)k * n);
    p->C = xmalloc(sizeof(float) * (long)m * n);
    fill_uniform(p->A, (long)m * k, 11);
    fill_uniform(p->B, (long)k * n, 12);
    matmul_ref_init(&p->ref, p->A, p->B, m, n, k, budget, 13);
}

static void problem_free(problem_t *p) {
    free(p->A); free(p->B); free(p->C);
    matmul_ref_free(&p->ref);
}

/* Shapes that are not multiples of any tile: 1, primes, one past a block
 * (KC = 256, MR, NR = 32, v2's 64/128/512 blocks) and a width past NC. */
static const int shapes[][3] = {
    {1, 1, 1}, {7, 13, 5}, {37, 53, 29}, {65, 33, 300}, {9, 70, 513}, {130, 129, 257}, {3, 2100, 20},
};

TEST(cpu_kernels_match_double_reference_on_ragged_shapes) {
    const struct { const char *name; matmul_cpu_fn fn; } kernels[] = {
        {"naive", matmul_cpu_naive}, {"v1", matmul_cpu_v1}, {"v2", matmul_cpu_v2}, {"v3", matmul_cpu_v3},
    };
    for (int s = 0; s < ARRAY_LEN(shapes); s++) {
        const int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
        problem_t p;
        problem_init(&p, m, n, k, MATMUL_CHECK_BUDGET);
        for (int f = 0; f < ARRAY_LEN(kernels); f++)
            for (int threads = 1; threads <= 3; threads += 2) {
                for (long i = 0; i < (long)m * n; i++) p.C[i] = NAN;
                kernels[f].fn(p.A, p.B, p.C, m, n, k, threads);
                double err = matmul_ref_error(&p.ref, p.C, NULL, NULL);
                if (!(err <= matmul_tolerance(PREC_FP32)))
                    UNIT_FAIL("%s, %d thread(s), m %d n %d k %d: rel. error %.3g > %.0e", kernels[f].name,
                              threads, m, n, k, err, matmul_tolerance(PREC_FP32));
            }
        problem_free(&p);
    }
}

TEST(openblas_sgemm_matches_double_reference) {
    problem_t p;
    problem_init(&p, 65, 33, 300, MATMUL_CHECK_BUDGET);
    matmul_openblas_sgemm(p.A, p.B, p.C, 65, 33, 300);
    EXPECT(matmul_ref_error(&p.ref, p.C, NULL, NULL) <= matmul_tolerance(PREC_FP32));
    problem_free(&p);
}

TEST(checker_flags_one_corrupted_entry_and_names_it) {
    problem_t p;
    problem_init(&p, 40, 50, 60, MATMUL_CHECK_BUDGET);
    EXPECT_EQ_INT(p.ref.nrows, 40);            /* small: every entry checked */
    product_double(p.A, p.B, p.C, 40, 50, 60);
    EXPECT(matmul_ref_error(&p.ref, p.C, NULL, NULL) < 1e-6);
    p.C[17 * 50 + 23] += 0.5f * (float)p.ref.rms;
    int wi, wj;
    double err = matmul_ref_error(&p.ref, p.C, &wi, &wj);
    EXPECT_NEAR(err, 0.5, 1e-5);
    EXPECT(err > matmul_tolerance(PREC_BF16));
    EXPECT_EQ_INT(wi, 17);
    EXPECT_EQ_INT(wj, 23);
    problem_free(&p);
}

TEST(checker_flags_nan_and_unwritten_output) {
    problem_t p;
    problem_init(&p, 16, 16, 16, MATMUL_CHECK_BUDGET);
    product_double(p.A, p.B, p.C, 16, 16, 16);
    p.C[5] = NAN;
    EXPECT(isinf(matmul_ref_error(&p.ref, p.C, NULL, NULL)));
    for (int i = 0; i < 256; i++) p.C[i] = 0.0f;
    EXPECT(matmul_ref_error(&p.ref, p.C, NULL, NULL) > 1.0);   /* max |ref| / rms(ref) */
    problem_free(&p);
}

TEST(checker_flags_wrong_index_even_at_bf16_tolerance) {
    /* B read transposed: a classic indexing bug, with all-plausible values */
    const int n = 64;
    problem_t p;
    problem_init(&p, n, n, n, MATMUL_CHECK_BUDGET);
    float *Bt = xmalloc(sizeof(float) * n * n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) Bt[i * n + j] = p.B[j * n + i];
    product_double(p.A, Bt, p.C, n, n, n);
    double err = matmul_ref_error(&p.ref, p.C, NULL, NULL);
    if (!(err > 1.0)) UNIT_FAIL("transposed B scored %.3g, expected > 1", err);
    free(Bt);
    problem_free(&p);
}

TEST(sampled_check_covers_first_last_and_random_lines) {
    /* a budget of 4 rows + 4 columns' worth forces sampling on 64^3 */
    const int n = 64;
    problem_t p;
    problem_init(&p, n, n, n, 8L * n * n);
    EXPECT_EQ_INT(p.ref.nrows, 4);
    EXPECT_EQ_INT(p.ref.ncols, 4);
    EXPECT_EQ_INT(p.ref.rows[0], 0);
    EXPECT_EQ_INT(p.ref.rows[1], n - 1);
    EXPECT_EQ_INT(p.ref.cols[0], 0);
    EXPECT_EQ_INT(p.ref.cols[1], n - 1);
    EXPECT(p.ref.rows[2] != p.ref.rows[3] && p.ref.rows[2] > 0 && p.ref.rows[2] < n - 1);
    product_double(p.A, p.B, p.C, n, n, n);
    EXPECT(matmul_ref_error(&p.ref, p.C, NULL, NULL) < 1e-6);
    const int spots[][2] = {{n - 1, 17}, {5, n - 1}, {0, 0}, {p.ref.rows[2], 9}, {33, p.ref.cols[3]}};
    for (int s = 0; s < ARRAY_LEN(spots); s++) {
        float *c = &p.C[spots[s][0] * n + spots[s][1]];
        const float keep = *c;
        *c += 1.0f;
        double err = matmul_ref_error(&p.ref, p.C, NULL, NULL);
        if (!(err > matmul_tolerance(PREC_BF16)))
            UNIT_FAIL("corrupted C[%d][%d] not seen: rel. error %.3g", spots[s][0], spots[s][1], err);
        *c = keep;
    }
    problem_free(&p);
}

/* Rounds x to `bits` mantissa bits by truncation, as tf32 hardware may. */
static float truncate_mantissa(float x, int bits) {
    uint32_t u;
    memcpy(&u, &x, 4);
    u &= ~((1u << (23 - bits)) - 1u);
    memcpy(&x, &u, 4);
    return x;
}

TEST(tolerances_admit_tf32_and_bf16_inputs_but_fp32_does_not) {
    /* k = 4096: the error measure should not grow with k */
    const int m = 32, n = 32, k = 4096;
    problem_t p;
    problem_init(&p, m, n, k, MATMUL_CHECK_BUDGET);
    float *A = xmalloc(sizeof(float) * m * k), *B = xmalloc(sizeof(float) * k * n);
    for (int round = 0; round < 2; round++) {
        const precision_t prec = round ? PREC_BF16 : PREC_TF32;
        for (int i = 0; i < m * k; i++)
            A[i] = round ? bf16_to_f32(f32_to_bf16(p.A[i])) : truncate_mantissa(p.A[i], 10);
        for (int i = 0; i < k * n; i++)
            B[i] = round ? bf16_to_f32(f32_to_bf16(p.B[i])) : truncate_mantissa(p.B[i], 10);
        product_double(A, B, p.C, m, n, k);
        double err = matmul_ref_error(&p.ref, p.C, NULL, NULL);
        printf("%s inputs: rel. error %.3g (tol %.0e)\n", precision_name[prec], err, matmul_tolerance(prec));
        if (!(err <= matmul_tolerance(prec) / 3))
            UNIT_FAIL("%s-rounded inputs scored %.3g, above a third of its tolerance %.0e",
                      precision_name[prec], err, matmul_tolerance(prec));
        if (!(err > matmul_tolerance(PREC_FP32)))
            UNIT_FAIL("%s-rounded inputs scored %.3g, within the fp32 tolerance", precision_name[prec], err);
    }
    free(A); free(B);
    problem_free(&p);
}

TEST(matmul_flops_are_2mnk) {
    EXPECT_NEAR(matmul_flops(2, 3, 4), 48.0, 0);
    EXPECT_NEAR(matmul_flops(8192, 8192, 8192), 2.0 * 8192.0 * 8192.0 * 8192.0, 0);
}

/* ---- MLP ----------------------------------------------------------------- */

TEST(mlp_flops_are_6_x_batch_x_params_and_6_matmuls) {
    EXPECT_NEAR(mlp_params(1024, 4096), 2.0 * 1024 * 4096, 0);
    EXPECT_NEAR(mlp_flops(256, 1024, 4096), 6.0 * 256 * mlp_params(1024, 4096), 0);
    EXPECT_NEAR(mlp_flops(256, 1024, 4096), 6 * matmul_flops(256, 4096, 1024), 0);
}

TEST(mlp_reference_gradients_match_finite_differences) {
    mlp_data_t m;
    mlp_data_init(&m, 6, 5, 7, 3);
    mlp_grads_t g;
    mlp_grads_alloc(&g, m.B, m.D, m.H);
    mlp_reference(&m, 0, &g);
    struct { const char *name; float *w; const float *grad; int count; } params[] = {
        {"W1", m.W1, g.dW1, m.D * m.H}, {"W2", m.W2, g.dW2, m.H * m.D}, {"x", m.x, g.dx, m.B * m.D},
    };
    mlp_grads_t scratch;
    mlp_grads_alloc(&scratch, m.B, m.D, m.H);
    for (int q = 0; q < ARRAY_LEN(params); q++)
        for (int i = 0; i < params[q].count; i += 3) {
            const float keep = params[q].w[i], h = 1e-2f;
            params[q].w[i] = keep + h;
            const float up = params[q].w[i];
            double lp = mlp_reference(&m, 0, &scratch);
            params[q].w[i] = keep - h;
            const float down = params[q].w[i];
            double lm = mlp_reference(&m, 0, &scratch);
            params[q].w[i] = keep;
            /* central difference: O(h^2) error, none from relu unless a
             * pre-activation crosses zero within h */
            const double fd = (lp - lm) / ((double)up - down);
            if (fabs(fd - params[q].grad[i]) > 1e-4 * fmax(1e-2, fabs(fd)))
                UNIT_FAIL("d%s[%d]: backward %.8g, finite difference %.8g", params[q].name, i,
                          params[q].grad[i], fd);
        }
    mlp_grads_free(&scratch);
    mlp_grads_free(&g);
    mlp_data_free(&m);
}

TEST(mlp_cpu_step_matches_reference) {
    mlp_data_t m;
    mlp_data_init(&m, 33, 20, 45, 5);
    mlp_grads_t want;
    mlp_grads_alloc(&want, m.B, m.D, m.H);
    double loss_ref = mlp_reference(&m, 0, &want);
    mlp_cpu_t c;
    mlp_cpu_init(&c, &m);
    double loss = mlp_cpu_step(&c);
    EXPECT_NEAR(loss, loss_ref, 1e-5);
    double err = mlp_grads_error(&c.g, &want, m.B, m.D, m.H);
    if (!(err <= MLP_TOL_FP32)) UNIT_FAIL("rel. error %.3g > %.0e", err, MLP_TOL_FP32);
    /* and the check fires on a gradient that lost its relu mask */
    for (int i = 0; i < m.D * m.H; i++) c.g.dW1[i] = 0.0f;
    EXPECT(mlp_grads_error(&c.g, &want, m.B, m.D, m.H) > 0.5);
    mlp_cpu_free(&c);
    mlp_grads_free(&want);
    mlp_data_free(&m);
}

/* The GPU path as the GPU computes it: bf16 tensors, fp32 accumulation, each
 * sum taken in reverse order (cuBLAS's order is its own business). */
static float bf(float v) { return bf16_to_f32(f32_to_bf16(v)); }

static void mlp_emulate_gpu(const mlp_data_t *m, int forget_mask, mlp_grads_t *out) {
    const int B = m->B, D = m->D, H = m->H;
    float *x = xmalloc(4 * B * D), *t = xmalloc(4 * B * D), *W1 = xmalloc(4 * D * H), *W2 = xmalloc(4 * H * D);
    float *h = xmalloc(4 * B * H), *dh = xmalloc(4 * B * H), *dy = xmalloc(4 * B * D);
    for (int i = 0; i < B * D; i++) { x[i] = bf(m->x[i]); t[i] = bf(m->t[i]); }
    for (int i = 0; i < D * H; i++) { W1[i] = bf(m->W1[i]); W2[i] = bf(m->W2[i]); }
    for (int b = 0; b < B; b++) {
        for (int j = 0; j < H; j++) {
            float s = 0.0f;
            for (int d = D - 1; d >= 0; d--) s += x[b * D + d] * W1[d * H + j];
            s = bf(s);
            h[b * H + j] = s > 0.0f ? s : 0.0f;
        }
        for (int d = 0; d < D; d++) {
            float y = 0.0f;
            for (int j = H - 1; j >= 0; j--) y += h[b * H + j] * W2[j * D + d];
            dy[b * D + d] = bf((bf(y) - t[b * D + d]) / (float)B);
        }
        for (int j = 0; j < H; j++) {
            float s = 0.0f;
            for (int d = D - 1; d >= 0; d--) s += dy[b * D + d] * W2[j * D + d];
            dh[b * H + j] = (forget_mask || h[b * H + j] > 0.0f) ? bf(s) : 0.0f;
        }
        for (int d = 0; d < D; d++) {
            float s = 0.0f;
            for (int j = H - 1; j >= 0; j--) s += dh[b * H + j] * W1[d * H + j];
            out->dx[b * D + d] = bf(s);
        }
    }
    for (int j = 0; j < H; j++)
        for (int d = 0; d < D; d++) {
            float s = 0.0f;
            for (int b = B - 1; b >= 0; b--) s += h[b * H + j] * dy[b * D + d];
            out->dW2[j * D + d] = s;
        }
    for (int d = 0; d < D; d++)
        for (int j = 0; j < H; j++) {
            float s = 0.0f;
            for (int b = B - 1; b >= 0; b--) s += x[b * D + d] * dh[b * H + j];
            out->dW1[d * H + j] = s;
        }
    free(x); free(t); free(W1); free(W2); free(h); free(dh); free(dy);
}

TEST(mlp_bf16_path_passes_the_gpu_check_and_a_broken_one_fails) {
    /* The GPU check compares against the reference with the same bf16
     * roundings, not against fp32: rounding x and W1 moves pre-activations
     * near zero across it, which flips relu's mask and changes whole
     * gradient entries (that alone scores ~0.4 against fp32 here). */
    mlp_data_t m;
    mlp_data_init(&m, MLP_CHECK_B, MLP_CHECK_D, MLP_CHECK_H, 1234);
    mlp_grads_t want, got;
    mlp_grads_alloc(&want, m.B, m.D, m.H);
    mlp_grads_alloc(&got, m.B, m.D, m.H);
    mlp_reference(&m, 1, &want);
    mlp_emulate_gpu(&m, 0, &got);
    double err = mlp_grads_error(&got, &want, m.B, m.D, m.H);
    printf("emulated GPU bf16 MLP vs bf16 reference: rel. error %.3g (tol %.2g)\n", err, MLP_TOL_BF16);
    if (!(err <= MLP_TOL_BF16 / 3)) UNIT_FAIL("rel. error %.3g > a third of %.2g", err, MLP_TOL_BF16);
    /* a backward pass that forgets relu's mask must fail */
    mlp_emulate_gpu(&m, 1, &got);
    err = mlp_grads_error(&got, &want, m.B, m.D, m.H);
    if (!(err > 3 * MLP_TOL_BF16)) UNIT_FAIL("unmasked backward scored %.3g, expected > %.2g", err, 3 * MLP_TOL_BF16);
    mlp_grads_free(&want);
    mlp_grads_free(&got);
    mlp_data_free(&m);
}

/* The update of a training step: AdamW's first step moves every weight by
 * lr against the sign of its gradient (m / (1 - beta1) = g and
 * sqrt(v / (1 - beta2)) = |g|, so the step is lr g / |g|), and the loss of
 * the next step is lower. */
TEST(mlp_adamw_first_update_moves_each_weight_by_lr_against_its_gradient) {
    mlp_data_t m;
    mlp_data_init(&m, 16, 12, 20, 9);
    mlp_cpu_t c;
    mlp_cpu_init(&c, &m);
    const double loss0 = mlp_cpu_step(&c);
    float *W1 = xmalloc(sizeof(float) * 12 * 20), *W2 = xmalloc(sizeof(float) * 20 * 12);
    memcpy(W1, m.W1, sizeof(float) * 12 * 20);
    memcpy(W2, m.W2, sizeof(float) * 20 * 12);
    device_t d = {.kind = DEV_CPU, .threads = 1};
    mlp_cpu_update(&c, &d);
    int checked = 0;
    for (int i = 0; i < 12 * 20; i++) {
        const struct { const float *before, *after, *g; const char *name; } w[2] = {
            {W1, m.W1, c.g.dW1, "W1"}, {W2, m.W2, c.g.dW2, "W2"}};
        for (int q = 0; q < 2; q++) {
            const float g = w[q].g[i];
            if (fabsf(g) < 1e-4f) continue;   /* eps would matter */
            const double want = w[q].before[i] - MLP_LR * (g > 0 ? 1.0 : -1.0);
            if (fabs(w[q].after[i] - want) > 1e-3 * MLP_LR)
                UNIT_FAIL("%s[%d]: %.8g -> %.8g with gradient %.3g, expected %.8g", w[q].name, i,
                          w[q].before[i], w[q].after[i], g, want);
            checked++;
        }
    }
    EXPECT(checked > 400);
    const double loss1 = mlp_cpu_step(&c);
    if (!(loss1 < loss0)) UNIT_FAIL("loss %.6g after the update, %.6g before", loss1, loss0);
    free(W1);
    free(W2);
    mlp_cpu_free(&c);
    mlp_data_free(&m);
}

/* ---- the peak table ------------------------------------------------------ */

/* The generations the chapter charts, with the data sheets' dense figures,
 * and each figure that is a product of units, FLOP per clock and clock
 * equal to that product. */
TEST(gpu_peak_table_has_each_generation_and_its_arithmetic) {
    const struct { const char *device, *label; double fp32, half; int year, tensor; } want[] = {
        {"Tesla K40m", "K40", 4.29, 0, 2013, 0},
        {"Tesla P100-SXM2-16GB", "P100 SXM2", 10.6, 21.2, 2016, 0},
        {"Tesla V100-SXM2-32GB", "V100 SXM2", 15.7, 125.0, 2017, 1},
        {"NVIDIA A100-SXM4-80GB", "A100", 19.5, 312.0, 2020, 1},
        {"NVIDIA H100 80GB HBM3", "H100 SXM", 66.9, 989.4, 2022, 1},
        {"NVIDIA H200", "H200 SXM", 66.9, 989.4, 2024, 1},
        {"NVIDIA B200", "B200", 75.0, 2250.0, 2024, 1},
    };
    for (int i = 0; i < ARRAY_LEN(want); i++) {
        const gpu_peak_t *g = perf_gpu_lookup(want[i].device);
        if (!g || strcmp(g->label, want[i].label) != 0) {
            UNIT_FAIL("%s: found %s, expected %s", want[i].device, g ? g->label : "nothing", want[i].label);
            continue;
        }
        EXPECT(g->flagship && g->year == want[i].year && g->tensor_cores == want[i].tensor);
        EXPECT_NEAR(g->tflops[PREC_FP32], want[i].fp32, 1e-9);
        EXPECT_NEAR(g->fp16_tflops, want[i].half, 1e-9);
        EXPECT(g->source && strlen(g->source) > 20);
    }
    /* the other Tesla boards keep their own figures */
    EXPECT(strcmp(perf_gpu_lookup("Tesla V100-PCIE-16GB")->label, "V100 PCIe") == 0);
    EXPECT(strcmp(perf_gpu_lookup("Tesla P100-PCIE-16GB")->label, "P100 PCIe") == 0);
    /* no bf16 before Ampere */
    EXPECT(perf_gpu_lookup("Tesla V100-SXM2-32GB")->tflops[PREC_BF16] == 0);
    /* SMs x tensor cores x FMA per clock x 2 x GHz, as the README derives them */
    EXPECT_NEAR(132 * 4 * 512 * 2 * 1.83e9 / 1e12, perf_gpu_lookup("H100 SXM5")->tflops[PREC_BF16], 1e-4);
    EXPECT_NEAR(132 * 128 * 2 * 1.98e9 / 1e12, 66.9, 1e-3);
    EXPECT_NEAR(108 * 4 * 256 * 2 * 1.41e9 / 1e12, 312.0, 1e-3);
    EXPECT_NEAR(80 * 8 * 64 * 2 * 1.53e9 / 1e12, 125.0, 3e-3);
    EXPECT_NEAR(2880 * 2 * 0.745e9 / 1e12, 4.29, 1e-3);
}

/* ---- the CPU peak's FMA units ---------------------------------------------- */

/* The FLOP per cycle the CPU peak divides by, from the FMA loop's rate and
 * the clock as perf_cpu_peak measures them, on cores whose units are known:
 * Zen 4 (AVX-512 split over two 256-bit pipes: one 512-bit FMA a cycle, 32
 * FP32 FLOP/cycle), an Intel core with two 512-bit FMA units (64), an AVX2
 * core with two 256-bit FMA units (Zen 2/3, Haswell and later: 32). The
 * measurements are a few percent off either way (a loaded core, a clock
 * read at a boost the loop does not hold). */
TEST(cpu_flop_per_cycle_is_the_fma_units_the_measured_rate_implies) {
    const struct { const char *core; int lanes; double ghz, fma_per_cycle; int want; } cores[] = {
        {"Zen 4, AVX-512 on two 256-bit pipes", 16, 3.7, 1, 32},
        {"Intel, two 512-bit FMA units", 16, 2.8, 2, 64},
        {"Intel, one 512-bit FMA unit", 16, 2.4, 1, 32},
        {"AVX2, two 256-bit FMA units", 8, 3.4, 2, 32},
        {"AVX2, one 256-bit FMA unit", 8, 2.0, 1, 16},
    };
    for (int i = 0; i < ARRAY_LEN(cores); i++)
        for (double off = 0.85; off <= 1.151; off += 0.05) {
            double clock = cores[i].ghz * 1e9, rate = off * clock * 2 * cores[i].lanes * cores[i].fma_per_cycle;
            int got = perf_flop_per_cycle(rate, clock, cores[i].lanes);
            if (got != cores[i].want)
                UNIT_FAIL("%s: a measured rate of %.1f GFLOP/s at %.2f GHz (%.0f%% of its units' rate) gives "
                          "%d FLOP/cycle, expected %d", cores[i].core, rate / 1e9, cores[i].ghz, 100 * off, got,
                          cores[i].want);
        }
}
