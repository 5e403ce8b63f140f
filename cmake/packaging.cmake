# SPDX-License-Identifier: Apache-2.0
# Installation of the documents and CPack packaging (.deb always, .rpm when rpmbuild is found).
# Included at the end of the root CMakeLists.txt, after every target's own install() rules:
#   lib/   libtopo-tuner.so, libtopo-profiler.so and their libnccl-{tuner,profiler}-topo.so aliases
#          (tuner-plugin/, profiler-plugin/), lib/topo/ the demo's fake CUPTI (tools/demo/)
#   bin/   topo-report, topo-tune, topo-demo, topo-calibrate where built (tools/*/)
#   share/doc/topo/  README.md and docs/ (how-tos, formats, man pages as docs/man/*.md)
#   share/man/man1/  every program's man page, built from docs/man/*.md (cmake/man.cmake)
# Two packages (CPack components): topo (plugins, topo-report, topo-tune, topo-demo, docs; needs
# libc and zlib), and topo-calibrate (topo-calibrate, topo-profiler-cost: CUDA runtime and NCCL)
# where those were built.
# `cpack` in the build directory writes the packages; the package version carries git's.

# The version (TOPO_GIT_DESCRIBE, root CMakeLists.txt) is taken at configure time; a new commit or
# checkout re-runs the configure step (files git updates then: HEAD and the current branch's ref),
# so plugins, tools and packages never carry a stale version.
execute_process(COMMAND git symbolic-ref -q HEAD WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                OUTPUT_VARIABLE topo_git_ref OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
foreach(topo_git_file HEAD ${topo_git_ref} packed-refs)
  execute_process(COMMAND git rev-parse --git-path ${topo_git_file} WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                  OUTPUT_VARIABLE topo_git_path OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(topo_git_path)
    get_filename_component(topo_git_path "${topo_git_path}" ABSOLUTE BASE_DIR ${CMAKE_SOURCE_DIR})
    if(EXISTS "${topo_git_path}")
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${topo_git_path}")
    endif()
  endif()
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/man.cmake)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
# The two documents outside docs/ that README.md and docs/ link to, at the same relative paths.
install(FILES ${CMAKE_SOURCE_DIR}/bench/RESULTS.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/bench)
install(FILES ${CMAKE_SOURCE_DIR}/tests/gpu/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/tests/gpu)
# docs/ keeps its name so that the README's links (docs/quickstart.md ...) work where installed.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md")

# Package version: the project's plus git's description; '-' is not allowed in an RPM version and
# splits a Debian one, so it becomes '.'.
string(REPLACE "-" "." topo_pkg_git "${TOPO_GIT_DESCRIBE}")
set(CPACK_PACKAGE_NAME "topo")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}+${topo_pkg_git}")
set(CPACK_PACKAGE_VENDOR "topo")
set(CPACK_PACKAGE_CONTACT "topo maintainers <topo@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "NCCL tuner and profiler plugins, with report and calibration tools")
set(CPACK_PACKAGE_DESCRIPTION
    "libtopo-tuner.so picks NCCL's algorithm, protocol and channels from measured link costs;\n\
libtopo-profiler.so records every collective with GPU timing, NVTX ranges and per-rank traces;\n\
topo-report turns the traces into communication, overlap and bandwidth figures;\n\
topo-calibrate (when built with CUDA and NCCL) measures a machine and writes the tuner's profile.")
set(CPACK_PACKAGE_INSTALL_DIRECTORY "topo")
set(CPACK_STRIP_FILES OFF)

# One package per component: topo, and topo-calibrate where it was built.
set(CPACK_COMPONENTS_ALL topo)
if(TARGET topo-calibrate)
  list(APPEND CPACK_COMPONENTS_ALL calibrate)
endif()
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_RPM_COMPONENT_INSTALL ON)

# .deb: dependencies written by hand, and checked by tests/install/package_check.sh against what
# every ELF file of the package needs (readelf NEEDED). dpkg-shlibdeps would fail on
# topo-calibrate's libnccl and libcudart, which come from NVIDIA's packages or installers.
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_PACKAGE_SECTION "devel")
set(CPACK_DEBIAN_TOPO_PACKAGE_NAME "topo")
set(CPACK_DEBIAN_TOPO_PACKAGE_DEPENDS "libc6 (>= 2.34), zlib1g")
set(CPACK_DEBIAN_TOPO_PACKAGE_SUGGESTS "libnccl2, topo-calibrate")
set(CPACK_DEBIAN_CALIBRATE_PACKAGE_NAME "topo-calibrate")
# NVIDIA's packages: libnccl2, and the CUDA runtime of the toolkit it was built with.
set(topo_cudart_pkg "")
if(CUDAToolkit_VERSION_MAJOR)
  set(topo_cudart_pkg ", cuda-cudart-${CUDAToolkit_VERSION_MAJOR}-${CUDAToolkit_VERSION_MINOR}")
endif()
set(CPACK_DEBIAN_CALIBRATE_PACKAGE_DEPENDS
    "topo (= ${PROJECT_VERSION}+${topo_pkg_git}), libc6 (>= 2.34), libstdc++6, libgcc-s1, libnccl2${topo_cudart_pkg}")

# .rpm: no automatic Requires (the same libnccl / libcudart reason).
set(CPACK_RPM_FILE_NAME RPM-DEFAULT)
set(CPACK_RPM_PACKAGE_LICENSE "Apache-2.0")
set(CPACK_RPM_PACKAGE_GROUP "Development/Tools")
set(CPACK_RPM_PACKAGE_AUTOREQ OFF)
set(CPACK_RPM_TOPO_PACKAGE_NAME "topo")
set(CPACK_RPM_TOPO_PACKAGE_REQUIRES "glibc >= 2.34, zlib")
set(CPACK_RPM_CALIBRATE_PACKAGE_NAME "topo-calibrate")
set(CPACK_RPM_CALIBRATE_PACKAGE_REQUIRES "topo, glibc >= 2.34, libnccl")
set(CPACK_RPM_SPEC_MORE_DEFINE "%define _build_id_links none")

find_program(TOPO_RPMBUILD rpmbuild)
set(CPACK_GENERATOR DEB)
if(TOPO_RPMBUILD)
  list(APPEND CPACK_GENERATOR RPM)
else()
  message(STATUS "topo: rpmbuild not found: cpack writes the .deb only (apt-get install rpm for the .rpm)")
endif()
include(CPack)
