// Golden tests of the CUDA emitter: each golden/<case>.ir holds a small graph in the
// textual IR; all its nodes form one group, emitted for the built-in H100 profile and
// compared byte for byte with golden/<case>.cu. STITCH_UPDATE_GOLDEN=1 rewrites the
// .cu files instead (then review the diff).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cost_model/device_profile.h"
#include "emit/cuda_emitter.h"
#include "ir/text/text.h"

namespace stitch::emit {
namespace {

namespace fs = std::filesystem;

fs::path golden_dir() {
  return fs::path(STITCH_SOURCE_DIR) / "tests" / "codegen_golden" / "golden";
}

std::string read(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Emits all nodes of the textual-IR model `text` as one kernel for the H100 profile.
Result<EmittedKernel> emit_all_nodes(const std::string& text, const std::string& path,
                                     const std::string& kernel_name,
                                     const ScheduleOptions& options = {}) {
  STITCH_ASSIGN_OR_RETURN(ir::Model model, ir::parse_model(text, path));
  STITCH_ASSIGN_OR_RETURN(cost_model::DeviceProfile profile,
                          cost_model::builtin_device_profile("h100"));
  return emit_kernel(model.graph, model.graph.node_ids(), kernel_name, profile, options);
}

// Emits golden/<name>.ir and compares the source with golden/<name>.cu (or rewrites
// it under STITCH_UPDATE_GOLDEN=1); returns the kernel for further checks.
// With `options`, golden/<name>.ir emitted with them is compared with golden/<golden>.cu.
EmittedKernel emit_golden_case(const std::string& name, const ScheduleOptions& options = {},
                               const std::string& golden_name = "") {
  fs::path path = golden_dir() / (name + ".ir");
  const std::string cu_name = golden_name.empty() ? name : golden_name;
  Result<EmittedKernel> emitted =
      emit_all_nodes(read(path), path.string(), "stitch_" + cu_name, options);
  EXPECT_TRUE(emitted.is_ok()) << emitted.status().message();
  if (!emitted.is_ok()) return {};
  EmittedKernel kernel = std::move(emitted).value();
  fs::path golden = golden_dir() / (cu_name + ".cu");
  const char* update = std::getenv("STITCH_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(golden, std::ios::binary) << kernel.source;
    return kernel;
  }
  EXPECT_TRUE(fs::exists(golden)) << golden << " is missing; run with STITCH_UPDATE_GOLDEN=1";
  EXPECT_EQ(kernel.source, read(golden))
      << "the emitted source of " << name
      << " changed; if intended, rerun with STITCH_UPDATE_GOLDEN=1";
  return kernel;
}

TEST(CodegenGolden, Softmax) {
  EmittedKernel kernel = emit_golden_case("softmax");
  EXPECT_EQ(kernel.composition, "warp");
  EXPECT_FALSE(kernel.launch.cooperative);
  EXPECT_NE(kernel.template_text.find("]S;"), std::string::npos) << kernel.template_text;
}

TEST(CodegenGolden, LayerNorm) { EXPECT_EQ(emit_golden_case("layernorm").composition, "warp"); }

// Few long rows (the recommender's softmax <64,30000>): each row is split across
// blocks so rows x blocks_per_row fills the H100's co-resident blocks (132 SMs x 4
// blocks of 512 threads), partials combined after grid barriers.
TEST(CodegenGolden, FewLongRowsSplitAcrossBlocks) {
  EmittedKernel kernel = emit_golden_case("softmax_long_rows");
  EXPECT_EQ(kernel.composition, "block");
  EXPECT_TRUE(kernel.launch.cooperative);
  EXPECT_EQ(kernel.launch.grid, 64 * 8);
  EXPECT_NE(kernel.template_text.find("reducemax_1[GRID-SPLIT_8,CTA]"), std::string::npos)
      << kernel.template_text;
  EXPECT_EQ(kernel.shared_memory_fallback, "");
  EXPECT_GT(kernel.workspace_bytes, 0);
}

// Many long rows already fill the GPU: a block per row, and the 120000-byte row of
// exp does not fit the arena ("regional to global").
TEST(CodegenGolden, ManyLongRowsUseBlockPerRowAndGlobalFallback) {
  EmittedKernel kernel = emit_golden_case("softmax_many_long_rows");
  EXPECT_EQ(kernel.composition, "block");
  EXPECT_FALSE(kernel.launch.cooperative);
  EXPECT_EQ(kernel.template_text.find("SPLIT"), std::string::npos) << kernel.template_text;
  EXPECT_EQ(kernel.shared_memory_fallback, "regional to global");
  EXPECT_GT(kernel.workspace_bytes, 0);
}

// A column reduction (AStitch 2.1): a block per (32-column tile, slice of 128 rows),
// 8 row lanes, the warps' columns combined through shared memory, partials to the
// workspace, combined in slice order after a grid barrier, then the broadcast Sub
// over every element after a second barrier.
TEST(CodegenGolden, ColumnReductionTilesAndSlices) {
  EmittedKernel kernel = emit_golden_case("column_center");
  EXPECT_EQ(kernel.composition, "global");
  EXPECT_TRUE(kernel.launch.cooperative);
  EXPECT_NE(kernel.template_text.find("reducemean_1[GRID-SPLIT_32-CTA-ROWS_8,WARP-COL_32]"),
            std::string::npos)
      << kernel.template_text;
  EXPECT_EQ(kernel.launch.shared_bytes, 8 * 32 * 4);  // [warps, 32 columns] of float
  ASSERT_FALSE(kernel.ops.empty());
  EXPECT_EQ(kernel.ops[0].composition, "block");
}

// A column reduction and a scalar of the same tensor in one kernel (a bias gradient and
// the gradient's squared norm): the column tiles, and a warp per slice of the whole
// tensor for the scalar, whose 512 partials one warp combines.
TEST(CodegenGolden, ColumnAndScalarReductions) {
  EmittedKernel kernel = emit_golden_case("grad_stats");
  EXPECT_EQ(kernel.composition, "global");
  EXPECT_NE(kernel.template_text.find("reducesum_1[GRID-SPLIT_16-CTA-ROWS_8,WARP-COL_32]"),
            std::string::npos)
      << kernel.template_text;
  EXPECT_NE(kernel.template_text.find("reducesum_2[GRID-SPLIT_512-WARP,GRID-SPLIT_512-WARP]"),
            std::string::npos)
      << kernel.template_text;
}

// A GRU step's gates: five small MatMuls ([4, 64] outputs, k of 32 and 64) in two
// stages. Each takes a warp per output element (lanes over k, shuffles combine), and
// a stage's loops start where the previous one ended, so they run side by side on
// different blocks (measured on an H100: rnn_unrolled 839 -> 87 us).
TEST(CodegenGolden, SmallMatMulsTakeAWarpPerOutputSideBySide) {
  EmittedKernel kernel = emit_golden_case("gru_gates");
  EXPECT_EQ(kernel.composition, "global");
  EXPECT_TRUE(kernel.launch.cooperative);
  EXPECT_NE(kernel.source.find("for (index_t kk = lane; kk < 64; kk += 32)"), std::string::npos);
  EXPECT_NE(kernel.source.find("(tid / 32 + threads / 32 - 256 % (threads / 32)) % (threads / 32)"),
            std::string::npos);
  // The first stage's four MatMuls side by side: 4 x 256 warps of 32 threads.
  EXPECT_EQ(kernel.launch.grid, 4 * 256 * 32 / 256);
}

// 32 rows of 784 elements: a warp per row would leave most SMs idle with each lane
// walking 25 elements; a block per row instead (vae's loss, 19.3 -> 7.3 us on an H100).
TEST(CodegenGolden, FewLongRowsTakeABlockEach) {
  EmittedKernel kernel = emit_golden_case("few_long_rows");
  EXPECT_EQ(kernel.composition, "block");
  EXPECT_EQ(kernel.launch.block, 512);
}

// MobileNetV2's depthwise stage (docs/codegen.md, "Stencils"): ReLU6, a 3x3 depthwise
// conv with stride 2 and its bias, ReLU6, one thread composition: the conv walks its
// window through the inlined ReLU6, skipping the taps in the padding.
TEST(CodegenGolden, DepthwiseConvWithActivations) {
  EmittedKernel kernel = emit_golden_case("depthwise_relu6");
  EXPECT_EQ(kernel.composition, "thread");
  const std::string& cu = kernel.source;
  EXPECT_NE(cu.find("const index_t p0 = o0 * 2 - 1 + k0;"), std::string::npos);
  EXPECT_NE(cu.find("if (p0 < 0 || p0 >= 10) continue;"), std::string::npos);
  EXPECT_EQ(cu.find("p_a"), std::string::npos) << "the ReLU6 before the conv is never stored";
}

// The same stage at stride 1 (schedule.h 3c.): each input element is read by 9 taps,
// so a block per [1, 8, 32] outputs stages the [1, 10, 34] ReLU6 values their windows
// cover in shared memory (ReLU6 evaluated once per staged element, zeros in the
// padding), then each thread computes its output from the tile and adds the residual
// at its own index. 40 columns: two column tiles, the second of 8; 12 rows: two row
// tiles, the second of 4.
TEST(CodegenGolden, DepthwiseConvStagesItsInputTile) {
  EmittedKernel kernel = emit_golden_case("depthwise_tiled");
  EXPECT_EQ(kernel.composition, "stencil");
  EXPECT_EQ(kernel.launch.block, 256);
  // The input tile, then the plane's 9 filter taps (16-byte aligned after 1360 bytes).
  EXPECT_EQ(kernel.shared_bytes_allocated, 10 * 34 * 4 + 9 * 4);
  const std::string& cu = kernel.source;
  EXPECT_NE(cu.find("acc += s_a(n * 8 + m, p0, p1) * f_w(n * 8 + m, k0 * 3 + k1);"),
            std::string::npos);
  // Each thread of the 9 loads its one filter element before the input tile's loop.
  EXPECT_NE(cu.find("const float f0 = e0 < 9 && tile_out0 + e0 / 9 < 8 ? v_w("), std::string::npos);
  EXPECT_NE(cu.find("if (e0 < 9) tile_f_w[e0] = f0;"), std::string::npos);
  EXPECT_NE(cu.find("tile_a[e] = plane < 8 && p0 >= 0 && p0 < 12 && p1 >= 0 && p1 < 40 ? v_a("),
            std::string::npos);
  EXPECT_NE(cu.find("__syncthreads();"), std::string::npos);
  EXPECT_EQ(cu.find("p_a"), std::string::npos) << "the ReLU6 before the conv is never stored";
  EXPECT_EQ(kernel.template_text, "add_1[GRID,GRID,GRID-TILE_8,GRID-TILE_32];");

  // --no-stencil-tiles: the thread composition of the same group, every tap from
  // global memory.
  const fs::path path = golden_dir() / "depthwise_tiled.ir";
  Result<ir::Model> model = ir::parse_model(read(path), path.string());
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  Result<cost_model::DeviceProfile> profile = cost_model::builtin_device_profile("h100");
  ASSERT_TRUE(profile.is_ok());
  ScheduleOptions options;
  options.stencil_tiles = false;
  Result<EmittedKernel> plain =
      emit_kernel(model->graph, model->graph.node_ids(), "stitch_plain", *profile, options);
  ASSERT_TRUE(plain.is_ok()) << plain.status().message();
  EXPECT_EQ(plain->composition, "thread");
  EXPECT_EQ(plain->source.find("__syncthreads"), std::string::npos);
}

// A grouped conv (4 channels and 6 filters per group, ResNeXt-like with a channel
// multiplier): a tile holds one group's 6 output planes x [2, 20] outputs and stages
// the group's 4 input planes once for all 6 filters, and the 6 filters' 4 x 9 weights.
TEST(CodegenGolden, GroupedConvStagesItsGroupsInputPlanes) {
  EmittedKernel kernel = emit_golden_case("grouped_tiled");
  EXPECT_EQ(kernel.composition, "stencil");
  EXPECT_EQ(kernel.launch.block, 256);
  EXPECT_EQ(kernel.shared_bytes_allocated, 4 * 4 * 22 * 4 + 6 * 36 * 4);
  const std::string& cu = kernel.source;
  EXPECT_NE(cu.find("acc += s_x(n * 16 + (m / 6) * 4 + c, p0, p1) * f_w(n * 24 + m, c * 9 + "),
            std::string::npos);
  EXPECT_NE(cu.find("tile_plane0 = t / 5 * 4;"), std::string::npos);
  EXPECT_NE(cu.find("for (index_t e = threadIdx.x; e < 352; e += blockDim.x)"), std::string::npos);
  EXPECT_NE(cu.find("const index_t plane = (t / 5 * 6) + threadIdx.x / 40;"), std::string::npos);
  EXPECT_NE(cu.find("if (threadIdx.x < 240 && plane < 48 &&"), std::string::npos);
  EXPECT_EQ(kernel.template_text, "relu_1[GRID,GRID-CTA_6,GRID-TILE_2,GRID-TILE_20];");
}

// A Conformer's conv module between its pointwise convs: GLU, a 31-tap 1-D depthwise
// conv, SiLU. The 1-D window is tiled as one row (ir::planar_window): tiles of 256
// outputs along the time axis, the GLU computed once per staged element.
TEST(CodegenGolden, OneDimensionalConvStagesARowTile) {
  EmittedKernel kernel = emit_golden_case("depthwise_1d_tiled");
  EXPECT_EQ(kernel.composition, "stencil");
  EXPECT_EQ(kernel.launch.block, 256);
  EXPECT_EQ(kernel.shared_bytes_allocated, 288 * 4 + 31 * 4);  // the row (aligned), its filter
  const std::string& cu = kernel.source;
  EXPECT_NE(cu.find("auto s_g = [&](index_t plane, index_t p0) -> float {"), std::string::npos);
  EXPECT_NE(cu.find("acc += s_g(n * 8 + m, p0) * f_w(n * 8 + m, k0);"), std::string::npos);
  EXPECT_NE(cu.find("tile_g[e] = plane < 16 && p1 >= 0 && p1 < 300 ? v_g(plane * 300 + p1)"),
            std::string::npos);
  EXPECT_EQ(cu.find("tile_row0 = r0"), std::string::npos) << "a 1-D tile has no rows";
  EXPECT_EQ(kernel.template_text, "mul_2[GRID,GRID,GRID-TILE_256];");
}

// EfficientNet's MBConv after its expand conv in one global kernel (schedule.h 4b.):
// the SiLU after the depthwise conv is materialized (the squeeze-excitation mean and
// the gated product both read it), and its stage walks the conv's tiles, the SiLU
// before the conv evaluated once per staged element.
TEST(CodegenGolden, GlobalStageStagesItsStencilTile) {
  constexpr const char* kText = R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "mbconv" (%x: f32[1,16,24,24], %w: f32[16,1,3,3], %b: f32[16], %w1: f32[16,4],
                %w2: f32[4,16]) {
  %rows: i64[2] = dense<i64[2]>[1, 16]
  %pixels: i64[4] = dense<i64[4]>[1, 16, 1, 1]
  %xs: f32[1,16,24,24] = Sigmoid(%x) {name="xs"}
  %a: f32[1,16,24,24] = Mul(%x, %xs) {name="a"}
  %d: f32[1,16,24,24] = Conv(%a, %w, %b) {name="d", group=16, kernel_shape=[3,3], pads=[1,1,1,1]}
  %ds: f32[1,16,24,24] = Sigmoid(%d) {name="ds"}
  %s: f32[1,16,24,24] = Mul(%d, %ds) {name="s"}
  %m: f32[1,16,1,1] = ReduceMean(%s) {name="mean", axes=[2,3]}
  %mr: f32[1,16] = Reshape(%m, %rows) {name="mean_rows"}
  %q: f32[1,4] = MatMul(%mr, %w1) {name="squeeze"}
  %qr: f32[1,4] = Relu(%q) {name="squeeze_relu"}
  %e: f32[1,16] = MatMul(%qr, %w2) {name="excite"}
  %ep: f32[1,16,1,1] = Reshape(%e, %pixels) {name="excite_pixels"}
  %g: f32[1,16,1,1] = Sigmoid(%ep) {name="gate"}
  %y: f32[1,16,24,24] = Mul(%s, %g) {name="y"}
  return %y
}
)";
  Result<EmittedKernel> kernel = emit_all_nodes(kText, "mbconv.ir", "stitch_mbconv");
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
  EXPECT_EQ(kernel->composition, "global");
  EXPECT_NE(kernel->why.find("the stage of s (Mul) walks the stencil d (Conv) in tiles of"),
            std::string::npos)
      << kernel->why;
  const std::string& cu = kernel->source;
  // The filters stay in global memory in a global kernel (stage_filters says why).
  EXPECT_NE(cu.find("acc += s_a(n * 16 + m, p0, p1) * v_w(taps + k0 * 3 + k1);"),
            std::string::npos);
  EXPECT_NE(cu.find("tile_a[e] = plane < 16"), std::string::npos);
  EXPECT_NE(cu.find("ws_s[i] = "), std::string::npos) << "the stage writes s to the workspace";
}

// Elementwise over float32 with a broadcast bias along the last axis and a per-row
// scale (schedule.h, 3b.): 4 elements per thread, one 128-bit load per run of x, r and
// b, one scalar load per run of s, one 128-bit store per run of y and z, both outputs
// in one loop; a scalar loop when a pointer is not 16-byte aligned.
TEST(CodegenGolden, VectorAccesses) {
  EmittedKernel kernel = emit_golden_case("vector_bias_scale");
  EXPECT_EQ(kernel.composition, "thread");
  EXPECT_EQ(kernel.vector_width, 4);
  EXPECT_EQ(kernel.launch.grid * kernel.launch.block, 64 * 256 / 4);
  const std::string& cu = kernel.source;
  for (const char* load :
       {"w_x = *reinterpret_cast<const float4*>(p_x + i);",
        "w_r = *reinterpret_cast<const float4*>(p_r + i);",
        "w_b = *reinterpret_cast<const float4*>(p_b + (i % 256));", "u_s = p_s[(i / 256)];"}) {
    EXPECT_NE(cu.find(load), std::string::npos) << load;
  }
  EXPECT_NE(cu.find("const bool vec4 = stitch_aligned16(p_x) && stitch_aligned16(p_b) && "
                    "stitch_aligned16(p_r) && stitch_aligned16(p_y) && stitch_aligned16(p_z);"),
            std::string::npos);
  // Both outputs in one loop: the residual sum both read is computed once per element.
  EXPECT_NE(cu.find("o0.x = v_y(i);\n      o1.x = v_z(i);"), std::string::npos);
  EXPECT_NE(cu.find("*reinterpret_cast<float4*>(p_y + i) = o0;"), std::string::npos);
  EXPECT_NE(cu.find("*reinterpret_cast<float4*>(p_z + i) = o1;"), std::string::npos);
}

// Independent parts (packing) take the 128-bit path too, each part over a quarter of
// the blocks it had.
TEST(CodegenGolden, VectorAccessesInPacking) {
  Result<EmittedKernel> kernel = emit_all_nodes(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "two_parts" (%x: f32[64,256], %w: f32[32,128]) {
  %y: f32[64,256] = Relu(%x) {name="relu"}
  %z: f32[32,128] = Sigmoid(%w) {name="gate"}
  return %y, %z
}
)",
                                                "two_parts.ir", "stitch_two_parts");
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
  EXPECT_EQ(kernel->composition, "packing");
  EXPECT_EQ(kernel->vector_width, 4);
  EXPECT_EQ(kernel->launch.grid * kernel->launch.block, (64 * 256 + 32 * 128) / 4);
  EXPECT_NE(kernel->source.find("w_w = *reinterpret_cast<const float4*>(p_w + i);"),
            std::string::npos);
}

// Reads that no 16-byte window serves keep the kernel scalar: a transposed read, a
// broadcast along the last axis of a row whose length is not a multiple of 4, and an
// integer tensor.
TEST(CodegenGolden, VectorAccessesRefused) {
  const char* cases[] = {
      R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "transposed" (%x: f32[64,256], %b: f32[256,64]) {
  %t: f32[64,256] = Transpose(%b) {name="t", perm=[1, 0]}
  %y: f32[64,256] = Add(%x, %t) {name="add"}
  return %y
}
)",
      R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "odd_rows" (%x: f32[64,30], %s: f32[64,1]) {
  %y: f32[64,30] = Mul(%x, %s) {name="scale"}
  return %y
}
)",
      R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "integer_input" (%x: i32[64,256]) {
  %y: f32[64,256] = Cast(%x) {name="cast", to=1}
  return %y
}
)"};
  for (const char* text : cases) {
    Result<EmittedKernel> kernel = emit_all_nodes(text, "refused.ir", "stitch_refused");
    ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
    EXPECT_EQ(kernel->composition, "thread") << text;
    EXPECT_EQ(kernel->vector_width, 1) << text;
    EXPECT_EQ(kernel->source.find("float4"), std::string::npos) << text;
  }
}

