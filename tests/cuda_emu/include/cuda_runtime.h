/* cuda_runtime.h of the CUDA emulator (tests only; see tests/cuda_emu/README.md).
 *
 * The suite's .cu files are compiled by g++ as C++ with -DCUDA_EMU and this
 * folder first on the include path, so <cuda_runtime.h>, <cuda_bf16.h>,
 * <cublas_v2.h> and <nccl.h> resolve here instead of to the CUDA toolkit.
 * This header gives the language (qualifiers, built-in variables, vector
 * types, intrinsics, the launch) and the runtime API. Kernels run on the CPU:
 * each CUDA thread is a fiber, the threads of one block take turns on one OS
 * thread and switch only at barriers and warp-level operations, and the blocks
 * of a grid run one after the other. Kernels, copies, memsets and library
 * calls are queued on their streams and run when the emulator's stream model
 * says (emu_streams.cc; EMU_STREAMS=sync runs each at its call). */
#ifndef CUDA_EMU_CUDA_RUNTIME_H
#define CUDA_EMU_CUDA_RUNTIME_H

#ifndef __cplusplus
#error "the CUDA emulator's headers are C++: compile .cu files with g++ -x c++"
#endif

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmath>
#include <functional>   /* these before the qualifiers below: libstdc++ uses __noinline__ */
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#define CUDART_VERSION 13000
#define CUDA_VERSION 13000

/* ---- qualifiers -------------------------------------------------------------
 * Kernels and device functions become ordinary C++ functions. __shared__
 * declarations inside functions are rewritten by the build (rewrite_shared)
 * into per-block storage; `static` is the fallback for one it could not see
 * (a declaration produced by a macro), which is shared by all blocks but
 * still correct because blocks run one at a time. */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __constant__
#define __managed__
#define __grid_constant__
#define __align__(n) alignas(n)
#define __shared__ static

/* ---- vector types ------------------------------------------------------------ */
#define CUDA_EMU_VEC2(T, N, A) struct alignas(A) N##2 { T x, y; }; \
    static inline N##2 make_##N##2(T x, T y) { N##2 r; r.x = x; r.y = y; return r; }
#define CUDA_EMU_VEC3(T, N) struct N##3 { T x, y, z; }; \
    static inline N##3 make_##N##3(T x, T y, T z) { N##3 r; r.x = x; r.y = y; r.z = z; return r; }
#define CUDA_EMU_VEC4(T, N, A) struct alignas(A) N##4 { T x, y, z, w; }; \
    static inline N##4 make_##N##4(T x, T y, T z, T w) { N##4 r; r.x = x; r.y = y; r.z = z; r.w = w; return r; }
CUDA_EMU_VEC2(float, float, 8) CUDA_EMU_VEC3(float, float) CUDA_EMU_VEC4(float, float, 16)
CUDA_EMU_VEC2(int, int, 8) CUDA_EMU_VEC3(int, int) CUDA_EMU_VEC4(int, int, 16)
CUDA_EMU_VEC2(unsigned int, uint, 8) CUDA_EMU_VEC3(unsigned int, uint) CUDA_EMU_VEC4(unsigned int, uint, 16)
CUDA_EMU_VEC2(short, short, 4) CUDA_EMU_VEC4(short, short, 8)
CUDA_EMU_VEC2(unsigned short, ushort, 4) CUDA_EMU_VEC4(unsigned short, ushort, 8)
CUDA_EMU_VEC2(signed char, char, 2) CUDA_EMU_VEC4(signed char, char, 4)
CUDA_EMU_VEC2(unsigned char, uchar, 2) CUDA_EMU_VEC4(unsigned char, uchar, 4)
CUDA_EMU_VEC2(double, double, 16) CUDA_EMU_VEC2(long long, longlong, 16)
CUDA_EMU_VEC2(unsigned long long, ulonglong, 16)
#undef CUDA_EMU_VEC2
#undef CUDA_EMU_VEC3
#undef CUDA_EMU_VEC4

struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1) : x(vx), y(vy), z(vz) {}
    constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
    constexpr operator uint3() const { return uint3{x, y, z}; }
};

