/* mlp.h: a wide two-layer ReLU MLP, forward and backward: from HFU to MFU.
 *
 *   h  = relu(x W1)          x (B, D), W1 (D, H), h (B, H)
 *   y  = h W2                W2 (H, D), y (B, D)
 *   L  = 0.5 / B * sum (y - t)^2, so dy = (y - t) / B
 *   dW2 = h^T dy,  dh = (dy W2^T) * [h > 0],  dW1 = x^T dh,  dx = dh W1^T
 *
 * Six matmuls of 2 B D H FLOPs each: forward 2 x 2BDH, backward 4 x 2BDH
 * (each weight's matmul gives a weight gradient and an input gradient).
 * With P = 2 D H parameters (no biases), model FLOPs per step
 *   = 12 B D H = 6 x B x P   (the "6 x parameters x tokens" rule, Kaplan et
 *     al. 2020, "Scaling laws for neural language models", section 2.1)
 * MFU = 6 B P / step time / peak. The elementwise work (relu, the loss
 * gradient, the mask) costs time but no model FLOPs, which is one reason a
 * model's MFU sits below the HFU of its biggest matmul.
 *
 * A training step also updates the weights, and the lecture's MFU divides by
 * the time of the whole step: the update is AdamW (op_adamw in ops.h) on W1
 * and W2, timed with the step; it adds time and no model FLOPs. */
#ifndef MLP_H
#define MLP_H

#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline double mlp_params(long D, long H) { return 2.0 * D * H; }
static inline double mlp_flops(long B, long D, long H) { return 6.0 * B * mlp_params(D, H); }

/* Inputs, targets and weights (W1 ~ U(-1,1)/sqrt(D), W2 ~ U(-1,1)/sqrt(H)),
 * fp32, freshly allocated. */
typedef struct {
    int B, D, H;
    float *x, *t, *W1, *W2;
} mlp_data_t;
void mlp_data_init(mlp_data_t *m, int B, int D, int H, unsigned long long seed);
void mlp_data_free(mlp_data_t *m);

/* Gradients of one step, fp32 on the host. */
typedef struct { float *dW1, *dW2, *dx; } mlp_grads_t;

/* The reference in double precision, plain loops (tiny sizes only). With
 * bf16 = 1 every tensor the GPU path stores in bf16 (inputs, weights, h, y,
 * dy, dh, dx) is rounded to bf16 where that path rounds it. Returns L. */
double mlp_reference(const mlp_data_t *m, int bf16, mlp_grads_t *out);

/* The update: AdamW with Llama's betas, no weight decay (the MLP has no
 * norms or embeddings to exempt, and none is needed to show the cost). */
#define MLP_LR 1e-3f
#define MLP_BETA1 0.9f
#define MLP_BETA2 0.95f
#define MLP_EPS 1e-8f

/* One forward + backward on the CPU with OpenBLAS sgemm, fp32; update moves
 * the weights (in the mlp_data_t) by AdamW with the gradients of the last
 * step. */
typedef struct {
    const mlp_data_t *data;
    float *h, *y, *dy, *dh;   /* (B,H) (B,D) (B,D) (B,H) */
    mlp_grads_t g;
    float *m1, *v1, *m2, *v2; /* AdamW moments of W1 and W2 */
    int steps;                /* updates so far */
} mlp_cpu_t;
void mlp_cpu_init(mlp_cpu_t *c, const mlp_data_t *m);
double mlp_cpu_step(mlp_cpu_t *c);      /* returns L */
void mlp_cpu_update(mlp_cpu_t *c, const device_t *d);
void mlp_cpu_free(mlp_cpu_t *c);

#ifdef USE_CUDA
/* The same on a GPU: bf16 tensors, cuBLAS bf16 GEMMs with fp32 accumulation,
 * fp32 weight gradients; the update keeps fp32 master weights and writes the
 * bf16 copies the GEMMs read. step and update queue the work on d->stream
 * and return. */
typedef struct mlp_cuda mlp_cuda_t;
mlp_cuda_t *mlp_cuda_init(const device_t *d, const mlp_data_t *m);
void mlp_cuda_step(mlp_cuda_t *c);
void mlp_cuda_update(mlp_cuda_t *c);
void mlp_cuda_grads(mlp_cuda_t *c, mlp_grads_t *out);   /* copies to the host */
void mlp_cuda_free(mlp_cuda_t *c);
#endif

/* The check before timing: a tiny MLP against mlp_reference, with the same
 * bf16 roundings on a GPU. (Not against fp32: rounding x and W1 to bf16 moves
 * pre-activations near zero across it, flipping relu's mask and whole
 * gradient entries; that alone scores ~0.4.) With the same roundings only
 * the order of fp32 sums differs, which scores ~1e-7 in emulation; the bf16
 * tolerance leaves room for a library that rounds differently. A wrong index
 * or a missing mask scores about 1. */
#define MLP_CHECK_B 24
#define MLP_CHECK_D 20
#define MLP_CHECK_H 36
#define MLP_TOL_FP32 1e-4
#define MLP_TOL_BF16 0.05

/* max |g - ref| / rms(ref) over all three gradients, each scaled by its own
 * rms; +inf on NaN. */
double mlp_grads_error(const mlp_grads_t *g, const mlp_grads_t *ref, int B, int D, int H);
void mlp_grads_alloc(mlp_grads_t *g, int B, int D, int H);
void mlp_grads_free(mlp_grads_t *g);

#ifdef __cplusplus
}
#endif
#endif
