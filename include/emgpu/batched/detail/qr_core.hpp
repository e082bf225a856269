/// @file
/// @brief Team-parallel QR by Givens rotations (Sameh-Kuck staging) and the
///        per-matrix functors for factor / apply Q^H / form Q / least squares.
///
/// Rotation G acts on rows (i-1, i): [x; y] -> [c x + s y; -conj(s) x + c y],
/// c real >= 0, c^2 + |s|^2 = 1. Element (i, j), i > j, is annihilated at
/// stage (m-1-i) + 2j; rotations of one stage touch disjoint row pairs, and on
/// every row the column order of the sequential algorithm is kept, so the
/// product is the one of the textbook column-by-column bottom-up sweep.
///
/// Storage: the annihilated entry (i, j) receives one scalar z encoding its
/// rotation (as LAPACK keeps Householder vectors below R): z = s when
/// c >= 1/sqrt2 (|z| <= 0.71), else z = (s/|s|)(2 - c) (|z| > 1.29). Decoding
/// recovers c and s to a few ulps in absolute terms; the team path's factor
/// and apply both use the decoded pair, so Q and R are consistent bit for
/// bit; the CUDA warp and window kernels apply the made pair
/// (givens_make_fast_in_place), consistent to rounding.
#pragma once

#include <cstddef>

#include "common.hpp"
#include "lu_core.hpp"  // upper_solve

