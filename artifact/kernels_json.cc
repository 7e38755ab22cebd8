// Writes, reads and checks OUT/kernels/kernels.json (see kernels_json.h).
#include "artifact/kernels_json.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "artifact/json_text.h"
#include "support/bounded_file.h"
#include "support/escape.h"
#include "support/json_extent.h"
#include "support/sha256.h"

namespace stitch::artifact {
namespace fs = std::filesystem;
namespace {

using nlohmann::json;

// No tensor of a model stitchopt imports holds more than 2^40 bytes
// (onnx_import/importer.cc), so no dimension, workspace or grid is larger.
constexpr int64_t kMaxDimension = int64_t{1} << 40;
constexpr int64_t kMaxWorkspaceBytes = int64_t{1} << 40;
constexpr int64_t kMaxGrid = int64_t{1} << 40;
// CUDA's limits on every GPU stitchopt targets: 1024 threads per block, and far less
// than 1 GiB of shared memory per block.
constexpr int64_t kMaxBlock = 1024;
constexpr int64_t kMaxSharedBytes = int64_t{1} << 30;
// A launch of more than a day, or more multiply-adds than 2^40-byte tensors can
// need, is no estimate stitchopt writes.
constexpr double kMaxPredictedUs = 86400e6;
constexpr double kMaxCharge = 1e30;
// stitchopt's kernels.json nests 6 deep and holds a value per ~20 bytes (3.3 Mi
// values in 64 MiB); within both limits a document parses into at most
// ~400 MB (350 MB measured for 4 Mi empty strings).
constexpr size_t kMaxDepth = 32;
constexpr size_t kMaxItems = size_t{1} << 22;
constexpr const char* kRecompile = "; recompile the model";
// Long strings are cut in messages: a tampered file must not flood the terminal.
constexpr size_t kMaxQuotedBytes = 60;

// `text` quoted and escaped (support::quote), cut past kMaxQuotedBytes.
std::string quote_cut(const std::string& text) {
  if (text.size() <= kMaxQuotedBytes) return support::quote(text);
  return support::quote(text.substr(0, kMaxQuotedBytes)) + " (cut)";
}

std::string integer_text(const json& value) {
  return value.is_number_unsigned() ? std::to_string(value.get<uint64_t>())
                                    : std::to_string(value.get<int64_t>());
}

// What a JSON value is, for "expected X, got Y": "the string \"yes\"", "the integer 3".
std::string describe(const json& value) {
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_string()) return "the string " + quote_cut(value.get_ref<const std::string&>());
  if (value.is_number_integer()) return "the integer " + integer_text(value);
  if (value.is_number_float()) {
    std::ostringstream text;
    text << "the number " << value.get<double>();
    return text.str();
  }
  return json_kind(value);  // null, a list, an object
}

bool is_identifier(std::string_view text) {
  if (text.empty() || std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  return std::all_of(text.begin(), text.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::optional<ir::DType> dtype_from_onnx_name(std::string_view name) {
  for (int32_t value = 1; ir::dtype_is_valid_onnx(value); ++value) {
    const auto dtype = static_cast<ir::DType>(value);
    if (ir::dtype_onnx_name(dtype) == name) return dtype;
  }
  return std::nullopt;
}

// The keys of one JSON object; `where` ("out/kernels/kernels.json: kernel stitch_k0: ")
// starts every error.
class Fields {
 public:
  Fields(const json& object, std::string where) : object_(&object), where_(std::move(where)) {}

  const std::string& where() const { return where_; }

  Status error(std::string_view key, const std::string& what) const {
    return Status::invalid_input(where_ + "key \"" + std::string(key) + "\": " + what + kRecompile);
  }

  Result<const json*> find(std::string_view key) const {
    auto it = object_->find(std::string(key));
    if (it == object_->end()) return error(key, "missing");
    return &*it;
  }

  Result<std::string> string(std::string_view key) const {
    STITCH_ASSIGN_OR_RETURN(const json* value, find(key));
    if (!value->is_string()) return error(key, "expected a string, got " + describe(*value));
    return value->get<std::string>();
  }

  Result<bool> boolean(std::string_view key) const {
    STITCH_ASSIGN_OR_RETURN(const json* value, find(key));
    if (!value->is_boolean()) return error(key, "expected true or false, got " + describe(*value));
    return value->get<bool>();
  }

  Result<int64_t> integer(std::string_view key, int64_t low, int64_t high) const {
    STITCH_ASSIGN_OR_RETURN(const json* value, find(key));
    return integer_value(key, *value, low, high, "");
  }

  // `item` ("dimension 2: ") says which element of the key's list `value` is.
  Result<int64_t> integer_value(std::string_view key, const json& value, int64_t low, int64_t high,
                                const std::string& item) const {
    if (!value.is_number_integer()) {
      return error(key, item + "expected an integer, got " + describe(value));
    }
    const bool too_large =
        value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(high);
    if (too_large || value.get<int64_t>() < low || value.get<int64_t>() > high) {
      return error(key, item + "must be between " + std::to_string(low) + " and " +
                            std::to_string(high) + ", got " + integer_text(value));
    }
    return value.get<int64_t>();
  }

  // A finite number in [low, high] (an integer is one too).
  Result<double> number(std::string_view key, double low, double high) const {
    STITCH_ASSIGN_OR_RETURN(const json* value, find(key));
    if (!value->is_number()) return error(key, "expected a number, got " + describe(*value));
    const double number = value->get<double>();
    if (!std::isfinite(number) || number < low || number > high) {
      std::ostringstream range;
      range << "must be between " << low << " and " << high << ", got " << number;
      return error(key, range.str());
    }
    return number;
  }

  Result<Fields> object(std::string_view key, std::string_view of) const {
    STITCH_ASSIGN_OR_RETURN(const json* value, find(key));
    if (!value->is_object()) {
      return error(key, "expected an object of " + std::string(of) + ", got " + describe(*value));
    }
    return Fields(*value, where_ + std::string(key) + ": ");
  }

  Result<const json*> list(std::string_view key, std::string_view of) const {
    STITCH_ASSIGN_OR_RETURN(const json* value, find(key));
    if (!value->is_array()) {
      return error(key, "expected a list of " + std::string(of) + ", got " + describe(*value));
    }
    return value;
  }

  Result<std::vector<std::string>> strings(std::string_view key) const {
    STITCH_ASSIGN_OR_RETURN(const json* items, list(key, "strings"));
    std::vector<std::string> result;
    for (size_t i = 0; i < items->size(); ++i) {
      const json& item = (*items)[i];
      if (!item.is_string()) {
        return error(key,
                     "item " + std::to_string(i) + ": expected a string, got " + describe(item));
      }
      result.push_back(item.get<std::string>());
    }
    return result;
  }

 private:
  const json* object_;  // a pointer, so that a Fields can be returned
  std::string where_;
};

Result<TensorRecord> parse_tensor(const Fields& kernel, std::string_view key, size_t index,
                                  const json& item) {
  if (!item.is_object()) {
    return kernel.error(key, "item " + std::to_string(index) +
                                 ": expected an object with name, dtype and shape, got " +
                                 describe(item));
  }
  const Fields fields(item, kernel.where() + std::string(key) + " " + std::to_string(index) + ": ");
  TensorRecord tensor;
  STITCH_ASSIGN_OR_RETURN(tensor.name, fields.string("name"));
  STITCH_ASSIGN_OR_RETURN(const json* dtype, fields.find("dtype"));
  std::optional<ir::DType> known;
  if (dtype->is_string()) known = dtype_from_onnx_name(dtype->get_ref<const std::string&>());
  if (!known) {
    return fields.error("dtype",
                        "expected an ONNX type name such as \"float\", got " + describe(*dtype));
  }
  tensor.dtype = *known;
  STITCH_ASSIGN_OR_RETURN(const json* shape, fields.list("shape", "dimensions"));
  for (size_t i = 0; i < shape->size(); ++i) {
    STITCH_ASSIGN_OR_RETURN(int64_t dim,
                            fields.integer_value("shape", (*shape)[i], 0, kMaxDimension,
                                                 "dimension " + std::to_string(i) + ": "));
    tensor.shape.push_back(dim);
  }
  return tensor;
}

Result<std::vector<TensorRecord>> parse_tensors(const Fields& kernel, std::string_view key) {
  STITCH_ASSIGN_OR_RETURN(const json* items, kernel.list(key, "{name, dtype, shape} objects"));
  std::vector<TensorRecord> tensors;
  for (size_t i = 0; i < items->size(); ++i) {
    STITCH_ASSIGN_OR_RETURN(TensorRecord tensor, parse_tensor(kernel, key, i, (*items)[i]));
    tensors.push_back(std::move(tensor));
  }
  return tensors;
}

Result<std::vector<SharedLaunchRecord>> parse_shared_by(const Fields& kernel) {
  constexpr std::string_view kKey = "shared_by";
  STITCH_ASSIGN_OR_RETURN(const json* items, kernel.list(kKey, "{node, outputs} objects"));
  std::vector<SharedLaunchRecord> launches;
  for (size_t i = 0; i < items->size(); ++i) {
    const json& item = (*items)[i];
    if (!item.is_object()) {
      return kernel.error(kKey, "item " + std::to_string(i) +
                                    ": expected an object with node and outputs, got " +
                                    describe(item));
    }
    const Fields fields(item, kernel.where() + "shared_by " + std::to_string(i) + ": ");
    SharedLaunchRecord launch;
    STITCH_ASSIGN_OR_RETURN(launch.node, fields.string("node"));
    STITCH_ASSIGN_OR_RETURN(launch.outputs, fields.strings("outputs"));
    launches.push_back(std::move(launch));
  }
  return launches;
}

Result<KernelCharges> parse_charges(const Fields& kernel) {
  STITCH_ASSIGN_OR_RETURN(Fields fields, kernel.object("charges", "the schedule's charges"));
  KernelCharges charges;
  STITCH_ASSIGN_OR_RETURN(charges.global, fields.boolean("global"));
  STITCH_ASSIGN_OR_RETURN(charges.grid_barriers,
                          fields.integer("grid_barriers", 0, std::numeric_limits<int32_t>::max()));
  STITCH_ASSIGN_OR_RETURN(charges.grid_blocks,
                          fields.integer("grid_blocks", 0, std::numeric_limits<int32_t>::max()));
  STITCH_ASSIGN_OR_RETURN(charges.workspace_bytes,
                          fields.integer("workspace_bytes", 0, kMaxWorkspaceBytes));
  STITCH_ASSIGN_OR_RETURN(charges.thread_gemm_macs,
                          fields.number("thread_gemm_macs", 0, kMaxCharge));
  STITCH_ASSIGN_OR_RETURN(charges.tiled_gemm_macs, fields.number("tiled_gemm_macs", 0, kMaxCharge));
  STITCH_ASSIGN_OR_RETURN(charges.attention_macs, fields.number("attention_macs", 0, kMaxCharge));
  STITCH_ASSIGN_OR_RETURN(charges.load_chain, fields.number("load_chain", 0, kMaxCharge));
  STITCH_ASSIGN_OR_RETURN(charges.gemm_load_chain, fields.number("gemm_load_chain", 0, kMaxCharge));
  STITCH_ASSIGN_OR_RETURN(charges.stencil_load_chain,
                          fields.number("stencil_load_chain", 0, kMaxCharge));
  return charges;
}

std::string not_a_source_of_this_directory(const std::string& where, const std::string& file) {
  return where + "key \"file\": names the source " + quote_cut(file) +
         ", which is not a .cu file of this directory" + kRecompile;
}

Result<KernelRecord> parse_kernel(const json& item, size_t index, const std::string& source) {
  const std::string at = source + ": kernels[" + std::to_string(index) + "]: ";
  if (!item.is_object()) {
    return Status::invalid_input(at + "expected an object, got " + describe(item) + kRecompile);
  }
  KernelRecord kernel;
  STITCH_ASSIGN_OR_RETURN(kernel.name, Fields(item, at).string("name"));
  if (!is_identifier(kernel.name)) {
    return Fields(item, at).error("name", quote_cut(kernel.name) + " is not an identifier");
  }
  const Fields fields(item, source + ": kernel " + kernel.name + ": ");
  STITCH_ASSIGN_OR_RETURN(kernel.file, fields.string("file"));
  // A plain name of this directory: no "/", no "..", nothing but an identifier.cu.
  if (!kernel.file.ends_with(".cu") ||
      !is_identifier(std::string_view(kernel.file).substr(0, kernel.file.size() - 3))) {
    return Status::invalid_input(not_a_source_of_this_directory(fields.where(), kernel.file));
  }
  STITCH_ASSIGN_OR_RETURN(kernel.inputs, parse_tensors(fields, "inputs"));
  STITCH_ASSIGN_OR_RETURN(kernel.outputs, parse_tensors(fields, "outputs"));
  STITCH_ASSIGN_OR_RETURN(kernel.workspace_bytes,
                          fields.integer("workspace_bytes", 0, kMaxWorkspaceBytes));
  STITCH_ASSIGN_OR_RETURN(kernel.launch.grid, fields.integer("grid", 1, kMaxGrid));
  STITCH_ASSIGN_OR_RETURN(int64_t block, fields.integer("block", 1, kMaxBlock));
  kernel.launch.block = static_cast<int>(block);
  STITCH_ASSIGN_OR_RETURN(kernel.launch.shared_bytes,
                          fields.integer("shared_bytes", 0, kMaxSharedBytes));
  STITCH_ASSIGN_OR_RETURN(kernel.launch.cooperative, fields.boolean("cooperative"));
  STITCH_ASSIGN_OR_RETURN(kernel.composition, fields.string("composition"));
  STITCH_ASSIGN_OR_RETURN(kernel.fused_nodes, fields.strings("fused_nodes"));
  if (kernel.fused_nodes.empty()) {
    return fields.error("fused_nodes", "is empty; a kernel implements at least one node");
  }
  STITCH_ASSIGN_OR_RETURN(kernel.predicted_time_us,
                          fields.number("predicted_time_us", 0, kMaxPredictedUs));
  STITCH_ASSIGN_OR_RETURN(kernel.charges, parse_charges(fields));
  STITCH_ASSIGN_OR_RETURN(kernel.shared_by, parse_shared_by(fields));
  return kernel;
}

nlohmann::ordered_json tensors_json(const std::vector<TensorRecord>& tensors) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const TensorRecord& tensor : tensors) {
    nlohmann::ordered_json entry;
    entry["name"] = tensor.name;
    entry["dtype"] = std::string(ir::dtype_onnx_name(tensor.dtype));
    entry["shape"] = tensor.shape;
    list.push_back(std::move(entry));
  }
  return list;
}

nlohmann::ordered_json charges_json(const KernelCharges& charges) {
  return {{"global", charges.global},
          {"grid_barriers", charges.grid_barriers},
          {"grid_blocks", charges.grid_blocks},
          {"workspace_bytes", charges.workspace_bytes},
          {"thread_gemm_macs", charges.thread_gemm_macs},
          {"tiled_gemm_macs", charges.tiled_gemm_macs},
          {"attention_macs", charges.attention_macs},
          {"load_chain", charges.load_chain},
          {"gemm_load_chain", charges.gemm_load_chain},
          {"stencil_load_chain", charges.stencil_load_chain}};
}

nlohmann::ordered_json kernel_json(const KernelRecord& kernel) {
  nlohmann::ordered_json entry;
  entry["name"] = kernel.name;
  entry["file"] = kernel.file;
  entry["launcher"] = kernel.name + "_launch";
  entry["workspace_launcher"] = kernel.name + "_workspace_bytes";
  entry["inputs"] = tensors_json(kernel.inputs);
  entry["outputs"] = tensors_json(kernel.outputs);
  entry["workspace_bytes"] = kernel.workspace_bytes;
  entry["grid"] = kernel.launch.grid;
  entry["block"] = kernel.launch.block;
  entry["shared_bytes"] = kernel.launch.shared_bytes;
  entry["shared_bytes_requested"] = kernel.shared_bytes_requested;
  entry["shared_memory_fallback"] = kernel.shared_memory_fallback;
  entry["cooperative"] = kernel.launch.cooperative;
  entry["template"] = kernel.template_text;
  entry["composition"] = kernel.composition;
  entry["vector_width"] = kernel.vector_width;
  nlohmann::ordered_json compositions = nlohmann::ordered_json::array();
  for (const OpRecord& op : kernel.ops) {
    nlohmann::ordered_json item;
    item["node"] = op.node;
    item["op_type"] = op.op_type;
    item["composition"] = op.composition;
    item["template"] = op.template_entry;
    compositions.push_back(std::move(item));
  }
  entry["compositions"] = std::move(compositions);
  entry["fused_nodes"] = kernel.fused_nodes;
  entry["predicted_time_us"] = kernel.predicted_time_us;
  entry["charges"] = charges_json(kernel.charges);
  nlohmann::ordered_json shared_by = nlohmann::ordered_json::array();
  for (const SharedLaunchRecord& launch : kernel.shared_by) {
    nlohmann::ordered_json item;
    item["node"] = launch.node;
    item["outputs"] = launch.outputs;
    shared_by.push_back(std::move(item));
  }
  entry["shared_by"] = std::move(shared_by);
  return entry;
}

// "sources": {file: sha256}, each file a plain name of OUT/kernels (an identifier,
// then .cu, .cuh or .h: no "/", no ".."), each digest 64 lowercase hex digits.
Result<std::map<std::string, std::string>> parse_sources(const Fields& top) {
  STITCH_ASSIGN_OR_RETURN(const json* sources, top.find("sources"));
  if (!sources->is_object()) {
    return top.error("sources", "expected an object {file: sha256}, got " + describe(*sources));
  }
  std::map<std::string, std::string> result;
  for (const auto& [file, digest] : sources->items()) {
    const size_t dot = file.rfind('.');
    const std::string_view stem = std::string_view(file).substr(0, dot);
    const std::string_view extension =
        dot == std::string::npos ? std::string_view() : std::string_view(file).substr(dot);
    if (!is_identifier(stem) || (extension != ".cu" && extension != ".cuh" && extension != ".h")) {
      return top.error("sources", "names " + quote_cut(file) +
                                      ", which is not a source file name of OUT/kernels");
    }
    const bool hex =
        digest.is_string() && digest.get<std::string>().size() == 64 &&
        digest.get<std::string>().find_first_not_of("0123456789abcdef") == std::string::npos;
    if (!hex) {
      return top.error("sources", "the sha256 of " + quote_cut(file) + " is " + describe(digest) +
                                      ", not 64 lowercase hex digits");
    }
    result[file] = digest.get<std::string>();
  }
  return result;
}

}  // namespace

std::string render_kernels_json(const KernelsArtifact& artifact) {
  nlohmann::ordered_json root;
  root["schema"] = std::string(kKernelsSchema);
  root["model_sha256"] = artifact.model_sha256;
  nlohmann::ordered_json sources = nlohmann::ordered_json::object();
  for (const auto& [file, sha256] : artifact.source_sha256) sources[file] = sha256;
  root["sources"] = std::move(sources);
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const KernelRecord& kernel : artifact.kernels) list.push_back(kernel_json(kernel));
  root["kernels"] = std::move(list);
  return dump_json(std::move(root));
}

