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

/// @brief Sum_k c_k T_k(u - 1) for u in [0, 2], taking u = t + 1 rather than t.
///
/// Near t = -1 the variable t itself has lost the low bits of u (for the small-
/// argument Bessel pieces u = x^2/32, so t = -1 + x^2/32 forgets x for small x), and
/// near t = +-1 plain Clenshaw amplifies rounding. Reinsch's modification runs the
/// recurrence on w = t + 1 (or t - 1) and the differences d_k = b_k -+ b_{k+1}:
///   d_k = c_k + 2 w b_{k+1} + s d_{k+1},  b_k = d_k + s b_{k+1},  f = d_0 - w b_1,
/// with s = -1, w = u near t = -1 and s = +1, w = u - 2 near t = +1. Plain Clenshaw
/// is the better one in the middle (|t| < 1/2). Measured in float on the Bessel
/// pieces, this cuts the worst error from about 25 to about 8 ulps.
template <class T, class... C>
EMGPU_HD inline T chebyshev_shifted(T u, C... c) {
  static_assert((std::is_same_v<T, C> && ...), "chebyshev_shifted: coefficients must have type T");
  if (u < T(0.5) || u > T(1.5)) {
    const bool low = u < T(1);
    const T s = low ? T(-1) : T(1);
    const T w = low ? u : u - T(2);
    const T w2 = w + w;
    T b = 0, bp = 0, d = 0;
    ((bp = b, d = w2 * b + c + s * d, b = d + s * bp), ...);
    return d - w * bp;
  }
  return chebyshev(u - T(1), c...);
}

}  // namespace emgpu::math::detail
