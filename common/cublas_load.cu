/* cublas_load.cu: cuBLAS, opened the first time a GPU needs it.
 *
 * Linked in, cuBLAS (and the 540 MB cuBLASLt it pulls in) costs every process
 * about 0.17 s of CPU at start-up, before main: a CUDA build run on the CPU,
 * as on a laptop without a GPU, or in the tests, paid it on every rank of
 * every run. So the programs are not linked with it: this file defines the
 * few cuBLAS calls the suite makes, with cuBLAS's own prototypes, and the
 * first of them that needs the library (cublasCreate: every other call takes
 * the handle it returns) opens it and finds them all. A missing or wrong
 * library is an error naming it, as a failed link would have been. */
#include "cuda_common.cuh"

#include <dlfcn.h>

#define STR_(x) #x
#define STR(x) STR_(x)
#define CUBLAS_LIBRARY "libcublas.so." STR(CUBLAS_VER_MAJOR)

static struct {
    cublasStatus_t (*create)(cublasHandle_t *);
    cublasStatus_t (*destroy)(cublasHandle_t);
    cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
    cublasStatus_t (*get_math_mode)(cublasHandle_t, cublasMath_t *);
    cublasStatus_t (*set_math_mode)(cublasHandle_t, cublasMath_t);
    cublasStatus_t (*gemm)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const void *, const void *, cudaDataType, int, const void *,
                           cudaDataType, int, const void *, void *, cudaDataType, int,
                           cublasComputeType_t, cublasGemmAlgo_t);
    cublasStatus_t (*gemm_batched)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                   int, int, const void *, const void *, cudaDataType, int,
                                   long long, const void *, cudaDataType, int, long long,
                                   const void *, void *, cudaDataType, int, long long, int,
                                   cublasComputeType_t, cublasGemmAlgo_t);
} blas;

static void *find(void *lib, const char *name) {
    void *f = dlsym(lib, name);
    if (!f) die("%s has no %s: %s", CUBLAS_LIBRARY, name, dlerror());
    return f;
}

static void open_cublas(void) {
    void *lib = dlopen(CUBLAS_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (!lib) die("cannot load cuBLAS (%s): %s", CUBLAS_LIBRARY, dlerror());
    blas.destroy = (decltype(blas.destroy))find(lib, "cublasDestroy_v2");
    blas.set_stream = (decltype(blas.set_stream))find(lib, "cublasSetStream_v2");
    blas.get_math_mode = (decltype(blas.get_math_mode))find(lib, "cublasGetMathMode");
    blas.set_math_mode = (decltype(blas.set_math_mode))find(lib, "cublasSetMathMode");
    blas.gemm = (decltype(blas.gemm))find(lib, "cublasGemmEx");
    blas.gemm_batched = (decltype(blas.gemm_batched))find(lib, "cublasGemmStridedBatchedEx");
    blas.create = (decltype(blas.create))find(lib, "cublasCreate_v2");  /* last: marks it open */
}

cublasStatus_t cublasCreate_v2(cublasHandle_t *handle) {
    if (!blas.create) open_cublas();
    return blas.create(handle);
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) { return blas.destroy(handle); }

cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
    return blas.set_stream(handle, stream);
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode) {
    return blas.get_math_mode(handle, mode);
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
    return blas.set_math_mode(handle, mode);
}

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                            cublasOperation_t transb, int m, int n, int k,
                            const void *alpha, const void *A, cudaDataType Atype, int lda,
                            const void *B, cudaDataType Btype, int ldb, const void *beta,
                            void *C, cudaDataType Ctype, int ldc,
                            cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    return blas.gemm(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb,
                     beta, C, Ctype, ldc, computeType, algo);
}

cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
    int k, const void *alpha, const void *A, cudaDataType Atype, int lda,
    long long int strideA, const void *B, cudaDataType Btype, int ldb, long long int strideB,
    const void *beta, void *C, cudaDataType Ctype, int ldc, long long int strideC,
    int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
    return blas.gemm_batched(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B,
                             Btype, ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount,
                             computeType, algo);
}
