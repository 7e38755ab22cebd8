# The reference interpreter against ONNX Runtime: stitch_reference (a dev binary that
# evaluates a model on backend-test-layout inputs), every op (op_cases.py) and every
# bundled model (model_check.py). Included from tests/CMakeLists.txt.
if(TARGET stitch_onnx_import)
  add_executable(stitch_reference ${CMAKE_CURRENT_SOURCE_DIR}/tools/stitch_reference.cc)
  target_link_libraries(stitch_reference PRIVATE stitch_onnx_import stitch_emit stitch_ir onnx onnx_proto
                                                 protobuf::libprotobuf)
  add_test(NAME reference.op_cases
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/reference/op_cases.py
                   --stitch-reference $<TARGET_FILE:stitch_reference>)
  add_test(NAME reference.models
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/reference/model_check.py
                   --stitch-reference $<TARGET_FILE:stitch_reference>
                   --models ${PROJECT_SOURCE_DIR}/models)
  set_tests_properties(reference.op_cases reference.models PROPERTIES TIMEOUT 300)
endif()
