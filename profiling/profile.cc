#include "profiling/profile.h"

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <list>
#include <set>
#include <sstream>
#include <thread>

#include "cost_model/cost_model.h"
#include "emit/ptxas_stats.h"
#include "ir/core/dtype.h"
#include "profiling/cuda_tools.h"
#include "runtime_stub/executor.h"
#include "runtime_stub/host_backend.h"
#include "runtime_stub/kernel_library.h"
#include "support/private_files.h"
#include "support/subprocess.h"

namespace stitch::profiling {
namespace {

bool half_precision(const runtime::Step& step) {
  for (const runtime::StepTensor& output : step.outputs) {
    if (output.type.dtype == ir::DType::kFloat16 || output.type.dtype == ir::DType::kBFloat16) {
      return true;
    }
  }
  return false;
}

// The SASS of every kernel file the program launches, and ptxas's register counts.
struct KernelSass {
  std::vector<SassKernel> kernels;
  int registers = 0;
};

// Compiles the kernel files with nvcc -cubin -lineinfo (ptxas -v for the registers) as
// one unity translation unit per core (kernel_library.h, build_kernel_units: nvcc's
// and nvdisasm's cost is per process, 0.5 s each, not per kernel), reused on a rerun,
// and disassembles each cubin with nvdisasm -gi -hex (-hex: the control bits, whose
// scoreboards give the load rounds), kept beside it as CUBIN.sass for the reader (and
// for bench/profile_bundled.py's SASS gates); each function goes back to its kernel
// file by name (<kernel>_kernel). Errors name the tool and file.
Result<std::map<std::string, KernelSass>> kernel_sass(const runtime::Program& program,
                                                      const ProfileOptions& options,
                                                      const std::string& nvcc,
                                                      const std::string& nvdisasm) {
  const std::string arch = cost_model::sass_architecture(options.device);
  runtime::KernelLibraryRecipe recipe;
  recipe.compiler = nvcc;
  recipe.compile_flags = {"-arch=" + arch, "-lineinfo", "-Xptxas", "-v", "-I", program.kernels_dir};
  recipe.headers = {std::filesystem::path(program.kernels_dir) / "stitch_prelude.cuh"};
  recipe.build_dir = std::filesystem::path(program.kernels_dir) / "emu_counters_build";
  recipe.phase_flag = "-cubin";
  recipe.object_suffix = "." + arch + ".cubin";
  recipe.verbose = options.verbose;
  const size_t jobs = std::max(1u, std::thread::hardware_concurrency());
  STITCH_ASSIGN_OR_RETURN(std::vector<runtime::CompiledSource> units,
                          runtime::build_kernel_units(program, recipe, jobs));
  std::map<std::string, std::string> file_of_function;
  for (const runtime::Step& step : program.steps) {
    if (step.kind == runtime::StepKind::kKernel)
      file_of_function[step.kernel + "_kernel"] = step.kernel_file;
  }
  support::ProcessOptions disassemble;
  disassemble.timeout_seconds = 300;
  disassemble.max_captured_bytes = size_t{1} << 30;
  std::map<std::string, KernelSass> result;
  std::map<std::string, std::vector<emit::PtxasStats>> functions_of_file;
  // One nvdisasm per unit, as many at a time as there are cores.
  std::list<std::pair<size_t, support::Process>> running;
  size_t next = 0;
  while (next < units.size() || !running.empty()) {
    while (next < units.size() && running.size() < jobs) {
      running.emplace_back(
          next, support::Process::start(
                    {nvdisasm, "-gi", "-c", "-hex", units[next].output.string()}, disassemble));
      ++next;
    }
    auto finished = std::find_if(running.begin(), running.end(),
                                 [](auto& entry) { return entry.second.poll(); });
    if (finished == running.end()) {
      usleep(5000);
      continue;
    }
    const runtime::CompiledSource& unit = units[finished->first];
    const support::ProcessResult listed = finished->second.result();
    running.erase(finished);
    if (!listed.succeeded()) {
      return Status::internal("nvdisasm failed on " + unit.output.string() + " (" +
                              listed.failure() + "):\n" + listed.output.substr(0, 4000));
    }
    STITCH_RETURN_IF_ERROR(
        support::write_file_if_different(unit.output.string() + ".sass", listed.output));
    std::ifstream log(unit.log);
    std::stringstream ptxas;
    ptxas << log.rdbuf();
    STITCH_ASSIGN_OR_RETURN(std::vector<emit::PtxasStats> functions,
                            emit::parse_ptxas_output(ptxas.str()));
    for (emit::PtxasStats& function : functions) {
      auto file = file_of_function.find(function.function);
      if (file != file_of_function.end()) functions_of_file[file->second].push_back(function);
    }
    STITCH_ASSIGN_OR_RETURN(std::vector<SassKernel> kernels, parse_sass(listed.output));
    for (SassKernel& kernel : kernels) {
      auto file = file_of_function.find(kernel.name);
      if (file != file_of_function.end()) result[file->second].kernels.push_back(std::move(kernel));
    }
  }
  for (auto& [file, functions] : functions_of_file) {
    result[file].registers = emit::summarize_ptxas(functions).registers;
  }
  return result;
}

// Source locations of the counted access sites: addr2line -i on the counting library.
Result<std::map<uint64_t, AccessLocation>> site_locations(const std::string& library,
                                                          const std::set<uint64_t>& offsets) {
  const std::string addr2line = support::find_executable("addr2line");
  if (addr2line.empty()) return Status::unavailable("addr2line (binutils) was not found");
  std::vector<std::string> argv = {addr2line, "-i", "-a", "-e", library};
  for (uint64_t offset : offsets) {
    char text[32];
    // The return address follows the call: the call itself is one byte before.
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(offset - 1));
    argv.push_back(text);
  }
  support::ProcessOptions process;
  process.timeout_seconds = 300;
  process.max_captured_bytes = size_t{256} << 20;
  const support::ProcessResult result = support::run_process(argv, process);
  if (!result.succeeded()) {
    return Status::internal("addr2line failed (" + result.failure() + ")");
  }
  std::map<uint64_t, AccessLocation> shifted;
  for (auto& [address, location] : parse_addr2line(result.output)) shifted[address + 1] = location;
  return shifted;
}

}  // namespace

