/* cuda_bf16.h of the CUDA emulator: __nv_bfloat16 and __nv_bfloat162.
 *
 * Conversions round as the hardware's cvt.rn.bf16.f32 does: to nearest, ties
 * to even, subnormals kept, overflow to infinity, and every NaN becomes the
 * canonical 0x7fff. Arithmetic on bf16 values computes in fp32 and rounds
 * the result once (a product of two bf16 values is exact in fp32). */
#ifndef CUDA_EMU_CUDA_BF16_H
#define CUDA_EMU_CUDA_BF16_H

#include "cuda_runtime.h"

struct __nv_bfloat16_raw { unsigned short x; };
struct __nv_bfloat162_raw { unsigned short x, y; };

namespace cuda_emu {
static inline unsigned short f32_to_bf16_rn(float f) {
    unsigned int u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;      /* canonical NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                          /* nearest, ties to even */
    return (unsigned short)(u >> 16);
}
static inline unsigned short f32_to_bf16_dir(float f, int mode) { /* 0 rz, 1 rd, 2 ru */
    unsigned int u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fffu;
    unsigned int rest = u & 0xffffu, hi = u >> 16, neg = u >> 31;
    if (rest && ((mode == 1 && neg) || (mode == 2 && !neg))) hi++;   /* away from zero */
    return (unsigned short)hi;
}
static inline float bf16_to_f32(unsigned short h) {
    unsigned int u = (unsigned int)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static inline unsigned short f64_to_bf16_rn(double d) {
    /* One rounding from double: round to an fp32 with the low bits decided
     * by a sticky bit, then to bf16 (round-to-odd makes the double rounding
     * exact). */
    if (d != d) return 0x7fffu;
    float f = (float)d;
    if (f == f && (double)f != d && fabsf(f) != INFINITY) {
        unsigned int u;
        memcpy(&u, &f, 4);
        if (!(u & 1u)) {
            /* f was rounded: move to the odd neighbour on d's side */
            float g = nextafterf(f, (double)f < d ? INFINITY : -INFINITY);
            unsigned int v;
            memcpy(&v, &g, 4);
            if (v & 1u) f = g;
        }
    }
    return f32_to_bf16_rn(f);
}
}  // namespace cuda_emu

struct __nv_bfloat16 {
    unsigned short __x;
    __nv_bfloat16() = default;
    constexpr __nv_bfloat16(const __nv_bfloat16_raw &r) : __x(r.x) {}
    __nv_bfloat16(float f) : __x(cuda_emu::f32_to_bf16_rn(f)) {}
    __nv_bfloat16(double d) : __x(cuda_emu::f64_to_bf16_rn(d)) {}
    __nv_bfloat16(int i) : __x(cuda_emu::f64_to_bf16_rn((double)i)) {}
    __nv_bfloat16(unsigned int i) : __x(cuda_emu::f64_to_bf16_rn((double)i)) {}
    __nv_bfloat16(long long i) : __x(cuda_emu::f64_to_bf16_rn((double)i)) {}
    __nv_bfloat16(unsigned long long i) : __x(cuda_emu::f64_to_bf16_rn((double)i)) {}
    __nv_bfloat16(short i) : __x(cuda_emu::f32_to_bf16_rn((float)i)) {}
    __nv_bfloat16(unsigned short i) : __x(cuda_emu::f32_to_bf16_rn((float)i)) {}
    __nv_bfloat16 &operator=(const __nv_bfloat16_raw &r) { __x = r.x; return *this; }
    __nv_bfloat16 &operator=(float f) { __x = cuda_emu::f32_to_bf16_rn(f); return *this; }
    __nv_bfloat16 &operator=(double d) { __x = cuda_emu::f64_to_bf16_rn(d); return *this; }
    operator __nv_bfloat16_raw() const { __nv_bfloat16_raw r; r.x = __x; return r; }
    operator float() const { return cuda_emu::bf16_to_f32(__x); }
};
typedef __nv_bfloat16 nv_bfloat16;

struct alignas(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
    __nv_bfloat162() = default;
    __nv_bfloat162(const __nv_bfloat16 &a, const __nv_bfloat16 &b) : x(a), y(b) {}
    __nv_bfloat162(const __nv_bfloat162_raw &r) { x.__x = r.x; y.__x = r.y; }
    operator __nv_bfloat162_raw() const { __nv_bfloat162_raw r; r.x = x.__x; r.y = y.__x; return r; }
};
typedef __nv_bfloat162 nv_bfloat162;

/* ---- conversions ---------------------------------------------------------------------- */
static inline __nv_bfloat16 cuda_emu_bf16_bits(unsigned short b) { __nv_bfloat16_raw r; r.x = b; return __nv_bfloat16(r); }
static inline __nv_bfloat16 __float2bfloat16(float f) { return cuda_emu_bf16_bits(cuda_emu::f32_to_bf16_rn(f)); }
static inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __float2bfloat16(f); }
static inline __nv_bfloat16 __float2bfloat16_rz(float f) { return cuda_emu_bf16_bits(cuda_emu::f32_to_bf16_dir(f, 0)); }
static inline __nv_bfloat16 __float2bfloat16_rd(float f) { return cuda_emu_bf16_bits(cuda_emu::f32_to_bf16_dir(f, 1)); }
static inline __nv_bfloat16 __float2bfloat16_ru(float f) { return cuda_emu_bf16_bits(cuda_emu::f32_to_bf16_dir(f, 2)); }
static inline __nv_bfloat16 __double2bfloat16(double d) { return cuda_emu_bf16_bits(cuda_emu::f64_to_bf16_rn(d)); }
static inline float __bfloat162float(__nv_bfloat16 h) { return cuda_emu::bf16_to_f32(h.__x); }
static inline __nv_bfloat16 __int2bfloat16_rn(int i) { return __double2bfloat16((double)i); }
static inline int __bfloat162int_rn(__nv_bfloat16 h) { return (int)nearbyintf(__bfloat162float(h)); }
static inline int __bfloat162int_rz(__nv_bfloat16 h) { return (int)__bfloat162float(h); }
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.__x; }
static inline short __bfloat16_as_short(__nv_bfloat16 h) { return (short)h.__x; }
static inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) { return cuda_emu_bf16_bits(u); }
static inline __nv_bfloat16 __short_as_bfloat16(short s) { return cuda_emu_bf16_bits((unsigned short)s); }

static inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
    return __nv_bfloat162(__float2bfloat16(a), __float2bfloat16(b));
}
static inline __nv_bfloat162 __float2bfloat162_rn(float a) { return __floats2bfloat162_rn(a, a); }
static inline __nv_bfloat162 __float22bfloat162_rn(float2 f) { return __floats2bfloat162_rn(f.x, f.y); }
static inline float2 __bfloat1622float2(__nv_bfloat162 h) {
    return make_float2(__bfloat162float(h.x), __bfloat162float(h.y));
}
static inline __nv_bfloat162 __halves2bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) { return __nv_bfloat162(a, b); }
static inline __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16 a) { return __nv_bfloat162(a, a); }
static inline __nv_bfloat16 __low2bfloat16(__nv_bfloat162 h) { return h.x; }
static inline __nv_bfloat16 __high2bfloat16(__nv_bfloat162 h) { return h.y; }
static inline float __low2float(__nv_bfloat162 h) { return __bfloat162float(h.x); }
static inline float __high2float(__nv_bfloat162 h) { return __bfloat162float(h.y); }
static inline __nv_bfloat162 __lows2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.x, b.x); }
static inline __nv_bfloat162 __highs2bfloat162(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(a.y, b.y); }

/* ---- arithmetic: fp32, one rounding ------------------------------------------------------ */
#define CUDA_EMU_BF(a) __bfloat162float(a)
static inline __nv_bfloat16 __hadd(__nv_bfloat16 a, __nv_bfloat16 b) { return __float2bfloat16(CUDA_EMU_BF(a) + CUDA_EMU_BF(b)); }
static inline __nv_bfloat16 __hsub(__nv_bfloat16 a, __nv_bfloat16 b) { return __float2bfloat16(CUDA_EMU_BF(a) - CUDA_EMU_BF(b)); }
static inline __nv_bfloat16 __hmul(__nv_bfloat16 a, __nv_bfloat16 b) { return __float2bfloat16(CUDA_EMU_BF(a) * CUDA_EMU_BF(b)); }
static inline __nv_bfloat16 __hdiv(__nv_bfloat16 a, __nv_bfloat16 b) { return __float2bfloat16(CUDA_EMU_BF(a) / CUDA_EMU_BF(b)); }
static inline __nv_bfloat16 __hfma(__nv_bfloat16 a, __nv_bfloat16 b, __nv_bfloat16 c) {
    return __double2bfloat16((double)CUDA_EMU_BF(a) * CUDA_EMU_BF(b) + CUDA_EMU_BF(c));
}
static inline __nv_bfloat16 __hneg(__nv_bfloat16 a) { return cuda_emu_bf16_bits((unsigned short)(a.__x ^ 0x8000u)); }
static inline __nv_bfloat16 __habs(__nv_bfloat16 a) { return cuda_emu_bf16_bits((unsigned short)(a.__x & 0x7fffu)); }
static inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) { return __float2bfloat16(fmaxf(CUDA_EMU_BF(a), CUDA_EMU_BF(b))); }
static inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) { return __float2bfloat16(fminf(CUDA_EMU_BF(a), CUDA_EMU_BF(b))); }
static inline bool __heq(__nv_bfloat16 a, __nv_bfloat16 b) { return CUDA_EMU_BF(a) == CUDA_EMU_BF(b); }
static inline bool __hne(__nv_bfloat16 a, __nv_bfloat16 b) { return CUDA_EMU_BF(a) != CUDA_EMU_BF(b) && !(CUDA_EMU_BF(a) != CUDA_EMU_BF(a)) && !(CUDA_EMU_BF(b) != CUDA_EMU_BF(b)); }
static inline bool __hneu(__nv_bfloat16 a, __nv_bfloat16 b) { return !(CUDA_EMU_BF(a) == CUDA_EMU_BF(b)); }
static inline bool __hlt(__nv_bfloat16 a, __nv_bfloat16 b) { return CUDA_EMU_BF(a) < CUDA_EMU_BF(b); }
static inline bool __hle(__nv_bfloat16 a, __nv_bfloat16 b) { return CUDA_EMU_BF(a) <= CUDA_EMU_BF(b); }
static inline bool __hgt(__nv_bfloat16 a, __nv_bfloat16 b) { return CUDA_EMU_BF(a) > CUDA_EMU_BF(b); }
static inline bool __hge(__nv_bfloat16 a, __nv_bfloat16 b) { return CUDA_EMU_BF(a) >= CUDA_EMU_BF(b); }
static inline bool __hisnan(__nv_bfloat16 a) { return CUDA_EMU_BF(a) != CUDA_EMU_BF(a); }
static inline int __hisinf(__nv_bfloat16 a) { return a.__x == 0x7f80u ? 1 : a.__x == 0xff80u ? -1 : 0; }
static inline __nv_bfloat16 hexp(__nv_bfloat16 a) { return __float2bfloat16(expf(CUDA_EMU_BF(a))); }
static inline __nv_bfloat16 hsqrt(__nv_bfloat16 a) { return __float2bfloat16(sqrtf(CUDA_EMU_BF(a))); }
static inline __nv_bfloat16 hrsqrt(__nv_bfloat16 a) { return __float2bfloat16(1.0f / sqrtf(CUDA_EMU_BF(a))); }

