/* cuda_emu_device.h: device-side functions of the CUDA emulator, included by
 * cuda_runtime.h: barriers, warp shuffles and votes, atomics, fast-math
 * intrinsics, bit tricks and cache-hinted loads.
 *
 * Barriers and warp operations are macros so that a failure names the
 * source line. Atomics are plain read-modify-writes: threads switch only at
 * barriers and warp operations, never inside an atomic. Math intrinsics map
 * to the host's libm, which is at least as accurate as the GPU's (results
 * agree with a GPU to rounding, not bit for bit). */
#ifndef CUDA_EMU_DEVICE_H
#define CUDA_EMU_DEVICE_H

/* ---- barriers and warp operations ---------------------------------------------- */
#define __syncthreads() ::cuda_emu::syncthreads(__FILE__, __LINE__)
#define __syncthreads_count(p) ::cuda_emu::syncthreads_reduce(0, (p), __FILE__, __LINE__)
#define __syncthreads_and(p) ::cuda_emu::syncthreads_reduce(1, (p), __FILE__, __LINE__)
#define __syncthreads_or(p) ::cuda_emu::syncthreads_reduce(2, (p), __FILE__, __LINE__)
#define __syncwarp(...) \
    ((void)::cuda_emu::vote(__FILE__, __LINE__, ::cuda_emu::W_SYNCWARP, ::cuda_emu::mask_or_full(__VA_ARGS__), 0))
#define __activemask() ::cuda_emu::activemask()

#define __shfl_sync(mask, var, ...) \
    ::cuda_emu::shfl(__FILE__, __LINE__, ::cuda_emu::W_SHFL_IDX, (mask), (var), __VA_ARGS__)
#define __shfl_up_sync(mask, var, ...) \
    ::cuda_emu::shfl(__FILE__, __LINE__, ::cuda_emu::W_SHFL_UP, (mask), (var), __VA_ARGS__)
#define __shfl_down_sync(mask, var, ...) \
    ::cuda_emu::shfl(__FILE__, __LINE__, ::cuda_emu::W_SHFL_DOWN, (mask), (var), __VA_ARGS__)
#define __shfl_xor_sync(mask, var, ...) \
    ::cuda_emu::shfl(__FILE__, __LINE__, ::cuda_emu::W_SHFL_XOR, (mask), (var), __VA_ARGS__)
#define __ballot_sync(mask, pred) \
    ((unsigned)::cuda_emu::vote(__FILE__, __LINE__, ::cuda_emu::W_BALLOT, (mask), (pred) ? 1 : 0))
#define __any_sync(mask, pred) \
    ((int)::cuda_emu::vote(__FILE__, __LINE__, ::cuda_emu::W_ANY, (mask), (pred) ? 1 : 0))
#define __all_sync(mask, pred) \
    ((int)::cuda_emu::vote(__FILE__, __LINE__, ::cuda_emu::W_ALL, (mask), (pred) ? 1 : 0))
#define __match_any_sync(mask, v) ::cuda_emu::match_any(__FILE__, __LINE__, (mask), (v))
#define __reduce_add_sync(mask, v) ::cuda_emu::reduce_sync(__FILE__, __LINE__, ::cuda_emu::W_REDUCE_ADD, (mask), (v))
#define __reduce_min_sync(mask, v) ::cuda_emu::reduce_sync(__FILE__, __LINE__, ::cuda_emu::W_REDUCE_MIN, (mask), (v))
#define __reduce_max_sync(mask, v) ::cuda_emu::reduce_sync(__FILE__, __LINE__, ::cuda_emu::W_REDUCE_MAX, (mask), (v))
#define __reduce_and_sync(mask, v) ::cuda_emu::reduce_sync(__FILE__, __LINE__, ::cuda_emu::W_REDUCE_AND, (mask), (v))
#define __reduce_or_sync(mask, v) ::cuda_emu::reduce_sync(__FILE__, __LINE__, ::cuda_emu::W_REDUCE_OR, (mask), (v))
#define __reduce_xor_sync(mask, v) ::cuda_emu::reduce_sync(__FILE__, __LINE__, ::cuda_emu::W_REDUCE_XOR, (mask), (v))

/* Memory fences: every access is already visible to every thread. */
static inline void __threadfence(void) { __asm__ __volatile__("" ::: "memory"); }
static inline void __threadfence_block(void) { __asm__ __volatile__("" ::: "memory"); }
static inline void __threadfence_system(void) { __asm__ __volatile__("" ::: "memory"); }

