// random_inputs (runtime_stub/program.h): integers that reach a Gather's indices stay
// below the indexed axis, however long the chain of Casts between them.
#include <gtest/gtest.h>
#include <pthread.h>

#include <string>

#include "ir/text/text.h"
#include "runtime_stub/program.h"

namespace stitch::runtime {
namespace {

// 20000 Casts between the input and the Gather's indices: following them used to
// recurse once per Cast (no recursion whose depth grows with the graph), so
// on a 512 KiB stack the walk overflowed.
TEST(RandomInputsTest, GatherBoundThroughALongCastChain) {
  std::string body;
  std::string previous = "ids";
  for (int i = 0; i < 20000; ++i) {
    const std::string name = "c" + std::to_string(i);
    body += "  %" + name + ": " + (i % 2 ? "i64" : "i32") + "[64] = Cast(%" + previous +
            ") {name=\"cast_" + std::to_string(i) + "\", to=" + (i % 2 ? "7" : "6") + "}\n";
    previous = name;
  }
  body += "  %y: f32[64,4] = Gather(%table, %" + previous +
          ") {name=\"gather\", axis=0}\n  return %y\n";
  Result<ir::Model> model = ir::parse_model(
      "stitchopt.ir 1\nmodel ir_version=8 opsets={\"\":17}\ngraph \"g\" (%ids: i64[64], %table: "
      "f32[10,4]) {\n" +
          body + "}\n",
      "cast_chain.ir");
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  Program program;
  program.model = std::move(model).value();
  const ir::ValueId ids = program.model.graph.graph_inputs()[0];
  program.inputs.push_back(StepTensor{ids, "ids", program.model.graph.value(ids).type, 64 * 8});

  std::map<std::string, ir::Tensor> inputs;
  auto draw = [&] { inputs = random_inputs(program, 1); };
  pthread_attr_t attributes;
  pthread_attr_init(&attributes);
  pthread_attr_setstacksize(&attributes, 512 * 1024);
  pthread_t thread;
  auto trampoline = [](void* argument) -> void* {
    (*static_cast<decltype(draw)*>(argument))();
    return nullptr;
  };
  ASSERT_EQ(pthread_create(&thread, &attributes, trampoline, &draw), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attributes);

  ASSERT_EQ(inputs.count("ids"), 1u);
  std::vector<int64_t> values = inputs.at("ids").to_int64_vector();
  ASSERT_EQ(values.size(), 64u);
  bool beyond_two = false;
  for (int64_t value : values) {
    EXPECT_GE(value, 0);
    EXPECT_LT(value, 10);
    beyond_two = beyond_two || value >= 2;
  }
  EXPECT_TRUE(beyond_two) << "the bound is the Gather's axis (10), not the default 2";
}

}  // namespace
}  // namespace stitch::runtime
