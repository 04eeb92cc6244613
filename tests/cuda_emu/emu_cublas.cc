/* emu_cublas.cc: cuBLAS on the CPU for the CUDA emulator (see include/cublas_v2.h).
 *
 * A GEMM reads op(A) and op(B) through their leading dimensions into
 * compact fp32 scratch (rounding to tf32 or bf16 when the compute type lets
 * the GPU do so), multiplies with OpenBLAS's sgemm (fp32 accumulation, like
 * the GPU), and stores C in its type, rounding once. The reads and writes of
 * the suite's buffers happen in this file's loops, compiled with
 * AddressSanitizer, and every matrix is first checked to lie inside one
 * device allocation: an extent past the end of a buffer stops the program
 * with the numbers, as a GPU would fault.
 *
 * A call is checked when it is made and its product queued on the handle's
 * stream (emu_streams.cc): host scalars (alpha, beta) and the math mode are
 * read at the call, as cuBLAS does, device memory when the product runs. A
 * result returned to host memory (cublasSdot, cublasSnrm2 in host pointer
 * mode) makes the call wait for its stream, as on a GPU. */
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include "emu_streams.h"

#include <cblas.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <mutex>
#include <set>
#include <vector>

using cuda_emu::fatal;

struct cublasContext {
    cudaStream_t stream;
    cublasMath_t math;
    cublasPointerMode_t pointer_mode;
};

static std::mutex handles_mu;
static std::set<const void *> handles;

static bool handle_ok(cublasHandle_t h) {
    std::lock_guard<std::mutex> lock(handles_mu);
    return h && handles.count(h);
}

static cublasStatus_t fail(cublasStatus_t s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static cublasStatus_t fail(cublasStatus_t s, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cuda_emu: %s\n", msg);
    fflush(stderr);
    return s;
}

extern "C" {

cublasStatus_t cublasCreate(cublasHandle_t *h) {
    if (!h) return CUBLAS_STATUS_INVALID_VALUE;
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        (void)cudaGetLastError();
        return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasCreate: no device");
    }
    cublasContext *c = new cublasContext{nullptr, CUBLAS_DEFAULT_MATH, CUBLAS_POINTER_MODE_HOST};
    std::lock_guard<std::mutex> lock(handles_mu);
    handles.insert(c);
    *h = c;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h) {
    std::lock_guard<std::mutex> lock(handles_mu);
    if (!h || !handles.erase(h)) return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasDestroy: not a live handle");
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s) {
    if (!handle_ok(h)) return fail(CUBLAS_STATUS_NOT_INITIALIZED, "cublasSetStream: not a live handle");
    if (!cuda_emu::stream_valid(s)) return fail(CUBLAS_STATUS_INVALID_VALUE, "cublasSetStream: not a live stream");
    h->stream = s;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetStream(cublasHandle_t h, cudaStream_t *s) {
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (s) *s = h->stream;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t mode) {
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->math = mode;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t *mode) {
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode) *mode = h->math;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetPointerMode(cublasHandle_t h, cublasPointerMode_t mode) {
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    h->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGetPointerMode(cublasHandle_t h, cublasPointerMode_t *mode) {
    if (!handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode) *mode = h->pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *, size_t) {
    return handle_ok(h) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

const char *cublasGetStatusName(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    }
    return "CUBLAS_STATUS_UNKNOWN";
}
const char *cublasGetStatusString(cublasStatus_t s) {
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    default: return cublasGetStatusName(s);
    }
}

}  // extern "C"

/* ---- GEMM -------------------------------------------------------------------------------------- */
namespace {

enum Round { R_NONE, R_TF32, R_BF16 };

size_t type_size(cudaDataType t) {
    switch (t) {
    case CUDA_R_32F: return 4;
    case CUDA_R_16BF: return 2;
    default: return 0;
    }
}

const char *type_name(cudaDataType t) {
    switch (t) {
    case CUDA_R_32F: return "CUDA_R_32F";
    case CUDA_R_16BF: return "CUDA_R_16BF";
    case CUDA_R_16F: return "CUDA_R_16F";
    case CUDA_R_64F: return "CUDA_R_64F";
    default: return "an unsupported type";
    }
}

float round_tf32(float f) {
    /* To 10 mantissa bits, to nearest with ties away from zero (cvt.rna.tf32.f32). */
    unsigned int u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) != 0x7f800000u) {
        u += 0x1000u;
        u &= 0xffffe000u;
    }
    memcpy(&f, &u, 4);
    return f;
}

