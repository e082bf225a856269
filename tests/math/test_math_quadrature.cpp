// Gauss-Legendre rules and the log-product rule against mpmath (50 digits):
// tests/data/gauss_legendre_reference.csv and tests/data/log_product_reference.csv
// (scripts/gen_quadrature_reference.py). The moment sums of the polynomial-
// exactness test run on each backend (rule uploaded, summed in a backend kernel),
// which is how kernels use the rules.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/backends.hpp"
#include <emgpu/math.hpp>

#if defined(__CUDACC__)
// The host-side references use long double, which nvcc flags for device code;
// no device code here touches it.
#pragma nv_diag_suppress 20208
#endif

using namespace emgpu;
using emgpu_test::backends;

namespace {

std::vector<std::vector<std::string>> read_csv(const std::string& name) {
  const std::string path = std::string(EMGPU_TEST_DATA_DIR) + "/" + name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::vector<std::vector<std::string>> rows;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::istringstream is(line);
    std::string c;
    while (std::getline(is, c, ',')) cells.push_back(c);
    rows.push_back(cells);
  }
  return rows;
}

// Moment k of a rule, computed on the backend (one thread per k, sequential sum
// over the nodes): out[k] = Sum_i w_i x_i^k, out_abs[k] = Sum_i |w_i x_i^k|.
struct moments_fn {
  const double* x;
  const double* w;
  index_t n;
  double* out;
  double* out_abs;
  EMGPU_HD void operator()(index_t k) const {
    double s = 0, sa = 0;
    for (index_t i = 0; i < n; ++i) {
      double p = w[i];
      for (index_t j = 0; j < k; ++j) p *= x[i];
      s += p;
      sa += abs_any(p);
    }
    out[k] = s;
    out_abs[k] = sa;
  }
};

}  // namespace

TEST_CASE("Gauss-Legendre nodes and weights match mpmath", "[math][quadrature]") {
  // Computed in long double and rounded once: within half an ulp plus the long
  // double error (~1e-18 relative), so |error| <= eps_T |ref| (at most one ulp).
  const auto rows = read_csv("gauss_legendre_reference.csv");
  REQUIRE(rows.size() > 250);
  std::map<int, std::vector<std::pair<long double, long double>>> ref;
  for (const auto& r : rows) ref[std::stoi(r[0])].push_back({std::stold(r[2]), std::stold(r[3])});
  double worst_x = 0, worst_w = 0;
  for (const auto& [n, xw] : ref) {
    const auto d = math::gauss_legendre<double>(n);
    const auto f = math::gauss_legendre<float>(n);
    const auto d01 = math::gauss_legendre_01<double>(n);
    REQUIRE(d.nodes.size() == std::size_t(n));
    REQUIRE(d.weights.size() == std::size_t(n));
    REQUIRE(d01.nodes.size() == std::size_t(n));
    for (int i = 0; i < n; ++i) {
      const long double x = xw[std::size_t(i)].first, w = xw[std::size_t(i)].second;
      INFO("n = " << n << ", i = " << i);
      const double ex = double(std::fabs(d.nodes[std::size_t(i)] - x)), ew = double(std::fabs(d.weights[std::size_t(i)] - w));
      REQUIRE(ex <= 2.2205e-16 * double(std::fabs(x)) + 1e-40);  // mpmath middle node: ~1e-50, not 0
      REQUIRE(ew <= 2.2205e-16 * double(w));
      worst_x = std::max(worst_x, ex);
      worst_w = std::max(worst_w, ew / double(w));
      REQUIRE(std::fabs(f.nodes[std::size_t(i)] - x) <= 1.1921e-7L * std::fabs(x) + 1e-40L);
      REQUIRE(std::fabs(f.weights[std::size_t(i)] - w) <= 1.1921e-7L * w);
      // [0, 1]: the node (1 + x)/2 near 0 keeps only the absolute accuracy of x.
      REQUIRE(std::fabs(d01.nodes[std::size_t(i)] - (1 + x) / 2) <= 1.2e-16L);
      REQUIRE(std::fabs(d01.weights[std::size_t(i)] - w / 2) <= 1.1103e-16L * w);
      // Exact symmetry and ascending order.
      REQUIRE(d.nodes[std::size_t(i)] == -d.nodes[std::size_t(n - 1 - i)]);
      REQUIRE(d.weights[std::size_t(i)] == d.weights[std::size_t(n - 1 - i)]);
      if (i > 0) REQUIRE(d.nodes[std::size_t(i)] > d.nodes[std::size_t(i - 1)]);
    }
  }
  std::printf("[math] Gauss-Legendre n <= 128 vs mpmath: max node error %.2e, max relative weight error %.2e\n",
              worst_x, worst_w);
}

