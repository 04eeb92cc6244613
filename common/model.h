/* model.h: the Llama-style transformer every trainer chapter trains, and the
 * seams through which the chapters split it.
 *
 *   tokens -> embedding -> L x [ x + Attn(RMSNorm(x)) ; h + MLP(RMSNorm(h)) ]
 *          -> RMSNorm -> lm_head -> softmax cross-entropy
 *
 * Attn: causal multi-head attention with rotary position embeddings and
 * grouped-query heads; MLP: SwiGLU, w2(silu(x w1) * (x w3)). The exact
 * definition (norm epsilon, RoPE pairing, initialisation, layout, the dump
 * file) is in common/MODEL.md; the kernels are in ops.h.
 *
 * One object, many shapes. A model_t holds one SHARD of the model
 * (model_shard_t), which may be the whole of it:
 *   - layers (pipeline parallelism): `chunks` runs of `per_chunk` layers, run
 *     c starting at layer first + c * chunk_stride (one run for a plain
 *     stage; V runs spaced P stages apart for the interleaved schedule); the
 *     embedding lives with layer 0, the final norm and lm_head with layer L-1;
 *   - tensor parallelism over tp ranks (Megatron): query heads, ffn and vocab
 *     split into tp slices; key/value heads split too when tp divides them,
 *     otherwise each rank holds the one its query heads read (replicated);
 *     norms replicated. Two seams carry the communication (model_tp_t):
 *     "gather" before a column-parallel product and "reduce" after a
 *     row-parallel one, with sequence parallelism (sp) the residual stream
 *     is sharded along its rows between them;
 *   - context parallelism over cp ranks: each rank holds cp's share of every
 *     sequence's tokens, as one chunk (rank i: chunk i of cp) or, balanced for
 *     causal attention, two (chunks i and 2 cp - 1 - i of 2 cp); the
 *     attention core (model_attn_t) sees the other ranks' keys and values.
 * Parameters are "the full model, sliced": every shard's flat array is the
 * full model's tensors restricted to the shard's blocks (model_tensors says
 * where each block sits), so initialising the full model and keeping a slice
 * gives every rank the weights of the 1-rank run.
 *
 * Activations of one micro-batch live in their own object (model_acts_t),
 * which forward fills and backward reads: several micro-batches can be in
 * flight on one stage (pipeline schedules). A model's parameters come in
 * UNITS (the embedding, each layer, the head = final norm + lm_head) with
 * hooks before and after each unit's forward and backward (FSDP gathers a
 * unit's weights before it; gradient synchronisation starts after a unit's
 * backward); a unit's weights and gradients may live anywhere (unit_w,
 * unit_g), by default in the object's own flat arrays.
 *
 * Precision: the working weights and activations have the model's dtype
 * (fp32 or bf16); parameter gradients are ALWAYS fp32 and accumulate with +=
 * across micro-batches until model_zero_grads (Megatron's main_grad). */
#ifndef MODEL_H
#define MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "device.h"
#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MODEL_NORM_EPS 1e-5f
#define MODEL_ROPE_BASE 10000.0
#define MODEL_INIT_STD 0.02

typedef struct {
    int vocab, dim, layers, heads, kv_heads;
    int head_dim;           /* hd: q is (dim, heads*hd); 0 in a flag means dim / heads */
    int ffn, seq;
} model_config_t;

/* usage_error()s (one line, every rank) unless: all fields >= 1, vocab >= 2,
 * kv_heads divides heads, head_dim even. A head_dim of 0 becomes dim / heads
 * (which must divide). */
void model_config_check(model_config_t *c);
/* The default MLP hidden size, as Llama: floor(8*dim/3) rounded UP to a
 * multiple of 64 (dim 512 -> 1408, dim 256 -> 704). */
int model_default_ffn(int dim);
/* Parameters of the FULL model. */
size_t model_param_count(const model_config_t *c);

/* Model FLOPs per token of one forward + backward, matmuls only, as in
 * Kaplan et al. 2020 (C = 6N per token) with the attention term of
 * Chowdhery et al. 2022 (PaLM, appendix B) and Narayanan et al. 2021:
 *     6 * N_matmul + 12 * layers * (heads * head_dim) * seq
 * N_matmul counts every weight a matmul reads (q, k, v, o, w1, w3, w2 of every
 * layer and lm_head; not the embedding lookup or the norm gains); the
 * attention term is the score (q k^T) and mix (p v) products, 2 x 2 T H hd
 * FLOPs per token and layer forward, x 3 for forward + backward, counted over
 * the full T x T square as PaLM does. */
