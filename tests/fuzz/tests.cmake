# Smoke runs of the libFuzzer targets that scripts/test.sh builds into build/fuzz with
# clang: each target runs once on every file of its corpus (seeds and recorded
# regressions) and on mutants of them that tests/fuzz/smoke.py makes from a fixed
# seed without coverage feedback, so every machine tries the same inputs (a
# coverage-guided run does not: float results and time limits steer it). 10000
# mutants each for the importer and the IR text parser, 4000 for the .npz reader
# (`stitchopt run --inputs`), 1500 for the graph fuzzer (every stage from import to
# the report on generated models). A failing input is
# printed and kept. Coverage-guided campaigns: by hand (docs/testing.md).
foreach(entry "ir_text_fuzzer:ir_text:10000" "importer_fuzzer:importer:10000"
              "npz_fuzzer:npz:4000" "graph_fuzzer:graph:1500")
  string(REPLACE ":" ";" parts ${entry})
  list(GET parts 0 fuzzer)
  list(GET parts 1 corpus)
  list(GET parts 2 mutants)
  add_test(NAME fuzz_smoke.${fuzzer}
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/smoke.py
                   ${PROJECT_BINARY_DIR}/fuzz/tests/fuzz/${fuzzer}
                   --corpus ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/${corpus}
                   --work ${PROJECT_BINARY_DIR}/fuzz_work/${fuzzer}
                   --mutants ${mutants} --seed 1 -max_len=65536)
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
