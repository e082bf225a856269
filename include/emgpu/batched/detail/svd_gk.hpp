/// @file
/// @brief Team-parallel Golub-Kahan-Reinsch SVD (svd_method::qr): Householder
///        bidiagonalisation A = Q_L B Q_R^H with B real upper bidiagonal,
///        implicit-shift QR sweeps on B whose plane rotations are accumulated
///        into U = Q_L U_B and V = Q_R V_B.
///
/// About 2 n^2 rotations in all for random n x n matrices (1.85 n sweeps of
/// shrinking length), against n^2 / 2 pairs times ~10 sweeps of m-entry dot
/// products and rotations for one-sided Jacobi: several times fewer flops
/// for the same backward error (Golub & Van Loan, 4th ed., Alg. 8.6.2;
/// Demmel & Kahan 1990 for the zero-diagonal chase).
///
/// Team layout. Bidiagonalisation: every thread derives each reflector
/// (norm, beta, tau) from the same shared entries, so no reduction or
/// broadcast is needed; owners of columns (left reflector) or rows (right
/// reflector) apply it. Q_R is formed out of place in V and Q_L in place of
/// the left reflectors (LAPACK's ungbr order). QR iteration: one thread
/// (rank 0) owns d and e and generates a sweep's rotations into one of two
/// buffers while the team applies the previous sweep's to its rows of U and
/// V: one team barrier per sweep.
///
/// Scaling: the matrix is multiplied by a power of two (exact) so that its
/// largest |re| + |im| lies in [1/2, 1); sums of squares then neither overflow nor
/// lose anything but entries below 2^-500 of ||A||, far below the
/// absolute accuracy eps ||A|| of the result.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <type_traits>

#include "common.hpp"
#include "qr_core.hpp"  // givens_make
#include "svd_core.hpp"

