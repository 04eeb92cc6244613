/* ops_cuda_elementwise.cu: SwiGLU, add, cast, scale and sumsq.
 *
 * Element-wise kernels come in one piece: chunks of 8 elements with 16-byte
 * accesses when vec (the host checked every pointer's alignment), and the
 * scalar loop for the rest (all of it when !vec: the simple kernel). sumsq
 * sums per block in a fixed order and adds the blocks on the host. */
#include "ops_cuda.cuh"

/* ---- SwiGLU ------------------------------------------------------------------------ */
__device__ inline float silu(float x) { return x / (1.0f + expf(-x)); }

__global__ void swiglu_forward_kernel(dtype_t t, const void *a, const void *b, void *out, size_t n,
                                      int vec) {
    const size_t n8 = vec ? n / 8 : 0;
    GRID_STRIDE(c, n8) {
        float x[8], u[8];
        load8(a, t, 8 * c, x);
        load8(b, t, 8 * c, u);
        for (int e = 0; e < 8; e++) x[e] = silu(x[e]) * u[e];
        store8(out, t, 8 * c, x);
    }
    GRID_STRIDE(j, n - 8 * n8) {
        const size_t i = 8 * n8 + j;
        store(out, t, i, silu(load(a, t, i)) * load(b, t, i));
    }
}

/* da may alias a and db may alias b: each thread reads its elements first. */
__device__ inline void swiglu_grad(float x, float u, float g, float &da, float &db) {
    const float s = 1.0f / (1.0f + expf(-x));
    da = g * u * s * (1.0f + x * (1.0f - s));
    db = g * x * s;
}

__global__ void swiglu_backward_kernel(dtype_t t, const void *a, const void *b, const void *dout,
                                       void *da, void *db, size_t n, int vec) {
    const size_t n8 = vec ? n / 8 : 0;
    GRID_STRIDE(c, n8) {
        float x[8], u[8], g[8];
        load8(a, t, 8 * c, x);
        load8(b, t, 8 * c, u);
        load8(dout, t, 8 * c, g);
        for (int e = 0; e < 8; e++) swiglu_grad(x[e], u[e], g[e], x[e], u[e]);
        store8(da, t, 8 * c, x);
        store8(db, t, 8 * c, u);
    }
    GRID_STRIDE(j, n - 8 * n8) {
        const size_t i = 8 * n8 + j;
        float ga, gb;
        swiglu_grad(load(a, t, i), load(b, t, i), load(dout, t, i), ga, gb);
        store(da, t, i, ga);
        store(db, t, i, gb);
    }
}

template <int FAST>
void cuda_swiglu_forward(const device_t *d, dtype_t t, const void *a, const void *b, void *out,
                         size_t n) {
    const int vec = FAST && aligned16(a) && aligned16(b) && aligned16(out);
    LAUNCH(swiglu_forward_kernel, stride_grid(vec ? n / 8 : n), THREADS, 0, stream_of(d), t, a, b,
           out, n, vec);
}
OPS_CUDA_VARIANTS(cuda_swiglu_forward);

template <int FAST>
void cuda_swiglu_backward(const device_t *d, dtype_t t, const void *a, const void *b,
                          const void *dout, void *da, void *db, size_t n) {
    const int vec = FAST && aligned16(a) && aligned16(b) && aligned16(dout) && aligned16(da) &&
                    aligned16(db);
    LAUNCH(swiglu_backward_kernel, stride_grid(vec ? n / 8 : n), THREADS, 0, stream_of(d), t, a, b,
           dout, da, db, n, vec);
}
OPS_CUDA_VARIANTS(cuda_swiglu_backward);

/* ---- element-wise and reductions ---------------------------------------------------- */
__global__ void add_kernel(dtype_t t, const void *a, const void *b, void *out, size_t n, int vec) {
    const size_t n8 = vec ? n / 8 : 0;
    GRID_STRIDE(c, n8) {
        float x[8], y[8];
        load8(a, t, 8 * c, x);
        load8(b, t, 8 * c, y);
        for (int e = 0; e < 8; e++) x[e] += y[e];
        store8(out, t, 8 * c, x);
    }
    GRID_STRIDE(j, n - 8 * n8) {
        const size_t i = 8 * n8 + j;
        store(out, t, i, load(a, t, i) + load(b, t, i));
    }
}

