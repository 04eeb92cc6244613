/* ops_cuda_xent.cu: softmax cross-entropy, possibly over one vocabulary
 * shard, and the lse of the shards combined.
 *
 * Fast kernels: one online-softmax pass over the row for the forward lse
 * (Milakov & Gimelshein 2018), a block per row for the backward pass, 8
 * logits per 16-byte access when V and the pointers allow. The simple
 * forward reads the row twice (the max, then the sum); the simple backward
 * gives each logit a thread. */
#include "ops_cuda.cuh"

/* Simple forward: one block per row, the max, then the sum of exp(x - max):
 * two passes over the row. */
__global__ void xent_forward_kernel(dtype_t t, const void *logits, const int *targets,
                                    float *picked, float *lse, int V, int v0) {
    const int n = blockIdx.x;
    const size_t o = (size_t)n * V;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < V; j += blockDim.x) mx = fmaxf(mx, load(logits, t, o + j));
    mx = block_reduce<MAX>(mx);
    float sum = 0.0f;
    for (int j = threadIdx.x; j < V; j += blockDim.x) sum += expf(load(logits, t, o + j) - mx);
    sum = block_reduce<SUM>(sum);
    if (threadIdx.x == 0) {
        const int y = targets[n] - v0;
        lse[n] = mx + logf(sum);
        picked[n] = targets[n] >= 0 && y >= 0 && y < V ? load(logits, t, o + y) : 0.0f;
    }
}

/* Online softmax (Milakov & Gimelshein 2018): a running max m and sum
 * s = sum exp(x - m), rescaled when the max grows, so the row is read once.
 * (m, s) pairs combine the same way: commutative, so every lane of a warp's
 * xor butterfly ends with the same pair. */
__device__ inline void lse_merge(float &m, float &s, float m2, float s2) {
    const float mn = fmaxf(m, m2);
    if (mn == -INFINITY) return;                      /* both empty */
    s = s * expf(m - mn) + s2 * expf(m2 - mn);        /* exp(-inf) = 0 for an empty side */
    m = mn;
}

__device__ void block_reduce_lse(float &m, float &s) {
    __shared__ float pm[32], ps[32];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int o = 16; o > 0; o /= 2)
        lse_merge(m, s, __shfl_xor_sync(FULL_MASK, m, o), __shfl_xor_sync(FULL_MASK, s, o));
    __syncthreads();
    if (lane == 0) {
        pm[warp] = m;
        ps[warp] = s;
    }
    __syncthreads();
    m = lane < warps ? pm[lane] : -INFINITY;
    s = lane < warps ? ps[lane] : 0.0f;
    for (int o = 16; o > 0; o /= 2)
        lse_merge(m, s, __shfl_xor_sync(FULL_MASK, m, o), __shfl_xor_sync(FULL_MASK, s, o));
}

/* Fast forward: one block per row, one pass (8 logits per 16-byte load when
 * vec: the chunk's max first, then one rescale per chunk). */
__global__ void xent_forward_online_kernel(dtype_t t, const void *logits, const int *targets,
                                           float *picked, float *lse, int V, int v0, int vec) {
    const int n = blockIdx.x;
    const size_t o = (size_t)n * V;
    float m = -INFINITY, s = 0.0f;
    if (vec) {
        for (int c = 8 * threadIdx.x; c < V; c += 8 * blockDim.x) {
            float x[8], cm = -INFINITY, cs = 0.0f;
            load8(logits, t, o + c, x);
            for (int e = 0; e < 8; e++) cm = fmaxf(cm, x[e]);
            if (cm == -INFINITY) continue;
            for (int e = 0; e < 8; e++) cs += expf(x[e] - cm);
            lse_merge(m, s, cm, cs);
        }
    } else {
        for (int j = threadIdx.x; j < V; j += blockDim.x) {
            const float x = load(logits, t, o + j);
            if (x != -INFINITY) lse_merge(m, s, x, 1.0f);
        }
    }
    block_reduce_lse(m, s);
    if (threadIdx.x == 0) {
        const int y = targets[n] - v0;
        lse[n] = m + logf(s);
        picked[n] = targets[n] >= 0 && y >= 0 && y < V ? load(logits, t, o + y) : 0.0f;
    }
}

