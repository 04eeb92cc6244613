/* ops.h: the kernels the transformer is built from, forward and backward.
 *
 * Every op takes the device first and device pointers after it. A backend
 * is a table of the ops (ops_t below): ops_cpu in ops_cpu.c (OpenBLAS and
 * plain loops) and, in a build with USE_CUDA, ops_cuda in ops_cuda.cu
 * (cuBLAS and CUDA kernels, one ops_cuda_<kind>.cu per kind of layer). op_X(d, ...) calls the X of d's backend. The
 * two backends implement the SAME semantics, written down here;
 * they may differ only in the order of floating-point sums (and FMA
 * contraction), and where an op says so in intermediate roundings (bf16
 * attention on the tensor cores), so results agree to rounding, not bit for
 * bit. Ops queue work on the device's compute stream and do not synchronise,
 * except the ones that return a value to the host (op_sumsq). ops_cuda.cu
 * also exports ops_cuda_simple, the straightforward kernels its fast ones
 * replaced, with the same semantics (tests and tests/bench_ops.c declare it).
 *
 * Types. `t` is the storage type of activations and working weights:
 * DT_F32, or DT_BF16 stored as bf16_t. Everything is COMPUTED in fp32:
 * bf16 inputs are widened exactly, sums accumulate in fp32 (or wider), and a
 * bf16 result is rounded once, to nearest even, when it is stored. Some
 * buffers are always fp32 whatever `t` is, and say so (float *): per-row
 * statistics (rstd, lse, losses), parameter gradients, optimizer state.
 *
 * Shapes use B (sequences), T (tokens per sequence), C (model dim), H (query
 * heads), KV (key/value heads), hd (head dim), F (MLP hidden size), V
 * (vocab), N = B*T rows. Tensors are row-major; (B, T, H, hd) means element
 * [b][t][h][i] at ((b*T + t)*H + h)*hd + i.
 *
 * Gradient conventions: an op that produces a PARAMETER gradient always
 * accumulates (+=) into an fp32 buffer, so micro-batches sum; an op that
 * produces an ACTIVATION gradient overwrites its output unless it says
 * "accumulates". Outputs may alias inputs only where stated.
 *
 * Determinism: both backends must give the same result for the same input
 * on every run (no atomics whose order varies), so that resumed runs and
 * N-rank runs reproduce bit for bit on one machine. */
#ifndef OPS_H
#define OPS_H

#include <stddef.h>

