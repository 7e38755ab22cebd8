// The composition rules in the order of emit/schedule.h's algorithm (see
// composition_rule.h). A new composition adds its rule here, where it belongs in the
// order, and its plan type to CompositionPlan (composition_plan.h).
#include "emit/compositions/attention/attention_planner.h"
#include "emit/compositions/composition_rule.h"
#include "emit/compositions/global/stage_planner.h"
#include "emit/compositions/rows/row_planner.h"
#include "emit/compositions/tiled_gemm/tiled_gemm_planner.h"
#include "emit/compositions/transpose/transpose_planner.h"

namespace stitch::emit {

const std::vector<CompositionRule>& composition_rules() {
  static const std::vector<CompositionRule> kRules = {try_attention, try_transpose, try_rows,
                                                      try_tiled_gemm, try_stages};
  return kRules;
}

}  // namespace stitch::emit
