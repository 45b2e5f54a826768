# The fast path must never drift from the ground truth: at one rank count,
# trace every registered algorithm with ck_trace (stand-in MPI) and with
# ck_trace_mpi (real MPI, PMPI recorder) from the same batch file and compare
# the outputs trace by trace with trace_diff. Used by ctest (tests/trace/
# CMakeLists.txt) and by scripts/trace_equivalence.sh.
#   TRACE, TRACE_MPI, DIFF  the three programs
#   LAUNCH      launcher command, '|'-separated, with @P@ for the rank count
#   RANKS       p
#   WORKDIR     where the batch file and both outputs go
#   LARGE_MAX_P largest p that also gets the segmented cases (default 8):
#               counts large enough that chain bcast, ring_seg allreduce and
#               segmented Bine allreduce cut blocks into several messages
#               (and ring sends blocks over 1 MiB whole)
# Cases per algorithm: counts 0, 1, p+1 and 1000 (int32, int8, int64, double,
# so every element size is seen), roots 0 and p-1 for rooted collectives, and
# root p (refused with MPI_ERR_ROOT, which both must report alike), and one
# case in the pairs format.
foreach(v TRACE TRACE_MPI DIFF LAUNCH RANKS WORKDIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_equivalence.cmake: ${v} is not set")
  endif()
endforeach()
if(NOT DEFINED LARGE_MAX_P)
  set(LARGE_MAX_P 8)
endif()
set(p ${RANKS})
file(MAKE_DIRECTORY "${WORKDIR}")
set(batch "${WORKDIR}/batch_p${p}.txt")
set(fast "${WORKDIR}/fast_p${p}.txt")
set(real "${WORKDIR}/mpi_p${p}.txt")

execute_process(COMMAND "${TRACE}" --list OUTPUT_VARIABLE listing RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ck_trace --list failed (${rc})")
endif()
string(REPLACE "\n" ";" algorithms "${listing}")

math(EXPR p1 "${p} + 1")
math(EXPR last "${p} - 1")
set(lines "")
set(nalg 0)
foreach(entry IN LISTS algorithms)
  if(entry STREQUAL "")
    continue()
  endif()
  math(EXPR nalg "${nalg} + 1")
  string(REPLACE " " ";" entry "${entry}")
  list(GET entry 0 coll)
  list(GET entry 1 alg)
  if(coll MATCHES "^(bcast|reduce|gather|scatter)$")
    set(roots 0 ${last})
    list(REMOVE_DUPLICATES roots)
    string(APPEND lines "${coll} ${alg} ${p} 1 ${p} int32 messages\n")
  else()
    set(roots 0)
  endif()
  foreach(root IN LISTS roots)
    string(APPEND lines
      "${coll} ${alg} ${p} 0 ${root} int32 messages\n"
      "${coll} ${alg} ${p} 1 ${root} int8 messages\n"
      "${coll} ${alg} ${p} ${p1} ${root} int64 messages\n"
      "${coll} ${alg} ${p} 1000 ${root} double messages\n")
  endforeach()
  # pairs: the aggregation both programs share, on both sides of the check
  string(APPEND lines "${coll} ${alg} ${p} ${p1} ${last} int32 pairs\n")
  if(p LESS_EQUAL LARGE_MAX_P)
    # > 64 KiB in one bcast; blocks of ~1.1 MiB (ring_seg's segment is
    # 1 MiB, the segmented Bine allreduce's 64 KiB; ring sends them whole).
    if(coll STREQUAL "bcast" AND alg STREQUAL "chain")
      string(APPEND lines "${coll} ${alg} ${p} 140000 ${last} int8 messages\n")
    elseif(coll STREQUAL "allreduce" AND alg MATCHES "^(ring|ring_seg|bine_bandwidth_seg)$")
      math(EXPR big "${p} * 140000")
      string(APPEND lines "${coll} ${alg} ${p} ${big} 0 int64 messages\n")
    endif()
  endif()
endforeach()
if(nalg EQUAL 0)
  message(FATAL_ERROR "ck_trace --list printed no algorithm")
endif()
file(WRITE "${batch}" "${lines}")

execute_process(COMMAND "${TRACE}" --batch "${batch}" OUTPUT_FILE "${fast}"
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ck_trace --batch failed (${rc}): ${err}")
endif()
string(REPLACE "@P@" "${p}" launch "${LAUNCH}")
string(REPLACE "|" ";" launch "${launch}")
execute_process(COMMAND ${launch} "${TRACE_MPI}" --batch "${batch}"
                OUTPUT_FILE "${real}" RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ck_trace_mpi --batch at p=${p} failed (${rc}):\n${err}")
endif()
# At p = 1 nothing is ever sent; elsewhere an all-empty result means the
# recorder saw nothing, which must fail.
set(allow_empty "")
if(p EQUAL 1)
  set(allow_empty --allow-empty)
endif()
execute_process(COMMAND "${DIFF}" ${allow_empty} "${fast}" "${real}" RESULT_VARIABLE rc
                OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "p=${p}: ck_trace and ck_trace_mpi disagree (${fast} vs ${real}):\n${out}")
endif()
message(STATUS "p=${p} (${nalg} algorithms): ${out}")