Result<KernelsArtifact> parse_kernels_json(std::string_view text, const std::string& source) {
  // Measured before parsing: 64 MiB of "{}," would parse into 2.3 GB.
  const support::JsonExtent extent = support::measure_json(text);
  if (extent.depth > kMaxDepth) {
    return Status::invalid_input(source + ": nests lists and objects " +
                                 std::to_string(extent.depth) + " deep, more than the " +
                                 std::to_string(kMaxDepth) + " a kernels.json may have" +
                                 kRecompile);
  }
  if (extent.items > kMaxItems) {
    return Status::invalid_input(source + ": holds about " + std::to_string(extent.items) +
                                 " JSON values, more than the " + std::to_string(kMaxItems) +
                                 " a kernels.json may have" + kRecompile);
  }
  const json document = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) {
    return Status::invalid_input(source + ": not valid JSON" + kRecompile);
  }
  if (!document.is_object()) {
    return Status::invalid_input(source + ": expected a JSON object at the top level, got " +
                                 describe(document) + kRecompile);
  }
  const Fields top(document, source + ": ");
  STITCH_ASSIGN_OR_RETURN(std::string schema, top.string("schema"));
  if (schema != kKernelsSchema) {
    return top.error("schema", quote_cut(schema) + " is not " + std::string(kKernelsSchema) +
                                   " (written by another stitchopt version)");
  }
  KernelsArtifact artifact;
  STITCH_ASSIGN_OR_RETURN(artifact.model_sha256, top.string("model_sha256"));
  STITCH_ASSIGN_OR_RETURN(artifact.source_sha256, parse_sources(top));
  STITCH_ASSIGN_OR_RETURN(const json* kernels, top.list("kernels", "kernel objects"));
  std::set<std::string> names;
  for (size_t i = 0; i < kernels->size(); ++i) {
    STITCH_ASSIGN_OR_RETURN(KernelRecord kernel, parse_kernel((*kernels)[i], i, source));
    if (!names.insert(kernel.name).second) {
      return Status::invalid_input(source + ": lists kernel " + kernel.name + " twice" +
                                   kRecompile);
    }
    if (artifact.source_sha256.count(kernel.file) == 0) {
      return Status::invalid_input(source + ": kernel " + kernel.name + ": its file " +
                                   kernel.file + " is not among \"sources\"" + kRecompile);
    }
    artifact.kernels.push_back(std::move(kernel));
  }
  return artifact;
}

