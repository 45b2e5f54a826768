/* The correctness matrix's mixed-datatype cases (ck_matrix --mixed-types,
 * tests/matrix_mixed.c): calls whose ranks pass different datatypes with the
 * same type signature, and MPI_BOTTOM with datatypes of absolute addresses. */
#ifndef COLLKIT_MATRIX_MIXED_H
#define COLLKIT_MATRIX_MIXED_H

#include "validate.h"

/* The call under test (ck_algorithm_call, or the matrix_library variant's). */
typedef int (*ckm_call_fn)(const ck_algorithm *a, const void *sbuf, void *rbuf, size_t count,
                           MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm);
/* Whether the registry's constraints exclude this case (the matrix's must_refuse). */
typedef int (*ckm_refuses_fn)(const ck_algorithm *a, const ckv_case *c, MPI_Comm comm);

typedef struct {
    int passed, failed, refused, fail_lines;
} ckm_tally;

/* Runs every mixed case of algorithm a on comm (all its ranks call this
 * together). Rank 0 of comm adds the verdicts to *t and prints a FAIL line
 * per failure (up to max_fail_lines, all when verbose). */
void ckm_mixed_run(const ck_algorithm *a, ckm_call_fn call, ckm_refuses_fn refuses, MPI_Comm comm,
                   const char *comm_name, int verbose, int max_fail_lines, ckm_tally *t);

#endif