namespace emgpu::batched::detail {

template <class T>
struct givens {
  real_type_t<T> c;
  T s;
};

/// Range of |x|^2 and |y|^2 where the fast formulas of givens_make hold:
/// neither the squares nor |x|^2 (|x|^2 + |y|^2) overflow or fall into the
/// subnormals (2^-480 .. 2^480 for double, 2^-60 .. 2^60 for float).
template <class R>
inline constexpr R givens_fast_lo = sizeof(R) == 4 ? R(0x1p-60) : R(0x1p-480);
template <class R>
inline constexpr R givens_fast_hi = sizeof(R) == 4 ? R(0x1p60) : R(0x1p480);

#if defined(__CUDACC__)
#define EMGPU_GIVENS_COLD __noinline__
#else
#define EMGPU_GIVENS_COLD
#endif

/// givens_make far from 1 (or NaN / Inf): scaled throughout. Out of line on
/// CUDA: hypot and two divisions inlined at every rotation of the unrolled
/// register kernel (qr_regs.hpp) made most of its code.
template <class T>
EMGPU_HD EMGPU_GIVENS_COLD givens<T> givens_make_scaled(T x, T y) {
  using R = real_type_t<T>;
  const R ax = abs_any(x), ay = abs_any(y);
  const R nrm = hypot_r(ax, ay);
  const T phase = mul_real(x, R(1) / ax);
  return {ax / nrm, mul_real(phase * conj_any(y), R(1) / nrm)};
}

/// Rotation with G [x; y] = [r; 0].
template <class T>
EMGPU_HD inline givens<T> givens_make(T x, T y) {
  using R = real_type_t<T>;
  if (is_zero(y)) return {R(1), T(0)};
  if (is_zero(x)) return {R(0), T(1)};
  const R ax2 = abs2(x), ay2 = abs2(y);
  if (ax2 >= givens_fast_lo<R> && ax2 <= givens_fast_hi<R> && ay2 >= givens_fast_lo<R> &&
      ay2 <= givens_fast_hi<R>) {
    // c = |x| / r, s = (x / |x|) conj(y) / r, r = sqrt(|x|^2 + |y|^2): one
    // reciprocal square root, w = 1 / (|x| r). The generation runs once per
    // rotation on every lane of the CUDA kernels, so three hypot and three
    // divisions there cost more than applying the rotation.
    const R w = rsqrt_r(ax2 * (ax2 + ay2));
    return {ax2 * w, mul_real(x * conj_any(y), w)};
  }
  return givens_make_scaled(x, y);
}

// In both branches below |z| (and |s| in encode's second) is within
// [0.7, 2] or tiny, so abs2 neither overflows nor loses precision that
// matters: |z|^2 < 2^-1022 decodes to c = 1, s = z, exact to rounding.
template <class T>
EMGPU_HD inline T givens_encode(const givens<T>& g) {
  using R = real_type_t<T>;
  if (g.c >= R(0.70710678118654752440)) return g.s;
  return mul_real(g.s, (R(2) - g.c) * rsqrt_r(abs2(g.s)));
}

template <class T>
EMGPU_HD inline givens<T> givens_decode(T z) {
  using R = real_type_t<T>;
  const R a2 = abs2(z);
  if (a2 < R(1)) return {sqrt_r(R(1) - a2), z};  // 1 - a2 >= 1/2 as encoded
  const R ra = rsqrt_r(a2);                        // 1 / |z|
  const R c = R(2) - a2 * ra;
  return {c, mul_real(z, sqrt_r((R(1) - c) * (R(1) + c)) * ra)};
}

/// Applies G (adjoint = false) or G^H to the pair (x, y).
template <class T>
EMGPU_HD inline void givens_apply(const givens<T>& g, T& x, T& y, bool adjoint) {
  const T x0 = x, y0 = y;
  if (!adjoint) {
    x = mul_real(x0, g.c) + g.s * y0;
    y = mul_real(y0, g.c) - conj_any(g.s) * x0;
  } else {
    x = mul_real(x0, g.c) - g.s * y0;
    y = mul_real(y0, g.c) + conj_any(g.s) * x0;
  }
}

/// The make step of a stage for one column: the rotation annihilating y in
/// (x, y), applied, with y replaced by its code z (the annihilated entry
/// keeps the rotation). Returns the decoded rotation that was applied, the
/// one the rest of the row pair receives.
template <class T>
EMGPU_HD inline givens<T> givens_make_in_place(T& x, T& y) {
  const T z = givens_encode(givens_make(x, y));
  const givens<T> g = givens_decode(z);
  givens_apply(g, x, y, false);
  y = z;  // y is zero up to rounding: the slot keeps the rotation
  return g;
}

/// givens_encode for a pair made in the fast range (|s|^2 >= 2^-961 in
/// double, 2^-121 in float, both normal): the same value, with no branch
/// (the reciprocal square root is computed either way) and rsqrt_normal_r.
template <class T>
EMGPU_HD inline T givens_encode_fast(const givens<T>& g) {
  using R = real_type_t<T>;
  const T far = mul_real(g.s, (R(2) - g.c) * rsqrt_normal_r(abs2(g.s)));
  return g.c >= R(0.70710678118654752440) ? g.s : far;
}

/// givens_make_fast_in_place with the encode left to the caller: x
/// receives the new entry; in the fast range `encode` is true and the
/// slot's code is givens_encode_fast of the returned pair, elsewhere
/// `encode` is false and `code` receives it (givens_make_in_place). Why:
/// only the stored factors need the code, so the kernels publish the pair
/// first and encode off the stage's chain (session 30).
template <class T>
EMGPU_HD inline givens<T> givens_make_fast_split(T& x, const T& y, bool& encode, T& code) {
  using R = real_type_t<T>;
  const R ax2 = abs2(x), ay2 = abs2(y);
  if (ax2 >= givens_fast_lo<R> && ax2 <= givens_fast_hi<R> && ay2 >= givens_fast_lo<R> &&
      ay2 <= givens_fast_hi<R>) {
    const R t = ax2 + ay2;
    const R w = rsqrt_normal_r(ax2 * t);
    const givens<T> g{ax2 * w, mul_real(x * conj_any(y), w)};
    x = mul_real(x, t * w);
    encode = true;
    return g;
  }
  code = y;
  encode = false;
  return givens_make_in_place(x, code);
}

/// givens_make_in_place without the decode on the critical path, for the
/// CUDA kernels whose makes bound a stage (qr_warp.hpp, qr_window.hpp): in
/// the fast range the made pair itself is returned and applied, r is
/// x (|x|^2 + |y|^2) w (= c x + s y exactly in real arithmetic), and y
/// receives the pair's code, which decodes to it within a few ulps; so the
/// factors are consistent to rounding (backward error O(n eps)), not bit
/// for bit with the team path. H100, complex<double> 32 x 32 warp kernel:
/// 4.53 against 5.32 ms (session 28). Elsewhere (zeros, tiny, huge, NaN,
/// Inf) it is givens_make_in_place.
template <class T>
EMGPU_HD inline givens<T> givens_make_fast_in_place(T& x, T& y) {
  bool encode;
  T code;
  const givens<T> g = givens_make_fast_split(x, y, encode, code);
  y = encode ? givens_encode_fast(g) : code;
  return g;
}

/// Applies G (or G^H) to rows (i-1, i) of columns l0, l0 + step, ... < n.
/// Two columns per iteration with the loads ahead of the stores: the
/// compiler cannot prove that the stores do not alias the next column's
/// loads, so one column per iteration would expose the full load latency
/// each time (same operations per entry, same results).
template <class T, class Mat>
EMGPU_HD inline void givens_apply_cols(const givens<T>& g, const Mat& a, index_t i, index_t l0,
                                       index_t n, index_t step, bool adjoint) {
  index_t l = l0;
  for (; l + step < n; l += 2 * step) {
    T* c0 = a.col(l);
    T* c1 = a.col(l + step);
    T x0 = c0[i - 1], y0 = c0[i], x1 = c1[i - 1], y1 = c1[i];
    givens_apply(g, x0, y0, adjoint);
    givens_apply(g, x1, y1, adjoint);
    c0[i - 1] = x0;
    c0[i] = y0;
    c1[i - 1] = x1;
    c1[i] = y1;
  }
  if (l < n) {
    T* cl = a.col(l);
    givens_apply(g, cl[i - 1], cl[i], adjoint);
  }
}

/// Stages of the Sameh-Kuck schedule for an m x n matrix: [0, qr_stages).
EMGPU_HD inline index_t qr_jmax(index_t m, index_t n) {
  const index_t a = n - 1, b = m - 2;
  return a < b ? a : b;  // last column that has anything to annihilate
}
EMGPU_HD inline index_t qr_stages(index_t m, index_t n) {
  const index_t jm = qr_jmax(m, n);
  return jm < 0 ? 0 : m - 1 + jm;
}
/// Columns active at stage st: [j0, j1] (empty when j0 > j1); row i = m-1-(st-2j).
EMGPU_HD inline void qr_stage_cols(index_t st, index_t m, index_t n, index_t& j0, index_t& j1) {
  j0 = st - (m - 2);
  if (j0 < 0) j0 = 0;
  j1 = st / 2;
  const index_t jm = qr_jmax(m, n);
  if (j1 > jm) j1 = jm;
}

/// @brief A = Q R in place: R on and above the diagonal, rotations below.
/// `cache` holds n rotations (team scratch).
template <class Team, class Mat>
EMGPU_HD void qr_factor_core(const Team& t, const Mat& a, index_t m, index_t n,
                             givens<std::remove_cvref_t<decltype(a(0, 0))>>* cache) {
  using T = std::remove_cvref_t<decltype(a(0, 0))>;
  const index_t ns = qr_stages(m, n);
  for (index_t st = 0; st < ns; ++st) {
    index_t j0, j1;
    qr_stage_cols(st, m, n, j0, j1);
    if (j0 > j1) continue;
    const index_t na = j1 - j0 + 1;
    team_for(t, na, [&](index_t q) {
      const index_t j = j0 + q, i = m - 1 - (st - 2 * j);
      T* cj = a.col(j);
      T x = cj[i - 1], y = cj[i];
      cache[q] = givens_make_in_place(x, y);
      cj[i - 1] = x;
      cj[i] = y;
    });
    t.sync();
    // A thread owns one rotation (kept in registers) and a share of the
    // columns right of it.
    team_for_owners(t, na, n - j0 - 1, [&](index_t q, index_t l0, index_t step) {
      const index_t j = j0 + q, i = m - 1 - (st - 2 * j);
      const givens<T> g = cache[q];
      givens_apply_cols(g, a, i, j + 1 + l0, n, step, false);
    });
    t.sync();
  }
}

/// @brief c := Q^H c (adjoint) or Q c, c m x nrhs, from factors `f`.
template <class Team, class MatF, class Mat>
EMGPU_HD void qr_apply_core(const Team& t, const MatF& f, index_t m, index_t n, const Mat& c,
                            index_t nrhs, bool adjoint,
                            givens<std::remove_cvref_t<decltype(c(0, 0))>>* cache) {
  using T = std::remove_cvref_t<decltype(c(0, 0))>;
  const index_t ns = qr_stages(m, n);
  for (index_t s = 0; s < ns; ++s) {
    // Q^H = G_N ... G_1: stages in order; Q = G_1^H ... G_N^H: reversed.
    const index_t st = adjoint ? s : ns - 1 - s;
    index_t j0, j1;
    qr_stage_cols(st, m, n, j0, j1);
    if (j0 > j1) continue;
    const index_t na = j1 - j0 + 1;
    team_for(t, na, [&](index_t q) {
      const index_t j = j0 + q, i = m - 1 - (st - 2 * j);
      cache[q] = givens_decode(T(f(i, j)));
    });
    t.sync();
    team_for_owners(t, na, nrhs, [&](index_t q, index_t c0, index_t step) {
      const index_t j = j0 + q, i = m - 1 - (st - 2 * j);
      const givens<T> g = cache[q];
      givens_apply_cols(g, c, i, c0, nrhs, step, !adjoint);
    });
    t.sync();
  }
}

inline int qr_team_size(index_t m, index_t n) {
  const index_t s = m > n ? m : n;
  if (s <= 4) return 4;
  if (s <= 8) return 8;
  if (s <= 16) return 16;
  if (s <= 32) return 32;
  if (s <= 64) return 64;
  return 128;
}

/// Team of qr_factor: beyond 32 rows twice qr_team_size (128 threads for
/// m = 33..64, 256 above). H200, complex<double>, one block per matrix:
/// n = 64 9.9 ms with 128 threads against 11.9 with 64 and 10.2 with 256
/// (20 000 matrices); n = 128 27.3 ms with 256 against 39.8 with 128
/// (5 000). Up to 32 rows one warp tile stays best (n = 32: 6.6 ms against
/// 7.4 with 64 threads; n = 16: 1.08 against 1.36 with 32).
inline int qr_factor_team_size(index_t m, index_t n) {
  const int t = qr_team_size(m, n);
  return t > 32 ? 2 * t : t;
}

template <class T>
EMGPU_HD inline std::size_t qr_cache_bytes(index_t n) {
  return align16(std::size_t(n > 0 ? n : 1) * sizeof(givens<T>));
}

/// @brief Factor one matrix.
template <class T, class Loc>
struct qr_factor_op {
  Loc a;
  index_t m, n, lda;

