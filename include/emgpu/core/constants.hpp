/// @file
/// @brief SI physical constants (SI units throughout emgpu, exp(+j w t)).
/// See docs/conventions.md. mu0 is the CODATA 2018 value (not 4 pi 1e-7 exactly);
/// eta0 = 376.730313668 ohm as fixed by the physics conventions. Never mix it
/// with 120 pi: that shifts every current by 6.9e-4 relative.
#pragma once

namespace emgpu::constants {

inline constexpr double pi = 3.141592653589793238462643383279502884;
/// Speed of light in vacuum, m/s (exact).
inline constexpr double c0 = 299792458.0;
/// Vacuum permeability, H/m (CODATA 2018).
inline constexpr double mu0 = 1.25663706212e-6;
/// Vacuum permittivity, F/m, consistent with c0 and mu0: 1 / (mu0 c0^2).
inline constexpr double eps0 = 1.0 / (mu0 * c0 * c0);
/// Free-space wave impedance, ohm (the value the conventions fix).
inline constexpr double eta0 = 376.730313668;
/// Euler's constant.
inline constexpr double euler_gamma = 0.577215664901532860606512090082402431;
/// exp(Euler's constant), the constant of the small-argument Hankel expansion.
inline constexpr double gamma_exp = 1.781072417990197985236504103107179549;
/// Napier's constant e.
inline constexpr double e = 2.718281828459045235360287471352662498;

}  // namespace emgpu::constants
