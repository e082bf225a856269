/// @file
/// @brief Batched QR by Givens rotations (m x n, m >= n): factor, apply Q^H or
///        Q, form the thin Q, least squares; any backend.
///
/// After qr_factor, R is on and above the diagonal and each entry below holds
/// one scalar encoding the rotation that annihilated it (the LAPACK habit of
/// keeping Q's factors below R), so no workspace is needed: apply_qh, apply_q
/// and form_q read the rotations from there. The encoding is described in
/// detail/qr_core.hpp. All pointers refer to the backend's memory.
#pragma once

#include <string>
#include <type_traits>

#include "../core/matrix_view.hpp"
#include "detail/launch.hpp"
#include "detail/qr_core.hpp"
#include "detail/qr_cyc.hpp"
#include "detail/qr_regs.hpp"
#include "detail/qr_rsk.hpp"
#include "detail/qr_split.hpp"
#include "detail/qr_warp.hpp"
#include "detail/qr_window.hpp"
#include "lu.hpp"

namespace emgpu::batched {

/// @brief A_k = Q_k R_k in place for every matrix of the batch.
/// @tparam Backend serial, openmp or cuda.
/// @tparam T float, double, complex<float> or complex<double>.
/// @param a count matrices m x n, m >= n; on return R (upper triangle) and
///          the encoded rotations (strictly lower part).
/// @throws invalid_argument for negative sizes, m < n, ld < m, overlapping
///         matrices, a null pointer, a batch too large to address.
/// @throws device_error when a CUDA call fails.
template <class Backend, batched_scalar T>
void qr_factor(const Backend& b, strided_batch_view<T> a) {
  detail::check_tall(a, "qr_factor");
  if (a.count == 0 || a.cols == 0) return;
#if defined(__CUDACC__)
  if constexpr (std::is_same_v<Backend, backend::cuda>) {
    // 8 x 8 and 16 x 16: whole columns in registers, several per lane (detail/qr_cyc.hpp)
    if (detail::qr_cyc_factor<T>(b, detail::strided_loc<T>{a.data, a.stride}, a.rows, a.cols, a.ld, a.count,
                                 "emgpu::batched::qr_factor"))
      return;
    // near-square shapes where columns in registers measured faster (detail/qr_rsk.hpp)
    if (detail::qr_rsk_factor<T>(b, detail::strided_loc<T>{a.data, a.stride}, a.rows, a.cols, a.ld, a.count,
                                 "emgpu::batched::qr_factor"))
      return;
    // 9..32 rows (complex<double>: 6..32): lanes own columns, matrix in shared memory (detail/qr_warp.hpp)
    if (detail::qr_warp_factor<T>(b, detail::strided_loc<T>{a.data, a.stride}, a.rows, a.cols, a.ld, a.count,
                                  "emgpu::batched::qr_factor"))
      return;
    if (a.rows <= detail::qr_regs_max)  // up to 8 rows (complex<double>: 5): register-resident fast path
      return detail::qr_factor_regs<T>(b, detail::strided_loc<T>{a.data, a.stride}, a.rows, a.cols,
                                       a.ld, a.count, "emgpu::batched::qr_factor");
    // complex<double> 64 x 33..64: windowed kernel, register replay, warp kernel (detail/qr_split.hpp)
    if (detail::qr_split_factor<T>(b, detail::strided_loc<T>{a.data, a.stride}, a.rows, a.cols, a.ld, a.count,
                                   "emgpu::batched::qr_factor"))
      return;
    // 40..128 rows (double, complex<float>: 64..128): a window of columns in shared memory (detail/qr_window.hpp)
    if (detail::qr_win_factor<T>(b, detail::strided_loc<T>{a.data, a.stride}, a.rows, a.cols, a.ld, a.count,
                                 "emgpu::batched::qr_factor"))
      return;
  }
#endif
  const detail::qr_factor_op<T, detail::strided_loc<T>> op{{a.data, a.stride}, a.rows, a.cols, a.ld};
  detail::launch(b, op, a.count, "emgpu::batched::qr_factor");
}

/// @brief Pointer-array form of qr_factor.
template <class Backend, batched_scalar T>
void qr_factor(const Backend& b, T* const* a_array, index_t m, index_t n, index_t lda,
               index_t count) {
  detail::check_tall(detail::array_shape(a_array, m, n, lda, count), "qr_factor");
  if (count == 0 || n == 0) return;
#if defined(__CUDACC__)
  if constexpr (std::is_same_v<Backend, backend::cuda>) {
    if (detail::qr_cyc_factor<T>(b, detail::array_loc<T>{a_array}, m, n, lda, count, "emgpu::batched::qr_factor"))
      return;
    if (detail::qr_rsk_factor<T>(b, detail::array_loc<T>{a_array}, m, n, lda, count, "emgpu::batched::qr_factor"))
      return;
    if (detail::qr_warp_factor<T>(b, detail::array_loc<T>{a_array}, m, n, lda, count, "emgpu::batched::qr_factor"))
      return;
    if (m <= detail::qr_regs_max)  // register-resident fast path
      return detail::qr_factor_regs<T>(b, detail::array_loc<T>{a_array}, m, n, lda, count,
                                       "emgpu::batched::qr_factor");
    if (detail::qr_split_factor<T>(b, detail::array_loc<T>{a_array}, m, n, lda, count, "emgpu::batched::qr_factor"))
      return;
    if (detail::qr_win_factor<T>(b, detail::array_loc<T>{a_array}, m, n, lda, count, "emgpu::batched::qr_factor"))
      return;
  }
#endif
  const detail::qr_factor_op<T, detail::array_loc<T>> op{{a_array}, m, n, lda};
  detail::launch(b, op, count, "emgpu::batched::qr_factor");
}

namespace detail {
/// Argument checks of apply_qh, apply_q and form_q (and of their multi_gpu
/// overloads). @return false when there is nothing to do.
template <class TF, class T>
bool qr_apply_args(const strided_batch_view<TF>& qr, const strided_batch_view<T>& c, bool form, const char* what) {
  check_tall(qr, what);
  check_batch(c, what, "c");
  detail_require(c.count == qr.count, std::string("emgpu::batched::") + what + ": counts differ");
  detail_require(c.rows == qr.rows, std::string("emgpu::batched::") + what + ": c.rows != m");
  if (form)
    detail_require(c.cols <= qr.rows, std::string("emgpu::batched::") + what + ": more columns than m");
  detail_require(static_cast<const void*>(c.data) != static_cast<const void*>(qr.data) || qr.count == 0,
                 std::string("emgpu::batched::") + what + ": c must not alias the factors");
  return !(qr.count == 0 || c.cols == 0 || qr.rows == 0);
}
template <class Backend, class TF, class T>
void qr_apply(const Backend& b, strided_batch_view<TF> qr, strided_batch_view<T> c, bool adjoint,
              bool form, const char* what) {
  if (!qr_apply_args(qr, c, form, what)) return;
  const qr_apply_op<T, strided_loc<const T>, strided_loc<T>> op{
      {qr.data, qr.stride}, qr.rows, qr.cols, qr.ld, {c.data, c.stride}, c.cols, c.ld, adjoint, form};
  launch(b, op, qr.count, what);
}
}  // namespace detail

/// @brief C_k := Q_k^H C_k (C_k m x nrhs) with the factors of qr_factor.
/// @tparam TF T or const T.
/// @throws invalid_argument for mismatched shapes or counts, null pointers,
///         rhs aliasing a.
/// @throws device_error when a CUDA call fails.
template <class Backend, class TF, batched_scalar T>
  requires std::is_same_v<std::remove_const_t<TF>, T>
void apply_qh(const Backend& b, strided_batch_view<TF> qr, strided_batch_view<T> c) {
  detail::qr_apply(b, qr, c, true, false, "apply_qh");
}

/// @brief C_k := Q_k C_k (the full m x m Q applied to C_k, m x nrhs).
/// @throws invalid_argument for mismatched shapes or counts, null pointers.
/// @throws device_error when a CUDA call fails.
template <class Backend, class TF, batched_scalar T>
  requires std::is_same_v<std::remove_const_t<TF>, T>
void apply_q(const Backend& b, strided_batch_view<TF> qr, strided_batch_view<T> c) {
  detail::qr_apply(b, qr, c, false, false, "apply_q");
}

/// @brief Forms the leading q.cols columns of Q_k (q.cols = n gives the thin
///        m x n Q with A = Q R).
/// @throws invalid_argument for mismatched shapes or counts, null pointers.
/// @throws device_error when a CUDA call fails.
template <class Backend, class TF, batched_scalar T>
  requires std::is_same_v<std::remove_const_t<TF>, T>
void form_q(const Backend& b, strided_batch_view<TF> qr, strided_batch_view<T> q) {
  detail::qr_apply(b, qr, q, false, true, "form_q");
}

namespace detail {
template <class Backend, class T>
void qr_apply_array(const Backend& b, const T* const* qr_array, index_t m, index_t n, index_t ldqr, T* const* c_array,
                    index_t ccols, index_t ldc, index_t count, bool adjoint, bool form, const char* what) {
  if (!qr_apply_args(array_shape(qr_array, m, n, ldqr, count), array_shape(c_array, m, ccols, ldc, count), form,
                     what))
    return;
  const qr_apply_op<T, array_loc<const T>, array_loc<T>> op{{qr_array}, m, n, ldqr, {c_array}, ccols, ldc,
                                                            adjoint, form};
  launch(b, op, count, what);
}
}  // namespace detail

/// @brief Pointer-array form of apply_qh: C_k := Q_k^H C_k with the factors
///        at qr_array[k] (m x n) and C_k at c_array[k] (m x nrhs); the
///        arrays in backend memory.
/// @throws invalid_argument as the strided form (c_array must not be qr_array).
template <class Backend, batched_scalar T>
void apply_qh(const Backend& b, const T* const* qr_array, index_t m, index_t n, index_t ldqr, T* const* c_array,
              index_t nrhs, index_t ldc, index_t count) {
  detail::qr_apply_array(b, qr_array, m, n, ldqr, c_array, nrhs, ldc, count, true, false, "apply_qh");
}

/// @brief Pointer-array form of apply_q (C_k := Q_k C_k).
/// @throws invalid_argument as the strided form.
template <class Backend, batched_scalar T>
void apply_q(const Backend& b, const T* const* qr_array, index_t m, index_t n, index_t ldqr, T* const* c_array,
             index_t nrhs, index_t ldc, index_t count) {
  detail::qr_apply_array(b, qr_array, m, n, ldqr, c_array, nrhs, ldc, count, false, false, "apply_q");
}

/// @brief Pointer-array form of form_q: the leading qcols columns of Q_k
///        into q_array[k] (m x qcols, qcols <= m).
/// @throws invalid_argument as the strided form.
template <class Backend, batched_scalar T>
void form_q(const Backend& b, const T* const* qr_array, index_t m, index_t n, index_t ldqr, T* const* q_array,
            index_t qcols, index_t ldq, index_t count) {
  detail::qr_apply_array(b, qr_array, m, n, ldqr, q_array, qcols, ldq, count, false, true, "form_q");
}

namespace detail {
/// Argument checks of least_squares (and of its multi_gpu overload).
/// @return false when there is nothing to do.
template <class T>
bool least_squares_args(const strided_batch_view<T>& a, const strided_batch_view<T>& rhs, const int* info) {
  check_tall(a, "least_squares");
  check_batch(rhs, "least_squares", "rhs");
  detail_require(rhs.rows == a.rows && rhs.count == a.count,
                 "emgpu::batched::least_squares: rhs rows or count differ from a");
  if (a.count == 0) return false;
  check_ptr(info, true, "least_squares", "info");
  detail_require(static_cast<const void*>(rhs.data) != static_cast<const void*>(a.data) || a.rows == 0,
                 "emgpu::batched::least_squares: rhs must not alias a");
  return true;
}
}  // namespace detail

/// @brief Least squares min ||A_k X_k - B_k||_F for full-rank m x n A_k
///        (m >= n), LAPACK gels style.
/// @param a    overwritten by the QR factors.
/// @param rhs  m x nrhs; on return rows 0..n-1 hold X_k and rows n..m-1 the
///             components of Q^H B_k whose norm is the residual norm.
/// @param info count entries: 0, or j > 0 when R(j-1, j-1) is exactly zero
///             (A_k rank deficient; X_k not computed, rhs holds Q^H B_k).
/// @throws invalid_argument for mismatched shapes or counts, null pointers.
/// @throws device_error when a CUDA call fails.
template <class Backend, batched_scalar T>
void least_squares(const Backend& b, strided_batch_view<T> a, strided_batch_view<T> rhs, int* info) {
  if (!detail::least_squares_args(a, rhs, info)) return;
  const detail::qr_lsq_op<T, detail::strided_loc<T>, detail::strided_loc<T>> op{
      {a.data, a.stride}, a.rows, a.cols, a.ld, {rhs.data, rhs.stride}, rhs.cols, rhs.ld, info};
  detail::launch(b, op, a.count, "emgpu::batched::least_squares");
}

/// @brief Pointer-array form of least_squares: A_k at a_array[k] (m x n,
///        m >= n, overwritten by its QR factors), B_k at rhs_array[k]
///        (m x nrhs, rows 0..n-1 overwritten by X_k); the arrays in backend
///        memory.
/// @throws invalid_argument as the strided form.
template <class Backend, batched_scalar T>
void least_squares(const Backend& b, T* const* a_array, index_t m, index_t n, index_t lda, T* const* rhs_array,
                   index_t nrhs, index_t ldb, index_t count, int* info) {
  if (!detail::least_squares_args(detail::array_shape(a_array, m, n, lda, count),
                                  detail::array_shape(rhs_array, m, nrhs, ldb, count), info))
    return;
  const detail::qr_lsq_op<T, detail::array_loc<T>, detail::array_loc<T>> op{
      {a_array}, m, n, lda, {rhs_array}, nrhs, ldb, info};
  detail::launch(b, op, count, "emgpu::batched::least_squares");
}

}  // namespace emgpu::batched
