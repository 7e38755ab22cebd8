// Tests of the textual IR: golden files round-trip byte for byte, a model using
// every feature of the format comes back equal, parse errors have exact messages.
#include "ir/text/text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "ir/core/verifier.h"

namespace stitch::ir {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<Use> sorted_users(const Value& value) {
  std::vector<Use> users = value.users;
  std::sort(users.begin(), users.end(), [](const Use& a, const Use& b) {
    return a.node != b.node ? a.node < b.node : a.slot < b.slot;
  });
  return users;
}

void expect_tensors_equal(const std::shared_ptr<const Tensor>& a,
                          const std::shared_ptr<const Tensor>& b, const std::string& what) {
  ASSERT_EQ(a == nullptr, b == nullptr) << what;
  if (a != nullptr) {
    EXPECT_TRUE(*a == *b) << what;
  }
}

// Field by field, so a failure says what differs. Users are compared as sets: the
// text does not record the order in which uses were added.
void expect_models_equal(const Model& a, const Model& b) {
  EXPECT_EQ(a.ir_version, b.ir_version);
  EXPECT_EQ(a.opset_imports, b.opset_imports);
  EXPECT_EQ(a.producer_name, b.producer_name);
  EXPECT_EQ(a.producer_version, b.producer_version);
  EXPECT_EQ(a.domain, b.domain);
  EXPECT_EQ(a.model_version, b.model_version);
  EXPECT_EQ(a.doc_string, b.doc_string);
  EXPECT_EQ(a.metadata_props, b.metadata_props);
  EXPECT_EQ(a.functions, b.functions);
  const Graph& ga = a.graph;
  const Graph& gb = b.graph;
  EXPECT_EQ(ga.name, gb.name);
  EXPECT_EQ(ga.doc_string, gb.doc_string);
  EXPECT_EQ(ga.graph_inputs(), gb.graph_inputs());
  EXPECT_EQ(ga.graph_outputs(), gb.graph_outputs());
  EXPECT_EQ(ga.initializers(), gb.initializers());
  ASSERT_EQ(ga.value_capacity(), gb.value_capacity());
  for (ValueId id = 0; id < ga.value_capacity(); ++id) {
    const Value& va = ga.value(id);
    const Value& vb = gb.value(id);
    std::string what = "value #" + std::to_string(id) + " " + va.name;
    EXPECT_EQ(va.name, vb.name) << what;
    EXPECT_EQ(va.type, vb.type) << what;
    EXPECT_EQ(va.type_from_model, vb.type_from_model) << what;
    EXPECT_EQ(va.producer, vb.producer) << what;
    EXPECT_EQ(va.producer_output, vb.producer_output) << what;
    EXPECT_EQ(va.is_graph_input, vb.is_graph_input) << what;
    EXPECT_EQ(va.is_graph_output, vb.is_graph_output) << what;
    EXPECT_EQ(va.dead, vb.dead) << what;
    EXPECT_EQ(sorted_users(va), sorted_users(vb)) << what;
    expect_tensors_equal(va.constant, vb.constant, what);
  }
  ASSERT_EQ(ga.node_capacity(), gb.node_capacity());
  for (NodeId id = 0; id < ga.node_capacity(); ++id) {
    const Node& na = ga.node(id);
    const Node& nb = gb.node(id);
    std::string what = "node #" + std::to_string(id) + " " + na.display_name();
    EXPECT_EQ(na.name, nb.name) << what;
    EXPECT_EQ(na.op_type, nb.op_type) << what;
    EXPECT_EQ(na.domain, nb.domain) << what;
    EXPECT_EQ(na.opset, nb.opset) << what;
    EXPECT_EQ(na.inputs, nb.inputs) << what;
    EXPECT_EQ(na.outputs, nb.outputs) << what;
    EXPECT_EQ(na.implicit_inputs, nb.implicit_inputs) << what;
    EXPECT_EQ(na.doc_string, nb.doc_string) << what;
    EXPECT_EQ(na.origin, nb.origin) << what;
    EXPECT_EQ(na.dead, nb.dead) << what;
    ASSERT_EQ(na.attributes.size(), nb.attributes.size()) << what;
    for (size_t i = 0; i < na.attributes.size(); ++i) {
      EXPECT_TRUE(na.attributes[i] == nb.attributes[i])
          << what << " attribute " << na.attributes[i].name;
      // operator== treats all NaNs alike; the text keeps their bits.
      EXPECT_EQ(std::bit_cast<uint32_t>(na.attributes[i].f),
                std::bit_cast<uint32_t>(nb.attributes[i].f))
          << what << " attribute " << na.attributes[i].name;
    }
  }
}

Model round_trip(const Model& model, std::string* text = nullptr) {
  std::string printed = print_model(model);
  Result<Model> parsed = parse_model(printed, "round_trip.ir");
  EXPECT_TRUE(parsed.is_ok()) << parsed.status().message() << "\n" << printed;
  if (!parsed.is_ok()) return Model();
  EXPECT_EQ(print_model(*parsed), printed);
  if (text != nullptr) *text = printed;
  return std::move(parsed).value();
}

TEST(TextTest, GoldenFilesRoundTripByteForByte) {
  std::filesystem::path dir = std::filesystem::path(STITCH_SOURCE_DIR) / "tests/ir/golden";
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".ir") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 3u);
  for (const auto& path : files) {
    std::string text = read_file(path);
    Result<Model> model = parse_model(text, path.filename().string());
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    EXPECT_EQ(print_model(*model), text) << path;
  }
}