float load(const void *p, cudaDataType t, size_t i) {
    if (t == CUDA_R_16BF) return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    return ((const float *)p)[i];
}

void store(void *p, cudaDataType t, size_t i, float v) {
    if (t == CUDA_R_16BF) ((__nv_bfloat16 *)p)[i] = __float2bfloat16(v);
    else ((float *)p)[i] = v;
}

float rounded(float v, Round r) {
    return r == R_TF32 ? round_tf32(v) : r == R_BF16 ? __bfloat162float(__float2bfloat16(v)) : v;
}

/* Bytes a column-major rows x cols matrix with leading dimension ld spans. */
size_t extent(int rows, int cols, int ld, size_t es) {
    if (rows == 0 || cols == 0) return 0;
    return ((size_t)(cols - 1) * (size_t)ld + (size_t)rows) * es;
}

struct Gemm {
    const char *call;
    cublasHandle_t h;
    cublasOperation_t ta, tb;
    int m, n, k;
    float alpha, beta;
    cudaDataType at, bt, ct;
    int lda, ldb, ldc;
    cublasComputeType_t compute;
    Round round;   /* of the inputs, from the compute type and the handle's math mode at the call */
};

cublasStatus_t check(const Gemm &g) {
    if (!handle_ok(g.h)) return fail(CUBLAS_STATUS_NOT_INITIALIZED, "%s: not a live cuBLAS handle", g.call);
    if (g.ta > CUBLAS_OP_C || g.tb > CUBLAS_OP_C || g.ta < 0 || g.tb < 0)
        return fail(CUBLAS_STATUS_INVALID_VALUE, "%s: bad transpose flag", g.call);
    if (g.m < 0 || g.n < 0 || g.k < 0)
        return fail(CUBLAS_STATUS_INVALID_VALUE, "%s: negative size m=%d n=%d k=%d", g.call, g.m, g.n, g.k);
    int arows = g.ta == CUBLAS_OP_N ? g.m : g.k, brows = g.tb == CUBLAS_OP_N ? g.k : g.n;
    if (g.lda < (arows > 1 ? arows : 1))
        return fail(CUBLAS_STATUS_INVALID_VALUE, "%s: lda=%d < %d, the rows of A as stored (column-major)", g.call, g.lda, arows);
    if (g.ldb < (brows > 1 ? brows : 1))
        return fail(CUBLAS_STATUS_INVALID_VALUE, "%s: ldb=%d < %d, the rows of B as stored (column-major)", g.call, g.ldb, brows);
    if (g.ldc < (g.m > 1 ? g.m : 1))
        return fail(CUBLAS_STATUS_INVALID_VALUE, "%s: ldc=%d < m=%d", g.call, g.ldc, g.m);
    if (!type_size(g.at) || !type_size(g.bt) || !type_size(g.ct) || g.at != g.bt)
        return fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: types A %s, B %s, C %s are not a combination the emulator knows",
                    g.call, type_name(g.at), type_name(g.bt), type_name(g.ct));
    bool c32 = g.compute == CUBLAS_COMPUTE_32F || g.compute == CUBLAS_COMPUTE_32F_PEDANTIC ||
               g.compute == CUBLAS_COMPUTE_32F_FAST_TF32 || g.compute == CUBLAS_COMPUTE_32F_FAST_16BF ||
               g.compute == CUBLAS_COMPUTE_32F_FAST_16F;
    if (!c32)
        return fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: compute type %d is not emulated (fp32 accumulation only)", g.call, (int)g.compute);
    /* cuBLAS: fp32 inputs with an fp32 output, or bf16 inputs with a bf16 or fp32 output. */
    if (g.at == CUDA_R_32F && g.ct != CUDA_R_32F)
        return fail(CUBLAS_STATUS_NOT_SUPPORTED, "%s: fp32 A and B need an fp32 C (got %s)", g.call, type_name(g.ct));
    return CUBLAS_STATUS_SUCCESS;
}

