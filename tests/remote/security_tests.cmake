# Hostile input and broken connections (doc/security.md, doc/fault-injection.md,
# doc/reconnect.md). Included at the end of
# tests/remote/CMakeLists.txt, which provides REMOTE_TESTS_DIR.

# libFuzzer on pocld's message decoder (pocld/decode.cc), built with clang-15 by the
# script; skipped (exit 77) without clang. FUZZ_SECONDS in the environment overrides
# the default 60 s.
add_test(NAME remote/fuzz_decode
  COMMAND "${REMOTE_TESTS_DIR}/fuzz/run_fuzz.sh" decode "${CMAKE_CURRENT_BINARY_DIR}/fuzz/decode")
set_tests_properties(remote/fuzz_decode PROPERTIES
  LABELS "remote" TIMEOUT 600 SKIP_RETURN_CODE 77
  FAIL_REGULAR_EXPRESSION "fuzz_decode: FAIL")

# The same for the client's parsing of POCL_REMOTE<n>_PARAMETERS (what a user types),
# 30 s: the parser is a few dozen lines.
add_test(NAME remote/fuzz_params
  COMMAND "${REMOTE_TESTS_DIR}/fuzz/run_fuzz.sh" params "${CMAKE_CURRENT_BINARY_DIR}/fuzz/params" 30)
set_tests_properties(remote/fuzz_params PROPERTIES
  LABELS "remote" TIMEOUT 300 SKIP_RETURN_CODE 77
  FAIL_REGULAR_EXPRESSION "fuzz_params: FAIL")

