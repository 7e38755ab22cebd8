# stitchopt run/bench/calibrate end to end (tests/runtime/run_cli.py).
if(TARGET stitchopt)
  add_test(NAME runtime.cli
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/runtime/run_cli.py
                   --stitchopt $<TARGET_FILE:stitchopt> --models ${PROJECT_SOURCE_DIR}/models)
  set_tests_properties(runtime.cli PROPERTIES TIMEOUT 900)
endif()

# stitchopt profile --emulate end to end (tests/runtime/profile_cli.py).
if(TARGET stitchopt)
  add_test(NAME runtime.profile
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/runtime/profile_cli.py
                   --stitchopt $<TARGET_FILE:stitchopt> --models ${PROJECT_SOURCE_DIR}/models)
  set_tests_properties(runtime.profile PROPERTIES TIMEOUT 900)
endif()

# stitchopt --score emulated end to end (tests/runtime/score_emulated.py).
if(TARGET stitchopt)
  add_test(NAME runtime.score_emulated
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/runtime/score_emulated.py
                   --stitchopt $<TARGET_FILE:stitchopt>)
  set_tests_properties(runtime.score_emulated PROPERTIES TIMEOUT 900)
endif()

# Issue 14's gates over every bundled model's emulated profile (bench/profile_bundled.py
# --check against the thresholds recorded in bench/profile_gates.json; docs/perf-model.md,
# "Gates in CI"): fused faster than unfused, no fused group slower than its nodes,
# the analytic estimate within 25% of the emulated one for 90% of kernels.
if(TARGET stitchopt)
  add_test(NAME runtime.profile_gates
           COMMAND ${STITCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/profile_bundled.py
                   --stitchopt $<TARGET_FILE:stitchopt>
                   --check ${PROJECT_SOURCE_DIR}/bench/profile_gates.json)
  set_tests_properties(runtime.profile_gates PROPERTIES TIMEOUT 1800)
endif()

# The cuDNN graph of each supported Conv epilogue chain, built, validated and pinned
# without a device (tests/runtime/cudnn/cudnn_graph_test.cc). Needs cuDNN and the
# cudnn-frontend headers (runtime_stub/cuda/CMakeLists.txt).
if(TARGET stitch_cudnn_graph AND TARGET stitch_fusion)
  add_executable(stitch_cudnn_graph_tests
                 ${CMAKE_CURRENT_SOURCE_DIR}/runtime/cudnn/cudnn_graph_test.cc
                 $<TARGET_OBJECTS:stitch_cudnn_graph>)
  target_include_directories(stitch_cudnn_graph_tests SYSTEM PRIVATE
                             ${STITCH_CUDNN_INCLUDE_DIR} ${STITCH_CUDNN_FRONTEND_INCLUDE_DIR})
  target_link_libraries(stitch_cudnn_graph_tests PRIVATE stitch_fusion stitch_cost_model
                        ${STITCH_CUDNN_LIBRARY} CUDA::cudart CUDA::nvrtc GTest::gtest_main)
  target_compile_definitions(stitch_cudnn_graph_tests PRIVATE
                             STITCH_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
  gtest_discover_tests(stitch_cudnn_graph_tests DISCOVERY_TIMEOUT 60)
endif()

# stitchopt run on the user's data: --inputs/--save-outputs (.npz), --test-data (ONNX
# test data sets), checked against ONNX Runtime, and every bad feed refused
# (tests/runtime/run_data_cli.py; issue 38).
if(TARGET stitchopt)
  add_test(NAME runtime.run_data
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/runtime/run_data_cli.py
                   --stitchopt $<TARGET_FILE:stitchopt> --models ${PROJECT_SOURCE_DIR}/models)
  set_tests_properties(runtime.run_data PROPERTIES TIMEOUT 900)
endif()

# The runtime library's C ABI from a C program and its C++ API from 8 threads, on
# compiled bundled models (tests/runtime/api_cli.py; issue 38).
if(TARGET stitchopt AND TARGET stitchopt_runtime)
  enable_language(C)
  add_executable(stitch_c_api_test ${CMAKE_CURRENT_SOURCE_DIR}/runtime/api/c_api_test.c)
  target_link_libraries(stitch_c_api_test PRIVATE stitchopt_runtime m)
  set_target_properties(stitch_c_api_test PROPERTIES C_STANDARD 11)
  add_executable(stitch_session_threads_test
                 ${CMAKE_CURRENT_SOURCE_DIR}/runtime/api/session_threads_test.cc)
  target_link_libraries(stitch_session_threads_test PRIVATE stitchopt_runtime Threads::Threads)
  add_test(NAME runtime.api
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/runtime/api_cli.py
                   --stitchopt $<TARGET_FILE:stitchopt> --models ${PROJECT_SOURCE_DIR}/models
                   --c-test $<TARGET_FILE:stitch_c_api_test>
                   --threads-test $<TARGET_FILE:stitch_session_threads_test>)
  set_tests_properties(runtime.api PROPERTIES TIMEOUT 900)
  # The same on a GPU: device memory, streams and CUDA graphs; skipped without one.
  if(CUDAToolkit_FOUND)
    add_executable(stitch_device_api_test ${CMAKE_CURRENT_SOURCE_DIR}/runtime/api/device_api_test.cc)
    target_link_libraries(stitch_device_api_test PRIVATE stitchopt_runtime CUDA::cudart)
    add_test(NAME runtime.api_gpu
             COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/runtime/api_cli.py
                     --stitchopt $<TARGET_FILE:stitchopt> --models ${PROJECT_SOURCE_DIR}/models
                     --device-test $<TARGET_FILE:stitch_device_api_test>)
    set_tests_properties(runtime.api_gpu PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)
  endif()
endif()

# The Python package (runtime_stub/python/) end to end: every bundled model through
# stitchopt.InferenceSession against ONNX Runtime, every bad input, threads,
# stitchopt.torch.Module and the venv's installed copy (tests/runtime/python_api.py;
# issue 38). Without nanobind the package is not built, and the test says so and fails.
if(TARGET stitchopt)
  add_test(NAME runtime.python
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/runtime/python_api.py
                   --stitchopt $<TARGET_FILE:stitchopt> --models ${PROJECT_SOURCE_DIR}/models
                   --package ${PROJECT_BINARY_DIR}/python)
  set_tests_properties(runtime.python PROPERTIES TIMEOUT 900)
  if(NOT TARGET _stitchopt)
    set_tests_properties(runtime.python PROPERTIES
                         ENVIRONMENT "STITCH_PYTHON_PACKAGE_MISSING=1")
  endif()
endif()

# examples/run_torchvision.py as a user runs it: resnet18 exported with Debian's torch,
# compiled, run through the Python package (the build tree's copy) and compared with
# ONNX Runtime and torch.
if(TARGET stitchopt AND TARGET _stitchopt)
  add_test(NAME examples.torchvision
           COMMAND ${STITCH_PYTHON} ${PROJECT_SOURCE_DIR}/examples/run_torchvision.py
                   --stitchopt $<TARGET_FILE:stitchopt>
                   --work ${PROJECT_BINARY_DIR}/examples/torchvision)
  set_tests_properties(examples.torchvision PROPERTIES
                       TIMEOUT 600 ENVIRONMENT "PYTHONPATH=${PROJECT_BINARY_DIR}/python")
endif()
