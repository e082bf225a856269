/// @file
/// @brief Team-parallel LU with partial pivoting, triangular solves and the
///        per-matrix operations (functors) the launchers run over a batch.
#pragma once

#include <cstddef>

#include "common.hpp"

namespace emgpu::batched::detail {

/// @brief P A = L U in place (unit lower L below the diagonal, U on and above).
/// Right-looking elimination with partial pivoting: step k picks the largest
/// |re|+|im| in column k (smallest row on ties), swaps rows, scales the
/// column and applies the rank-1 update. The factors are those of Crout's
/// method with unit-diagonal L (same P, L, U; only the operation order differs).
/// @return 0, or k (1-based) for the first exactly zero pivot, LAPACK getrf style;
///         elimination continues past a zero pivot so the factors stay usable.
template <class Team, class Mat>
EMGPU_HD int lu_factor_core(const Team& t, const Mat& a, index_t n, index_t* ipiv) {
  using T = std::remove_cvref_t<decltype(a(0, 0))>;
  using R = real_type_t<T>;
  int info = 0;
  for (index_t k = 0; k < n; ++k) {
    T* ck = a.col(k);
    R best = R(-1);
    index_t p = k;  // stays k when the column is all NaN: never out of range
    for (index_t i = k + t.rank(); i < n; i += t.size()) {
      const R v = abs1(ck[i]);
      if (v > best) {
        best = v;
        p = i;
      }
    }
    t.argmax(best, p);
    const T piv = ck[p];
    const T akk = ck[k];
    t.sync();  // everyone has read the pivot before anyone moves it
    if (t.rank() == 0) ipiv[k] = p;
    if (is_zero(piv)) {
      // The whole column below k is zero: nothing to swap, scale or update.
      if (info == 0) info = int(k + 1);
      continue;
    }
    const T r = T(1) / piv;
    const index_t m1 = n - k - 1;
    // Row swap (every column but k, L part included as in LAPACK) and the
    // scaling of column k in one phase: the items touch disjoint entries, and
    // the pivot values sit in registers.
    for (index_t it = t.rank(); it < n + m1; it += t.size()) {
      if (it < n - 1) {
        if (p != k) {
          T* cj = a.col(it < k ? it : it + 1);
          const T tmp = cj[k];
          cj[k] = cj[p];
          cj[p] = tmp;
        }
      } else if (it < n - 1 + m1) {
        const index_t i = k + 1 + (it - (n - 1));
        ck[i] = (i == p ? akk : ck[i]) * r;
      } else {
        ck[k] = piv;
      }
    }
    t.sync();
    // Rank-1 update; a thread owns a row (its multiplier stays in a
    // register) and walks a share of the columns.
    // Four columns per iteration, all loads before the stores: the compiler
    // cannot prove that a store to column j does not alias the next
    // column's loads, so one column per iteration would expose the full
    // load latency each time (same operations per entry, same results).
    team_for_owners(t, m1, m1, [&](index_t ii, index_t j0, index_t step) {
      const index_t i = k + 1 + ii;
      const T lik = ck[i];
      index_t j = k + 1 + j0;
      for (; j + 3 * step < n; j += 4 * step) {
        T* c0 = a.col(j);
        T* c1 = a.col(j + step);
        T* c2 = a.col(j + 2 * step);
        T* c3 = a.col(j + 3 * step);
        const T u0 = c0[k], u1 = c1[k], u2 = c2[k], u3 = c3[k];
        const T v0 = c0[i], v1 = c1[i], v2 = c2[i], v3 = c3[i];
        c0[i] = v0 - lik * u0;
        c1[i] = v1 - lik * u1;
        c2[i] = v2 - lik * u2;
        c3[i] = v3 - lik * u3;
      }
      for (; j < n; j += step) {
        T* cj = a.col(j);
        cj[i] -= lik * cj[k];
      }
    });
    t.sync();
  }
  return info;
}

/// @brief Applies the row interchanges ipiv (0-based, in order) to b.
template <class Team, class Mat>
EMGPU_HD void apply_pivots(const Team& t, const index_t* ipiv, index_t n, const Mat& b,
                           index_t nrhs) {
  team_for(t, nrhs, [&](index_t c) {
    auto* bc = b.col(c);
    for (index_t k = 0; k < n; ++k) {
      const index_t p = ipiv[k];
      if (p != k) {
        const auto tmp = bc[k];
        bc[k] = bc[p];
        bc[p] = tmp;
      }
    }
  });
  t.sync();
}

/// @brief b := L^{-1} b, L unit lower triangular (strict lower part of l).
template <class Team, class MatL, class Mat>
EMGPU_HD void unit_lower_solve(const Team& t, const MatL& l, index_t n, const Mat& b,
                               index_t nrhs) {
  for (index_t k = 0; k + 1 < n; ++k) {
    team_for_2d(t, n - k - 1, nrhs, [&](index_t ii, index_t c) {
      auto* bc = b.col(c);
      bc[k + 1 + ii] -= l(k + 1 + ii, k) * bc[k];
    });
    t.sync();
  }
}

/// @brief b := U^{-1} b, U upper triangular (upper part of u), column-oriented.
/// The division of row k is deferred to the next step's phase (nobody reads
/// row k then), which saves a barrier per step.
template <class Team, class MatU, class Mat>
EMGPU_HD void upper_solve(const Team& t, const MatU& u, index_t n, const Mat& b, index_t nrhs) {
  using T = std::remove_cvref_t<decltype(b(0, 0))>;
  for (index_t k = n - 1; k >= 0; --k) {
    const T rk = T(1) / u(k, k);
    const T rk1 = k + 1 < n ? T(1) / u(k + 1, k + 1) : T(1);
    team_for_2d(t, k + 1, nrhs, [&](index_t i, index_t c) {
      T* bc = b.col(c);
      if (i < k) bc[i] -= u(i, k) * (bc[k] * rk);
      else if (k + 1 < n) bc[k + 1] *= rk1;
    });
    t.sync();
  }
  if (n > 0) {
    const T r0 = T(1) / u(0, 0);
    team_for(t, nrhs, [&](index_t c) { b.col(c)[0] *= r0; });
    t.sync();
  }
}

/// Size class: threads that cooperate on one n x n elimination.
inline int lu_team_size(index_t n) {
  if (n <= 4) return 4;
  if (n <= 8) return 8;
  if (n <= 16) return 16;
  if (n <= 32) return 32;
  if (n <= 64) return 128;
  return 256;
}

/// @brief Factor one matrix of the batch (functor run by the launchers).
template <class T, class Loc>
struct lu_factor_op {
  Loc a;
  index_t n, lda;
  index_t* ipiv;
  int* info;

