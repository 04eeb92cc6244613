/* cost.h: the cost model of a 4D-parallel training step — memory per GPU,
 * compute, communication per axis, the pipeline bubble, and so step time and
 * MFU — for the planner (plan.c) and the trainer's dry run.
 *
 * It models the suite's own trainer: its activation layout (common/model.c),
 * fp32 gradients beside bf16 weights, AdamW state of 12 bytes per parameter,
 * the sharded optimizer of ZeRO-1/2/3 over the dp x cp ranks, a
 * [tp, cp, pp, dp] mesh with tp fastest (so tensor-parallel ranks share a
 * node first, then context-parallel ones), ring algorithms for every
 * collective and alpha-beta links (chapter 02). Every assumption it makes is
 * a field of cluster_t, printed by the planner, and stated in the README. */
#ifndef COST_H
#define COST_H

#include "model.h"
#include "replay.h"

#ifdef __cplusplus
extern "C" {
#endif

/* GEMM efficiency against size, measured (chapter 01's CSV): the rows of one
 * dtype as (FLOPs 2mnk, fraction of the peak), ascending; at equal FLOPs the
 * best variant's. */
typedef struct {
    int n;
    double flops[64], eff[64];
} gemm_table_t;

/* Read `csv` (columns dtype, m, n, k, hfu in percent, as 01_matmul_hfu/hfu
 * writes) keeping the rows of `dtype`. 0, or -1 with the reason in why. */
int gemm_table_load(gemm_table_t *t, const char *csv, const char *dtype, char *why, size_t len);

/* A GEMM's fraction of the peak at shape (m x k) @ (k x n): linear in
 * log(2mnk) between the table's neighbouring sizes, clamped to its ends. */
double gemm_eff_at(const gemm_table_t *t, double m, double n, double k);

typedef struct {
    char name[48];
    double peak;            /* dense bf16 FLOP/s per GPU */
    double mem;             /* bytes per GPU */
    int node;               /* GPUs per node */
    double intra_bw;        /* bytes/s per GPU inside a node (NVLink), what a ring achieves */
    double intra_lat;       /* seconds per message inside a node */
    double inter_bw;        /* bytes/s per GPU between nodes (its NIC) */
    double inter_lat;
    double mem_bw;          /* bytes/s of device memory, for memory-bound kernels */
    /* achievable fractions of the peak, from measurements at these shapes */
    int causal_credit;      /* MFU counts attention's causal FLOPs (half the square) instead of
                               the whole T x T square (PaLM's convention, the suite's default) */
    double gemm_eff;        /* bf16 GEMMs */
    const gemm_table_t *gemm_table;   /* when set, each GEMM at its own shape's efficiency
                                         instead of gemm_eff */
    double attn_eff;        /* causal flash attention, forward + backward, on causal FLOPs */
    double dp_overlap;      /* share of the data-parallel communication hidden behind backward */
    double cp_overlap;      /* share of ring attention's transfers hidden behind its compute */
    double tp_overlap;      /* share of tensor-parallel communication hidden behind compute */
    double elementwise;     /* bytes moved per token and layer by memory-bound kernels,
                               per unit of (C + F), forward + backward */
    double mem_headroom;    /* share of the GPU memory a plan may use */
} cluster_t;

enum { SCHED_GPIPE, SCHED_1F1B, SCHED_INTERLEAVED };
/* Recomputation: none; selective (the attention core); full (every layer);
 * block (the first `recompute_layers` layers of each stage fully, the others
 * keep everything: Megatron's block method, the least recomputation that
 * fits). */
enum { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE, RECOMPUTE_FULL, RECOMPUTE_BLOCK };
extern const char *const sched_name[3], *const recompute_name[4];

typedef struct {
    int tp, cp, pp, dp;
    int vpp;                /* model chunks per stage (interleaved) */
    int sp;                 /* sequence parallelism */
    int zero;               /* 0 (DDP) .. 3 over the data-parallel ranks */
    int mbs;                /* sequences per micro-batch */
    int schedule, recompute;
    int recompute_layers;   /* RECOMPUTE_BLOCK: layers per stage recomputed */
    int dtype_bytes;        /* working weights and activations: 2 (bf16) or 4 (fp32) */
} par_t;

typedef struct {
    /* bytes per GPU, the fullest stage (the first or the last) */
    double mem_weights, mem_grads, mem_optim, mem_acts, mem_total;
    /* seconds per step */
    double t_gemm, t_attn, t_elementwise, t_recompute;   /* compute */
    double t_tp, t_cp, t_pp, t_dp;                      /* exposed communication per axis */
    double t_bubble, t_optimizer, t_step;
    double bubble;          /* idle share of the step */
    int micro;              /* micro-batches per step per pipeline */
    double model_flops, hw_flops;   /* per GPU per step */
    double mfu, hfu, tflops, tokens_s;
    long long params_gpu;   /* parameters on the fullest stage's GPU */
    char why[160];          /* why the plan is rejected ("" when it is not) */
} cost_t;

/* Cluster presets: "h100" (H100 SXM nodes of 8, NVLink, 400 Gb/s per GPU;
 * the figures measured on one H100 at Llama 3 405B's TP-8 shapes), and
 * "cpu" (this machine, every rank on one node: the caller sets the peak
 * from the measured CPU peak; the fractions and the link are typical values
 * the caller's flags replace). Returns 0, or -1 when unknown. */
int cost_cluster(cluster_t *c, const char *preset);

/* A cluster described in a file, one "KEY VALUE" a line ('#' starts a
 * comment), every key required but name:
 *   name           Your cluster (shown in outputs)
 *   gpus_per_node  8
 *   peak_tflops    989.4     dense bf16 per GPU
 *   mem_gb         80        memory per GPU
 *   nvlink_gbps    360       GB/s per GPU inside a node that a ring achieves
 *   nvlink_us      5         latency per message inside a node
 *   network_gbps   40        GB/s per GPU between nodes (its NIC: 400 Gb/s x 0.8)
 *   network_us     10
 *   mem_gbps       3000      device memory, for work without FLOPs
 *   gemm_eff       0.76      GEMMs' fraction of the peak (replay/replay uses
 *                            chapter 01's table instead when given one)
 * 0, or -1 with the reason (file and line) in why. */
int cost_cluster_file(cluster_t *c, const char *path, char *why, size_t len);
/* The cluster's links as the replay engine prices them (common/replay.h):
 * the one link pricing of the planner and of replay/replay. */
void cost_links(const cluster_t *c, replay_links_t *l);

/* Model presets: Llama 3's 8B, 70B and 405B shapes (Llama Team 2024, table
 * 3; head dim 128, sequence 8192). "llama3-8b" etc.; 0, or -1 when unknown. */
#define COST_MODEL_CHOICES "llama3-8b|llama3-70b|llama3-405b"
int cost_model(model_config_t *c, const char *preset);

/* Evaluate one plan for a global batch of `batch` sequences of cfg->seq
 * tokens. Returns 0, or -1 with the reason in out->why (it does not fit in
 * memory, the batch is too small for the pipeline, a degree does not divide
 * what it splits, ...). */
int cost_eval(const model_config_t *cfg, long batch, const cluster_t *cl, const par_t *p,
              cost_t *out);

/* Activation bytes one micro-batch of `tokens` of this rank's tokens keeps
 * per layer, in the suite's layout (common/model.c): what model_acts_init
 * allocates, per layer. */
double cost_acts_per_layer(const model_config_t *cfg, const par_t *p, double tokens);

#ifdef __cplusplus
}
#endif
#endif
