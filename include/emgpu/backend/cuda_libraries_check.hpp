/// @file
/// @brief Turns cuBLAS and cuSOLVER statuses into emgpu::device_error naming
///        the call. Included only by nvcc-compiled code that uses those libraries.
/// @throws emgpu::device_error on any status other than success; allocation
///         failures set device_error::out_of_memory().
#pragma once

#if defined(__CUDACC__)

#include <string>

#include <cublas_v2.h>
#include <cusolverDn.h>

#include "../core/error.hpp"

namespace emgpu::detail {

inline const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown cuBLAS status";
  }
}

inline const char* cusolver_status_name(cusolverStatus_t s) {
  switch (s) {
    case CUSOLVER_STATUS_SUCCESS: return "CUSOLVER_STATUS_SUCCESS";
    case CUSOLVER_STATUS_NOT_INITIALIZED: return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED: return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE: return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH: return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_EXECUTION_FAILED: return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR: return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_NOT_SUPPORTED: return "CUSOLVER_STATUS_NOT_SUPPORTED";
    default: return "unknown cuSOLVER status";
  }
}

inline void check_cublas(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  device_error e(std::string("emgpu: cuBLAS call ") + call + " failed: " + cublas_status_name(s) +
                     " at " + file + ":" + std::to_string(line),
                 static_cast<int>(s));
  e.set_out_of_memory(s == CUBLAS_STATUS_ALLOC_FAILED);
  throw e;
}

inline void check_cusolver(cusolverStatus_t s, const char* call, const char* file, int line) {
  if (s == CUSOLVER_STATUS_SUCCESS) return;
  device_error e(std::string("emgpu: cuSOLVER call ") + call + " failed: " +
                     cusolver_status_name(s) + " at " + file + ":" + std::to_string(line),
                 static_cast<int>(s));
  e.set_out_of_memory(s == CUSOLVER_STATUS_ALLOC_FAILED);
  throw e;
}

}  // namespace emgpu::detail

/// Checks a cuBLAS call; throws emgpu::device_error naming it.
#define EMGPU_CUBLAS_CHECK(call) ::emgpu::detail::check_cublas((call), #call, __FILE__, __LINE__)
/// Checks a cuSOLVER call; throws emgpu::device_error naming it.
#define EMGPU_CUSOLVER_CHECK(call) ::emgpu::detail::check_cusolver((call), #call, __FILE__, __LINE__)

#endif  // __CUDACC__
