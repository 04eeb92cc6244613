/* mlp_cuda.cu: the two-layer ReLU MLP on a GPU (see mlp.h): bf16 tensors,
 * cuBLAS bf16 GEMMs with fp32 accumulation on the tensor cores, fp32 weight
 * gradients, and three small elementwise kernels. A step is queued on the
 * compute stream with no host synchronisation. */
#include <stdlib.h>

#include "cuda_common.cuh"
#include "dtype.h"
#include "mlp.h"
#include "ops.h"

struct mlp_cuda {
    const device_t *d;
    int B, D, H;
    __nv_bfloat16 *x, *t, *W1, *W2;     /* (B,D) (B,D) (D,H) (H,D) */
    __nv_bfloat16 *h, *y, *dy, *dh, *dx;
    float *dW1, *dW2;
    float *W1m, *W2m, *m1, *v1, *m2, *v2;   /* fp32 master weights, AdamW moments */
    int steps;
};

__global__ void relu_kernel(__nv_bfloat16 *h, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && __bfloat162float(h[i]) < 0.0f) h[i] = __float2bfloat16(0.0f);
}

/* dy = (y - t) / B: the gradient of L = 0.5 / B sum (y - t)^2 */
__global__ void loss_grad_kernel(__nv_bfloat16 *dy, const __nv_bfloat16 *y, const __nv_bfloat16 *t,
                                 size_t n, float inv_batch) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) dy[i] = __float2bfloat16((__bfloat162float(y[i]) - __bfloat162float(t[i])) * inv_batch);
}

/* dh *= [h > 0]: relu passes gradient only where it passed the value */
__global__ void relu_backward_kernel(__nv_bfloat16 *dh, const __nv_bfloat16 *h, size_t n) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n && !(__bfloat162float(h[i]) > 0.0f)) dh[i] = __float2bfloat16(0.0f);
}

/* Row-major C (M, N) = op(A) op(B) with bf16 A, B; C bf16 or fp32. As
 * column-major this is C^T = op(B)^T op(A)^T: B goes first. */
