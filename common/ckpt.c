/* ckpt.c: checkpoint files (format and guarantees in ckpt.h). */
#define _GNU_SOURCE   /* renameat2 */
#include "ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "check.h"
#include "data.h"

size_t ckpt_crash_after_bytes = 0;

static const char magic[8] = {'D', 'T', 'R', 'N', 'C', 'K', 'P', 'T'};

typedef struct {
    char name[CKPT_NAME];
    uint64_t offset, bytes, checksum, zero;
} blob_rec_t;

typedef struct {
    char magic[8];
    uint32_t version, header_bytes;
    uint64_t file_bytes;
    uint64_t header_checksum;
    uint32_t nconfig, nstate, nblob, zero;
    ckpt_kv_t config[CKPT_MAX_CONFIG];
    ckpt_kv_t state[CKPT_MAX_STATE];
    blob_rec_t blob[CKPT_MAX_BLOB];
    char pad[CKPT_HEADER_BYTES - 3632];
} header_t;

_Static_assert(sizeof(header_t) == CKPT_HEADER_BYTES, "header is 4096 bytes");
_Static_assert(offsetof(header_t, config) == 48, "layout");
_Static_assert(offsetof(header_t, state) == 1584, "layout");
_Static_assert(offsetof(header_t, blob) == 2608, "layout");

/* ---- describing a checkpoint --------------------------------------------- */

static void put_kv(ckpt_kv_t *list, int *n, int max, const char *what,
                   const char *name, const char *value) {
    if (strlen(name) >= CKPT_NAME || strlen(value) >= CKPT_NAME)
        die("checkpoint %s '%s' = '%s' is longer than %d characters", what, name, value, CKPT_NAME - 1);
    int i = 0;
    while (i < *n && strcmp(list[i].name, name) != 0) i++;
    if (i == *n) {
        if (*n == max) die("too many checkpoint %s fields (at most %d)", what, max);
        (*n)++;
    }
    memset(&list[i], 0, sizeof list[i]);
    strcpy(list[i].name, name);
    strcpy(list[i].value, value);
}

void ckpt_config_str(ckpt_t *c, const char *name, const char *v) {
    put_kv(c->config, &c->nconfig, CKPT_MAX_CONFIG, "config", name, v);
}

void ckpt_config_int(ckpt_t *c, const char *name, long long v) {
    char s[CKPT_NAME];
    snprintf(s, sizeof s, "%lld", v);
    ckpt_config_str(c, name, s);
}

void ckpt_config_double(ckpt_t *c, const char *name, double v) {
    char s[CKPT_NAME];
    snprintf(s, sizeof s, "%.17g", v);
    ckpt_config_str(c, name, s);
}

void ckpt_state_u64(ckpt_t *c, const char *name, uint64_t v) {
    char s[CKPT_NAME];
    snprintf(s, sizeof s, "%" PRIu64, v);
    put_kv(c->state, &c->nstate, CKPT_MAX_STATE, "state", name, s);
}

void ckpt_blob(ckpt_t *c, const char *name, void *data, size_t bytes) {
    if (strlen(name) >= CKPT_NAME) die("checkpoint blob name '%s' is too long", name);
    if (c->nblob == CKPT_MAX_BLOB) die("too many checkpoint blobs (at most %d)", CKPT_MAX_BLOB);
    ckpt_blob_t *b = &c->blob[c->nblob++];
    memset(b->name, 0, sizeof b->name);
    strcpy(b->name, name);
    b->data = data;
    b->bytes = bytes;
}

uint64_t ckpt_get_state(const ckpt_t *c, const char *name) {
    for (int i = 0; i < c->nstate; i++)
        if (strcmp(c->state[i].name, name) == 0) return strtoull(c->state[i].value, NULL, 10);
    die("checkpoint has no state field '%s'", name);
}

/* ---- saving --------------------------------------------------------------- */

static size_t written;   /* bytes of the current temporary file, for the crash hook */