namespace emgpu::batched::detail {

/// Householder reflector H = I - tau w w^H with H^H [alpha; x] = [beta; 0],
/// beta real (LAPACK's larfg convention, which keeps B real); w = [1;
/// x * scale]. xnorm = ||x||; a tail below 2^-(E/2) of ||A|| (the matrix is
/// scaled, see the file comment) is dropped: treated as zero, with the
/// reflector then only turning alpha's phase.
template <class T>
struct gk_reflector {
  T tau;
  T scale;
  real_type_t<T> beta;
  bool drop;  // tail treated as zero
};

template <class T>
EMGPU_HD inline gk_reflector<T> gk_make_reflector(T alpha, real_type_t<T> xnorm2) {
  using R = real_type_t<T>;
  constexpr R tiny2 = sizeof(R) == 4 ? R(0x1p-100) : R(0x1p-1000);  // (2^-(E/2))^2 of the type
  gk_reflector<T> h{T(0), T(0), R(0), true};
  const R ar = real_part(alpha);
  R ai = R(0);
  if constexpr (is_complex_v<T>) ai = alpha.imag();
  if (xnorm2 > tiny2) {
    h.drop = false;
  } else if (ai == R(0)) {
    h.beta = ar;  // H = I
    return h;
  }
  const R nrm = sqrt_r(abs2(alpha) + (h.drop ? R(0) : xnorm2));
  if (!(nrm > R(0))) return h;  // |alpha|^2 underflowed (|alpha| < 2^-(E/2)): H = I, beta = 0
  h.beta = ar >= R(0) ? -nrm : nrm;
  if constexpr (is_complex_v<T>) {
    const R rb = R(1) / h.beta;  // one division instead of two (FP64 division is long on CUDA)
    h.tau = T((h.beta - ar) * rb, -ai * rb);
  } else {
    h.tau = (h.beta - ar) / h.beta;
  }
  if (!h.drop) {
    const T den = alpha - T(h.beta);  // |den| >= |beta| > 2^-(E/2)
    h.scale = mul_real(conj_any(den), R(1) / abs2(den));
  }
  return h;
}

/// Real plane rotation [c s; -s c] [f; g] = [r; 0] (c >= 0): givens_make's
/// formulas and cases, with the reciprocal square root computed ahead of
/// the range test (the common case first). Why: on the chain kernel's
/// dependent path (one rotation feeds the next) the compares and branch
/// then overlap the rsqrt instead of delaying it (H200, 100 000 x 32 /
/// 20 000 x 64 / 5 000 x 128 complex<double>: chains 6.20 -> 6.14, 6.29 ->
/// 5.36, 24.86 -> 19.50 ms; nvcc contracts the reordered code differently,
/// so the last bits of sigma can differ from givens_make's). Kept out of
/// givens_make: reordered there, the QR windowed kernel's pointer-array and
/// strided instantiations stopped agreeing bitwise.
template <class R>
EMGPU_HD inline void gk_rot(R f, R g, R& c, R& s, R& r) {
  const R f2 = f * f, g2 = g * g;
  const R w = rsqrt_r(f2 * (f2 + g2));  // Inf or NaN when unused below
  if (f2 >= givens_fast_lo<R> && f2 <= givens_fast_hi<R> && g2 >= givens_fast_lo<R> &&
      g2 <= givens_fast_hi<R>) {  // f, g != 0
    c = f2 * w;
    s = (f * g) * w;
  } else if (g == R(0)) {
    c = R(1);
    s = R(0);
  } else if (f == R(0)) {
    c = R(0);
    s = R(1);
  } else {
    const givens<R> gv = givens_make_scaled(f, g);
    c = gv.c;
    s = gv.s;
  }
  r = c * f + s * g;
}

/// 1 / x for x in [1, 2] by FMAs alone: the linear estimate 24/17 - 8/17 x
/// (relative error <= 1/17) and four Newton steps (1/17 -> 2^-8 -> 2^-16
/// -> 2^-32 -> rounding; float: three steps). Why not the float
/// reciprocal refined by Newton steps: its conversions and the
/// multi-function unit run at a quarter of the FP64 pipe's rate, and they
/// were the cost of both the coding and the decoding (H200, 100 000 x 32
/// complex<double>: basis kernel 5.95 -> 5.40 ms, chain kernel 4.91 ->
/// 4.51; docs/batched-log.md, sessions 25-26).
template <class R>
EMGPU_HD inline R gk_rcp12_fma(R x) {
  R r = R(24.0 / 17.0) - R(8.0 / 17.0) * x;
EMGPU_UNROLL
  for (int i = 0; i < (sizeof(R) == 8 ? 4 : 3); ++i) {
    const R e = R(1) - x * r;
    r = r + r * e;
  }
  return r;
}

/// One real for a rotation (c >= 0, as gk_rot makes it) in the split
/// pipeline's coded log (gk_log_coded): t = tan(theta / 2) = s / (1 + c),
/// in [-1, 1]; gk_decode gives c = (1 - t^2) / (1 + t^2), s = 2 t / (1 +
/// t^2) back within a few units of roundoff (absolute; 1 + c and 1 + t^2
/// lie in [1, 2], so nothing is divided by a small number), with c^2 + s^2
/// = 1 to rounding. Why one real: the chain kernel's time at n = 32 was
/// mostly its log's scattered 16-byte stores, one L2 request each whatever
/// their size (docs/batched-log.md, sessions 21-22); two codes per store
/// halve the requests. Why this code: coding and decoding take a reciprocal
/// (gk_rcp12_fma) and no branch. H200, 100 000 x 32 complex<double>, U and
/// V, chain + basis kernel: 6.3 + 5.0 ms with (c, s) pairs, 4.9 + 5.4 with
/// this code, 4.2 + 6.5 with s or sign(s) (2 - c) (a compare and a select
/// to code, a square root to decode; docs/batched-log.md, session 25).
template <class R>
EMGPU_HD inline R gk_code(R c, R s) {
  return s * gk_rcp12_fma(R(1) + c);
}
template <class R>
EMGPU_HD inline void gk_decode(R t, R& c, R& s) {
  const R t2 = t * t;
  const R r = gk_rcp12_fma(R(1) + t2);
  c = (R(1) - t2) * r;
  s = (t + t) * r;
}

/// Rotation k of a sweep from (c, s) pairs (cs[2k], cs[2k + 1]) or from the
/// log's codes (gk_coded: p[k], gk_code).
template <class R>
struct gk_coded {
  const R* p;
};
template <class R>
EMGPU_HD inline void gk_cs_at(const R* cs, index_t k, R& c, R& s) {
  c = cs[2 * k];
  s = cs[2 * k + 1];
}
template <class R>
EMGPU_HD inline void gk_cs_at(gk_coded<R> cs, index_t k, R& c, R& s) {
  gk_decode(cs.p[k], c, s);
}

/// Row i of x under the rotations (x_p, x_q) := (c x_p + s x_q, c x_q - s x_p)
/// of a sweep, how every rotation acts on U and V. QR sweep: pairs (c0 + k,
/// c0 + k + 1), k = 0..cnt-1; fixed_q: pairs (c0 + k dir, q). Consecutive
/// pairs share a column, whose entry stays in a register. CS: a pointer to
/// (c, s) pairs or gk_coded (gk_cs_at).
template <class Mat, class CS>
EMGPU_HD inline void gk_rotate_row(const Mat& x, index_t i, index_t c0, index_t cnt, CS cs, bool fixed_q,
                                   index_t q, index_t dir) {
  using T = std::remove_cvref_t<decltype(x(0, 0))>;
  using R = real_type_t<T>;
  if (!fixed_q) {
    T xv = x(i, c0);
    for (index_t k = 0; k < cnt; ++k) {
      const T yv = x(i, c0 + k + 1);
      R c, s;
      gk_cs_at(cs, k, c, s);
      x(i, c0 + k) = mul_real(xv, c) + mul_real(yv, s);
      xv = mul_real(yv, c) - mul_real(xv, s);
    }
    x(i, c0 + cnt) = xv;
  } else {
    T yv = x(i, q);
    for (index_t k = 0; k < cnt; ++k) {
      const index_t p = c0 + k * dir;
      const T xv = x(i, p);
      R c, s;
      gk_cs_at(cs, k, c, s);
      x(i, p) = mul_real(xv, c) + mul_real(yv, s);
      yv = mul_real(yv, c) - mul_real(xv, s);
    }
    x(i, q) = yv;
  }
}

/// Sweep kinds written by the generating thread.
enum : int { gk_sweep_qr = 0, gk_sweep_row = 1, gk_sweep_col = 2, gk_done = 3, gk_pause = 4 };

/// Scratch of one team: the reflectors' tau, B (d, e), two rotation
/// buffers of 4n reals and two headers {kind, lo, hi, i}; the last two only
/// when the team runs the QR iteration (iterate), not for the split
/// pipeline's bidiagonalisation, where their 2 KB at 32 x 32 complex<double>
/// cost an SM two of its twelve matrices in flight.
template <class T>
struct gk_work {
  T* taul;
  T* taur;
  real_type_t<T>* d;
  real_type_t<T>* e;
  real_type_t<T>* rot;  // 2 x 4n
  index_t* hdr;         // 2 x 4
  static EMGPU_HD std::size_t bytes(index_t n, bool iterate = true) {
    const std::size_t nn = std::size_t(n > 1 ? n : 1);
    return align16(2 * nn * sizeof(T)) + align16(2 * nn * sizeof(real_type_t<T>)) +
           (iterate ? align16(8 * nn * sizeof(real_type_t<T>)) + align16(8 * sizeof(index_t)) : 0);
  }
  static EMGPU_HD gk_work carve(carver& cv, index_t n, bool iterate = true) {
    const std::size_t nn = std::size_t(n > 1 ? n : 1);
    using R = real_type_t<T>;
    gk_work w;
    w.taul = static_cast<T*>(cv.take(2 * nn * sizeof(T)));
    w.taur = w.taul + nn;
    w.d = static_cast<R*>(cv.take(2 * nn * sizeof(R)));
    w.e = w.d + nn;
    w.rot = iterate ? static_cast<R*>(cv.take(8 * nn * sizeof(R))) : nullptr;
    w.hdr = iterate ? static_cast<index_t*>(cv.take(8 * sizeof(index_t))) : nullptr;
    return w;
  }
};

/// State of the QR iteration, kept by the generating thread.
template <class R>
struct gk_state {
  index_t hi;
  long steps, max_steps;
  R tol, thresh;
  bool failed;
};

/// |e_i| negligible against its neighbours on the diagonal (Golub & Van Loan).
template <class R, class Arr>
EMGPU_HD inline bool gk_negligible(const Arr& d, const Arr& e, index_t i, R tol) {
  return abs_any(e[i]) <= tol * (abs_any(d[i]) + abs_any(d[i + 1]));
}

/// Stores rotation j's (c, s) at p[2j], p[2j + 1]; p is 2 R aligned (the
/// buffers and logs keep even offsets), so CUDA stores the pair at once.
template <class R>
EMGPU_HD inline void gk_put_cs(R* p, index_t j, R c, R s) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same_v<R, double>) {
    *reinterpret_cast<double2*>(p + 2 * j) = make_double2(c, s);
    return;
  } else if constexpr (std::is_same_v<R, float>) {
    *reinterpret_cast<float2*>(p + 2 * j) = make_float2(c, s);
    return;
  }