// Row compositions walk their rows in runs of 4 per lane: a residual sum stored and
// read back through its window, the scale along the row through its own, the
// normalized row stored a run at a time; an Exp a reduction's loop stores goes out a
// run at a time too.
TEST(CodegenGolden, RowRunsTake128BitAccesses) {
  Result<EmittedKernel> kernel = emit_all_nodes(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "residual_scale" (%x: f32[512,256], %r: f32[512,256], %g: f32[256]) {
  %s: f32[512,256] = Add(%x, %r) {name="residual"}
  %m: f32[512,1] = ReduceMax(%s) {name="max", axes=[-1], keepdims=1}
  %d: f32[512,256] = Sub(%s, %m) {name="shift"}
  %y: f32[512,256] = Mul(%d, %g) {name="scale"}
  return %s, %y
}
)",
                                                "residual_scale.ir", "stitch_residual_scale");
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
  EXPECT_EQ(kernel->composition, "warp");
  EXPECT_EQ(kernel->vector_width, 4);
  const std::string& cu = kernel->source;
  for (const char* text :
       {"const bool vec4 = stitch_aligned16(p_x) && stitch_aligned16(p_r) && "
        "stitch_aligned16(p_g) && stitch_aligned16(p_s) && stitch_aligned16(p_y);",
        "w_s = *reinterpret_cast<const float4*>(p_s + wi_s);",
        "w_g = *reinterpret_cast<const float4*>(p_g + wi_g);",
        "for (index_t j4 = 4 * lane; j4 < 256; j4 += 128)",
        "stitch_store4(p_y + row * 256 + j4, run, vec4);"}) {
    EXPECT_NE(cu.find(text), std::string::npos) << text << "\n" << cu;
  }

  Result<EmittedKernel> softmax = emit_all_nodes(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "exp_sum" (%x: f32[512,128]) {
  %e: f32[512,128] = Exp(%x) {name="exp"}
  %z: f32[512,1] = ReduceMean(%e) {name="mean", axes=[-1], keepdims=1}
  return %e, %z
}
)",
                                                 "exp_sum.ir", "stitch_exp_sum");
  ASSERT_TRUE(softmax.is_ok()) << softmax.status().message();
  EXPECT_EQ(softmax->vector_width, 4) << softmax->why;
  EXPECT_NE(softmax->source.find("stitch_store4(p_e + row * 128 + j4, run, vec4);"),
            std::string::npos)
      << softmax->source;
}