TEST(TextTest, GoldenSoftmaxVerifies) {
  std::filesystem::path path =
      std::filesystem::path(STITCH_SOURCE_DIR) / "tests/ir/golden/softmax.ir";
  Result<Model> model = parse_model(read_file(path), "softmax.ir");
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  Status status = verify(*model);
  EXPECT_TRUE(status.is_ok()) << status.message();
  EXPECT_EQ(model->graph.num_nodes(), 5);
  EXPECT_EQ(model->graph.node(3).int_attribute("keepdims", 0), 1);
}

TEST(TextTest, HeaderExampleParses) {
  const char* text =
      "stitchopt.ir 1\n"
      "model ir_version=8 opsets={\"\":17} producer=\"pytorch\" producer_version=\"2.1\"\n"
      "graph \"main\" (%x: f32[2,3], %w: f32[3] = dense<f32[3]>[1, 2, 3]) {\n"
      "  %b: f32[3] = dense<f32[3]>[0.5, -0, 1e-45]\n"
      "  %y: f32[2,3] = Add(%x, %w) {name=\"add_0\"}\n"
      "  %z: f32[2] = ReduceSum(%y) {name=\"sum\", axes=[1], keepdims=0}\n"
      "  %s: f32[1]!, _ = Split(%z, _) {opset=13, axis=0, origin=[\"Split_3\"]}\n"
      "  return %z\n"
      "}\n";
  Result<Model> model = parse_model(text, "example.ir");
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  EXPECT_EQ(print_model(*model), text);
  const Graph& graph = model->graph;
  ValueId w = *graph.find_value("w");
  EXPECT_TRUE(graph.value(w).is_graph_input);
  EXPECT_TRUE(graph.value(w).is_initializer());
  EXPECT_EQ(graph.value(w).constant->float_at(2), 3.0);
  EXPECT_EQ(graph.node(1).ints_attribute("axes", {}), std::vector<int64_t>{1});
  EXPECT_EQ(graph.node(1).opset, 17);
  EXPECT_EQ(graph.node(2).opset, 13);
  EXPECT_TRUE(graph.value(*graph.find_value("s")).type_from_model);
  EXPECT_EQ(graph.node(2).outputs[1], kNoId);
  EXPECT_EQ(graph.node(2).origin, std::vector<std::string>{"Split_3"});
  EXPECT_EQ(*graph.find_value("s"), 5);  // x, w, b, y, z, s: definition order
}

Tensor make_tensor(DType dtype, std::vector<int64_t> dims, std::string bytes) {
  Tensor tensor;
  tensor.dtype = dtype;
  tensor.dims = std::move(dims);
  tensor.bytes = std::move(bytes);
  return tensor;
}

template <typename T>
std::string bytes_of(std::initializer_list<T> values) {
  std::string bytes;
  for (T value : values) bytes.append(reinterpret_cast<const char*>(&value), sizeof(T));
  return bytes;
}

