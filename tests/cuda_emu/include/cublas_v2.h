/* cublas_v2.h of the CUDA emulator: the cuBLAS calls the suite uses, computed
 * on the CPU (emu_cublas.cc) with cuBLAS's semantics: column-major storage,
 * op(A) and op(B) by transpose flags, leading dimensions checked as cuBLAS
 * checks them, alpha and beta read from host memory, beta == 0 meaning C is
 * not read, fp32 accumulation. Inputs are rounded as the compute type
 * allows the GPU to: CUBLAS_COMPUTE_32F_FAST_TF32 (or math mode
 * CUBLAS_TF32_TENSOR_OP_MATH on fp32 data) rounds A and B to tf32 (10
 * mantissa bits), CUBLAS_COMPUTE_32F_FAST_16BF to bf16. */
#ifndef CUDA_EMU_CUBLAS_V2_H
#define CUDA_EMU_CUBLAS_V2_H

#include "cuda_runtime.h"

typedef enum {
    CUBLAS_STATUS_SUCCESS = 0,
    CUBLAS_STATUS_NOT_INITIALIZED = 1,
    CUBLAS_STATUS_ALLOC_FAILED = 3,
    CUBLAS_STATUS_INVALID_VALUE = 7,
    CUBLAS_STATUS_ARCH_MISMATCH = 8,
    CUBLAS_STATUS_MAPPING_ERROR = 11,
    CUBLAS_STATUS_EXECUTION_FAILED = 13,
    CUBLAS_STATUS_INTERNAL_ERROR = 14,
    CUBLAS_STATUS_NOT_SUPPORTED = 15,
    CUBLAS_STATUS_LICENSE_ERROR = 16
} cublasStatus_t;

typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2 } cublasOperation_t;
typedef enum { CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_POINTER_MODE_DEVICE = 1 } cublasPointerMode_t;
typedef enum {
    CUBLAS_DEFAULT_MATH = 0,
    CUBLAS_TENSOR_OP_MATH = 1,
    CUBLAS_PEDANTIC_MATH = 2,
    CUBLAS_TF32_TENSOR_OP_MATH = 3,
    CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16
} cublasMath_t;
typedef enum {
    CUBLAS_COMPUTE_16F = 64,
    CUBLAS_COMPUTE_16F_PEDANTIC = 65,
    CUBLAS_COMPUTE_32F = 68,
    CUBLAS_COMPUTE_32F_PEDANTIC = 69,
    CUBLAS_COMPUTE_32F_FAST_16F = 74,
    CUBLAS_COMPUTE_32F_FAST_16BF = 75,
    CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
    CUBLAS_COMPUTE_64F = 70,
    CUBLAS_COMPUTE_64F_PEDANTIC = 71,
    CUBLAS_COMPUTE_32I = 72,
    CUBLAS_COMPUTE_32I_PEDANTIC = 73
} cublasComputeType_t;
typedef enum {
    CUBLAS_GEMM_DEFAULT = -1,
    CUBLAS_GEMM_ALGO0 = 0,
    CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99,
    CUBLAS_GEMM_ALGO0_TENSOR_OP = 100
} cublasGemmAlgo_t;

typedef enum cudaDataType_t {
    CUDA_R_32F = 0,
    CUDA_R_64F = 1,
    CUDA_R_16F = 2,
    CUDA_R_8I = 3,
    CUDA_R_32I = 10,
    CUDA_R_16BF = 14
} cudaDataType;

typedef struct cublasContext *cublasHandle_t;

extern "C" {
cublasStatus_t cublasCreate(cublasHandle_t *h);
cublasStatus_t cublasDestroy(cublasHandle_t h);
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s);
cublasStatus_t cublasGetStream(cublasHandle_t h, cudaStream_t *s);
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode);
cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t *mode);
cublasStatus_t cublasSetPointerMode(cublasHandle_t h, cublasPointerMode_t mode);
cublasStatus_t cublasGetPointerMode(cublasHandle_t h, cublasPointerMode_t *mode);
cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *workspace, size_t bytes);
const char *cublasGetStatusString(cublasStatus_t s);
const char *cublasGetStatusName(cublasStatus_t s);

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc);
cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long strideA, const float *B, int ldb,
                                         long long strideB, const float *beta, float *C, int ldc,
                                         long long strideC, int batch);
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType Atype,
                            int lda, const void *B, cudaDataType Btype, int ldb, const void *beta,
                            void *C, cudaDataType Ctype, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t algo);
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType Atype,
                                          int lda, long long strideA, const void *B,
                                          cudaDataType Btype, int ldb, long long strideB,
                                          const void *beta, void *C, cudaDataType Ctype, int ldc,
                                          long long strideC, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t algo);
cublasStatus_t cublasGemmBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                   int m, int n, int k, const void *alpha, const void *const A[],
                                   cudaDataType Atype, int lda, const void *const B[],
                                   cudaDataType Btype, int ldb, const void *beta, void *const C[],
                                   cudaDataType Ctype, int ldc, int batch,
                                   cublasComputeType_t compute, cublasGemmAlgo_t algo);
cublasStatus_t cublasSaxpy(cublasHandle_t h, int n, const float *alpha, const float *x, int incx,
                           float *y, int incy);
cublasStatus_t cublasSscal(cublasHandle_t h, int n, const float *alpha, float *x, int incx);
cublasStatus_t cublasSdot(cublasHandle_t h, int n, const float *x, int incx, const float *y,
                          int incy, float *result);
cublasStatus_t cublasSnrm2(cublasHandle_t h, int n, const float *x, int incx, float *result);
}

#endif
