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
