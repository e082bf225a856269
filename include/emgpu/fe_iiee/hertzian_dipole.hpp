/// @file
/// @brief Exact fields of a Hertzian (infinitesimal electric) dipole in free
///        space: the reference of the Love-equivalence validation of the
///        FE-IIEE radiation operator.
///
/// From design/physics-conventions.md (shared): with R = r - r0, u = R / R,
/// G = exp(-j k R) / (4 pi R), A = 1 - j/(kR) - 1/(kR)^2, B = -1 + 3j/(kR) + 3/(kR)^2:
///   E = -j k eta G [A p + B (u . p) u],  H = grad G x p = G g1 (u x p),
///   curlE = -j k eta H,  g1 = -(1/R + j k).
#pragma once

#include <array>
#include <cmath>
#include <complex>

#include "../core/constants.hpp"

namespace emgpu::fe_iiee {

/// @brief A Hertzian dipole of (complex) moment p at r0; evaluated in long double.
/// @tparam Real the type of the returned values (float or double).
template <class Real = double>
struct hertzian_dipole {
  using cplx = std::complex<long double>;
  std::array<Real, 3> r0;
  std::array<std::complex<Real>, 3> p;
  Real k;
  Real eta;

  /// @brief (E, H, curlE) at r; r must differ from r0.
  std::array<std::array<std::complex<Real>, 3>, 3> fields(const std::array<Real, 3>& r) const {
    using L = long double;
    const L d[3] = {L(r[0]) - L(r0[0]), L(r[1]) - L(r0[1]), L(r[2]) - L(r0[2])};
    const L R = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    const L u[3] = {d[0] / R, d[1] / R, d[2] / R};
    const L kk = k, kr = kk * R;
    const cplx j(0, 1);
    const cplx G = std::exp(-j * kr) / (4 * std::acos(L(-1)) * R);
    const cplx A = L(1) - j / kr - L(1) / (kr * kr);
    const cplx B = L(-1) + L(3) * j / kr + L(3) / (kr * kr);
    const cplx pp[3] = {cplx(p[0]), cplx(p[1]), cplx(p[2])};
    const cplx up = u[0] * pp[0] + u[1] * pp[1] + u[2] * pp[2];
    const cplx g1 = -(L(1) / R + j * kk);
    const cplx upx[3] = {u[1] * pp[2] - u[2] * pp[1], u[2] * pp[0] - u[0] * pp[2],
                         u[0] * pp[1] - u[1] * pp[0]};
    std::array<std::array<std::complex<Real>, 3>, 3> out;
    for (int c = 0; c < 3; ++c) {
      const cplx e = -j * kk * L(eta) * G * (A * pp[c] + B * up * u[c]);
      const cplx h = G * g1 * upx[c];
      out[0][c] = std::complex<Real>(Real(e.real()), Real(e.imag()));
      out[1][c] = std::complex<Real>(Real(h.real()), Real(h.imag()));
      const cplx ce = -j * kk * L(eta) * h;
      out[2][c] = std::complex<Real>(Real(ce.real()), Real(ce.imag()));
    }
    return out;
  }
};

}  // namespace emgpu::fe_iiee
