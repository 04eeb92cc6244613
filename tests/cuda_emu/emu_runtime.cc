/* emu_runtime.cc: the CUDA runtime API of the emulator.
 *
 * Device memory is host memory from malloc, so AddressSanitizer reports an
 * access past the end of a buffer inside a kernel, a copy or a library call.
 * Every allocation is also recorded (base, size, kind, device), which lets
 * the emulator refuse what a GPU would refuse: a copy whose direction does
 * not match its pointers, a device range running past its allocation, a
 * kernel argument that is a host pointer or a freed buffer, cudaFree of
 * something that was not allocated. Fresh device memory holds 0xff bytes
 * (NaN as fp32 and bf16), not zeros, so code that reads memory it never
 * wrote gives NaN instead of passing by luck.
 *
 * Copies and memsets are checked when they are called (a bad one returns its
 * error then, as on a GPU) and then queued on their stream (emu_streams.cc
 * decides when they run; the blocking forms wait where the runtime's
 * documentation says they do). cudaFree does not wait for queued work: it
 * refuses, loudly, to free memory that queued work still uses. When a call
 * fails the reason is printed on stderr (prefix "cuda_emu:") and the call
 * returns the error a GPU would, which the suite's CUDA_CHECK then reports.
 *
 * Environment: EMU_GPUS (visible devices, default 1; 0 means none),
 * EMU_MEM_MB (memory per device, default 8192). */
#include <cuda_runtime.h>

#include "emu_streams.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <map>
#include <mutex>
#include <set>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>

/* Open MPI never frees some of its memory: leaks are not what these tests
 * judge. The shadow-byte legend is left out so that the end of a report,
 * which the test runner shows, holds the emulator's summary line. */
extern "C" const char *__asan_default_options() { return "detect_leaks=0:print_legend=0"; }

namespace cuda_emu {
int current_kernel(const char **name, const char **file, int *line, uint3 *block, uint3 *thread);
}

/* When a sanitizer stops the program, finish with one line that names the
 * kernel, block and thread the report came from. */
static void sanitizer_died() {
    const char *name, *file;
    int line;
    uint3 b, t;
    const char *what = __asan_get_report_description();
    char where[512] = "";
    if (__asan_get_report_pc())
        __sanitizer_symbolize_pc(__asan_get_report_pc(), "%s:%l in %f", where, sizeof where);
    if (cuda_emu::current_kernel(&name, &file, &line, &b, &t))
        fprintf(stderr, "error: cuda_emu: %s%s%s in kernel %s (launched at %s:%d), block (%u,%u,%u), "
                "thread (%u,%u,%u); the sanitizer's report is above\n",
                what ? what : "a sanitizer error", *where ? " at " : "", where, name, file, line,
                b.x, b.y, b.z, t.x, t.y, t.z);
    else if (cuda_emu::running_op())
        fprintf(stderr, "error: cuda_emu: %s%s%s in %s; the sanitizer's report is above\n",
                what ? what : "a sanitizer error", *where ? " at " : "", where, cuda_emu::running_op());
    else
        fprintf(stderr, "error: cuda_emu: %s%s%s outside any kernel; the sanitizer's report is above\n",
                what ? what : "a sanitizer error", *where ? " at " : "", where);
}

__attribute__((constructor)) static void register_death_callback() {
    __sanitizer_set_death_callback(sanitizer_died);
}
#endif

