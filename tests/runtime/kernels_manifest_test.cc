// KernelsManifest: what emit/kernel_directory.cc writes reads back field for field; a
// tampered field of every kind is refused with the file, the kernel and the key
// (exit 2, not a JSON exception); the file is read only when it is a regular file
// of at most 64 MiB reached without a link.
#include "runtime_stub/kernels_manifest.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "emit/kernel_directory.h"

namespace stitch::runtime {
namespace {
namespace fs = std::filesystem;

emit::KernelTensor tensor(const std::string& name, ir::DType dtype, std::vector<int64_t> shape) {
  return emit::KernelTensor{name, dtype, std::move(shape)};
}

// A fused cooperative kernel with a workspace, and a single-op kernel that two more
// nodes launch; names with a quote and a newline, dtypes of several kinds, a scalar.
std::vector<emit::EmittedKernel> emitted_kernels() {
  emit::EmittedKernel fused;
  fused.name = "stitch_k0_softmax";
  fused.file = "stitch_k0_softmax.cu";
  fused.source = "// fused\n";
  fused.inputs = {tensor("x \"in\"\n", ir::DType::kFloat16, {4, 0, 8}),
                  tensor("ids", ir::DType::kInt64, {})};
  fused.outputs = {tensor("y", ir::DType::kBFloat16, {4, 1})};
  fused.workspace_bytes = 4100;
  fused.launch = emit::LaunchConfig{264, 256, 1024, true};
  fused.fused_nodes = {"max (ReduceMax)", "sub (Sub)"};
  emit::EmittedKernel single;
  single.name = "stitch_k1_relu";
  single.file = "stitch_k1_relu.cu";
  single.source = "// single\n";
  single.inputs = {tensor("a", ir::DType::kFloat32, {2, 3})};
  single.outputs = {tensor("b", ir::DType::kFloat32, {2, 3})};
  single.launch = emit::LaunchConfig{1, 32, 0, false};
  single.fused_nodes = {"relu_0 (Relu)"};
  single.shared_by = {{"relu_1", {"c"}}, {"relu_2", {"d", "e"}}};
  return {fused, single};
}

const char* kSha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

TEST(KernelsManifestTest, ReadsBackWhatTheEmitterWrites) {
  const std::vector<emit::EmittedKernel> kernels = emitted_kernels();
  Result<KernelsManifest> manifest =
      parse_kernels_manifest(emit::render_kernels_json(kernels, kSha), "kernels.json");
  ASSERT_TRUE(manifest.is_ok()) << manifest.status().message();
  EXPECT_EQ(manifest->model_sha256, kSha);
  ASSERT_EQ(manifest->kernels.size(), kernels.size());
  for (size_t k = 0; k < kernels.size(); ++k) {
    const emit::EmittedKernel& written = kernels[k];
    const ManifestKernel& read = manifest->kernels[k];
    EXPECT_EQ(read.name, written.name);
    EXPECT_EQ(read.file, written.file);
    EXPECT_EQ(read.workspace_bytes, written.workspace_bytes);
    EXPECT_EQ(read.cooperative, written.launch.cooperative);
    EXPECT_EQ(read.fused_nodes, written.fused_nodes);
    auto same_tensors = [](const std::vector<ManifestTensor>& got,
                           const std::vector<emit::KernelTensor>& want) {
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].name, want[i].value_name);
        EXPECT_EQ(got[i].dtype, want[i].dtype);
        EXPECT_EQ(got[i].shape, want[i].shape);
      }
    };
    same_tensors(read.inputs, written.inputs);
    same_tensors(read.outputs, written.outputs);
    ASSERT_EQ(read.shared_by.size(), written.shared_by.size());
    for (size_t i = 0; i < read.shared_by.size(); ++i) {
      EXPECT_EQ(read.shared_by[i].node, written.shared_by[i].node);
      EXPECT_EQ(read.shared_by[i].outputs, written.shared_by[i].outputs);
    }
  }
}

using nlohmann::json;

// The emitter's JSON after `edit`.
std::string edited(const std::function<void(json&)>& edit) {
  json document = json::parse(emit::render_kernels_json(emitted_kernels(), kSha));
  edit(document);
  return document.dump();
}

json& fused(json& document) { return document["kernels"][0]; }
json& single(json& document) { return document["kernels"][1]; }

std::string error_of(const std::string& text) {
  Result<KernelsManifest> manifest = parse_kernels_manifest(text, "out/kernels/kernels.json");
  EXPECT_FALSE(manifest.is_ok());
  return manifest.is_ok() ? "" : manifest.status().message();
}

