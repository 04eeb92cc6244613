/* ops_cuda_attention.cu: causal attention with grouped-query heads, one
 * block of queries against one block of keys, and the merge of two blocks.
 *
 * Fast (bf16, head dim 16, 32, 64 or 128): flash attention on the tensor
 * cores (Dao et al. 2022; FlashAttention-2, Dao 2023) through the WMMA API,
 * one launch per direction for all heads and sequences, masked key tiles
 * skipped, no score matrix in global memory; the backward pass is two
 * kernels (dk and dv per key tile; dq per query tile) so that every output
 * has one writer and no atomics are needed. Simple (and fp32, and other head
 * dims): widen to fp32, cuBLAS per head, a softmax kernel. */
#include "ops_cuda.cuh"

#include <mma.h>

/* ---- attention: the simple path ---------------------------------------------------
 * The CPU backend's plan on cuBLAS: bf16 inputs are widened to fp32 copies,
 * and per query head one strided-batched GEMM (over the B sequences) forms
 * the (Tq, Tk) scores, a row kernel applies the causal mask and the softmax,
 * and further GEMMs finish. Scores and probabilities stay fp32, so a bf16
 * result is rounded once. The full square is computed (masked entries are
 * multiplied and then zeroed), H small GEMMs run one after another, and the
 * scores make a round trip through global memory: simple, and the reference
 * the flash kernels below are checked against. It serves fp32 storage and
 * head dims the flash kernels do not cover. */

/* Keys [0, n) of the block are visible to query row i (block-relative):
 * k_pos0 + j <= q_pos0 + i, with off = q_pos0 - k_pos0. */
__device__ inline int visible_keys(int i, int Tk, int off) {
    return max(0, min(Tk, off + i + 1));
}

/* A warp per query row r = (b, i) of head h (rows = B * Tq; a row of
 * scores is short enough for one warp, and needs no barrier). s: that row
 * of the (B, Tq, Tk) scores, replaced by the probabilities (0 where masked);
 * lse: (B, H, Tq). */
__global__ void attn_softmax_kernel(float *S, float *lse, size_t rows, int Tq, int Tk, int H,
                                    int h, int off) {
    const size_t r = warp_row();
    const int lane = threadIdx.x % 32;
    if (r >= rows) return;
    const size_t b = r / Tq;
    const int i = (int)(r % Tq), n = visible_keys(i, Tk, off);
    float *s = S + r * Tk;
    float mx = -INFINITY;
    for (int j = lane; j < n; j += 32) mx = fmaxf(mx, s[j]);
    mx = warp_reduce<MAX>(mx);
    float sum = 0.0f;
    for (int j = lane; j < n; j += 32) sum += expf(s[j] - mx);
    sum = warp_reduce<SUM>(sum);
    const float inv = 1.0f / sum;
    for (int j = lane; j < Tk; j += 32) s[j] = j < n ? expf(s[j] - mx) * inv : 0.0f;
    if (lane == 0) lse[(b * H + h) * Tq + i] = n > 0 ? mx + logf(sum) : -INFINITY;
}

/* A warp per query row r = (b, i) of head h: S holds the scores s and
 * becomes p = exp(s - lse); dP holds dout . v and becomes
 * ds = p (dp - D), D = dout_i . out_i (read from the (B, Tq, H, hd) tensors). */
__global__ void attn_dscores_kernel(dtype_t t, float *S, float *dP, const float *lse,
                                    const void *out, const void *dout, size_t rows, int Tq,
                                    int Tk, int H, int hd, int h, int off) {
    const size_t r = warp_row();
    const int lane = threadIdx.x % 32;
    if (r >= rows) return;
    const size_t b = r / Tq, o = (r * H + h) * hd;           /* r * H = (b * Tq + i) * H */
    const int i = (int)(r % Tq);
    float D = 0.0f;
    for (int c = lane; c < hd; c += 32) D += load(dout, t, o + c) * load(out, t, o + c);
    D = warp_reduce<SUM>(D);
    const float l = lse[(b * H + h) * Tq + i];
    const int n = l == -INFINITY ? 0 : visible_keys(i, Tk, off);
    float *s = S + r * Tk, *dp = dP + r * Tk;
    for (int j = lane; j < Tk; j += 32) {
        float p = j < n ? expf(s[j] - l) : 0.0f;
        s[j] = p;
        dp[j] = p * (dp[j] - D);
    }
}

/* An fp32 view of n elements of type t: p itself for fp32, else the next n
 * floats of scratch at *next, filled with p widened when `copy`. */
static float *f32_view(const device_t *d, const void *p, dtype_t t, size_t n, float **next,
                       int copy) {
    if (t == DT_F32) return (float *)p;
    float *f = *next;
    *next += n;
    if (copy) cuda_cast<1>(d, p, t, f, DT_F32, n);
    return f;
}

