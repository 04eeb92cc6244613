/* replay.h: recorded per-rank actions replayed as if every rank had its own
 * core, or priced on a described GPU cluster -- the suite's one engine for
 * timings that a busy or small machine cannot measure.
 *
 * A record (trace.h: record_*, written by `--record FILE`) is, for every
 * rank, the ordered list of what it did:
 *   compute   thread CPU seconds (CLOCK_THREAD_CPUTIME_ID: time on a core,
 *             which more ranks than cores does not inflate) and its FLOPs
 *             where known (0: unknown)
 *   comm      a call of the comm layer (or chapter 02's point-to-point):
 *             kind, bytes, communicator, peers; blocking, or non-blocking and
 *             completed by a later `wait` that names it
 *   wait      the rank waits for a non-blocking call to complete
 *   mark      a label every rank records at the same point (a step, a size):
 *             the replay ends a segment there (a barrier of no cost)
 *
 * The engine runs every rank's list on its own clock:
 *   - a compute takes its cost (the recorded seconds, or a price callback);
 *   - a collective starts when every member has called it and every member
 *     is done with its earlier collectives (they queue on a rank's link, as
 *     on one NIC or one NCCL stream) and takes the cost of the bandwidth-
 *     optimal algorithm over its members in order (X: the whole vector,
 *     N members, alpha + m / B per message of m bytes):
 *        all-reduce                      2 (N - 1) (alpha + X / (N B))   (ring)
 *        reduce-scatter, all-gather,     (N - 1) (alpha + X / (N B))     (ring, pairwise)
 *          all-to-all
 *        broadcast, reduce               ceil(log2 N) (alpha + X / B)    (binomial tree)
 *        barrier                         ceil(log2 N) alpha
 *     with the link between nodes when the members span several nodes, the
 *     link inside a node otherwise (Thakur, Rabenseifner & Gropp 2005);
 *   - a point-to-point message leaves when posted and its sender's link is
 *     free (messages from one rank go one after another, each holding the
 *     link for m / B), arrives alpha + m / B after it leaves, and a receive
 *     completes when both it is posted and the message has arrived; a send
 *     completes when its bytes have left. Messages between two ranks of one
 *     communicator match in order. Point-to-point messages and collectives
 *     do not queue behind each other, and a receiver's link does not queue
 *     the messages arriving at it (a rank receives from many at once: a
 *     parameter server's root is priced too kindly).
 * A rank's idle time is what its clock spends waiting. */
#ifndef REPLAY_H
#define REPLAY_H

#include <stdio.h>

#include "comm.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { REPLAY_NAME = 48 };

typedef enum { RP_COMPUTE, RP_COMM, RP_WAIT, RP_MARK } rp_op_t;

typedef struct {
    rp_op_t op;
    coll_kind kind;        /* RP_COMM */
    int nb;                /* RP_COMM: non-blocking (completes at the RP_WAIT naming it) */
    int group;             /* RP_COMM: index into replay_trace_t.group */
    int peer, src;         /* send, sendrecv: destination; recv, sendrecv: source (ranks of the group) */
    double bytes;          /* RP_COMM: the collective's whole vector X, or the message sent */
    double secs, flops;    /* RP_COMPUTE: thread CPU seconds; FLOPs (0: unknown) */
    int ref;               /* RP_WAIT: index of the non-blocking RP_COMM in this rank's list */
    char name[REPLAY_NAME];   /* RP_COMPUTE, RP_MARK: a label ("F3", "step 2") */
} rp_event_t;

typedef struct {
    char name[16];
    int size;
    int *world;            /* (size) its members' world ranks, in the group's rank order */
} rp_group_t;

typedef struct {
    int world;
    int *n;                /* (world) events per rank */
    rp_event_t **ev;       /* (world)(n[r]) */
    int ngroups;
    rp_group_t *group;
    int cap_groups, *cap;  /* growth (replay_trace_add) */
    double link_us, link_gbps;   /* the link the record's run measured (its "link" line), or 0 */
} replay_trace_t;

/* Building a trace by hand (tests, chapter 07's schedules): an empty trace of
 * `world` ranks, groups added with their members, events appended per rank.
 * Returns the new group's or event's index. */
void replay_trace_init(replay_trace_t *t, int world);
int replay_trace_group(replay_trace_t *t, const char *name, int size, const int *world_ranks);
int replay_trace_add(replay_trace_t *t, int rank, const rp_event_t *e);
void replay_trace_free(replay_trace_t *t);
/* Read a record file (format: trace.h); returns 0, or -1 with the reason
 * (file, line) in err. */
int replay_trace_read(replay_trace_t *t, const char *path, char *err, size_t len);

/* The links: a message inside a node costs intra_us + m / intra_gbps, one
 * between nodes inter_us + m / inter_gbps (GB/s = 1e9 bytes/s; 0: bytes
 * free). Ranks r and q share a node when r / node_size == q / node_size
 * (node_size 0: every rank on one node). */
typedef struct {
    int node_size;
    double intra_us, intra_gbps, inter_us, inter_gbps;
} replay_links_t;

/* A compute's seconds in the replay: NULL keeps the recorded CPU seconds. */
typedef double (*replay_compute_fn)(const rp_event_t *e, void *ctx);

typedef struct {
    int world;
    double step;           /* the last event's end */
    double *busy, *idle;   /* (world) compute seconds; step - busy */
    double **t0, **t1;     /* (world)(n[r]) each event's start and end (a non-blocking call's
                              completion in t1) */
    int nmarks;
    double *mark_t;        /* (nmarks) the time every rank has reached mark k */
    const char **mark_name;   /* (nmarks) its label (rank 0's event) */
    int *at;               /* (world) where each rank stopped: n[r] when it finished */
} replay_result_t;

/* 0, or -1 when the lists cannot finish (err: which rank waits for what). */
int replay_run(const replay_trace_t *t, const replay_links_t *l, replay_compute_fn price, void *ctx,
               replay_result_t *r, char *err, size_t len);
void replay_result_free(replay_result_t *r);
/* The seconds of one collective (or message, or barrier) of X bytes over
 * the world ranks `members` (see above). */
double replay_coll_cost(coll_kind k, double X, int n, const int *members, const replay_links_t *l);

#ifdef __cplusplus
}
#endif
#endif