Round rounding(const Gemm &g) {
    if (g.at != CUDA_R_32F) return R_NONE;   /* bf16 inputs are exact in fp32 */
    if (g.compute == CUBLAS_COMPUTE_32F_FAST_TF32) return R_TF32;
    if (g.compute == CUBLAS_COMPUTE_32F_FAST_16BF) return R_BF16;
    if (g.compute == CUBLAS_COMPUTE_32F && (g.h->math & 0xf) == CUBLAS_TF32_TENSOR_OP_MATH) return R_TF32;
    return R_NONE;
}

/* One product: C = alpha op(A) op(B) + beta C. */
void run(const Gemm &g, const void *A, const void *B, void *C, std::vector<float> &a,
         std::vector<float> &b, std::vector<float> &c) {
    int m = g.m, n = g.n, k = g.k;
    if (m == 0 || n == 0) return;
    int arows = g.ta == CUBLAS_OP_N ? m : k, acols = g.ta == CUBLAS_OP_N ? k : m;
    int brows = g.tb == CUBLAS_OP_N ? k : n, bcols = g.tb == CUBLAS_OP_N ? n : k;
    bool use_ab = k > 0 && g.alpha != 0.0f;
    if (use_ab) {
        cuda_emu::require_device_range(g.call, "matrix A", A, extent(arows, acols, g.lda, type_size(g.at)));
        cuda_emu::require_device_range(g.call, "matrix B", B, extent(brows, bcols, g.ldb, type_size(g.bt)));
    }
    cuda_emu::require_device_range(g.call, "matrix C", C, extent(m, n, g.ldc, type_size(g.ct)));
    Round r = g.round;
    c.assign((size_t)m * n, 0.0f);
    if (g.beta != 0.0f)
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) c[(size_t)j * m + i] = load(C, g.ct, (size_t)j * g.ldc + i);
    if (use_ab) {
        /* op(A) as compact column-major m x k, op(B) as k x n. */
        a.resize((size_t)m * k);
        b.resize((size_t)k * n);
        for (int p = 0; p < k; p++)
            for (int i = 0; i < m; i++) {
                size_t src = g.ta == CUBLAS_OP_N ? (size_t)p * g.lda + i : (size_t)i * g.lda + p;
                a[(size_t)p * m + i] = rounded(load(A, g.at, src), r);
            }
        for (int j = 0; j < n; j++)
            for (int p = 0; p < k; p++) {
                size_t src = g.tb == CUBLAS_OP_N ? (size_t)j * g.ldb + p : (size_t)p * g.ldb + j;
                b[(size_t)j * k + p] = rounded(load(B, g.bt, src), r);
            }
        cblas_sgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, m, n, k, g.alpha, a.data(), m,
                    b.data(), k, g.beta, c.data(), m);
    } else {
        for (float &x : c) x *= g.beta;
    }
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) store(C, g.ct, (size_t)j * g.ldc + i, c[(size_t)j * m + i]);
}

/* A scalar argument: in host memory it is read at the call; in device
 * memory (CUBLAS_POINTER_MODE_DEVICE) when the work runs. */
struct Scalar {
    const float *dev;   /* null: `value` holds it */
    float value;
    float get(const char *call, const char *name) const {
        if (!dev) return value;
        cuda_emu::require_device_range(call, name, dev, sizeof(float));
        return *dev;
    }
};

Scalar scalar(const cublasHandle_t h, const void *p, const char *call, const char *name) {
    if (!p) fatal("%s: %s is a null pointer", call, name);
    if (h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE) {
        cuda_emu::require_device_range(call, name, p, sizeof(float));
        return Scalar{(const float *)p, 0.0f};
    }
    return Scalar{nullptr, *(const float *)p};
}

std::string describe(const Gemm &g, int batch) {
    char w[200];
    snprintf(w, sizeof w, "%s (m=%d n=%d k=%d%s)", g.call, g.m, g.n, g.k,
             batch > 1 ? ", batched" : "");
    return w;
}

