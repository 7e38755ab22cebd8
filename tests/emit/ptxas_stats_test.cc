// ptxas -v parsing on output captured from nvcc 13.0 (sm_80 and sm_90), and the
// nvcc subprocess when nvcc is installed.
#include "emit/ptxas_stats.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace stitch::emit {
namespace {

// nvcc -cubin -arch=sm_80 -Xptxas -v,-warn-spills: an extern "C" kernel with a
// 1 KiB shared array, and a C++ kernel (mangled name) with a stack frame.
constexpr const char* kSm80TwoEntries = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z2k2Pd' for 'sm_80'
ptxas info    : Function properties for _Z2k2Pd
    512 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 0 barriers, 512 bytes cumulative stack size, 360 bytes cmem[0]
ptxas info    : Compile time = 17.355 ms
ptxas info    : Compiling entry function 'k1' for 'sm_80'
ptxas info    : Function properties for k1
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 1 barriers, 1024 bytes smem, 372 bytes cmem[0]
ptxas info    : Compile time = 1.937 ms
)";

// The same tool on a kernel forced to spill (-maxrregcount=24), sm_90: the warning
// line comes before the entry and repeats the figures; sm_90 prints no cmem.
constexpr const char* kSm90Spills =
    R"(ptxas info    : Overriding maximum register limit 256 for 'heavy' with  24 of maxrregcount option
ptxas warning : Registers are spilled to local memory in function 'heavy', 9388 bytes spill stores, 16396 bytes spill loads
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'heavy' for 'sm_90'
ptxas info    : Function properties for heavy
    8264 bytes stack frame, 9388 bytes spill stores, 16396 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 8264 bytes cumulative stack size
ptxas info    : Compile time = 1146.462 ms
)";

TEST(PtxasStatsTest, ParsesEveryEntryFunction) {
  Result<std::vector<PtxasStats>> parsed = parse_ptxas_output(kSm80TwoEntries);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  ASSERT_EQ(parsed->size(), 2u);
  const PtxasStats& mangled = (*parsed)[0];
  EXPECT_EQ(mangled.function, "_Z2k2Pd");
  EXPECT_EQ(mangled.arch, "sm_80");
  EXPECT_EQ(mangled.registers, 32);
  EXPECT_EQ(mangled.spill_store_bytes, 0);
  EXPECT_EQ(mangled.spill_load_bytes, 0);
  EXPECT_EQ(mangled.shared_bytes, 0);
  const PtxasStats& shared = (*parsed)[1];
  EXPECT_EQ(shared.function, "k1");
  EXPECT_EQ(shared.registers, 8);
  EXPECT_EQ(shared.shared_bytes, 1024);
}

TEST(PtxasStatsTest, ParsesSpills) {
  Result<std::vector<PtxasStats>> parsed = parse_ptxas_output(kSm90Spills);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0].function, "heavy");
  EXPECT_EQ((*parsed)[0].arch, "sm_90");
  EXPECT_EQ((*parsed)[0].registers, 24);
  EXPECT_EQ((*parsed)[0].spill_store_bytes, 9388);
  EXPECT_EQ((*parsed)[0].spill_load_bytes, 16396);
  EXPECT_EQ((*parsed)[0].shared_bytes, 0);
}

TEST(PtxasStatsTest, CalleePropertiesDoNotCountAsTheEntrysSpills) {
  // A non-inlined device function gets its own "Function properties" block.
  constexpr const char* text = R"(ptxas info    : Function properties for helper
    16 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers
)";
  Result<std::vector<PtxasStats>> parsed = parse_ptxas_output(text);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0].spill_store_bytes, 0);
  EXPECT_EQ((*parsed)[0].registers, 12);
}

TEST(PtxasStatsTest, NoEntryFunctionGivesNothing) {
  Result<std::vector<PtxasStats>> parsed = parse_ptxas_output("ptxas info    : 0 bytes gmem\n");
  ASSERT_TRUE(parsed.is_ok());
  EXPECT_TRUE(parsed->empty());
}

TEST(PtxasStatsTest, TruncatedOutputIsAnError) {
  Result<std::vector<PtxasStats>> parsed =
      parse_ptxas_output("ptxas info    : Compiling entry function 'k' for 'sm_90'\n");
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_EQ(parsed.status().message(),
            "ptxas output: entry function 'k' has no \"Used N registers\" line; pass -Xptxas -v "
            "and give the complete output");
}

TEST(PtxasStatsTest, SummaryTakesMostRegistersSumOfSpillsMostShared) {
  Result<std::vector<PtxasStats>> parsed = parse_ptxas_output(kSm80TwoEntries);
  ASSERT_TRUE(parsed.is_ok());
  std::vector<PtxasStats> functions = *parsed;
  functions[0].spill_store_bytes = 8;
  functions[1].spill_store_bytes = 4;
  functions[1].spill_load_bytes = 12;
  PtxasStats summary = summarize_ptxas(functions);
  EXPECT_EQ(summary.function, "_Z2k2Pd,k1");
  EXPECT_EQ(summary.arch, "sm_80");
  EXPECT_EQ(summary.registers, 32);
  EXPECT_EQ(summary.spill_store_bytes, 12);
  EXPECT_EQ(summary.spill_load_bytes, 12);
  EXPECT_EQ(summary.shared_bytes, 1024);
  PtxasStats empty = summarize_ptxas({});
  EXPECT_EQ(empty.registers, 0);
  EXPECT_EQ(empty.function, "");
}

TEST(PtxasStatsTest, RunsNvccWhenInstalled) {
  std::optional<std::filesystem::path> nvcc = find_nvcc();
  if (!nvcc) GTEST_SKIP() << "nvcc not found ($CUDACXX, /usr/local/cuda/bin, $PATH)";
  std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("ptxas_stats_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(directory);
  std::filesystem::path cu = directory / "scale.cu";
  std::ofstream(cu) << R"(#include "scale.cuh"
extern "C" __global__ void scale(const float* in, float* out, int n) {
  __shared__ float tile[256];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  tile[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  if (i < n) out[i] = tile[255 - threadIdx.x] * kScale;
}
)";
  std::filesystem::create_directories(directory / "include");
  std::ofstream(directory / "include" / "scale.cuh") << "constexpr float kScale = 2.0f;\n";
  Result<std::vector<PtxasStats>> stats = run_ptxas(*nvcc, cu, {directory / "include"}, "sm_90");
  Result<std::vector<PtxasStats>> broken = run_ptxas(*nvcc, cu, {}, "sm_90");  // no -I
  std::filesystem::remove_all(directory);
  ASSERT_TRUE(stats.is_ok()) << stats.status().message();
  ASSERT_EQ(stats->size(), 1u);
  EXPECT_EQ((*stats)[0].function, "scale");
  EXPECT_EQ((*stats)[0].arch, "sm_90");
  EXPECT_GT((*stats)[0].registers, 0);
  EXPECT_EQ((*stats)[0].shared_bytes, 1024);
  EXPECT_EQ((*stats)[0].spill_store_bytes, 0);
  ASSERT_FALSE(broken.is_ok());
  EXPECT_NE(broken.status().message().find("scale.cuh"), std::string::npos)
      << broken.status().message();
}

}  // namespace
}  // namespace stitch::emit
