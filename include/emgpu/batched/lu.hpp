/// @file
/// @brief Batched LU with partial pivoting (P A = L U), solves and inverses
///        for many small dense matrices on any backend.
///
/// Each matrix is handled by one team (a host thread, a CUDA warp tile or a
/// CUDA block) running the same EMGPU_HD elimination, see detail/lu_core.hpp.
/// All pointers refer to the backend's memory (device memory for cuda).
/// Per-matrix failures are reported in `info`, LAPACK style; exceptions are
/// reserved for bad arguments and device failures.
#pragma once

#include <string>
#include <type_traits>

#include "../core/matrix_view.hpp"
#include "detail/launch.hpp"
#include "detail/lu_core.hpp"
#include "detail/lu_blocked.hpp"
#include "detail/lu_mma.hpp"
#include "detail/lu_regs.hpp"

namespace emgpu::batched {

namespace detail {
/// Argument checks of the strided lu_factor, lu_solve and inverse (also
/// those of their multi_gpu overloads, before anything is copied).
/// @return false when there is nothing to do.
/// @throws invalid_argument as the routines document.
template <class T>
bool lu_factor_args(const strided_batch_view<T>& a, const index_t* ipiv, const int* info) {
  check_square(a, "lu_factor");
  if (a.count == 0) return false;
  check_ptr(ipiv, a.rows > 0, "lu_factor", "ipiv");
  check_ptr(info, true, "lu_factor", "info");
  return true;
}
template <class TL, class T>
bool lu_solve_args(const strided_batch_view<TL>& lu, const index_t* ipiv, const strided_batch_view<T>& rhs) {
  check_square(lu, "lu_solve");
  check_batch(rhs, "lu_solve", "rhs");
  detail_require(rhs.rows == lu.rows && rhs.count == lu.count,
                 "emgpu::batched::lu_solve: rhs rows or count differ from lu");
  if (lu.count == 0 || rhs.cols == 0 || lu.rows == 0) return false;
  check_ptr(ipiv, true, "lu_solve", "ipiv");
  detail_require(static_cast<const void*>(rhs.data) != static_cast<const void*>(lu.data),
                 "emgpu::batched::lu_solve: rhs must not alias lu");
  return true;
}
template <class TL, class T>
bool inverse_args(const strided_batch_view<TL>& lu, const index_t* ipiv, const strided_batch_view<T>& inv) {
  check_square(lu, "inverse");
  check_square(inv, "inverse");
  detail_require(inv.rows == lu.rows && inv.count == lu.count,
                 "emgpu::batched::inverse: inv shape or count differs from lu");
  if (lu.count == 0 || lu.rows == 0) return false;
  check_ptr(ipiv, true, "inverse", "ipiv");
  detail_require(static_cast<const void*>(inv.data) != static_cast<const void*>(lu.data),
                 "emgpu::batched::inverse: inv must not alias lu");
  return true;
}
}  // namespace detail

/// @brief Factors every matrix of a strided batch in place: P_k A_k = L_k U_k.
/// @tparam Backend serial, openmp or cuda (a backend tag).
/// @tparam T float, double, complex<float> or complex<double>.
/// @param a      count square n x n matrices; on return L (unit diagonal,
///               not stored) below and U on and above the diagonal.
/// @param ipiv   count x n pivots, matrix k's at ipiv + k*n: at step j row j
///               was swapped with row ipiv[k*n + j] (0-based; LAPACK's minus one).
/// @param info   count entries: 0, or j > 0 when U(j-1, j-1) is exactly zero
///               (first such column, 1-based). The factorisation is completed
///               regardless, and other matrices are unaffected.
/// @throws invalid_argument for negative sizes, ld < n, non-square or
///         overlapping matrices, null pointers, a batch too large to address.
/// @throws device_error when a CUDA call fails.
template <class Backend, batched_scalar T>
void lu_factor(const Backend& b, strided_batch_view<T> a, index_t* ipiv, int* info) {
  if (!detail::lu_factor_args(a, ipiv, info)) return;
#if defined(__CUDACC__)
  // double and complex<double> at n = 17..128: panels plus FP64 tensor-core
  // updates (detail/lu_mma.hpp), the matrix in shared memory up to n = 64
  // (complex<double>) or 88 (double), a window of its columns above.
  // Otherwise n <= 64:
  // register-resident kernels (detail/lu_regs.hpp); n = 65..128: blocked
  // elimination in shared memory (detail/lu_blocked.hpp). Same pivots and
  // info as the team path, factors equal to rounding.
  if constexpr (std::is_same_v<Backend, backend::cuda>) {
    if constexpr (detail::lu_mma_type<T>) {
      if (a.rows >= detail::lu_mma_min_n && a.rows <= detail::lu_mma_max_n &&
          detail::lu_mma_launch<T>(b, detail::strided_loc<T>{a.data, a.stride}, a.rows, a.ld, ipiv, info,
                                   a.count, "emgpu::batched::lu_factor"))
        return;
    }
    if (a.rows >= 1 && a.rows <= detail::lu_regs_max_n) {
      detail::lu_regs_launch<T>(b, detail::strided_loc<T>{a.data, a.stride}, a.rows, a.ld, ipiv, info,
                                a.count, "emgpu::batched::lu_factor");
      return;
    }
    if (a.rows >= detail::lu_regs64_min_n && a.rows <= detail::lu_regs64_max_n) {
      detail::lu_regs64_launch<T>(b, detail::strided_loc<T>{a.data, a.stride}, a.rows, a.ld, ipiv, info,
                                  a.count, "emgpu::batched::lu_factor");
      return;
    }
    if (a.rows >= detail::lu_blk_min_n && a.rows <= detail::lu_blk_max_n) {
      detail::lu_blk_launch<T>(b, detail::strided_loc<T>{a.data, a.stride}, a.rows, a.ld, ipiv, info,
                               a.count, "emgpu::batched::lu_factor");
      return;
    }
  }
#endif
  const detail::lu_factor_op<T, detail::strided_loc<T>> op{{a.data, a.stride}, a.rows, a.ld, ipiv,
                                                          info};
  detail::launch(b, op, a.count, "emgpu::batched::lu_factor");
}

/// @brief Pointer-array form of lu_factor: matrix k at a_array[k] (the array
///        itself in backend memory), each n x n with leading dimension lda.
/// @throws invalid_argument as the strided form; a_array entries are not
///         inspected (they may live on the device) and must be valid.
template <class Backend, batched_scalar T>
void lu_factor(const Backend& b, T* const* a_array, index_t n, index_t lda, index_t count,
               index_t* ipiv, int* info) {
  if (!detail::lu_factor_args(detail::array_shape(a_array, n, n, lda, count), ipiv, info)) return;
#if defined(__CUDACC__)
  if constexpr (std::is_same_v<Backend, backend::cuda>) {
    if constexpr (detail::lu_mma_type<T>) {
      if (n >= detail::lu_mma_min_n && n <= detail::lu_mma_max_n &&
          detail::lu_mma_launch<T>(b, detail::array_loc<T>{a_array}, n, lda, ipiv, info, count,
                                   "emgpu::batched::lu_factor"))
        return;
    }
    if (n >= 1 && n <= detail::lu_regs_max_n) {
      detail::lu_regs_launch<T>(b, detail::array_loc<T>{a_array}, n, lda, ipiv, info, count,
                                "emgpu::batched::lu_factor");
      return;
    }
    if (n >= detail::lu_regs64_min_n && n <= detail::lu_regs64_max_n) {
      detail::lu_regs64_launch<T>(b, detail::array_loc<T>{a_array}, n, lda, ipiv, info, count,
                                  "emgpu::batched::lu_factor");
      return;
    }
    if (n >= detail::lu_blk_min_n && n <= detail::lu_blk_max_n) {
      detail::lu_blk_launch<T>(b, detail::array_loc<T>{a_array}, n, lda, ipiv, info, count,
                               "emgpu::batched::lu_factor");
      return;
    }
  }
#endif
  const detail::lu_factor_op<T, detail::array_loc<T>> op{{a_array}, n, lda, ipiv, info};
  detail::launch(b, op, count, "emgpu::batched::lu_factor");
}

/// @brief Solves A_k X_k = B_k with the factors of lu_factor; B_k (n x nrhs,
///        one or many right-hand sides) is overwritten by X_k.
/// Like LAPACK getrs it does not check for zero pivots: use the factor's info.
/// @tparam TL T or const T (the factors are only read).
/// @throws invalid_argument for mismatched shapes or counts, null pointers,
///         rhs aliasing lu.
/// @throws device_error when a CUDA call fails.
template <class Backend, class TL, batched_scalar T>
  requires std::is_same_v<std::remove_const_t<TL>, T>
void lu_solve(const Backend& b, strided_batch_view<TL> lu, const index_t* ipiv,
              strided_batch_view<T> rhs) {
  if (!detail::lu_solve_args(lu, ipiv, rhs)) return;
  using L = detail::strided_loc<const T>;
  const detail::lu_solve_op<T, L, detail::strided_loc<T>> op{
      {lu.data, lu.stride}, lu.rows, lu.ld, ipiv, {rhs.data, rhs.stride}, rhs.cols, rhs.ld, false};
  detail::launch(b, op, lu.count, "emgpu::batched::lu_solve");
}

/// @brief Pointer-array form of lu_solve.
template <class Backend, batched_scalar T>
void lu_solve(const Backend& b, const T* const* lu_array, index_t n, index_t ldlu,
              const index_t* ipiv, T* const* rhs_array, index_t nrhs, index_t ldb, index_t count) {
  if (!detail::lu_solve_args(detail::array_shape(lu_array, n, n, ldlu, count), ipiv,
                            detail::array_shape(rhs_array, n, nrhs, ldb, count)))
    return;
  const detail::lu_solve_op<T, detail::array_loc<const T>, detail::array_loc<T>> op{
      {lu_array}, n, ldlu, ipiv, {rhs_array}, nrhs, ldb, false};
  detail::launch(b, op, count, "emgpu::batched::lu_solve");
}

/// @brief inv_k = A_k^{-1} from the factors of lu_factor (out of place).
/// @throws invalid_argument for mismatched shapes or counts, null pointers,
///         or inv aliasing lu.
/// @throws device_error when a CUDA call fails.
template <class Backend, class TL, batched_scalar T>
  requires std::is_same_v<std::remove_const_t<TL>, T>
void inverse(const Backend& b, strided_batch_view<TL> lu, const index_t* ipiv,
             strided_batch_view<T> inv) {
  if (!detail::inverse_args(lu, ipiv, inv)) return;
  using L = detail::strided_loc<const T>;
  const detail::lu_solve_op<T, L, detail::strided_loc<T>> op{
      {lu.data, lu.stride}, lu.rows, lu.ld, ipiv, {inv.data, inv.stride}, inv.cols, inv.ld, true};
  detail::launch(b, op, lu.count, "emgpu::batched::inverse");
}

/// @brief Pointer-array form of inverse: inv_array[k] := A_k^{-1} from the
///        factors at lu_array[k] (n x n; the arrays in backend memory).
/// @throws invalid_argument as the strided form (inv_array the same array
///         as lu_array included); an inverse must not overlap any factors
///         (not checked: the arrays may live on the device).
template <class Backend, batched_scalar T>
void inverse(const Backend& b, const T* const* lu_array, index_t n, index_t ldlu, const index_t* ipiv,
             T* const* inv_array, index_t ldinv, index_t count) {
  if (!detail::inverse_args(detail::array_shape(lu_array, n, n, ldlu, count), ipiv,
                            detail::array_shape(inv_array, n, n, ldinv, count)))
    return;
  const detail::lu_solve_op<T, detail::array_loc<const T>, detail::array_loc<T>> op{
      {lu_array}, n, ldlu, ipiv, {inv_array}, n, ldinv, true};
  detail::launch(b, op, count, "emgpu::batched::inverse");
}

}  // namespace emgpu::batched
