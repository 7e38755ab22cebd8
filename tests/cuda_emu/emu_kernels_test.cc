// Runs the hand-written kernels of kernels/emu_test_kernels.cu in the emulator (fibers,
// or threads in stitch_cuda_emu_threads_tests) and compares each output with a host
// computation. The kernels use the contract's launchers, so these tests also pin the
// launcher convention the harness relies on.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <vector>

#include "ir/core/precision.h"
#include "kernels/emu_test_kernels.cu"

namespace {

std::vector<float> random_floats(size_t count, float low, float high, unsigned seed) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<float> distribution(low, high);
  std::vector<float> values(count);
  for (float& v : values) v = distribution(generator);
  return values;
}

// Zeroed device scratch as the contract's caller provides it (8-byte aligned).
std::vector<uint64_t> zeroed_workspace(size_t bytes) {
  return std::vector<uint64_t>((bytes + 7) / 8, 0);
}

// Sets an environment variable for the scope of a test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(EmuKernels, RowSumUsesBlockReductions) {
  const std::vector<float> x = random_floats(kRowSumRows * kRowSumCols, -1.0f, 1.0f, 1);
  std::vector<float> y(2 * kRowSumRows, 0.0f);
  const void* inputs[] = {x.data()};
  void* outputs[] = {y.data()};
  ASSERT_EQ(stitch_test_row_sum_workspace_bytes(), 0u);
  ASSERT_EQ(stitch_test_row_sum_launch(inputs, outputs, nullptr, nullptr), cudaSuccess);
  for (int r = 0; r < kRowSumRows; ++r) {
    double sum = 0.0;
    float largest = -INFINITY;
    for (int c = 0; c < kRowSumCols; ++c) {
      sum += x[r * kRowSumCols + c];
      largest = std::max(largest, x[r * kRowSumCols + c]);
    }
    EXPECT_NEAR(y[2 * r], sum, 1e-3) << "row " << r;
    EXPECT_EQ(y[2 * r + 1], largest) << "row " << r;
  }
}

TEST(EmuKernels, SoftmaxWarpPerRow) {
  const std::vector<float> x = random_floats(kSoftmaxRows * kSoftmaxCols, -5.0f, 5.0f, 2);
  std::vector<float> y(x.size(), -1.0f);
  const void* inputs[] = {x.data()};
  void* outputs[] = {y.data()};
  ASSERT_EQ(stitch_test_softmax_launch(inputs, outputs, nullptr, nullptr), cudaSuccess);
  for (int r = 0; r < kSoftmaxRows; ++r) {
    double largest = -INFINITY;
    for (int c = 0; c < kSoftmaxCols; ++c)
      largest = std::max<double>(largest, x[r * kSoftmaxCols + c]);
    double sum = 0.0;
    for (int c = 0; c < kSoftmaxCols; ++c) sum += std::exp(x[r * kSoftmaxCols + c] - largest);
    for (int c = 0; c < kSoftmaxCols; ++c) {
      const double expected = std::exp(x[r * kSoftmaxCols + c] - largest) / sum;
      ASSERT_NEAR(y[r * kSoftmaxCols + c], expected, 1e-6 + 1e-5 * expected)
          << "row " << r << " col " << c;
    }
  }
}

// The emulated mma.sync m16n8k16 (float16, float accumulators) is D = A x B + C with
// the fragments where PTX puts them: values exact in float16 (multiples of 1/8 in
// [-2, 2)) make every product and sum exact, so the result must equal the host's.
TEST(EmuKernels, MmaM16n8k16MatchesTheProductInPtxLayouts) {
  std::mt19937 generator(11);
  std::uniform_int_distribution<int> eighths(-16, 15);
  std::vector<float> a(16 * 16), b(16 * 8), c(16 * 8), d(16 * 8, 0.0f);
  for (float& v : a) v = static_cast<float>(eighths(generator)) / 8.0f;
  for (float& v : b) v = static_cast<float>(eighths(generator)) / 8.0f;
  for (float& v : c) v = static_cast<float>(eighths(generator));
  const void* inputs[] = {a.data(), b.data(), c.data()};
  void* outputs[] = {d.data()};
  ASSERT_EQ(stitch_test_mma_launch(inputs, outputs, nullptr, nullptr), cudaSuccess);
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      float expected = c[m * 8 + n];
      for (int k = 0; k < 16; ++k) expected += a[m * 16 + k] * b[k * 8 + n];
      EXPECT_EQ(d[m * 8 + n], expected) << m << "," << n;
    }
  }
}