#endif
  p[2 * j] = c;
  p[2 * j + 1] = s;
}

/// Where gk_next_sweep_to puts a sweep: the right rotations at `right`, the
/// left ones at `left` (each from its start, (c, s) pairs; a null pointer
/// drops them). The split pipeline's chain writes its logs through another
/// type with the same members: begin (the sweep's kind and range are in hdr,
/// before its first rotation) and put_right / put_left (rotation j of the
/// sweep).
template <class R>
struct gk_bufs {
  R* right;
  R* left;
  EMGPU_HD void begin(const index_t*) {}
  EMGPU_HD void put_right(index_t j, R c, R s) {
    if (right) gk_put_cs(right, j, c, s);
  }
  EMGPU_HD void put_left(index_t j, R c, R s) {
    if (left) gk_put_cs(left, j, c, s);
  }
};

/// Next sweep on B (run by one thread): deflation, then a zero-diagonal
/// chase or an implicit-shift QR sweep, whose rotations go to out (see
/// gk_bufs) and whose kind, lo, hi and zero index to hdr.
/// Arr: R* or an accessor with operator[] (the split pipeline keeps d and e
/// in shared memory, interleaved between threads).
template <class R, class Arr, class Out>
EMGPU_HD inline void gk_next_sweep_to(Arr d, Arr e, gk_state<R>& st, Out& out, index_t* __restrict__ hdr) {
  index_t& hi = st.hi;
  while (hi > 0 && gk_negligible(d, e, hi - 1, st.tol)) {
    e[hi - 1] = R(0);
    --hi;
  }
  if (hi == 0 || st.steps > st.max_steps) {
    st.failed = hi > 0;
    hdr[0] = gk_done;
    return;
  }
  index_t lo = hi - 1;
  while (lo > 0 && !gk_negligible(d, e, lo - 1, st.tol)) --lo;
  if (lo > 0) e[lo - 1] = R(0);
  st.steps += hi - lo;
  hdr[1] = lo;
  hdr[2] = hi;
  // A negligible diagonal entry: set it to zero and chase its row's (or,
  // for the last one, its column's) off-diagonal entry out of the block.
  for (index_t i = lo; i <= hi; ++i) {
    if (!(abs_any(d[i]) <= st.thresh)) continue;
    d[i] = R(0);
    hdr[3] = i;
    R c, s, r;
    if (i < hi) {
      hdr[0] = gk_sweep_row;
      out.begin(hdr);
      R f = e[i];
      e[i] = R(0);
      for (index_t j = i + 1; j <= hi; ++j) {
        gk_rot(d[j], f, c, s, r);
        d[j] = r;
        out.put_left(j - i - 1, c, s);
        if (j < hi) {
          f = -s * e[j];
          e[j] = c * e[j];
        }
      }
    } else {
      hdr[0] = gk_sweep_col;
      out.begin(hdr);
      R f = e[hi - 1];
      e[hi - 1] = R(0);
      for (index_t j = hi - 1; j >= lo; --j) {
        gk_rot(d[j], f, c, s, r);
        d[j] = r;
        out.put_right(hi - 1 - j, c, s);
        if (j > lo) {
          f = -s * e[j - 1];
          e[j - 1] = c * e[j - 1];
        }
      }
    }
    return;
  }
  // Wilkinson shift: the eigenvalue of the trailing 2 x 2 of B^T B nearer
  // its last diagonal entry. d[hi-1] is not negligible here, so t12 != 0.
  const R dm = d[hi - 1], dn = d[hi], em = e[hi - 1], el = hi - 1 > lo ? e[hi - 2] : R(0);
  const R t11 = dm * dm + el * el, t22 = dn * dn + em * em, t12 = dm * em;
  const R dl = (t11 - t22) / R(2);
  const R h = hypot_r(dl, t12);
  const R mu = t22 - t12 * t12 / (dl + (dl < R(0) ? -h : h));
  R f = d[lo] * d[lo] - mu, g = d[lo] * e[lo];
  hdr[0] = gk_sweep_qr;
  out.begin(hdr);
  // d[k], e[k] as step k finds them are carried in registers, and step k
  // loads d[k + 1], e[k + 1] (not yet touched by the sweep) before its
  // rotations, so no load waits on the chain of dependent rotations; e[k]'s
  // value after step k is dead (step k + 1 overwrites it).
  R dk = d[lo], ek = e[lo];
  for (index_t k = lo; k < hi; ++k) {
    const R dn = d[k + 1];
    const R en = k + 1 < hi ? e[k + 1] : R(0);
    R c, s, r;
    gk_rot(f, g, c, s, r);
    if (k > lo) e[k - 1] = r;
    f = c * dk + s * ek;
    ek = c * ek - s * dk;
    g = s * dn;
    const R dn1 = c * dn;
    out.put_right(k - lo, c, s);
    gk_rot(f, g, c, s, r);
    d[k] = r;
    f = c * ek + s * dn1;
    dk = c * dn1 - s * ek;
    if (k + 1 < hi) {
      g = s * en;
      ek = c * en;
    }
    out.put_left(k - lo, c, s);
  }
  d[hi] = dk;
  e[hi - 1] = f;
}

