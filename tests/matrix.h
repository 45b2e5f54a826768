/* Shared pieces of the correctness matrix: typed buffers, input patterns and
 * the independent reference (a direct formula over the known inputs). */
#ifndef CK_MATRIX_H
#define CK_MATRIX_H

#include <collkit/collkit.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { T_INT, T_INT64, T_FLOAT, T_DOUBLE, T_COUNT } tkind;
typedef enum { OP_SUM, OP_MAX, OP_NONCOMM, OP_COUNT } okind;

extern const char *const tkind_names[T_COUNT];
extern const char *const okind_names[OP_COUNT];

MPI_Datatype tk_mpi(tkind t);
size_t tk_size(tkind t);

/* The non-commutative user op (composition of affine maps mod 2^15), created
 * once by matrix_ops_init. It accepts MPI_INT, MPI_INT64_T and MPI_DOUBLE. */
int matrix_ops_init(void);
void matrix_ops_free(void);
MPI_Op ok_mpi(okind o);
int ok_supports(okind o, tkind t);

/* Element access; every value the matrix uses is an integer that the type
 * represents exactly, so an int64_t carries it. */
void put(void *buf, size_t i, tkind t, int64_t v);
int same(const void *buf, size_t i, tkind t, int64_t expected);
int64_t get(const void *buf, size_t i, tkind t);

/* Input patterns: for data movement, value of element i of block b owned by
 * rank r; for reductions, rank r's element i. Both depend on a seed. */
int64_t mov_val(int r, int b, size_t i, int seed);
int64_t red_val(int r, size_t i, int seed, okind o);
/* a (op) b as MPI defines it: a is the operand from the lower rank. */
int64_t red_combine(int64_t a, int64_t b, okind o);
/* red_val(0) op red_val(1) op ... op red_val(p-1) for element i. */
int64_t red_expected(int p, size_t i, int seed, okind o);

/* Buffers with guard bytes on both sides, to catch writes out of bounds. */
typedef struct {
    unsigned char *mem;
    void *data;
    size_t bytes;
} gbuf;

int gbuf_alloc(gbuf *g, size_t bytes);
void gbuf_free(gbuf *g);
void gbuf_scramble(gbuf *g);  /* fill data with a recognisable junk pattern */
int gbuf_guards_ok(const gbuf *g);

#endif
