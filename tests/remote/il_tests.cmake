# SPIR-V programs (clCreateProgramWithIL, specialization constants, the module as a
# binary) through remote and on the local pthread device, and a device without SPIR-V
# that advertises none. Needs PoCL's own SPIR-V support (ENABLE_SPIRV: the build's
# llvm-spirv), which also makes the module from il_programs.cl. Included from
# CMakeLists.txt, which provides FIXTURE, RUN_REMOTE, STATE, REMOTE_TEST_ENV and
# REMOTE_TESTS_DIR.
if(ENABLE_HOST_CPU_DEVICES AND ENABLE_SPIRV)
  set(il_module "${CMAKE_CURRENT_BINARY_DIR}/il_programs.spv")
  add_custom_command(OUTPUT "${il_module}"
    COMMAND "${CLANG}" -c -target spir64 -cl-std=CL1.2 -O1 -emit-llvm
            -Xclang -finclude-default-header
            "${CMAKE_CURRENT_SOURCE_DIR}/il_programs.cl" -o "${il_module}.bc"
    COMMAND "${LLVM_SPIRV}" "${il_module}.bc" -o "${il_module}"
    DEPENDS "${CMAKE_CURRENT_SOURCE_DIR}/il_programs.cl"
    COMMENT "SPIR-V module of remote/il_programs" VERBATIM)
  add_custom_target(remote_il_module DEPENDS "${il_module}")

  add_executable(remote_test_il_programs test_il_programs.c)
  add_dependencies(remote_test_il_programs remote_il_module)
  target_compile_definitions(remote_test_il_programs PRIVATE
    CL_TARGET_OPENCL_VERSION=${OPENCL_HEADER_VERSION}
    CL_USE_DEPRECATED_OPENCL_1_2_APIS)
  target_include_directories(remote_test_il_programs PRIVATE
    "${CMAKE_CURRENT_SOURCE_DIR}" "${CMAKE_SOURCE_DIR}/include")
  target_link_libraries(remote_test_il_programs ${OPENCL_LIBS})

  # Through the fixture's pocld, with this build's pthread device beside the remote
  # one: the remote device's IL queries must answer as the server's device does.
  add_test(NAME remote/il_programs
    COMMAND env "RUN_REMOTE_DEVICES=remote pthread" "${RUN_REMOTE}" "${STATE}"
            "${CMAKE_BINARY_DIR}" $<TARGET_FILE:remote_test_il_programs> remote
            "${il_module}")
  set_tests_properties(remote/il_programs PROPERTIES LABELS "remote"
    FIXTURES_REQUIRED pocld TIMEOUT 300 FAIL_REGULAR_EXPRESSION "il_programs: FAIL")
  add_test(NAME remote/il_programs_local
    COMMAND $<TARGET_FILE:remote_test_il_programs> local "${il_module}")
  set_tests_properties(remote/il_programs_local PROPERTIES LABELS "remote"
    TIMEOUT 300 ENVIRONMENT "${REMOTE_TEST_ENV};POCL_DEVICES=pthread"
    FAIL_REGULAR_EXPRESSION "il_programs: FAIL")

  # Through remote over Intel's OpenCL CPU runtime (the fixture pocld_intel of
  # remote_tests.cmake, skipped without it), where the client sees no Intel device to
  # compare the IL queries with. Not natively: the runtime fails two checks itself
  # (doc/conformance.md).
  add_test(NAME remote/il_programs_intel
    COMMAND "${RUN_REMOTE}" "${STATE_INTEL}" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_il_programs> remote-only "${il_module}")
  set_tests_properties(remote/il_programs_intel PROPERTIES LABELS "remote"
    FIXTURES_REQUIRED pocld_intel TIMEOUT 720 FAIL_REGULAR_EXPRESSION "il_programs: FAIL")

  # Through remote with the thin build's client (no LLVM, no SPIR-V support of its
  # own: PoCL's core reads the module's constants itself, patch 0125), which
  # tools/test.sh builds first; skipped without it. Under tools/sanitize.sh the
  # sanitized thin client (its RUN_REMOTE_VENDORS).
  get_filename_component(il_build_root "${CMAKE_BINARY_DIR}/.." ABSOLUTE)
  add_test(NAME remote/il_programs_thin
    COMMAND sh -c "[ -d \"$0\" ] || { echo \"il_programs: SKIP: no thin build ($0)\"; exit 77; }; RUN_REMOTE_VENDORS=\"\${RUN_REMOTE_VENDORS:-$0}\" exec \"$1\" \"$2\" \"$3\" \"$4\" remote-only \"$5\""
            "${il_build_root}/thin/ocl-vendors" "${RUN_REMOTE}" "${STATE}"
            "${CMAKE_BINARY_DIR}" $<TARGET_FILE:remote_test_il_programs> "${il_module}")
  set_tests_properties(remote/il_programs_thin PROPERTIES LABELS "remote"
    FIXTURES_REQUIRED pocld TIMEOUT 300 SKIP_RETURN_CODE 77
    FAIL_REGULAR_EXPRESSION "il_programs: FAIL")

  # A device without SPIR-V: the CUSTOM hevc device (no compiler), locally and on a
  # pocld of its own serving "pthread hevc" (the CUSTOM device is index 1).
  if(BUILD_HEVC)
    add_test(NAME remote/il_programs_no_il_local
      COMMAND $<TARGET_FILE:remote_test_il_programs> no-il-local "${il_module}")
    set_tests_properties(remote/il_programs_no_il_local PROPERTIES LABELS "remote"
      TIMEOUT 120 ENVIRONMENT "${REMOTE_TEST_ENV};POCL_DEVICES=hevc"
      FAIL_REGULAR_EXPRESSION "il_programs: FAIL")
    set(il_state "${CMAKE_CURRENT_BINARY_DIR}/il_programs_no_il.state")
    add_test(NAME remote/il_programs_no_il
      COMMAND sh -c "trap '\"$0\" stop \"$1\" >/dev/null 2>&1' EXIT; POCLD_SERVED_DEVICES='pthread hevc' \"$0\" start \"$1\" \"$2\" \"$3\" || exit 1; port=$(sed -n 's/^POCLD_PORT=//p' \"$1\"); \"$4\" \"$1\" \"$3\" env POCL_REMOTE0_PARAMETERS=127.0.0.1:$port/1 \"$5\" no-il \"$6\""
              "${FIXTURE}" "${il_state}" "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}"
              "${RUN_REMOTE}" $<TARGET_FILE:remote_test_il_programs> "${il_module}")
    set_tests_properties(remote/il_programs_no_il PROPERTIES LABELS "remote"
      TIMEOUT 300 FAIL_REGULAR_EXPRESSION "il_programs: FAIL")
  endif()
endif()