// Rows that keep one element per access: read through a Gather (an embedding table
// at its ids), too short for a run per lane (24 elements over 8 lanes), and of a
// length no run divides.
TEST(CodegenGolden, RowRunsRefused) {
  const char* cases[] = {
      R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "gathered" (%t: f32[1000,32], %ids: i64[4096]) {
  %e: f32[4096,32] = Gather(%t, %ids) {name="lookup", axis=0}
  %z: f32[4096,1] = ReduceMean(%e) {name="mean", axes=[-1], keepdims=1}
  return %z
}
)",
      R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "short_rows" (%x: f32[4096,24]) {
  %z: f32[4096,1] = ReduceMean(%x) {name="mean", axes=[-1], keepdims=1}
  %y: f32[4096,24] = Div(%x, %z) {name="div"}
  return %y
}
)",
      R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "odd_rows" (%x: f32[4096,30]) {
  %z: f32[4096,1] = ReduceMean(%x) {name="mean", axes=[-1], keepdims=1}
  %y: f32[4096,30] = Div(%x, %z) {name="div"}
  return %y
}
)"};
  for (const char* text : cases) {
    Result<EmittedKernel> kernel = emit_all_nodes(text, "refused.ir", "stitch_refused");
    ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
    EXPECT_EQ(kernel->composition, "warp") << text << kernel->why;
    EXPECT_EQ(kernel->vector_width, 1) << text << kernel->why;
    EXPECT_EQ(kernel->source.find("float4"), std::string::npos) << text;
  }
}

