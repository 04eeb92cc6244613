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
 * attention and MLP cores. The norms' outputs are kept sharded, so backward
 * gathers them again for the weight gradients: one all-gather more per
 * sub-layer than forward (as in the paper, which overlaps it).
 *
 * The vocabulary is split too: each rank embeds the tokens of its slice (zeros
 * elsewhere, summed by "g") and computes cross-entropy over its logits; the
 * ranks combine their log-sum-exps and target logits, so the logits are never
 * gathered whole.
 *
 * Accounting (for the chapter's program, and any trainer that links this):
 * every seam call is timed (it blocks, so all of it is exposed), and with
 * tp_count_bytes a unit hook records the bytes the tensor-parallel
 * communicator sends in each unit's forward and backward, which
 * tp_bytes_formula predicts; tp_acts_formula predicts the bytes of one
 * micro-batch's activations. */
#ifndef TP_H
#define TP_H

#include "comm.h"
#include "model.h"
#include "optim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where communication happens: the embedding, a layer, the head. */
enum { TP_EMBEDDING, TP_LAYER, TP_HEAD, TP_PLACES };

typedef struct {
    double bytes[TP_PLACES][3];   /* sent on the tensor-parallel communicator, by place and
                                     pass (model_pass_t: forward, backward, recompute) */
    long passes[TP_PLACES][3];    /* unit passes counted */
    double grad_bytes;            /* tp_reduce_replicated_grads (the shared-kv groups' bytes are
                                     added to the tp communicator's count: they are part of it) */
    double comm_s;                /* time in the seams and the gradient sums */
} tp_stats_t;

typedef struct {
    comm_t *comm;          /* the tensor-parallel communicator */
    comm_t kv;             /* the ranks sharing a key/value head (when tp > kv_heads) */
    int has_kv;
    model_tp_t seams;
    float *lse_parts;      /* (tp, rows) */
    size_t lse_cap;
    tp_stats_t st;         /* since the last tp_stats_reset */
    double mark;           /* bytes sent when the current unit began */
} tp_t;

/* Seams for model m (m->tp points at them from now on). */
void tp_init(tp_t *t, comm_t *comm, model_t *m);
void tp_free(tp_t *t);
/* Count the bytes of every unit's forward and backward in t->st (a unit hook). */
void tp_count_bytes(tp_t *t, model_t *m);
void tp_stats_reset(tp_t *t);

/* After the last micro-batch's backward: sum, over the ranks that hold
 * them, the gradients of blocks replicated across tensor-parallel ranks of
 * which each rank computed a part (a key/value head shared by several
 * ranks' query heads; every norm gain under sequence parallelism), in the
 * optimizer's pieces. Sums commute, so this may run before or after the
 * data-parallel synchronisation has completed (not while it is in flight
 * on the same memory). */
void tp_reduce_replicated_grads(tp_t *t, model_t *m, const optim_t *opt);

/* Bytes one rank sends on the tensor-parallel communicator (nccl-tests bus
 * bytes, comm.h) for ONE micro-batch of rows_full tokens through each kind
 * of unit, [place][0 forward, 1 backward]. With X = rows_full x dim x the
 * dtype's size and f = (T-1)/T:
 *   layer      no sp: 2 all-reduces each way               2 x 2f X | 2 x 2f X
 *              sp:    forward 2 all-gathers + 2 reduce-scatters    4f X
 *                     backward 4 all-gathers + 2 reduce-scatters   6f X
 *   embedding  no sp: all-reduce | nothing    sp: reduce-scatter | all-gather
 *   head       vocab: all-gather of the lse + all-reduce of the picked logit
 *              (fp32, one each per token); sp: + all-gather forward, all-gather +
 *              reduce-scatter backward; no sp: + all-reduce backward */
typedef struct { double b[TP_PLACES][2]; } tp_bytes_t;
tp_bytes_t tp_bytes_formula(const model_t *m, size_t rows_full);
/* Bytes of tp_reduce_replicated_grads per step: all-reduces of the norm gains
 * (sp) over the tp ranks and of shared key/value heads over their group. */
double tp_grad_bytes_formula(const model_t *m);

/* The bytes of one micro-batch's activations (model_acts_t.bytes, keeping
 * everything: no recomputation), split by where they sit. R = residual rows
 * (rows_full / T with sp), Rf = rows_full, es = the dtype's size, H, KV, F, V
 * this rank's heads, kv heads, ffn and vocabulary:
 *   outside  (the residual stream and norms, per layer):  R (4 dim es + 8)
 *            + the chunk output and the final norm:       R (2 dim es + 4)
 *   inside   (the tensor-parallel regions, per layer):
 *            Rf (es (2 H hd + 2 KV hd + 3 F) + 4 H)        q, att, k, v, u1, u3, g, lse
 *            + the head:                                  Rf (V es + 8)
 *   other    tokens and targets:                          Rf 8
 * Without sp every tp rank holds the whole "outside"; sp divides it by T. */
typedef struct { double outside, inside, other, total; } tp_acts_t;
tp_acts_t tp_acts_formula(const model_t *m, int B);

#ifdef __cplusplus
}
#endif
#endif
