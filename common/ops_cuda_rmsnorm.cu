/* ops_cuda_rmsnorm.cu: RMSNorm, forward and backward.
 *
 * Fast kernels: a warp per row (no barriers), 8 elements per 16-byte access
 * where the pointers and C allow; the weight gradient as partial sums over
 * fixed groups of rows, reduced in a second pass in group order. The simple
 * kernels give each row a block. */
#include "ops_cuda.cuh"

/* Simple forward: one block per row. */
__global__ void rmsnorm_forward_kernel(dtype_t t, const void *x, const void *w, void *y,
                                       float *rstd, int C, float eps) {
    const size_t o = (size_t)blockIdx.x * C;
    float ss = 0.0f;
    for (int c = threadIdx.x; c < C; c += blockDim.x) {
        float v = load(x, t, o + c);
        ss += v * v;
    }
    ss = block_reduce<SUM>(ss);
    const float r = 1.0f / sqrtf(ss / (float)C + eps);
    for (int c = threadIdx.x; c < C; c += blockDim.x)
        store(y, t, o + c, (load(x, t, o + c) * r) * load(w, t, c));
    if (threadIdx.x == 0) rstd[blockIdx.x] = r;
}

/* Fast forward: a warp per row (no barriers), 8 elements per 16-byte access
 * when vec; the second read of x mostly hits the cache. */
__global__ void rmsnorm_forward_warp_kernel(dtype_t t, const void *x, const void *w, void *y,
                                            float *rstd, int N, int C, float eps, int vec) {
    const size_t n = warp_row();
    const int lane = threadIdx.x % 32;
    if (n >= (size_t)N) return;                       /* the whole warp: one row */
    const size_t o = n * C;
    float ss = 0.0f;
    if (vec) {
        for (int c = 8 * lane; c < C; c += 256) {
            float v[8];
            load8(x, t, o + c, v);
            for (int e = 0; e < 8; e++) ss += v[e] * v[e];
        }
    } else {
        for (int c = lane; c < C; c += 32) {
            float v = load(x, t, o + c);
            ss += v * v;
        }
    }
    ss = warp_reduce<SUM>(ss);
    const float r = 1.0f / sqrtf(ss / (float)C + eps);
    if (vec) {
        for (int c = 8 * lane; c < C; c += 256) {
            float v[8], g[8];
            load8(x, t, o + c, v);
            load8(w, t, c, g);
            for (int e = 0; e < 8; e++) v[e] = (v[e] * r) * g[e];
            store8(y, t, o + c, v);
        }
    } else {
        for (int c = lane; c < C; c += 32) store(y, t, o + c, (load(x, t, o + c) * r) * load(w, t, c));
    }
    if (lane == 0) rstd[n] = r;
}

/* Simple backward: block b handles rows [b*rows, min(N, (b+1)*rows)) in
 * order: dx for each row, and the partial sum of dy * xhat over its rows into
 * part[b][c] (each column is owned by one thread, so the running sum needs no
 * atomics, but it is read and written in global memory once per row).
 * A thread reads dy[c] and dres[c] before it writes dx[c], and the row's
 * reduction has a barrier before any write: dx may alias dy or dres. */
__global__ void rmsnorm_backward_kernel(dtype_t t, const void *x, const void *w,
                                        const float *rstd, const void *dy, const void *dres,
                                        void *dx, float *part, int N, int C, int rows) {
    const int n0 = blockIdx.x * rows, n1 = min(N, n0 + rows);
    float *acc = part + (size_t)blockIdx.x * C;
    for (int n = n0; n < n1; n++) {
        const size_t o = (size_t)n * C;
        const float r = rstd[n];
        float dot = 0.0f;                              /* sum_c g[c] * xhat[c] */
        for (int c = threadIdx.x; c < C; c += blockDim.x)
            dot += load(dy, t, o + c) * load(w, t, c) * (load(x, t, o + c) * r);
        dot = block_reduce<SUM>(dot) / (float)C;
        for (int c = threadIdx.x; c < C; c += blockDim.x) {
            float xh = load(x, t, o + c) * r, g = load(dy, t, o + c);
            float v = r * (g * load(w, t, c) - xh * dot);
            if (dres) v += load(dres, t, o + c);
            acc[c] = (n == n0 ? 0.0f : acc[c]) + g * xh;
            store(dx, t, o + c, v);
        }
    }
}

/* dw[c] += sum over blocks of part[b][c], blocks in order. */
__global__ void column_sum_kernel(const float *part, float *dw, int blocks, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float s = 0.0f;
    for (int b = 0; b < blocks; b++) s += part[(size_t)b * C + c];
    dw[c] += s;
}

/* Fast backward, pass 1: the weight gradient's partial sums. Block (32, 8)
 * covers 32 chunks of W columns (W = 8 when vec, else 1) of one group of
 * `rows` rows: thread (x, y) sums rows y, y + 8, ... of the group in
 * registers, then the 8 row lanes combine in order through shared memory
 * into part[group][c]. Every read is a full, coalesced row segment, and each
 * partial is written once (the simple kernel rewrote it every row). */