static void attn_forward_simple(const device_t *d, dtype_t t, const void *q, const void *k,
                                const void *v, void *out, float *lse, int B, int Tq, int Tk,
                                int H, int KV, int hd, int q_pos0, int k_pos0) {
    if (B <= 0 || Tq <= 0 || H <= 0) return;
    const size_t nq = (size_t)B * Tq * H * hd, nkv = (size_t)B * Tk * KV * hd;
    const size_t rows = (size_t)B * Tq, ns = rows * Tk;
    float *S = scratch(d, ns + (t == DT_F32 ? 0 : 2 * nq + 2 * nkv));   /* (B, Tq, Tk) */
    float *next = S + ns;
    const float *Q = f32_view(d, q, t, nq, &next, 1);
    const float *K = f32_view(d, k, t, nkv, &next, 1);
    const float *Vf = f32_view(d, v, t, nkv, &next, 1);
    float *O = f32_view(d, out, t, nq, &next, 0);
    const float scale = 1.0f / sqrtf((float)hd);
    const int group = H / KV, ldq = H * hd, ldk = KV * hd;
    const long long sq = (long long)Tq * ldq, sk = (long long)Tk * ldk, ss = (long long)Tq * Tk;
    for (int h = 0; h < H; h++) {
        const size_t qo = (size_t)h * hd, ko = (size_t)(h / group) * hd;
        /* s = q k^T / sqrt(hd) */
        gemm(d, 0, 1, Tq, Tk, hd, scale, Q + qo, ldq, sq, K + ko, ldk, sk, DT_F32, 0.0f, S, Tk, ss,
             DT_F32, B);
        LAUNCH(attn_softmax_kernel, ceil_div(rows, THREADS / 32), THREADS, 0, stream_of(d), S, lse,
               rows, Tq, Tk, H, h, q_pos0 - k_pos0);
        /* out = p v */
        gemm(d, 0, 0, Tq, hd, Tk, 1.0f, S, Tk, ss, Vf + ko, ldk, sk, DT_F32, 0.0f, O + qo, ldq, sq,
             DT_F32, B);
    }
    if (t != DT_F32) cuda_cast<1>(d, O, DT_F32, out, t, nq);
}

static void attn_backward_simple(const device_t *d, dtype_t t, const void *q, const void *k,
                                 const void *v, const void *out, const void *dout,
                                 const float *lse, void *dq, void *dk, void *dv, int B, int Tq,
                                 int Tk, int H, int KV, int hd, int q_pos0, int k_pos0) {
    if (B <= 0 || Tq <= 0 || Tk <= 0 || H <= 0) return;
    const size_t nq = (size_t)B * Tq * H * hd, nkv = (size_t)B * Tk * KV * hd;
    const size_t rows = (size_t)B * Tq, ns = rows * Tk;
    float *S = scratch(d, 2 * ns + (t == DT_F32 ? 0 : 3 * nq + 4 * nkv));
    float *dP = S + ns;                                                /* (B, Tq, Tk) each */
    float *next = dP + ns;
    const float *Q = f32_view(d, q, t, nq, &next, 1);
    const float *K = f32_view(d, k, t, nkv, &next, 1);
    const float *Vf = f32_view(d, v, t, nkv, &next, 1);
    const float *dO = f32_view(d, dout, t, nq, &next, 1);
    float *dQ = f32_view(d, dq, t, nq, &next, 1);          /* widened: the GEMMs accumulate */
    float *dK = f32_view(d, dk, t, nkv, &next, 1);
    float *dV = f32_view(d, dv, t, nkv, &next, 1);
    const float scale = 1.0f / sqrtf((float)hd);
    const int group = H / KV, ldq = H * hd, ldk = KV * hd;
    const long long sq = (long long)Tq * ldq, sk = (long long)Tk * ldk, ss = (long long)Tq * Tk;
    /* heads sharing a kv head add into its dk, dv one after another, in order */
    for (int h = 0; h < H; h++) {
        const size_t qo = (size_t)h * hd, ko = (size_t)(h / group) * hd;
        /* s = q k^T / sqrt(hd), recomputed;  dp = dout v^T */
        gemm(d, 0, 1, Tq, Tk, hd, scale, Q + qo, ldq, sq, K + ko, ldk, sk, DT_F32, 0.0f, S, Tk, ss,
             DT_F32, B);
        gemm(d, 0, 1, Tq, Tk, hd, 1.0f, dO + qo, ldq, sq, Vf + ko, ldk, sk, DT_F32, 0.0f, dP, Tk,
             ss, DT_F32, B);
        LAUNCH(attn_dscores_kernel, ceil_div(rows, THREADS / 32), THREADS, 0, stream_of(d), t, S,
               dP, lse, out, dout, rows, Tq, Tk, H, hd, h, q_pos0 - k_pos0);
        /* dv += p^T dout;  dq += ds k / sqrt(hd);  dk += ds^T q / sqrt(hd) */
        gemm(d, 1, 0, Tk, hd, Tq, 1.0f, S, Tk, ss, dO + qo, ldq, sq, DT_F32, 1.0f, dV + ko, ldk, sk,
             DT_F32, B);
        gemm(d, 0, 0, Tq, hd, Tk, scale, dP, Tk, ss, K + ko, ldk, sk, DT_F32, 1.0f, dQ + qo, ldq,
             sq, DT_F32, B);
        gemm(d, 1, 0, Tk, hd, Tq, scale, dP, Tk, ss, Q + qo, ldq, sq, DT_F32, 1.0f, dK + ko, ldk,
             sk, DT_F32, B);
    }
    if (t != DT_F32) {
        cuda_cast<1>(d, dQ, DT_F32, dq, t, nq);
        cuda_cast<1>(d, dK, DT_F32, dk, t, nkv);
        cuda_cast<1>(d, dV, DT_F32, dv, t, nkv);
    }
}

/* Warp per row r of (B, T, H). Lane 0 rewrites lse only after every lane of
 * the warp has read it (__syncwarp). The two special cases keep the result
 * exact where one side saw no key. */