// A model that uses every feature of the format.
Model make_kitchen_sink() {
  Model model;
  model.ir_version = 9;
  model.opset_imports = {{"", 18}, {"com.microsoft", 1}};
  model.producer_name = "test \"producer\"";
  model.producer_version = "1.0";
  model.domain = "ai.test";
  model.model_version = 7;
  model.doc_string = "line one\nline two\t\x01\xff";
  model.metadata_props = {{"b", "2"}, {"a", "1"}};
  model.functions = {std::string("\x0a\x03"
                                 "foo\x00\xff",
                                 7),
                     ""};
  Graph& g = model.graph;
  g.name = "kitchen sink";
  g.doc_string = "graph doc";
  ValueId x = g.add_value("x", TensorType::make(DType::kFloat32, {2, kUnknownDim, 3}));
  g.value(x).type_from_model = true;
  g.add_graph_input(x);
  ValueId weird = g.add_value("weird name/0:1", TensorType{DType::kFloat16, false, {}});
  g.add_graph_input(weird);
  ValueId scale = g.add_initializer("scale", Tensor::from_float({}, {0.5f}));
  g.add_graph_input(scale);
  ValueId w = g.add_initializer(
      "w", Tensor::from_float({4}, {1.0f, -0.0f, 0.1f, std::numeric_limits<float>::denorm_min()}));
  ValueId h = g.add_initializer(
      "h", make_tensor(DType::kFloat16, {5},
                       bytes_of<uint16_t>({0x3c00, 0x7bff, 0x0001, 0xfc00, 0x7e01})));
  ValueId bf = g.add_initializer(
      "bf", make_tensor(DType::kBFloat16, {2}, bytes_of<uint16_t>({0x3fc0, 0x7fc0})));
  ValueId flags = g.add_initializer("flags", make_tensor(DType::kBool, {3}, "\x01\x00\x02"));
  Tensor strings;
  strings.dtype = DType::kString;
  strings.dims = {2};
  strings.strings = {"a", std::string("b\"\0c", 4)};
  ValueId names = g.add_initializer("names", strings);
  ValueId d = g.add_initializer(
      "d", make_tensor(DType::kFloat64, {3},
                       bytes_of<double>({0.1, std::numeric_limits<double>::infinity(),
                                         std::bit_cast<double>(uint64_t{0xfff0000000000001u})})));
  ValueId ints = g.add_initializer(
      "ints", make_tensor(DType::kUInt64, {2}, bytes_of<uint64_t>({0, ~uint64_t{0}})));
  ValueId i8 = g.add_initializer("i8", make_tensor(DType::kInt8, {2, 1}, "\x80\x7f"));
  ValueId c64 =
      g.add_initializer("c64", make_tensor(DType::kComplex64, {1}, bytes_of<float>({1.5f, -2.0f})));
  Tensor external = Tensor::from_float({2}, {3.0f, 4.0f});
  external.external = ExternalDataInfo{"weights.bin", 128, 8};
  ValueId big = g.add_initializer("big", external);
  ValueId unloaded = g.add_initializer("unloaded", make_tensor(DType::kFloat32, {1000}, ""));
  g.value(unloaded).type = TensorType::make(DType::kFloat32, {1000});
  ValueId empty = g.add_initializer("empty", make_tensor(DType::kInt64, {0, 3}, ""));
  ValueId left = g.add_value("left over", TensorType::make(DType::kInt32, {}));
  (void)left;

  ValueId y = g.add_value("y", TensorType::make(DType::kFloat32, {2, kUnknownDim, 4}));
  ValueId first = g.add_value("onnx::Split_1", TensorType::make(DType::kFloat32, {1}));
  ValueId third = g.add_value("third", TensorType{});
  ValueId out = g.add_value("out", TensorType::make(DType::kFloat32, {2}));
  NodeId add = g.add_node("Add", {x, w}, {y}, "", "add/0");
  Node& add_node = g.node(add);
  add_node.opset = 18;
  add_node.attributes.push_back(Attribute::make_int("i", -5));
  add_node.attributes.push_back(Attribute::make_float("f", 1.0f));
  add_node.attributes.push_back(Attribute::make_float("tiny", 1e-45f));
  add_node.attributes.push_back(
      Attribute::make_float("inf", -std::numeric_limits<float>::infinity()));
  add_node.attributes.push_back(
      Attribute::make_float("payload", std::bit_cast<float>(uint32_t{0x7fc00001})));
  add_node.attributes.push_back(Attribute::make_float("nan", std::nanf("")));
  add_node.attributes.push_back(Attribute::make_string("s", "quote\" slash\\ nl\n"));
  add_node.attributes.push_back(Attribute::make_ints("axes", {1, -1, 9223372036854775807}));
  add_node.attributes.push_back(Attribute::make_ints("no_ints", {}));
  add_node.attributes.push_back(Attribute::make_floats("fs", {1.0f, 0.25f, 3e38f}));
  add_node.attributes.push_back(Attribute::make_floats("no_floats", {}));
  Attribute strs;
  strs.name = "strs";
  strs.kind = AttributeKind::kStrings;
  strs.strings = {"x", ""};
  add_node.attributes.push_back(strs);
  add_node.attributes.push_back(Attribute::make_tensor("t", Tensor::from_int64({2}, {3, -4})));
  Attribute tensors;
  tensors.name = "ts";
  tensors.kind = AttributeKind::kTensors;
  tensors.tensors = {Tensor::from_float({1}, {2.0f}), Tensor::from_int64({}, {1})};
  add_node.attributes.push_back(tensors);
  Attribute body;
  body.name = "body";
  body.kind = AttributeKind::kGraph;
  body.opaque_proto = std::string("\x12\x00\x01", 3);
  body.doc_string = "the body";
  add_node.attributes.push_back(body);
  Attribute ref = Attribute::make_float("alpha", 0.0f);
  ref.ref_attr_name = "outer_alpha";
  add_node.attributes.push_back(ref);
  add_node.attributes.push_back(Attribute::make_int("name", 3));  // clashes with a node field
  add_node.attributes.push_back(Attribute::make_int("odd key", 4));
  add_node.origin = {"Add_0", "Mul_1"};
  add_node.doc_string = "node doc";
  g.add_implicit_input(add, scale);

  NodeId split = g.add_node("Split", {y, kNoId}, {first, kNoId, third}, "com.microsoft");
  g.node(split).opset = 1;
  NodeId custom = g.add_node(
      "return", {third, names, weird, h, bf, flags, d, ints, i8, c64, big, unloaded, empty}, {out},
      "custom.domain", "");
  g.node(custom).opset = 3;
  NodeId sink = g.add_node("Print", {out}, {}, "custom.domain", "sink");
  (void)sink;
  g.add_graph_output(out);
  g.add_graph_output(first);
  g.add_graph_output(out);
  return model;
}

