/* main.c: hfu, hardware FLOPs utilisation of matrix products.
 *
 * For each size in --sizes and each variant (matmul.h), time C = A B on
 * square m = n = k = size matrices, check C against double precision, and
 * report
 *   TFLOP/s = 2 m n k / time
 *   HFU     = TFLOP/s / the device's peak at the variant's precision
 * (perf.h: the vendor's dense peak for a GPU, a measured FMA loop for the
 * CPU). --mlp instead runs training steps of a two-layer MLP (forward,
 * backward, AdamW update) and reports MFU (mlp.h); --peaks lists the GPU
 * peak table. A wrong result prints WRONG in the table and the program ends
 * with an error and exit status 1; a utilisation above 100% is impossible
 * and ends it too.
 *
 * Test-only: HFU_TEST_DELAY_MS=N adds N ms of sleep inside every timed run
 * (not the warm-up), so a test can check that the time reported is the time
 * of one run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>

#include "args.h"
#include "check.h"
#include "device.h"
#include "dist.h"
#include "dtype.h"
#include "matmul.h"
#include "mlp.h"
#include "perf.h"

/* cap: above this size the variant is skipped unless named in --variants
 * (minutes per run otherwise); 0: no cap. */
typedef struct {
    const char *name;
    device_kind dev;
    precision_t prec;
    int cap;
    const char *what;
} variant_t;

enum { CPU_NAIVE, CPU_V1, CPU_V2, CPU_V3, OPENBLAS_SGEMM, OPENBLAS_BF16,
       CUDA_NAIVE, CUDA_TILED, CUBLAS_FP32, CUBLAS_TF32, CUBLAS_BF16, NVARIANTS };

static const variant_t variants[NVARIANTS] = {
    [CPU_NAIVE] = {"cpu_naive", DEV_CPU, PREC_FP32, 512, "i-j-p triple loop"},
    [CPU_V1] = {"cpu_v1_ikj", DEV_CPU, PREC_FP32, 2048, "loop order i-p-j: contiguous, vectorised inner loop"},
    [CPU_V2] = {"cpu_v2_tiled", DEV_CPU, PREC_FP32, 0, "v1 on tiles that stay in L1/L2"},
    [CPU_V3] = {"cpu_v3_packed", DEV_CPU, PREC_FP32, 0, "packed panels + register micro-kernel (Goto/BLIS)"},
    [OPENBLAS_SGEMM] = {"openblas_sgemm", DEV_CPU, PREC_FP32, 0, "OpenBLAS cblas_sgemm"},
    [OPENBLAS_BF16] = {"openblas_bf16", DEV_CPU, PREC_BF16, 0, "OpenBLAS cblas_sbgemm: bf16 inputs, fp32 output"},
    [CUDA_NAIVE] = {"cuda_naive", DEV_CUDA, PREC_FP32, 4096, "one thread per output, global memory only"},
    [CUDA_TILED] = {"cuda_tiled", DEV_CUDA, PREC_FP32, 0, "32x32 shared-memory tiles"},
    [CUBLAS_FP32] = {"cublas_fp32", DEV_CUDA, PREC_FP32, 0, "cuBLAS fp32 on the FP32 units"},
    [CUBLAS_TF32] = {"cublas_tf32", DEV_CUDA, PREC_TF32, 0, "cuBLAS tf32 on the tensor cores"},
    [CUBLAS_BF16] = {"cublas_bf16", DEV_CUDA, PREC_BF16, 0, "cuBLAS bf16 on the tensor cores, fp32 accumulation"},
};
#define MAX_SIZES 64
#define MAX_SIZE 65536

/* The share of the timed wall clock this process's threads spent on a core:
 * CPU seconds (user + system, every thread) / (wall seconds x threads). Near
 * 100%, the run had its cores; far below, other processes had them, and the
 * HFU measures the machine's load, not the kernel. */