double model_flops_per_token(const model_config_t *c);
/* FLOPs per token of ONE layer's forward (what recomputing it costs):
 * 2 x its matmul weights + 4 T H hd. */
double model_layer_forward_flops_per_token(const model_config_t *c);

/* ---- shards ------------------------------------------------------------------ */
typedef struct {
    int first, per_chunk, chunks, chunk_stride;   /* layers (see above) */
    int tp, tp_rank, sp;                          /* tensor (and sequence) parallelism */
    int cp, cp_rank, cp_balance;                  /* context parallelism */
} model_shard_t;

/* The whole model on one rank. */
model_shard_t model_shard_full(const model_config_t *c);
/* Layers of pipeline stage `stage` of P with V chunks per stage (V > 1: the
 * interleaved schedule's virtual stages): chunk v holds the L / (P V) layers
 * of virtual stage v P + stage. Leaves the tp and cp fields alone. */
void model_shard_stage(model_shard_t *s, const model_config_t *c, int P, int stage, int V);
/* usage_error() with the reason unless the shard fits the config: layers in
 * range, tp dividing heads, ffn and vocab and either dividing kv_heads or a
 * multiple of it, cp (2 cp when balanced) dividing seq, sp only with tp > 1. */
void model_shard_check(const model_config_t *c, const model_shard_t *s);
/* The global layer of this shard's local layer i (0 <= i < per_chunk * chunks). */
int model_shard_layer(const model_shard_t *s, int i);

/* One named tensor of a shard's flat array: "tok_embedding", "layers.3.wq". */
typedef struct {
    char name[32];
    int layer;                  /* global layer, -1 for the embedding, L for the head */
    size_t offset;              /* in the shard's flat array */
    size_t rows, cols;          /* the shard's block (vectors have rows = 1) */
    size_t full_rows, full_cols, row0, col0;   /* the whole tensor and the block's place in it */
    size_t full_offset;         /* the whole tensor's offset in the full model's flat array */
    int is_norm;                /* RMSNorm gain: initialised to 1, no weight decay */
    int tp_replicas;            /* tensor-parallel ranks holding this same block (1: sharded) */
    int tp_owner;               /* this rank is the first of them (counts the block once) */
    int tp_partial_grad;        /* each replica computes only part of the gradient: the
                                   replicas' gradients must be summed (kv heads shared by
                                   several ranks' query heads; norms under sp) */
} model_tensor_t;
/* Fills up to max entries in flat-array order; returns how many the shard has. */
int model_tensors(const model_config_t *c, const model_shard_t *s, model_tensor_t *out, int max);
/* Elements in the shard's flat array. */
size_t model_shard_size(const model_config_t *c, const model_shard_t *s);
/* Host fp32 arrays. slice: out[0, count) = the values the FULL flat array
 * holds for the shard's elements [flat, flat + count); place: those values
 * (in) written into their places in full, skipping, with owners_only, the
 * blocks of which this rank is not the first tensor-parallel replica (so
 * that summing every rank's placement over the ranks gives the full array).
 * flat = 0, count = model_shard_size for the whole shard. */
void model_shard_slice(const model_config_t *c, const model_shard_t *s, size_t flat, size_t count,
                       const float *full, float *out);
void model_shard_place(const model_config_t *c, const model_shard_t *s, size_t flat, size_t count,
                       const float *in, float *full, int owners_only);

/* ---- initialisation (host, deterministic, identical on every rank) ---------
 * Fills the FULL model's flat fp32 array: a normal z_i ~ N(0, 1) is drawn
 * for EVERY flat index i in order (splitmix64 + Box-Muller, MODEL.md) and
 *   norm gains: 1 (z_i discarded)
 *   wo, w2: 0.02 / sqrt(2 * layers) * z_i   (residual-path outputs, GPT-2 style)
 *   every other matrix (embedding, wq, wk, wv, w1, w3, lm_head): 0.02 * z_i */
void model_init_params(float *host_params_fp32, const model_config_t *c, uint64_t seed);

/* ---- the object ----------------------------------------------------------------- */
typedef struct model model_t;
typedef struct model_acts model_acts_t;

