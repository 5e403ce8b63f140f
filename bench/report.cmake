# SPDX-License-Identifier: Apache-2.0
# topo-report benchmark: generate N collectives x R ranks of binary traces, time the reader
# (records/s on one core) and the full analysis, print peak RSS. Figures: bench/RESULTS-report.md.
if(TARGET topo_report_core AND EXISTS ${CMAKE_SOURCE_DIR}/tests/report/trace_fixture.c)
  add_executable(report_bench ${CMAKE_CURRENT_LIST_DIR}/report_bench.c
                 ${CMAKE_SOURCE_DIR}/tests/report/trace_fixture.c)
  target_include_directories(report_bench PRIVATE ${CMAKE_SOURCE_DIR}/tests/report)
  target_link_libraries(report_bench PRIVATE topo_report_core topo_common)
endif()
# Scaling of the analysis on inputs built to find superlinear paths (n vs 32 n); with --check it
# fails when a case grows more than 128 x (linear: 32 x, quadratic: 1024 x).
if(TARGET topo_report_core AND EXISTS ${CMAKE_SOURCE_DIR}/tests/report/trace_fixture.c)
  add_executable(report_scaling ${CMAKE_CURRENT_LIST_DIR}/report_scaling.c
                 ${CMAKE_SOURCE_DIR}/tests/report/trace_fixture.c)
  target_include_directories(report_scaling PRIVATE ${CMAKE_SOURCE_DIR}/tests/report)
  target_link_libraries(report_scaling PRIVATE topo_report_core topo_common)
  if(BUILD_TESTING)
    add_test(NAME report_inputs_scale_linearly COMMAND report_scaling --check)
    set_tests_properties(report_inputs_scale_linearly PROPERTIES LABELS unit TIMEOUT 300)
  endif()
endif()