namespace cuda_emu {

/* ---- errors ---------------------------------------------------------------------------- */
static thread_local int last_error = 0;

int set_error(int e) {
    if (e) last_error = e;
    return e;
}

static cudaError_t fail(cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static cudaError_t fail(cudaError_t e, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "cuda_emu: %s\n", msg);
    fflush(stderr);
    set_error(e);
    return e;
}

/* ---- devices ------------------------------------------------------------------------------ */
static int device_count() {
    const char *s = getenv("EMU_GPUS");
    if (!s || !*s) return 1;
    int n = atoi(s);
    return n < 0 ? 0 : n;
}

static size_t device_memory() {
    const char *s = getenv("EMU_MEM_MB");
    size_t mb = s && atol(s) > 0 ? (size_t)atol(s) : 8192;
    return mb << 20;
}

static thread_local int current_device = 0;

int visible_devices() { return device_count(); }
int get_current_device() { return current_device; }
void set_current_device(int dev) { current_device = dev; }

/* ---- memory registry ------------------------------------------------------------------------ */
enum { M_DEVICE, M_MANAGED, M_PINNED, M_REGISTERED };
struct Alloc { size_t size; int kind; int device; };
static std::mutex mem_mu;
static std::map<uintptr_t, Alloc> allocs;
static std::map<int, size_t> used_bytes;   /* per device */

static const char *kind_name(int k) {
    return k == M_DEVICE ? "device" : k == M_MANAGED ? "managed" : k == M_PINNED ? "pinned host"
                                                                                   : "registered host";
}

/* The allocation holding p (end pointer included when `end_ok`), or null. */
static const std::pair<const uintptr_t, Alloc> *find(const void *p, bool end_ok = false) {
    uintptr_t u = (uintptr_t)p;
    auto it = allocs.upper_bound(u);
    if (it == allocs.begin()) return nullptr;
    --it;
    if (u < it->first + it->second.size || (end_ok && u == it->first + it->second.size) ||
        (it->second.size == 0 && u == it->first))
        return &*it;
    return nullptr;
}

static cudaError_t alloc(void **p, size_t bytes, int kind, const char *call) {
    if (!p) return fail(cudaErrorInvalidValue, "%s: null result pointer", call);
    *p = nullptr;
    int n = device_count();
    if (n == 0) return fail(cudaErrorNoDevice, "%s: no device (EMU_GPUS=0)", call);
    if (bytes == 0) return cudaSuccess;   /* the runtime hands back NULL */
    std::lock_guard<std::mutex> lock(mem_mu);
    if (kind == M_DEVICE || kind == M_MANAGED) {
        size_t &used = used_bytes[current_device];
        if (bytes > device_memory() - used)
            return fail(cudaErrorMemoryAllocation,
                        "%s(%zu bytes): out of memory (%zu of %zu bytes in use; EMU_MEM_MB sets "
                        "the emulated size)", call, bytes, used, device_memory());
        used += bytes;
    }
    void *q = nullptr;
    /* The exact size, so that AddressSanitizer's red zone starts at the end. */
    if (posix_memalign(&q, 256, bytes) != 0) return fail(cudaErrorMemoryAllocation, "%s: out of host memory", call);
    if (kind == M_DEVICE) memset(q, 0xff, bytes);
    allocs[(uintptr_t)q] = Alloc{bytes, kind, current_device};
    *p = q;
    return cudaSuccess;
}

static cudaError_t release(void *p, bool host, const char *call) {
    if (!p) return cudaSuccess;
    std::lock_guard<std::mutex> lock(mem_mu);
    auto it = allocs.find((uintptr_t)p);
    bool ok = it != allocs.end() &&
              (host ? it->second.kind == M_PINNED
                    : (it->second.kind == M_DEVICE || it->second.kind == M_MANAGED));
    if (!ok) {
        const auto *in = find(p);
        if (in)
            return fail(cudaErrorInvalidValue,
                        "%s(%p): points %zu bytes into a %s allocation, not at its start", call,
                        p, (size_t)((uintptr_t)p - in->first), kind_name(in->second.kind));
        return fail(cudaErrorInvalidValue,
                    "%s(%p): not a live %s allocation (freed twice, or never allocated here)",
                    call, p, host ? "pinned host" : "device");
    }
    /* The runtime's documentation says cudaFree "may perform implicit
     * synchronization" for cudaMalloc'd memory: may, so a program that
     * frees memory its queued work still uses relies on luck. */
    std::string user = pending_use(p, it->second.size);
    if (!user.empty())
        fatal("%s(%p): use-after-free: the %zu-byte %s allocation is still used by queued work: "
              "%s. cudaFree does not promise to wait for it: synchronise the streams that use "
              "the buffer first", call, p, it->second.size, kind_name(it->second.kind), user.c_str());
    if (it->second.kind == M_DEVICE || it->second.kind == M_MANAGED)
        used_bytes[it->second.device] -= it->second.size;
    allocs.erase(it);
    free(p);
    return cudaSuccess;
}

/* Where [p, p + n) lives: -1 plain host memory, else the allocation's kind;
 * a range starting inside an allocation must end inside it. */
static int classify(const void *p, size_t n, const char *call, const char *which, cudaError_t *err) {
    std::lock_guard<std::mutex> lock(mem_mu);
    const auto *a = find(p);
    *err = cudaSuccess;
    if (!a) return -1;
    size_t off = (uintptr_t)p - a->first;
    if (n > a->second.size - off) {
        *err = fail(cudaErrorInvalidValue,
                    "%s: %s range of %zu bytes at offset %zu runs past the end of its %zu-byte "
                    "%s allocation", call, which, n, off, a->second.size,
                    kind_name(a->second.kind));
    }
    return a->second.kind;
}

static bool device_side(int kind) { return kind == M_DEVICE || kind == M_MANAGED; }
static bool host_side(int kind) { return kind != M_DEVICE; }

static cudaError_t bad_stream(const char *call, cudaStream_t s) {
    return fail(cudaErrorInvalidResourceHandle, "%s: stream %p is not a live stream (destroyed?)",
                call, (void *)s);
}

/* ---- kernel launches ---------------------------------------------------------------------------------- */
static std::mutex func_mu;
static std::map<const void *, int> func_max_dyn_smem;

int launch_check(const char *name, const char *file, int line, const void *func, dim3 g, dim3 b,
                 size_t smem, cudaStream_t s) {
    if (device_count() == 0)
        return fail(cudaErrorNoDevice, "kernel %s launched at %s:%d: no device (EMU_GPUS=0)", name, file, line);
    unsigned long long threads = (unsigned long long)b.x * b.y * b.z;
    if (b.x == 0 || b.y == 0 || b.z == 0 || b.x > 1024 || b.y > 1024 || b.z > 64 || threads > 1024)
        return fail(cudaErrorInvalidConfiguration,
                    "kernel %s launched at %s:%d with block (%u,%u,%u): a block has 1 to 1024 "
                    "threads (x, y <= 1024, z <= 64)", name, file, line, b.x, b.y, b.z);
    if (g.x == 0 || g.y == 0 || g.z == 0 || g.x > 2147483647u || g.y > 65535 || g.z > 65535)
        return fail(cudaErrorInvalidConfiguration,
                    "kernel %s launched at %s:%d with grid (%u,%u,%u): every dimension must be "
                    "at least 1 (an empty input needs no launch), y and z at most 65535",
                    name, file, line, g.x, g.y, g.z);
    if (smem > 48 * 1024) {
        int opt = 0;
        {
            std::lock_guard<std::mutex> lock(func_mu);
            auto it = func_max_dyn_smem.find(func);
            if (it != func_max_dyn_smem.end()) opt = it->second;
        }
        if ((long long)smem > opt)
            return fail(cudaErrorInvalidValue,
                        "kernel %s launched at %s:%d with %zu bytes of dynamic shared memory: "
                        "over 48 KiB needs cudaFuncSetAttribute(kernel, "
                        "cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) first (set: %d)",
                        name, file, line, smem, opt);
    }
    if (!stream_valid(s)) {
        char what[512];
        snprintf(what, sizeof what, "kernel %s launched at %s:%d", name, file, line);
        return bad_stream(what, s);
    }
    return 0;
}

int check_kernel_pointer(const char *kernel, const char *file, int line, int index, const void *p) {
    if (!p) return 0;
    std::lock_guard<std::mutex> lock(mem_mu);
    const auto *a = find(p, true);
    if (!a) {
        fprintf(stderr,
                "cuda_emu: kernel %s launched at %s:%d: argument %d (%p) points to no device "
                "allocation: a host pointer, a freed buffer, or an offset past the end of one\n",
                kernel, file, line, index, p);
        return 1;
    }
    if (a->second.kind == M_DEVICE && a->second.device != current_device) {
        fprintf(stderr,
                "cuda_emu: kernel %s launched at %s:%d on device %d: argument %d (%p) is memory "
                "of device %d\n", kernel, file, line, current_device, index, p, a->second.device);
        return 1;
    }
    return 0;
}

/* For the libraries (cuBLAS, NCCL): [p, p + bytes) must lie inside one
 * device (or managed) allocation. device_range_error says why not;
 * require_device_range stops the program, as a GPU would fault. */
int device_range_error(const char *call, const char *what, const void *p, size_t bytes) {
    if (bytes == 0) return 0;
    std::lock_guard<std::mutex> lock(mem_mu);
    const auto *a = p ? find(p) : nullptr;
    if (!a || !device_side(a->second.kind)) {
        fprintf(stderr, "cuda_emu: %s: %s (%p, %zu bytes) is not device memory (a host pointer "
                "or a freed buffer?)\n", call, what, p, bytes);
        return 1;
    }
    size_t off = (uintptr_t)p - a->first;
    if (bytes > a->second.size - off) {
        fprintf(stderr, "cuda_emu: %s: %s needs %zu bytes at offset %zu of a %zu-byte device "
                "allocation: it runs %zu bytes past the end\n", call, what, bytes, off,
                a->second.size, bytes - (a->second.size - off));
        return 1;
    }
    return 0;
}

void require_device_range(const char *call, const char *what, const void *p, size_t bytes) {
    if (device_range_error(call, what, p, bytes))
        fatal("%s: a GPU would fault on %s (see above)", call, what);
}

}  // namespace cuda_emu