/* PASS_BACKWARD: a unit's whole backward, or (split backward) its weight-
 * gradient part W, after which the unit's gradients are final; PASS_INPUT_GRAD:
 * the input-gradient part B of a split backward (model_backward_input). */
typedef enum { PASS_FORWARD, PASS_BACKWARD, PASS_RECOMPUTE, PASS_INPUT_GRAD } model_pass_t;
typedef void (*model_unit_fn)(void *ctx, model_t *m, int unit, model_pass_t pass);

/* A unit: the parameters one hook call is about. */
typedef struct {
    size_t offset, count;       /* in the shard's flat array */
    int layer;                  /* global layer, -1 embedding, L head */
    int chunk;                  /* the pipeline chunk it belongs to */
} model_unit_t;

/* Tensor-parallel seams (set by the tensor-parallel module when tp > 1; the
 * model calls nothing when tp = 1). Rows are residual-stream rows: rows_full
 * = all of this rank's tokens (B x seq / cp), rows = rows_full / tp with sp,
 * rows_full without.
 *   gather (only with sp): dst (rows_full, C) = the tp ranks' src (rows, C)
 *                          blocks in rank order (all-gather);
 *   reduce: dst (rows, C) = sum over the tp ranks of src (rows_full, C):
 *           with sp, block tp_rank of the sum (reduce-scatter); without,
 *           dst == src and the sum replaces it (all-reduce);
 *   vocab: over the tp ranks' vocabulary shards, lse (n) <- lse_combine of
 *          theirs, picked (n) <- the sum of theirs. */
typedef struct {
    void *ctx;
    void (*gather)(void *ctx, const void *src, void *dst, size_t rows, int C, dtype_t t);
    void (*reduce)(void *ctx, void *src, void *dst, size_t rows, int C, dtype_t t);
    void (*vocab)(void *ctx, float *lse, float *picked, int n);
} model_tp_t;

/* The attention core: q (Rq, H*hd) after RoPE, k and v (Rq, KV*hd), with this
 * rank's rows (model_acts_t: chunk-major); out (Rq, H*hd), lse (chunks, B, H,
 * Tc); backward ACCUMULATES into dq, dk, dv (zeroed by the caller). The
 * default (model_attn_local) computes every pair of this rank's chunks;
 * context parallelism brings the other ranks' keys and values. H and KV are
 * this shard's heads. */
typedef struct {
    void *ctx;
    void (*forward)(void *ctx, model_t *m, const model_acts_t *a, const void *q, const void *k,
                    const void *v, void *out, float *lse);
    void (*backward)(void *ctx, model_t *m, const model_acts_t *a, const void *q, const void *k,
                     const void *v, const void *out, const void *dout, const float *lse,
                     void *dq, void *dk, void *dv);
} model_attn_t;

enum { MODEL_MAX_HOOKS = 8 };

/* What one block keeps from forward for its backward (rows R = the residual
 * stream's, Rf = all of this rank's tokens; type the model's dtype unless
 * float *). With sequence parallelism the norms' outputs are kept sharded
 * (R rows) and gathered again in backward, as Korthikanti et al. do. */
typedef struct {
    void *x;            /* (R, C) block input (the residual stream; not owned) */
    void *xn1;          /* (R, C) attn_norm(x) */
    float *rstd1;       /* (R) */
    void *q;            /* (Rf, H*hd) after RoPE */
    void *k, *v;        /* (Rf, KV*hd), k after RoPE */
    void *att;          /* (Rf, H*hd) attention output, before wo (NULL: recomputed) */
    float *lse;         /* (chunks, B, H, Tc) attention log-sum-exp */
    void *h;            /* (R, C) x + att @ wo */
    void *xn2;          /* (R, C) mlp_norm(h) */
    float *rstd2;       /* (R) */
    void *u1, *u3;      /* (Rf, F) xn2 @ w1, xn2 @ w3 */
    void *g;            /* (Rf, F) silu(u1) * u3 */
    void *dk_later, *dv_later;   /* (Rf, KV*hd) a token slice that later slices follow: the
                                    gradients of its k and v their backward adds (else NULL) */
} block_acts_t;