cost_model::GroupCost analytic_estimate(const runtime::Step& step,
                                        const cost_model::DeviceProfile& device) {
  const ir::Graph& graph = step.body.graph;
  const std::vector<ir::NodeId> nodes = graph.node_ids();
  if (nodes.empty()) return {};
  if (step.kind != runtime::StepKind::kKernel)
    return cost_model::estimate_group(graph, nodes, device);
  // The charges kernels.json recorded for the kernel as emitted (artifact/
  // kernel_charges.h), not a schedule built again here: with other options
  // (--no-stencil-tiles) that would cost code that was never emitted.
  const cost_model::KernelShape& shape = step.charges;
  return cost_model::estimate_group(graph, nodes, device, &shape);
}

Result<ProgramProfile> profile_program(const runtime::Program& program,
                                       const ProfileOptions& options) {
  ProgramProfile profile;
  profile.device = options.device.name;
  profile.launch_mode = std::string(cost_model::launch_mode_name(options.device.launch_mode));
  profile.launch_latency_us = cost_model::launch_phi(options.device);
  std::map<std::string, KernelSass> sass;
  std::map<std::string, int> registers = options.kernel_registers;
  if (!options.instructions) {
    profile.instructions_method = "not estimated (--no-instructions)";
  } else {
    STITCH_ASSIGN_OR_RETURN(const std::string nvcc, find_nvcc(options.nvcc));
    STITCH_ASSIGN_OR_RETURN(const std::string nvdisasm, find_nvdisasm(options.nvdisasm, nvcc));
    if (nvcc.empty() || nvdisasm.empty()) {
      profile.partial = true;
      profile.instructions_method =
          std::string("not estimated: ") + (nvcc.empty() ? "nvcc" : "nvdisasm") +
          " was not found, so no kernel has its compute or latency term (nvdisasm: "
          "scripts/setup.sh installs PyPI's nvidia-cuda-nvdisasm into the checkout's .venv; "
          "else --nvdisasm PATH or $STITCH_NVDISASM; docs/perf-model.md)";
    } else {
      STITCH_ASSIGN_OR_RETURN(sass, kernel_sass(program, options, nvcc, nvdisasm));
      profile.instructions_method =
          "SASS " + cost_model::sass_architecture(options.device) +
          " (nvcc -lineinfo, nvdisasm -gi -hex), " +
          "weighted by the emulated run's access counts; scoreboards for the latency term";
      for (const runtime::Step& step : program.steps) {
        if (step.kind == runtime::StepKind::kKernel && sass.count(step.kernel_file) &&
            !registers.count(step.kernel)) {
          registers[step.kernel] = sass.at(step.kernel_file).registers;
        }
      }
    }
  }
  std::map<size_t, StitchEmuCounters> counted;
  std::map<size_t, std::vector<StitchEmuSite>> counted_sites;
  std::string library;

  runtime::HostBackendOptions backend_options;
  backend_options.emulate = true;
  backend_options.cxx = options.cxx;
  backend_options.verbose = options.verbose;
  runtime::KernelCounterOptions counters;
  counters.limits.sm_count = static_cast<unsigned int>(options.device.sm_count);
  counters.limits.max_threads_per_sm = static_cast<unsigned int>(options.device.max_threads_per_sm);
  counters.limits.max_blocks_per_sm = static_cast<unsigned int>(options.device.max_blocks_per_sm);
  counters.limits.registers_per_sm = static_cast<unsigned int>(options.device.registers_per_sm);
  counters.limits.sample_blocks = options.sample_blocks;
  counters.limits.l1_bytes_per_sm = static_cast<unsigned int>(options.device.l1_bytes_per_sm);
  profile.sample_blocks = options.sample_blocks;
  counters.kernel_registers = registers;
  counters.on_step = [&](const runtime::Step& step, const StitchEmuCounters& c,
                         const std::vector<StitchEmuSite>& sites) {
    const auto index = static_cast<size_t>(&step - program.steps.data());
    counted[index] = c;
    counted_sites[index] = sites;
  };
  counters.on_library = [&](const std::string& path) { library = path; };
  backend_options.counters = counters;
  std::unique_ptr<runtime::Backend> backend = runtime::make_host_backend(backend_options);
  STITCH_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Executor> executor,
                          runtime::Executor::create(program, *backend));
  STITCH_RETURN_IF_ERROR(executor->run(runtime::random_inputs(program, options.seed)).status());
  std::map<uint64_t, AccessLocation> locations;
  if (!sass.empty()) {
    std::set<uint64_t> offsets;
    for (const auto& [index, sites] : counted_sites) {
      for (const StitchEmuSite& site : sites) offsets.insert(site.offset);
    }
    STITCH_ASSIGN_OR_RETURN(locations, site_locations(library, offsets));
  }

  for (size_t i = 0; i < program.steps.size(); ++i) {
    const runtime::Step& step = program.steps[i];
    if (step.kind == runtime::StepKind::kView) {
      ++profile.view_steps;
      continue;
    }
    if (step.kind == runtime::StepKind::kHost ||
        (step.kind == runtime::StepKind::kKernel && !counted.count(i))) {
      profile.host_steps.push_back(step.name);
      continue;
    }
    StepProfile s;
    s.step = i;
    s.node = step.name;
    s.op_type = step.op_type;
    for (const runtime::StepTensor& t : step.inputs) s.ideal_bytes += t.bytes;
    for (const runtime::StepTensor& t : step.outputs) s.ideal_bytes += t.bytes;
    const cost_model::GroupCost analytic = analytic_estimate(step, options.device);
    s.flops = analytic.flops;
    s.analytic_us = analytic.time.total_us;
    if (step.kind == runtime::StepKind::kKernel) {
      s.kind = "kernel";
      s.kernel = step.kernel;
      const ir::Attribute* composition =
          program.model.graph.node(step.node).find_attribute("composition");
      s.composition = composition != nullptr ? composition->s : "single op";
      auto found = registers.find(step.kernel);
      s.registers = found != registers.end() ? found->second : 0;
      s.counters = counted.at(i);
      if (s.counters.counted_blocks < s.counters.blocks) ++profile.sampled_launches;
      std::optional<cost_model::InstructionEstimate> instructions;
      if (auto kernel_sass = sass.find(step.kernel_file); kernel_sass != sass.end()) {
        std::map<AccessLocation, uint64_t> requests;
        for (const StitchEmuSite& site : counted_sites[i]) {
          auto location = locations.find(site.offset);
          if (location == locations.end()) continue;
          AccessLocation key = location->second;
          key.kind = static_cast<int>(site.kind);
          requests[key] += site.requests;
        }
        s.instructions =
            count_instructions(kernel_sass->second.kernels, requests, s.counters.warps);
        instructions = s.instructions->estimate;
      }
      s.estimate =
          cost_model::estimate_kernel(s.counters, instructions, s.registers, options.device);
    } else {
      s.kind = "library";
      s.kernel = std::string(artifact::library_name(step.library));
      s.composition = step.op_type;
      s.estimate = cost_model::estimate_library_call(s.flops, s.ideal_bytes, half_precision(step),
                                                     cost_model::library_gemm(step.body.graph),
                                                     options.device);
    }
    profile.total_estimated_us += s.estimate.total_us;
    profile.total_analytic_us += s.analytic_us;
    profile.steps.push_back(std::move(s));
  }
  return profile;
}

