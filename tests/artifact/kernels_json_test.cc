// kernels.json (artifact/kernels_json.h): what render_kernels_json writes reads back
// field for field, charges and predicted time included; a tampered field of every
// kind is refused with the file, the kernel and the key (exit 2, not a JSON
// exception); the file is read only when it is a regular file of at most 64 MiB
// reached without a link.
#include "artifact/kernels_json.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/sha256.h"

namespace stitch::artifact {
namespace {
namespace fs = std::filesystem;

TensorRecord tensor(const std::string& name, ir::DType dtype, std::vector<int64_t> shape) {
  return TensorRecord{name, dtype, std::move(shape)};
}

// A fused cooperative kernel with a workspace and charges, and a single-op kernel that
// two more nodes launch; names with a quote and a newline, dtypes of several kinds, a
// scalar.
std::vector<KernelRecord> kernel_records() {
  KernelRecord fused;
  fused.name = "stitch_k0_softmax";
  fused.file = "stitch_k0_softmax.cu";
  fused.inputs = {tensor("x \"in\"\n", ir::DType::kFloat16, {4, 0, 8}),
                  tensor("ids", ir::DType::kInt64, {})};
  fused.outputs = {tensor("y", ir::DType::kBFloat16, {4, 1})};
  fused.workspace_bytes = 4100;
  fused.launch = LaunchRecord{264, 256, 1024, true};
  fused.composition = "global";
  fused.fused_nodes = {"max (ReduceMax)", "sub (Sub)"};
  fused.predicted_time_us = 12.25;
  fused.charges.global = true;
  fused.charges.grid_barriers = 2;
  fused.charges.grid_blocks = 264;
  fused.charges.workspace_bytes = 4096;
  fused.charges.thread_gemm_macs = 65536;
  fused.charges.gemm_load_chain = 130.5;
  fused.charges.stencil_load_chain = 49;
  KernelRecord single;
  single.name = "stitch_k1_relu";
  single.file = "stitch_k1_relu.cu";
  single.inputs = {tensor("a", ir::DType::kFloat32, {2, 3})};
  single.outputs = {tensor("b", ir::DType::kFloat32, {2, 3})};
  single.launch = LaunchRecord{1, 32, 0, false};
  single.composition = "thread";
  single.fused_nodes = {"relu_0 (Relu)"};
  single.predicted_time_us = 2.0;
  single.shared_by = {{"relu_1", {"c"}}, {"relu_2", {"d", "e"}}};
  return {fused, single};
}

const char* kSha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

// What each kernel's source holds in the directory tests below.
std::string source_text(const KernelRecord& kernel) { return "// " + kernel.name + "\n"; }

KernelsArtifact written_artifact() {
  KernelsArtifact artifact;
  artifact.model_sha256 = kSha;
  artifact.kernels = kernel_records();
  for (const KernelRecord& kernel : artifact.kernels) {
    artifact.source_sha256[kernel.file] = support::sha256_hex(source_text(kernel));
  }
  return artifact;
}

TEST(KernelsJsonTest, ReadsBackWhatItWrites) {
  const std::vector<KernelRecord> kernels = kernel_records();
  Result<KernelsArtifact> manifest =
      parse_kernels_json(render_kernels_json(written_artifact()), "kernels.json");
  ASSERT_TRUE(manifest.is_ok()) << manifest.status().message();
  EXPECT_EQ(manifest->model_sha256, kSha);
  ASSERT_EQ(manifest->kernels.size(), kernels.size());
  for (size_t k = 0; k < kernels.size(); ++k) {
    const KernelRecord& written = kernels[k];
    const KernelRecord& read = manifest->kernels[k];
    EXPECT_EQ(read.name, written.name);
    EXPECT_EQ(read.file, written.file);
    EXPECT_EQ(read.workspace_bytes, written.workspace_bytes);
    EXPECT_EQ(read.launch.grid, written.launch.grid);
    EXPECT_EQ(read.launch.block, written.launch.block);
    EXPECT_EQ(read.launch.shared_bytes, written.launch.shared_bytes);
    EXPECT_EQ(read.launch.cooperative, written.launch.cooperative);
    EXPECT_EQ(read.composition, written.composition);
    EXPECT_EQ(read.fused_nodes, written.fused_nodes);
    EXPECT_EQ(read.predicted_time_us, written.predicted_time_us);
    EXPECT_EQ(read.charges, written.charges);
    auto same_tensors = [](const std::vector<TensorRecord>& got,
                           const std::vector<TensorRecord>& want) {
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].name, want[i].name);
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

// The written JSON after `edit`.
std::string edited(const std::function<void(json&)>& edit) {
  json document = json::parse(render_kernels_json(written_artifact()));
  edit(document);
  return document.dump();
}

json& fused(json& document) { return document["kernels"][0]; }
json& single(json& document) { return document["kernels"][1]; }

std::string error_of(const std::string& text) {
  Result<KernelsArtifact> manifest = parse_kernels_json(text, "out/kernels/kernels.json");
  EXPECT_FALSE(manifest.is_ok());
  return manifest.is_ok() ? "" : manifest.status().message();
}

const std::string kWhere = "out/kernels/kernels.json: kernel stitch_k0_softmax: ";
const std::string kFix = "; recompile the model";

TEST(KernelsJsonTest, WrongTypes) {
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

// The fields the profile costs with: a tampered charge or predicted time is refused
// like any other field, never turned into an estimate.
TEST(KernelsJsonTest, ChargesLaunchAndPredictedTime) {
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["charges"]["grid_barriers"] = "2"; })),
            kWhere + "charges: key \"grid_barriers\": expected an integer, got the string " +
                "\"2\"" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["charges"]["load_chain"] = -3.5; })),
            kWhere + "charges: key \"load_chain\": must be between 0 and 1e+30, got -3.5" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["charges"] = 3; })),
            kWhere + "key \"charges\": expected an object of the schedule's charges, got the " +
                "integer 3" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["charges"].erase("global"); })),
            kWhere + "charges: key \"global\": missing" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d).erase("charges"); })),
            kWhere + "key \"charges\": missing" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["predicted_time_us"] = -1.0; })),
            kWhere + "key \"predicted_time_us\": must be between 0 and 8.64e+10, got -1" + kFix);
  EXPECT_EQ(
      error_of(edited([](json& d) { fused(d)["predicted_time_us"] = "fast"; })),
      kWhere + "key \"predicted_time_us\": expected a number, got the string \"fast\"" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["block"] = 2048; })),
            kWhere + "key \"block\": must be between 1 and 1024, got 2048" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["composition"] = false; })),
            kWhere + "key \"composition\": expected a string, got false" + kFix);
}