static void gemm(const mlp_cuda_t *c, int ta, int tb, int M, int N, int K,
                 const void *A, const void *B, void *C, cudaDataType_t ctype) {
    cublasHandle_t h = (cublasHandle_t)c->d->blas;
    const float one = 1.0f, zero = 0.0f;
    CUBLAS_CHECK(cublasGemmEx(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                              N, M, K, &one, B, CUDA_R_16BF, tb ? K : N, A, CUDA_R_16BF, ta ? M : K,
                              &zero, C, ctype, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static __nv_bfloat16 *upload_bf16(const device_t *d, const float *host, size_t n) {
    bf16_t *tmp = (bf16_t *)xmalloc(n * sizeof(bf16_t));
    for (size_t i = 0; i < n; i++) tmp[i] = f32_to_bf16(host[i]);
    __nv_bfloat16 *p = (__nv_bfloat16 *)dev_alloc(d, n * sizeof(bf16_t));
    dev_from_host(d, p, tmp, n * sizeof(bf16_t));
    free(tmp);
    return p;
}

extern "C" mlp_cuda_t *mlp_cuda_init(const device_t *d, const mlp_data_t *m) {
    mlp_cuda_t *c = (mlp_cuda_t *)xcalloc(1, sizeof *c);
    c->d = d; c->B = m->B; c->D = m->D; c->H = m->H;
    const size_t BD = (size_t)m->B * m->D, BH = (size_t)m->B * m->H, DH = (size_t)m->D * m->H;
    c->x = upload_bf16(d, m->x, BD);
    c->t = upload_bf16(d, m->t, BD);
    c->W1 = upload_bf16(d, m->W1, DH);
    c->W2 = upload_bf16(d, m->W2, DH);
    c->h = (__nv_bfloat16 *)dev_alloc(d, BH * 2);
    c->dh = (__nv_bfloat16 *)dev_alloc(d, BH * 2);
    c->y = (__nv_bfloat16 *)dev_alloc(d, BD * 2);
    c->dy = (__nv_bfloat16 *)dev_alloc(d, BD * 2);
    c->dx = (__nv_bfloat16 *)dev_alloc(d, BD * 2);
    c->dW1 = (float *)dev_alloc(d, DH * 4);
    c->dW2 = (float *)dev_alloc(d, DH * 4);
    c->W1m = (float *)dev_alloc(d, DH * 4);
    c->W2m = (float *)dev_alloc(d, DH * 4);
    dev_from_host(d, c->W1m, m->W1, DH * 4);
    dev_from_host(d, c->W2m, m->W2, DH * 4);
    c->m1 = (float *)dev_alloc(d, DH * 4);   /* dev_alloc zeroes */
    c->v1 = (float *)dev_alloc(d, DH * 4);
    c->m2 = (float *)dev_alloc(d, DH * 4);
    c->v2 = (float *)dev_alloc(d, DH * 4);
    CUBLAS_CHECK(cublasSetStream((cublasHandle_t)d->blas, (cudaStream_t)d->stream));
    return c;
}

extern "C" void mlp_cuda_step(mlp_cuda_t *c) {
    const int B = c->B, D = c->D, H = c->H;
    const size_t BD = (size_t)B * D, BH = (size_t)B * H;
    cudaStream_t s = (cudaStream_t)c->d->stream;
    gemm(c, 0, 0, B, H, D, c->x, c->W1, c->h, CUDA_R_16BF);      /* h (B,H) = x W1 */
    LAUNCH(relu_kernel, ceil_div(BH, 256), 256, 0, s, c->h, BH);
    gemm(c, 0, 0, B, D, H, c->h, c->W2, c->y, CUDA_R_16BF);      /* y (B,D) = h W2 */
    LAUNCH(loss_grad_kernel, ceil_div(BD, 256), 256, 0, s, c->dy, c->y, c->t, BD, 1.0f / B);
    gemm(c, 1, 0, H, D, B, c->h, c->dy, c->dW2, CUDA_R_32F);     /* dW2 (H,D) = h^T dy */
    gemm(c, 0, 1, B, H, D, c->dy, c->W2, c->dh, CUDA_R_16BF);    /* dh (B,H) = dy W2^T */
    LAUNCH(relu_backward_kernel, ceil_div(BH, 256), 256, 0, s, c->dh, c->h, BH);
    gemm(c, 1, 0, D, H, B, c->x, c->dh, c->dW1, CUDA_R_32F);     /* dW1 (D,H) = x^T dh */
    gemm(c, 0, 1, B, D, H, c->dh, c->W1, c->dx, CUDA_R_16BF);    /* dx (B,D) = dh W1^T */
}

/* AdamW on the fp32 masters; the bf16 weights the GEMMs read are rewritten
 * from them in the same kernel. */
extern "C" void mlp_cuda_update(mlp_cuda_t *c) {
    const size_t DH = (size_t)c->D * c->H;
    c->steps++;
    op_adamw(c->d, c->W1m, c->m1, c->v1, c->dW1, c->W1, DT_BF16, DH, MLP_LR, MLP_BETA1, MLP_BETA2,
             MLP_EPS, 0.0f, 1.0f, c->steps);
    op_adamw(c->d, c->W2m, c->m2, c->v2, c->dW2, c->W2, DT_BF16, DH, MLP_LR, MLP_BETA1, MLP_BETA2,
             MLP_EPS, 0.0f, 1.0f, c->steps);
}

extern "C" void mlp_cuda_grads(mlp_cuda_t *c, mlp_grads_t *out) {
    const size_t BD = (size_t)c->B * c->D, DH = (size_t)c->D * c->H;
    dev_to_host(c->d, out->dW1, c->dW1, DH * 4);
    dev_to_host(c->d, out->dW2, c->dW2, DH * 4);
    bf16_t *tmp = (bf16_t *)xmalloc(BD * sizeof(bf16_t));
    dev_to_host(c->d, tmp, c->dx, BD * sizeof(bf16_t));
    for (size_t i = 0; i < BD; i++) out->dx[i] = bf16_to_f32(tmp[i]);
    free(tmp);
}

extern "C" void mlp_cuda_free(mlp_cuda_t *c) {
    void *bufs[] = {c->x, c->t, c->W1, c->W2, c->h, c->y, c->dy, c->dh, c->dx, c->dW1, c->dW2,
                    c->W1m, c->W2m, c->m1, c->v1, c->m2, c->v2};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) dev_free(c->d, bufs[i]);
    free(c);
}
