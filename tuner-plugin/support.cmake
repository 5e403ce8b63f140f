# SPDX-License-Identifier: Apache-2.0
# topo_tuner_support: the tuner's supporting modules (rules in nccl_tuner.conf format, NCCL 2.28.9's
# own cost model), a static PIC library linked by libtopo-tuner.so, topo-tune and the unit tests.
# Included from the root CMakeLists.txt right after common/ so every later directory can link it.
add_library(topo_tuner_support STATIC
            ${CMAKE_CURRENT_LIST_DIR}/rules.c
            ${CMAKE_CURRENT_LIST_DIR}/nccl_model.c)
target_include_directories(topo_tuner_support PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(topo_tuner_support PUBLIC topo_common)