/* One micro-batch through one chunk of the shard. */
struct model_acts {
    int chunk, B;
    int n_layers;            /* layers in the chunk */
    int first_unit;          /* unit of its first layer */
    int has_embedding, has_head;
    int recompute_every;     /* 0: keep everything; C >= 1: keep the input of every C-th
                                layer, recompute the others' activations in backward */
    int selective;           /* keep q, k, v but not the attention output: recompute the
                                attention core in backward (Korthikanti et al. 2022) */
    int recompute_block;     /* layers [0, recompute_block) of the chunk are recomputed: all
                                of them with recompute_every, none without recomputation,
                                the first K with the block policy (each alone, keeping only
                                its input; the others keep everything: Megatron's block
                                method) */
    size_t rows, rows_full;  /* R and Rf */
    int *tokens, *targets;   /* (Rf) device, this rank's tokens, chunk-major */
    int *targets_host;       /* (Rf) */
    void **resid;            /* n_layers + 1 buffers (R, C): resid[i] is the input of the
                                chunk's layer i, resid[n_layers] its output */
    block_acts_t *blocks;    /* n_layers */
    void *xnf;               /* (R, C) final_norm(output)   (has_head) */
    float *rstdf;            /* (R) */
    void *logits;            /* (Rf, V) */
    float *lse, *picked;     /* (Rf) */
    float *lse_host, *picked_host;
    size_t bytes;            /* device bytes this object holds */
    long recomputed;         /* layer forwards recomputed by the last backward */
    void **bufs;             /* every device buffer, for freeing */
    int nbufs, capbufs;
    /* a split backward (defer_w): what B keeps for W, per micro-batch */
    struct layer_dout *dout; /* n_layers: each linear's output gradient */
    void *dlogits;           /* (Rf, V) the head's (has_head) */
    void *demb;              /* (Rf, C) the embedding's (has_embedding) */
    size_t dout_bytes;       /* device bytes of the three (counted in bytes too) */
    int b_done;              /* B has run and W has not */
    /* A token slice of the sequences (TeraPipe, model_acts_init_slice); for a
     * whole sequence Tc = m->Tc, pos = 0, no slices before. */
    int Tc;                  /* tokens per sequence in each local chunk of this object */
    int pos;                 /* its positions are the chunks' shifted by pos */
    model_acts_t *const *before;   /* (n_before) the objects of the earlier slices of the same
                                sequences, still held: this slice's queries see their keys and
                                values, and its backward adds into their dk_later, dv_later */
    int n_before;
    int layer;               /* the chunk's layer running now (the attention core reads it) */
    size_t kv_bytes;         /* of bytes: the keys and values kept, with dk_later and dv_later */
};

/* The output gradients the weight-gradient products of one layer read:
 * dW = input^T @ dout for w2 (dy2: the gradient of the block's output),
 * w1, w3 (du1, du3), wo (dyo: of h), wq, wk, wv (dq, dk, dv after RoPE's
 * inverse). */
typedef struct layer_dout { void *dy2, *du1, *du3, *dyo, *dq, *dk, *dv; } layer_dout_t;

struct model {
    model_config_t cfg;
    model_shard_t shard;
    const device_t *d;
    dtype_t dtype;
    int max_batch;          /* micro-batches of at most this many sequences */
    /* the shard's shapes */
    int hd, H, KV, kv0, F, V, v0;   /* local heads, kv heads (from kv0), ffn, vocab (from v0) */
    int T, nck, Tc;                 /* local tokens per sequence, chunks of Tc */
    int chunk_pos[2];               /* position of each local token chunk's first token */
    int n_layers;                   /* local layers, all chunks */
    int has_embedding, has_head;
    size_t size;                    /* elements in the flat array */
    size_t layer_size;
    struct { size_t attn_norm, wq, wk, wv, wo, mlp_norm, w1, w3, w2; } lo;   /* in a layer */
    int n_units;
    model_unit_t *units;
    void *params;           /* (size) dtype, device, or NULL (model_init without them) */
    float *grads;           /* (size) fp32, device, or NULL */
    void **unit_w;          /* (n_units) where each unit's weights are (default: in params) */
    float **unit_g;         /* (n_units) where its gradients accumulate (default: in grads) */
    float *rope_cs;         /* (seq, hd/2, 2) fp32, device */
    /* seams and hooks */
    const model_tp_t *tp;
    model_attn_t attn;
    struct { model_unit_fn before, after; void *ctx; } hooks[MODEL_MAX_HOOKS];
    int n_hooks;
    /* backward scratch, one set for every micro-batch */
    struct {
        void *dres;           /* (R, C) gradient of the residual stream */
        void *dxn;            /* (Rf, C) partial input gradient of a column-parallel product */
        void *dxn_r;          /* (R, C) the same reduced (== dxn without sp) */
        void *full;           /* (Rf, C) a gathered norm output or gradient (sp) */
        void *part;           /* (Rf, C) a row-parallel product before its reduce (sp) */
        void *dq, *dk, *dv, *datt;
        void *du1, *du3, *dg;
        void *dlogits;        /* (Rf, V) (has_head) */
        void *out;            /* (R, C) a recomputed layer's unneeded output */
        void *att;            /* (Rf, H*hd) recomputed attention output (selective) */
        float *lse;           /* its lse */
        float *lse_b;         /* (B, H, Tc) partial lse of the local attention */
        void *att_b;          /* (B, Tc, H*hd) partial output of the local attention */
        layer_dout_t dout;    /* a fused backward's: du1, du3, dq, dk, dv above (dy2, dyo NULL) */
    } scr;
};