// resnet's classifier: pooling, then a MatMul a warp per output (k = 32) whose bias
// add lane 0 writes right after the element (ValueSchedule::epilogue_of): 2 stages, not
// 3 (one grid barrier less).
TEST(CodegenGolden, MatMulEpilogueInItsStage) {
  Result<EmittedKernel> kernel = emit_all_nodes(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "classifier" (%x: f32[1,32,8,8], %w: f32[32,10], %b: f32[10]) {
  %p: f32[1,32,1,1] = ReduceMean(%x) {name="pool", axes=[2, 3], keepdims=1}
  %f: f32[1,32] = Flatten(%p) {name="flatten", axis=1}
  %m: f32[1,10] = MatMul(%f, %w) {name="fc"}
  %y: f32[1,10] = Add(%m, %b) {name="bias"}
  return %y
}
)",
                                                "classifier.ir", "stitch_classifier");
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
  EXPECT_EQ(kernel->composition, "global");
  EXPECT_NE(kernel->source.find("(2 stages separated by grid barriers)"), std::string::npos)
      << kernel->source;
  EXPECT_NE(kernel->source.find("p_y[i] = v_y(i);  // \"bias\" (Add), a same-index epilogue"),
            std::string::npos)
      << kernel->source;
}

TEST(CodegenGolden, PackedPair) {
  EXPECT_EQ(emit_golden_case("packed_pair").composition, "packing");
}

