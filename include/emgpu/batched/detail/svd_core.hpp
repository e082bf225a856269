/// @file
/// @brief Team-parallel one-sided (Hestenes) Jacobi SVD and its functor.
///
/// Columns p < q are made orthogonal by a plane rotation on the right,
/// A <- A J with J = [[c, s e], [-s conj(e), c]], e = gamma/|gamma|,
/// gamma = a_p^H a_q, zeta = (||a_q||^2 - ||a_p||^2) / (2|gamma|),
/// t = sign(zeta) / (|zeta| + sqrt(1 + zeta^2)), c = 1/sqrt(1+t^2), s = c t
/// (the smaller rotation, as in Demmel & Veselic 1992). A sweep visits all
/// pairs in round-robin order: each round holds n/2 disjoint pairs, which a
/// team processes at once (g lanes per pair split the rows). At convergence
/// A = U S, sigma_j = ||a_j||, U = a_j / sigma_j and V = product of the J.
#pragma once

#include <cstddef>
#include <limits>
#include <type_traits>

#include "common.hpp"

namespace emgpu::batched::detail {

/// Pair kp of round r of the circle method on N (even) indices.
EMGPU_HD inline void jacobi_pair(index_t r, index_t kp, index_t N, index_t& p, index_t& q) {
  if (kp == 0) {
    p = N - 1;
    q = r;
  } else {
    p = (r + kp) % (N - 1);
    q = (r - kp + N - 1) % (N - 1);
  }
  if (p > q) {
    const index_t tmp = p;
    p = q;
    q = tmp;
  }
}

/// Rotation parameters for the column pair (p, q) with squared norms al, be
/// and gamma = a_p^H a_q (see the file comment): e = gamma/|gamma|, s = sin,
/// tau = tan(theta/2). Returns false (no rotation; outputs untouched) when a
/// column is zero or |gamma| <= tol ||a_p|| ||a_q||; written so that NaN
/// never rotates (and never loops forever). Shared by the team and the
/// register paths, so both take the same decisions from the same numbers.
template <class T, class R>
EMGPU_HD inline bool jacobi_params(T gamma, R al, R be, R tol, T& e, R& s, R& tau) {
  if (al == R(0) || be == R(0)) return false;
  const R gabs = abs_any(gamma);
  if (!(gabs > tol * sqrt_r(al) * sqrt_r(be))) return false;
  e = mul_real(gamma, R(1) / gabs);
  const R zeta = (be - al) / (R(2) * gabs);
  const R tt = (zeta >= R(0) ? R(1) : R(-1)) / ((zeta < 0 ? -zeta : zeta) + hypot_r(R(1), zeta));
  const R c = R(1) / sqrt_r(R(1) + tt * tt);
  s = c * tt;
  // Rutishauser's form, c = 1 - s tau with tau = tan(theta/2): the update is
  // a correction proportional to the angle, so the many tiny rotations of
  // the last sweeps add rounding ~ angle * eps instead of eps each (keeps V
  // orthonormal to ~n eps at n = 128).
  tau = s / (R(1) + c);
  return true;
}

/// Rows i0, i0 + g, ... < m of the column pair (x, y) := (x, y) J, in
/// Rutishauser's form (see svd_core). Two rows per iteration with the loads
/// ahead of the stores: the compiler cannot prove that the columns do not
/// alias, so one row per iteration would expose the full load latency each
/// time (same operations per entry, same results).
template <class T, class R>
EMGPU_HD inline void jacobi_rotate(T* xp, T* yp, index_t i0, index_t m, index_t g, T e, R s, R tau) {
  const T ce = conj_any(e);
  index_t i = i0;
  for (; i + g < m; i += 2 * g) {
    const T x0 = xp[i], y0 = yp[i], x1 = xp[i + g], y1 = yp[i + g];
    xp[i] = x0 - mul_real(ce * y0 + mul_real(x0, tau), s);
    yp[i] = y0 + mul_real(e * x0 - mul_real(y0, tau), s);
    xp[i + g] = x1 - mul_real(ce * y1 + mul_real(x1, tau), s);
    yp[i + g] = y1 + mul_real(e * x1 - mul_real(y1, tau), s);
  }
  if (i < m) {
    const T x = xp[i], y = yp[i];
    xp[i] = x - mul_real(ce * y + mul_real(x, tau), s);
    yp[i] = y + mul_real(e * x - mul_real(y, tau), s);
  }
}

/// @brief Completes U's columns of exactly zero (or NaN) singular values,
///        left empty by U = A V / sigma, to an orthonormal set: Gram-Schmidt
///        on unit vectors, two passes for orthogonality to working precision.
///        Run by one thread; u is m x n (leading dimension ldu).
template <class T, class R>
EMGPU_HD void complete_null_columns(T* u, index_t ldu, index_t m, index_t n, const R* sigma) {
  for (index_t j = 0; j < n; ++j) {
    if (sigma[j] > R(0)) continue;
    T* uj = u + j * ldu;
    for (index_t e = 0; e < m; ++e) {
      for (index_t i = 0; i < m; ++i) uj[i] = T(R(i == e));
      for (int pass = 0; pass < 2; ++pass)
        for (index_t l = 0; l < j; ++l) {
          const T* ul = u + l * ldu;
          T d = T(0);
          for (index_t i = 0; i < m; ++i) d += conj_any(ul[i]) * uj[i];
          for (index_t i = 0; i < m; ++i) uj[i] -= d * ul[i];
        }
      R s2 = 0;
      for (index_t i = 0; i < m; ++i) s2 += abs2(uj[i]);
      // The complement has dimension d >= 1 and sum_e |P e|^2 = d, so
      // some e keeps at least 1/m of its norm: accept half of that.
      if (s2 > R(0.5) / R(m)) {
        const R rs = R(1) / sqrt_r(s2);
        for (index_t i = 0; i < m; ++i) uj[i] = mul_real(uj[i], rs);
        break;
      }
    }
  }
}

/// @brief Selection sort of sigma (descending) in which the columns of A
///        (when move_a) and V (when want_v) move with their singular value;
///        shared by the Jacobi and the Golub-Kahan cores. Ends with a team
///        barrier. NaN is never selected, so the sort always ends.
template <class Team, class MatA, class MatV, class R>
EMGPU_HD void sort_singular(const Team& t, const MatA& a, index_t m, bool move_a, const MatV& v, index_t n,
                            bool want_v, R* sigma) {
  using T = std::remove_cvref_t<decltype(a(0, 0))>;
  for (index_t i = 0; i + 1 < n; ++i) {
    R best = R(-1);
    index_t p = i;
    for (index_t j = i + t.rank(); j < n; j += t.size())
      if (sigma[j] > best) {
        best = sigma[j];
        p = j;
      }
    t.argmax(best, p);
    if (p == i) continue;
    const index_t rows = m > n ? m : n;
    team_for(t, rows, [&](index_t r) {
      if (move_a && r < m) {
        const T tmp = a(r, i);
        a(r, i) = a(r, p);
        a(r, p) = tmp;
      }
      if (want_v && r < n) {
        const T tmp = v(r, i);
        v(r, i) = v(r, p);
        v(r, p) = tmp;
      }
      if (r == 0) {
        const R tmp = sigma[i];
        sigma[i] = sigma[p];
        sigma[p] = tmp;
      }
    });
    t.sync();
  }
  t.sync();
}

/// Multiplies A by a power of two (exact) so that its largest |re| + |im|
/// lies in [1/2, 1): sums of squares of entries then neither overflow nor
/// underflow, so both methods keep their accuracy for matrices with entries
/// near the ends of the exponent range (unscaled, Jacobi's column norms were
/// Inf at 2^520 in double and 0 at 2^-600). For any other matrix every
/// later operation sees its values times the same power of two, so the
/// results are bit for bit those without scaling. @return the exponent ex
/// (A was scaled by 2^-ex); bad: NaN or Inf in A (then A is left as it is).
template <class Team, class MatA>
EMGPU_HD inline int svd_scale(const Team& t, const MatA& a, index_t m, index_t n, bool& bad) {
  using T = std::remove_cvref_t<decltype(a(0, 0))>;
  using R = real_type_t<T>;
  R mx = R(0);
  bad = false;
  team_for_2d(t, m, n, [&](index_t i, index_t j) {
    const T x = a(i, j);
    R ax = abs1(x);
    if (!(ax <= std::numeric_limits<R>::max())) bad = true;
    else if (ax > mx) mx = ax;
  });
  index_t dummy = 0;
  t.argmax(mx, dummy);
  bad = t.any(bad);
  int ex = 0;
  if (mx > R(0) && !bad) {
    ex = exponent_r(mx);
    if (ex != 0) {
      team_for_2d(t, m, n, [&](index_t i, index_t j) {
        if constexpr (is_complex_v<T>) a(i, j) = T(ldexp_r(a(i, j).real(), -ex), ldexp_r(a(i, j).imag(), -ex));
        else a(i, j) = ldexp_r(a(i, j), -ex);
      });
      t.sync();
    }
  }
  return ex;
}

/// @return 0 when converged within max_sweeps, 1 otherwise. sigma must hold n.
template <class Team, class MatA, class MatV, class T>
EMGPU_HD int svd_core(const Team& t, const MatA& a, index_t m, index_t n,
                      real_type_t<T>* sigma, const MatV& v, bool want_v, T* u, index_t ldu,
                      bool want_u, real_type_t<T> tol, int max_sweeps, int group) {
  using R = real_type_t<T>;
  if (want_v) {
    team_for_2d(t, n, n, [&](index_t i, index_t j) { v(i, j) = T(R(i == j)); });
    t.sync();
  }
  const int g = group <= t.size() ? group : 1;  // a serial team uses one lane
  const index_t slots = t.size() / g;
  const index_t kp0 = t.rank() / g;
  const int lane = t.rank() % g;
  bool bad = false;  // NaN / Inf: left unscaled, the sweeps run as they are
  const int ex = svd_scale(t, a, m, n, bad);
  const index_t N = n + (n & 1);
  const index_t npairs = N / 2;
  int info = 1;
  if (n <= 1) info = 0;
  for (int sweep = 0; sweep < max_sweeps && info != 0; ++sweep) {
    bool rotated = false;
    for (index_t r = 0; r + 1 < N; ++r) {
      // Uniform trip count across the team: group reductions need every lane.
      for (index_t base = 0; base < npairs; base += slots) {
        const index_t kp = base + kp0;
        index_t p = 0, q = 0;
        bool act = kp < npairs;
        if (act) {
          jacobi_pair(r, kp, N, p, q);
          act = q < n;
        }
        R al = 0, be = 0, gr = 0, gi = 0;
        T* ap = a.col(act ? p : 0);
        T* aq = a.col(act ? q : 0);
        if (act) {
          T ga = T(0);
          for (index_t i = lane; i < m; i += g) {
            al += abs2(ap[i]);
            be += abs2(aq[i]);
            ga += conj_any(ap[i]) * aq[i];
          }
          if constexpr (is_complex_v<T>) {
            gr = ga.real();
            gi = ga.imag();
          } else {
            gr = ga;
          }
        }
        al = t.group_sum(al, g);
        be = t.group_sum(be, g);
        gr = t.group_sum(gr, g);
        if constexpr (is_complex_v<T>) gi = t.group_sum(gi, g);
        if (!act) continue;
        T gamma;
        if constexpr (is_complex_v<T>) gamma = T(gr, gi);
        else gamma = gr;
        T e;
        R s, tau;
        if (!jacobi_params(gamma, al, be, tol, e, s, tau)) continue;
        rotated = true;
        jacobi_rotate(ap, aq, lane, m, g, e, s, tau);
        if (want_v) jacobi_rotate(v.col(p), v.col(q), lane, n, g, e, s, tau);
      }
      t.sync();
    }
    if (!t.any(rotated)) info = 0;
  }

  team_for(t, n, [&](index_t j) {
    const T* aj = a.col(j);
    R s2 = 0;
    for (index_t i = 0; i < m; ++i) s2 += abs2(aj[i]);
    sigma[j] = sqrt_r(s2);
  });
  t.sync();

  sort_singular(t, a, m, true, v, n, want_v, sigma);

  if (want_u) {
    team_for_2d(t, m, n, [&](index_t i, index_t j) {
      const R sj = sigma[j];
      u[i + j * ldu] = sj > R(0) ? mul_real(a(i, j), R(1) / sj) : T(0);
    });
    t.sync();
    // Rare path (exactly zero singular values), done by one lane.
    if (n > 0 && !(sigma[n - 1] > R(0))) {
      if (t.rank() == 0) complete_null_columns(u, ldu, m, n, sigma);
      t.sync();
    }
  }
  if (ex != 0) {  // after U, which divides the scaled columns by the scaled sigma
    team_for(t, n, [&](index_t j) { sigma[j] = ldexp_r(sigma[j], ex); });
    t.sync();
  }
  return info;
}

/// Lanes per Jacobi pair (rows split between them) and team size for m x n.
inline void svd_shape(index_t m, index_t n, int& group, int& team) {
  index_t pairs = (n + 1) / 2;
  if (pairs < 1) pairs = 1;
  index_t pp = 1;
  while (pp < pairs) pp *= 2;
  index_t g = 1;
  while (g < 32 && g * 8 < m) g *= 2;  // about 8 rows per lane
  while (pp * g > 256 && g > 1) g /= 2;
  index_t s = pp * g;
  if (s > 256) s = 256;
  if (s < 2) s = 2;
  group = int(g);
  team = int(s);
}

/// Shared memory that stages A (m x n) and, when wanted, V (n x n): what
/// both SVD methods' functors ask the CUDA launch for.
template <class T>
inline std::size_t svd_stage_bytes(index_t m, index_t n, bool want_v) {
  return align16(std::size_t(padded_ld<T>(m)) * n * sizeof(T)) +
         (want_v ? align16(std::size_t(padded_ld<T>(n)) * n * sizeof(T)) : 0);
}

template <class T, class LocA, class LocU, class LocV>
struct svd_op {
  LocA a;
  index_t m, n, lda;
  real_type_t<T>* sigma;
  LocU u;
  index_t ldu;
  bool want_u;
  LocV v;
  index_t ldv;
  bool want_v;
  int* info;
  real_type_t<T> tol;
  int max_sweeps;
  int group, team;

