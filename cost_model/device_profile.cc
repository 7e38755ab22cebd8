// DeviceProfile parsing and validation; the builtin profiles' text comes from the
// build directory's generated builtin_profiles.cc (cost_model/CMakeLists.txt).
#include "cost_model/device_profile.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>

#include "artifact/json_text.h"
#include "support/bounded_file.h"

namespace stitch::cost_model {

namespace detail {
// Defined in the generated builtin_profiles.cc: (name, JSON text) per shipped
// profile, sorted by name.
std::vector<std::pair<std::string_view, std::string_view>> builtin_profile_texts();
}  // namespace detail

namespace {

using nlohmann::json;

// The range of every numeric field (device_profile.h has the table with the reasons).
// Wide enough for every NVIDIA GPU from V100 to well past H200; tight enough that no
// score, estimate or emulated launch overflows or becomes impossible.
struct FieldRange {
  std::string_view key;
  double low;
  double high;
  bool integer;
  std::string_view why;  // the unit, and why a bound is what it is
};

constexpr std::string_view kCurveKey = "bandwidth_curve";

// A profile is a few KB; the cap only keeps a wrong path (a log, a model) from being
// read whole.
constexpr size_t kMaxProfileBytes = size_t{1} << 20;

constexpr FieldRange kFieldRanges[] = {
    {"sm_count", 1, 4096, true, "streaming multiprocessors"},
    {"max_threads_per_block", 1024, 4096, true,
     "threads; every NVIDIA GPU allows 1024, and emitted kernels launch up to 512"},
    {"max_threads_per_sm", 1024, 65536, true, "threads"},
    {"warp_size", 32, 32, true,
     "every NVIDIA GPU has 32-lane warps, and the emitted kernels' shuffles assume them"},
    {"registers_per_block", 65536, 1048576, true,
     "32-bit registers; every NVIDIA GPU since Kepler has 65536, enough for 1024 threads of "
     "64"},
    {"registers_per_sm", 65536, 1048576, true, "32-bit registers"},
    {"shared_memory_per_block", 49152, 49152, true,
     "bytes; the emitted kernels launch without the opt-in attribute, so CUDA's default 48 KiB "
     "per block applies on every GPU"},
    {"shared_memory_per_block_optin", 49152, 4194304, true, "bytes"},
    {"shared_memory_per_sm", 49152, 4194304, true, "bytes"},
    {"l1_bytes_per_sm", 0, 4194304, true,
     "bytes of L1 data cache and shared memory together (0: no L1 in the estimate)"},
    {"l2_bytes", 1048576, 4294967296.0, true, "bytes"},
    {"peak_dram_bytes_per_second", 1e9, 1e15, false, "bytes per second"},
    {"launch_latency_us", 0, 1e6, false, "microseconds, as --launch-latency-us accepts"},
    {"fp32_flops_per_second", 1e9, 1e18, false, "FLOP/s"},
    {"fp16_flops_per_second", 1e9, 1e18, false, "FLOP/s"},
    {"tf32_flops_per_second", 0, 1e18, false, "FLOP/s (0: no TF32 tensor cores)"},
    {"sm_clock_hz", 1e8, 1e11, false, "Hz"},
    {"max_blocks_per_sm", 1, 1024, true, "resident blocks"},
    {"l2_bytes_per_second", 1e9, 1e16, false, "bytes per second"},
    {"fp64_flops_per_second", 1e8, 1e18, false, "FLOP/s"},
    {"block_barrier_cycles", 1, 1e5, false, "cycles"},
    {"grid_barrier_us", 1e-3, 1e6, false, "microseconds"},
    {"atomic_same_address_ns", 1e-3, 1e6, false, "nanoseconds"},
    {"global_load_latency_ns", 1, 1e6, false, "nanoseconds"},
    {"library_efficiency", 1e-3, 1, false, "a fraction of peak"},
    // The calibration block's numbers (struct Calibration).
    {"calibration.warp_schedulers_per_sm", 1, 8, false,
     "warp instructions issued per SM per clock; 4 on every GPU since Maxwell"},
    {"calibration.integer_lanes_per_sm_clock", 1, 256, false, "lanes per SM per clock"},
    {"calibration.special_lanes_per_sm_clock", 1, 256, false, "lanes per SM per clock"},
    {"calibration.memory_lanes_per_sm_clock", 1, 256, false, "lanes per SM per clock"},
    {"calibration.thread_gemm_instructions_per_mac", 0.1, 1000, false,
     "issued instructions per multiply-add and lane"},
    {"calibration.tiled_gemm_instructions_per_mac", 0.1, 1000, false,
     "issued instructions per multiply-add and lane"},
    {"calibration.attention_instructions_per_mac", 0.1, 1000, false,
     "issued instructions per multiply-add and lane"},
    {"calibration.recomputed_dot_load_share", 0, 1, false, "a fraction of the load chain"},
    {"calibration.gemm_load_share", 0, 1, false, "a fraction of the load chain"},
    {"calibration.stencil_load_share", 0, 1, false, "a fraction of the load chain"},
    {"calibration.recomputed_leaf_bytes", 1, 64, false, "bytes per leaf and recomputation"},
    {"calibration.graph_launch_latency_us", 0, 1e6, false, "microseconds"},
};

constexpr std::string_view kCalibrationKey = "calibration";
constexpr std::string_view kProvenanceKey = "provenance";
constexpr std::string_view kSassArchitectureKey = "sass_architecture";

// The calibration block's keys in the order the JSON and Calibration::provenance hold
// them; each has a provenance.
constexpr std::string_view kCalibrationKeys[] = {
    "sass_architecture",
    "warp_schedulers_per_sm",
    "integer_lanes_per_sm_clock",
    "special_lanes_per_sm_clock",
    "memory_lanes_per_sm_clock",
    "thread_gemm_instructions_per_mac",
    "tiled_gemm_instructions_per_mac",
    "attention_instructions_per_mac",
    "recomputed_dot_load_share",
    "gemm_load_share",
    "stencil_load_share",
    "recomputed_leaf_bytes",
    "graph_launch_latency_us",
};

// The calibration's numbers by key (every key of kCalibrationKeys but the
// architecture), for parsing, validation and writing alike; `CalibrationT` is
// Calibration or const Calibration.
template <typename CalibrationT>
auto calibration_numbers(CalibrationT& c)
    -> std::vector<std::pair<std::string_view, decltype(&c.gemm_load_share)>> {
  return {{"warp_schedulers_per_sm", &c.warp_schedulers_per_sm},
          {"integer_lanes_per_sm_clock", &c.integer_lanes_per_sm_clock},
          {"special_lanes_per_sm_clock", &c.special_lanes_per_sm_clock},
          {"memory_lanes_per_sm_clock", &c.memory_lanes_per_sm_clock},
          {"thread_gemm_instructions_per_mac", &c.thread_gemm_instructions_per_mac},
          {"tiled_gemm_instructions_per_mac", &c.tiled_gemm_instructions_per_mac},
          {"attention_instructions_per_mac", &c.attention_instructions_per_mac},
          {"recomputed_dot_load_share", &c.recomputed_dot_load_share},
          {"gemm_load_share", &c.gemm_load_share},
          {"stencil_load_share", &c.stencil_load_share},
          {"recomputed_leaf_bytes", &c.recomputed_leaf_bytes},
          {"graph_launch_latency_us", &c.graph_launch_latency_us}};
}

// "" when `arch` names a SASS architecture nvcc's -arch takes for a GPU the emitted
// kernels run on (compute capability 7.0 or later: they use the Volta warp-synchronous
// primitives), else what is wrong with it.
std::string sass_architecture_problem(const std::string& arch) {
  const std::string expected =
      "must be \"sm_\" and the compute capability's digits, from sm_70 to sm_129 (\"sm_90\" "
      "for H100), got \"" +
      arch + "\"";
  if (arch.size() < 5 || arch.size() > 6 || arch.rfind("sm_", 0) != 0) return expected;
  int number = 0;
  for (size_t i = 3; i < arch.size(); ++i) {
    if (arch[i] < '0' || arch[i] > '9') return expected;
    number = number * 10 + (arch[i] - '0');
  }
  if (arch[3] == '0' || number < 70 || number > 129) return expected;
  return "";
}

// The bandwidth curve's fields, per point.
constexpr FieldRange kCurveBytes = {"bytes", 1, 1e15, false, "bytes moved by one kernel"};
constexpr FieldRange kCurveRate = {"bytes_per_second", 1e3, 1e15, false, "bytes per second"};

const FieldRange& field_range(std::string_view key) {
  for (const FieldRange& range : kFieldRanges) {
    if (range.key == key) return range;
  }
  STITCH_CHECK(false) << "no range for device profile key " << key;
  return kFieldRanges[0];
}

std::string number_text(double value, bool integer) {
  if (integer && std::isfinite(value) && std::abs(value) < 9e18) {
    return std::to_string(static_cast<int64_t>(value));
  }
  std::ostringstream text;
  text << value;
  return text.str();
}

// "" when `value` (shown as `value_text`) lies in `range`, else what is wrong with it:
// "must be between 1 and 4096 (streaming multiprocessors), got 0". NaN is never in.
std::string range_problem(const FieldRange& range, double value, const std::string& value_text) {
  if (value >= range.low && value <= range.high) return "";
  const std::string low = number_text(range.low, range.integer);
  const std::string bounds = range.low == range.high ? "must be " + low
                                                     : "must be between " + low + " and " +
                                                           number_text(range.high, range.integer);
  return bounds + " (" + std::string(range.why) + "), got " + value_text;
}

std::string range_problem(const FieldRange& range, double value) {
  return range_problem(range, value, number_text(value, range.integer));
}

// Reads the keys of one JSON object, naming `source` and the key in every error.
class ObjectReader {
 public:
  // `prefix` ("calibration.") names a nested object's keys in messages and ranges.
  ObjectReader(const json& object, std::string source, std::string prefix = "")
      : object_(object), source_(std::move(source)), prefix_(std::move(prefix)) {}

