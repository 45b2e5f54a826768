/* The Fortran entry points (Open MPI only: the MPICH wheel has no Fortran
 * bindings). Open MPI's mpif.h / `use mpi` wrappers call PMPI_* directly, so
 * the C wrappers never see Fortran calls: the shim defines the Fortran symbols
 * itself, in the four manglings compilers use (gfortran: lower case, one
 * underscore), translates handles with MPI_*_f2c and the MPI_IN_PLACE /
 * MPI_BOTTOM sentinels (Open MPI's common blocks) to C's, and dispatches. */
#include "ck_preload.h"

/* Open MPI's Fortran sentinels: the addresses of these common blocks. */
extern int mpi_fortran_in_place_;
extern int mpi_fortran_bottom_;

static const void *fbuf(const void *b)
{
    if (b == (const void *)&mpi_fortran_in_place_) return MPI_IN_PLACE;
    if (b == (const void *)&mpi_fortran_bottom_) return MPI_BOTTOM;
    return b;
}

#define CKP_FORTRAN(lower, upper, params, body)                                                    \
    void lower##_ params body                                                                      \
    void lower##__ params body                                                                     \
    void lower params body                                                                         \
    void upper params body

static void f_init(MPI_Fint *ierr)
{
    int rc = PMPI_Init(NULL, NULL);
    if (rc == MPI_SUCCESS) ckp_after_init();
    *ierr = rc;
}

static void f_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    int prov = 0;
    int rc = PMPI_Init_thread(NULL, NULL, (int)*required, &prov);
    if (rc == MPI_SUCCESS) ckp_after_init();
    *provided = prov;
    *ierr = rc;
}

static void f_finalize(MPI_Fint *ierr)
{
    ckp_before_finalize();
    *ierr = PMPI_Finalize();
}

/* Every handle and count is converted as given, significant or not, exactly
 * as Open MPI's own Fortran bindings do (MPI_Type_f2c of MPI_DATATYPE_NULL or
 * of any other value a rank passes where MPI does not read it invokes no error
 * handler), and nothing is decided here: ckp_dispatch reads only what is
 * significant at this rank, so a Fortran rank decides like a C one. */
static void f_coll(ck_collective c, const void *s, MPI_Fint *sc, MPI_Fint *st, void *r, MPI_Fint *rc,
                   MPI_Fint *rt, MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
    *ierr = ckp_dispatch(c, s ? fbuf(s) : NULL, sc ? (int)*sc : 0, st ? PMPI_Type_f2c(*st) : MPI_DATATYPE_NULL,
                         (void *)fbuf(r), (int)*rc, PMPI_Type_f2c(*rt), op ? PMPI_Op_f2c(*op) : MPI_OP_NULL,
                         root ? (int)*root : 0, PMPI_Comm_f2c(*comm));
}

CKP_FORTRAN(mpi_init, MPI_INIT, (MPI_Fint *ierr), { f_init(ierr); })
CKP_FORTRAN(mpi_init_thread, MPI_INIT_THREAD, (MPI_Fint *req, MPI_Fint *prov, MPI_Fint *ierr),
            { f_init_thread(req, prov, ierr); })
CKP_FORTRAN(mpi_finalize, MPI_FINALIZE, (MPI_Fint *ierr), { f_finalize(ierr); })
CKP_FORTRAN(mpi_bcast, MPI_BCAST,
            (void *b, MPI_Fint *n, MPI_Fint *t, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr),
            { f_coll(CK_BCAST, NULL, NULL, NULL, b, n, t, NULL, root, comm, ierr); })
CKP_FORTRAN(mpi_reduce, MPI_REDUCE,
            (void *s, void *r, MPI_Fint *n, MPI_Fint *t, MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm,
             MPI_Fint *ierr),
            { f_coll(CK_REDUCE, s, n, t, r, n, t, op, root, comm, ierr); })
CKP_FORTRAN(mpi_allreduce, MPI_ALLREDUCE,
            (void *s, void *r, MPI_Fint *n, MPI_Fint *t, MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr),
            { f_coll(CK_ALLREDUCE, s, n, t, r, n, t, op, NULL, comm, ierr); })
CKP_FORTRAN(mpi_reduce_scatter_block, MPI_REDUCE_SCATTER_BLOCK,
            (void *s, void *r, MPI_Fint *n, MPI_Fint *t, MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr),
            { f_coll(CK_REDUCE_SCATTER, s, n, t, r, n, t, op, NULL, comm, ierr); })
CKP_FORTRAN(mpi_gather, MPI_GATHER,
            (void *s, MPI_Fint *sn, MPI_Fint *st, void *r, MPI_Fint *rn, MPI_Fint *rt, MPI_Fint *root,
             MPI_Fint *comm, MPI_Fint *ierr),
            { f_coll(CK_GATHER, s, sn, st, r, rn, rt, NULL, root, comm, ierr); })
CKP_FORTRAN(mpi_scatter, MPI_SCATTER,
            (void *s, MPI_Fint *sn, MPI_Fint *st, void *r, MPI_Fint *rn, MPI_Fint *rt, MPI_Fint *root,
             MPI_Fint *comm, MPI_Fint *ierr),
            { f_coll(CK_SCATTER, s, sn, st, r, rn, rt, NULL, root, comm, ierr); })
CKP_FORTRAN(mpi_allgather, MPI_ALLGATHER,
            (void *s, MPI_Fint *sn, MPI_Fint *st, void *r, MPI_Fint *rn, MPI_Fint *rt, MPI_Fint *comm,
             MPI_Fint *ierr),
            { f_coll(CK_ALLGATHER, s, sn, st, r, rn, rt, NULL, NULL, comm, ierr); })
CKP_FORTRAN(mpi_alltoall, MPI_ALLTOALL,
            (void *s, MPI_Fint *sn, MPI_Fint *st, void *r, MPI_Fint *rn, MPI_Fint *rt, MPI_Fint *comm,
             MPI_Fint *ierr),
            { f_coll(CK_ALLTOALL, s, sn, st, r, rn, rt, NULL, NULL, comm, ierr); })