/* Simple backward: element-wise given lse, one thread per logit (a division
 * for the row and a load of its target per element); dlogits may alias
 * logits. */
__global__ void xent_backward_kernel(dtype_t t, const void *logits, const int *targets,
                                     const float *lse, void *dlogits, float scale, int V, int v0,
                                     size_t n) {
    GRID_STRIDE(i, n) {
        const size_t row = i / V;
        const int y = targets[row], j = (int)(i % V);
        float g = 0.0f;                                      /* ignored target: no gradient */
        if (y >= 0) g = (expf(load(logits, t, i) - lse[row]) - (j + v0 == y ? 1.0f : 0.0f)) * scale;
        store(dlogits, t, i, g);
    }
}

/* Fast backward: one block per row, 8 logits per thread step when vec. */
__global__ void xent_backward_row_kernel(dtype_t t, const void *logits, const int *targets,
                                         const float *lse, void *dlogits, float scale, int V,
                                         int v0, int vec) {
    const int n = blockIdx.x, y = targets[n];
    const size_t o = (size_t)n * V;
    const float l = lse[n];
    if (vec) {
        for (int c = 8 * threadIdx.x; c < V; c += 8 * blockDim.x) {
            float x[8];
            load8(logits, t, o + c, x);
            for (int e = 0; e < 8; e++)
                x[e] = y < 0 ? 0.0f : (expf(x[e] - l) - (c + e + v0 == y ? 1.0f : 0.0f)) * scale;
            store8(dlogits, t, o + c, x);
        }
    } else {
        for (int j = threadIdx.x; j < V; j += blockDim.x) {
            const float g = y < 0 ? 0.0f : (expf(load(logits, t, o + j) - l) - (j + v0 == y ? 1.0f : 0.0f)) * scale;
            store(dlogits, t, o + j, g);
        }
    }
}

template <int FAST>
void cuda_xent_forward(const device_t *d, dtype_t t, const void *logits, const int *targets,
                       float *picked, float *lse, int N, int V, int v0) {
    if (N <= 0) return;
    if (!FAST) {
        LAUNCH(xent_forward_kernel, N, row_threads(V), 0, stream_of(d), t, logits, targets, picked,
               lse, V, v0);
        return;
    }
    const int vec = V % 8 == 0 && aligned16(logits);
    LAUNCH(xent_forward_online_kernel, N, row_threads(vec ? V / 8 : V), 0, stream_of(d), t, logits,
           targets, picked, lse, V, v0, vec);
}
OPS_CUDA_VARIANTS(cuda_xent_forward);

template <int FAST>
void cuda_xent_backward(const device_t *d, dtype_t t, const void *logits, const int *targets,
                        const float *lse, void *dlogits, float scale, int N, int V, int v0) {
    if (N <= 0 || V <= 0) return;
    if (!FAST) {
        const size_t n = (size_t)N * V;
        LAUNCH(xent_backward_kernel, stride_grid(n), THREADS, 0, stream_of(d), t, logits, targets,
               lse, dlogits, scale, V, v0, n);
        return;
    }
    const int vec = V % 8 == 0 && aligned16(logits) && aligned16(dlogits);
    LAUNCH(xent_backward_row_kernel, N, row_threads(vec ? V / 8 : V), 0, stream_of(d), t, logits,
           targets, lse, dlogits, scale, V, v0, vec);
}
OPS_CUDA_VARIANTS(cuda_xent_backward);

/* One thread per row over the P shards' lse (P is the tensor-parallel degree:
 * a handful). */
__global__ void lse_combine_kernel(const float *parts, float *out, int P, int N) {
    GRID_STRIDE(n, (size_t)N) {
        float mx = -INFINITY;
        for (int p = 0; p < P; p++) mx = fmaxf(mx, parts[(size_t)p * N + n]);
        float s = 0.0f;
        if (mx != -INFINITY)
            for (int p = 0; p < P; p++) s += expf(parts[(size_t)p * N + n] - mx);
        out[n] = mx == -INFINITY ? -INFINITY : mx + logf(s);
    }
}

void cuda_lse_combine(const device_t *d, const float *parts, float *out, int P, int N) {
    if (N <= 0) return;
    LAUNCH(lse_combine_kernel, stride_grid((size_t)N), THREADS, 0, stream_of(d), parts, out, P, N);
}
