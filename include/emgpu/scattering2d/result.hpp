/// @file
/// @brief What a 2D scattering solve returns (host memory): currents at the
///        unknowns, far-field integrals and the echo widths derived from them.
#pragma once

#include <cmath>
#include <string>
#include <vector>

#include "../core/complex.hpp"
#include "../core/constants.hpp"
#include "../core/error.hpp"

namespace emgpu {

/// @brief Currents and far fields of one solve, one column per incidence angle.
///
/// Echo width from the far-field integral P (design/physics-conventions.md, shared):
///   sigma(phi) = (k eta^2 / 4) |P(phi)|^2 / |E0|^2,
///   P(phi) = Integral_C J_z(t') exp(j k (x' cos phi + y' sin phi)) dt'.
struct scattering2d_result {
  double wavenumber = 0;              ///< k (rad/m)
  double eta = constants::eta0;       ///< wave impedance (ohm)
  double e0 = 1;                      ///< |E0| of the incident waves (V/m)
  std::vector<double> incidence;      ///< phi_i per column (rad, direction of travel)
  std::vector<double> observation;    ///< observation angles of far_field (rad)
  std::vector<double> x, y, w;        ///< unknown positions and quadrature weights (m)
  std::vector<complex<double>> current;    ///< J_z (A/m), unknowns x columns, column-major
  std::vector<complex<double>> far_field;  ///< P (A), observation x columns
  std::vector<complex<double>> backscatter;  ///< P(phi_i + pi) per column (A)

  index_t unknowns() const noexcept { return index_t(x.size()); }
  index_t columns() const noexcept { return index_t(incidence.size()); }
  double wavelength() const noexcept { return 2 * constants::pi / wavenumber; }

  /// @brief J_z at unknown i for incidence column r.
  /// @throws invalid_argument for i or r out of range, or `current` not
  ///         holding unknowns() x columns() values.
  complex<double> current_at(index_t i, index_t r) const {
    detail::require(i >= 0 && i < unknowns() && r >= 0 && r < columns(),
                    "emgpu::scattering2d_result::current_at: index out of range");
    check_current("emgpu::scattering2d_result::current_at");
    return current[std::size_t(i + r * unknowns())];
  }

  /// @brief Throws unless `current` holds unknowns() x columns() values (the
  ///        members are public, so a caller can leave them inconsistent).
  /// @param who prefix of the message.
  /// @throws invalid_argument when the sizes disagree.
  void check_current(const char* who) const {
    if (current.size() != x.size() * incidence.size() || y.size() != x.size() || w.size() != x.size())
      throw invalid_argument(std::string(who) +
                             ": result sizes disagree (current must be unknowns x columns, x, y, w one per unknown)");
  }

  /// sigma (m) from a far-field integral value.
  double sigma_of(complex<double> p) const { return wavenumber * eta * eta / 4 * thrust::norm(p) / (e0 * e0); }

  /// @brief Bistatic echo width (m) at every observation angle for column r.
  /// @throws invalid_argument for r out of range or `far_field` not holding
  ///         observation x columns values.
  std::vector<double> echo_width(index_t r) const {
    detail::require(r >= 0 && r < columns(), "emgpu::scattering2d_result: column out of range");
    detail::require(far_field.size() == observation.size() * incidence.size(),
                    "emgpu::scattering2d_result::echo_width: result sizes disagree (far_field must be "
                    "observation x columns)");
    std::vector<double> s(observation.size());
    for (std::size_t a = 0; a < s.size(); ++a) s[a] = sigma_of(far_field[a + std::size_t(r) * observation.size()]);
    return s;
  }
  /// Echo width in dB relative to 1 m.
  std::vector<double> echo_width_db(index_t r) const {
    auto s = echo_width(r);
    for (auto& v : s) v = 10 * std::log10(v);
    return s;
  }
  /// Echo width normalised by the wavelength.
  std::vector<double> echo_width_over_lambda(index_t r) const {
    auto s = echo_width(r);
    for (auto& v : s) v /= wavelength();
    return s;
  }
  /// @brief Monostatic echo width (m) for each incidence angle (observation at phi_i + pi).
  std::vector<double> monostatic() const {
    std::vector<double> s(backscatter.size());
    for (std::size_t r = 0; r < s.size(); ++r) s[r] = sigma_of(backscatter[r]);
    return s;
  }
};

}  // namespace emgpu
