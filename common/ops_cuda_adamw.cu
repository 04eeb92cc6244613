/* ops_cuda_adamw.cu: the AdamW update of an fp32 shard, and its bf16 or
 * fp32 working copy.
 *
 * One kernel: float4 accesses (four parameters) where every pointer allows,
 * the scalar loop for the rest (all of it in the simple variant). */
#include "ops_cuda.cuh"

/* One parameter's update; c1, c2: the bias corrections; decay = 1 - lr * wd. */
__device__ inline float adamw_one(float &p, float &mi, float &vi, float g, float lr, float beta1,
                                  float beta2, float eps, float decay, float c1, float c2) {
    mi = beta1 * mi + (1.0f - beta1) * g;
    vi = beta2 * vi + (1.0f - beta2) * g * g;
    p = p * decay;
    p = p - lr * (mi / c1) / (sqrtf(vi / c2) + eps);
    return p;
}

/* 32 bytes read and 12 to 16 written per parameter: float4 accesses (4
 * parameters) when vec, the scalar loop for the rest. */
__global__ void adamw_kernel(float *master, float *m, float *v, const float *grad, void *working,
                             dtype_t working_t, size_t n, float lr, float beta1, float beta2,
                             float eps, float decay, float grad_scale, float c1, float c2, int vec) {
    const size_t n4 = vec ? n / 4 : 0;
    GRID_STRIDE(c, n4) {
        float4 p = reinterpret_cast<float4 *>(master)[c], mi = reinterpret_cast<float4 *>(m)[c];
        float4 vi = reinterpret_cast<float4 *>(v)[c];
        const float4 g = reinterpret_cast<const float4 *>(grad)[c];
        adamw_one(p.x, mi.x, vi.x, g.x * grad_scale, lr, beta1, beta2, eps, decay, c1, c2);
        adamw_one(p.y, mi.y, vi.y, g.y * grad_scale, lr, beta1, beta2, eps, decay, c1, c2);
        adamw_one(p.z, mi.z, vi.z, g.z * grad_scale, lr, beta1, beta2, eps, decay, c1, c2);
        adamw_one(p.w, mi.w, vi.w, g.w * grad_scale, lr, beta1, beta2, eps, decay, c1, c2);
        reinterpret_cast<float4 *>(master)[c] = p;
        reinterpret_cast<float4 *>(m)[c] = mi;
        reinterpret_cast<float4 *>(v)[c] = vi;
        if (working && working_t == DT_BF16)
            reinterpret_cast<uint2 *>(working)[c] = make_uint2(bf16x2_pack(p.x, p.y), bf16x2_pack(p.z, p.w));
        else if (working)
            reinterpret_cast<float4 *>(working)[c] = p;
    }
    GRID_STRIDE(j, n - 4 * n4) {
        const size_t i = 4 * n4 + j;
        float p = master[i], mi = m[i], vi = v[i];
        adamw_one(p, mi, vi, grad[i] * grad_scale, lr, beta1, beta2, eps, decay, c1, c2);
        m[i] = mi;
        v[i] = vi;
        master[i] = p;
        if (working) store(working, working_t, i, p);
    }
}

template <int FAST>
void cuda_adamw(const device_t *d, float *master, float *m, float *v, const float *grad,
                void *working, dtype_t working_t, size_t n, float lr, float beta1, float beta2,
                float eps, float wd, float grad_scale, int step) {
    const float c1 = (float)(1.0 - pow((double)beta1, step));
    const float c2 = (float)(1.0 - pow((double)beta2, step));
    const int vec = FAST && aligned16(master) && aligned16(m) && aligned16(v) && aligned16(grad) &&
                    (!working || aligned16(working));
    LAUNCH(adamw_kernel, stride_grid(vec ? n / 4 : n), THREADS, 0, stream_of(d), master, m, v, grad,
           working, working_t, n, lr, beta1, beta2, eps, 1.0f - lr * wd, grad_scale, c1, c2, vec);
}
OPS_CUDA_VARIANTS(cuda_adamw);
