# remote/pointcloud: the chain stream source -> HEVC decoder -> OpenCL C kernels of
# examples/remote/pointcloud across two servers of its own, in the papers' four
# configurations (tools/bench.sh pointcloud): equal results, and only content-size
# bytes between the servers.  Needs the stream and hevc drivers and ffmpeg.
# Included from CMakeLists.txt.
if(BUILD_STREAM AND BUILD_HEVC AND ENABLE_REMOTE_SERVER)
  add_test(NAME remote/pointcloud
    COMMAND "${CMAKE_CURRENT_SOURCE_DIR}/test_pointcloud.sh" "${REMOTE_REPO_DIR}"
            "${CMAKE_BINARY_DIR}/..")
  set_tests_properties(remote/pointcloud PROPERTIES LABELS "remote"
    TIMEOUT 300 SKIP_RETURN_CODE 77 FAIL_REGULAR_EXPRESSION "pointcloud: FAIL"
    PASS_REGULAR_EXPRESSION "pointcloud: PASS")
endif()