TEST(TextTest, KitchenSinkRoundTripsExactly) {
  Model model = make_kitchen_sink();
  std::string text;
  Model parsed = round_trip(model, &text);
  expect_models_equal(model, parsed);
  // Spot checks of the syntax.
  EXPECT_NE(text.find("%\"weird name/0:1\": f16[*]"), std::string::npos) << text;
  EXPECT_NE(text.find("%x: f32[2,?,3]!"), std::string::npos) << text;
  EXPECT_NE(text.find("%scale: f32[] = dense<f32[]>[0.5]"), std::string::npos) << text;
  EXPECT_NE(text.find("\"name\"=3, \"odd key\"=4"), std::string::npos) << text;
  EXPECT_NE(text.find("payload=nan(0x7fc00001), nan=nan"), std::string::npos) << text;
  EXPECT_NE(text.find("no_ints=ints[]"), std::string::npos) << text;
  EXPECT_NE(text.find("%\"onnx::Split_1\": f32[1], _, %third: undef[*] = Split(%y, _)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("%\"left over\": i32[] = undefined"), std::string::npos) << text;
  EXPECT_NE(text.find("= \"return\"("), std::string::npos) << text;
  EXPECT_NE(text.find("implicit=[%scale]"), std::string::npos) << text;
  EXPECT_NE(text.find("external(location=\"weights.bin\", offset=128, length=8)"),
            std::string::npos)
      << text;
}

TEST(TextTest, ForwardReferencesAndCommentsParse) {
  const char* text =
      "// a comment before the header\n"
      "stitchopt.ir 1\n"
      "model ir_version=8 opsets={\"\":17}\n"
      "graph \"g\" (%x: f32[4]) {\n"
      "  %b: f32[4] = Neg(%a)  // reads a value defined below\n"
      "  %a: f32[4] = Relu(%x)\n"
      "  return %b\n"
      "}\n";
  Result<Model> model = parse_model(text, "forward.ir");
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const Graph& graph = model->graph;
  EXPECT_EQ(graph.value(graph.node(0).inputs[0]).producer, 1);
  EXPECT_TRUE(verify(*model).is_ok());
}

