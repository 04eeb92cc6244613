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
 * The CPU peak is cores x clock x FLOP per cycle. FLOP per cycle comes from
 * the instruction set: 2 per FMA on each lane (16 fp32 lanes in AVX-512, 8
 * in AVX2, the widest the CPU has) times the FMAs a core issues per cycle
 * (1 or 2: told apart by measuring). The clock is the one the measured FMA
 * rate of one core implies. Both are measured once per machine, on one core,
 * timed in thread CPU time (so a busy machine does not lower them), best of
 * 15 runs, and saved in build/cpu_peak/ (keyed by CPU model, family, model
 * number, stepping and ISA); every later program on the machine reads them,
 * whatever its thread count, so two runs never divide by different peaks
 * per core. A peak for several threads is that many times one core's: an
 * upper bound where the clock drops with more cores busy. CPU_PEAK_CACHE=DIR
 * keeps the file in DIR instead, CPU_PEAK_CACHE=off measures every time;
 * deleting the file measures again; --peak overrides. */
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
    double flops;         /* peak FLOP/s of this rank's threads: threads x ghz x flop_per_cycle */
    double ghz;           /* the clock one core's measured FMA rate implies */
    int threads;
    int flop_per_cycle;   /* per core, from the ISA: 2 x fp32 lanes x FMAs per cycle */
    const char *isa;      /* "AVX-512" or "AVX2" */
    char formula[192];    /* "2 cores x 3.669 GHz x 32 FLOP/cycle (...) = 234.8 GFLOP/s" */
    const char *source;   /* where the per-core figures came from: measured now, or
                             the cache file and when they were measured */
} cpu_peak_t;

/* The peak for `threads` threads: one core's figures (from the cache file
 * when there is one, else measured, about 1 s, one process at a time: others
 * wait on a lock, and saved) times `threads`. The figures are kept in memory
 * for the rest of the run; the struct until the next call. */
const cpu_peak_t *perf_cpu_peak(int threads);

/* One core's FLOP per cycle from what perf_cpu_peak measures on it: the
 * FMA loop's FLOP/s on `lanes` fp32 lanes (16: AVX-512, 8: AVX2) and the
 * clock in Hz. 2 x lanes x the FMAs issued per cycle (1 or 2, whichever
 * the measured ratio is nearer). */
int perf_flop_per_cycle(double fma_flops, double clock_hz, int lanes);

/* Peak FLOP/s of device d at precision p: the measured CPU peak (fp32; the
 * CPU computes bf16 in fp32) or the GPU table. override_tflops > 0 (the
 * --peak flag) wins. Returns 0 when unknown. */
double perf_peak(const device_t *d, precision_t p, double override_tflops);

/* Where the peak of device d at precision p comes from, for a program's
 * header: "1000 TFLOP/s per rank, from --peak", the CPU's formula and its
 * source (two lines), the data sheet's figure, or that it is unknown. */
const char *perf_peak_desc(char *buf, size_t len, const device_t *d, precision_t p, double override_tflops);

/* A utilisation into buf: "41.3%" (0.1% from 1% up), "0.00123%" (three
 * significant digits below 1%, as against a peak far above what was run), or
 * "peak unknown, pass --peak". */
const char *perf_util_str(char *buf, size_t len, double flops_per_s, double peak);

/* flops_per_s / peak, after checking it is possible: above 1 dies with a
 * line naming `what` ("HFU of cublas_bf16 at 8192"), both figures, and the
 * two ways it can happen (a peak that is too low, or a wrong time or FLOP
 * count). Returns NAN when the peak is unknown (0). */
double perf_utilisation(double flops_per_s, double peak, const char *what);

/* Every CSV row of the suite ends with the same provenance columns, so a
 * chart can say what a timing means (one wall-clock time means something only
 * with ranks x threads <= free cores on a quiet machine):
 *   cores        online cores of this machine
 *   ranks        MPI ranks of the run
 *   threads      CPU threads per rank (csv_set_threads; device_init sets it)
 *   cpu          the CPU model (commas made spaces)
 *   load_before  1-minute load average when the program started
 *   load_after   1-minute load average when the row was written
 *   run_s        seconds from the program's start to the row
 *   source       where the row's numbers come from: measured (a run here),
 *                modeled (a formula or cost model), datasheet; a header with
 *                a source column of its own keeps it (rows say it there) and
 *                gets no second one.
 * Scripts that write CSV rows themselves carry these columns over from the
 * program's rows, or write them with scripts/provenance.sh. */
#define CSV_PROVENANCE "cores,ranks,threads,cpu,load_before,load_after,run_s"

/* The header a file of the program's columns `header` has: them, then the
 * provenance columns (and source, unless header has one). Into buf. */
const char *csv_header(char *buf, size_t len, const char *header);

/* CPU threads per rank that later rows record (default 1). */
void csv_set_threads(int threads);

/* Open a CSV file for appending; writes the header (the program's columns,
 * then the provenance columns above) when the file is new or empty, and
 * refuses (usage_error) a file whose header differs. Its writes are checked
 * by out_flush and out_close (outfile.h), which end the run naming the file
 * when the disk is full. */
FILE *csv_open(const char *path, const char *header);

/* End a row: the provenance columns and the newline. source: "measured",
 * "modeled", ...; NULL for a file whose header has its own source column. */
void csv_end_row(FILE *f, const char *source);

/* Append one row (fmt and its arguments, as printf; the provenance columns,
 * source "measured", and the newline are added) to the CSV file at path,
 * opened with csv_open and closed with out_close. Only rank 0 writes (the
 * rank say() prints on); a NULL path writes nothing. A program's one summary
 * row per run, its --bench-csv. */
void csv_append_row(const char *path, const char *header, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif
#endif