using namespace cuda_emu;

/* ---- the API --------------------------------------------------------------------------------------------- */
extern "C" {

cudaError_t cudaGetLastError(void) {
    cudaError_t e = (cudaError_t)last_error;
    last_error = 0;
    return e;
}
cudaError_t cudaPeekAtLastError(void) { return (cudaError_t)last_error; }

const char *cudaGetErrorString(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidSymbol: return "invalid device symbol";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotReady: return "device not ready";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorLaunchOutOfResources: return "too many resources requested for launch";
    case cudaErrorMisalignedAddress: return "misaligned address";
    case cudaErrorLaunchFailure: return "unspecified launch failure";
    case cudaErrorNotSupported: return "operation not supported";
    default: return "unknown error";
    }
}

const char *cudaGetErrorName(cudaError_t e) {
    switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInitializationError: return "cudaErrorInitializationError";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidSymbol: return "cudaErrorInvalidSymbol";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection: return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorInsufficientDriver: return "cudaErrorInsufficientDriver";
    case cudaErrorNoDevice: return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady: return "cudaErrorNotReady";
    case cudaErrorIllegalAddress: return "cudaErrorIllegalAddress";
    case cudaErrorLaunchOutOfResources: return "cudaErrorLaunchOutOfResources";
    case cudaErrorMisalignedAddress: return "cudaErrorMisalignedAddress";
    case cudaErrorLaunchFailure: return "cudaErrorLaunchFailure";
    case cudaErrorNotSupported: return "cudaErrorNotSupported";
    default: return "cudaErrorUnknown";
    }
}