TEST(CodegenGolden, ReductionAndBatchedGemm) {
  EmittedKernel kernel = emit_golden_case("reduce_batched_gemm");
  // FS Fig. 5(d): the reduction is computed into the shared A tile, B tiles are loaded
  // next to it, no grid barrier and no workspace.
  EXPECT_EQ(kernel.composition, "block");
  EXPECT_FALSE(kernel.launch.cooperative);
  EXPECT_EQ(kernel.workspace_bytes, 0);
  EXPECT_GT(kernel.launch.shared_bytes, 0);
  EXPECT_EQ(kernel.shared_bytes_requested, kernel.shared_bytes_allocated);
  EXPECT_NE(kernel.template_text.find("]S;"), std::string::npos) << kernel.template_text;
}

// --precision tf32 and fp32x3 (ir/core/precision.h): the same block composition with
// each warp computing 16 x 8 pieces by mma.sync m16n8k8 TF32; the tiles hold k padded
// to 8 in rows of bank-spreading strides (k 64 -> rows of 68 floats; tile_n 64 -> 72).
TEST(CodegenGolden, BatchedGemmOnTensorCores) {
  ScheduleOptions tf32;
  tf32.precision = ir::Precision::kTf32;
  EmittedKernel kernel = emit_golden_case("reduce_batched_gemm", tf32, "reduce_batched_gemm_tf32");
  EXPECT_EQ(kernel.composition, "block");
  const std::string& cu = kernel.source;
  EXPECT_NE(cu.find("stitch_mma_m16n8k8_tf32(acc, a, b);"), std::string::npos);
  EXPECT_NE(cu.find("a[r] = stitch_tf32(a_in[r]);"), std::string::npos);
  EXPECT_EQ(cu.find("a_small"), std::string::npos);
  EXPECT_NE(cu.find("tf32 products on tensor cores (mma.sync m16n8k8)"), std::string::npos);

  ScheduleOptions x3;
  x3.precision = ir::Precision::kFloat32x3;
  EmittedKernel split = emit_golden_case("reduce_batched_gemm", x3, "reduce_batched_gemm_fp32x3");
  const std::string& cu3 = split.source;
  EXPECT_NE(cu3.find("stitch_mma_m16n8k8_tf32(acc, a_small, b);"), std::string::npos);
  EXPECT_NE(cu3.find("stitch_mma_m16n8k8_tf32(acc, a, b_small);"), std::string::npos);
  EXPECT_LT(cu3.find("a_small, b);"), cu3.find("acc, a, b);")) << "small parts first";
}

