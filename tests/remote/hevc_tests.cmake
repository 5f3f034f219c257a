# The HEVC decoder device (lib/CL/devices/hevc): ffmpeg's own decode of a clip made at
# test time, bit for bit, on the local device and through remote (each on a pocld of
# its own), and hostile bitstreams. Included from CMakeLists.txt, which provides
# FIXTURE, RUN_REMOTE and REMOTE_TESTS_DIR.
if(BUILD_HEVC)
  add_executable(remote_test_hevc_decoder test_hevc_decoder.c)
  target_compile_definitions(remote_test_hevc_decoder PRIVATE
    CL_TARGET_OPENCL_VERSION=${OPENCL_HEADER_VERSION}
    CL_USE_DEPRECATED_OPENCL_1_2_APIS)
  target_include_directories(remote_test_hevc_decoder PRIVATE
    "${CMAKE_CURRENT_SOURCE_DIR}" "${CMAKE_SOURCE_DIR}/include")
  target_link_libraries(remote_test_hevc_decoder ${OPENCL_LIBS})
  foreach(mode local remote)
    if(mode STREQUAL "local")
      set(tname remote/hevc_decoder_local)
    else()
      set(tname remote/hevc_decoder)
    endif()
    add_test(NAME ${tname}
      COMMAND "${REMOTE_TESTS_DIR}/test_hevc_decoder.sh" ${mode}
              "${FIXTURE}" "${RUN_REMOTE}" "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}"
              $<TARGET_FILE:remote_test_hevc_decoder>
              "${CMAKE_CURRENT_BINARY_DIR}/hevc_decoder_${mode}")
    set_tests_properties(${tname} PROPERTIES LABELS "remote" TIMEOUT 600
      SKIP_RETURN_CODE 77 FAIL_REGULAR_EXPRESSION "hevc_decoder: FAIL")
  endforeach()
endif()