  std::size_t scratch_bytes() const { return 0; }
  std::size_t stage_bytes() const { return svd_stage_bytes<T>(m, n, want_v); }
  int team_size() const { return team; }

  template <class Team>
  EMGPU_HD void operator()(const Team& t, index_t k, unsigned char* scratch, std::size_t bytes) const {
    carver cv{scratch, bytes};
    const staged_matrix<T> x = cv.stage(a(k), m, n, lda);
    // Without V nothing is staged or written for it.
    const staged_matrix<T> w = want_v ? cv.stage(v(k), n, n, ldv) : staged_matrix<T>{};
    stage_in(t, x, m);
    const int inf = with_local(x, n, [&](const auto& xa) {
      return with_local(w, want_v ? n : 0, [&](const auto& wa) {
        return svd_core(t, xa, m, n, sigma + k * n, wa, want_v, want_u ? u(k) : (T*)nullptr, ldu, want_u,
                        tol, max_sweeps, group);
      });
    });
    if (want_v) stage_out(t, w, n);
    if (t.rank() == 0) info[k] = inf;
  }
};

/// Per-matrix rank: count of sigma > tau * sigma_max.
template <class R>
struct rank_op {
  const R* sigma;
  index_t n;
  R tau;
  index_t* rank;
  EMGPU_HD void operator()(index_t k) const {
    const R* s = sigma + k * n;
    R mx = 0;
    for (index_t j = 0; j < n; ++j) mx = s[j] > mx ? s[j] : mx;
    index_t c = 0;
    for (index_t j = 0; j < n; ++j) c += (s[j] > tau * mx) ? 1 : 0;
    rank[k] = c;
  }
};

}  // namespace emgpu::batched::detail
