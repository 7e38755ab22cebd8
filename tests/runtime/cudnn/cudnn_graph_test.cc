// Pins the cuDNN graph (runtime_stub/cuda/cudnn_graph.h) each supported Conv epilogue
// chain produces: the chain is planned by fusion::longest_epilogue_chain on a small
// model, its typed epilogue built into a cudnn-frontend graph and validated (no
// device needed), and the graph's JSON compared with golden/<case>.json.
// STITCH_UPDATE_GOLDEN=1 rewrites the golden files. Planning and running the graphs
// need a GPU (tests/runtime/run_cli.py and bench/gpu on a lent device).
#include "runtime_stub/cuda/cudnn_graph.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "fusion/epilogue.h"
#include "tests/fusion/fusion_test_util.h"

namespace stitch::runtime::cuda {
namespace {

ir::Model parse(const std::string& body) {
  return fusion::test_util::parse_ir("stitchopt.ir 1\nmodel ir_version=9 opsets={\"\":17}\n" +
                                     body);
}

// The spec (graph_spec, as the runtime makes it) of the Conv or MatMul named `call` in
// `model` with the epilogue of its longest chain, which must be a cuDNN one of `ops`
// ops.
EpilogueGraphSpec spec_of(const ir::Model& model, size_t ops, const std::string& call = "conv") {
  const ir::Graph& graph = model.graph;
  ir::NodeId id = fusion::test_util::node_named(graph, call);
  fusion::EpilogueChain chain = fusion::longest_epilogue_chain(graph, id);
  EXPECT_TRUE(chain.epilogue_by_length.back().has_value());
  const artifact::LibraryEpilogue& epilogue = *chain.epilogue_by_length.back();
  EXPECT_EQ(epilogue.library, artifact::Library::kCudnn);
  EXPECT_EQ(epilogue.ops.size(), ops);
  const ir::Node& node = graph.node(id);
  Result<EpilogueGraphSpec> spec =
      graph_spec(graph, node, graph.value(node.outputs[0]).type, epilogue.ops);
  EXPECT_TRUE(spec.is_ok()) << spec.status().message();
  return spec.is_ok() ? *spec : EpilogueGraphSpec{};
}

// Builds the graph of `spec` and compares its JSON with golden/<name>.json.
void expect_graph(const std::string& name, const EpilogueGraphSpec& spec) {
  Result<std::unique_ptr<CudnnEpilogueGraph>> graph = CudnnEpilogueGraph::build(spec);
  ASSERT_TRUE(graph.is_ok()) << graph.status().message();
  const std::string json = (*graph)->json();
  const std::string path =
      std::string(STITCH_SOURCE_DIR) + "/tests/runtime/cudnn/golden/" + name + ".json";
  const char* update = std::getenv("STITCH_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << json;
    return;
  }
  std::ifstream file(path);
  ASSERT_TRUE(file.good()) << path << " is missing; STITCH_UPDATE_GOLDEN=1 writes it";
  std::stringstream golden;
  golden << file.rdbuf();
  EXPECT_EQ(json, golden.str()) << "the cuDNN graph of " << name << " changed; if on purpose, "
                                << "rerun with STITCH_UPDATE_GOLDEN=1 and review the diff";
}

// MobileNetV2's expand conv in float16: bias (Conv's own B), then ReLU6.
TEST(CudnnGraphTest, BiasThenRelu6) {
  ir::Model model = parse(R"(graph "g" (%x: f16[1,16,14,14], %w: f16[96,16,1,1], %b: f16[96]) {
  %lo: f16[] = dense<f16[]>[0]
  %hi: f16[] = dense<f16[]>[6]
  %c: f16[1,96,14,14] = Conv(%x, %w, %b) {name="conv"}
  %y: f16[1,96,14,14] = Clip(%c, %lo, %hi) {name="relu6"}
  %z: f16[1,96,14,14] = Neg(%y) {name="next"}
  return %z
})");
  expect_graph("bias_relu6", spec_of(model, 2));
}

// EfficientNet's conv + SiLU (Sigmoid and Mul reading the conv), stride 2, padded.
TEST(CudnnGraphTest, Swish) {
  ir::Model model = parse(R"(graph "g" (%x: f16[1,4,32,32], %w: f16[32,4,3,3], %b: f16[32]) {
  %c: f16[1,32,16,16] = Conv(%x, %w, %b) {name="conv", pads=[1,1,1,1], strides=[2,2]}
  %s: f16[1,32,16,16] = Sigmoid(%c) {name="sigmoid"}
  %y: f16[1,32,16,16] = Mul(%c, %s) {name="silu"}
  %z: f16[1,32,16,16] = Neg(%y) {name="next"}
  return %z
})");
  expect_graph("swish", spec_of(model, 2));
}

