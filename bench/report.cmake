# SPDX-License-Identifier: Apache-2.0
# topo-report benchmark: generate N collectives x R ranks of binary traces, time the reader
# (records/s on one core) and the full analysis, print peak RSS. Figures: bench/RESULTS-report.md.
if(TARGET topo_report_core AND EXISTS ${CMAKE_SOURCE_DIR}/tests/report/trace_fixture.c)
  add_executable(report_bench ${CMAKE_CURRENT_LIST_DIR}/report_bench.c
                 ${CMAKE_SOURCE_DIR}/tests/report/trace_fixture.c)
  target_include_directories(report_bench PRIVATE ${CMAKE_SOURCE_DIR}/tests/report)
  target_link_libraries(report_bench PRIVATE topo_report_core topo_common)
endif()
