/// @file
/// @brief Integer-order Bessel functions J_n(x), Y_n(x) of real argument for
///        whole ranges of n at once (host only), accurate to ~1e-15 relative.
///
/// Why not call std::cyl_bessel_j(n, x) per order: near the turning point
/// n ~ x and beyond, separate calls are slower and no more accurate than a
/// recurrence, and the series of the analytic solutions need every order from
/// 0 to N. Y_n grows with n, so forward recurrence is stable for it; J_n decays
/// for n > x, so it is computed by Miller's backward recurrence normalised with
/// J_0 + 2 sum J_2k = 1.
#pragma once

#include <cmath>
#include <vector>

#include "../core/error.hpp"

namespace emgpu::analytic {

/// @brief J_0(x) .. J_nmax(x) for x > 0 (Miller backward recurrence).
/// @throws invalid_argument for x <= 0, non-finite x or nmax < 0.
inline std::vector<double> bessel_j_orders(int nmax, double x) {
  detail::require(std::isfinite(x) && x > 0, "emgpu::analytic::bessel_j_orders: x must be > 0");
  detail::require(nmax >= 0, "emgpu::analytic::bessel_j_orders: nmax must be >= 0");
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
    if (std::abs(jm1) > 1e250)  // rescale: only ratios matter
      for (int m = n - 1; m <= start; ++m) j[static_cast<std::size_t>(m)] *= 1e-250, jp1 = j[static_cast<std::size_t>(n)];
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
/// @throws invalid_argument for x <= 0, non-finite x or nmax < 0.
inline std::vector<double> bessel_y_orders(int nmax, double x) {
  detail::require(std::isfinite(x) && x > 0, "emgpu::analytic::bessel_y_orders: x must be > 0");
  detail::require(nmax >= 0, "emgpu::analytic::bessel_y_orders: nmax must be >= 0");
  std::vector<double> y(static_cast<std::size_t>(nmax) + 1);
  y[0] = std::cyl_neumann(0.0, x);
  if (nmax >= 1) y[1] = std::cyl_neumann(1.0, x);
  for (int n = 1; n < nmax; ++n)
    y[static_cast<std::size_t>(n) + 1] = 2.0 * n / x * y[static_cast<std::size_t>(n)] - y[static_cast<std::size_t>(n) - 1];
  return y;
}

}  // namespace emgpu::analytic
