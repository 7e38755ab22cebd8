// The additive masks of attention cores clamped into the reduced type's range
// (ir/passes/attention_mask_clamp.h).
#include "ir/passes/attention_mask_clamp.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "ir/core/attention.h"
#include "ir/passes/reduced_precision.h"

namespace stitch::ir {
namespace {

class MaskClamper {
 public:
  MaskClamper(Model& model, const MaskClampOptions& options)
      : graph_(model.graph), options_(options), limit_(range_limit(options.reduced)) {}

  std::vector<ClampedMask> run() {
    const std::vector<AttentionCore> cores = find_attention_cores(graph_);
    for (const AttentionCore& core : cores) {
      for (NodeId id : core.score_chain) chain_ops_.insert(id);
    }
    for (const AttentionCore& core : cores) {
      if (core.dtype != DType::kFloat32) continue;
      ValueId chain = core.scores;
      for (NodeId id : core.score_chain) {
        const std::string& op = graph_.node(id).op_type;
        for (size_t slot = 0; slot < graph_.node(id).inputs.size(); ++slot) {
          const ValueId input = graph_.node(id).inputs[slot];
          if (input == kNoId || input == chain || (op != "Add" && op != "Where")) continue;
          if (std::optional<ValueId> clamped = clamped_of(input)) {
            graph_.set_input(id, static_cast<int32_t>(slot), *clamped);
            ++clamps_[index_.at(input).first].readers;
          }
        }
        chain = graph_.node(id).outputs[0];
      }
    }
    return std::move(clamps_);
  }

 private:
  // The clamped value the cores read instead of `mask`, or nullopt when it is in range
  // or not a mask (float32 with only negative values out of range).
  std::optional<ValueId> clamped_of(ValueId mask) {
    if (auto found = index_.find(mask); found != index_.end()) return found->second.second;
    // Copies: adding values below may move the graph's value table.
    const std::string name = graph_.value(mask).name;
    const TensorType type = graph_.value(mask).type;
    const std::shared_ptr<const Tensor> constant = graph_.value(mask).constant;
    if (type.dtype != DType::kFloat32) return std::nullopt;
    const double to = -limit_ / 2;
    ClampedMask clamp;
    clamp.value = name;
    clamp.clamped_to = to;
    ValueId clamped = kNoId;
    if (constant != nullptr) {
      const Tensor& tensor = *constant;
      std::vector<double> values(static_cast<size_t>(tensor.num_elements()));
      double lowest = 0;
      for (int64_t i = 0; i < tensor.num_elements(); ++i) {
        const double x = tensor.float_at(i);
        if (!(x <= limit_)) return std::nullopt;  // a large positive value (or NaN)
        lowest = std::min(lowest, x);
        values[static_cast<size_t>(i)] = std::max(x, to);
      }
      if (!(lowest < -limit_)) return std::nullopt;
      clamp.lowest = lowest;
      clamped = graph_.add_initializer(graph_.unique_value_name(name + "_clamped"),
                                       Tensor::from_doubles(DType::kFloat32, tensor.dims, values));
    } else {
      auto abs = options_.max_abs.find(mask);
      auto largest = options_.max_value.find(mask);
      if (abs == options_.max_abs.end() || largest == options_.max_value.end()) {
        return std::nullopt;
      }
      if (!(abs->second > limit_) || !(largest->second <= limit_)) return std::nullopt;
      clamp.lowest = -abs->second;
      if (std::optional<ValueId> scaled = scale_clamped(mask, to)) {
        clamped = *scaled;
      } else {
        const ValueId bound =
            graph_.add_initializer(graph_.unique_value_name(name + "_bound"),
                                   Tensor::from_doubles(DType::kFloat32, {}, {to}));
        clamped = graph_.add_value(graph_.unique_value_name(name + "_clamped"), type);
        graph_.add_node("Max", {mask, bound}, {clamped}, "", graph_.value(clamped).name);
      }
    }
    clamp.clamped = graph_.value(clamped).name;
    index_[mask] = {clamps_.size(), clamped};
    clamps_.push_back(std::move(clamp));
    return clamped;
  }

  // The common mask form `mask = Mul(x, c)` with x in [-1, 1] (Hugging Face's
  // (1 - attention_mask) * min) and c a scalar below -limit: when only core chain ops
  // read the mask, c becomes `to` in place (x * to lies in [to, -to]; for the 0/1 x of
  // a mask it equals Max(x * c, to)), and the mask's kernel needs no clamp op. The
  // mask itself, or nullopt when the form does not apply.
  std::optional<ValueId> scale_clamped(ValueId mask, double to) {
    const Value& value = graph_.value(mask);
    if (value.producer == kNoId || value.is_graph_output) return std::nullopt;
    const NodeId producer = value.producer;
    const Node& mul = graph_.node(producer);
    if (mul.op_type != "Mul" || mul.inputs.size() != 2) return std::nullopt;
    for (const Use& use : value.users) {
      if (!chain_ops_.count(use.node)) return std::nullopt;
    }
    for (int32_t slot = 0; slot < 2; ++slot) {
      const Value& scale = graph_.value(mul.inputs[static_cast<size_t>(slot)]);
      auto range = options_.max_abs.find(mul.inputs[static_cast<size_t>(1 - slot)]);
      if (scale.constant == nullptr || scale.constant->num_elements() != 1) continue;
      if (range == options_.max_abs.end() || !(range->second <= 1)) continue;
      if (scale.type.dtype != DType::kFloat32 || !(scale.constant->float_at(0) < -limit_)) continue;
      // Copies first: adding the initializer may move the value table.
      const std::string name = scale.name + "_clamped";
      const std::vector<int64_t> dims = scale.constant->dims;
      const ValueId clamped_scale = graph_.add_initializer(
          graph_.unique_value_name(name), Tensor::from_doubles(DType::kFloat32, dims, {to}));
      graph_.set_input(producer, slot, clamped_scale);
      return mask;
    }
    return std::nullopt;
  }

  Graph& graph_;
  const MaskClampOptions& options_;
  const double limit_;
  std::vector<ClampedMask> clamps_;
  std::set<NodeId> chain_ops_;                           // the score chains' ops of every core
  std::map<ValueId, std::pair<size_t, ValueId>> index_;  // a mask -> its entry, clamped value
};

}  // namespace

Result<std::vector<ClampedMask>> clamp_attention_masks(Model& model,
                                                       const MaskClampOptions& options) {
  if (options.reduced != DType::kBFloat16 && options.reduced != DType::kFloat16) {
    return Status::internal("clamp_attention_masks: the reduced type must be bf16 or fp16");
  }
  return MaskClamper(model, options).run();
}

}  // namespace stitch::ir
