/// @file
/// @brief Exact (Mie-series) TM_z solution for a perfectly conducting circular
///        cylinder: surface current J_z(phi) and bistatic echo width sigma(phi).
///
/// Conventions (design/physics-conventions.md, shared): time factor exp(+j w t);
/// incident E_z = E0 exp(-j k (x cos phi_i + y sin phi_i)) with phi_i the
/// direction the wave travels; eta = eta0 = 376.730313668 ohm.
///   J_z(phi)   = 2 E0 / (pi k a eta) * sum_n j^-n exp(j n (phi - phi_i)) / H_n^(2)(ka)
///   sigma(phi) = (4 / k) |S(phi)|^2,  S = sum_n J_n(ka)/H_n^(2)(ka) exp(j n (phi - phi_i))
/// The negative orders are folded into the positive ones (H_{-n} = (-1)^n H_n),
/// so each sum runs over n = 0..N with a factor 2 for n > 0.
#pragma once

#include <cmath>
#include <complex>
#include <span>
#include <vector>

#include "../core/constants.hpp"
#include "../core/error.hpp"
#include "bessel_series.hpp"

namespace emgpu::analytic {

/// @brief Series truncation order for argument ka: the first n > ka with
///        pi n |J_n(ka)| < 1e-17. Beyond the turning point 1/|H_n| ~ pi n |J_n|
///        bounds the current's terms (the slower of the two series: the echo
///        width's terms J_n/H_n decay like J_n^2), so the tail is below 1e-17.
inline int mie_truncation(double ka) {
  const int cap = static_cast<int>(ka + 30.0 * std::cbrt(ka) + 60.0);
  const auto j = bessel_j_orders(cap, ka);
  for (int n = static_cast<int>(ka) + 1; n <= cap; ++n)
    if (constants::pi * n * std::abs(j[std::size_t(n)]) < 1e-17) return n;
  return cap;
}

/// @brief Precomputed Mie coefficients of a PEC circular cylinder (TM_z).
///
/// Construct once per (radius, wavenumber), then evaluate the current or echo
/// width at any angles and for any incidence angle. Host only.
class pec_cylinder_tm {
 public:
  /// @param radius cylinder radius a in metres.
  /// @param wavenumber k = 2 pi f / c0 in rad/m.
  /// @param eta wave impedance (default eta0).
  /// @param e0 incident amplitude E0 (V/m).
  /// @throws invalid_argument unless radius, wavenumber and eta are finite and > 0.
  pec_cylinder_tm(double radius, double wavenumber, double eta = constants::eta0,
                  std::complex<double> e0 = 1.0)
      : a_(radius), k_(wavenumber), eta_(eta), e0_(e0) {
    detail::require(std::isfinite(radius) && radius > 0,
                    "emgpu::analytic::pec_cylinder_tm: radius must be finite and > 0");
    detail::require(std::isfinite(wavenumber) && wavenumber > 0,
                    "emgpu::analytic::pec_cylinder_tm: wavenumber must be finite and > 0");
    detail::require(std::isfinite(eta) && eta > 0,
                    "emgpu::analytic::pec_cylinder_tm: eta must be finite and > 0");
    const double ka = k_ * a_;
    nmax_ = mie_truncation(ka);
    const auto j = bessel_j_orders(nmax_, ka);
    const auto y = bessel_y_orders(nmax_, ka);
    inv_h_.resize(static_cast<std::size_t>(nmax_) + 1);
    j_over_h_.resize(inv_h_.size());
    for (int n = 0; n <= nmax_; ++n) {
      const std::complex<double> h(j[std::size_t(n)], -y[std::size_t(n)]);  // H_n^(2) = J_n - j Y_n
      inv_h_[std::size_t(n)] = 1.0 / h;
      j_over_h_[std::size_t(n)] = j[std::size_t(n)] / h;
    }
  }

  /// Highest order kept in the series.
  int truncation() const noexcept { return nmax_; }
  double radius() const noexcept { return a_; }
  double wavenumber() const noexcept { return k_; }

  /// @brief Surface current J_z (A/m) at angle phi for incidence phi_i.
  std::complex<double> current(double phi, double phi_inc) const {
    const double psi = phi - phi_inc;
    std::complex<double> s = inv_h_[0];
    std::complex<double> jm(1.0, 0.0);  // j^-n
    for (int n = 1; n <= nmax_; ++n) {
      jm *= std::complex<double>(0.0, -1.0);
      s += 2.0 * jm * std::cos(n * psi) * inv_h_[std::size_t(n)];
    }
    return 2.0 * e0_ / (constants::pi * k_ * a_ * eta_) * s;
  }

  /// @brief Far-field pattern S(phi) = sum_n J_n/H_n exp(j n (phi - phi_i)).
  std::complex<double> pattern(double phi, double phi_inc) const {
    const double psi = phi - phi_inc;
    std::complex<double> s = j_over_h_[0];
    for (int n = 1; n <= nmax_; ++n) s += 2.0 * std::cos(n * psi) * j_over_h_[std::size_t(n)];
    return s;
  }

  /// @brief Bistatic echo width sigma (metres) = (4/k)|S|^2 (the E0 scale cancels).
  double echo_width(double phi, double phi_inc) const {
    return 4.0 / k_ * std::norm(pattern(phi, phi_inc));
  }

  /// Vectorised helpers.
  std::vector<std::complex<double>> current(std::span<const double> phi, double phi_inc) const {
    std::vector<std::complex<double>> out(phi.size());
    for (std::size_t i = 0; i < phi.size(); ++i) out[i] = current(phi[i], phi_inc);
    return out;
  }
  std::vector<double> echo_width(std::span<const double> phi, double phi_inc) const {
    std::vector<double> out(phi.size());
    for (std::size_t i = 0; i < phi.size(); ++i) out[i] = echo_width(phi[i], phi_inc);
    return out;
  }

 private:
  double a_, k_, eta_;
  std::complex<double> e0_;
  int nmax_ = 0;
  std::vector<std::complex<double>> inv_h_, j_over_h_;
};

}  // namespace emgpu::analytic
