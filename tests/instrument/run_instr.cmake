# Runs a collkit-bench program under the build's MPI launcher and then
# check_instrument on its output (tests/instrument/CMakeLists.txt).
#   LAUNCH  launcher prefix, '|'-separated;  BENCH, POINTS, OUT
#   BENCH_ARGS  extra arguments of the program, '|'-separated (optional)
#   EXPECT_EXIT expected exit status (default 0); EXPECT_STDERR regex (optional)
#   CHECKER, CHECK_ARGS ('|'-separated): run on OUT when set
string(REPLACE "|" ";" launch "${LAUNCH}")
string(REPLACE "|" ";" bench_args "${BENCH_ARGS}")
if(NOT DEFINED EXPECT_EXIT)
  set(EXPECT_EXIT 0)
endif()
file(REMOVE "${OUT}")
execute_process(COMMAND ${launch} "${BENCH}" --points "${POINTS}" --out "${OUT}" ${bench_args}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc STREQUAL "${EXPECT_EXIT}")
  message(FATAL_ERROR "${BENCH} exited with '${rc}', expected ${EXPECT_EXIT}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(DEFINED EXPECT_STDERR AND NOT err MATCHES "${EXPECT_STDERR}")
  message(FATAL_ERROR "stderr does not match '${EXPECT_STDERR}':\n${err}")
endif()
if(DEFINED CHECKER)
  string(REPLACE "|" ";" check_args "${CHECK_ARGS}")
  execute_process(COMMAND "${CHECKER}" --points "${POINTS}" --records "${OUT}" ${check_args}
                  RESULT_VARIABLE crc OUTPUT_VARIABLE cout ERROR_VARIABLE cerr)
  if(NOT crc EQUAL 0)
    message(FATAL_ERROR "check_instrument failed (${crc}):\n${cout}${cerr}")
  endif()
  message(STATUS "${cout}")
endif()