__global__ void attn_merge_kernel(dtype_t t, void *out, float *lse, const void *out_b,
                                  const float *lse_b, size_t rows, int T, int H, int hd) {
    /* ASSIGNMENT 09-merge: the online-softmax merge, on a GPU (09_context_parallel/README.md, "Assignment: the online-softmax merge") */
    /* STUB: (void)t, (void)out, (void)lse, (void)out_b, (void)lse_b, (void)rows, (void)T, (void)H, (void)hd; */
    const size_t r = warp_row();
    const int lane = threadIdx.x % 32;
    if (r >= rows) return;
    const size_t h = r % H, bt = r / H, li = ((bt / T) * H + h) * T + bt % T, o = r * hd;
    const float la = lse[li], lb = lse_b[li];
    __syncwarp();                                  /* every lane has read lse[li] */
    if (lb == -INFINITY) return;                   /* nothing new: keep (out, lse) */
    if (la == -INFINITY) {                         /* nothing yet: take block b */
        for (int c = lane; c < hd; c += 32) store(out, t, o + c, load(out_b, t, o + c));
        if (lane == 0) lse[li] = lb;
        return;
    }
    const float m = fmaxf(la, lb), wa = expf(la - m), wb = expf(lb - m), inv = 1.0f / (wa + wb);
    for (int c = lane; c < hd; c += 32) {
        store(out, t, o + c, (wa * load(out, t, o + c) + wb * load(out_b, t, o + c)) * inv);
    }
    if (lane == 0) lse[li] = m + logf(wa + wb);
    /* END ASSIGNMENT 09-merge */
}

void cuda_attn_merge(const device_t *d, dtype_t t, void *out, float *lse,
                     const void *out_b, const float *lse_b, int B, int T, int H, int hd) {
    /* ASSIGNMENT 09-merge: the online-softmax merge, on a GPU (09_context_parallel/README.md, "Assignment: the online-softmax merge") */
    /* STUB: (void)d, (void)t, (void)out, (void)lse, (void)out_b, (void)lse_b, (void)B, (void)T, (void)H, (void)hd; */
    /* STUB: not_implemented("online-softmax merge on a GPU (attn_merge_kernel)", "09_context_parallel/README.md, Assignment: the online-softmax merge"); */
    const size_t rows = (size_t)B * T * H;
    if (rows == 0) return;
    LAUNCH(attn_merge_kernel, ceil_div(rows, THREADS / 32), THREADS, 0, stream_of(d), t, out, lse,
           out_b, lse_b, rows, T, H, hd);
    /* END ASSIGNMENT 09-merge */
}

/* ---- attention: flash attention on the tensor cores ---------------------------------
 * (Dao et al. 2022, "FlashAttention"; Dao 2023, "FlashAttention-2".) For bf16
 * storage and head dims 16, 32, 64 and 128. A block of 4 warps takes a tile of
 * 64 query rows of one head (16 rows per warp) and walks the key tiles of 64
 * keys its rows can see: the fully masked tiles after the diagonal are never
 * loaded, and a warp skips a tile none of its rows sees. Per tile, with bf16
 * operands and fp32 accumulation on the tensor cores:
 *
 *   s = q k^T                    (16 x 64 per warp)
 *   m' = max(m, rowmax s)        p = exp(s - m')        l = l e^(m - m') + rowsum p
 *   o = o e^(m - m') + p v       and at the end  out = o / l,  lse = m + log l
 *
 * so scores and probabilities live in registers and shared memory only. The
 * WMMA API does not say which lane holds which element of a fragment, so the
 * row-wise softmax goes through shared memory: a warp stores s there (fp32),
 * two lanes per row compute p, write it back as bf16 for the p v product and
 * keep the rescaled o in registers (lane 2r + h owns columns h, h + 2, ... of
 * row r). Exponentials are exp2 of scores scaled by log2(e) / sqrt(hd): the
 * change of base folds into the scale that is applied anyway.
 *
 * Backward (FlashAttention-2's recomputation from lse): D_i = dout_i . out_i
 * first, then two kernels, so that every output element has exactly one
 * writer and needs no atomics:
 *   dk/dv kernel, a block per (key tile of 64, kv head, sequence): each warp
 *     keeps its 16 keys' k and v in fragments and dk, dv in accumulators, and
 *     walks every query head of the group and every query tile that sees its
 *     keys: s^T = k q^T, p^T = exp(s^T - lse), dv += p^T dout,
 *     dp^T = v dout^T, ds^T = p^T (dp^T - D), dk += ds^T q.
 *   dq kernel, a block per (query tile, head, sequence), like the forward:
 *     s = q k^T, p, dp = dout v^T, ds = p (dp - D), dq += ds k.
 * The dq kernel recomputes s and dp (7 tile products instead of 5), the price
 * of determinism without a (Tq, Tk) buffer. Both add their tile's result into
 * dq, dk, dv once, rounding to bf16 once (the op accumulates).
 *
 * Precision: p and ds are rounded to bf16 for their products, as in
 * FlashAttention (relative 2^-9 per term, inside sums that are fp32); l and
 * every sum stay fp32. */
namespace wmma = nvcuda::wmma;

enum { FA_TILE = 64, FA_WARPS = 4, FA_THREADS = 32 * FA_WARPS };
#define FA_LOG2E 1.44269504088896340736f
#define FA_LN2 0.69314718055994530942f

typedef wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> frag_a;
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> frag_b;
/* a matrix_b read column-major from a row-major tile: the tile's transpose */
typedef wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> frag_bt;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> frag_c;

/* Shared memory of the three kernels for head dim HD: two 64-row bf16 tiles
 * (q and dout, or k and v), then per warp a 16-row fp32 scratch (s, dp, or a
 * 16 x HD result) and a 16 x 64 bf16 tile (p or ds), then 2 x 64 floats (the
 * dk/dv kernel's lse and D of a query tile). Rows are padded by 16 bytes so
 * that consecutive rows start in different banks; every region and every
 * 16 x 16 sub-tile starts on 32 bytes, as WMMA requires. HD = 64: 44.5 KiB,
 * HD = 128: 76.5 KiB (over 48 KiB: the launch raises the kernel's limit). */
