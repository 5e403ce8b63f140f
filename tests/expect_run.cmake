# SPDX-License-Identifier: Apache-2.0
# Run one command and check both its exit code and its output (stdout + stderr), which a plain
# add_test cannot do together (PASS_REGULAR_EXPRESSION ignores the exit code). Used through
# topo_add_cli_test (tests/CMakeLists.txt) and by the topo-profiler-cost tests:
#   cmake -DCMD=<program> -DARGS=<a|b|c> -DRC=<expected exit code> -DRE1=<regex> [-DRE2= -DRE3=]
#         [-DNOT_RE=<regex>] -P expect_run.cmake
# ARGS separates arguments with '|' (';' does not survive add_test). Every REn must match the
# output (stdout and stderr merged in the order written), NOT_RE must not. A regex must not
# hold ';' (a CMake list separator): match it with '.'.
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${CMD} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE all ERROR_VARIABLE all)
message("${all}")
if(NOT "${rc}" STREQUAL "${RC}")
  message(FATAL_ERROR "exit code ${rc}, expected ${RC}")
endif()
foreach(v RE1 RE2 RE3 RE4 RE5)
  if(DEFINED ${v} AND NOT "${${v}}" STREQUAL "")
    if(NOT all MATCHES "${${v}}")
      message(FATAL_ERROR "output does not match ${v}: ${${v}}")
    endif()
  endif()
endforeach()
if(DEFINED NOT_RE AND NOT "${NOT_RE}" STREQUAL "" AND all MATCHES "${NOT_RE}")
  message(FATAL_ERROR "output matches NOT_RE: ${NOT_RE}")
endif()
