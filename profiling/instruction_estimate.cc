#include "profiling/instruction_estimate.h"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>

#include "artifact/stitch_emu_counters.h"

namespace stitch::profiling {
namespace {

std::string_view mnemonic(std::string_view opcode) { return opcode.substr(0, opcode.find('.')); }

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

std::string base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// `File "PATH", line N` at the start of `text`: the path's base name and N.
std::optional<std::pair<std::string, int>> file_and_line(std::string_view text) {
  const size_t open = text.find('"');
  if (open == std::string_view::npos) return std::nullopt;
  const size_t close = text.find('"', open + 1);
  if (close == std::string_view::npos) return std::nullopt;
  const size_t line = text.find("line ", close);
  if (line == std::string_view::npos) return std::nullopt;
  return std::make_pair(base_name(text.substr(open + 1, close - open - 1)),
                        std::atoi(std::string(text.substr(line + 5)).c_str()));
}

// The load rounds and global loads of `kernel` (count_instructions), each instruction
// weighed by weights[i].
void count_load_rounds(const SassKernel& kernel, const std::vector<double>& weights,
                       cost_model::InstructionEstimate& estimate) {
  // Which scoreboards a global load set last and no instruction has waited on since.
  bool outstanding[6] = {};
  for (size_t index = 0; index < kernel.instructions.size(); ++index) {
    const SassInstruction& i = kernel.instructions[index];
    if (!i.has_control || i.subroutine) continue;
    const double weight = weights[index];
    int in_flight = 0;
    bool waits_on_load = false;
    for (int b = 0; b < 6; ++b) {
      in_flight += outstanding[b] ? 1 : 0;
      waits_on_load = waits_on_load || (outstanding[b] && (i.wait_mask >> b & 1));
    }
    if (waits_on_load) estimate.load_rounds += weight / in_flight;
    for (int b = 0; b < 6; ++b) {
      if (i.wait_mask >> b & 1) outstanding[b] = false;
    }
    const bool global_load = sass_access_kind(i.opcode) == kStitchEmuGlobalLoad;
    if (global_load) estimate.global_loads += weight;
    if (i.write_barrier >= 0) outstanding[i.write_barrier] = global_load;
  }
}

}  // namespace

InstructionClass classify_sass_opcode(std::string_view opcode) {
  const std::string_view op = mnemonic(opcode);
  static const std::set<std::string_view> kFp32 = {
      "FADD",  "FMUL",  "FFMA",  "FMNMX",  "FSET",  "FSETP",  "FSEL",  "FCHK",  "FRND", "FSWZADD",
      "HADD2", "HMUL2", "HFMA2", "HMNMX2", "HSET2", "HSETP2", "FADD2", "FMUL2", "FFMA2"};
  static const std::set<std::string_view> kFp64 = {"DADD",  "DMUL",  "DFMA",
                                                   "DSETP", "DMNMX", "DSET"};
  static const std::set<std::string_view> kInteger = {
      "IADD3", "IADD", "IMAD", "IMUL", "IMNMX",  "ISETP", "ISET", "LOP3",  "LOP",    "SHF",
      "SHL",   "SHR",  "LEA",  "IABS", "POPC",   "FLO",   "BREV", "VIADD", "VIMNMX", "VIADDMNMX",
      "IDP",   "SGXT", "BMSK", "PRMT", "ISCADD", "IMMA",  "I2IP", "BMOV"};
  static const std::set<std::string_view> kConversion = {"F2F", "F2I",  "I2F",
                                                         "I2I", "F2FP", "FRND"};
  static const std::set<std::string_view> kMemory = {
      "LDG",    "STG",   "LD",    "ST",    "LDS", "STS",  "LDSM",   "LDL",       "STL",
      "LDC",    "ATOM",  "ATOMG", "ATOMS", "RED", "REDG", "LDGSTS", "LDGDEPBAR", "CCTL",
      "MEMBAR", "FENCE", "SULD",  "SUST",  "TLD", "TEX",  "UBLKCP", "UTMALDG",   "UTMASTG"};
  if (kFp32.count(op)) return InstructionClass::kFp32;
  if (kFp64.count(op)) return InstructionClass::kFp64;
  if (kConversion.count(op)) {
    // Conversions from or to FP64 run on the FP64 units, the others on the XU (MUFU).
    return opcode.find("F64") != std::string_view::npos ? InstructionClass::kFp64
                                                        : InstructionClass::kSpecial;
  }
  if (op == "MUFU") return InstructionClass::kSpecial;
  if (kInteger.count(op)) return InstructionClass::kInteger;
  if (kMemory.count(op)) return InstructionClass::kMemory;
  return InstructionClass::kControl;
}

int sass_access_kind(std::string_view opcode) {
  const std::string_view op = mnemonic(opcode);
  if (op == "LDG" || op == "LD") return kStitchEmuGlobalLoad;
  if (op == "STG" || op == "ST") return kStitchEmuGlobalStore;
  if (op == "LDS" || op == "LDSM") return kStitchEmuSharedLoad;
  if (op == "STS") return kStitchEmuSharedStore;
  return -1;
}

Result<std::vector<SassKernel>> parse_sass(std::string_view text) {
  std::vector<SassKernel> kernels;
  std::map<std::string, int64_t> labels;                 // of the current section
  std::vector<std::pair<size_t, std::string>> branches;  // instruction index, label
  // The source annotations since the previous instruction: innermost first.
  std::vector<std::pair<std::string, int>> chain;
  std::vector<std::pair<std::string, int>> last_chain;
  std::vector<std::string> pending_labels;
  bool in_subroutine = false;
  auto finish_section = [&]() -> Status {
    if (kernels.empty()) return Status::ok();
    SassKernel& kernel = kernels.back();
    for (const auto& [index, label] : branches) {
      auto it = labels.find(label);
      if (it == labels.end()) {
        return Status::internal("nvdisasm output: branch to unknown label " + label + " in " +
                                kernel.name);
      }
      kernel.instructions[index].target = it->second;
    }
    labels.clear();
    branches.clear();
    return Status::ok();
  };
  size_t position = 0;
  while (position < text.size()) {
    size_t end = text.find('\n', position);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = trim(text.substr(position, end - position));
    position = end + 1;
    if (starts_with(line, "//---------------------")) {
      STITCH_RETURN_IF_ERROR(finish_section());
      const size_t dot = line.find(".text.");
      if (dot == std::string_view::npos) continue;  // another section (.nv.info, ...)
      std::string_view name = trim(line.substr(dot + 6));
      name = name.substr(0, name.find(' '));
      kernels.push_back(SassKernel{std::string(name), {}});
      in_subroutine = false;
      last_chain.clear();
      continue;
    }
    if (kernels.empty()) continue;
    if (starts_with(line, "//## File")) {
      // 'File "f", line 53 inlined at "f", line 58': the first annotation of an
      // instruction is its innermost location, with its caller; later ones are outer.
      if (chain.empty()) {
        const size_t inlined = line.find(" inlined at ");
        auto inner = file_and_line(line.substr(0, inlined));
        if (!inner) continue;
        chain.push_back(*inner);
        if (inlined != std::string_view::npos) {
          if (auto caller = file_and_line(line.substr(inlined))) chain.push_back(*caller);
        }
      }
      continue;
    }
    if (!line.empty() && line.back() == ':' && line.front() != '/' && line.front() != '.') {
      // "$__internal_0_$__cuda_sm20_div_u64:" starts a subroutine.
      if (starts_with(line, "$__internal")) in_subroutine = true;
      pending_labels.emplace_back(line.substr(0, line.size() - 1));
      continue;
    }
    if (starts_with(line, ".L_") && line.back() == ':') {
      pending_labels.emplace_back(line.substr(0, line.size() - 1));
      continue;
    }
    if (starts_with(line, "/* 0x")) {
      // -hex: the second word of the previous instruction's encoding. Its bits 41-63
      // are the control bits (bits 105-127 of the instruction): stall 4, yield 1, write
      // scoreboard 3 (7: none), read scoreboard 3, wait mask 6, reuse 4.
      if (kernels.back().instructions.empty()) continue;
      SassInstruction& previous = kernels.back().instructions.back();
      const uint64_t word = std::strtoull(std::string(line.substr(3)).c_str(), nullptr, 16);
      const uint64_t control = word >> 41;
      previous.has_control = true;
      previous.wait_mask = static_cast<int>((control >> 11) & 0x3f);
      const int write = static_cast<int>((control >> 5) & 7);
      previous.write_barrier = write < 6 ? write : -1;
      continue;
    }
    if (!starts_with(line, "/*")) continue;
    const size_t address_end = line.find("*/");
    if (address_end == std::string_view::npos) continue;
    SassInstruction instruction;
    instruction.address =
        std::strtoll(std::string(line.substr(2, address_end - 2)).c_str(), nullptr, 16);
    std::string_view body = trim(line.substr(address_end + 2));
    if (starts_with(body, "@")) body = trim(body.substr(body.find(' ')));
    const size_t space = body.find_first_of(" ;");
    instruction.opcode = std::string(body.substr(0, space));
    instruction.cls = classify_sass_opcode(instruction.opcode);
    instruction.subroutine = in_subroutine;
    if (chain.empty()) chain = last_chain;
    if (!chain.empty()) {
      instruction.file = chain[0].first;
      instruction.line = chain[0].second;
      if (chain.size() > 1) {
        instruction.caller_file = chain[1].first;
        instruction.caller_line = chain[1].second;
      }
    }
    last_chain = chain;
    chain.clear();
    SassKernel& kernel = kernels.back();
    for (const std::string& label : pending_labels) labels[label] = instruction.address;
    pending_labels.clear();
    if (starts_with(instruction.opcode, "BRA")) {
      const size_t open = body.find("`(");
      const size_t close = body.find(')', open);
      if (open != std::string_view::npos && close != std::string_view::npos) {
        branches.emplace_back(kernel.instructions.size(),
                              std::string(body.substr(open + 2, close - open - 2)));
      }
    }
    kernel.instructions.push_back(std::move(instruction));
  }
  STITCH_RETURN_IF_ERROR(finish_section());
  return kernels;
}

InstructionCount count_instructions(const std::vector<SassKernel>& kernels,
                                    const std::map<AccessLocation, uint64_t>& requests,
                                    uint64_t warps) {
  InstructionCount count;
  // Requests by location without the caller, for anchors whose caller differs between
  // the host compiler's inlining and nvcc's.
  std::map<AccessLocation, uint64_t> by_line;
  for (const auto& [location, n] : requests) {
    AccessLocation key{location.file, location.line, "", 0, location.kind};
    by_line[key] += n;
  }
  for (const SassKernel& kernel : kernels) {
    const std::vector<SassInstruction>& code = kernel.instructions;
    // SASS anchors per location (exact, and by line) to divide the requests among.
    std::map<AccessLocation, int> anchors_at;
    std::map<AccessLocation, int> anchors_at_line;
    for (const SassInstruction& i : code) {
      const int kind = sass_access_kind(i.opcode);
      if (kind < 0 || i.subroutine) continue;
      ++anchors_at[{i.file, i.line, i.caller_file, i.caller_line, kind}];
      ++anchors_at_line[{i.file, i.line, "", 0, kind}];
    }
    // Loops: [target, branch] for every backward branch; the innermost loop of an
    // instruction is the shortest range holding it.
    struct Loop {
      int64_t begin, end;
      double executions = 0;
      int parent = -1;
      std::vector<double> anchor_executions;  // of its matched anchors
      int anchors = 0;                        // matched or not
    };
    std::vector<Loop> loops;
    for (const SassInstruction& i : code) {
      if (i.target >= 0 && i.target <= i.address && !i.subroutine) {
        loops.push_back({i.target, i.address, 0, -1, {}});
      }
    }
    std::sort(loops.begin(), loops.end(),
              [](const Loop& a, const Loop& b) { return a.end - a.begin < b.end - b.begin; });
    auto innermost = [&](int64_t address) {
      for (size_t l = 0; l < loops.size(); ++l) {
        if (loops[l].begin <= address && address <= loops[l].end) return static_cast<int>(l);
      }
      return -1;
    };
    for (size_t l = 0; l < loops.size(); ++l) {
      for (size_t p = l + 1; p < loops.size(); ++p) {
        if (loops[p].begin <= loops[l].begin && loops[l].end <= loops[p].end) {
          loops[l].parent = static_cast<int>(p);
          break;
        }
      }
    }
    int64_t kernel_matched = 0;
    for (const SassInstruction& i : code) {
      if (i.subroutine) continue;
      ++count.static_instructions;
      const int kind = sass_access_kind(i.opcode);
      if (kind < 0) continue;
      ++count.anchors;
      const int anchor_loop = innermost(i.address);
      if (anchor_loop >= 0) ++loops[static_cast<size_t>(anchor_loop)].anchors;
      const AccessLocation exact{i.file, i.line, i.caller_file, i.caller_line, kind};
      const AccessLocation line{i.file, i.line, "", 0, kind};
      double executions = -1;
      if (auto it = requests.find(exact); it != requests.end()) {
        executions = static_cast<double>(it->second) / anchors_at[exact];
      } else if (auto by = by_line.find(line); by != by_line.end()) {
        executions = static_cast<double>(by->second) / anchors_at_line[line];
      }
      if (executions < 0) continue;
      ++count.matched_anchors;
      ++kernel_matched;
      if (anchor_loop >= 0) loops[anchor_loop].anchor_executions.push_back(executions);
    }
    // A loop runs as often as the median of its anchors (the upper one): the most
    // executed would count a load that nvcc hoisted or merged across unrolled
    // iterations (one SASS load for several counted executions of its source line)
    // at the unmerged count, and weigh the whole loop by it.
    for (Loop& loop : loops) {
      std::vector<double>& runs = loop.anchor_executions;
      if (runs.empty()) continue;
      std::nth_element(runs.begin(), runs.begin() + static_cast<std::ptrdiff_t>(runs.size() / 2),
                       runs.end());
      loop.executions = runs[runs.size() / 2];
    }
    // A loop with loads or stores none of which the emulated run executed, in a kernel
    // whose other accesses matched, never ran there (a branch not taken: the scalar
    // fallback of a 128-bit path when every pointer was aligned). A loop without
    // anchors executes as often as its parent (or once per warp).
    for (size_t l = loops.size(); l-- > 0;) {
      if (loops[l].executions > 0) continue;
      if (kernel_matched > 0 && loops[l].anchors > 0 && loops[l].anchor_executions.empty()) {
        count.unexecuted_anchors += loops[l].anchors;
        continue;  // 0
      }
      const int parent = loops[l].parent;
      loops[l].executions =
          parent >= 0 ? loops[static_cast<size_t>(parent)].executions : static_cast<double>(warps);
    }
    cost_model::InstructionEstimate& e = count.estimate;
    std::vector<double> weights(code.size(), 0.0);
    for (size_t index = 0; index < code.size(); ++index) {
      const SassInstruction& i = code[index];
      if (i.subroutine) continue;
      const int loop = innermost(i.address);
      const double weight =
          loop >= 0 ? loops[static_cast<size_t>(loop)].executions : static_cast<double>(warps);
      weights[index] = weight;
      switch (i.cls) {
        case InstructionClass::kFp32:
          e.fp32 += weight;
          break;
        case InstructionClass::kFp64:
          e.fp64 += weight;
          break;
        case InstructionClass::kInteger:
          e.integer += weight;
          break;
        case InstructionClass::kSpecial:
          e.special += weight;
          break;
        case InstructionClass::kMemory:
          e.memory += weight;
          break;
        case InstructionClass::kControl:
          e.control += weight;
          break;
      }
    }
    count_load_rounds(kernel, weights, e);
  }
  return count;
}

std::map<uint64_t, AccessLocation> parse_addr2line(std::string_view text) {
  std::map<uint64_t, AccessLocation> locations;
  std::optional<uint64_t> current;
  int depth = 0;
  size_t position = 0;
  while (position < text.size()) {
    size_t end = text.find('\n', position);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = trim(text.substr(position, end - position));
    position = end + 1;
    if (starts_with(line, "0x")) {
      current = std::strtoull(std::string(line).c_str(), nullptr, 16);
      depth = 0;
      continue;
    }
    if (!current) continue;
    if (starts_with(line, "(inlined by)")) line = trim(line.substr(12));
    // "path/file.cu:53" or "path/file.cu:53 (discriminator 2)"
    line = line.substr(0, line.find(" ("));
    const size_t colon = line.rfind(':');
    if (colon == std::string_view::npos) continue;
    const int number = std::atoi(std::string(line.substr(colon + 1)).c_str());
    // The emulation's own inline helpers (a float4 copy is one 16-byte access in
    // stitch_emu.h) are not in the SASS: the access belongs to the kernel line that
    // copies, one frame out.
    if (base_name(line.substr(0, colon)) == "stitch_emu.h") continue;
    AccessLocation& location = locations[*current];
    if (depth == 0) {
      location.file = base_name(line.substr(0, colon));
      location.line = number;
    } else if (depth == 1) {
      location.caller_file = base_name(line.substr(0, colon));
      location.caller_line = number;
    }
    ++depth;
  }
  return locations;
}

}  // namespace stitch::profiling