std::string sampling_text(const ProgramProfile& profile) {
  std::string text =
      "emulated: every kernel ran once in the CUDA emulation with hardware counters, at its "
      "real shapes on random inputs; ";
  if (profile.sampled_launches == 0) {
    text += "every block's requests counted";
  } else {
    text += std::to_string(profile.sampled_launches) + " launches of more than " +
            std::to_string(profile.sample_blocks) +
            " blocks had the requests of a sample of their blocks (runs of 32, spread over the "
            "grid) counted and scaled (--sample-blocks; unique bytes, barriers and atomics of "
            "every block)";
  }
  return text + "; estimates by docs/perf-model.md";
}

std::string profile_json(const ProgramProfile& profile) {
  using json = nlohmann::ordered_json;
  json root;
  root["schema"] = "stitchopt.profile/1";
  root["device"] = profile.device;
  root["launch_mode"] = profile.launch_mode;
  root["launch_latency_us"] = profile.launch_latency_us;
  root["method"] = sampling_text(profile);
  root["instructions"] = profile.instructions_method;
  root["partial"] = profile.partial;
  root["total_estimated_us"] = profile.total_estimated_us;
  root["total_analytic_us"] = profile.total_analytic_us;
  json kernels = json::array();
  for (const StepProfile& s : profile.steps) {
    const cost_model::KernelEstimate& e = s.estimate;
    json k;
    k["kernel"] = s.kernel;
    k["kind"] = s.kind;
    k["node"] = s.node;
    k["op_type"] = s.op_type;
    k["composition"] = s.composition;
    k["dram_bytes"] = e.dram_bytes;
    k["ideal_bytes"] = s.ideal_bytes;
    k["requested_bytes"] = e.requested_bytes;
    k["l2_bytes"] = e.l2_bytes;
    k["sector_efficiency"] = e.sector_efficiency;
    k["redundancy"] = e.redundancy;
    k["estimated_us"] = e.total_us;
    k["analytic_us"] = s.analytic_us;
    k["bound"] = std::string(cost_model::bound_name(e.bound));
    k["terms_us"] = {{"launch", e.launch_us},   {"dram", e.dram_us},     {"l2", e.l2_us},
                     {"compute", e.compute_us}, {"shared", e.shared_us}, {"latency", e.latency_us},
                     {"sync", e.sync_us}};
    if (s.kind == "kernel") {
      const StitchEmuCounters& c = s.counters;
      k["launch"] = {{"launches", c.launches},
                     {"cooperative", c.cooperative_launches > 0},
                     {"blocks", c.blocks},
                     {"warps", c.warps},
                     {"threads", c.threads},
                     {"counted_blocks", c.counted_blocks},
                     {"block_threads", c.max_block_threads},
                     {"shared_bytes_per_block", c.max_shared_bytes_per_block},
                     {"registers", s.registers},
                     {"sms_used", e.sms_used},
                     {"occupancy", e.occupancy}};
      k["global"] = {{"load_requests", c.global_load_requests},
                     {"load_bytes", c.global_load_bytes},
                     {"load_distinct_bytes", c.global_load_distinct_bytes},
                     {"load_sectors", c.global_load_sectors},
                     {"load_lines", c.global_load_lines},
                     {"store_requests", c.global_store_requests},
                     {"store_bytes", c.global_store_bytes},
                     {"store_distinct_bytes", c.global_store_distinct_bytes},
                     {"store_sectors", c.global_store_sectors},
                     {"store_lines", c.global_store_lines},
                     {"unique_load_bytes", c.global_unique_load_bytes},
                     {"unique_load_sectors", c.global_unique_load_sectors},
                     {"unique_store_bytes", c.global_unique_store_bytes},
                     {"unique_store_sectors", c.global_unique_store_sectors},
                     {"load_chain", c.global_load_chain},
                     {"wide_load_bytes", c.global_wide_load_bytes},
                     {"wide_store_bytes", c.global_wide_store_bytes},
                     {"l1_hit_sectors", c.global_load_l1_hit_sectors},
                     {"load_chain_l1", c.global_load_chain_l1}};
      k["shared"] = {{"load_requests", c.shared_load_requests},
                     {"store_requests", c.shared_store_requests},
                     {"bytes", c.shared_bytes},
                     {"wavefronts", c.shared_wavefronts},
                     {"ideal_wavefronts", c.shared_ideal_wavefronts},
                     {"max_wavefronts", c.shared_max_wavefronts}};
      k["sync"] = {{"block_barriers", c.block_barriers},
                   {"grid_barriers", c.grid_barriers},
                   {"warp_shuffles", c.warp_shuffles},
                   {"warp_votes", c.warp_votes},
                   {"atomics", c.atomics},
                   {"atomic_addresses", c.atomic_addresses},
                   {"atomic_max_per_address", c.atomic_max_per_address}};
      if (s.instructions.has_value()) {
        const cost_model::InstructionEstimate& i = s.instructions->estimate;
        k["instructions"] = {{"total", i.total()},
                             {"fp32", i.fp32},
                             {"fp64", i.fp64},
                             {"integer", i.integer},
                             {"special", i.special},
                             {"memory", i.memory},
                             {"control", i.control},
                             {"global_loads", i.global_loads},
                             {"load_rounds", i.load_rounds},
                             {"static", s.instructions->static_instructions},
                             {"anchors", s.instructions->anchors},
                             {"matched_anchors", s.instructions->matched_anchors},
                             {"unexecuted_anchors", s.instructions->unexecuted_anchors}};
      }
    } else {
      k["flops"] = s.flops;
    }
    kernels.push_back(std::move(k));
  }
  root["kernels"] = std::move(kernels);
  root["host_steps"] = profile.host_steps;
  root["view_steps"] = profile.view_steps;
  return root.dump(2) + "\n";
}

}  // namespace stitch::profiling