namespace cuda_emu {
static inline unsigned mask_or_full() { return 0xffffffffu; }
static inline unsigned mask_or_full(unsigned m) { return m; }
template <class T> static inline T reduce_sync(const char *file, int line, int kind, unsigned mask, T v) {
    static_assert(std::is_integral<T>::value && sizeof(T) == 4, "__reduce_*_sync: int or unsigned");
    unsigned long long u = (unsigned long long)(unsigned)v;
    return (T)(unsigned)vote(file, line, kind, mask, u, std::is_signed<T>::value);
}
}  // namespace cuda_emu

/* ---- atomics --------------------------------------------------------------------- */
#define CUDA_EMU_ATOMIC(name, T, expr) \
    static inline T name(T *p, T v) { T old = *p; *p = (expr); return old; }
CUDA_EMU_ATOMIC(atomicAdd, int, old + v)
CUDA_EMU_ATOMIC(atomicAdd, unsigned int, old + v)
CUDA_EMU_ATOMIC(atomicAdd, unsigned long long, old + v)
CUDA_EMU_ATOMIC(atomicAdd, float, old + v)
CUDA_EMU_ATOMIC(atomicAdd, double, old + v)
CUDA_EMU_ATOMIC(atomicSub, int, old - v)
CUDA_EMU_ATOMIC(atomicSub, unsigned int, old - v)
CUDA_EMU_ATOMIC(atomicExch, int, v)
CUDA_EMU_ATOMIC(atomicExch, unsigned int, v)
CUDA_EMU_ATOMIC(atomicExch, unsigned long long, v)
CUDA_EMU_ATOMIC(atomicExch, float, v)
CUDA_EMU_ATOMIC(atomicMax, int, old > v ? old : v)
CUDA_EMU_ATOMIC(atomicMax, unsigned int, old > v ? old : v)
CUDA_EMU_ATOMIC(atomicMax, long long, old > v ? old : v)
CUDA_EMU_ATOMIC(atomicMax, unsigned long long, old > v ? old : v)
CUDA_EMU_ATOMIC(atomicMin, int, old < v ? old : v)
CUDA_EMU_ATOMIC(atomicMin, unsigned int, old < v ? old : v)
CUDA_EMU_ATOMIC(atomicMin, long long, old < v ? old : v)
CUDA_EMU_ATOMIC(atomicMin, unsigned long long, old < v ? old : v)
CUDA_EMU_ATOMIC(atomicAnd, int, old & v)
CUDA_EMU_ATOMIC(atomicAnd, unsigned int, old & v)
CUDA_EMU_ATOMIC(atomicAnd, unsigned long long, old & v)
CUDA_EMU_ATOMIC(atomicOr, int, old | v)
CUDA_EMU_ATOMIC(atomicOr, unsigned int, old | v)
CUDA_EMU_ATOMIC(atomicOr, unsigned long long, old | v)
CUDA_EMU_ATOMIC(atomicXor, int, old ^ v)
CUDA_EMU_ATOMIC(atomicXor, unsigned int, old ^ v)
CUDA_EMU_ATOMIC(atomicXor, unsigned long long, old ^ v)
CUDA_EMU_ATOMIC(atomicInc, unsigned int, old >= v ? 0u : old + 1u)
CUDA_EMU_ATOMIC(atomicDec, unsigned int, (old == 0u || old > v) ? v : old - 1u)
#undef CUDA_EMU_ATOMIC
#define CUDA_EMU_CAS(T) \
    static inline T atomicCAS(T *p, T compare, T v) { T old = *p; if (old == compare) *p = v; return old; }
CUDA_EMU_CAS(int)
CUDA_EMU_CAS(unsigned int)
CUDA_EMU_CAS(unsigned long long)
CUDA_EMU_CAS(unsigned short)
#undef CUDA_EMU_CAS
/* Block- and system-scope variants behave the same here. */
#define atomicAdd_block atomicAdd
#define atomicAdd_system atomicAdd
#define atomicMax_block atomicMax
#define atomicMin_block atomicMin
#define atomicCAS_block atomicCAS
#define atomicExch_block atomicExch

/* ---- math ------------------------------------------------------------------------- */
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float rcbrtf(float x) { return 1.0f / cbrtf(x); }
/* glibc's <math.h> already declares these names (its internal aliases), so
 * they are macros here. */