  Status error(std::string_view key, const std::string& what) const {
    return Status::invalid_input(source_ + ": key \"" + prefix_ + std::string(key) + "\": " + what);
  }

  Result<const json*> find(std::string_view key) {
    seen_.insert(std::string(key));
    auto it = object_.find(std::string(key));
    if (it == object_.end()) {
      return error(key, "missing; every profile needs it (see cost_model/profiles/h100.json)");
    }
    return &*it;
  }

  bool has(std::string_view key) const { return object_.contains(std::string(key)); }

  Result<std::string> string(std::string_view key) {
    STITCH_ASSIGN_OR_RETURN(const json* value, find(key));
    if (!value->is_string())
      return error(key, "expected a string, got " + artifact::json_kind(*value));
    return value->get<std::string>();
  }

  // An optional free-text key: accepted when it is a string, otherwise an error.
  // The string under `key`, "" when absent.
  Result<std::string> optional_string(std::string_view key) {
    seen_.insert(std::string(key));
    auto it = object_.find(std::string(key));
    if (it == object_.end()) return std::string();
    if (!it->is_string()) return error(key, "expected a string, got " + artifact::json_kind(*it));
    return it->get<std::string>();
  }

  // An integer key, in its range (so that it fits the field it is stored in).
  Result<int64_t> integer(std::string_view key) {
    STITCH_ASSIGN_OR_RETURN(const json* value, find(key));
    if (!value->is_number_integer()) {
      return error(key, "expected an integer, got " + artifact::json_kind(*value));
    }
    // Compared as a double: exact at every bound, and an unsigned past int64 stays large.
    const bool is_unsigned = value->is_number_unsigned();
    const double number = is_unsigned ? static_cast<double>(value->get<uint64_t>())
                                      : static_cast<double>(value->get<int64_t>());
    const std::string text = is_unsigned ? std::to_string(value->get<uint64_t>())
                                         : std::to_string(value->get<int64_t>());
    std::string problem = range_problem(field_range(prefix_ + std::string(key)), number, text);
    if (!problem.empty()) return error(key, problem);
    return value->get<int64_t>();
  }