static double cpu_seconds(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
           (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
}

/* HFU_TEST_DELAY_MS (see the top): sleep inside a timed run. */
static double test_delay_ms;
static void test_delay(void) {
    if (test_delay_ms > 0) {
        const long ns = (long)(test_delay_ms * 1e6);
        nanosleep(&(struct timespec){ns / 1000000000L, ns % 1000000000L}, NULL);
    }
}

typedef struct {             /* the operands of one size */
    int n;
    float *A, *B, *C;        /* host, fp32 */
    bf16_t *Ab, *Bb;         /* host, bf16 copies for the bf16 variants */
    void *dA, *dB, *dAb, *dBb, *dC;   /* device copies (GPU runs) */
} operands_t;

static void run_variant(const device_t *d, int v, operands_t *o) {
    const int n = o->n;
    (void)d;
    switch (v) {
    case CPU_NAIVE: matmul_cpu_naive(o->A, o->B, o->C, n, n, n, d->threads); break;
    case CPU_V1: matmul_cpu_v1(o->A, o->B, o->C, n, n, n, d->threads); break;
    case CPU_V2: matmul_cpu_v2(o->A, o->B, o->C, n, n, n, d->threads); break;
    case CPU_V3: matmul_cpu_v3(o->A, o->B, o->C, n, n, n, d->threads); break;
    case OPENBLAS_SGEMM: matmul_openblas_sgemm(o->A, o->B, o->C, n, n, n); break;
    case OPENBLAS_BF16: matmul_openblas_sbgemm(o->Ab, o->Bb, o->C, n, n, n); break;
#ifdef USE_CUDA
    case CUDA_NAIVE: matmul_cuda_naive(d, o->dA, o->dB, o->dC, n, n, n); break;
    case CUDA_TILED: matmul_cuda_tiled(d, o->dA, o->dB, o->dC, n, n, n); break;
    case CUBLAS_FP32: matmul_cublas_f32(d, o->dA, o->dB, o->dC, n, n, n, 0); break;
    case CUBLAS_TF32: matmul_cublas_f32(d, o->dA, o->dB, o->dC, n, n, n, 1); break;
    case CUBLAS_BF16: matmul_cublas_bf16(d, o->dAb, o->dBb, o->dC, n, n, n); break;
#endif
    default: die("variant %s is not in this build", variants[v].name);
    }
}

static void operands_init(operands_t *o, const device_t *d, int n, uint64_t seed) {
    const size_t count = (size_t)n * n;
    memset(o, 0, sizeof *o);
    o->n = n;
    o->A = xmalloc(count * 4);
    o->B = xmalloc(count * 4);
    o->C = xmalloc(count * 4);
    o->Ab = xmalloc(count * 2);
    o->Bb = xmalloc(count * 2);
    fill_uniform(o->A, (long)count, seed);
    fill_uniform(o->B, (long)count, seed + 1);
    for (size_t i = 0; i < count; i++) { o->Ab[i] = f32_to_bf16(o->A[i]); o->Bb[i] = f32_to_bf16(o->B[i]); }
    if (d->kind == DEV_CUDA) {
        o->dA = dev_alloc(d, count * 4);
        o->dB = dev_alloc(d, count * 4);
        o->dAb = dev_alloc(d, count * 2);
        o->dBb = dev_alloc(d, count * 2);
        o->dC = dev_alloc(d, count * 4);
        dev_from_host(d, o->dA, o->A, count * 4);
        dev_from_host(d, o->dB, o->B, count * 4);
        dev_from_host(d, o->dAb, o->Ab, count * 2);
        dev_from_host(d, o->dBb, o->Bb, count * 2);
    }
}

static void operands_free(operands_t *o, const device_t *d) {
    free(o->A); free(o->B); free(o->C); free(o->Ab); free(o->Bb);
    if (d->kind == DEV_CUDA) {
        dev_free(d, o->dA); dev_free(d, o->dB); dev_free(d, o->dAb); dev_free(d, o->dBb);
        dev_free(d, o->dC);
    }
}

/* Whether size n fits: the GPU holds A, B, C in fp32 and A, B in bf16, and
 * so does the host (16 n^2 bytes on each), with a tenth to spare. */
static int fits_on_gpu(const device_t *d, long n) {
    const double need = 16.0 * (double)n * (double)n * 1.1;
    const double host = (double)sysconf(_SC_AVPHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
#ifdef USE_CUDA
    return (double)matmul_cuda_free_bytes(d) >= need && host >= need;
#else
    (void)d; (void)host; (void)need;
    return 0;
#endif
}

/* Parses --variants ("all" or a comma list) into want[]; returns 1 when the
 * user named variants (then size caps do not apply). */
static int parse_variants(const char *s, const device_t *d, int want[NVARIANTS]) {
    for (int v = 0; v < NVARIANTS; v++) want[v] = 0;
    if (strcmp(s, "all") == 0) {
        for (int v = 0; v < NVARIANTS; v++) want[v] = variants[v].dev == d->kind;
        return 0;
    }
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int v = 0; v < NVARIANTS; v++)
            if (strcmp(tok, variants[v].name) == 0) found = v;
        if (found < 0) {
            char names[512] = "";
            for (int v = 0; v < NVARIANTS; v++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", v ? "," : "", variants[v].name);
            usage_error("--variants: unknown variant '%s' (one of all,%s)", tok, names);
        }
        if (variants[found].dev != d->kind)
            usage_error("--variants: %s runs on the %s, but this run uses the %s (see --device)",
                        tok, variants[found].dev == DEV_CUDA ? "GPU" : "CPU",
                        d->kind == DEV_CUDA ? "GPU" : "CPU");
        want[found] = 1;
    }
    return 1;
}

static void print_header(const device_t *d, const char *want, double peak_override, int mlp) {
    if (mlp) say("hfu --mlp: model FLOPs utilisation of a two-layer MLP, training steps\n");
    else say("hfu: square matmuls C = A B with m = n = k = size; 2 m n k FLOPs each\n");
    if (d->kind == DEV_CPU) {
        say("device:  cpu (%s), %d thread%s%s\n", d->name, d->threads, d->threads == 1 ? "" : "s",
            strcmp(want, "auto") != 0 ? ""
            : device_cuda_built() ? " (--device auto: no usable GPU, so the CPU)"
                                  : " (--device auto: this build has no CUDA backend)");
        /* OpenBLAS picks its kernels by CPU model unless OPENBLAS_CORETYPE
         * names them: the line says which, as speeds differ by up to 2x */
        const char *forced = getenv("OPENBLAS_CORETYPE");
        say("blas:    OpenBLAS %s kernels (%s%s)\n", openblas_get_corename(),
            forced && *forced ? "OPENBLAS_CORETYPE=" : "chosen for this CPU; OPENBLAS_CORETYPE unset",
            forced && *forced ? forced : "");
        matmul_blas_settle();   /* the FMA loop needs the cores to itself */
        if (peak_override <= 0) {
            const cpu_peak_t *p = perf_cpu_peak(d->threads);
            say("peak:    fp32 %s; bf16 counted at the fp32 peak\n         %s\n", p->formula, p->source);
        }
    } else {
        say("device:  cuda %d (%s)\n", d->gpu, d->name);
        const gpu_peak_t *g = perf_gpu_lookup(d->name);
        if (peak_override > 0) {
        } else if (g) {
            say("peak:    %s dense, data sheet (common/perf.c): fp32 %.1f, tf32 %.1f, bf16 %.1f TFLOP/s\n",
                g->label, g->tflops[PREC_FP32], g->tflops[PREC_TF32], g->tflops[PREC_BF16]);
        } else {
            say("peak:    unknown for this GPU; pass --peak TFLOPS for utilisation\n");
        }
    }
    if (peak_override > 0) say("peak:    %.4g TFLOP/s for every variant (--peak)\n", peak_override);
}

/* ---- the peak table: hfu --peaks ------------------------------------------- */

static void list_peaks(FILE *csv) {
    int n;
    const gpu_peak_t *t = perf_gpu_table(&n);
    say("GPU peaks, dense (no 2:4 sparsity), TFLOP/s, from the data sheets (common/perf.c);\n"
        "0 = no such unit. fp16: tensor cores, or packed fp16 on the FP32 cores before them.\n\n");
    say("%-10s %4s %9s %9s %9s %9s %9s  %s\n", "GPU", "year", "fp32", "tf32", "fp16", "bf16", "fp8",
        "16-bit / fp32");
    for (int i = 0; i < n; i++) {
        const gpu_peak_t *g = &t[i];
        const double half = g->tflops[PREC_BF16] > 0 ? g->tflops[PREC_BF16] : g->fp16_tflops;
        char ratio[32] = "-";
        if (half > 0) snprintf(ratio, sizeof ratio, "%.1fx", half / g->tflops[PREC_FP32]);
        say("%-10s %4d %9.4g %9.4g %9.4g %9.4g %9.4g  %s%s\n", g->label, g->year, g->tflops[PREC_FP32],
            g->tflops[PREC_TF32], g->fp16_tflops, g->tflops[PREC_BF16], g->tflops[PREC_FP8], ratio,
            g->tensor_cores ? "" : " (no tensor cores)");
        if (csv) {
            /* commas inside the source would split the column */
            char src[512];
            snprintf(src, sizeof src, "%s", g->source);
            for (char *c = src; *c; c++) if (*c == ',') *c = ';';
            fprintf(csv, "%s,%d,%d,%g,%g,%g,%g,%g,%d,%s", g->label, g->year, g->flagship,
                    g->tflops[PREC_FP32], g->tflops[PREC_TF32], g->fp16_tflops, g->tflops[PREC_BF16],
                    g->tflops[PREC_FP8], g->tensor_cores, src);
            csv_end_row(csv, NULL);   /* its source column: the data sheet */
        }
    }
    say("\nsources:\n");
    for (int i = 0; i < n; i++) say("  %-10s %s\n", t[i].label, t[i].source);
}

/* ---- the matmul sweep ---------------------------------------------------- */

static int sweep(const device_t *d, const long *sizes, int nsizes, int want[NVARIANTS],
                 int named, int warmup, int iters, double peak_override, FILE *csv, const char *csv_path,
                 uint64_t seed) {
    int wrong = 0;
    if (want[OPENBLAS_BF16] && !matmul_openblas_has_sbgemm()) {
        say("skipped: openblas_bf16: this OpenBLAS has no cblas_sbgemm (built without BUILD_BFLOAT16)\n");
        want[OPENBLAS_BF16] = 0;
    }
    say("check:   max |C - ref| / rms(ref) against double-precision dot products of the same\n"
        "         fp32 inputs (every entry up to 2^28 FMAs; above, whole rows and columns:\n"
        "         first, last and random ones)\n");
    say("timing:  mean of up to %d runs (at most ~1 s of them) after %d warm-up run%s\n\n",
        iters, warmup, warmup == 1 ? "" : "s");
    say("%6s  %-15s %-6s %-5s %10s %9s %7s %5s %9s  %s\n", "size", "variant", "device", "dtype",
        "time_ms", "TFLOP/s", "HFU", "cpu%", "rel.err", "check");
    for (int s = 0; s < nsizes; s++) {
        const int n = (int)sizes[s];
        operands_t o;
        operands_init(&o, d, n, seed + (uint64_t)n);
        matmul_ref_t ref;
        matmul_ref_init(&ref, o.A, o.B, n, n, n, MATMUL_CHECK_BUDGET, seed);
        double fp32_lib_ms = 0, best_own_ms = 0;
        const char *best_own = NULL;
        for (int v = 0; v < NVARIANTS; v++) {
            const variant_t *V = &variants[v];
            if (!want[v]) continue;
            if (!named && V->cap > 0 && n > V->cap) {
                say("%6d  %-15s skipped: slow above %d (name it in --variants to run it anyway)\n",
                    n, V->name, V->cap);
                continue;
            }
            if (v <= CPU_V3) matmul_blas_settle();
            /* NaN in C: a variant that writes nothing fails the check */
            for (size_t i = 0; i < (size_t)n * n; i++) o.C[i] = NAN;
            if (d->kind == DEV_CUDA) dev_from_host(d, o.dC, o.C, (size_t)n * n * 4);
            for (int w = 0; w < warmup; w++) run_variant(d, v, &o);
            double total_ms = 0;
            int runs = 0;
            const double cpu0 = cpu_seconds(), wall0 = now_s();
            while (runs < iters && (runs == 0 || total_ms < 1000.0)) {
                dev_timer_t t;
                dev_timer_start(&t, d);
                run_variant(d, v, &o);
                test_delay();
                total_ms += dev_timer_stop_ms(&t);
                runs++;
            }
            const double ms = total_ms / runs;   /* one run's time */
            char oncore[16] = "-";
            if (d->kind == DEV_CPU)
                snprintf(oncore, sizeof oncore, "%.0f",
                         100.0 * (cpu_seconds() - cpu0) / ((now_s() - wall0) * d->threads));
            if (d->kind == DEV_CUDA) dev_to_host(d, o.C, o.dC, (size_t)n * n * 4);
            int wi, wj;
            const double err = matmul_ref_error(&ref, o.C, &wi, &wj);
            const double tol = matmul_tolerance(V->prec);
            const int ok = err <= tol;
            const double flops = matmul_flops(n, n, n) / (ms * 1e-3);
            const double peak = perf_peak(d, V->prec, peak_override);
            char util[64] = "-", what[96];     /* the header says when the peak is unknown */
            snprintf(what, sizeof what, "HFU of %s at size %d", V->name, n);
            const double hfu = perf_utilisation(flops, peak, what);
            if (peak > 0) perf_util_str(util, sizeof util, flops, peak);
            say("%6d  %-15s %-6s %-5s %10.3f %9.4g %7s %5s %9.1e  %s (tol %.0e)\n", n, V->name,
                d->kind == DEV_CUDA ? "cuda" : "cpu", precision_name[V->prec], ms, flops / 1e12,
                util, oncore, err, ok ? "ok" : "WRONG", tol);
            if (!ok) {
                wrong++;
                fprintf(stderr, "error: %s at size %d: rel. error %.3g > tol %.0e (worst entry "
                        "C[%d][%d] = %g)\n", V->name, n, err, tol, wi, wj,
                        wi >= 0 ? (double)o.C[(size_t)wi * n + wj] : 0.0);
                continue;
            }
            if (csv) {
                fprintf(csv, "%s,%s,%s,%d,%d,%d,%.6g,%.6g,%.6g,", V->name,
                        d->kind == DEV_CUDA ? "cuda" : "cpu", precision_name[V->prec], n, n, n, ms,
                        flops / 1e12, peak / 1e12);
                if (peak > 0) fprintf(csv, "%.6g", 100.0 * hfu);
                else fprintf(csv, "nan");
                csv_end_row(csv, "measured");
                out_flush(csv, csv_path);
            }
            if (v == OPENBLAS_SGEMM || v == CUBLAS_FP32) fp32_lib_ms = ms;
            const int own = v <= CPU_V3 || v == CUDA_NAIVE || v == CUDA_TILED;
            if (own && (!best_own || ms < best_own_ms)) { best_own = V->name; best_own_ms = ms; }
        }
        if (best_own && fp32_lib_ms > 0)
            say("%6d  fastest hand-written: %s at %.2fx the speed of %s\n", n, best_own,
                fp32_lib_ms / best_own_ms, d->kind == DEV_CUDA ? "cublas_fp32" : "openblas_sgemm");
        say("\n");
        matmul_ref_free(&ref);
        operands_free(&o, d);
    }
    return wrong;
}

/* ---- the MLP: model FLOPs utilisation ----------------------------------- */

static int run_mlp(const device_t *d, int B, int D, int H, int warmup, int iters,
                   double peak_override, uint64_t seed) {
    const int gpu = d->kind == DEV_CUDA;
    const precision_t prec = gpu ? PREC_BF16 : PREC_FP32;
    say("mlp:     y = relu(x W1) W2, L = 0.5/B sum (y - t)^2; a step is forward, backward and\n"
        "         an AdamW update of W1 and W2; %s\n",
        gpu ? "cuBLAS bf16 (fp32 accumulation), fp32 master weights" : "OpenBLAS sgemm fp32");

    /* First a tiny problem against the double-precision reference. */
    mlp_data_t tiny;
    mlp_data_init(&tiny, MLP_CHECK_B, MLP_CHECK_D, MLP_CHECK_H, seed);
    mlp_grads_t want, got;
    mlp_grads_alloc(&want, tiny.B, tiny.D, tiny.H);
    mlp_reference(&tiny, gpu, &want);
    if (gpu) {
#ifdef USE_CUDA
        mlp_cuda_t *c = mlp_cuda_init(d, &tiny);
        mlp_cuda_step(c);
        mlp_grads_alloc(&got, tiny.B, tiny.D, tiny.H);
        mlp_cuda_grads(c, &got);
        mlp_cuda_free(c);
#endif
    } else {
        mlp_cpu_t c;
        mlp_cpu_init(&c, &tiny);
        mlp_cpu_step(&c);
        got = c.g;
        c.g = (mlp_grads_t){0};
        mlp_cpu_free(&c);
    }
    const double err = mlp_grads_error(&got, &want, tiny.B, tiny.D, tiny.H);
    const double tol = gpu ? MLP_TOL_BF16 : MLP_TOL_FP32;
    say("check:   gradients of a tiny MLP (B %d, D %d, H %d) against double precision%s:\n"
        "         rel. error %.1e (tol %.0e) %s\n", tiny.B, tiny.D, tiny.H,
        gpu ? " (same bf16 roundings)" : "", err, tol, err <= tol ? "ok" : "WRONG");
    mlp_grads_free(&got);
    mlp_grads_free(&want);
    mlp_data_free(&tiny);
    if (!(err <= tol)) {
        fprintf(stderr, "error: MLP gradients differ from the reference: rel. error %.3g > tol %.0e\n", err, tol);
        return 1;
    }

    /* Model FLOPs per step = 6 x B x P, P = 2 D H (mlp.h). */
    mlp_data_t m;
    mlp_data_init(&m, B, D, H, seed);
    const double flops = mlp_flops(B, D, H);
    say("shape:   batch B %d, dim D %d, hidden H %d: P = 2 D H = %.6g M parameters\n", B, D, H,
        mlp_params(D, H) / 1e6);
    say("FLOPs:   6 x B x P = %.6g GFLOP per step (6 matmuls of 2 B D H; the update adds none)\n",
        flops / 1e9);
    mlp_cpu_t cpu = {0};
#ifdef USE_CUDA
    mlp_cuda_t *cuda = gpu ? mlp_cuda_init(d, &m) : NULL;
#endif
    if (!gpu) mlp_cpu_init(&cpu, &m);
    /* A step as the lecture's t_actual counts it: forward, backward and the
     * optimizer's update, timed apart so the update's share shows. */
    double fb_ms = 0, upd_ms = 0, loss = 0, first_loss = NAN, cpu0 = 0, wall0 = 0;
    int runs = 0;
    for (int it = -warmup; it < iters && (it <= 0 || fb_ms + upd_ms < 2000.0); it++) {
        if (it == 0) { cpu0 = cpu_seconds(); wall0 = now_s(); }
        dev_timer_t t;
        dev_timer_start(&t, d);
#ifdef USE_CUDA
        if (gpu) mlp_cuda_step(cuda);
#endif
        if (!gpu) loss = mlp_cpu_step(&cpu);
        if (it >= 0) test_delay();
        const double ms_fb = dev_timer_stop_ms(&t);
        dev_timer_start(&t, d);
#ifdef USE_CUDA
        if (gpu) mlp_cuda_update(cuda);
#endif
        if (!gpu) mlp_cpu_update(&cpu, d);
        const double ms_upd = dev_timer_stop_ms(&t);
        if (isnan(first_loss)) first_loss = loss;
        if (it >= 0) { fb_ms += ms_fb; upd_ms += ms_upd; runs++; }
    }
    const double oncore = (cpu_seconds() - cpu0) / ((now_s() - wall0) * d->threads);
    fb_ms /= runs;
    upd_ms /= runs;
    const double ms = fb_ms + upd_ms;   /* one step */
    const double peak = perf_peak(d, prec, peak_override);
    const double achieved = flops / (ms * 1e-3);
    const double mfu = perf_utilisation(achieved, peak, "MFU of the MLP");
    say("step:    %.6g ms = forward + backward %.6g ms + AdamW update %.6g ms (mean of %d step%s)\n",
        ms, fb_ms, upd_ms, runs, runs == 1 ? "" : "s");
    if (!gpu) {
        say("loss:    %.6f at the first step, %.6f at the last (the update trains)\n", first_loss, loss);
        say("cpu%%:    the %d thread%s spent %.0f%% of the timed steps on a core (below 100%%: other "
            "processes had the cores, or a part ran on one thread)\n", d->threads,
            d->threads == 1 ? "" : "s", 100.0 * oncore);
    }
    if (peak > 0)
        say("MFU:     %.4g%% = %.6g GFLOP / %.6g ms = %.6g TFLOP/s, of the %s peak %.6g TFLOP/s\n"
            "         (forward + backward alone: %.4g%%)\n", 100.0 * mfu, flops / 1e9, ms,
            achieved / 1e12, precision_name[prec], peak / 1e12, 100.0 * flops / (fb_ms * 1e-3) / peak);
    else
        say("MFU:     peak unknown, pass --peak (%.6g GFLOP / %.6g ms = %.6g TFLOP/s)\n", flops / 1e9,
            ms, achieved / 1e12);
#ifdef USE_CUDA
    if (cuda) mlp_cuda_free(cuda);
#endif
    if (!gpu) mlp_cpu_free(&cpu);
    mlp_data_free(&m);
    return 0;
}

int main(int argc, char **argv) {
    dist_t dist;
    dist_init(&argc, &argv, &dist);
    common_args_t c = COMMON_ARGS_DEFAULT;
    const char *sizes_s = NULL, *variants_s = "all";
    int warmup = 1, iters = 10, mlp = 0, peaks = 0, batch = 0, dim = 0, hidden = 0;
    double peak_override = 0;
    arg_t flags[] = {
        COMMON_ARGS(c),
        {"sizes", ARG_STRING, &sizes_s, "matrix sizes, e.g. 256,512,1K (default: CPU 128..4096; GPU "
         "256..16K, and 32K when the GPU and the host have the memory)", NULL, 0, 0},
        {"variants", ARG_STRING, &variants_s, "comma list of variants, or all (those of the device)", NULL, 0, 0},
        {"iters", ARG_INT, &iters, "timed runs per variant and size (fewer once ~1 s is spent)", NULL, 1, 1e6},
        {"warmup", ARG_INT, &warmup, "untimed runs first", NULL, 0, 1e6},
        {"peak", ARG_DOUBLE, &peak_override, "peak TFLOP/s for HFU/MFU instead of the table or measurement", NULL, 0, 1e9},
        {"mlp", ARG_FLAG, &mlp, "run training steps of a two-layer MLP (forward, backward, AdamW) "
         "and report MFU instead", NULL, 0, 0},
        {"peaks", ARG_FLAG, &peaks, "list the GPU peak table (with --csv: its rows, for the chart) and exit",
         NULL, 0, 0},
        {"batch", ARG_INT, &batch, "--mlp batch B (0: CPU 1024, GPU 8192)", NULL, 0, 1 << 20},
        {"dim", ARG_INT, &dim, "--mlp input/output width D (0: CPU 1024, GPU 4096)", NULL, 0, 1 << 20},
        {"hidden", ARG_INT, &hidden, "--mlp hidden width H (0: CPU 4096, GPU 16384)", NULL, 0, 1 << 20},
    };
    args_parse(argc, argv, "hfu",
               "Hardware FLOPs utilisation of matrix products: naive, blocked and library\n"
               "kernels on the CPU and GPU, each checked against double precision.\n"
               "Variants: cpu_naive cpu_v1_ikj cpu_v2_tiled cpu_v3_packed openblas_sgemm\n"
               "openblas_bf16 (CPU); cuda_naive cuda_tiled cublas_fp32 cublas_tf32 cublas_bf16 (GPU).",
               flags, ARRAY_LEN(flags));
    if (dist.world > 1)
        usage_error("hfu measures one device; run it without mpirun (got %d ranks)", dist.world);
    if (mlp && peaks) usage_error("--mlp and --peaks are two different runs; pick one");
    const char *delay = getenv("HFU_TEST_DELAY_MS");
    test_delay_ms = delay ? atof(delay) : 0;
    if (peaks) {
        FILE *pc = c.csv ? csv_open(c.csv, "gpu,year,flagship,fp32_tflops,tf32_tflops,fp16_tflops,"
                                           "bf16_tflops,fp8_tflops,tensor_cores,source") : NULL;
        list_peaks(pc);
        if (pc) out_close(pc, c.csv);
        dist_finalize();
        return 0;
    }

    device_t d;
    device_init(&d, c.device, dist.local_rank, dist.local_world, c.threads);
    matmul_blas_mark();   /* device_init sized OpenBLAS's thread pool */
    /* parse the lists before any work, so a bad flag fails at once */
    long sizes[MAX_SIZES];
    int nsizes;
    if (sizes_s) {
        nsizes = args_size_list(sizes_s, sizes, MAX_SIZES, "sizes");
    } else if (d.kind == DEV_CUDA) {
        /* the lecture's sweep: up to 16K, and 32K where it fits */
        const long def[] = {256, 512, 1024, 2048, 4096, 8192, 16384, 32768};
        nsizes = ARRAY_LEN(def) - (fits_on_gpu(&d, 32768) ? 0 : 1);
        memcpy(sizes, def, sizeof def);
    } else {
        const long def[] = {128, 256, 512, 1024, 2048, 4096};
        nsizes = ARRAY_LEN(def);
        memcpy(sizes, def, sizeof def);
    }
    for (int s = 0; s < nsizes; s++)
        if (sizes[s] > MAX_SIZE) usage_error("--sizes: %ld is above the largest size, %d", sizes[s], MAX_SIZE);
    int want[NVARIANTS];
    const int named = parse_variants(variants_s, &d, want);
    FILE *csv = (c.csv && !mlp) ? csv_open(c.csv, "variant,device,dtype,m,n,k,time_ms,tflops,peak_tflops,hfu") : NULL;

    print_header(&d, c.device, peak_override, mlp);
    int status;
    if (mlp) {
        const int gpu = d.kind == DEV_CUDA;
        status = run_mlp(&d, batch ? batch : gpu ? 8192 : 1024, dim ? dim : gpu ? 4096 : 1024,
                         hidden ? hidden : gpu ? 16384 : 4096, warmup, iters, peak_override,
                         (uint64_t)c.seed);
    } else {
        const int wrong = sweep(&d, sizes, nsizes, want, named, warmup, iters, peak_override, csv, c.csv,
                                (uint64_t)c.seed);
        if (wrong) fprintf(stderr, "error: %d result%s wrong (see the table)\n", wrong, wrong == 1 ? "" : "s");
        status = wrong ? 1 : 0;
    }
    if (csv) out_close(csv, c.csv);
    device_finalize(&d);
    dist_finalize();
    return status;
}