cudaError_t cudaRuntimeGetVersion(int *v) { if (v) *v = CUDART_VERSION; return cudaSuccess; }
cudaError_t cudaDriverGetVersion(int *v) { if (v) *v = CUDART_VERSION; return cudaSuccess; }

cudaError_t cudaGetDeviceCount(int *n) {
    if (!n) return fail(cudaErrorInvalidValue, "cudaGetDeviceCount: null pointer");
    *n = device_count();
    if (*n == 0) return set_error(cudaErrorNoDevice), cudaErrorNoDevice;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int dev) {
    int n = device_count();
    if (n == 0) return fail(cudaErrorNoDevice, "cudaSetDevice(%d): no device (EMU_GPUS=0)", dev);
    if (dev < 0 || dev >= n)
        return fail(cudaErrorInvalidDevice, "cudaSetDevice(%d): %d device%s (EMU_GPUS)", dev, n,
                    n == 1 ? "" : "s");
    current_device = dev;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *dev) {
    if (!dev) return fail(cudaErrorInvalidValue, "cudaGetDevice: null pointer");
    if (device_count() == 0) return fail(cudaErrorNoDevice, "cudaGetDevice: no device (EMU_GPUS=0)");
    *dev = current_device;
    return cudaSuccess;
}

cudaError_t cudaSetDeviceFlags(unsigned int) { return cudaSuccess; }

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int dev) {
    if (!p) return fail(cudaErrorInvalidValue, "cudaGetDeviceProperties: null pointer");
    if (dev < 0 || dev >= device_count())
        return fail(cudaErrorInvalidDevice, "cudaGetDeviceProperties(%d): no such device", dev);
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "CUDA emulator");
    p->uuid.bytes[0] = (char)dev;
    p->totalGlobalMem = device_memory();
    p->sharedMemPerBlock = 48 * 1024;
    p->regsPerBlock = 65536;
    p->warpSize = 32;
    p->memPitch = (size_t)1 << 31;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = 1024; p->maxThreadsDim[1] = 1024; p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647; p->maxGridSize[1] = 65535; p->maxGridSize[2] = 65535;
    p->totalConstMem = 65536;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 1;
    p->canMapHostMemory = 1;
    p->concurrentKernels = 1;
    p->pciBusID = dev;
    p->asyncEngineCount = 2;
    p->unifiedAddressing = 1;
    p->memoryBusWidth = 64;
    p->l2CacheSize = 1 << 20;
    p->maxThreadsPerMultiProcessor = 2048;
    p->streamPrioritiesSupported = 1;
    p->sharedMemPerMultiprocessor = 228 * 1024;
    p->regsPerMultiprocessor = 65536;
    p->managedMemory = 1;
    p->cooperativeLaunch = 1;
    p->sharedMemPerBlockOptin = 227 * 1024;
    p->maxBlocksPerMultiProcessor = 32;
    p->reservedSharedMemPerBlock = 1024;
    p->memoryPoolsSupported = 1;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *v, enum cudaDeviceAttr attr, int dev) {
    cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceProperties(&p, dev);
    if (e) return e;
    if (!v) return fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute: null pointer");
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock: *v = p.maxThreadsPerBlock; break;
    case cudaDevAttrMaxBlockDimX: *v = p.maxThreadsDim[0]; break;
    case cudaDevAttrMaxBlockDimY: *v = p.maxThreadsDim[1]; break;
    case cudaDevAttrMaxBlockDimZ: *v = p.maxThreadsDim[2]; break;
    case cudaDevAttrMaxGridDimX: *v = p.maxGridSize[0]; break;
    case cudaDevAttrMaxGridDimY: *v = p.maxGridSize[1]; break;
    case cudaDevAttrMaxGridDimZ: *v = p.maxGridSize[2]; break;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = (int)p.sharedMemPerBlock; break;
    case cudaDevAttrWarpSize: *v = 32; break;
    case cudaDevAttrClockRate: *v = 1000000; break;         /* kHz */
    case cudaDevAttrMultiProcessorCount: *v = p.multiProcessorCount; break;
    case cudaDevAttrMemoryClockRate: *v = 1000000; break;
    case cudaDevAttrGlobalMemoryBusWidth: *v = p.memoryBusWidth; break;
    case cudaDevAttrL2CacheSize: *v = p.l2CacheSize; break;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = p.maxThreadsPerMultiProcessor; break;
    case cudaDevAttrComputeCapabilityMajor: *v = p.major; break;
    case cudaDevAttrComputeCapabilityMinor: *v = p.minor; break;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = (int)p.sharedMemPerMultiprocessor; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = (int)p.sharedMemPerBlockOptin; break;
    default: return fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute: attribute %d is not emulated", (int)attr);
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceReset(void) { return cudaSuccess; }

cudaError_t cudaDeviceCanAccessPeer(int *can, int dev, int peer) {
    int n = device_count();
    if (!can || dev < 0 || dev >= n || peer < 0 || peer >= n)
        return fail(cudaErrorInvalidDevice, "cudaDeviceCanAccessPeer(%d, %d): no such device", dev, peer);
    *can = dev != peer;
    return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int, unsigned int) { return cudaSuccess; }
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest) {
    if (least) *least = 0;
    if (greatest) *greatest = -5;
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes) {
    std::lock_guard<std::mutex> lock(mem_mu);
    size_t total = device_memory(), used = used_bytes[current_device];
    if (free_bytes) *free_bytes = total - used;
    if (total_bytes) *total_bytes = total;
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t bytes) { return alloc(p, bytes, M_DEVICE, "cudaMalloc"); }
cudaError_t cudaMallocAsync(void **p, size_t bytes, cudaStream_t s) {
    if (!stream_valid(s)) return bad_stream("cudaMallocAsync", s);
    return alloc(p, bytes, M_DEVICE, "cudaMallocAsync");
}
cudaError_t cudaMallocManaged(void **p, size_t bytes, unsigned int) {
    return alloc(p, bytes, M_MANAGED, "cudaMallocManaged");
}
cudaError_t cudaMallocHost(void **p, size_t bytes) { return alloc(p, bytes, M_PINNED, "cudaMallocHost"); }
cudaError_t cudaHostAlloc(void **p, size_t bytes, unsigned int) {
    return alloc(p, bytes, M_PINNED, "cudaHostAlloc");
}
cudaError_t cudaHostRegister(void *p, size_t bytes, unsigned int) {
    if (!p || !bytes) return fail(cudaErrorInvalidValue, "cudaHostRegister: empty range");
    std::lock_guard<std::mutex> lock(mem_mu);
    if (find(p)) return fail(cudaErrorInvalidValue, "cudaHostRegister(%p): already known to CUDA", p);
    allocs[(uintptr_t)p] = Alloc{bytes, M_REGISTERED, current_device};
    return cudaSuccess;
}
cudaError_t cudaHostUnregister(void *p) {
    std::lock_guard<std::mutex> lock(mem_mu);
    auto it = allocs.find((uintptr_t)p);
    if (it == allocs.end() || it->second.kind != M_REGISTERED)
        return fail(cudaErrorInvalidValue, "cudaHostUnregister(%p): not registered", p);
    std::string user = pending_use(p, it->second.size);
    if (!user.empty())
        fatal("cudaHostUnregister(%p): queued work still uses the memory: %s", p, user.c_str());
    allocs.erase(it);
    return cudaSuccess;
}
cudaError_t cudaHostGetDevicePointer(void **dev, void *host, unsigned int) {
    if (!dev) return fail(cudaErrorInvalidValue, "cudaHostGetDevicePointer: null pointer");
    std::lock_guard<std::mutex> lock(mem_mu);
    const auto *a = find(host);
    if (!a || !host_side(a->second.kind))
        return fail(cudaErrorInvalidValue, "cudaHostGetDevicePointer(%p): not pinned host memory", host);
    *dev = host;
    return cudaSuccess;
}
cudaError_t cudaFree(void *p) { return release(p, false, "cudaFree"); }
/* Freed when the stream gets there; work queued elsewhere that still uses
 * it then is reported as a use after free. */
