# End-to-end command-line tests and the ONNX Runtime differential harness.
if(TARGET stitchopt)
  add_test(NAME cli.end_to_end
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/cli/cli_test.py
                   --stitchopt $<TARGET_FILE:stitchopt> --source ${PROJECT_SOURCE_DIR})
  foreach(mode exact simplified)
    add_test(NAME diff.onnxruntime_${mode}
             COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/diff/roundtrip_test.py
                     --mode ${mode} --stitchopt $<TARGET_FILE:stitchopt>
                     --models ${PROJECT_SOURCE_DIR}/models)
    set_tests_properties(diff.onnxruntime_${mode} PROPERTIES TIMEOUT 900)
  endforeach()
  set_tests_properties(cli.end_to_end PROPERTIES TIMEOUT 900)
endif()
