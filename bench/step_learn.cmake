# SPDX-License-Identifier: Apache-2.0
# step_learn_bench: ns per operation of the step learner (common/step_learn.h) on a DDP stream
# whose step is known, on irregular traffic (searching throughout) and on one operation kind (TP),
# beside a 64-byte record copied into a ring, measured in the same run.
add_executable(step_learn_bench ${CMAKE_CURRENT_LIST_DIR}/step_learn_bench.c)
target_link_libraries(step_learn_bench PRIVATE topo_common)