cudaError_t cudaFreeAsync(void *p, cudaStream_t s) {
    if (!stream_valid(s)) return bad_stream("cudaFreeAsync", s);
    if (!p) return cudaSuccess;
    {
        std::lock_guard<std::mutex> lock(mem_mu);
        auto it = allocs.find((uintptr_t)p);
        if (it == allocs.end() || !device_side(it->second.kind))
            return fail(cudaErrorInvalidValue, "cudaFreeAsync(%p): not a live device allocation", p);
    }
    enqueue(s, "cudaFreeAsync", {}, [p] {
        if (release(p, false, "cudaFreeAsync")) fatal("cudaFreeAsync(%p) failed when its stream reached it", p);
    });
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void *p) { return release(p, true, "cudaFreeHost"); }

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *at, const void *p) {
    if (!at) return fail(cudaErrorInvalidValue, "cudaPointerGetAttributes: null pointer");
    memset(at, 0, sizeof *at);
    std::lock_guard<std::mutex> lock(mem_mu);
    const auto *a = find(p);
    if (!a) {
        at->type = cudaMemoryTypeUnregistered;
        at->device = -2;
        at->hostPointer = (void *)p;
        return cudaSuccess;
    }
    at->device = a->second.device;
    switch (a->second.kind) {
    case M_DEVICE: at->type = cudaMemoryTypeDevice; at->devicePointer = (void *)p; break;
    case M_MANAGED: at->type = cudaMemoryTypeManaged; at->devicePointer = at->hostPointer = (void *)p; break;
    default: at->type = cudaMemoryTypeHost; at->devicePointer = at->hostPointer = (void *)p; break;
    }
    return cudaSuccess;
}

