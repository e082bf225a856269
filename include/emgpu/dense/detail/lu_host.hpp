/// @file
/// @brief Host (serial and OpenMP) LU kernels: blocked right-looking LU with a
///        recursive panel, triangular solves and inversion, all on Eigen maps
///        over the caller's column-major storage (no copies).
#pragma once

#include <algorithm>
#include <complex>
#include <exception>
#include <utility>
#include <vector>

#include "../../core/eigen.hpp"

// Eigen's triangular solves and products are host kernels behind
// EIGEN_DEVICE_FUNC entry points: nvcc's device pass warns (#20014) at each
// instantiation, i.e. in every .cu file that builds a CPU backend's LU. This
// file runs on the host only, so the device pass does not see those calls.
#if defined(__CUDA_ARCH__)
#define EMGPU_HOST_EIGEN(...)
#else
#define EMGPU_HOST_EIGEN(...) __VA_ARGS__
#endif

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "../../core/matrix_view.hpp"
#include "lu_common.hpp"

namespace emgpu::dense::detail {

template <class T> struct eigen_scalar { using type = T; };
template <class R> struct eigen_scalar<complex<R>> { using type = std::complex<R>; };
template <class T> using eigen_scalar_t = typename eigen_scalar<T>::type;

template <class T>
using emat = Eigen::Matrix<eigen_scalar_t<T>, Eigen::Dynamic, Eigen::Dynamic>;
template <class T>
using emap = Eigen::Map<emat<T>, Eigen::Unaligned, Eigen::OuterStride<>>;
template <class T>
using cemap = Eigen::Map<const emat<T>, Eigen::Unaligned, Eigen::OuterStride<>>;

template <class T>
inline emap<T> emap_of(T* p, index_t rows, index_t cols, index_t ld) {
  return emap<T>(reinterpret_cast<eigen_scalar_t<T>*>(p), rows, cols, Eigen::OuterStride<>(ld));
}
template <class T>
inline cemap<T> cemap_of(const T* p, index_t rows, index_t cols, index_t ld) {
  return cemap<T>(reinterpret_cast<const eigen_scalar_t<T>*>(p), rows, cols,
                  Eigen::OuterStride<>(ld));
}

/// Runs f with Eigen's internal OpenMP threading off. Eigen parallelises a
/// product with omp_get_max_threads() threads unless it already runs inside
/// a team; a one-thread region whose own nthreads ICV is 1 keeps the serial
/// backend serial without touching Eigen's global setNbThreads.
template <class F>
inline void with_serial_eigen(F&& f) {
#if defined(_OPENMP)
  std::exception_ptr err;
#pragma omp parallel num_threads(1)
  {
    omp_set_num_threads(1);  // affects this region's implicit task only
    try {
      f();
    } catch (...) {
      err = std::current_exception();
    }
  }
  if (err) std::rethrow_exception(err);
#else
  f();
#endif
}

/// In-place LU of the n x n matrix at a (leading dimension ld).
template <class T>
struct host_lu {
  T* a;
  index_t n;
  index_t ld;
  index_t* ipiv;

  T& at(index_t i, index_t j) const { return a[i + j * ld]; }

  /// Unblocked right-looking LU of columns [c, c+w), rows [c, n). Row
  /// exchanges span the whole outer panel [pc0, pc0+pw) at once, so no
  /// separate swap pass over the panel is needed afterwards.
  /// @return the failing column, or -1.
  index_t leaf(index_t c, index_t w, index_t pc0, index_t pw) const {
    using R = real_type_t<T>;
    for (index_t j = c; j < c + w; ++j) {
      T* col = a + j * ld;
      R best = -1;
      index_t p = -1;
      for (index_t i = j; i < n; ++i) {
        const R v = pivot_key(abs1(col[i]));
        if (pivot_better(v, i, best, p)) {
          best = v;
          p = i;
        }
      }
      const T piv = col[p];
      if (!(best > R(0)) || !finite_scalar(piv)) return j;
      ipiv[j] = p;
      if (p != j)
        for (index_t t = pc0; t < pc0 + pw; ++t) std::swap(at(j, t), at(p, t));
      const T inv = reciprocal(piv);
      for (index_t i = j + 1; i < n; ++i) col[i] *= inv;
      const index_t m = n - j - 1, r = c + w - j - 1;
      if (m > 0 && r > 0) {
        auto a22 = emap_of(a + (j + 1) + (j + 1) * ld, m, r, ld);
        auto l = emap_of(col + j + 1, m, 1, ld);
        auto u = emap_of(a + j + (j + 1) * ld, 1, r, ld);
        a22.noalias() -= l * u;
      }
    }
    return -1;
  }