/* model_init's with_params: what flat arrays the model holds. */
enum {
    MODEL_NO_PARAMS = 0,        /* neither (ZeRO-3: hooks bring each unit's weights) */
    MODEL_PARAMS_AND_GRADS = 1, /* both (DDP) */
    MODEL_PARAMS_ONLY = 2       /* the weights, not the gradients (ZeRO-1/2 keep their own) */
};
/* Allocates the scratch and the RoPE table and the flat params (zero) and
 * grads (zero) that with_params asks for, pointing unit_w/unit_g into them;
 * where the model holds none, a unit hook must set unit_w[u] / unit_g[u]
 * before the unit runs. Micro-batches hold at most max_batch sequences.
 * Checks config and shard. Memory is counted as MEM_PARAMS, MEM_GRADS and
 * MEM_ACTS. */
void model_init(model_t *m, const model_config_t *c, const model_shard_t *s, int max_batch,
                dtype_t dtype, const device_t *d, int with_params);
void model_free(model_t *m);
/* Hooks run in the order added, before/after each unit's forward, backward
 * and recomputation; either may be NULL. */
void model_add_hook(model_t *m, model_unit_fn before, model_unit_fn after, void *ctx);

/* What a micro-batch object keeps for backward: the recomputation policy
 * (06_checkpointing chooses it; all zero: keep everything). */
typedef struct {
    int every;               /* C >= 1: keep the input of every C-th layer, recompute the rest */
    int block;               /* K >= 1: the chunk's first K layers (at most all) recomputed one
                                at a time, the others keeping everything (Megatron's block
                                method); 0 with every */
    int selective;           /* keep q, k, v but recompute the attention core */
    int defer_w;             /* split backward: keep every linear's output gradient from B
                                for a later W (model_backward_input/_weights); needs all
                                activations kept (no recomputation) and no sp */
} model_recompute_t;

/* Activations for one micro-batch of B <= max_batch sequences through chunk
 * `chunk`, under the recomputation policy rc. */
void model_acts_init(model_t *m, model_acts_t *a, int chunk, int B, model_recompute_t rc);
/* The same for the token slice [pos, pos + len) of B sequences (TeraPipe):
 * needs cp = 1 and keeps everything (no recomputation: later slices read
 * this one's keys and values). The caller sets before and n_before before
 * model_forward. */
void model_acts_init_slice(model_t *m, model_acts_t *a, int chunk, int B, int pos, int len);
void model_acts_free(model_t *m, model_acts_t *a);
/* The micro-batch's tokens: tokens and targets (B, seq) int32 on the host, the
 * WHOLE sequences; this rank's rows are picked (context parallelism) and
 * copied to the device. tokens may be NULL without the embedding, targets
 * without the head; targets < 0 are ignored. */
void model_set_batch(model_t *m, model_acts_t *a, const int *tokens, const int *targets);

/* Load the working params from a host fp32 array in the shard's layout,
 * converting to the model's dtype; read them back. */
void model_load_params(model_t *m, const float *host_fp32);
void model_get_params(const model_t *m, float *host_fp32);
void model_zero_grads(model_t *m);

