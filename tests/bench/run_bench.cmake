# Runs collkit-bench (or ck_bench_mutants) under the build's MPI launcher and
# checks the outcome; ctest calls it with cmake -P so that one test can run
# the program, look at its exit status and stderr, and then run the checker.
#   LAUNCH    launcher prefix, '|'-separated (a ';' list would be split by ctest)
#   BENCH     the program;  POINTS, OUT: its files
#   EXPECT_EXIT   expected exit status (default 0)
#   EXPECT_STDERR regular expression stderr must match exactly once (optional)
#   CHECKER, CHECK_ARGS ('|'-separated): run check_records on OUT when set
string(REPLACE "|" ";" launch "${LAUNCH}")
if(NOT DEFINED EXPECT_EXIT)
  set(EXPECT_EXIT 0)
endif()
file(REMOVE "${OUT}")
execute_process(COMMAND ${launch} "${BENCH}" --points "${POINTS}" --out "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL "${EXPECT_EXIT}")
  message(FATAL_ERROR "collkit-bench exited with '${rc}', expected ${EXPECT_EXIT}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED EXPECT_STDERR)
  # Once, not once per rank: the launcher may add its own lines around it.
  string(REGEX MATCHALL "${EXPECT_STDERR}" hits "${err}")
  list(LENGTH hits nhits)
  if(NOT nhits EQUAL 1)
    message(FATAL_ERROR "stderr matches '${EXPECT_STDERR}' ${nhits} times, expected once:\n${err}")
  endif()
endif()
if(NOT EXPECT_EXIT EQUAL 0 AND EXISTS "${OUT}")
  message(FATAL_ERROR "an output file was written although the run was refused")
endif()
if(DEFINED CHECKER)
  string(REPLACE "|" ";" check_args "${CHECK_ARGS}")
  execute_process(COMMAND "${CHECKER}" --points "${POINTS}" --records "${OUT}" ${check_args}
                  RESULT_VARIABLE crc OUTPUT_VARIABLE cout ERROR_VARIABLE cerr)
  if(NOT crc EQUAL 0)
    message(FATAL_ERROR "check_records failed (${crc}):\n${cout}${cerr}")
  endif()
  message(STATUS "${cout}")
endif()