/* ---- copies and memsets ------------------------------------------------------------------ */
/* One contiguous piece of a copy (a 2D copy is one piece per row). */
struct Piece {
    void *dst;
    const void *src;
    size_t n;
};

/* The checks a GPU makes when the copy is called; the kinds of memory of
 * the destination and the source (-1: plain host memory). */
static cudaError_t check_copy(const char *call, const Piece &p, enum cudaMemcpyKind kind, int *dk,
                              int *sk) {
    if (!p.dst || !p.src)
        return fail(cudaErrorInvalidValue, "%s: null pointer (dst %p, src %p)", call, p.dst, (void *)p.src);
    if ((int)kind < 0 || (int)kind > 4)
        return fail(cudaErrorInvalidMemcpyDirection, "%s: direction %d", call, (int)kind);
    cudaError_t e;
    *dk = classify(p.dst, p.n, call, "destination", &e);
    if (e) return e;
    *sk = classify(p.src, p.n, call, "source", &e);
    if (e) return e;
    bool d_dev = *dk >= 0 && device_side(*dk), s_dev = *sk >= 0 && device_side(*sk);
    bool d_host = *dk < 0 || host_side(*dk), s_host = *sk < 0 || host_side(*sk);
    static const char *names[] = {"cudaMemcpyHostToHost", "cudaMemcpyHostToDevice",
                                  "cudaMemcpyDeviceToHost", "cudaMemcpyDeviceToDevice"};
    bool ok = true;
    switch (kind) {
    case cudaMemcpyHostToHost: ok = d_host && s_host; break;
    case cudaMemcpyHostToDevice: ok = d_dev && s_host; break;
    case cudaMemcpyDeviceToHost: ok = d_host && s_dev; break;
    case cudaMemcpyDeviceToDevice: ok = d_dev && s_dev; break;
    default: break;
    }
    if (!ok)
        return fail(cudaErrorInvalidValue,
                    "%s(%zu bytes, %s): the destination is %s memory and the source %s memory",
                    call, p.n, names[kind], *dk < 0 ? "host" : kind_name(*dk),
                    *sk < 0 ? "host" : kind_name(*sk));
    return cudaSuccess;
}

