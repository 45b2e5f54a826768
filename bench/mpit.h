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
/* What every readback answers under SimGrid SMPI, which has no MPI_T. */
#define MPIT_UNSUPPORTED "unsupported"

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

/* A value overwritten by mpit_set, to put back after the point. */
typedef struct {
    int valid;
    int index;
    int old;
} mpit_saved;

/* Sets integer control variable `name` (not bound to an object) to `value`:
 * a number, an MPI_T enumeration item, or, for MPICH's algorithm variables, a
 * name from the choice list of its description. Every rank must call it:
 * MPICH's variables are per process. Returns 0 and the old value in *saved, or
 * -1 with one line in err. Used to force MPICH's algorithms after MPI_Init,
 * where forcing through the environment would also force MPI_Init's own
 * collectives (and abort it when they cannot use the forced algorithm). */
int mpit_set(const mpit_session *s, const char *name, const char *value, mpit_saved *saved, char *err,
             size_t errlen);
void mpit_restore(const mpit_session *s, const mpit_saved *saved);

#endif
