// Backend primitives and core types, each backend against a host reference
// computed independently in this file (plain loops in long double where it matters).
#include <complex>
#include <limits>
#include <numeric>

#include "common/backends.hpp"

using namespace emgpu;
using emgpu_test::backends;

namespace {
struct square_fn {
  double* out;
  EMGPU_HD void operator()(index_t i) const { out[i] = double(i) * double(i); }
};
struct index2d_fn {
  index_t* out;
  index_t ld;
  EMGPU_HD void operator()(index_t i, index_t j) const { out[i + j * ld] = i * 1000003 + j; }
};
struct value_fn {
  const double* p;
  EMGPU_HD double operator()(index_t i) const { return p[i]; }
};
}  // namespace

TEMPLATE_LIST_TEST_CASE("for_each_index covers every index exactly once", "[core][backend][sanitize]",
                        backends) {
  const TestType b{};
  for (index_t n : {index_t(0), index_t(1), index_t(7), index_t(1000), index_t(300001)}) {
    auto d = make_vector<double>(b, n);
    fill(b, d.data(), n, -1.0);
    for_each_index(b, n, square_fn{d.data()});
    synchronize(b);
    const std::vector<double> h = to_host(b, d);
    REQUIRE(index_t(h.size()) == n);
    for (index_t i = 0; i < n; ++i) REQUIRE(h[std::size_t(i)] == double(i) * double(i));
  }
}

TEMPLATE_LIST_TEST_CASE("2D for_each_index writes a full column-major tile", "[core][backend][sanitize]",
                        backends) {
  const TestType b{};
  const std::vector<std::pair<index_t, index_t>> shapes = {{1, 1}, {3, 5}, {129, 3}, {1000, 70}, {5, 70001}};
  for (auto [n0, n1] : shapes) {
    const index_t ld = n0 + 3;
    auto d = make_vector<index_t>(b, ld * n1);
    fill(b, d.data(), ld * n1, index_t(-7));
    for_each_index(b, n0, n1, index2d_fn{d.data(), ld});
    const auto h = to_host(b, d);
    for (index_t j = 0; j < n1; ++j)
      for (index_t i = 0; i < ld; ++i) {
        const index_t want = i < n0 ? i * 1000003 + j : -7;  // padding rows untouched
        REQUIRE(h[std::size_t(i + j * ld)] == want);
      }
  }
}

TEMPLATE_LIST_TEST_CASE("reduce, norm2, max_abs and all_finite match host loops",
                        "[core][backend]", backends) {
  const TestType b{};
  const index_t n = 100003;
  std::vector<double> h(static_cast<std::size_t>(n));
  for (index_t i = 0; i < n; ++i) h[std::size_t(i)] = std::sin(0.001 * double(i)) * (1 + i % 7);
  auto d = emgpu_test::upload(b, h);

  long double ref_sum = 0, ref_sq = 0, ref_max = 0;
  for (double x : h) {
    ref_sum += x;
    ref_sq += (long double)x * x;
    ref_max = std::max<long double>(ref_max, std::fabs(x));
  }
  const double sum = reduce(b, n, 0.0, value_fn{d.data()}, detail::plus_fn{});
  // Summation order differs between backends: bound by n eps sum|x|.
  REQUIRE(std::fabs(sum - double(ref_sum)) <= double(n) * 2.3e-16 * double(ref_sq));
  REQUIRE(std::fabs(norm2(b, d.data(), n) - std::sqrt(double(ref_sq))) <= 1e-12 * std::sqrt(double(ref_sq)));
  REQUIRE(max_abs(b, d.data(), n) == double(ref_max));
  REQUIRE(all_finite(b, d.data(), n));
  REQUIRE(reduce(b, 0, 42.0, value_fn{d.data()}, detail::plus_fn{}) == 42.0);

  for (double bad : {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
                     -std::numeric_limits<double>::infinity()}) {
    auto hb = h;
    hb[std::size_t(n / 2)] = bad;
    auto db = emgpu_test::upload(b, hb);
    REQUIRE_FALSE(all_finite(b, db.data(), n));
  }
}

TEMPLATE_LIST_TEST_CASE("complex buffers round-trip and norms use |z|", "[core][backend]", backends) {
  const TestType b{};
  std::vector<complexd> h;
  for (int i = 0; i < 1000; ++i) h.emplace_back(std::cos(i * 0.1), -std::sin(i * 0.3) * i);
  auto d = emgpu_test::upload(b, h);
  const auto back = to_host(b, d);
  REQUIRE(back == h);
  long double sq = 0;
  for (auto z : h) sq += std::norm(to_std(z));
  REQUIRE(std::fabs(norm2(b, d.data(), index_t(h.size())) - std::sqrt(double(sq))) <= 1e-13 * std::sqrt(double(sq)));
  std::vector<complexd> hb = h;
  hb[10] = complexd(1.0, std::numeric_limits<double>::quiet_NaN());
  auto db = emgpu_test::upload(b, hb);
  REQUIRE_FALSE(all_finite(b, db.data(), index_t(hb.size())));
}