cublasStatus_t gemm_batched(Gemm g, const void *alpha, const void *A, long long sa, const void *B,
                            long long sb, const void *beta, void *C, long long sc, int batch) {
    cublasStatus_t s = check(g);
    if (s) return s;
    if (batch < 0) return fail(CUBLAS_STATUS_INVALID_VALUE, "%s: batch count %d", g.call, batch);
    Scalar al = scalar(g.h, alpha, g.call, "alpha"), be = scalar(g.h, beta, g.call, "beta");
    g.round = rounding(g);
    std::vector<cuda_emu::Use> uses = {{A, 0}, {B, 0}, {C, 0}};
    cuda_emu::enqueue(g.h->stream, describe(g, batch), uses, [=]() mutable {
        g.alpha = al.get(g.call, "alpha");
        g.beta = be.get(g.call, "beta");
        std::vector<float> a, b, c;
        size_t ea = type_size(g.at), eb = type_size(g.bt), ec = type_size(g.ct);
        for (int i = 0; i < batch; i++)
            run(g, (const char *)A + (ptrdiff_t)(i * sa) * (ptrdiff_t)ea,
                (const char *)B + (ptrdiff_t)(i * sb) * (ptrdiff_t)eb,
                (char *)C + (ptrdiff_t)(i * sc) * (ptrdiff_t)ec, a, b, c);
    });
    return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                           int n, int k, const float *alpha, const float *A, int lda,
                           const float *B, int ldb, const float *beta, float *C, int ldc) {
    Gemm g = {"cublasSgemm", h, ta, tb, m, n, k, 0, 0, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
              lda, ldb, ldc, CUBLAS_COMPUTE_32F, R_NONE};
    return gemm_batched(g, alpha, A, 0, B, 0, beta, C, 0, 1);
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta,
                                         cublasOperation_t tb, int m, int n, int k,
                                         const float *alpha, const float *A, int lda,
                                         long long sa, const float *B, int ldb, long long sb,
                                         const float *beta, float *C, int ldc, long long sc,
                                         int batch) {
    Gemm g = {"cublasSgemmStridedBatched", h, ta, tb, m, n, k, 0, 0, CUDA_R_32F, CUDA_R_32F,
              CUDA_R_32F, lda, ldb, ldc, CUBLAS_COMPUTE_32F, R_NONE};
    return gemm_batched(g, alpha, A, sa, B, sb, beta, C, sc, batch);
}

cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType at,
                            int lda, const void *B, cudaDataType bt, int ldb, const void *beta,
                            void *C, cudaDataType ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t) {
    Gemm g = {"cublasGemmEx", h, ta, tb, m, n, k, 0, 0, at, bt, ct, lda, ldb, ldc, compute, R_NONE};
    return gemm_batched(g, alpha, A, 0, B, 0, beta, C, 0, 1);
}

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType at,
                                          int lda, long long sa, const void *B, cudaDataType bt,
                                          int ldb, long long sb, const void *beta, void *C,
                                          cudaDataType ct, int ldc, long long sc, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t) {
    Gemm g = {"cublasGemmStridedBatchedEx", h, ta, tb, m, n, k, 0, 0, at, bt, ct, lda, ldb, ldc,
              compute, R_NONE};
    return gemm_batched(g, alpha, A, sa, B, sb, beta, C, sc, batch);
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                   int m, int n, int k, const void *alpha, const void *const A[],
                                   cudaDataType at, int lda, const void *const B[],
                                   cudaDataType bt, int ldb, const void *beta, void *const C[],
                                   cudaDataType ct, int ldc, int batch,
                                   cublasComputeType_t compute, cublasGemmAlgo_t) {
    Gemm g = {"cublasGemmBatchedEx", h, ta, tb, m, n, k, 0, 0, at, bt, ct, lda, ldb, ldc, compute, R_NONE};
    cublasStatus_t s = check(g);
    if (s) return s;
    if (batch < 0) return fail(CUBLAS_STATUS_INVALID_VALUE, "%s: batch count %d", g.call, batch);
    /* The pointer arrays themselves live in device memory, read when the
     * products run. */
    size_t pb = batch * sizeof(void *);
    cuda_emu::require_device_range(g.call, "the array of A pointers", A, pb);
    cuda_emu::require_device_range(g.call, "the array of B pointers", B, pb);
    cuda_emu::require_device_range(g.call, "the array of C pointers", C, pb);
    Scalar al = scalar(h, alpha, g.call, "alpha"), be = scalar(h, beta, g.call, "beta");
    g.round = rounding(g);
    std::vector<cuda_emu::Use> uses = {{A, pb}, {B, pb}, {C, pb}};
    cuda_emu::enqueue(h->stream, describe(g, batch), uses, [=]() mutable {
        cuda_emu::require_device_range(g.call, "the array of A pointers", A, pb);
        cuda_emu::require_device_range(g.call, "the array of B pointers", B, pb);
        cuda_emu::require_device_range(g.call, "the array of C pointers", C, pb);
        g.alpha = al.get(g.call, "alpha");
        g.beta = be.get(g.call, "beta");
        std::vector<float> a, b, c;
        for (int i = 0; i < batch; i++) run(g, A[i], B[i], C[i], a, b, c);
    });
    return CUBLAS_STATUS_SUCCESS;
}

