/* The codecs: the same loops for each C type, written once as a macro. */
#include "elements.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* Equality is exact (pattern.c): integers compare as int64, floating-point
 * values as double. */
#define CODEC(NAME, T, WIDE, FMT)                                                        \
    static void NAME##_fill(void *buf, size_t n, const ckv_gen *g, size_t j0)            \
    {                                                                                    \
        T *b = buf;                                                                      \
        for (size_t i = 0; i < n; i++) b[i] = (T)ckv_gen_value(g, j0 + i);               \
    }                                                                                    \
    static size_t NAME##_diff_gen(const void *buf, size_t n, const ckv_gen *g, size_t j0) \
    {                                                                                    \
        const T *b = buf;                                                                \
        for (size_t i = 0; i < n; i++)                                                   \
            if ((WIDE)b[i] != (WIDE)ckv_gen_value(g, j0 + i)) return i;                  \
        return n;                                                                        \
    }                                                                                    \
    static size_t NAME##_diff_values(const void *buf, size_t n, const int64_t *want)     \
    {                                                                                    \
        const T *b = buf;                                                                \
        for (size_t i = 0; i < n; i++)                                                   \
            if ((WIDE)b[i] != (WIDE)want[i]) return i;                                   \
        return n;                                                                        \
    }                                                                                    \
    static void NAME##_put(void *buf, size_t i, int64_t v) { ((T *)buf)[i] = (T)v; }     \
    static void NAME##_format(const void *buf, size_t i, char *out, size_t len)          \
    {                                                                                    \
        snprintf(out, len, FMT, (WIDE)((const T *)buf)[i]);                              \
    }

CODEC(i8, int8_t, int64_t, "%" PRId64)
CODEC(i32, int32_t, int64_t, "%" PRId64)
CODEC(i64, int64_t, int64_t, "%" PRId64)
CODEC(f32, float, double, "%.9g")
CODEC(f64, double, double, "%.17g")

static int64_t i8_get(const void *buf, size_t i) { return ((const int8_t *)buf)[i]; }
static int64_t i32_get(const void *buf, size_t i) { return ((const int32_t *)buf)[i]; }
static int64_t i64_get(const void *buf, size_t i) { return ((const int64_t *)buf)[i]; }
static int64_t f32_get(const void *buf, size_t i) { return llroundf(((const float *)buf)[i]); }
static int64_t f64_get(const void *buf, size_t i) { return llround(((const double *)buf)[i]); }

#define ENTRY(NAME) \
    {NAME##_fill, NAME##_diff_gen, NAME##_diff_values, NAME##_get, NAME##_put, NAME##_format}

static const ckv_codec codecs[] = {ENTRY(i8), ENTRY(i32), ENTRY(i64), ENTRY(f32), ENTRY(f64)};

const ckv_codec *ckv_codec_of(const ck_datatype_desc *dt)
{
    if (dt == NULL) return NULL;
    if (dt->is_float) {
        if (dt->size == sizeof(float)) return &codecs[3];
        if (dt->size == sizeof(double)) return &codecs[4];
        return NULL;
    }
    if (dt->size == 1) return &codecs[0];
    if (dt->size == 4) return &codecs[1];
    if (dt->size == 8) return &codecs[2];
    return NULL;
}
