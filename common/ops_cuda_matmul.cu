/* ops_cuda_matmul.cu: matrix products on cuBLAS.
 *
 * op_matmul, and gemm() for the batched products of attention's cuBLAS path:
 * cublasGemmEx or its strided-batched twin, bf16 or fp32 operands, fp32
 * accumulation (CUBLAS_COMPUTE_32F). */
#include "ops_cuda.cuh"

static cudaDataType_t blas_type(dtype_t t) { return t == DT_BF16 ? CUDA_R_16BF : CUDA_R_32F; }

/* Row-major C = alpha op(A) op(B) + beta C (ops.h's op_matmul) for `batch`
 * products whose matrices lie stride_a/b/c elements apart. cuBLAS is
 * column-major, where a row-major matrix reads as its transpose; so it
 * computes C^T = op(B)^T op(A)^T: the operands swap, each keeps its own
 * transpose flag, and M and N trade places. */
void gemm(const device_t *d, int trans_a, int trans_b, int M, int N, int K, float alpha,
          const void *A, int lda, long long stride_a, const void *B, int ldb,
          long long stride_b, dtype_t ab_t, float beta, void *C, int ldc,
          long long stride_c, dtype_t c_t, int batch) {
    if (ab_t == DT_F32 && c_t == DT_BF16)
        die("matmul: fp32 operands with a bf16 result are not supported on CUDA");
    cublasHandle_t h = (cublasHandle_t)d->blas;
    cublasOperation_t op_a = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t op_b = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cudaDataType_t ab = blas_type(ab_t), c = blas_type(c_t);
    if (batch == 1)
        CUBLAS_CHECK(cublasGemmEx(h, op_b, op_a, N, M, K, &alpha, B, ab, ldb, A, ab, lda, &beta,
                                  C, c, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    else
        CUBLAS_CHECK(cublasGemmStridedBatchedEx(h, op_b, op_a, N, M, K, &alpha, B, ab, ldb,
                                                stride_b, A, ab, lda, stride_a, &beta, C, c, ldc,
                                                stride_c, batch, CUBLAS_COMPUTE_32F,
                                                CUBLAS_GEMM_DEFAULT));
}

void cuda_matmul(const device_t *d, int trans_a, int trans_b, int M, int N, int K,
                 float alpha, const void *A, int lda, const void *B, int ldb, dtype_t ab_t,
                 float beta, void *C, int ldc, dtype_t c_t) {
    if (M <= 0 || N <= 0) return;
    gemm(d, trans_a, trans_b, M, N, K, alpha, A, lda, 0, B, ldb, 0, ab_t, beta, C, ldc, 0, c_t, 1);
}
