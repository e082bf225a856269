/// @file
/// @brief Host-side quadrature rules for the 2D EFIE kernels: Gauss-Legendre
///        nodes, the product-integration rule for a logarithm at an endpoint,
///        and Legendre values. Computed once per discretisation, so simplicity
///        beats speed here.
#pragma once

#include <cmath>
#include <utility>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/constants.hpp"

namespace emgpu::kernel::detail {

/// Gauss-Legendre nodes (ascending) and weights on [-1, 1] (Newton on P_n).
inline std::pair<std::vector<double>, std::vector<double>> gauss_legendre(int n) {
  std::vector<double> x(static_cast<std::size_t>(n)), w(static_cast<std::size_t>(n));
  for (int i = 0; i < (n + 1) / 2; ++i) {
    double z = std::cos(constants::pi * (i + 0.75) / (n + 0.5)), dp = 0;
    for (int it = 0; it < 100; ++it) {
      double p0 = 1, p1 = z;
      for (int k = 2; k <= n; ++k) {
        const double p2 = ((2 * k - 1) * z * p1 - (k - 1) * p0) / k;
        p0 = p1;
        p1 = p2;
      }
      if (n == 1) p1 = z, p0 = 1;
      dp = n * (z * p1 - p0) / (z * z - 1);
      const double dz = p1 / dp;
      z -= dz;
      if (std::abs(dz) < 1e-16) {
        // one more evaluation of dp at the converged z
        double q0 = 1, q1 = z;
        for (int k = 2; k <= n; ++k) {
          const double q2 = ((2 * k - 1) * z * q1 - (k - 1) * q0) / k;
          q0 = q1;
          q1 = q2;
        }
        if (n == 1) q1 = z, q0 = 1;
        dp = n * (z * q1 - q0) / (z * z - 1);
        break;
      }
    }
    x[std::size_t(i)] = -z;
    x[std::size_t(n - 1 - i)] = z;
    w[std::size_t(i)] = w[std::size_t(n - 1 - i)] = 2 / ((1 - z * z) * dp * dp);
  }
  if (n % 2 == 1) x[std::size_t(n / 2)] = 0;
  return {x, w};
}

/// Legendre values P_0..P_{n-1} at x.
inline void legendre_values(int n, double x, double* p) {
  if (n > 0) p[0] = 1;
  if (n > 1) p[1] = x;
  for (int k = 2; k < n; ++k) p[k] = ((2 * k - 1) * x * p[k - 1] - (k - 1) * p[k - 2]) / k;
}

/// @brief Nodes y_i in (0, 1), weights w_i (ordinary) and v_i (product) such that
///        sum v_i f(y_i) = integral_0^1 f(y) ln(y) dy exactly for polynomials of
///        degree < n, using the shifted-Legendre moments
///        integral_0^1 P_k(2y-1) ln y dy = -1 (k = 0), (-1)^(k+1) / (k (k+1)) (k >= 1).
struct log_rule {
  std::vector<double> y, w, v;
};
inline log_rule log_endpoint_rule(int n) {
  auto [x, wg] = gauss_legendre(n);
  log_rule r;
  r.y.resize(std::size_t(n));
  r.w.resize(std::size_t(n));
  r.v.assign(std::size_t(n), 0.0);
  std::vector<double> p(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    r.y[std::size_t(i)] = 0.5 * (x[std::size_t(i)] + 1);
    r.w[std::size_t(i)] = 0.5 * wg[std::size_t(i)];
    legendre_values(n, x[std::size_t(i)], p.data());
    double v = 0;
    for (int k = 0; k < n; ++k) {
      const double mu = k == 0 ? -1.0 : ((k % 2 == 1) ? 1.0 : -1.0) / (double(k) * (k + 1));
      v += (2 * k + 1) * p[std::size_t(k)] * mu;
    }
    r.v[std::size_t(i)] = r.w[std::size_t(i)] * v;
  }
  return r;
}

}  // namespace emgpu::kernel::detail