/// gk_next_sweep_to into two buffers (gk_bufs): the team's iteration.
template <class R, class Arr>
EMGPU_HD inline void gk_next_sweep(Arr d, Arr e, gk_state<R>& st, R* right, R* left, index_t* hdr) {
  gk_bufs<R> out{right, left};
  gk_next_sweep_to(d, e, st, out, hdr);
}

/// Applies the sweep in (cs, hdr) to this thread's rows r0, r0 + step, ...
/// of U (m x n, left rotations) and of V (n x n, right rotations).
template <class MatU, class MatV, class R>
EMGPU_HD inline void gk_apply_sweep(const MatU& u, index_t m, bool want_u, const MatV& v, bool want_v,
                                    index_t n, const R* cs, const index_t* hdr, index_t r0, index_t step) {
  const int kind = int(hdr[0]);
  const index_t lo = hdr[1], hi = hdr[2], zi = hdr[3];
  const R* right = cs;
  const R* left = cs + 2 * n;
  if (kind == gk_sweep_qr) {
    if (want_v)
      for (index_t i = r0; i < n; i += step) gk_rotate_row(v, i, lo, hi - lo, right, false, 0, 1);
    if (want_u)
      for (index_t i = r0; i < m; i += step) gk_rotate_row(u, i, lo, hi - lo, left, false, 0, 1);
  } else if (kind == gk_sweep_row) {
    // Left rotations on U's columns (j, zi), j = zi+1..hi.
    if (want_u)
      for (index_t i = r0; i < m; i += step) gk_rotate_row(u, i, zi + 1, hi - zi, left, true, zi, 1);
  } else if (kind == gk_sweep_col) {
    // Right rotations on V's columns (j, hi), j = hi-1 down to lo.
    if (want_v)
      for (index_t i = r0; i < n; i += step) gk_rotate_row(v, i, hi - 1, hi - lo, right, true, hi, -1);
  }
}