// The emulated mma.sync m16n8k8 TF32: operands with more than TF32's 10 mantissa bits
// are rounded by stitch_tf32 (ties away from zero); the products of the rounded values
// are exact in float, and small integer C keeps the sums exact in k order, so the
// result must equal the host's product of ir::round_to_tf32 operands (the compiler's
// rounding, ir/core/precision.h: the emulation's is its own, for generated code).
TEST(EmuKernels, MmaM16n8k8Tf32RoundsTheOperandsAndMatchesTheProduct) {
  std::mt19937 generator(13);
  std::uniform_int_distribution<int> mantissa(-(1 << 14), (1 << 14) - 1);
  std::vector<float> a(16 * 8), b(8 * 8), c(16 * 8), d(16 * 8, 0.0f);
  // 15-bit integers scaled by 2^-14: up to 4 bits below TF32's precision, so the
  // rounding matters; the exact sums of up to 8 products of 11-bit values fit a float.
  for (float& v : a) v = static_cast<float>(mantissa(generator)) / 16384.0f;
  for (float& v : b) v = static_cast<float>(mantissa(generator)) / 16384.0f;
  const auto tf32 = stitch::ir::round_to_tf32;
  EXPECT_EQ(tf32(1.0f + 0x1p-11f), 1.0f + 0x1p-10f);  // a tie rounds away from zero
  EXPECT_EQ(tf32(-(1.0f + 0x1p-11f)), -(1.0f + 0x1p-10f));
  EXPECT_EQ(tf32(1.0f + 0x1p-12f), 1.0f);
  for (int i = 0; i < 16 * 8; ++i) c[static_cast<size_t>(i)] = static_cast<float>(i % 7 - 3);
  const void* inputs[] = {a.data(), b.data(), c.data()};
  void* outputs[] = {d.data()};
  ASSERT_EQ(stitch_test_mma_tf32_launch(inputs, outputs, nullptr, nullptr), cudaSuccess);
  int rounded = 0;
  for (float v : a) rounded += tf32(v) != v ? 1 : 0;
  EXPECT_GT(rounded, 64);  // the rounding is exercised
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      double expected = c[m * 8 + n];
      for (int k = 0; k < 8; ++k) {
        expected += static_cast<double>(tf32(a[m * 8 + k])) * tf32(b[k * 8 + n]);
      }
      EXPECT_NEAR(d[m * 8 + n], expected, 1e-6) << m << "," << n;
    }
  }
}

TEST(EmuKernels, TransposeThroughSharedTile) {
  const std::vector<float> x = random_floats(kTransposeRows * kTransposeCols, -1.0f, 1.0f, 3);
  std::vector<float> y(x.size(), 0.0f);
  const void* inputs[] = {x.data()};
  void* outputs[] = {y.data()};
  ASSERT_EQ(stitch_test_transpose_launch(inputs, outputs, nullptr, nullptr), cudaSuccess);
  for (int r = 0; r < kTransposeRows; ++r) {
    for (int c = 0; c < kTransposeCols; ++c) {
      ASSERT_EQ(y[c * kTransposeRows + r], x[r * kTransposeCols + c]) << r << "," << c;
    }
  }
}

#if !defined(STITCH_EMU_THREADS)
// Fibers run a block's threads one after another between barriers, so without the
// barrier early threads read tile entries nobody has written yet: the 0xFF poison (NaN).
TEST(EmuKernels, MissingBarrierReadsPoisonedSharedMemory) {
  const std::vector<float> x = random_floats(kTransposeRows * kTransposeCols, -1.0f, 1.0f, 3);
  std::vector<float> y(x.size(), 0.0f);
  const void* inputs[] = {x.data()};
  void* outputs[] = {y.data()};
  ASSERT_EQ(stitch_test_transpose_racy_launch(inputs, outputs, nullptr, nullptr), cudaSuccess);
  int nans = 0;
  for (float v : y) nans += std::isnan(v) ? 1 : 0;
  EXPECT_GT(nans, 0);
}
#endif

