/* The Fortran MPI_Init, MPI_Init_thread and MPI_Finalize wrappers: they must
 * run the shim's hooks (reading COLLKIT_*, writing the report), and Fortran
 * bindings call PMPI_Init* / PMPI_Finalize directly: Open MPI's mpif.h, `use
 * mpi` and mpi_f08, and MPICH 4.0.2's mpi_f08 (its mpif.h and `use mpi` call
 * MPI_Init, which intercept.c catches). So the mpi_f08 symbols are defined
 * under both MPIs; the mpif.h ones, Open MPI only, in fortran.c. The
 * arguments are alike in every binding (mpi_f08's handles and ierror are
 * passed by reference too; its ierror is OPTIONAL, NULL when absent). */
#include "ck_preload.h"

void ckp_fortran_init(MPI_Fint *ierr)
{
    ckp_profile_mark_init();
    int rc = PMPI_Init(NULL, NULL);
    if (rc == MPI_SUCCESS) ckp_after_init();
    ckp_set_ierr(ierr, rc);
}

void ckp_fortran_init_thread(const MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    int prov = 0;
    ckp_profile_mark_init();
    int rc = PMPI_Init_thread(NULL, NULL, (int)*required, &prov);
    if (rc == MPI_SUCCESS) ckp_after_init();
    *provided = prov;
    ckp_set_ierr(ierr, rc);
}

void ckp_fortran_finalize(MPI_Fint *ierr)
{
    ckp_before_finalize();
    ckp_set_ierr(ierr, PMPI_Finalize());
}

CKP_FORTRAN(mpi_init_f08, MPI_INIT_F08, (MPI_Fint *ierr), { ckp_fortran_init(ierr); })
CKP_FORTRAN(mpi_init_thread_f08, MPI_INIT_THREAD_F08, (MPI_Fint *req, MPI_Fint *prov, MPI_Fint *ierr),
            { ckp_fortran_init_thread(req, prov, ierr); })
CKP_FORTRAN(mpi_finalize_f08, MPI_FINALIZE_F08, (MPI_Fint *ierr), { ckp_fortran_finalize(ierr); })
