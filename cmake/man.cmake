# SPDX-License-Identifier: Apache-2.0
# Man pages: every installed program's page in docs/man/<program>.md becomes share/man/man1/
# <program>.1 at build time, through go-md2man (Debian package go-md2man) and cmake/md2man.sh.
# Without go-md2man the build goes on without them and says so; tests/install then fails, so that
# a build that would install no man pages never passes unnoticed. Included by packaging.cmake.
find_program(TOPO_GO_MD2MAN go-md2man)
set(TOPO_MAN_PAGES topo-report topo-tune topo-demo)
set(TOPO_MAN_PAGES_CALIBRATE "")
if(TARGET topo-calibrate)
  set(TOPO_MAN_PAGES_CALIBRATE topo-calibrate topo-profiler-cost)
endif()
set(TOPO_MAN_DIR ${CMAKE_BINARY_DIR}/man)
if(TOPO_GO_MD2MAN)
  set(topo_man_outputs "")
  foreach(page ${TOPO_MAN_PAGES} ${TOPO_MAN_PAGES_CALIBRATE})
    set(src ${CMAKE_SOURCE_DIR}/docs/man/${page}.md)
    set(out ${TOPO_MAN_DIR}/${page}.1)
    add_custom_command(OUTPUT ${out}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${TOPO_MAN_DIR}
      COMMAND sh ${CMAKE_SOURCE_DIR}/cmake/md2man.sh ${TOPO_GO_MD2MAN} ${src} ${out} ${TOPO_VERSION_STRING}
      DEPENDS ${src} ${CMAKE_SOURCE_DIR}/cmake/md2man.sh
      COMMENT "man page ${page}.1" VERBATIM)
    list(APPEND topo_man_outputs ${out})
    set(component topo)
    if(page IN_LIST TOPO_MAN_PAGES_CALIBRATE)
      set(component calibrate)
    endif()
    install(FILES ${out} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${component})
  endforeach()
  add_custom_target(topo-man ALL DEPENDS ${topo_man_outputs})
else()
  message(WARNING "topo: go-md2man not found: no man pages are built or installed (apt-get install go-md2man)")
endif()
