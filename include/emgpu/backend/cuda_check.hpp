/// @file
/// @brief Turns CUDA runtime statuses into emgpu::device_error naming the call.
/// Needs the CUDA runtime headers; included only by CUDA-side headers.
/// @throws emgpu::device_error on any status other than cudaSuccess.
#pragma once

#include <string>

#include <cuda_runtime.h>

#include "../core/error.hpp"

namespace emgpu::detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t status, const char* call, const char* file,
                                          int line) {
  std::string msg = std::string("emgpu: CUDA call ") + call + " failed: " +
                    cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ") at " + file +
                    ":" + std::to_string(line);
  device_error e(msg, static_cast<int>(status));
  e.set_out_of_memory(status == cudaErrorMemoryAllocation);
  throw e;
}

inline void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status != cudaSuccess) {
    // Clear a sticky-free error so that the next call does not report it again.
    (void)cudaGetLastError();
    throw_cuda_error(status, call, file, line);
  }
}

}  // namespace emgpu::detail

/// Checks a CUDA runtime call; throws emgpu::device_error naming it.
#define EMGPU_CUDA_CHECK(call) ::emgpu::detail::check_cuda((call), #call, __FILE__, __LINE__)
/// Checks the launch of the kernel just issued (bad configuration, missing image).
#define EMGPU_CUDA_CHECK_LAUNCH(name) \
  ::emgpu::detail::check_cuda(cudaGetLastError(), "launch of " name, __FILE__, __LINE__)
