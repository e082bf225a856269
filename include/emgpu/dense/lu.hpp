/// @file
/// @brief Dense LU with partial pivoting (Crout/right-looking, blocked), its
///        multi right-hand-side solve and triangular inversion, on the serial,
///        OpenMP and CUDA backends. The `crout_lu` solver policy.
///
/// Storage: column-major with leading dimension (emgpu::matrix_view). The
/// matrix lives in the backend's memory (device memory for backend::cuda);
/// nothing is copied to the host and no N x N workspace is allocated.
///
/// Result convention (as LAPACK getrf, but zero-based): P A = L U with L unit
/// lower triangular stored below the diagonal and U stored on and above it.
/// Pivots: `ipiv[k]` (k = 0..n-1, zero-based, ipiv[k] >= k) is the row that
/// was exchanged with row k at step k; applying the exchanges in order k = 0,
/// 1, ... to the rows of A gives P A.
///
/// Pivot type: emgpu::index_t (64-bit). The pivots are our own format (our
/// kernels apply them; the CUDA path converts cuSOLVER's 32-bit one-based,
/// panel-local pivots on the device), and 64 bits keep one index type across
/// the library at a cost of 8 n bytes.
///
/// Pivot choice: the entry of largest |Re| + |Im| (LAPACK's cabs1); on the
/// host ties go to the smaller row and a NaN is chosen first so that it is
/// reported. On CUDA the panels are cuSOLVER's getrf (same magnitude, its own
/// tie rule); non-finite columns are found by a scan of each factored panel,
/// which reports the same column.
#pragma once

#include <cmath>
#include <limits>
#include <span>
#include <type_traits>
#include <vector>

#include "../backend.hpp"
#include "../core/complex.hpp"
#include "../core/error.hpp"
#include "../core/matrix_view.hpp"
#include "detail/lu_common.hpp"
#include "detail/lu_cuda.hpp"
#include "detail/lu_host.hpp"

namespace emgpu::dense {

/// @brief Pivot index type (see the file comment: zero-based, 64-bit).
using pivot_t = index_t;

/// @brief True for the element types the dense solvers accept:
///        complex<double>, complex<float>, double, float.
template <class T>
inline constexpr bool is_dense_scalar_v =
    std::is_same_v<T, complexd> || std::is_same_v<T, complexf> || std::is_same_v<T, double> ||
    std::is_same_v<T, float>;

/// @brief Solver policy: LU with partial row pivoting (P A = L U), blocked
///        right-looking with a recursive (serial/OpenMP) or cuSOLVER getrf
///        (CUDA) panel and a GEMM trailing update.
///
/// Use it on its own through `crout_lu::factorization`, or hand it to a
/// composer as its Solver parameter (it satisfies emgpu::dense::dense_solver).
struct crout_lu {
  /// Columns per outer block (panel width). 0 picks a size from n and the
  /// backend: about n/8 clamped to [16, 128] on the host; on CUDA 128 up to
  /// n = 2048, 256 up to 8192, 512 beyond. On CUDA it is clamped to 512.
  index_t block_size = 0;
  /// Overlap the factorisation of panel k+1 with the trailing update of
  /// panel k (OpenMP: one thread factors while the team updates; CUDA: a
  /// second, high-priority stream). Off gives the plain blocked order.
  bool lookahead = true;
  /// Unused since the CUDA panel became cuSOLVER's getrf (it sized the grid
  /// of the former cooperative panel kernel); kept so that existing
  /// aggregate initialisers still compile. Must be >= 0.
  index_t panel_blocks = 0;