#define __expf(x) expf(x)
#define __exp10f(x) powf(10.0f, (x))
#define __logf(x) logf(x)
#define __log2f(x) log2f(x)
#define __log10f(x) log10f(x)
#define __sinf(x) sinf(x)
#define __cosf(x) cosf(x)
#define __tanf(x) tanf(x)
#define __sincosf(x, s, c) sincosf((x), (s), (c))
#define __powf(x, y) powf((x), (y))
static inline float __fdividef(float a, float b) { return a / b; }
static inline float fdividef(float a, float b) { return a / b; }
static inline float __saturatef(float x) { return x != x ? 0.0f : (x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x)); }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return sqrtf(x); }
static inline float __frsqrt_rn(float x) { return 1.0f / sqrtf(x); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline double __dadd_rn(double a, double b) { return a + b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __fma_rn(double a, double b, double c) { return fma(a, b, c); }
static inline float __int2float_rn(int i) { return (float)i; }
static inline float __uint2float_rn(unsigned int i) { return (float)i; }
static inline int __float2int_rn(float x) { return (int)nearbyintf(x); }
static inline int __float2int_rz(float x) { return (int)x; }
static inline int __float2int_rd(float x) { return (int)floorf(x); }
static inline int __float2int_ru(float x) { return (int)ceilf(x); }
static inline unsigned int __float2uint_rn(float x) { return (unsigned int)nearbyintf(x); }
static inline unsigned int __float2uint_rz(float x) { return (unsigned int)x; }
static inline long long __float2ll_rn(float x) { return (long long)nearbyintf(x); }
static inline float __double2float_rn(double x) { return (float)x; }
static inline int __double2int_rn(double x) { return (int)nearbyint(x); }
static inline int __float_as_int(float x) { int i; memcpy(&i, &x, 4); return i; }
static inline unsigned int __float_as_uint(float x) { unsigned int i; memcpy(&i, &x, 4); return i; }
static inline float __int_as_float(int i) { float x; memcpy(&x, &i, 4); return x; }
static inline float __uint_as_float(unsigned int i) { float x; memcpy(&x, &i, 4); return x; }
static inline long long __double_as_longlong(double x) { long long i; memcpy(&i, &x, 8); return i; }
static inline double __longlong_as_double(long long i) { double x; memcpy(&x, &i, 8); return x; }

/* Integer min/max as CUDA's math headers declare them. */
static inline int min(int a, int b) { return a < b ? a : b; }
static inline int max(int a, int b) { return a > b ? a : b; }
static inline unsigned int min(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
static inline unsigned int min(int a, unsigned int b) { return min((unsigned int)a, b); }
static inline unsigned int min(unsigned int a, int b) { return min(a, (unsigned int)b); }
static inline unsigned int max(int a, unsigned int b) { return max((unsigned int)a, b); }
static inline unsigned int max(unsigned int a, int b) { return max(a, (unsigned int)b); }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
static inline long min(long a, long b) { return a < b ? a : b; }
static inline long max(long a, long b) { return a > b ? a : b; }
static inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
static inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
static inline float min(float a, float b) { return fminf(a, b); }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline double min(double a, double b) { return fmin(a, b); }
static inline double max(double a, double b) { return fmax(a, b); }
static inline unsigned int umin(unsigned int a, unsigned int b) { return a < b ? a : b; }
static inline unsigned int umax(unsigned int a, unsigned int b) { return a > b ? a : b; }

/* ---- bits --------------------------------------------------------------------------- */
static inline int __popc(unsigned int x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
static inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned int __brev(unsigned int x) {
    unsigned int r = 0;
    for (int i = 0; i < 32; i++) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
static inline int __mul24(int a, int b) { return a * b; }
static inline unsigned int __umul24(unsigned int a, unsigned int b) { return a * b; }
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned int __umulhi(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a * b) >> 32);
}

/* ---- cache-hinted loads and stores ------------------------------------------------- */
template <class T> static inline T __ldg(const T *p) { return *p; }
template <class T> static inline T __ldca(const T *p) { return *p; }
template <class T> static inline T __ldcg(const T *p) { return *p; }
template <class T> static inline T __ldcs(const T *p) { return *p; }
template <class T> static inline T __ldlu(const T *p) { return *p; }
template <class T> static inline T __ldcv(const T *p) { return *p; }
template <class T> static inline void __stwb(T *p, T v) { *p = v; }
template <class T> static inline void __stcg(T *p, T v) { *p = v; }
template <class T> static inline void __stcs(T *p, T v) { *p = v; }
template <class T> static inline void __stwt(T *p, T v) { *p = v; }

/* clock(): a counter that only goes up. */
static inline long long clock64(void) { return (long long)__builtin_ia32_rdtsc(); }

#endif
