"""Hostile models and flags of the second campaign (issue 36 W1, W2, W6, W10, W11):
a model `stitchopt run` refuses must be refused by the compile already; a constant
but invalid shape is named as invalid, not as data-dependent; a message quotes at
most the start of a huge attribute; --input-shape conflicts name the flags; a model
path that is no regular file is never read."""
import os

import numpy as np
from onnx import AttributeProto, TensorProto, helper

from case import Case, Step
from models import F, I64, constant, make, vi, writer

S = TensorProto.STRING
INT64_MIN = np.iinfo(np.int64).min


def refused(*message, flags=()):
    """One step: the compile exits 2 with the message and writes no output."""
    return [Step(["{model}", "-o", "{out}", *flags], exit=2, message=message,
                 check=one_short_line)]


def one_short_line(_work, completed):
    """A refusal is one line of at most a few hundred bytes, whatever the model holds."""
    if len(completed.stderr) > 1500 or completed.stderr.count("\n") > 1:
        return f"stderr is {len(completed.stderr)} bytes in {completed.stderr.count(chr(10))} lines"
    return None


def one_node(node, inputs, outputs, initializers=(), opset=17):
    return lambda: make([node], inputs, outputs, initializers, opset)


# ---- W1: accepted by the compile, refused by run -----------------------------------

def cumsum_axis_min():
    return make([helper.make_node("CumSum", ["x", "axis"], ["y"], name="cumsum")],
                [vi("x")], [vi("y")], [constant("axis", np.array(INT64_MIN, np.int64))])


def resize(scales=None, sizes=None):
    """Resize of f32[1,1,4,4] by constant scales or sizes, then Neg (opset 13)."""
    def build():
        inputs = ["x", "", "scales" if scales is not None else ""]
        initializers = []
        if scales is not None:
            initializers.append(constant("scales", np.array(scales, np.float32)))
        if sizes is not None:
            inputs.append("sizes")
            initializers.append(constant("sizes", np.array(sizes, np.int64)))
        return make([helper.make_node("Resize", inputs, ["r"], name="resize", mode="nearest"),
                     helper.make_node("Neg", ["r"], ["y"], name="neg")],
                    [vi("x", F, [1, 1, 4, 4])], [vi("y", F, None)], initializers, opset=13)
    return build


def scatter_out_of_range():
    return make([helper.make_node("Neg", ["x"], ["n"], name="neg"),
                 helper.make_node("ScatterND", ["n", "indices", "updates"], ["s"], name="scatter"),
                 helper.make_node("Exp", ["s"], ["y"], name="exp")],
                [vi("x", F, [4, 3]), vi("updates", F, [2, 3])], [vi("y", F, [4, 3])],
                [constant("indices", np.array([[7], [-9]], np.int64))])


def string_model(kind):
    words = constant("words", np.array(["a", "b", "c"], dtype=object))
    if kind == "identity":
        return make([helper.make_node("Identity", ["x"], ["y"], name="copy")],
                    [vi("x", S, [2])], [vi("y", S, [2])])
    if kind == "gather":
        return make([helper.make_node("Gather", ["words", "i"], ["y"], name="lookup")],
                    [vi("i", I64, [2])], [vi("y", S, [2])], [words])
    if kind == "concat":
        return make([helper.make_node("Concat", ["words", "words"], ["y"], name="join", axis=0)],
                    [], [vi("y", S, [6])], [words])
    if kind == "initializer_output":
        return make([], [], [vi("words", S, [3])], [words])
    return make([helper.make_node("Cast", ["x"], ["y"], name="to_text", to=S)],
                [vi("x", F, [2])], [vi("y", S, [2])])


def recursive_function():
    body = helper.make_function("cust", "rec", ["a"], ["b"],
                                [helper.make_node("rec", ["a"], ["b"], domain="cust")],
                                [helper.make_opsetid("", 17), helper.make_opsetid("cust", 1)])
    return make([helper.make_node("rec", ["x"], ["y"], name="call", domain="cust")],
                [vi("x")], [vi("y")], functions=[body], extra_opsets=[("cust", 1)])


# ---- W2: constant but invalid, not data-dependent ----------------------------------

def reshape(input_shape, target):
    return lambda: make([helper.make_node("Reshape", ["x", "shape"], ["r"], name="reshape"),
                         helper.make_node("Neg", ["r"], ["y"], name="neg")],
                        [vi("x", F, input_shape)], [vi("y", F, None)],
                        [constant("shape", np.array(target, np.int64))], opset=14)