#include "device.h"
#include "dtype.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The CPU backend keeps its scratch per thread: a thread that ran CPU ops
 * frees it with this before it ends (the main thread's lives to the end). */
void ops_cpu_thread_end(void);
/* RoPE's (cos, sin) table, on the host in double; see rope below. */
void rope_table(float *host_cs, int max_pos, int hd, double base);

typedef struct {
    /* ---- matrix product -----------------------------------------------------
     * C = alpha * op(A) @ op(B) + beta * C, row-major, like cblas_sgemm with
     * CblasRowMajor:
     *   op(A) is M x K: A is stored M x K (lda >= K), or K x M (lda >= M) when
     *     trans_a, and op(A) = A^T;
     *   op(B) is K x N: B is stored K x N (ldb >= N), or N x K (ldb >= K) when
     *     trans_b;
     *   C is M x N (ldc >= N).
     * A and B have type ab_t, C has type c_t: (fp32, fp32), (bf16, bf16), or
     * (bf16, fp32) so bf16 activations can accumulate into fp32 gradients (the
     * combinations cuBLAS offers; fp32 operands with a bf16 C are not an op).
     * beta == 0 means C is not read (NaN in C is harmless). fp32 accumulation
     * over K.
     * CPU: fp32 goes straight to cblas_sgemm; bf16 operands are widened to fp32
     * scratch and then cblas_sgemm runs (convert-then-sgemm: the products of
     * bf16 values are exact in fp32, so this is the semantics of a bf16 GEMM with
     * fp32 accumulation, e.g. cublasGemmEx with CUBLAS_COMPUTE_32F), and a bf16
     * C is computed in fp32 scratch and rounded once. */
    void (*matmul)(const device_t *d, int trans_a, int trans_b, int M, int N, int K,
                   float alpha, const void *A, int lda, const void *B, int ldb, dtype_t ab_t,
                   float beta, void *C, int ldc, dtype_t c_t);

    /* ---- token embedding, possibly one vocabulary shard -----------------------
     * tokens: (N) int32, device, in [0, vocab). table: (Vs, C), rows [v0, v0 +
     * Vs) of the full (vocab, C) table (v0 = 0, Vs = vocab without tensor
     * parallelism). out: (N, C).
     *   out[n] = table[tokens[n] - v0]   if v0 <= tokens[n] < v0 + Vs, else 0
     * (tensor-parallel ranks then sum their outputs: Megatron's vocab-parallel
     * embedding). backward: dtable[tokens[n] - v0] += dout[n] for the tokens
     * in the shard (fp32 dtable), rows added in order of n (deterministic;
     * repeated tokens sum). The CUDA backend sorts the tokens with their
     * positions and adds each distinct row's gradients in one block, in that
     * order. */
    void (*embedding_forward)(const device_t *d, dtype_t t, const int *tokens, const void *table,
                              void *out, int N, int C, int v0, int Vs);
    void (*embedding_backward)(const device_t *d, dtype_t t, const int *tokens, const void *dout,
                               float *dtable, int N, int C, int v0, int Vs);

    /* ---- RMSNorm (Zhang & Sennrich 2019) --------------------------------------
     * x, y: (N, C); w: (C) gain, type t; rstd: (N) fp32.
     *   rstd[n] = 1 / sqrt(mean_c x[n][c]^2 + eps)      (eps inside the sqrt)
     *   y[n][c] = (x[n][c] * rstd[n]) * w[c]
     * backward, with xhat = x * rstd and g = dy * w:
     *   dx[n][c] = rstd[n] * (g[c] - xhat[c] * mean_c'(g[c'] * xhat[c'])) + dres[n][c]
     *   dw[c]   += sum_n dy[n][c] * xhat[n][c]          (fp32 dw)
     * dres is the gradient arriving through the residual path and may be NULL
     * (treated as 0); dx may alias dres or dy. */
    void (*rmsnorm_forward)(const device_t *d, dtype_t t, const void *x, const void *w, void *y,
                            float *rstd, int N, int C, float eps);
    void (*rmsnorm_backward)(const device_t *d, dtype_t t, const void *x, const void *w,
                             const float *rstd, const void *dy, const void *dres, void *dx,
                             float *dw, int N, int C);

    /* ---- rotary position embedding (RoFormer, Su et al. 2021) ----------------
     * x: (B, T, H, hd), rotated in place; the token at t has position pos0 + t.
     * Pairs are ADJACENT dimensions (2i, 2i+1), i in [0, hd/2), as in Meta's
     * Llama code:
     *   (x0, x1) <- (x0 cos a - x1 sin a,  x0 sin a + x1 cos a),  a = p * base^(-2i/hd)
     * inverse != 0 rotates by -a instead: that is the backward pass (a rotation's
     * transpose is its inverse), applied in place to the gradient.
     * cs: the table rope_table() builds, (max_pos, hd/2, 2) fp32 with
     * cs[(p*hd/2 + i)*2] = cos a and [... + 1] = sin a; pos0 + T <= max_pos. */
    void (*rope)(const device_t *d, dtype_t t, void *x, const float *cs, int B, int T, int H,
                 int hd, int pos0, int inverse);

    /* ---- causal attention with grouped-query heads ----------------------------
     * One BLOCK of queries against one BLOCK of keys/values, so that context
     * parallelism can run it per block and merge; the plain model calls it once
     * with both blocks the whole sequence (Tq = Tk = T, q_pos0 = k_pos0 = 0).
     *   q: (B, Tq, H, hd)  k, v: (B, Tk, KV, hd)  out: (B, Tq, H, hd)
     *   lse: (B, H, Tq) fp32
     * Query head h reads key/value head h / (H / KV) (KV divides H: consecutive
     * query heads share a kv head). Query row i has position q_pos0 + i, key row
     * j position k_pos0 + j; the query sees the key iff k_pos0 + j <= q_pos0 + i.
     *   s_ij = (q_i . k_j) / sqrt(hd)                   over visible j
     *   lse_i = log sum_j exp(s_ij)                     (natural log, fp32)
     *   out_i = sum_j exp(s_ij - lse_i) v_j
     * A row that sees no key has lse = -INFINITY and out = 0.
     *
     * op_attn_merge combines two partial results over DISJOINT key sets into the
     * result over their union, in place in (out, lse) (online softmax):
     *   m = max(lse, lse_b); w = exp(lse - m), w_b = exp(lse_b - m)
     *   out = (w out + w_b out_b) / (w + w_b); lse = m + log(w + w_b)
     * (a row with both -INFINITY stays lse -INFINITY, out 0).
     *
     * op_attn_backward: out and lse are the FINAL results (over all keys the
     * query sees, possibly merged from several blocks) and dout their gradient;
     * it ACCUMULATES (+=) this block's contribution into dq, dk, dv (same shapes
     * as q, k, v; the caller zeroes them first):
     *   p_ij = exp(s_ij - lse_i)      D_i = sum_c dout_i[c] out_i[c]
     *   dv_j += sum_i p_ij dout_i     ds_ij = p_ij (dout_i . v_j - D_i)
     *   dq_i += sum_j ds_ij k_j / sqrt(hd)     dk_j += sum_i ds_ij q_i / sqrt(hd)
     * Both backends recompute p from lse in the backward pass (nothing but lse
     * is saved) and give the same result run after run (no atomics):
     * - CPU: blockwise with an online softmax (FlashAttention's recurrence):
     *   chunks of 64 query rows against blocks of 128 keys, only the blocks a
     *   chunk can see, sgemm for q k^T, p v and the four backward products;
     *   scratch memory linear in Tq and Tk.
     * - CUDA, bf16 storage with hd = 16, 32, 64 or 128: flash attention on the
     *   tensor cores (WMMA, bf16 operands, fp32 accumulation), one launch for
     *   all heads and sequences; tiles of 64 queries and 64 keys, fully masked
     *   tiles skipped, no score matrix in global memory; the backward is two
     *   kernels (dk and dv per key tile, dq per query tile), so each output
     *   has one writer. p and ds are rounded to bf16 for the tensor-core
     *   products, as in FlashAttention (relative 2^-9 per term, inside fp32
     *   sums): bf16 results agree with the CPU's to two bf16 roundings, not one.
     * - CUDA otherwise (fp32 storage, other head dims): inputs widened to fp32,
     *   cuBLAS per query head on a (B, Tq, Tk) fp32 score matrix in scratch
     *   memory, and a softmax kernel; exact to fp32 rounding, memory quadratic. */
    void (*attn_forward)(const device_t *d, dtype_t t, const void *q, const void *k, const void *v,
                         void *out, float *lse, int B, int Tq, int Tk, int H, int KV, int hd,
                         int q_pos0, int k_pos0);
    void (*attn_merge)(const device_t *d, dtype_t t, void *out, float *lse, const void *out_b,
                       const float *lse_b, int B, int T, int H, int hd);
    void (*attn_backward)(const device_t *d, dtype_t t, const void *q, const void *k,
                          const void *v, const void *out, const void *dout, const float *lse,
                          void *dq, void *dk, void *dv, int B, int Tq, int Tk, int H, int KV,
                          int hd, int q_pos0, int k_pos0);

    /* ---- SwiGLU (Shazeer 2020) -------------------------------------------------
     * a = x W1 (gate), b = x W3 (up), all (n) elements:
     *   out = silu(a) * b,  silu(a) = a * sigmoid(a) = a / (1 + exp(-a))
     * backward, s = sigmoid(a):
     *   da = dout * b * s * (1 + a * (1 - s))     db = dout * a * s
     * da may alias a, db may alias b (element-wise, read before written). */
    void (*swiglu_forward)(const device_t *d, dtype_t t, const void *a, const void *b, void *out,
                           size_t n);
    void (*swiglu_backward)(const device_t *d, dtype_t t, const void *a, const void *b,
                            const void *dout, void *da, void *db, size_t n);

    /* ---- softmax cross-entropy, possibly over one vocabulary shard ---------------
     * logits: (N, V) type t, columns [v0, v0 + V) of the full vocabulary (v0 =
     * 0 and V = vocab without tensor parallelism); targets: (N) int32, device,
     * in [0, vocab) or negative (ignored); picked, lse: (N) fp32.
     *   lse[n]    = log sum_v exp(logits[n][v])              (over this shard)
     *   picked[n] = logits[n][targets[n] - v0]   if the target is in the shard, else 0
     * The loss of row n is lse - picked over the whole vocabulary: with shards,
     * lse_combine the shards' lse and sum their picked first.
     * backward, given the FULL vocabulary's lse:
     *   dlogits[n][v] = (exp(logits[n][v] - lse[n]) - [v + v0 == targets[n]]) * scale
     * and 0 on ignored rows. dlogits may alias logits. */
    void (*xent_forward)(const device_t *d, dtype_t t, const void *logits, const int *targets,
                         float *picked, float *lse, int N, int V, int v0);
    void (*xent_backward)(const device_t *d, dtype_t t, const void *logits, const int *targets,
                          const float *lse, void *dlogits, float scale, int N, int V, int v0);
    /* parts: (P, N) fp32, the lse of P vocabulary shards; out: (N) fp32:
     *   out[n] = log sum_p exp(parts[p][n])     (out may alias parts[0]) */
    void (*lse_combine)(const device_t *d, const float *parts, float *out, int P, int N);

    /* ---- element-wise and reductions ------------------------------------------ */
    /* out = a + b over n elements of type t; out may alias a or b. */
    void (*add)(const device_t *d, dtype_t t, const void *a, const void *b, void *out, size_t n);
    /* dst = src converted (fp32 -> bf16 rounds to nearest even; same type copies). */
    void (*cast)(const device_t *d, const void *src, dtype_t src_t, void *dst, dtype_t dst_t,
                 size_t n);
    /* x *= s in place. */
    void (*scale)(const device_t *d, dtype_t t, void *x, float s, size_t n);
    /* sum_i x[i]^2, accumulated in double on the CPU (in fp32 partial sums and a
     * double total on GPUs); synchronises and returns the value to the host. */
    double (*sumsq)(const device_t *d, dtype_t t, const void *x, size_t n);

    /* ---- AdamW (Loshchilov & Hutter 2019) --------------------------------------
     * Over n elements; master, m, v, grad fp32. With g = grad * grad_scale and
     * bias corrections c1 = 1 - beta1^step, c2 = 1 - beta2^step (step >= 1;
     * computed in double on the host, rounded to fp32):
     *   m = beta1 m + (1 - beta1) g
     *   v = beta2 v + (1 - beta2) g^2
     *   master = master * (1 - lr * wd)                       (decoupled decay)
     *   master = master - lr * (m / c1) / (sqrt(v / c2) + eps)
     *   working = master converted to working_t (skipped when working is NULL)
     * grad_scale carries gradient clipping (and any averaging the caller wants). */
    void (*adamw)(const device_t *d, float *master, float *m, float *v, const float *grad,
                  void *working, dtype_t working_t, size_t n, float lr, float beta1, float beta2,
                  float eps, float wd, float grad_scale, int step);

    /* ---- gradient codes (the kernels of compress.h's compressors) ------------
     * block_encode: the int8 (sign = 0) or sign (sign = 1) code of x's n fp32
     * values: per block of OPS_CODE_BLOCK values a float scale (int8: max|x| /
     * 127, codes round(x / scale) clamped to +-127; sign: mean|x|, one bit per
     * value, set for x >= 0), the nb scales first, then the codes, padded with
     * zeros to ops_block_code_bytes. block_decode_add: acc += alpha * D(in),
     * the product rounded before the add. topk_encode: the k values of largest
     * |x| (ties: lower index first) in index order, then their uint32 indices;
     * topk_decode_add: acc[idx] += alpha * val. Both backends give the same bits. */
    void (*block_encode)(const device_t *d, int sign, const float *x, size_t n, void *out);
    void (*block_decode_add)(const device_t *d, int sign, const void *in, size_t n, float alpha, float *acc);
    void (*topk_encode)(const device_t *d, const float *x, size_t n, size_t k, void *out);
    void (*topk_decode_add)(const device_t *d, const void *in, size_t k, float alpha, float *acc);
    /* orthonormalise: the R columns of a (rows, R) row-major fp32 matrix made
     * orthonormal by Gram-Schmidt, sums in double (PowerSGD's); a column that
     * vanishes stays zero. */
    void (*orthonormalise)(const device_t *d, float *a, size_t rows, int R);
} ops_t;

#define OPS_CODE_BLOCK 256   /* values per int8 / sign scale (a multiple of 8) */
/* Bytes of block_encode's code of n values, in whole 4-byte words. */
size_t ops_block_code_bytes(int sign, size_t n);

extern const ops_t ops_cpu;
#ifdef USE_CUDA
extern const ops_t ops_cuda;
#endif

/* The backend of d: ops_cuda for a CUDA device, ops_cpu otherwise. */
static inline const ops_t *ops_of(const device_t *d) {
#ifdef USE_CUDA
    if (d->kind == DEV_CUDA) return &ops_cuda;
#else
    (void)d;
#endif
    return &ops_cpu;
}

#define op_matmul(d, ...) (ops_of(d)->matmul((d), __VA_ARGS__))
#define op_embedding_forward(d, ...) (ops_of(d)->embedding_forward((d), __VA_ARGS__))
#define op_embedding_backward(d, ...) (ops_of(d)->embedding_backward((d), __VA_ARGS__))
#define op_rmsnorm_forward(d, ...) (ops_of(d)->rmsnorm_forward((d), __VA_ARGS__))
#define op_rmsnorm_backward(d, ...) (ops_of(d)->rmsnorm_backward((d), __VA_ARGS__))
#define op_rope(d, ...) (ops_of(d)->rope((d), __VA_ARGS__))
#define op_attn_forward(d, ...) (ops_of(d)->attn_forward((d), __VA_ARGS__))
#define op_attn_merge(d, ...) (ops_of(d)->attn_merge((d), __VA_ARGS__))
#define op_attn_backward(d, ...) (ops_of(d)->attn_backward((d), __VA_ARGS__))
#define op_swiglu_forward(d, ...) (ops_of(d)->swiglu_forward((d), __VA_ARGS__))
#define op_swiglu_backward(d, ...) (ops_of(d)->swiglu_backward((d), __VA_ARGS__))
#define op_xent_forward(d, ...) (ops_of(d)->xent_forward((d), __VA_ARGS__))
#define op_xent_backward(d, ...) (ops_of(d)->xent_backward((d), __VA_ARGS__))
#define op_lse_combine(d, ...) (ops_of(d)->lse_combine((d), __VA_ARGS__))
#define op_add(d, ...) (ops_of(d)->add((d), __VA_ARGS__))
#define op_cast(d, ...) (ops_of(d)->cast((d), __VA_ARGS__))
#define op_scale(d, ...) (ops_of(d)->scale((d), __VA_ARGS__))
#define op_sumsq(d, ...) (ops_of(d)->sumsq((d), __VA_ARGS__))
#define op_adamw(d, ...) (ops_of(d)->adamw((d), __VA_ARGS__))
#define op_block_encode(d, ...) (ops_of(d)->block_encode((d), __VA_ARGS__))
#define op_block_decode_add(d, ...) (ops_of(d)->block_decode_add((d), __VA_ARGS__))
#define op_topk_encode(d, ...) (ops_of(d)->topk_encode((d), __VA_ARGS__))
#define op_topk_decode_add(d, ...) (ops_of(d)->topk_decode_add((d), __VA_ARGS__))
#define op_orthonormalise(d, ...) (ops_of(d)->orthonormalise((d), __VA_ARGS__))

#ifdef __cplusplus
}
#endif
#endif
