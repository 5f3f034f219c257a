# remote/trace: the command trace (doc/tracing.md) through two servers of its
# own, merged and checked.  Included from tests/remote/CMakeLists.txt (same
# variables as remote_tests.cmake).
add_executable(remote_test_trace test_trace.c)
target_compile_definitions(remote_test_trace PRIVATE
  CL_TARGET_OPENCL_VERSION=${OPENCL_HEADER_VERSION}
  CL_USE_DEPRECATED_OPENCL_1_2_APIS)
if(NOT HAVE_OPENCL_H)
  target_include_directories(remote_test_trace PRIVATE "${CMAKE_SOURCE_DIR}/include")
endif()
target_include_directories(remote_test_trace PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
target_link_libraries(remote_test_trace ${OPENCL_LIBS})

if(ENABLE_HOST_CPU_DEVICES)
  add_test(NAME remote/trace
    COMMAND "${REMOTE_TESTS_DIR}/test_trace.sh"
            "${FIXTURE}" "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_trace>
            "${CMAKE_CURRENT_BINARY_DIR}/trace" "${REMOTE_REPO_DIR}")
  set_tests_properties(remote/trace PROPERTIES LABELS "remote" TIMEOUT 240
    FAIL_REGULAR_EXPRESSION "trace: FAIL")
endif()
