# remote/cross_platform: migrations between two devices of one server that are in two
# native platforms there, copied by pocld through its own memory; checks the bits and
# that none of the bytes crossed the client.  Own pocld.  Included from CMakeLists.txt.
add_executable(remote_test_cross_platform test_cross_platform.c)
target_compile_definitions(remote_test_cross_platform PRIVATE
  CL_TARGET_OPENCL_VERSION=${OPENCL_HEADER_VERSION}
  CL_USE_DEPRECATED_OPENCL_1_2_APIS)
# pocl_remote_ext.h (the traffic query) and cl_ext_pocl.h (content size)
target_include_directories(remote_test_cross_platform PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}"
  "${CMAKE_SOURCE_DIR}/lib/CL/devices/remote" "${CMAKE_SOURCE_DIR}/include")
target_link_libraries(remote_test_cross_platform ${OPENCL_LIBS})

if(ENABLE_HOST_CPU_DEVICES)
  add_test(NAME remote/cross_platform
    COMMAND "${REMOTE_TESTS_DIR}/test_cross_platform.sh" "${FIXTURE}"
            $<TARGET_FILE:pocld> "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_cross_platform>
            "${CMAKE_CURRENT_BINARY_DIR}/cross_platform")
  set_tests_properties(remote/cross_platform PROPERTIES LABELS "remote" TIMEOUT 400
    PASS_REGULAR_EXPRESSION "cross_platform: PASS" FAIL_REGULAR_EXPRESSION "cross_platform: FAIL")
endif()

# remote/pointcloud_platforms: remote/pointcloud with the decoder and the compute device
# of its second server in two contexts there, as the hevc device in PoCL's platform and
# NVIDIA's GPU are: the decoded frame still must not cross the client link with P2P.
if(BUILD_STREAM AND BUILD_HEVC AND ENABLE_REMOTE_SERVER)
  add_test(NAME remote/pointcloud_platforms
    COMMAND "${CMAKE_CURRENT_SOURCE_DIR}/test_pointcloud.sh" "${REMOTE_REPO_DIR}"
            "${CMAKE_BINARY_DIR}/..")
  set_tests_properties(remote/pointcloud_platforms PROPERTIES LABELS "remote"
    TIMEOUT 300 SKIP_RETURN_CODE 77 FAIL_REGULAR_EXPRESSION "pointcloud: FAIL"
    PASS_REGULAR_EXPRESSION "pointcloud: PASS" ENVIRONMENT "POCLD_CONTEXT_PER_DEVICE=1")
endif()
