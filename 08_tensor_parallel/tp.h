/* tp.h: Megatron-style tensor parallelism (Shoeybi et al. 2019) through the
 * model's two seams (model_tp_t in common/model.h).
 *
 * A shard with tensor parallelism T holds 1/T of every layer: its query
 * heads, key/value heads (or the one its query heads share), ffn columns and
 * vocabulary rows. Column-parallel products (wq, wk, wv, w1, w3, lm_head)
 * need the whole input on every rank and give 1/T of the output;
 * row-parallel ones (wo, w2) take that slice and give a PARTIAL sum of the
 * whole output. The four conjugate operators of the paper become two calls:
 *
 *   before a column-parallel product ("f"): forward identity, backward
 *       all-reduce of the input gradient   -> the model's reduce (backward)
 *   after a row-parallel product ("g"):     forward all-reduce, backward
 *       identity                           -> the model's reduce (forward)
 *
 * With sequence parallelism (Korthikanti et al. 2022) the residual stream
 * between the tensor-parallel regions is split along its rows: "g" becomes a
 * reduce-scatter and "f" an all-gather (forward) / reduce-scatter (backward):
 * the same bytes on the wire, 1/T of the activations in memory outside the
 * attention and MLP cores.
 *
 * The vocabulary is split too: each rank embeds the tokens of its slice (zeros
 * elsewhere, summed by "g") and computes cross-entropy over its logits; the
 * ranks combine their log-sum-exps and target logits, so the logits are never
 * gathered whole. */
#ifndef TP_H
#define TP_H

#include "comm.h"
#include "model.h"
#include "optim.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    comm_t *comm;          /* the tensor-parallel communicator */
    comm_t kv;             /* the ranks sharing a key/value head (when tp > kv_heads) */
    int has_kv;
    model_tp_t seams;
    float *lse_parts;      /* (tp, rows) */
    size_t lse_cap;
} tp_t;

/* Seams for model m (m->tp points at them from now on). */
void tp_init(tp_t *t, comm_t *comm, model_t *m);
void tp_free(tp_t *t);

/* After the last micro-batch's backward: sum, over the ranks that hold
 * them, the gradients of blocks replicated across tensor-parallel ranks of
 * which each rank computed a part (a key/value head shared by several
 * ranks' query heads; every norm gain under sequence parallelism), in the
 * optimizer's pieces. Sums commute, so this may run before or after the
 * data-parallel synchronisation. */
void tp_reduce_replicated_grads(tp_t *t, model_t *m, const optim_t *opt);

#ifdef __cplusplus
}
#endif
#endif
