# Which MPI is this build using, and how must its launcher be called here?
# Sets COLLKIT_MPI_FLAVOR (openmpi | mpich | smpi | other), COLLKIT_MPIEXEC_FLAGS
# and COLLKIT_MPI_TEST_ENV (environment for launched tests).
# Ask the header: OPEN_MPI and MPICH_VERSION are defined by the libraries.
include(CheckSymbolExists)
set(CMAKE_REQUIRED_INCLUDES ${MPI_C_INCLUDE_DIRS})
check_symbol_exists(OPEN_MPI "mpi.h" COLLKIT_HAVE_OPEN_MPI)
check_symbol_exists(MPICH_VERSION "mpi.h" COLLKIT_HAVE_MPICH)
# SimGrid's SMPI (smpicc): its mpi.h includes smpi.h, whose guard is SMPI_H.
check_symbol_exists(SMPI_H "mpi.h" COLLKIT_HAVE_SMPI)
# Intel MPI defines MPICH_VERSION too (MPICH ABI, hydra's -genv): flavour
# mpich, but its Fortran binding is its own (tests/preload).
check_symbol_exists(I_MPI_VERSION "mpi.h" COLLKIT_HAVE_INTEL_MPI)
unset(CMAKE_REQUIRED_INCLUDES)
if(COLLKIT_HAVE_SMPI)
  # launched by smpirun only (collkit.launch.simgrid), never by ctest
  set(COLLKIT_MPI_FLAVOR smpi)
  set(COLLKIT_MPIEXEC_FLAGS)
  set(COLLKIT_MPI_TEST_ENV)
elseif(COLLKIT_HAVE_OPEN_MPI)
  set(COLLKIT_MPI_FLAVOR openmpi)
  # More ranks than cores needs --oversubscribe; as root Open MPI wants consent.
  set(COLLKIT_MPIEXEC_FLAGS --oversubscribe)
  set(COLLKIT_MPI_TEST_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
      OMPI_MCA_rmaps_base_oversubscribe=1)
elseif(COLLKIT_HAVE_MPICH)
  set(COLLKIT_MPI_FLAVOR mpich)
  set(COLLKIT_MPIEXEC_FLAGS)
  # MPICH's progress engine spins when ranks outnumber cores; throttle it.
  set(COLLKIT_MPI_TEST_ENV MPIR_CVAR_CH4_PROGRESS_THROTTLE=1
      MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT=1 MPIR_CVAR_POLLS_BEFORE_YIELD=1)
else()
  set(COLLKIT_MPI_FLAVOR other)
  set(COLLKIT_MPIEXEC_FLAGS)
  set(COLLKIT_MPI_TEST_ENV)
endif()
message(STATUS "collkit: MPI flavour ${COLLKIT_MPI_FLAVOR} (${MPIEXEC_EXECUTABLE})")
