// LU with partial pivoting, solves and triangular inverses on every backend,
// each checked against backward-error bounds computed on the host in double
// precision and against Eigen's PartialPivLU (an independent implementation).
//
// Tolerances (the LAPACK test-suite criteria, as the issue asks):
//   factorisation  ||P A - L U||_1 / (||A||_1 n eps)            <= 10
//   solve          ||A X - B||_1 / (||A||_1 ||X||_1 n eps)      <= 10
//   inverses       ||T^-1 T - I||_1 / (||T^-1||_1 ||T||_1 n eps) <= 10
// with eps the unit roundoff of the element type. Partial pivoting keeps the
// growth factor small on these matrices, so the rounding-error analysis
// (|P A - L U| <= gamma_n |L||U|) gives ratios well below 1 in practice; 10 is
// the customary threshold that still fails on any real defect (a wrong pivot or
// a missed update gives O(1/eps)).
// Forward comparison with Eigen: both solutions have backward error
// <= 10 n eps, so ||X - X_eigen|| / ||X_eigen|| <= 2 * 10 n eps * cond_1(A);
// cond_1 comes from Eigen's rcond(), which can underestimate the condition
// number by up to a factor ~3, hence the bound 3 * 20 n eps / rcond.
//
// Large CUDA cases (n > host_reference_max_n): the O(n^3) host references
// (Eigen's LU, the products L U and T^-1 T) would take minutes, so the same
// three ratios are formed on the device in complex<double> with cuBLAS ZGEMM
// (independent of the factorisation: no getrf, no TRSM) and 1-norms by column
// sums; only O(n^2) work stays on the host. Without Eigen's solution there,
// the solve through the inverses is compared with the substitution solve:
// both lie within 3 * 20 n eps / rcond of the exact solution, so they differ
// by at most twice that (rcond: the factorisation's own estimate, which the
// smaller cases check against Eigen's).
#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include "common/backends.hpp"
#include "common/eigen_ref.hpp"
#include <emgpu/dense.hpp>

using namespace emgpu;
using emgpu_test::backends;