/* When the queued copy runs, its device memory must still be there. */
static void recheck(const char *call, const char *what, const void *p, size_t n, bool on_device) {
    if (on_device && device_range_error(call, what, p, n))
        fatal("%s ran after its %s was freed (see above)", call, what);
}

/* A copy, queued on s. `blocking`: the cudaMemcpy forms, on the legacy
 * stream, which wait as the runtime's "API synchronization behavior" says:
 * to host memory, from pinned memory, host to host and with managed memory
 * until the copy is done; from pageable memory to the device until the
 * source has been staged (the copy itself lands later); device to device
 * not at all. The Async forms wait only host to host, and the
 * destination of a deferred copy to host memory reads as 0xff bytes until
 * the copy has run: the host must synchronise before it reads. */
static cudaError_t copies(const char *call, const std::vector<Piece> &pieces,
                          enum cudaMemcpyKind kind, cudaStream_t s, bool blocking) {
    int dk = -1, sk = -1;
    size_t total = 0;
    for (const Piece &p : pieces) {
        if (p.n == 0) continue;
        cudaError_t e = check_copy(call, p, kind, &dk, &sk);
        if (e) return e;
        total += p.n;
    }
    if (total == 0) return cudaSuccess;
    bool d_dev = dk >= 0 && device_side(dk), s_dev = sk >= 0 && device_side(sk);
    bool managed = dk == M_MANAGED || sk == M_MANAGED;
    bool pageable_src = sk < 0;
    if (blocking) s = nullptr;
    std::vector<Use> uses;
    for (const Piece &p : pieces) {
        uses.push_back(Use{p.dst, p.n});
        uses.push_back(Use{p.src, p.n});
    }
    std::shared_ptr<std::vector<unsigned char>> staged;
    bool wait = (blocking && (!d_dev || !s_dev || managed)) || (!d_dev && !s_dev);
    if (blocking && d_dev && !s_dev && pageable_src && !managed) {
        /* The runtime syncs the stream, stages the pageable source and returns. */
        sync_stream(s, call);
        staged = std::make_shared<std::vector<unsigned char>>();
        for (const Piece &p : pieces)
            staged->insert(staged->end(), (const unsigned char *)p.src, (const unsigned char *)p.src + p.n);
        wait = false;
    }
    if (!blocking && !d_dev && s_dev && deferred())
        for (const Piece &p : pieces)
            if (pending_use(p.dst, p.n).empty()) memset(p.dst, 0xff, p.n);
    static const char *dir[] = {"host to host", "host to device", "device to host",
                                "device to device", "by pointer kinds"};
    char what[160];
    snprintf(what, sizeof what, "%s of %zu bytes, %s", call, total, dir[kind]);
    enqueue(s, what, std::move(uses), [=] {
        size_t off = 0;
        for (const Piece &p : pieces) {
            if (p.n == 0) continue;
            recheck(call, "destination", p.dst, p.n, d_dev);
            const void *src = staged ? (const void *)(staged->data() + off) : p.src;
            if (!staged) recheck(call, "source", p.src, p.n, s_dev);
            memcpy(p.dst, src, p.n);   /* overlapping ranges are reported by AddressSanitizer */
            off += p.n;
        }
    });
    if (wait) sync_stream(s, call);
    return cudaSuccess;
}

