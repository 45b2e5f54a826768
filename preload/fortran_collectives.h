/* The eight collectives the Fortran bindings are intercepted for, once: the
 * mpif.h / `use mpi` names (fortran.c) and the mpi_f08 ones (fortran_f08.c,
 * the same names with _f08) take the same arguments in Open MPI, so one list
 * serves both. X(lower, UPPER, (parameters), { body }). */
#ifndef CK_PRELOAD_FORTRAN_COLLECTIVES_H
#define CK_PRELOAD_FORTRAN_COLLECTIVES_H

#define CKP_FORTRAN_COLLECTIVES(X) \
    X(mpi_bcast, MPI_BCAST, \
            (void *b, MPI_Fint *n, MPI_Fint *t, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr), \
            { ckp_fortran_coll(CK_BCAST, NULL, NULL, NULL, b, n, t, NULL, root, comm, ierr); }) \
    X(mpi_reduce, MPI_REDUCE, \
            (void *s, void *r, MPI_Fint *n, MPI_Fint *t, MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm, \
             MPI_Fint *ierr), \
            { ckp_fortran_coll(CK_REDUCE, s, n, t, r, n, t, op, root, comm, ierr); }) \
    X(mpi_allreduce, MPI_ALLREDUCE, \
            (void *s, void *r, MPI_Fint *n, MPI_Fint *t, MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr), \
            { ckp_fortran_coll(CK_ALLREDUCE, s, n, t, r, n, t, op, NULL, comm, ierr); }) \
    X(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK, \
            (void *s, void *r, MPI_Fint *n, MPI_Fint *t, MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr), \
            { ckp_fortran_coll(CK_REDUCE_SCATTER, s, n, t, r, n, t, op, NULL, comm, ierr); }) \
    X(mpi_gather, MPI_GATHER, \
            (void *s, MPI_Fint *sn, MPI_Fint *st, void *r, MPI_Fint *rn, MPI_Fint *rt, MPI_Fint *root, \
             MPI_Fint *comm, MPI_Fint *ierr), \
            { ckp_fortran_coll(CK_GATHER, s, sn, st, r, rn, rt, NULL, root, comm, ierr); }) \
    X(mpi_scatter, MPI_SCATTER, \
            (void *s, MPI_Fint *sn, MPI_Fint *st, void *r, MPI_Fint *rn, MPI_Fint *rt, MPI_Fint *root, \
             MPI_Fint *comm, MPI_Fint *ierr), \
            { ckp_fortran_coll(CK_SCATTER, s, sn, st, r, rn, rt, NULL, root, comm, ierr); }) \
    X(mpi_allgather, MPI_ALLGATHER, \
            (void *s, MPI_Fint *sn, MPI_Fint *st, void *r, MPI_Fint *rn, MPI_Fint *rt, MPI_Fint *comm, \
             MPI_Fint *ierr), \
            { ckp_fortran_coll(CK_ALLGATHER, s, sn, st, r, rn, rt, NULL, NULL, comm, ierr); }) \
    X(mpi_alltoall, MPI_ALLTOALL, \
            (void *s, MPI_Fint *sn, MPI_Fint *st, void *r, MPI_Fint *rn, MPI_Fint *rt, MPI_Fint *comm, \
             MPI_Fint *ierr), \
            { ckp_fortran_coll(CK_ALLTOALL, s, sn, st, r, rn, rt, NULL, NULL, comm, ierr); })

#endif
