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
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "../core/constants.hpp"
#include "../core/error.hpp"
#include "bessel_series.hpp"

namespace emgpu::analytic {

/// Largest ka = k a the Mie series is summed for. The series has about
/// ka + 30 ka^(1/3) terms, each evaluation of the current or echo width sums all
/// of them, and the constructor keeps 5 doubles an order (1e7: 0.4 GB).
inline constexpr double max_mie_ka = 1e7;

/// @brief Series truncation order for argument ka: the first n > ka with
///        pi n |J_n(ka)| < 1e-17. Beyond the turning point 1/|H_n| ~ pi n |J_n|
///        bounds the current's terms (the slower of the two series: the echo
///        width's terms J_n/H_n decay like J_n^2), so the tail is below 1e-17.
/// @throws invalid_argument unless 0 < ka <= max_mie_ka.
inline int mie_truncation(double ka) {
  detail::require(ka > 0 && ka <= max_mie_ka, "emgpu::analytic::mie_truncation: ka must be > 0 and <= 1e7 (max_mie_ka)");
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
  /// @throws invalid_argument unless radius, wavenumber and eta are finite and > 0
  ///         and ka = wavenumber * radius lies in [DBL_MIN, max_mie_ka] (1e7).
  pec_cylinder_tm(double radius, double wavenumber, double eta = constants::eta0,
                  std::complex<double> e0 = 1.0)
      : a_(radius), k_(wavenumber), eta_(eta), e0_(e0) {
    detail::require(std::isfinite(radius) && radius > 0,
                    "emgpu::analytic::pec_cylinder_tm: radius must be finite and > 0");
    detail::require(std::isfinite(wavenumber) && wavenumber > 0,
                    "emgpu::analytic::pec_cylinder_tm: wavenumber must be finite and > 0");
    detail::require(std::isfinite(eta) && eta > 0,
                    "emgpu::analytic::pec_cylinder_tm: eta must be finite and > 0");
    ka_ = k_ * a_;
    if (!(ka_ <= max_mie_ka))  // inf included
      throw invalid_argument(message("must be <= 1e7 (max_mie_ka: the series has ~ka terms)"));
    // A subnormal ka has lost relative precision (k a rounded to a multiple of
    // 4.9e-324), so no result derived from it could be accurate.
    if (ka_ < std::numeric_limits<double>::min())
      throw invalid_argument(message("underflows (below DBL_MIN = 2.2e-308)"));
    nmax_ = mie_truncation(ka_);
    const auto j = bessel_j_orders(nmax_, ka_);
    const auto y = bessel_y_orders(nmax_, ka_);
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
    const mie_phase psi(phi, phi_inc);
    std::complex<double> s = inv_h_[0];
    std::complex<double> jm(1.0, 0.0);  // j^-n
    for (int n = 1; n <= nmax_; ++n) {
      jm *= std::complex<double>(0.0, -1.0);
      s += 2.0 * jm * psi.cos_n(n) * inv_h_[std::size_t(n)];
    }
    // ka_, not k_ * a_: for a subnormal k or a the product loses bits.
    return 2.0 * e0_ / (constants::pi * ka_ * eta_) * s;
  }

  /// @brief Far-field pattern S(phi) = sum_n J_n/H_n exp(j n (phi - phi_i)).
  std::complex<double> pattern(double phi, double phi_inc) const {
    const mie_phase psi(phi, phi_inc);
    std::complex<double> s = j_over_h_[0];
    for (int n = 1; n <= nmax_; ++n) s += 2.0 * psi.cos_n(n) * j_over_h_[std::size_t(n)];
    return s;
  }

  /// @brief Bistatic echo width sigma (metres) = (4/k)|S|^2 (the E0 scale cancels).
  double echo_width(double phi, double phi_inc) const {
    // Divided last: 4/k overflows for a subnormal k where sigma itself may not.
    return 4.0 * std::norm(pattern(phi, phi_inc)) / k_;
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
  /// cos(n (phi - phi_inc)) with the phase reduced mod 2 pi to rounding. The plain
  /// cos(n * psi) carries the rounding of psi = phi - phi_inc and of n * psi, up to
  /// n |psi| 2^-53 (1.7e-9 at n = 1e7, psi = pi): the largest error of the series at
  /// large ka (1e-10 relative in sigma at ka = 1e6, against 1e-13 reduced).
  /// Needs n < 2^24 (mie_truncation(max_mie_ka) ~ 1.0006e7); |psi| > 8 pi takes the
  /// plain product.
  class mie_phase {
   public:
    mie_phase(double phi, double phi_inc) {
      // psi = s + e exactly (Knuth's two-sum; no products, so FMA contraction
      // cannot break it).
      const double s = phi - phi_inc;
      const double bb = s - phi;
      const double e = (phi - (s - bb)) + (-phi_inc - bb);
      psi_ = s;
      reduce_ = std::abs(s) <= 8 * constants::pi;
      // hi: s with the low 24 significand bits cleared, so n * hi is exact.
      std::uint64_t bits;
      std::memcpy(&bits, &s, sizeof bits);
      bits &= ~((std::uint64_t(1) << 24) - 1);
      std::memcpy(&hi_, &bits, sizeof bits);
      lo_ = (s - hi_) + e;  // |lo| <= 2^-28 |psi|, so |n lo| < 2
    }

    double cos_n(int n) const {
      if (!reduce_) return std::cos(n * psi_);
      // 2 pi = c1 + c2 + c3 (27 + 27 + 53 bits, mpmath): k < 2^26, so k c1 and
      // k c2 are exact, and so is t - k c1 (the two are within a factor 2).
      constexpr double c1 = 0x1.921fb54p+2, c2 = 0x1.10b461p-28, c3 = 0x1.a62633145c06ep-56;
      constexpr double inv_2pi = 0x1.45f306dc9c883p-3, shifter = 0x1.8p52;
      const double t = n * hi_;  // exact: 24 + 29 significant bits
      const double k = (t * inv_2pi + shifter) - shifter;  // round(t / 2 pi)
      return std::cos((((t - k * c1) - k * c2) - k * c3) + n * lo_);
    }

   private:
    double psi_, hi_, lo_;
    bool reduce_;
  };

  std::string message(const char* what) const {
    std::ostringstream os;
    os.precision(3);
    os << "emgpu::analytic::pec_cylinder_tm: ka = wavenumber * radius = " << ka_ << " " << what;
    return os.str();
  }

  double a_, k_, eta_, ka_;
  std::complex<double> e0_;
  int nmax_ = 0;
  std::vector<std::complex<double>> inv_h_, j_over_h_;
};

}  // namespace emgpu::analytic
