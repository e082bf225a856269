// Shared helpers of the batched tests: random batches (random, ill-conditioned,
// exactly singular), Eigen views in long double for residuals, and the
// epsilon of each element type. Residuals are evaluated in long double so that
// the check itself adds no error comparable to the n*eps bounds tested.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include <Eigen/Core>

#include "common/backends.hpp"
#include "common/eigen_ref.hpp"
#include <emgpu/batched.hpp>

namespace bt {

using emgpu::index_t;

template <class T>
using real_t = emgpu::real_type_t<T>;
template <class T>
inline constexpr bool cplx = emgpu::is_complex_v<T>;
/// long double counterpart of T (complex or real) for residuals.
template <class T>
using ld_t = std::conditional_t<cplx<T>, std::complex<long double>, long double>;
/// double counterpart (Eigen reference computations).
template <class T>
using d_t = std::conditional_t<cplx<T>, std::complex<double>, double>;
template <class T>
using MatL = Eigen::Matrix<ld_t<T>, Eigen::Dynamic, Eigen::Dynamic>;
template <class T>
using MatD = Eigen::Matrix<d_t<T>, Eigen::Dynamic, Eigen::Dynamic>;

template <class T>
inline long double eps() {
  return std::numeric_limits<real_t<T>>::epsilon();
}

template <class T>
inline T from_d(d_t<T> z) {
  if constexpr (cplx<T>) return T(real_t<T>(z.real()), real_t<T>(z.imag()));
  else return T(z);
}
template <class T>
inline ld_t<T> to_ld(T z) {
  if constexpr (cplx<T>) return ld_t<T>(z.real(), z.imag());
  else return ld_t<T>(z);
}

enum class kind { random, ill, singular };

inline const char* kind_name(kind k) {
  return k == kind::random ? "random" : k == kind::ill ? "ill-conditioned" : "singular";
}

template <class T>
MatD<T> random_d(index_t m, index_t n, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1, 1);
  MatD<T> a(m, n);
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < m; ++i) {
      if constexpr (cplx<T>) a(i, j) = {u(rng), u(rng)};
      else a(i, j) = u(rng);
    }
  return a;
}

/// Condition number used for the ill-conditioned kind: large but not beyond
/// what the type resolves (1e12 double, 1e5 float).
template <class T>
inline double ill_cond() {
  return std::is_same_v<real_t<T>, double> ? 1e12 : 1e5;
}

/// A test matrix in double precision. singular: column `zc` is exactly zero.
template <class T>
MatD<T> make_matrix(index_t m, index_t n, kind k, std::mt19937_64& rng, index_t zc) {
  MatD<T> a = random_d<T>(m, n, rng);
  if (k == kind::singular && n > 0) a.col(zc).setZero();
  if (k == kind::ill && n > 1) {
    const MatD<T> q1 = emgpu_test::ref::householder_q(random_d<T>(m, m, rng));
    const MatD<T> q2 = emgpu_test::ref::householder_q(random_d<T>(n, n, rng));
    MatD<T> s = MatD<T>::Zero(m, n);
    for (index_t i = 0; i < n; ++i) s(i, i) = std::pow(ill_cond<T>(), -double(i) / double(n - 1));
    a = q1 * s * q2.adjoint();
  }
  return a;
}

/// A strided host batch with padding (ld > m, stride > ld*n) so that layout
/// bugs show up.
template <class T>
struct batch {
  index_t m = 0, n = 0, ld = 0, stride = 0, count = 0;
  std::vector<T> h;
  batch() = default;
  batch(index_t m_, index_t n_, index_t count_) : m(m_), n(n_), ld(m_ + 2), stride(0), count(count_) {
    stride = ld * n + 3;
    h.assign(std::size_t(stride * count + 1), T(real_t<T>(-777)));
  }
  void set(index_t k, const MatD<T>& a) {
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < m; ++i) h[std::size_t(k * stride + i + j * ld)] = from_d<T>(a(i, j));
  }
  MatL<T> get(index_t k) const { return get(h, k); }
  MatL<T> get(const std::vector<T>& v, index_t k) const {
    MatL<T> a(m, n);
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < m; ++i) a(i, j) = to_ld(v[std::size_t(k * stride + i + j * ld)]);
    return a;
  }
  template <class P>
  emgpu::strided_batch_view<P> view(P* d) const {
    return {d, m, n, ld, stride, count};
  }
};