  std::size_t scratch_bytes() const { return qr_cache_bytes<T>(n); }
  std::size_t stage_bytes() const { return align16(std::size_t(padded_ld<T>(m)) * n * sizeof(T)); }
  int team_size() const { return qr_factor_team_size(m, n); }

  template <class Team>
  EMGPU_HD void operator()(const Team& t, index_t k, unsigned char* scratch, std::size_t bytes) const {
    carver cv{scratch, bytes};
    auto* cache = static_cast<givens<T>*>(cv.take(qr_cache_bytes<T>(n)));
    const staged_matrix<T> x = cv.stage(a(k), m, n, lda);
    stage_in(t, x, m);
    with_local(x, n, [&](const auto& xa) { qr_factor_core(t, xa, m, n, cache); });
    stage_out(t, x, m);
  }
};

/// @brief c := Q^H c or Q c for one matrix; with `form`, c := Q[:, :ncol]
///        (c first set to the leading columns of the identity).
template <class T, class LocF, class LocC>
struct qr_apply_op {
  LocF f;
  index_t m, n, ldf;
  LocC c;
  index_t nrhs, ldc;
  bool adjoint, form;

  std::size_t scratch_bytes() const { return qr_cache_bytes<T>(n); }
  std::size_t stage_bytes() const {
    return align16(std::size_t(padded_ld<T>(m)) * nrhs * sizeof(T));
  }
  int team_size() const { return qr_team_size(m, n > nrhs ? n : nrhs); }

