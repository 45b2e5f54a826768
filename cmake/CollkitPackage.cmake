# Python package builds (pip install, through scikit-build-core, which defines
# SKBUILD) compile libcollkit and its programs with the MPI's own compiler
# wrapper: MPICC if set, else the mpicc on PATH, the convention of mpi4py and
# of `CC=mpicc` builds such as the OSU benchmarks. Included before project(),
# where the C compiler is still ours to choose. Other builds (make setup's
# `collkit build`, a developer's cmake) choose their compiler themselves.
#
# Failures say, in one line, what was looked at and what to do: the line is
# all a user sees of it between pip's own messages.

set(COLLKIT_PACKAGE_BUILD OFF)
if(DEFINED SKBUILD AND NOT SKBUILD_STATE STREQUAL "sdist")
  set(COLLKIT_PACKAGE_BUILD ON)
endif()
# `collkit build` (python/collkit/mpis/build.py) names the wrapper itself.
set(COLLKIT_MPICC "" CACHE FILEPATH "Build with this MPI compiler wrapper, as a package build does (collkit build)")
if(COLLKIT_MPICC)
  set(COLLKIT_PACKAGE_BUILD ON)
  set(ENV{MPICC} "${COLLKIT_MPICC}")
endif()

# Where this source came from, for `collkit --version`: one line in
# python/collkit/SOURCE, written when an sdist is made (and shipped in it), or
# by a package build from a git checkout; a checkout run in place asks git.
function(collkit_stamp_source dest)
  find_package(Git QUIET)
  if(NOT GIT_FOUND OR NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/.git)
    return()
  endif()
  execute_process(COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
                  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                  OUTPUT_VARIABLE _commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    return()
  endif()
  execute_process(COMMAND ${GIT_EXECUTABLE} status --porcelain --untracked-files=no
                  WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                  OUTPUT_VARIABLE _dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_dirty)
    string(APPEND _commit " with uncommitted changes")
  endif()
  file(WRITE ${dest} "${ARGN} commit ${_commit}\n")
endfunction()

set(COLLKIT_SDIST_ONLY OFF)
if(SKBUILD_STATE STREQUAL "sdist")
  # `python -m build --sdist` runs CMake only to stamp the source it packs.
  collkit_stamp_source(${CMAKE_CURRENT_SOURCE_DIR}/python/collkit/SOURCE "sdist of")
  set(COLLKIT_SDIST_ONLY ON)
  project(collkit LANGUAGES NONE)
  return()
endif()

if(COLLKIT_PACKAGE_BUILD)
  if(NOT "$ENV{MPICC}" STREQUAL "")
    # A name (mpicc, cc) is looked up on PATH, a path taken as it is.
    find_program(_ck_mpicc NAMES "$ENV{MPICC}" NO_CACHE)
    if(NOT _ck_mpicc)
      message(FATAL_ERROR "collkit: MPICC=$ENV{MPICC} is not an executable program: set MPICC to your "
                          "MPI's C compiler wrapper (e.g. MPICC=/path/to/mpicc) or unset it to use the mpicc on PATH")
    endif()
    set(_ck_mpicc_from "MPICC=$ENV{MPICC}")
  else()
    find_program(_ck_mpicc NAMES mpicc NO_CACHE)
    if(NOT _ck_mpicc)
      message(FATAL_ERROR "collkit: no MPI C compiler: MPICC is not set and there is no mpicc on PATH "
                          "($ENV{PATH}); load an MPI first (module load openmpi) or set MPICC=/path/to/mpicc "
                          "(COLLKIT_NO_NATIVE=1 installs collkit without its C programs)")
    endif()
    set(_ck_mpicc_from "mpicc on PATH")
  endif()
  set(CMAKE_C_COMPILER "${_ck_mpicc}")
  set(MPI_C_COMPILER "${_ck_mpicc}" CACHE FILEPATH "The MPI compiler wrapper collkit is built with")
  if(DEFINED SKBUILD)
    # A package is built to be used, not developed: no test programs, no -Werror.
    set(COLLKIT_BUILD_TESTS OFF CACHE BOOL "" FORCE)
    set(COLLKIT_WERROR OFF CACHE BOOL "" FORCE)
  endif()
  # The launcher beside the wrapper is this MPI's; another on PATH may not be.
  # A suffixed wrapper (Debian's mpicc.openmpi) has a launcher of that suffix.
  get_filename_component(_ck_mpi_bin "${_ck_mpicc}" DIRECTORY)
  get_filename_component(_ck_mpicc_name "${_ck_mpicc}" NAME)
  string(REGEX REPLACE "^mpicc" "" _ck_suffix "${_ck_mpicc_name}")
  find_program(MPIEXEC_EXECUTABLE NAMES mpiexec${_ck_suffix} mpirun${_ck_suffix} mpiexec mpirun
               HINTS "${_ck_mpi_bin}" NO_DEFAULT_PATH)
endif()

# After project(): a wrapper that cannot compile an MPI program (MPICC=gcc)
# must stop the build here, not let FindMPI go looking for some other MPI.
function(collkit_package_check_mpi)
  if(NOT COLLKIT_PACKAGE_BUILD)
    return()
  endif()
  include(CheckCSourceCompiles)
  set(CMAKE_REQUIRED_QUIET ON)
  check_c_source_compiles([=[
#include <mpi.h>
int main(void) { char v[MPI_MAX_LIBRARY_VERSION_STRING]; int n; return MPI_Get_library_version(v, &n); }
]=] COLLKIT_MPICC_BUILDS_MPI)
  if(NOT COLLKIT_MPICC_BUILDS_MPI)
    unset(COLLKIT_MPICC_BUILDS_MPI CACHE)
    message(FATAL_ERROR "collkit: ${_ck_mpicc_from} (${CMAKE_C_COMPILER}) cannot build an MPI program "
                        "(no mpi.h or no MPI library): set MPICC to an MPI compiler wrapper such as mpicc, "
                        "or load an MPI module first")
  endif()
endfunction()
