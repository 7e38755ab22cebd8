// The cost model: M(V), the score of a fusion pattern and kernel/plan estimates.
//
// ## M(V) (FusionStitching 4.3, Fig. 4)
// memory_time_us(V) = V / bw(V) * 1e6, where bw interpolates the profile's bandwidth
// curve linearly in log(bytes): between points (b0, w0) and (b1, w1),
//   bw(V) = w0 + (w1 - w0) * (ln V - ln b0) / (ln b1 - ln b0);
// below the first point bw = w0, above the last bw = w_last (clamped); M(V <= 0) = 0.
//
// ## Score f(P) = Σ_n M(V_n) - M(Σ_n V_n - V_saved) + (N - 1) * phi - M(recompute_bytes)
// The memory term is the DRAM time the pattern saves: its launching nodes n as kernels
// of their own, each moving V_n (estimate_group's bytes of {n}), less the fused kernel,
// which moves what they moved less V_saved. FusionStitching writes it M(V_saved); with a
// linear M the two agree, but the curve has a floor (a small transfer costs about as
// much as none: 1.6 us below 256 KB on an H100), which every removed kernel saves,
// and M(V_saved) credits it once per pattern. With graph-replay phi (2.7 us instead of
// 5) that left fusions unscored: bert planned 17 launches instead of 11, plans 6-11%
// slower than the host plans replayed (docs/cost-model.md).
// The planner's objective, the sum of the scores of disjoint patterns, is then exactly
// estimate_plan's memory and launch time saved.
// N counts the nodes of P that launch work: every node except View ops (Reshape,
// Flatten, Squeeze, Unsqueeze, Identity: no data movement) and Constant. A View node
// inside P is transparent: reading its output is reading its data input (slot 0).
// A "tensor" below is such an alias root. bytes(t) = elements * dtype size.
//  1. A tensor produced inside P (by a launching node) and read by k >= 1 distinct
//     launching nodes of P saves k * bytes(t) reads; if nothing outside P reads it
//     and it is no graph output it also saves its write: (k + 1) * bytes(t).
//  2. A tensor from outside P (graph input, initializer, Constant, or produced
//     outside) read by k distinct launching nodes of P is read once instead of k
//     times: (k - 1) * bytes(t) (packing patterns sharing an input).
//  V_saved is the sum (Σ_n V_n - V_saved is the fused kernel's bytes). phi is launch_phi(profile)
//  (the launch mode's) unless options.launch_latency_us_override >= 0.
//
// One-to-many dependencies (AStitch 2.3.1). Our code generator stitches them with
// block composition through shared memory, not thread-local recomputation:
//  - A reduction R of P whose output is read inside P by a launching node with more
//    output elements than R (the broadcast back, e.g. Sub(x, ReduceMax(x))) needs
//    shared memory. Row reduction: a block owns one row and stages it, so it adds
//    row_length * dtype_size(R's input) with row_length = input elements / output
//    elements. Column or all reduction: every block needs the whole result, so it
//    adds output elements * dtype_size(R's output).
//  - A non-reduction op X of P (elementwise, broadcast, injective) with no
//    reduction of P among its ancestors inside P, whose output is read inside P by a
//    launching node with more elements (e.g. Exp of a [1,N] bias added to [M,N]),
//    is recomputed per consumer element: recompute_bytes += (E_large - E_X) *
//    cost(X) * dtype_size(X's output), E_large the largest such reader's output
//    elements, cost(X) = 4 for transcendental ops (Exp, Log, Tanh, Sigmoid, Erf,
//    Pow, Sqrt, Reciprocal, Sin, Cos, Softplus, ...), else 1 ("flops-equivalent
//    bytes": one extra operation costs as much as moving one element). An op over the
//    small shape that depends on a reduction of P is evaluated once per block right
//    after that reduction (its value is already on chip), so it costs nothing extra.
//    Compound reductions (Softmax, LayerNormalization, ...) have as many output as
//    input elements and add no staging here: the simplification pipeline opens them
//    before fusion.
//
// Infeasible patterns get feasible = false, score_us = -1 and a reason, checked in
// this order: more than options.max_nodes_per_kernel nodes (every op of a group is an
// inlined index function of its operands, and nvcc's time grows faster than linearly
// with a chain of them: 500 ops 3 s, 1000 ops 10 s, 5000 ops over 6 minutes per
// architecture; the bundled models' largest group has 385 nodes); a node whose input
// or output shape or dtype size is unknown, or a
// reduction whose axes are unknown; an Opaque op (except Constant) or Conv; a GEMM
// (MatMul, Gemm) above 64x64x64 = 262144 multiply-adds per batch (m*n*k; a fused
// kernel holds its tiles in shared memory, bigger ones are library calls) unless it
// belongs to an attention core (ir/core/attention.h; both head dims at most
// options.max_attention_head_dim) that P holds whole (the
// attention composition tiles it over the keys; the core's reductions add no
// staging); more
// reductions than options.max_reductions_per_kernel; a column or all reduction
// together with a row reduction whose input shape differs (no single thread mapping
// serves both); shared memory over profile.shared_memory_per_block_optin; kernel
// parameters over options.max_kernel_parameter_bytes, counted as 8 bytes per
// distinct tensor P reads from outside or writes for outside (Constant outputs
// excluded: they are baked into the kernel) plus 8 bytes per dim of each distinct
// shape among them. A pattern of one node scores 0 (feasible, nothing saved).
//
// ## Worked example (test profile: curve (1 KiB, 1 GB/s), (1 MiB, 100 GB/s),
// (1 GiB, 1000 GB/s), phi = 5 us)
// P = {t = Add(x, y), z = Relu(t)}, f32[1024,1024], z a graph output. N = 2;
// t (4 MiB) is produced and read only inside P: V_saved = 4 MiB write + 4 MiB read
// = 8388608 bytes. Alone, Add moves 12 MiB and Relu 8 MiB; fused, x, y, z = 12 MiB.
// The memory term is M(12 MiB) + M(8 MiB) - M(12 MiB) = M(8 MiB); bw(8 MiB) = 100e9 +
// 900e9 * ln(8)/ln(1024) = 370e9 B/s, so M = 8388608 / 370e9 s = 22.6719 us and
// f(P) = 22.6719 + 5 = 27.6719 us.
// Softmax over rows of x: f32[256,1024] = {m = ReduceMax(x), d = Sub(x, m),
// e = Exp(d), s = ReduceSum(e), y = Div(e, s)}: two row reductions each read back
// over [256,1024], so shared memory = 2 * 1024 * 4 = 8192 bytes. V_saved: m, s
// (1 KiB each) written + read once = 4096; d (1 MiB) written + read once = 2 MiB;
// e written + read by ReduceSum and Div = 3 MiB; x read by ReduceMax and Sub, once
// now = 1 MiB; total 6295552 bytes. Alone the five move 1049600, 2098176, 2097152,
// 1049600 and 2098176 bytes (M: 10.4827, 11.0393, 11.0376, 10.4827, 11.0393 us), fused
// x and y (2 MiB, 11.0376 us): f(P) = 43.0441 + 4 * 5 = 63.0441 us (M(V_saved) + 4 phi
// would be 38.9208).
//
// ## Library-call epilogues (fusion/epilogue.h)
// score_epilogue(C) = Σ_n M(V_n) - M(Σ_n V_n - V_saved) + (N - 1) * phi for a chain C = L -> e1 ->
// ... -> ek of a cuBLASLt/cuDNN call L and the epilogue ops it absorbs (N = k + 1). Every output
// but the last's is an intermediate the library call keeps in registers: it is neither written by
// its producer nor read by its consumers (all in C; two for swish's v, read by its Sigmoid and its
// Mul), so V_saved = sum of bytes(intermediate) * (1 + its reads). The epilogue's own operands
// (bias, residual z) are read either way and save nothing. Example (test profile above): MatMul
// f32[1024,512] x f32[512,1024] -> Add(bias f32[1024]) -> Relu: two 4 MiB intermediates, V_saved =
// 16 MiB. Alone the three move 8 MiB, 8 MiB + 4 KiB and 8 MiB; the chain 8 MiB + 4 KiB: f = 2 * M(8
// MiB) + 2 * 5 = 2 * 22.6719 + 10 = 55.3438 us.
//
// ## Kernel and plan estimates
// estimate_group: bytes = tensors the group reads from outside (once each) + tensors
// it writes that are read outside or are graph outputs; flops: elementwise 1 per
// output element (transcendental 4), Broadcast/Injective/View 0, reduction 1 per
// input element (compound reductions 4), MatMul/Gemm 2*m*n*k per batch (+ m*n for
// Gemm's C), Conv 2 * output elements * (weight elements / output channels),
// Opaque 0. time = max(M(bytes), gathered bytes / L2 bandwidth, sum of flops / peak)
// + phi (gathered bytes: the outputs of Gather and GatherElements, each element read
// from L2 however small its table), with the fp16 peak
// for f16/bf16 outputs and the fp32 peak otherwise; a group without launching
// nodes takes 0. estimate_plan sums single-node kernels (before) against the
// groups plus the remaining launching nodes alone (after).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "artifact/kernel_charges.h"
#include "cost_model/device_profile.h"
#include "cost_model/kernel_time.h"
#include "ir/core/graph.h"

