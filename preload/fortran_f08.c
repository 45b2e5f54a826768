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

#include "fortran_collectives.h"

/* The mpif.h names with _f08: mpi_bcast_f08_, MPI_BCAST_F08, ... */
#define CKP_FORTRAN_F08(lower, upper, params, body) CKP_FORTRAN(lower##_f08, upper##_F08, params, body)
CKP_FORTRAN_COLLECTIVES(CKP_FORTRAN_F08)