TEST_CASE("Gauss-Legendre rejects n < 1", "[math][quadrature]") {
  REQUIRE_THROWS_AS(math::gauss_legendre<double>(0), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(math::gauss_legendre<float>(-3), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(math::gauss_legendre_01<double>(0), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(math::log_product_weights<double>(0, 0.0, 1.0, 0.5), emgpu::invalid_argument);
}

TEMPLATE_LIST_TEST_CASE("Gauss-Legendre integrates degree 2n-1 exactly (moments on the backend)",
                        "[math][quadrature]", backends) {
  // Exact: Integral_{-1}^{1} x^k = 2/(k+1) (k even) or 0; on [0,1] 1/(k+1).
  // Tolerance: (2k + n + 4) eps Sum |w_i x_i^k|: rounding x_i to double perturbs
  // x_i^k by k eps relative, the sum adds n eps, in any order. A node off by
  // 1e-13 would already fail for the larger k. Degree 2n (one beyond) must NOT
  // be exact, which shows the test can fail.
  const TestType b{};
  for (int n : {1, 2, 3, 5, 8, 16, 31, 64, 100, 128}) {
    for (int interval = 0; interval < 2; ++interval) {
      const auto r = interval == 0 ? math::gauss_legendre<double>(n) : math::gauss_legendre_01<double>(n);
      auto x = emgpu_test::upload(b, r.nodes);
      auto w = emgpu_test::upload(b, r.weights);
      const index_t nk = 2 * index_t(n) + 1;
      auto m = make_vector<double>(b, nk), ma = make_vector<double>(b, nk);
      for_each_index(b, nk, moments_fn{x.data(), w.data(), index_t(n), m.data(), ma.data()});
      const std::vector<double> mh = to_host(b, m), mah = to_host(b, ma);
      for (int k = 0; k <= 2 * n; ++k) {
        const double s = mh[std::size_t(k)], sa = mah[std::size_t(k)];
        const double exact = interval == 0 ? (k % 2 == 0 ? 2.0 / (k + 1) : 0.0) : 1.0 / (k + 1);
        const double tol = double(2 * k + n + 4) * 1.1102e-16 * sa;
        INFO("n = " << n << ", k = " << k << (interval ? " on [0,1]" : " on [-1,1]") << ": sum " << s
                    << ", exact " << exact);
        if (k < 2 * n) {
          REQUIRE(std::fabs(s - exact) <= tol);
        } else if (interval == 0 && n <= 16) {
          // The error for x^(2n) is 2^(2n+1) (n!)^4 / ((2n+1) ((2n)!)^2), about
          // sqrt(pi n)/((2n+1) 4^n): far above rounding for n <= 16 (2e-11 at 16).
          REQUIRE(std::fabs(s - exact) > 100 * tol);
        }
      }
    }
  }
}

TEST_CASE("log_product_weights integrate f(x) ln|x - x0| to mpmath accuracy", "[math][quadrature]") {
  // Rows: monomials x^p, p < n (exact for the rule: error is rounding only) and
  // cos, exp with n = 24 (converged far below rounding on these cells). x0 inside,
  // at the midpoint, at both endpoints, just outside (1e-6 and 1e-3 of the cell),
  // and far outside (0.5, 10 and 1000 cells away).
  // Tolerance: 1e-14 Sum_i |w_i f(x_i)| (rounding of weights, nodes and f(x_i), the
  // sum; the scale is the sum of magnitudes because ln changes sign inside).
  const auto rows = read_csv("log_product_reference.csv");
  REQUIRE(rows.size() > 900);
  std::map<std::tuple<double, double, double, int>, std::vector<double>> cache;
  std::map<int, math::quadrature_rule<double>> rules;
  double worst = 0;
  for (const auto& r : rows) {
    const double a = std::stod(r[0]), b = std::stod(r[1]), x0 = std::stod(r[2]);
    const int n = std::stoi(r[3]);
    const std::string& fn = r[4];
    const long double ref = std::stold(r[5]);
    auto key = std::make_tuple(a, b, x0, n);
    auto it = cache.find(key);
    if (it == cache.end()) it = cache.emplace(key, math::log_product_weights<double>(n, a, b, x0)).first;
    const std::vector<double>& w = it->second;
    const auto& g = rules.try_emplace(n, math::gauss_legendre<double>(n)).first->second;
    REQUIRE(w.size() == std::size_t(n));
    long double s = 0, sa = 0;
    for (int i = 0; i < n; ++i) {
      const double x = 0.5 * (a + b) + 0.5 * (b - a) * g.nodes[std::size_t(i)];
      double f;
      if (fn == "cos") f = std::cos(x);
      else if (fn == "exp") f = std::exp(x);
      else f = std::pow(x, std::stoi(fn.substr(2)));
      s += (long double)w[std::size_t(i)] * f;
      sa += std::fabs((long double)w[std::size_t(i)] * f);
    }
    const double err = double(std::fabs(s - ref)), rel = err / double(sa);
    INFO("[" << a << ", " << b << "], x0 = " << x0 << ", n = " << n << ", f = " << fn << ": sum " << double(s)
             << ", mpmath " << double(ref));
    REQUIRE(err <= 1e-14 * double(sa));
    worst = std::max(worst, rel);
  }
  std::printf("[math] log_product_weights: max |error| / sum|w f| = %.2e over %zu cases\n", worst, rows.size());
}

TEST_CASE("log_product_weights in float and bad input", "[math][quadrature]") {
  // float: the same rule rounded to float; Integral_0^1 ln|x - 0.3| dx closed form.
  const auto w = math::log_product_weights<float>(8, 0.0f, 1.0f, 0.3f);
  double s = 0;
  for (float v : w) s += v;
  const double x0 = double(0.3f);
  const double exact = (1 - x0) * std::log(1 - x0) + x0 * std::log(x0) - 1;
  REQUIRE(std::fabs(s - exact) <= 8 * 1.2e-7 * std::fabs(exact));
  REQUIRE_THROWS_AS(math::log_product_weights<double>(4, 1.0, 1.0, 0.0), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(math::log_product_weights<double>(4, 2.0, 1.0, 0.0), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(math::log_product_weights<double>(4, 0.0, 1.0, std::numeric_limits<double>::quiet_NaN()),
                    emgpu::invalid_argument);
  REQUIRE_THROWS_AS(math::log_product_weights<double>(4, 0.0, std::numeric_limits<double>::infinity(), 0.5),
                    emgpu::invalid_argument);
}