/* ---- forward and backward ------------------------------------------------------
 * model_forward runs the micro-batch through its chunk: the embedding (when
 * the chunk has it; else the input must be in a->resid[0], (R, C)), the
 * layers, and the head (when it has it; else the output is left in
 * a->resid[n_layers]). With the head it returns the SUM of the cross-entropy
 * over this rank's Rf tokens (identical on the tp ranks: model_counts_loss
 * says which one counts it); the trainer divides by the global token count.
 * Synchronises (the loss comes back to the host). */
double model_forward(model_t *m, model_acts_t *a);
int model_counts_loss(const model_t *m);

/* Backward through a's forward, ACCUMULATING (+=) into the units' gradients.
 * With the head, dlogits = (softmax - onehot) * scale (the trainer passes
 * 1/global_tokens, so grads are of the mean loss) when dy is NULL; a non-NULL
 * dy is dlogits itself ((Rf, V), dtype, device), computed where the loss was
 * taken (DataParallel's device 0), and scale is unused. Without the head,
 * dy is the gradient of the chunk's output ((R, C), dtype, device).
 * Without the embedding the gradient of the chunk's input is left in
 * model_grad_input(m) (valid until the next backward). After each unit's
 * backward the after-hooks run (on a GPU its kernels are queued, not
 * finished: order communication after them on the compute stream). */
void model_backward(model_t *m, model_acts_t *a, float scale, const void *dy);
void *model_grad_input(model_t *m);

/* The same backward in two halves (Qi et al. 2023, zero-bubble pipelines),
 * for micro-batch objects made with defer_w:
 *   B  model_backward_input: every input gradient (what the previous stage
 *      waits for, left in model_grad_input as above) and the norm gains'
 *      gradients (RMSNorm's backward yields both in one pass), keeping each
 *      linear's output gradient in a (a->dout, dlogits, demb);
 *   W  model_backward_weights: every weight-gradient product dW += x^T dout
 *      and the embedding's scatter-add, from what B kept.
 * model_backward runs the same two per unit (B then W of each unit, with one
 * scratch set), so split and fused add the same terms in the same order:
 * equal bit for bit. Other micro-batches' B and W may run in between. Hooks:
 * PASS_INPUT_GRAD around each unit's B, PASS_BACKWARD around its W (the
 * unit's gradients are final after it: gradient synchronisation starts there). */
void model_backward_input(model_t *m, model_acts_t *a, float scale, const void *dy);
void model_backward_weights(model_t *m, model_acts_t *a);
/* Bytes a defer_w object keeps from B to W (all its chunk's linears):
 *   es Rf (n_layers (2 C + 2 F + (H + 2 KV) hd) + [head] V + [embedding] C) */
size_t model_dout_bytes(const model_t *m, const model_acts_t *a);

/* Position of the first token of chunk k (0 or 1) of context-parallel rank
 * r's tokens (any rank's, not only this one's: attention cores that bring
 * other ranks' keys need their positions). */
int model_cp_chunk_pos(const model_t *m, int r, int k);

/* The default attention core: every pair of this rank's token chunks, and a
 * token slice's queries against the earlier slices' kept keys and values
 * (merged by online softmax, as context parallelism merges other ranks'). */
void model_attn_local_forward(void *ctx, model_t *m, const model_acts_t *a, const void *q,
                              const void *k, const void *v, void *out, float *lse);
void model_attn_local_backward(void *ctx, model_t *m, const model_acts_t *a, const void *q,
                               const void *k, const void *v, const void *out, const void *dout,
                               const float *lse, void *dq, void *dk, void *dv);

/* ---- gradient dump (format in MODEL.md, little-endian) ---------------------
 * Writes, for the FULL model: header (magic "LLMDUMP1", version, config, B,
 * eps, rope base, head dim, parameter count), params fp32, tokens int32 (B,
 * seq), targets int32 (B, seq), loss float64 (the mean cross-entropy over the
 * batch's tokens), grads fp32 (of that same mean loss). Dies on I/O errors. */
#define MODEL_DUMP_VERSION 2
void model_dump_write(const char *path, const model_config_t *c, const float *params,
                      const int *tokens, const int *targets, int B, double loss,
                      const float *grads);
/* Reads a dump back: fills *c and *B and returns malloc'd arrays (free()
 * them); dies with a clear message on a bad magic, version or size. */
void model_dump_read(const char *path, model_config_t *c, int *B, float **params,
                     int **tokens, int **targets, double *loss, float **grads);

#ifdef __cplusplus
}
#endif
#endif