static cudaError_t copy(const char *call, void *dst, const void *src, size_t n,
                        enum cudaMemcpyKind kind, cudaStream_t s, bool blocking) {
    return copies(call, std::vector<Piece>(1, Piece{dst, src, n}), kind, s, blocking);
}

static cudaError_t copy_2d(const char *call, void *dst, size_t dpitch, const void *src,
                           size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind,
                           cudaStream_t s, bool blocking) {
    if (width > dpitch || width > spitch)
        return fail(cudaErrorInvalidValue, "%s: width %zu exceeds a pitch (%zu, %zu)", call, width, dpitch, spitch);
    std::vector<Piece> rows;
    for (size_t r = 0; r < height; r++)
        rows.push_back(Piece{(char *)dst + r * dpitch, (const char *)src + r * spitch, width});
    return copies(call, rows, kind, s, blocking);
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
    return copy("cudaMemcpy", dst, src, n, kind, nullptr, true);
}
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                            cudaStream_t s) {
    if (!stream_valid(s)) return bad_stream("cudaMemcpyAsync", s);
    return copy("cudaMemcpyAsync", dst, src, n, kind, s, false);
}
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind) {
    return copy_2d("cudaMemcpy2D", dst, dpitch, src, spitch, width, height, kind, nullptr, true);
}
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                              size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t s) {
    if (!stream_valid(s)) return bad_stream("cudaMemcpy2DAsync", s);
    return copy_2d("cudaMemcpy2DAsync", dst, dpitch, src, spitch, width, height, kind, s, false);
}
cudaError_t cudaMemcpyPeer(void *dst, int, const void *src, int, size_t n) {
    return copy("cudaMemcpyPeer", dst, src, n, cudaMemcpyDeviceToDevice, nullptr, true);
}
cudaError_t cudaMemcpyPeerAsync(void *dst, int, const void *src, int, size_t n, cudaStream_t s) {
    if (!stream_valid(s)) return bad_stream("cudaMemcpyPeerAsync", s);
    return copy("cudaMemcpyPeerAsync", dst, src, n, cudaMemcpyDeviceToDevice, s, false);
}

/* cudaMemset is as asynchronous as cudaMemsetAsync (on the legacy stream),
 * except on managed memory. */
static cudaError_t set(const char *call, void *p, int value, size_t n, cudaStream_t s) {
    if (n == 0) return cudaSuccess;
    cudaError_t e;
    int k = classify(p, n, call, "target", &e);
    if (e) return e;
    if (k < 0 || !device_side(k))
        return fail(cudaErrorInvalidValue, "%s(%p, %zu bytes): not device memory", call, p, n);
    char what[96];
    snprintf(what, sizeof what, "%s of %zu bytes", call, n);
    enqueue(s, what, std::vector<Use>(1, Use{p, n}), [=] {
        recheck(call, "target", p, n, true);
        memset(p, value, n);
    });
    if (k == M_MANAGED && strcmp(call, "cudaMemset") == 0) sync_stream(s, call);
    return cudaSuccess;
}
cudaError_t cudaMemset(void *p, int value, size_t n) { return set("cudaMemset", p, value, n, nullptr); }
cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s) {
    if (!stream_valid(s)) return bad_stream("cudaMemsetAsync", s);
    return set("cudaMemsetAsync", p, value, n, s);
}

cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value) {
    if (attr == cudaFuncAttributeMaxDynamicSharedMemorySize) {
        if (value < 0 || value > 227 * 1024)
            return fail(cudaErrorInvalidValue,
                        "cudaFuncSetAttribute: %d bytes of dynamic shared memory (at most %d)",
                        value, 227 * 1024);
        std::lock_guard<std::mutex> lock(func_mu);
        func_max_dyn_smem[func] = value;
    }
    return cudaSuccess;
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, const void *, int block_size,
                                                          size_t) {
    if (!blocks || block_size <= 0 || block_size > 1024)
        return fail(cudaErrorInvalidValue, "cudaOccupancyMaxActiveBlocksPerMultiprocessor: block size %d", block_size);
    *blocks = 2048 / block_size < 32 ? 2048 / block_size : 32;
    return cudaSuccess;
}

}  // extern "C"