/// Kinds cycle through the batch; singular matrices get their zero column at
/// a position that varies with k.
template <class T>
batch<T> make_batch(index_t m, index_t n, index_t count, std::mt19937_64& rng,
                    std::vector<kind>& kinds, std::vector<index_t>& zero_col) {
  batch<T> b(m, n, count);
  kinds.resize(std::size_t(count));
  zero_col.resize(std::size_t(count));
  for (index_t k = 0; k < count; ++k) {
    const kind kd = k % 3 == 0 ? kind::random : k % 3 == 1 ? kind::ill : kind::singular;
    const index_t zc = n > 0 ? (k * 7 + 1) % n : 0;
    kinds[std::size_t(k)] = (n < 2 && kd == kind::ill) ? kind::random : kd;
    zero_col[std::size_t(k)] = zc;
    b.set(k, make_matrix<T>(m, n, kinds[std::size_t(k)], rng, zc));
  }
  return b;
}

inline index_t cpu_or_gpu(index_t cpu, index_t gpu) {
#if defined(EMGPU_TEST_CUDA)
  (void)cpu;
  return gpu;
#else
  (void)gpu;
  return cpu;
#endif
}

/// Batch size for size n: enough matrices to cover every kind and several
/// teams per block on the GPU, few enough to keep the CPU suite quick.
inline index_t count_for(index_t n) {
  if (n <= 8) return cpu_or_gpu(24, 600);
  if (n <= 33) return cpu_or_gpu(6, 90);
  if (n <= 64) return cpu_or_gpu(3, 12);
  return cpu_or_gpu(2, 6);
}

/// True in the ASan/UBSan build, which runs these tests about 10x slower: the
/// n >= 100 sizes of the main loops (SVD: serial Jacobi, ~0.3 s a matrix in
/// Release, 30+ sweeps when ill-conditioned) are left to the Release and GPU
/// runs there; the partly staged n = 100 / 128 paths still run under the
/// sanitizers through the [sanitize_big] cases.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool sanitized_build = true;
#else
inline constexpr bool sanitized_build = false;
#endif

inline const std::vector<index_t>& sizes() {
  static const std::vector<index_t> s = {1, 2, 3, 7, 8, 16, 31, 32, 33, 64, 100, 128};
  static const std::vector<index_t> small = {1, 2, 3, 7, 8, 16, 31, 32, 33, 64};
  return sanitized_build ? small : s;
}
inline const std::vector<index_t>& small_sizes() {
  static const std::vector<index_t> s = {1, 2, 3, 7, 8, 16, 33, 40};
  return s;
}

template <class T>
const char* type_name() {
  if constexpr (std::is_same_v<T, float>) return "float";
  else if constexpr (std::is_same_v<T, double>) return "double";
  else if constexpr (std::is_same_v<T, emgpu::complex<float>>) return "complex<float>";
  else return "complex<double>";
}

/// Frobenius norm; evaluates expressions once (coefficient access on an
/// unevaluated product would recompute the product per entry).
template <class M>
long double fro(const Eigen::MatrixBase<M>& expr) {
  const typename M::PlainObject a = expr;
  long double s = 0;
  for (index_t j = 0; j < a.cols(); ++j)
    for (index_t i = 0; i < a.rows(); ++i) s += std::norm(std::complex<long double>(a(i, j)));
  return std::sqrt(s);
}

/// Upload / download of a whole host vector.
template <class B, class T>
auto up(const B& b, const std::vector<T>& h) {
  return emgpu_test::upload(b, h);
}
template <class B, class V>
auto down(const B& b, const V& v) {
  return to_host(b, v);
}

}  // namespace bt
