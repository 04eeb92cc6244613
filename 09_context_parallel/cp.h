/* cp.h: context parallelism, two attention cores for a model whose every
 * sequence is split over C ranks (model_shard_t.cp; common/model.h).
 *
 * Everything in a transformer but attention works token by token, so a rank
 * that holds T/C tokens of each sequence computes norms, projections and the
 * MLP of its tokens alone. Attention needs every earlier token's key and
 * value. The model hands its attention core this rank's q, k, v (after RoPE,
 * rows chunk-major: chunk k, sequence b, token t); a core that brings the
 * other ranks' keys replaces the default (model_attn_t):
 *
 *   ring (Liu et al. 2023, Ring Attention): each rank keeps its queries and
 *     passes its key/value block around the ring of C ranks, C steps; at
 *     every step it attends its queries to the block it holds while the
 *     next block is already on its way (comm_isendrecv), and merges the
 *     partial results with the log-sum-exp rule (op_attn_merge: online
 *     softmax). Backward sends the blocks around again, with their key and
 *     value gradients travelling one step behind and going home at the end.
 *     Communication per rank and layer does not shrink with C: forward sends
 *     (C-1) blocks of 2 x rows x KV hd.
 *   Ulysses (Jacobs et al. 2023, DeepSpeed-Ulysses): an all-to-all turns
 *     sequence-sharded q, k, v (all heads of T/C tokens) into head-sharded
 *     ones (H/C heads of all T tokens); each rank runs ordinary causal
 *     attention on its heads; an all-to-all turns the output back. C can be
 *     at most the number of query heads, and must divide the key/value heads
 *     or be a multiple of them (then each kv head goes to the C/KV ranks whose
 *     query heads read it). Per rank and layer the all-to-alls move (C-1)/C of
 *     the q, k, v and output bytes: shrinking in C, unlike the ring.
 *
 * This core keeps nothing between forward and backward (the model owns the
 * saved tensors and may recompute): Ulysses's backward brings q, k, v, the
 * output and its gradient to the head layout again, and sends dq, dk, dv
 * back.
 *
 * Causal balance: with one chunk of T/C tokens per rank in order, rank C-1's
 * queries see every key and rank 0's only its own: rank i attends i + 1/2
 * blocks of (T/C)^2 query-key pairs. The balanced layout
 * (model_shard_t.cp_balance, the model's default) gives rank i chunks i and
 * 2C-1-i of 2C, an early and a late one: C/2 such blocks on every rank. The
 * core counts the pairs it attends (cp_stats_t.pairs) so the program can
 * print both. */
#ifndef CP_H
#define CP_H

#include "comm.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CP_RING = 0, CP_ULYSSES = 1 } cp_algo_t;
extern const char *const cp_algo_name[2];   /* "ring", "ulysses" */

typedef struct {
    double compute_s;      /* attention kernels, merges and gradient sums */
    double comm_s;         /* waiting on the ring's exchanges; the all-to-alls and their layout copies */
    double compute_s_cpu, comm_s_cpu;   /* the same in this process's CPU time */
    double pairs;          /* query-key pairs attended in forward, over sequences and query heads */
    double bytes[2];       /* sent on the context-parallel communicator in forward, backward */
    long calls[2];         /* forward and backward calls */
} cp_stats_t;

typedef struct {
    cp_algo_t algo;
    comm_t *comm;
    const device_t *d;
    int C, rank;
    /* ring */
    void *kv[2];           /* (2, Rf, KV hd): k then v of the block at hand, and of the next */
    void *dkv[3];          /* backward: their gradients, sent on / arriving / being computed */
    void *o_b;             /* (B, Tc, H hd) one block's partial output */
    float *l_b;            /* (B, H, Tc) its lse */
    /* ulysses */
    int Hc, KVc;           /* query and kv heads per rank in the head layout */
    int heads_per_kv;      /* query heads reading one kv head (H / KV) */
    void *send, *recv;     /* packed per-peer segments */
    float *lsend, *lrecv;  /* the same for the lse */
    void *qh, *kh, *vh, *oh, *doh, *dqh, *dkh, *dvh;   /* (B, seq, heads, hd): head layout */
    float *lseh;           /* (B, Hc, seq) */
    void *scr_q, *scr_kv;  /* (Rf, H hd), (2, Rf, KV hd): gradients back in this rank's layout */
    cp_stats_t st;         /* since the last cp_stats_reset */
} cp_t;

/* usage_error() (every rank alike) unless the algorithm can split this
 * shard: Ulysses needs C to divide the shard's query heads and to divide its
 * kv heads or be a multiple of them. Call before train_model. */
void cp_check(const model_config_t *c, const model_shard_t *s, cp_algo_t algo);
/* The core for model m over communicator comm (its size = m's cp): sets
 * m->attn. Buffers for micro-batches of up to m->max_batch sequences. */
void cp_init(cp_t *c, comm_t *comm, model_t *m, cp_algo_t algo);
void cp_free(cp_t *c);
void cp_stats_reset(cp_t *c);

/* Query-key pairs rank `rank` attends in one forward of one layer for B
 * sequences, over its query heads (the count the core makes, from the layout
 * alone). With T = seq, H = the shard's query heads, Tc its chunk length:
 *   ring, in order (rank r holds chunk r):   B H (r Tc^2 + Tc (Tc+1)/2)
 *   ring, balanced (chunks r and 2C-1-r):    B H ((2C-1) Tc^2 + Tc (Tc+1))
 *   ulysses (H/C heads of all T tokens):     B (H/C) T (T+1)/2
 * Summed over the C ranks each gives the causal triangle B H T (T+1)/2. */
double cp_pairs_formula(const model_t *m, cp_algo_t algo, int rank, int B);
/* Bytes one rank sends on the cp communicator in one layer's forward [0] and
 * backward [1] for B sequences (nccl-tests bus bytes). Rf = B T / C rows,
 * es = the dtype's size, hd the head dim, H, KV the shard's heads, KV' the
 * kv heads in the all-to-all (KV, or C when replicated):
 *   ring     forward  (C-1) 2 Rf KV hd es                  the blocks
 *            backward (C-1) 2 Rf KV hd es + C 2 Rf KV hd es  blocks, their gradients
 *   ulysses  forward  (C-1)/C Rf (hd es (2H + 2KV') + 4H)   q, k, v in; out, lse back
 *            backward (C-1)/C Rf (hd es (4H + 4KV') + 4H)   q, k, v, out, dout, lse in;
 *                                                           dq, dk, dv back */
void cp_bytes_formula(const model_t *m, cp_algo_t algo, int B, double out[2]);

#ifdef __cplusplus
}
#endif
#endif
