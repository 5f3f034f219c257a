# remote/ucx_engine_tcp, remote/ucx_engine_shm: the UCX engine that moves bulk payloads
# (protocol/transports/ucx/pocl_remote_ucx.h) between two processes, over UCX's TCP transport and over
# its shared memory (posix, cma).  Included from CMakeLists.txt when pkg-config finds UCX.
add_executable(remote_test_ucx_engine test_ucx_engine.c)
target_link_libraries(remote_test_ucx_engine pocl-remote-protocol)
foreach(variant "tcp;tcp" "shm;sm,self")
  list(GET variant 0 name)
  list(GET variant 1 tls)
  add_test(NAME remote/ucx_engine_${name} COMMAND remote_test_ucx_engine)
  set_tests_properties(remote/ucx_engine_${name} PROPERTIES LABELS "remote" TIMEOUT 120
    ENVIRONMENT "UCX_TLS=${tls}" PASS_REGULAR_EXPRESSION "ucx_engine: PASS")
endforeach()