/// Sum of v (real or complex) over the `lanes` lanes of a team that share
/// their lane index modulo 32 / lanes (team.hpp's strided_sum).
template <class Team, class T>
EMGPU_HD inline T gk_strided_sum(const Team& t, T v, int lanes) {
  if constexpr (is_complex_v<T>) return T(t.strided_sum(v.real(), lanes), t.strided_sum(v.imag(), lanes));
  else return t.strided_sum(v, lanes);
}

/// Householder bidiagonalisation of the scaled m x n A (m >= n): B's d, e
/// and the reflectors' tau into w (rank 0), the reflectors' vectors into A
/// (left: column k below the diagonal; right: row k right of k + 1).
/// @tparam L threads per column (left reflector) and per row (right
///         reflector), a power of two <= 32 that divides the team size:
///         they share the dot product's entries, so its chain of dependent
///         multiply-adds is L times shorter (1 on the host). On CUDA the
///         lanes of a column are lane l, l + 32 / L, ... of one warp (every
///         lane of the team's warps calls the sums), so that the lanes a
///         shared-memory wavefront serves walk one row (left) or one column
///         (right) and the odd leading dimension keeps them on distinct banks.
template <int L, class Team, class MatA, class T>
EMGPU_HD inline void gk_bidiagonalise(const Team& t, const MatA& a, index_t m, index_t n, const gk_work<T>& w) {
  static_assert(L >= 1 && L <= 32 && (L & (L - 1)) == 0);
  using R = real_type_t<T>;
  const index_t rk = t.rank(), ts = t.size();
  const index_t wl = ts < 32 ? ts : 32;  // lanes of a warp in the team
  const index_t per = wl / L;            // columns (rows) a warp serves at once
  const index_t g = L == 1 ? rk : (rk / wl) * per + rk % per;  // this thread's column (row) slot
  const int sub = L == 1 ? 0 : int((rk % wl) / per);           // its place among the column's lanes
  const index_t G = ts / L;
  // The left reflector's vector stays unscaled in column k until the right
  // reflector's phase (nobody reads column k then); the right reflector's
  // vector is written into row k during the next step's left phase for the
  // same reason.
  gk_reflector<T> hr{};
  for (index_t k = 0; k < n; ++k) {
    // Left: column k, rows k..m-1.
    // Norms shared out over the team (every thread summing the whole
    // column was 13 % of the CUDA kernel's instructions at 32 x 32).
    R xn2 = R(0);
    for (index_t i = k + 1 + rk; i < m; i += ts) xn2 += abs2(a(i, k));
    xn2 = t.sum(xn2);
    const gk_reflector<T> hl = gk_make_reflector(a(k, k), xn2);
    const T* ck = a.col(k);
    for (index_t j0 = 0; j0 < n; j0 += G) {
      const index_t j = j0 + g;
      const bool live = j < n && j > k;
      if (sub == 0 && k >= 1 && live) a(k - 1, j) = hr.drop ? T(0) : conj_any(a(k - 1, j)) * hr.scale;  // row k-1's w
      T* cj = a.col(live ? j : k);
      T sdot = T(0);
      if (live && !hl.drop)
        for (index_t i = k + 1 + sub; i < m; i += L) sdot = madd_conj(sdot, ck[i], cj[i]);
      T s;
      if constexpr (L == 1) {
        if (!live) continue;
        s = cj[k] + conj_any(hl.scale) * sdot;
      } else {
        // cj[k] is read and written by lane 0 of the column only.
        T q = conj_any(hl.scale) * sdot;
        if (live && sub == 0) q = cj[k] + q;
        s = gk_strided_sum(t, q, L);
        if (!live) continue;
      }
      const T ws = conj_any(hl.tau) * s;
      if (sub == 0) cj[k] -= ws;
      if (!hl.drop) {
        const T wv = ws * hl.scale;
        for (index_t i = k + 1 + sub; i < m; i += L) cj[i] = msub(cj[i], wv, ck[i]);
      }
    }
    if (rk == 0) {
      w.d[k] = hl.beta;
      w.taul[k] = hl.tau;
    }
    t.sync();
    if (k + 1 >= n) {
      // Last column: only its left vector remains to be scaled.
      team_for(t, m, [&](index_t i) {
        if (i > k) a(i, k) = hl.drop ? T(0) : a(i, k) * hl.scale;
      });
      t.sync();
      break;
    }
    // Right: row k, columns k+1..n-1 (conjugated).
    R yn2 = R(0);
    for (index_t j = k + 2 + rk; j < n; j += ts) yn2 += abs2(a(k, j));
    yn2 = t.sum(yn2);
    hr = gk_make_reflector(conj_any(a(k, k + 1)), yn2);
    for (index_t i0 = 0; i0 < m; i0 += G) {
      const index_t i = i0 + g;
      const bool live = i < m && i > k;
      if (live && sub == 0) a(i, k) = hl.drop ? T(0) : a(i, k) * hl.scale;
      // s_i = row_i . w, w = [1; conj(row k tail) * scale]
      const index_t ir = live ? i : k;
      T sdot = T(0);
      if (live && !hr.drop)
        for (index_t j = k + 2 + sub; j < n; j += L) sdot = madd_conj(sdot, a(k, j), a(ir, j));
      T s;
      if constexpr (L == 1) {
        if (!live) continue;
        s = a(i, k + 1) + sdot * hr.scale;
      } else {
        T q = sdot * hr.scale;
        if (live && sub == 0) q = a(i, k + 1) + q;
        s = gk_strided_sum(t, q, L);
        if (!live) continue;
      }
      const T ts_ = hr.tau * s;
      if (sub == 0) a(i, k + 1) -= ts_;
      if (!hr.drop) {
        const T tw = ts_ * conj_any(hr.scale);
        for (index_t j = k + 2 + sub; j < n; j += L) a(i, j) = msub(a(i, j), tw, a(k, j));
      }
    }
    if (rk == 0) {
      w.e[k] = hr.beta;
      w.taur[k] = hr.tau;
    }
    t.sync();
  }
}