# The fault-injection proxy (doc/fault-injection.md) and a client whose connection it
# cuts.
add_executable(fault_proxy "${REMOTE_REPO_DIR}/tools/fault_proxy.cc")
set_target_properties(fault_proxy PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_include_directories(fault_proxy PRIVATE "${REMOTE_REPO_DIR}/protocol/wire")

# The test clients of this file (hostile_limits speaks the protocol itself).
foreach(client connection_cut link_down hostile_limits)
  add_executable(remote_test_${client} test_${client}.c)
  target_compile_definitions(remote_test_${client} PRIVATE
    CL_TARGET_OPENCL_VERSION=${OPENCL_HEADER_VERSION}
    CL_USE_DEPRECATED_OPENCL_1_2_APIS)
  if(NOT HAVE_OPENCL_H)
    target_include_directories(remote_test_${client} PRIVATE "${CMAKE_SOURCE_DIR}/include")
  endif()
  target_include_directories(remote_test_${client} PRIVATE
    "${CMAKE_CURRENT_SOURCE_DIR}" "${CMAKE_SOURCE_DIR}/protocol/wire")
  target_link_libraries(remote_test_${client} ${OPENCL_LIBS})
endforeach()

if(ENABLE_HOST_CPU_DEVICES AND ENABLE_EXAMPLES)
  set(PROXY_TEST "${REMOTE_TESTS_DIR}/test_proxy.sh")
  set(PROXY_WORK "${CMAKE_CURRENT_BINARY_DIR}/proxy")

  # Pass-through: the example verifies through the proxy, which must cut nothing.
  add_test(NAME remote/proxy_passthrough
    COMMAND "${PROXY_TEST}" proxy_passthrough $<TARGET_FILE:fault_proxy> "${RUN_REMOTE}"
            "${STATE}" "${CMAKE_BINARY_DIR}" "${PROXY_WORK}"
            -- $<TARGET_FILE:remote_vecadd>)
  set_tests_properties(remote/proxy_passthrough PROPERTIES LABELS "remote"
    FIXTURES_REQUIRED pocld TIMEOUT 240 FAIL_REGULAR_EXPRESSION "proxy_passthrough: FAIL")

  # Cuts: the client reconnects and resumes its session; every result must be exact and
  # the atomic counter must show that no command was lost or run twice.
  # 32768 words = 128 KiB per transfer, so writes and reads use the data socket too;
  # 3145728 words = 12 MiB, so writes are enqueued in 4 MiB parts as their bytes come
  # and reads come as READ_DATA parts: cuts inside a part after the first.
  # name | proxy (and test_proxy.sh) arguments | iterations [| words]
  set(proxy_cuts
    "header|--cut sock=cmd,dir=c2s,type=WRITE,at=header,after=2|40"
    "body|--cut sock=cmd,dir=c2s,type=NDRANGE,at=body,after=1|40"
    "payload|--cut sock=cmd,dir=c2s,type=NDRANGE,at=payload,after=3|40"
    "data_payload|--cut sock=data,dir=c2s,type=DATA,at=payload,after=2|40"
    "completion|--cut sock=data,dir=s2c,type=COMPLETION,at=payload,after=1|40"
    "reply|--cut sock=cmd,dir=s2c,type=REPLY,at=body,after=3|40"
    "after_messages|--cut sock=cmd,dir=s2c,at=boundary,after=40|40"
    "control|--cut-when-connected|2000"
    "random|--seed 7 --random 0.02,sock=any,dir=any,after=60 --min-cuts 100|600"
    "read_data|--cut sock=data,dir=s2c,type=READ_DATA,at=payload,after=1 --cut sock=data,dir=s2c,type=READ_DATA,at=header,after=5 --min-cuts 2|8|3145728"
    "data_parts|--cut sock=data,dir=c2s,type=DATA,at=payload,offset=6000000,after=1 --cut sock=data,dir=c2s,type=DATA,at=payload,offset=10000000,after=3 --min-cuts 2|8|3145728"
    "random_large|--seed 11 --random 0.05,sock=any,dir=any,after=60 --min-cuts 10|30|3145728"
    "lanes_data|--cut sock=data,dir=c2s,type=DATA,at=payload,offset=2000000,after=1 --min-cuts 1 --expect-log cut.*striped.over.2.lanes|8|3145728"
    "lanes_read_data|--cut sock=data,dir=s2c,type=READ_DATA,at=payload,after=1 --min-cuts 1 --expect-log cut.*striped.over.2.lanes|8|3145728"
    "lanes_all|--cut sock=data,dir=c2s,type=DATA,at=payload,offset=1000000,after=2,scope=all --min-cuts 1 --expect-log cut.*striped.over.2.lanes|8|3145728"
    "lanes_random|--seed 13 --random 0.05,sock=any,dir=any,after=60 --min-cuts 5|30|3145728")
  foreach(entry ${proxy_cuts})
    string(FIND "${entry}" "|" bar)
    string(SUBSTRING "${entry}" 0 ${bar} cut)
    math(EXPR bar "${bar} + 1")
    string(SUBSTRING "${entry}" ${bar} -1 rest)
    string(FIND "${rest}" "|" bar)
    string(SUBSTRING "${rest}" 0 ${bar} args)
    math(EXPR bar "${bar} + 1")
    string(SUBSTRING "${rest}" ${bar} -1 rest)
    string(FIND "${rest}" "|" bar)
    if(bar EQUAL -1)
      set(iterations "${rest}")
      set(words 32768)
    else()
      string(SUBSTRING "${rest}" 0 ${bar} iterations)
      math(EXPR bar "${bar} + 1")
      string(SUBSTRING "${rest}" ${bar} -1 words)
    endif()
    separate_arguments(args UNIX_COMMAND "${args}")
    add_test(NAME remote/proxy_cut_${cut}
      COMMAND "${PROXY_TEST}" proxy_cut_${cut} $<TARGET_FILE:fault_proxy> "${RUN_REMOTE}"
              "${STATE}" "${CMAKE_BINARY_DIR}" "${PROXY_WORK}" ${args}
      -- $<TARGET_FILE:remote_test_connection_cut> ${iterations} ${words})
    # lanes_*: payloads striped over the data socket and two lanes; the others
    # without lanes, whose cut offsets count the whole payload.
    string(REGEX MATCH "^lanes_" lanes "${cut}")
    set(lanes_env "POCL_REMOTE_LANES=0")
    if(lanes)
      set(lanes_env "POCL_REMOTE_LANES=2")
    endif()
    set_tests_properties(remote/proxy_cut_${cut} PROPERTIES LABELS "remote"
      FIXTURES_REQUIRED pocld TIMEOUT 240 FAIL_REGULAR_EXPRESSION "proxy_cut_${cut}: FAIL"
      ENVIRONMENT "${lanes_env}")
  endforeach()

  # Command buffers across cuts: inside a CMDBUF_CREATE's entries and a CMDBUF_RUN's
  # body; the resumed session has the buffer, and every run ran once (the test's
  # results accumulate over the runs).
  foreach(entry "create|CMDBUF_CREATE,at=payload,after=1"
                "run|CMDBUF_RUN,at=body,after=10")
    string(REPLACE "|" ";" entry "${entry}")
    list(GET entry 0 cut)
    list(GET entry 1 rule)
    add_test(NAME remote/proxy_cut_cmdbuf_${cut}
      COMMAND "${PROXY_TEST}" proxy_cut_cmdbuf_${cut} $<TARGET_FILE:fault_proxy>
              "${RUN_REMOTE}" "${STATE}" "${CMAKE_BINARY_DIR}" "${PROXY_WORK}"
              --cut "sock=cmd,dir=c2s,type=${rule}"
              -- $<TARGET_FILE:remote_test_command_buffers>)
    set_tests_properties(remote/proxy_cut_cmdbuf_${cut} PROPERTIES LABELS "remote"
      FIXTURES_REQUIRED pocld TIMEOUT 240
      FAIL_REGULAR_EXPRESSION "proxy_cut_cmdbuf_${cut}: FAIL")
  endforeach()

  # The link goes down and comes back, then goes down for good, on a pocld of its own
  # whose sessions wait 2 s for a resume.
  add_test(NAME remote/link_down
    COMMAND "${REMOTE_TESTS_DIR}/test_link_down.sh" "${FIXTURE}" "$<TARGET_FILE:pocld>"
            "${PROXY_TEST}" $<TARGET_FILE:fault_proxy> "${RUN_REMOTE}" "${CMAKE_BINARY_DIR}"
            "${PROXY_WORK}" $<TARGET_FILE:remote_test_link_down>)
  set_tests_properties(remote/link_down PROPERTIES LABELS "remote" TIMEOUT 240
    FAIL_REGULAR_EXPRESSION "link_down: FAIL")

  # The client changes its address mid-run (network namespaces); skipped (77) without
  # root or ip netns.
  add_test(NAME remote/roaming_netns
    COMMAND "${REMOTE_TESTS_DIR}/test_roaming_netns.sh" "$<TARGET_FILE:pocld>"
            "${CMAKE_BINARY_DIR}" $<TARGET_FILE:remote_test_connection_cut>
            "${PROXY_WORK}")
  set_tests_properties(remote/roaming_netns PROPERTIES LABELS "remote" TIMEOUT 240
    SKIP_RETURN_CODE 77 FAIL_REGULAR_EXPRESSION "roaming_netns: FAIL")
endif()

# Per-session limits of pocld (doc/security.md), over raw sockets, with a pocld of its
# own started with --max-pending 64.
if(ENABLE_HOST_CPU_DEVICES)
  add_test(NAME remote/hostile_limits
    COMMAND "${REMOTE_TESTS_DIR}/test_hostile_limits.sh" "${FIXTURE}"
            "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}"
            $<TARGET_FILE:remote_test_hostile_limits>
            "${CMAKE_CURRENT_BINARY_DIR}/hostile_limits")
  set_tests_properties(remote/hostile_limits PROPERTIES LABELS "remote"
    TIMEOUT 300 FAIL_REGULAR_EXPRESSION "hostile_limits: FAIL")
endif()

# Pre-shared keys (doc/security.md): right, wrong and missing keys, an impostor server,
# peers with the key, non-loopback addresses without one; pocld processes of its own.
if(ENABLE_HOST_CPU_DEVICES AND ENABLE_EXAMPLES)
  add_test(NAME remote/auth
    COMMAND "${REMOTE_TESTS_DIR}/test_auth.sh" "${FIXTURE}" "${RUN_REMOTE}"
            "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}" $<TARGET_FILE:remote_vecadd>
            "${REMOTE_TESTS_DIR}/test_multi_server.sh"
            $<TARGET_FILE:remote_test_multi_server> "${CMAKE_CURRENT_BINARY_DIR}/auth")
  set_tests_properties(remote/auth PROPERTIES LABELS "remote"
    TIMEOUT 600 FAIL_REGULAR_EXPRESSION "auth: FAIL")
endif()

# TLS (doc/security.md): a throwaway CA made at test time; TLS clients with small and
# data-socket transfers, a plain client, a wrong CA, a wrong name, TLS with a key, a TLS
# client of a plain server, peers with TLS, resumes over TLS through fault_proxy's cuts;
# pocld processes of its own.
if(ENABLE_HOST_CPU_DEVICES AND ENABLE_EXAMPLES)
  add_test(NAME remote/tls
    COMMAND "${REMOTE_TESTS_DIR}/test_tls.sh" "${FIXTURE}" "${RUN_REMOTE}"
            "$<TARGET_FILE:pocld>" "${CMAKE_BINARY_DIR}" $<TARGET_FILE:remote_vecadd>
            "${REMOTE_TESTS_DIR}/test_multi_server.sh"
            $<TARGET_FILE:remote_test_multi_server> "${CMAKE_CURRENT_BINARY_DIR}/tls"
            $<TARGET_FILE:fault_proxy> $<TARGET_FILE:remote_test_connection_cut>)
  set_tests_properties(remote/tls PROPERTIES LABELS "remote"
    TIMEOUT 600 FAIL_REGULAR_EXPRESSION "tls: FAIL")
endif()