__global__ void cast_kernel(const void *src, dtype_t src_t, void *dst, dtype_t dst_t, size_t n,
                            int vec) {
    const size_t n8 = vec ? n / 8 : 0;
    GRID_STRIDE(c, n8) {
        float x[8];
        load8(src, src_t, 8 * c, x);
        store8(dst, dst_t, 8 * c, x);
    }
    GRID_STRIDE(j, n - 8 * n8) {
        const size_t i = 8 * n8 + j;
        store(dst, dst_t, i, load(src, src_t, i));
    }
}

__global__ void scale_kernel(dtype_t t, void *x, float s, size_t n, int vec) {
    const size_t n8 = vec ? n / 8 : 0;
    GRID_STRIDE(c, n8) {
        float v[8];
        load8(x, t, 8 * c, v);
        for (int e = 0; e < 8; e++) v[e] *= s;
        store8(x, t, 8 * c, v);
    }
    GRID_STRIDE(j, n - 8 * n8) {
        const size_t i = 8 * n8 + j;
        store(x, t, i, load(x, t, i) * s);
    }
}

/* Each block's fp32 sum of squares into part[blockIdx.x]. */
__global__ void sumsq_kernel(dtype_t t, const void *x, size_t n, float *part) {
    float s = 0.0f;
    GRID_STRIDE(i, n) {
        float v = load(x, t, i);
        s += v * v;
    }
    s = block_reduce<SUM>(s);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

template <int FAST>
void cuda_add(const device_t *d, dtype_t t, const void *a, const void *b, void *out, size_t n) {
    const int vec = FAST && aligned16(a) && aligned16(b) && aligned16(out);
    LAUNCH(add_kernel, stride_grid(vec ? n / 8 : n), THREADS, 0, stream_of(d), t, a, b, out, n, vec);
}
OPS_CUDA_VARIANTS(cuda_add);

template <int FAST>
void cuda_cast(const device_t *d, const void *src, dtype_t src_t, void *dst, dtype_t dst_t,
               size_t n) {
    if (src_t == dst_t) {                       /* a copy, bit for bit */
        if (dst != src && n > 0)
            CUDA_CHECK(cudaMemcpyAsync(dst, src, n * dtype_size(src_t), cudaMemcpyDeviceToDevice,
                                       stream_of(d)));
        return;
    }
    const int vec = FAST && aligned16(src) && aligned16(dst);
    LAUNCH(cast_kernel, stride_grid(vec ? n / 8 : n), THREADS, 0, stream_of(d), src, src_t, dst,
           dst_t, n, vec);
}
OPS_CUDA_VARIANTS(cuda_cast);

template <int FAST>
void cuda_scale(const device_t *d, dtype_t t, void *x, float s, size_t n) {
    const int vec = FAST && aligned16(x);
    LAUNCH(scale_kernel, stride_grid(vec ? n / 8 : n), THREADS, 0, stream_of(d), t, x, s, n, vec);
}
OPS_CUDA_VARIANTS(cuda_scale);

/* The block count depends on n only, so the partial sums, and their total
 * in double on the host in block order, are the same on every run. */
double cuda_sumsq(const device_t *d, dtype_t t, const void *x, size_t n) {
    static float host[1024];                         /* stride_grid() gives at most 1024 */
    const unsigned int blocks = stride_grid(n);
    float *part = scratch(d, blocks);
    LAUNCH(sumsq_kernel, blocks, THREADS, 0, stream_of(d), t, x, n, part);
    CUDA_CHECK(cudaMemcpyAsync(host, part, blocks * sizeof(float), cudaMemcpyDeviceToHost,
                               stream_of(d)));
    CUDA_CHECK(cudaStreamSynchronize(stream_of(d)));
    double sum = 0.0;
    for (unsigned int b = 0; b < blocks; b++) sum += host[b];
    return sum;
}
