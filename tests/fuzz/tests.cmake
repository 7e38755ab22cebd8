# Smoke runs of the libFuzzer targets that scripts/test.sh builds into build/fuzz with
# clang: a few thousand inputs each, starting from the seed corpus, so a crash near
# the seeds fails the suite. Longer campaigns: run the binaries by hand (docs/testing.md).
foreach(pair "ir_text_fuzzer:ir_text" "importer_fuzzer:importer")
  string(REPLACE ":" ";" parts ${pair})
  list(GET parts 0 fuzzer)
  list(GET parts 1 corpus)
  add_test(NAME fuzz_smoke.${fuzzer}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_smoke.sh
                   ${PROJECT_BINARY_DIR}/fuzz/tests/fuzz/${fuzzer}
                   ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${corpus}
                   ${PROJECT_BINARY_DIR}/fuzz_work/${fuzzer})
  set_tests_properties(fuzz_smoke.${fuzzer} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()
