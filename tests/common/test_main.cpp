// Test main for Catch2 2.x and 3.x. Built twice: plainly for CPU tests, and
// with EMGPU_TEST_CUDA for CUDA tests, where it exits 77 (ctest: skipped)
// with the reason when no GPU is visible, so a CPU-only machine never
// reports a CUDA test as passed.
#include <cstdio>

#if defined(EMGPU_TEST_CUDA)
#include <cuda_runtime_api.h>
#endif

int emgpu_catch_run(int argc, char* argv[]);  // catch_session.cpp

int main(int argc, char* argv[]) {
#if defined(EMGPU_TEST_CUDA)
  int n = 0;
  const cudaError_t st = cudaGetDeviceCount(&n);
  if (st != cudaSuccess || n == 0) {
    std::printf("SKIPPED: no usable CUDA device (%s); CUDA tests need a GPU.\n",
                st != cudaSuccess ? cudaGetErrorString(st) : "device count is 0");
    return 77;
  }
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) == cudaSuccess)
    std::printf("CUDA device 0: %s (sm_%d%d, %.1f GiB)\n", p.name, p.major, p.minor,
                double(p.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0));
#endif
  return emgpu_catch_run(argc, argv);
}