TEST(KernelsJsonTest, MissingKeys) {
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

TEST(KernelsJsonTest, ValuesOutOfRange) {
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

TEST(KernelsJsonTest, NamesFilesAndTheDocument) {
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["name"] = "k0; rm -rf ~"; })),
            "out/kernels/kernels.json: kernels[0]: key \"name\": \"k0; rm -rf ~\" is not an "
            "identifier" +
                kFix);
  EXPECT_EQ(error_of(edited([](json& d) { fused(d)["file"] = "../../x.cu"; })),
            kWhere + "key \"file\": names the source \"../../x.cu\", which is not a .cu file of " +
                "this directory" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { single(d)["name"] = "stitch_k0_softmax"; })),
            "out/kernels/kernels.json: lists kernel stitch_k0_softmax twice" + kFix);
  EXPECT_EQ(error_of(edited([](json& d) { d["schema"] = "stitchopt.kernels/1"; })),
            "out/kernels/kernels.json: key \"schema\": \"stitchopt.kernels/1\" is not "
            "stitchopt.kernels/4 (written by another stitchopt version)" +
                kFix);
  EXPECT_EQ(error_of(edited([](json& d) { d["sources"]["../../etc/x.cu"] = kSha; })),
            "out/kernels/kernels.json: key \"sources\": names \"../../etc/x.cu\", which is not "
            "a source file name of OUT/kernels" +
                kFix);
  EXPECT_EQ(error_of(edited([](json& d) { d["sources"]["stitch_k1_relu.cu"] = "abc"; })),
            "out/kernels/kernels.json: key \"sources\": the sha256 of \"stitch_k1_relu.cu\" is "
            "the string \"abc\", not 64 lowercase hex digits" +
                kFix);
  EXPECT_EQ(error_of(edited([](json& d) { d["sources"].erase("stitch_k1_relu.cu"); })),
            "out/kernels/kernels.json: kernel stitch_k1_relu: its file stitch_k1_relu.cu is not "
            "among \"sources\"" +
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
TEST(KernelsJsonTest, DocumentsThatWouldParseIntoGigabytes) {
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

class KernelsJsonFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = fs::temp_directory_path() /
           ("stitch_kernels_json_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(out_);
    fs::create_directories(out_ / "kernels");
    for (const KernelRecord& kernel : kernel_records()) {
      std::ofstream(out_ / "kernels" / kernel.file) << source_text(kernel);
    }
    std::ofstream(manifest_path()) << render_kernels_json(written_artifact());
  }
  void TearDown() override { fs::remove_all(out_); }

  std::string error_of_read() {
    Result<std::optional<KernelsArtifact>> manifest = read_kernels_json(out_);
    EXPECT_FALSE(manifest.is_ok());
    return manifest.is_ok() ? "" : manifest.status().message();
  }

  fs::path manifest_path() const { return out_ / "kernels" / "kernels.json"; }

  fs::path out_;
};

TEST_F(KernelsJsonFileTest, ReadsTheWrittenDirectory) {
  Result<std::optional<KernelsArtifact>> manifest = read_kernels_json(out_);
  ASSERT_TRUE(manifest.is_ok()) << manifest.status().message();
  ASSERT_TRUE(manifest->has_value());
  EXPECT_EQ((*manifest)->kernels.size(), 2u);
  fs::remove(manifest_path());
  Result<std::optional<KernelsArtifact>> absent = read_kernels_json(out_);
  ASSERT_TRUE(absent.is_ok()) << absent.status().message();
  EXPECT_FALSE(absent->has_value());
}

TEST_F(KernelsJsonFileTest, RefusesALinkAFifoAndAnOversizedFile) {
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
  fs::resize_file(manifest_path(), kMaxKernelsJsonBytes + 1);
  EXPECT_EQ(error_of_read(), manifest_path().string() +
                                 ": the kernels.json is 67108865 bytes, more than the 64 MiB "
                                 "(67108864 bytes) a kernels.json may have");
}

TEST_F(KernelsJsonFileTest, RefusesASourceThatLeadsOutOfTheDirectory) {
  const fs::path source = out_ / "kernels" / "stitch_k1_relu.cu";
  fs::remove(source);
  std::ofstream(out_ / "notes.cu") << "secret";
  fs::create_symlink(out_ / "notes.cu", source);
  EXPECT_EQ(error_of_read(), manifest_path().string() +
                                 ": kernel stitch_k1_relu: key \"file\": names the source "
                                 "\"stitch_k1_relu.cu\", which is not a .cu file of this "
                                 "directory; recompile the model");
}

// A kernel edited after the compile is refused before anything builds it.
TEST_F(KernelsJsonFileTest, RefusesAnEditedOrMissingSource) {
  const fs::path source = out_ / "kernels" / "stitch_k1_relu.cu";
  std::ofstream(source, std::ios::app) << "int injected;\n";
  EXPECT_EQ(error_of_read(), source.string() +
                                 ": differs from what stitchopt wrote (its sha256 is not "
                                 "kernels.json's): the file was edited after compilation; "
                                 "recompile the model");
  fs::remove(source);
  EXPECT_NE(error_of_read().find("stitch_k1_relu.cu"), std::string::npos);
}

}  // namespace
}  // namespace stitch::artifact
