// DeviceProfile parsing and validation; the builtin profiles' text comes from the
// build directory's generated builtin_profiles.cc (cost_model/CMakeLists.txt).
#include "cost_model/device_profile.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>

namespace stitch::cost_model {

namespace detail {
// Defined in the generated builtin_profiles.cc: (name, JSON text) per shipped
// profile, sorted by name.
std::vector<std::pair<std::string_view, std::string_view>> builtin_profile_texts();
}  // namespace detail

namespace {

using nlohmann::json;

std::string json_type_name(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "a boolean";
    case json::value_t::string:
      return "a string";
    case json::value_t::array:
      return "a list";
    case json::value_t::object:
      return "an object";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "an integer";
    case json::value_t::number_float:
      return "a number";
    default:
      return "an unsupported value";
  }
}

// Reads the keys of one JSON object, naming `source` and the key in every error.
class ObjectReader {
 public:
  ObjectReader(const json& object, std::string source)
      : object_(object), source_(std::move(source)) {}

  Status error(std::string_view key, const std::string& what) const {
    return Status::invalid_input(source_ + ": key \"" + std::string(key) + "\": " + what);
  }

  Result<const json*> find(std::string_view key) {
    seen_.insert(std::string(key));
    auto it = object_.find(std::string(key));
    if (it == object_.end()) {
      return error(key, "missing; every profile needs it (see cost_model/profiles/h100.json)");
    }
    return &*it;
  }

  Result<std::string> string(std::string_view key) {
    STITCH_ASSIGN_OR_RETURN(const json* value, find(key));
    if (!value->is_string()) return error(key, "expected a string, got " + json_type_name(*value));
    return value->get<std::string>();
  }

  // An optional free-text key: accepted when it is a string, otherwise an error.
  // The string under `key`, "" when absent.
  Result<std::string> optional_string(std::string_view key) {
    seen_.insert(std::string(key));
    auto it = object_.find(std::string(key));
    if (it == object_.end()) return std::string();
    if (!it->is_string()) return error(key, "expected a string, got " + json_type_name(*it));
    return it->get<std::string>();
  }

  Result<int64_t> positive_integer(std::string_view key, int64_t max) {
    STITCH_ASSIGN_OR_RETURN(const json* value, find(key));
    if (!value->is_number_integer()) {
      return error(key, "expected an integer, got " + json_type_name(*value));
    }
    if (value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(max)) {
      return error(key, "must be at most " + std::to_string(max));
    }
    int64_t number = value->get<int64_t>();
    if (number <= 0) return error(key, "must be positive, got " + std::to_string(number));
    if (number > max) return error(key, "must be at most " + std::to_string(max));
    return number;
  }

  Result<double> positive_number(std::string_view key) {
    STITCH_ASSIGN_OR_RETURN(const json* value, find(key));
    return positive_number_value(key, *value);
  }

  Result<double> positive_number_value(std::string_view key, const json& value) const {
    if (!value.is_number()) return error(key, "expected a number, got " + json_type_name(value));
    double number = value.get<double>();
    if (!std::isfinite(number) || number <= 0) {
      std::ostringstream text;
      text << "must be positive, got " << number;
      return error(key, text.str());
    }
    return number;
  }

  // Every key of the object must have been read: a misspelled key is an error.
  Status no_unknown_keys() const {
    for (const auto& [key, value] : object_.items()) {
      if (seen_.count(key) == 0) {
        return Status::invalid_input(source_ + ": unknown key \"" + key +
                                     "\"; remove it or fix its spelling");
      }
    }
    return Status::ok();
  }

