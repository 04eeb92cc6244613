/* model.h: the Llama-style transformer every trainer chapter trains.
 *
 *   tokens -> embedding -> L x [ x + Attn(RMSNorm(x)) ; h + MLP(RMSNorm(h)) ]
 *          -> RMSNorm -> lm_head -> softmax cross-entropy
 *
 * Attn: causal multi-head attention with rotary position embeddings and
 * grouped-query heads; MLP: SwiGLU, w2(silu(x w1) * (x w3)). The exact
 * definition (norm epsilon, RoPE pairing, initialisation, layout, the dump
 * file) is in common/MODEL.md; the kernels are in ops.h.
 *
 * Constants: RMSNorm eps 1e-5 (inside the sqrt); RoPE base 10000 with
 * ADJACENT dimensions (2i, 2i+1) of each head paired, frequency
 * base^(-2i/hd); attention scale 1/sqrt(hd); no biases anywhere; untied
 * embedding and lm_head.
 *
 * Parameters live in ONE flat array, in this order (every matrix row-major,
 * stored (in, out) so that y = x @ W):
 *   tok_embedding (vocab, dim)
 *   for each layer l:
 *     attn_norm (dim)
 *     wq (dim, heads*hd)   wk (dim, kv_heads*hd)   wv (dim, kv_heads*hd)
 *     wo (heads*hd, dim)
 *     mlp_norm (dim)
 *     w1 (dim, ffn) gate   w3 (dim, ffn) up        w2 (ffn, dim) down
 *   final_norm (dim)
 *   lm_head (dim, vocab)
 * A model object may hold only layers [first, last) (a pipeline stage): its
 * flat array is the same sequence with the embedding present only when
 * first == 0 and final_norm + lm_head only when last == layers, and every
 * offset in its layout is relative to that array.
 *
 * Precision: `params` (the working copy) and activations have the model's
 * dtype (fp32 or bf16); `grads` are ALWAYS fp32 and accumulate with +=
 * across micro-batches until model_zero_grads (like Megatron's main_grad).
 * Activation gradients use the working dtype. */
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
    int vocab, dim, layers, heads, kv_heads, ffn, seq;
} model_config_t;

/* usage_error()s (one line, every rank) unless: all fields >= 1, vocab >= 2,
 * heads divides dim, kv_heads divides heads, head_dim = dim/heads even. */
void model_config_check(const model_config_t *c);
/* The default MLP hidden size, as Llama: floor(8*dim/3) rounded UP to a
 * multiple of 64 (dim 512 -> 1408, dim 256 -> 704). */
int model_default_ffn(int dim);
/* Parameters of the FULL model. */
size_t model_param_count(const model_config_t *c);

/* Model FLOPs per token of one forward + backward, matmuls only, as in
 * Kaplan et al. 2020 (C = 6N per token) with the attention term of
 * Chowdhery et al. 2022 (PaLM, appendix B) and Narayanan et al. 2021:
 *     6 * N_matmul + 12 * layers * dim * seq
 * N_matmul counts every weight a matmul reads (q, k, v, o, w1, w3, w2 of every
 * layer and lm_head; not the embedding lookup or the norm gains); 12 L C T is
 * the score (q k^T) and mix (p v) products, 2 x 2 T C FLOPs per token and
 * layer forward, x 3 for forward + backward, counted over the full T x T
 * square as PaLM does. */
double model_flops_per_token(const model_config_t *c);

/* ---- the flat layout -------------------------------------------------------
 * Offsets (in elements) into the flat array of a model holding layers
 * [first, last). Tensors of one layer are at layer_offset(l) + one of the
 * LAYER_* relative offsets, in the order listed above. */
typedef struct {
    size_t attn_norm, wq, wk, wv, wo, mlp_norm, w1, w3, w2;  /* relative to the layer */
} layer_offsets_t;

typedef struct {
    int first, last;            /* layers held: [first, last) */
    int has_embedding;          /* first == 0 */
    int has_head;               /* last == layers: final_norm and lm_head */
    size_t embedding;           /* offset of tok_embedding (when has_embedding) */
    size_t layers_begin;        /* offset of layer `first` */
    size_t layer_size;          /* elements per layer */
    layer_offsets_t in_layer;   /* tensor offsets inside one layer */
    size_t final_norm, lm_head; /* offsets (when has_head) */
    size_t total;               /* elements in this object's flat array */
} model_layout_t;