/* ---- built-in variables ---------------------------------------------------------
 * Set by the scheduler before it resumes a thread. Plain globals: the
 * compiler reloads them after every call that may switch threads. */
extern uint3 threadIdx, blockIdx;
extern dim3 blockDim, gridDim;
constexpr int warpSize = 32;

/* ---- runtime types ---------------------------------------------------------------- */
typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidSymbol = 13,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorInsufficientDriver = 35,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
    cudaErrorIllegalAddress = 700,
    cudaErrorLaunchOutOfResources = 701,
    cudaErrorMisalignedAddress = 716,
    cudaErrorLaunchFailure = 719,
    cudaErrorNotSupported = 801,
    cudaErrorUnknown = 999
} cudaError_t;

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)

enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4
};
enum cudaMemoryType {
    cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1,
    cudaMemoryTypeDevice = 2, cudaMemoryTypeManaged = 3
};
struct cudaPointerAttributes {
    enum cudaMemoryType type;
    int device;
    void *devicePointer;
    void *hostPointer;
    long reserved[8];
};
enum cudaFuncAttribute {
    cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
    cudaFuncAttributePreferredSharedMemoryCarveout = 9
};
enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMaxBlockDimX = 2, cudaDevAttrMaxBlockDimY = 3,
    cudaDevAttrMaxBlockDimZ = 4, cudaDevAttrMaxGridDimX = 5, cudaDevAttrMaxGridDimY = 6,
    cudaDevAttrMaxGridDimZ = 7, cudaDevAttrMaxSharedMemoryPerBlock = 8, cudaDevAttrWarpSize = 10,
    cudaDevAttrClockRate = 13, cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrMemoryClockRate = 36, cudaDevAttrGlobalMemoryBusWidth = 37,
    cudaDevAttrL2CacheSize = 38, cudaDevAttrMaxThreadsPerMultiProcessor = 39,
    cudaDevAttrComputeCapabilityMajor = 75, cudaDevAttrComputeCapabilityMinor = 76,
    cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81, cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
};

#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaEventInterprocess 0x04
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04
#define cudaHostRegisterDefault 0x00
#define cudaMemAttachGlobal 0x01
#define cudaDeviceScheduleAuto 0x00
#define cudaDeviceScheduleSpin 0x01
#define cudaDeviceScheduleYield 0x02
#define cudaDeviceScheduleBlockingSync 0x04
#define cudaDeviceMapHost 0x08

typedef struct { char bytes[16]; } cudaUUID_t;

/* The fields of CUDA 13's cudaDeviceProp that are not about textures,
 * surfaces or interop (clockRate and memoryClockRate are gone in CUDA 13:
 * use cudaDeviceGetAttribute). */
struct cudaDeviceProp {
    char name[256];
    cudaUUID_t uuid;
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock;
    int warpSize;
    size_t memPitch;
    int maxThreadsPerBlock;
    int maxThreadsDim[3];
    int maxGridSize[3];
    size_t totalConstMem;
    int major;
    int minor;
    int multiProcessorCount;
    int integrated;
    int canMapHostMemory;
    int concurrentKernels;
    int ECCEnabled;
    int pciBusID;
    int pciDeviceID;
    int pciDomainID;
    int asyncEngineCount;
    int unifiedAddressing;
    int memoryBusWidth;
    int l2CacheSize;
    int persistingL2CacheMaxSize;
    int maxThreadsPerMultiProcessor;
    int streamPrioritiesSupported;
    size_t sharedMemPerMultiprocessor;
    int regsPerMultiprocessor;
    int managedMemory;
    int isMultiGpuBoard;
    int cooperativeLaunch;
    size_t sharedMemPerBlockOptin;
    int maxBlocksPerMultiProcessor;
    size_t reservedSharedMemPerBlock;
    int memoryPoolsSupported;
    int clusterLaunch;
};

/* ---- runtime API (emu_runtime.cc) ----------------------------------------------- */
extern "C" {
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t e);
const char *cudaGetErrorName(cudaError_t e);
cudaError_t cudaRuntimeGetVersion(int *v);
cudaError_t cudaDriverGetVersion(int *v);

