# Hostile input and broken connections (issue 4). Included at the end of
# tests/remote/CMakeLists.txt, which provides REMOTE_TESTS_DIR.

# libFuzzer on pocld's message decoder (pocld/decode.cc), built with clang-15 by the
# script; skipped (exit 77) without clang. FUZZ_SECONDS in the environment overrides
# the default 60 s.
add_test(NAME remote/fuzz_decode
  COMMAND "${REMOTE_TESTS_DIR}/fuzz/run_fuzz.sh" "${CMAKE_CURRENT_BINARY_DIR}/fuzz")
set_tests_properties(remote/fuzz_decode PROPERTIES
  LABELS "remote" TIMEOUT 600 SKIP_RETURN_CODE 77
  FAIL_REGULAR_EXPRESSION "fuzz_decode: FAIL")
