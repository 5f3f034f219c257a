# remote/stream_source: the stream source device (lib/CL/devices/stream) on an HEVC clip
# and a raw file made at test time (ffmpeg + libx265), from a file, with loop, from a
# named pipe and a TCP feed, a missing file; locally and through a pocld of its own.
# Included from remote_tests.cmake (same variables).
add_executable(remote_test_stream_source test_stream_source.c)
target_compile_definitions(remote_test_stream_source PRIVATE
  CL_TARGET_OPENCL_VERSION=${OPENCL_HEADER_VERSION}
  CL_USE_DEPRECATED_OPENCL_1_2_APIS)
target_include_directories(remote_test_stream_source PRIVATE
  "${CMAKE_CURRENT_SOURCE_DIR}" "${CMAKE_SOURCE_DIR}/include")
target_link_libraries(remote_test_stream_source ${OPENCL_LIBS})

add_test(NAME remote/stream_source
  COMMAND "${REMOTE_TESTS_DIR}/test_stream_source.sh" "${FIXTURE}" "${RUN_REMOTE}"
          "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}"
          $<TARGET_FILE:remote_test_stream_source>
          "${CMAKE_CURRENT_BINARY_DIR}/stream_source")
set_tests_properties(remote/stream_source PROPERTIES LABELS "remote"
  TIMEOUT 600 SKIP_RETURN_CODE 77 FAIL_REGULAR_EXPRESSION "stream_source: FAIL")