 private:
  const json& object_;
  std::string source_;
  std::set<std::string> seen_;
};

Result<std::vector<BandwidthPoint>> parse_curve(ObjectReader& reader) {
  constexpr std::string_view kKey = "bandwidth_curve";
  STITCH_ASSIGN_OR_RETURN(const json* curve, reader.find(kKey));
  if (!curve->is_array()) {
    return reader.error(kKey, "expected a list of {\"bytes\", \"bytes_per_second\"} objects, got " +
                                  json_type_name(*curve));
  }
  if (curve->empty()) return reader.error(kKey, "needs at least one point");
  std::vector<BandwidthPoint> points;
  for (size_t i = 0; i < curve->size(); ++i) {
    const json& point = (*curve)[i];
    if (!point.is_object()) {
      return reader.error(kKey, "point " + std::to_string(i) + ": expected an object, got " +
                                    json_type_name(point));
    }
    BandwidthPoint parsed{};
    for (const char* field : {"bytes", "bytes_per_second"}) {
      auto it = point.find(field);
      if (it == point.end()) {
        return reader.error(kKey, "point " + std::to_string(i) + ": \"" + field + "\" missing");
      }
      if (!it->is_number()) {
        return reader.error(kKey, "point " + std::to_string(i) + ": \"" + field +
                                      "\" expected a number, got " + json_type_name(*it));
      }
      double number = it->get<double>();
      if (!std::isfinite(number) || number <= 0) {
        std::ostringstream text;
        text << "point " << i << ": \"" << field << "\" must be positive, got " << number;
        return reader.error(kKey, text.str());
      }
      (std::string_view(field) == "bytes" ? parsed.bytes : parsed.bytes_per_second) = number;
    }
    if (point.size() != 2) {
      return reader.error(kKey, "point " + std::to_string(i) +
                                    ": only \"bytes\" and \"bytes_per_second\" are allowed");
    }
    if (!points.empty() && parsed.bytes <= points.back().bytes) {
      std::ostringstream text;
      text << "point " << i << ": bytes " << parsed.bytes
           << " must be greater than the previous point's " << points.back().bytes
           << " (sort the curve by bytes, no duplicates)";
      return reader.error(kKey, text.str());
    }
    points.push_back(parsed);
  }
  return points;
}

}  // namespace

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
                                 json_type_name(document));
  }
  ObjectReader reader(document, source);
  constexpr int64_t kMaxInt = std::numeric_limits<int>::max();
  constexpr int64_t kMaxInt64 = std::numeric_limits<int64_t>::max();
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
  auto int_field = [&](std::string_view key, int& field) -> Status {
    Result<int64_t> value = reader.positive_integer(key, kMaxInt);
    if (!value.is_ok()) return value.status();
    field = static_cast<int>(*value);
    return Status::ok();
  };
  auto int64_field = [&](std::string_view key, int64_t& field) -> Status {
    Result<int64_t> value = reader.positive_integer(key, kMaxInt64);
    if (!value.is_ok()) return value.status();
    field = *value;
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
  STITCH_RETURN_IF_ERROR(int64_field("l2_bytes", profile.l2_bytes));
  STITCH_ASSIGN_OR_RETURN(profile.peak_dram_bytes_per_second,
                          reader.positive_number("peak_dram_bytes_per_second"));
  STITCH_ASSIGN_OR_RETURN(profile.bandwidth_curve, parse_curve(reader));
  STITCH_ASSIGN_OR_RETURN(profile.launch_latency_us, reader.positive_number("launch_latency_us"));
  STITCH_ASSIGN_OR_RETURN(profile.fp32_flops_per_second,
                          reader.positive_number("fp32_flops_per_second"));
  STITCH_ASSIGN_OR_RETURN(profile.fp16_flops_per_second,
                          reader.positive_number("fp16_flops_per_second"));
  STITCH_ASSIGN_OR_RETURN(profile.sm_clock_hz, reader.positive_number("sm_clock_hz"));
  STITCH_RETURN_IF_ERROR(int_field("max_blocks_per_sm", profile.max_blocks_per_sm));
  STITCH_ASSIGN_OR_RETURN(profile.l2_bytes_per_second,
                          reader.positive_number("l2_bytes_per_second"));
  STITCH_ASSIGN_OR_RETURN(profile.fp64_flops_per_second,
                          reader.positive_number("fp64_flops_per_second"));
  STITCH_ASSIGN_OR_RETURN(profile.block_barrier_cycles,
                          reader.positive_number("block_barrier_cycles"));
  STITCH_ASSIGN_OR_RETURN(profile.grid_barrier_us, reader.positive_number("grid_barrier_us"));
  STITCH_ASSIGN_OR_RETURN(profile.atomic_same_address_ns,
                          reader.positive_number("atomic_same_address_ns"));
  STITCH_ASSIGN_OR_RETURN(profile.global_load_latency_ns,
                          reader.positive_number("global_load_latency_ns"));
  STITCH_ASSIGN_OR_RETURN(profile.library_efficiency, reader.positive_number("library_efficiency"));
  if (profile.library_efficiency > 1) {
    return reader.error("library_efficiency", "must be at most 1 (a fraction of peak)");
  }
  STITCH_RETURN_IF_ERROR(reader.no_unknown_keys());
  if (profile.shared_memory_per_block_optin < profile.shared_memory_per_block) {
    return reader.error("shared_memory_per_block_optin",
                        "must be at least shared_memory_per_block (" +
                            std::to_string(profile.shared_memory_per_block) + ")");
  }
  if (profile.max_threads_per_block > profile.max_threads_per_sm) {
    return reader.error(
        "max_threads_per_block",
        "must be at most max_threads_per_sm (" + std::to_string(profile.max_threads_per_sm) + ")");
  }
  return profile;
}

Result<DeviceProfile> load_device_profile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return Status::invalid_input(path +
                                 ": cannot open the device profile; check the path, or use "
                                 "a builtin name (v100, a100, h100, h200)");
  }
  std::ostringstream text;
  text << file.rdbuf();
  return parse_device_profile(text.str(), path);
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

std::string sass_architecture(const DeviceProfile& profile) {
  if (profile.name.rfind("v100", 0) == 0 || profile.name.rfind("a100", 0) == 0) return "sm_80";
  return "sm_90";
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
  json["sm_clock_hz"] = profile.sm_clock_hz;
  json["max_blocks_per_sm"] = profile.max_blocks_per_sm;
  json["l2_bytes_per_second"] = profile.l2_bytes_per_second;
  json["fp64_flops_per_second"] = profile.fp64_flops_per_second;
  json["block_barrier_cycles"] = profile.block_barrier_cycles;
  json["grid_barrier_us"] = profile.grid_barrier_us;
  json["atomic_same_address_ns"] = profile.atomic_same_address_ns;
  json["global_load_latency_ns"] = profile.global_load_latency_ns;
  json["library_efficiency"] = profile.library_efficiency;
  return json.dump(2) + "\n";
}

}  // namespace stitch::cost_model
