// One kernel launch's time, term by term (see kernel_time.h).
#include "cost_model/kernel_time.h"

#include <algorithm>
#include <iterator>

namespace stitch::cost_model {

std::string_view bound_name(Bound bound) {
  switch (bound) {
    case Bound::kMemory:
      return "memory";
    case Bound::kCompute:
      return "compute";
    case Bound::kShared:
      return "shared";
    case Bound::kBarrier:
      return "barrier";
    case Bound::kLaunch:
      return "launch";
    case Bound::kLibrary:
      return "library";
    case Bound::kLatency:
      return "latency";
  }
  return "?";
}

Bound largest_term(const KernelTime& time) {
  struct Term {
    double us;
    Bound bound;
  };
  const Term terms[] = {
      {time.launch_us, Bound::kLaunch},   {std::max(time.dram_us, time.l2_us), Bound::kMemory},
      {time.compute_us, Bound::kCompute}, {time.shared_us, Bound::kShared},
      {time.latency_us, Bound::kLatency}, {time.sync_us, Bound::kBarrier}};
  return std::max_element(std::begin(terms), std::end(terms),
                          [](const Term& a, const Term& b) { return a.us < b.us; })
      ->bound;
}

}  // namespace stitch::cost_model