  /// @brief An LU factorisation held in place in the caller's matrix.
  /// @tparam Backend emgpu backend tag (serial, openmp, cuda).
  /// @tparam T complex<double>, complex<float>, double or float.
  /// The object refers to the matrix it factored: keep that storage alive and
  /// unmodified while solving. Pivots live in the backend's memory.
  template <class Backend, class T>
  class factorization;
};

namespace detail {

template <class T>
inline void check_square(matrix_view<T> a, const char* who) {
  require(a.rows >= 0 && a.cols >= 0, std::string(who) + ": negative size");
  require(a.rows == a.cols, std::string(who) + ": matrix is not square (" +
                                std::to_string(a.rows) + " x " + std::to_string(a.cols) + ")");
  require(a.ld >= (a.rows > 1 ? a.rows : 1), std::string(who) + ": leading dimension < rows");
  require(a.data != nullptr || a.rows == 0, std::string(who) + ": null matrix");
}

template <class T>
inline void check_rhs(index_t n, matrix_view<T> rhs, const char* who) {
  require(rhs.rows == n, std::string(who) + ": right-hand side has " + std::to_string(rhs.rows) +
                             " rows, the factorisation " + std::to_string(n));
  require(rhs.cols >= 0, std::string(who) + ": negative number of right-hand sides");
  require(rhs.ld >= (n > 1 ? n : 1), std::string(who) + ": right-hand side ld < rows");
  require(rhs.data != nullptr || rhs.cols == 0 || n == 0,
          std::string(who) + ": null right-hand side");
}

// ---- host dispatch (serial; openmp overloads where threads help) ----------

template <class T>
inline void factor(const backend::serial&, matrix_view<T> a, index_t* ipiv, const crout_lu& o) {
  index_t e = -1;
  const host_lu<T> lu{a.data, a.rows, a.ld, ipiv};
  with_serial_eigen([&] { e = lu.factor_serial(host_block_size(a.rows, o.block_size)); });
  if (e >= 0) throw_singular("emgpu::dense::lu_factor", e);
}

template <class T>
inline void factor(const backend::openmp& b, matrix_view<T> a, index_t* ipiv, const crout_lu& o) {
  const int nt = b.threads();
  if (nt <= 1 || !o.lookahead) {
    // Without look-ahead the trailing update is still threaded (Eigen's own
    // OpenMP GEMM); the panel is then on the critical path.
    index_t e = -1;
    const host_lu<T> lu{a.data, a.rows, a.ld, ipiv};
    if (nt <= 1) {
      with_serial_eigen([&] { e = lu.factor_serial(host_block_size(a.rows, o.block_size)); });
    } else {
      e = lu.factor_serial(host_block_size(a.rows, o.block_size));
    }
    if (e >= 0) throw_singular("emgpu::dense::lu_factor", e);
    return;
  }
  const host_lu<T> lu{a.data, a.rows, a.ld, ipiv};
  const index_t e = lu.factor_parallel(host_block_size(a.rows, o.block_size), nt);
  if (e >= 0) throw_singular("emgpu::dense::lu_factor", e);
}

template <class T>
inline std::vector<index_t> solve_permutation(const backend::serial&, const index_t*, index_t) {
  return {};  // the host applies the exchanges directly
}

template <class T>
inline void solve(const backend::serial&, matrix_view<const T> lu, const index_t* ipiv,
                  const index_t*, matrix_view<T> rhs) {
  for_rhs_slabs(1, rhs.cols, [&](index_t j0, index_t j1) { host_solve_cols(lu, ipiv, rhs, j0, j1); });
}
template <class T>
inline void solve(const backend::openmp& b, matrix_view<const T> lu, const index_t* ipiv,
                  const index_t*, matrix_view<T> rhs) {
  for_rhs_slabs(b.threads(), rhs.cols,
                [&](index_t j0, index_t j1) { host_solve_cols(lu, ipiv, rhs, j0, j1); });
}
template <class T>
inline void solve_adjoint(const backend::serial&, matrix_view<const T> lu, const index_t* ipiv,
                          const index_t*, matrix_view<T> rhs) {
  with_serial_eigen([&] { host_solve_adjoint(lu, ipiv, rhs); });
}
template <class T>
inline void solve_inverse(const backend::serial&, matrix_view<const T> inv, const index_t* ipiv,
                          matrix_view<T> rhs) {
  for_rhs_slabs(1, rhs.cols,
                [&](index_t j0, index_t j1) { host_solve_inverse_cols(inv, ipiv, rhs, j0, j1); });
}
template <class T>
inline void solve_inverse(const backend::openmp& b, matrix_view<const T> inv,
                          const index_t* ipiv, matrix_view<T> rhs) {
  for_rhs_slabs(b.threads(), rhs.cols,
                [&](index_t j0, index_t j1) { host_solve_inverse_cols(inv, ipiv, rhs, j0, j1); });
}
template <class T>
inline void tri_inverse(const backend::serial&, matrix_view<T> a) {
  index_t e = -1;
  with_serial_eigen([&] { e = host_tri_inverse(a.data, a.rows, a.ld); });
  if (e >= 0) throw_singular("emgpu::dense::tri_inverse", e);
}
template <class T>
inline real_type_t<T> norm1(const backend::serial&, matrix_view<const T> a) {
  return host_norm1(a);
}

#if defined(__CUDACC__)
// ---- CUDA dispatch (device memory throughout) -------------------------------

template <class T>
inline void factor(const backend::cuda& b, matrix_view<T> a, index_t* ipiv, const crout_lu& o) {
  cuda_factor(b, a, ipiv, o.block_size, o.lookahead);
}
template <class T>
inline device_vector<index_t> solve_permutation(const backend::cuda& b, const index_t* ipiv,
                                                index_t n) {
  return cuda_solve_permutation(b, ipiv, n);
}
template <class T>
inline void solve(const backend::cuda& b, matrix_view<const T> lu, const index_t* ipiv,
                  const index_t* perm, matrix_view<T> rhs) {
  cuda_solve(b, lu, ipiv, perm, rhs, false);
}
template <class T>
inline void solve_adjoint(const backend::cuda& b, matrix_view<const T> lu, const index_t* ipiv,
                          const index_t* perm, matrix_view<T> rhs) {
  cuda_solve(b, lu, ipiv, perm, rhs, true);
}
template <class T>
inline void solve_inverse(const backend::cuda& b, matrix_view<const T> inv, const index_t* ipiv,
                          matrix_view<T> rhs) {
  cuda_solve_inverse(b, inv, ipiv, rhs);
}
template <class T>
inline void tri_inverse(const backend::cuda& b, matrix_view<T> a) {
  cuda_tri_inverse(b, a);
}
template <class T>
inline real_type_t<T> norm1(const backend::cuda& b, matrix_view<const T> a) {
  return cuda_norm1(b, a);
}
#endif  // __CUDACC__

}  // namespace detail

/// @brief Factors the square matrix `a` in place: P A = L U.
/// @tparam Backend emgpu backend tag; `a` and `ipiv` must be in its memory.
/// @tparam T complex<double>, complex<float>, double or float.
/// @param ipiv n pivots (zero-based, see the file comment), backend memory.
/// @throws invalid_argument if `a` is not square or a pointer is null.
/// @throws singular_matrix (index() = zero-based column) on an exactly zero
///         or non-finite pivot; `a` then holds a partial factorisation.
/// @throws device_error on a CUDA/cuBLAS failure (out_of_memory() set for OOM).
template <class Backend, class T>
void lu_factor(const Backend& b, matrix_view<T> a, index_t* ipiv, const crout_lu& opts = {}) {
  static_assert(is_dense_scalar_v<T>,
                "emgpu::dense::lu_factor: T must be complex<double>, complex<float>, double or float");
  detail::check_square(a, "emgpu::dense::lu_factor");
  detail::require(opts.block_size >= 0 && opts.panel_blocks >= 0,
                  "emgpu::dense::lu_factor: negative block_size or panel_blocks");
  if (a.rows == 0) return;
  detail::require(ipiv != nullptr, "emgpu::dense::lu_factor: null ipiv");
  detail::factor(b, a, ipiv, opts);
}

/// @brief Overwrites rhs (n x nrhs, backend memory) with A^-1 rhs, using the
///        factors and pivots of lu_factor (forward then back substitution).
/// @throws invalid_argument on a size mismatch or a null ipiv. @throws device_error (CUDA).
template <class Backend, class T>
void lu_solve(const Backend& b, std::type_identity_t<matrix_view<const T>> lu, const index_t* ipiv,
              matrix_view<T> rhs) {
  static_assert(is_dense_scalar_v<T>, "emgpu::dense::lu_solve: unsupported element type");
  detail::check_square(lu, "emgpu::dense::lu_solve");
  detail::check_rhs(lu.rows, rhs, "emgpu::dense::lu_solve");
  if (lu.rows == 0 || rhs.cols == 0) return;
  detail::require(ipiv != nullptr, "emgpu::dense::lu_solve: null ipiv");
  detail::solve(b, lu, ipiv, static_cast<const index_t*>(nullptr), rhs);
}

/// @brief Replaces packed LU factors by L^-1 (unit lower, stored below the
///        diagonal) and U^-1 (on and above it), in place (LAPACK trtri, blocked).
/// @throws singular_matrix if U has a zero or non-finite diagonal entry.
/// @throws invalid_argument if not square. @throws device_error (CUDA).
template <class Backend, class T>
void tri_inverse(const Backend& b, matrix_view<T> lu) {
  static_assert(is_dense_scalar_v<T>, "emgpu::dense::tri_inverse: unsupported element type");
  detail::check_square(lu, "emgpu::dense::tri_inverse");
  if (lu.rows == 0) return;
  detail::tri_inverse(b, lu);
}

/// @brief Overwrites rhs with A^-1 rhs = U^-1 (L^-1 (P rhs)) using the
///        inverses formed by tri_inverse (two triangular matrix products).
/// Repeated solves then cost matrix products; accuracy is that of the
/// explicit inverses (forward error ~ cond(A) eps, as substitution).
/// @throws invalid_argument on a size mismatch or a null ipiv. @throws device_error (CUDA).
template <class Backend, class T>
void lu_solve_inverse(const Backend& b, std::type_identity_t<matrix_view<const T>> inv,
                      const index_t* ipiv, matrix_view<T> rhs) {
  static_assert(is_dense_scalar_v<T>, "emgpu::dense::lu_solve_inverse: unsupported element type");
  detail::check_square(inv, "emgpu::dense::lu_solve_inverse");
  detail::check_rhs(inv.rows, rhs, "emgpu::dense::lu_solve_inverse");
  if (inv.rows == 0 || rhs.cols == 0) return;
  detail::require(ipiv != nullptr, "emgpu::dense::lu_solve_inverse: null ipiv");
  detail::solve_inverse(b, inv, ipiv, rhs);
}

template <class Backend, class T>
class crout_lu::factorization {
  static_assert(is_dense_scalar_v<T>,
                "emgpu::dense::crout_lu: T must be complex<double>, complex<float>, double or float");

