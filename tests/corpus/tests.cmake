# The hostile corpus (tests/corpus/hostile/README.md): untrusted models and output
# directories, each case's commands checked for exit code, message, time, memory and
# that nothing outside OUT changed.
if(TARGET stitchopt)
  add_test(NAME corpus.hostile
           COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/corpus/hostile/hostile_test.py
                   --stitchopt $<TARGET_FILE:stitchopt> --jobs 2)
  set_tests_properties(corpus.hostile PROPERTIES TIMEOUT 900)
endif()
