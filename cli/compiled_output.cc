// What `stitchopt profile OUT` reads of how OUT was compiled (compiled_output.h).
#include "cli/compiled_output.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <vector>

#include "support/bounded_file.h"

namespace stitch::cli {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxReportBytes = size_t{1} << 29;
constexpr size_t kMaxDeviceProfileBytes = size_t{1} << 20;

// Streams report.json and keeps device.name, device.launch_mode and, per group, codegen.kernel with
// codegen.ptxas.registers; everything else is skipped as it is read.
class ReportReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit ReportReader(CompiledFor& result) : result_(result) {}

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t value) override {
    if (at({"groups", "[]", "codegen", "ptxas", "registers"}) && value >= 0 && value <= INT32_MAX) {
      registers_ = static_cast<int>(value);
    }
    return true;
  }
  bool number_unsigned(number_unsigned_t value) override {
    return number_integer(static_cast<number_integer_t>(
        std::min<number_unsigned_t>(value, static_cast<number_unsigned_t>(INT64_MAX))));
  }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t& value) override {
    if (at({"device", "name"})) result_.device = value;
    if (at({"device", "launch_mode"})) result_.launch_mode = value;
    if (at({"groups", "[]", "codegen", "kernel"})) kernel_ = value;
    return true;
  }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override {
    if (at({"groups", "[]"})) {
      kernel_.reset();
      registers_.reset();
    }
    frames_.push_back(Frame{false, ""});
    return true;
  }
  bool key(string_t& value) override {
    frames_.back().key = value;
    return true;
  }
  bool end_object() override {
    frames_.pop_back();
    if (at({"groups", "[]"}) && kernel_ && registers_) result_.registers[*kernel_] = *registers_;
    return true;
  }
  bool start_array(std::size_t) override {
    frames_.push_back(Frame{true, ""});
    return true;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  struct Frame {
    bool array;
    std::string key;  // the member being read, in an object
  };

  // Whether the value being read sits at `path` ("[]" for any list element).
  bool at(std::initializer_list<std::string_view> path) const {
    if (frames_.size() != path.size()) return false;
    size_t index = 0;
    for (std::string_view step : path) {
      const Frame& frame = frames_[index++];
      if (frame.array ? step != "[]" : step != frame.key) return false;
    }
    return true;
  }

  CompiledFor& result_;
  std::vector<Frame> frames_;
  std::optional<std::string> kernel_;
  std::optional<int> registers_;
};

}  // namespace

CompiledFor read_compiled_for(const std::string& out_dir) {
  CompiledFor result;
  Result<std::string> text =
      support::read_regular_file_under(out_dir, "report.json", kMaxReportBytes, "report.json");
  if (!text.is_ok()) return result;
  CompiledFor read;
  ReportReader reader(read);
  if (nlohmann::json::sax_parse(*text, &reader, nlohmann::json::input_format_t::json,
                                /*strict=*/true)) {
    result = std::move(read);
  }
  return result;
}

Result<cost_model::DeviceProfile> profile_device(const std::string& out_dir,
                                                 const std::string& flag,
                                                 const CompiledFor& compiled_for) {
  if (!flag.empty()) return cost_model::resolve_device_profile(flag);
  const fs::path saved = fs::path(out_dir) / "device.json";
  std::error_code error;
  if (fs::exists(fs::symlink_status(saved, error))) {
    STITCH_ASSIGN_OR_RETURN(std::string text,
                            support::read_regular_file_under(
                                out_dir, "device.json", kMaxDeviceProfileBytes, "device profile"));
    return cost_model::parse_device_profile(text, saved.string());
  }
  const std::vector<std::string> builtin = cost_model::builtin_device_profile_names();
  if (compiled_for.device.empty() ||
      std::find(builtin.begin(), builtin.end(), compiled_for.device) == builtin.end()) {
    return Status::invalid_input(out_dir +
                                 ": device.json is missing and report.json names no built-in "
                                 "device profile; pass --device with the profile the model was "
                                 "compiled for");
  }
  return cost_model::builtin_device_profile(compiled_for.device);
}

}  // namespace stitch::cli
