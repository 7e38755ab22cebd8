// Schedules and emitted code for untrusted shapes (docs/semantics.md):
// zero-size tensors emit source without a division by a zero extent or a use of an
// undeclared arena, that compiles as C++ against the emulation layer with warnings as
// errors (the flags the nvcc check uses for our code); groups thousands of ops deep or
// wide emit with a stack that does not grow with them.
#include <gtest/gtest.h>
#include <pthread.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "cost_model/device_profile.h"
#include "emit/cuda_emitter.h"
#include "emit/schedule.h"
#include "ir/text/text.h"

namespace stitch::emit {
namespace {

namespace fs = std::filesystem;

Result<EmittedKernel> emit_text(const std::string& text) {
  STITCH_ASSIGN_OR_RETURN(ir::Model model, ir::parse_model(text, "case.ir"));
  STITCH_ASSIGN_OR_RETURN(cost_model::DeviceProfile profile,
                          cost_model::builtin_device_profile("h100"));
  return emit_kernel(model.graph, model.graph.node_ids(), "stitch_case", profile);
}

std::string graph_text(const std::string& signature, const std::string& body) {
  return "stitchopt.ir 1\nmodel ir_version=8 opsets={\"\":17}\ngraph \"g\" " + signature + " {\n" +
         body + "}\n";
}

// The .cu compiled with the C++ compiler against emit/cuda/stitch_emu.h, -Wall -Wextra
// -Werror; "" when it compiles, else the compiler's output.
std::string compile_errors(const EmittedKernel& kernel, const std::string& name) {
  fs::path dir = fs::path(STITCH_BINARY_DIR) / "extreme_shapes_test" / name;
  fs::create_directories(dir);
  std::ofstream(dir / "kernel.cu", std::ios::binary) << kernel.source;
  fs::path cuda = fs::path(STITCH_SOURCE_DIR) / "emit" / "cuda";
  fs::path log = dir / "compile.log";
  std::string command = std::string(STITCH_CXX) +
                        " -std=c++20 -fsyntax-only -Wall -Wextra -Werror -DSTITCH_EMULATION -I" +
                        cuda.string() + " -x c++ " + (dir / "kernel.cu").string() + " > " +
                        log.string() + " 2>&1";
  if (std::system(command.c_str()) == 0) return "";
  std::ifstream in(log);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Emits `body`, checks the source for the constructs zero-size extents used to produce,
// and compiles it.
EmittedKernel emit_and_compile(const std::string& name, const std::string& signature,
                               const std::string& body) {
  Result<EmittedKernel> kernel = emit_text(graph_text(signature, body));
  EXPECT_TRUE(kernel.is_ok()) << kernel.status().message();
  if (!kernel.is_ok()) return {};
  const std::string& source = kernel->source;
  EXPECT_EQ(source.find(" / 0)"), std::string::npos) << source;
  EXPECT_EQ(source.find(" % 0)"), std::string::npos) << source;
  if (source.find("smem") != std::string::npos) {
    EXPECT_NE(source.find("STITCH_SHARED_ARENA(smem"), std::string::npos) << source;
  }
  EXPECT_EQ(compile_errors(*kernel, name), "") << source;
  return std::move(kernel).value();
}

constexpr const char* kSoftmaxBody =
    "  %m: f32[{rows},1] = ReduceMax(%x) {name=\"max_0\", axes=[1], keepdims=1}\n"
    "  %d: f32[{rows},{cols}] = Sub(%x, %m) {name=\"sub_0\"}\n"
    "  %e: f32[{rows},{cols}] = Exp(%d) {name=\"exp_0\"}\n"
    "  %axes: i64[1] = dense<i64[1]>[1]\n"
    "  %s: f32[{rows},1] = ReduceSum(%e, %axes) {name=\"sum_0\", keepdims=1}\n"
    "  %y: f32[{rows},{cols}] = Div(%e, %s) {name=\"div_0\"}\n"
    "  return %y\n";

std::string softmax(int rows, int cols) {
  std::string body = kSoftmaxBody;
  for (auto [key, value] : {std::pair<std::string, int>{"{rows}", rows}, {"{cols}", cols}}) {
    for (size_t at = body.find(key); at != std::string::npos; at = body.find(key)) {
      body.replace(at, key.size(), std::to_string(value));
    }
  }
  return body;
}

// Rows of no elements (finding 10: the Div read `v_s((i / 0))`, the Exp row buffer used
// an undeclared `smem`): the reductions are their empty-set results, written without
// reading x, in the global composition.
TEST(ExtremeShapes, SoftmaxOverEmptyRows) {
  EmittedKernel kernel = emit_and_compile("softmax_4x0", "(%x: f32[4,0])", softmax(4, 0));
  EXPECT_EQ(kernel.composition, "global");
  EXPECT_NE(kernel.source.find("return __uint_as_float(0xff800000u);"), std::string::npos)
      << kernel.source;
}

// No rows at all: the row-local schedule divided by rows_per_block = min(8, rows) = 0.
TEST(ExtremeShapes, SoftmaxWithoutRows) {
  EmittedKernel kernel = emit_and_compile("softmax_0x16", "(%x: f32[0,16])", softmax(0, 16));
  EXPECT_EQ(kernel.composition, "global");
}

TEST(ExtremeShapes, RowReductionWithoutRows) {
  emit_and_compile("sum_0x4", "(%x: f32[0,4])",
                   "  %axes: i64[1] = dense<i64[1]>[1]\n"
                   "  %y: f32[0] = ReduceSum(%x, %axes) {name=\"sum_0\", keepdims=0}\n"
                   "  return %y\n");
}

// A column reduction over no rows: the thread mapping started from x(base), reading an
// element of an empty tensor; now every output is the identity.
TEST(ExtremeShapes, ColumnMaxOverNoRowsIsMinusInfinity) {
  EmittedKernel kernel =
      emit_and_compile("max_0x64", "(%x: f32[0,64])",
                       "  %y: f32[64] = ReduceMax(%x) {name=\"max_0\", axes=[0], keepdims=0}\n"
                       "  return %y\n");
  EXPECT_EQ(kernel.source.find("v_x("), std::string::npos) << kernel.source;
  EXPECT_NE(kernel.source.find("return __uint_as_float(0xff800000u);"), std::string::npos)
      << kernel.source;
}

// Integer reductions over an empty set take the dtype's bounds (the reference's).
TEST(ExtremeShapes, IntegerMinOverAnEmptyAxisIsTheDtypeMaximum) {
  EmittedKernel kernel =
      emit_and_compile("min_i32_4x0", "(%x: i32[4,0])",
                       "  %y: i32[4] = ReduceMin(%x) {name=\"min_0\", axes=[1], keepdims=0}\n"
                       "  return %y\n");
  EXPECT_NE(kernel.source.find("return static_cast<int>(2147483647LL);"), std::string::npos)
      << kernel.source;
}

// k = 0: C is zeros. The tiled MatMul planned an empty arena and still used `smem`.
TEST(ExtremeShapes, MatMulWithEmptyInnerDimension) {
  EmittedKernel kernel = emit_and_compile("matmul_k0", "(%a: f32[4,0], %b: f32[0,8])",
                                          "  %c: f32[4,8] = MatMul(%a, %b) {name=\"dot_0\"}\n"
                                          "  %y: f32[4,8] = Relu(%c) {name=\"relu_0\"}\n"
                                          "  return %y\n");
  EXPECT_EQ(kernel.template_text.find("TILE"), std::string::npos) << kernel.template_text;
}

// A Concat with an empty part (an empty KV cache) reads only its other parts: the
// empty part's accessor is not defined (it was, unused: a warning under -Werror).
TEST(ExtremeShapes, ConcatSkipsAnEmptyPart) {
  EmittedKernel kernel =
      emit_and_compile("concat_empty_part", "(%a: f32[0,8], %b: f32[4,8])",
                       "  %c: f32[4,8] = Concat(%a, %b) {name=\"cat_0\", axis=0}\n"
                       "  %y: f32[4,8] = Relu(%c) {name=\"relu_0\"}\n"
                       "  return %y\n");
  EXPECT_EQ(kernel.source.find("v_a"), std::string::npos) << kernel.source;
}

// Reflect padding of an axis of size 1: the period 2 * (n - 1) is 0, and the emitted
// reflection loop never ended; every position reflects to 0.
TEST(ExtremeShapes, ReflectPadOfASingleElementAxisTerminates) {
  EmittedKernel kernel =
      emit_and_compile("pad_reflect_1", "(%x: f32[1,4])",
                       "  %pads: i64[4] = dense<i64[4]>[1, 0, 1, 0]\n"
                       "  %p: f32[3,4] = Pad(%x, %pads) {name=\"pad_0\", mode=\"reflect\"}\n"
                       "  %y: f32[3,4] = Relu(%p) {name=\"relu_0\"}\n"
                       "  return %y\n");
  EXPECT_NE(kernel.source.find("c0 = 0;"), std::string::npos) << kernel.source;
}

// Integer Div and Mod by zero give 0 and MIN / -1 wraps (ir/integer_arithmetic.h);
// x86 traps on the plain C operators.
TEST(ExtremeShapes, IntegerDivisionIsGuarded) {
  EmittedKernel kernel = emit_and_compile("integer_division", "(%x: i32[8], %d: i32[8])",
                                          "  %q: i32[8] = Div(%x, %d) {name=\"div_0\"}\n"
                                          "  %r: i32[8] = Mod(%x, %d) {name=\"mod_0\"}\n"
                                          "  %y: i32[8] = Add(%q, %r) {name=\"add_0\"}\n"
                                          "  return %y\n");
  EXPECT_NE(kernel.source.find("y == 0 ? static_cast<int>(0) : (y == -1 ? static_cast<int>(0ULL - "
                               "static_cast<unsigned long long>(x)) : static_cast<int>(x / y))"),
            std::string::npos)
      << kernel.source;
  EXPECT_NE(kernel.source.find("if (y == 0 || y == -1) return 0;"), std::string::npos)
      << kernel.source;
}

// Runs `work` on a thread with a 512 KiB stack: a recursion whose depth grows with the
// group (the emitter's accessors used about 4 KiB a level) overflows it, a loop does not.
template <typename Work>
void run_on_small_stack(Work work) {
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, 512 * 1024);
  pthread_t thread;
  auto trampoline = [](void* argument) -> void* {
    (*static_cast<Work*>(argument))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attributes, trampoline, &work), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attributes);
}

Result<EmittedKernel> emit_on_small_stack(const ir::Model& model) {
  Result<EmittedKernel> kernel = Status::internal("not emitted");
  run_on_small_stack([&] {
    Result<cost_model::DeviceProfile> profile = cost_model::builtin_device_profile("h100");
    if (!profile.is_ok()) {
      kernel = profile.status();
      return;
    }
    kernel = emit_kernel(model.graph, model.graph.node_ids(), "stitch_case", *profile);
  });
  return kernel;
}

// 5000 inlined elementwise ops in a chain (an emitter that recursed
// once per op would overflow the stack at about 2000).
TEST(ExtremeShapes, DeepChainEmitsWithoutRecursion) {
  std::string body;
  std::string previous = "x";
  for (int i = 0; i < 5000; ++i) {
    const std::string name = "t" + std::to_string(i);
    body += "  %" + name + ": f32[4,8] = " + (i % 2 ? "Relu" : "Neg") + "(%" + previous +
            ") {name=\"op_" + std::to_string(i) + "\"}\n";
    previous = name;
  }
  Result<ir::Model> model = ir::parse_model(
      graph_text("(%x: f32[4,8])", body + "  return %" + previous + "\n"), "chain.ir");
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  Result<EmittedKernel> kernel = emit_on_small_stack(*model);
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
  // Operands are defined before their readers: the first op's accessor before the last's.
  EXPECT_LT(kernel->source.find("auto v_t0 = "), kernel->source.find("auto v_t4999 = "));
}

// A Sum of one input 2000 times, and of 2000 inlined Relus (each operand an accessor).
TEST(ExtremeShapes, WideSumEmitsWithoutRecursion) {
  std::string same = "  %y: f32[4,8] = Sum(";
  std::string relus;
  std::string distinct = "  %z: f32[4,8] = Sum(";
  for (int i = 0; i < 2000; ++i) {
    same += std::string(i ? ", " : "") + "%x";
    relus += "  %r" + std::to_string(i) + ": f32[4,8] = Relu(%x) {name=\"relu_" +
             std::to_string(i) + "\"}\n";
    distinct += std::string(i ? ", " : "") + "%r" + std::to_string(i);
  }
  same += ") {name=\"sum_same\"}\n";
  distinct += ") {name=\"sum_distinct\"}\n";
  Result<ir::Model> model = ir::parse_model(
      graph_text("(%x: f32[4,8])", same + relus + distinct + "  return %y, %z\n"), "wide.ir");
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  Result<EmittedKernel> kernel = emit_on_small_stack(*model);
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
  EXPECT_LT(kernel->source.find("auto v_r1999 = "), kernel->source.find("auto v_z = "));
}

}  // namespace
}  // namespace stitch::emit
