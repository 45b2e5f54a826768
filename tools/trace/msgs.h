/* The message records both tracers collect: the in-process stand-in for MPI
 * (standin/standin.c) and the PMPI recorder under real MPI (recorder.c).
 * No MPI here, so the same header serves both builds. */
#ifndef CK_TRACE_MSGS_H
#define CK_TRACE_MSGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* One message as seen by its sender (the source is implied by which rank's
 * list it is in): destination rank, bytes, and the step, i.e. the index of
 * the send call among the sender's send calls of this collective. */
typedef struct {
    int32_t dst;
    int32_t step;
    uint64_t bytes;
} ck_trace_msg;

/* A growable array of records. It grows geometrically, so appending costs no
 * allocation per message; a failed growth sets `oom` and drops nothing that
 * was already there. */
typedef struct {
    ck_trace_msg *v;
    size_t n, cap;
    int oom;
} ck_msgs;

/* Make room for at least `want` records; 0 on success, -1 (and oom set). */
static inline int ck_msgs_reserve(ck_msgs *m, size_t want)
{
    if (want <= m->cap) return 0;
    size_t cap = m->cap ? m->cap : 1024;
    while (cap < want) {
        if (cap > SIZE_MAX / 2 / sizeof *m->v) {
            m->oom = 1;
            return -1;
        }
        cap *= 2;
    }
    ck_trace_msg *v = realloc(m->v, cap * sizeof *v);
    if (v == NULL) {
        m->oom = 1;
        return -1;
    }
    m->v = v;
    m->cap = cap;
    return 0;
}

static inline int ck_msgs_push(ck_msgs *m, int32_t dst, int32_t step, uint64_t bytes)
{
    if (m->n == m->cap && ck_msgs_reserve(m, m->n + 1) != 0) return -1;
    ck_trace_msg *r = &m->v[m->n++];
    r->dst = dst;
    r->step = step;
    r->bytes = bytes;
    return 0;
}

static inline void ck_msgs_free(ck_msgs *m)
{
    free(m->v);
    m->v = NULL;
    m->n = m->cap = 0;
    m->oom = 0;
}

#endif /* CK_TRACE_MSGS_H */
