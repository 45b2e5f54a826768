# What the Python package finds in a build: the programs it launches,
# installed under one prefix, and collkit-build.json beside them (written last,
# so a prefix without it is an unfinished install). The manifest names each
# program by its path in the prefix and carries the MPI's identity, asked of
# the library itself (tools/mpi_probe.c), so that `collkit mpis` can say which
# MPI a build belongs to without compiling anything.
set(_ck_libexec ${CMAKE_INSTALL_LIBEXECDIR}/collkit)
install(TARGETS ck_matrix ck_matrix_library ck_trace collkit-mpi-probe collkit-rules RUNTIME DESTINATION ${_ck_libexec})
install(FILES ${PROJECT_BINARY_DIR}/registry.json DESTINATION ${CMAKE_INSTALL_DATADIR}/collkit)

# The installed matrix programs sit one level deeper than bin/.
set_target_properties(ck_matrix ck_matrix_library ck_trace collkit-mpi-probe collkit-rules PROPERTIES
                      INSTALL_RPATH "$ORIGIN/../../${CMAKE_INSTALL_LIBDIR}")

set(COLLKIT_MANIFEST_PARTS
  bench=${CMAKE_INSTALL_BINDIR}/collkit-bench
  matrix=${_ck_libexec}/ck_matrix
  matrix_library=${_ck_libexec}/ck_matrix_library
  trace=${_ck_libexec}/ck_trace
  probe=${_ck_libexec}/collkit-mpi-probe
  rules=${_ck_libexec}/collkit-rules
  preload=${CMAKE_INSTALL_LIBDIR}/libcollkit-preload.so
  registry=${CMAKE_INSTALL_DATADIR}/collkit/registry.json)
if(COLLKIT_INSTRUMENT)
  list(APPEND COLLKIT_MANIFEST_PARTS bench_instr=${CMAKE_INSTALL_BINDIR}/collkit-bench-instr)
endif()
if(COLLKIT_NCCL)
  list(APPEND COLLKIT_MANIFEST_PARTS bench_nccl=${CMAKE_INSTALL_BINDIR}/collkit-bench-nccl)
endif()

# Where the source came from: a checkout's commit, else the sdist's stamp. A
# checkout asks git first: building an sdist leaves its stamp in the checkout
# (python/collkit/SOURCE, ignored by git), which is stale after the next commit.
set(_ck_source_file ${PROJECT_BINARY_DIR}/SOURCE)
file(REMOVE ${_ck_source_file})
collkit_stamp_source(${_ck_source_file} "git")
if(NOT EXISTS ${_ck_source_file})
  set(_ck_source_file ${PROJECT_SOURCE_DIR}/python/collkit/SOURCE)
endif()
set(COLLKIT_SOURCE "")
if(EXISTS ${_ck_source_file})
  file(STRINGS ${_ck_source_file} COLLKIT_SOURCE LIMIT_COUNT 1)
  if(COLLKIT_PACKAGE_BUILD AND DEFINED SKBUILD_PLATLIB_DIR)
    # A wheel built from a checkout carries the stamp as the sdist would.
    install(FILES ${_ck_source_file} DESTINATION ${SKBUILD_PLATLIB_DIR}/collkit)
  endif()
endif()

if(MPI_C_COMPILER)
  set(COLLKIT_MANIFEST_MPICC ${MPI_C_COMPILER})
else()
  set(COLLKIT_MANIFEST_MPICC ${CMAKE_C_COMPILER})
endif()
set(COLLKIT_MANIFEST_MPIRUN "")
if(MPIEXEC_EXECUTABLE)
  set(COLLKIT_MANIFEST_MPIRUN ${MPIEXEC_EXECUTABLE})
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/collkit_manifest.cmake.in ${PROJECT_BINARY_DIR}/collkit_manifest.cmake @ONLY)
install(SCRIPT ${PROJECT_BINARY_DIR}/collkit_manifest.cmake)
