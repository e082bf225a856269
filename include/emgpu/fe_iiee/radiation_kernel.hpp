/// @file
/// @brief The FE-IIEE radiation kernel policy: the contribution of one source
///        point of S' to E and curl E at one observer of S, for each RHS.
///
/// Conventions (design/physics-conventions.md (shared), "FE-IIEE radiation
/// integrals"): exp(+j w t); G = exp(-j k R) / (4 pi R); R = r - r' points from
/// the source r' to the observer r; every gradient acts on r; J = n x H,
/// M = -n x E. With a = 1/R, b = a^2 / k, g1 = -(a + j k),
/// p = -a + j (b - k), q = 3 a + j (k - 3 b) and the folded currents
/// Jt = w eta J, Mt = w M (w: quadrature weight),
///   dE     =        G [ g1 (Mt x u) + p Jt + q (u . Jt) u ]
///   dcurlE = j k  * G [ g1 (Jt x u) - p Mt - q (u . Mt) u ],
/// the j k of curl E being applied once per observer after the sum.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

#include "../core/complex.hpp"
#include "../core/config.hpp"

namespace emgpu::fe_iiee {

/// @brief A point with a fourth slot (the quadrature weight for sources, unused
///        for observers): 16/32-byte aligned so a GPU loads it in one or two
///        vector loads.
/// @tparam Real float or double.
template <class Real>
struct alignas(4 * sizeof(Real)) point4 {
  Real x, y, z, w;
};

/// @brief Kernel policy: per-pair geometry and per-RHS accumulation, written
///        once for host and device (EMGPU_HD).
/// @tparam Real float or double; all arithmetic, accumulation included, is in Real.
///
/// Currents and accumulators are arrays of 12 Real: (x, y, z) of the first
/// vector then of the second, each complex as (re, im). Currents: (Jt, Mt).
/// Accumulators: (E, C) where curlE = j k C.
template <class Real>
struct radiation_kernel {
  using real_type = Real;

  /// @brief Per-pair coefficients: the unit vector u and G g1, G p, G q.
  struct coupling {
    Real ux, uy, uz;
    Real gr, gi;  ///< G g1
    Real pr, pi;  ///< G p
    Real qr, qi;  ///< G q
  };

  /// @brief Flops per (source point, observer) pair for n_rhs right-hand sides,
  ///        the source papers' convention (sqrt = 4, exp = 8): 238 for one RHS,
  ///        50 + 188 n for n > 1.
  static constexpr double flops_per_pair(index_t n_rhs) {
    return n_rhs == 1 ? 238.0 : 50.0 + 188.0 * double(n_rhs);
  }

  /// @brief Geometry of one pair; (dx, dy, dz) = r - r'. R must be > 0.
  /// @tparam Wide host only: false when k R < reduce_exact_limit is known for
  ///         every pair (see sincos_host), true (default) for any k R.
  template <bool Wide = true>
  EMGPU_HD static coupling couple(Real dx, Real dy, Real dz, Real k, Real inv_k) {
    const Real r2 = dx * dx + dy * dy + dz * dz;
    const Real a = rsqrt_hd(r2);
    const Real r = r2 * a;
    Real s, c;
    sincos_hd<Wide>(k * r, s, c);
    // G = (cos kR - j sin kR) a / (4 pi)
    constexpr Real inv4pi = Real(0.0795774715459476678844418816862571810);
    const Real ga = a * inv4pi;
    const Real g_re = c * ga, g_im = -s * ga;
    const Real b = a * a * inv_k;
    coupling out;
    out.ux = dx * a;
    out.uy = dy * a;
    out.uz = dz * a;
    // G * (-a - j k)
    out.gr = -a * g_re + k * g_im;
    out.gi = -a * g_im - k * g_re;
    // G * (-a + j (b - k))
    const Real pim = b - k;
    out.pr = -a * g_re - pim * g_im;
    out.pi = -a * g_im + pim * g_re;
    // G * (3 a + j (k - 3 b))
    const Real qre = Real(3) * a, qim = k - Real(3) * b;
    out.qr = qre * g_re - qim * g_im;
    out.qi = qre * g_im + qim * g_re;
    return out;
  }

  /// @brief acc += the pair's contribution for one RHS (cur = Jt, Mt).
  /// Accumulator i lives at acc[i * stride]: 1 on the GPU (registers), the
  /// observer-tile width on the CPU, whose SIMD lanes run over observers.
  EMGPU_HD static void accumulate(const coupling& c, const Real* cur, Real* acc, index_t stride = 1) {
    field_part(c, cur + 6, cur, acc, stride, Real(1));              // E: X = Mt, Y = Jt
    field_part(c, cur, cur + 6, acc + 6 * stride, stride, Real(-1));  // C: X = Jt, Y = Mt
  }

  /// @brief Turns accumulators (E, C) into (E, curlE = j k C), 6 complex.
  EMGPU_HD static void finish(const Real* acc, Real k, complex<Real>* out6) {
    for (int i = 0; i < 3; ++i) out6[i] = complex<Real>(acc[2 * i], acc[2 * i + 1]);
    for (int i = 0; i < 3; ++i)
      out6[3 + i] = complex<Real>(-k * acc[6 + 2 * i + 1], k * acc[6 + 2 * i]);
  }

