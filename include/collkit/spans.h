/*
 * Phase and step spans: where a collective spends its time.
 *
 *     CK_SPAN_BEGIN("reduce_scatter");          a phase
 *     for (int s = 0; s < steps; s++) {
 *         CK_SPAN_BEGIN_STEP("step", s);        one step of it
 *         ... ck_sendrecv(...)                 spanned "comm" by libcollkit itself
 *         ... ck_reduce_local(...)             spanned "reduce" by libcollkit itself
 *         CK_SPAN_END("step");
 *     }
 *     CK_SPAN_END("reduce_scatter");
 *
 * A name is a string literal. Its category is the part before the first '.':
 * "comm", "reduce" and "copy" (data movement and staging) are the categories
 * a time breakdown adds up; any other name ("reduce_scatter", "step",
 * "allgather.fold") is a phase, a container for them. Spans nest (innermost
 * END closes innermost BEGIN, and must name it); a span without a step index
 * inherits the step of the innermost enclosing span that has one, so the
 * "comm" spans inside step 3 are counted as step 3.
 *
 * Unless the translation unit is compiled with CK_INSTRUMENT defined, every
 * macro expands to nothing: the uninstrumented libcollkit is the same object
 * code as before spans existed. The instrumented variant (CMake option
 * COLLKIT_INSTRUMENT: libcollkit_instr, collkit-bench-instr) records, per
 * rank, into a buffer allocated once by ck_spans_init: no allocation, I/O or
 * MPI call happens in BEGIN or END, and a full buffer counts the records it
 * dropped instead of failing.
 *
 * The step expression is evaluated only while recording: keep it free of
 * side effects.
 *
 * User algorithms may use the same macros; the harness functions below are
 * declared only in instrumented builds.
 */
#ifndef COLLKIT_SPANS_H
#define COLLKIT_SPANS_H

#ifdef CK_INSTRUMENT

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { CK_CAT_PHASE = 0, CK_CAT_COMM, CK_CAT_REDUCE, CK_CAT_COPY } ck_span_category;

/* One closed spanned region on this rank. Times are nanoseconds of a
 * monotonic clock (CLOCK_MONOTONIC, read through the TSC on x86-64; the
 * simulated clock under SimGrid),
 * comparable within one rank only. */
typedef struct {
    int32_t span;     /* ck_span_intern id */
    int32_t step;    /* own or inherited step index; -1 when none */
    int32_t depth;   /* 0 for an outermost span */
    int32_t nested;  /* 1 when an enclosing open span is comm, reduce or copy:
                        a breakdown adds only the outermost category time */
    int64_t start_ns, end_ns;
} ck_span_record;

/* Fixed sizes of the recorder: open spans at once (deeper BEGINs are not
 * recorded and count as unbalanced), and distinct names (further names all
 * share the last id, named "(too many span names)", a phase). */
#define CK_SPAN_MAX_DEPTH 32
#define CK_SPAN_MAX_NAMES 256

/* Interning: the macros cache one id per call site, so the name is
 * compared (strcmp against the table) only at a site's first use; the name
 * is kept by pointer, hence string literals. */
int ck_span_intern(const char *name);
void ck_span_begin(int span, int step);
void ck_span_end(int span);
/* Nonzero while recording: the macros test it inline, so a disabled span
 * costs one load and branch, no call. Written only by ck_spans_enable. */
extern int ck_spans_on;

/* Harness side. ck_spans_init allocates room for `capacity` records (call it
 * again to resize; it also resets) and returns MPI_SUCCESS or
 * MPI_ERR_NO_MEM; recording is off until ck_spans_enable(1). A BEGIN or END
 * while recording is off does nothing at all (so enable and disable only
 * where no span is open, e.g. around a whole collective call). Records are
 * written at END, innermost first. One thread per process. */
int ck_spans_init(size_t capacity);
void ck_spans_finalize(void);
void ck_spans_enable(int on);
/* Drops the records, the open-span stack and the counters. */
void ck_spans_reset(void);
size_t ck_spans_count(void);
const ck_span_record *ck_spans_records(void);
/* Records that did not fit; ENDs that did not match the innermost BEGIN (or
 * had none); BEGINs nested deeper than the stack. All 0 in a sound run. */
uint64_t ck_spans_dropped(void);
uint64_t ck_spans_unbalanced(void);
/* Spans open now (BEGIN seen, END not yet): 0 after a sound call. */
int ck_spans_open(void);
/* Interned names, id 0 .. ck_span_names()-1. */
int ck_span_names(void);
const char *ck_span_name(int span);
ck_span_category ck_span_category_of(int span);
int64_t ck_spans_now_ns(void);

#ifdef __cplusplus
}
#endif

#define CK_SPAN__SITE(name, call)                                                \
    do {                                                                        \
        static int ck_span__id_ = -1;                                            \
        if (ck_spans_on) {                                                       \
            if (ck_span__id_ < 0) ck_span__id_ = ck_span_intern(name);             \
            call;                                                               \
        }                                                                       \
    } while (0)
#define CK_SPAN_BEGIN(name) CK_SPAN__SITE(name, ck_span_begin(ck_span__id_, -1))
#define CK_SPAN_BEGIN_STEP(name, step) CK_SPAN__SITE(name, ck_span_begin(ck_span__id_, (int)(step)))
#define CK_SPAN_END(name) CK_SPAN__SITE(name, ck_span_end(ck_span__id_))

#else /* !CK_INSTRUMENT */

#define CK_SPAN_BEGIN(name) ((void)0)
#define CK_SPAN_BEGIN_STEP(name, step) ((void)0)
#define CK_SPAN_END(name) ((void)0)

#endif /* CK_INSTRUMENT */

#endif /* COLLKIT_SPANS_H */
