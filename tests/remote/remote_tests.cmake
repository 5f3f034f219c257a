# PoCL-R end-to-end tests: real pocld processes, real sockets, the real CPU device.
# Included at the end of tests/remote/CMakeLists.txt, which provides FIXTURE, RUN_REMOTE,
# STATE (the "pocld" fixture's state file), REMOTE_TEST_ENV and REMOTE_TESTS_DIR.
# Every test: label "remote", a TIMEOUT, exit status 0 only on success, and a
# "<name>: PASS" or "<name>: FAIL: <reason>" line (no PASS_REGULAR_EXPRESSION: that
# would make CTest ignore the exit status, e.g. a crash after the PASS line). The test
# programs are plain OpenCL programs linked like upstream's tests (OPENCL_LIBS: the ICD
# loader with ENABLE_ICD); they include remote_test_util.c (shared helpers).

# Target names carry a "remote_" prefix: upstream owns plain names like test_clFinish.
set(REMOTE_E2E_PROGRAMS
  concurrent_clients
  session_isolation
  server_killed
  error_codes
  api_buffers
  api_events
  api_programs
  mem_objects
  hostile_mem
  hostile_peer
  multi_server
  session_death
  program_binaries
  program_includes
  svm
  usm
  event_status
  coalesce
  builtin_kernels
  acks
  outage
  discovery)

foreach(prog ${REMOTE_E2E_PROGRAMS})
  set(tgt "remote_test_${prog}")
  add_executable(${tgt} "test_${prog}.c")
  target_compile_definitions(${tgt} PRIVATE
    CL_TARGET_OPENCL_VERSION=${OPENCL_HEADER_VERSION}
    CL_USE_DEPRECATED_OPENCL_1_2_APIS)
  if(NOT HAVE_OPENCL_H)
    target_include_directories(${tgt} PRIVATE "${CMAKE_SOURCE_DIR}/include")
  endif()
  # remote_test_util.c next to the sources; the wire protocol for the raw-socket test.
  # the traffic query (pocl_remote_ext.h) and cl_ext_pocl.h for the
  # multi-server test.
  target_include_directories(${tgt} PRIVATE
    "${CMAKE_CURRENT_SOURCE_DIR}" "${CMAKE_SOURCE_DIR}/protocol/wire"
    "${CMAKE_SOURCE_DIR}/lib/CL/devices/remote" "${CMAKE_SOURCE_DIR}/include")
  target_link_libraries(${tgt} ${OPENCL_LIBS})
endforeach()

# The client driver's layers: the channel (lib/CL/devices/remote/channel) includes no
# header of the driver above it, the driver only the channel's public one.
add_test(NAME remote/layering
  COMMAND "${REMOTE_TESTS_DIR}/test_layering.sh" "${REMOTE_REPO_DIR}/lib/CL/devices/remote"
          "${REMOTE_REPO_DIR}/protocol")
set_tests_properties(remote/layering PROPERTIES LABELS "remote" TIMEOUT 60
  FAIL_REGULAR_EXPRESSION "layering: FAIL")

