/* optim.h: AdamW with fp32 master weights, learning-rate schedule, clipping.
 *
 * The optimizer owns a flat range of n parameters: fp32 master weights and
 * fp32 moments m and v (12 bytes per parameter; with bf16 working weights and
 * gradients, the "16 bytes per parameter" of mixed-precision Adam). DDP
 * gives it the whole flat array; ZeRO gives each rank its shard, a sub-range,
 * and says where the range starts (optim_no_decay_norms) so that weight decay
 * still skips the right elements.
 *
 * Hyper-parameters (Llama's): beta1 0.9, beta2 0.95, eps 1e-8, weight decay
 * 0.1 on every matrix (embedding, projections, lm_head) and NOT on RMSNorm
 * gains. The update is op_adamw (ops.h): decoupled decay as PyTorch's AdamW,
 * p <- p (1 - lr wd), then p <- p - lr mhat / (sqrt(vhat) + eps). */
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
    const device_t *d;
    size_t n;
    float *master, *m, *v;     /* (n) fp32, device; m = v = 0 at init */
    float beta1, beta2, eps, weight_decay;
    /* Sub-ranges [begin, end) of [0, n) updated WITHOUT weight decay, sorted,
     * disjoint (the norm gains, once optim_no_decay_norms has run). */
    size_t (*no_decay)[2];
    int n_no_decay;
} optim_t;

/* master_init: (n) fp32 on the host, copied to the device. Weight decay then
 * applies to all n elements until optim_no_decay_norms is called. */
void optim_init(optim_t *o, const float *master_init, size_t n, const device_t *d);
void optim_free(optim_t *o);
/* Exempt the RMSNorm gains from weight decay: the optimizer's element i is
 * element offset + i of the flat array described by lay (offset = the
 * shard's start for ZeRO, 0 otherwise). Every trainer calls it once. */
void optim_no_decay_norms(optim_t *o, const model_layout_t *lay, const model_config_t *c,
                          size_t offset);

/* One AdamW step (step >= 1, for bias correction) over the n elements:
 * grads (n) fp32 device; the updated master is also written, converted to
 * wt, to working_params (n elements of type wt, device; may be NULL).
 * grad_scale multiplies every gradient first (the clip factor). */
void optim_step(optim_t *o, const float *grads, void *working_params, dtype_t wt, float lr,
                float grad_scale, int step);

/* Learning rate at step (1-based): linear warm-up max_lr * step / warmup for
 * step <= warmup, then cosine from max_lr down to min_lr at step == total:
 *   p = (step - warmup) / (total - warmup)
 *   lr = min_lr + 0.5 (max_lr - min_lr) (1 + cos(pi p))
 * Steps past total give min_lr. */
float lr_at(int step, int warmup, int total, float max_lr, float min_lr);

/* Gradient-norm clipping. sumsq: the sum of squared gradients over the WHOLE
 * model (op_sumsq of each rank's piece, summed across ranks that hold
 * different pieces). Returns the factor to pass as grad_scale:
 * min(1, max_norm / (norm + 1e-6)), and 1 when max_norm <= 0 (no clipping);
 * *norm_out (may be NULL) receives norm = sqrt(sumsq). */
float clip_factor(double sumsq, float max_norm, double *norm_out);

#ifdef __cplusplus
}
#endif
#endif
