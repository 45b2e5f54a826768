/*
 * Readback of MPI_T control variables by name: what the library says a knob
 * is set to after MPI_Init, so a record shows whether forcing took effect.
 * Local to the calling process (rank 0 reads for the record).
 */
#ifndef CK_BENCH_MPIT_H
#define CK_BENCH_MPIT_H

#include <mpi.h>
#include <stddef.h>

#define MPIT_UNKNOWN "<unknown>"

typedef struct {
    int open;
} mpit_session;

/* Starts an MPI_T session; 0 on success. Without one every read answers
 * MPIT_UNKNOWN. */
int mpit_open(mpit_session *s);
void mpit_close(mpit_session *s);

/* Value of control variable `name` as text: integers in decimal, an
 * enumeration by its item name (the number when no item matches), strings as
 * they are, several elements joined by ','. MPIT_UNKNOWN when the library has
 * no such variable or it cannot be read. `comm` is the object for variables
 * bound to a communicator. */
void mpit_read(const mpit_session *s, const char *name, MPI_Comm comm, char *out, size_t outlen);

#endif
