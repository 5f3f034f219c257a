# pocld as a service (doc/operating.md): its configuration file, readiness and reloads, and the
# Debian packages of tools/package.sh. Included at the end of tests/remote/CMakeLists.txt,
# which provides FIXTURE, RUN_REMOTE, REMOTE_TESTS_DIR and REMOTE_REPO_DIR.

# A session that lives through reloads and a cut (test_reload.sh).
add_executable(remote_test_reload_client test_reload_client.c)
target_compile_definitions(remote_test_reload_client PRIVATE
  CL_TARGET_OPENCL_VERSION=${OPENCL_HEADER_VERSION} CL_USE_DEPRECATED_OPENCL_1_2_APIS)
if(NOT HAVE_OPENCL_H)
  target_include_directories(remote_test_reload_client PRIVATE "${CMAKE_SOURCE_DIR}/include")
endif()
target_include_directories(remote_test_reload_client PRIVATE "${CMAKE_CURRENT_SOURCE_DIR}")
target_link_libraries(remote_test_reload_client ${OPENCL_LIBS})

if(ENABLE_HOST_CPU_DEVICES AND ENABLE_EXAMPLES)
  # Every option from one file, bad values and files refused with the file and line.
  add_test(NAME remote/pocld_config
    COMMAND "${REMOTE_TESTS_DIR}/test_config.sh" "${FIXTURE}" "$<TARGET_FILE:pocld>"
            "${CMAKE_BINARY_DIR}" "${CMAKE_CURRENT_BINARY_DIR}/pocld_config")
  set_tests_properties(remote/pocld_config PROPERTIES LABELS "remote" TIMEOUT 180
    FAIL_REGULAR_EXPRESSION "pocld_config: FAIL")

  # sd_notify over a path and an abstract socket; SIGHUP reloads of a key, and of TLS
  # with a key, with an old session cut and resumed across them.
  add_test(NAME remote/reload
    COMMAND "${REMOTE_TESTS_DIR}/test_reload.sh" "${FIXTURE}" "${RUN_REMOTE}"
            "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}" $<TARGET_FILE:remote_vecadd>
            $<TARGET_FILE:fault_proxy> $<TARGET_FILE:remote_test_reload_client>
            "${CMAKE_CURRENT_BINARY_DIR}/reload")
  set_tests_properties(remote/reload PROPERTIES LABELS "remote" TIMEOUT 300
    FAIL_REGULAR_EXPRESSION "reload: FAIL")

  # The packages (label "package"): built by tools/package.sh (tools/test.sh builds the
  # thin build they come from first, so this one only packs), then installed into a
  # throwaway root and run from there, next to Debian's pocl (its .deb files, which
  # tools/setup.sh downloads into BUILD_DIR/debian-pocl). BUILD_DIR: this build's
  # parent, as the tools use.
  get_filename_component(PACKAGE_BUILD_ROOT "${CMAKE_BINARY_DIR}" DIRECTORY)
  set(PACKAGE_DIR "${CMAKE_CURRENT_BINARY_DIR}/packages")
  add_test(NAME package/build
    COMMAND sh -c "rm -rf \"$1\" && \"$0\" --out \"$1\""
            "${REMOTE_REPO_DIR}/tools/package.sh" "${PACKAGE_DIR}")
  set_tests_properties(package/build PROPERTIES LABELS "package" TIMEOUT 1800
    ENVIRONMENT "BUILD_DIR=${PACKAGE_BUILD_ROOT}" FIXTURES_SETUP packages)
  add_test(NAME package/install
    COMMAND "${REMOTE_TESTS_DIR}/test_package.sh" "${REMOTE_REPO_DIR}" "${CMAKE_BINARY_DIR}"
            "${PACKAGE_DIR}" "${CMAKE_CURRENT_BINARY_DIR}/package"
            "${PACKAGE_BUILD_ROOT}/debian-pocl")
  set_tests_properties(package/install PROPERTIES LABELS "package" TIMEOUT 300
    FIXTURES_REQUIRED packages FAIL_REGULAR_EXPRESSION "package: FAIL")
endif()
