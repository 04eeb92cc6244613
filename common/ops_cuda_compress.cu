/* ops_cuda_compress.cu: int8, sign and top-k codes of a gradient
 * (ops.h) on the device, the same bytes and sums as ops_cpu.c's, and
 * PowerSGD's orthonormalisation.
 *
 * Encode: one thread per block of OPS_CODE_BLOCK values, which walks its
 * block in order exactly as the CPU loop does (max |x| and sum |x| in
 * double, then the codes), so the scales and codes are bit for bit the
 * CPU's. OPS_CODE_BLOCK is a multiple of 8, so a thread owns whole bytes of
 * the sign bits. Decode: one thread per value, acc += alpha * D with the
 * product rounded before the add (no FMA contraction), as on the CPU.
 *
 * Top-k: the threshold is the k-th largest |x|, found by bisection on its
 * bits (a non-negative float orders as its bits do): the largest t with at
 * least k values of |x| >= t, each count a pass of one thread per chunk of
 * OPS_CODE_BLOCK values and a one-thread sum. Then every value above t is
 * kept, and of those equal to t the first k - (count above t) in index
 * order, as the CPU keeps them: per chunk the counts above and equal, a
 * one-thread prefix sum over the chunks gives each chunk its first output
 * slot and its share of the ties, and each chunk writes its values in order.
 *
 * Orthonormalisation (PowerSGD's P, R columns): one thread walks the matrix
 * exactly as ops_cpu.c's does, in double; P is small (rows x R,
 * R a few), and the order of its sums is then the CPU's. */
#include "ops_cuda.cuh"

__global__ void block_encode_kernel(int sign, const float *x, size_t n, size_t nb, float *scale,
                                    uint8_t *codes) {
    GRID_STRIDE(b, nb) {
        size_t lo = b * OPS_CODE_BLOCK, hi = lo + OPS_CODE_BLOCK < n ? lo + OPS_CODE_BLOCK : n;
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
        float s = scale[i / OPS_CODE_BLOCK];
        float d = !sign ? s * (float)(int8_t)codes[i] : (codes[i / 8] >> (i % 8) & 1u) ? s : -s;
        acc[i] = acc[i] + __fmul_rn(alpha, d);
    }
}

void cuda_block_encode(const device_t *d, int sign, const float *x, size_t n, void *out) {
    size_t nb = (n + OPS_CODE_BLOCK - 1) / OPS_CODE_BLOCK;
    CUDA_CHECK(cudaMemsetAsync(out, 0, ops_block_code_bytes(sign, n), stream_of(d)));
    if (nb == 0) return;
    float *scale = (float *)out;
    LAUNCH(block_encode_kernel, stride_grid(nb), THREADS, 0, stream_of(d), sign, x, n, nb, scale,
           (uint8_t *)(scale + nb));
}

void cuda_block_decode_add(const device_t *d, int sign, const void *in, size_t n, float alpha, float *acc) {
    size_t nb = (n + OPS_CODE_BLOCK - 1) / OPS_CODE_BLOCK;
    if (n == 0) return;
    const float *scale = (const float *)in;
    LAUNCH(block_decode_add_kernel, stride_grid(n), THREADS, 0, stream_of(d), sign, scale,
           (const uint8_t *)(scale + nb), n, alpha, acc);
}

__device__ static unsigned mag_bits(float v) { return __float_as_uint(fabsf(v)); }

/* cnt[c] = values of chunk c with |x| >= t (bits). */
__global__ void topk_count_kernel(const float *x, size_t n, size_t nc, unsigned t, size_t *cnt) {
    GRID_STRIDE(c, nc) {
        size_t lo = c * OPS_CODE_BLOCK, hi = lo + OPS_CODE_BLOCK < n ? lo + OPS_CODE_BLOCK : n, m = 0;
        for (size_t i = lo; i < hi; i++) m += mag_bits(x[i]) >= t;
        cnt[c] = m;
    }
}

__global__ void topk_sum_kernel(const size_t *cnt, size_t nc, size_t *total) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        size_t s = 0;
        for (size_t c = 0; c < nc; c++) s += cnt[c];
        *total = s;
    }
}

/* above[c], equal[c]: chunk c's values with |x| > t and == t. */
__global__ void topk_split_kernel(const float *x, size_t n, size_t nc, unsigned t, size_t *above,
                                  size_t *equal) {
    GRID_STRIDE(c, nc) {
        size_t lo = c * OPS_CODE_BLOCK, hi = lo + OPS_CODE_BLOCK < n ? lo + OPS_CODE_BLOCK : n, a = 0, e = 0;
        for (size_t i = lo; i < hi; i++) {
            unsigned b = mag_bits(x[i]);
            a += b > t;
            e += b == t;
        }
        above[c] = a;
        equal[c] = e;
    }
}

