// emu_driver: runs one generated kernel on the CPU through the emulation layer.
//
// Usage: emu_driver KERNEL [--input FILE]... [--output FILE:BYTES]... [--misalign]
//
// Built by tests/codegen/emulated_kernels.py, once per distinct kernel, from this
// file, the kernel's .cu compiled as C++ with -DSTITCH_EMULATION, and the emulation
// library (emit/cuda/stitch_emu.cc); linked with -rdynamic so the launcher is found
// by name (dlsym "<KERNEL>_launch" and "<KERNEL>_workspace_bytes", the kernel
// contract's extern "C" ABI), which keeps this driver free of per-kernel code.
//
// What it does, in the contract's terms:
//  1. reads every --input FILE (raw little-endian bytes, dense row-major; the
//     harness writes them from kernels.json's dtypes and shapes) into its own
//     buffer, in the fused node's input order;
//  2. allocates every output (BYTES each) filled with 0xFF, so an element the
//     kernel never writes reads as NaN (floats) or -1 (integers) and fails the
//     comparison instead of passing by accident;
//  3. allocates <KERNEL>_workspace_bytes() zeroed bytes (nullptr when 0), as the
//     caller of a launcher must;
//  4. calls <KERNEL>_launch(inputs, outputs, workspace, stream 0) once;
//  5. checks what a GPU would not report: every buffer is surrounded by guard
//     bytes that must be intact (an out-of-bounds write), and inputs must be
//     unchanged (the launcher takes them as const);
//  6. writes each output's bytes to its FILE and prints one line
//     "launch_seconds=S workspace_bytes=N".
// Buffers are 256-byte aligned like cudaMalloc's, so vectorized loads are legal.
// With --misalign, every input and output starts 4 bytes past such an address (a view
// into a larger buffer): a kernel with a 128-bit path must take its scalar loop and
// still match (the workspace stays aligned: the runtime owns it).
//
// Exit codes: 0 success; 1 the kernel failed (launcher error, guard or input
// corrupted; one line on stderr says which buffer); 2 usage or I/O error.
#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "stitch_prelude.cuh"

namespace {

using LaunchFn = cudaError_t (*)(const void* const*, void* const*, void*, cudaStream_t);
using WorkspaceBytesFn = size_t (*)(void);

constexpr size_t kAlignment = 256;
constexpr size_t kGuardBytes = 256;  // before and after every buffer; keeps alignment
constexpr unsigned char kGuardByte = 0xA5;
constexpr unsigned char kUnwrittenOutputByte = 0xFF;

// One device-like buffer: [guard | payload | guard], payload 256-byte aligned.
class GuardedBuffer {
 public:
  GuardedBuffer(std::string label, size_t bytes, unsigned char fill, size_t offset = 0)
      : label_(std::move(label)), bytes_(bytes), offset_(offset) {
    storage_.reset(static_cast<unsigned char*>(
        std::aligned_alloc(kAlignment, kGuardBytes * 2 + round_up(bytes + offset))));
    if (!storage_) {
      std::fprintf(stderr, "emu_driver: cannot allocate %zu bytes for %s\n", bytes, label_.c_str());
      std::exit(2);
    }
    std::memset(storage_.get(), kGuardByte, kGuardBytes * 2 + round_up(bytes + offset));
    std::memset(data(), fill, bytes);
  }

  unsigned char* data() { return storage_.get() + kGuardBytes + offset_; }
  size_t bytes() const { return bytes_; }
  const std::string& label() const { return label_; }

  // False when a guard byte changed; bad_offset is then the first changed byte's
  // offset from the payload start (negative: before it).
  bool guards_intact(int64_t& bad_offset) const {
    const unsigned char* base = storage_.get();
    for (size_t i = 0; i < kGuardBytes + offset_; ++i) {
      if (base[i] != kGuardByte) {
        bad_offset = static_cast<int64_t>(i) - static_cast<int64_t>(kGuardBytes + offset_);
        return false;
      }
    }
    const unsigned char* tail = base + kGuardBytes + offset_ + bytes_;
    size_t tail_bytes = round_up(bytes_ + offset_) - bytes_ - offset_ + kGuardBytes;
    for (size_t i = 0; i < tail_bytes; ++i) {
      if (tail[i] != kGuardByte) {
        bad_offset = static_cast<int64_t>(bytes_ + i);
        return false;
      }
    }
    return true;
  }

 private:
  static size_t round_up(size_t bytes) {
    return (bytes + kAlignment - 1) / kAlignment * kAlignment;
  }
  struct Free {
    void operator()(unsigned char* p) const { std::free(p); }
  };
  std::string label_;
  size_t bytes_;
  size_t offset_;  // of the payload past its 256-byte aligned start
  std::unique_ptr<unsigned char, Free> storage_;
};

[[noreturn]] void usage(const char* message) {
  std::fprintf(stderr,
               "emu_driver: %s\nusage: emu_driver KERNEL [--input FILE]... "
               "[--output FILE:BYTES]... [--misalign]\n",
               message);
  std::exit(2);
}

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "emu_driver: %s: cannot open\n", path.c_str());
    std::exit(2);
  }
  return std::vector<unsigned char>(std::istreambuf_iterator<char>(in), {});
}

