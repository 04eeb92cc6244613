/* unit_ckpt.c: checkpoint files (common/ckpt.c): round trip, and refusal of
 * every kind of damaged or foreign file; atomic save under a crash; the
 * sets of a checkpoint directory (ckpt.h: one directory per step, complete
 * once its meta.ckpt is there). */
#define UNIT_MAIN
#include "unit.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt.h"

enum { N = 1000 };

typedef struct {
    float w[N], m[N];
    int dim;
} fake_t;

static void fill(fake_t *f, int seed) {
    for (int i = 0; i < N; i++) {
        f->w[i] = (float)(seed * 1000 + i) * 0.001f;
        f->m[i] = -(float)i;
    }
}

static void describe(ckpt_t *c, fake_t *f, int dim) {
    memset(c, 0, sizeof *c);
    ckpt_config_str(c, "program", "unit");
    ckpt_config_int(c, "dim", dim);
    ckpt_config_double(c, "lr", 3e-3);
    ckpt_blob(c, "weights", f->w, sizeof f->w);
    ckpt_blob(c, "moment", f->m, sizeof f->m);
}

static void make_dir(const char *dir) {
    char err[600] = "";
    if (ckpt_make_dir(dir, err, sizeof err) != 0) UNIT_FAIL("%s", err);
}

static void temp_dir(char *out, size_t len) {
    snprintf(out, len, "/tmp/unit_ckpt_%d/a/b", (int)getpid());
    make_dir(out);
}

/* The meta.ckpt of set `step` in dir (its directory made; tmp: the set
 * while it is being written). */
static void step_path(char *out, size_t len, const char *dir, long step, int tmp) {
    char set[4200];
    ckpt_set_path(set, sizeof set, dir, step, tmp);
    make_dir(set);
    ckpt_part_path(out, len, set, -1);
}

/* Remove this process's temporary tree (every test ends with it). */
static void cleanup(void) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf /tmp/unit_ckpt_%d", (int)getpid());
    if (system(cmd) != 0) UNIT_FAIL("could not remove the temporary directory");
}

static void save_one(const char *path, int seed, long step) {
    fake_t f;
    fill(&f, seed);
    ckpt_t c;
    describe(&c, &f, 64);
    ckpt_state_u64(&c, "step", (uint64_t)step);
    ckpt_state_u64(&c, "rng", 0xfedcba9876543210ull);
    ckpt_save(&c, path);
}

/* Load path with the description of dim; returns ckpt_load's result. */
static int load(const char *path, int dim, fake_t *out, char *err, size_t len) {
    ckpt_t c;
    describe(&c, out, dim);
    int rc = ckpt_load(&c, path, err, len);
    if (rc == 0 && ckpt_get_state(&c, "rng") != 0xfedcba9876543210ull) UNIT_FAIL("state rng not restored");
    return rc;
}

static void expect_refused(const char *path, int dim, const char *needle) {
    fake_t f;
    char err[512] = "";
    int rc = load(path, dim, &f, err, sizeof err);
    printf("refusal: %s\n", err);
    if (rc == 0) UNIT_FAIL("%s was accepted; expected a refusal mentioning '%s'", path, needle);
    else if (!strstr(err, needle)) UNIT_FAIL("refusal '%s' does not mention '%s'", err, needle);
}

static void flip_byte(const char *path, long offset) {
    FILE *f = fopen(path, "r+b");
    fseek(f, offset, SEEK_SET);
    int c = fgetc(f);
    fseek(f, offset, SEEK_SET);
    fputc(c ^ 0x01, f);
    fclose(f);
}

TEST(ckpt_round_trip) {
    char dir[256], path[4400];
    temp_dir(dir, sizeof dir);
    step_path(path, sizeof path, dir, 12, 0);
    save_one(path, 3, 12);
    fake_t want, got;
    fill(&want, 3);
    memset(&got, 0, sizeof got);
    ckpt_t c;
    describe(&c, &got, 64);
    char err[512] = "";
    int rc = ckpt_load(&c, path, err, sizeof err);
    if (rc != 0) UNIT_FAIL("load failed: %s", err);
    EXPECT(memcmp(want.w, got.w, sizeof want.w) == 0);
    EXPECT(memcmp(want.m, got.m, sizeof want.m) == 0);
    EXPECT_EQ_INT(ckpt_get_state(&c, "step"), 12);
    struct stat st;
    EXPECT(stat(path, &st) == 0 && st.st_size % 64 == 0);
    char tmp[4500];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    EXPECT(access(tmp, F_OK) != 0);   /* the temporary file was renamed */
    cleanup();
}

TEST(ckpt_corrupt_byte_refused) {
    char dir[256], path[4400];
    temp_dir(dir, sizeof dir);
    step_path(path, sizeof path, dir, 1, 0);
    long where[] = {CKPT_HEADER_BYTES + 17, CKPT_HEADER_BYTES + 4000 + 64 + 5, 60, 2620};
    const char *says[] = {"checksum mismatch in 'weights'", "checksum mismatch in 'moment'",
                          "header checksum", "header checksum"};
    for (int k = 0; k < 4; k++) {
        save_one(path, 1, 1);
        flip_byte(path, where[k]);
        expect_refused(path, 64, says[k]);
    }
    cleanup();
}

