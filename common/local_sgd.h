/* local_sgd.h: local SGD, data parallelism that communicates weights every
 * H steps instead of gradients every step, and DiLoCo's outer optimizer.
 *
 * Local SGD (Stich 2019; Lin et al. 2020): every rank steps ALONE for H
 * steps, with the gradient of its own share of the batch and its own
 * optimizer state; then the ranks average their weights,
 *     w <- (1/N) sum over ranks r of w_r          (one all-reduce of w),
 * and every rank goes on from that average. Each rank's gradient is the mean
 * over its OWN tokens (the backward scale becomes 1 / local tokens), and
 * clipping uses its own norm (train_t.own_norm): nothing sums gradients.
 *
 * H = 1 with plain SGD is DDP: one step from the same w gives
 *     (1/N) sum_r (w - lr g_r) = w - lr (1/N) sum_r g_r,
 * DDP's step with the averaged gradient (up to rounding). With AdamW it is
 * not: each rank's update m_r / (sqrt(v_r) + eps) is not linear in g_r, and
 * the mean of the updates is not the update of the mean gradient.
 *
 * DiLoCo (Douillard et al. 2023) treats the averaged move of the H steps as a
 * gradient for an OUTER optimizer, Nesterov-momentum SGD (outer lr eta,
 * momentum mu; 0.7 and 0.9 in the paper), on the weights of the last average
 * (the anchor w0):
 *     delta = w0 - (1/N) sum_r w_r      (the outer gradient)
 *     u     = mu u + delta
 *     w0    = w0 - eta (delta + mu u)   (PyTorch's SGD with nesterov=True)
 * and every rank starts the next H steps from w0. eta = 1, mu = 0 is plain
 * averaging.
 *
 * What goes on the wire: the fp32 master weights, P x 4 bytes, all-reduced
 * every H steps (and after the last step, so that the run ends with one
 * model): per rank and per step on a ring, 2 (N-1)/N x 4 P / H bytes, which
 * is DDP's fp32 gradient all-reduce divided by H (S steps not a multiple of
 * H: 2 (N-1)/N x 4 P ceil(S / H) / S, the last average coming early). */
#ifndef LOCAL_SGD_H
#define LOCAL_SGD_H

#include "train.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int H;                  /* local steps between averages */
    float outer_lr, outer_momentum;   /* outer_lr 0: plain averaging (no outer optimizer) */
    float *anchor, *u;      /* DiLoCo: (n) fp32, device: w0 and the momentum */
    long step;              /* the last step done */
    int averages;           /* weight averages done so far */
} local_sgd_t;

/* After train_optimizer (the whole flat array on every rank): sets the
 * backward scale to 1 / this rank's tokens, own_norm, and the loop's
 * after_update hook that averages the weights. The runner gets no gradient
 * strategy ((grad_strategy_t){0}). */
void local_sgd_init(local_sgd_t *l, train_t *tr, int H, float outer_lr, float outer_momentum);
/* The weight averages of this run: one every H steps and one after the
 * last step when --steps is no multiple of H (S steps: ceil(S / H)). */
int local_sgd_averages(const local_sgd_t *l, const train_t *tr);
/* Bytes each rank sends per step, on average: 2 (N-1)/N x 4 n x averages
 * / steps (2 (N-1)/N x 4 n / H when H divides the steps). */
double local_sgd_bytes_per_step(const local_sgd_t *l, const train_t *tr);
void local_sgd_free(local_sgd_t *l, const train_t *tr);

#ifdef __cplusplus
}
#endif
#endif
