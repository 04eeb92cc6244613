/* optim.h: AdamW with fp32 master weights over this rank's part of the
 * parameters, the learning-rate schedule, and the clipping factor.
 *
 * The optimizer owns n elements: fp32 master weights and fp32 moments m and
 * v (12 bytes per parameter; with bf16 working weights and gradients, the
 * "16 bytes per parameter" of mixed-precision Adam). The n elements are
 * PIECES of the model shard's flat array: DDP gives it one piece, the whole
 * array; ZeRO gives each rank its share of every unit (grad_sync.h). Each
 * piece says where its gradients are and where its updated working weights
 * go, so the same optimizer serves every chapter.
 *
 * Hyper-parameters (Llama's): beta1 0.9, beta2 0.95, eps 1e-8, weight decay
 * 0.1 on every matrix (embedding, projections, lm_head) and NOT on RMSNorm
 * gains. The update is op_adamw (ops.h): decoupled decay as PyTorch's AdamW,
 * p <- p (1 - lr wd), then p <- p - lr mhat / (sqrt(vhat) + eps).
 *
 * Plain SGD (sgd = 1: no momentum, no weight decay), p <- p - lr g, is the
 * other update: an update LINEAR in the gradient, so that averaging the
 * weights of ranks that each stepped with their own gradient is the same as
 * stepping with the averaged gradient (03_ddp's local SGD with H = 1). */
#ifndef OPTIM_H
#define OPTIM_H

#include <stddef.h>

#include "device.h"
#include "dtype.h"
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

#define OPTIM_BETA1 0.9f
#define OPTIM_BETA2 0.95f
#define OPTIM_EPS 1e-8f
#define OPTIM_WEIGHT_DECAY 0.1f

typedef struct {
    size_t off;          /* where the piece starts in master, m and v */
    size_t flat;         /* where it starts in the model shard's flat array */
    size_t count;
    float *grad;         /* (count) fp32, device: its gradients */
    void *work;          /* (count) the model's dtype, device: its working weights, or NULL */
} optim_piece_t;

typedef struct {
    const device_t *d;
    size_t n;
    float *master, *m, *v;     /* (n) fp32, device; m = v = 0 at init */
    float beta1, beta2, eps, weight_decay;
    int sgd;                   /* plain SGD instead of AdamW (m and v unused) */
    optim_piece_t *pieces;
    int npieces;
    /* Runs [off, off + count) of the n elements: decayed or not, and the ones
     * this rank counts in the gradient norm (model_tensor_t.tp_owner). */
    struct { int piece; size_t rel, count; int decay, counted; } *runs;
    int nruns;
} optim_t;

/* master_init: (n) fp32 on the host, in piece order (pieces sorted by off,
 * disjoint, inside [0, n); gaps between them are padding and stay unused).
 * The pieces are copied. */
void optim_init(optim_t *o, const optim_piece_t *pieces, int npieces, size_t n,
                const float *master_init, const model_config_t *c, const model_shard_t *s,
                const device_t *d);
void optim_free(optim_t *o);

/* One AdamW step (step >= 1, for bias correction), or SGD step, over every
 * piece; the updated master is also written, converted to wt, to each
 * piece's working weights. grad_scale multiplies every gradient first (the
 * clip factor). SGD leaves the gradients multiplied by -lr grad_scale (they
 * are zeroed before the next step's backward). */
void optim_step(optim_t *o, dtype_t wt, float lr, float grad_scale, int step);

/* The master weights set to w ((n) fp32, device; w == o->master: only the
 * casts), and every piece's working weights to their wt copy. */
void optim_load(optim_t *o, dtype_t wt, const float *w);

/* Sum of squared gradients over the elements this rank counts (norm gains
 * replicated by tensor parallelism once, on their first rank). */
double optim_grad_sumsq(const optim_t *o);

/* Learning rate at step (1-based): linear warm-up max_lr * step / warmup for
 * step <= warmup, then cosine from max_lr down to min_lr at step == total:
 *   p = (step - warmup) / (total - warmup)
 *   lr = min_lr + 0.5 (max_lr - min_lr) (1 + cos(pi p))
 * Steps past total give min_lr. */
float lr_at(int step, int warmup, int total, float max_lr, float min_lr);

/* Gradient-norm clipping. sumsq: the sum of squared gradients over the WHOLE
 * model (each rank's optim_grad_sumsq, summed across the ranks that hold
 * different pieces). Returns the factor to pass as grad_scale:
 * min(1, max_norm / (norm + 1e-6)), and 1 when max_norm <= 0 (no clipping);
 * *norm_out (may be NULL) receives norm = sqrt(sumsq). */
float clip_factor(double sumsq, float max_norm, double *norm_out);

#ifdef __cplusplus
}
#endif
#endif