  EMGPU_HD static Real rsqrt_hd(Real x) {
#if defined(__CUDA_ARCH__)
    if constexpr (sizeof(Real) == 4) return ::rsqrtf(x);
    else return ::rsqrt(x);
#else
    return Real(rsqrt_host(double(x)));
#endif
  }

  /// @brief 1/sqrt(x) for x > 0 on the host without a library call: std::sqrt
  ///        keeps an errno branch (unless -fno-math-errno) that stops the host
  ///        loops from vectorising. Bit-level first guess (relative error
  ///        < 3.5e-2), then four Newton steps (quadratic: 1e-3, 1e-6, 1e-12,
  ///        below rounding): within 3 ulp (measured 2.4).
  static double rsqrt_host(double x) {
    const double h = 0.5 * x;
    double y = std::bit_cast<double>(std::int64_t(0x5fe6eb50c7b537a9) - (std::bit_cast<std::int64_t>(x) >> 1));
    y = y * (1.5 - h * y * y);
    y = y * (1.5 - h * y * y);
    y = y * (1.5 - h * y * y);
    y = y * (1.5 - h * y * y);
    return y;
  }
  template <bool Wide = true>
  EMGPU_HD static void sincos_hd(Real x, Real& s, Real& c) {
#if defined(__CUDA_ARCH__)
    // sincospi's argument reduction is exact and branch-free (no Payne-Hanek
    // slow path); the extra rounding of x / pi is one ulp of the phase.
    constexpr Real inv_pi = Real(0.318309886183790671537767526745028724);
    if constexpr (sizeof(Real) == 4) ::sincospif(x * inv_pi, &s, &c);
    else ::sincospi(x * inv_pi, &s, &c);
#else
    if constexpr (sizeof(Real) == 4) {
      double sd, cd;
      sincos_host<Wide>(double(x), sd, cd);
      s = Real(sd);
      c = Real(cd);
    } else {
      sincos_host<Wide>(x, s, c);
    }
#endif
  }

  /// @brief sin and cos on the host, branch-free so that the host loops
  ///        vectorise over observers (the C library's sincos is an opaque scalar
  ///        call costing as much as the rest of a pair).
  /// @tparam Wide true (default): any x; false: only |x| < reduce_exact_limit
  ///         (cheaper; the operator uses it when k times the extent of its
  ///         geometry stays below that), larger |x| give wrong values.
  /// @param x the argument (NaN or Inf give NaN).
  /// @param s, c sin(x) and cos(x).
  ///
  /// Two argument reductions to r in [-pi/4, pi/4] and a quadrant n:
  /// - |x| < reduce_exact_limit (1.6e6): Cody-Waite by pi/2 in three parts (the
  ///   first with 33 significant bits, so n * p1 is exact for |n| <= 2^20):
  ///   within 1-2 ulp of sin(x) and cos(x) for the given x.
  /// - beyond (Wide only; there n * p1 rounds, and n overflowed an int from
  ///   3.4e9 on): as the CUDA path's sincospi, the phase in turns
  ///   t = x / (2 pi), rounded once, whose reduction is exact at every
  ///   magnitude. That rounding (with that of 1/(2 pi)) moves the phase by at
  ///   most 1.6 u |x| (u = 2^-53): the result is sin and cos of x (1 + d),
  ///   |d| <= 1.6 u, the size of the rounding of the phase k R itself
  ///   (k * R with R from rsqrt carries a few u |k R|).
  /// Both are computed and one is kept per lane by arithmetic on a sign bit
  /// (step_host), not by a branch. Then the Taylor series to r^17 / r^18
  /// (truncation < 1e-19). The quadrant is read from the bits of a double (a
  /// float-to-int conversion is undefined for a large value). The rounding
  /// uses 2^52 shifters: do not build with -ffast-math (which may fold them
  /// away).
  template <bool Wide = true>
  static void sincos_host(double x, double& s, double& c) {
    constexpr double two_over_pi = 0.63661977236758134308;
    constexpr double p1 = 0x1.921fb544p+0;          // pi/2 to 33 bits
    constexpr double p2 = 0x1.0b4611a626331p-34;    // next 53 bits
    constexpr double p3 = 0x1.1701b839a252p-88;     // and the next
    constexpr double shift = 0x1.8p52;               // rounds any |y| < 2^51
    // Cody-Waite: x = n pi/2 + r.
    double n = (x * two_over_pi + shift) - shift;
    double r = ((x - n * p1) - n * p2) - n * p3;
    if constexpr (Wide) {
      constexpr double inv_2pi = 0.159154943091895335768883763372514362;
      constexpr double pi_2 = 1.57079632679489661923132169163975144;
      // Turns: f = t - rint(t) in [-1/2, 1/2], exact: the 2^52 shifter (with
      // t's sign) rounds any |t| <= 2^52; every larger double is an integer,
      // f = 0, and the shifted value (finite, wrong there) is masked off.
      const double t = x * inv_2pi;
      const double big = std::copysign(0x1p52, t);
      const double f4 = 4.0 * (t - ((t + big) - big)) * step_host(0x1p52 - std::fabs(t));
      const double n_t = (f4 + shift) - shift;  // in [-2, 2]
      const double r_t = (f4 - n_t) * pi_2;
      // m = 1 below the limit, else 0: for |x| < limit, limit - |x| >=
      // ulp(limit) = 2^-32 > 2^-33. For finite x both lanes are finite, so
      // a m + b (1 - m) is exact.
      const double m = step_host((reduce_exact_limit - std::fabs(x)) - 0x1p-33);
      n = n * m + n_t * (1.0 - m);
      r = r * m + r_t * (1.0 - m);
    }
    // n mod 4: the low bits of n + 1.5 * 2^52 (n is an integer with
    // |n| <= 2^20, so the sum is exact with ulp 1).
    const std::uint64_t qb = std::bit_cast<std::uint64_t>(n + shift);
    const double r2 = r * r;
    // (-1)^k / (2k+1)! and (-1)^k / (2k)!
    const double sp =
        -1.0 / 6 + r2 * (1.0 / 120 + r2 * (-1.0 / 5040 + r2 * (1.0 / 362880 + r2 * (-1.0 / 39916800 +
        r2 * (1.0 / 6227020800.0 + r2 * (-1.0 / 1307674368000.0 + r2 * (1.0 / 355687428096000.0)))))));
    const double cp =
        1.0 / 24 + r2 * (-1.0 / 720 + r2 * (1.0 / 40320 + r2 * (-1.0 / 3628800 + r2 * (1.0 / 479001600.0 +
        r2 * (-1.0 / 87178291200.0 + r2 * (1.0 / 20922789888000.0 + r2 * (-1.0 / 6402373705728000.0)))))));
    const double sr = r + r * r2 * sp;
    const double cr = 1.0 - 0.5 * r2 + r2 * r2 * cp;
    // Odd quadrants swap sin and cos; quadrants 2, 3 negate sin, 1, 2 cos.
    // Only the low two bits count: the 64 to 32 bit narrowing keeps them and
    // is defined for any value (a double to int conversion is not).
    const int q = int(std::uint32_t(qb));
    const bool swap = (q & 1) != 0;
    const double sv = swap ? cr : sr, cv = swap ? sr : cr;
    s = (q & 2) != 0 ? -sv : sv;
    c = ((q + 1) & 2) != 0 ? -cv : cv;
  }