namespace {

template <class T> struct std_scalar { using type = T; };
template <class R> struct std_scalar<complex<R>> { using type = std::complex<R>; };

using cd = std::complex<double>;
using MatD = Eigen::Matrix<cd, Eigen::Dynamic, Eigen::Dynamic>;

template <class T>
double eps_of() {
  return double(std::numeric_limits<real_type_t<T>>::epsilon()) / 2;  // unit roundoff
}

template <class T>
T make_scalar(double re, double im) {
  if constexpr (is_complex_v<T>) return T(real_type_t<T>(re), real_type_t<T>(im));
  else return T(re);
}
template <class T>
cd to_cd(T x) {
  if constexpr (is_complex_v<T>) return cd(double(x.real()), double(x.imag()));
  else return cd(double(x), 0.0);
}

/// Uniform entries in [-1, 1] (+ i [-1, 1]); column-major with leading dimension ld.
template <class T>
std::vector<T> random_matrix(index_t rows, index_t cols, index_t ld, unsigned seed) {
  std::mt19937_64 g(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> m(std::size_t(ld * cols), make_scalar<T>(-999, 0));  // padding must survive
  for (index_t j = 0; j < cols; ++j)
    for (index_t i = 0; i < rows; ++i) {
      const double re = u(g), im = u(g);
      m[std::size_t(i + j * ld)] = make_scalar<T>(re, im);
    }
  return m;
}

/// A complex-symmetric matrix shaped like a 2D EFIE impedance matrix: points
/// on an ellipse, h = lambda/10, a logarithmic-looking self term and a smooth
/// oscillating H0^(2)-like interaction exp(-jkr)/sqrt(kr) off the diagonal.
template <class T>
std::vector<T> mom_like_matrix(index_t n, index_t ld) {
  const double pi = constants::pi, k = 2 * pi, h = 0.1;
  const double perim = double(n) * h;
  const double a = perim / (2 * pi) * 1.2, b = perim / (2 * pi) * 0.8;
  std::vector<double> x(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) {
    const double t = 2 * pi * double(i) / double(n);
    x[std::size_t(i)] = a * std::cos(t);
    y[std::size_t(i)] = b * std::sin(t);
  }
  std::vector<T> m(std::size_t(ld * n), make_scalar<T>(-999, 0));
  for (index_t j = 0; j < n; ++j)
    for (index_t i = 0; i < n; ++i) {
      cd z;
      if (i == j) {
        z = h * cd(1.0, -(2 / pi) * (std::log(constants::gamma_exp * k * h / 4) - 1));
      } else {
        const double r = std::hypot(x[std::size_t(i)] - x[std::size_t(j)],
                                    y[std::size_t(i)] - y[std::size_t(j)]);
        z = h * std::sqrt(2 / (pi * k * r)) * std::exp(cd(0, -(k * r - pi / 4)));
      }
      m[std::size_t(i + j * ld)] = make_scalar<T>(z.real(), z.imag());
    }
  return m;
}

template <class T>
MatD to_eigen(const std::vector<T>& h, index_t rows, index_t cols, index_t ld) {
  MatD m(rows, cols);
  for (index_t j = 0; j < cols; ++j)
    for (index_t i = 0; i < rows; ++i) m(i, j) = to_cd(h[std::size_t(i + j * ld)]);
  return m;
}

double norm1(const MatD& m) {
  double best = 0;
  for (index_t j = 0; j < m.cols(); ++j) best = std::max(best, m.col(j).cwiseAbs().sum());
  return best;
}

/// ||P A - L U||_1 / (||A||_1 n eps) from the packed factors and pivots.
template <class T>
double factor_ratio(const MatD& a, const MatD& lu, const std::vector<index_t>& ipiv) {
  const index_t n = a.rows();
  MatD pa = a;
  for (index_t k = 0; k < n; ++k) pa.row(k).swap(pa.row(ipiv[std::size_t(k)]));
  MatD l = lu.triangularView<Eigen::UnitLower>();
  MatD u = lu.triangularView<Eigen::Upper>();
  return norm1(pa - l * u) / (norm1(a) * double(n) * eps_of<T>());
}

template <class T>
double solve_ratio(const MatD& a, const MatD& x, const MatD& b) {
  return norm1(a * x - b) / (norm1(a) * norm1(x) * double(a.rows()) * eps_of<T>());
}

struct lu_case {
  index_t n;
  index_t block_size;
  bool lookahead;
  int kind;  // 0 random, 1 MoM-like
};

/// Largest n checked against host (Eigen) references on CUDA.
constexpr index_t host_reference_max_n = 1100;

#if defined(EMGPU_TEST_CUDA)
template <class T>
EMGPU_HD complexd as_cd(T x) {
  if constexpr (is_complex_v<T>) return complexd(double(x.real()), double(x.imag()));
  else return complexd(double(x), 0.0);
}
/// out = src (rows x cols, ld) in complex<double>, tight (ld = rows).
template <class T>
struct to_cd_fn {
  const T* src;
  index_t ld;
  complexd* out;
  index_t rows;
  EMGPU_HD void operator()(index_t i, index_t j) const { out[i + j * rows] = as_cd(src[i + j * ld]); }
};
/// l = unit lower part, u = upper part of packed factors, dense n x n.
template <class T>
struct split_lu_fn {
  const T* lu;
  index_t ld;
  complexd* l;
  complexd* u;
  index_t n;
  EMGPU_HD void operator()(index_t i, index_t j) const {
    const complexd v = as_cd(lu[i + j * ld]);
    l[i + j * n] = i > j ? v : complexd(i == j ? 1.0 : 0.0, 0.0);
    u[i + j * n] = i <= j ? v : complexd(0.0, 0.0);
  }
};
struct identity_fn {
  complexd* m;
  index_t n;
  EMGPU_HD void operator()(index_t i, index_t j) const { m[i + j * n] = complexd(i == j ? 1.0 : 0.0, 0.0); }
};

template <class T>
device_vector<complexd> device_cd(const backend::cuda& b, const T* p, index_t rows, index_t cols,
                                  index_t ld) {
  auto out = make_vector<complexd>(b, rows * cols);
  for_each_index(b, rows, cols, to_cd_fn<T>{p, ld, out.data(), rows});
  return out;
}
double dnorm1(const backend::cuda& b, const device_vector<complexd>& m, index_t rows, index_t cols) {
  return double(dense::detail::cuda_norm1(b, matrix_view<const complexd>{m.data(), rows, cols, rows}));
}
/// c := alpha a b + beta c, all tight complex<double> on the device (ZGEMM).
void device_zgemm(const backend::cuda& b, index_t m, index_t n, index_t k, complexd alpha,
           const device_vector<complexd>& a, const device_vector<complexd>& bm, complexd beta,
           device_vector<complexd>& c) {
  cublasHandle_t h = dense::detail::cublas_handle(b.device, 0);
  REQUIRE(cublasSetStream(h, b.stream) == CUBLAS_STATUS_SUCCESS);
  dense::detail::gemm_nn(h, m, n, k, alpha, a.data(), m, bm.data(), k, beta, c.data(), m);
}

/// check_lu for large n on CUDA: the same criteria, ratios formed on the device.
template <class T>
void check_lu_device(const backend::cuda& b, const lu_case& c, index_t nrhs_many) {
  const index_t n = c.n, ld = n + (n % 3 == 1 ? 3 : 0);
  INFO("device-checked: n = " << n << ", block_size = " << c.block_size << ", lookahead = "
                              << c.lookahead << ", kind = " << c.kind << ", ld = " << ld
                              << ", T size = " << sizeof(T));
  const double eps = eps_of<T>();
  const auto ha = c.kind == 0 ? random_matrix<T>(n, n, ld, unsigned(1000 + n)) : mom_like_matrix<T>(n, ld);
  device_vector<complexd> acd;
  {
    auto d0 = emgpu_test::upload(b, ha);
    acd = device_cd(b, d0.data(), n, n, ld);
  }
  const double na = dnorm1(b, acd, n, n);

  auto d = emgpu_test::upload(b, ha);
  const matrix_view<T> av{d.data(), n, n, ld};
  const dense::crout_lu::factorization<backend::cuda, T> f(b, av, dense::crout_lu{c.block_size, c.lookahead});
  REQUIRE(f.size() == n);
  std::vector<index_t> ipiv(static_cast<std::size_t>(n));
  copy_to_host(b, f.pivots(), n, ipiv.data());
  for (index_t k = 0; k < n; ++k) {
    REQUIRE(ipiv[std::size_t(k)] >= k);
    REQUIRE(ipiv[std::size_t(k)] < n);
  }
  {
    const auto hlu = to_host(b, d);
    for (index_t j = 0; j < n; ++j)  // padding rows untouched
      for (index_t i = n; i < ld; ++i) REQUIRE(hlu[std::size_t(i + j * ld)] == ha[std::size_t(i + j * ld)]);
  }

  // ||P A - L U|| / (||A|| n eps): P A on the host (O(n^2)), L U by ZGEMM.
  auto l = make_vector<complexd>(b, n * n), u = make_vector<complexd>(b, n * n);
  for_each_index(b, n, n, split_lu_fn<T>{d.data(), ld, l.data(), u.data(), n});
  {
    std::vector<index_t> perm(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) perm[std::size_t(i)] = i;
    for (index_t k = 0; k < n; ++k) std::swap(perm[std::size_t(k)], perm[std::size_t(ipiv[std::size_t(k)])]);
    std::vector<complexd> pa(static_cast<std::size_t>(n * n));
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < n; ++i)
        pa[std::size_t(i + j * n)] = as_cd(ha[std::size_t(perm[std::size_t(i)] + j * ld)]);
    auto r = emgpu_test::upload(b, pa);
    device_zgemm(b, n, n, n, complexd(-1.0, 0.0), l, u, complexd(1.0, 0.0), r);
    const double fr = dnorm1(b, r, n, n) / (na * double(n) * eps);
    INFO("factor ratio " << fr);
    CHECK(fr <= 10);
  }
  const double rc = double(f.rcond_estimate());
  INFO("rcond estimate " << rc);
  REQUIRE(rc > 0);
  CHECK(rc <= 1);

  for (index_t nrhs : {index_t(1), nrhs_many}) {
    const index_t ldb = n + 1;
    const auto hb = random_matrix<T>(n, nrhs, ldb, unsigned(7 + nrhs));
    auto db = emgpu_test::upload(b, hb);
    auto rcd = device_cd(b, db.data(), n, nrhs, ldb);  // B, then B - A X
    f.solve(matrix_view<T>{db.data(), n, nrhs, ldb});
    const auto xcd = device_cd(b, db.data(), n, nrhs, ldb);
    device_zgemm(b, n, nrhs, n, complexd(-1.0, 0.0), acd, xcd, complexd(1.0, 0.0), rcd);
    const double sr = dnorm1(b, rcd, n, nrhs) / (na * dnorm1(b, xcd, n, nrhs) * double(n) * eps);
    INFO("nrhs " << nrhs << ": backward ratio " << sr);
    CHECK(sr <= 10);
    auto db2 = emgpu_test::upload(b, hb);
    dense::lu_solve(b, f.factors(), f.pivots(), matrix_view<T>{db2.data(), n, nrhs, ldb});
    CHECK(to_host(b, db2) == to_host(b, db));
  }

  // Substitution solve kept for the comparison with the solve through inverses.
  const index_t nrhs = nrhs_many;
  const auto hb = random_matrix<T>(n, nrhs, n, 99u);
  auto dxs = emgpu_test::upload(b, hb);
  f.solve(matrix_view<T>{dxs.data(), n, nrhs, n});
  const auto xs = to_host(b, dxs);

  dense::tri_inverse(b, av);
  auto li = make_vector<complexd>(b, n * n), ui = make_vector<complexd>(b, n * n);
  for_each_index(b, n, n, split_lu_fn<T>{d.data(), ld, li.data(), ui.data(), n});
  auto g = make_vector<complexd>(b, n * n);
  for_each_index(b, n, n, identity_fn{g.data(), n});
  device_zgemm(b, n, n, n, complexd(1.0, 0.0), li, l, complexd(-1.0, 0.0), g);  // L^-1 L - I
  const double lr = dnorm1(b, g, n, n) / (dnorm1(b, li, n, n) * dnorm1(b, l, n, n) * double(n) * eps);
  for_each_index(b, n, n, identity_fn{g.data(), n});
  device_zgemm(b, n, n, n, complexd(1.0, 0.0), ui, u, complexd(-1.0, 0.0), g);  // U^-1 U - I
  const double ur = dnorm1(b, g, n, n) / (dnorm1(b, ui, n, n) * dnorm1(b, u, n, n) * double(n) * eps);
  INFO("inverse ratios L " << lr << ", U " << ur);
  CHECK(lr <= 10);
  CHECK(ur <= 10);

  auto dxi = emgpu_test::upload(b, hb);
  dense::lu_solve_inverse(b, matrix_view<const T>(av), f.pivots(), matrix_view<T>{dxi.data(), n, nrhs, n});
  const auto xi = to_host(b, dxi);
  double num = 0, den = 0;  // 1-norms of X_inv - X_subst and of X_subst
  for (index_t j = 0; j < nrhs; ++j) {
    double cn = 0, cdn = 0;
    for (index_t i = 0; i < n; ++i) {
      cn += std::abs(to_cd(xi[std::size_t(i + j * n)]) - to_cd(xs[std::size_t(i + j * n)]));
      cdn += std::abs(to_cd(xs[std::size_t(i + j * n)]));
    }
    num = std::max(num, cn);
    den = std::max(den, cdn);
  }
  const double fwd = num / den, fwd_tol = 2 * 3 * 20 * double(n) * eps / rc;
  INFO("solve through inverses vs substitution: " << fwd << " (tol " << fwd_tol << ")");
  CHECK(fwd <= fwd_tol);
}
#endif

/// Factor, check the factors, solve 1 and several right-hand sides, compare
/// with Eigen, then invert the triangles and solve through the inverses.
template <class T, class B>
void check_lu(const B& b, const lu_case& c, index_t nrhs_many) {
#if defined(EMGPU_TEST_CUDA)
  if (c.n > host_reference_max_n) return check_lu_device<T>(b, c, nrhs_many);
#endif
  const index_t n = c.n, ld = n + (n % 3 == 1 ? 3 : 0);  // sometimes padded
  INFO("n = " << n << ", block_size = " << c.block_size << ", lookahead = " << c.lookahead
              << ", kind = " << c.kind << ", ld = " << ld << ", T size = " << sizeof(T));
  const auto ha = c.kind == 0 ? random_matrix<T>(n, n, ld, unsigned(1000 + n)) : mom_like_matrix<T>(n, ld);
  const MatD a = to_eigen(ha, n, n, ld);

  auto d = emgpu_test::upload(b, ha);
  const matrix_view<T> av{d.data(), n, n, ld};
  const dense::crout_lu opts{c.block_size, c.lookahead};
  const dense::crout_lu::factorization<B, T> f(b, av, opts);
  REQUIRE(f.size() == n);

  const auto hlu = to_host(b, d);
  std::vector<index_t> ipiv(static_cast<std::size_t>(n));
  copy_to_host(b, f.pivots(), n, ipiv.data());
  for (index_t k = 0; k < n; ++k) {
    REQUIRE(ipiv[std::size_t(k)] >= k);
    REQUIRE(ipiv[std::size_t(k)] < n);
  }
  for (index_t j = 0; j < n; ++j)  // padding rows untouched
    for (index_t i = n; i < ld; ++i) REQUIRE(hlu[std::size_t(i + j * ld)] == ha[std::size_t(i + j * ld)]);
  const MatD lu = to_eigen(hlu, n, n, ld);
  const double fr = factor_ratio<T>(a, lu, ipiv);
  INFO("factor ratio " << fr);
  CHECK(fr <= 10);

  // Independent reference: Eigen's LU of the same matrix in double precision.
  const emgpu_test::ref::partial_piv_lu ref(a);
  const double rcond_ref = ref.rcond();
  REQUIRE(rcond_ref > 0);

  for (index_t nrhs : {index_t(1), nrhs_many}) {
    const index_t ldb = n + 1;
    const auto hb = random_matrix<T>(n, nrhs, ldb, unsigned(7 + nrhs));
    const MatD bm = to_eigen(hb, n, nrhs, ldb);
    auto db = emgpu_test::upload(b, hb);
    f.solve(matrix_view<T>{db.data(), n, nrhs, ldb});
    const auto hx = to_host(b, db);
    const MatD x = to_eigen(hx, n, nrhs, ldb);
    const double sr = solve_ratio<T>(a, x, bm);
    const MatD xref = ref.solve(bm);
    const double fwd = norm1(x - xref) / norm1(xref);
    const double fwd_tol = 3 * 20 * double(n) * eps_of<T>() / rcond_ref;
    INFO("nrhs " << nrhs << ": backward ratio " << sr << ", forward " << fwd << " (tol " << fwd_tol << ")");
    CHECK(sr <= 10);
    CHECK(fwd <= fwd_tol);

    // The free function must agree with the object exactly (same kernels).
    auto db2 = emgpu_test::upload(b, hb);
    dense::lu_solve(b, f.factors(), f.pivots(), matrix_view<T>{db2.data(), n, nrhs, ldb});
    CHECK(to_host(b, db2) == hx);
  }

  // Condition estimate: same quantity as Eigen's estimate (1-norm, Hager).
  const double rc = double(f.rcond_estimate());
  INFO("rcond " << rc << " vs Eigen " << rcond_ref);
  CHECK(rc <= 10 * rcond_ref);
  CHECK(rc >= 0.1 * rcond_ref);

  // Triangular inverses, in place on the packed factors.
  dense::tri_inverse(b, av);
  const MatD inv = to_eigen(to_host(b, d), n, n, ld);
  const MatD l = lu.triangularView<Eigen::UnitLower>(), u = lu.triangularView<Eigen::Upper>();
  const MatD li = inv.triangularView<Eigen::UnitLower>(), ui = inv.triangularView<Eigen::Upper>();
  const MatD id = MatD::Identity(n, n);
  const double lr = norm1(li * l - id) / (norm1(li) * norm1(l) * double(n) * eps_of<T>());
  const double ur = norm1(ui * u - id) / (norm1(ui) * norm1(u) * double(n) * eps_of<T>());
  INFO("inverse ratios L " << lr << ", U " << ur);
  CHECK(lr <= 10);
  CHECK(ur <= 10);
  {
    const index_t nrhs = nrhs_many, ldb = n;
    const auto hb = random_matrix<T>(n, nrhs, ldb, 99u);
    const MatD bm = to_eigen(hb, n, nrhs, ldb);
    auto db = emgpu_test::upload(b, hb);
    dense::lu_solve_inverse(b, matrix_view<const T>(av), f.pivots(),
                            matrix_view<T>{db.data(), n, nrhs, ldb});
    const MatD x = to_eigen(to_host(b, db), n, nrhs, ldb);
    const MatD xref = ref.solve(bm);
    // Multiplying by computed inverses: forward error ~ cond(A) n eps as substitution.
    const double fwd = norm1(x - xref) / norm1(xref);
    const double fwd_tol = 3 * 20 * double(n) * eps_of<T>() / rcond_ref;
    INFO("solve through inverses: forward " << fwd << " (tol " << fwd_tol << ")");
    CHECK(fwd <= fwd_tol);
  }
}

template <class B>
std::vector<lu_case> cases_double(bool large) {
  std::vector<lu_case> v;
  for (index_t n : {1, 2, 3, 7, 16, 17, 31, 33, 64, 65, 127, 129, 200, 257})
    v.push_back({n, 0, true, 0});
  // Around explicit block sizes, with and without look-ahead.
  for (index_t n : {64, 65, 130})
    for (index_t nb : {16, 64}) v.push_back({n, nb, n % 2 == 1, 0});
  v.push_back({191, 32, true, 1});
  v.push_back({97, 7, true, 0});  // odd block size, many panels
  v.push_back({300, 0, true, 1});
  // The largest CPU size once (serial) keeps the suite fast on 2 CI cores;
  // the OpenMP path is exercised with many panels by the sizes above.
  if (!std::is_same_v<B, backend::openmp>) v.push_back({600, 0, true, 0});
  if (large) {
    // Host (Eigen) references: n <= host_reference_max_n.
    v.push_back({1000, 0, true, 0});
    v.push_back({1025, 256, false, 1});  // 4 nb + 1: a last panel of one column
    // Device-checked. Automatic block sizes 128 | 256 | 512 switch at
    // n = 2048 and 8192: both sides of each, with a one-column last panel.
    v.push_back({2048, 0, true, 1});
    v.push_back({2049, 0, true, 0});
    v.push_back({1537, 256, false, 0});
    v.push_back({2500, 96, true, 0});  // padded ld, nb not a power of two
    v.push_back({3001, 512, true, 1});
    v.push_back({8193, 0, true, 0});
  }
  return v;
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("LU factor, solve and inverses: complex<double>", "[dense][lu]", backends) {
  const TestType b{};
  const bool large = is_device_backend_v<TestType>;
  for (const auto& c : cases_double<TestType>(large)) check_lu<complexd>(b, c, large ? 360 : 37);
}

// Small sizes for compute-sanitizer (memcheck, racecheck: kernels run 10-100x
// slower there): several panels, look-ahead on and off, a one-column last
// panel, padded ld, the host references.
TEMPLATE_LIST_TEST_CASE("LU with look-ahead and several panels (sanitizer sizes)", "[dense][lu][sanitize]",
                        backends) {
  const TestType b{};
  for (const auto& c : std::vector<lu_case>{{130, 16, true, 0}, {97, 32, false, 1}, {200, 64, true, 1}})
    check_lu<complexd>(b, c, 7);
}

TEMPLATE_LIST_TEST_CASE("LU factor, solve and inverses: complex<float> and real", "[dense][lu]",
                        backends) {
  const TestType b{};
  const bool large = is_device_backend_v<TestType>;
  std::vector<lu_case> cf = {{1, 0, true, 0}, {5, 0, true, 0}, {33, 16, true, 0},
                             {129, 0, true, 1}, {300, 64, false, 0}, {301, 0, true, 0}};
  if (large) cf.push_back({2000, 0, true, 0});
  for (const auto& c : cf) check_lu<complexf>(b, c, 20);
  for (const auto& c : std::vector<lu_case>{{1, 0, true, 0}, {9, 0, true, 0}, {65, 16, true, 0}, {257, 0, true, 0}}) {
    check_lu<double>(b, c, 5);
    check_lu<float>(b, c, 5);
  }
}

namespace {
template <class T, class B>
index_t singular_column(const B& b, std::vector<T> h, index_t n, index_t block_size = 0) {
  auto d = emgpu_test::upload(b, h);
  auto piv = make_vector<index_t>(b, n);
  try {
    dense::lu_factor(b, matrix_view<T>{d.data(), n, n, n}, piv.data(), dense::crout_lu{block_size});
  } catch (const singular_matrix& e) {
    return e.index();
  }
  return -1;
}
}  // namespace

TEMPLATE_LIST_TEST_CASE("singular and non-finite matrices raise singular_matrix", "[dense][lu][sanitize]",
                        backends) {
  using T = complexd;
  const TestType b{};
  for (index_t n : {12, 40, 150}) {
    for (index_t nb : {0, 8}) {
      INFO("n = " << n << ", block " << nb);
      // An exactly zero column stays zero under every update: pivot 0 exactly there.
      auto h = random_matrix<T>(n, n, n, 5u);
      for (index_t i = 0; i < n; ++i) h[std::size_t(i + 5 * n)] = T(0);
      CHECK(singular_column(b, h, n, nb) == 5);
      // Non-finite entries only spread to the right of their column (updates
      // never touch earlier columns), so the failing column is theirs.
      h = random_matrix<T>(n, n, n, 6u);
      h[std::size_t(4 + 7 * n)] = T(std::numeric_limits<double>::quiet_NaN(), 0);
      CHECK(singular_column(b, h, n, nb) == 7);
      h = random_matrix<T>(n, n, n, 6u);
      h[std::size_t(9 + 10 * n)] = T(0, std::numeric_limits<double>::infinity());
      CHECK(singular_column(b, h, n, nb) == 10);
      h = random_matrix<T>(n, n, n, 6u);
      h[std::size_t(n - 1 + (n - 1) * n)] = T(std::numeric_limits<double>::infinity(), 1);
      CHECK(singular_column(b, h, n, nb) == n - 1);
    }
  }
  // Exact cancellation: [[1 2],[2 4]] -> pivot 2, multiplier 1/2, 2 - 1/2*4 = 0 exactly.
  CHECK(singular_column(b, std::vector<T>{T(1), T(2), T(2), T(4)}, 2) == 1);
  CHECK(singular_column(b, std::vector<T>{T(0)}, 1) == 0);
  // The exception type is the documented one.
  {
    auto d = emgpu_test::upload(b, std::vector<T>(9, T(0)));
    auto piv = make_vector<index_t>(b, 3);
    REQUIRE_THROWS_AS(dense::lu_factor(b, matrix_view<T>{d.data(), 3, 3, 3}, piv.data()),
                      singular_matrix);
    REQUIRE_THROWS_AS((dense::crout_lu::factorization<TestType, T>(b, matrix_view<T>{d.data(), 3, 3, 3})),
                      singular_matrix);
  }
  // tri_inverse on factors with a zero on U's diagonal.
  {
    auto h = random_matrix<T>(6, 6, 6, 8u);
    h[std::size_t(3 + 3 * 6)] = T(0);
    auto d = emgpu_test::upload(b, h);
    index_t col = -1;
    try {
      dense::tri_inverse(b, matrix_view<T>{d.data(), 6, 6, 6});
    } catch (const singular_matrix& e) {
      col = e.index();
    }
    CHECK(col == 3);
  }
}

TEMPLATE_LIST_TEST_CASE("shape errors raise invalid_argument", "[dense][lu]", backends) {
  using T = complexd;
  const TestType b{};
  auto d = emgpu_test::upload(b, random_matrix<T>(4, 5, 4, 1u));
  auto piv = make_vector<index_t>(b, 5);
  REQUIRE_THROWS_AS(dense::lu_factor(b, matrix_view<T>{d.data(), 4, 5, 4}, piv.data()), invalid_argument);
  REQUIRE_THROWS_AS(dense::lu_factor(b, matrix_view<T>{d.data(), 4, 4, 3}, piv.data()), invalid_argument);
  REQUIRE_THROWS_AS(dense::lu_factor(b, matrix_view<T>{d.data(), 4, 4, 4}, static_cast<index_t*>(nullptr)),
                    invalid_argument);
  REQUIRE_THROWS_AS((dense::crout_lu::factorization<TestType, T>(b, matrix_view<T>{d.data(), 4, 5, 4})),
                    invalid_argument);
  REQUIRE_THROWS_AS(dense::tri_inverse(b, matrix_view<T>{d.data(), 5, 4, 5}), invalid_argument);
  const dense::crout_lu::factorization<TestType, T> f(b, matrix_view<T>{d.data(), 4, 4, 4});
  auto r = emgpu_test::upload(b, random_matrix<T>(5, 2, 5, 2u));
  REQUIRE_THROWS_AS(f.solve(matrix_view<T>{r.data(), 5, 2, 5}), invalid_argument);
  REQUIRE_THROWS_AS(dense::lu_solve(b, f.factors(), f.pivots(), matrix_view<T>{r.data(), 5, 2, 5}),
                    invalid_argument);
  REQUIRE_THROWS_AS(dense::lu_solve(b, f.factors(), f.pivots(), matrix_view<T>{r.data(), 4, 2, 3}),
                    invalid_argument);
  // A null ipiv in the solves (regression: dereferenced, a crash).
  REQUIRE_THROWS_AS(dense::lu_solve(b, f.factors(), static_cast<const index_t*>(nullptr),
                                    matrix_view<T>{r.data(), 4, 2, 5}),
                    invalid_argument);
  REQUIRE_THROWS_AS(dense::lu_solve_inverse(b, f.factors(), static_cast<const index_t*>(nullptr),
                                            matrix_view<T>{r.data(), 4, 2, 5}),
                    invalid_argument);
  // Empty problems are fine and do nothing.
  const dense::crout_lu::factorization<TestType, T> f0(b, matrix_view<T>{nullptr, 0, 0, 1});
  CHECK(f0.size() == 0);
  f0.solve(matrix_view<T>{nullptr, 0, 3, 1});
}

TEST_CASE("crout_lu satisfies the dense_solver concept", "[dense][lu]") {
  STATIC_REQUIRE(dense::dense_solver<dense::crout_lu, backend::serial, complexd>);
  STATIC_REQUIRE(dense::dense_solver<dense::crout_lu, backend::openmp, complexf>);
#if defined(EMGPU_TEST_CUDA)
  STATIC_REQUIRE(dense::dense_solver<dense::crout_lu, backend::cuda, complexd>);
#endif
  STATIC_REQUIRE(!dense::dense_solver<int, backend::serial, complexd>);
}

#if !defined(EMGPU_TEST_CUDA)
TEST_CASE("serial and OpenMP factorisations agree", "[dense][lu]") {
  // Same blocking and pivot rule; only Eigen's GEMM blocking of the column
  // slabs differs, which changes the summation order: the factors agree to
  // rounding (n eps times a modest amplification), the pivots exactly.
  using T = complexd;
  const index_t n = 333;
  const auto h = random_matrix<T>(n, n, n, 3u);
  auto s = h, o = h;
  std::vector<index_t> ps(static_cast<std::size_t>(n)), po(static_cast<std::size_t>(n));
  dense::lu_factor(backend::serial{}, matrix_view<T>{s.data(), n, n, n}, ps.data(), {32, true});
  dense::lu_factor(backend::openmp{{}, 2}, matrix_view<T>{o.data(), n, n, n}, po.data(), {32, true});
  CHECK(ps == po);
  CHECK(emgpu_test::rel_diff(o, s) <= 1e-11);
}

TEST_CASE("a block_size above n acts as n, however large", "[dense][lu]") {
  // Regression: on OpenMP, block_size = INT64_MAX overflowed the block count
  // (n + nb - 1) / nb: UB, then no factorisation at all and no error. One
  // block either way, so the factors are bitwise those of block_size = n.
  using T = complexd;
  const index_t n = 40;
  const auto h = random_matrix<T>(n, n, n, 5u);
  for (const index_t nb : {n + 1, std::numeric_limits<index_t>::max()}) {
    INFO("block_size " << nb);
    for (int threads : {1, 2}) {
      auto ref = h, x = h;
      std::vector<index_t> pr(static_cast<std::size_t>(n)), px(static_cast<std::size_t>(n));
      const backend::openmp omp{{}, threads};
      dense::lu_factor(omp, matrix_view<T>{ref.data(), n, n, n}, pr.data(), {n, true});
      dense::lu_factor(omp, matrix_view<T>{x.data(), n, n, n}, px.data(), {nb, true});
      CHECK(px == pr);
      CHECK(x == ref);
    }
  }
}
#endif

namespace {
/// Mixed-precision solve of A X = B: backward error in double (the same <= 10
/// criterion as the double solver), and which path it took.
template <class B>
void check_mixed(const B& b, const std::vector<complexd>& ha, index_t n, index_t nrhs,
                 bool expect_fallback) {
  using T = complexd;
  INFO("mixed: n = " << n << ", nrhs = " << nrhs);
  const MatD a = to_eigen(ha, n, n, n);
  auto d = emgpu_test::upload(b, ha);
  const dense::mixed_lu::factorization<B, T> f(b, matrix_view<T>{d.data(), n, n, n});
  const auto hb = random_matrix<T>(n, nrhs, n, 31u);
  auto db = emgpu_test::upload(b, hb);
  f.solve(matrix_view<T>{db.data(), n, nrhs, n});
  const MatD x = to_eigen(to_host(b, db), n, nrhs, n);
  const double sr = solve_ratio<T>(a, x, to_eigen(hb, n, nrhs, n));
  INFO("backward ratio " << sr << ", iterations " << f.last_iterations() << ", full precision "
                         << f.uses_full_precision());
  CHECK(sr <= 10);
  CHECK(f.uses_full_precision() == expect_fallback);
  if (!expect_fallback) {
    CHECK(f.last_iterations() >= 0);
    CHECK(f.last_iterations() <= 10);  // cond ~ 1e2..1e3: a few steps of ~cond * 6e-8
  }
}
}  // namespace

TEMPLATE_LIST_TEST_CASE("mixed_lu refines a single-precision LU to double accuracy",
                        "[dense][mixed]", backends) {
  const TestType b{};
  using T = complexd;
  const bool large = is_device_backend_v<TestType>;
  for (index_t n : {1, 2, 50, 257}) check_mixed(b, random_matrix<T>(n, n, n, 77u), n, 3, false);
  check_mixed(b, mom_like_matrix<T>(300, 300), 300, 1, false);
  if (large) check_mixed(b, random_matrix<T>(2000, 2000, 2000, 78u), 2000, 360, false);

  // cond ~ 1e10 > 1/eps_single: refinement cannot converge, so it must fall
  // back to the double factorisation and still meet the double criterion.
  {
    const index_t n = 60;
    std::mt19937_64 g(5);
    std::uniform_real_distribution<double> u(-1, 1);
    MatD r1(n, n), r2(n, n);
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < n; ++i) {
        r1(i, j) = cd(u(g), u(g));
        r2(i, j) = cd(u(g), u(g));
      }
    const MatD q1 = emgpu_test::ref::householder_q(r1);
    const MatD q2 = emgpu_test::ref::householder_q(r2);
    Eigen::VectorXd s(n);
    for (index_t i = 0; i < n; ++i) s(i) = std::pow(10.0, -10.0 * double(i) / double(n - 1));
    const MatD a = q1 * s.cast<cd>().asDiagonal() * q2.adjoint();
    std::vector<T> h(static_cast<std::size_t>(n * n));
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < n; ++i) h[std::size_t(i + j * n)] = T(a(i, j).real(), a(i, j).imag());
    check_mixed(b, h, n, 2, true);
  }
  // A column below single precision's range is zero in complex<float>:
  // singular there, fine in double (column scaling does not hurt pivoting).
  {
    const index_t n = 40;
    auto h = random_matrix<T>(n, n, n, 9u);
    for (index_t i = 0; i < n; ++i) h[std::size_t(i + 3 * n)] *= 1e-50;
    check_mixed(b, h, n, 2, true);
  }
  STATIC_REQUIRE(dense::dense_solver<dense::mixed_lu, TestType, complexd>);
}