/// ||B|| (largest |d_i|, |e_i|), the zero-diagonal threshold's scale.
template <class R>
EMGPU_HD inline R gk_bnorm(const R* d, const R* e, index_t n) {
  R bn = R(0);
  for (index_t i = 0; i < n; ++i) {
    const R ad = abs_any(d[i]), ae = i + 1 < n ? abs_any(e[i]) : R(0);
    bn = ad > bn ? ad : bn;
    bn = ae > bn ? ae : bn;
  }
  return bn;
}

/// Per-matrix state of the split CUDA pipeline (svd_gk_split.hpp) between
/// its kernels: B's norm threshold, the QR iteration's position, scaling.
template <class R>
struct gk_ctl {
  R thresh;
  long steps;
  index_t hi;
  int ex;     // the matrix was scaled by 2^-ex
  int bad;    // NaN / Inf in A
  int state;  // 0 iterating, 1 converged or failed this round, 2 finished earlier
  int failed;
};

/// @return 0, or 1 when the QR iteration did not converge within 6 n^2
///         inner steps (LAPACK's limit) or the matrix holds NaN / Inf.
/// On return sigma holds the singular values in descending order, the
/// columns of `a` U (when wanted) and v V (when wanted). The sign of a
/// negative d_j goes into V's column j when V is wanted and not flip_u,
/// else into U's: a rule that depends only on which factors exist, so that
/// the factors computed agree bitwise whichever others are wanted.
template <class Team, class MatA, class MatV, class T>
EMGPU_HD int svd_gk_core(const Team& t, const MatA& a, index_t m, index_t n, real_type_t<T>* sigma,
                         const MatV& v, bool want_v, bool want_u, bool flip_u, const gk_work<T>& w) {
  using R = real_type_t<T>;
  if (n == 0) return 0;
  const index_t rk = t.rank(), ts = t.size();

  bool bad = false;
  const int ex = svd_scale(t, a, m, n, bad);

  gk_bidiagonalise<1>(t, a, m, n, w);

  // V = Q_R = H_0 ... H_{n-2} (right reflectors, acting on indices k+1..),
  // formed out of place: each thread owns whole columns, and a's rows are
  // only read, so no barrier until the end.
  if (want_v) {
    team_for(t, n, [&](index_t j) {
      T* vj = v.col(j);
      for (index_t i = 0; i < n; ++i) vj[i] = T(R(i == j));
      for (index_t k = (j - 1 < n - 2 ? j - 1 : n - 2); k >= 0; --k) {
        // v_j := H_k v_j, H_k = I - tau w w^H, w = [1 at k+1; a(k, k+2..)]
        T s = vj[k + 1];
        for (index_t i = k + 2; i < n; ++i) s = madd_conj(s, a(k, i), vj[i]);
        const T ts_ = w.taur[k] * s;
        vj[k + 1] -= ts_;
        for (index_t i = k + 2; i < n; ++i) vj[i] = msub(vj[i], ts_, a(k, i));
      }
    });
    t.sync();
  }

  // U = Q_L [I; 0] = H_0 ... H_{n-1} in place of the left reflectors
  // (columns owned by fixed threads; column k is overwritten by its owner
  // after the barrier that ends every thread's reads of it).
  if (want_u) {
    for (index_t k = n - 1; k >= 0; --k) {
      const T tau = w.taul[k];
      team_for(t, n, [&](index_t j) {
        T* cj = a.col(j);
        if (j == k + 1) {
          // Column k+1 becomes H_{k+1} e_{k+1}; its vector was last read in
          // the step before the barrier below.
          const T tk = w.taul[k + 1];
          for (index_t i = 0; i <= k; ++i) cj[i] = T(0);
          for (index_t i = k + 2; i < m; ++i) cj[i] = -tk * cj[i];
          cj[k + 1] = T(R(1)) - tk;
        }
        if (j <= k) return;
        const T* ck = a.col(k);
        T s = T(0);
        for (index_t i = k + 1; i < m; ++i) s = madd_conj(s, ck[i], cj[i]);
        const T ts_ = tau * s;
        cj[k] = -ts_;
        for (index_t i = k + 1; i < m; ++i) cj[i] = msub(cj[i], ts_, ck[i]);
      });
      t.sync();
    }
    team_for(t, 1, [&](index_t) {
      T* c0 = a.col(0);
      const T tk = w.taul[0];
      for (index_t i = 1; i < m; ++i) c0[i] = -tk * c0[i];
      c0[0] = T(R(1)) - tk;
    });
    t.sync();
  }

  // ||B|| (max entry) for the zero-diagonal threshold, on the thread that
  // runs the iteration.
  const R bn = rk == 0 ? gk_bnorm(w.d, w.e, n) : R(0);

  // QR iteration on B.
  int info = 0;
  if (n > 1) {
    gk_state<R> st{};
    if (rk == 0) {
      st.hi = bad ? 0 : n - 1;
      st.steps = 0;
      st.max_steps = 6L * long(n) * long(n);
      st.tol = std::numeric_limits<R>::epsilon();
      st.thresh = std::numeric_limits<R>::epsilon() * bn;
      st.failed = false;
    }
    const bool vectors = want_u || want_v;
    int buf = 0;
    // The generator fills buffer `buf` while the team applies the other.
    if (rk == 0) gk_next_sweep(w.d, w.e, st, w.rot, w.rot + 2 * n, w.hdr);
    for (;;) {
      t.sync();
      const R* cs = w.rot + 4 * n * buf;
      const index_t* hdr = w.hdr + 4 * buf;
      if (hdr[0] == gk_done) break;
      buf ^= 1;
      if (vectors) gk_apply_sweep(a, m, want_u, v, want_v, n, cs, hdr, rk, ts);
      if (rk == 0) {
        R* cs_next = w.rot + 4 * n * buf;
        gk_next_sweep(w.d, w.e, st, cs_next, cs_next + 2 * n, w.hdr + 4 * buf);
      }
    }
    if (rk == 0) info = (st.failed || bad) ? 1 : 0;
  } else if (bad) {
    info = 1;
  }

  // sigma = |d|, scaled back; the sign goes into a column of V or U.
  team_for(t, n, [&](index_t j) { sigma[j] = ldexp_r(abs_any(w.d[j]), ex); });
  const bool sign_v = want_v && !(flip_u && want_u);
  if (sign_v || want_u) {
    const index_t rows = sign_v ? n : m;
    team_for_owners(t, n, rows, [&](index_t j, index_t i0, index_t step) {
      if (!(w.d[j] < R(0))) return;
      T* c = sign_v ? v.col(j) : a.col(j);
      for (index_t i = i0; i < rows; i += step) c[i] = -c[i];
    });
  }
  t.sync();
  sort_singular(t, a, m, want_u, v, n, want_v, sigma);
  return info;
}

