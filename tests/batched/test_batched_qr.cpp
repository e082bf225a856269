// Batched Givens QR: ||A - Q R||_F / (||A||_F m eps) <= 10, ||Q^H Q - I||_F /
// (m eps) <= 10, Q^H A upper triangular (its strictly lower part below the
// same bound) and equal to the stored R, Q (Q^H C) = C, least squares
// optimality, rank-deficiency info, backends agree, argument errors.
// For m x n the bound uses m (LAPACK's xQRT01 convention: every entry goes
// through up to m + n rotations); m = n reduces to the n eps.
#include "batched_util.hpp"

using namespace emgpu;
using namespace bt;
using emgpu_test::backends;

namespace {

template <class T, class B>
void check_qr(const B& b, index_t m, index_t n, index_t count, std::uint64_t seed) {
  INFO("type " << type_name<T>() << ", m = " << m << ", n = " << n << ", count = " << count);
  std::mt19937_64 rng(seed);
  std::vector<kind> kinds;
  std::vector<index_t> zc;
  const batch<T> a = make_batch<T>(m, n, count, rng, kinds, zc);

  auto d_a = up(b, a.h);
  batched::qr_factor(b, a.view(d_a.data()));
  batch<T> q(m, n, count);
  auto d_q = up(b, q.h);
  batched::form_q(b, a.view(static_cast<const T*>(d_a.data())), q.view(d_q.data()));
  // Q^H applied to the original A must give [R; 0].
  auto d_c = up(b, a.h);
  batched::apply_qh(b, a.view(d_a.data()), a.view(d_c.data()));
  // Q (Q^H C) = C for a random C with 2 columns.
  batch<T> cc(m, 2, count);
  for (index_t k = 0; k < count; ++k) cc.set(k, random_d<T>(m, 2, rng));
  auto d_cc = up(b, cc.h);
  batched::apply_qh(b, a.view(d_a.data()), cc.view(d_cc.data()));
  batched::apply_q(b, a.view(d_a.data()), cc.view(d_cc.data()));

  const std::vector<T> f = down(b, d_a), qh = down(b, d_q), qa = down(b, d_c), c2 = down(b, d_cc);
  for (index_t k = 0; k < count; ++k) {
    INFO("matrix " << k << " (" << kind_name(kinds[std::size_t(k)]) << ")");
    const MatL<T> A = a.get(k), F = a.get(f, k), Q = q.get(qh, k), QA = a.get(qa, k);
    MatL<T> R = MatL<T>::Zero(n, n);
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i <= j; ++i) R(i, j) = F(i, j);
    const long double nA = fro(A);
    const long double den = (nA > 0 ? nA : 1) * m * eps<T>();
    const long double res = fro(A - Q * R) / den;
    const long double orth = fro(Q.adjoint() * Q - MatL<T>::Identity(n, n)) / (m * eps<T>());
    MatL<T> low = QA;
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i <= j && i < m; ++i) low(i, j) = 0;
    const long double lower = fro(low) / den;
    const long double same_r = fro(QA.topRows(n).template triangularView<Eigen::Upper>().toDenseMatrix() - R) / den;
    const long double back = fro(cc.get(c2, k) - cc.get(k)) / (fro(cc.get(k)) * m * eps<T>());
    INFO("||A-QR|| " << double(res) << ", ||Q^H Q - I|| " << double(orth) << ", lower(Q^H A) "
                     << double(lower) << ", Q^H A vs R " << double(same_r) << ", Q Q^H C " << double(back));
    CHECK(res <= 10);
    CHECK(orth <= 10);
    CHECK(lower <= 10);
    CHECK(same_r <= 10);
    CHECK(back <= 10);
  }

  // Backends agree: serial reference (bitwise on the host, to rounding on CUDA).
  {
    backend::serial s;
    std::vector<T> fs = a.h;
    batched::qr_factor(s, a.view(fs.data()));
#if defined(EMGPU_TEST_CUDA)
    for (index_t k = 0; k < count; ++k) {
      const long double d = fro(a.get(fs, k) - a.get(f, k)) / ((fro(a.get(k)) + 1) * m * eps<T>());
      INFO("matrix " << k);
      CHECK(d <= 10);
    }
#else
    CHECK(fs == f);
#endif
  }
}