static inline __nv_bfloat162 __hadd2(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(__hadd(a.x, b.x), __hadd(a.y, b.y)); }
static inline __nv_bfloat162 __hsub2(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(__hsub(a.x, b.x), __hsub(a.y, b.y)); }
static inline __nv_bfloat162 __hmul2(__nv_bfloat162 a, __nv_bfloat162 b) { return __nv_bfloat162(__hmul(a.x, b.x), __hmul(a.y, b.y)); }
static inline __nv_bfloat162 __hfma2(__nv_bfloat162 a, __nv_bfloat162 b, __nv_bfloat162 c) {
    return __nv_bfloat162(__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y));
}

static inline __nv_bfloat16 operator+(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hadd(a, b); }
static inline __nv_bfloat16 operator-(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hsub(a, b); }
static inline __nv_bfloat16 operator*(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hmul(a, b); }
static inline __nv_bfloat16 operator/(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hdiv(a, b); }
static inline __nv_bfloat16 &operator+=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { return a = __hadd(a, b); }
static inline __nv_bfloat16 &operator-=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { return a = __hsub(a, b); }
static inline __nv_bfloat16 &operator*=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { return a = __hmul(a, b); }
static inline __nv_bfloat16 &operator/=(__nv_bfloat16 &a, const __nv_bfloat16 &b) { return a = __hdiv(a, b); }
static inline __nv_bfloat16 operator-(const __nv_bfloat16 &a) { return __hneg(a); }
static inline __nv_bfloat16 operator+(const __nv_bfloat16 &a) { return a; }
static inline bool operator==(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __heq(a, b); }
static inline bool operator!=(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hneu(a, b); }
static inline bool operator<(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hlt(a, b); }
static inline bool operator<=(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hle(a, b); }
static inline bool operator>(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hgt(a, b); }
static inline bool operator>=(const __nv_bfloat16 &a, const __nv_bfloat16 &b) { return __hge(a, b); }
#undef CUDA_EMU_BF

/* atomicAdd on bf16 (sm_80+): one rounding of the fp32 sum. */
static inline __nv_bfloat16 atomicAdd(__nv_bfloat16 *p, __nv_bfloat16 v) {
    __nv_bfloat16 old = *p;
    *p = __hadd(old, v);
    return old;
}

#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7F80U)
#define CUDART_NAN_BF16 __ushort_as_bfloat16((unsigned short)0x7FFFU)
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000U)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3F80U)
#define CUDART_MAX_NORMAL_BF16 __ushort_as_bfloat16((unsigned short)0x7F7FU)

#endif
