/* dist.h: MPI start-up, ranks, and the device mesh.
 *
 * A program started without mpirun is one rank. The local rank (the rank's
 * index among the ranks of its node) comes from a shared-memory split of
 * MPI_COMM_WORLD and picks the GPU.
 *
 * The mesh lays the world out as a 4D grid ordered [tp, cp, pp, dp], tp
 * varying fastest, so tensor-parallel peers are neighbouring ranks (same node,
 * fastest links) and data-parallel peers are furthest apart:
 *     rank = ((dp_i * pp + pp_i) * cp + cp_i) * tp + tp_i
 * Each axis has a sub-communicator joining the ranks that differ only in that
 * axis's coordinate. */
#ifndef DIST_H
#define DIST_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int rank, world;             /* in MPI_COMM_WORLD */
    int local_rank, local_world; /* on this node */
    int nodes;
    char host[64];
} dist_t;

void dist_init(int *argc, char ***argv, dist_t *d);
void dist_finalize(void);
/* The world rank of each rank of c, in c's order (out holds its size). */
void dist_world_ranks(MPI_Comm c, int *out);
/* watch_begin (check.h) for a collective on c: every rank of c is a peer. */
void dist_watch(const char *what, MPI_Comm c);
/* MPI_Allreduce in place on host values, watched as `what`. */
void dist_allreduce(void *buf, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, const char *what);

enum { AXIS_TP = 0, AXIS_CP = 1, AXIS_PP = 2, AXIS_DP = 3, AXES = 4 };
extern const char *const axis_name[AXES];

typedef struct {
    int size[AXES];      /* tp, cp, pp, dp */
    int coord[AXES];     /* this rank's position */
    MPI_Comm axis[AXES]; /* ranks differing only along that axis; rank in it = coord */
} mesh_t;

/* Sizes whose product must be the world size (usage_error otherwise). */
void mesh_init(mesh_t *m, const dist_t *d, int tp, int cp, int pp, int dp);
void mesh_destroy(mesh_t *m);
/* World rank of the rank at the given coordinates. */
int mesh_rank(const mesh_t *m, const int coord[AXES]);

/* The ranks that differ from this one only along the axes in `axes` (a bit
 * mask of 1 << AXIS_*), ordered by their coordinates on those axes with the
 * lower axis fastest: mesh_group(m, 1 << AXIS_CP | 1 << AXIS_DP) is the
 * context x data group whose gradients Llama 3 averages together. A new
 * communicator: MPI_Comm_free it. */
MPI_Comm mesh_group(const mesh_t *m, unsigned axes);

/* Hybrid sharding (HSDP) cuts the data-parallel axis of size dp = R x K into
 * groups of K consecutive dp coordinates: `shard` joins the K ranks of this
 * rank's group (parameters sharded among them), `replicate` the R ranks at
 * the same position in every group (shards all-reduced across them). K must
 * divide dp (usage_error). New communicators: MPI_Comm_free them. */
void mesh_dp_split(const mesh_t *m, int K, MPI_Comm *shard, MPI_Comm *replicate);

#ifdef __cplusplus
}
#endif
#endif