cudaError_t cudaGetDeviceCount(int *n);
cudaError_t cudaSetDevice(int dev);
cudaError_t cudaGetDevice(int *dev);
cudaError_t cudaSetDeviceFlags(unsigned int flags);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int dev);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int dev);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer);
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags);
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);

cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s);
cudaError_t cudaMallocManaged(void **p, size_t bytes, unsigned int flags);
cudaError_t cudaMallocHost(void **p, size_t bytes);
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int flags);
cudaError_t cudaHostRegister(void *p, size_t bytes, unsigned int flags);
cudaError_t cudaHostUnregister(void *p);
cudaError_t cudaHostGetDevicePointer(void **dev, void *host, unsigned int flags);
cudaError_t cudaFree(void *p);
cudaError_t cudaFreeAsync(void *p, cudaStream_t s);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p);

cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, enum cudaMemcpyKind kind,
                            cudaStream_t s);
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind,
                              cudaStream_t s);
cudaError_t cudaMemcpyPeer(void *dst, int dst_dev, const void *src, int src_dev, size_t bytes);
cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_dev, const void *src, int src_dev,
                                size_t bytes, cudaStream_t s);
cudaError_t cudaMemset(void *p, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *p, int value, size_t bytes, cudaStream_t s);

cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int priority);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamQuery(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags);

cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value);
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, const void *func,
                                                          int block_size, size_t dyn_smem);
}

/* The C++ overloads the real runtime has. */
template <class T> static inline cudaError_t cudaMalloc(T **p, size_t bytes) {
    return cudaMalloc((void **)p, bytes);
}
template <class T> static inline cudaError_t cudaMallocAsync(T **p, size_t bytes, cudaStream_t s) {
    return cudaMallocAsync((void **)p, bytes, s);
}
template <class T> static inline cudaError_t cudaMallocHost(T **p, size_t bytes) {
    return cudaMallocHost((void **)p, bytes);
}
template <class T> static inline cudaError_t cudaHostAlloc(T **p, size_t bytes, unsigned int f) {
    return cudaHostAlloc((void **)p, bytes, f);
}
template <class T>
static inline cudaError_t cudaMallocManaged(T **p, size_t bytes, unsigned int f = cudaMemAttachGlobal) {
    return cudaMallocManaged((void **)p, bytes, f);
}
static inline cudaError_t cudaEventCreate(cudaEvent_t *e, unsigned int flags) {
    return cudaEventCreateWithFlags(e, flags);
}
template <class F>
static inline cudaError_t cudaFuncSetAttribute(F *func, enum cudaFuncAttribute attr, int value) {
    return cudaFuncSetAttribute((const void *)func, attr, value);
}
template <class F>
static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, F *func,
                                                                        int block_size,
                                                                        size_t dyn_smem) {
    return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, (const void *)func, block_size,
                                                         dyn_smem);
}
/* __constant__ and __device__ variables are ordinary globals here. */
template <class T>
static inline cudaError_t cudaMemcpyToSymbol(const T &symbol, const void *src, size_t bytes,
                                             size_t offset = 0,
                                             enum cudaMemcpyKind kind = cudaMemcpyHostToDevice) {
    (void)kind;
    if (offset + bytes > sizeof(T)) return cudaErrorInvalidValue;
    memcpy((char *)&symbol + offset, src, bytes);
    return cudaSuccess;
}
template <class T>
static inline cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t bytes,
                                               size_t offset = 0,
                                               enum cudaMemcpyKind kind = cudaMemcpyDeviceToHost) {
    (void)kind;
    if (offset + bytes > sizeof(T)) return cudaErrorInvalidValue;
    memcpy(dst, (const char *)&symbol + offset, bytes);
    return cudaSuccess;
}

/* ---- the emulator's core: threads, barriers, warps, shared memory, launch ---- */
#include "cuda_emu_core.h"

/* ---- device functions --------------------------------------------------------- */
#include "cuda_emu_device.h"

#endif