  /// Recursive panel LU (halving the columns): most of the panel's flops go
  /// through GEMM instead of rank-1 updates.
  index_t panel(index_t c, index_t w, index_t pc0, index_t pw) const {
    if (w <= 16) return leaf(c, w, pc0, pw);
    index_t w1 = (w / 2 + 7) / 8 * 8;
    if (w1 >= w) w1 = w / 2;
    if (const index_t e = panel(c, w1, pc0, pw); e >= 0) return e;
    const index_t w2 = w - w1, m = n - c - w1;
    auto l11 = emap_of(a + c + c * ld, w1, w1, ld);
    auto a12 = emap_of(a + c + (c + w1) * ld, w1, w2, ld);
    EMGPU_HOST_EIGEN(l11.template triangularView<Eigen::UnitLower>().solveInPlace(a12);)
    if (m > 0) {
      auto a21 = emap_of(a + (c + w1) + c * ld, m, w1, ld);
      auto a22 = emap_of(a + (c + w1) + (c + w1) * ld, m, w2, ld);
      a22.noalias() -= a21 * a12;
    }
    return panel(c + w1, w2, pc0, pw);
  }

  /// Applies panel (c, w) to columns [j0, j1): its row exchanges, then
  /// U12 = L11^-1 A12 and A22 -= L21 U12.
  void update(index_t c, index_t w, index_t j0, index_t j1) const {
    if (j1 <= j0) return;
    for (index_t j = j0; j < j1; ++j) {
      T* col = a + j * ld;
      for (index_t s = c; s < c + w; ++s)
        if (const index_t p = ipiv[s]; p != s) std::swap(col[s], col[p]);
    }
    auto l11 = emap_of(a + c + c * ld, w, w, ld);
    auto a12 = emap_of(a + c + j0 * ld, w, j1 - j0, ld);
    EMGPU_HOST_EIGEN(l11.template triangularView<Eigen::UnitLower>().solveInPlace(a12);)
    const index_t m = n - c - w;
    if (m > 0) {
      auto a21 = emap_of(a + (c + w) + c * ld, m, w, ld);
      auto a22 = emap_of(a + (c + w) + j0 * ld, m, j1 - j0, ld);
      a22.noalias() -= a21 * a12;
    }
  }

  /// Row exchanges of the panels after column j's own panel (applied column
  /// by column, which walks memory contiguously, unlike row swaps).
  void left_swaps(index_t j, index_t nb) const {
    T* col = a + j * ld;
    for (index_t s = std::min(n, (j / nb + 1) * nb); s < n; ++s)
      if (const index_t p = ipiv[s]; p != s) std::swap(col[s], col[p]);
  }

  /// Serial blocked right-looking LU. @return failing column or -1.
  index_t factor_serial(index_t nb) const {
    for (index_t c = 0; c < n; c += nb) {
      const index_t w = std::min(nb, n - c);
      if (const index_t e = panel(c, w, c, w); e >= 0) return e;
      update(c, w, c + w, n);
    }
    for (index_t j = 0; j < n; ++j) left_swaps(j, nb);
    return -1;
  }

