# SPDX-License-Identifier: Apache-2.0
# profiler_bench: ns per profiler callback through the plugin host (Coll start/stop, KernelCh
# start/state/stop), median and p99, beside a do-nothing profiler (profiler_null) measured the
# same way in the same run; trace bytes per collective; writer throughput in records/s.
# profiler_init_bench: the first communicator's init time and resident memory against the same
# plugin with TOPO_PROFILER_ENABLE=0, each sample a fresh process.
if(TARGET topo-profiler AND TARGET topo_host)
  add_library(topo-profiler-null MODULE ${CMAKE_CURRENT_LIST_DIR}/profiler_null.c)
  target_link_libraries(topo-profiler-null PRIVATE topo_common)
  add_executable(profiler_bench ${CMAKE_CURRENT_LIST_DIR}/profiler_bench.c)
  target_link_libraries(profiler_bench PRIVATE topo_host topo_common m)
  target_compile_definitions(profiler_bench PRIVATE
    TOPO_BENCH_PROFILER_SO="$<TARGET_FILE:topo-profiler>"
    TOPO_BENCH_NULL_SO="$<TARGET_FILE:topo-profiler-null>")
  add_dependencies(profiler_bench topo-profiler topo-profiler-null)
  add_executable(profiler_init_bench ${CMAKE_CURRENT_LIST_DIR}/profiler_init_bench.c)
  target_link_libraries(profiler_init_bench PRIVATE topo_host topo_common)
  target_compile_definitions(profiler_init_bench PRIVATE
    TOPO_BENCH_PROFILER_SO="$<TARGET_FILE:topo-profiler>")
  add_dependencies(profiler_init_bench topo-profiler)
endif()
