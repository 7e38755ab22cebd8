# Code generation tests: golden .cu files for small textual-IR graphs, the shared-memory
# plan, and every group of every bundled model emitting without error. Included from
# tests/CMakeLists.txt. Regenerate the goldens with STITCH_UPDATE_GOLDEN=1 (docs/codegen.md).
if(TARGET stitch_emit AND TARGET stitch_onnx_import)
  file(GLOB STITCH_CODEGEN_TESTS CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/codegen_golden/*_test.cc)
  add_executable(stitch_codegen_tests ${STITCH_CODEGEN_TESTS})
  target_link_libraries(stitch_codegen_tests PRIVATE stitch_emit stitch_onnx_import stitch_fusion
                        stitch_cost_model stitch_ir onnx onnx_proto protobuf::libprotobuf
                        nlohmann_json::nlohmann_json GTest::gtest_main)
  target_compile_definitions(stitch_codegen_tests PRIVATE
      STITCH_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
      STITCH_BINARY_DIR="${PROJECT_BINARY_DIR}"
      STITCH_CXX="${CMAKE_CXX_COMPILER}")
  gtest_discover_tests(stitch_codegen_tests DISCOVERY_TIMEOUT 60
                       PROPERTIES ENVIRONMENT "STITCH_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endif()
