/* saver.c: synchronous and asynchronous checkpoint sets (saver.h). */
#include "saver.h"

#include <dirent.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "check.h"

void saver_init(saver_t *s, int async) {
    memset(s, 0, sizeof *s);
    s->async = async;
}

/* Complete part files in the set's directory (part_NNNNN.ckpt; a .tmp one
 * is still being written). */
static int parts_on_disk(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0, r, used;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (sscanf(e->d_name, "part_%5d.ckpt%n", &r, &used) == 1 && e->d_name[used] == 0) n++;
    closedir(d);
    return n;
}

/* The writer thread: this rank's part; on rank 0, then the commit once every
 * part is on disk. No MPI. */
static void *writer(void *arg) {
    saver_t *s = arg;
    train_t *tr = s->tr;
    s->write_t0 = now_s();
    train_ckpt_write(tr, &s->set);
    s->write_t1 = now_s();
    if (tr->dist.rank == 0) {
        const struct timespec ms = {0, 1000000};
        while (parts_on_disk(s->set.tmp) < s->set.parts) nanosleep(&ms, NULL);
        train_ckpt_commit(tr, &s->set);
    }
    s->commit_t1 = now_s();
    __atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* Wait for the save in flight (its writer thread) and count it. */
static void finish_pending(saver_t *s) {
    if (!s->pending) return;
    if (s->thread) {
        watch_begin("the background checkpoint writer", NULL, NULL, 0);
        pthread_join(s->writer, NULL);
        watch_end();
    }
    s->latency_s += s->commit_t1 - s->set.t0;
    s->write_s += s->write_t1 - s->write_t0;
    s->pending = s->thread = 0;
    s->saved++;
}

void saver_step(saver_t *s, train_t *tr, long step, int due) {
    double t0 = now_s();
    int sync = 0;
    if (s->last_end > 0 && step > tr->start + 1) {   /* the step before this hook; the first warms up */
        double dt = t0 - s->last_end;
        if (s->pending) { s->busy_s += dt; s->busy_n++; }
        else { s->idle_s += dt; s->idle_n++; }
    }
    if (s->pending && __atomic_load_n(&s->done, __ATOMIC_ACQUIRE)) finish_pending(s);
    if (due) {
        finish_pending(s);   /* one save at a time */
        train_ckpt_begin(tr, step, &s->set);
        s->snapshot_s += now_s() - s->set.t0;
        if (!s->async || step == tr->o.steps) {   /* the last one is complete before the run ends */
            s->write_t0 = now_s();
            train_ckpt_write(tr, &s->set);
            s->write_t1 = now_s();
            watch_begin("checkpoint parts", "world", NULL, WATCH_WORLD);
            MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
            watch_end();
            train_ckpt_commit(tr, &s->set);
            s->commit_t1 = now_s();
            s->pending = 1;
            finish_pending(s);
            s->saved_sync++;
            sync = 1;
        } else {
            s->tr = tr;
            s->done = 0;
            s->pending = 1;
            s->thread = s->set.has_part || tr->dist.rank == 0;
            if (!s->thread) s->done = 1;
            else if (pthread_create(&s->writer, NULL, writer, s) != 0) die("cannot start the checkpoint writer thread");
        }
    }
    s->last_end = now_s();
    if (sync) s->stall_sync_s += s->last_end - t0;
    else s->stall_s += s->last_end - t0;   /* background saves: snapshots, waits, finished writes */
}

void saver_finish(saver_t *s, train_t *tr) {
    finish_pending(s);
    int bg = s->saved - s->saved_sync;
    if (s->saved && tr->dist.rank == 0) {
        char b[160] = "";
        if (bg)
            snprintf(b, sizeof b, "%d in the background: training stalled %.1f ms per checkpoint%s", bg,
                     s->stall_s / bg * 1e3, s->saved_sync ? "; " : "");
        if (s->saved_sync)
            snprintf(b + strlen(b), sizeof b - strlen(b), "%d synchronous: stalled %.1f ms per checkpoint",
                     s->saved_sync, s->stall_sync_s / s->saved_sync * 1e3);
        say("saver:   %d checkpoint%s: %s | snapshot %.1f ms, written in %.1f ms, complete %.1f ms after the "
            "snapshot began (means)\n", s->saved, s->saved == 1 ? "" : "s", b, s->snapshot_s / s->saved * 1e3,
            s->write_s / s->saved * 1e3, s->latency_s / s->saved * 1e3);
        if (s->busy_n && s->idle_n)
            say("saver:   steps while a save was in flight %.1f ms (%d), the other steps %.1f ms (%d)\n",
                s->busy_s / s->busy_n * 1e3, s->busy_n, s->idle_s / s->idle_n * 1e3, s->idle_n);
    }
    train_ckpt_free(&s->set);
}