  /// OpenMP blocked LU with look-ahead: while the team updates the far
  /// trailing columns with panel k (dynamic chunks, one single-threaded Eigen
  /// GEMM each), one thread updates the next panel's columns and factors it.
  /// The panel then costs almost nothing on the critical path.
  index_t factor_parallel(index_t nb, int nt) const {
#if defined(_OPENMP)
    const index_t nk = (n + nb - 1) / nb;
    std::vector<index_t> perr(std::size_t(nk + 1), -1);
    std::vector<char> pexc(std::size_t(nk + 1), 0);
    std::exception_ptr eptr;
    auto guarded = [&](index_t k, auto&& f) {
      try {
        f();
      } catch (...) {
#pragma omp critical(emgpu_dense_lu_exc)
        {
          if (!eptr) eptr = std::current_exception();
        }
        pexc[std::size_t(k + 1)] = 1;
      }
    };
    index_t result = -1;
#pragma omp parallel num_threads(nt)
    {
      omp_set_num_threads(1);  // Eigen inside this team: one thread per product
      bool ok = true;
      for (index_t k = -1; k < nk; ++k) {
        const index_t ck = k * nb, wk = k >= 0 ? std::min(nb, n - ck) : 0;
#pragma omp single nowait
        {
          guarded(k, [&] {
            if (k + 1 < nk) {
              const index_t c1 = (k + 1) * nb, w1 = std::min(nb, n - c1);
              if (k >= 0) update(ck, wk, c1, c1 + w1);
              perr[std::size_t(k + 1)] = panel(c1, w1, c1, w1);
            }
          });
        }
        if (k >= 0) {
          const index_t r0 = std::min(n, (k + 2) * nb), nr = n - r0;
          index_t nch = nr > 0 ? std::min<index_t>((nr + 63) / 64, 4 * index_t(nt)) : 0;
          const index_t chunk = nch > 0 ? (nr + nch - 1) / nch : 0;
#pragma omp for schedule(dynamic, 1) nowait
          for (index_t q = 0; q < nch; ++q)
            guarded(k, [&] { update(ck, wk, r0 + q * chunk, std::min(n, r0 + (q + 1) * chunk)); });
        }
#pragma omp barrier
        // Flags of iteration k are written before the barrier and never again,
        // so every thread reads the same values and leaves at the same k.
        if (pexc[std::size_t(k + 1)] || (k + 1 < nk && perr[std::size_t(k + 1)] >= 0)) {
          ok = false;
          break;
        }
      }
      if (ok) {
#pragma omp for schedule(static)
        for (index_t j = 0; j < n; ++j) left_swaps(j, nb);
      }
    }
    if (eptr) std::rethrow_exception(eptr);
    for (index_t e : perr)
      if (e >= 0) {
        result = e;
        break;
      }
    return result;
#else
    (void)nt;
    return factor_serial(nb);
#endif
  }
};

/// P B in place: the row exchanges of ipiv, in order, on every column.
template <class T>
inline void apply_row_swaps(const index_t* ipiv, index_t n, T* b, index_t ldb, index_t j0,
                            index_t j1) {
  for (index_t j = j0; j < j1; ++j) {
    T* col = b + j * ldb;
    for (index_t s = 0; s < n; ++s)
      if (const index_t p = ipiv[s]; p != s) std::swap(col[s], col[p]);
  }
}

/// X = U^-1 L^-1 P B for the columns [j0, j1) of rhs.
template <class T>
inline void host_solve_cols(matrix_view<const T> lu, const index_t* ipiv, matrix_view<T> rhs,
                            index_t j0, index_t j1) {
  const index_t n = lu.rows;
  if (j1 <= j0 || n == 0) return;
  apply_row_swaps(ipiv, n, rhs.data, rhs.ld, j0, j1);
  auto f = cemap_of(lu.data, n, n, lu.ld);
  auto x = emap_of(rhs.data + j0 * rhs.ld, n, j1 - j0, rhs.ld);
  EMGPU_HOST_EIGEN(f.template triangularView<Eigen::UnitLower>().solveInPlace(x);)
  EMGPU_HOST_EIGEN(f.template triangularView<Eigen::Upper>().solveInPlace(x);)
}

/// X = A^-H B = P^T L^-H U^-H B (used by the condition estimator).
template <class T>
inline void host_solve_adjoint(matrix_view<const T> lu, const index_t* ipiv, matrix_view<T> rhs) {
  const index_t n = lu.rows;
  if (n == 0 || rhs.cols == 0) return;
  auto f = cemap_of(lu.data, n, n, lu.ld);
  auto x = emap_of(rhs.data, n, rhs.cols, rhs.ld);
  EMGPU_HOST_EIGEN(f.template triangularView<Eigen::Upper>().adjoint().solveInPlace(x);)
  EMGPU_HOST_EIGEN(f.template triangularView<Eigen::UnitLower>().adjoint().solveInPlace(x);)
  for (index_t j = 0; j < rhs.cols; ++j) {
    T* col = rhs.data + j * rhs.ld;
    for (index_t s = n - 1; s >= 0; --s)
      if (const index_t p = ipiv[s]; p != s) std::swap(col[s], col[p]);
  }
}

/// Solve through the stored inverses: X = U^-1 (L^-1 (P B)), two triangular
/// matrix products instead of two substitutions.
template <class T>
inline void host_solve_inverse_cols(matrix_view<const T> inv, const index_t* ipiv,
                                    matrix_view<T> rhs, index_t j0, index_t j1) {
  const index_t n = inv.rows;
  if (j1 <= j0 || n == 0) return;
  apply_row_swaps(ipiv, n, rhs.data, rhs.ld, j0, j1);
  auto f = cemap_of(inv.data, n, n, inv.ld);
  auto x = emap_of(rhs.data + j0 * rhs.ld, n, j1 - j0, rhs.ld);
  EMGPU_HOST_EIGEN(x = f.template triangularView<Eigen::UnitLower>() * x;)  // evaluated into a temporary
  EMGPU_HOST_EIGEN(x = f.template triangularView<Eigen::Upper>() * x;)
}

/// Splits the right-hand sides across threads (each solve is independent).
template <class F>
inline void for_rhs_slabs(int nt, index_t nrhs, F&& f) {
#if defined(_OPENMP)
  if (nt > 1 && nrhs > 1) {
    const index_t parts = std::min<index_t>(nt, nrhs);
    std::exception_ptr eptr;
#pragma omp parallel for num_threads(int(parts)) schedule(static)
    for (index_t q = 0; q < parts; ++q) {
      omp_set_num_threads(1);
      try {
        f(nrhs * q / parts, nrhs * (q + 1) / parts);
      } catch (...) {
#pragma omp critical(emgpu_dense_solve_exc)
        if (!eptr) eptr = std::current_exception();
      }
    }
    if (eptr) std::rethrow_exception(eptr);
    return;
  }
#endif
  (void)nt;
  with_serial_eigen([&] { f(index_t(0), nrhs); });
}

/// Unblocked inverse of an upper (non-unit) triangle, in place (LAPACK trti2).
template <class T>
inline void trti2_upper(T* d, index_t m, index_t ld) {
  for (index_t j = 0; j < m; ++j) {
    T& djj = d[j + j * ld];
    djj = reciprocal(djj);
    const T ajj = -djj;
    T* x = d + j * ld;
    // Ascending i: row i of the product only needs x_k with k >= i, still old.
    for (index_t i = 0; i < j; ++i) {
      T s(0);
      for (index_t k = i; k < j; ++k) s += d[i + k * ld] * x[k];
      x[i] = s * ajj;
    }
  }
}

/// Unblocked inverse of a unit lower triangle, in place.
template <class T>
inline void trti2_unit_lower(T* d, index_t m, index_t ld) {
  for (index_t j = m - 2; j >= 0; --j) {
    T* x = d + j * ld;
    // Descending i: row i only needs x_k with k <= i, still old.
    for (index_t i = m - 1; i > j; --i) {
      T s = x[i];
      for (index_t k = j + 1; k < i; ++k) s += d[i + k * ld] * x[k];
      x[i] = -s;
    }
  }
}

/// In-place L^-1 (unit lower) and U^-1 (upper) of packed LU factors, blocked
/// as LAPACK trtri (a TRMM and a TRSM per block column, then the diagonal
/// block unblocked). @return first column with a zero or non-finite U(j,j), or -1.
template <class T>
inline index_t host_tri_inverse(T* a, index_t n, index_t ld) {
  for (index_t j = 0; j < n; ++j) {
    const T d = a[j + j * ld];
    if (!(abs1(d) > real_type_t<T>(0)) || !finite_scalar(d)) return j;
  }
  constexpr index_t nb = 64;
  auto f = emap_of(a, n, n, ld);
  for (index_t j = 0; j < n; j += nb) {
    const index_t jb = std::min(nb, n - j);
    if (j > 0) {
      auto x = f.block(0, j, j, jb);
      EMGPU_HOST_EIGEN(x = f.topLeftCorner(j, j).template triangularView<Eigen::Upper>() * x;)
      EMGPU_HOST_EIGEN(f.block(j, j, jb, jb).template triangularView<Eigen::Upper>()
                           .template solveInPlace<Eigen::OnTheRight>(x);)
      x = -x;
    }
    trti2_upper(a + j + j * ld, jb, ld);
  }
  for (index_t j = ((n - 1) / nb) * nb; j >= 0; j -= nb) {
    const index_t jb = std::min(nb, n - j);
    if (j + jb < n) {
      const index_t m = n - j - jb;
      auto x = f.block(j + jb, j, m, jb);
      EMGPU_HOST_EIGEN(x = f.block(j + jb, j + jb, m, m).template triangularView<Eigen::UnitLower>() * x;)
      EMGPU_HOST_EIGEN(f.block(j, j, jb, jb).template triangularView<Eigen::UnitLower>()
                           .template solveInPlace<Eigen::OnTheRight>(x);)
      x = -x;
    }
    trti2_unit_lower(a + j + j * ld, jb, ld);
  }
  return -1;
}

/// max_j sum_i |a_ij| (the 1-norm, for the condition estimate).
template <class T>
inline real_type_t<T> host_norm1(matrix_view<const T> a) {
  real_type_t<T> best = 0;
  for (index_t j = 0; j < a.cols; ++j) {
    real_type_t<T> s = 0;
    for (index_t i = 0; i < a.rows; ++i) s += abs_any(a(i, j));
    if (s > best || s != s) best = s;
  }
  return best;
}

}  // namespace emgpu::dense::detail

#undef EMGPU_HOST_EIGEN