  // A number key; validate_device_profile checks its range.
  Result<double> number(std::string_view key) {
    STITCH_ASSIGN_OR_RETURN(const json* value, find(key));
    if (!value->is_number())
      return error(key, "expected a number, got " + artifact::json_kind(*value));
    return value->get<double>();
  }

  // Every key of the object must have been read: a misspelled key is an error.
  Status no_unknown_keys() const {
    for (const auto& [key, value] : object_.items()) {
      if (seen_.count(key) == 0) {
        return Status::invalid_input(source_ + ": unknown key \"" + prefix_ + key +
                                     "\"; remove it or fix its spelling");
      }
    }
    return Status::ok();
  }

 private:
  const json& object_;
  std::string source_;
  std::string prefix_;
  std::set<std::string> seen_;
};

// The "calibration" block: its numbers (validate_device_profile checks their ranges),
// the SASS architecture, and one provenance string per key.
Result<Calibration> parse_calibration(ObjectReader& reader, const std::string& source) {
  if (!reader.has(kCalibrationKey)) {
    // Profiles written before the block existed (user --device files, `calibrate`'s
    // output, an old OUT/device.json): no default could say which GPU's fits apply.
    return reader.error(kCalibrationKey,
                        "missing; every profile needs the performance model's calibration "
                        "block since issue 37: copy it from the shipped profile of the same "
                        "architecture (cost_model/profiles/*.json, docs/cost-model.md "
                        "\"Calibration\") or recompile the output");
  }
  STITCH_ASSIGN_OR_RETURN(const json* block, reader.find(kCalibrationKey));
  if (!block->is_object()) {
    return reader.error(kCalibrationKey, "expected an object, got " + artifact::json_kind(*block));
  }
  ObjectReader calibration_reader(*block, source, std::string(kCalibrationKey) + ".");
  Calibration calibration{};
  STITCH_ASSIGN_OR_RETURN(calibration.sass_architecture,
                          calibration_reader.string(kSassArchitectureKey));
  for (const auto& [key, field] : calibration_numbers(calibration)) {
    STITCH_ASSIGN_OR_RETURN(*field, calibration_reader.number(key));
  }
  STITCH_ASSIGN_OR_RETURN(const json* provenance, calibration_reader.find(kProvenanceKey));
  if (!provenance->is_object()) {
    return calibration_reader.error(kProvenanceKey,
                                    "expected an object of one string per calibration key, got " +
                                        artifact::json_kind(*provenance));
  }
  ObjectReader provenance_reader(
      *provenance, source, std::string(kCalibrationKey) + "." + std::string(kProvenanceKey) + ".");
  for (std::string_view key : kCalibrationKeys) {
    STITCH_ASSIGN_OR_RETURN(std::string text, provenance_reader.string(key));
    calibration.provenance.emplace_back(std::string(key), std::move(text));
  }
  STITCH_RETURN_IF_ERROR(provenance_reader.no_unknown_keys());
  STITCH_RETURN_IF_ERROR(calibration_reader.no_unknown_keys());
  return calibration;
}

// The curve's points as written; validate_device_profile checks their values and order.
Result<std::vector<BandwidthPoint>> parse_curve(ObjectReader& reader) {
  STITCH_ASSIGN_OR_RETURN(const json* curve, reader.find(kCurveKey));
  if (!curve->is_array()) {
    return reader.error(kCurveKey,
                        "expected a list of {\"bytes\", \"bytes_per_second\"} objects, got " +
                            artifact::json_kind(*curve));
  }
  if (curve->empty()) return reader.error(kCurveKey, "needs at least one point");
  std::vector<BandwidthPoint> points;
  for (size_t i = 0; i < curve->size(); ++i) {
    const json& point = (*curve)[i];
    const std::string where = "point " + std::to_string(i) + ": ";
    if (!point.is_object()) {
      return reader.error(kCurveKey,
                          where + "expected an object, got " + artifact::json_kind(point));
    }
    BandwidthPoint parsed{};
    for (const FieldRange* field : {&kCurveBytes, &kCurveRate}) {
      auto it = point.find(std::string(field->key));
      const std::string name = "\"" + std::string(field->key) + "\"";
      if (it == point.end()) return reader.error(kCurveKey, where + name + " missing");
      if (!it->is_number()) {
        return reader.error(kCurveKey,
                            where + name + " expected a number, got " + artifact::json_kind(*it));
      }
      (field == &kCurveBytes ? parsed.bytes : parsed.bytes_per_second) = it->get<double>();
    }
    if (point.size() != 2) {
      return reader.error(kCurveKey, where + "only \"bytes\" and \"bytes_per_second\" are allowed");
    }
    points.push_back(parsed);
  }
  return points;
}

Status curve_problem(const std::vector<BandwidthPoint>& curve, const std::string& source) {
  auto error = [&](const std::string& what) {
    return Status::invalid_input(source + ": key \"" + std::string(kCurveKey) + "\": " + what);
  };
  if (curve.empty()) return error("needs at least one point");
  for (size_t i = 0; i < curve.size(); ++i) {
    const std::string where = "point " + std::to_string(i) + ": ";
    for (const FieldRange* field : {&kCurveBytes, &kCurveRate}) {
      const double value = field == &kCurveBytes ? curve[i].bytes : curve[i].bytes_per_second;
      std::string problem = range_problem(*field, value);
      if (!problem.empty()) return error(where + "\"" + std::string(field->key) + "\" " + problem);
    }
    if (i > 0 && curve[i].bytes <= curve[i - 1].bytes) {
      std::ostringstream text;
      text << where << "bytes " << curve[i].bytes << " must be greater than the previous point's "
           << curve[i - 1].bytes << " (sort the curve by bytes, no duplicates)";
      return error(text.str());
    }
  }
  return Status::ok();
}

}  // namespace

Status validate_device_profile(const DeviceProfile& profile, std::string_view source_name) {
  const std::string source(source_name);
  auto error = [&](std::string_view key, const std::string& what) {
    return Status::invalid_input(source + ": key \"" + std::string(key) + "\": " + what);
  };
  const std::pair<std::string_view, double> values[] = {
      {"sm_count", profile.sm_count},
      {"max_threads_per_block", profile.max_threads_per_block},
      {"max_threads_per_sm", profile.max_threads_per_sm},
      {"warp_size", profile.warp_size},
      {"registers_per_block", profile.registers_per_block},
      {"registers_per_sm", profile.registers_per_sm},
      {"shared_memory_per_block", static_cast<double>(profile.shared_memory_per_block)},
      {"shared_memory_per_block_optin", static_cast<double>(profile.shared_memory_per_block_optin)},
      {"shared_memory_per_sm", static_cast<double>(profile.shared_memory_per_sm)},
      {"l1_bytes_per_sm", static_cast<double>(profile.l1_bytes_per_sm)},
      {"l2_bytes", static_cast<double>(profile.l2_bytes)},
      {"peak_dram_bytes_per_second", profile.peak_dram_bytes_per_second},
      {"launch_latency_us", profile.launch_latency_us},
      {"fp32_flops_per_second", profile.fp32_flops_per_second},
      {"fp16_flops_per_second", profile.fp16_flops_per_second},
      {"tf32_flops_per_second", profile.tf32_flops_per_second},
      {"sm_clock_hz", profile.sm_clock_hz},
      {"max_blocks_per_sm", profile.max_blocks_per_sm},
      {"l2_bytes_per_second", profile.l2_bytes_per_second},
      {"fp64_flops_per_second", profile.fp64_flops_per_second},
      {"block_barrier_cycles", profile.block_barrier_cycles},
      {"grid_barrier_us", profile.grid_barrier_us},
      {"atomic_same_address_ns", profile.atomic_same_address_ns},
      {"global_load_latency_ns", profile.global_load_latency_ns},
      {"library_efficiency", profile.library_efficiency},
  };
  const auto calibration = calibration_numbers(profile.calibration);
  STITCH_CHECK(std::size(values) + calibration.size() == std::size(kFieldRanges))
      << "a device profile field without a range check";
  for (const auto& [key, value] : values) {
    std::string problem = range_problem(field_range(key), value);
    if (!problem.empty()) return error(key, problem);
  }
  const std::string calibration_prefix = std::string(kCalibrationKey) + ".";
  for (const auto& [key, value] : calibration) {
    const std::string dotted = calibration_prefix + std::string(key);
    std::string problem = range_problem(field_range(dotted), *value);
    if (!problem.empty()) return error(dotted, problem);
  }
  std::string arch_problem = sass_architecture_problem(profile.calibration.sass_architecture);
  if (!arch_problem.empty()) {
    return error(calibration_prefix + std::string(kSassArchitectureKey), arch_problem);
  }
  // One provenance per key, in order: a calibrated profile says where each number is from.
  const auto& provenance = profile.calibration.provenance;
  for (size_t i = 0; i < std::size(kCalibrationKeys); ++i) {
    if (i >= provenance.size() || provenance[i].first != kCalibrationKeys[i]) {
      return error(calibration_prefix + std::string(kProvenanceKey),
                   "needs one entry per calibration key, in order; \"" +
                       std::string(kCalibrationKeys[i]) + "\" is missing");
    }
    if (provenance[i].second.empty()) {
      return error(
          calibration_prefix + std::string(kProvenanceKey) + "." + std::string(kCalibrationKeys[i]),
          "is empty; say which run fitted the value, or where it is from");
    }
  }
  if (provenance.size() != std::size(kCalibrationKeys)) {
    return error(calibration_prefix + std::string(kProvenanceKey),
                 "has an entry \"" + provenance[std::size(kCalibrationKeys)].first +
                     "\" that names no calibration key");
  }
  STITCH_RETURN_IF_ERROR(curve_problem(profile.bandwidth_curve, source));
  // Limits per block never exceed the SM's.
  if (profile.max_threads_per_block > profile.max_threads_per_sm) {
    return error("max_threads_per_block", "must be at most max_threads_per_sm (" +
                                              std::to_string(profile.max_threads_per_sm) + ")");
  }
  if (profile.registers_per_block > profile.registers_per_sm) {
    return error("registers_per_block", "must be at most registers_per_sm (" +
                                            std::to_string(profile.registers_per_sm) + ")");
  }
  if (profile.shared_memory_per_block_optin > profile.shared_memory_per_sm) {
    return error("shared_memory_per_block_optin", "must be at most shared_memory_per_sm (" +
                                                      std::to_string(profile.shared_memory_per_sm) +
                                                      ")");
  }
  if (profile.l1_bytes_per_sm != 0 && profile.l1_bytes_per_sm < profile.shared_memory_per_sm) {
    return error("l1_bytes_per_sm", "must be 0 or at least shared_memory_per_sm (" +
                                        std::to_string(profile.shared_memory_per_sm) +
                                        "): the L1 and shared memory share one array");
  }
  return Status::ok();
}

Result<DeviceProfile> parse_device_profile(std::string_view json_text,
                                           std::string_view source_name) {
  std::string source(source_name);
  json document =
      json::parse(json_text.begin(), json_text.end(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    return Status::invalid_input(source + ": not valid JSON; check brackets, commas and quotes");
  }
  if (!document.is_object()) {
    return Status::invalid_input(source + ": expected a JSON object at the top level, got " +
                                 artifact::json_kind(document));
  }
  ObjectReader reader(document, source);
  DeviceProfile profile{};
  STITCH_ASSIGN_OR_RETURN(profile.name, reader.string("name"));
  STITCH_ASSIGN_OR_RETURN(profile.source, reader.string("source"));
  if (profile.source != "estimate" && profile.source != "calibrated") {
    return reader.error("source",
                        "expected \"estimate\" or \"calibrated\", got \"" + profile.source + "\"");
  }
  STITCH_ASSIGN_OR_RETURN(profile.date, reader.string("date"));
  STITCH_ASSIGN_OR_RETURN(profile.sku, reader.optional_string("sku"));
  STITCH_ASSIGN_OR_RETURN(profile.note, reader.optional_string("note"));
  // reader.integer checks the range, so the narrowing to int is exact.
  auto int_field = [&](std::string_view key, int& field) -> Status {
    STITCH_ASSIGN_OR_RETURN(int64_t value, reader.integer(key));
    field = static_cast<int>(value);
    return Status::ok();
  };
  auto int64_field = [&](std::string_view key, int64_t& field) -> Status {
    STITCH_ASSIGN_OR_RETURN(field, reader.integer(key));
    return Status::ok();
  };
  auto number_field = [&](std::string_view key, double& field) -> Status {
    STITCH_ASSIGN_OR_RETURN(field, reader.number(key));
    return Status::ok();
  };
  STITCH_RETURN_IF_ERROR(int_field("sm_count", profile.sm_count));
  STITCH_RETURN_IF_ERROR(int_field("max_threads_per_block", profile.max_threads_per_block));
  STITCH_RETURN_IF_ERROR(int_field("max_threads_per_sm", profile.max_threads_per_sm));
  STITCH_RETURN_IF_ERROR(int_field("warp_size", profile.warp_size));
  STITCH_RETURN_IF_ERROR(int_field("registers_per_block", profile.registers_per_block));
  STITCH_RETURN_IF_ERROR(int_field("registers_per_sm", profile.registers_per_sm));
  STITCH_RETURN_IF_ERROR(int64_field("shared_memory_per_block", profile.shared_memory_per_block));
  STITCH_RETURN_IF_ERROR(
      int64_field("shared_memory_per_block_optin", profile.shared_memory_per_block_optin));
  STITCH_RETURN_IF_ERROR(int64_field("shared_memory_per_sm", profile.shared_memory_per_sm));
  if (reader.has("l1_bytes_per_sm")) {  // optional: profiles written before it
    STITCH_RETURN_IF_ERROR(int64_field("l1_bytes_per_sm", profile.l1_bytes_per_sm));
  }
  STITCH_RETURN_IF_ERROR(int64_field("l2_bytes", profile.l2_bytes));
  STITCH_RETURN_IF_ERROR(
      number_field("peak_dram_bytes_per_second", profile.peak_dram_bytes_per_second));
  STITCH_ASSIGN_OR_RETURN(profile.bandwidth_curve, parse_curve(reader));
  STITCH_RETURN_IF_ERROR(number_field("launch_latency_us", profile.launch_latency_us));
  STITCH_RETURN_IF_ERROR(number_field("fp32_flops_per_second", profile.fp32_flops_per_second));
  STITCH_RETURN_IF_ERROR(number_field("fp16_flops_per_second", profile.fp16_flops_per_second));
  if (reader.has("tf32_flops_per_second")) {  // optional: profiles written before it
    STITCH_RETURN_IF_ERROR(number_field("tf32_flops_per_second", profile.tf32_flops_per_second));
  }
  STITCH_RETURN_IF_ERROR(number_field("sm_clock_hz", profile.sm_clock_hz));
  STITCH_RETURN_IF_ERROR(int_field("max_blocks_per_sm", profile.max_blocks_per_sm));
  STITCH_RETURN_IF_ERROR(number_field("l2_bytes_per_second", profile.l2_bytes_per_second));
  STITCH_RETURN_IF_ERROR(number_field("fp64_flops_per_second", profile.fp64_flops_per_second));
  STITCH_RETURN_IF_ERROR(number_field("block_barrier_cycles", profile.block_barrier_cycles));
  STITCH_RETURN_IF_ERROR(number_field("grid_barrier_us", profile.grid_barrier_us));
  STITCH_RETURN_IF_ERROR(number_field("atomic_same_address_ns", profile.atomic_same_address_ns));
  STITCH_RETURN_IF_ERROR(number_field("global_load_latency_ns", profile.global_load_latency_ns));
  STITCH_RETURN_IF_ERROR(number_field("library_efficiency", profile.library_efficiency));
  STITCH_ASSIGN_OR_RETURN(profile.calibration, parse_calibration(reader, source));
  STITCH_RETURN_IF_ERROR(reader.no_unknown_keys());
  STITCH_RETURN_IF_ERROR(validate_device_profile(profile, source));
  return profile;
}

Result<DeviceProfile> load_device_profile(const std::string& path) {
  Result<std::string> text = support::read_regular_file(path, kMaxProfileBytes, "device profile");
  if (!text.is_ok()) {
    std::string names;
    for (const std::string& name : builtin_device_profile_names()) {
      names += (names.empty() ? "" : ", ") + name;
    }
    return Status::invalid_input(text.status().message() +
                                 "; check the path, or use a builtin name (" + names + ")");
  }
  return parse_device_profile(*text, path);
}

Result<DeviceProfile> builtin_device_profile(std::string_view name) {
  for (const auto& [builtin_name, text] : detail::builtin_profile_texts()) {
    if (builtin_name == name) {
      return parse_device_profile(text, "builtin profile " + std::string(name));
    }
  }
  std::string known;
  for (const std::string& builtin_name : builtin_device_profile_names()) {
    known += (known.empty() ? "" : ", ") + builtin_name;
  }
  return Status::invalid_input("unknown device \"" + std::string(name) +
                               "\"; known devices: " + known + " (or pass a profile JSON file)");
}

Result<DeviceProfile> resolve_device_profile(const std::string& device) {
  if (device.size() > 5 && device.ends_with(".json")) return load_device_profile(device);
  Result<DeviceProfile> builtin = builtin_device_profile(device);
  if (builtin.is_ok()) return builtin;
  std::string names;
  for (const std::string& name : builtin_device_profile_names()) {
    names += (names.empty() ? "" : ", ") + name;
  }
  return Status::invalid_input("--device " + device + ": no such device profile; use one of " +
                               names + " or the path of a profile .json");
}

std::string_view launch_mode_name(LaunchMode mode) {
  return mode == LaunchMode::kGraph ? "graph" : "host";
}

std::optional<LaunchMode> parse_launch_mode(std::string_view name) {
  if (name == "graph") return LaunchMode::kGraph;
  if (name == "host") return LaunchMode::kHost;
  return std::nullopt;
}

double launch_phi(const DeviceProfile& profile) {
  return profile.launch_mode == LaunchMode::kGraph ? profile.calibration.graph_launch_latency_us
                                                   : profile.launch_latency_us;
}

double grid_barrier_time_us(const DeviceProfile& profile, double blocks) {
  if (blocks <= 0) return profile.grid_barrier_us;
  const double extra =
      (blocks - static_cast<double>(profile.sm_count)) * profile.atomic_same_address_ns * 1e-3;
  // Fewer blocks than SMs save their atomics, never the barrier's own round trips.
  return std::max(profile.grid_barrier_us + extra, 0.5 * profile.grid_barrier_us);
}

void set_launch_phi(DeviceProfile* profile, double microseconds) {
  if (profile->launch_mode == LaunchMode::kGraph) {
    profile->calibration.graph_launch_latency_us = microseconds;
  } else {
    profile->launch_latency_us = microseconds;
  }
}

std::string sass_architecture(const DeviceProfile& profile) {
  return profile.calibration.sass_architecture;
}

std::vector<std::string> builtin_device_profile_names() {
  std::vector<std::string> names;
  for (const auto& entry : detail::builtin_profile_texts()) names.emplace_back(entry.first);
  std::sort(names.begin(), names.end());
  return names;
}

std::string device_profile_json(const DeviceProfile& profile) {
  nlohmann::ordered_json json;
  json["name"] = profile.name;
  if (!profile.sku.empty()) json["sku"] = profile.sku;
  json["source"] = profile.source;
  json["date"] = profile.date;
  if (!profile.note.empty()) json["note"] = profile.note;
  json["sm_count"] = profile.sm_count;
  json["max_threads_per_block"] = profile.max_threads_per_block;
  json["max_threads_per_sm"] = profile.max_threads_per_sm;
  json["warp_size"] = profile.warp_size;
  json["registers_per_block"] = profile.registers_per_block;
  json["registers_per_sm"] = profile.registers_per_sm;
  json["shared_memory_per_block"] = profile.shared_memory_per_block;
  json["shared_memory_per_block_optin"] = profile.shared_memory_per_block_optin;
  json["shared_memory_per_sm"] = profile.shared_memory_per_sm;
  json["l1_bytes_per_sm"] = profile.l1_bytes_per_sm;
  json["l2_bytes"] = profile.l2_bytes;
  json["peak_dram_bytes_per_second"] = profile.peak_dram_bytes_per_second;
  nlohmann::ordered_json curve = nlohmann::ordered_json::array();
  for (const BandwidthPoint& point : profile.bandwidth_curve) {
    curve.push_back({{"bytes", point.bytes}, {"bytes_per_second", point.bytes_per_second}});
  }
  json["bandwidth_curve"] = curve;
  json["launch_latency_us"] = profile.launch_latency_us;
  json["fp32_flops_per_second"] = profile.fp32_flops_per_second;
  json["fp16_flops_per_second"] = profile.fp16_flops_per_second;
  json["tf32_flops_per_second"] = profile.tf32_flops_per_second;
  json["sm_clock_hz"] = profile.sm_clock_hz;
  json["max_blocks_per_sm"] = profile.max_blocks_per_sm;
  json["l2_bytes_per_second"] = profile.l2_bytes_per_second;
  json["fp64_flops_per_second"] = profile.fp64_flops_per_second;
  json["block_barrier_cycles"] = profile.block_barrier_cycles;
  json["grid_barrier_us"] = profile.grid_barrier_us;
  json["atomic_same_address_ns"] = profile.atomic_same_address_ns;
  json["global_load_latency_ns"] = profile.global_load_latency_ns;
  json["library_efficiency"] = profile.library_efficiency;
  nlohmann::ordered_json calibration;
  calibration[std::string(kSassArchitectureKey)] = profile.calibration.sass_architecture;
  for (const auto& [key, value] : calibration_numbers(profile.calibration)) {
    calibration[std::string(key)] = *value;
  }
  nlohmann::ordered_json provenance = nlohmann::ordered_json::object();
  for (const auto& [key, text] : profile.calibration.provenance) provenance[key] = text;
  calibration[std::string(kProvenanceKey)] = provenance;
  json[std::string(kCalibrationKey)] = calibration;
  return json.dump(2) + "\n";
}

}  // namespace stitch::cost_model