namespace stitch::cost_model {

// Largest GEMM (multiply-adds per batch, m*n*k) a fused kernel holds: 64x64x64.
// Bigger GEMMs are library calls; fusion/partition uses the same limit.
inline constexpr int64_t kMaxFusedGemmMultiplyAdds = 64 * 64 * 64;

// M(V): microseconds to move `bytes` through DRAM, log-linear interpolation of the
// curve (time = bytes / interpolated bandwidth; below/above the curve: clamp the
// bandwidth).
double memory_time_us(const DeviceProfile& profile, double bytes);

struct ScoreOptions {
  int max_nodes_per_kernel = 512;
  int max_reductions_per_kernel = 4;
  int64_t max_kernel_parameter_bytes = 4096;
  double launch_latency_us_override = -1;
  // What the planner chooses to fuse, which is fusion's policy (fusion/fusion_policy.h,
  // fusion::with_fusion_policy sets both): a stencil over this many input channels per
  // group is infeasible (ir::stencil_refusal), and only attention cores with both head
  // dims at most this large exempt their GEMMs from kMaxFusedGemmMultiplyAdds. No
  // limit unless set.
  int64_t max_stencil_channels_per_group = std::numeric_limits<int64_t>::max();
  int64_t max_attention_head_dim = std::numeric_limits<int64_t>::max();
};

struct PatternScore {
  bool feasible = false;
  std::string reason;  // why infeasible
  double score_us = 0;
  int64_t bytes_saved = 0;
  int64_t recompute_bytes = 0;
  int64_t shared_memory_bytes = 0;
  int num_kernels_replaced = 0;  // N: the launching nodes of the pattern
};

// True for nodes that run as a kernel of their own: not View ops, not Constant.
bool launches_work(const ir::Node& node);

// f(P) = Σ M(V_n) - M(fused bytes) + (N-1)*phi - recomputation cost; N counts nodes that launch
// work (View ops and Constant excluded). Negative score with a reason when
// infeasible. Precondition: `nodes` are live, distinct nodes of `graph`.
// One call builds a PatternScorer (its setup is linear in the graph's capacity);
// to score many patterns of one graph, keep a PatternScorer.
PatternScore score_pattern(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes,
                           const DeviceProfile& profile, const ScoreOptions& options);

// score_pattern for many patterns of one graph (candidate generation scores ~10
// patterns per graph node). What a score needs about a node (op kind, whether it
// launches work, its reduction layout, whether its shapes are known, its largest
// output) is computed on the node's first use and kept; the per-pattern
// bookkeeping (membership, distinct readers, external inputs, kernel parameters,
// the order for one-to-many dependencies) lives in arrays indexed by node and
// value id that a new epoch stamp clears, so a score allocates nothing but its
// reason. score(nodes) == score_pattern(graph, nodes, profile, options), doubles
// bit for bit: the same integer byte counts go through the same final formula.
// The scorer copies the profile and options and refers to the graph, which must
// outlive it and not change while it lives. Not thread-safe (shared scratch).
class PatternScorer {
 public:
  PatternScorer(const ir::Graph& graph, const DeviceProfile& profile, const ScoreOptions& options);
  ~PatternScorer();
  PatternScorer(const PatternScorer&) = delete;
  PatternScorer& operator=(const PatternScorer&) = delete;

