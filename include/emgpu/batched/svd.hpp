/// @file
/// @brief Batched singular value decomposition A = U S V^H (m x n, m >= n) by
///        the QR algorithm (Golub-Kahan-Reinsch: Householder bidiagonalisation,
///        implicit-shift QR sweeps of plane rotations) or by one-sided Jacobi
///        plane rotations, and the thresholded rank CBFM uses.
///
/// Thin U (m x n), V (n x n), singular values in descending order. Both
/// methods are backward stable (sigma within a small multiple of eps ||A||);
/// the QR algorithm needs several times fewer flops, one-sided Jacobi also
/// gets the small singular values of graded matrices to high relative
/// accuracy and parallelises over disjoint column pairs.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <type_traits>

#include "../core/matrix_view.hpp"
#include "detail/launch.hpp"
#include "detail/svd_core.hpp"
#include "detail/svd_gk.hpp"
#include "detail/svd_gk_split.hpp"
#include "detail/svd_regs.hpp"
#include "lu.hpp"
#include "qr.hpp"
#include "workspace.hpp"

namespace emgpu::batched {

/// @brief The algorithm svd() runs.
enum class svd_method {
  /// The faster one for the backend and size as measured (docs/batched.md):
  /// the QR algorithm on the host backends (serial, complex<double> with U
  /// and V: 1.8-3.6x faster than Jacobi at n = 8..128); on CUDA one-sided
  /// Jacobi for m <= 16 (its register path; H100, 100 000 complex<double>
  /// 16 x 16 with U, V: 11.4 ms against 14.4) and the QR algorithm above
  /// (32 x 32: 53 ms against 134; 5 000 x 128: 0.44 s against 2.34).
  automatic,
  /// Golub-Kahan-Reinsch: A = Q_L B Q_R^H (Householder, B real bidiagonal),
  /// implicit-shift QR sweeps on B (Wilkinson shift, zero-diagonal chase),
  /// their rotations accumulated into U and V. Stops (info = 1) after LAPACK's
  /// 6 n^2 inner steps; tol and max_sweeps do not apply.
  qr,
  /// One-sided (Hestenes) Jacobi, controlled by tol and max_sweeps below.
  /// Small singular values of graded matrices to high relative accuracy.
  jacobi
};

/// @brief Algorithm and convergence controls of svd().
struct svd_options {
  /// Which algorithm; see svd_method.
  svd_method method = svd_method::automatic;
  /// Columns p, q count as orthogonal when |a_p^H a_q| <= tol ||a_p|| ||a_q||.
  /// 0 selects sqrt(m) * epsilon of the real type (LAPACK gesvj's default);
  /// must be < 1 (from 1 on every pair counts as orthogonal: no rotation).
  double tol = 0;
  /// Sweeps over all pairs before giving up (info = 1); 0 selects 30 + n/4.
  /// Cyclic Jacobi without preconditioning needs about n/4 sweeps on graded
  /// matrices (measured: n = 100, cond 1e12, complex<double>: 30 sweeps;
  /// n = 128: 32), so LAPACK's fixed 30 leaves no margin there and rounding
  /// differences between backends decide convergence.
  int max_sweeps = 0;
  /// Precondition with a QR factorisation (Drmac-Veselic): A = Q R, the
  /// Jacobi sweeps on R^H (n x n), U = Q J from the accumulated rotations J,
  /// V from the orthogonalised columns. The sweeps then depend far less on
  /// the conditioning (serial, complex<double> Q1 S Q2^H with cond 1e12: 8
  /// sweeps instead of 19-20 at n = 32, 9 instead of 25-27 at n = 64; random
  /// matrices 8-9 instead of 9-10), and a tall matrix's sweeps rotate columns
  /// of n entries instead of m: worth it for graded matrices and m >> n
  /// (H100, 100 000 row-graded 32 x 32: 1.66x faster; random square ones
  /// 0.62-0.93x at n <= 32: docs/batched.md). Costs a QR factorisation, Q
  /// applied to U, and one (sigma or V only) or two (U wanted) n x n scratch
  /// matrices per matrix in the backend's memory.
  bool qr_precondition = false;
  /// Scratch memory to keep between calls (see workspace.hpp), or nullptr
  /// to allocate and free it in every call. Only the QR method on CUDA
  /// (the split pipeline, m > 16 under svd_method::automatic) takes it: for
  /// its rotation logs, about 60 KB per 32 x 32 complex<double> matrix. On
  /// an H200 allocating and freeing the 5.9 GB of 100 000 such matrices cost
  /// 4.6 ms of the SVD's 51.
  workspace* work = nullptr;
  /// The pointer-array svd only: where its packed copies of A, U and V live
  /// between calls (a second workspace: both are in use at once), or
  /// nullptr to allocate and free them in every call.
  workspace* copies = nullptr;
};

namespace detail {
/// X_k = R_k^H (n x n, ld n, lower triangular) from qr_factor's output.
template <class T>
struct svd_rh_op {
  const T* qr;
  index_t ld, stride;
  T* x;
  index_t n;
  EMGPU_HD void operator()(index_t r, index_t k) const {
    const index_t i = r % n, j = r / n;
    x[k * n * n + r] = i >= j ? conj_any(qr[k * stride + j + i * ld]) : T(0);
  }
};
/// U_k = [J_k; 0] (m x n) from J_k (n x n, ld n).
template <class T>
struct svd_pad_op {
  const T* jm;
  index_t n;
  T* u;
  index_t m, ld, stride;
  EMGPU_HD void operator()(index_t r, index_t k) const {
    const index_t i = r % m, j = r / m;
    u[k * stride + i + j * ld] = i < n ? jm[k * n * n + i + j * n] : T(0);
  }
};

/// Bytes of packed copies (A, and U, V where wanted) that the pointer-array
/// svd works through at a time: a third of the device's free memory on
/// CUDA (the QR method's workspace takes from the rest), 2 GiB on the host;
/// at least what `copies` already holds. Why large: on CUDA the split
/// pipeline's chain kernels take as long as their longest chain, so few
/// large calls beat many small ones (svd_gk_split.hpp).
template <class Backend>
std::size_t svd_array_budget(const Backend& b, const workspace* copies) {
  std::size_t budget = std::size_t(2) << 30;
#if defined(__CUDACC__)
  if constexpr (std::is_same_v<Backend, backend::cuda>) {
    emgpu::detail::device_guard g(b.device);
    std::size_t free = 0, total = 0;
    EMGPU_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    budget = free / 3;
  }
#endif
  (void)b;
  const std::size_t held = copies != nullptr ? copies->capacity() : 0;
  return budget > held ? budget : held;
}

/// svd_method::automatic on CUDA: one-sided Jacobi up to this many rows,
/// the QR algorithm above (the measurements in svd_method::automatic).
inline constexpr index_t svd_jacobi_max_m_cuda = 16;

/// svd() after validation and QR preconditioning: picks the method and
/// launches it. flip_u: the QR method moves the sign of a negative d_j into
/// U's column rather than V's (the preconditioned path asks for it, so that
/// its V, the inner U, does not depend on whether U is wanted).
template <class Backend, class T>
void svd_run(const Backend& b, strided_batch_view<T> a, real_type_t<T>* sigma, strided_batch_view<T> u,
             strided_batch_view<T> v, int* info, emgpu::batched::svd_method method, real_type_t<T> tol, int sweeps,
             bool flip_u, [[maybe_unused]] workspace* work) {
  const index_t m = a.rows, n = a.cols, count = a.count;
  const bool want_u = u.data != nullptr, want_v = v.data != nullptr;
  using L = strided_loc<T>;
  bool jacobi = method == emgpu::batched::svd_method::jacobi;
#if defined(__CUDACC__)
  if constexpr (std::is_same_v<Backend, backend::cuda>)
    if (method == emgpu::batched::svd_method::automatic && m <= svd_jacobi_max_m_cuda) jacobi = true;
#endif
  if (!jacobi) {
#if defined(__CUDACC__)
    // On CUDA the iteration on B runs one thread per matrix, its rotations
    // are accumulated on real rows (U_B, V_B) and U, V formed as products
    // with the reflectors (detail/svd_gk_split.hpp).
    if constexpr (std::is_same_v<Backend, backend::cuda>) {
      if (n >= 2 && svd_gk_split_run(b, a, sigma, u, v, info, flip_u, 0, 0, work)) return;
    }
#endif
    const svd_gk_op<T, L, L, L> op{{a.data, a.stride}, m, n, a.ld, sigma, {u.data, u.stride}, u.ld, want_u,
                                   {v.data, v.stride}, v.ld, want_v, flip_u, info, svd_gk_team(m, n)};
    launch(b, op, count, "emgpu::batched::svd");
    return;
  }
  int group = 1, team = 2;
  svd_shape(m, n, group, team);
#if defined(__CUDACC__)
  // m <= 16: one column per lane in registers (detail/svd_regs.hpp), the
  // same sweeps as the generic path.
  if constexpr (std::is_same_v<Backend, backend::cuda>) {
    if (n >= 1 && m <= svd_regs_max_m) {
      svd_regs_launch<T>(b, L{a.data, a.stride}, m, n, a.ld, sigma, L{u.data, u.stride}, u.ld, want_u,
                         L{v.data, v.stride}, v.ld, want_v, info, tol, sweeps, count, "emgpu::batched::svd");
      return;
    }
  }
#endif
  const svd_op<T, L, L, L> op{{a.data, a.stride}, m, n, a.ld, sigma, {u.data, u.stride}, u.ld, want_u,
                              {v.data, v.stride}, v.ld, want_v, info, tol, sweeps, group, team};
  launch(b, op, count, "emgpu::batched::svd");
}
}  // namespace detail

namespace detail {
/// Argument checks of svd (and of its multi_gpu overload).
/// @return false when there is nothing to do.
template <class T>
bool svd_args(const strided_batch_view<T>& a, const real_type_t<T>* sigma, const strided_batch_view<T>& u,
              const strided_batch_view<T>& v, const int* info, const svd_options& opt) {
  check_tall(a, "svd");
  const index_t m = a.rows, n = a.cols, count = a.count;
  if (u.data != nullptr) {
    check_batch(u, "svd", "u");
    detail_require(u.rows == m && u.cols == n && u.count == count,
                   "emgpu::batched::svd: u must be m x n per matrix, same count");
    detail_require(static_cast<void*>(u.data) != static_cast<void*>(a.data), "emgpu::batched::svd: u must not alias a");
  }
  if (v.data != nullptr) {
    check_batch(v, "svd", "v");
    detail_require(v.rows == n && v.cols == n && v.count == count,
                   "emgpu::batched::svd: v must be n x n per matrix, same count");
    detail_require(static_cast<void*>(v.data) != static_cast<void*>(a.data) || n == 0,
                   "emgpu::batched::svd: v must not alias a");
    detail_require(static_cast<void*>(v.data) != static_cast<void*>(u.data) || n == 0,
                   "emgpu::batched::svd: v must not alias u");
  }
  detail_require(opt.tol >= 0 && opt.tol < 1 && opt.max_sweeps >= 0,
                 "emgpu::batched::svd: tol outside [0, 1) or max_sweeps < 0");
  if (count == 0) return false;
  check_ptr(info, true, "svd", "info");
  check_ptr(sigma, n > 0, "svd", "sigma");
  return true;
}
}  // namespace detail

/// @brief A_k = U_k diag(sigma_k) V_k^H for every matrix of the batch.
/// @tparam Backend serial, openmp or cuda.
/// @tparam T float, double, complex<float> or complex<double>.
/// @param a     count m x n matrices, m >= n; used as workspace (contents on
///              return unspecified).
/// @param sigma count x n singular values, matrix k's at sigma + k*n, descending.
/// @param u     m x n per matrix, or u.data == nullptr when not wanted. Columns
///              for exactly zero singular values are completed to an
///              orthonormal set. Must not alias a.
/// @param v     n x n per matrix, or v.data == nullptr when not wanted. Must
///              not alias a or u.
/// @param info  count entries: 0, or 1 when the iteration did not converge
///              (Jacobi: within max_sweeps sweeps; QR: within 6 n^2 steps, or
///              the matrix holds NaN / Inf); sigma, U, V are then the last
///              iterate's.
/// @throws invalid_argument for negative sizes, m < n, ld too small,
///         mismatched counts, null sigma/info, aliasing, tol outside [0, 1) (NaN
///         included), max_sweeps < 0.
/// @throws device_error when a CUDA call fails.
/// On CUDA the call is ordered on b.stream; with the QR method, m <= 32, U or
/// V wanted and 32 768 matrices or more, its kernels run on two streams of
/// its own, forked from b.stream and joined back into it (docs/batched.md).
template <class Backend, batched_scalar T>
void svd(const Backend& b, strided_batch_view<T> a, real_type_t<T>* sigma, strided_batch_view<T> u,
         strided_batch_view<T> v, int* info, svd_options opt = {}) {
  using R = real_type_t<T>;
  if (!detail::svd_args(a, sigma, u, v, info, opt)) return;
  const index_t m = a.rows, n = a.cols, count = a.count;
  const bool want_u = u.data != nullptr, want_v = v.data != nullptr;
  const R tol = opt.tol > 0 ? R(opt.tol)
                            : R(std::sqrt(double(m > 1 ? m : 1))) * std::numeric_limits<R>::epsilon();
  const int sweeps = opt.max_sweeps > 0 ? opt.max_sweeps : int(30 + n / 4);
  if (opt.qr_precondition && n >= 2) {
    // A = Q R; R^H = X, X J = W (one-sided Jacobi), W = U_x S: R = J S U_x^H,
    // so A = (Q J) S U_x^H: U = Q [J; 0], V = U_x (completed for zero sigma
    // by the inner call, as U is without preconditioning).
    qr_factor(b, a);
    auto x = make_vector<T>(b, count * n * n);
    for_each_index(b, n * n, count, detail::svd_rh_op<T>{a.data, a.ld, a.stride, x.data(), n});
    // The inner call keeps the tolerance for columns of m entries.
    const strided_batch_view<T> xv{x.data(), n, n, n, n * n, count};
    const strided_batch_view<T> none{nullptr, n, n, n, 0, count};
    if (!want_u) {
      detail::svd_run(b, xv, sigma, want_v ? v : none, none, info, opt.method, tol, sweeps, true, opt.work);
      return;
    }
    auto jm = make_vector<T>(b, count * n * n);
    detail::svd_run(b, xv, sigma, want_v ? v : none, strided_batch_view<T>{jm.data(), n, n, n, n * n, count}, info,
                    opt.method, tol, sweeps, true, opt.work);
    for_each_index(b, m * n, count, detail::svd_pad_op<T>{jm.data(), n, u.data, m, u.ld, u.stride});
    apply_q(b, strided_batch_view<const T>{a.data, m, n, a.ld, a.stride, count}, u);
    return;
  }
  detail::svd_run(b, a, sigma, u, v, info, opt.method, tol, sweeps, false, opt.work);
}

/// @brief Pointer-array form of svd: A_k at a_array[k] (m x n, m >= n,
///        leading dimension lda), U_k at u_array[k] (m x n, ldu) and V_k at
///        v_array[k] (n x n, ldv), either array null when not wanted;
///        sigma and info as in the strided form; all in backend memory.
/// Runs the strided svd on packed copies (detail::svd_array_budget bytes of
/// them at a time; opt.copies keeps them between calls): A_k gathered in
/// (a_array's matrices are left as they are), U_k and V_k scattered out.
/// Why: the SVD's kernels stage whole matrices and run for tens of times a
/// copy of the batch (docs/batched.md), so every kernel stays the strided
/// one at the cost of the copies. Results are bit for bit those of the
/// strided form on the same matrices.
/// @throws invalid_argument as the strided form (u_array must not be
///         a_array), or opt.copies the same workspace as opt.work;
///         device_error when the copies do not fit device memory.
template <class Backend, batched_scalar T>
void svd(const Backend& b, T* const* a_array, index_t m, index_t n, index_t lda, index_t count,
         real_type_t<T>* sigma, T* const* u_array, index_t ldu, T* const* v_array, index_t ldv, int* info,
         svd_options opt = {}) {
  using detail::array_loc;
  using detail::strided_loc;
  const strided_batch_view<T> none{};
  const auto av = detail::array_shape(a_array, m, n, lda, count);
  const auto us = u_array ? detail::array_shape(u_array, m, n, ldu, count) : none;
  const auto vs = v_array ? detail::array_shape(v_array, n, n, ldv, count) : none;
  if (!detail::svd_args(av, sigma, us, vs, info, opt)) return;
  detail::detail_require(opt.copies == nullptr || opt.copies != opt.work,
                         "emgpu::batched::svd: opt.copies must be another workspace than opt.work");
  // Each array rounded to 256 bytes, so that every copy starts aligned.
  const auto round = [](std::size_t x) { return (x + 255) & ~std::size_t(255); };
  const std::size_t per = sizeof(T) * std::size_t(m * n + (u_array ? m * n : 0) + (v_array ? n * n : 0));
  const index_t fit = index_t(detail::svd_array_budget(b, opt.copies) / (per > 0 ? per : 1)) - 1;
  const index_t chunk = fit < 1 ? 1 : fit < count ? fit : count;
  const std::size_t ba = round(sizeof(T) * std::size_t(chunk * m * n)), bu = u_array ? ba : 0,
                    bv = v_array ? round(sizeof(T) * std::size_t(chunk * n * n)) : 0;
  vector_t<Backend, std::byte> own;
  std::byte* blk = nullptr;
  if (opt.copies != nullptr) {
    blk = opt.copies->reserve(b, ba + bu + bv);
  } else {
    own = make_vector<std::byte>(b, index_t(ba + bu + bv));
    blk = own.data();
  }
  T* const ta = reinterpret_cast<T*>(blk);
  T* const tu = reinterpret_cast<T*>(blk + ba);
  T* const tv = reinterpret_cast<T*>(blk + ba + bu);
  // Packed leading dimensions of at least 1, as every view must have (the
  // strided form accepts m = n = 0).
  const index_t pm = m > 0 ? m : 1, pn = n > 0 ? n : 1;
  for (index_t k0 = 0; k0 < count; k0 += chunk) {
    const index_t cc = count - k0 < chunk ? count - k0 : chunk;
    for_each_index(b, m * n, cc,
                   detail::copy_matrix_op<T, array_loc<T>, strided_loc<T>>{{a_array + k0}, lda, {ta, m * n}, m, m});
    svd(b, strided_batch_view<T>{ta, m, n, pm, m * n, cc}, sigma + k0 * n,
        u_array ? strided_batch_view<T>{tu, m, n, pm, m * n, cc} : none,
        v_array ? strided_batch_view<T>{tv, n, n, pn, n * n, cc} : none, info + k0, opt);
    if (u_array)
      for_each_index(b, m * n, cc,
                     detail::copy_matrix_op<T, strided_loc<T>, array_loc<T>>{{tu, m * n}, m, {u_array + k0}, ldu, m});
    if (v_array)
      for_each_index(b, n * n, cc,
                     detail::copy_matrix_op<T, strided_loc<T>, array_loc<T>>{{tv, n * n}, n, {v_array + k0}, ldv, n});
  }
}

/// @brief rank[k] = number of sigma[k*n + j] > tau * max_j sigma[k*n + j].
/// The thresholded rank that selects characteristic basis functions (CBFM).
/// @tparam R float or double.
/// @throws invalid_argument for negative sizes, tau < 0, null pointers.
template <class Backend, class R>
  requires std::is_floating_point_v<R>
void rank_above(const Backend& b, const R* sigma, index_t n, index_t count, R tau, index_t* rank) {
  detail::detail_require(n >= 0 && count >= 0, "emgpu::batched::rank_above: negative size");
  detail::detail_require(tau >= 0, "emgpu::batched::rank_above: tau < 0");
  if (count == 0) return;
  detail::check_ptr(sigma, n > 0, "rank_above", "sigma");
  detail::check_ptr(rank, true, "rank_above", "rank");
  for_each_index(b, count, detail::rank_op<R>{sigma, n, tau, rank});
}

}  // namespace emgpu::batched