/* In place: above[c] <- chunk c's first output slot, equal[c] <- the ties it keeps. */
__global__ void topk_scan_kernel(size_t nc, size_t k, size_t *above, size_t *equal) {
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        size_t all_above = 0, slot = 0;
        for (size_t c = 0; c < nc; c++) all_above += above[c];
        size_t ties = k - all_above;
        for (size_t c = 0; c < nc; c++) {
            size_t keep = equal[c] < ties ? equal[c] : ties, a = above[c];
            ties -= keep;
            above[c] = slot;
            equal[c] = keep;
            slot += a + keep;
        }
    }
}

__global__ void topk_write_kernel(const float *x, size_t n, size_t nc, unsigned t, const size_t *slot,
                                  const size_t *keep, float *val, uint32_t *idx) {
    GRID_STRIDE(c, nc) {
        size_t lo = c * OPS_CODE_BLOCK, hi = lo + OPS_CODE_BLOCK < n ? lo + OPS_CODE_BLOCK : n;
        size_t j = slot[c], ties = keep[c];
        for (size_t i = lo; i < hi; i++) {
            unsigned b = mag_bits(x[i]);
            if (b > t || (b == t && ties > 0)) {
                if (b == t) ties--;
                val[j] = x[i];
                idx[j++] = (uint32_t)i;
            }
        }
    }
}

__global__ void topk_decode_add_kernel(const float *val, const uint32_t *idx, size_t k, float alpha, float *acc) {
    GRID_STRIDE(j, k) acc[idx[j]] = acc[idx[j]] + __fmul_rn(alpha, val[j]);
}

void cuda_topk_encode(const device_t *d, const float *x, size_t n, size_t k, void *out) {
    cudaStream_t s = stream_of(d);
    size_t nc = (n + OPS_CODE_BLOCK - 1) / OPS_CODE_BLOCK, *buf, total;
    CUDA_CHECK(cudaMemsetAsync(out, 0, 8 * k, s));
    if (n == 0) return;
    CUDA_CHECK(cudaMalloc((void **)&buf, sizeof(size_t) * (2 * nc + 1)));
    size_t *a = buf, *e = buf + nc, *sum = buf + 2 * nc;
    unsigned lo = 0, hi = 0x7f800001u;   /* count(>= lo) = n >= k; count(>= hi) = 0 (no NaN) */
    while (hi - lo > 1) {
        unsigned mid = lo + (hi - lo) / 2;
        LAUNCH(topk_count_kernel, stride_grid(nc), THREADS, 0, s, x, n, nc, mid, a);
        LAUNCH(topk_sum_kernel, 1, 1, 0, s, a, nc, sum);
        CUDA_CHECK(cudaMemcpyAsync(&total, sum, sizeof total, cudaMemcpyDeviceToHost, s));
        CUDA_CHECK(cudaStreamSynchronize(s));
        if (total >= k) lo = mid;
        else hi = mid;
    }
    float *val = (float *)out;
    LAUNCH(topk_split_kernel, stride_grid(nc), THREADS, 0, s, x, n, nc, lo, a, e);
    LAUNCH(topk_scan_kernel, 1, 1, 0, s, nc, k, a, e);
    LAUNCH(topk_write_kernel, stride_grid(nc), THREADS, 0, s, x, n, nc, lo, a, e, val, (uint32_t *)(val + k));
    CUDA_CHECK(cudaStreamSynchronize(s));
    CUDA_CHECK(cudaFree(buf));
}

void cuda_topk_decode_add(const device_t *d, const void *in, size_t k, float alpha, float *acc) {
    if (k == 0) return;
    const float *val = (const float *)in;
    LAUNCH(topk_decode_add_kernel, stride_grid(k), THREADS, 0, stream_of(d), val, (const uint32_t *)(val + k), k,
           alpha, acc);
}

__global__ void orthonormalise_kernel(float *a, size_t rows, int R) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    for (int j = 0; j < R; j++) {
        for (int i = 0; i < j; i++) {
            double d = 0;
            for (size_t r = 0; r < rows; r++) d += (double)a[r * R + i] * a[r * R + j];
            for (size_t r = 0; r < rows; r++) a[r * R + j] = a[r * R + j] - __fmul_rn((float)d, a[r * R + i]);
        }
        double norm = 0;
        for (size_t r = 0; r < rows; r++) norm += (double)a[r * R + j] * a[r * R + j];
        norm = sqrt(norm);
        for (size_t r = 0; r < rows; r++) a[r * R + j] = norm > 1e-30 ? (float)(a[r * R + j] / norm) : 0.0f;
    }
}

void cuda_orthonormalise(const device_t *d, float *a, size_t rows, int R) {
    LAUNCH(orthonormalise_kernel, 1, 1, 0, stream_of(d), a, rows, R);
}