if(ENABLE_HOST_CPU_DEVICES)
  set(remote_e2e_props LABELS "remote" FIXTURES_REQUIRED pocld)

  # remote/<prog> through the fixture's pocld, and remote/<prog>_local: the
  # same checks on the local pthread device (the program's argument "local").
  function(remote_and_local prog timeout)
    add_test(NAME remote/${prog}
      COMMAND "${RUN_REMOTE}" "${STATE}" "${CMAKE_BINARY_DIR}"
              $<TARGET_FILE:remote_test_${prog}>)
    set_tests_properties(remote/${prog} PROPERTIES ${remote_e2e_props}
      TIMEOUT ${timeout} FAIL_REGULAR_EXPRESSION "${prog}: FAIL")
    add_test(NAME remote/${prog}_local
      COMMAND $<TARGET_FILE:remote_test_${prog}> local)
    set_tests_properties(remote/${prog}_local PROPERTIES LABELS "remote"
      TIMEOUT ${timeout} ENVIRONMENT "${REMOTE_TEST_ENV};POCL_DEVICES=pthread"
      FAIL_REGULAR_EXPRESSION "${prog}: FAIL")
  endfunction()

  # 1. Four client processes at once on the fixture's pocld, 300 verified launches each.
  add_test(NAME remote/concurrent_clients
    COMMAND "${RUN_REMOTE}" "${STATE}" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_concurrent_clients> 4 300)
  set_tests_properties(remote/concurrent_clients PROPERTIES ${remote_e2e_props}
    TIMEOUT 300 FAIL_REGULAR_EXPRESSION "concurrent_clients: FAIL")

  # 2. Handshake refusals, raw-protocol cross-session access, two OpenCL clients.
  add_test(NAME remote/session_isolation
    COMMAND "${RUN_REMOTE}" "${STATE}" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_session_isolation>)
  set_tests_properties(remote/session_isolation PROPERTIES ${remote_e2e_props}
    TIMEOUT 300 FAIL_REGULAR_EXPRESSION "session_isolation: FAIL")

  # Mistyped addresses: the device is left out with a message, the others still served.
  add_test(NAME remote/bad_parameters
    COMMAND "${REMOTE_TESTS_DIR}/test_bad_parameters.sh" "${STATE}" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_vecadd>)
  set_tests_properties(remote/bad_parameters PROPERTIES ${remote_e2e_props}
    TIMEOUT 300 FAIL_REGULAR_EXPRESSION "bad_parameters: FAIL")

  # When pocld acknowledges: with a message when owed, by itself only later (raw protocol).
  add_test(NAME remote/acks
    COMMAND "${RUN_REMOTE}" "${STATE}" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_acks>)
  set_tests_properties(remote/acks PROPERTIES ${remote_e2e_props}
    TIMEOUT 120 FAIL_REGULAR_EXPRESSION "acks: FAIL")

  # 3. Its own pocld (not the fixture's: it gets killed), SIGKILLed under a client.
  add_test(NAME remote/server_killed
    COMMAND "${REMOTE_TESTS_DIR}/test_server_killed.sh"
            "${FIXTURE}" "${RUN_REMOTE}" "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_server_killed>
            "${CMAKE_CURRENT_BINARY_DIR}/server_killed")
  set_tests_properties(remote/server_killed PROPERTIES LABELS "remote"
    TIMEOUT 240
    FAIL_REGULAR_EXPRESSION "server_killed: FAIL")
  # ... and restarted on the same port: the client's resume is refused at once.
  add_test(NAME remote/server_restarted
    COMMAND "${REMOTE_TESTS_DIR}/test_server_killed.sh"
            "${FIXTURE}" "${RUN_REMOTE}" "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_server_killed>
            "${CMAKE_CURRENT_BINARY_DIR}/server_killed" restart)
  set_tests_properties(remote/server_restarted PROPERTIES LABELS "remote"
    TIMEOUT 240
    FAIL_REGULAR_EXPRESSION "server_(killed|restarted): FAIL")

  # 4. clinfo on the remote device vs. clinfo on the local pthread device (memory sizes
  #    that changed since the fixture started are re-checked on a pocld of its own,
  #    between two local runs that show whether the total held still meanwhile).
  find_program(CLINFO_PROGRAM clinfo)
  if(CLINFO_PROGRAM)
    add_test(NAME remote/clinfo_output
      COMMAND "${REMOTE_TESTS_DIR}/test_clinfo_output.sh"
              "${RUN_REMOTE}" "${STATE}" "${CMAKE_BINARY_DIR}" "${CLINFO_PROGRAM}"
              "${FIXTURE}" "$<TARGET_FILE:pocld>")
    set_tests_properties(remote/clinfo_output PROPERTIES ${remote_e2e_props}
      TIMEOUT 240
      FAIL_REGULAR_EXPRESSION "clinfo_output: FAIL")
  else()
    message(WARNING "clinfo not found: remote/clinfo_output disabled")
  endif()

  # 5. Error codes, remote vs. local pthread in the same platform.
  add_test(NAME remote/error_codes
    COMMAND "${RUN_REMOTE}" "${STATE}" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_error_codes>)
  set_tests_properties(remote/error_codes PROPERTIES ${remote_e2e_props}
    TIMEOUT 240 ENVIRONMENT "RUN_REMOTE_DEVICES=pthread remote"
   
    FAIL_REGULAR_EXPRESSION "error_codes: FAIL")

  # 6. API coverage, in three programs.
  foreach(part buffers events programs)
    add_test(NAME remote/api_${part}
      COMMAND "${RUN_REMOTE}" "${STATE}" "${CMAKE_BINARY_DIR}"
              $<TARGET_FILE:remote_test_api_${part}>)
    # Bound: setup watchdog + each check's own watchdog (a hung check is
    # abandoned and the next one runs) + teardown.
    set_tests_properties(remote/api_${part} PROPERTIES ${remote_e2e_props}
      TIMEOUT 720
      FAIL_REGULAR_EXPRESSION "api_${part}: FAIL")
  endforeach()
  # Memory objects as a local device has them: images of every format and
  # type, host access flags, overlapping sub-buffers; the same checks locally.
  remote_and_local(mem_objects 300)
  # Memory requests no OpenCL client sends (raw protocol): errors, the
  # session goes on.
  add_test(NAME remote/hostile_mem
    COMMAND "${RUN_REMOTE}" "${STATE}" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_hostile_mem>)
  set_tests_properties(remote/hostile_mem PROPERTIES ${remote_e2e_props}
    TIMEOUT 300 FAIL_REGULAR_EXPRESSION "hostile_mem: FAIL")
  # A peer's PEER_DATA whose status follows its bytes (raw peer link):
  # completed with that status; violations close the link.
  add_test(NAME remote/hostile_peer
    COMMAND "${RUN_REMOTE}" "${STATE}" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_hostile_peer>)
  set_tests_properties(remote/hostile_peer PROPERTIES ${remote_e2e_props}
    TIMEOUT 300 FAIL_REGULAR_EXPRESSION "hostile_peer: FAIL")
  # Event statuses as a local device shows them: CL_RUNNING once a command's
  # dependencies are done, failed user events, blocking calls that fail.
  remote_and_local(event_status 360)
  # Kernels of a burst held back to leave together keep their order and
  # complete without a flush; the same checks with nothing held.
  foreach(n 64 0)
    add_test(NAME remote/coalesce_${n}
      COMMAND "${RUN_REMOTE}" "${STATE}" "${CMAKE_BINARY_DIR}"
              $<TARGET_FILE:remote_test_coalesce>)
    set_tests_properties(remote/coalesce_${n} PROPERTIES ${remote_e2e_props}
      TIMEOUT 300 ENVIRONMENT "POCL_REMOTE_COALESCE=${n}"
      FAIL_REGULAR_EXPRESSION "coalesce: FAIL")
  endforeach()
  # A session process that dies (a kernel writing to a wild address) fails
  # its pending commands; the next context gets a fresh session.  On a pocld
  # of its own, whose sanitizer (tools/sanitize.sh) leaves the crash alone.
  add_test(NAME remote/session_death
    COMMAND "${REMOTE_TESTS_DIR}/test_session_death.sh" "${FIXTURE}" "${RUN_REMOTE}"
            "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_session_death>
            "${CMAKE_CURRENT_BINARY_DIR}/session_death")
  set_tests_properties(remote/session_death PROPERTIES LABELS "remote"
    TIMEOUT 240 FAIL_REGULAR_EXPRESSION "session_death: FAIL")
  # Program binaries (objects and libraries relinked from them) and
  # zero-sized NDRanges, through remote and locally.
  remote_and_local(program_binaries 400)
  # Headers included from the client's directories travel with the build.
  remote_and_local(program_includes 300)
  # Shared virtual memory: the same addresses on client and server.
  remote_and_local(svm 300)
  # Built-in kernels (clCreateProgramWithBuiltInKernels) as on the device.
  remote_and_local(builtin_kernels 300)
  # Unified shared memory (cl_intel_unified_shared_memory), served on the pthread
  # server's SVM; the local pthread device has none, and says so.
  add_test(NAME remote/usm
    COMMAND "${RUN_REMOTE}" "${STATE}" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_usm>)
  set_tests_properties(remote/usm PROPERTIES ${remote_e2e_props}
    TIMEOUT 300 FAIL_REGULAR_EXPRESSION "usm: FAIL")
  add_test(NAME remote/usm_no_usm_local
    COMMAND $<TARGET_FILE:remote_test_usm> no-usm-local)
  set_tests_properties(remote/usm_no_usm_local PROPERTIES LABELS "remote"
    TIMEOUT 120 ENVIRONMENT "${REMOTE_TEST_ENV};POCL_DEVICES=pthread"
    FAIL_REGULAR_EXPRESSION "usm: FAIL")

  # The same programs over a second vendor: the fixture "pocld_intel" serves Intel's
  # OpenCL CPU runtime (installed by tests/clients/setup_clients.sh, skipped without
  # it); remote/<prog>_intel runs through it, remote/<prog>_intel_local on that
  # runtime directly. Left out (doc/conformance.md, Intel's OpenCL CPU runtime):
  # event_status and builtin_kernels crash in the runtime itself, locally too.
  get_filename_component(REMOTE_BUILD_ROOT "${CMAKE_BINARY_DIR}/.." ABSOLUTE)
  set(INTEL_VENDORS "${REMOTE_BUILD_ROOT}/vendors/intel")
  set(STATE_INTEL "${CMAKE_CURRENT_BINARY_DIR}/pocld_intel.state")
  add_test(NAME remote/pocld_intel_start
    COMMAND sh -c "[ -f \"$0/intel-cpu.icd\" ] || { echo \"no $0/intel-cpu.icd: skipped\"; exit 77; }; POCLD_SERVED_VENDORS=\"$0\" exec \"$1\" start \"$2\" \"$3\" \"$4\""
            "${INTEL_VENDORS}" "${FIXTURE}" "${STATE_INTEL}" "$<TARGET_FILE:pocld>"
            "${CMAKE_BINARY_DIR}")
  add_test(NAME remote/pocld_intel_stop COMMAND "${FIXTURE}" stop "${STATE_INTEL}")
  set_tests_properties(remote/pocld_intel_start PROPERTIES
    LABELS "remote" TIMEOUT 120 SKIP_RETURN_CODE 77 FIXTURES_SETUP pocld_intel)
  set_tests_properties(remote/pocld_intel_stop PROPERTIES
    LABELS "remote" TIMEOUT 60 FIXTURES_CLEANUP pocld_intel)
  # usm: Intel's native USM through remote, and on the runtime directly.
  foreach(prog program_binaries program_includes svm usm api_buffers api_programs
               mem_objects api_events)
    add_test(NAME remote/${prog}_intel
      COMMAND "${RUN_REMOTE}" "${STATE_INTEL}" "${CMAKE_BINARY_DIR}"
              $<TARGET_FILE:remote_test_${prog}>)
    set_tests_properties(remote/${prog}_intel PROPERTIES LABELS "remote"
      FIXTURES_REQUIRED pocld_intel TIMEOUT 720 FAIL_REGULAR_EXPRESSION "${prog}: FAIL")
    # mem_objects and api_events fail on the runtime itself (an error code and a
    # kernel behind a failed user event, doc/conformance.md): through remote only.
    if(NOT prog MATCHES "^(mem_objects|api_events)$")
      add_test(NAME remote/${prog}_intel_local
        COMMAND $<TARGET_FILE:remote_test_${prog}> local)
      set_tests_properties(remote/${prog}_intel_local PROPERTIES LABELS "remote"
        FIXTURES_REQUIRED pocld_intel TIMEOUT 720
        ENVIRONMENT "OCL_ICD_VENDORS=${INTEL_VENDORS}"
        FAIL_REGULAR_EXPRESSION "${prog}: FAIL")
    endif()
  endforeach()
  # ... two of them again through the completion path of NVIDIA servers (pocld's
  # waiter thread and commands without native events), on a pocld of its own.
  add_test(NAME remote/waiter
    COMMAND "${REMOTE_TESTS_DIR}/test_waiter.sh"
            "${FIXTURE}" "${RUN_REMOTE}" "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_api_events> $<TARGET_FILE:remote_test_api_buffers>
            "${CMAKE_CURRENT_BINARY_DIR}/waiter")
  set_tests_properties(remote/waiter PROPERTIES LABELS "remote" TIMEOUT 900
    FAIL_REGULAR_EXPRESSION "waiter: FAIL")

  # 7. One context over several servers of its own (and a local device):
  #    migrations server to server, dependencies across servers, content size.
  #    cut: the same with random cuts of the client's connections to one server.
  #    nvidia: two servers on the paths they take over NVIDIA's OpenCL.
  #    lanes: two with peer lanes forced on, and migrations up to 64 MiB.
  #    lanes_four: four with peer lanes, the matmul's inputs pushed whole.
  #    peer_cut: two with the link between them cut at random.
  set(multi_server_modes two three mixed cut nvidia lanes lanes_four peer_cut)
  # UCX between the servers (pocld built with it): forced on over its TCP and
  # its shared memory, cut mid-payload, declined by one end, among three
  # servers; and for the client's own payloads too, over TCP, over shared
  # memory, and with the client's connections cut.
  if(UCX_FOUND)
    list(APPEND multi_server_modes ucx ucx_shm ucx_cut ucx_declined ucx_three
      ucx_client ucx_client_shm ucx_client_cut)
  endif()
  foreach(mode ${multi_server_modes})
    add_test(NAME remote/multi_server_${mode}
      COMMAND "${REMOTE_TESTS_DIR}/test_multi_server.sh"
              "${FIXTURE}" "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}"
              $<TARGET_FILE:remote_test_multi_server>
              "${CMAKE_CURRENT_BINARY_DIR}/multi_server" ${mode}
              $<TARGET_FILE:remote_matmul>)
    set_tests_properties(remote/multi_server_${mode} PROPERTIES LABELS "remote"
      TIMEOUT 480 FAIL_REGULAR_EXPRESSION "multi_server[_a-z]*: FAIL"
      ENVIRONMENT "FAULT_PROXY=$<TARGET_FILE:fault_proxy>")
  endforeach()
  # The same with the client and the servers on hosts of their own (network
  # namespaces on a bridge); skipped (77) without root or ip netns.
  add_test(NAME remote/multi_server_netns
    COMMAND "${REMOTE_TESTS_DIR}/test_multi_server_netns.sh"
            "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_multi_server>
            "${CMAKE_CURRENT_BINARY_DIR}/multi_server")
  set_tests_properties(remote/multi_server_netns PROPERTIES LABELS "remote"
    TIMEOUT 480 SKIP_RETURN_CODE 77
    FAIL_REGULAR_EXPRESSION "multi_server[_a-z]*: FAIL")
  # A server that goes silent (its link set down, doc/reconnect.md): shorter than TCP's
  # detection, shorter than its session grace, and longer; skipped (77) without root or
  # ip netns.
  foreach(mode short within beyond)
    add_test(NAME remote/outage_${mode}
      COMMAND "${REMOTE_TESTS_DIR}/test_outage.sh" ${mode}
              "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}"
              $<TARGET_FILE:remote_test_outage>
              "${CMAKE_CURRENT_BINARY_DIR}/outage_${mode}")
    set_tests_properties(remote/outage_${mode} PROPERTIES LABELS "remote"
      TIMEOUT 480 SKIP_RETURN_CODE 77 FAIL_REGULAR_EXPRESSION "outage: FAIL")
  endforeach()
  # Servers found through DNS-SD: avahi-daemon and a D-Bus system bus on each of
  # three hosts (network namespaces); skipped (77) without root, ip netns or Avahi.
  add_test(NAME remote/discovery_netns
    COMMAND "${REMOTE_TESTS_DIR}/test_discovery_netns.sh"
            "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_discovery>
            "${CMAKE_CURRENT_BINARY_DIR}/discovery_netns")
  set_tests_properties(remote/discovery_netns PROPERTIES LABELS "remote"
    TIMEOUT 120 SKIP_RETURN_CODE 77
    FAIL_REGULAR_EXPRESSION "discovery[_a-z]*: FAIL")
endif()

include(runaway_kernel.cmake)
include(stream_tests.cmake)
