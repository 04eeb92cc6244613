/* ckpt.h: checkpoint files, saved atomically and refused when corrupt.
 *
 * A checkpoint holds named blobs (weights, optimizer moments, ...) and two
 * lists of name = value text pairs:
 *   config  what the run must match to resume (model shape, dtype, global
 *           batch, seed, data, schedule); a difference is refused, naming the
 *           first field that differs;
 *   state   what the run restores (step, data position, RNG state).
 *
 * File layout (little-endian, version 1):
 *   0     char magic[8] = "DTRNCKPT"
 *   8     u32 version, u32 header_bytes (= 4096)
 *   16    u64 file_bytes (the whole file; a shorter file is truncated)
 *   24    u64 header_checksum (hash_bytes of the 4096-byte header with this
 *         field zero)
 *   32    u32 nconfig, nstate, nblob, 0
 *   48    config[24]: {char name[32]; char value[32]}
 *   1584  state[16]:  {char name[32]; char value[32]}
 *   2608  blob[16]:   {char name[32]; u64 offset, bytes, checksum, 0}
 *   3632  zero padding to 4096
 *   4096  the blobs, each at a 64-byte aligned offset, checksummed with
 *         hash_bytes (data.h)
 *
 * Saving is atomic: write PATH.tmp, fsync it, rename it over PATH, fsync the
 * directory. A crash at any moment leaves either the old file or the new one
 * complete under PATH (and maybe a stale PATH.tmp, which nothing reads).
 *
 * Trainers save a SET of such files per step, one per rank that holds state
 * of its own (below). */
#ifndef CKPT_H
#define CKPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { CKPT_VERSION = 1, CKPT_HEADER_BYTES = 4096, CKPT_MAX_CONFIG = 24,
       CKPT_MAX_STATE = 16, CKPT_MAX_BLOB = 16, CKPT_NAME = 32 };

typedef struct { char name[CKPT_NAME]; char value[CKPT_NAME]; } ckpt_kv_t;

typedef struct {
    char name[CKPT_NAME];
    void *data;      /* saved from / loaded into (host memory) */
    size_t bytes;    /* expected size on load */
} ckpt_blob_t;

typedef struct {
    int nconfig, nstate, nblob;
    ckpt_kv_t config[CKPT_MAX_CONFIG];
    ckpt_kv_t state[CKPT_MAX_STATE];
    ckpt_blob_t blob[CKPT_MAX_BLOB];
} ckpt_t;

/* Describe a checkpoint: the same calls before saving and before loading. */
void ckpt_config_int(ckpt_t *c, const char *name, long long v);
void ckpt_config_double(ckpt_t *c, const char *name, double v);   /* exact (%.17g) */
void ckpt_config_str(ckpt_t *c, const char *name, const char *v);
void ckpt_state_u64(ckpt_t *c, const char *name, uint64_t v);
void ckpt_blob(ckpt_t *c, const char *name, void *data, size_t bytes);

/* After a successful load: a state value (dies if the name is missing). */
uint64_t ckpt_get_state(const ckpt_t *c, const char *name);

/* Write c to path atomically (see above). Dies on I/O errors. */
void ckpt_save(const ckpt_t *c, const char *path);

/* Read path, verify it and fill c's blobs and state. Returns CKPT_OK, or
 * with a one-line reason in err: CKPT_MISMATCH when the file is sound but
 * was written by another configuration (a setting differs, a blob has
 * another size), CKPT_DAMAGED for anything else (magic, version, size,
 * header and blob checksums). Nothing is trusted before every check passed;
 * blob memory may hold partial data after a failure. */
enum { CKPT_OK = 0, CKPT_DAMAGED = -1, CKPT_MISMATCH = -2 };
int ckpt_load(ckpt_t *c, const char *path, char *err, size_t errlen);

/* ---- checkpoint sets: one directory per step ---------------------------------
 * DIR/step_00000012/ holds a part file per rank that has state of its own
 * (part_00003.ckpt, by world rank), a compressor state file per rank when
 * the gradients are compressed (compress_00003.ckpt, train.h) and
 * meta.ckpt, written last by rank 0. The
 * set is assembled in DIR/step_00000012.tmp/ and renamed into place once
 * every part is on disk, so a crash at any moment leaves a complete step
 * directory or a .tmp one, which nothing reads. */
void ckpt_set_path(char *out, size_t len, const char *dir, long step, int tmp);
/* "SET/part_00003.ckpt" for rank >= 0, "SET/meta.ckpt" for rank -1. */
void ckpt_part_path(char *out, size_t len, const char *set, int rank);
/* The steps of the complete sets in dir (meta.ckpt present), newest first;
 * returns how many (at most max). */
int ckpt_list(const char *dir, long *steps, int max);
/* The steps of the incomplete sets in dir (step_N.tmp: saves that never
 * finished), newest first; returns how many (at most max). */
int ckpt_list_tmp(const char *dir, long *steps, int max);
/* Whether dir is itself one set (named step_N, or holding meta.ckpt): a
 * checkpoint directory given one level too deep. */
int ckpt_is_set(const char *dir);
/* Remove every complete set of a step after `step`: the sets of a run that
 * this one replaced (a fresh run in the same directory, or a resume that
 * fell back past damaged sets). Otherwise pruning, which keeps the newest
 * steps, would keep those and remove this run's own. */
void ckpt_remove_after(const char *dir, long step);
/* Remove every .tmp set. */
void ckpt_remove_tmp(const char *dir);
/* Remove every set but the newest `keep`, and every .tmp set. Only after a
 * new set is complete: a save never removes the last complete set first. */
void ckpt_prune(const char *dir, int keep);
/* mkdir -p. On failure removes the directories it created, fills err and
 * returns -1. */
int ckpt_make_dir(const char *dir, char *err, size_t errlen);
/* Remove a set's directory and everything in it. Returns 0, or -1 when
 * something could not be removed. */
int ckpt_remove_set(const char *set);
/* Move the damaged set of `step` aside, out of every listing: rename it to
 * step_N.damaged (.damaged.1, ... when that name is taken), which nothing
 * reads or removes. Returns 0 with the new name in out, or -1 with the
 * reason. */
int ckpt_set_aside(const char *dir, long step, char *out, size_t len);
/* Give the complete set assembled in tmp its final name set, replacing an
 * older save of the same step (swapped atomically where the file system
 * can, so that this step's set never goes missing). Dies on failure. */
void ckpt_commit_set(const char *tmp, const char *set);
/* Take the lock of a checkpoint directory for this process's lifetime (an
 * flock on DIR/LOCK, released when the process ends however it ends). `who`
 * is written into the file. Returns 0, or -1 with the holder's description
 * (or the reason) in holder. */
int ckpt_lock(const char *dir, const char *who, char *holder, size_t len);
/* Bytes free for this user in the file system of dir (-1 when unknown). */
long long ckpt_free_bytes(const char *dir);

/* Testing: when > 0, ckpt_save kills its own process (SIGKILL) after writing
 * this many bytes of the temporary file, as a crash in mid-save would. */
extern size_t ckpt_crash_after_bytes;

#ifdef __cplusplus
}
#endif
#endif
