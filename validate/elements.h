/* Typed element access (validator internals): one codec per datatype of
 * the table in collkit.h, chosen by its size and kind, so that the loops
 * over large buffers run on the real type instead of a switch per element. */
#ifndef CK_VALIDATE_ELEMENTS_H
#define CK_VALIDATE_ELEMENTS_H

#include "pattern.h"

typedef struct {
    /* buf[i] = generator element j0 + i, for i < n */
    void (*fill)(void *buf, size_t n, const ckv_gen *g, size_t j0);
    /* first i < n where buf[i] != generator element j0 + i, or n */
    size_t (*diff_gen)(const void *buf, size_t n, const ckv_gen *g, size_t j0);
    /* first i < n where buf[i] != want[i], or n */
    size_t (*diff_values)(const void *buf, size_t n, const int64_t *want);
    int64_t (*get)(const void *buf, size_t i); /* exact for every value the validator writes */
    void (*put)(void *buf, size_t i, int64_t v);
    void (*format)(const void *buf, size_t i, char *out, size_t len);
} ckv_codec;

/* NULL for a datatype the validator cannot hold. */
const ckv_codec *ckv_codec_of(const ck_datatype_desc *dt);

#endif
