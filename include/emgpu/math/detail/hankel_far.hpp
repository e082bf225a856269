/// @file
/// @brief The large-argument H0^(2) of the matrix fills (math::hankel2_0_fast)
///        and the sin/cos it may use: short Horner polynomials from
///        hankel_far_coefficients.hpp (generated), no division.
#pragma once

#include <cstdint>
#include <cstring>

#include "../../core/complex.hpp"
#include "../../core/config.hpp"
#include "bessel_impl.hpp"
#include "hankel_far_coefficients.hpp"
#include "hd_math.hpp"

namespace emgpu::math::detail {

/// sin x and cos x for |x| <= 1.6e6 by a Cody-Waite reduction with pi/2 in three
/// parts and two polynomials of degree 13 and 14 on |r| <= pi/4; larger |x|, NaN and inf
/// go to hd_sincos. Against CUDA's sincos: the same operations count in DP
/// FMAs, but no coefficient selects (CUDA evaluates one polynomial kernel twice,
/// choosing sin or cos coefficients per quadrant), no slow-path stack frame and
/// the quadrant from the low word of the rounding-shifted x 2/pi (no
/// conversion). Accuracy: within 2 ulps of glibc (tests/math).
EMGPU_HD inline void sincos_fill(double x, double& s, double& c) {
  if (!(x >= -1.6e6 && x <= 1.6e6)) {  // |n| < 2^20 below: n P1, n P2 exact
    hd_sincos(x, s, c);
    return;
  }
  constexpr double shifter = 6755399441055744.0;  // 1.5 * 2^52: t's low bits hold round(x 2/pi)
  const double t = x * two_over_pi<double> + shifter;
  const double n = t - shifter;
#if EMGPU_DEVICE_CODE
  const int q = __double2loint(t);
#else
  std::uint64_t bits;
  std::memcpy(&bits, &t, sizeof bits);
  const int q = static_cast<int>(static_cast<std::uint32_t>(bits));
#endif
  const double r = ((x - n * coef::half_pi_1) - n * coef::half_pi_2) - n * coef::half_pi_3;
  const double u = r * r;
  const double sr = r + (r * u) * coef::sin_poly(u);
  // cos r = 1 - u/2 + u^2 C(u), with the rounding error of 1 - u/2 recovered.
  const double hz = 0.5 * u;
  const double w = 1.0 - hz;
  const double cr = w + (((1.0 - w) - hz) + (u * u) * coef::cos_poly(u));
  const double a = (q & 1) ? cr : sr;
  const double b = (q & 1) ? sr : cr;
  s = (q & 2) ? -a : a;
  c = ((q + 1) & 2) ? -b : b;
}

/// H0^(2)(x) for x > coef::hankel_far_x (the caller checks): Hankel's P and x Q
/// by Horner in y = (32/x)^2, 1/x and sqrt(1/(pi x)) from one rsqrt.
/// OwnSincos: sincos_fill instead of hd_sincos.
template <bool OwnSincos>
EMGPU_HD inline complex<double> h0_far(double x) {
  constexpr double xf2 = coef::hankel_far_x * coef::hankel_far_x;
  constexpr double inv_sqrt_pi = 0.564189583547756286948079451560772586;
  const double h = hd_rsqrt(x);  // x^(-1/2)
  const double inv_x = h * h;
  const double y = xf2 * inv_x * inv_x;
  const double p = coef::p0_far(y), q = coef::xq0_far(y) * inv_x;
  double s, c;
  if constexpr (OwnSincos) sincos_fill(x, s, c);
  else hd_sincos(x, s, c);  // +inf: NaN
  // sqrt(2/(pi x)) cos(x - pi/4) = (c + s) / sqrt(pi x), likewise for sin.
  const double amp = h * inv_sqrt_pi;
  const double sp = s + c, sm = s - c;
  return complex<double>(amp * (p * sp - q * sm), -(amp * (p * sm + q * sp)));
}

}  // namespace emgpu::math::detail
