/// @file
/// @brief Gauss-Legendre rules on [-1, 1] and [0, 1], and the product-integration
///        rule for Integral_a^b f(x) ln|x - x0| dx used by locally corrected
///        Nystrom (LCN) near-field corrections. Host functions.
#pragma once

#include <cmath>
#include <string>
#include <type_traits>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "detail/quadrature_impl.hpp"

namespace emgpu::math {

/// @brief A quadrature rule: nodes in ascending order and their weights.
/// @tparam T float or double.
template <class T>
struct quadrature_rule {
  std::vector<T> nodes;
  std::vector<T> weights;
};

/// @brief n-point Gauss-Legendre rule on [-1, 1] (exact for degree <= 2n - 1).
///
/// Nodes and weights are computed in long double (Newton on the three-term
/// recurrence) and rounded once: |error| <= 1 ulp of T for n <= 128 in the tests.
/// The rule is exactly symmetric (x_i = -x_{n-1-i}, w_i = w_{n-1-i}).
/// @tparam T float or double.
/// @throws emgpu::invalid_argument if n < 1.
template <class T = double>
quadrature_rule<T> gauss_legendre(index_t n) {
  static_assert(std::is_floating_point_v<T>, "gauss_legendre: T must be a floating-point type");
  emgpu::detail::require(n >= 1, "emgpu::math::gauss_legendre: n must be >= 1, got " + std::to_string(n));
  std::vector<detail::ld> x, w;
  detail::gauss_legendre_ld(n, x, w);
  quadrature_rule<T> r{std::vector<T>(x.size()), std::vector<T>(w.size())};
  for (std::size_t i = 0; i < x.size(); ++i) {
    r.nodes[i] = T(x[i]);
    r.weights[i] = T(w[i]);
  }
  return r;
}

/// @brief n-point Gauss-Legendre rule on [0, 1]: nodes (1 + x_i)/2, weights w_i/2.
/// @tparam T float or double.
/// @throws emgpu::invalid_argument if n < 1.
template <class T = double>
quadrature_rule<T> gauss_legendre_01(index_t n) {
  static_assert(std::is_floating_point_v<T>, "gauss_legendre_01: T must be a floating-point type");
  emgpu::detail::require(n >= 1, "emgpu::math::gauss_legendre_01: n must be >= 1, got " + std::to_string(n));
  std::vector<detail::ld> x, w;
  detail::gauss_legendre_ld(n, x, w);
  quadrature_rule<T> r{std::vector<T>(x.size()), std::vector<T>(w.size())};
  for (std::size_t i = 0; i < x.size(); ++i) {
    r.nodes[i] = T((1 + x[i]) / 2);
    r.weights[i] = T(w[i] / 2);
  }
  return r;
}

/// @brief Weights w_i for the n Gauss-Legendre nodes of [a, b] (the nodes of
///        gauss_legendre<T>(n) mapped by x = (a+b)/2 + (b-a)/2 t) such that
///        Sum_i w_i f(x_i) = Integral_a^b f(x) ln|x - x0| dx exactly when f is a
///        polynomial of degree < n (interpolatory product integration).
///
/// x0 may lie inside [a, b], at an endpoint, or outside. On [-1, 1] the weights are
/// w^GL_i Sum_{k<n} (2k+1)/2 m_k P_k(t_i) with the moments
/// m_k = Integral P_k(t) ln|t - t0| dt = 2 (Q_{k+1}(t0) - Q_{k-1}(t0)) / (2k+1)
/// (Legendre functions of the second kind; see detail/quadrature_impl.hpp for the
/// stable evaluation inside and outside); mapping to [a, b] adds ln((b-a)/2) times
/// the plain Gauss weights. Computed in long double; for smooth f the sum converges
/// like Gauss-Legendre for f itself (about 1e-15 relative with n = 16 on a cell a
/// tenth of a wavelength long).
/// @tparam T float or double.
/// @throws emgpu::invalid_argument if n < 1, a >= b, or a, b, x0 are not finite.
template <class T>
std::vector<T> log_product_weights(index_t n, T a, T b, T x0) {
  static_assert(std::is_floating_point_v<T>, "log_product_weights: T must be a floating-point type");
  using detail::ld;
  emgpu::detail::require(n >= 1, "emgpu::math::log_product_weights: n must be >= 1, got " + std::to_string(n));
  emgpu::detail::require(std::isfinite(a) && std::isfinite(b) && std::isfinite(x0),
                  "emgpu::math::log_product_weights: a, b and x0 must be finite");
  emgpu::detail::require(a < b, "emgpu::math::log_product_weights: need a < b");
  std::vector<ld> t, wgl;
  detail::gauss_legendre_ld(n, t, wgl);
  const ld h = (ld(b) - ld(a)) / 2;
  const ld t0 = (2 * ld(x0) - ld(a) - ld(b)) / (ld(b) - ld(a));
  const std::vector<ld> m = detail::log_moments(n, t0);
  const ld lnh = logl(h);
  std::vector<T> w(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < std::size_t(n); ++i) {
    // Sum_k (2k+1)/2 m_k P_k(t_i), P_k by the recurrence.
    ld p0 = 1, p1 = t[i];
    ld s = m[0] / 2;
    if (n > 1) s += ld(1.5) * m[1] * p1;
    for (index_t k = 2; k < n; ++k) {
      const ld p2 = (ld(2 * k - 1) * t[i] * p1 - ld(k - 1) * p0) / ld(k);
      p0 = p1;
      p1 = p2;
      s += ld(2 * k + 1) / 2 * m[std::size_t(k)] * p2;
    }
    w[i] = T(h * wgl[i] * (s + lnh));
  }
  return w;
}

}  // namespace emgpu::math
