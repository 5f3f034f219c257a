# remote/runaway_kernel: a client leaves a kernel that never returns, the next client
# of the same pocld must still be served (each session runs in its own pocld process).
# Included from remote_tests.cmake (same variables).
add_executable(remote_test_runaway_kernel test_runaway_kernel.c)
target_compile_definitions(remote_test_runaway_kernel PRIVATE
  CL_TARGET_OPENCL_VERSION=${OPENCL_HEADER_VERSION}
  CL_USE_DEPRECATED_OPENCL_1_2_APIS)
if(NOT HAVE_OPENCL_H)
  target_include_directories(remote_test_runaway_kernel PRIVATE "${CMAKE_SOURCE_DIR}/include")
endif()
target_include_directories(remote_test_runaway_kernel PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
target_link_libraries(remote_test_runaway_kernel ${OPENCL_LIBS})

if(ENABLE_HOST_CPU_DEVICES)
  # Bounds: the spinning client ~1 s after its build (150 s outer bound), the second
  # client 30 s (watchdog, 40 s outer bound), the log check 20 s.
  add_test(NAME remote/runaway_kernel
    COMMAND "${REMOTE_TESTS_DIR}/test_runaway_kernel.sh"
            "${RUN_REMOTE}" "${STATE}" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_runaway_kernel>)
  set_tests_properties(remote/runaway_kernel PROPERTIES LABELS "remote"
    FIXTURES_REQUIRED pocld TIMEOUT 240
    FAIL_REGULAR_EXPRESSION "runaway_kernel: FAIL")
endif()
