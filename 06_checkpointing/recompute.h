/* recompute.h: activation recomputation as a policy of the layer loop
 * (common/model.h does the work), its cost model, and a meter that counts
 * and times what the hardware actually recomputed.
 *
 * Policies (--recompute), for a chunk of L layers:
 *   none         keep every activation of every layer
 *   every:C      keep only the input of every C-th layer; backward recomputes
 *                each segment of C layers from its input, then goes back
 *                through it (Chen et al. 2016; Megatron's "uniform" method)
 *   full         every:1, each layer from its own input (the usual "full")
 *   sqrt         every:round(sqrt(L)), Chen et al.'s choice
 *   block:K      the first K layers recomputed one at a time, the others keep
 *                everything (Megatron's "block" method: the least
 *                recomputation that fits a memory budget)
 *   selective    keep q, k, v but not the attention output, recompute only
 *                the attention core (Korthikanti et al. 2022)
 * Every policy gives bit-identical gradients: the same kernels run in the
 * same order on the same inputs, only some of them twice.
 *
 * The cost model (recompute_cost) counts the bytes a micro-batch keeps from
 * the layout of MODEL.md, independently of how common/model.c allocates:
 * with x the bytes of one layer's input (the residual stream) and A = x + the
 * rest of what one layer keeps,
 *     none       x + L A                                  + head
 *     every:C    ceil(L/C) x + C A                        + head
 *     block:K    (L + 1) x + (L - K) (A - x)  (K < L)     + head
 * (block:L is every:1), which is the lecture's O(L/C + C) "layer activations", except that a kept
 * input (x) is much smaller than a layer's activations (A ~ 15 x here), so
 * the memory is smallest at C = sqrt(L x / A), not sqrt(L). Extra compute:
 * one forward of every layer of a recomputed segment (every:C: all L layers,
 * whatever C; block:K: K layers; selective: L attention cores). */
#ifndef RECOMPUTE_H
#define RECOMPUTE_H

#include <stddef.h>

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    model_recompute_t keep;   /* every: C >= 1 (every:C, full, sqrt); block: K >= 1 (block:K) */
    char name[40];      /* "every:4", "sqrt (every:4)", "none", ... */
} recompute_t;

/* Parse a --recompute value for a chunk of `layers` layers. Returns 0, or -1
 * with a one-line reason in err (every:0, C or K larger than the layers, an
 * unknown policy). */
int recompute_parse(const char *s, int layers, recompute_t *r, char *err, size_t len);

/* Activations of one micro-batch of B sequences on model m under policy r,
 * and what its backward recomputes. */
typedef struct {
    double input;       /* x: one layer's input (bytes) */
    double layer;       /* A: everything one layer keeps without recomputation, x included */
    double head;        /* tokens, targets, the head's buffers */
    double bytes;       /* the micro-batch object (model_acts_t.bytes):
                           inputs x input + kept_layers x (layer - input) + head */
    double scratch;     /* backward scratch model_init holds (policy-independent) */
    double checkpoints; /* layer inputs (and the output) kept through the whole step */
    double inputs;      /* input-sized buffers: the checkpoints, and the inputs a recomputed
                           segment refills */
    double kept_layers; /* layers whose insides have buffers (a segment's slots included) */
    int layers_recomputed;   /* layer forwards per backward */
    int attn_recomputed;     /* attention cores recomputed alone (selective) */
    double flops;       /* recomputed FLOPs per backward (PaLM's counting) */
} recompute_cost_t;
void recompute_cost(const model_t *m, int B, const recompute_t *r, recompute_cost_t *c);

/* FLOPs per token (a row of this rank) of one layer's forward, and of its
 * attention core alone, on model m's shard (4 T H hd: score and mix products
 * over the full T x T square, as PaLM counts them). */
double recompute_layer_flops(const model_t *m);
double recompute_attn_flops(const model_t *m);

/* What ran, counted and timed as it ran: a unit hook sees every layer's
 * forward and recomputation, and a wrapper around the attention core sees
 * every attention forward (inside backward: the selective recomputation).
 * Attach after the attention core is final (chapter 09 swaps it). Times are
 * host wall time (on a GPU: launches, unless the device is synchronised). */
typedef struct {
    long fwd_layers, rec_layers, attn_fwd, attn_rec;
    double fwd_s, rec_s, attn_fwd_s, attn_rec_s;
    /* internal */
    model_attn_t inner;
    int pass;           /* the pass of the unit running now, -1 between units */
    double t0;
} recompute_meter_t;
void recompute_meter_attach(recompute_meter_t *mt, model_t *m);
/* The FLOPs recomputed between two readings (b later than a), for micro-batches of `rows` rows. */
double recompute_meter_flops(const model_t *m, const recompute_meter_t *a, const recompute_meter_t *b,
                             double rows);

#ifdef __cplusplus
}
#endif
#endif
