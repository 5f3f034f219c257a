# remote/ucx_engine_tcp, remote/ucx_engine_shm: the UCX engine that moves bulk payloads
# (protocol/pocl_remote_ucx.h) between two processes, over UCX's TCP transport and over
# its shared memory (posix, cma).  Included from CMakeLists.txt when pkg-config finds UCX.
add_executable(remote_test_ucx_engine test_ucx_engine.c
  "${REMOTE_REPO_DIR}/protocol/pocl_remote_ucx.c")
target_include_directories(remote_test_ucx_engine PRIVATE "${REMOTE_REPO_DIR}/protocol"
  ${UCX_INCLUDE_DIRS})
target_link_libraries(remote_test_ucx_engine ${CMAKE_DL_LIBS} pthread)
foreach(variant "tcp;tcp" "shm;sm,self")
  list(GET variant 0 name)
  list(GET variant 1 tls)
  add_test(NAME remote/ucx_engine_${name} COMMAND remote_test_ucx_engine)
  set_tests_properties(remote/ucx_engine_${name} PROPERTIES LABELS "remote" TIMEOUT 120
    ENVIRONMENT "UCX_TLS=${tls}" PASS_REGULAR_EXPRESSION "ucx_engine: PASS")
endforeach()