// MobileNetV3's conv + HardSwish, without a bias, in bfloat16.
TEST(CudnnGraphTest, HardSwish) {
  ir::Model model = parse(R"(graph "g" (%x: bf16[1,8,20,20], %w: bf16[16,8,3,3]) {
  %c: bf16[1,16,20,20] = Conv(%x, %w) {name="conv", pads=[1,1,1,1]}
  %y: bf16[1,16,20,20] = HardSwish(%c) {name="hardswish"}
  %z: bf16[1,16,20,20] = Neg(%y) {name="next"}
  return %z
})");
  expect_graph("hardswish", spec_of(model, 1));
}

// An unfolded BatchNorm (per-channel scale and shift) then HardSigmoid and Tanh.
TEST(CudnnGraphTest, ScaleShiftHardSigmoidTanh) {
  ir::Model model =
      parse(R"(graph "g" (%x: f16[2,8,10,10], %w: f16[8,8,3,3], %s: f16[8,1,1], %t: f16[1,8,1,1]) {
  %c: f16[2,8,8,8] = Conv(%x, %w) {name="conv"}
  %m: f16[2,8,8,8] = Mul(%s, %c) {name="scale"}
  %a: f16[2,8,8,8] = Add(%m, %t) {name="shift"}
  %h: f16[2,8,8,8] = HardSigmoid(%a) {name="hardsigmoid", alpha=0.25, beta=0.375}
  %y: f16[2,8,8,8] = Tanh(%h) {name="tanh"}
  %z: f16[2,8,8,8] = Neg(%y) {name="next"}
  return %z
})");
  expect_graph("scale_shift_hardsigmoid_tanh", spec_of(model, 4));
}

// A 1-D conv with dilation and a residual add then Relu: the legacy form, which the
// graph also expresses (the runtime uses cudnnConvolutionBiasActivationForward).
TEST(CudnnGraphTest, OneDimensionalResidualRelu) {
  ir::Model model =
      parse(R"(graph "g" (%x: f16[1,4,40], %w: f16[6,4,3], %b: f16[6], %r: f16[1,6,36]) {
  %c: f16[1,6,36] = Conv(%x, %w, %b) {name="conv", dilations=[2]}
  %a: f16[1,6,36] = Add(%c, %r) {name="residual"}
  %y: f16[1,6,36] = Relu(%a) {name="relu"}
  return %y
})");
  expect_graph("conv1d_bias_residual_relu", spec_of(model, 3));
}

// A float16 MatMul over a batch of rows and one weight matrix (folded into M), with a
// bias along N, Tanh and a clip: cuBLASLt has no such epilogue, so a cuDNN graph.
TEST(CudnnGraphTest, MatmulBiasTanhClip) {
  ir::Model model = parse(R"(graph "g" (%a: f16[2,64,32], %w: f16[32,48], %b: f16[48]) {
  %lo: f16[] = dense<f16[]>[-0.5]
  %hi: f16[] = dense<f16[]>[0.5]
  %m: f16[2,64,48] = MatMul(%a, %w) {name="matmul"}
  %s: f16[2,64,48] = Add(%m, %b) {name="bias"}
  %t: f16[2,64,48] = Tanh(%s) {name="tanh"}
  %y: f16[2,64,48] = Clip(%t, %lo, %hi) {name="clip"}
  %z: f16[2,64,48] = Neg(%y) {name="next"}
  return %z
})");
  EpilogueGraphSpec spec = spec_of(model, 3, "matmul");
  EXPECT_EQ(spec.x, (std::vector<int64_t>{1, 128, 32}));
  EXPECT_EQ(spec.operand_dims[0], (std::vector<int64_t>{1, 1, 48}));
  expect_graph("matmul_bias_tanh_clip", spec);
}

// A transformer MLP's first projection in float16: bias, then GELU as PyTorch exports
// it (five nodes, one GELU_FWD).
TEST(CudnnGraphTest, MatmulBiasGelu) {
  ir::Model model = parse(R"(graph "g" (%a: f16[1,32,64], %w: f16[64,256], %b: f16[256]) {
  %k1: f16[] = dense<f16[]>[1.4142135]
  %k2: f16[] = dense<f16[]>[1]
  %k3: f16[] = dense<f16[]>[0.5]
  %m: f16[1,32,256] = MatMul(%a, %w) {name="matmul"}
  %u: f16[1,32,256] = Add(%m, %b) {name="bias"}
  %s: f16[1,32,256] = Div(%u, %k1) {name="scaled"}
  %e: f16[1,32,256] = Erf(%s) {name="erf"}
  %p: f16[1,32,256] = Add(%e, %k2) {name="plus_one"}
  %g: f16[1,32,256] = Mul(%u, %p) {name="gated"}
  %y: f16[1,32,256] = Mul(%g, %k3) {name="halved"}
  %z: f16[1,32,256] = Neg(%y) {name="next"}
  return %z
})");
  EpilogueGraphSpec spec = spec_of(model, 2, "matmul");
  EXPECT_EQ(spec.ops.back(), artifact::EpilogueOp::kGelu);
  expect_graph("matmul_bias_gelu", spec);
}