def pad_million_pads():
    return make([helper.make_node("Pad", ["x", "pads"], ["y"], name="pad")],
                [vi("x")], [vi("y", F, None)], [constant("pads", np.zeros(1000000, np.int64))])


def conv_huge_dilation():
    return make([helper.make_node("Conv", ["x", "w"], ["y"], name="conv",
                                  dilations=[1, 1 << 62])],
                [vi("x", F, [1, 1, 8, 8])], [vi("y", F, None)],
                [constant("w", np.ones([1, 1, 3, 3], np.float32))])


def sparse_constant():
    values = helper.make_tensor("values", F, [2], [1.0, 2.0])
    indices = helper.make_tensor("indices", I64, [2], [0, 3])
    sparse = helper.make_sparse_tensor(values, indices, [4])
    return make([helper.make_node("Constant", [], ["c"], name="constant", sparse_value=sparse),
                 helper.make_node("Add", ["x", "c"], ["y"], name="add")],
                [vi("x", F, [4])], [vi("y", F, [4])])


# ---- W6: huge attributes are quoted in part ----------------------------------------

def squeeze_million_axes():
    return make([helper.make_node("Squeeze", ["x"], ["y"], name="squeeze", axes=[0] * 1000000)],
                [vi("x", F, [1, 3])], [vi("y", F, [3])], opset=11)


def transpose_million_perm():
    return make([helper.make_node("Transpose", ["x"], ["y"], name="transpose",
                                  perm=list(range(1000000)))],
                [vi("x")], [vi("y")])


def einsum_megabyte_equation():
    return make([helper.make_node("Einsum", ["x"], ["y"], name="einsum",
                                  equation="." * (1 << 20))],
                [vi("x")], [vi("y")])


# ---- W10: --input-shape --------------------------------------------------------------

def shared_batch():
    """input_ids and attention_mask share the dim_param batch (as bert's inputs do)."""
    return make([helper.make_node("Add", ["input_ids", "attention_mask"], ["y"], name="add")],
                [vi("input_ids", F, ["batch", 16]), vi("attention_mask", F, ["batch", 16])],
                [vi("y", F, ["batch", 16])])


def static_batch():
    return make([helper.make_node("Relu", ["x"], ["y"], name="relu")],
                [vi("x", F, [32, 8])], [vi("y", F, [32, 8])])


def first_token():
    """Takes token 0 of a [batch, seq, 4] input, as bert's pooler does."""
    return make([helper.make_node("Gather", ["x", "zero"], ["y"], name="first", axis=1)],
                [vi("x", F, ["batch", "seq", 4])], [vi("y", F, ["batch", 4])],
                [constant("zero", np.array(0, np.int64))])


# ---- W11: the model path and nesting -------------------------------------------------

def relu():
    return make([helper.make_node("Relu", ["x"], ["y"], name="relu")], [vi("x")], [vi("y")])


def model_is_directory(model_dir):
    return model_dir


def model_is_fifo(model_dir):
    path = model_dir / "fifo.onnx"
    os.mkfifo(path)
    return path


def model_is_dev_zero(model_dir):
    path = model_dir / "zero.onnx"
    os.symlink("/dev/zero", path)
    return path


def varint(value):
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def length_delimited(field, payload):
    return varint(field << 3 | 2) + varint(len(payload)) + payload


def nested_ifs(depth):
    """A model with `depth` Ifs, each in the then_branch of the one before. The
    Python protobuf refuses to build messages this deep, so the bytes are joined by
    hand: GraphProto.node is field 1, NodeProto.attribute 5, AttributeProto.g 6 and
    ModelProto.graph 7."""
    def write(model_dir):
        def leaf(name):
            return helper.make_graph([helper.make_node("Identity", ["x"], [name])], "leaf", [],
                                     [vi(name, F, [2])])

        def branch(output, then_bytes):
            node = helper.make_node("If", ["c"], [output], else_branch=leaf(output))
            then = AttributeProto(name="then_branch", type=AttributeProto.GRAPH)
            return node.SerializeToString() + length_delimited(
                5, then.SerializeToString() + length_delimited(6, then_bytes))

        inner = leaf("o0").SerializeToString()
        for level in range(1, depth):
            shell = helper.make_graph([], f"b{level}", [], [vi(f"o{level}", F, [2])])
            inner = shell.SerializeToString() + length_delimited(1, branch(f"o{level}", inner))
        main = helper.make_graph([], "main", [vi("c", TensorProto.BOOL, []), vi("x", F, [2])],
                                 [vi("y", F, [2])])
        graph = main.SerializeToString() + length_delimited(1, branch("y", inner))
        model = make([], [], [])
        model.ClearField("graph")
        path = model_dir / "model.onnx"
        path.write_bytes(model.SerializeToString() + length_delimited(7, graph))
        return path
    return write


