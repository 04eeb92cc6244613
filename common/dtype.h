/* dtype.h: the element types the suite moves and computes with.
 *
 * bf16 is the top half of an IEEE fp32: 1 sign, 8 exponent, 7 mantissa bits.
 * The CPU backend stores bf16 for real (uint16_t) and computes in fp32, so
 * mixed-precision logic is exercised without a GPU. Conversion rounds to
 * nearest, ties to even, exactly as __float2bfloat16 does on NVIDIA GPUs. */
#ifndef DTYPE_H
#define DTYPE_H

#include <stdint.h>
#include <string.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { DT_F32 = 0, DT_BF16 = 1 } dtype_t;

static inline size_t dtype_size(dtype_t t) { return t == DT_BF16 ? 2 : 4; }
static inline const char *dtype_name(dtype_t t) { return t == DT_BF16 ? "bf16" : "fp32"; }
/* "bf16" -> DT_BF16, anything else (the flags allow only "fp32") -> DT_F32. */
static inline dtype_t dtype_parse(const char *s) { return strcmp(s, "bf16") == 0 ? DT_BF16 : DT_F32; }

typedef uint16_t bf16_t;

static inline float bf16_to_f32(bf16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline bf16_t f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu))
        return (bf16_t)((u >> 16) | 0x0040u);          /* NaN stays a quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                   /* round to nearest even */
    return (bf16_t)(u >> 16);
}

/* Element i of a buffer of type t, as fp32; and the store back. */
static inline float dtype_get(const void *p, dtype_t t, size_t i) {
    return t == DT_BF16 ? bf16_to_f32(((const bf16_t *)p)[i]) : ((const float *)p)[i];
}
static inline void dtype_set(void *p, dtype_t t, size_t i, float v) {
    if (t == DT_BF16) ((bf16_t *)p)[i] = f32_to_bf16(v);
    else ((float *)p)[i] = v;
}

#ifdef __cplusplus
}
#endif
#endif