const std::string kWhere = "out/kernels/kernels.json: kernel stitch_k0_softmax: ";
const std::string kFix = "; recompile the model";

TEST(KernelsManifestTest, WrongTypes) {
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["cooperative"] = "yes"; })),
            kWhere + "key \"cooperative\": expected true or false, got the string \"yes\"" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["inputs"][0]["shape"] = "x"; })),
            kWhere + "inputs 0: key \"shape\": expected a list of dimensions, got the string " +
                "\"x\"" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["inputs"][0]["dtype"] = 3; })),
            kWhere + "inputs 0: key \"dtype\": expected an ONNX type name such as \"float\", got " +
                "the integer 3" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["inputs"][0]["dtype"] = "half"; })),
            kWhere + "inputs 0: key \"dtype\": expected an ONNX type name such as \"float\", got " +
                "the string \"half\"" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["workspace_bytes"] = 4100.5; })),
            kWhere + "key \"workspace_bytes\": expected an integer, got the number 4100.5" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) {
              fused(d)["outputs"] = {{"y", 1}};
            })),
            kWhere + "key \"outputs\": expected a list of {name, dtype, shape} objects, got an " +
                "object" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["outputs"][0] = 7; })),
            kWhere + "key \"outputs\": item 0: expected an object with name, dtype and shape, " +
                "got the integer 7" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["fused_nodes"][0] = nullptr; })),
            kWhere + "key \"fused_nodes\": item 0: expected a string, got null" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { single(d)["shared_by"][0]["node"] = false; })),
            "out/kernels/kernels.json: kernel stitch_k1_relu: shared_by 0: key \"node\": expected "
            "a string, got false" +
                kFix);
  EXPECT_EQ(error_of(edited([](json& d) { single(d)["shared_by"][1]["outputs"][1] = 5; })),
            "out/kernels/kernels.json: kernel stitch_k1_relu: shared_by 1: key \"outputs\": item "
            "1: expected a string, got the integer 5" +
                kFix);
  EXPECT_EQ(error_of(edited([](json& d) { d["kernels"][1] = "stitch_k1_relu"; })),
            "out/kernels/kernels.json: kernels[1]: expected an object, got the string "
            "\"stitch_k1_relu\"" +
                kFix);
}

TEST(KernelsManifestTest, MissingKeys) {
  EXPECT_EQ(error_of(edited([](json& d) { fused(d).erase("workspace_bytes"); })),
            kWhere + "key \"workspace_bytes\": missing" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d).erase("shared_by"); })),
            kWhere + "key \"shared_by\": missing" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["inputs"][1].erase("name"); })),
            kWhere + "inputs 1: key \"name\": missing" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { d.erase("model_sha256"); })),
            "out/kernels/kernels.json: key \"model_sha256\": missing" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d).erase("name"); })),
            "out/kernels/kernels.json: kernels[0]: key \"name\": missing" + kFix);
}

TEST(KernelsManifestTest, ValuesOutOfRange) {
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["workspace_bytes"] = -1; })),
            kWhere + "key \"workspace_bytes\": must be between 0 and 1099511627776, got -1" + kFix);
  EXPECT_EQ(
      error_of(edited([](json& d) { fused(d)["workspace_bytes"] = 18446744073709551615ull; })),
      kWhere + "key \"workspace_bytes\": must be between 0 and 1099511627776, got " +
          "18446744073709551615" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["inputs"][0]["shape"][1] = -1; })),
            kWhere + "inputs 0: key \"shape\": dimension 1: must be between 0 and " +
                "1099511627776, got -1" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["fused_nodes"] = json::array(); })),
            kWhere + "key \"fused_nodes\": is empty; a kernel implements at least one node" + kFix);
}

TEST(KernelsManifestTest, NamesFilesAndTheDocument) {
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["name"] = "k0; rm -rf ~"; })),
            "out/kernels/kernels.json: kernels[0]: key \"name\": \"k0; rm -rf ~\" is not an "
            "identifier" +
                kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["file"] = "../../x.cu"; })),
            kWhere + "key \"file\": names the source \"../../x.cu\", which is not a .cu file of " +
                "this directory" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { single(d)["name"] = "stitch_k0_softmax"; })),
            "out/kernels/kernels.json: lists kernel stitch_k0_softmax twice" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { d["schema"] = "stitchopt.kernels/2"; })),
            "out/kernels/kernels.json: key \"schema\": \"stitchopt.kernels/2\" is not "
            "stitchopt.kernels/1 (written by another stitchopt version)" +
                kFix);
  EXPECT_EQ(error_of("[]"),
            "out/kernels/kernels.json: expected a JSON object at the top level, got a list" + kFix);
  EXPECT_EQ(error_of("{\"schema\": "), "out/kernels/kernels.json: not valid JSON" + kFix);
  // A long string is cut in the message.
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["cooperative"] = std::string(100, 'y'); })),
            kWhere + "key \"cooperative\": expected true or false, got the string \"" +
                std::string(60, 'y') + "\" (cut)" + kFix);
}

