# stitch_add_nvcc_compile_test(NAME <test> SOURCE <file.cu> ARCH <sm_XX> [INCLUDES dir...])
#
# Adds a ctest entry compiling SOURCE with nvcc for one architecture the way
# out/kernels/CMakeLists.txt does, with every warning an error (front end, host compiler,
# ptxas) and register spills reported as warnings (-Xptxas -warn-spills), so a spill fails
# the test. ptxas -v prints registers, shared memory and spills per kernel into the test
# log. Without nvcc the test reports why and is skipped (exit code 77).
set(STITCH_NVCC "" CACHE FILEPATH "nvcc used by the kernel compile tests (default: CUDAToolkit's)")
if(NOT STITCH_NVCC AND CUDAToolkit_NVCC_EXECUTABLE AND EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
  set(STITCH_NVCC "${CUDAToolkit_NVCC_EXECUTABLE}" CACHE FILEPATH "" FORCE)
endif()

# stitch_add_skipped_test(<test> <reason>): a test that prints why it cannot run here and
# exits 77, which ctest reports as skipped.
function(stitch_add_skipped_test name reason)
  add_test(NAME ${name} COMMAND sh -c "echo '${reason}'; exit 77")
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
endfunction()

function(stitch_add_nvcc_compile_test)
  cmake_parse_arguments(ARG "" "NAME;SOURCE;ARCH" "INCLUDES" ${ARGN})
  if(NOT ARG_NAME OR NOT ARG_SOURCE OR NOT ARG_ARCH)
    message(FATAL_ERROR "stitch_add_nvcc_compile_test needs NAME, SOURCE and ARCH")
  endif()
  if(NOT STITCH_NVCC)
    stitch_add_skipped_test(${ARG_NAME} "nvcc not found (set STITCH_NVCC or CUDAToolkit_ROOT): skipping the nvcc compile of ${ARG_SOURCE}")
    return()
  endif()
  string(REPLACE "sm_" "" number ${ARG_ARCH})
  set(include_flags "")
  foreach(dir ${ARG_INCLUDES})
    list(APPEND include_flags -I${dir})
  endforeach()
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/nvcc_check)
  set(object ${CMAKE_CURRENT_BINARY_DIR}/nvcc_check/${ARG_NAME}.o)
  add_test(NAME ${ARG_NAME}
           COMMAND ${STITCH_NVCC} -c ${ARG_SOURCE} -o ${object} -std=c++17
                   -gencode arch=compute_${number},code=sm_${number}
                   ${include_flags} -Werror all-warnings -Xptxas -warn-spills -Xptxas -v
                   -Xcompiler -Wall,-Wextra,-Werror)
  set_tests_properties(${ARG_NAME} PROPERTIES TIMEOUT 120)
endfunction()