template <int HD> struct fa_layout {
    static constexpr int LDT = HD + 8;                          /* bf16 tile row */
    static constexpr int LDS = (HD > FA_TILE ? HD : FA_TILE) + 4;   /* fp32 scratch row */
    static constexpr int LDP = FA_TILE + 8;                     /* bf16 p row */
    static constexpr size_t TILE = (size_t)FA_TILE * LDT * 2;
    static constexpr size_t SCR = (size_t)16 * LDS * 4;
    static constexpr size_t PRB = (size_t)16 * LDP * 2;
    static constexpr size_t ROWS = 2 * TILE + FA_WARPS * (SCR + PRB);   /* offset of lse, D */
    static constexpr size_t BYTES = ROWS + 2 * FA_TILE * 4;
};

/* Rows [r0, r0 + 64) of a bf16 matrix whose row r (HD values) starts at
 * base + r * stride, into a 64-row shared tile; zeros past `rows`, so that
 * padding rows and keys contribute nothing. 16-byte loads when vec. */
template <int HD>
__device__ void fa_load_tile(__nv_bfloat16 *dst, const __nv_bfloat16 *base, size_t stride, int r0,
                             int rows, int vec) {
    constexpr int LDT = fa_layout<HD>::LDT, CH = HD / 8;
    if (vec) {
        for (int c = threadIdx.x; c < FA_TILE * CH; c += blockDim.x) {
            const int r = c / CH, e = (c % CH) * 8;
            uint4 u = make_uint4(0, 0, 0, 0);
            if (r0 + r < rows) u = *reinterpret_cast<const uint4 *>(base + (size_t)(r0 + r) * stride + e);
            *reinterpret_cast<uint4 *>(dst + r * LDT + e) = u;
        }
    } else {
        for (int c = threadIdx.x; c < FA_TILE * HD; c += blockDim.x) {
            const int r = c / HD, e = c % HD;
            dst[r * LDT + e] = r0 + r < rows ? base[(size_t)(r0 + r) * stride + e] : __float2bfloat16(0.0f);
        }
    }
}

/* A warp's 16 x HD fp32 result (in its scratch s) into rows [r0, r0 + 16) of
 * a bf16 matrix (rows < `rows` only), added to what is there when
 * `accumulate`; one rounding either way. Lanes take whole 8-element chunks
 * of a row, so stores are coalesced. */
template <int HD>
__device__ void fa_write_rows(__nv_bfloat16 *base, size_t stride, int r0, int rows, const float *s,
                              int accumulate, int vec) {
    constexpr int LDS = fa_layout<HD>::LDS, CH = HD / 8;
    for (int c = threadIdx.x % 32; c < 16 * CH; c += 32) {
        const int r = c / CH, e = (c % CH) * 8;
        if (r0 + r >= rows) continue;
        __nv_bfloat16 *dst = base + (size_t)(r0 + r) * stride + e;
        float v[8], old[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        if (vec && accumulate) load8(dst, DT_BF16, 0, old);
        if (!vec && accumulate)
            for (int k = 0; k < 8; k++) old[k] = __bfloat162float(dst[k]);
        for (int k = 0; k < 8; k++) v[k] = accumulate ? old[k] + s[r * LDS + e + k] : s[r * LDS + e + k];
        if (vec) store8(dst, DT_BF16, 0, v);
        else
            for (int k = 0; k < 8; k++) dst[k] = __float2bfloat16(v[k]);
    }
}

/* 16 x 64 product of a warp's 16 rows (fragments a[HD/16], the K dimension
 * HD) with the 64 rows of tile t transposed, into the warp's scratch s. */
template <int HD>
__device__ void fa_rows_times_tile_t(const frag_a *a, const __nv_bfloat16 *t, float *s) {
    constexpr int LDT = fa_layout<HD>::LDT, LDS = fa_layout<HD>::LDS;
#pragma unroll
    for (int n = 0; n < FA_TILE / 16; n++) {
        frag_c acc;
        wmma::fill_fragment(acc, 0.0f);
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++) {
            frag_bt bt;
            wmma::load_matrix_sync(bt, t + 16 * n * LDT + 16 * kk, LDT);
            wmma::mma_sync(acc, a[kk], bt, acc);
        }
        wmma::store_matrix_sync(s + 16 * n, acc, LDS, wmma::mem_row_major);
    }
}

/* acc[n] (16 x HD, as HD/16 accumulators) += p (16 x 64 bf16, the warp's
 * tile) times the 64 x HD tile t. p's four fragments are loaded once and
 * serve every column block of the result. */
template <int HD>
__device__ void fa_p_times_tile(frag_c *acc, const __nv_bfloat16 *p, const __nv_bfloat16 *t) {
    constexpr int LDT = fa_layout<HD>::LDT, LDP = fa_layout<HD>::LDP;
    frag_a pa[FA_TILE / 16];
#pragma unroll
    for (int kk = 0; kk < FA_TILE / 16; kk++) wmma::load_matrix_sync(pa[kk], p + 16 * kk, LDP);
#pragma unroll
    for (int n = 0; n < HD / 16; n++)
#pragma unroll
        for (int kk = 0; kk < FA_TILE / 16; kk++) {
            frag_b tb;
            wmma::load_matrix_sync(tb, t + 16 * kk * LDT + 16 * n, LDT);
            wmma::mma_sync(acc[n], pa[kk], tb, acc[n]);
        }
}