// Two MatMuls in one global kernel, each with more outputs than a warp per output fits
// in one wave: at fp32 a thread per output; at tf32 each stage computes its MatMul a
// warp per 16 x 8 piece with mma.sync m16n8k8 (m 300, n 36 and 30, k 36: partial
// pieces and a partial k step read zeros).
TEST(CodegenGolden, StageMatMulsOnTensorCores) {
  EmittedKernel plain = emit_golden_case("gemm_chain");
  EXPECT_EQ(plain.source.find("stitch_mma"), std::string::npos);
  ScheduleOptions tf32;
  tf32.precision = ir::Precision::kTf32;
  EmittedKernel kernel = emit_golden_case("gemm_chain", tf32, "gemm_chain_tf32");
  EXPECT_EQ(kernel.composition, plain.composition);
  const std::string& cu = kernel.source;
  size_t pieces = 0;
  for (size_t at = cu.find("a warp per 16 x 8 piece"); at != std::string::npos;
       at = cu.find("a warp per 16 x 8 piece", at + 1)) {
    ++pieces;
  }
  EXPECT_EQ(pieces, 2u) << cu;
  EXPECT_NE(cu.find("piece < 95;"), std::string::npos) << "19 x 5 pieces of the first";
  EXPECT_NE(cu.find("piece < 76;"), std::string::npos) << "19 x 4 pieces of the second";
  EXPECT_NE(cu.find("kk < 36; kk += 8"), std::string::npos);
}