  // Precondition as score_pattern's.
  PatternScore score(const std::vector<ir::NodeId>& nodes);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// f(C) of a library call and its epilogue (see "Library-call epilogues"); `chain`
// is in data order, the library call first. Precondition: every chain node's output
// but the last node's is read only by chain nodes and is no graph output.
// What score_epilogue adds per absorbed op to break ties with a generated kernel that
// would compute the same op (a Clip fused into the depthwise stencil after the conv
// instead of into the conv's epilogue: the same kernels, the same bytes). The library
// applies the op to its float32 accumulator before the output is rounded, where the
// generated kernel reads the rounded output back; at equal estimated time, the plan
// that rounds once wins. 10 ns: below what the bandwidth curve resolves (moving a bias
// vector from the library call's bytes to the generated kernel's changes M by about
// 2 ns), far below a launch or any transfer the model tells apart.
inline constexpr double kEpilogueTieBreakUs = 0.01;
// What score_pattern subtracts per Transpose of the pattern that moves the innermost
// axis of a tensor read from outside the pattern (a channels-last LayerNorm reading a
// depthwise conv's NCHW output: each lane of a row reads its own sector). Fused with
// the Transpose's producer instead, the kernel stages tiles and writes them where they
// land; the two plans move the same bytes, so at launch-bound sizes they tie, and the
// bandwidth curve has no term for sectors (docs/cost-model.md). 10 ns, as above.
inline constexpr double kStridedReadTieBreakUs = 0.01;
PatternScore score_epilogue(const ir::Graph& graph, const std::vector<ir::NodeId>& chain,
                            const DeviceProfile& profile, const ScoreOptions& options);

// What the code generator makes of a group, as far as the analytic estimate charges
// it: the counts of artifact/kernel_charges.h, which emit::kernel_shape fills from the
// group's schedule and kernels.json records for the kernel as emitted, so the profile
// prices the same counts later (docs/cost-model.md, "Composition charges").
using KernelShape = artifact::KernelCharges;

// The constants that turn a KernelShape into time (instructions per multiply-add of
// each GEMM form, the share of each load chain a warp waits out, the issue rate) are the
// device profile's calibration block (device_profile.h, Calibration), each with the run
// that fitted it: the emulated model reads the same block (docs/cost-model.md,
// "Composition charges" and "Calibration").

// Issue time of the shape's generated GEMMs: the multiply-adds of each form times the
// calibration's instructions per multiply-add, / 32 lanes / (warp_schedulers_per_sm x
// SMs x clock). Under profile.products tf32 and fp32x3 the tiled MatMul runs on tensor
// cores (tiled_gemm_instructions_per_mac), and under tf32 the CUDA-core forms add the
// two operand roundings.
double cuda_core_gemm_us(const KernelShape& shape, const DeviceProfile& profile);

// Issued instructions per multiply-add and lane of the tiled MatMul on TF32 tensor
// cores, counted in its emitted loop (emit/compositions/tiled_gemm/tiled_gemm_writer.cc,
// one mma.sync m16n8k8 = 1024 multiply-adds per warp): 6 shared loads, 6 cvt.rna, 1
// mma, about 6 address and loop instructions = 19 warp instructions, x 32 lanes / 1024;
// fp32x3: 6 loads, 12 cvt, 6 subtractions, 3 mma, about 6 more = 33. Not fitted on a GPU
// yet (the tensor pipe itself, 947 multiply-adds per SM and clock on an H100 in TF32,
// is not the limit at these counts).
inline constexpr double kTf32TiledInstructionsPerMac = 19.0 * 32 / 1024;
inline constexpr double kFloat32x3TiledInstructionsPerMac = 33.0 * 32 / 1024;
// bf16/fp16 (the rewritten model's half-precision MatMuls): one mma.sync m16n8k16 =
// 2048 multiply-adds per warp for 12 shared loads, 12 conversions and packs, the mma
// and about 6 more = 31 warp instructions. (A float32 MatMul the policy kept is charged
// the same, though it runs on CUDA cores: rare, and an underestimate.)
inline constexpr double kHalfTiledInstructionsPerMac = 31.0 * 32 / 2048;
// The tiled MatMul's instructions per multiply-add and lane at profile.products.
double tiled_gemm_instructions_per_mac(const DeviceProfile& profile);

// Kernel time of a group run as one kernel, the analytic way to fill a KernelTime
// (kernel_time.h): plain = max(bytes moved / bandwidth via M, flops / peak) + phi.
// With the group's KernelShape, the composition's costs the emulated profile sees are
// charged too: phi + max(M(bytes + 2 x workspace bytes), flops / peak, CUDA-core GEMM
// issue time, each load chain x its calibrated load share x global_load_latency_ns) +
// grid barriers x grid_barrier_us, each part named in time.charges, and
// time.charge_us() is what they add. Without launching nodes, time is all 0.
struct GroupCost {
  int64_t bytes = 0;
  double flops = 0;
  KernelTime time;
};
GroupCost estimate_group(const ir::Graph& graph, const std::vector<ir::NodeId>& nodes,
                         const DeviceProfile& profile, const KernelShape* shape = nullptr);

// estimate_group's KernelTime of a kernel moving `bytes` through DRAM and
// `gathered_bytes` through L2 (the outputs of its gathers) and computing for
// `compute_us` at peak, with `shape`'s charges when given (analytic_time.cc).
KernelTime analytic_kernel_time(int64_t bytes, double gathered_bytes, double compute_us,
                                const KernelShape* shape, const DeviceProfile& profile);

struct PlanEstimate {
  int64_t bytes_before = 0;
  int64_t bytes_after = 0;
  double time_before_us = 0;
  double time_after_us = 0;
  int64_t kernels_before = 0;
  int64_t kernels_after = 0;
};
// before: every launching node alone; after: `groups` as kernels plus every other
// launching node alone. Precondition: groups are disjoint.
PlanEstimate estimate_plan(const ir::Graph& graph,
                           const std::vector<std::vector<ir::NodeId>>& groups,
                           const DeviceProfile& profile);

}  // namespace stitch::cost_model