// Refused from a measure of the text, before nlohmann::json builds what it holds.
TEST(KernelsManifestTest, DocumentsThatWouldParseIntoGigabytes) {
  const std::string deep = std::string(33, '[') + std::string(33, ']');
  EXPECT_EQ(error_of(deep),
            "out/kernels/kernels.json: nests lists and objects 33 deep, more than the 32 a "
            "kernels.json may have" +
                kFix);
  // 3 items ("{", ":", "[") and 2 per "{},".
  std::string flood = "{\"schema\": [";
  for (int i = 0; i < (1 << 21) + 1; ++i) flood += "{},";
  flood += "0]}";
  EXPECT_EQ(error_of(flood),
            "out/kernels/kernels.json: holds about 4194309 JSON values, more than the 4194304 a "
            "kernels.json may have" +
                kFix);
}

class KernelsManifestFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = fs::temp_directory_path() /
           ("stitch_kernels_manifest_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(out_);
    const std::vector<emit::EmittedKernel> kernels = emitted_kernels();
    ASSERT_TRUE(emit::write_kernel_directory(kernels, out_ / "kernels").is_ok());
    ASSERT_TRUE(emit::write_kernels_json(kernels, out_ / "kernels", kSha).is_ok());
  }
  void TearDown() override { fs::remove_all(out_); }

  std::string error_of_read() {
    Result<std::optional<KernelsManifest>> manifest = read_kernels_manifest(out_);
    EXPECT_FALSE(manifest.is_ok());
    return manifest.is_ok() ? "" : manifest.status().message();
  }

  fs::path manifest_path() const { return out_ / "kernels" / "kernels.json"; }

  fs::path out_;
};

TEST_F(KernelsManifestFileTest, ReadsTheWrittenDirectory) {
  Result<std::optional<KernelsManifest>> manifest = read_kernels_manifest(out_);
  ASSERT_TRUE(manifest.is_ok()) << manifest.status().message();
  ASSERT_TRUE(manifest->has_value());
  EXPECT_EQ((*manifest)->kernels.size(), 2u);
  fs::remove(manifest_path());
  Result<std::optional<KernelsManifest>> absent = read_kernels_manifest(out_);
  ASSERT_TRUE(absent.is_ok()) << absent.status().message();
  EXPECT_FALSE(absent->has_value());
}

TEST_F(KernelsManifestFileTest, RefusesALinkAFifoAndAnOversizedFile) {
  const fs::path real = out_ / "elsewhere.json";
  fs::rename(manifest_path(), real);
  fs::create_symlink(real, manifest_path());
  EXPECT_EQ(error_of_read(), manifest_path().string() +
                                 ": the kernels.json is a symbolic link; stitchopt does not "
                                 "follow links inside an output directory");
  fs::remove(manifest_path());
  ASSERT_EQ(::mkfifo(manifest_path().c_str(), 0600), 0);
  EXPECT_EQ(error_of_read(),
            manifest_path().string() + ": the kernels.json is a FIFO, not a regular file");
  fs::remove(manifest_path());
  // Sparse: the size alone refuses it, nothing is read.
  std::ofstream(manifest_path()).close();
  fs::resize_file(manifest_path(), kMaxKernelsManifestBytes + 1);
  EXPECT_EQ(error_of_read(), manifest_path().string() +
                                 ": the kernels.json is 67108865 bytes, more than the 64 MiB "
                                 "(67108864 bytes) a kernels.json may have");
}

TEST_F(KernelsManifestFileTest, RefusesASourceThatLeadsOutOfTheDirectory) {
  const fs::path source = out_ / "kernels" / "stitch_k1_relu.cu";
  fs::remove(source);
  std::ofstream(out_ / "notes.cu") << "secret";
  fs::create_symlink(out_ / "notes.cu", source);
  EXPECT_EQ(error_of_read(), manifest_path().string() +
                                 ": kernel stitch_k1_relu: key \"file\": names the source "
                                 "\"stitch_k1_relu.cu\", which is not a .cu file of this "
                                 "directory; recompile the model");
}

}  // namespace
}  // namespace stitch::runtime
