# Emitted CUDA kernels checked without a GPU, included from tests/CMakeLists.txt:
#   - codegen.fixture: the emulated-kernel harness on a hand-written kernel directory
#     (tests/codegen/fixture) passes it, and fails five broken copies of its kernel;
#   - codegen.tsan_fixture: the same under ThreadSanitizer; a removed barrier is a race;
#   - codegen.nvcc_fixture: compile_kernels.py passes the fixture, fails a warning;
#   - codegen.emulated: every kernel of every bundled model, emulated, vs the reference
#     interpreter; codegen.tsan: a small subset under ThreadSanitizer;
#   - codegen.nvcc: every kernel of every bundled model through nvcc sm_80/sm_90 and NVRTC;
#   - codegen.gpu: every bundled model's kernels built with nvcc and run on a real GPU by
#     `stitchopt run`, outputs vs the reference; skipped (77) with the reason when no
#     GPU is usable (cudaGetDeviceCount failing);
#   - codegen.nvcc_golden: the golden .cu files (tests/codegen_golden) through nvcc and NVRTC;
#   - codegen.reduction_schedules: small models with column, scalar and mixed reductions
#     get their own mappings, and their kernels match the reference (run --emulate) and
#     compile with nvcc and NVRTC;
#   - codegen.attention_schedules: small attention models (scale, masks, causal Where,
#     head split, partial tiles, broadcast batch dims) get the attention composition,
#     match the reference (run --emulate) and compile with nvcc and NVRTC;
#   - codegen.stencil_schedules: small depthwise/grouped Conv and pooling models (window
#     geometry, fused activations, squeeze-excitation, channels-last LayerNorm) get
#     their stencils fused as expected, match the reference (run --emulate) and compile
#     with nvcc and NVRTC;
#   - codegen.stencil_random: 14 seeded random depthwise/grouped Conv and pooling models
#     (1-D and 2-D geometry, SiLU before, ReLU after) match the reference (run
#     --emulate) and compile with nvcc and NVRTC;
#   - codegen.library_epilogues: small float32/float16 CNN blocks and an MLP get each
#     Conv's and MatMul's library epilogue as expected (cuDNN graphs for float16),
#     no lone activation kernel, ONNX Runtime's outputs on the rewritten model, and
#     match the reference (run --emulate);
#   - codegen.layout_schedules: small Transpose models get the transpose composition
#     (or keep the thread mapping where it does not apply), match the reference (run
#     --emulate) and compile with nvcc and NVRTC.
# stitchopt writes OUT/kernels/ (cli/compile.cc's codegen phase); a model without it
# fails the model-wide tests. The tests use stitch_reference (tests/reference/tests.cmake),
# stitch_nvrtc_check and STITCH_TSAN_TESTS (tests/cuda_emu/tests.cmake), which
# tests/CMakeLists.txt includes after this file, so they are added at the end of the
# directory (DEFER), where those are known.
function(stitch_add_codegen_tests)
  if(NOT TARGET stitchopt OR NOT TARGET stitch_reference)
    return()
  endif()
  set(codegen_dir ${CMAKE_CURRENT_SOURCE_DIR}/codegen)
  set(cache ${CMAKE_CURRENT_BINARY_DIR}/codegen_emu_cache)
  set(emulated ${STITCH_PYTHON} ${codegen_dir}/emulated_kernels.py
               --stitchopt $<TARGET_FILE:stitchopt>
               --stitch-reference $<TARGET_FILE:stitch_reference>
               --models ${PROJECT_SOURCE_DIR}/models --cache ${cache})
  set(fixture ${STITCH_PYTHON} ${codegen_dir}/fixture/check_fixture.py)
  set(fixture_emulated ${fixture} --stitch-reference $<TARGET_FILE:stitch_reference>
                       --cache ${cache})

  add_test(NAME codegen.fixture COMMAND ${fixture_emulated})
  add_test(NAME codegen.emulated COMMAND ${emulated})
  set_tests_properties(codegen.fixture PROPERTIES TIMEOUT 600)
  set_tests_properties(codegen.emulated PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)

  if(STITCH_TSAN_TESTS)
    add_test(NAME codegen.tsan_fixture COMMAND ${fixture_emulated} --tsan)
    add_test(NAME codegen.tsan COMMAND ${emulated} --tsan)
    set_tests_properties(codegen.tsan_fixture PROPERTIES TIMEOUT 600)
    set_tests_properties(codegen.tsan PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)
  else()
    stitch_add_skipped_test(codegen.tsan "${STITCH_TSAN_SKIPPED}")
  endif()

  set(nvrtc)
  if(TARGET stitch_nvrtc_check)
    set(nvrtc --nvrtc-check $<TARGET_FILE:stitch_nvrtc_check>)
  endif()
  add_test(NAME codegen.nvcc_fixture COMMAND ${fixture} --nvcc ${nvrtc})
  add_test(NAME codegen.gpu
           COMMAND ${STITCH_PYTHON} ${codegen_dir}/gpu_kernels.py
                   --stitchopt $<TARGET_FILE:stitchopt> --models ${PROJECT_SOURCE_DIR}/models)
  set_tests_properties(codegen.gpu PROPERTIES TIMEOUT 3600 SKIP_RETURN_CODE 77)
  add_test(NAME codegen.nvcc_golden
           COMMAND ${STITCH_PYTHON} ${codegen_dir}/compile_kernels.py
                   --kernels-dir ${PROJECT_SOURCE_DIR}/tests/codegen_golden/golden ${nvrtc})
  set_tests_properties(codegen.nvcc_golden PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
  add_test(NAME codegen.reduction_schedules
           COMMAND ${STITCH_PYTHON} ${codegen_dir}/reduction_schedules.py
                   --stitchopt $<TARGET_FILE:stitchopt> --nvcc ${nvrtc})
  set_tests_properties(codegen.reduction_schedules PROPERTIES TIMEOUT 900)
  add_test(NAME codegen.attention_schedules
           COMMAND ${STITCH_PYTHON} ${codegen_dir}/attention_schedules.py
                   --stitchopt $<TARGET_FILE:stitchopt> --nvcc ${nvrtc})
  set_tests_properties(codegen.attention_schedules PROPERTIES TIMEOUT 900)
  add_test(NAME codegen.stencil_schedules
           COMMAND ${STITCH_PYTHON} ${codegen_dir}/stencil_schedules.py
                   --stitchopt $<TARGET_FILE:stitchopt> --nvcc ${nvrtc})
  set_tests_properties(codegen.stencil_schedules PROPERTIES TIMEOUT 900)
  add_test(NAME codegen.stencil_random
           COMMAND ${STITCH_PYTHON} ${codegen_dir}/stencil_random.py
                   --stitchopt $<TARGET_FILE:stitchopt> --nvcc ${nvrtc})
  set_tests_properties(codegen.stencil_random PROPERTIES TIMEOUT 900)
  # Without --nvcc: its kernels (a float16 depthwise stencil, reductions) are the
  # schedules codegen.stencil_schedules and codegen.reduction_schedules compile.
  add_test(NAME codegen.library_epilogues
           COMMAND ${STITCH_PYTHON} ${codegen_dir}/library_epilogues.py
                   --stitchopt $<TARGET_FILE:stitchopt>)
  set_tests_properties(codegen.library_epilogues PROPERTIES TIMEOUT 900)
  add_test(NAME codegen.precision_models
           COMMAND ${STITCH_PYTHON} ${codegen_dir}/precision_models.py
                   --stitchopt $<TARGET_FILE:stitchopt> --nvcc ${nvrtc})
  set_tests_properties(codegen.precision_models PROPERTIES TIMEOUT 900)
  add_test(NAME codegen.layout_schedules
           COMMAND ${STITCH_PYTHON} ${codegen_dir}/layout_schedules.py
                   --stitchopt $<TARGET_FILE:stitchopt> --nvcc ${nvrtc})
  set_tests_properties(codegen.layout_schedules PROPERTIES TIMEOUT 900)
  add_test(NAME codegen.nvcc
           COMMAND ${STITCH_PYTHON} ${codegen_dir}/compile_kernels.py
                   --stitchopt $<TARGET_FILE:stitchopt> --models ${PROJECT_SOURCE_DIR}/models
                   ${nvrtc})
  set_tests_properties(codegen.nvcc_fixture PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
  set_tests_properties(codegen.nvcc PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)
endfunction()
cmake_language(DEFER CALL stitch_add_codegen_tests)
