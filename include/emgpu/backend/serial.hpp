/// @file
/// @brief The serial (single-thread host) backend and its primitives.
/// It is also the generic fallback: openmp derives from serial, so every
/// primitive without an OpenMP overload runs this code.
#pragma once

#include <algorithm>
#include <span>
#include <vector>

#include "../core/error.hpp"
#include "traits.hpp"

namespace emgpu::backend {

/// @brief Single-threaded host execution. Stateless, cheap to copy.
struct serial {};

/// @brief Calls f(i) for i in [0, n).
template <class F>
inline void for_each_index(const serial&, index_t n, F&& f) {
  for (index_t i = 0; i < n; ++i) f(i);
}

/// @brief Calls f(i, j) for i in [0, n0), j in [0, n1); i varies fastest so a
///        column-major matrix is walked contiguously.
template <class F>
inline void for_each_index(const serial&, index_t n0, index_t n1, F&& f) {
  for (index_t j = 0; j < n1; ++j)
    for (index_t i = 0; i < n0; ++i) f(i, j);
}

/// @brief op-reduction of map(i) over [0, n), starting from init.
/// op must be associative (as on every backend). Four interleaved partial
/// results break the add-latency chain (about 4x faster for sums); the order
/// is fixed, so results are reproducible run to run.
template <class T, class Map, class Op>
inline T reduce(const serial&, index_t n, T init, Map&& map, Op&& op) {
  if (n < 8) {
    T acc = init;
    for (index_t i = 0; i < n; ++i) acc = op(acc, map(i));
    return acc;
  }
  T a0 = map(0), a1 = map(1), a2 = map(2), a3 = map(3);
  // The blocks of four end at the last multiple of 4, so that the tail loop
  // visibly runs at most 3 times (with `i + 3 < n` g++ 13 warned of an
  // overflowing iteration, -Waggressive-loop-optimizations).
  const index_t end4 = n - n % 4;
  index_t i = 4;
  for (; i < end4; i += 4) {
    a0 = op(a0, map(i));
    a1 = op(a1, map(i + 1));
    a2 = op(a2, map(i + 2));
    a3 = op(a3, map(i + 3));
  }
  for (; i < n; ++i) a0 = op(a0, map(i));
  return op(init, op(op(a0, a1), op(a2, a3)));
}

/// @brief Host backends complete every call before returning.
inline void synchronize(const serial&) {}

/// @brief Copies host data into an owning buffer of the backend.
template <class T>
inline std::vector<T> to_backend(const serial&, std::span<const T> host) {
  return std::vector<T>(host.begin(), host.end());
}

/// @brief Copies a backend buffer to host memory.
template <class T>
inline std::vector<T> to_host(const serial&, const std::vector<T>& v) {
  return v;
}

/// @brief Allocates n elements in the backend's space (contents unspecified
///        for trivially constructible T on device; value-initialised on host).
template <class T>
inline std::vector<T> make_vector(const serial&, index_t n) {
  detail::require(n >= 0, "emgpu::make_vector: negative size");
  return std::vector<T>(static_cast<std::size_t>(n));
}

/// @brief Raw copies between host memory and the backend's memory.
template <class T>
inline void copy_to_host(const serial&, const T* src, index_t n, T* dst) {
  std::copy(src, src + n, dst);
}
template <class T>
inline void copy_from_host(const serial&, const T* src, index_t n, T* dst) {
  std::copy(src, src + n, dst);
}
/// @brief Copy within the backend's memory space.
template <class T>
inline void copy_within(const serial&, const T* src, index_t n, T* dst) {
  std::copy(src, src + n, dst);
}

}  // namespace emgpu::backend

namespace emgpu {
template <>
struct backend_traits<backend::serial> {
  using memory_space = host_space;
  template <class T>
  using vector = std::vector<T>;
  static constexpr const char* name = "serial";
  static constexpr bool is_device = false;
};
}  // namespace emgpu
