/// @file
/// @brief Compile-time configuration shared by every emgpu header: host/device
///        annotations, the index type and the library version.
#pragma once

#include <cstddef>
#include <cstdint>

#define EMGPU_VERSION_MAJOR 0
#define EMGPU_VERSION_MINOR 1
#define EMGPU_VERSION_PATCH 0

// Functions that must run both on the host and inside CUDA kernels carry
// EMGPU_HD. Under a host compiler the annotation vanishes, which is what lets a
// CPU-only user include every header without nvcc.
// EMGPU_UNROLL asks nvcc to unroll the next loop of such a function; a host
// compiler would warn about an unknown `#pragma unroll` (-Wall) in the user's
// own build, so there it is nothing (the optimizer unrolls as it sees fit).
#if defined(__CUDACC__)
#define EMGPU_HD __host__ __device__
#define EMGPU_DEVICE __device__
#define EMGPU_HAS_CUDA 1
#define EMGPU_UNROLL _Pragma("unroll")
#else
#define EMGPU_HD
#define EMGPU_DEVICE
#define EMGPU_HAS_CUDA 0
#define EMGPU_UNROLL
#endif

// Hot per-element helpers called from inside OpenMP-outlined loops: GCC's
// inliner treats the outlined body as a new function and may keep the call,
// which also stops vectorisation (it made the TLM OpenMP step 3x slower than
// the serial one). Forcing the inline keeps both paths identical.
#if defined(__CUDACC__)
#define EMGPU_FORCEINLINE __forceinline__
#elif defined(__GNUC__) || defined(__clang__)
#define EMGPU_FORCEINLINE inline __attribute__((always_inline))
#else
#define EMGPU_FORCEINLINE inline
#endif

#if defined(_OPENMP)
#define EMGPU_HAS_OPENMP 1
#else
#define EMGPU_HAS_OPENMP 0
#endif

#if defined(__CUDA_ARCH__)
#define EMGPU_DEVICE_CODE 1
#else
#define EMGPU_DEVICE_CODE 0
#endif

namespace emgpu {

/// @brief Signed index type used for sizes, strides and loop indices.
/// Signed so that differences and reverse loops need no casts; 64-bit because
/// a single N = 32768 complex<double> matrix already has 2^30 entries.
using index_t = std::ptrdiff_t;

}  // namespace emgpu
