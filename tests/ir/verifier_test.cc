// Tests of the IR verifier: a valid graph passes; each broken invariant gives its
// exact message.
#include "ir/core/verifier.h"

#include <gtest/gtest.h>

namespace stitch::ir {
namespace {

// x: f32[2,3] (input), w: f32[3] (initializer)
// y = Add(x, w) "add"; z = Relu(y) "relu"; return z
struct SmallModel {
  SmallModel() {
    model.opset_imports.push_back(OpsetImport{"", 17});
    Graph& g = model.graph;
    x = g.add_value("x", TensorType::make(DType::kFloat32, {2, 3}));
    g.add_graph_input(x);
    w = g.add_initializer("w", Tensor::from_float({3}, {1, 2, 3}));
    y = g.add_value("y", TensorType::make(DType::kFloat32, {2, 3}));
    z = g.add_value("z", TensorType::make(DType::kFloat32, {2, 3}));
    add = g.add_node("Add", {x, w}, {y}, "", "add");
    relu = g.add_node("Relu", {y}, {z}, "", "relu");
    g.node(add).opset = 17;
    g.node(relu).opset = 17;
    g.add_graph_output(z);
  }
  Graph& graph() { return model.graph; }
  std::string verify_message() { return verify(model).message(); }
  Model model;
  ValueId x, w, y, z;
  NodeId add, relu;
};

TEST(VerifierTest, ValidGraphPasses) {
  SmallModel m;
  Status status = verify(m.model);
  EXPECT_TRUE(status.is_ok()) << status.message();
}

TEST(VerifierTest, GraphWithDeadNodesAndValuesPasses) {
  SmallModel m;
  m.graph().replace_all_uses(m.z, m.y);
  m.graph().remove_node(m.relu);
  m.graph().remove_value(m.z);
  Status status = verify(m.model);
  EXPECT_TRUE(status.is_ok()) << status.message();
}

TEST(VerifierTest, EmptyValueName) {
  SmallModel m;
  m.graph().value(m.y).name = "";
  EXPECT_EQ(m.verify_message(), "value #2 has an empty name; every value needs a unique name");
}

TEST(VerifierTest, DuplicateValueName) {
  SmallModel m;
  m.graph().value(m.z).name = "y";
  EXPECT_EQ(m.verify_message(),
            "values #2 and #3 are both named \"y\"; value names must be unique");
}

TEST(VerifierTest, ConstantWithProducer) {
  SmallModel m;
  m.graph().value(m.y).constant = std::make_shared<const Tensor>(Tensor::from_float({1}, {0}));
  EXPECT_EQ(m.verify_message(),
            "value \"y\" has constant data and a producer; only values without a producer "
            "(initializers) may hold data");
}

TEST(VerifierTest, ProducerSlotDisagrees) {
  SmallModel m;
  m.graph().value(m.y).producer_output = 1;
  EXPECT_EQ(m.verify_message(),
            "value \"y\" names node \"add\" (Add) output 1 as its producer, but that output is "
            "another value");
}

TEST(VerifierTest, MissingProducer) {
  SmallModel m;
  m.graph().value(m.y).producer = 7;
  EXPECT_EQ(m.verify_message(),
            "value \"y\" names node #7 as its producer, which is dead or does not exist");
}

TEST(VerifierTest, UserThatDoesNotReadTheValue) {
  SmallModel m;
  m.graph().value(m.x).users.push_back(Use{m.relu, 0});
  EXPECT_EQ(m.verify_message(),
            "value \"x\" lists node \"relu\" (Relu) input 0 as a user, but that node is dead or "
            "reads another value there");
}

TEST(VerifierTest, UserListedTwice) {
  SmallModel m;
  m.graph().value(m.x).users.push_back(Use{m.add, 0});
  EXPECT_EQ(m.verify_message(),
            "value \"x\" lists node \"add\" (Add) input 0 twice among its users");
}

TEST(VerifierTest, InputMissingFromUsers) {
  SmallModel m;
  m.graph().value(m.w).users.clear();
  EXPECT_EQ(m.verify_message(),
            "node \"add\" (Add): input 1 reads value \"w\", but the value does not list it among "
            "its users");
}

TEST(VerifierTest, GraphInputWithProducer) {
  SmallModel m;
  m.graph().add_graph_input(m.y);
  EXPECT_EQ(m.verify_message(),
            "graph input \"y\" is produced by node \"add\" (Add); graph inputs must not have a "
            "producer");
}

TEST(VerifierTest, UndefinedGraphOutput) {
  SmallModel m;
  ValueId orphan = m.graph().add_value("orphan", TensorType::make(DType::kFloat32, {2, 3}));
  m.graph().add_graph_output(orphan);
  EXPECT_EQ(m.verify_message(),
            "graph output \"orphan\" is not defined: it is no graph input or initializer and "
            "no live node produces it");
}

TEST(VerifierTest, InputWithoutProducer) {
  SmallModel m;
  ValueId orphan = m.graph().add_value("orphan", TensorType::make(DType::kFloat32, {2, 3}));
  m.graph().set_input(m.relu, 0, orphan);
  EXPECT_EQ(m.verify_message(),
            "node \"relu\" (Relu): input 0 reads value \"orphan\", which is no graph input or "
            "initializer and has no live producer");
}

TEST(VerifierTest, DeadInput) {
  SmallModel m;
  m.graph().value(m.w).dead = true;
  EXPECT_EQ(m.verify_message(), "node \"add\" (Add): input 1 reads dead value \"w\"");
}

TEST(VerifierTest, ImplicitInputWithoutProducer) {
  SmallModel m;
  ValueId orphan = m.graph().add_value("captured", TensorType::make(DType::kFloat32, {2, 3}));
  m.graph().add_implicit_input(m.relu, orphan);
  EXPECT_EQ(m.verify_message(),
            "node \"relu\" (Relu): implicit input 0 reads value \"captured\", which is no graph "
            "input or initializer and has no live producer");
}

TEST(VerifierTest, OutputWhoseProducerIsAnotherNode) {
  SmallModel m;
  m.graph().value(m.y).producer = kNoId;
  EXPECT_EQ(m.verify_message(),
            "node \"add\" (Add): output 0 is value \"y\", but the value's producer is another "
            "node or slot");
}

TEST(VerifierTest, Cycle) {
  SmallModel m;
  m.graph().set_input(m.add, 0, m.z);
  EXPECT_EQ(m.verify_message(),
            "the graph has a cycle through node \"add\" (Add); ONNX graphs must be acyclic: "
            "re-export the model");
}

TEST(VerifierTest, TooManyInputsForTheSchema) {
  SmallModel m;
  Node& add = m.graph().node(m.add);
  add.inputs.push_back(m.x);
  m.graph().value(m.x).users.push_back(Use{m.add, 2});
  EXPECT_EQ(m.verify_message(), "node \"add\" (Add): has 3 inputs; Add takes 2");
}

TEST(VerifierTest, RecordedShapeDisagreesWithRule) {
  SmallModel m;
  m.graph().value(m.z).type = TensorType::make(DType::kFloat32, {2, 4});
  EXPECT_EQ(m.verify_message(),
            "node \"relu\" (Relu): output 0 \"z\" is recorded as f32[2,4] but the op's shape rule "
            "gives f32[2,3]");
}

TEST(VerifierTest, RecordedDtypeDisagreesWithRule) {
  SmallModel m;
  m.graph().value(m.y).type = TensorType::make(DType::kFloat16, {2, 3});
  m.graph().value(m.z).type = TensorType::make(DType::kFloat16, {2, 3});
  EXPECT_EQ(m.verify_message(),
            "node \"add\" (Add): output 0 \"y\" is recorded as f16[2,3] but the op's shape rule "
            "gives f32[2,3]");
}

TEST(VerifierTest, UnknownInputTypesSkipTheRule) {
  SmallModel m;
  m.graph().value(m.x).type = TensorType{DType::kFloat32, false, {}};
  m.graph().value(m.y).type = TensorType::make(DType::kFloat32, {7});
  Status status = verify(m.model);
  // Add is skipped (x has no shape); Relu reads y: f32[7] and records z: f32[2,3].
  EXPECT_EQ(status.message(),
            "node \"relu\" (Relu): output 0 \"z\" is recorded as f32[2,3] but the op's shape rule "
            "gives f32[7]");
}

TEST(VerifierTest, UnknownOpsAreNotChecked) {
  SmallModel m;
  m.graph().node(m.relu).op_type = "MyRelu";
  m.graph().node(m.relu).domain = "custom";
  m.graph().value(m.z).type = TensorType::make(DType::kInt8, {9});
  Status status = verify(m.model);
  EXPECT_TRUE(status.is_ok()) << status.message();
}

}  // namespace
}  // namespace stitch::ir
