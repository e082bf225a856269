/// @file
/// @brief Host implementation of the Gauss-Legendre and log-product rules. Everything
///        is computed in long double and rounded once, so double results carry the
///        rounding of the final conversion only. The C long double functions (logl,
///        ...) are used rather than the std:: overloads: libstdc++ declares those
///        constexpr, and nvcc with --expt-relaxed-constexpr would then compile them
///        for the device and warn that long double becomes double there. For the
///        same reason no lambda touches long double and every std::vector<long double>
///        is built with an explicit fill value (the value-initialising constructor
///        is constexpr in C++20).
#pragma once

#include <cfloat>
#include <math.h>
#include <vector>

#include "../../core/config.hpp"

namespace emgpu::math::detail {

using ld = long double;

/// P_n(x) and P_{n-1}(x) by the three-term recurrence (stable on [-1, 1]).
inline void legendre_pair(index_t n, ld x, ld& pn, ld& pnm1) {
  ld p0 = 1, p1 = x;
  if (n == 0) { pn = 1; pnm1 = 0; return; }
  for (index_t k = 2; k <= n; ++k) {
    const ld p2 = (ld(2 * k - 1) * x * p1 - ld(k - 1) * p0) / ld(k);
    p0 = p1;
    p1 = p2;
  }
  pn = p1;
  pnm1 = p0;
}

/// Gauss-Legendre nodes (ascending) and weights on [-1, 1] in long double.
/// Newton on P_n from Tricomi's asymptotic guess; the rule is made exactly
/// symmetric by computing the non-negative nodes and mirroring them.
inline void gauss_legendre_ld(index_t n, std::vector<ld>& x, std::vector<ld>& w) {
  x.assign(std::size_t(n), 0);
  w.assign(std::size_t(n), 0);
  const ld pi = ld(3.141592653589793238462643383279502884L);
  const ld nn = ld(n);
  const ld eps = ld(LDBL_EPSILON);
  for (index_t k = 1; k <= (n + 1) / 2; ++k) {  // k-th largest root
    ld r = (1 - 1 / (8 * nn * nn) + 1 / (8 * nn * nn * nn)) * cosl(pi * (4 * ld(k) - 1) / (4 * nn + 2));
    if (2 * k - 1 == n) r = 0;  // the middle node of an odd rule is exactly 0
    ld pn = 0, pm = 0, dp = 0;
    for (int it = 0; it < 100; ++it) {
      legendre_pair(n, r, pn, pm);
      dp = nn * (r * pn - pm) / (r * r - 1);
      const ld dx = pn / dp;
      r -= dx;
      if (fabsl(dx) <= 4 * eps) {
        // One more step at the converged point leaves the last bits right.
        legendre_pair(n, r, pn, pm);
        dp = nn * (r * pn - pm) / (r * r - 1);
        r -= pn / dp;
        break;
      }
    }
    if (2 * k - 1 == n) r = 0;
    legendre_pair(n, r, pn, pm);
    dp = nn * (r * pn - pm) / (r * r - 1);
    const ld wk = 2 / ((1 - r) * (1 + r) * dp * dp);
    x[std::size_t(n - k)] = r;
    w[std::size_t(n - k)] = wk;
    x[std::size_t(k - 1)] = -r;
    w[std::size_t(k - 1)] = wk;
  }
}

/// u ln|u| with the limit 0 at u = 0. A named function, not a lambda: lambdas are
/// implicitly constexpr, which nvcc --expt-relaxed-constexpr would compile for the
/// device (and warn about long double there).
inline ld xlogx(ld u) { return u == 0 ? ld(0) : u * logl(fabsl(u)); }

/// Moments m_k = Integral_{-1}^{1} P_k(t) ln|t - t0| dt, k = 0..q-1.
///
/// Integrating by parts with S_k = (P_{k+1} - P_{k-1})/(2k+1) (S_k(+-1) = 0) gives
/// m_k = 2 (Q_{k+1}(t0) - Q_{k-1}(t0)) / (2k+1), Q_n the Legendre function of the
/// second kind (Neumann: Q_n(t0) = 1/2 PV Integral P_n(t)/(t0 - t) dt).
///  - Near and inside [-1, 1]: Q_n = P_n Q_0 - W_n with W_n polynomials obeying the
///    same recurrence (W_0 = 0, W_1 = 1). The log singularity of Q_0 at t0 = +-1
///    then multiplies P_{k+1} - P_{k-1}, which vanishes there, so endpoints need
///    no special case beyond 0 * inf = 0.
///  - Away from [-1, 1] Q_n decays like rho^n, rho = 1/(|t0| + sqrt(t0^2 - 1)), and
///    the split above would cancel catastrophically (loss ~ rho^{-2n}): there Q_n is
///    the minimal solution of the recurrence and comes from Miller's backward
///    recurrence, normalised by Q_0.
inline std::vector<ld> log_moments(index_t q, ld t0) {
  std::vector<ld> m(std::size_t(q), 0);
  const ld a = fabsl(t0);
  // m_0 = [(t - t0) ln|t - t0| - t]_{-1}^{1}
  ld q0;  // Q_0(t0) = 1/2 ln|(t0 + 1)/(t0 - 1)|
  if (a > 2) {
    q0 = ld(0.5) * log1pl(2 / (t0 - 1));
    // The xlogx form cancels for large |t0|; this one does not.
    m[0] = logl(fabsl(t0 - 1)) + logl(fabsl(t0 + 1)) + 2 * t0 * q0 - 2;
  } else {
    q0 = (a == 1) ? ld(HUGE_VALL) * t0
                  : ld(0.5) * logl(fabsl((1 + t0) / (1 - t0)));
    m[0] = xlogx(1 - t0) + xlogx(1 + t0) - 2;
  }
  if (q == 1) return m;
  // Loss factor of the forward split at degree q: rho^{-2q}.
  const ld rho = a > 1 ? 1 / (a + sqrtl((a - 1) * (a + 1))) : ld(1);
  const bool forward = a <= 1 || -2 * ld(q + 1) * logl(rho) < logl(ld(1e3));
  std::vector<ld> Q(std::size_t(q + 1), ld(0));  // explicit fill: see the file comment
  if (forward) {
    // P_n and W_n up to n = q; D_k = Q_{k+1} - Q_{k-1}.
    std::vector<ld> P(std::size_t(q + 1), ld(0)), W(std::size_t(q + 1), ld(0));
    P[0] = 1;
    W[0] = 0;
    P[1] = t0;
    W[1] = 1;
    for (index_t n = 1; n < q; ++n) {
      P[std::size_t(n + 1)] = (ld(2 * n + 1) * t0 * P[std::size_t(n)] - ld(n) * P[std::size_t(n - 1)]) / ld(n + 1);
      W[std::size_t(n + 1)] = (ld(2 * n + 1) * t0 * W[std::size_t(n)] - ld(n) * W[std::size_t(n - 1)]) / ld(n + 1);
    }
    for (index_t k = 1; k < q; ++k) {
      const ld dp = P[std::size_t(k + 1)] - P[std::size_t(k - 1)];
      const ld sing = dp == 0 ? ld(0) : dp * q0;
      const ld d = sing - (W[std::size_t(k + 1)] - W[std::size_t(k - 1)]);
      m[std::size_t(k)] = 2 * d / ld(2 * k + 1);
    }
    return m;
  }
  // Miller: start far enough above q that rho^{2(N - q)} < 1e-24.
  const index_t start = q + 2 + index_t(ceill(24 * logl(ld(10)) / (-2 * logl(rho))));
  ld qp1 = 0, qn = ld(LDBL_MIN) * ld(1e10) * (t0 > 0 ? 1 : -1);
  for (index_t n = start; n >= 1; --n) {
    // Q_{n-1} = ((2n+1) t0 Q_n - (n+1) Q_{n+1}) / n
    const ld qm1 = (ld(2 * n + 1) * t0 * qn - ld(n + 1) * qp1) / ld(n);
    qp1 = qn;
    qn = qm1;
    if (n - 1 <= q) Q[std::size_t(n - 1)] = qn;
    if (fabsl(qn) > ld(1e300)) {  // rescale to stay in range
      for (index_t j = n - 1; j <= q && j <= start; ++j) Q[std::size_t(j)] *= ld(1e-300);
      qn *= ld(1e-300);
      qp1 *= ld(1e-300);
    }
  }
  const ld scale = q0 / Q[0];
  for (auto& v : Q) v *= scale;
  for (index_t k = 1; k < q; ++k)
    m[std::size_t(k)] = 2 * (Q[std::size_t(k + 1)] - Q[std::size_t(k - 1)]) / ld(2 * k + 1);
  return m;
}

}  // namespace emgpu::math::detail
