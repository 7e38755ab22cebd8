# The C++ lint (scripts/lint.sh): clang-format on every file, clang-tidy on the .cc
# files of the last commit.
find_program(STITCH_CLANG_FORMAT clang-format)
find_program(STITCH_CLANG_TIDY clang-tidy)
if(STITCH_CLANG_FORMAT)
  add_test(NAME lint.clang_format COMMAND ${PROJECT_SOURCE_DIR}/scripts/lint.sh format)
endif()
if(STITCH_CLANG_TIDY)
  add_test(NAME lint.clang_tidy COMMAND ${PROJECT_SOURCE_DIR}/scripts/lint.sh tidy)
  set_tests_properties(lint.clang_tidy PROPERTIES
                       ENVIRONMENT "STITCH_BUILD_DIR=${PROJECT_BINARY_DIR}" TIMEOUT 1200)
endif()

# Structure (tests/lint/structure.py, docs/architecture.md "Layering" and "Size and
# complexity"): file and function size, cyclomatic complexity and the include graph
# between top-level folders against a baseline that only shrinks, and every header
# named in its folder's README.md; the self-test plants one violation of each kind and
# fails unless each is reported.
add_test(NAME lint.structure
         COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/lint/structure.py
                 --root ${PROJECT_SOURCE_DIR})
add_test(NAME lint.structure_self_test
         COMMAND ${STITCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/lint/structure.py --self-test)