TEST(TextTest, ValueIdsFollowDefinitionOrder) {
  // A pass made a value before the node that produces the value it reads: the text
  // keeps names and node ids; value ids come back in definition order.
  Model model;
  model.opset_imports = {{"", 17}};
  Graph& g = model.graph;
  ValueId late = g.add_value("late", TensorType::make(DType::kFloat32, {1}));
  ValueId x = g.add_value("x", TensorType::make(DType::kFloat32, {1}));
  g.add_graph_input(x);
  ValueId early = g.add_value("early", TensorType::make(DType::kFloat32, {1}));
  g.add_node("Relu", {x}, {early});
  g.add_node("Neg", {early}, {late});
  g.add_graph_output(late);
  std::string text;
  Model parsed = round_trip(model, &text);
  EXPECT_EQ(parsed.graph.node(1).op_type, "Neg");
  EXPECT_EQ(parsed.graph.value(parsed.graph.node(1).outputs[0]).name, "late");
  EXPECT_EQ(*parsed.graph.find_value("x"), 0);
  EXPECT_EQ(*parsed.graph.find_value("late"), 2);
}

TEST(TextTest, DeadNodesAndValuesAreNotPrinted) {
  Model model;
  model.opset_imports = {{"", 17}};
  Graph& g = model.graph;
  ValueId x = g.add_value("x", TensorType::make(DType::kFloat32, {1}));
  g.add_graph_input(x);
  ValueId a = g.add_value("a", TensorType::make(DType::kFloat32, {1}));
  ValueId b = g.add_value("b", TensorType::make(DType::kFloat32, {1}));
  NodeId relu = g.add_node("Relu", {x}, {a});
  g.add_node("Neg", {x}, {b});
  g.add_graph_output(b);
  g.remove_node(relu);
  g.remove_value(a);
  std::string text;
  Model parsed = round_trip(model, &text);
  EXPECT_EQ(text.find("Relu"), std::string::npos);
  model.graph.compact();
  expect_models_equal(model, parsed);
}

struct ParseErrorCase {
  std::string body;  // graph lines between the header and "}"
  std::string message;
};

TEST(TextTest, ParseErrorsSayWhereAndWhat) {
  const std::string prefix =
      "stitchopt.ir 1\nmodel ir_version=8 opsets={\"\":17}\ngraph \"g\" (%x: f32[4]) {\n";
  const std::vector<ParseErrorCase> cases = {
      {"  %y: f32[4] = Relu(%x\n  return %y\n}\n",
       "t.ir:5:3: expected ')' to close the node's inputs"},
      {"  %y: f33[4] = Relu(%x)\n  return %y\n}\n",
       "t.ir:4:7: unknown element type 'f33' in a value type; expected f32, f16, bf16, f64, i8, "
       "i16, i32, i64, u8, u16, u32, u64, bool, string, c64, c128 or undef"},
      {"  %y: f32[4] = Relu(%z)\n  return %y\n}\n", "t.ir:4:21: use of undefined value %z"},
      {"  %x: f32[4] = Relu(%x)\n  return %x\n}\n", "t.ir:4:3: value %x is defined twice"},
      {"  %y: f32[4] = Relu(%x) {name=\"r}\n  return %y\n}\n", "t.ir:4:31: unterminated string"},
      {"  %w: f32[3] = dense<f32[3]>[1, 2]\n  return %w\n}\n",
       "t.ir:4:16: tensor dense<f32[...]> needs 3 values, got 2"},
      {"  %w: i8[2] = dense<i8[2]>[1, 300]\n  return %w\n}\n",
       "t.ir:4:31: integer '300' is out of range for i8"},
      {"  %y: f32[4] = Relu(%x) {axes=[]}\n  return %y\n}\n",
       "t.ir:4:31: an empty list needs its kind: write ints[], floats[], strings[] or tensors[]"},
      {"  %y: f32[4] = Relu(%x) {name=\"a\", name=\"b\"}\n  return %y\n}\n",
       "t.ir:4:36: node field 'name' given twice"},
      {"  %y: f32[4] = Relu(%x) {s=\"\\q\"}\n  return %y\n}\n",
       "t.ir:4:29: invalid escape in string; use \\\", \\\\, \\n, \\t or \\xHH"},
      {"  %y: f32[4] = Relu(%x) {alpha=1e99}\n  return %y\n}\n",
       "t.ir:4:32: number out of range: 1e99"},
      {"  %y: f32[4] = Relu(%x)\n}\n",
       "t.ir:5:1: expected an op type, a value definition or 'return'"},
      {"  %y: f32[4] = Relu(%x)\n  return %y\n}\ntrailing\n",
       "t.ir:7:1: expected end of input after the graph"},
      {"  %y: f32[4] = Relu(%x) {t=dense<f32[1]>hex\"0\"}\n  return %y\n}\n",
       "t.ir:4:45: expected pairs of hex digits in hex\"...\""},
      {"  %y: f32[4] = Relu(%x) {k=true}\n  return %y\n}\n",
       "t.ir:4:28: unknown attribute value 'true'; expected a number, a string, a list, "
       "dense<...> or an opaque kind such as graph<hex\"...\">"},
      {"  %y: f32[-2] = Relu(%x)\n  return %y\n}\n", "t.ir:4:11: dimensions must be >= 0 or '?'"},
  };
  for (const ParseErrorCase& c : cases) {
    Result<Model> model = parse_model(prefix + c.body, "t.ir");
    ASSERT_FALSE(model.is_ok()) << c.body;
    EXPECT_EQ(model.status().code(), StatusCode::kInvalidInput);
    EXPECT_EQ(model.status().message(), c.message) << c.body;
  }
}

