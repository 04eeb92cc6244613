/* args.c: flag parsing for every program (see args.h). */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "perf.h"

static const char *type_hint(const arg_t *a) {
    switch (a->type) {
    case ARG_INT: return "N";
    case ARG_DOUBLE: return "X";
    case ARG_STRING: return "S";
    case ARG_FLAG: return "";
    case ARG_CHOICE: return a->choices;
    case ARG_BYTES: return "BYTES";
    }
    return "";
}

static void print_default(const arg_t *a) {
    switch (a->type) {
    case ARG_INT: printf(" (default %d)", *(int *)a->dst); break;
    case ARG_DOUBLE: printf(" (default %g)", *(double *)a->dst); break;
    case ARG_STRING:
    case ARG_CHOICE: {
        const char *s = *(const char **)a->dst;
        if (s) printf(" (default %s)", s);
        break;
    }
    case ARG_FLAG: break;
    case ARG_BYTES: printf(" (default %zu)", *(size_t *)a->dst); break;
    }
}

static void help(const char *prog, const char *about, const arg_t *args, int n) {
    if (check_rank == 0) {
        printf("usage: [mpirun -np N] %s [flags]\n\n%s\n\nflags:\n", prog, about);
        for (int i = 0; i < n; i++) {
            char left[96];
            snprintf(left, sizeof left, "--%s %s", args[i].name, type_hint(&args[i]));
            printf("  %-28s %s", left, args[i].help);
            print_default(&args[i]);
            printf("\n");
        }
        printf("  %-28s %s\n", "--help", "print this help and exit");
        fflush(stdout);
    }
    usage_exit_ok();
}

/* Parses a number with an optional K/M/G suffix; 0 on success. */
static int parse_scaled(const char *s, double *out) {
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno != 0) return -1;
    double scale = 1;
    if (*end == 'K' || *end == 'k') { scale = 1024.0; end++; }
    else if (*end == 'M' || *end == 'm') { scale = 1024.0 * 1024; end++; }
    else if (*end == 'G' || *end == 'g') { scale = 1024.0 * 1024 * 1024; end++; }
    if (*end != 0) return -1;
    *out = v * scale;
    return 0;
}

static void check_range(const arg_t *a, double v, const char *text) {
    if (a->min < a->max && (v < a->min || v > a->max))
        usage_error("--%s must be between %g and %g, got %s", a->name, a->min, a->max, text);
}

static void set_value(const arg_t *a, const char *v) {
    char *end = NULL;
    switch (a->type) {
    case ARG_INT: {
        errno = 0;
        long x = strtol(v, &end, 10);
        if (end == v || *end != 0 || errno != 0 || x < -2147483647L || x > 2147483647L)
            usage_error("--%s expects an integer, got '%s'", a->name, v);
        check_range(a, (double)x, v);
        *(int *)a->dst = (int)x;
        break;
    }
    case ARG_DOUBLE: {
        errno = 0;
        double x = strtod(v, &end);
        if (end == v || *end != 0 || errno != 0 || !isfinite(x))
            usage_error("--%s expects a number, got '%s'", a->name, v);
        check_range(a, x, v);
        *(double *)a->dst = x;
        break;
    }
    case ARG_STRING:
        if (*v == 0) usage_error("--%s expects a value, got an empty string", a->name);
        *(const char **)a->dst = v;
        break;
    case ARG_CHOICE: {
        size_t len = strlen(v);
        const char *c = a->choices;
        while (c && *c) {
            const char *bar = strchr(c, '|');
            size_t clen = bar ? (size_t)(bar - c) : strlen(c);
            if (clen == len && strncmp(c, v, len) == 0) {
                *(const char **)a->dst = v;
                return;
            }
            c = bar ? bar + 1 : NULL;
        }
        usage_error("--%s must be one of %s, got '%s'", a->name, a->choices, v);
    }
    case ARG_BYTES: {
        double x;
        if (parse_scaled(v, &x) != 0 || x < 0 || x != floor(x))
            usage_error("--%s expects a byte count like 4096, 64K or 1G, got '%s'", a->name, v);
        check_range(a, x, v);
        *(size_t *)a->dst = (size_t)x;
        break;
    }
    case ARG_FLAG:
        break;
    }
}

static const void *given[256];   /* the dst of every flag args_parse found */
static int ngiven;

int args_given(const void *dst) {
    for (int i = 0; i < ngiven; i++)
        if (given[i] == dst) return 1;
    return 0;
}

void args_parse(int argc, char **argv, const char *prog, const char *about,
                const arg_t *args, int n) {
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) help(prog, about, args, n);
        if (strncmp(s, "--", 2) != 0)
            usage_error("unexpected argument '%s' (flags start with --; see --help)", s);
        const char *name = s + 2;
        const char *eq = strchr(name, '=');
        size_t nlen = eq ? (size_t)(eq - name) : strlen(name);
        const arg_t *a = NULL;
        for (int j = 0; j < n; j++)
            if (strlen(args[j].name) == nlen && strncmp(args[j].name, name, nlen) == 0) a = &args[j];
        if (!a) usage_error("unknown flag --%.*s (see --help)", (int)nlen, name);
        if (ngiven < ARRAY_LEN(given)) given[ngiven++] = a->dst;
        if (a->type == ARG_FLAG) {
            if (eq) usage_error("--%s takes no value", a->name);
            *(int *)a->dst = 1;
            continue;
        }
        const char *v = eq ? eq + 1 : NULL;
        if (!v) {
            if (i + 1 >= argc) usage_error("--%s needs a value (see --help)", a->name);
            v = argv[++i];
        }
        set_value(a, v);
    }
}

int args_size_list(const char *s, long *out, int max, const char *flag) {
    int count = 0;
    const char *p = s;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char item[64];
        double v;
        if (len == 0 || len >= sizeof item) usage_error("--%s: bad list '%s'", flag, s);
        memcpy(item, p, len);
        item[len] = 0;
        if (parse_scaled(item, &v) != 0 || v < 1 || v != floor(v) || v > 1e15)
            usage_error("--%s expects positive integers separated by commas, got '%s'", flag, s);
        if (count == max) usage_error("--%s: at most %d values", flag, max);
        out[count++] = (long)v;
        p = comma ? comma + 1 : p + len;
    }
    if (count == 0) usage_error("--%s: empty list", flag);
    return count;
}

void args_check_output(MPI_Comm comm, const char *flag, const char *path, const char *header) {
    if (!path) return;
    char err[600] = "";
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0) {
        struct stat st;
        int existed = stat(path, &st) == 0;
        FILE *f = existed && S_ISDIR(st.st_mode) ? NULL : fopen(path, "a+");
        if (!f) {
            snprintf(err, sizeof err, "--%s %s: cannot write there: %s", flag, path,
                     existed && S_ISDIR(st.st_mode) ? "it is a directory" : strerror(errno));
        } else {
            char first[1024] = "", full[1024];
            rewind(f);
            if (header && existed && fgets(first, sizeof first, f)) {
                first[strcspn(first, "\r\n")] = 0;
                if (strcmp(first, csv_header(full, sizeof full, header)) != 0)
                    snprintf(err, sizeof err, "--%s %s has other columns (%.60s...); use a new file",
                             flag, path, first);
            }
            fclose(f);
            if (!existed) unlink(path);
        }
    }
    MPI_Bcast(err, sizeof err, MPI_CHAR, 0, comm);
    if (*err) usage_error("%s", err);
}

void args_set(const arg_t *a, const char *value) { set_value(a, value); }