template <int HD>
__global__ void __launch_bounds__(FA_THREADS)
attn_forward_flash_kernel(const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
                          __nv_bfloat16 *out, float *lse, int Tq, int Tk, int H, int KV, int off,
                          float scale_log2, int vec) {
    typedef fa_layout<HD> L;
    extern __shared__ __align__(128) unsigned char fa_fwd_smem[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __nv_bfloat16 *tk = (__nv_bfloat16 *)fa_fwd_smem, *tv = (__nv_bfloat16 *)(fa_fwd_smem + L::TILE);
    float *s = (float *)(fa_fwd_smem + 2 * L::TILE + warp * L::SCR);
    __nv_bfloat16 *pb = (__nv_bfloat16 *)(fa_fwd_smem + 2 * L::TILE + FA_WARPS * L::SCR + warp * L::PRB);
    const int b = blockIdx.z, h = blockIdx.y, g = h / (H / KV);
    const int i0 = (gridDim.x - 1 - blockIdx.x) * FA_TILE;     /* the longest rows start first */
    const size_t qstride = (size_t)H * HD, kstride = (size_t)KV * HD;
    const size_t qo = ((size_t)b * Tq * H + h) * HD, ko = ((size_t)b * Tk * KV + g) * HD;
    /* query row i sees keys [0, visible_keys(i)) of the block */
    const int wi0 = i0 + 16 * warp;
    const int block_keys = visible_keys(min(i0 + FA_TILE, Tq) - 1, Tk, off);
    const int warp_keys = wi0 < Tq ? visible_keys(min(wi0 + 16, Tq) - 1, Tk, off) : 0;
    const int r = lane / 2, half = lane % 2, i = wi0 + r;     /* this lane's row, half its columns */
    const int row_keys = i < Tq ? visible_keys(i, Tk, off) : 0;

    fa_load_tile<HD>(tk, q + qo, qstride, i0, Tq, vec);       /* q passes through the k tile */
    __syncthreads();
    frag_a qf[HD / 16];
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++)
        wmma::load_matrix_sync(qf[kk], tk + 16 * warp * L::LDT + 16 * kk, L::LDT);
    float o[HD / 2];
#pragma unroll
    for (int u = 0; u < HD / 2; u++) o[u] = 0.0f;
    float m = -INFINITY, l = 0.0f;        /* running max (log2 units) and sum of exp2(s - m) */
    for (int j0 = 0; j0 < block_keys; j0 += FA_TILE) {
        __syncthreads();                                      /* q and the last tiles are read */
        fa_load_tile<HD>(tk, k + ko, kstride, j0, Tk, vec);
        fa_load_tile<HD>(tv, v + ko, kstride, j0, Tk, vec);
        __syncthreads();
        if (j0 >= warp_keys) continue;                        /* no row of this warp sees them */
        fa_rows_times_tile_t<HD>(qf, tk, s);                  /* s = q k^T */
        __syncwarp();
        float x[FA_TILE / 2], mx = -INFINITY;
#pragma unroll
        for (int u = 0; u < FA_TILE / 2; u++) {
            const int c = 2 * u + half;
            x[u] = j0 + c < row_keys ? s[r * L::LDS + c] * scale_log2 : -INFINITY;
            mx = fmaxf(mx, x[u]);
        }
        mx = fmaxf(mx, __shfl_xor_sync(FULL_MASK, mx, 1));
        const float m_new = fmaxf(m, mx), base = m_new == -INFINITY ? 0.0f : m_new;
        const float alpha = exp2f(m - base);                  /* 0 while the row has seen nothing */
        float sum = 0.0f;
#pragma unroll
        for (int u = 0; u < FA_TILE / 2; u++) {
            const float p = exp2f(x[u] - base);
            sum += p;
            pb[r * L::LDP + 2 * u + half] = __float2bfloat16(p);
        }
        sum += __shfl_xor_sync(FULL_MASK, sum, 1);
        l = l * alpha + sum;
        m = m_new;
        __syncwarp();                                         /* p written, s read by all lanes */
        frag_c pv[HD / 16];
#pragma unroll
        for (int n = 0; n < HD / 16; n++) wmma::fill_fragment(pv[n], 0.0f);
        fa_p_times_tile<HD>(pv, pb, tv);                      /* p v */
#pragma unroll
        for (int n = 0; n < HD / 16; n++)
            wmma::store_matrix_sync(s + 16 * n, pv[n], L::LDS, wmma::mem_row_major);
        __syncwarp();
#pragma unroll
        for (int u = 0; u < HD / 2; u++) o[u] = o[u] * alpha + s[r * L::LDS + 2 * u + half];
    }
    __syncwarp();                                             /* every lane has read s */
    const float inv = l > 0.0f ? 1.0f / l : 0.0f;             /* a row that saw nothing: 0 */
#pragma unroll
    for (int u = 0; u < HD / 2; u++) s[r * L::LDS + 2 * u + half] = o[u] * inv;
    if (half == 0 && i < Tq)
        lse[((size_t)b * H + h) * Tq + i] = l > 0.0f ? (m + log2f(l)) * FA_LN2 : -INFINITY;
    __syncwarp();
    fa_write_rows<HD>(out + qo, qstride, wi0, Tq, s, 0, vec);
}

