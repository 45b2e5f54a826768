/* The mpi_f08 collectives (Open MPI; Init and Finalize: fortran_init.c).
 * Open MPI 4.1's mpi_f08 module binds
 * MPI_Bcast to an external procedure MPI_Bcast_f08 (symbol mpi_bcast_f08_),
 * which calls the library's C backend, not MPI_Bcast: like mpif.h programs,
 * mpi_f08 ones would bypass the C wrappers, so the shim defines these symbols.
 *
 * Their arguments, from Open MPI's use-mpi-f08/bcast_f08.F90 and its
 * siblings: choice buffers are passed by address (the ignore-TKR declaration,
 * no descriptor; a library built with TYPE(*), DIMENSION(..) exports
 * mpi_bcast_f08ts_ and so on instead, which Debian's does not, so none are
 * defined here); TYPE(MPI_Comm) and the other handles are a derived type
 * holding one INTEGER, MPI_VAL, passed by reference, i.e. a pointer to the
 * MPI_Fint that MPI_*_f2c takes; ierror is OPTIONAL, NULL when absent.
 * MPI_IN_PLACE and MPI_BOTTOM are the same symbols as mpif.h's, so
 * fortran.c's conversion serves both. MPICH's mpi_f08 (mpi_*_f08ts_, CFI
 * descriptors) ends in the C MPI_* names, which intercept.c catches. */
#include "ck_preload.h"

CKP_FORTRAN(mpi_bcast_f08, MPI_BCAST_F08,
            (void *b, MPI_Fint *n, MPI_Fint *t, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr),
            { ckp_fortran_coll(CK_BCAST, NULL, NULL, NULL, b, n, t, NULL, root, comm, ierr); })
CKP_FORTRAN(mpi_reduce_f08, MPI_REDUCE_F08,
            (void *s, void *r, MPI_Fint *n, MPI_Fint *t, MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm,
             MPI_Fint *ierr),
            { ckp_fortran_coll(CK_REDUCE, s, n, t, r, n, t, op, root, comm, ierr); })
CKP_FORTRAN(mpi_allreduce_f08, MPI_ALLREDUCE_F08,
            (void *s, void *r, MPI_Fint *n, MPI_Fint *t, MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr),
            { ckp_fortran_coll(CK_ALLREDUCE, s, n, t, r, n, t, op, NULL, comm, ierr); })
CKP_FORTRAN(mpi_reduce_scatter_block_f08, MPI_REDUCE_SCATTER_BLOCK_F08,
            (void *s, void *r, MPI_Fint *n, MPI_Fint *t, MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr),
            { ckp_fortran_coll(CK_REDUCE_SCATTER, s, n, t, r, n, t, op, NULL, comm, ierr); })
CKP_FORTRAN(mpi_gather_f08, MPI_GATHER_F08,
            (void *s, MPI_Fint *sn, MPI_Fint *st, void *r, MPI_Fint *rn, MPI_Fint *rt, MPI_Fint *root,
             MPI_Fint *comm, MPI_Fint *ierr),
            { ckp_fortran_coll(CK_GATHER, s, sn, st, r, rn, rt, NULL, root, comm, ierr); })
CKP_FORTRAN(mpi_scatter_f08, MPI_SCATTER_F08,
            (void *s, MPI_Fint *sn, MPI_Fint *st, void *r, MPI_Fint *rn, MPI_Fint *rt, MPI_Fint *root,
             MPI_Fint *comm, MPI_Fint *ierr),
            { ckp_fortran_coll(CK_SCATTER, s, sn, st, r, rn, rt, NULL, root, comm, ierr); })
CKP_FORTRAN(mpi_allgather_f08, MPI_ALLGATHER_F08,
            (void *s, MPI_Fint *sn, MPI_Fint *st, void *r, MPI_Fint *rn, MPI_Fint *rt, MPI_Fint *comm,
             MPI_Fint *ierr),
            { ckp_fortran_coll(CK_ALLGATHER, s, sn, st, r, rn, rt, NULL, NULL, comm, ierr); })
CKP_FORTRAN(mpi_alltoall_f08, MPI_ALLTOALL_F08,
            (void *s, MPI_Fint *sn, MPI_Fint *st, void *r, MPI_Fint *rn, MPI_Fint *rt, MPI_Fint *comm,
             MPI_Fint *ierr),
            { ckp_fortran_coll(CK_ALLTOALL, s, sn, st, r, rn, rt, NULL, NULL, comm, ierr); })
