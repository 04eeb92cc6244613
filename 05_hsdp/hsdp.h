/* hsdp.h: hybrid sharded data parallel: FSDP (04_fsdp/fsdp.c)
 * inside groups of --shard K consecutive ranks, plain data parallelism
 * across the R = N / K groups.
 *
 *   mpirun -np 4 ./05_hsdp/hsdp --shard 2 [--node-size 2 --inter-gbps 1 --inter-us 20]
 *
 * The data-parallel axis is cut in two (common/dist.h mesh_dp_split): the
 * shard group (K ranks, one copy of the training state between them) and
 * the replicate group (the R ranks that hold the same pieces in the other
 * groups). Every unit's gradient is reduce-scattered inside the group and
 * its piece all-reduced across the groups; weights are gathered inside the
 * group only. K = N is FSDP, K = 1 is DDP with the optimizer step of one
 * rank's whole "shard".
 *
 * With the link model (--node-size G) groups of G ranks behave as nodes
 * behind slower links. The program counts the bytes that cross between
 * nodes and predicts the time the slow links add to a step from the
 * alpha-beta cost of every collective it issued (alpha + bytes / beta per
 * ring step that crosses, comm.h), to put beside the measured step. */
#ifndef HSDP_H
#define HSDP_H

#include "04_fsdp/fsdp.h"
#include "runner.h"
#include "train.h"

/* 05_hsdp/hsdp's state: its flags, then what compose builds. */
typedef struct {
    fsdp_opts_t fo;
    int K;
    const char *bench_csv;
    comm_t shard, rep;
    fsdp_t f;
    runner_t run;
} hsdp_t;

/* The shard and replicate groups of K = p->K ranks (0: --node-size where it
 * divides the data-parallel ranks, else all of them; mesh_dp_split), their
 * communicators counted in tr->comms, and the header line. */
void hsdp_groups(train_t *tr, hsdp_t *p);
/* Bytes per rank that crossed between nodes in the last step, measured
 * (cross[0]) and from the formulas (cross[1]), mean over the world; the
 * milliseconds the slow links add by alpha-beta (*link_ms); the "link:"
 * line under the link model. Collective over the world. */
void hsdp_link_report(train_t *tr, const hsdp_t *p, double cross[2], double *link_ms);

#endif