  std::size_t scratch_bytes() const { return 0; }
  std::size_t stage_bytes() const { return align16(std::size_t(padded_ld<T>(n)) * n * sizeof(T)); }
  int team_size() const { return lu_team_size(n); }

  template <class Team>
  EMGPU_HD void operator()(const Team& t, index_t k, unsigned char* scratch, std::size_t bytes) const {
    carver cv{scratch, bytes};
    const staged_matrix<T> m = cv.stage(a(k), n, n, lda);
    stage_in(t, m, n);
    const int inf = with_local(m, n, [&](const auto& ma) { return lu_factor_core(t, ma, n, ipiv + k * n); });
    stage_out(t, m, n);
    if (t.rank() == 0) info[k] = inf;
  }
};

/// @brief Solve with one factored matrix: b := A^{-1} b (or A^{-1} when
///        `identity` is set, b then being overwritten by I first).
template <class T, class LocL, class LocB>
struct lu_solve_op {
  LocL lu;
  index_t n, ldl;
  const index_t* ipiv;
  LocB b;
  index_t nrhs, ldb;
  bool identity;

  std::size_t scratch_bytes() const { return 0; }
  std::size_t stage_bytes() const {
    return align16(std::size_t(padded_ld<T>(n)) * nrhs * sizeof(T));
  }
  int team_size() const { return lu_team_size(n > nrhs ? n : nrhs); }

  template <class Team>
  EMGPU_HD void operator()(const Team& t, index_t k, unsigned char* scratch, std::size_t bytes) const {
    carver cv{scratch, bytes};
    const staged_matrix<T> x = cv.stage(b(k), n, nrhs, ldb);
    const plain_matrix<const T> f{lu(k), ldl};
    if (identity) {
      team_for_2d(t, n, nrhs, [&](index_t i, index_t j) { x(i, j) = T(i == j ? 1 : 0); });
      t.sync();
    } else {
      stage_in(t, x, n);
    }
    with_local(x, nrhs, [&](const auto& xa) {
      apply_pivots(t, ipiv + k * n, n, xa, nrhs);
      unit_lower_solve(t, f, n, xa, nrhs);
      upper_solve(t, f, n, xa, nrhs);
    });
    stage_out(t, x, n);
  }
};

}  // namespace emgpu::batched::detail
