# Emitted CUDA kernels checked without a GPU (issue 5), included from tests/CMakeLists.txt:
#   - codegen.fixture: the emulated-kernel harness on a hand-written kernel directory
#     (tests/codegen/fixture) passes it, and fails five broken copies of its kernel;
#   - codegen.tsan_fixture: the same under ThreadSanitizer; a removed barrier is a race;
#   - codegen.nvcc_fixture: compile_kernels.py passes the fixture, fails a warning;
#   - codegen.emulated: every kernel of every bundled model, emulated, vs the reference
#     interpreter; codegen.tsan: a small subset under ThreadSanitizer;
#   - codegen.nvcc: every kernel of every bundled model through nvcc sm_80/sm_90 and NVRTC.
# stitchopt writes OUT/kernels/ (cli/compile.cc's codegen phase); a model without it
# fails the model-wide tests. stitch_reference and stitch_nvrtc_check are defined by
# tests/reference/tests.cmake and tests/cuda_emu/tests.cmake, included after this file,
# so their conditions are repeated here.
if(NOT TARGET stitchopt OR NOT TARGET stitch_onnx_import)
  return()
endif()

set(STITCH_CODEGEN_DIR ${CMAKE_CURRENT_SOURCE_DIR}/codegen)
set(STITCH_CODEGEN_CACHE ${CMAKE_CURRENT_BINARY_DIR}/codegen_emu_cache)
set(STITCH_MODELS_DIR ${PROJECT_SOURCE_DIR}/models)

add_test(NAME codegen.fixture
         COMMAND ${STITCH_PYTHON} ${STITCH_CODEGEN_DIR}/fixture/check_fixture.py
                 --stitch-reference $<TARGET_FILE:stitch_reference>
                 --cache ${STITCH_CODEGEN_CACHE})
add_test(NAME codegen.emulated
         COMMAND ${STITCH_PYTHON} ${STITCH_CODEGEN_DIR}/emulated_kernels.py
                 --stitchopt $<TARGET_FILE:stitchopt>
                 --stitch-reference $<TARGET_FILE:stitch_reference>
                 --models ${STITCH_MODELS_DIR} --cache ${STITCH_CODEGEN_CACHE}
                 )
set_tests_properties(codegen.fixture PROPERTIES TIMEOUT 600)
set_tests_properties(codegen.emulated PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)

include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS -fsanitize=thread)
set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=thread)
check_cxx_source_compiles("int main() { return 0; }" STITCH_HAVE_TSAN)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(STITCH_HAVE_TSAN AND NOT STITCH_SANITIZE)
  add_test(NAME codegen.tsan_fixture
           COMMAND ${STITCH_PYTHON} ${STITCH_CODEGEN_DIR}/fixture/check_fixture.py --tsan
                   --stitch-reference $<TARGET_FILE:stitch_reference>
                   --cache ${STITCH_CODEGEN_CACHE})
  add_test(NAME codegen.tsan
           COMMAND ${STITCH_PYTHON} ${STITCH_CODEGEN_DIR}/emulated_kernels.py --tsan
                   --stitchopt $<TARGET_FILE:stitchopt>
                   --stitch-reference $<TARGET_FILE:stitch_reference>
                   --models ${STITCH_MODELS_DIR} --cache ${STITCH_CODEGEN_CACHE}
                    )
  set_tests_properties(codegen.tsan_fixture PROPERTIES TIMEOUT 600)
  set_tests_properties(codegen.tsan PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)
else()
  add_test(NAME codegen.tsan
           COMMAND sh -c "echo 'ThreadSanitizer unavailable (or STITCH_SANITIZE=ON): skipped'; exit 77")
  set_tests_properties(codegen.tsan PROPERTIES SKIP_RETURN_CODE 77)
endif()

set(STITCH_CODEGEN_NVRTC)
if(TARGET stitch_cuda_emu AND CUDAToolkit_FOUND AND TARGET CUDA::nvrtc)
  set(STITCH_CODEGEN_NVRTC --nvrtc-check $<TARGET_FILE:stitch_nvrtc_check>)
endif()
add_test(NAME codegen.nvcc_fixture
         COMMAND ${STITCH_PYTHON} ${STITCH_CODEGEN_DIR}/fixture/check_fixture.py --nvcc
                 ${STITCH_CODEGEN_NVRTC})
add_test(NAME codegen.nvcc
         COMMAND ${STITCH_PYTHON} ${STITCH_CODEGEN_DIR}/compile_kernels.py
                 --stitchopt $<TARGET_FILE:stitchopt> --models ${STITCH_MODELS_DIR}
                 ${STITCH_CODEGEN_NVRTC})
set_tests_properties(codegen.nvcc_fixture PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
set_tests_properties(codegen.nvcc PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)
