/// @file
/// @brief Integer-order Bessel functions J_n(x), Y_n(x) of real argument for
///        whole ranges of n at once (host only), accurate to ~1e-15 relative.
///
/// Why not call std::cyl_bessel_j(n, x) per order: near the turning point
/// n ~ x and beyond, separate calls are slower and no more accurate than a
/// recurrence, and the series of the analytic solutions need every order from
/// 0 to N. Y_n grows with n, so forward recurrence is stable for it; J_n decays
/// for n > x, so it is computed by Miller's backward recurrence normalised with
/// J_0 + 2 sum J_2k = 1. Below x = 1e-8 the power series replaces it.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "../core/error.hpp"
#include "../math/bessel.hpp"

namespace emgpu::analytic {

/// Largest x and nmax the order-range functions accept. The work and memory are
/// O(max(x, nmax)) (8 bytes an order, 1e8: 0.8 GB), and the orders must fit an int.
inline constexpr double max_order_argument = 1e8;

/// @brief J_0(x) .. J_nmax(x) for 0 < x <= max_order_argument: Miller's backward
///        recurrence, or the power series for x < 1e-8.
/// @throws invalid_argument for x <= 0, non-finite or too large x, nmax < 0 or
///         nmax > max_order_argument.
inline std::vector<double> bessel_j_orders(int nmax, double x) {
  detail::require(std::isfinite(x) && x > 0, "emgpu::analytic::bessel_j_orders: x must be finite and > 0");
  detail::require(nmax >= 0, "emgpu::analytic::bessel_j_orders: nmax must be >= 0");
  detail::require(x <= max_order_argument && nmax <= max_order_argument,
                  "emgpu::analytic::bessel_j_orders: x and nmax must be <= 1e8 (max_order_argument)");
  if (x < 1e-8) {
    // The recurrence's factor 2n/x would overflow here (to inf, then inf - inf),
    // while J_n = (x/2)^n / n! (1 - (x/2)^2 / (n + 1)) is exact to rounding: the
    // next term is (x/2)^4 / 2 < 1e-34 relative. x/2 of a subnormal x rounds on
    // the subnormal grid, which is all the precision J_1 has there.
    const double h = 0.5 * x;
    std::vector<double> out(static_cast<std::size_t>(nmax) + 1, 0.0);
    double t = 1.0;  // (x/2)^n / n!
    for (int n = 0; n <= nmax && t != 0.0; ++n) {
      if (n > 0) t *= h / n;
      out[static_cast<std::size_t>(n)] = t * (1.0 - h * h / (n + 1));
    }
    return out;
  }
  // Start far enough above both n and x that the seed's error has decayed below
  // rounding by the time the recurrence reaches the orders we keep.
  const int big = std::max(nmax, static_cast<int>(x));
  const int start = big + 40 + static_cast<int>(3.0 * std::sqrt(static_cast<double>(big)));
  std::vector<double> j(static_cast<std::size_t>(start) + 1, 0.0);
  double jp1 = 0.0;
  j[static_cast<std::size_t>(start)] = 1e-300;
  for (int n = start; n >= 1; --n) {
    const double jn = j[static_cast<std::size_t>(n)];
    const double jm1 = 2.0 * n / x * jn - jp1;
    jp1 = jn;
    j[static_cast<std::size_t>(n) - 1] = jm1;
    if (std::abs(jm1) > 1e250) {  // rescale: only ratios matter
      // Above n - 1 the values fall with the order (2m/x > 2 there), so the
      // first one that has underflowed to 0 ends the ones left to scale: only
      // the nonzero entries are touched, not all up to start (which made small
      // x with large nmax quadratic).
      for (int m = n - 1; m <= start && j[static_cast<std::size_t>(m)] != 0.0; ++m) j[static_cast<std::size_t>(m)] *= 1e-250;
      jp1 = j[static_cast<std::size_t>(n)];
    }
  }
  // J_0 + 2 sum_k J_2k = 1 fixes the scale; for large x the alternating terms
  // are O(x^-1/2) each, so the sum loses only ~sqrt(x) ulps.
  double norm = j[0];
  for (int n = 2; n <= start; n += 2) norm += 2.0 * j[static_cast<std::size_t>(n)];
  const double scale = 1.0 / norm;
  std::vector<double> out(static_cast<std::size_t>(nmax) + 1);
  for (int n = 0; n <= nmax; ++n) out[static_cast<std::size_t>(n)] = j[static_cast<std::size_t>(n)] * scale;
  return out;
}

/// @brief Y_0(x) .. Y_nmax(x) for x > 0 (forward recurrence from Y_0, Y_1).
///        Orders whose value is below -DBL_MAX are -inf.
/// @throws invalid_argument for x <= 0, non-finite or too large x, nmax < 0 or
///         nmax > max_order_argument.
inline std::vector<double> bessel_y_orders(int nmax, double x) {
  detail::require(std::isfinite(x) && x > 0, "emgpu::analytic::bessel_y_orders: x must be finite and > 0");
  detail::require(nmax >= 0, "emgpu::analytic::bessel_y_orders: nmax must be >= 0");
  detail::require(x <= max_order_argument && nmax <= max_order_argument,
                  "emgpu::analytic::bessel_y_orders: x and nmax must be <= 1e8 (max_order_argument)");
  std::vector<double> y(static_cast<std::size_t>(nmax) + 1);
  // Not std::cyl_neumann: libstdc++ throws for subnormal x and loses about
  // 1e-14 x relative at large x (its phase x - pi/4 is rounded); emgpu::math's
  // Y0, Y1 hold 1e-15 over the whole range (docs/math.md).
  const auto b = math::bessel_jy01(x);
  y[0] = b.y0;
  if (nmax >= 1) y[1] = b.y1;
  for (int n = 1; n < nmax; ++n) {
    if (std::isinf(y[static_cast<std::size_t>(n)])) {
      // Overflowed (only for n > x, where Y_n < 0 and |Y_n| grows with n): the
      // higher orders are -inf too, not the recurrence's -inf - (-inf) = NaN.
      std::fill(y.begin() + n + 1, y.end(), -std::numeric_limits<double>::infinity());
      break;
    }
    y[static_cast<std::size_t>(n) + 1] = 2.0 * n / x * y[static_cast<std::size_t>(n)] - y[static_cast<std::size_t>(n) - 1];
  }
  return y;
}

}  // namespace emgpu::analytic
