/// @file
/// @brief Host-side quadrature rules for the 2D EFIE kernels, in the shapes
///        the rule builders want: Gauss-Legendre and the product-integration
///        rule for a logarithm at an endpoint (both from emgpu::math), and
///        Legendre values.
#pragma once

#include <cmath>
#include <utility>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/constants.hpp"
#include "../../math/quadrature.hpp"

namespace emgpu::kernel::detail {

/// Gauss-Legendre nodes (ascending) and weights on [-1, 1] (emgpu::math).
inline std::pair<std::vector<double>, std::vector<double>> gauss_legendre(int n) {
  auto r = math::gauss_legendre<double>(n);
  return {std::move(r.nodes), std::move(r.weights)};
}

/// Legendre values P_0..P_{n-1} at x.
inline void legendre_values(int n, double x, double* p) {
  if (n > 0) p[0] = 1;
  if (n > 1) p[1] = x;
  for (int k = 2; k < n; ++k) p[k] = ((2 * k - 1) * x * p[k - 1] - (k - 1) * p[k - 2]) / k;
}

/// @brief Nodes y_i in (0, 1), weights w_i (ordinary) and v_i (product) such that
///        sum v_i f(y_i) = integral_0^1 f(y) ln(y) dy exactly for polynomials of
///        degree < n (emgpu::math::log_product_weights with the singularity at 0).
struct log_rule {
  std::vector<double> y, w, v;
};
inline log_rule log_endpoint_rule(int n) {
  auto g = math::gauss_legendre_01<double>(n);
  return {std::move(g.nodes), std::move(g.weights), math::log_product_weights<double>(n, 0.0, 1.0, 0.0)};
}

}  // namespace emgpu::kernel::detail
