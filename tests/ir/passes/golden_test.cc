// Golden tests of the simplification passes, in the style of MLIR's lit tests.
//
// Each file tests/ir/passes/golden/<name>.ir starts with a line
//   // RUN: pass-a,pass-b
// naming the passes to run (in order, each once to its own fixed point), then cases
// separated by lines `// -----`. A case is: a comment line saying what it checks,
// a model in the textual IR (ir/text.h), and check lines matched against the text
// of the model after the passes:
//   // CHECK: text        the next line (after the previous match) containing text
//   // CHECK-NEXT: text   the line right after the previous match contains text
//   // CHECK-NOT: text    no line between the previous match and the next one
//                         (or the end) contains text
// Every case also runs the verifier after the passes. A case whose model is
// expected to stay unchanged says so with `// CHECK-SAME-AS-INPUT`.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ir/core/verifier.h"
#include "ir/passes/pipeline.h"
#include "ir/text/text.h"

namespace stitch::ir {
namespace {

namespace fs = std::filesystem;

struct Check {
  enum class Kind { kCheck, kNext, kNot, kSameAsInput } kind;
  std::string text;
  int line = 0;
};

struct GoldenCase {
  std::string file;
  int first_line = 0;
  std::string model_text;
  std::vector<Check> checks;
};

std::string trim(const std::string& text) {
  size_t begin = text.find_first_not_of(" \t");
  size_t end = text.find_last_not_of(" \t\r");
  return begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// Parses a golden file into its RUN line and cases.
void read_golden_file(const fs::path& path, std::string& run_line, std::vector<GoldenCase>& cases) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  GoldenCase current{path.filename().string(), 1, "", {}};
  auto flush = [&] {
    if (!trim(current.model_text).empty()) cases.push_back(current);
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string line = trim(lines[i]);
    int number = static_cast<int>(i) + 1;
    if (starts_with(line, "// RUN:")) {
      run_line = trim(line.substr(7));
    } else if (line == "// -----") {
      flush();
      current = GoldenCase{path.filename().string(), number + 1, "", {}};
    } else if (starts_with(line, "// CHECK-NEXT:")) {
      current.checks.push_back({Check::Kind::kNext, trim(line.substr(14)), number});
    } else if (starts_with(line, "// CHECK-NOT:")) {
      current.checks.push_back({Check::Kind::kNot, trim(line.substr(13)), number});
    } else if (starts_with(line, "// CHECK-SAME-AS-INPUT")) {
      current.checks.push_back({Check::Kind::kSameAsInput, "", number});
    } else if (starts_with(line, "// CHECK:")) {
      current.checks.push_back({Check::Kind::kCheck, trim(line.substr(9)), number});
    } else if (!starts_with(line, "//")) {
      current.model_text += lines[i] + "\n";
    }
  }
  flush();
}

// FileCheck-style matching; returns "" on success, else what failed.
std::string match_checks(const std::vector<Check>& checks, const std::string& input_text,
                         const std::string& output_text) {
  std::vector<std::string> lines = split_lines(output_text);
  size_t position = 0;  // first line not yet consumed
  std::vector<const Check*> pending_not;
  auto fail_not = [&](size_t end) -> std::string {
    for (const Check* check : pending_not) {
      for (size_t i = position; i < end; ++i) {
        if (lines[i].find(check->text) != std::string::npos) {
          return "line " + std::to_string(check->line) + ": CHECK-NOT: \"" + check->text +
                 "\" found in: " + lines[i];
        }
      }
    }
    pending_not.clear();
    return "";
  };
  for (const Check& check : checks) {
    switch (check.kind) {
      case Check::Kind::kSameAsInput: {
        if (output_text != input_text) {
          return "line " + std::to_string(check.line) + ": expected the model unchanged";
        }
        break;
      }
      case Check::Kind::kNot:
        pending_not.push_back(&check);
        break;
      case Check::Kind::kNext: {
        if (position >= lines.size() || lines[position].find(check.text) == std::string::npos) {
          return "line " + std::to_string(check.line) + ": CHECK-NEXT: \"" + check.text +
                 "\" not on the next line";
        }
        ++position;
        break;
      }
      case Check::Kind::kCheck: {
        size_t found = position;
        while (found < lines.size() && lines[found].find(check.text) == std::string::npos) {
          ++found;
        }
        if (found == lines.size()) {
          return "line " + std::to_string(check.line) + ": CHECK: \"" + check.text +
                 "\" not found after line " + std::to_string(position);
        }
        std::string not_failure = fail_not(found);
        if (!not_failure.empty()) return not_failure;
        position = found + 1;
        break;
      }
    }
  }
  return fail_not(lines.size());
}

std::vector<fs::path> golden_files() {
  std::vector<fs::path> files;
  fs::path directory = fs::path(STITCH_SOURCE_DIR) / "tests" / "ir" / "passes" / "golden";
  for (const auto& entry : fs::directory_iterator(directory)) {
    if (entry.path().extension() == ".ir") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

class PassGoldenTest : public testing::TestWithParam<fs::path> {};

TEST_P(PassGoldenTest, MatchesChecks) {
  std::string run_line;
  std::vector<GoldenCase> cases;
  read_golden_file(GetParam(), run_line, cases);
  ASSERT_FALSE(run_line.empty()) << GetParam() << ": no // RUN: line";
  ASSERT_FALSE(cases.empty()) << GetParam() << ": no cases";
  for (const GoldenCase& golden : cases) {
    std::string where = golden.file + ":" + std::to_string(golden.first_line);
    ASSERT_FALSE(golden.checks.empty()) << where << ": a case without checks cannot fail";
    Result<Model> parsed = parse_model(golden.model_text, golden.file);
    ASSERT_TRUE(parsed.is_ok()) << where << ": " << parsed.status().message();
    Model& model = parsed.value();
    std::string input_text = print_model(model);
    PipelineOptions options;
    options.passes = split_pass_list(run_line);
    options.verify_each = true;
    Result<SimplifyStatistics> result = run_passes(model, options);
    ASSERT_TRUE(result.is_ok()) << where << ": " << result.status().message();
    Status verified = verify(model);
    ASSERT_TRUE(verified.is_ok()) << where << ": " << verified.message();
    std::string output_text = print_model(model);
    std::string failure = match_checks(golden.checks, input_text, output_text);
    EXPECT_TRUE(failure.empty()) << where << ": " << failure << "\n--- output ---\n" << output_text;
  }
}

INSTANTIATE_TEST_SUITE_P(Golden, PassGoldenTest, testing::ValuesIn(golden_files()),
                         [](const testing::TestParamInfo<fs::path>& info) {
                           std::string name = info.param.stem().string();
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace stitch::ir