  template <class Team>
  EMGPU_HD void operator()(const Team& t, index_t k, unsigned char* scratch, std::size_t bytes) const {
    carver cv{scratch, bytes};
    auto* cache = static_cast<givens<T>*>(cv.take(qr_cache_bytes<T>(n)));
    const staged_matrix<T> x = cv.stage(c(k), m, nrhs, ldc);
    if (form) {
      team_for_2d(t, m, nrhs, [&](index_t i, index_t j) { x(i, j) = T(real_type_t<T>(i == j)); });
      t.sync();
    } else {
      stage_in(t, x, m);
    }
    with_local(x, nrhs, [&](const auto& xa) {
      qr_apply_core(t, plain_matrix<const T>{f(k), ldf}, m, n, xa, nrhs, adjoint, cache);
    });
    stage_out(t, x, m);
  }
};

/// @brief Least squares min ||A x - b|| for one matrix: A := factors,
///        b := [x; (Q^H b)(n:m)]; info = k when R(k-1, k-1) == 0.
template <class T, class LocA, class LocB>
struct qr_lsq_op {
  LocA a;
  index_t m, n, lda;
  LocB b;
  index_t nrhs, ldb;
  int* info;

  std::size_t scratch_bytes() const { return qr_cache_bytes<T>(n); }
  std::size_t stage_bytes() const {
    return align16(std::size_t(padded_ld<T>(m)) * n * sizeof(T)) +
           align16(std::size_t(padded_ld<T>(m)) * nrhs * sizeof(T));
  }
  int team_size() const { return qr_team_size(m, n > nrhs ? n : nrhs); }

  template <class Team>
  EMGPU_HD void operator()(const Team& t, index_t k, unsigned char* scratch, std::size_t bytes) const {
    carver cv{scratch, bytes};
    auto* cache = static_cast<givens<T>*>(cv.take(qr_cache_bytes<T>(n)));
    const staged_matrix<T> x = cv.stage(a(k), m, n, lda);
    const staged_matrix<T> y = cv.stage(b(k), m, nrhs, ldb);
    stage_in(t, x, m);
    stage_in(t, y, m);
    const int inf = with_local(x, n, [&](const auto& xa) {
      return with_local(y, nrhs, [&](const auto& ya) {
        qr_factor_core(t, xa, m, n, cache);
        qr_apply_core(t, xa, m, n, ya, nrhs, true, cache);
        int zero = 0;
        for (index_t j = 0; j < n; ++j)
          if (is_zero(xa(j, j))) {
            zero = int(j + 1);
            break;
          }
        if (zero == 0) upper_solve(t, xa, n, ya, nrhs);
        return zero;
      });
    });
    stage_out(t, x, m);
    stage_out(t, y, m);
    if (t.rank() == 0) info[k] = inf;
  }
};

}  // namespace emgpu::batched::detail