template <class T, class B>
void check_lsq(const B& b, index_t m, index_t n, index_t count, std::uint64_t seed) {
  INFO("least squares, type " << type_name<T>() << ", m = " << m << ", n = " << n);
  std::mt19937_64 rng(seed);
  batch<T> a(m, n, count), r(m, 2, count);
  for (index_t k = 0; k < count; ++k) {
    MatD<T> ak = random_d<T>(m, n, rng);
    if (k == 1 && n > 1) ak.col(n - 1).setZero();  // rank deficient: info = n
    a.set(k, ak);
    r.set(k, random_d<T>(m, 2, rng));
  }
  auto d_a = up(b, a.h);
  auto d_r = up(b, r.h);
  auto d_info = make_vector<int>(b, count);
  batched::least_squares(b, a.view(d_a.data()), r.view(d_r.data()), d_info.data());
  const std::vector<T> x = down(b, d_r);
  const std::vector<int> info = down(b, d_info);
  for (index_t k = 0; k < count; ++k) {
    INFO("matrix " << k);
    if (k == 1 && n > 1) {
      CHECK(info[std::size_t(k)] == int(n));
      continue;
    }
    REQUIRE(info[std::size_t(k)] == 0);
    const MatL<T> A = a.get(k), Bm = r.get(k);
    const MatL<T> X = r.get(x, k).topRows(n);
    // Optimality: the residual is orthogonal to range(A). Backward stability
    // bounds ||A^H r|| by a modest multiple of m eps ||A|| (||A|| ||X|| + ||B||).
    const MatL<T> res = Bm - A * X;
    const long double nA = fro(A);
    const long double opt = fro(A.adjoint() * res) / (nA * (nA * fro(X) + fro(Bm)) * m * eps<T>());
    INFO("||A^H r|| / (||A|| (||A|| ||x|| + ||b||) m eps) = " << double(opt));
    CHECK(opt <= 10);
    // Rows n..m-1 of the output carry the residual norm.
    const long double rn = fro(r.get(x, k).bottomRows(m - n));
    CHECK(std::abs(rn - fro(res)) <= 10 * m * eps<T>() * (nA * fro(X) + fro(Bm)));
  }
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("batched QR: A = Q R, Q unitary, R upper triangular", "[batched][qr]",
                        backends) {
  const TestType b{};
  for (index_t n : sizes()) {
    const index_t c = count_for(n);
    check_qr<complex<double>>(b, n, n, c, 100 + n);
    check_qr<double>(b, n, n, c, 200 + n);
    check_qr<complex<float>>(b, n, n, c, 300 + n);
    check_qr<float>(b, n, n, c, 400 + n);
  }
  // Rectangular, m > n.
  for (auto [m, n] : std::vector<std::pair<index_t, index_t>>{{2, 1}, {5, 3}, {13, 8}, {40, 16}, {64, 31}, {128, 64}}) {
    const index_t c = count_for(m);
    check_qr<complex<double>>(b, m, n, c, 500 + m);
    check_qr<float>(b, m, n, c, 600 + m);
  }
}

TEMPLATE_LIST_TEST_CASE("batched QR: small sizes for compute-sanitizer", "[batched][qr][sanitize]",
                        backends) {
  const TestType b{};
  for (index_t n : small_sizes()) check_qr<complex<double>>(b, n, n, 4, 700 + n);
  check_qr<float>(b, 9, 4, 4, 800);
  check_qr<double>(b, 70, 33, 2, 801);
  check_lsq<complex<double>>(b, 9, 5, 4, 802);
}

TEMPLATE_LIST_TEST_CASE("batched QR: partly staged matrices (shared memory too small)",
                        "[batched][qr][sanitize_big]", backends) {
  // complex<double> 128 x 128 needs 264 KB: on CUDA the leading columns sit in
  // shared memory and the rest is worked on in global memory.
  const TestType b{};
  check_qr<complex<double>>(b, 128, 128, 2, 7100);
}

TEMPLATE_LIST_TEST_CASE("batched QR: least squares", "[batched][qr]", backends) {
  const TestType b{};
  for (auto [m, n] : std::vector<std::pair<index_t, index_t>>{{1, 1}, {4, 4}, {8, 3}, {33, 16}, {100, 64}}) {
    check_lsq<complex<double>>(b, m, n, 4, 900 + m);
    check_lsq<double>(b, m, n, 4, 901 + m);
    check_lsq<complex<float>>(b, m, n, 4, 902 + m);
    check_lsq<float>(b, m, n, 4, 903 + m);
  }
}

TEMPLATE_LIST_TEST_CASE("batched QR: argument errors throw invalid_argument", "[batched][qr]",
                        backends) {
  const TestType b{};
  using T = complex<float>;
  auto d = make_vector<T>(b, 100);
  const strided_batch_view<T> good{d.data(), 5, 4, 5, 20, 5};
  REQUIRE_NOTHROW(batched::qr_factor(b, good));
  auto bad = good;
  bad.rows = 3;  // m < n
  REQUIRE_THROWS_AS(batched::qr_factor(b, bad), emgpu::invalid_argument);
  bad = good;
  bad.ld = 4;
  REQUIRE_THROWS_AS(batched::qr_factor(b, bad), emgpu::invalid_argument);
  bad = good;
  bad.count = -1;
  REQUIRE_THROWS_AS(batched::qr_factor(b, bad), emgpu::invalid_argument);
  bad = good;
  bad.data = nullptr;
  REQUIRE_THROWS_AS(batched::qr_factor(b, bad), emgpu::invalid_argument);
  auto c = make_vector<T>(b, 100);
  const strided_batch_view<T> cv{c.data(), 4, 1, 4, 4, 5};  // 4 rows vs m = 5
  REQUIRE_THROWS_AS(batched::apply_qh(b, good, cv), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::apply_qh(b, good, good), emgpu::invalid_argument);  // aliasing
  auto info = make_vector<int>(b, 5);
  REQUIRE_THROWS_AS(batched::least_squares(b, good, cv, info.data()), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(batched::qr_factor(b, static_cast<T* const*>(nullptr), 5, 4, 5, 5),
                    emgpu::invalid_argument);
}
