/* ops_cuda_embedding.cu: the token embedding, possibly one vocabulary shard.
 *
 * Forward: a gather, rows moved as 16-byte words when the row size and the
 * pointers allow (else one thread per element). Backward: the tokens sorted
 * once (with their positions), then one block per distinct row adds that
 * row's gradients in order of n; the simple kernel has one thread per channel
 * walk all the tokens. */
#include "ops_cuda.cuh"

/* Simple: one thread per element. */
__global__ void embedding_forward_kernel(dtype_t t, const int *tokens, const void *table,
                                         void *out, int N, int C, int v0, int Vs) {
    GRID_STRIDE(i, (size_t)N * C) {
        size_t n = i / C, c = i % C;
        int v = tokens[n] - v0;   /* another shard's token gives a zero row */
        store(out, t, i, v >= 0 && v < Vs ? load(table, t, (size_t)v * C + c) : 0.0f);
    }
}

/* Fast: a gather is a copy, so rows move as 16-byte words whatever the type
 * (row16 words per row). */
__global__ void embedding_forward_vec_kernel(const int *tokens, const uint4 *table, uint4 *out,
                                             int N, int row16, int v0, int Vs) {
    GRID_STRIDE(i, (size_t)N * row16) {
        size_t n = i / row16, c = i % row16;
        int v = tokens[n] - v0;
        out[i] = v >= 0 && v < Vs ? table[(size_t)v * row16 + c] : make_uint4(0, 0, 0, 0);
    }
}

/* Simple backward: one thread per channel walks the tokens in order n = 0..N-1:
 * repeated tokens sum in a fixed order without atomics, but only C threads
 * work (1024 threads looping over 16384 tokens at C = 1024). */
__global__ void embedding_backward_kernel(dtype_t t, const int *tokens, const void *dout,
                                          float *dtable, int N, int C, int v0, int Vs) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    for (int n = 0; n < N; n++) {
        int v = tokens[n] - v0;
        if (v >= 0 && v < Vs) dtable[(size_t)v * C + c] += load(dout, t, (size_t)n * C + c);
    }
}

/* Fast backward, in three steps. Each token n becomes the 64-bit key
 * (row << 32) | n, row = tokens[n] - v0 for a token of the shard and Vs
 * (after every real row) otherwise. The keys are unique, so their sorted order
 * is unique too, however the sort runs:
 *   1. each block sorts a chunk of 2 * blockDim.x keys in shared memory
 *      (bitonic sort: log2(chunk) (log2(chunk) + 1) / 2 compare-exchange
 *      rounds, each a barrier);
 *   2. runs of width w merge pairwise until one run remains: a key's place in
 *      the merged run is its place in its own run plus the number of keys of
 *      the partner run below it (a binary search; no ties, keys are unique);
 *   3. one block per distinct row adds that row's gradients, which the sort
 *      left in order of n: dtable[row] += dout[n1], then += dout[n2], ... in
 *      fp32, exactly the CPU backend's order. */
__global__ void embedding_sort_chunks_kernel(const int *tokens, unsigned long long *keys, int N,
                                             int v0, int Vs) {
    extern __shared__ unsigned long long sorted_keys[];            /* 2 * blockDim.x */
    const int chunk = 2 * blockDim.x, base = blockIdx.x * chunk;
    for (int i = threadIdx.x; i < chunk; i += blockDim.x) {
        const int n = base + i;
        unsigned long long key = ~0ull;                            /* padding sorts last */
        if (n < N) {
            const int v = tokens[n] - v0;
            const unsigned int row = v >= 0 && v < Vs ? (unsigned int)v : (unsigned int)Vs;
            key = ((unsigned long long)row << 32) | (unsigned int)n;
        }
        sorted_keys[i] = key;
    }
    __syncthreads();
    for (int size = 2; size <= chunk; size *= 2)          /* bitonic sequences of `size` */
        for (int stride = size / 2; stride > 0; stride /= 2) {
            for (int i = threadIdx.x; i < chunk; i += blockDim.x) {
                const int j = i ^ stride;
                if (j > i) {
                    const bool up = (i & size) == 0;
                    const unsigned long long a = sorted_keys[i], b = sorted_keys[j];
                    if ((a > b) == up) {
                        sorted_keys[i] = b;
                        sorted_keys[j] = a;
                    }
                }
            }
            __syncthreads();
        }
    for (int i = threadIdx.x; i < chunk && base + i < N; i += blockDim.x)
        keys[base + i] = sorted_keys[i];
}

