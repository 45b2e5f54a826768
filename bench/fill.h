/*
 * Buffers of one point on one rank: their sizes, the input pattern, and the
 * check of the result against a reference computed element by element from
 * the pattern's formula (never by another collective, which could share the
 * bug being looked for).
 */
#ifndef CK_BENCH_FILL_H
#define CK_BENCH_FILL_H

#include "points.h"

#include <mpi.h>
#include <stddef.h>

size_t dtype_size(bench_dtype d);
MPI_Datatype dtype_mpi(bench_dtype d);
MPI_Op op_mpi(bench_op o);

/* Bytes written after every buffer; a write past its end changes them. */
#define FILL_GUARD_BYTES 32

/* Which buffers a rank passes, and how many elements each holds. A buffer
 * that is not significant on this rank is passed as NULL; an in-place one as
 * MPI_IN_PLACE (send_in_place: sbuf; recv_in_place: rbuf, scatter's root). */
typedef struct {
    int has_sbuf, has_rbuf;
    size_t sbuf_elems, rbuf_elems;
    int send_in_place, recv_in_place;
} fill_layout;

/* Sizes the buffers of point pt on rank `rank` of p. Returns 0, or -1 when
 * the sizes overflow size_t (then the point cannot run anywhere: the check
 * is over the largest buffer any rank would need). */
int fill_layout_of(const bench_point *pt, int rank, int p, fill_layout *lay);

/* Writes iteration `it`'s input into the buffers (sbuf, or rbuf when in
 * place) and a value no correct result can contain into every output
 * element, so that an element the collective never wrote shows. */
void fill_buffers(const bench_point *pt, const fill_layout *lay, int rank, int p, long it,
                  void *sbuf, void *rbuf);

/* Sets the guard bytes after the buffers (once, after allocation). */
void fill_guards(const fill_layout *lay, const bench_point *pt, void *sbuf, void *rbuf);

/* Checks iteration `it`'s result on this rank: outputs against the
 * reference, inputs unchanged, guards intact. Returns 0, or 1 with the first
 * mismatch described in msg ("rank R: ..."). */
int fill_check(const bench_point *pt, const fill_layout *lay, int rank, int p, long it,
               const void *sbuf, const void *rbuf, char *msg, size_t msglen);

#endif