// --precision bf16: the rewritten model's bfloat16 MatMul on tensor cores with
// mma.sync m16n8k16 (k 40 padded to 48, M 24 and N 24 to whole 16 x 8 pieces); at fp32 the
// same bfloat16 MatMul keeps its CUDA-core loop.
TEST(CodegenGolden, Bfloat16GemmOnTensorCores) {
  ScheduleOptions bf16;
  bf16.precision = ir::Precision::kBFloat16;
  EmittedKernel kernel = emit_golden_case("batched_gemm_bf16", bf16);
  EXPECT_EQ(kernel.composition, "block");
  const std::string& cu = kernel.source;
  EXPECT_NE(cu.find("stitch_mma_m16n8k16_bf16(acc, a, b);"), std::string::npos);
  EXPECT_NE(cu.find("kk < 48; kk += 16"), std::string::npos);
  EXPECT_NE(cu.find("__float2bfloat16_rn"), std::string::npos);
  const fs::path path = golden_dir() / "batched_gemm_bf16.ir";
  Result<EmittedKernel> plain = emit_all_nodes(read(path), path.string(), "stitch_plain");
  ASSERT_TRUE(plain.is_ok()) << plain.status().message();
  EXPECT_EQ(plain->source.find("stitch_mma"), std::string::npos);
}

// Attention with a scale and an additive mask (schedule.h, 1b.): one launch, no grid
// barrier and no workspace; 40 keys leave a partial second key tile, dv = 20 leaves
// lanes idle, and 8 batch x heads x 10 query tiles give a warp one row each.
TEST(CodegenGolden, AttentionWithScaleAndMask) {
  EmittedKernel kernel = emit_golden_case("attention_masked");
  EXPECT_EQ(kernel.composition, "attention");
  EXPECT_FALSE(kernel.launch.cooperative);
  EXPECT_EQ(kernel.workspace_bytes, 0);
  EXPECT_EQ(kernel.launch.block, 128);
  EXPECT_EQ(kernel.launch.grid, 2 * 4 * 10);
  EXPECT_NE(kernel.template_text.find("matmul_1[GRID,GRID,GRID-TILE_4,WARP]"), std::string::npos)
      << kernel.template_text;
  // The mask is read at the score's flat index; the scale is a literal.
  EXPECT_NE(kernel.source.find("0.200000003f"), std::string::npos);
  EXPECT_EQ(kernel.source.find("ws_"), std::string::npos) << "no score reaches memory";
}

// The projections of Q, K and V inlined into the tile loads (fine-grained GEMMs
// recomputed per element read), the head split by Reshape and Transpose.
TEST(CodegenGolden, AttentionWithProjectionsInlined) {
  EmittedKernel kernel = emit_golden_case("attention_projection");
  EXPECT_EQ(kernel.composition, "attention");
  EXPECT_FALSE(kernel.launch.cooperative);
  EXPECT_EQ(kernel.workspace_bytes, 0);
}

// The heads merged back after PV ([2, 4, 16, 8] -> Transpose -> [2, 16, 32]) in the
// attention kernel: each element of O is written where the Transpose puts it.
TEST(CodegenGolden, AttentionWritesThroughTheHeadMerge) {
  EmittedKernel kernel = emit_golden_case("attention_merged_heads");
  EXPECT_EQ(kernel.composition, "attention");
  EXPECT_FALSE(kernel.launch.cooperative);
  EXPECT_EQ(kernel.workspace_bytes, 0);
  // O's flat index i over [2, 4, 16, 8] lands at ((b 16 + m) 4 + h) 8 + n.
  EXPECT_NE(kernel.source.find("where the Transpose puts O's element"), std::string::npos);
}