/* ---- level 1 -------------------------------------------------------------------------------------- */
static cublasStatus_t vec_check(const char *call, cublasHandle_t h, int n, const void *x, int incx) {
    if (!handle_ok(h)) return fail(CUBLAS_STATUS_NOT_INITIALIZED, "%s: not a live handle", call);
    if (n < 0 || incx == 0) return fail(CUBLAS_STATUS_INVALID_VALUE, "%s: n=%d incx=%d", call, n, incx);
    if (n > 0) cuda_emu::require_device_range(call, "vector", x, ((size_t)(n - 1) * (size_t)abs(incx) + 1) * 4);
    return CUBLAS_STATUS_SUCCESS;
}

/* y += alpha x and x *= alpha run when their stream gets there; a dot
 * product or norm into host memory waits for it. */
cublasStatus_t cublasSaxpy(cublasHandle_t h, int n, const float *alpha, const float *x, int incx,
                           float *y, int incy) {
    cublasStatus_t s = vec_check("cublasSaxpy", h, n, x, incx);
    if (s || (s = vec_check("cublasSaxpy", h, n, y, incy))) return s;
    Scalar a = scalar(h, alpha, "cublasSaxpy", "alpha");
    cuda_emu::enqueue(h->stream, "cublasSaxpy", {{x, 0}, {y, 0}}, [=] {
        float av = a.get("cublasSaxpy", "alpha");
        for (int i = 0; i < n; i++) y[(size_t)i * incy] += av * x[(size_t)i * incx];
    });
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSscal(cublasHandle_t h, int n, const float *alpha, float *x, int incx) {
    cublasStatus_t s = vec_check("cublasSscal", h, n, x, incx);
    if (s) return s;
    Scalar a = scalar(h, alpha, "cublasSscal", "alpha");
    cuda_emu::enqueue(h->stream, "cublasSscal", {{x, 0}}, [=] {
        float av = a.get("cublasSscal", "alpha");
        for (int i = 0; i < n; i++) x[(size_t)i * incx] *= av;
    });
    return CUBLAS_STATUS_SUCCESS;
}

/* A scalar result: into device memory when the work runs, or into host
 * memory, which makes the call wait for its stream. */
static void reduce_to(cublasHandle_t h, const char *call, float *result, std::vector<cuda_emu::Use> uses,
                      std::function<float()> f) {
    if (!result) fatal("%s: result is a null pointer", call);
    bool dev = h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
    if (dev) {
        cuda_emu::require_device_range(call, "result", result, 4);
        uses.push_back({result, 4});
    }
    cuda_emu::enqueue(h->stream, call, uses, [=] {
        if (dev) cuda_emu::require_device_range(call, "result", result, 4);
        *result = f();
    });
    if (!dev) cuda_emu::sync_stream(h->stream, call);
}

cublasStatus_t cublasSdot(cublasHandle_t h, int n, const float *x, int incx, const float *y,
                          int incy, float *result) {
    cublasStatus_t s = vec_check("cublasSdot", h, n, x, incx);
    if (s || (s = vec_check("cublasSdot", h, n, y, incy))) return s;
    reduce_to(h, "cublasSdot", result, {{x, 0}, {y, 0}}, [=] {
        double acc = 0;
        for (int i = 0; i < n; i++) acc += (double)x[(size_t)i * incx] * y[(size_t)i * incy];
        return (float)acc;
    });
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSnrm2(cublasHandle_t h, int n, const float *x, int incx, float *result) {
    cublasStatus_t s = vec_check("cublasSnrm2", h, n, x, incx);
    if (s) return s;
    reduce_to(h, "cublasSnrm2", result, {{x, 0}}, [=] {
        double acc = 0;
        for (int i = 0; i < n; i++) acc += (double)x[(size_t)i * incx] * x[(size_t)i * incx];
        return (float)sqrt(acc);
    });
    return CUBLAS_STATUS_SUCCESS;
}

}  // extern "C"
