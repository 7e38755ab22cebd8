// Kernel bugs the emulator must report instead of hanging or computing garbage: divergent
// barriers, threads that exit before a barrier, mismatched warp collectives, grid barriers
// outside cooperative launches, oversized shared arenas, misaligned 16-byte accesses. Each dies
// with a message naming the kernel (and block) and the cause.
#include <gtest/gtest.h>

#include "stitch_prelude.cuh"

STITCH_KERNEL void emu_error_divergent_barrier(int* out) {
  if (threadIdx.x < 16) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

STITCH_KERNEL void emu_error_exit_before_barrier(int* out) {
  if (threadIdx.x == 5) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

STITCH_KERNEL void emu_error_mismatched_collectives(int* out) {
  if (threadIdx.x == 0) {
    out[0] = __shfl_sync(0xffffffffu, 1, 0);
  } else {
    out[threadIdx.x] = static_cast<int>(__ballot_sync(0xffffffffu, 1));
  }
}

STITCH_KERNEL void emu_error_warp_op_against_block_barrier(int* out) {
  if (threadIdx.x == 0) {
    __syncwarp();
  } else {
    __syncthreads();
  }
  out[threadIdx.x] = 1;
}

STITCH_KERNEL void emu_error_grid_sync(unsigned int* counter) { stitch_grid_sync(counter); }

STITCH_KERNEL void emu_error_big_arena(int* out) {
  out[0] = ::stitch_emu::shared_arena(64 * 1024)[0];
}

// A 128-bit load from a float pointer 4 bytes past 16-byte alignment: a
// misaligned-address fault on the GPU (x86 would load it).
STITCH_KERNEL void emu_error_misaligned_float4(const float* in, float* out) {
  const float4 v = *reinterpret_cast<const float4*>(in + 1);
  out[threadIdx.x] = v.x;
}

namespace {

class EmuErrorsDeathTest : public testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
  int out_[64] = {};
  unsigned int counter_[1] = {0};
};

TEST_F(EmuErrorsDeathTest, MisalignedVectorAccess) {
  alignas(16) float in[8] = {};
  float out[32] = {};
  EXPECT_DEATH(
      STITCH_LAUNCH(emu_error_misaligned_float4, dim3(1), dim3(32), 0, nullptr, in, out),
      "kernel emu_error_misaligned_float4 block \\(0,0,0\\): 16-byte access at 0x[0-9a-f]+, "
      "which is not 16-byte aligned");
}

// Blocks of a non-cooperative launch run in parallel: either block may report first.
TEST_F(EmuErrorsDeathTest, DivergentSyncthreads) {
  EXPECT_DEATH(STITCH_LAUNCH(emu_error_divergent_barrier, dim3(2), dim3(32), 0, nullptr, out_),
               "kernel emu_error_divergent_barrier block \\([01],0,0\\): divergent __syncthreads: "
               "thread \\([0-9]+,0,0\\) waits at .*emu_errors_test.cc:[0-9]+");
}

TEST_F(EmuErrorsDeathTest, ThreadExitedBeforeBarrier) {
  EXPECT_DEATH(STITCH_LAUNCH(emu_error_exit_before_barrier, dim3(1), dim3(32), 0, nullptr, out_),
               "deadlock in kernel emu_error_exit_before_barrier.*\n  block \\(0,0,0\\):\n"
               "    threads 0-4: waiting at __syncthreads \\(.*emu_errors_test.cc:[0-9]+\\)\n"
               "    threads 5-5: exited\n"
               "    threads 6-31: waiting at __syncthreads");
}

TEST_F(EmuErrorsDeathTest, MismatchedWarpCollectives) {
  EXPECT_DEATH(STITCH_LAUNCH(emu_error_mismatched_collectives, dim3(1), dim3(32), 0, nullptr, out_),
               "divergent warp collectives in warp 0: lane [0-9]+ waits at __(shfl|ballot)_sync");
}

TEST_F(EmuErrorsDeathTest, WarpCollectiveAgainstBlockBarrier) {
  EXPECT_DEATH(
      STITCH_LAUNCH(emu_error_warp_op_against_block_barrier, dim3(1), dim3(64), 0, nullptr, out_),
      "deadlock in kernel emu_error_warp_op_against_block_barrier.*\n.*\n"
      "    threads 0-0: waiting at __syncwarp with mask 0xffffffff\n"
      "    threads 1-63: waiting at __syncthreads");
}

TEST_F(EmuErrorsDeathTest, GridSyncNeedsCooperativeLaunch) {
  EXPECT_DEATH(STITCH_LAUNCH(emu_error_grid_sync, dim3(2), dim3(32), 0, nullptr, counter_),
               "stitch_grid_sync at .* in a non-cooperative launch; launch the kernel with "
               "STITCH_LAUNCH_COOPERATIVE");
}

TEST_F(EmuErrorsDeathTest, GridSyncNeedsCounter) {
  unsigned int* null_counter = nullptr;
  EXPECT_DEATH(
      STITCH_LAUNCH_COOPERATIVE(emu_error_grid_sync, dim3(2), dim3(32), 0, nullptr, null_counter),
      "got a null counter; it must point into the zeroed workspace");
}

TEST_F(EmuErrorsDeathTest, SharedArenaAboveStaticLimit) {
  EXPECT_DEATH(STITCH_LAUNCH(emu_error_big_arena, dim3(1), dim3(32), 0, nullptr, out_),
               "shared arena of 65536 bytes exceeds CUDA's 48 KiB static __shared__ limit");
}

TEST_F(EmuErrorsDeathTest, PrimitivesOutsideAKernel) {
  EXPECT_DEATH(__syncthreads(), "__syncthreads called outside an emulated kernel launch");
}

}  // namespace