void check_variance(unsigned expected_blocks) {
  const std::vector<float> x = random_floats(kVarianceCount, -2.0f, 3.0f, 4);
  std::vector<float> out(2, 0.0f);
  std::vector<uint64_t> workspace = zeroed_workspace(stitch_test_variance_workspace_bytes());
  const void* inputs[] = {x.data()};
  void* outputs[] = {out.data()};
  ASSERT_EQ(stitch_test_variance_launch(inputs, outputs, workspace.data(), nullptr), cudaSuccess);
  double mean = 0.0;
  for (float v : x) mean += v;
  mean /= static_cast<double>(x.size());
  double variance = 0.0;
  for (float v : x) variance += (v - mean) * (v - mean);
  variance /= static_cast<double>(x.size());
  EXPECT_NEAR(out[0], mean, 1e-4);
  EXPECT_NEAR(out[1], variance, 1e-3);
  // Every block published a partial sum before the first grid barrier; none beyond.
  const float* partial_sum = reinterpret_cast<const float*>(
      reinterpret_cast<const unsigned char*>(workspace.data()) + kVariancePartialOffset);
  for (unsigned b = 0; b < expected_blocks; ++b) EXPECT_NE(partial_sum[b], 0.0f) << b;
  EXPECT_EQ(partial_sum[expected_blocks], 0.0f);
}

TEST(EmuKernels, CooperativeVarianceAcrossDefaultFourBlocks) { check_variance(4); }

TEST(EmuKernels, CooperativeVarianceAcrossSevenBlocks) {
  ScopedEnv env("STITCH_EMU_MAX_BLOCKS", "7");
  check_variance(7);
}