TEST(TextTest, HeaderAndModelErrors) {
  EXPECT_EQ(parse_model("", "e.ir").status().message(),
            "e.ir:1:1: expected the header 'stitchopt.ir 1'");
  EXPECT_EQ(parse_model("stitchopt.ir 2\n", "e.ir").status().message(),
            "e.ir:1:14: unsupported text IR version 2; this build reads version 1");
  EXPECT_EQ(parse_model("stitchopt.ir 1\nmodel ir_version=8 opset={}\n", "e.ir").status().message(),
            "e.ir:2:20: unknown model field 'opset'; expected ir_version, opsets, producer, "
            "producer_version, domain, model_version, doc, metadata or functions");
  EXPECT_EQ(parse_model("stitchopt.ir 1\nmodel ir_version=x\n", "e.ir").status().message(),
            "e.ir:2:18: expected an integer, got 'x'");
}

// A generated graph of many nodes: layers of Add + LeakyRelu + Mul with
// attributes, initializers and fan-out. Values are created as an importer does
// (inputs, initializers, then node outputs in node order), so ids survive the text.
Model make_large_model(int layers) {
  Model model;
  model.ir_version = 8;
  model.opset_imports = {{"", 17}};
  Graph& g = model.graph;
  g.name = "large";
  ValueId current = g.add_value("input", TensorType::make(DType::kFloat32, {kUnknownDim, 64}));
  g.add_graph_input(current);
  auto prefix = [](int layer) { return "/layers." + std::to_string(layer) + "/"; };
  std::vector<ValueId> biases;
  for (int layer = 0; layer < layers; ++layer) {
    std::vector<float> weights(16);
    for (int i = 0; i < 16; ++i) {
      weights[static_cast<size_t>(i)] = 0.001f * static_cast<float>(layer * 16 + i);
    }
    biases.push_back(g.add_initializer(prefix(layer) + "bias", Tensor::from_float({16}, weights)));
  }
  auto type = TensorType::make(DType::kFloat32, {kUnknownDim, 64});
  for (int layer = 0; layer < layers; ++layer) {
    std::string p = prefix(layer);
    ValueId sum = g.add_value(p + "add_output", type);
    g.add_node("Add", {current, biases[static_cast<size_t>(layer)]}, {sum}, "", p + "Add");
    ValueId act = g.add_value(p + "act_output", type);
    NodeId act_node = g.add_node("LeakyRelu", {sum}, {act}, "", p + "LeakyRelu");
    g.node(act_node).attributes.push_back(
        Attribute::make_float("alpha", 0.01f * static_cast<float>(layer % 7)));
    ValueId mixed = g.add_value(p + "mul_output", type);
    g.add_node("Mul", {act, current}, {mixed}, "", p + "Mul");
    for (NodeId id = g.node_capacity() - 3; id < g.node_capacity(); ++id) g.node(id).opset = 17;
    current = mixed;
  }
  g.add_graph_output(current);
  return model;
}

TEST(TextTest, LargeGeneratedGraphRoundTrips) {
  Model model = make_large_model(10000);  // 30000 nodes
  auto start = std::chrono::steady_clock::now();
  std::string text = print_model(model);
  auto printed = std::chrono::steady_clock::now();
  Result<Model> parsed = parse_model(text, "large.ir");
  auto done = std::chrono::steady_clock::now();
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  std::cout << "30000 nodes, " << text.size() << " bytes: print "
            << std::chrono::duration<double>(printed - start).count() << " s, parse "
            << std::chrono::duration<double>(done - printed).count() << " s\n";
  expect_models_equal(model, *parsed);
  EXPECT_EQ(print_model(*parsed), text);
}

}  // namespace
}  // namespace stitch::ir
