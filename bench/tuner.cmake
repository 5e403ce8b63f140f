# SPDX-License-Identifier: Apache-2.0
# tuner_bench: ns per getCollInfo through the plugin host on a realistic mix, init time per
# communicator, beside an empty tuner (tuner_noop) measured the same way in the same run.
if(TARGET topo-tuner AND TARGET topo_host)
  add_library(topo-tuner-noop MODULE ${CMAKE_CURRENT_LIST_DIR}/tuner_noop.c)
  target_link_libraries(topo-tuner-noop PRIVATE topo_common)
  add_executable(tuner_bench ${CMAKE_CURRENT_LIST_DIR}/tuner_bench.c)
  target_link_libraries(tuner_bench PRIVATE topo_host topo_common m)
  target_compile_definitions(tuner_bench PRIVATE
    TOPO_BENCH_TUNER_SO="$<TARGET_FILE:topo-tuner>"
    TOPO_BENCH_NOOP_SO="$<TARGET_FILE:topo-tuner-noop>")
  add_dependencies(tuner_bench topo-tuner topo-tuner-noop)
  # rules_bench: init time and ns per call by rule count (10, 1,000, 100,000) and shape.
  add_executable(rules_bench ${CMAKE_CURRENT_LIST_DIR}/rules_bench.c)
  target_link_libraries(rules_bench PRIVATE topo_host topo_common)
  target_compile_definitions(rules_bench PRIVATE
    TOPO_BENCH_TUNER_SO="$<TARGET_FILE:topo-tuner>"
    TOPO_BENCH_NOOP_SO="$<TARGET_FILE:topo-tuner-noop>")
  add_dependencies(rules_bench topo-tuner topo-tuner-noop)
endif()
