# Real PyTorch exports through stitchopt (issue 15; tests/exports/check_exports.py):
# exported by tests/exports/export_torch.py with Debian's python3-torch and
# python3-torchvision into the build tree (reused while the exporter is unchanged),
# then compiled, checked for unknown shapes, against ONNX Runtime, run in the CUDA
# emulation, run through the Python package against ONNX Runtime and counted against
# ONNX Runtime's optimized graph.
#
# exports.corpus exports once (a fixture) for exports.pytorch and for the CNN exports'
# profile gates (issue 40; bench/profile_cnn.py --check against bench/profile_gates.json,
# docs/perf-model.md "Gates in CI"): each CNN fused estimated faster than --no-stencils
# and --unfused, ConvNeXt and EfficientNet by 1.3x over --unfused, no memory-bound kernel
# over 1 MB below 0.8 sector efficiency, no partial profile.
if(TARGET stitchopt)
  add_test(NAME exports.corpus
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/exports/check_exports.py
                   --work ${CMAKE_BINARY_DIR}/exports --export-only)
  set_tests_properties(exports.corpus PROPERTIES TIMEOUT 600 FIXTURES_SETUP exports_corpus)
  add_test(NAME exports.pytorch
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/exports/check_exports.py
                   --stitchopt $<TARGET_FILE:stitchopt> --work ${CMAKE_BINARY_DIR}/exports
                   --package ${CMAKE_BINARY_DIR}/python)
  set_tests_properties(exports.pytorch PROPERTIES TIMEOUT 1500
                       FIXTURES_REQUIRED exports_corpus)
  add_test(NAME exports.cnn_profile_gates
           COMMAND ${STITCH_PYTHON} ${PROJECT_SOURCE_DIR}/bench/profile_cnn.py
                   --stitchopt $<TARGET_FILE:stitchopt>
                   --exports ${CMAKE_BINARY_DIR}/exports/models
                   --check ${PROJECT_SOURCE_DIR}/bench/profile_gates.json --ci --jobs 1)
  set_tests_properties(exports.cnn_profile_gates PROPERTIES TIMEOUT 1800
                       FIXTURES_REQUIRED exports_corpus)
endif()
