/* The MPI library's collectives: what the CLI forces through the library's
 * own knobs (environment), so this file never chooses an algorithm. */
#include "backend.h"

int backend_mpi_call(const backend_call *c, const void *sbuf, void *rbuf, MPI_Comm comm)
{
    return ck_library_call(c->coll, sbuf, rbuf, c->count, c->dt, c->op, c->root, comm);
}