 public:
  using backend_type = Backend;
  using value_type = T;
  using real_type = real_type_t<T>;

  /// @brief Factors `a` in place (see lu_factor for the throws).
  /// The 1-norm of A is taken first (O(n^2)) for rcond_estimate().
  factorization(const Backend& b, matrix_view<T> a, const crout_lu& opts = {})
      : b_(b), lu_(a), ipiv_() {
    detail::check_square(a, "emgpu::dense::crout_lu::factorization");
    ipiv_ = make_vector<index_t>(b_, a.rows);
    if (a.rows == 0) return;
    anorm_ = detail::norm1(b_, matrix_view<const T>(a));
    lu_factor(b_, a, ipiv_.data(), opts);
    perm_ = detail::solve_permutation<T>(b_, ipiv_.data(), a.rows);
  }

  /// @brief Overwrites rhs (n x nrhs, backend memory) with A^-1 rhs.
  /// @throws invalid_argument if rhs.rows != size(). @throws device_error (CUDA).
  void solve(matrix_view<T> rhs) const {
    detail::check_rhs(size(), rhs, "emgpu::dense::crout_lu::solve");
    if (size() == 0 || rhs.cols == 0) return;
    detail::solve(b_, factors(), ipiv_.data(), perm_ptr(), rhs);
  }

