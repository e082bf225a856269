/// @file
/// @brief Bessel functions J0, J1, Y0, Y1 and Hankel functions of the second kind
///        H0^(2), H1^(2) of real argument, on the host and in CUDA kernels.
///
/// Accuracy (measured against mpmath at 30 digits, see docs/math.md): relative
/// error about 1e-15 in double and 1e-7 in float for 1e-8 <= x <= 1e4, except
/// next to a zero of the function, where the error is bounded in absolute terms
/// (the function value itself is then ill-conditioned in x). The float versions
/// compute in float only (fewer terms, float intrinsics): no double arithmetic.
///
/// Conventions: time dependence exp(+j w t), so the outgoing 2D wave is
/// H^(2) = J - j Y (design/physics-conventions.md, shared).
///
/// Bad input cannot throw in device code, so it returns NaN: Y0, Y1, H0^(2),
/// H1^(2) of x <= 0 are NaN (both parts for H); NaN in gives NaN out; +inf gives
/// NaN. J0 and J1 accept negative x (J0 even, J1 odd).
#pragma once

#include <type_traits>

#include "../core/complex.hpp"
#include "../core/config.hpp"
#include "detail/bessel_impl.hpp"

namespace emgpu::math {

/// @brief Bessel function of the first kind of order 0.
/// @tparam T float or double (the whole evaluation runs in T).
template <class T>
EMGPU_HD inline T bessel_j0(T x) {
  static_assert(std::is_floating_point_v<T>, "bessel_j0: T must be float or double");
  return detail::j0(x);
}

/// @brief Bessel function of the first kind of order 1.
/// @tparam T float or double.
template <class T>
EMGPU_HD inline T bessel_j1(T x) {
  static_assert(std::is_floating_point_v<T>, "bessel_j1: T must be float or double");
  return detail::j1(x);
}

/// @brief Bessel function of the second kind (Neumann) of order 0; NaN for x <= 0.
/// @tparam T float or double.
template <class T>
EMGPU_HD inline T bessel_y0(T x) {
  static_assert(std::is_floating_point_v<T>, "bessel_y0: T must be float or double");
  return detail::y0(x);
}

/// @brief Bessel function of the second kind (Neumann) of order 1; NaN for x <= 0.
/// @tparam T float or double.
template <class T>
EMGPU_HD inline T bessel_y1(T x) {
  static_assert(std::is_floating_point_v<T>, "bessel_y1: T must be float or double");
  return detail::y1(x);
}

/// @brief H0^(2)(x) = J0(x) - j Y0(x); (NaN, NaN) for x <= 0.
/// @tparam T float or double.
template <class T>
EMGPU_HD inline complex<T> hankel2_0(T x) {
  static_assert(std::is_floating_point_v<T>, "hankel2_0: T must be float or double");
  if (!(x > T(0))) return complex<T>(detail::hd_nan<T>(), detail::hd_nan<T>());
  const detail::jy<T> r = detail::jy0_positive(x);  // shares the log or the sincos
  return complex<T>(r.j, -r.y);
}

/// @brief H1^(2)(x) = J1(x) - j Y1(x); (NaN, NaN) for x <= 0.
/// @tparam T float or double.
template <class T>
EMGPU_HD inline complex<T> hankel2_1(T x) {
  static_assert(std::is_floating_point_v<T>, "hankel2_1: T must be float or double");
  if (!(x > T(0))) return complex<T>(detail::hd_nan<T>(), detail::hd_nan<T>());
  const detail::jy<T> r = detail::jy1_positive(x);
  return complex<T>(r.j, -r.y);
}

/// @brief J0, J1, Y0 and Y1 of one argument.
template <class T>
struct bessel_jy01_value {
  T j0, j1, y0, y1;
};

/// @brief J0, J1, Y0, Y1 at once: one argument reduction, one sincos, one log.
///        All four are NaN for x <= 0 or NaN x.
/// @tparam T float or double.
template <class T>
EMGPU_HD inline bessel_jy01_value<T> bessel_jy01(T x) {
  static_assert(std::is_floating_point_v<T>, "bessel_jy01: T must be float or double");
  if (!(x > T(0))) {
    const T n = detail::hd_nan<T>();
    return {n, n, n, n};
  }
  const detail::jy01<T> r = detail::jy01_positive(x);
  return {r.j0, r.j1, r.y0, r.y1};
}

/// @brief H0^(2)(x) and H1^(2)(x) together.
template <class T>
struct hankel2_01_value {
  complex<T> h0, h1;
};

/// @brief H0^(2)(x) and H1^(2)(x) at once, for MoM/LCN fill kernels that need
///        both (one argument reduction, one sincos, one log instead of two each).
///        Both are (NaN, NaN) for x <= 0 or NaN x.
/// @tparam T float or double.
template <class T>
EMGPU_HD inline hankel2_01_value<T> hankel2_01(T x) {
  static_assert(std::is_floating_point_v<T>, "hankel2_01: T must be float or double");
  const bessel_jy01_value<T> r = bessel_jy01(x);
  return {complex<T>(r.j0, -r.y0), complex<T>(r.j1, -r.y1)};
}

}  // namespace emgpu::math