TEST(ckpt_wrong_config_refused) {
    char dir[256], path[4400];
    temp_dir(dir, sizeof dir);
    step_path(path, sizeof path, dir, 1, 0);
    save_one(path, 1, 1);
    expect_refused(path, 128, "was written for dim 64, but this run has dim 128");
    /* A run that describes a setting the file lacks is refused too. */
    fake_t f;
    ckpt_t c;
    describe(&c, &f, 64);
    ckpt_config_int(&c, "heads", 4);
    char err[512] = "";
    EXPECT(ckpt_load(&c, path, err, sizeof err) != 0 && strstr(err, "has no 'heads' setting"));
    printf("refusal: %s\n", err);
    cleanup();
}

TEST(ckpt_truncated_refused) {
    char dir[256], path[4400];
    temp_dir(dir, sizeof dir);
    step_path(path, sizeof path, dir, 1, 0);
    long sizes[] = {CKPT_HEADER_BYTES + 4000 + 64 + 100, CKPT_HEADER_BYTES, 2000, 3};
    const char *says[] = {"truncated", "truncated", "truncated", "not a checkpoint"};
    for (int k = 0; k < 4; k++) {
        save_one(path, 1, 1);
        if (truncate(path, sizes[k]) != 0) UNIT_FAIL("truncate failed");
        expect_refused(path, 64, says[k]);
    }
    cleanup();
}

TEST(ckpt_foreign_file_refused) {
    char dir[256], path[4400];
    temp_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/notes.txt", dir);
    FILE *f = fopen(path, "w");
    for (int i = 0; i < 600; i++) fputs("not a checkpoint ", f);
    fclose(f);
    expect_refused(path, 64, "bad magic");
    snprintf(path, sizeof path, "%s/missing.ckpt", dir);
    expect_refused(path, 64, "cannot be opened");
    cleanup();
}

TEST(ckpt_wrong_blob_size_refused) {
    char dir[256], path[4400];
    temp_dir(dir, sizeof dir);
    step_path(path, sizeof path, dir, 1, 0);
    save_one(path, 1, 1);
    static float big[N + 1];
    fake_t f;
    ckpt_t c;
    describe(&c, &f, 64);
    c.blob[0].data = big;
    c.blob[0].bytes = sizeof big;
    char err[512] = "";
    EXPECT(ckpt_load(&c, path, err, sizeof err) != 0 && strstr(err, "this run expects"));
    printf("refusal: %s\n", err);
    cleanup();
}

/* A process killed half-way through saving a set leaves the previous set
 * intact and newest; the stale temporary set is ignored, then pruned. */
TEST(ckpt_crash_mid_save_keeps_previous) {
    char dir[256], path[4400];
    temp_dir(dir, sizeof dir);
    step_path(path, sizeof path, dir, 4, 0);
    save_one(path, 4, 4);
    pid_t pid = fork();
    if (pid == 0) {
        char p8[4400];
        step_path(p8, sizeof p8, dir, 8, 1);
        ckpt_crash_after_bytes = CKPT_HEADER_BYTES + 1000;
        save_one(p8, 8, 8);
        _exit(0);   /* not reached: the save kills the process */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    long steps[8];
    int n = ckpt_list(dir, steps, 8);
    EXPECT_EQ_INT(n, 1);
    EXPECT_EQ_INT(steps[0], 4);
    char tmp[4200];
    ckpt_set_path(tmp, sizeof tmp, dir, 8, 1);
    EXPECT(access(tmp, F_OK) == 0);
    fake_t got, want;
    fill(&want, 4);
    char err[512] = "";
    if (load(path, 64, &got, err, sizeof err) != 0) UNIT_FAIL("previous checkpoint unreadable: %s", err);
    EXPECT(memcmp(got.w, want.w, sizeof got.w) == 0);
    ckpt_prune(dir, 2);
    EXPECT(access(tmp, F_OK) != 0);
    EXPECT(access(path, F_OK) == 0);
    cleanup();
}

/* Complete sets are listed newest first; a set without meta.ckpt is not
 * one; pruning keeps the newest. */
TEST(ckpt_list_finds_complete_sets_newest_first_and_prune_keeps_two) {
    char dir[256], path[4400];
    snprintf(dir, sizeof dir, "/tmp/unit_ckpt_%d/sets", (int)getpid());
    make_dir(dir);
    long got[8];
    EXPECT_EQ_INT(ckpt_list(dir, got, 8), 0);   /* empty: none */
    long steps[] = {3, 12, 100, 7};
    for (int k = 0; k < 4; k++) {
        step_path(path, sizeof path, dir, steps[k], 0);
        save_one(path, 1, steps[k]);
    }
    char set[4200];
    ckpt_set_path(set, sizeof set, dir, 200, 0);   /* no meta.ckpt: incomplete */
    make_dir(set);
    int n = ckpt_list(dir, got, 8);
    EXPECT_EQ_INT(n, 4);
    long want[] = {100, 12, 7, 3};
    for (int k = 0; k < n && k < 4; k++) EXPECT_EQ_INT(got[k], want[k]);
    ckpt_prune(dir, 2);
    for (int k = 0; k < 4; k++) {
        step_path(path, sizeof path, dir, steps[k], 0);
        int kept = access(path, F_OK) == 0, keep = steps[k] >= 12;
        if (kept != keep) UNIT_FAIL("step %ld: kept %d, expected %d", steps[k], kept, keep);
    }
    cleanup();
}