/* D[b][h][i] = dout_i . out_i, a warp per row of (B, T, H). */
__global__ void attn_rowdot_kernel(dtype_t t, const void *out, const void *dout, float *D,
                                   size_t rows, int T, int H, int hd) {
    const size_t r = warp_row();
    const int lane = threadIdx.x % 32;
    if (r >= rows) return;
    const size_t h = r % H, bt = r / H, o = r * hd;
    float s = 0.0f;
    for (int c = lane; c < hd; c += 32) s += load(dout, t, o + c) * load(out, t, o + c);
    s = warp_reduce<SUM>(s);
    if (lane == 0) D[((bt / T) * H + h) * T + bt % T] = s;
}

template <int HD>
__global__ void __launch_bounds__(FA_THREADS)
attn_backward_dkdv_kernel(const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
                          const __nv_bfloat16 *dout, const float *lse, const float *D,
                          __nv_bfloat16 *dk, __nv_bfloat16 *dv, int Tq, int Tk, int H, int KV,
                          int off, float scale_log2, float scale, int vec) {
    typedef fa_layout<HD> L;
    extern __shared__ __align__(128) unsigned char fa_dkdv_smem[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __nv_bfloat16 *tq = (__nv_bfloat16 *)fa_dkdv_smem, *tdo = (__nv_bfloat16 *)(fa_dkdv_smem + L::TILE);
    float *s = (float *)(fa_dkdv_smem + 2 * L::TILE + warp * L::SCR);
    __nv_bfloat16 *pb = (__nv_bfloat16 *)(fa_dkdv_smem + 2 * L::TILE + FA_WARPS * L::SCR + warp * L::PRB);
    float *lse_s = (float *)(fa_dkdv_smem + L::ROWS), *D_s = lse_s + FA_TILE;
    const int b = blockIdx.z, g = blockIdx.y, group = H / KV;
    const int j0 = blockIdx.x * FA_TILE;             /* the first key tiles have the most queries */
    const size_t qstride = (size_t)H * HD, kstride = (size_t)KV * HD;
    const size_t ko = ((size_t)b * Tk * KV + g) * HD;
    const int wj0 = j0 + 16 * warp;
    const int r = lane / 2, half = lane % 2, j = wj0 + r;     /* this lane's key, half the queries */

    fa_load_tile<HD>(tq, k + ko, kstride, j0, Tk, vec);       /* k, v pass through the q, dout tiles */
    fa_load_tile<HD>(tdo, v + ko, kstride, j0, Tk, vec);
    __syncthreads();
    frag_a kf[HD / 16], vf[HD / 16];
    frag_c dkacc[HD / 16], dvacc[HD / 16];
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) {
        wmma::load_matrix_sync(kf[kk], tq + 16 * warp * L::LDT + 16 * kk, L::LDT);
        wmma::load_matrix_sync(vf[kk], tdo + 16 * warp * L::LDT + 16 * kk, L::LDT);
        wmma::fill_fragment(dkacc[kk], 0.0f);
        wmma::fill_fragment(dvacc[kk], 0.0f);
    }
    /* query i sees key j iff j <= i + off: key j0 is first seen by query j0 - off */
    const int ifirst = max(0, j0 - off);
    for (int hh = 0; hh < group; hh++) {
        const int h = g * group + hh;
        const size_t qo = ((size_t)b * Tq * H + h) * HD, lo = ((size_t)b * H + h) * Tq;
        for (int i0 = ifirst - ifirst % FA_TILE; i0 < Tq; i0 += FA_TILE) {
            __syncthreads();                                  /* the last tiles are read */
            fa_load_tile<HD>(tq, q + qo, qstride, i0, Tq, vec);
            fa_load_tile<HD>(tdo, dout + qo, qstride, i0, Tq, vec);
            for (int c = threadIdx.x; c < FA_TILE; c += blockDim.x) {
                const int i = i0 + c;          /* lse -inf: the row sees no key, no gradient */
                lse_s[c] = i < Tq ? lse[lo + i] * FA_LOG2E : -INFINITY;
                D_s[c] = i < Tq ? D[lo + i] : 0.0f;
            }
            __syncthreads();
            if (wj0 >= Tk || wj0 > min(i0 + FA_TILE, Tq) - 1 + off) continue;   /* unseen keys */
            fa_rows_times_tile_t<HD>(kf, tq, s);              /* s^T = k q^T */
            __syncwarp();
            float p[FA_TILE / 2];
#pragma unroll
            for (int u = 0; u < FA_TILE / 2; u++) {
                const int c = 2 * u + half;
                const bool seen = j < Tk && j <= i0 + c + off && lse_s[c] != -INFINITY;
                p[u] = seen ? exp2f(s[r * L::LDS + c] * scale_log2 - lse_s[c]) : 0.0f;
                pb[r * L::LDP + c] = __float2bfloat16(p[u]);
            }
            __syncwarp();
            fa_p_times_tile<HD>(dvacc, pb, tdo);              /* dv += p^T dout */
            fa_rows_times_tile_t<HD>(vf, tdo, s);             /* dp^T = v dout^T */
            __syncwarp();                                     /* p read by all lanes' loads */
#pragma unroll
            for (int u = 0; u < FA_TILE / 2; u++) {
                const int c = 2 * u + half;
                pb[r * L::LDP + c] = __float2bfloat16(p[u] * (s[r * L::LDS + c] - D_s[c]));
            }
            __syncwarp();
            fa_p_times_tile<HD>(dkacc, pb, tq);               /* dk += ds^T q */
        }
    }
#pragma unroll
    for (int n = 0; n < HD / 16; n++)
        for (int e = 0; e < dkacc[n].num_elements; e++) dkacc[n].x[e] *= scale;
    __syncwarp();                                             /* every lane has read s */
#pragma unroll
    for (int n = 0; n < HD / 16; n++)
        wmma::store_matrix_sync(s + 16 * n, dkacc[n], L::LDS, wmma::mem_row_major);
    __syncwarp();
    fa_write_rows<HD>(dk + ko, kstride, wj0, Tk, s, 1, vec);
    __syncwarp();
#pragma unroll
    for (int n = 0; n < HD / 16; n++)
        wmma::store_matrix_sync(s + 16 * n, dvacc[n], L::LDS, wmma::mem_row_major);
    __syncwarp();
    fa_write_rows<HD>(dv + ko, kstride, wj0, Tk, s, 1, vec);
}