/* Sorted runs of w keys, [r w, (r + 1) w), merged pairwise into `out`. */
__global__ void merge_runs_kernel(const unsigned long long *in, unsigned long long *out, int N,
                                  int w) {
    GRID_STRIDE(i, (size_t)N) {
        const unsigned long long key = in[i];
        const int run = (int)(i / w), pos = (int)(i % w), partner = (run ^ 1) * w;
        int lo = 0, hi = partner < N ? min(w, N - partner) : 0;   /* partner keys below key */
        while (lo < hi) {
            const int mid = (lo + hi) / 2;
            if (in[partner + mid] < key) lo = mid + 1;
            else hi = mid;
        }
        out[(size_t)(run & ~1) * w + pos + lo] = key;
    }
}

/* Blocks take sorted positions p in turn; the block at the first key of a
 * row's run adds the whole run, 8 channels per thread when vec. */
__global__ void embedding_backward_sorted_kernel(dtype_t t, const unsigned long long *keys,
                                                 const void *dout, float *dtable, int N, int C,
                                                 int Vs, int vec) {
    for (int p = blockIdx.x; p < N; p += gridDim.x) {
        const unsigned int row = (unsigned int)(keys[p] >> 32);
        if (row >= (unsigned int)Vs) break;                 /* other shards' tokens sort last */
        if (p > 0 && (unsigned int)(keys[p - 1] >> 32) == row) continue;   /* not its first */
        float *dst = dtable + (size_t)row * C;
        if (vec) {
            for (int c = 8 * threadIdx.x; c < C; c += 8 * blockDim.x) {
                float acc[8], g[8];
                load8(dst, DT_F32, c, acc);
                for (int q = p; q < N && (unsigned int)(keys[q] >> 32) == row; q++) {
                    load8(dout, t, (size_t)(unsigned int)keys[q] * C + c, g);
                    for (int e = 0; e < 8; e++) acc[e] += g[e];
                }
                store8(dst, DT_F32, c, acc);
            }
        } else {
            for (int c = threadIdx.x; c < C; c += blockDim.x) {
                float acc = dst[c];
                for (int q = p; q < N && (unsigned int)(keys[q] >> 32) == row; q++)
                    acc += load(dout, t, (size_t)(unsigned int)keys[q] * C + c);
                dst[c] = acc;
            }
        }
    }
}

template <int FAST>
void cuda_embedding_forward(const device_t *d, dtype_t t, const int *tokens, const void *table,
                            void *out, int N, int C, int v0, int Vs) {
    const size_t row_bytes = (size_t)C * dtype_size(t);
    if (N <= 0 || C <= 0) return;
    if (!FAST || row_bytes % 16 != 0 || !aligned16(table) || !aligned16(out)) {
        LAUNCH(embedding_forward_kernel, stride_grid((size_t)N * C), THREADS, 0, stream_of(d), t,
               tokens, table, out, N, C, v0, Vs);
        return;
    }
    const int row16 = (int)(row_bytes / 16);
    LAUNCH(embedding_forward_vec_kernel, stride_grid((size_t)N * row16), THREADS, 0, stream_of(d),
           tokens, (const uint4 *)table, (uint4 *)out, N, row16, v0, Vs);
}
OPS_CUDA_VARIANTS(cuda_embedding_forward);

template <int FAST>
void cuda_embedding_backward(const device_t *d, dtype_t t, const int *tokens, const void *dout,
                             float *dtable, int N, int C, int v0, int Vs) {
    if (N <= 0 || C <= 0) return;
    if (!FAST) {
        LAUNCH(embedding_backward_kernel, ceil_div(C, THREADS), THREADS, 0, stream_of(d), t,
               tokens, dout, dtable, N, C, v0, Vs);
        return;
    }
    unsigned int threads = 32;                        /* chunks of 2 * threads keys, up to 2048 */
    while (threads < 1024 && 2 * threads < (unsigned int)N) threads *= 2;
    const int chunk = 2 * threads;
    unsigned long long *keys = (unsigned long long *)scratch(d, 4 * (size_t)N), *tmp = keys + N;
    LAUNCH(embedding_sort_chunks_kernel, ceil_div(N, chunk), threads, chunk * sizeof(*keys),
           stream_of(d), tokens, keys, N, v0, Vs);
    for (int w = chunk; w < N; w *= 2) {
        LAUNCH(merge_runs_kernel, stride_grid(N), THREADS, 0, stream_of(d), keys, tmp, N, w);
        unsigned long long *s = keys;
        keys = tmp;
        tmp = s;
    }
    const int vec = C % 8 == 0 && aligned16(dout) && aligned16(dtable);
    LAUNCH(embedding_backward_sorted_kernel, N < 8192 ? N : 8192, row_threads(vec ? C / 8 : C), 0,
           stream_of(d), t, keys, dout, dtable, N, C, Vs, vec);
}
OPS_CUDA_VARIANTS(cuda_embedding_backward);
