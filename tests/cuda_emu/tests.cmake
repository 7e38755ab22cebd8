# Tests of the CUDA emulation layer and the kernel prelude (emit/cuda), included
# from tests/CMakeLists.txt:
#   - stitch_cuda_emu_tests / stitch_cuda_emu_threads_tests: the GoogleTest suite against
#     the fiber and the threads emulation (same sources);
#   - cuda_emu.tsan_clean / cuda_emu.tsan_race: the transpose kernel under ThreadSanitizer
#     runs clean, and its copy without __syncthreads is reported as a data race;
#   - cuda_emu.nvcc_sm80 / _sm90 and cuda_emu.nvrtc_sm80 / _sm90: the same kernel file
#     compiled by nvcc (warnings as errors) and by NVRTC.
# Also defines, for tests/codegen/tests.cmake: STITCH_TSAN_TESTS and stitch_nvrtc_check.
set(STITCH_EMU_TEST_DIR ${CMAKE_CURRENT_SOURCE_DIR}/cuda_emu)
set(STITCH_EMU_TEST_KERNELS ${STITCH_EMU_TEST_DIR}/kernels/emu_test_kernels.cu)
file(GLOB STITCH_EMU_TEST_SOURCES CONFIGURE_DEPENDS ${STITCH_EMU_TEST_DIR}/*_test.cc)

foreach(pair "stitch_cuda_emu_tests:stitch_cuda_emu"
             "stitch_cuda_emu_threads_tests:stitch_cuda_emu_threads")
  string(REPLACE ":" ";" parts ${pair})
  list(GET parts 0 name)
  list(GET parts 1 library)
  add_executable(${name} ${STITCH_EMU_TEST_SOURCES})
  target_link_libraries(${name} PRIVATE ${library} stitch_common GTest::gtest_main)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_PREFIX "${name}."
                       PROPERTIES TIMEOUT 60)
endforeach()

# ThreadSanitizer runs of the threads emulation, here and in tests/codegen: only where the
# compiler links -fsanitize=thread, and not in the AddressSanitizer configuration (the two
# do not mix).
include(CheckCXXSourceCompiles)
set(CMAKE_REQUIRED_FLAGS -fsanitize=thread)
set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=thread)
check_cxx_source_compiles("int main() { return 0; }" STITCH_HAVE_TSAN)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
set(STITCH_TSAN_TESTS OFF)
if(STITCH_HAVE_TSAN AND NOT STITCH_SANITIZE)
  set(STITCH_TSAN_TESTS ON)
endif()
set(STITCH_TSAN_SKIPPED "ThreadSanitizer unavailable (or STITCH_SANITIZE=ON): skipped")

# The ThreadSanitizer pair: its own executable with stitch_emu.cc compiled in, so the
# whole program is instrumented.
if(STITCH_TSAN_TESTS)
  add_executable(stitch_cuda_emu_tsan ${STITCH_EMU_TEST_DIR}/tsan/transpose_race_main.cc
                                      ${PROJECT_SOURCE_DIR}/emit/cuda/stitch_emu.cc)
  target_include_directories(stitch_cuda_emu_tsan PRIVATE ${PROJECT_SOURCE_DIR}/emit/cuda)
  target_compile_definitions(stitch_cuda_emu_tsan PRIVATE STITCH_EMULATION STITCH_EMU_THREADS)
  target_compile_options(stitch_cuda_emu_tsan PRIVATE -fsanitize=thread -g -O1)
  target_link_options(stitch_cuda_emu_tsan PRIVATE -fsanitize=thread)
  target_link_libraries(stitch_cuda_emu_tsan PRIVATE stitch_warnings Threads::Threads)
  add_test(NAME cuda_emu.tsan_clean COMMAND stitch_cuda_emu_tsan clean)
  set_tests_properties(cuda_emu.tsan_clean PROPERTIES
      FAIL_REGULAR_EXPRESSION "ThreadSanitizer" TIMEOUT 60
      ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1")
  # Passes only when TSan's report appears (the exit status is not what is tested).
  add_test(NAME cuda_emu.tsan_race COMMAND stitch_cuda_emu_tsan racy)
  set_tests_properties(cuda_emu.tsan_race PROPERTIES
      PASS_REGULAR_EXPRESSION "WARNING: ThreadSanitizer: data race" TIMEOUT 60)
else()
  stitch_add_skipped_test(cuda_emu.tsan_clean "${STITCH_TSAN_SKIPPED}")
endif()

foreach(number 80 90)
  stitch_add_nvcc_compile_test(NAME cuda_emu.nvcc_sm${number} SOURCE ${STITCH_EMU_TEST_KERNELS}
                               ARCH sm_${number} INCLUDES ${PROJECT_SOURCE_DIR}/emit/cuda)
endforeach()

if(CUDAToolkit_FOUND AND TARGET CUDA::nvrtc)
  add_executable(stitch_nvrtc_check ${CMAKE_CURRENT_SOURCE_DIR}/tools/nvrtc_check.cc)
  target_link_libraries(stitch_nvrtc_check PRIVATE CUDA::nvrtc stitch_warnings)
  list(GET CUDAToolkit_INCLUDE_DIRS 0 stitch_cuda_include)
  target_compile_definitions(stitch_nvrtc_check PRIVATE
                             STITCH_CUDA_INCLUDE_DIR="${stitch_cuda_include}")
  foreach(number 80 90)
    add_test(NAME cuda_emu.nvrtc_sm${number}
             COMMAND stitch_nvrtc_check ${STITCH_EMU_TEST_KERNELS} --arch sm_${number}
                     -I ${PROJECT_SOURCE_DIR}/emit/cuda)
  endforeach()
else()
  stitch_add_skipped_test(cuda_emu.nvrtc_sm80
                          "CUDA toolkit with NVRTC not found: skipping the NVRTC compile")
endif()

# The hardware counters (STITCH_EMU_COUNTERS): the emulation built with them, and the
# counter kernels compiled with ThreadSanitizer's instrumentation and no TSan runtime
# (the emulation defines the __tsan_* entry points; docs/perf-model.md). Only the kernel
# file is instrumented. Not in the STITCH_SANITIZE configuration (AddressSanitizer's
# runtime and TSan instrumentation do not mix).
if(NOT STITCH_SANITIZE)
  add_library(stitch_cuda_emu_counters STATIC ${PROJECT_SOURCE_DIR}/emit/cuda/stitch_emu.cc
                                              ${PROJECT_SOURCE_DIR}/emit/cuda/stitch_emu_counting.cc
                                              ${PROJECT_SOURCE_DIR}/emit/cuda/stitch_emu_tsan.cc)
  # stitch_emu.h includes the counter ABI by its bare name; it lives in artifact/, below
  # the perf model that reads it and the runtime that fetches it (docs/architecture.md,
  # "Layering").
  target_include_directories(stitch_cuda_emu_counters PUBLIC ${PROJECT_SOURCE_DIR}/emit/cuda
                                                            ${PROJECT_SOURCE_DIR}/artifact)
  target_compile_definitions(stitch_cuda_emu_counters PUBLIC STITCH_EMULATION STITCH_EMU_COUNTERS)
  target_link_libraries(stitch_cuda_emu_counters PUBLIC Threads::Threads PRIVATE stitch_common)
  add_executable(stitch_cuda_emu_counters_tests ${STITCH_EMU_TEST_DIR}/counters/counters_test.cc
                                                ${STITCH_EMU_TEST_DIR}/counters/counter_kernels.cu)
  set_source_files_properties(${STITCH_EMU_TEST_DIR}/counters/counter_kernels.cu PROPERTIES
      LANGUAGE CXX
      COMPILE_OPTIONS "-x;c++;-fsanitize=thread;--param=tsan-instrument-func-entry-exit=0")
  target_link_libraries(stitch_cuda_emu_counters_tests PRIVATE stitch_cuda_emu_counters
                                                               GTest::gtest_main)
  gtest_discover_tests(stitch_cuda_emu_counters_tests DISCOVERY_TIMEOUT 60
                       TEST_PREFIX "stitch_cuda_emu_counters_tests." PROPERTIES TIMEOUT 60)
endif()
stitch_add_nvcc_compile_test(NAME cuda_emu.nvcc_counter_kernels_sm90
                             SOURCE ${STITCH_EMU_TEST_DIR}/counters/counter_kernels.cu
                             ARCH sm_90 INCLUDES ${PROJECT_SOURCE_DIR}/emit/cuda)
