/// @file
/// @brief Strided batched products C_i = op(A_i) B_i for the CBFM tile
///        products: Eigen on the host backends, cuBLAS on CUDA.
#pragma once

#include <climits>
#include <exception>

#include "../../core/eigen.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "../../backend.hpp"
#include "../../core/complex.hpp"
#include "../../core/error.hpp"

#if defined(__CUDACC__)
#include <cublas_v2.h>

#include "../../backend/cuda_libraries_check.hpp"
#endif

namespace emgpu::cbfm::detail {

/// How A enters a product.
enum class op { none, adjoint };

/// One strided batch of products: C_i (m x n) = op(A_i) B_i, op(A_i) m x kk.
template <class T>
struct gemm_batch {
  op opa = op::none;
  index_t m = 0, n = 0, kk = 0;
  const T* a = nullptr;
  index_t lda = 1, stride_a = 0;
  const T* b = nullptr;
  index_t ldb = 1, stride_b = 0;
  T* c = nullptr;
  index_t ldc = 1, stride_c = 0;
  index_t count = 1;
};

template <class T>
using eigen_t = std::complex<real_type_t<T>>;

template <class T>
inline void host_gemm_one(const gemm_batch<T>& g, index_t i) {
  using E = eigen_t<T>;
  using mat = Eigen::Matrix<E, Eigen::Dynamic, Eigen::Dynamic>;
  using cmap = Eigen::Map<const mat, Eigen::Unaligned, Eigen::OuterStride<>>;
  using map = Eigen::Map<mat, Eigen::Unaligned, Eigen::OuterStride<>>;
  const E* a = reinterpret_cast<const E*>(g.a + i * g.stride_a);
  const E* b = reinterpret_cast<const E*>(g.b + i * g.stride_b);
  E* c = reinterpret_cast<E*>(g.c + i * g.stride_c);
  map cm(c, g.m, g.n, Eigen::OuterStride<>(g.ldc));
  const cmap bm(b, g.kk, g.n, Eigen::OuterStride<>(g.ldb));
  if (g.opa == op::none) cm.noalias() = cmap(a, g.m, g.kk, Eigen::OuterStride<>(g.lda)) * bm;
  else cm.noalias() = cmap(a, g.kk, g.m, Eigen::OuterStride<>(g.lda)).adjoint() * bm;
}

/// Serial: Eigen kept to one thread (a one-thread team disables its OpenMP).
template <class T>
void gemm(const backend::serial&, const gemm_batch<T>& g) {
  if (g.count == 0 || g.m == 0 || g.n == 0) return;
#if defined(_OPENMP)
  std::exception_ptr err;
#pragma omp parallel num_threads(1)
  {
    omp_set_num_threads(1);  // this implicit task only: Eigen then stays on one thread
    try {
      for (index_t i = 0; i < g.count; ++i) host_gemm_one(g, i);
    } catch (...) {
      err = std::current_exception();
    }
  }
  if (err) std::rethrow_exception(err);
#else
  for (index_t i = 0; i < g.count; ++i) host_gemm_one(g, i);
#endif
}

/// OpenMP: threads over the batch; a batch of one lets Eigen use the team.
template <class T>
void gemm(const backend::openmp& b, const gemm_batch<T>& g) {
  if (g.count == 0 || g.m == 0 || g.n == 0) return;
#if defined(_OPENMP)
  if (g.count == 1) {
    host_gemm_one(g, 0);
    return;
  }
  const int nt = b.threads();
  std::exception_ptr err;
#pragma omp parallel for num_threads(nt) schedule(dynamic)
  for (index_t i = 0; i < g.count; ++i) {
    try {
      host_gemm_one(g, i);
    } catch (...) {
#pragma omp critical
      err = std::current_exception();
    }
  }
  if (err) std::rethrow_exception(err);
#else
  (void)b;
  for (index_t i = 0; i < g.count; ++i) host_gemm_one(g, i);
#endif
}

#if defined(__CUDACC__)
/// A cuBLAS handle bound to the backend's stream, created on first use.
class cublas_handle {
 public:
  cublas_handle() = default;
  cublas_handle(const cublas_handle&) = delete;
  cublas_handle& operator=(const cublas_handle&) = delete;
  cublas_handle(cublas_handle&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  cublas_handle& operator=(cublas_handle&& o) noexcept {
    if (this != &o) {
      if (h_) cublasDestroy(h_);
      h_ = o.h_;
      o.h_ = nullptr;
    }
    return *this;
  }
  ~cublas_handle() {
    if (h_) cublasDestroy(h_);
  }
  cublasHandle_t get(const backend::cuda& b) {
    if (!h_) EMGPU_CUBLAS_CHECK(cublasCreate(&h_));
    EMGPU_CUBLAS_CHECK(cublasSetStream(h_, b.stream));
    return h_;
  }

 private:
  cublasHandle_t h_ = nullptr;
};

inline int checked_int(index_t v, const char* what) {
  emgpu::detail::require(v >= 0 && v <= INT_MAX, std::string("emgpu::cbfm: ") + what + " exceeds the cuBLAS int range");
  return int(v);
}

template <class T>
void gemm(const backend::cuda& b, const gemm_batch<T>& g, cublas_handle& handle) {
  if (g.count == 0 || g.m == 0 || g.n == 0) return;
  const int m = checked_int(g.m, "m"), n = checked_int(g.n, "n"), kk = checked_int(g.kk, "k");
  const int lda = checked_int(g.lda, "lda"), ldb = checked_int(g.ldb, "ldb"), ldc = checked_int(g.ldc, "ldc");
  const int count = checked_int(g.count, "batch count");
  const cublasOperation_t ta = g.opa == op::none ? CUBLAS_OP_N : CUBLAS_OP_C;
  cublasHandle_t h = handle.get(b);
  if constexpr (std::is_same_v<T, complex<double>>) {
    const cuDoubleComplex one{1, 0}, zero{0, 0};
    const auto* a = reinterpret_cast<const cuDoubleComplex*>(g.a);
    const auto* bb = reinterpret_cast<const cuDoubleComplex*>(g.b);
    auto* c = reinterpret_cast<cuDoubleComplex*>(g.c);
    if (count == 1)
      EMGPU_CUBLAS_CHECK(cublasZgemm(h, ta, CUBLAS_OP_N, m, n, kk, &one, a, lda, bb, ldb, &zero, c, ldc));
    else
      EMGPU_CUBLAS_CHECK(cublasZgemmStridedBatched(h, ta, CUBLAS_OP_N, m, n, kk, &one, a, lda, g.stride_a, bb, ldb,
                                                   g.stride_b, &zero, c, ldc, g.stride_c, count));
  } else {
    static_assert(std::is_same_v<T, complex<float>>, "emgpu::cbfm: complex<float> or complex<double>");
    const cuComplex one{1, 0}, zero{0, 0};
    const auto* a = reinterpret_cast<const cuComplex*>(g.a);
    const auto* bb = reinterpret_cast<const cuComplex*>(g.b);
    auto* c = reinterpret_cast<cuComplex*>(g.c);
    if (count == 1)
      EMGPU_CUBLAS_CHECK(cublasCgemm(h, ta, CUBLAS_OP_N, m, n, kk, &one, a, lda, bb, ldb, &zero, c, ldc));
    else
      EMGPU_CUBLAS_CHECK(cublasCgemmStridedBatched(h, ta, CUBLAS_OP_N, m, n, kk, &one, a, lda, g.stride_a, bb, ldb,
                                                   g.stride_b, &zero, c, ldc, g.stride_c, count));
  }
}
#endif

/// Per-backend state of the products (a cuBLAS handle on CUDA, nothing on the host).
template <class Backend>
struct blas {
  template <class T>
  void gemm(const Backend& b, const gemm_batch<T>& g) {
    detail::gemm(b, g);
  }
};

#if defined(__CUDACC__)
template <>
struct blas<backend::cuda> {
  cublas_handle handle;
  template <class T>
  void gemm(const backend::cuda& b, const gemm_batch<T>& g) {
    detail::gemm(b, g, handle);
  }
};
#endif

}  // namespace emgpu::cbfm::detail
