/// @file
/// @brief Non-owning column-major matrix and strided-batch views over any
///        memory space, cheap to copy into kernels (the cuco `*_ref` idea).
#pragma once

#include <type_traits>

#include "complex.hpp"
#include "config.hpp"
#include "error.hpp"

namespace emgpu {

/// @brief Column-major rows x cols matrix at `data` with leading dimension ld.
/// @tparam T element type (const-qualified for read-only views).
/// The view does not know its memory space: the backend it is passed with does.
template <class T>
struct matrix_view {
  T* data = nullptr;
  index_t rows = 0;
  index_t cols = 0;
  index_t ld = 0;

  EMGPU_HD T& operator()(index_t i, index_t j) const { return data[i + j * ld]; }
  EMGPU_HD T* col(index_t j) const { return data + j * ld; }
  /// Sub-block of r x c entries starting at (i, j).
  EMGPU_HD matrix_view block(index_t i, index_t j, index_t r, index_t c) const {
    return {data + i + j * ld, r, c, ld};
  }
  /// Read-only view of the same storage.
  /// (Only for non-const T: a const view converting to itself would be a no-op nvcc warns about.)
  template <class U = T>
    requires(!std::is_const_v<U>)
  EMGPU_HD operator matrix_view<const U>() const {
    return {data, rows, cols, ld};
  }
  EMGPU_HD bool empty() const { return rows == 0 || cols == 0; }
};

/// @brief Builds a view and checks its shape.
/// @throws invalid_argument for negative sizes, ld < max(1, rows), or a null
///         pointer with a non-empty shape.
template <class T>
inline matrix_view<T> make_matrix_view(T* data, index_t rows, index_t cols, index_t ld) {
  detail::require(rows >= 0 && cols >= 0, "emgpu::matrix_view: negative size");
  detail::require(ld >= (rows > 1 ? rows : 1), "emgpu::matrix_view: leading dimension < rows");
  detail::require(data != nullptr || rows == 0 || cols == 0, "emgpu::matrix_view: null data");
  return {data, rows, cols, ld};
}

/// @brief `count` matrices of rows x cols, matrix k at data + k * stride.
template <class T>
struct strided_batch_view {
  T* data = nullptr;
  index_t rows = 0;
  index_t cols = 0;
  index_t ld = 0;
  index_t stride = 0;
  index_t count = 0;

  EMGPU_HD matrix_view<T> operator[](index_t k) const { return {data + k * stride, rows, cols, ld}; }
};

/// @brief Views an Eigen dense matrix (host memory, column-major) without copying.
/// Works for Eigen::Matrix and Eigen::Map of std::complex or real scalars; the
/// element type is mapped to emgpu's (std::complex<T> -> emgpu::complex<T>).
template <class EigenMatrix>
inline auto view_of(EigenMatrix& m) {
  using S = typename std::remove_cvref_t<EigenMatrix>::Scalar;
  static_assert(!std::remove_cvref_t<EigenMatrix>::IsRowMajor,
                "emgpu::view_of: Eigen matrix must be column-major");
  using E = std::conditional_t<std::is_same_v<S, std::complex<double>>, complex<double>,
            std::conditional_t<std::is_same_v<S, std::complex<float>>, complex<float>, S>>;
  using Q = std::conditional_t<std::is_const_v<std::remove_reference_t<EigenMatrix>>, const E, E>;
  return matrix_view<Q>{reinterpret_cast<Q*>(m.data()), index_t(m.rows()), index_t(m.cols()),
                        index_t(m.outerStride())};
}

}  // namespace emgpu
