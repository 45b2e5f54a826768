/* The mpif.h / `use mpi` entry points (Open MPI only: the MPICH wheel has no
 * Fortran bindings, and MPICH's own call the C names). Open MPI's mpif.h /
 * `use mpi` wrappers call PMPI_* directly, so the C wrappers never see
 * Fortran calls: the shim defines the Fortran symbols itself, in the four
 * manglings compilers use (gfortran: lower case, one underscore), translates
 * handles with MPI_*_f2c and the MPI_IN_PLACE / MPI_BOTTOM sentinels (Open
 * MPI's common blocks) to C's, and dispatches. The conversion serves the
 * mpi_f08 collectives too (fortran_f08.c); Init and Finalize go around the
 * shim's hooks in fortran_init.c. */
#include "ck_preload.h"
#include "fortran_collectives.h"

/* Open MPI's Fortran sentinels: the addresses of these common blocks. */
extern int mpi_fortran_in_place_;
extern int mpi_fortran_bottom_;

/* mpi_f08's MPI_IN_PLACE and MPI_BOTTOM are BIND(C) variables with these same
 * names (Open MPI 4.1's mpi_f08_types module), so one test serves all three
 * bindings. */
static const void *fbuf(const void *b)
{
    if (b == (const void *)&mpi_fortran_in_place_) return MPI_IN_PLACE;
    if (b == (const void *)&mpi_fortran_bottom_) return MPI_BOTTOM;
    return b;
}

/* Every handle and count is converted as given, significant or not, exactly
 * as Open MPI's own Fortran bindings do (MPI_Type_f2c of MPI_DATATYPE_NULL or
 * of any other value a rank passes where MPI does not read it invokes no error
 * handler), and nothing is decided here: ckp_dispatch reads only what is
 * significant at this rank, so a Fortran rank decides like a C one. */
void ckp_fortran_coll(ck_collective c, const void *s, const MPI_Fint *sc, const MPI_Fint *st, void *r,
                      const MPI_Fint *rc, const MPI_Fint *rt, const MPI_Fint *op, const MPI_Fint *root,
                      const MPI_Fint *comm, MPI_Fint *ierr)
{
    ckp_set_ierr(ierr, ckp_dispatch(c, s ? fbuf(s) : NULL, sc ? (int)*sc : 0,
                                st ? PMPI_Type_f2c(*st) : MPI_DATATYPE_NULL, (void *)fbuf(r), (int)*rc,
                                PMPI_Type_f2c(*rt), op ? PMPI_Op_f2c(*op) : MPI_OP_NULL,
                                root ? (int)*root : 0, PMPI_Comm_f2c(*comm)));
}

CKP_FORTRAN(mpi_init, MPI_INIT, (MPI_Fint *ierr), { ckp_fortran_init(ierr); })
CKP_FORTRAN(mpi_init_thread, MPI_INIT_THREAD, (MPI_Fint *req, MPI_Fint *prov, MPI_Fint *ierr),
            { ckp_fortran_init_thread(req, prov, ierr); })
CKP_FORTRAN(mpi_finalize, MPI_FINALIZE, (MPI_Fint *ierr), { ckp_fortran_finalize(ierr); })
CKP_FORTRAN_COLLECTIVES(CKP_FORTRAN)