static void write_all(int fd, const void *p, size_t n, const char *path) {
    const char *b = p;
    while (n > 0) {
        size_t chunk = n < (64u << 20) ? n : (64u << 20);
        if (ckpt_crash_after_bytes > 0 && written + chunk > ckpt_crash_after_bytes) {
            chunk = ckpt_crash_after_bytes > written ? ckpt_crash_after_bytes - written : 0;
            if (chunk) { ssize_t r = write(fd, b, chunk); (void)r; }
            raise(SIGKILL);   /* a crash in mid-save: PATH.tmp is left half written */
        }
        ssize_t w = write(fd, b, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die("writing checkpoint %s: %s", path, strerror(errno));
        b += w;
        n -= (size_t)w;
        written += (size_t)w;
    }
}

static uint64_t align64(uint64_t x) { return (x + 63) & ~(uint64_t)63; }

void ckpt_save(const ckpt_t *c, const char *path) {
    header_t *h = xcalloc(1, sizeof *h);
    memcpy(h->magic, magic, 8);
    h->version = CKPT_VERSION;
    h->header_bytes = CKPT_HEADER_BYTES;
    h->nconfig = (uint32_t)c->nconfig;
    h->nstate = (uint32_t)c->nstate;
    h->nblob = (uint32_t)c->nblob;
    memcpy(h->config, c->config, sizeof h->config);
    memcpy(h->state, c->state, sizeof h->state);
    uint64_t off = CKPT_HEADER_BYTES;
    for (int i = 0; i < c->nblob; i++) {
        memcpy(h->blob[i].name, c->blob[i].name, CKPT_NAME);
        h->blob[i].offset = off;
        h->blob[i].bytes = c->blob[i].bytes;
        h->blob[i].checksum = hash_bytes(c->blob[i].data, c->blob[i].bytes, HASH_SEED);
        off = align64(off + c->blob[i].bytes);
    }
    h->file_bytes = off;
    h->header_checksum = hash_bytes(h, sizeof *h, HASH_SEED);

    char tmp[4096 + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) die("cannot create checkpoint %s: %s", tmp, strerror(errno));
    written = 0;
    write_all(fd, h, sizeof *h, tmp);
    static const char zeros[64];
    for (int i = 0; i < c->nblob; i++) {
        write_all(fd, c->blob[i].data, c->blob[i].bytes, tmp);
        uint64_t end = h->blob[i].offset + h->blob[i].bytes;
        write_all(fd, zeros, align64(end) - end, tmp);
    }
    /* Data on disk before the name points at it: fsync, then rename, then
     * fsync the directory so the rename itself survives a power cut. */
    if (fsync(fd) != 0) die("fsync of checkpoint %s: %s", tmp, strerror(errno));
    if (close(fd) != 0) die("closing checkpoint %s: %s", tmp, strerror(errno));
    if (rename(tmp, path) != 0) die("renaming %s to %s: %s", tmp, path, strerror(errno));
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0; else strcpy(dir, ".");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    free(h);
}

/* ---- loading -------------------------------------------------------------- */

static int fail(char *err, size_t len, const char *path, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(err, len, "checkpoint %s %s", path, msg);
    return CKPT_DAMAGED;
}

static int read_at(int fd, void *p, size_t n, uint64_t off) {
    char *b = p;
    while (n > 0) {
        ssize_t r = pread(fd, b, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        b += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

static const ckpt_kv_t *find_kv(const ckpt_kv_t *list, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strncmp(list[i].name, name, CKPT_NAME) == 0) return &list[i];
    return NULL;
}

static int load_checked(ckpt_t *c, const char *path, int fd, header_t *h, char *err, size_t len) {
    struct stat st;
    if (fstat(fd, &st) != 0) return fail(err, len, path, "cannot be read: %s", strerror(errno));
    uint64_t size = (uint64_t)st.st_size;
    if (size < 8 || read_at(fd, h->magic, 8, 0) != 0 || memcmp(h->magic, magic, 8) != 0)
        return fail(err, len, path, "is not a checkpoint file (bad magic number)");
    if (size < CKPT_HEADER_BYTES)
        return fail(err, len, path, "is truncated: %" PRIu64 " bytes, shorter than its %d-byte header",
                    size, CKPT_HEADER_BYTES);
    if (read_at(fd, h, sizeof *h, 0) != 0) return fail(err, len, path, "cannot be read: %s", strerror(errno));
    if (h->version != CKPT_VERSION)
        return fail(err, len, path, "has format version %u; this program reads version %d",
                    h->version, CKPT_VERSION);
    uint64_t want = h->header_checksum;
    h->header_checksum = 0;
    if (hash_bytes(h, sizeof *h, HASH_SEED) != want)
        return fail(err, len, path, "is corrupt: header checksum mismatch");
    if (size != h->file_bytes)
        return fail(err, len, path, "is %s: %" PRIu64 " bytes, its header says %" PRIu64,
                    size < h->file_bytes ? "truncated" : "damaged", size, h->file_bytes);
    if (h->nconfig > CKPT_MAX_CONFIG || h->nstate > CKPT_MAX_STATE || h->nblob > CKPT_MAX_BLOB)
        return fail(err, len, path, "is corrupt: impossible field counts");

    /* The configuration must match field for field. */
    for (int i = 0; i < c->nconfig; i++) {
        const ckpt_kv_t *f = find_kv(h->config, (int)h->nconfig, c->config[i].name);
        if (!f)
            return fail(err, len, path, "has no '%s' setting; it was written by another program or version",
                        c->config[i].name), CKPT_MISMATCH;
        if (strncmp(f->value, c->config[i].value, CKPT_NAME) != 0)
            return fail(err, len, path, "was written for %s %.32s, but this run has %s %s",
                        c->config[i].name, f->value, c->config[i].name, c->config[i].value), CKPT_MISMATCH;
    }
    for (uint32_t i = 0; i < h->nconfig; i++)
        if (!find_kv(c->config, c->nconfig, h->config[i].name))
            return fail(err, len, path, "has a setting '%.32s' this run does not know",
                        h->config[i].name), CKPT_MISMATCH;

    for (int i = 0; i < c->nblob; i++) {
        const blob_rec_t *r = NULL;
        for (uint32_t j = 0; j < h->nblob; j++)
            if (strncmp(h->blob[j].name, c->blob[i].name, CKPT_NAME) == 0) r = &h->blob[j];
        if (!r) return fail(err, len, path, "has no '%s' data", c->blob[i].name), CKPT_MISMATCH;
        if (r->bytes != c->blob[i].bytes)
            return fail(err, len, path, "holds %" PRIu64 " bytes of '%s', this run expects %zu",
                        r->bytes, c->blob[i].name, c->blob[i].bytes), CKPT_MISMATCH;
        if (r->offset < CKPT_HEADER_BYTES || r->offset + r->bytes > size)
            return fail(err, len, path, "is corrupt: '%s' lies outside the file", c->blob[i].name);
        if (read_at(fd, c->blob[i].data, r->bytes, r->offset) != 0)
            return fail(err, len, path, "cannot be read: %s", strerror(errno));
        if (hash_bytes(c->blob[i].data, r->bytes, HASH_SEED) != r->checksum)
            return fail(err, len, path, "is corrupt: checksum mismatch in '%s'", c->blob[i].name);
    }
    c->nstate = (int)h->nstate;
    memcpy(c->state, h->state, sizeof c->state);
    for (int i = 0; i < c->nstate; i++) {
        c->state[i].name[CKPT_NAME - 1] = 0;
        c->state[i].value[CKPT_NAME - 1] = 0;
    }
    return 0;
}

int ckpt_load(ckpt_t *c, const char *path, char *err, size_t len) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return fail(err, len, path, "cannot be opened: %s", strerror(errno));
    header_t *h = xcalloc(1, sizeof *h);
    int rc = load_checked(c, path, fd, h, err, len);
    free(h);
    close(fd);
    return rc;
}

/* ---- checkpoint sets -------------------------------------------------------------- */

void ckpt_set_path(char *out, size_t len, const char *dir, long step, int tmp) {
    snprintf(out, len, "%s/step_%08ld%s", dir, step, tmp ? ".tmp" : "");
}

void ckpt_part_path(char *out, size_t len, const char *set, int rank) {
    if (rank < 0) snprintf(out, len, "%s/meta.ckpt", set);
    else snprintf(out, len, "%s/part_%05d.ckpt", set, rank);
}

/* The step of a set's name "step_%08ld" (tmp: with ".tmp"), or -1. */
static long name_step(const char *name, int tmp) {
    long step;
    int used = 0;
    if (sscanf(name, "step_%8ld%n", &step, &used) != 1 || used != 13) return -1;
    return strcmp(name + used, tmp ? ".tmp" : "") == 0 ? step : -1;
}

static int cmp_desc(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The steps of the complete sets (tmp 0: meta.ckpt present) or of the .tmp
 * ones (tmp 1), newest first. */
static int list_sets(const char *dir, long *steps, int max, int tmp) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    char set[4200], meta[4300];
    while ((e = readdir(d)) != NULL && n < max) {
        long s = name_step(e->d_name, tmp);
        if (s < 0) continue;
        ckpt_set_path(set, sizeof set, dir, s, tmp);
        ckpt_part_path(meta, sizeof meta, set, -1);
        if (tmp || access(meta, F_OK) == 0) steps[n++] = s;
    }
    closedir(d);
    qsort(steps, (size_t)n, sizeof *steps, cmp_desc);
    return n;
}

int ckpt_list(const char *dir, long *steps, int max) { return list_sets(dir, steps, max, 0); }

int ckpt_list_tmp(const char *dir, long *steps, int max) { return list_sets(dir, steps, max, 1); }

int ckpt_is_set(const char *dir) {
    char meta[4300];
    ckpt_part_path(meta, sizeof meta, dir, -1);
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    return access(meta, F_OK) == 0 || name_step(base, 0) >= 0 || name_step(base, 1) >= 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *f) {
    (void)st; (void)f;
    if (flag == FTW_DP) rmdir(path);
    else unlink(path);
    return 0;
}

int ckpt_remove_set(const char *set) {
    /* Whatever is in it (a damaged set may hold a directory where a file
     * belongs), never following a link out of it. */
    nftw(set, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return access(set, F_OK) == 0 ? -1 : 0;
}

int ckpt_set_aside(const char *dir, long step, char *out, size_t len) {
    char set[4200];
    ckpt_set_path(set, sizeof set, dir, step, 0);
    for (int k = 0; k < 1000; k++) {
        if (k == 0) snprintf(out, len, "%s.damaged", set);
        else snprintf(out, len, "%s.damaged.%d", set, k);
        if (access(out, F_OK) == 0) continue;
        if (rename(set, out) == 0) return 0;
        break;
    }
    int e = errno;
    snprintf(out, len, "%s", strerror(e));
    return -1;
}

void ckpt_commit_set(const char *tmp, const char *set) {
    /* A set of this step already there (an older save of it) is swapped
     * with the new one in one step, so that some complete set of this step
     * exists at every moment; only then is the old one removed. File
     * systems without the swap (NFS) remove the old one first. */
    if (access(set, F_OK) == 0) {
        if (renameat2(AT_FDCWD, tmp, AT_FDCWD, set, RENAME_EXCHANGE) == 0) {
            if (ckpt_remove_set(tmp) != 0) die("cannot remove %s (the older save of this step)", tmp);
            return;
        }
        if (ckpt_remove_set(set) != 0) die("cannot remove %s (an older save of this step)", set);
    }
    if (rename(tmp, set) != 0) die("renaming %s to %s: %s", tmp, set, strerror(errno));
}

void ckpt_remove_tmp(const char *dir) {
    long steps[4096];
    int n = ckpt_list_tmp(dir, steps, 4096);
    char set[4200];
    for (int i = 0; i < n; i++) {
        ckpt_set_path(set, sizeof set, dir, steps[i], 1);
        ckpt_remove_set(set);
    }
}

void ckpt_remove_after(const char *dir, long step) {
    long steps[4096];
    int n = ckpt_list(dir, steps, 4096);
    char set[4200];
    for (int i = 0; i < n && steps[i] > step; i++) {
        ckpt_set_path(set, sizeof set, dir, steps[i], 0);
        ckpt_remove_set(set);
    }
}

void ckpt_prune(const char *dir, int keep) {
    long steps[4096];
    int n = ckpt_list(dir, steps, 4096);
    char set[4200];
    for (int i = keep; i < n; i++) {
        ckpt_set_path(set, sizeof set, dir, steps[i], 0);
        ckpt_remove_set(set);
    }
    ckpt_remove_tmp(dir);
}

int ckpt_make_dir(const char *dir, char *err, size_t len) {
    char p[4096], made[64][4096];
    int nmade = 0;
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; ; s++) {
        if (*s == '/' || *s == 0) {
            char save = *s;
            *s = 0;
            if (mkdir(p, 0755) == 0) {
                if (nmade < 64) snprintf(made[nmade++], sizeof made[0], "%s", p);
            } else if (errno != EEXIST) {
                snprintf(err, len, "cannot create checkpoint directory %s: %s", p, strerror(errno));
                while (nmade > 0) rmdir(made[--nmade]);   /* leave no trail behind */
                return -1;
            } else {
                struct stat st;
                if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
                    snprintf(err, len, "cannot create checkpoint directory %s: a file of that name is in the way", p);
                    while (nmade > 0) rmdir(made[--nmade]);
                    return -1;
                }
            }
            *s = save;
            if (save == 0) break;
        }
    }
    if (access(dir, W_OK) != 0) {
        snprintf(err, len, "checkpoint directory %s is not writable: %s", dir, strerror(errno));
        while (nmade > 0) rmdir(made[--nmade]);
        return -1;
    }
    return 0;
}

int ckpt_lock(const char *dir, const char *who, char *holder, size_t len) {
    char path[4200];
    snprintf(path, sizeof path, "%s/LOCK", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(holder, len, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        char buf[256] = "";
        ssize_t r = pread(fd, buf, sizeof buf - 1, 0);
        buf[r > 0 ? r : 0] = 0;
        buf[strcspn(buf, "\n")] = 0;
        snprintf(holder, len, "%s", *buf ? buf : "another process");
        close(fd);
        return -1;
    }
    if (ftruncate(fd, 0) == 0 && pwrite(fd, who, strlen(who), 0) < 0) {}
    return 0;   /* fd stays open: the lock lives as long as the process */
}

long long ckpt_free_bytes(const char *dir) {
    struct statvfs v;
    if (statvfs(dir, &v) != 0) return -1;
    return (long long)v.f_bavail * (long long)v.f_frsize;
}
