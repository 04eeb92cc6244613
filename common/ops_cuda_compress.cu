/* ops_cuda_compress.cu: int8 and sign codes of a gradient (compress.h) on
 * the device, the same bytes as compress_encode and the same sums as
 * compress_decode_add.
 *
 * Encode: one thread per block of COMPRESS_BLOCK values, which walks its
 * block in order exactly as the CPU loop does (max |x| and sum |x| in
 * double, then the codes), so the scales and codes are bit for bit the
 * CPU's. COMPRESS_BLOCK is a multiple of 8, so a thread owns whole bytes of
 * the sign bits. Decode: one thread per value, acc += alpha * D with the
 * product rounded before the add (no FMA contraction), as on the CPU. */
#include "compress.h"
#include "ops_cuda.cuh"

__global__ void block_encode_kernel(int sign, const float *x, size_t n, size_t nb, float *scale,
                                    uint8_t *codes) {
    GRID_STRIDE(b, nb) {
        size_t lo = b * COMPRESS_BLOCK, hi = lo + COMPRESS_BLOCK < n ? lo + COMPRESS_BLOCK : n;
        double big = 0, l1 = 0;
        for (size_t i = lo; i < hi; i++) {
            double a = fabs((double)x[i]);
            l1 += a;
            if (a > big) big = a;
        }
        if (!sign) {
            float s = (float)(big / 127.0);
            scale[b] = s;
            for (size_t i = lo; i < hi; i++) {
                float q = s > 0 ? rintf(x[i] / s) : 0.0f;
                codes[i] = (uint8_t)(int8_t)(q > 127 ? 127 : q < -127 ? -127 : (int)q);
            }
        } else {
            scale[b] = (float)(l1 / (double)(hi - lo));
            for (size_t i = lo; i < hi; i += 8) {
                unsigned bits = 0;
                for (size_t j = i; j < i + 8 && j < hi; j++)
                    if (x[j] >= 0) bits |= 1u << (j % 8);
                codes[i / 8] = (uint8_t)bits;
            }
        }
    }
}

__global__ void block_decode_add_kernel(int sign, const float *scale, const uint8_t *codes, size_t n,
                                        float alpha, float *acc) {
    GRID_STRIDE(i, n) {
        float s = scale[i / COMPRESS_BLOCK];
        float d = !sign ? s * (float)(int8_t)codes[i] : (codes[i / 8] >> (i % 8) & 1u) ? s : -s;
        acc[i] = acc[i] + __fmul_rn(alpha, d);
    }
}

void cuda_block_encode(const device_t *d, int sign, const float *x, size_t n, void *out) {
    compress_spec_t spec = {sign ? COMPRESS_SIGN : COMPRESS_INT8, 0, 0};
    size_t nb = (n + COMPRESS_BLOCK - 1) / COMPRESS_BLOCK;
    CUDA_CHECK(cudaMemsetAsync(out, 0, compress_piece_bytes(&spec, n, NULL, 0), stream_of(d)));
    if (nb == 0) return;
    float *scale = (float *)out;
    LAUNCH(block_encode_kernel, stride_grid(nb), THREADS, 0, stream_of(d), sign, x, n, nb, scale,
           (uint8_t *)(scale + nb));
}

void cuda_block_decode_add(const device_t *d, int sign, const void *in, size_t n, float alpha, float *acc) {
    size_t nb = (n + COMPRESS_BLOCK - 1) / COMPRESS_BLOCK;
    if (n == 0) return;
    const float *scale = (const float *)in;
    LAUNCH(block_decode_add_kernel, stride_grid(n), THREADS, 0, stream_of(d), sign, scale,
           (const uint8_t *)(scale + nb), n, alpha, acc);
}
