/* compressed.h: the compressed all-reduce benchmark (compressed.c). */
#ifndef COMPRESSED_H
#define COMPRESSED_H

#include <stdio.h>

#include "compress.h"

#define COMPRESSED_CSV_HEADER "compress,ranks,bytes,count,sent_bytes,formula_bytes,time_us,algbw_gbs," \
                              "busbw_gbs,err_one,err_mean_no_ef,err_mean_ef"
/* "all" for --compress: the baseline and one of each. */
#define COMPRESS_ALL "none,int8,sign,topk:0.01,powersgd:4"

/* list: comma-separated specs (compress_parse), each run on every size
 * (counts: fp32 values) for iters calls without and with error feedback;
 * a table, and CSV rows when csv is open. Returns the rows whose bytes sent
 * differ from the formula. */
int compressed_sweep(comm_t *cm, const char *list, const size_t *counts, int nsizes, int iters,
                     FILE *csv, const char *csv_path);

#endif
