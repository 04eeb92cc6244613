/* ops.c: sends each op to its backend: cpu_* (ops_cpu.c) or, for a CUDA
 * device in a build with USE_CUDA, cuda_* (ops_cuda.cu). The semantics are
 * documented once, in ops.h. */
#include "ops.h"
#include "ops_cpu.h"
#ifdef USE_CUDA
#include "ops_cuda.h"
#endif

void op_matmul(const device_t *d, int trans_a, int trans_b, int M, int N, int K,
               float alpha, const void *A, int lda, const void *B, int ldb, dtype_t ab_t,
               float beta, void *C, int ldc, dtype_t c_t)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_matmul(d, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, ab_t, beta, C, ldc, c_t);
        return;
    }
#endif
    cpu_matmul(d, trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, ab_t, beta, C, ldc, c_t);
}

void op_embedding_forward(const device_t *d, dtype_t t, const int *tokens, const void *table,
                          void *out, int N, int C)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_embedding_forward(d, t, tokens, table, out, N, C);
        return;
    }
#endif
    cpu_embedding_forward(d, t, tokens, table, out, N, C);
}

void op_embedding_backward(const device_t *d, dtype_t t, const int *tokens, const void *dout,
                           float *dtable, int N, int C)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_embedding_backward(d, t, tokens, dout, dtable, N, C);
        return;
    }
#endif
    cpu_embedding_backward(d, t, tokens, dout, dtable, N, C);
}

void op_rmsnorm_forward(const device_t *d, dtype_t t, const void *x, const void *w, void *y,
                        float *rstd, int N, int C, float eps)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_rmsnorm_forward(d, t, x, w, y, rstd, N, C, eps);
        return;
    }
#endif
    cpu_rmsnorm_forward(d, t, x, w, y, rstd, N, C, eps);
}

void op_rmsnorm_backward(const device_t *d, dtype_t t, const void *x, const void *w,
                         const float *rstd, const void *dy, const void *dres, void *dx,
                         float *dw, int N, int C)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_rmsnorm_backward(d, t, x, w, rstd, dy, dres, dx, dw, N, C);
        return;
    }
#endif
    cpu_rmsnorm_backward(d, t, x, w, rstd, dy, dres, dx, dw, N, C);
}

void op_rope(const device_t *d, dtype_t t, void *x, const float *cs, int B, int T, int H,
             int hd, int pos0, int inverse)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_rope(d, t, x, cs, B, T, H, hd, pos0, inverse);
        return;
    }
#endif
    cpu_rope(d, t, x, cs, B, T, H, hd, pos0, inverse);
}

void op_attn_forward(const device_t *d, dtype_t t, const void *q, const void *k, const void *v,
                     void *out, float *lse, int B, int Tq, int Tk, int H, int KV, int hd,
                     int q_pos0, int k_pos0)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_attn_forward(d, t, q, k, v, out, lse, B, Tq, Tk, H, KV, hd, q_pos0, k_pos0);
        return;
    }
#endif
    cpu_attn_forward(d, t, q, k, v, out, lse, B, Tq, Tk, H, KV, hd, q_pos0, k_pos0);
}

void op_attn_merge(const device_t *d, dtype_t t, void *out, float *lse, const void *out_b,
                   const float *lse_b, int B, int T, int H, int hd)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_attn_merge(d, t, out, lse, out_b, lse_b, B, T, H, hd);
        return;
    }
#endif
    cpu_attn_merge(d, t, out, lse, out_b, lse_b, B, T, H, hd);
}

void op_attn_backward(const device_t *d, dtype_t t, const void *q, const void *k,
                      const void *v, const void *out, const void *dout, const float *lse,
                      void *dq, void *dk, void *dv, int B, int Tq, int Tk, int H, int KV,
                      int hd, int q_pos0, int k_pos0)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_attn_backward(d, t, q, k, v, out, dout, lse, dq, dk, dv, B, Tq, Tk, H, KV, hd, q_pos0, k_pos0);
        return;
    }
#endif
    cpu_attn_backward(d, t, q, k, v, out, dout, lse, dq, dk, dv, B, Tq, Tk, H, KV, hd, q_pos0, k_pos0);
}

void op_swiglu_forward(const device_t *d, dtype_t t, const void *a, const void *b, void *out,
                       size_t n)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_swiglu_forward(d, t, a, b, out, n);
        return;
    }
#endif
    cpu_swiglu_forward(d, t, a, b, out, n);
}

void op_swiglu_backward(const device_t *d, dtype_t t, const void *a, const void *b,
                        const void *dout, void *da, void *db, size_t n)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_swiglu_backward(d, t, a, b, dout, da, db, n);
        return;
    }
#endif
    cpu_swiglu_backward(d, t, a, b, dout, da, db, n);
}

void op_xent_forward(const device_t *d, dtype_t t, const void *logits, const int *targets,
                     float *loss, float *lse, int N, int V)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_xent_forward(d, t, logits, targets, loss, lse, N, V);
        return;
    }
#endif
    cpu_xent_forward(d, t, logits, targets, loss, lse, N, V);
}

void op_xent_backward(const device_t *d, dtype_t t, const void *logits, const int *targets,
                      const float *lse, void *dlogits, float scale, int N, int V)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_xent_backward(d, t, logits, targets, lse, dlogits, scale, N, V);
        return;
    }
#endif
    cpu_xent_backward(d, t, logits, targets, lse, dlogits, scale, N, V);
}

void op_add(const device_t *d, dtype_t t, const void *a, const void *b, void *out, size_t n)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_add(d, t, a, b, out, n);
        return;
    }
#endif
    cpu_add(d, t, a, b, out, n);
}

void op_cast(const device_t *d, const void *src, dtype_t src_t, void *dst, dtype_t dst_t,
             size_t n)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_cast(d, src, src_t, dst, dst_t, n);
        return;
    }
#endif
    cpu_cast(d, src, src_t, dst, dst_t, n);
}

void op_scale(const device_t *d, dtype_t t, void *x, float s, size_t n)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_scale(d, t, x, s, n);
        return;
    }
#endif
    cpu_scale(d, t, x, s, n);
}

double op_sumsq(const device_t *d, dtype_t t, const void *x, size_t n)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        return cuda_sumsq(d, t, x, n);
    }
#endif
    return cpu_sumsq(d, t, x, n);
}

void op_adamw(const device_t *d, float *master, float *m, float *v, const float *grad,
              void *working, dtype_t working_t, size_t n, float lr, float beta1, float beta2,
              float eps, float wd, float grad_scale, int step)
{
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) {
        cuda_adamw(d, master, m, v, grad, working, working_t, n, lr, beta1, beta2, eps, wd, grad_scale, step);
        return;
    }
#endif
    cpu_adamw(d, master, m, v, grad, working, working_t, n, lr, beta1, beta2, eps, wd, grad_scale, step);
}