TEMPLATE_LIST_TEST_CASE("backend tags satisfy the backend concept", "[core][backend]", backends) {
  STATIC_REQUIRE(backend_tag<TestType>);
  STATIC_REQUIRE_FALSE(backend_tag<int>);
}

#if defined(EMGPU_TEST_CUDA)
TEST_CASE("device out-of-memory becomes emgpu::device_error", "[core][cuda]") {
  const backend::cuda b{};
  const index_t huge = index_t(1) << 50;  // 8 PiB of doubles: no device has it
  try {
    auto v = make_vector<double>(b, huge);
    FAIL("allocation of 8 PiB succeeded");
  } catch (const device_error& e) {
    REQUIRE(e.out_of_memory());
    REQUIRE(std::string(e.what()).find("cudaMalloc") != std::string::npos);
  }
  // The failure must not poison later work.
  auto v = make_vector<double>(b, 16);
  fill(b, v.data(), 16, 2.0);
  REQUIRE(to_host(b, v)[15] == 2.0);
}
#endif

TEST_CASE("complex conversions and helpers", "[core]") {
  const std::complex<double> s(1.5, -2.25);
  const complexd z = from_std(s);
  REQUIRE(z.real() == 1.5);
  REQUIRE(z.imag() == -2.25);
  REQUIRE(to_std(z) == s);
  REQUIRE(abs2(z) == 1.5 * 1.5 + 2.25 * 2.25);
  REQUIRE(conj_any(z) == complexd(1.5, 2.25));
  REQUIRE(conj_any(3.0) == 3.0);
  std::complex<double> arr[2] = {s, std::conj(s)};
  REQUIRE(as_emgpu(arr)[1] == complexd(1.5, 2.25));
  STATIC_REQUIRE(std::is_same_v<real_type_t<complexf>, float>);
}

TEST_CASE("SI constants are mutually consistent", "[core]") {
  using namespace emgpu::constants;
  REQUIRE(std::fabs(mu0 * eps0 * c0 * c0 - 1.0) <= 4e-16);
  // eta0 is fixed by the conventions; sqrt(mu0/eps0) = mu0 c0 with CODATA 2018 mu0.
  REQUIRE(std::fabs(mu0 * c0 - eta0) / eta0 <= 1e-10);
  REQUIRE(std::fabs(gamma_exp - std::exp(euler_gamma)) <= 1e-15);
  // 120 pi differs from eta0 by 6.9e-4 relative: the conventions say never to mix them.
  const double shift = std::fabs(120 * pi / eta0 - 1.0);
  REQUIRE(shift > 6.8e-4);
  REQUIRE(shift < 7.0e-4);
}

TEST_CASE("error hierarchy carries the failing index and code", "[core]") {
  try {
    throw singular_matrix("zero pivot", 17);
  } catch (const error& e) {
    REQUIRE(dynamic_cast<const singular_matrix&>(e).index() == 17);
  }
  REQUIRE_THROWS_AS(detail::require(false, "bad"), invalid_argument);
  REQUIRE_NOTHROW(detail::require(true, "ok"));
  device_error d("x", 2);
  REQUIRE(d.code() == 2);
  REQUIRE_FALSE(d.out_of_memory());
}

namespace {
struct cplx_fn {
  const complexd* p;
  EMGPU_HD complexd operator()(index_t i) const { return p[i] * p[i]; }
};
}  // namespace

TEMPLATE_LIST_TEST_CASE("reduce over complex values and odd sizes", "[core][backend][sanitize]",
                        backends) {
  const TestType b{};
  for (index_t n : {index_t(1), index_t(3), index_t(255), index_t(1025), index_t(4 * 256 * 1024 + 17)}) {
    std::vector<complexd> h(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) h[std::size_t(i)] = complexd(std::cos(0.37 * i), std::sin(0.11 * i));
    auto d = emgpu_test::upload(b, h);
    std::complex<long double> ref = 0;
    long double mag = 0;
    for (auto z : h) {
      ref += std::complex<long double>(to_std(z * z));
      mag += std::abs(to_std(z * z));
    }
    const complexd got = reduce(b, n, complexd(1, -1), cplx_fn{d.data()}, detail::plus_fn{});
    // Order differs by backend: |error| <= n eps sum|x_i|, plus the init term.
    const double err = std::abs(to_std(got) - std::complex<double>(ref + std::complex<long double>(1, -1)));
    REQUIRE(err <= double(n) * 2.3e-16 * double(mag) + 1e-15);
  }
}