template <int HD>
__global__ void __launch_bounds__(FA_THREADS)
attn_backward_dq_kernel(const __nv_bfloat16 *q, const __nv_bfloat16 *k, const __nv_bfloat16 *v,
                        const __nv_bfloat16 *dout, const float *lse, const float *D,
                        __nv_bfloat16 *dq, int Tq, int Tk, int H, int KV, int off,
                        float scale_log2, float scale, int vec) {
    typedef fa_layout<HD> L;
    extern __shared__ __align__(128) unsigned char fa_dq_smem[];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __nv_bfloat16 *tk = (__nv_bfloat16 *)fa_dq_smem, *tv = (__nv_bfloat16 *)(fa_dq_smem + L::TILE);
    float *s = (float *)(fa_dq_smem + 2 * L::TILE + warp * L::SCR);
    __nv_bfloat16 *pb = (__nv_bfloat16 *)(fa_dq_smem + 2 * L::TILE + FA_WARPS * L::SCR + warp * L::PRB);
    const int b = blockIdx.z, h = blockIdx.y, g = h / (H / KV);
    const int i0 = (gridDim.x - 1 - blockIdx.x) * FA_TILE;
    const size_t qstride = (size_t)H * HD, kstride = (size_t)KV * HD;
    const size_t qo = ((size_t)b * Tq * H + h) * HD, ko = ((size_t)b * Tk * KV + g) * HD;
    const int wi0 = i0 + 16 * warp;
    const int block_keys = visible_keys(min(i0 + FA_TILE, Tq) - 1, Tk, off);
    const int warp_keys = wi0 < Tq ? visible_keys(min(wi0 + 16, Tq) - 1, Tk, off) : 0;
    const int r = lane / 2, half = lane % 2, i = wi0 + r;
    const float lse2 = i < Tq ? lse[((size_t)b * H + h) * Tq + i] * FA_LOG2E : -INFINITY;
    const float Di = i < Tq ? D[((size_t)b * H + h) * Tq + i] : 0.0f;
    const int row_keys = i < Tq && lse2 != -INFINITY ? visible_keys(i, Tk, off) : 0;

    fa_load_tile<HD>(tk, q + qo, qstride, i0, Tq, vec);       /* q, dout pass through the k, v tiles */
    fa_load_tile<HD>(tv, dout + qo, qstride, i0, Tq, vec);
    __syncthreads();
    frag_a qf[HD / 16], dof[HD / 16];
    frag_c dqacc[HD / 16];
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) {
        wmma::load_matrix_sync(qf[kk], tk + 16 * warp * L::LDT + 16 * kk, L::LDT);
        wmma::load_matrix_sync(dof[kk], tv + 16 * warp * L::LDT + 16 * kk, L::LDT);
        wmma::fill_fragment(dqacc[kk], 0.0f);
    }
    for (int j0 = 0; j0 < block_keys; j0 += FA_TILE) {
        __syncthreads();
        fa_load_tile<HD>(tk, k + ko, kstride, j0, Tk, vec);
        fa_load_tile<HD>(tv, v + ko, kstride, j0, Tk, vec);
        __syncthreads();
        if (j0 >= warp_keys) continue;
        fa_rows_times_tile_t<HD>(qf, tk, s);                  /* s = q k^T */
        __syncwarp();
        float p[FA_TILE / 2];
#pragma unroll
        for (int u = 0; u < FA_TILE / 2; u++) {
            const int c = 2 * u + half;
            p[u] = j0 + c < row_keys ? exp2f(s[r * L::LDS + c] * scale_log2 - lse2) : 0.0f;
        }
        __syncwarp();                                         /* s read by all lanes */
        fa_rows_times_tile_t<HD>(dof, tv, s);                 /* dp = dout v^T */
        __syncwarp();
#pragma unroll
        for (int u = 0; u < FA_TILE / 2; u++) {
            const int c = 2 * u + half;
            pb[r * L::LDP + c] = __float2bfloat16(p[u] * (s[r * L::LDS + c] - Di));
        }
        __syncwarp();
        fa_p_times_tile<HD>(dqacc, pb, tk);                   /* dq += ds k */
    }
#pragma unroll
    for (int n = 0; n < HD / 16; n++)
        for (int e = 0; e < dqacc[n].num_elements; e++) dqacc[n].x[e] *= scale;
    __syncwarp();
#pragma unroll
    for (int n = 0; n < HD / 16; n++)
        wmma::store_matrix_sync(s + 16 * n, dqacc[n], L::LDS, wmma::mem_row_major);
    __syncwarp();
    fa_write_rows<HD>(dq + qo, qstride, wi0, Tq, s, 1, vec);
}

/* The head dims the flash kernels are compiled for. */
static int flash_supports(dtype_t t, int hd) {
    return t == DT_BF16 && (hd == 16 || hd == 32 || hd == 64 || hd == 128);
}

