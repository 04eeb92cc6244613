/* mesh.c: 10_nd_llama/mesh, the 4D mesh as the trainer builds it: each
 * rank's (tp, cp, pp, dp) coordinates and the members of its group on each
 * axis, for the chart mesh.png.
 *
 *   mpirun -np 16 ./10_nd_llama/mesh --tp 2 --cp 2 --pp 2 --dp 2 --csv plots/data/mesh.csv
 *
 * Every rank builds the mesh with mesh_init (common/dist.c, what train_setup
 * calls) and reports its coordinates and, per axis, the world ranks of its
 * axis communicator in their order there (dist_world_ranks): the groups
 * the trainer's collectives run on, not a formula applied again.
 *
 * CSV (replaced): rank,tp,cp,pp,dp,tp_group,cp_group,pp_group,dp_group,
 * tp_members,cp_members,pp_members,dp_members. X_group numbers the groups of
 * axis X from 0 in the order of their lowest rank; X_members lists the
 * group's world ranks, space-separated, in the communicator's order. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "check.h"
#include "dist.h"

int main(int argc, char **argv) {
    dist_t d;
    dist_init(&argc, &argv, &d);
    int size[AXES] = {1, 1, 1, 1};
    const char *csv = NULL;
    arg_t flags[] = {
        {"tp", ARG_INT, &size[AXIS_TP], "tensor-parallel degree", NULL, 1, 1 << 20},
        {"cp", ARG_INT, &size[AXIS_CP], "context-parallel degree", NULL, 1, 1 << 20},
        {"pp", ARG_INT, &size[AXIS_PP], "pipeline stages", NULL, 1, 1 << 20},
        {"dp", ARG_INT, &size[AXIS_DP], "data-parallel degree", NULL, 1, 1 << 20},
        {"csv", ARG_STRING, &csv, "write the mesh here (replaced; default: standard output)", NULL, 0, 0},
    };
    args_parse(argc, argv, "10_nd_llama/mesh",
               "The 4D mesh of the ranks of mpirun as the trainer builds it: each rank's\n"
               "coordinates and its group on each axis. tp x cp x pp x dp must be the world.",
               flags, ARRAY_LEN(flags));
    args_check_output(MPI_COMM_WORLD, "csv", csv, NULL);
    mesh_t m;
    mesh_init(&m, &d, size[AXIS_TP], size[AXIS_CP], size[AXIS_PP], size[AXIS_DP]);

    /* per rank: 4 coordinates, then for each axis its group's world ranks (size[a] of them) */
    int W = d.world, n = AXES + W * AXES;
    int *mine = xmalloc(sizeof(int) * (size_t)n), *all = xmalloc(sizeof(int) * (size_t)n * (size_t)W);
    memcpy(mine, m.coord, sizeof m.coord);
    for (int a = 0; a < AXES; a++) dist_world_ranks(m.axis[a], mine + AXES + a * W);
    MPI_CHECK(MPI_Gather(mine, n, MPI_INT, all, n, MPI_INT, 0, MPI_COMM_WORLD));
    if (d.rank == 0) {
        FILE *f = csv ? fopen(csv, "w") : stdout;
        if (!f) die("cannot write %s: %s", csv, strerror(errno));
        fprintf(f, "rank,tp,cp,pp,dp,tp_group,cp_group,pp_group,dp_group,tp_members,cp_members,pp_members,dp_members\n");
        for (int r = 0; r < W; r++) {
            const int *e = all + (size_t)r * n;
            fprintf(f, "%d,%d,%d,%d,%d", r, e[0], e[1], e[2], e[3]);
            for (int a = 0; a < AXES; a++) {
                /* the group's number: how many groups of this axis have a lower lowest rank */
                int low = W, ord = 0;
                for (int j = 0; j < size[a]; j++) low = e[AXES + a * W + j] < low ? e[AXES + a * W + j] : low;
                for (int q = 0; q < W; q++) {
                    const int *g = all + (size_t)q * n + AXES + a * W;
                    int lq = W;
                    for (int j = 0; j < size[a]; j++) lq = g[j] < lq ? g[j] : lq;
                    ord += lq == q && q < low;   /* count each group once, at its lowest rank */
                }
                fprintf(f, ",%d", ord);
            }
            for (int a = 0; a < AXES; a++) {
                fputc(',', f);
                for (int j = 0; j < size[a]; j++) fprintf(f, "%s%d", j ? " " : "", e[AXES + a * W + j]);
            }
            fputc('\n', f);
        }
        if (csv) {
            if (fclose(f)) die("cannot write %s: %s", csv, strerror(errno));
            say("mesh tp %d x cp %d x pp %d x dp %d: %s\n", size[0], size[1], size[2], size[3], csv);
        }
    }
    free(mine);
    free(all);
    mesh_destroy(&m);
    dist_finalize();
    return 0;
}
