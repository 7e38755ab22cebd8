# Smoke runs of the libFuzzer targets that scripts/test.sh builds into build/fuzz with
# clang, starting from the seed corpus, so a crash near the seeds fails the suite:
# 3000 inputs each for the importer and the IR text parser, 600 for the graph fuzzer
# (every stage from import to the report on random valid models; about 60 s). A fixed
# libFuzzer seed and run count make every CI run try the same inputs. Longer
# campaigns: run the binaries by hand (docs/testing.md).
foreach(entry "ir_text_fuzzer:ir_text:-runs=3000" "importer_fuzzer:importer:-runs=3000"
              "graph_fuzzer:graph:-runs=600")
  string(REPLACE ":" ";" parts ${entry})
  list(GET parts 0 fuzzer)
  list(GET parts 1 corpus)
  list(GET parts 2 bound)
  add_test(NAME fuzz_smoke.${fuzzer}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/run_smoke.sh
                   ${PROJECT_BINARY_DIR}/fuzz/tests/fuzz/${fuzzer}
                   ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${corpus}
                   ${PROJECT_BINARY_DIR}/fuzz_work/${fuzzer} ${bound} -seed=1 -timeout=60)
  set_tests_properties(fuzz_smoke.${fuzzer} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()

# The out-of-process model fuzzer (model_fuzzer.py): 20 random models of a fixed seed
# through `stitchopt`, `stitchopt run --emulate`, stitch_reference and ONNX Runtime
# (about 80 s on two cores; no case starts after 120 s); skipped when
# random_model (built with the fuzzers) is missing. Failing cases are kept in
# fuzz_work/model_fuzzer.
# (stitch_reference comes from tests/reference/tests.cmake, included after this file.)
if(TARGET stitchopt AND TARGET stitch_onnx_import)
  add_test(NAME fuzz_smoke.model_fuzzer
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/model_fuzzer.py
                   --build ${PROJECT_BINARY_DIR} --seed 1 --cases 20 --time 120
                   --keep ${PROJECT_BINARY_DIR}/fuzz_work/model_fuzzer)
  set_tests_properties(fuzz_smoke.model_fuzzer PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 400)
endif()
