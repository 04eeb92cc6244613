/* ops_cuda.h: the CUDA backend of ops.h (ops_cuda.cu): cuBLAS for matrix
 * products, CUDA kernels for the rest, all queued on d->stream. Each cuda_X
 * has exactly the semantics of op_X in ops.h (read them there); ops.c calls
 * it when d->kind == DEV_CUDA in a build with USE_CUDA. Pointers are device
 * pointers; bf16 buffers hold __nv_bfloat16 bit patterns (bf16_t). */
#ifndef OPS_CUDA_H
#define OPS_CUDA_H

#include <stddef.h>

#include "device.h"
#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

void cuda_matmul(const device_t *d, int trans_a, int trans_b, int M, int N, int K, float alpha,
                 const void *A, int lda, const void *B, int ldb, dtype_t ab_t, float beta,
                 void *C, int ldc, dtype_t c_t);
void cuda_embedding_forward(const device_t *d, dtype_t t, const int *tokens, const void *table,
                            void *out, int N, int C);
void cuda_embedding_backward(const device_t *d, dtype_t t, const int *tokens, const void *dout,
                             float *dtable, int N, int C);
void cuda_rmsnorm_forward(const device_t *d, dtype_t t, const void *x, const void *w, void *y,
                          float *rstd, int N, int C, float eps);
void cuda_rmsnorm_backward(const device_t *d, dtype_t t, const void *x, const void *w,
                           const float *rstd, const void *dy, const void *dres, void *dx,
                           float *dw, int N, int C);
void cuda_rope(const device_t *d, dtype_t t, void *x, const float *cs, int B, int T, int H,
               int hd, int pos0, int inverse);
void cuda_attn_forward(const device_t *d, dtype_t t, const void *q, const void *k,
                       const void *v, void *out, float *lse, int B, int Tq, int Tk, int H,
                       int KV, int hd, int q_pos0, int k_pos0);
void cuda_attn_merge(const device_t *d, dtype_t t, void *out, float *lse, const void *out_b,
                     const float *lse_b, int B, int T, int H, int hd);
void cuda_attn_backward(const device_t *d, dtype_t t, const void *q, const void *k,
                        const void *v, const void *out, const void *dout, const float *lse,
                        void *dq, void *dk, void *dv, int B, int Tq, int Tk, int H, int KV,
                        int hd, int q_pos0, int k_pos0);
void cuda_swiglu_forward(const device_t *d, dtype_t t, const void *a, const void *b, void *out,
                         size_t n);
void cuda_swiglu_backward(const device_t *d, dtype_t t, const void *a, const void *b,
                          const void *dout, void *da, void *db, size_t n);
void cuda_xent_forward(const device_t *d, dtype_t t, const void *logits, const int *targets,
                       float *loss, float *lse, int N, int V);
void cuda_xent_backward(const device_t *d, dtype_t t, const void *logits, const int *targets,
                        const float *lse, void *dlogits, float scale, int N, int V);
void cuda_add(const device_t *d, dtype_t t, const void *a, const void *b, void *out, size_t n);
void cuda_cast(const device_t *d, const void *src, dtype_t src_t, void *dst, dtype_t dst_t,
               size_t n);
void cuda_scale(const device_t *d, dtype_t t, void *x, float s, size_t n);
double cuda_sumsq(const device_t *d, dtype_t t, const void *x, size_t n);
void cuda_adamw(const device_t *d, float *master, float *m, float *v, const float *grad,
                void *working, dtype_t working_t, size_t n, float lr, float beta1, float beta2,
                float eps, float wd, float grad_scale, int step);

#ifdef __cplusplus
}
#endif
#endif