  /// |x| below which sincos_host's Cody-Waite reduction is exact: 2^20 pi/2.
  static constexpr double reduce_exact_limit = 0x1p20 * 1.57079632679489661923;

 private:
  // 1 for d > 0 or +0, 0 for d < 0 or -0, through copysign (a bit operation): a
  // comparison or std::min / max here becomes a branch that GCC threads the
  // arithmetic into, which it then cannot if-convert (FP operations may
  // trap): the observer loop of host_tile would stop vectorising.
  static double step_host(double d) { return 0.5 + std::copysign(0.5, d); }

  // acc3 += G g1 (X x u) + sgn [G p Y + G q (u . Y) u]; for E: X = Mt, Y = Jt, sgn = +1;
  // for C: X = Jt, Y = Mt, sgn = -1.
  EMGPU_HD static void field_part(const coupling& c, const Real* x, const Real* y, Real* acc,
                                  index_t st, Real sgn) {
    const Real ux = c.ux, uy = c.uy, uz = c.uz;
    // X x u (complex vector, real u)
    const Real cxr = x[2] * uz - x[4] * uy, cxi = x[3] * uz - x[5] * uy;
    const Real cyr = x[4] * ux - x[0] * uz, cyi = x[5] * ux - x[1] * uz;
    const Real czr = x[0] * uy - x[2] * ux, czi = x[1] * uy - x[3] * ux;
    // u . Y
    const Real dr = ux * y[0] + uy * y[2] + uz * y[4];
    const Real di = ux * y[1] + uy * y[3] + uz * y[5];
    // s = sgn G q (u . Y);  P = sgn G p
    const Real sr = sgn * (c.qr * dr - c.qi * di), si = sgn * (c.qr * di + c.qi * dr);
    const Real pr = sgn * c.pr, pi = sgn * c.pi;
    acc[0 * st] += c.gr * cxr - c.gi * cxi + pr * y[0] - pi * y[1] + sr * ux;
    acc[1 * st] += c.gr * cxi + c.gi * cxr + pr * y[1] + pi * y[0] + si * ux;
    acc[2 * st] += c.gr * cyr - c.gi * cyi + pr * y[2] - pi * y[3] + sr * uy;
    acc[3 * st] += c.gr * cyi + c.gi * cyr + pr * y[3] + pi * y[2] + si * uy;
    acc[4 * st] += c.gr * czr - c.gi * czi + pr * y[4] - pi * y[5] + sr * uz;
    acc[5 * st] += c.gr * czi + c.gi * czr + pr * y[5] + pi * y[4] + si * uz;
  }
};

}  // namespace emgpu::fe_iiee
