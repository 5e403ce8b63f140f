# SPDX-License-Identifier: Apache-2.0
# Run one command and check both its exit code and its output (stdout + stderr), which a plain
# add_test cannot do together. Used by the topo-profiler-cost tests:
#   cmake -DCMD=<program> -DARGS=<a|b|c> -DRC=<expected exit code> -DRE1=<regex> [-DRE2= -DRE3=]
#         -P expect_run.cmake
# ARGS separates arguments with '|' (';' does not survive add_test). Every REn must match.
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${CMD} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
message("${all}")
if(NOT "${rc}" STREQUAL "${RC}")
  message(FATAL_ERROR "exit code ${rc}, expected ${RC}")
endif()
foreach(v RE1 RE2 RE3)
  if(DEFINED ${v} AND NOT "${${v}}" STREQUAL "")
    if(NOT all MATCHES "${${v}}")
      message(FATAL_ERROR "output does not match ${v}: ${${v}}")
    endif()
  endif()
endforeach()
