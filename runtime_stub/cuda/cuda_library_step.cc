// A library step's call and epilogue, bound to the step's inputs.
#include "runtime_stub/cuda/cuda_library_step.h"

#include <optional>

#include "artifact/library_call.h"

namespace stitch::runtime::cuda {
namespace {

// A bias for `output`: its dims, right-aligned, are 1 except the channel axis, which
// equals the output's; or, for the op's own bias input (Conv's B, whose one dim is the
// output channel whatever the rank), a vector of the output's channels. Its data is
// then channel-contiguous. The plan only ever binds such a bias; checked because the
// library reads one value per channel.
bool is_channel_vector(const ir::TensorType& operand, const ir::TensorType& output,
                       size_t channel_axis, bool own_bias) {
  if (operand.dtype != output.dtype || !operand.is_static() ||
      operand.dims.size() > output.dims.size()) {
    return false;
  }
  if (own_bias && operand.dims.size() == 1) return operand.dims[0] == output.dims[channel_axis];
  size_t offset = output.dims.size() - operand.dims.size();
  for (size_t axis = 0; axis < output.dims.size(); ++axis) {
    int64_t dim = axis >= offset ? operand.dims[axis - offset] : 1;
    if (dim != (axis == channel_axis ? output.dims[axis] : 1)) return false;
  }
  return true;
}

// Checks the library op of the step's bound epilogue: an ONNX op with one output
// whose operands are all step inputs; ok or a refusal saying why not.
Status check_library_op(const Step& step, const ir::Node& op) {
  const ir::Graph& body = step.body.graph;
  if (!op.domain.empty()) return refusal(op.display_name() + " is not an ONNX op");
  for (size_t slot = 1; slot < op.outputs.size(); ++slot) {
    if (op.outputs[slot] != ir::kNoId) {
      return refusal(op.display_name() + " has a second output (e.g. MaxPool's Indices), " +
                     "which the library call does not produce");
    }
  }
  for (ir::ValueId input : op.inputs) {
    if (input != ir::kNoId && step_input_index(step, body, input) < 0) {
      return refusal(op.display_name() + " reads \"" + body.value(input).name +
                     "\", which is not an input of the step");
    }
  }
  return Status::ok();
}

}  // namespace

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text + "]";
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t result = 1;
  for (int64_t dim : dims) result *= dim;
  return result;
}

int step_input_index(const Step& step, const ir::Graph& body, ir::ValueId value) {
  if (value == ir::kNoId || !body.value(value).is_graph_input) return -1;
  const std::string& name = body.value(value).name;
  for (size_t i = 0; i < step.body_inputs.size() && i < step.inputs.size(); ++i) {
    if (step.inputs[i].value != ir::kNoId && step.body_inputs[i] == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

Result<LibraryChain> read_library_chain(const Step& step, bool channel_last) {
  const ir::Graph& body = step.body.graph;
  if (step.body_inputs.size() != step.inputs.size() ||
      step.body_outputs.size() != step.outputs.size()) {
    return Status::internal("step " + step.name + ": body_inputs/body_outputs do not match its " +
                            "inputs/outputs");
  }
  if (step.outputs.size() != 1) {
    return refusal("the step has " + std::to_string(step.outputs.size()) +
                   " outputs; a library call writes one");
  }
  if (!step.epilogue) {
    return refusal(
        std::string("the call has no library form (a Gemm's C that is neither a residual of ") +
        "the output's shape nor a bias along the last dim with beta 1)");
  }
  std::string why;
  std::optional<artifact::BoundEpilogue> bound =
      artifact::bind_epilogue(body, *step.epilogue, &why);
  if (!bound) return refusal(why);
  const ir::Node& op = body.node(bound->call);
  STITCH_RETURN_IF_ERROR(check_library_op(step, op));
  LibraryChain chain;
  chain.op = &op;
  chain.output = body.value(op.outputs[0]).type;
  if (!chain.output.is_static() || chain.output.dims.empty()) {
    return refusal(op.display_name() + "'s output " + ir::to_string(chain.output) +
                   " is a scalar or has no static shape");
  }
  const size_t channel_axis = channel_last ? chain.output.dims.size() - 1 : 1;
  if (channel_axis >= chain.output.dims.size()) {
    return refusal(op.display_name() + "'s output " + ir::to_string(chain.output) +
                   " has no channel dim");
  }
  if (body.value(bound->output).type != chain.output) {
    return refusal("the epilogue's output " + ir::to_string(body.value(bound->output).type) +
                   " does not keep the type " + ir::to_string(chain.output) + " of " +
                   op.display_name());
  }
  // Conv(X, W, B): B is per output channel (ONNX Conv); an Add's operand broadcasts.
  const ir::ValueId own_bias =
      op.op_type == "Conv" && op.inputs.size() > 2 ? op.inputs[2] : ir::kNoId;
  const std::vector<artifact::EpilogueOp>& ops = step.epilogue->ops;
  for (size_t i = 0; i < ops.size(); ++i) {
    ChainOp bound_op{ops[i], -1};
    const ir::ValueId operand = bound->operands[i];
    if (ops[i].reads_operand()) {
      bound_op.input = step_input_index(step, body, operand);
      const ir::TensorType& type = body.value(operand).type;
      const bool fits =
          ops[i] == artifact::EpilogueOp::kResidualAdd
              ? type == chain.output
              : is_channel_vector(type, chain.output, channel_axis, operand == own_bias);
      if (bound_op.input < 0 || !fits) {
        return refusal("the " + artifact::epilogue_op_name(ops[i]) + "'s operand " +
                       ir::to_string(type) + " is not a step input " +
                       (ops[i] == artifact::EpilogueOp::kResidualAdd
                            ? "of the output's type " + ir::to_string(chain.output)
                            : "with one value per channel of " + ir::to_string(chain.output)));
      }
      if (ops[i] == artifact::EpilogueOp::kBias && chain.bias_input < 0) {
        chain.bias_input = bound_op.input;
      }
      if (ops[i] == artifact::EpilogueOp::kResidualAdd && chain.residual_input < 0) {
        chain.residual_input = bound_op.input;
        chain.residual_scale = bound->residual_scale;
      }
    }
    chain.ops.push_back(bound_op);
  }
  chain.legacy = step.epilogue->legacy_form();
  chain.relu = bound->relu;
  if (body.value(bound->output).name != step.body_outputs[0]) {
    return refusal("the step's output is not the end of the op -> bias/residual -> Relu chain");
  }
  return chain;
}

}  // namespace stitch::runtime::cuda
