# remote/write_overlap: while a 64 MiB write's bytes are held back in the client
# (userfaultfd), a kernel and a read on another queue complete, also behind a user event
# set meanwhile; a copy behind the write on its own queue then sees every written bit.
# Included from CMakeLists.txt.
add_executable(remote_test_write_overlap test_write_overlap.c)
target_compile_definitions(remote_test_write_overlap PRIVATE
  CL_TARGET_OPENCL_VERSION=${OPENCL_HEADER_VERSION}
  CL_USE_DEPRECATED_OPENCL_1_2_APIS)
if(NOT HAVE_OPENCL_H)
  target_include_directories(remote_test_write_overlap PRIVATE "${CMAKE_SOURCE_DIR}/include")
endif()
target_include_directories(remote_test_write_overlap PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
target_link_libraries(remote_test_write_overlap ${OPENCL_LIBS} pthread)

if(ENABLE_HOST_CPU_DEVICES)
  add_test(NAME remote/write_overlap
    COMMAND "${RUN_REMOTE}" "${STATE}" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_write_overlap>)
  set_tests_properties(remote/write_overlap PROPERTIES LABELS "remote"
    FIXTURES_REQUIRED pocld TIMEOUT 300 FAIL_REGULAR_EXPRESSION "write_overlap: FAIL")
endif()
