/// @file
/// @brief Evaluation of J0, J1, Y0, Y1 from the generated Chebyshev pieces
///        (see scripts/gen_bessel_coefficients.py for the definitions).
#pragma once

#include <type_traits>

#include "../../core/config.hpp"
#include "bessel_coefficients.hpp"
#include "hd_math.hpp"

namespace emgpu::math::detail {

// The split point of the generated expansions: power series in x^2 below,
// Hankel's P/Q form in (8/x)^2 above.
template <class T> inline constexpr T bessel_split = T(8);
template <class T> inline constexpr T two_over_pi = T(0.636619772367581343075535053490057448);
template <class T> inline constexpr T one_over_pi = T(0.318309886183790671537767526745028724);

// Below 2 x the smallest normal number, x/2 is subnormal, so ln(x/2) loses bits
// (it is ln 0 = -inf at the smallest subnormal, and then -inf * J1 = NaN in Y1),
// and 1/x may overflow where 2/(pi x) does not. Such x take y0_tiny / y1_tiny
// (jy01_positive does the same by selects).
template <class T> inline constexpr T bessel_tiny = T(0x1p-1021);
template <> inline constexpr float bessel_tiny<float> = 0x1p-125f;

/// Y0 for 0 < x < bessel_tiny: (2/pi)(ln(x/2) + gamma), the leading terms of the
/// series; the rest is x^2 ln x smaller (< 1e-70 in float, < 1e-600 in double).
/// x 2^s (s = 64, float 32) is normal and exact, so ln(x/2) = ln(x 2^s) - (s + 1) ln 2
/// loses nothing; the constant is gamma - (s + 1) ln 2 (mpmath).
template <class T>
EMGPU_HD inline T y0_tiny(T x) {
  if constexpr (std::is_same_v<T, float>)
    return two_over_pi<T> * (hd_log(x * 0x1p32f) + T(-22.2966412935766623501621479180374243));
  else
    return two_over_pi<T> * (hd_log(x * 0x1p64) + T(-44.4773510714949122515135758046990745));
}

/// Y1 for 0 < x < bessel_tiny: -2/(pi x) (the series' next term is x^2 ln x
/// smaller); one division, so it overflows to -inf only where the true value does.
template <class T>
EMGPU_HD inline T y1_tiny(T x) { return -(two_over_pi<T> / x); }

/// Shifted Chebyshev variable of the small-argument pieces: u = t + 1 = x^2/32 in
/// [0, 2]. Kept as u (not t = u - 1) so that small x keeps its low bits.
template <class T>
EMGPU_HD inline T small_u(T ax) { return ax * ax * T(0.03125); }

/// Chebyshev variable of the large-argument pieces: y = 64/x^2 in (0, 1] -> (-1, 1].
template <class T>
EMGPU_HD inline T large_t(T ax) { return T(128) / (ax * ax) - T(1); }

/// Everything the large-argument forms share: sqrt(1/(pi x)) (the 1/sqrt(2) of
/// cos(x - pi/4) = (cos x + sin x)/sqrt(2) folded in), sin x, cos x, 1/x and t.
/// Using sin x and cos x of the exact argument avoids rounding x - pi/4.
template <class T>
struct large_arg {
  T amp, s, c, inv_x, t;
  EMGPU_HD explicit large_arg(T ax) {
    inv_x = T(1) / ax;
    t = T(128) * inv_x * inv_x - T(1);
    amp = hd_sqrt(one_over_pi<T> * inv_x);
    hd_sincos(ax, s, c);
  }
};

template <class T>
EMGPU_HD inline T j0(T x) {
  const T ax = x < T(0) ? -x : x;
  if (ax <= bessel_split<T>) return coef::j0_small(small_u(ax));
  const large_arg<T> a(ax);
  const T p = coef::p0_large(a.t), q = coef::q0_large(a.t) * a.inv_x;
  return a.amp * (p * (a.c + a.s) - q * (a.s - a.c));
}

template <class T>
EMGPU_HD inline T j1(T x) {
  const T ax = x < T(0) ? -x : x;
  T r;
  if (ax <= bessel_split<T>) {
    r = ax * coef::j1_small(small_u(ax));
  } else {
    const large_arg<T> a(ax);
    const T p = coef::p1_large(a.t), q = coef::q1_large(a.t) * a.inv_x;
    r = a.amp * (p * (a.s - a.c) + q * (a.s + a.c));
  }
  return x < T(0) ? -r : r;
}

template <class T>
EMGPU_HD inline T y0(T x) {
  if (!(x > T(0))) return hd_nan<T>();
  if (x < bessel_tiny<T>) return y0_tiny(x);
  if (x <= bessel_split<T>) {
    const T t = small_u(x);
    return two_over_pi<T> * hd_log(x * T(0.5)) * coef::j0_small(t) + coef::y0_small(t);
  }
  const large_arg<T> a(x);
  const T p = coef::p0_large(a.t), q = coef::q0_large(a.t) * a.inv_x;
  return a.amp * (p * (a.s - a.c) + q * (a.c + a.s));
}

template <class T>
EMGPU_HD inline T y1(T x) {
  if (!(x > T(0))) return hd_nan<T>();
  if (x < bessel_tiny<T>) return y1_tiny(x);
  if (x <= bessel_split<T>) {
    const T t = small_u(x);
    const T j = x * coef::j1_small(t);
    return two_over_pi<T> * (hd_log(x * T(0.5)) * j - T(1) / x) + x * coef::y1_small(t);
  }
  const large_arg<T> a(x);
  const T p = coef::p1_large(a.t), q = coef::q1_large(a.t) * a.inv_x;
  return a.amp * (q * (a.s - a.c) - p * (a.s + a.c));
}

/// J_n and Y_n of one order together (one log or one sincos); x > 0.
template <class T>
struct jy { T j, y; };

template <class T>
EMGPU_HD inline jy<T> jy0_positive(T x) {
  if (x < bessel_tiny<T>) return {T(1), y0_tiny(x)};  // J0 = 1 - x^2/4 rounds to 1
  if (x <= bessel_split<T>) {
    const T u = small_u(x);
    const T j = coef::j0_small(u);
    return {j, two_over_pi<T> * hd_log(x * T(0.5)) * j + coef::y0_small(u)};
  }
  const large_arg<T> a(x);
  const T p = coef::p0_large(a.t), q = coef::q0_large(a.t) * a.inv_x;
  const T sp = a.s + a.c, sm = a.s - a.c;
  return {a.amp * (p * sp - q * sm), a.amp * (p * sm + q * sp)};
}

template <class T>
EMGPU_HD inline jy<T> jy1_positive(T x) {
  if (x < bessel_tiny<T>) return {x * T(0.5), y1_tiny(x)};  // J1 = x/2 to rounding
  if (x <= bessel_split<T>) {
    const T u = small_u(x);
    const T j = x * coef::j1_small(u);
    return {j, two_over_pi<T> * (hd_log(x * T(0.5)) * j - T(1) / x) + x * coef::y1_small(u)};
  }
  const large_arg<T> a(x);
  const T p = coef::p1_large(a.t), q = coef::q1_large(a.t) * a.inv_x;
  const T sp = a.s + a.c, sm = a.s - a.c;
  return {a.amp * (p * sm + q * sp), a.amp * (q * sm - p * sp)};
}

/// J0, J1, Y0, Y1 together; x > 0 (the caller handles bad input).
template <class T>
struct jy01 { T j0, j1, y0, y1; };

template <class T>
EMGPU_HD inline jy01<T> jy01_positive(T x) {
  jy01<T> r;
  if (x <= bessel_split<T>) {
    const T t = small_u(x);
    // Selects, not a branch to y0_tiny / y1_tiny as elsewhere: the branch's second
    // log cost a hankel2_01 kernel 4 more registers on sm_90 (34, and a lower
    // occupancy). Below bessel_tiny ln(x/2) = ln(x 2^s / 2) - s ln 2, x 2^s exact;
    // the series give J0 = 1 and J1 = x/2 exactly there, and the 1/x term below
    // is -(2/pi)/x, which overflows only where Y1 does. Above it, + 0 is exact.
    const bool tiny = x < bessel_tiny<T>;
    const T scale = std::is_same_v<T, float> ? T(0x1p32f) : T(0x1p64);
    const T shift = std::is_same_v<T, float> ? T(-22.1807097779182499013514278867) : T(-44.3614195558364998027028557733);
    const T lg = two_over_pi<T> * (hd_log((tiny ? x * scale : x) * T(0.5)) + (tiny ? shift : T(0)));
    r.j0 = coef::j0_small(t);
    r.j1 = x * coef::j1_small(t);
    r.y0 = lg * r.j0 + coef::y0_small(t);
    r.y1 = lg * r.j1 - two_over_pi<T> / x + x * coef::y1_small(t);
  } else {
    const large_arg<T> a(x);
    const T p0 = coef::p0_large(a.t), q0 = coef::q0_large(a.t) * a.inv_x;
    const T p1 = coef::p1_large(a.t), q1 = coef::q1_large(a.t) * a.inv_x;
    const T sp = a.s + a.c, sm = a.s - a.c;
    r.j0 = a.amp * (p0 * sp - q0 * sm);
    r.y0 = a.amp * (p0 * sm + q0 * sp);
    r.j1 = a.amp * (p1 * sm + q1 * sp);
    r.y1 = a.amp * (q1 * sm - p1 * sp);
  }
  return r;
}

}  // namespace emgpu::math::detail
