/* dist.c: MPI start-up and the 4D mesh. */
#include "dist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

const char *const axis_name[AXES] = {"tp", "cp", "pp", "dp"};

void dist_init(int *argc, char ***argv, dist_t *d) {
    int provided = 0;
    MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &d->rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &d->world));
    /* Errors in MPI calls come back to MPI_CHECK, which names the call. */
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    check_init();

    MPI_Comm node;
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, d->rank,
                                  MPI_INFO_NULL, &node));
    MPI_CHECK(MPI_Comm_rank(node, &d->local_rank));
    MPI_CHECK(MPI_Comm_size(node, &d->local_world));
    MPI_Comm_free(&node);
    int leader = d->local_rank == 0;
    MPI_CHECK(MPI_Allreduce(&leader, &d->nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (gethostname(d->host, sizeof d->host) != 0) snprintf(d->host, sizeof d->host, "?");
    d->host[sizeof d->host - 1] = 0;
}

void dist_finalize(void) { check_finalize(); }

void dist_world_ranks(MPI_Comm c, int *out) {
    MPI_Group g, w;
    int n;
    MPI_CHECK(MPI_Comm_size(c, &n));
    MPI_CHECK(MPI_Comm_group(c, &g));
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &w));
    int *mine = xmalloc(sizeof(int) * (size_t)n);
    for (int r = 0; r < n; r++) mine[r] = r;
    MPI_CHECK(MPI_Group_translate_ranks(g, n, mine, w, out));
    free(mine);
    MPI_Group_free(&g);
    MPI_Group_free(&w);
}

void dist_watch(const char *what, MPI_Comm c) {
    if (c == MPI_COMM_WORLD) {
        watch_begin(what, "world", NULL, WATCH_WORLD);
        return;
    }
    int n;
    MPI_CHECK(MPI_Comm_size(c, &n));
    int *peers = xmalloc(sizeof(int) * (size_t)n);
    dist_world_ranks(c, peers);
    watch_begin(what, NULL, peers, n);
    free(peers);
}

void dist_allreduce(void *buf, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, const char *what) {
    dist_watch(what, c);
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, n, t, op, c));
    watch_end();
}

#define MESH_WHERE "10_nd_llama/README.md, Assignment: the rank layout of the mesh"

int mesh_rank(const mesh_t *m, const int c[AXES]) {
    /* ASSIGNMENT 10-mesh: the rank layout of the mesh (10_nd_llama/README.md, "Assignment: the rank layout of the mesh") */
    /* STUB: (void)m, (void)c; */
    /* STUB: not_implemented("mesh_rank (coordinates to world rank)", MESH_WHERE); */
    /* STUB: return 0; */
    int r = 0;
    for (int a = AXES - 1; a >= 0; a--) r = r * m->size[a] + c[a];
    return r;
    /* END ASSIGNMENT 10-mesh */
}

/* m->coord from the world rank (tp fastest), then m->axis[a] for every axis:
 * the ranks whose coordinates differ only on axis a, ranked by that one. */
static void mesh_layout(mesh_t *m, int rank) {
    /* ASSIGNMENT 10-mesh: the rank layout of the mesh (10_nd_llama/README.md, "Assignment: the rank layout of the mesh") */
    /* STUB: (void)m, (void)rank; */
    /* STUB: not_implemented("mesh_layout (coordinates and axis communicators)", MESH_WHERE); */
    int r = rank;
    for (int a = 0; a < AXES; a++) {
        m->coord[a] = r % m->size[a];
        r /= m->size[a];
    }
    for (int a = 0; a < AXES; a++) {
        /* colour = the coordinates on the other axes; key = this axis's coordinate */
        int c[AXES];
        memcpy(c, m->coord, sizeof c);
        c[a] = 0;
        MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, mesh_rank(m, c), m->coord[a], &m->axis[a]));
    }
    /* END ASSIGNMENT 10-mesh */
}

void mesh_init(mesh_t *m, const dist_t *d, int tp, int cp, int pp, int dp) {
    int sizes[AXES] = {tp, cp, pp, dp};
    long prod = 1;
    for (int a = 0; a < AXES; a++) {
        if (sizes[a] < 1) usage_error("--%s must be at least 1 (got %d)", axis_name[a], sizes[a]);
        prod *= sizes[a];
    }
    if (prod != d->world)
        usage_error("mesh tp %d x cp %d x pp %d x dp %d = %ld ranks, but the world has %d",
                    tp, cp, pp, dp, prod, d->world);
    memcpy(m->size, sizes, sizeof sizes);
    mesh_layout(m, d->rank);
}

void mesh_destroy(mesh_t *m) {
    for (int a = 0; a < AXES; a++)
        if (m->axis[a] != MPI_COMM_NULL) MPI_Comm_free(&m->axis[a]);
}

MPI_Comm mesh_group(const mesh_t *m, unsigned axes) {
    int colour[AXES], key = 0;
    memcpy(colour, m->coord, sizeof colour);
    for (int a = AXES - 1; a >= 0; a--)
        if (axes & (1u << a)) {
            colour[a] = 0;
            key = key * m->size[a] + m->coord[a];
        }
    MPI_Comm c;
    MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, mesh_rank(m, colour), key, &c));
    return c;
}

void mesh_dp_split(const mesh_t *m, int K, MPI_Comm *shard, MPI_Comm *replicate) {
    int dp = m->size[AXIS_DP];
    if (K < 1 || dp % K)
        usage_error("the shard group size (%d) must divide the data-parallel degree (%d)", K, dp);
    /* ASSIGNMENT 05-mesh: the shard and replica groups (05_hsdp/README.md, "Assignment: the hybrid mesh") */
    /* STUB: (void)shard, (void)replicate; */
    /* STUB: not_implemented("the shard and replica groups", "05_hsdp/README.md, Assignment: the hybrid mesh"); */
    int i = m->coord[AXIS_DP];
    MPI_CHECK(MPI_Comm_split(m->axis[AXIS_DP], i / K, i % K, shard));
    MPI_CHECK(MPI_Comm_split(m->axis[AXIS_DP], i % K, i / K, replicate));
    /* END ASSIGNMENT 05-mesh */
}