  /// @brief Order n of the factored matrix.
  index_t size() const { return lu_.rows; }

  /// @brief Reciprocal 1-norm condition number estimate 1 / (||A||_1 ||A^-1||_1),
  ///        ||A^-1||_1 by Hager's method with Higham's refinements (a handful of
  ///        O(n^2) solves; usually within a factor 3 of the truth, never above it
  ///        in exact arithmetic). 0 for a matrix with a zero column.
  real_type rcond_estimate() const;

  /// @brief The packed factors (backend memory).
  matrix_view<const T> factors() const { return lu_; }
  /// @brief The n pivots (backend memory, zero-based, see lu.hpp).
  const index_t* pivots() const { return ipiv_.data(); }
  /// @brief ||A||_1 of the matrix before factorisation.
  real_type norm1() const { return anorm_; }
  const Backend& backend() const { return b_; }

 private:
  const index_t* perm_ptr() const { return perm_.empty() ? nullptr : perm_.data(); }
  Backend b_;
  matrix_view<T> lu_;
  vector_t<Backend, index_t> ipiv_;
  vector_t<Backend, index_t> perm_;
  real_type anorm_ = 0;
};

template <class Backend, class T>
auto crout_lu::factorization<Backend, T>::rcond_estimate() const -> real_type {
  const index_t n = size();
  if (n == 0) return real_type(1);
  if (!(anorm_ > 0)) return real_type(0);
  using std::abs;
  const auto cabs = [](T z) { return real_type(abs_any(z)); };
  std::vector<T> x(std::size_t(n), T(real_type(1) / real_type(n)));
  // One solve with A (adjoint = false) or A^H of a host vector, through the backend.
  auto apply = [&](std::vector<T>& v, bool adjoint) {
    auto d = to_backend(b_, std::span<const T>(v.data(), v.size()));
    const matrix_view<T> dv{d.data(), n, 1, n};
    if (adjoint) detail::solve_adjoint(b_, factors(), ipiv_.data(), perm_ptr(), dv);
    else detail::solve(b_, factors(), ipiv_.data(), perm_ptr(), dv);
    synchronize(b_);  // solves are stream-ordered; the copy below may not be
    v = to_host(b_, d);
  };
  auto norm1v = [&](const std::vector<T>& v) {
    real_type s = 0;
    for (const T& z : v) s += cabs(z);
    return s;
  };
  real_type est = 0;
  index_t jlast = -1;
  for (int iter = 0; iter < 5; ++iter) {
    std::vector<T> y = x;
    apply(y, false);
    const real_type e = norm1v(y);
    if (!(e == e) || e > std::numeric_limits<real_type>::max()) return real_type(0);
    if (iter > 0 && e <= est) break;
    est = e;
    for (T& z : y) {
      const real_type m = cabs(z);
      z = m > 0 ? z / m : T(1);
    }
    apply(y, true);
    index_t j = 0;
    real_type zmax = -1;
    for (index_t i = 0; i < n; ++i)
      if (cabs(y[std::size_t(i)]) > zmax) {
        zmax = cabs(y[std::size_t(i)]);
        j = i;
      }
    if (iter > 0 && j == jlast) break;
    jlast = j;
    std::fill(x.begin(), x.end(), T(0));
    x[std::size_t(j)] = T(1);
  }
  // Higham's alternating vector catches matrices that fool the power steps.
  std::vector<T> alt(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i)
    alt[std::size_t(i)] = T(real_type(i % 2 ? -1 : 1) *
                            (real_type(1) + (n > 1 ? real_type(i) / real_type(n - 1) : real_type(0))));
  apply(alt, false);
  const real_type e2 = 2 * norm1v(alt) / (3 * real_type(n));
  if (e2 > est) est = e2;
  return est > 0 ? real_type(1) / (anorm_ * est) : real_type(0);
}

}  // namespace emgpu::dense