void model_layout(model_layout_t *lay, const model_config_t *c, int first, int last);
/* [begin, end) of layer l (first <= l < last) in the layout's flat array. */
size_t model_layer_begin(const model_layout_t *lay, int l);
size_t model_layer_end(const model_layout_t *lay, int l);

/* One named tensor of a layout: "tok_embedding", "layers.3.wq", "lm_head"... */
typedef struct {
    char name[32];
    size_t offset, rows, cols;  /* vectors have rows = 1 */
    int is_norm;                /* RMSNorm gain: initialised to 1, no weight decay */
} model_tensor_t;
/* Fills up to max entries in flat-array order; returns how many tensors the
 * layout has (1 + 9 per layer + 2 for the full model). */
int model_tensors(const model_layout_t *lay, const model_config_t *c, model_tensor_t *out,
                  int max);

/* ---- initialisation (host, deterministic, identical on every rank) ---------
 * Fills the FULL model's flat fp32 array: a normal z_i ~ N(0, 1) is drawn
 * for EVERY flat index i in order (splitmix64 + Box-Muller, MODEL.md) and
 *   norm gains: 1 (z_i discarded)
 *   wo, w2: 0.02 / sqrt(2 * layers) * z_i   (residual-path outputs, GPT-2 style)
 *   every other matrix (embedding, wq, wk, wv, w1, w3, lm_head): 0.02 * z_i */
void model_init_params(float *host_params_fp32, const model_config_t *c, uint64_t seed);
/* Copies the part of a FULL flat array that a [first, last) object holds
 * into a flat array of that object's layout (host to host). */
void model_stage_slice(const model_config_t *c, int first, int last, const float *full,
                       float *stage);

/* ---- activations ----------------------------------------------------------- */
/* What one block keeps from forward for its backward (N = B*T rows; type =
 * the model's dtype unless float *). */
typedef struct {
    void *x;            /* (N, C) block input (the residual stream; not owned) */
    void *xn1;          /* (N, C) attn_norm(x) */
    float *rstd1;       /* (N) */
    void *q;            /* (N, H*hd) after RoPE */
    void *k, *v;        /* (N, KV*hd), k after RoPE */
    void *att;          /* (N, H*hd) attention output, before wo */
    float *lse;         /* (B, H, T) attention log-sum-exp */
    void *h;            /* (N, C) x + att @ wo */
    void *xn2;          /* (N, C) mlp_norm(h) */
    float *rstd2;       /* (N) */
    void *u1, *u3;      /* (N, F) xn2 @ w1, xn2 @ w3 */
    void *g;            /* (N, F) silu(u1) * u3 */
} block_acts_t;

/* All activations of one micro-batch through a [first, last) object. */
typedef struct {
    int n_layers;
    void **resid;         /* n_layers + 1 buffers (N, C): resid[i] is the input of
                             layer first+i, resid[n_layers] the output of the last */
    block_acts_t *blocks; /* n_layers; blocks[i].x == resid[i] */
    void *xnf;            /* (N, C) final_norm(output)     (has_head) */
    float *rstdf;         /* (N) */
    void *logits;         /* (N, V) */
    float *lse, *loss;    /* (N) */
} model_acts_t;

/* Scratch the backward pass reuses for every layer (one set per model). */
typedef struct {
    void *dres;           /* (N, C) gradient of the residual stream, updated in place */
    void *dxn;            /* (N, C) */
    void *dq, *dk, *dv;   /* (N, H*hd), (N, KV*hd) x2 */
    void *datt;           /* (N, H*hd) */
    void *du1, *du3, *dg; /* (N, F) */
    void *dlogits;        /* (N, V) (has_head) */
} model_scratch_t;

/* ---- the model object ------------------------------------------------------ */
typedef struct {
    model_config_t cfg;
    const device_t *d;
    dtype_t dtype;          /* working weights and activations */
    int first, last;        /* layers held */
    int hd;                 /* head dim = dim / heads */
    int max_batch;          /* activations are allocated for this many sequences */
    model_layout_t layout;
    void *params;           /* (layout.total) dtype, device */
    float *grads;           /* (layout.total) fp32, device */
    float *rope_cs;         /* (seq, hd/2, 2) fp32, device: see op_rope */
    model_acts_t *acts;     /* the set forward writes and backward reads: &own_acts
                               unless a chapter swaps in another (model_acts_alloc) */
    model_acts_t own_acts;
    model_scratch_t scratch;
    int *tokens, *targets;  /* (max_batch*seq) int32, device */
    float *loss_host;       /* (max_batch*seq) */
    int batch;              /* B of the last model_forward */
} model_t;

