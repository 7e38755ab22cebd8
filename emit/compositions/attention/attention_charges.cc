// The attention composition's charges (Composition<AttentionPlan>::charge,
// emit/compositions/composition.h).
#include <optional>

#include "emit/compositions/charges.h"

namespace stitch::emit {

// The core's GEMMs from shared tiles (on CUDA cores: attention_macs; none on tensor
// cores); the prologue's recomputed per read, one output per thread: each lane walks
// its share of those dot products one load after another, two loads per multiply-add.
void Composition<AttentionPlan>::charge(const ChargeContext& context, const AttentionPlan& plan,
                                        Charges* shape) {
  double recomputed_macs = 0;  // the prologue's, over the launch
  for (ir::NodeId id : context.schedule.boundary.ordered_nodes) {
    const std::optional<double> macs = gemm_macs(context.graph, id);
    if (!macs) continue;
    const bool core = id == plan.core.scores_gemm || id == plan.core.output_gemm;
    if (!core) {
      recomputed_macs += *macs * static_cast<double>(plan.recompute);
    } else if (!plan.tensor_cores) {
      shape->attention_macs += *macs;
    }
  }
  shape->thread_gemm_macs += recomputed_macs;
  if (recomputed_macs > 0 && context.lanes > 0) {
    shape->load_chain = 2 * recomputed_macs / context.lanes;
  }
}

}  // namespace stitch::emit
