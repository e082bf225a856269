/// @file
/// @brief Scalar helpers shared by the host and device LU code: the pivot
///        magnitude, finiteness, and the pivot ordering used by every backend.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include "../../core/complex.hpp"
#include "../../core/config.hpp"
#include "../../core/error.hpp"

namespace emgpu::dense::detail {

using emgpu::detail::require;

/// Finite real and imaginary parts; x - x is NaN exactly for Inf and NaN and
/// survives -ffast-math better than std::isfinite.
template <class R>
EMGPU_HD inline bool finite_real(R x) {
  return (x - x) == (x - x);
}
template <class T>
EMGPU_HD inline bool finite_scalar(T x) {
  if constexpr (is_complex_v<T>) return finite_real(x.real()) && finite_real(x.imag());
  else return finite_real(x);
}

/// Pivot search key: NaN maps to +infinity, so that a NaN in the pivot column
/// is chosen (and then rejected as non-finite) instead of being skipped by
/// comparisons that are always false.
template <class R>
EMGPU_HD inline R pivot_key(R v) {
  return v != v ? std::numeric_limits<R>::infinity() : v;
}

/// True when candidate (v, i) beats (best, bi): larger key, ties to the
/// smaller row, so that every backend and every reduction order picks the same
/// row for the same data. Start a search with best = -1, bi = -1 (keys are >= 0).
template <class R>
EMGPU_HD inline bool pivot_better(R v, index_t i, R best, index_t bi) {
  return v > best || (v == best && i < bi);
}

/// Reciprocal 1 / x for real and complex scalars.
template <class T>
EMGPU_HD inline T reciprocal(T x) {
  return T(1) / x;
}

[[noreturn]] inline void throw_singular(const char* who, index_t column) {
  throw singular_matrix(std::string(who) + ": zero or non-finite pivot in column " +
                            std::to_string(column) + " (zero-based)",
                        column);
}

/// Automatic outer block size: large enough that the trailing update is a
/// GEMM with a deep inner dimension, small enough that the panel (the
/// sequential part) stays a small fraction of the work.
/// A requested size above n acts as n (one block either way), which keeps
/// block-count and offset arithmetic (k * nb) clear of overflow.
inline index_t host_block_size(index_t n, index_t requested) {
  if (requested > 0) return requested < n ? requested : (n > 0 ? n : 1);
  index_t nb = (n / 8) / 16 * 16;
  return nb < 16 ? 16 : (nb > 128 ? 128 : nb);
}

}  // namespace emgpu::dense::detail