#if defined(EMGPU_TEST_CUDA)
TEST_CASE("CUDA: a non-blocking user stream gives the default stream's results", "[dense][lu]") {
  // The look-ahead stream is ordered against the caller's stream by events;
  // with a user stream that does not synchronise with the legacy stream any
  // missing dependency shows up as a different (or corrupted) result.
  using T = complexd;
  const index_t n = 1100, nrhs = 5;
  const auto ha = random_matrix<T>(n, n, n, 21u);
  const auto hb = random_matrix<T>(n, nrhs, n, 22u);
  const backend::cuda b0{};
  auto d0 = emgpu_test::upload(b0, ha);
  auto x0 = emgpu_test::upload(b0, hb);
  const dense::crout_lu::factorization<backend::cuda, T> f0(b0, matrix_view<T>{d0.data(), n, n, n}, {128, true});
  f0.solve(matrix_view<T>{x0.data(), n, nrhs, n});
  synchronize(b0);

  cudaStream_t s = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
  {
    const backend::cuda b1{s, 0};
    auto d1 = emgpu_test::upload(b1, ha);
    auto x1 = emgpu_test::upload(b1, hb);
    const dense::crout_lu::factorization<backend::cuda, T> f1(b1, matrix_view<T>{d1.data(), n, n, n}, {128, true});
    f1.solve(matrix_view<T>{x1.data(), n, nrhs, n});
    synchronize(b1);
    CHECK(to_host(b1, d1) == to_host(b0, d0));  // same kernels, same order: bitwise
    CHECK(to_host(b1, x1) == to_host(b0, x0));
  }
  REQUIRE(cudaStreamDestroy(s) == cudaSuccess);
}

TEST_CASE("CUDA: out of device memory is a device_error with out_of_memory()", "[dense][lu]") {
  // mixed_lu allocates its single-precision copy (n^2 complex<float>) first;
  // at n = 300000 that is 720 GB, which no GPU has. The view is never read.
  using T = complexd;
  const backend::cuda b{};
  auto d = emgpu_test::upload(b, std::vector<T>(4, T(1)));
  bool oom = false;
  try {
    dense::mixed_lu::factorization<backend::cuda, T> f(b, matrix_view<T>{d.data(), 300000, 300000, 300000});
  } catch (const device_error& e) {
    oom = e.out_of_memory();
  }
  CHECK(oom);
}
#endif