template <int HD>
static void flash_forward(const device_t *d, const void *q, const void *k, const void *v, void *out,
                          float *lse, int B, int Tq, int Tk, int H, int KV, int off, int vec) {
    const size_t smem = fa_layout<HD>::BYTES;
    CUDA_CHECK(cudaFuncSetAttribute(attn_forward_flash_kernel<HD>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const dim3 grid(ceil_div(Tq, FA_TILE), H, B);
    LAUNCH(attn_forward_flash_kernel<HD>, grid, FA_THREADS, smem, stream_of(d),
           (const __nv_bfloat16 *)q, (const __nv_bfloat16 *)k, (const __nv_bfloat16 *)v,
           (__nv_bfloat16 *)out, lse, Tq, Tk, H, KV, off, FA_LOG2E * (1.0f / sqrtf((float)HD)), vec);
}

template <int HD>
static void flash_backward(const device_t *d, const void *q, const void *k, const void *v,
                           const void *dout, const float *lse, const float *D, void *dq, void *dk,
                           void *dv, int B, int Tq, int Tk, int H, int KV, int off, int vec) {
    const size_t smem = fa_layout<HD>::BYTES;
    const float scale = 1.0f / sqrtf((float)HD), scale_log2 = FA_LOG2E * scale;
    CUDA_CHECK(cudaFuncSetAttribute(attn_backward_dkdv_kernel<HD>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    CUDA_CHECK(cudaFuncSetAttribute(attn_backward_dq_kernel<HD>,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const __nv_bfloat16 *Q = (const __nv_bfloat16 *)q, *K = (const __nv_bfloat16 *)k;
    const __nv_bfloat16 *V = (const __nv_bfloat16 *)v, *dO = (const __nv_bfloat16 *)dout;
    LAUNCH(attn_backward_dkdv_kernel<HD>, dim3(ceil_div(Tk, FA_TILE), KV, B), FA_THREADS, smem,
           stream_of(d), Q, K, V, dO, lse, D, (__nv_bfloat16 *)dk, (__nv_bfloat16 *)dv, Tq, Tk, H,
           KV, off, scale_log2, scale, vec);
    LAUNCH(attn_backward_dq_kernel<HD>, dim3(ceil_div(Tq, FA_TILE), H, B), FA_THREADS, smem,
           stream_of(d), Q, K, V, dO, lse, D, (__nv_bfloat16 *)dq, Tq, Tk, H, KV, off, scale_log2,
           scale, vec);
}

template <int FAST>
void cuda_attn_forward(const device_t *d, dtype_t t, const void *q, const void *k,
                       const void *v, void *out, float *lse, int B, int Tq, int Tk, int H,
                       int KV, int hd, int q_pos0, int k_pos0) {
    if (!FAST || !flash_supports(t, hd)) {
        attn_forward_simple(d, t, q, k, v, out, lse, B, Tq, Tk, H, KV, hd, q_pos0, k_pos0);
        return;
    }
    if (B <= 0 || Tq <= 0 || H <= 0) return;
    const int vec = aligned16(q) && aligned16(k) && aligned16(v) && aligned16(out);
    const int off = q_pos0 - k_pos0;
    switch (hd) {
    case 16: flash_forward<16>(d, q, k, v, out, lse, B, Tq, Tk, H, KV, off, vec); break;
    case 32: flash_forward<32>(d, q, k, v, out, lse, B, Tq, Tk, H, KV, off, vec); break;
    case 64: flash_forward<64>(d, q, k, v, out, lse, B, Tq, Tk, H, KV, off, vec); break;
    default: flash_forward<128>(d, q, k, v, out, lse, B, Tq, Tk, H, KV, off, vec); break;
    }
}
OPS_CUDA_VARIANTS(cuda_attn_forward);

template <int FAST>
void cuda_attn_backward(const device_t *d, dtype_t t, const void *q, const void *k,
                        const void *v, const void *out, const void *dout, const float *lse,
                        void *dq, void *dk, void *dv, int B, int Tq, int Tk, int H, int KV,
                        int hd, int q_pos0, int k_pos0) {
    if (!FAST || !flash_supports(t, hd)) {
        attn_backward_simple(d, t, q, k, v, out, dout, lse, dq, dk, dv, B, Tq, Tk, H, KV, hd,
                             q_pos0, k_pos0);
        return;
    }
    if (B <= 0 || Tq <= 0 || Tk <= 0 || H <= 0) return;
    const size_t rows = (size_t)B * Tq * H;
    float *D = scratch(d, rows);                                    /* (B, H, Tq) */
    LAUNCH(attn_rowdot_kernel, ceil_div(rows, THREADS / 32), THREADS, 0, stream_of(d), t, out,
           dout, D, rows, Tq, H, hd);
    const int vec = aligned16(q) && aligned16(k) && aligned16(v) && aligned16(dout) &&
                    aligned16(dq) && aligned16(dk) && aligned16(dv);
    const int off = q_pos0 - k_pos0;
    switch (hd) {
    case 16: flash_backward<16>(d, q, k, v, dout, lse, D, dq, dk, dv, B, Tq, Tk, H, KV, off, vec); break;
    case 32: flash_backward<32>(d, q, k, v, dout, lse, D, dq, dk, dv, B, Tq, Tk, H, KV, off, vec); break;
    case 64: flash_backward<64>(d, q, k, v, dout, lse, D, dq, dk, dv, B, Tq, Tk, H, KV, off, vec); break;
    default: flash_backward<128>(d, q, k, v, dout, lse, D, dq, dk, dv, B, Tq, Tk, H, KV, off, vec); break;
    }
}
OPS_CUDA_VARIANTS(cuda_attn_backward);
