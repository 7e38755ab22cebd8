# Real PyTorch exports through stitchopt (issue 15; tests/exports/check_exports.py):
# exported by tests/exports/export_torch.py with Debian's python3-torch and
# python3-torchvision into the build tree (reused while the exporter is unchanged),
# then compiled, checked for unknown shapes, against ONNX Runtime, run in the CUDA
# emulation, run through the Python package against ONNX Runtime and counted against
# ONNX Runtime's optimized graph.
if(TARGET stitchopt)
  add_test(NAME exports.pytorch
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/exports/check_exports.py
                   --stitchopt $<TARGET_FILE:stitchopt> --work ${CMAKE_BINARY_DIR}/exports
                   --package ${CMAKE_BINARY_DIR}/python)
  set_tests_properties(exports.pytorch PROPERTIES TIMEOUT 1500)
endif()