STRING_REFUSED = "stitchopt compiles models of numeric tensors"
NOT_DATA_DEPENDENT = "give positive, finite scales"

CASES = [
    # W1: each of these compiled (exit 0) and `run` refused it.
    Case("cumsum_axis_int64_min", "issue 36 W1: CumSum with axis INT64_MIN compiled",
         writer(cumsum_axis_min),
         refused('node "cumsum" (CumSum): axis -9223372036854775808 is out of range for rank 2')),
    Case("resize_scale_zero", "issue 36 W1: Resize with a constant scale of 0 compiled",
         writer(resize(scales=[1, 1, 0, 1])),
         refused('node "resize" (Resize): input 2 "scales" [1,1,0,1] has the scale 0 at index 2',
                 NOT_DATA_DEPENDENT)),
    Case("scatternd_constant_indices_out_of_range",
         "issue 36 W1: ScatterND with constant indices 7 and -9 into 4 rows compiled",
         writer(scatter_out_of_range),
         refused('node "scatter" (ScatterND): input 1 "indices" holds the index 7 (tuple 0) for '
                 'axis 0 of input 0 "n" f32[4,3], which has size 4')),
    Case("string_input_identity", "issue 36 W1: Identity of a string input compiled",
         writer(lambda: string_model("identity")),
         refused('graph input "x" is a string tensor (string[2])', STRING_REFUSED)),
    Case("string_gather", "issue 36 W1: Gather from a string table compiled",
         writer(lambda: string_model("gather")),
         refused('node "lookup" (Gather) input 0 "words" is a string tensor', STRING_REFUSED)),
    Case("string_concat", "issue 36 W1: Concat of strings compiled",
         writer(lambda: string_model("concat")),
         refused('node "join" (Concat) input 0 "words" is a string tensor', STRING_REFUSED)),
    Case("string_initializer_output", "issue 36 W1: a string initializer as the output compiled",
         writer(lambda: string_model("initializer_output")),
         refused('graph output "words" is a string tensor (string[3])', STRING_REFUSED)),
    Case("cast_to_string", "issue 36 W1: Cast to string compiled",
         writer(lambda: string_model("cast")),
         refused('node "to_text" (Cast) output 0 "y" is a string tensor (string[2])',
                 STRING_REFUSED)),
    Case("self_recursive_function", "issue 36 W1: a function that calls itself compiled",
         writer(recursive_function),
         refused('model-local function "cust.rec" calls itself (1 call: "cust.rec" -> '
                 '"cust.rec"); a function cannot be recursive')),
    # W2: each of these was "output shape depends on tensor values".
    Case("reshape_minus_one_beside_copied_zero",
         "issue 36 W2: Reshape of f32[2,0] to [-1,0] was called data-dependent",
         writer(reshape([2, 0], [-1, 0])),
         refused('node "reshape" (Reshape): shape [-1,0] leaves dim 0 (-1) to infer, but the '
                 'other dims multiply to 0')),
    Case("reshape_zero_minus_one_of_empty",
         "issue 36 W2: Reshape of f32[0,3] to [0,-1] was called data-dependent",
         writer(reshape([0, 3], [0, -1])),
         refused("shape [0,-1] leaves dim 1 (-1) to infer")),
    Case("resize_scale_nan", "issue 36 W2: Resize with a NaN scale was called data-dependent",
         writer(resize(scales=[1, 1, float("nan"), 1])),
         refused("[1,1,nan,1] has the scale nan at index 2", NOT_DATA_DEPENDENT)),
    Case("resize_scale_infinite",
         "issue 36 W2: Resize with an infinite scale was called data-dependent",
         writer(resize(scales=[1, 1, float("inf"), 1])),
         refused("has the scale inf at index 2", NOT_DATA_DEPENDENT)),
    Case("resize_scale_negative",
         "issue 36 W2: Resize with a negative scale was called data-dependent",
         writer(resize(scales=[1, 1, -2, 1])),
         refused("has the scale -2 at index 2", NOT_DATA_DEPENDENT)),
    Case("resize_sizes_negative",
         "issue 36 W2: Resize with a negative size was called data-dependent",
         writer(resize(sizes=[1, 1, -8, 8])),
         refused('input 3 "sizes" [1,1,-8,8] has the size -8 at index 2; give sizes >= 0')),
    Case("pad_million_pads", "issue 36 W2: Pad with 1M pads was called data-dependent",
         writer(pad_million_pads),
         refused('node "pad" (Pad): input 1 "pads" i64[1000000] has 1000000 entries but 2 axes '
                 'are padded')),
    Case("conv_dilation_2_pow_62", "issue 36 W2: Conv with dilation 2^62 was called data-dependent",
         writer(conv_huge_dilation),
         refused('node "conv" (Conv): kernel_shape [3,3] with dilations [1,4611686018427387904] '
                 "spans more than 2^63 elements of spatial dim 1")),
    Case("sparse_constant", "issue 36 W2: a sparse Constant was called data-dependent",
         writer(sparse_constant),
         refused('node "constant" (Constant): attribute "sparse_value" holds a sparse tensor')),
    # W6: each message echoed the whole attribute (up to 20 MB on one line).
    Case("squeeze_million_axes", "issue 36 W6: Squeeze with 10M axes echoed them all",
         writer(squeeze_million_axes),
         refused("axes [0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,... (1000000 in all)] repeat an axis")),
    Case("transpose_million_perm", "issue 36 W6: Transpose with a perm of 1M echoed it all",
         writer(transpose_million_perm),
         refused("perm [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,... (1000000 in all)] is not a "
                 "permutation")),
    Case("einsum_megabyte_equation", "issue 36 W6: an Einsum equation of 1 MB echoed it all",
         writer(einsum_megabyte_equation),
         refused('"... (1048576 bytes in all) has the character')),
    # W10: --input-shape.
    Case("input_shape_shared_dim_conflict",
         "issue 36 W10: batch 2 vs 3 was a broadcast error at an internal Add",
         writer(shared_batch),
         refused('--input-shape attention_mask=3,16 and --input-shape input_ids=2,16 give the dim '
                 '"batch" the sizes 3 and 2',
                 flags=("--input-shape", "input_ids=2,16", "--input-shape", "attention_mask=3,16"))),
    Case("input_shape_static_dim",
         "issue 36 W10: --input-shape over a static dim blamed value_info",
         writer(static_batch),
         refused('--input-shape x=64,8 sets dim 0 of graph input "x" to 64, but the model declares '
                 "it [32,8], static 32 there; --input-shape only sets dynamic dims",
                 flags=("--input-shape", "x=64,8"))),
    Case("input_shape_empty_axis_gather",
         "issue 36 W10: a Gather from an empty axis said 'use indices in [0, -1]'",
         writer(first_token),
         refused('node "first" (Gather): takes index 0 of axis 1 of input 0 "x" f32[2,0,4], which '
                 "is empty (size 0)", flags=("--input-shape", "x=2,0,4"))),
    # W11: --passes, the model path, nesting.
    Case("passes_empty", "issue 36 W11: --passes '' ran the default pipeline silently",
         writer(relu), refused('--passes "" names no pass', flags=("--passes", ""))),
    Case("passes_only_commas", "issue 36 W11: --passes ,,, ran the default pipeline silently",
         writer(relu), refused('--passes ",,," names no pass', "--no-simplify",
                               flags=("--passes", ",,,"))),
    Case("model_is_directory", "issue 36 W11: a directory was 'no such model file'",
         model_is_directory, refused("is a directory, not a regular file")),
    Case("model_is_fifo", "issue 36 W11: a FIFO was 'no such model file'",
         model_is_fifo, refused("fifo.onnx: is a FIFO, not a regular file")),
    Case("model_is_link_to_dev_zero", "issue 36 W11: a link to /dev/zero was 'no such model file'",
         model_is_dev_zero, refused("zero.onnx: is a device, not a regular file")),
    Case("if_nested_200_deep", "issue 36 W11: If nested 200 deep was 'the file is truncated'",
         nested_ifs(200),
         refused("the model nests subgraphs 200 deep (If, Loop or Scan bodies inside each "
                 "other), more than the 31")),
    Case("if_nested_5000_deep", "issue 36 W11: If nested 5000 deep was 'the file is truncated'",
         nested_ifs(5000), refused("the model nests subgraphs 5000 deep")),
    Case("if_nested_31_deep", "issue 36 W11: 31 nested Ifs still parse and compile",
         nested_ifs(31), [Step(["{model}", "-o", "{out}"])]),
]
