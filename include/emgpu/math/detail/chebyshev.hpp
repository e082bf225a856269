/// @file
/// @brief Clenshaw summation with the coefficients as literals in the call, so
///        that device code needs no coefficient table in global memory.
#pragma once

#include <type_traits>

#include "../../core/config.hpp"

namespace emgpu::math::detail {

/// @brief Sum_k c_k T_k(t) by Clenshaw's recurrence.
/// @tparam T float or double; every coefficient must already have type T, so a
///         float evaluation never touches double arithmetic.
/// @param c the coefficients from the HIGHEST degree down to c_0 (the order in
///        which Clenshaw consumes them; c_0 enters unhalved).
template <class T, class... C>
EMGPU_HD inline T chebyshev(T t, C... c) {
  static_assert((std::is_same_v<T, C> && ...), "chebyshev: coefficients must have type T");
  const T t2 = t + t;
  T b0 = 0, b1 = 0, b2 = 0;
  ((b2 = b1, b1 = b0, b0 = t2 * b1 - b2 + c), ...);
  return b0 - t * b1;
}

}  // namespace emgpu::math::detail
