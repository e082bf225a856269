/// @file
/// @brief The shared memory a batched CUDA kernel may take per block: the
///        device's opt-in limit, optionally capped (for tests).
///
/// How much of a matrix is staged depends on this limit (the blocked LU
/// stages all of a complex<double> matrix up to about n = 119 on Hopper's
/// 227 KB, 101 on an A100's 163 KB, 78 on sm_86/89's 99 KB), so the
/// partly staged paths a smaller GPU takes are run on the GPU at hand by
/// capping it: the CUDA tests do, with the limits of those GPUs and the 48 KB
/// every CUDA device offers.
#pragma once

#if defined(__CUDACC__)

#include <atomic>
#include <cstddef>

#include "../../backend/cuda_check.hpp"

namespace emgpu::batched::detail {

/// Cap in bytes on the per-block shared memory of the batched kernels
/// (0: none). Read at each launch; set it only between launches.
inline std::atomic<std::size_t>& smem_cap() {
  static std::atomic<std::size_t> cap{0};
  return cap;
}

/// The device's opt-in shared memory per block, at most smem_cap().
/// @throws device_error when the attribute query fails.
inline int smem_optin(int device) {
  int optin = 0;
  EMGPU_CUDA_CHECK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const std::size_t cap = smem_cap().load(std::memory_order_relaxed);
  if (cap > 0 && cap < std::size_t(optin)) optin = int(cap);
  return optin;
}

/// Sets smem_cap() for its lifetime (tests).
class smem_cap_scope {
 public:
  explicit smem_cap_scope(std::size_t bytes) : old_(smem_cap().exchange(bytes)) {}
  ~smem_cap_scope() { smem_cap().store(old_); }
  smem_cap_scope(const smem_cap_scope&) = delete;
  smem_cap_scope& operator=(const smem_cap_scope&) = delete;

 private:
  std::size_t old_;
};

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
