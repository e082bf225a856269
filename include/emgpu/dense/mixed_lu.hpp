/// @file
/// @brief Mixed-precision LU solver policy: factor in single precision, refine
///        the solution iteratively with double-precision residuals (as LAPACK
///        zcgesv), falling back to the double factorisation when refinement
///        does not converge.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "../backend.hpp"
#include "../core/complex.hpp"
#include "../core/matrix_view.hpp"
#include "lu.hpp"

namespace emgpu::dense {

namespace detail {

template <class T> struct lower_precision { using type = T; };
template <> struct lower_precision<double> { using type = float; };
template <> struct lower_precision<complexd> { using type = complexf; };
template <class T> using lower_precision_t = typename lower_precision<T>::type;

template <class From, class To>
EMGPU_HD inline To convert_scalar(From x) {
  if constexpr (is_complex_v<To>) {
    using R = real_type_t<To>;
    return To(R(x.real()), R(x.imag()));
  } else {
    return To(x);
  }
}

/// dst(i, j) = src(i, j) converted.
template <class From, class To>
struct convert_fn {
  const From* src;
  index_t lds;
  To* dst;
  index_t ldd;
  EMGPU_HD void operator()(index_t i, index_t j) const {
    dst[i + j * ldd] = convert_scalar<From, To>(src[i + j * lds]);
  }
};
/// x(i, j) += w(i, j) (w in lower precision).
template <class T, class L>
struct add_correction_fn {
  T* x;
  index_t ldx;
  const L* w;
  index_t ldw;
  EMGPU_HD void operator()(index_t i, index_t j) const {
    x[i + j * ldx] += convert_scalar<L, T>(w[i + j * ldw]);
  }
};
/// out[j] = max_i |m(i, j)| (one column per index).
template <class T>
struct column_max_fn {
  const T* m;
  index_t ld;
  index_t rows;
  real_type_t<T>* out;
  EMGPU_HD void operator()(index_t j) const {
    real_type_t<T> best = 0;
    for (index_t i = 0; i < rows; ++i) {
      const real_type_t<T> v = abs_any(m[i + j * ld]);
      if (v > best || v != v) best = v;
    }
    out[j] = best;
  }
};
/// out[i] = sum_j |a(i, j)| (one row per index: coalesced on the GPU).
template <class T>
struct row_abs_sum_fn {
  const T* a;
  index_t ld;
  index_t cols;
  real_type_t<T>* out;
  EMGPU_HD void operator()(index_t i) const {
    real_type_t<T> s = 0;
    for (index_t j = 0; j < cols; ++j) s += abs_any(a[i + j * ld]);
    out[i] = s;
  }
};

/// r -= a x (host: Eigen GEMM, single-threaded for the serial backend).
template <class T>
inline void gemm_minus(const backend::serial&, matrix_view<const T> a, matrix_view<const T> x,
                       matrix_view<T> r) {
  with_serial_eigen([&] {
    emap_of(r.data, r.rows, r.cols, r.ld).noalias() -=
        cemap_of(a.data, a.rows, a.cols, a.ld) * cemap_of(x.data, x.rows, x.cols, x.ld);
  });
}
template <class T>
inline void gemm_minus(const backend::openmp&, matrix_view<const T> a, matrix_view<const T> x,
                       matrix_view<T> r) {
  emap_of(r.data, r.rows, r.cols, r.ld).noalias() -=
      cemap_of(a.data, a.rows, a.cols, a.ld) * cemap_of(x.data, x.rows, x.cols, x.ld);
}
#if defined(__CUDACC__)
template <class T>
inline void gemm_minus(const backend::cuda& b, matrix_view<const T> a, matrix_view<const T> x,
                       matrix_view<T> r) {
  emgpu::detail::device_guard guard(b.device);
  cublasHandle_t h = cublas_handle(b.device, 0);
  EMGPU_CUBLAS_CHECK(cublasSetStream(h, b.stream));
  gemm_nn(h, r.rows, r.cols, a.cols, T(-1), a.data, a.ld, x.data, x.ld, T(1), r.data, r.ld);
}
#endif

}  // namespace detail

/// @brief Solver policy: LU in the lower precision of T (complex<float> for
///        complex<double>, float for double) plus iterative refinement with
///        residuals r = b - A x computed in T, until every right-hand side has
///        ||r||_inf <= sqrt(n) eps ||A||_inf ||x||_inf (eps of T), i.e. the
///        backward error of the double-precision solver (LAPACK zcgesv's test).
///
/// Unlike crout_lu the matrix is **not** overwritten: A stays intact for the
/// residuals and the factors live in a lower-precision copy (n^2 sizeof(L)
/// extra: half of A). When the lower-precision factorisation hits a singular
/// pivot, or refinement does not converge in max_iterations (cond(A) beyond
/// ~1/eps_single), it falls back to crout_lu in T, which then factors A in place.
/// For float and complex<float> it is crout_lu (no lower precision).
struct mixed_lu {
  index_t block_size = 0;  ///< as crout_lu::block_size
  bool lookahead = true;   ///< as crout_lu::lookahead
  int max_iterations = 30; ///< refinement steps before falling back
  index_t panel_blocks = 0; ///< as crout_lu::panel_blocks (unused)

  /// @brief Factorisation object, same use as crout_lu::factorization.
  /// @tparam Backend emgpu backend tag. @tparam T complex<double> or double
  ///         (float types are accepted and simply use crout_lu).
  template <class Backend, class T>
  class factorization;
};

template <class Backend, class T>
class mixed_lu::factorization {
  using L = detail::lower_precision_t<T>;
  static constexpr bool mixed = !std::is_same_v<L, T>;

