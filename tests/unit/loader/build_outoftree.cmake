# ctest fixture step: configure and build tests/outoftree as its own project.
file(REMOVE_RECURSE ${BUILD_DIR})
execute_process(
  COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${BUILD_DIR}
    -DAPH_PLUGIN_API_DIR=${PLUGIN_API_DIR} -DCMAKE_C_COMPILER=${C_COMPILER}
  RESULT_VARIABLE configure_rc)
if(NOT configure_rc EQUAL 0)
  message(FATAL_ERROR "configuring the out-of-tree plugin failed (${configure_rc})")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} RESULT_VARIABLE build_rc)
if(NOT build_rc EQUAL 0)
  message(FATAL_ERROR "building the out-of-tree plugin failed (${build_rc})")
endif()