// GPT-2's MLP projection in float16: bias, then the tanh GELU as PyTorch exports it
// (nine nodes, one GELU_APPROX_TANH_FWD).
TEST(CudnnGraphTest, MatmulBiasGeluTanh) {
  ir::Model model = parse(R"(graph "g" (%a: f16[1,32,64], %w: f16[64,256], %b: f16[256]) {
  %k1: f16[] = dense<f16[]>[0.044715]
  %k2: f16[] = dense<f16[]>[0.7978846]
  %k3: f16[] = dense<f16[]>[1]
  %k4: f16[] = dense<f16[]>[0.5]
  %m: f16[1,32,256] = MatMul(%a, %w) {name="matmul"}
  %u: f16[1,32,256] = Add(%m, %b) {name="bias"}
  %q: f16[1,32,256] = Mul(%u, %u) {name="square"}
  %c: f16[1,32,256] = Mul(%u, %q) {name="cube"}
  %t: f16[1,32,256] = Mul(%k1, %c) {name="cube_scaled"}
  %i: f16[1,32,256] = Add(%u, %t) {name="inner"}
  %s: f16[1,32,256] = Mul(%k2, %i) {name="scaled"}
  %e: f16[1,32,256] = Tanh(%s) {name="tanh"}
  %p: f16[1,32,256] = Add(%k3, %e) {name="plus_one"}
  %g: f16[1,32,256] = Mul(%u, %p) {name="gated"}
  %y: f16[1,32,256] = Mul(%k4, %g) {name="halved"}
  %z: f16[1,32,256] = Neg(%y) {name="next"}
  return %z
})");
  EpilogueGraphSpec spec = spec_of(model, 2, "matmul");
  EXPECT_EQ(spec.ops.back(), artifact::EpilogueOp::kGeluTanh);
  expect_graph("matmul_bias_gelu_tanh", spec);
}

// A batched MatMul whose B has A's batch: [3,16,8] x [3,8,4] with a SiLU.
TEST(CudnnGraphTest, BatchedMatmulSwish) {
  ir::Model model = parse(R"(graph "g" (%a: f16[3,16,8], %w: f16[3,8,4]) {
  %m: f16[3,16,4] = MatMul(%a, %w) {name="matmul"}
  %g: f16[3,16,4] = Sigmoid(%m) {name="gate"}
  %y: f16[3,16,4] = Mul(%m, %g) {name="silu"}
  %z: f16[3,16,4] = Neg(%y) {name="next"}
  return %z
})");
  EpilogueGraphSpec spec = spec_of(model, 1, "matmul");
  EXPECT_EQ(spec.w, (std::vector<int64_t>{3, 8, 4}));
  expect_graph("batched_matmul_swish", spec);
}

// cudnn-frontend's validate checks the conv's output dims against y's.
TEST(CudnnGraphTest, ValidateRejectsWrongOutputDims) {
  EpilogueGraphSpec spec;
  spec.dtype = ir::DType::kFloat16;
  spec.x = {1, 4, 8, 8};
  spec.w = {8, 4, 3, 3};
  spec.y = {1, 8, 8, 8};  // 6x6 without padding
  spec.pre_padding = spec.post_padding = {0, 0};
  spec.stride = spec.dilation = {1, 1};
  spec.ops = {artifact::EpilogueOp::kSigmoid};
  spec.operand_dims = {{}};
  Result<std::unique_ptr<CudnnEpilogueGraph>> graph = CudnnEpilogueGraph::build(spec);
  ASSERT_FALSE(graph.is_ok());
  EXPECT_EQ(graph.status().code(), StatusCode::kUnavailable);  // a refusal: the host runs it
  EXPECT_NE(graph.status().message().find("validate"), std::string::npos)
      << graph.status().message();
}

TEST(CudnnGraphTest, RejectsAMalformedSpec) {
  EpilogueGraphSpec spec;
  spec.x = {1, 4, 8, 8};
  spec.w = {8, 4, 3, 3};
  spec.y = {1, 8, 6, 6};
  spec.pre_padding = spec.post_padding = {0, 0};
  spec.stride = spec.dilation = {1, 1};
  spec.ops = {artifact::EpilogueOp::kBias};
  spec.operand_dims = {{}};  // a bias without its dims
  Result<std::unique_ptr<CudnnEpilogueGraph>> graph = CudnnEpilogueGraph::build(spec);
  ASSERT_FALSE(graph.is_ok());
  EXPECT_NE(graph.status().message().find("lacks its operand"), std::string::npos)
      << graph.status().message();
  spec.dtype = ir::DType::kInt32;
  graph = CudnnEpilogueGraph::build(spec);
  ASSERT_FALSE(graph.is_ok());
  EXPECT_NE(graph.status().message().find("only float32"), std::string::npos)
      << graph.status().message();
}

}  // namespace
}  // namespace stitch::runtime::cuda
