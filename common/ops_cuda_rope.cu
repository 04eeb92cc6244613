/* ops_cuda_rope.cu: rotary position embedding, in place (the backward pass
 * is the inverse rotation).
 *
 * Fast kernel: four pairs (one 16-byte chunk) per thread when hd % 8 == 0 and
 * the pointers allow, their (cos, sin) two 16-byte loads of the table. The
 * simple kernel rotates one pair per thread. */
#include "ops_cuda.cuh"

/* Simple: one thread per adjacent pair (2i, 2i+1); pair p of the flat
 * (B, T, H, hd/2) view sits at elements 2p and 2p+1. */
__global__ void rope_kernel(dtype_t t, void *x, const float *cs, size_t pairs, int T, int H,
                            int hd, int pos0, float sign) {
    const int half = hd / 2;
    GRID_STRIDE(p, pairs) {
        size_t i = p % half, row = p / half;                         /* row of (B, T, H) */
        size_t pos = (size_t)pos0 + (row / H) % T;
        const float *r = cs + (pos * half + i) * 2;
        float c = r[0], s = sign * r[1];
        float x0 = load(x, t, 2 * p), x1 = load(x, t, 2 * p + 1);
        store(x, t, 2 * p, x0 * c - x1 * s);
        store(x, t, 2 * p + 1, x0 * s + x1 * c);
    }
}

/* Fast: four pairs (8 elements, one chunk) per thread, hd % 8 == 0 so no
 * chunk straddles two heads; their (cos, sin) are 8 consecutive floats of
 * the table, two 16-byte loads. */
__global__ void rope_vec_kernel(dtype_t t, void *x, const float *cs, size_t chunks, int T, int H,
                                int hd, int pos0, float sign) {
    const int per_row = hd / 8;
    GRID_STRIDE(c, chunks) {
        const size_t row = c / per_row, pos = (size_t)pos0 + (row / H) % T;
        const float4 *r = reinterpret_cast<const float4 *>(cs + pos * hd + (c % per_row) * 8);
        const float4 a = r[0], b = r[1];
        const float tab[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        float v[8];
        load8(x, t, 8 * c, v);
        for (int p = 0; p < 4; p++) {
            const float co = tab[2 * p], s = sign * tab[2 * p + 1], x0 = v[2 * p], x1 = v[2 * p + 1];
            v[2 * p] = x0 * co - x1 * s;
            v[2 * p + 1] = x0 * s + x1 * co;
        }
        store8(x, t, 8 * c, v);
    }
}

template <int FAST>
void cuda_rope(const device_t *d, dtype_t t, void *x, const float *cs, int B, int T, int H, int hd,
               int pos0, int inverse) {
    const float sign = inverse ? -1.0f : 1.0f;
    if (!FAST || hd % 8 != 0 || !aligned16(x) || !aligned16(cs)) {
        const size_t pairs = (size_t)B * T * H * (hd / 2);
        if (pairs == 0) return;
        LAUNCH(rope_kernel, stride_grid(pairs), THREADS, 0, stream_of(d), t, x, cs, pairs, T, H,
               hd, pos0, sign);
        return;
    }
    const size_t chunks = (size_t)B * T * H * (hd / 8);
    if (chunks == 0) return;
    LAUNCH(rope_vec_kernel, stride_grid(chunks), THREADS, 0, stream_of(d), t, x, cs, chunks, T, H,
           hd, pos0, sign);
}
OPS_CUDA_VARIANTS(cuda_rope);
