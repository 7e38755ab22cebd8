// Tests for read_library_chain (runtime_stub/cuda/cuda_library_step.h), which the GPU
// backend uses to bind a library step's call and epilogue to the step's inputs. It is
// plain C++ (no CUDA call), so it is tested here on real compiled outputs: on an H100
// (2026-11-26, docs/benchmarks.md) every Conv with a bias of resnet and vit ran on the
// host because Conv's own 1-D bias B was checked as a right-aligned broadcast.
#include "runtime_stub/cuda/cuda_library_step.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ir/core/analysis.h"
#include "runtime_stub/program.h"

namespace stitch::runtime::cuda {
namespace {

namespace fs = std::filesystem;

// `stitchopt models/<model> -o <temp>` with the built binary; the output directory.
std::string compile_bundled(const std::string& model, const std::string& flags) {
  const fs::path out = fs::temp_directory_path() / ("stitch_library_chain_" + model);
  fs::remove_all(out);
  const std::string command = std::string(STITCH_BINARY_DIR) + "/bin/stitchopt " +
                              STITCH_SOURCE_DIR + "/models/" + model + ".onnx -o " + out.string() +
                              " -q " + flags;
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  return out.string();
}

// The op type of the library call of `step`: its body's first node, as the CUDA backend
// dispatches it; "" for an empty or cyclic body.
std::string call_op_type(const Step& step) {
  Result<std::vector<ir::NodeId>> order = ir::topological_order(step.body.graph);
  if (!order.is_ok() || order->empty()) return "";
  return step.body.graph.node(order->front()).op_type;
}

// Every cuDNN Conv step of the output binds: the call, its bias and residual are step
// inputs of the right shapes (what the cuDNN plan needs to take the step off the host).
void expect_every_conv_binds(const std::string& model, const std::string& flags, int at_least) {
  const std::string out = compile_bundled(model, flags);
  Result<Program> program = load_program(out);
  ASSERT_TRUE(program.is_ok()) << program.status().message();
  int convolutions = 0;
  int with_bias = 0;
  for (const Step& step : program->steps) {
    if (step.kind != StepKind::kLibrary || step.library != artifact::Library::kCudnn) continue;
    Result<LibraryChain> chain = read_library_chain(step, /*channel_last=*/false);
    // Any step binds or is refused (it then runs on the host); none is an error.
    ASSERT_TRUE(chain.is_ok() || is_refusal(chain.status())) << chain.status().message();
    if (call_op_type(step) != "Conv") continue;
    ++convolutions;
    ASSERT_TRUE(chain.is_ok()) << step.name << ": " << chain.status().message();
    if (chain->bias_input >= 0) {
      ++with_bias;
      EXPECT_EQ(step.inputs[static_cast<size_t>(chain->bias_input)].type.num_elements(),
                chain->output.dims[1])
          << step.name;
    }
  }
  EXPECT_GE(convolutions, at_least) << model;
  EXPECT_GE(with_bias, at_least) << model;
  fs::remove_all(out);
}

TEST(LibraryChainTest, ConvBiasBindsAsOneValuePerOutputChannel) {
  expect_every_conv_binds("resnet", "", 6);
  expect_every_conv_binds("resnet", "--unfused", 6);
  expect_every_conv_binds("vit", "", 1);
}

// The float16 CNN blocks and MLP of tests/codegen/library_epilogues.py, saved as
// tests/runtime/data/<name>.onnx (by importing that script and onnx.save of its
// MODELS[name]): every cuDNN step binds its typed epilogue, read back from the fused
// node's attributes (clip(0,6) and the rest included), each operand a step input
// (per channel: a Conv's dim 1, a MatMul's last dim, as the CUDA backend reads it).
// Returns "op op ..." per Conv or MatMul step, in step order.
std::vector<std::string> bound_epilogues(const std::string& model) {
  const fs::path out = fs::temp_directory_path() / ("stitch_library_chain_" + model);
  fs::remove_all(out);
  const std::string command = std::string(STITCH_BINARY_DIR) + "/bin/stitchopt " +
                              STITCH_SOURCE_DIR + "/tests/runtime/data/" + model + ".onnx -o " +
                              out.string() + " -q";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  Result<Program> program = load_program(out.string());
  EXPECT_TRUE(program.is_ok()) << program.status().message();
  std::vector<std::string> lines;
  if (!program.is_ok()) return lines;
  for (const Step& step : program->steps) {
    if (step.kind != StepKind::kLibrary || step.library != artifact::Library::kCudnn) continue;
    const std::string op_type = call_op_type(step);
    EXPECT_NE(op_type, "") << step.name;
    const bool matmul = op_type == "MatMul";
    Result<LibraryChain> chain = read_library_chain(step, /*channel_last=*/matmul);
    EXPECT_TRUE(chain.is_ok() || is_refusal(chain.status())) << chain.status().message();
    if (op_type != "Conv" && op_type != "MatMul") continue;
    EXPECT_TRUE(chain.is_ok()) << step.name << ": " << chain.status().message();
    if (!chain.is_ok()) continue;
    std::string line;
    for (const ChainOp& op : chain->ops) {
      line += (line.empty() ? "" : " ") + artifact::epilogue_op_name(op.op);
      EXPECT_EQ(op.input >= 0, op.op.reads_operand()) << step.name;
      if (op.input >= 0 && op.op != artifact::EpilogueOp::kResidualAdd) {
        EXPECT_EQ(step.inputs[static_cast<size_t>(op.input)].type.num_elements(),
                  matmul ? chain->output.dims.back() : chain->output.dims[1])
            << step.name;
      }
    }
    EXPECT_EQ(chain->legacy, step.epilogue->legacy_form()) << step.name;
    lines.push_back(line);
  }
  fs::remove_all(out);
  return lines;
}

TEST(LibraryChainTest, HalfConvEpiloguesBindToTheStepInputs) {
  EXPECT_EQ(bound_epilogues("f16_inverted_residual"),
            (std::vector<std::string>{"bias clip(0,6)", "bias residual add"}));
  EXPECT_EQ(bound_epilogues("f16_stem_silu"), (std::vector<std::string>{"bias swish"}));
  EXPECT_EQ(bound_epilogues("f16_hardswish"),
            (std::vector<std::string>{"scale bias hardswish", "tanh"}));
  // The MLP's first MatMul: bias, then the erf GELU's five nodes as one op.
  EXPECT_EQ(bound_epilogues("f16_matmul_gelu"), (std::vector<std::string>{"bias gelu"}));
  // GPT-2's: the tanh GELU's nine nodes as one op.
  EXPECT_EQ(bound_epilogues("f16_matmul_gelu_tanh"), (std::vector<std::string>{"bias gelu_tanh"}));
}

}  // namespace
}  // namespace stitch::runtime::cuda