void* find_symbol(const std::string& name) {
  void* symbol = dlsym(RTLD_DEFAULT, name.c_str());
  if (!symbol) {
    std::fprintf(stderr,
                 "emu_driver: no symbol %s in this binary: the .cu must define it extern \"C\" "
                 "(kernel contract 2) and the driver must be linked with -rdynamic\n",
                 name.c_str());
    std::exit(2);
  }
  return symbol;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) usage("missing KERNEL");
  const std::string kernel = argv[1];
  std::vector<std::string> input_files;
  std::vector<std::pair<std::string, size_t>> output_files;
  size_t misalign = 0;
  for (int i = 2; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--misalign") {
      misalign = 4;
      continue;
    }
    if (i + 1 >= argc) usage((flag + " needs a value").c_str());
    std::string value = argv[++i];
    if (flag == "--input") {
      input_files.push_back(value);
    } else if (flag == "--output") {
      size_t colon = value.rfind(':');
      if (colon == std::string::npos) usage("--output takes FILE:BYTES");
      char* end = nullptr;
      unsigned long long bytes = std::strtoull(value.c_str() + colon + 1, &end, 10);
      if (*end != '\0' || colon + 1 == value.size()) usage("--output BYTES is not a number");
      output_files.emplace_back(value.substr(0, colon), static_cast<size_t>(bytes));
    } else {
      usage(("unknown flag " + flag).c_str());
    }
  }

  auto launch = reinterpret_cast<LaunchFn>(find_symbol(kernel + "_launch"));
  auto workspace_bytes =
      reinterpret_cast<WorkspaceBytesFn>(find_symbol(kernel + "_workspace_bytes"));

  std::vector<std::vector<unsigned char>> input_copies;
  std::vector<GuardedBuffer> buffers;  // inputs, then outputs, then the workspace
  buffers.reserve(input_files.size() + output_files.size() + 1);
  for (size_t i = 0; i < input_files.size(); ++i) {
    input_copies.push_back(read_bytes(input_files[i]));
    buffers.emplace_back("input " + std::to_string(i), input_copies.back().size(), 0, misalign);
    if (!input_copies.back().empty()) {
      std::memcpy(buffers.back().data(), input_copies.back().data(), input_copies.back().size());
    }
  }
  for (size_t i = 0; i < output_files.size(); ++i) {
    buffers.emplace_back("output " + std::to_string(i), output_files[i].second,
                         kUnwrittenOutputByte, misalign);
  }
  const size_t workspace_size = workspace_bytes();
  buffers.emplace_back("workspace", workspace_size, 0);

  std::vector<const void*> input_pointers;
  std::vector<void*> output_pointers;
  for (size_t i = 0; i < input_files.size(); ++i) input_pointers.push_back(buffers[i].data());
  for (size_t i = 0; i < output_files.size(); ++i) {
    output_pointers.push_back(buffers[input_files.size() + i].data());
  }
  void* workspace = workspace_size == 0 ? nullptr : buffers.back().data();

  auto start = std::chrono::steady_clock::now();
  cudaError_t status =
      launch(input_pointers.data(), output_pointers.data(), workspace, cudaStream_t{});
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (status != cudaSuccess) {
    std::fprintf(stderr, "emu_driver: %s_launch returned error %d\n", kernel.c_str(),
                 static_cast<int>(status));
    return 1;
  }

  for (const GuardedBuffer& buffer : buffers) {
    int64_t bad_offset = 0;
    if (!buffer.guards_intact(bad_offset)) {
      std::fprintf(stderr,
                   "emu_driver: %s wrote outside %s (%zu bytes): byte offset %lld changed\n",
                   kernel.c_str(), buffer.label().c_str(), buffer.bytes(),
                   static_cast<long long>(bad_offset));
      return 1;
    }
  }
  for (size_t i = 0; i < input_files.size(); ++i) {
    if (!input_copies[i].empty() &&
        std::memcmp(buffers[i].data(), input_copies[i].data(), input_copies[i].size()) != 0) {
      std::fprintf(stderr, "emu_driver: %s changed input %zu (inputs are const)\n", kernel.c_str(),
                   i);
      return 1;
    }
  }
  for (size_t i = 0; i < output_files.size(); ++i) {
    GuardedBuffer& buffer = buffers[input_files.size() + i];
    std::ofstream out(output_files[i].first, std::ios::binary);
    out.write(reinterpret_cast<const char*>(buffer.data()),
              static_cast<std::streamsize>(buffer.bytes()));
    if (!out) {
      std::fprintf(stderr, "emu_driver: %s: cannot write\n", output_files[i].first.c_str());
      return 2;
    }
  }
  std::printf("launch_seconds=%.6f workspace_bytes=%zu\n", seconds, workspace_size);
  return 0;
}
