/* args.h: command-line flags with --help, defaults and validation.
 *
 * A program lists its flags in a table; each entry points at the variable
 * that holds the default and receives the value:
 *
 *   int steps = 20; const char *csv = NULL;
 *   arg_t flags[] = {
 *       {"steps", ARG_INT, &steps, "optimizer steps", .min = 1, .max = 1e9},
 *       {"csv", ARG_STRING, &csv, "append result rows to this CSV file"},
 *   };
 *   args_parse(argc, argv, "ddp", "Distributed data parallel training.", flags, ARRAY_LEN(flags));
 *
 * Flags are written --name VALUE or --name=VALUE; ARG_FLAG takes no value.
 * --help prints every flag with its default and exits 0. A bad flag or value
 * is one line on stderr ("error: ...") and exit status 2, on every rank. Call
 * after dist_init so only rank 0 speaks. */
#ifndef ARGS_H
#define ARGS_H

#include <mpi.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARRAY_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

typedef enum {
    ARG_INT,     /* int */
    ARG_DOUBLE,  /* double */
    ARG_STRING,  /* const char * */
    ARG_FLAG,    /* int, set to 1 when present */
    ARG_CHOICE,  /* const char *, one of .choices ("auto|cpu|cuda") */
    ARG_BYTES,   /* size_t, with an optional K, M or G suffix (powers of 1024) */
} arg_type;

typedef struct {
    const char *name;     /* without the leading dashes */
    arg_type type;
    void *dst;
    const char *help;
    const char *choices;  /* ARG_CHOICE only */
    double min, max;      /* numeric range checked when min < max */
} arg_t;

void args_parse(int argc, char **argv, const char *prog, const char *about,
                const arg_t *args, int n);

/* Whether args_parse found the flag whose value lives at dst on the command
 * line (not left at its default): a flag that does nothing in a combination
 * is refused only when it was given. */
int args_given(const void *dst);

/* Parse one value into a->dst as args_parse does (its type, its range, the
 * same one-line error naming --NAME): for values inside another flag's
 * text, such as the planner's --eval tp=8,pp=2. */
void args_set(const arg_t *a, const char *value);

/* Parse "a,b,c" (each >= 1, K/M/G suffixes allowed) into out; returns the
 * count. A bad list is a usage error naming flag. */
int args_size_list(const char *s, long *out, int max, const char *flag);

/* Check, before any work, that rank 0 can write the output file `path` of
 * --flag (NULL: nothing to check): its folder exists and is writable, and
 * for a CSV file (header: its columns, csv_header adds the provenance;
 * not NULL) that an existing file has the same
 * columns. Rank 0 checks, every rank of `comm` learns the result, and a
 * failure is one usage_error line on every rank, so no rank is left waiting
 * in a collective. A file the check creates is removed again. */
void args_check_output(MPI_Comm comm, const char *flag, const char *path, const char *header);

/* The flags every program shares. */
typedef struct {
    const char *device;   /* auto|cpu|cuda */
    const char *comm;     /* auto|mpi|nccl */
    const char *csv;      /* NULL: no CSV */
    int threads;          /* 0: cores per node / ranks per node */
    int seed;
} common_args_t;

#define COMMON_ARGS_DEFAULT {"auto", "auto", NULL, 0, 1234}
#define COMMON_ARGS(c)                                                          \
    {"device", ARG_CHOICE, &(c).device, "where to compute", "auto|cpu|cuda", 0, 0}, \
    {"comm", ARG_CHOICE, &(c).comm, "collective backend", "auto|mpi|nccl", 0, 0},   \
    {"csv", ARG_STRING, &(c).csv, "append result rows to this CSV file", NULL, 0, 0}, \
    {"threads", ARG_INT, &(c).threads, "CPU threads per rank (0: cores per node / ranks per node)", NULL, 0, 4096}, \
    {"seed", ARG_INT, &(c).seed, "random seed", NULL, 0, 2147483647.0}

#ifdef __cplusplus
}
#endif
#endif
