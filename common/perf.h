/* perf.h: FLOP counts, peak FLOP/s, utilisation, CSV rows.
 *
 *   HFU = achieved FLOP/s (all FLOPs the hardware executed, recomputation
 *         included) / peak FLOP/s
 *   MFU = model FLOPs per step / step time / peak FLOP/s (matmul FLOPs of one
 *         forward and backward only; recomputation adds time, not model FLOPs)
 *
 * GPU peaks are dense (no 2:4 sparsity) figures from the vendors' data sheets,
 * looked up by the name the CUDA runtime reports. A GPU not in the table has
 * no peak: utilisation is then printed as "peak unknown, pass --peak". The CPU
 * peak is measured: a short loop of independent FMAs on every thread of the
 * rank, timed in thread CPU time (so a busy machine does not lower it),
 * reported as cores x GHz x FLOP per cycle. */
#ifndef PERF_H
#define PERF_H

#include <stdio.h>

#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The arithmetic a measurement ran on. */
typedef enum { PREC_FP32 = 0, PREC_TF32 = 1, PREC_BF16 = 2, PREC_FP8 = 3 } precision_t;
extern const char *const precision_name[4];

typedef struct {
    const char *match;    /* substring of the CUDA device name */
    const char *label;
    double tflops[4];     /* dense peak per precision_t, TFLOP/s */
} gpu_peak_t;

/* The table entry for a CUDA device name, or NULL. */
const gpu_peak_t *perf_gpu_lookup(const char *device_name);

typedef struct {
    double flops;         /* measured FLOP/s of this rank's threads */
    double ghz;           /* measured core clock */
    int threads;
    int flop_per_cycle;   /* per core, rounded from the measurement */
    char formula[160];    /* "2 cores x 3.70 GHz x 32 FLOP/cycle = 236.8 GFLOP/s" */
} cpu_peak_t;

/* Measures once (about 0.3 s) and caches the result. */
const cpu_peak_t *perf_cpu_peak(int threads);

/* Peak FLOP/s of device d at precision p: the measured CPU peak (fp32; the
 * CPU computes bf16 in fp32) or the GPU table. override_tflops > 0 (the
 * --peak flag) wins. Returns 0 when unknown. */
double perf_peak(const device_t *d, precision_t p, double override_tflops);

/* "41.3%" or "peak unknown, pass --peak" into buf. */
const char *perf_util_str(char *buf, size_t len, double flops_per_s, double peak);

/* Open a CSV file for appending; writes the header when the file is new or
 * empty, and refuses (usage_error) a file whose header differs. */
FILE *csv_open(const char *path, const char *header);

#ifdef __cplusplus
}
#endif
#endif