Result<std::optional<KernelsArtifact>> read_kernels_json(const fs::path& out_dir) {
  const fs::path relative = fs::path("kernels") / "kernels.json";
  const fs::path path = out_dir / relative;
  std::error_code error;
  if (!fs::exists(fs::symlink_status(path, error))) return std::optional<KernelsArtifact>();
  STITCH_ASSIGN_OR_RETURN(
      std::string text,
      support::read_regular_file_under(out_dir, relative, kMaxKernelsJsonBytes, "kernels.json"));
  STITCH_ASSIGN_OR_RETURN(KernelsArtifact artifact, parse_kernels_json(text, path.string()));
  // Each source must be a file stitchopt wrote into OUT/kernels: no link leading
  // elsewhere (the names' form is checked already).
  const fs::path kernels_dir = out_dir / "kernels";
  const fs::path real_kernels_dir = fs::canonical(kernels_dir, error);
  for (const KernelRecord& kernel : artifact.kernels) {
    const fs::path real = fs::canonical(kernels_dir / kernel.file, error);
    if (error || real.parent_path() != real_kernels_dir || !fs::is_regular_file(real, error)) {
      return Status::invalid_input(not_a_source_of_this_directory(
          path.string() + ": kernel " + kernel.name + ": ", kernel.file));
    }
  }
  // Every source as stitchopt wrote it: an edited kernel is refused, never built.
  for (const auto& [file, digest] : artifact.source_sha256) {
    STITCH_ASSIGN_OR_RETURN(std::string bytes, support::read_regular_file_under(
                                                   out_dir, fs::path("kernels") / file,
                                                   kMaxKernelSourceBytes, "kernel source"));
    if (support::sha256_hex(bytes) != digest) {
      return Status::invalid_input((kernels_dir / file).string() +
                                   ": differs from what stitchopt wrote (its sha256 is not "
                                   "kernels.json's): the file was edited after compilation" +
                                   kRecompile);
    }
  }
  return std::optional<KernelsArtifact>(std::move(artifact));
}

}  // namespace stitch::artifact