/* Allocates params (zero), grads (zero), activations and scratch for up to
 * max_batch sequences; holds layers [first_layer, last_layer) (0, layers for
 * the whole model). Checks the config (model_config_check). */
void model_init(model_t *m, const model_config_t *c, int first_layer, int last_layer,
                int max_batch, dtype_t dtype, const device_t *d);
void model_free(model_t *m);
void model_acts_alloc(const model_t *m, model_acts_t *a, int max_batch);
void model_acts_free(const model_t *m, model_acts_t *a);

/* Load the working params from a host fp32 array in the object's OWN layout
 * (m->layout.total elements), converting to the model's dtype. */
void model_load_params(model_t *m, const float *host_fp32);
/* Same, from the FULL model's array (takes the object's slice). */
void model_load_full_params(model_t *m, const float *host_full_fp32);
/* The working params as fp32 on the host, object's layout. */
void model_get_params(const model_t *m, float *host_fp32);
void model_zero_grads(model_t *m);

/* ---- forward and backward ----------------------------------------------------
 * model_forward runs one micro-batch of B <= max_batch sequences of cfg.seq
 * tokens. tokens_host, targets_host: (B, seq) int32 on the host (targets
 * < 0 are ignored). Without the embedding (first > 0) tokens_host may be NULL
 * and the input is read from model_input(m); without the head (last <
 * layers) targets_host may be NULL, the output is left in model_output(m)
 * and the return value is 0. With the head it returns the SUM over the B*seq
 * tokens of the cross-entropy loss (the trainer divides by the global token
 * count). Synchronises (the loss comes back to the host). */
double model_forward(model_t *m, const int *tokens_host, const int *targets_host, int B);

/* Backward through the last forward, ACCUMULATING (+=) into m->grads.
 * With the head, dlogits = (softmax - onehot) * dlogits_scale (the trainer
 * passes 1/global_tokens, so grads are of the mean loss); without it, the
 * gradient of the stage's output must be in model_grad_io(m) (dtype, (B, seq,
 * dim)), and dlogits_scale is unused. Without the embedding, model_grad_io(m)
 * ends holding the gradient of the stage's input.
 * grad_ready (may be NULL) is called as soon as each contiguous range of
 * grads is final for this micro-batch, in this order: [final_norm, total)
 * (final norm + lm_head, when has_head), then each layer from last-1 down to
 * first ([model_layer_begin, model_layer_end)), then [embedding, +vocab*dim)
 * (when has_embedding). On a GPU the range's kernels are queued, not
 * finished, when it is called: order communication after them on the
 * compute stream (an event) before reading. */
typedef void (*grad_ready_fn)(void *ctx, size_t offset, size_t count);
void model_backward(model_t *m, float dlogits_scale, grad_ready_fn grad_ready, void *ctx);

/* The stage's input (resid[0]) and output (resid[n_layers]) of the current
 * activation set, and the residual-gradient buffer; all (B, seq, dim), dtype. */
void *model_input(model_t *m);
void *model_output(model_t *m);
void *model_grad_io(model_t *m);

/* ---- one block, on explicit buffers (activation checkpointing recomputes a
 * block by calling block_forward again; later chapters split it) ----
 * block_forward: a->x must be set; fills every other field of a and writes
 * the block's output to y ((B, seq, dim), dtype; y != a->x).
 * block_backward: dres holds dL/dy on entry and dL/dx on return (in place);
 * accumulates the layer's parameter gradients into m->grads. */
void block_forward(model_t *m, int layer, block_acts_t *a, void *y, int B);
void block_backward(model_t *m, int layer, const block_acts_t *a, void *dres, int B);

/* ---- gradient dump (format in MODEL.md, little-endian) ---------------------
 * Writes, for the FULL model: header (magic "LLMDUMP1", version, config, B,
 * eps, rope base, parameter count), params fp32, tokens int32 (B, seq),
 * targets int32 (B, seq), loss float64 (the mean cross-entropy over the
 * batch's tokens), grads fp32 (of that same mean loss). Dies on I/O errors. */
#define MODEL_DUMP_VERSION 1
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