// float16 with a causal Where on tensor cores: mma.sync m16n8k16 for both products, a
// warp per 16 query rows (40 rows: 3 warps, the last partial), 40 keys (a partial
// second key tile), 16-bit tiles with padded rows.
TEST(CodegenGolden, AttentionFloat16CausalOnTensorCores) {
  EmittedKernel kernel = emit_golden_case("attention_f16_causal");
  EXPECT_EQ(kernel.composition, "attention");
  EXPECT_FALSE(kernel.launch.cooperative);
  EXPECT_EQ(kernel.launch.block, 3 * 32);
  EXPECT_EQ(kernel.launch.grid, 2 * 4);
  EXPECT_NE(kernel.source.find("stitch_mma_m16n8k16_f16(s[nb], a, b)"), std::string::npos);
  EXPECT_NE(kernel.source.find("stitch_mma_m16n8k16_f16(acc[c], a, b)"), std::string::npos);
}

// A float32 attention core under --precision tf32 on TF32 tensor cores: mma.sync
// m16n8k8 for both products (d 32: four k steps; 20 query rows: two warps, the last
// partial; 40 keys: a partial second key tile), float tiles with rows padded by 4, and
// P's fragment read from the scores' accumulators with its k order permuted. Under
// fp32x3 three mma per step, the small parts first; at fp32 the CUDA-core variant; and
// a dv that is no multiple of 8 (attention_masked, dv 20) keeps CUDA cores at tf32.
TEST(CodegenGolden, AttentionTf32OnTensorCores) {
  // Emitted without a golden file of their own: the fp32 kernel and the CUDA-core tf32
  // one are the variant attention_masked pins.
  auto emit = [](const std::string& name, const ScheduleOptions& options) {
    const fs::path path = golden_dir() / (name + ".ir");
    Result<EmittedKernel> emitted = emit_all_nodes(read(path), path.string(), "k", options);
    EXPECT_TRUE(emitted.is_ok()) << emitted.status().message();
    return emitted.is_ok() ? std::move(emitted).value() : EmittedKernel{};
  };
  const EmittedKernel plain = emit("attention_tf32", {});
  EXPECT_EQ(plain.composition, "attention");
  EXPECT_EQ(plain.source.find("stitch_mma"), std::string::npos);
  ScheduleOptions tf32;
  tf32.precision = ir::Precision::kTf32;
  EmittedKernel kernel = emit_golden_case("attention_tf32", tf32, "attention_tf32_tc");
  EXPECT_EQ(kernel.composition, "attention");
  EXPECT_EQ(kernel.launch.block, 2 * 32);
  EXPECT_EQ(kernel.launch.grid, 2 * 2);
  const std::string& cu = kernel.source;
  EXPECT_NE(cu.find("stitch_mma_m16n8k8_tf32(s[nb], a, b);"), std::string::npos);
  EXPECT_NE(cu.find("stitch_mma_m16n8k8_tf32(acc[c], a, b);"), std::string::npos);
  EXPECT_NE(cu.find("{s[kb][0], s[kb][2], s[kb][1], s[kb][3]}"), std::string::npos);
  EXPECT_NE(cu.find("[32, 32 + 4] keys"), std::string::npos);
  EXPECT_EQ(cu.find("a_small"), std::string::npos);

  ScheduleOptions x3;
  x3.precision = ir::Precision::kFloat32x3;
  // No golden of its own: it differs from attention_tf32_tc by the split steps alone.
  const EmittedKernel split = emit("attention_tf32", x3);
  const std::string& cu3 = split.source;
  EXPECT_NE(cu3.find("stitch_mma_m16n8k8_tf32(s[nb], a_small, b);"), std::string::npos);
  EXPECT_NE(cu3.find("stitch_mma_m16n8k8_tf32(acc[c], a, b_small);"), std::string::npos);

  const EmittedKernel odd = emit("attention_masked", tf32);
  EXPECT_EQ(odd.composition, "attention");
  EXPECT_EQ(odd.source.find("stitch_mma"), std::string::npos);
  EXPECT_NE(odd.source.find("stitch_round_tf32"), std::string::npos);
}

TEST(CodegenGolden, UnsupportedOpNamesTheNode) {
  Result<EmittedKernel> kernel = emit_all_nodes(R"(stitchopt.ir 1
model ir_version=8 opsets={"":17}
graph "g" (%x: f32[4]) {
  %y: f32[4], %mask: bool[4] = Dropout(%x) {name="drop_0"}
  return %mask
}
)",
                                                "dropout_mask.ir", "k");
  ASSERT_FALSE(kernel.is_ok());
  EXPECT_EQ(kernel.status().message(),
            "node \"drop_0\" (Dropout): only output 0 of Dropout can be emitted");
}

}  // namespace
}  // namespace stitch::emit