 public:
  using backend_type = Backend;
  using value_type = T;
  using real_type = real_type_t<T>;

  /// @brief Copies `a` to the lower precision and factors the copy.
  /// @throws invalid_argument if not square; singular_matrix if A is singular
  ///         in T as well; device_error (CUDA, incl. out of memory).
  factorization(const Backend& b, matrix_view<T> a, const mixed_lu& opts = {})
      : b_(b), a_(a), opts_(opts) {
    detail::check_square(a, "emgpu::dense::mixed_lu::factorization");
    const index_t n = a.rows;
    if (n == 0) return;
    if constexpr (mixed) {
      low_ = make_vector<L>(b_, n * n);
      for_each_index(b_, n, n, detail::convert_fn<T, L>{a.data, a.ld, low_.data(), n});
      auto rs = make_vector<real_type>(b_, n);
      for_each_index(b_, n, detail::row_abs_sum_fn<T>{a.data, a.ld, n, rs.data()});
      anorm_inf_ = max_abs(b_, static_cast<const real_type*>(rs.data()), n);
      try {
        lowf_.emplace(b_, matrix_view<L>{low_.data(), n, n, n}, crout_lu{opts.block_size, opts.lookahead, opts.panel_blocks});
        return;
      } catch (const singular_matrix&) {
        // Singular in single precision (e.g. entries beyond its range): use T.
      }
    }
    fall_back();
  }

  /// @brief Overwrites rhs (n x nrhs, backend memory) with A^-1 rhs to the
  ///        backward error of the T-precision solver.
  /// @throws invalid_argument on a size mismatch; device_error (CUDA).
  void solve(matrix_view<T> rhs) const {
    detail::check_rhs(size(), rhs, "emgpu::dense::mixed_lu::solve");
    const index_t n = size(), k = rhs.cols;
    if (n == 0 || k == 0) return;
    if (full_) {
      full_->solve(rhs);
      return;
    }
    if constexpr (mixed) {
      auto bcopy = make_vector<T>(b_, n * k);
      auto r = make_vector<T>(b_, n * k);
      auto w = make_vector<L>(b_, n * k);
      auto rn = make_vector<real_type>(b_, k);
      auto xn = make_vector<real_type>(b_, k);
      const matrix_view<T> rv{r.data(), n, k, n};
      const matrix_view<L> wv{w.data(), n, k, n};
      for_each_index(b_, n, k, detail::convert_fn<T, T>{rhs.data, rhs.ld, bcopy.data(), n});
      for_each_index(b_, n, k, detail::convert_fn<T, L>{rhs.data, rhs.ld, w.data(), n});
      lowf_->solve(wv);
      for_each_index(b_, n, k, detail::convert_fn<L, T>{w.data(), n, rhs.data, rhs.ld});
      const real_type tol = std::sqrt(real_type(n)) * std::numeric_limits<real_type>::epsilon() / 2 * anorm_inf_;
      std::vector<real_type> hr(static_cast<std::size_t>(k)), hx(static_cast<std::size_t>(k));
      for (int it = 0; it <= opts_.max_iterations; ++it) {
        for_each_index(b_, n, k, detail::convert_fn<T, T>{bcopy.data(), n, r.data(), n});
        detail::gemm_minus(b_, matrix_view<const T>(a_), matrix_view<const T>(rhs), rv);
        for_each_index(b_, k, detail::column_max_fn<T>{r.data(), n, n, rn.data()});
        for_each_index(b_, k, detail::column_max_fn<T>{rhs.data, rhs.ld, n, xn.data()});
        copy_to_host(b_, static_cast<const real_type*>(rn.data()), k, hr.data());
        copy_to_host(b_, static_cast<const real_type*>(xn.data()), k, hx.data());
        bool done = true;
        for (index_t j = 0; j < k; ++j)
          if (!(hr[std::size_t(j)] <= tol * hx[std::size_t(j)])) done = false;
        if (done) {
          iterations_ = it;
          return;
        }
        if (it == opts_.max_iterations) break;
        for_each_index(b_, n, k, detail::convert_fn<T, L>{r.data(), n, w.data(), n});
        lowf_->solve(wv);
        for_each_index(b_, n, k, detail::add_correction_fn<T, L>{rhs.data, rhs.ld, w.data(), n});
      }
      // No convergence: factor A in T (in place) and solve the original rhs.
      iterations_ = -1;
      fall_back();
      for_each_index(b_, n, k, detail::convert_fn<T, T>{bcopy.data(), n, rhs.data, rhs.ld});
      full_->solve(rhs);
    }
  }

  /// @brief Order n.
  index_t size() const { return a_.rows; }
  /// @brief Refinement steps the last solve needed (0: the single-precision
  ///        solve was already accurate; -1: it fell back to the T factorisation).
  int last_iterations() const { return iterations_; }
  /// @brief True once the solver uses the T-precision factorisation (A then
  ///        holds its LU factors).
  bool uses_full_precision() const { return full_.has_value(); }

 private:
  void fall_back() const {
    lowf_.reset();
    low_ = vector_t<Backend, L>();
    full_.emplace(b_, a_, crout_lu{opts_.block_size, opts_.lookahead, opts_.panel_blocks});
  }
  Backend b_;
  matrix_view<T> a_;
  mixed_lu opts_;
  mutable vector_t<Backend, L> low_;
  mutable std::optional<crout_lu::factorization<Backend, L>> lowf_;
  mutable std::optional<crout_lu::factorization<Backend, T>> full_;
  real_type anorm_inf_ = 0;
  mutable int iterations_ = 0;
};

}  // namespace emgpu::dense