__global__ void rmsnorm_dw_partial_kernel(dtype_t t, const void *x, const float *rstd,
                                          const void *dy, float *part, int N, int C, int rows,
                                          int vec) {
    __shared__ float lanes[8][32][9];                 /* padded against bank conflicts */
    const int W = vec ? 8 : 1, c0 = (blockIdx.x * 32 + threadIdx.x) * W;
    const int n0 = blockIdx.y * rows, n1 = min(N, n0 + rows);
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (c0 < C)
        for (int n = n0 + threadIdx.y; n < n1; n += 8) {
            const size_t o = (size_t)n * C + c0;
            const float r = rstd[n];
            if (vec) {
                float xv[8], g[8];
                load8(x, t, o, xv);
                load8(dy, t, o, g);
                for (int e = 0; e < 8; e++) acc[e] += g[e] * (xv[e] * r);
            } else {
                acc[0] += load(dy, t, o) * (load(x, t, o) * r);
            }
        }
    for (int e = 0; e < W; e++) lanes[threadIdx.y][threadIdx.x][e] = acc[e];
    __syncthreads();
    if (threadIdx.y == 0)
        for (int e = 0; e < W && c0 + e < C; e++) {
            float s = 0.0f;
            for (int y = 0; y < 8; y++) s += lanes[y][threadIdx.x][e];
            part[(size_t)blockIdx.y * C + c0 + e] = s;
        }
}

/* Fast backward, pass 2: dx, a warp per row. Each lane reads and writes only
 * its own chunks, and the row's reduction (a warp operation) separates the
 * reads of the first loop from the writes of the second: dx may alias dy or
 * dres. */
__global__ void rmsnorm_dx_kernel(dtype_t t, const void *x, const void *w, const float *rstd,
                                  const void *dy, const void *dres, void *dx, int N, int C,
                                  int vec) {
    const size_t n = warp_row();
    const int lane = threadIdx.x % 32;
    if (n >= (size_t)N) return;
    const size_t o = n * C;
    const float r = rstd[n];
    float dot = 0.0f;                                 /* sum_c g[c] * xhat[c] */
    if (vec) {
        for (int c = 8 * lane; c < C; c += 256) {
            float xv[8], g[8], wv[8];
            load8(x, t, o + c, xv);
            load8(dy, t, o + c, g);
            load8(w, t, c, wv);
            for (int e = 0; e < 8; e++) dot += g[e] * wv[e] * (xv[e] * r);
        }
    } else {
        for (int c = lane; c < C; c += 32) dot += load(dy, t, o + c) * load(w, t, c) * (load(x, t, o + c) * r);
    }
    dot = warp_reduce<SUM>(dot) / (float)C;
    if (vec) {
        for (int c = 8 * lane; c < C; c += 256) {
            float xv[8], g[8], wv[8], res[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            load8(x, t, o + c, xv);
            load8(dy, t, o + c, g);
            load8(w, t, c, wv);
            if (dres) load8(dres, t, o + c, res);
            for (int e = 0; e < 8; e++) xv[e] = r * (g[e] * wv[e] - (xv[e] * r) * dot) + res[e];
            store8(dx, t, o + c, xv);
        }
    } else {
        for (int c = lane; c < C; c += 32) {
            float xh = load(x, t, o + c) * r, g = load(dy, t, o + c);
            float v = r * (g * load(w, t, c) - xh * dot);
            if (dres) v += load(dres, t, o + c);
            store(dx, t, o + c, v);
        }
    }
}

template <int FAST>
void cuda_rmsnorm_forward(const device_t *d, dtype_t t, const void *x, const void *w, void *y,
                          float *rstd, int N, int C, float eps) {
    if (N <= 0) return;
    if (!FAST) {
        LAUNCH(rmsnorm_forward_kernel, N, row_threads(C), 0, stream_of(d), t, x, w, y, rstd, C,
               eps);
        return;
    }
    const int vec = C % 8 == 0 && aligned16(x) && aligned16(w) && aligned16(y);
    LAUNCH(rmsnorm_forward_warp_kernel, ceil_div(N, THREADS / 32), THREADS, 0, stream_of(d), t, x,
           w, y, rstd, N, C, eps, vec);
}
OPS_CUDA_VARIANTS(cuda_rmsnorm_forward);

/* Simple: at most 256 blocks of whole rows, none empty. Fast: dw first (it
 * reads dy, which dx may overwrite), in groups of at least 64 rows, at most
 * 4096 of them (the grid's y limit is 65535). */
template <int FAST>
void cuda_rmsnorm_backward(const device_t *d, dtype_t t, const void *x, const void *w,
                           const float *rstd, const void *dy, const void *dres, void *dx,
                           float *dw, int N, int C) {
    if (N <= 0 || C <= 0) return;
    if (!FAST) {
        const int rows = (int)ceil_div(N, 256), blocks = (int)ceil_div(N, rows);
        float *part = scratch(d, (size_t)blocks * C);               /* (blocks, C) */
        LAUNCH(rmsnorm_backward_kernel, blocks, row_threads(C), 0, stream_of(d), t, x, w, rstd, dy,
               dres, dx, part, N, C, rows);
        LAUNCH(column_sum_kernel, ceil_div(C, THREADS), THREADS, 0, stream_of(d), part, dw, blocks,
               C);
        return;
    }
    const int vec = C % 8 == 0 && aligned16(x) && aligned16(w) && aligned16(dy) &&
                    (!dres || aligned16(dres)) && aligned16(dx);
    const int rows = (int)(ceil_div(N, 4096) > 64 ? ceil_div(N, 4096) : 64);
    const int groups = (int)ceil_div(N, rows);
    float *part = scratch(d, (size_t)groups * C);                   /* (groups, C) */
    const dim3 grid(ceil_div(C, 32 * (vec ? 8 : 1)), groups);
    LAUNCH(rmsnorm_dw_partial_kernel, grid, dim3(32, 8), 0, stream_of(d), t, x, rstd, dy, part, N,
           C, rows, vec);
    LAUNCH(column_sum_kernel, ceil_div(C, THREADS), THREADS, 0, stream_of(d), part, dw, groups, C);
    LAUNCH(rmsnorm_dx_kernel, ceil_div(N, THREADS / 32), THREADS, 0, stream_of(d), t, x, w, rstd,
           dy, dres, dx, N, C, vec);
}
OPS_CUDA_VARIANTS(cuda_rmsnorm_backward);
