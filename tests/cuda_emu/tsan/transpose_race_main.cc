// stitch_cuda_emu_tsan clean|racy: the shared-memory transpose of emu_test_kernels.cu in
// the threads emulation under ThreadSanitizer (tests/cuda_emu/tests.cmake). "clean" runs
// the kernel with its __syncthreads and checks the result: TSan must stay silent.
// "racy" runs the copy without the barrier: TSan must report a data race on the tile.
#include <cstdio>
#include <cstring>
#include <vector>

#include "../kernels/emu_test_kernels.cu"

int main(int argc, char** argv) {
  const bool racy = argc == 2 && std::strcmp(argv[1], "racy") == 0;
  if (argc != 2 || (!racy && std::strcmp(argv[1], "clean") != 0)) {
    std::fprintf(stderr, "usage: stitch_cuda_emu_tsan clean|racy\n");
    return 2;
  }
  std::vector<float> x(kTransposeRows * kTransposeCols);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  std::vector<float> y(x.size(), -1.0f);
  const void* inputs[] = {x.data()};
  void* outputs[] = {y.data()};
  const cudaError_t error =
      racy ? stitch_test_transpose_racy_launch(inputs, outputs, nullptr, nullptr)
           : stitch_test_transpose_launch(inputs, outputs, nullptr, nullptr);
  if (error != cudaSuccess) {
    std::fprintf(stderr, "launch failed: %s\n", cudaGetErrorString(error));
    return 1;
  }
  if (racy) return 0;
  for (int r = 0; r < kTransposeRows; ++r) {
    for (int c = 0; c < kTransposeCols; ++c) {
      if (y[c * kTransposeRows + r] != x[r * kTransposeCols + c]) {
        std::fprintf(stderr, "wrong transpose at (%d, %d)\n", r, c);
        return 1;
      }
    }
  }
  std::printf("transpose correct\n");
  return 0;
}
