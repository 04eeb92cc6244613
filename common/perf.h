/* perf.h: FLOP counts, peak FLOP/s, utilisation, CSV rows.
 *
 *   HFU = achieved FLOP/s (all FLOPs the hardware executed, recomputation
 *         included) / peak FLOP/s
 *   MFU = model FLOPs per step / step time / peak FLOP/s (matmul FLOPs of one
 *         forward and backward only; recomputation adds time, not model FLOPs)
 *
 * GPU peaks are dense (no 2:4 sparsity) figures from the vendors' data sheets,
 * looked up by the name the CUDA runtime reports. A GPU not in the table has
 * no peak: utilisation is then printed as "peak unknown, pass --peak".
 *
 * The CPU peak is measured, once per machine: a short loop of independent
 * FMAs on every thread of the rank, in the widest vector instructions the CPU
 * has (AVX-512, else AVX2: chosen by capability, never by comparing two noisy
 * timings), timed in thread CPU time (so a busy machine does not lower it),
 * best of 7 runs. The result is saved in build/cpu_peak/ (keyed by CPU model,
 * family, model number, stepping, ISA and thread count) and every later
 * program on the machine reads it, so two runs never divide by different
 * peaks. CPU_PEAK_CACHE=DIR keeps the files in DIR instead, CPU_PEAK_CACHE=off
 * measures every time; deleting the file measures again; --peak overrides. */
#ifndef PERF_H
#define PERF_H

#include <stdio.h>

#include "outfile.h"

#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The arithmetic a measurement ran on. */
typedef enum { PREC_FP32 = 0, PREC_TF32 = 1, PREC_BF16 = 2, PREC_FP8 = 3 } precision_t;
extern const char *const precision_name[4];

typedef struct {
    const char *match;    /* word of the CUDA device name ("H100", "V100-PCIE") */
    const char *label;
    double tflops[4];     /* dense peak per precision_t, TFLOP/s; 0: no such unit */
    double fp16_tflops;   /* dense fp16 (tensor cores, or packed fp16 on the FP32
                             cores before tensor cores existed); 0: none */
    int tensor_cores;     /* 16-bit matrix units */
    int year;             /* launch */
    int flagship;         /* the data-centre GPU of its generation (hfu --peaks chart) */
    const char *source;   /* data sheet, and the arithmetic behind the figures */
} gpu_peak_t;

/* The table entry for a CUDA device name, or NULL. */
const gpu_peak_t *perf_gpu_lookup(const char *device_name);
/* The whole table (n entries), newest generations last among the flagships. */
const gpu_peak_t *perf_gpu_table(int *n);

typedef struct {
    double flops;         /* measured FLOP/s of this rank's threads */
    double ghz;           /* measured core clock */
    int threads;
    int flop_per_cycle;   /* per core, rounded from the measurement */
    const char *isa;      /* "AVX-512" or "AVX2" */
    char formula[160];    /* "2 cores x 3.70 GHz x 32 FLOP/cycle (...) = 236.8 GFLOP/s" */
    char source[320];     /* where the figure came from: measured now, or the
                             cache file and when it was measured */
} cpu_peak_t;

/* The peak for `threads` threads: from the cache file when there is one,
 * else measured (about 0.3 s, one process at a time: others wait on a lock)
 * and saved. Kept in memory for the rest of the run. */
const cpu_peak_t *perf_cpu_peak(int threads);

/* Peak FLOP/s of device d at precision p: the measured CPU peak (fp32; the
 * CPU computes bf16 in fp32) or the GPU table. override_tflops > 0 (the
 * --peak flag) wins. Returns 0 when unknown. */
double perf_peak(const device_t *d, precision_t p, double override_tflops);

/* "41.3%" or "peak unknown, pass --peak" into buf. */
const char *perf_util_str(char *buf, size_t len, double flops_per_s, double peak);

/* flops_per_s / peak, after checking it is possible: above 1 dies with a
 * line naming `what` ("HFU of cublas_bf16 at 8192"), both figures, and the
 * two ways it can happen (a peak that is too low, or a wrong time or FLOP
 * count). Returns NAN when the peak is unknown (0). */
double perf_utilisation(double flops_per_s, double peak, const char *what);

/* Open a CSV file for appending; writes the header when the file is new or
 * empty, and refuses (usage_error) a file whose header differs. Its writes
 * are checked by out_flush and out_close (outfile.h), which end the run
 * naming the file when the disk is full. */
FILE *csv_open(const char *path, const char *header);

#ifdef __cplusplus
}
#endif
#endif