TEST(EmuKernels, CooperativeLaunchAboveResidencyFails) {
  ScopedEnv env("STITCH_EMU_MAX_BLOCKS", "2");
  std::vector<float> x(kVarianceCount, 1.0f);
  std::vector<float> out(2, 0.0f);
  std::vector<uint64_t> workspace = zeroed_workspace(stitch_test_variance_workspace_bytes());
  const cudaError_t error =
      STITCH_LAUNCH_COOPERATIVE(stitch_test_variance_kernel, dim3(3), dim3(kVarianceThreads), 0,
                                nullptr, static_cast<const float*>(x.data()), out.data(),
                                reinterpret_cast<unsigned char*>(workspace.data()));
  EXPECT_EQ(error, cudaErrorCooperativeLaunchTooLarge);
  EXPECT_EQ(cudaGetLastError(), cudaErrorCooperativeLaunchTooLarge);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(EmuKernels, HistogramWithAtomicsFromManyBlocks) {
  std::mt19937 generator(5);
  std::uniform_int_distribution<int> value_distribution(0, kHistogramBins - 1);
  std::vector<int> values(kHistogramCount);
  for (int& v : values) v = value_distribution(generator);
  values[123] = 15;
  values[4567] = 0;
  const std::vector<float> weights = random_floats(kHistogramCount, 0.0f, 1.0f, 6);
  std::vector<unsigned int> bins(kHistogramBins, 0);
  std::vector<int> extremes(2, -7);
  std::vector<float> weight_stats(2, 0.0f);
  std::vector<unsigned int> last(1, 12345);
  std::vector<uint64_t> workspace = zeroed_workspace(stitch_test_histogram_workspace_bytes());
  const void* inputs[] = {values.data(), weights.data()};
  void* outputs[] = {bins.data(), extremes.data(), weight_stats.data(), last.data()};
  ASSERT_EQ(stitch_test_histogram_launch(inputs, outputs, workspace.data(), nullptr), cudaSuccess);
  std::vector<unsigned int> expected(kHistogramBins, 0);
  double sum = 0.0;
  float largest = 0.0f;
  for (int i = 0; i < kHistogramCount; ++i) {
    ++expected[values[i]];
    sum += weights[i];
    largest = std::max(largest, weights[i]);
  }
  EXPECT_EQ(bins, expected);
  EXPECT_EQ(extremes[0], 15);
  EXPECT_EQ(extremes[1], 0);
  EXPECT_NEAR(weight_stats[0], sum, 1e-5 * sum);  // float atomics in any order
  EXPECT_EQ(weight_stats[1], largest);
  EXPECT_LT(last[0], static_cast<unsigned int>(kHistogramBlocks));
}

struct ConvertCase {
  float value;
  uint16_t half_bits;
  uint16_t bf16_bits;
  int8_t int8;
  uint8_t uint8;
  int32_t int32;
};

TEST(EmuKernels, HalfAndBfloat16RoundTripsMatchCudaBits) {
  const float nan = std::nanf("");
  const ConvertCase cases[] = {
      {1.0f, 0x3c00, 0x3f80, 1, 1, 1},
      {-2.5f, 0xc100, 0xc020, -2, 0, -2},
      {0.0f, 0x0000, 0x0000, 0, 0, 0},
      {-0.0f, 0x8000, 0x8000, 0, 0, 0},
      {65504.0f, 0x7bff, 0x4780, 127, 255, 65504},
      {65519.0f, 0x7bff, 0x4780, 127, 255, 65519},  // below the half tie: max half
      {65520.0f, 0x7c00, 0x4780, 127, 255, 65520},  // the tie rounds to infinity
      {1e6f, 0x7c00, 0x4974, 127, 255, 1000000},
      {5.9604645e-08f, 0x0001, 0x3380, 0, 0, 0},              // 2^-24: smallest half subnormal
      {2.9802322e-08f, 0x0000, 0x3300, 0, 0, 0},              // 2^-25: tie to even (zero)
      {8.940697e-08f, 0x0002, 0x33c0, 0, 0, 0},               // 1.5 * 2^-24: tie to even (2)
      {1.0009766f, 0x3c01, 0x3f80, 1, 1, 1},                  // 1 + 2^-10
      {1.00048828125f, 0x3c00, 0x3f80, 1, 1, 1},              // 1 + 2^-11: tie to even
      {1.00146484375f, 0x3c02, 0x3f80, 1, 1, 1},              // 1 + 3 * 2^-11: tie to even
      {1.00390625f, 0x3c04, 0x3f80, 1, 1, 1},                 // 1 + 2^-8: bf16 tie to even
      {1.01171875f, 0x3c0c, 0x3f82, 1, 1, 1},                 // 1 + 3 * 2^-8: bf16 tie up
      {3.4028235e38f, 0x7c00, 0x7f80, 127, 255, 2147483647},  // FLT_MAX: bf16 rounds to inf
      {INFINITY, 0x7c00, 0x7f80, 127, 255, 2147483647},
      {-INFINITY, 0xfc00, 0xff80, -128, 0, -2147483647 - 1},
      {nan, 0x7fff, 0x7fff, 0, 0, 0},
      {-nan, 0x7fff, 0x7fff, 0, 0, 0},
      {300.7f, 0x5cb3, 0x4396, 127, 255, 300},
      {-300.7f, 0xdcb3, 0xc396, -128, 0, -300},
      {-0.9f, 0xbb33, 0xbf66, 0, 0, 0},
      {3e9f, 0x7c00, 0x4f33, 127, 255, 2147483647},
      {-3e9f, 0xfc00, 0xcf33, -128, 0, -2147483647 - 1},
  };
  const size_t count = sizeof(cases) / sizeof(cases[0]);
  std::vector<float> x(kConvertCount, 0.0f);
  for (size_t i = 0; i < count; ++i) x[i] = cases[i].value;
  std::vector<__half> half_out(kConvertCount);
  std::vector<float> half_back(kConvertCount);
  std::vector<__nv_bfloat16> bf16_out(kConvertCount);
  std::vector<float> bf16_back(kConvertCount);
  std::vector<signed char> int8_out(kConvertCount);
  std::vector<unsigned char> uint8_out(kConvertCount);
  std::vector<int> int32_out(kConvertCount);
  const void* inputs[] = {x.data()};
  void* outputs[] = {half_out.data(), half_back.data(), bf16_out.data(), bf16_back.data(),
                     int8_out.data(), uint8_out.data(), int32_out.data()};
  ASSERT_EQ(stitch_test_convert_launch(inputs, outputs, nullptr, nullptr), cudaSuccess);
  for (size_t i = 0; i < count; ++i) {
    const ConvertCase& c = cases[i];
    SCOPED_TRACE(testing::Message() << "value " << c.value << " (case " << i << ")");
    EXPECT_EQ(__half_as_ushort(half_out[i]), c.half_bits);
    EXPECT_EQ(__bfloat16_as_ushort(bf16_out[i]), c.bf16_bits);
    EXPECT_EQ(int8_out[i], c.int8);
    EXPECT_EQ(uint8_out[i], c.uint8);
    EXPECT_EQ(int32_out[i], c.int32);
    if (std::isnan(c.value)) {
      EXPECT_TRUE(std::isnan(half_back[i]));
      EXPECT_TRUE(std::isnan(bf16_back[i]));
    } else {
      EXPECT_EQ(half_back[i], stitch_emu::half_bits_to_float(c.half_bits));
      EXPECT_EQ(bf16_back[i], stitch_emu::bfloat16_bits_to_float(c.bf16_bits));
    }
  }
}

TEST(EmuKernels, SegmentedShufflesAndVotes) {
  constexpr int kCount = kLaneThreads * kLaneBlocks;
  std::vector<float> x = random_floats(kCount, -1.0f, 1.0f, 7);
  for (int i = 64; i < 96; ++i) x[i] = std::fabs(x[i]) + 0.5f;    // warp 2: all positive
  for (int i = 96; i < 128; ++i) x[i] = -std::fabs(x[i]) - 0.5f;  // warp 3: none positive
  std::vector<float> segment_sum(kCount), head(kCount), scan(kCount), down(kCount),
      half_mask(kCount);
  std::vector<unsigned int> votes(3 * kCount / 32);
  const void* inputs[] = {x.data()};
  void* outputs[] = {segment_sum.data(), head.data(),      scan.data(),
                     down.data(),        half_mask.data(), votes.data()};
  ASSERT_EQ(stitch_test_lanes_launch(inputs, outputs, nullptr, nullptr), cudaSuccess);
  for (int i = 0; i < kCount; ++i) {
    const int lane = i % 32;
    const int warp_base = i - lane;
    const int seg16 = warp_base + (lane & ~15);
    // Butterfly order as in the kernel: ((v + v^4) + (.. ^2)) + (.. ^1).
    float s[32];
    for (int l = 0; l < 32; ++l) s[l] = x[warp_base + l];
    for (int offset = 4; offset > 0; offset >>= 1) {
      float next[32];
      for (int l = 0; l < 32; ++l) next[l] = s[l] + s[l ^ offset];
      std::copy(next, next + 32, s);
    }
    SCOPED_TRACE(testing::Message() << "element " << i);
    EXPECT_EQ(segment_sum[i], s[lane]);
    EXPECT_EQ(head[i], x[seg16 + 3]);
    float prefix = 0.0f;
    for (int j = seg16; j <= i; ++j) prefix += x[j];
    EXPECT_NEAR(scan[i], prefix, 1e-5);
    EXPECT_EQ(down[i], (lane & 7) + 3 < 8 ? x[i + 3] : x[i]);
    EXPECT_EQ(half_mask[i], lane < 16 ? x[warp_base + 15] : x[warp_base + 16]);
  }
  for (int w = 0; w < kCount / 32; ++w) {
    unsigned int ballot = 0;
    for (int l = 0; l < 32; ++l) ballot |= (x[32 * w + l] > 0.0f ? 1u : 0u) << l;
    EXPECT_EQ(votes[3 * w], ballot) << "warp " << w;
    EXPECT_EQ(votes[3 * w + 1], ballot != 0 ? 1u : 0u) << "warp " << w;
    EXPECT_EQ(votes[3 * w + 2], ballot == 0xffffffffu ? 1u : 0u) << "warp " << w;
  }
  EXPECT_EQ(votes[3 * 2 + 2], 1u);
  EXPECT_EQ(votes[3 * 3 + 1], 0u);
}

#if !defined(STITCH_EMU_THREADS)
// Throughput of fiber mode (a number, not an assertion): 1024 blocks x 256 threads with
// two barriers each, i.e. 262144 emulated threads and 786432 fiber switches.
TEST(EmuKernels, BlockReverseThroughput) {
  const size_t count = static_cast<size_t>(kReverseBlocks) * kReverseThreads;
  const std::vector<float> x = random_floats(count, -1.0f, 1.0f, 8);
  std::vector<float> y(count, 0.0f);
  const void* inputs[] = {x.data()};
  void* outputs[] = {y.data()};
  const auto start = std::chrono::steady_clock::now();
  ASSERT_EQ(stitch_test_block_reverse_launch(inputs, outputs, nullptr, nullptr), cudaSuccess);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("emulated launch of %d blocks x %d threads with 2 barriers: %.3f s\n", kReverseBlocks,
              kReverseThreads, seconds);
  RecordProperty("block_reverse_seconds", std::to_string(seconds));
  for (size_t b = 0; b < static_cast<size_t>(kReverseBlocks); ++b) {
    for (size_t t = 0; t < static_cast<size_t>(kReverseThreads); ++t) {
      ASSERT_EQ(y[b * kReverseThreads + t],
                2.0f * x[b * kReverseThreads + kReverseThreads - 1 - t]);
    }
  }
}
#endif

TEST(EmuKernels, InvalidConfigurationIsAnError) {
  std::vector<float> x(4), y(4);
  EXPECT_EQ(STITCH_LAUNCH(stitch_test_row_sum_kernel, dim3(1), dim3(2048), 0, nullptr,
                          static_cast<const float*>(x.data()), y.data()),
            cudaErrorInvalidConfiguration);
  EXPECT_EQ(STITCH_LAUNCH(stitch_test_row_sum_kernel, dim3(0), dim3(32), 0, nullptr,
                          static_cast<const float*>(x.data()), y.data()),
            cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_STREQ(cudaGetErrorString(cudaErrorInvalidConfiguration), "invalid configuration argument");
}

}  // namespace