/// Scratch (taus, B, rotation buffers) plus staging of A and V, as svd_op.
template <class T, class LocA, class LocU, class LocV>
struct svd_gk_op {
  LocA a;
  index_t m, n, lda;
  real_type_t<T>* sigma;
  LocU u;
  index_t ldu;
  bool want_u;
  LocV v;
  index_t ldv;
  bool want_v;
  bool flip_u;  // see svd_gk_core
  int* info;
  int team;

  std::size_t scratch_bytes() const { return gk_work<T>::bytes(n); }
  std::size_t stage_bytes() const { return svd_stage_bytes<T>(m, n, want_v); }
  int team_size() const { return team; }

  template <class Team>
  EMGPU_HD void operator()(const Team& t, index_t k, unsigned char* scratch, std::size_t bytes) const {
    carver cv{scratch, bytes};
    const gk_work<T> w = gk_work<T>::carve(cv, n);
    const staged_matrix<T> x = cv.stage(a(k), m, n, lda);
    const staged_matrix<T> vs = want_v ? cv.stage(v(k), n, n, ldv) : staged_matrix<T>{};
    stage_in_wide(t, x, m);
    const int inf = with_local(x, n, [&](const auto& xa) {
      return with_local(vs, want_v ? n : 0, [&](const auto& va) {
        return svd_gk_core(t, xa, m, n, sigma + k * n, va, want_v, want_u, flip_u, w);
      });
    });
    if (want_v) stage_out(t, vs, n);
    if (want_u) {
      // U from a's (staged or in-place) columns: the stage_out above or the
      // core's last barrier ordered the writes.
      T* uk = u(k);
      team_for_2d(t, m, n, [&](index_t i, index_t j) { uk[i + j * ldu] = x(i, j); });
    }
    if (t.rank() == 0) info[k] = inf;
  }
};

/// Team size of svd_gk_op: one warp up to 32 rows, else a block of a power
/// of two covering the larger dimension (one row of U and one of V per
/// thread when m = n), at most 256. Only these two team types: every team
/// type instantiates the core once per staging layout and element type,
/// and the CUDA test sources' compile time grows with each.
inline int svd_gk_team(index_t m, index_t n) {
  const index_t big = m > n ? m : n;
  int t = 32;
  while (t < 256 && t < big) t *= 2;
  return t;
}

}  // namespace emgpu::batched::detail
