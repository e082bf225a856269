// Host-only checks: contour generators and validation, the node-file reader,
// the cell mesh, the Bessel recurrences and the Mie series against mpmath.
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <emgpu/analytic.hpp>
#include <emgpu/geometry.hpp>
#include <emgpu/kernel.hpp>

#include "common/backends.hpp"
#include "common/catch.hpp"

namespace geo = emgpu::geometry;
using emgpu::constants::pi;

static std::string data(const std::string& f) { return std::string(EMGPU_TEST_DATA_DIR) + "/scattering2d/" + f; }
static std::vector<geo::point2> two_nodes() { return {{0, 0}, {1, 0}}; }

TEST_CASE("contour generators: lengths and closure", "[scattering2d][geometry]") {
  // Lengths by composite Gauss-Legendre of |r'|: ~1e-15 for smooth pieces.
  // Ellipse reference: 4 a E(1 - b^2/a^2) from mpmath (a = 1, b = 0.5).
  CHECK(std::abs(geo::circle(2.0).length() - 4 * pi) < 1e-13);
  CHECK(std::abs(geo::rectangle(2.0, 1.0).length() - 6.0) < 1e-14);
  CHECK(std::abs(geo::ellipse(1.0, 0.5).length() - 4.8442241102738380992) < 1e-13);
  const auto p = geo::parametric([](double u) { return geo::point2{std::cos(u), std::sin(u)}; }, 0, 2 * pi, true);
  CHECK(std::abs(p.length() - 2 * pi) < 1e-10);  // derivative by finite differences
  CHECK(geo::circle(1).closed());
}

TEST_CASE("mesh: cells follow pieces, flat vs curved", "[scattering2d][geometry]") {
  geo::mesh m(geo::rectangle(3.0, 1.0), 16, geo::cell_shape::flat);
  REQUIRE(m.size() == 16);
  // 3:1:3:1 sides -> 6, 2, 6, 2 cells: every cell has length 0.5
  for (emgpu::index_t i = 0; i < m.size(); ++i) CHECK(std::abs(geo::norm(m.end(i) - m.start(i)) - 0.5) < 1e-14);
  CHECK(m.prev(0) == 15);
  CHECK(m.next(15) == 0);
  geo::mesh c(geo::circle(1.0), 8);
  const auto mid = c.eval(0, 0.0);  // curved: on the circle
  CHECK(std::abs(geo::norm(mid.r) - 1) < 1e-15);
  const auto midf = c.eval(0, 0.0, geo::cell_shape::flat);  // chord midpoint: cos(pi/8)
  CHECK(std::abs(geo::norm(midf.r) - std::cos(pi / 8)) < 1e-15);
  REQUIRE_THROWS_AS(geo::mesh(geo::rectangle(1, 1), 3), emgpu::invalid_argument);  // fewer cells than pieces
}

TEST_CASE("interpolated node contours converge to the curve", "[scattering2d][geometry]") {
  // Nodes on the unit circle; the cubic interpolant's length error falls like h^4.
  auto err = [](int n, geo::interpolation kind) {
    std::vector<geo::point2> nodes;
    for (int i = 0; i < n; ++i) nodes.push_back({std::cos(2 * pi * i / n), std::sin(2 * pi * i / n)});
    return std::abs(geo::interpolate(nodes, true, kind).length() - 2 * pi);
  };
  const double c1 = err(16, geo::interpolation::cubic), c2 = err(32, geo::interpolation::cubic);
  INFO("cubic length errors " << c1 << " " << c2);
  CHECK(c1 / c2 > 12);  // >= h^3.6
  CHECK(err(32, geo::interpolation::linear) > 50 * c2);
  CHECK(err(32, geo::interpolation::quadratic) > c2);
}

TEST_CASE("bad geometry raises invalid_argument", "[scattering2d][geometry]") {
  using E = emgpu::invalid_argument;
  std::vector<geo::point2> two{{0, 0}, {1, 0}};
  REQUIRE_THROWS_AS(geo::polygon(two, true), E);  // < 3 nodes closed
  CHECK_NOTHROW(geo::polygon(two, false));       // an open strip is fine
  std::vector<geo::point2> rep{{0, 0}, {1, 0}, {1, 0}, {0, 1}};
  REQUIRE_THROWS_AS(geo::polygon(rep, true), E);  // repeated node
  std::vector<geo::point2> rep2{{0, 0}, {1, 0}, {1, 1}, {0, 0}};
  REQUIRE_THROWS_AS(geo::polygon(rep2, true), E);  // last repeats first
  std::vector<geo::point2> nan{{0, 0}, {1, 0}, {std::nan(""), 1}};
  REQUIRE_THROWS_AS(geo::polygon(nan, true), E);
  std::vector<geo::point2> bow{{0, 0}, {1, 1}, {1, 0}, {0, 1}};
  REQUIRE_THROWS_AS(geo::polygon(bow, true), E);  // self-intersection
  REQUIRE_THROWS_AS(geo::interpolate(bow, true, geo::interpolation::cubic), E);
  REQUIRE_THROWS_AS(geo::circle(0), E);
  REQUIRE_THROWS_AS(geo::circle(-1), E);
  REQUIRE_THROWS_AS(geo::ellipse(1, std::nan("")), E);
  REQUIRE_THROWS_AS(geo::rectangle(1, 0), E);
  // A figure-eight curve crosses itself at the origin.
  REQUIRE_THROWS_AS(geo::parametric([](double u) { return geo::point2{std::sin(u), std::sin(u) * std::cos(u)}; },
                                    0, 2 * pi, true),
                    E);
  // Parametric curve that does not close.
  REQUIRE_THROWS_AS(geo::parametric([](double u) { return geo::point2{u, u * u}; }, 0, 1, true), E);
  REQUIRE_THROWS_AS(geo::parametric([](double u) { return geo::point2{u, 0}; }, 1, 1, false), E);
  // Kernel options.
  REQUIRE_THROWS_AS(emgpu::kernel::lcn<4>{.near_cells = 0}.discretize(geo::mesh(geo::circle(1), 8)), E);
  REQUIRE_THROWS_AS(emgpu::kernel::mom{.near_fraction = -1}.discretize(geo::mesh(geo::circle(1), 8)), E);
}

TEST_CASE("contours that double back or enclose no area raise invalid_argument", "[scattering2d][geometry]") {
  using E = emgpu::invalid_argument;
  using nodes = std::vector<geo::point2>;
  // Three collinear nodes, closed: zero area, every pair of segments adjacent.
  REQUIRE_THROWS_AS(geo::polygon(nodes{{0, 0}, {1, 0}, {2, 0}}, true), E);
  REQUIRE_THROWS_AS(geo::polygon(nodes{{0, 0}, {1, 0}, {2, 0}, {3, 0}}, true), E);
  // Open chains that turn back by 180 degrees onto the previous segment.
  REQUIRE_THROWS_AS(geo::polygon(nodes{{0, 0}, {1, 0}, {0.5, 0}}, false), E);
  REQUIRE_THROWS_AS(geo::polygon(nodes{{0, 0}, {1, 0}, {1, 1}, {1, 0.5}}, false), E);
  REQUIRE_THROWS_AS(geo::polygon(nodes{{0, 0}, {1, 0}, {1, 1}, {1, 0.5}}, true), E);
  // Within rounding of a full reversal (a wedge 1e-12 rad wide).
  REQUIRE_THROWS_AS(geo::polygon(nodes{{0, 0}, {1, 0}, {0, 1e-12}}, false), E);
  REQUIRE_THROWS_AS(geo::interpolate(nodes{{0, 0}, {1, 0}, {2, 0}, {1.5, 0}}, false, geo::interpolation::cubic), E);
  // Closed, no fold, no crossing, no short piece (1e-11 > 1e-12 of the
  // length), but no area to speak of (1e-11 m^2 < 1e-10 L^2).
  REQUIRE_THROWS_AS(geo::rectangle(1.0, 1e-11), E);
  // Legitimate shapes: straight edges given by several collinear nodes (open
  // and closed), a sharp but real turn, and a thin (1e-6) but real strip.
  CHECK(std::abs(geo::polygon(nodes{{0, 0}, {0.5, 0}, {1, 0}}, false).length() - 1) < 1e-15);
  CHECK(std::abs(geo::polygon(nodes{{0, 0}, {1, 0}, {2, 0}, {2, 1}, {0, 1}}, true).length() - 6) < 1e-14);
  CHECK_NOTHROW(geo::interpolate(nodes{{0, 0}, {1, 0}, {2, 0}, {3, 0}}, false, geo::interpolation::cubic));
  CHECK_NOTHROW(geo::polygon(nodes{{0, 0}, {1, 0}, {0, 0.01}}, false));
  CHECK_NOTHROW(geo::rectangle(1.0, 1e-6));
  CHECK_NOTHROW(geo::polygon(two_nodes(), false));
}

TEST_CASE("lcn near_cells beyond the mesh means every cell", "[scattering2d][geometry]") {
  // Used to loop near_cells times inside an OpenMP region and die there
  // (std::bad_alloc -> std::terminate).
  const geo::mesh closed(geo::circle(1.0), 16);
  const auto all = emgpu::kernel::lcn<2>{.near_cells = std::numeric_limits<int>::max()}.discretize(closed);
  const auto eight = emgpu::kernel::lcn<2>{.near_cells = 8}.discretize(closed);  // 8 per side: all 16
  CHECK(all.blocks.size() == std::size_t(16 * 16 * 2));
  CHECK(all.blocks.size() == eight.blocks.size());
  CHECK(all.rules.size() == eight.rules.size());
  const geo::mesh open(geo::polygon(two_nodes(), false), 10);
  const auto all_open = emgpu::kernel::lcn<2>{.near_cells = std::numeric_limits<int>::max()}.discretize(open);
  CHECK(all_open.blocks.size() == std::size_t(10 * 10 * 2));
}

#if defined(_OPENMP)
TEST_CASE("an exception inside the parallel lcn discretisation reaches the caller", "[scattering2d][geometry]") {
  // A user curve that fails when called from inside a parallel region (the
  // near rules are built there): without the catch in the loop the exception
  // would leave the region and std::terminate would end the program.
  const auto curve = geo::parametric(
      [](double u) {
        if (omp_get_level() > 0) throw std::runtime_error("curve failed");
        return geo::point2{std::cos(u), std::sin(u)};
      },
      0, 2 * pi, true);
  const geo::mesh m(curve, 8);
  REQUIRE_THROWS_AS(emgpu::kernel::lcn<2>{}.discretize(m), std::runtime_error);
}
#endif

TEST_CASE("near-rule sizes are bounded (1..256 points)", "[scattering2d][geometry]") {
  using E = emgpu::invalid_argument;
  const geo::mesh m(geo::circle(1.0), 16);
  auto mom_points = [](int n) { return emgpu::kernel::mom{.accurate_near = true, .near_points = n}; };
  REQUIRE_THROWS_AS(mom_points(257).discretize(m), E);
  REQUIRE_THROWS_AS(mom_points(1000).discretize(m), E);
  REQUIRE_THROWS_AS(mom_points(0).discretize(m), E);
  REQUIRE_THROWS_AS(emgpu::kernel::lcn<2>{.log_points = 257}.discretize(m), E);
  REQUIRE_THROWS_AS(emgpu::kernel::lcn<2>{.panel_points = 257}.discretize(m), E);
  REQUIRE_THROWS_AS(emgpu::kernel::lcn<2>{.near_distance = std::numeric_limits<double>::infinity()}.discretize(m), E);
  // The largest allowed rule: built once for the whole mesh, so the plan has
  // one 256-point rule per source cell and takes milliseconds.
  const auto d = mom_points(256).discretize(m);
  CHECK(d.rules.size() > std::size_t(256 * 16));
  const emgpu::kernel::lcn<2> largest{.log_points = 256, .panel_points = 256};
  CHECK_NOTHROW(largest.discretize(m));
}

TEST_CASE("node files: reading and line-numbered errors", "[scattering2d][geometry]") {
  const auto open = geo::read_node_list(data("square_open.txt"));
  CHECK_FALSE(open.closed);
  REQUIRE(open.nodes.size() == 3);
  CHECK(open.nodes[1] == geo::point2{1.0, 0.0});
  const auto d = geo::read_contour(data("diamond.txt"));
  CHECK(d.closed());
  CHECK(std::abs(d.length() - 4 * std::sqrt(2.0)) < 1e-14);
  auto message = [](const std::string& f) {
    try {
      (void)geo::read_node_list(data(f));
    } catch (const emgpu::io_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(message("bad_number.txt").find("bad_number.txt:3:") != std::string::npos);
  CHECK(message("bad_flag.txt").find("bad_flag.txt:3:") != std::string::npos);
  CHECK(message("does_not_exist.txt").find("cannot open") != std::string::npos);
  REQUIRE_THROWS_AS(geo::read_contour(data("bowtie.txt")), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(geo::read_contour(data("repeated.txt")), emgpu::invalid_argument);
  std::istringstream two("0 0\n1 1\n");
  const auto nl = geo::read_node_list(two);
  REQUIRE_THROWS_AS(geo::polygon(nl.nodes, nl.closed), emgpu::invalid_argument);  // closed, 2 nodes
}

TEST_CASE("integer-order Bessel recurrences against std and the Wronskian", "[scattering2d][analytic]") {
  for (double x : {0.3, 1.0, 6.283185307179586, 10.0, 31.4}) {
    const int nmax = int(x) + 25;
    const auto j = emgpu::analytic::bessel_j_orders(nmax, x);
    const auto y = emgpu::analytic::bessel_y_orders(nmax, x);
    // Wronskian J_(n+1) Y_n - J_n Y_(n+1) = 2 / (pi x): independent of how
    // either sequence was computed; relative to the product sizes.
    for (int n = 0; n < nmax; ++n) {
      const double w = j[std::size_t(n) + 1] * y[std::size_t(n)] - j[std::size_t(n)] * y[std::size_t(n) + 1];
      const double scale = std::abs(j[std::size_t(n) + 1] * y[std::size_t(n)]) + std::abs(j[std::size_t(n)] * y[std::size_t(n) + 1]);
      INFO("x = " << x << " n = " << n);
      CHECK(std::abs(w - 2 / (pi * x)) <= 1e-14 * std::max(scale, 2 / (pi * x)));
    }
    CHECK(std::abs(j[5] - std::cyl_bessel_j(5.0, x)) <= 1e-14 * std::abs(j[5]) + 1e-16);
  }
  REQUIRE_THROWS_AS(emgpu::analytic::bessel_j_orders(3, 0.0), emgpu::invalid_argument);
}

TEST_CASE("Mie series against mpmath (40 digits)", "[scattering2d][analytic]") {
  std::ifstream f(std::string(EMGPU_TEST_DATA_DIR) + "/mie_cylinder_tm.csv");
  REQUIRE(f.good());
  std::string line;
  int rows = 0;
  double worst_s = 0;
  // Current errors are measured as a relative 2-norm over each (ka, phi_i)
  // group of 24 angles: pointwise relative errors in the deep shadow compare
  // against values ~1e-7 of the peak, which no double computation resolves.
  std::map<std::pair<double, double>, std::pair<double, double>> groups;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    double v[6];
    char c;
    std::istringstream ls(line);
    ls >> v[0] >> c >> v[1] >> c >> v[2] >> c >> v[3] >> c >> v[4] >> c >> v[5];
    const double k = 2 * pi, a = v[0] / k;
    const emgpu::analytic::pec_cylinder_tm ex(a, k);
    const auto j = ex.current(v[2], v[1]);
    const std::complex<double> jr(v[3], v[4]);
    auto& g = groups[{v[0], v[1]}];
    g.first += std::norm(j - jr);
    g.second += std::norm(jr);
    worst_s = std::max(worst_s, std::abs(ex.echo_width(v[2], v[1]) - v[5]) / v[5]);
    ++rows;
  }
  REQUIRE(rows == 240);
  double worst_j = 0, worst_j_small = 0;
  for (const auto& [key, g] : groups) {
    const double e = std::sqrt(g.first / g.second);
    worst_j = std::max(worst_j, e);
    if (key.first <= 10.5) worst_j_small = std::max(worst_j_small, e);
  }
  INFO("worst relative errors: J " << worst_j << " (ka <= 10: " << worst_j_small << "), sigma " << worst_s);
  // Rounding grows with ka (the terms 1/H_n reach sqrt(pi ka / 2) while
  // summing to O(1)): ~1e-15 up to ka = 10, ~1e-13 at ka = 31.4.
  CHECK(worst_j_small < 1e-14);
  CHECK(worst_j < 3e-13);
  CHECK(worst_s < 1e-13);
  REQUIRE_THROWS_AS(emgpu::analytic::pec_cylinder_tm(0.0, 1.0), emgpu::invalid_argument);
}

namespace {

// Leading terms of the series about x = 0 in long double (x86-64: a wider
// exponent range than double, so values beyond double's range stay comparable).
// J_n = (x/2)^n / n! (1 - (x/2)^2/(n+1) + (x/2)^4/(2 (n+1)(n+2))), the next term
// < 1e-40 relative for x <= 1e-7.
long double series_j(int n, long double x) {
  const long double h = x / 2, h2 = h * h;
  return std::pow(h, n) / std::tgamma(n + 1.0L) * (1 - h2 / (n + 1) + h2 * h2 / (2 * (n + 1) * (n + 2)));
}

// ln |Y_n| for n >= 2 from the leading term (n-1)!/pi (2/x)^n (the rest is
// (x/2)^2/(n-1) < 1e-15 relative for x <= 1e-7); Y_0 and Y_1 with their x^2 terms.
long double series_y(int n, long double x, bool& beyond_double) {
  const long double two_over_pi = 2 / emgpu::constants::pi;
  const long double l = std::log(x) - std::log(2.0L) + emgpu::constants::euler_gamma;
  beyond_double = false;
  if (n == 0) return two_over_pi * (l * (1 - x * x / 4) + x * x / 4);
  if (n == 1) {
    beyond_double = two_over_pi / x > std::numeric_limits<double>::max();
    return -two_over_pi / x + x * two_over_pi / 2 * (l - 0.5L);
  }
  const long double lg = std::lgamma(static_cast<long double>(n)) + n * std::log(2 / x) - std::log(static_cast<long double>(emgpu::constants::pi));
  beyond_double = lg > std::log(static_cast<long double>(std::numeric_limits<double>::max()));
  return beyond_double ? 0 : -std::exp(lg);
}

using emgpu_test::invalid_argument_message;

}  // namespace

TEST_CASE("Bessel order ranges at tiny and subnormal x against the power series", "[scattering2d][analytic]") {
  // Once the recurrence factor 2n/x overflowed (J_0(1e-300) = NaN), Y_n went
  // -inf - (-inf) = NaN past its overflow, and std::cyl_neumann threw
  // std::runtime_error for subnormal x. x = 1e-8 and 3e-8 run Miller's recurrence.
  const double dm = std::numeric_limits<double>::denorm_min();
  for (double x : {1e-300, 1e-160, 1e-60, 1e-10, 5e-9, 1e-8, 3e-8, 4e-309, 1e-310, 3 * dm, dm}) {
    const int nmax = 40;
    const auto j = emgpu::analytic::bessel_j_orders(nmax, x);
    const auto y = emgpu::analytic::bessel_y_orders(nmax, x);
    REQUIRE(j.size() == std::size_t(nmax) + 1);
    REQUIRE(y.size() == std::size_t(nmax) + 1);
    for (int n = 0; n <= nmax; ++n) {
      const long double rj = series_j(n, x);
      bool beyond = false;
      const long double ry = series_y(n, x, beyond);
      INFO("x = " << x << " n = " << n << ": J " << j[std::size_t(n)] << " vs " << double(rj) << ", Y "
                  << y[std::size_t(n)] << " vs " << (beyond ? -HUGE_VAL : double(ry)));
      // One subnormal step of slack: J_1 = x/2 rounds on that grid, and the
      // orders below it are 0.
      CHECK(std::abs(j[std::size_t(n)] - rj) <= 1e-14L * std::abs(rj) + 2 * dm);
      if (beyond)
        CHECK(y[std::size_t(n)] == -std::numeric_limits<double>::infinity());
      else
        CHECK(std::abs(y[std::size_t(n)] - ry) <= 1e-13L * std::abs(ry));
    }
  }
}

TEST_CASE("Bessel order ranges at large x: Wronskian", "[scattering2d][analytic]") {
  // J_(n+1) Y_n - J_n Y_(n+1) = 2/(pi x). Miller's normalisation sum loses
  // ~sqrt(x) ulps, hence 1e-15 sqrt(x). Y_0, Y_1 from std::cyl_neumann were off
  // by ~1e-14 x relative (2e-11 at 1e6, 3e-10 at 1e7).
  for (double x : {1e4, 1e5, 1e6, 1e7}) {
    const int nmax = int(x) + 50;
    const auto j = emgpu::analytic::bessel_j_orders(nmax, x);
    const auto y = emgpu::analytic::bessel_y_orders(nmax, x);
    double worst = 0;
    for (int n = 0; n < nmax; ++n) {
      const double w = j[std::size_t(n) + 1] * y[std::size_t(n)] - j[std::size_t(n)] * y[std::size_t(n) + 1];
      const double scale = std::max(std::abs(j[std::size_t(n) + 1] * y[std::size_t(n)]) + std::abs(j[std::size_t(n)] * y[std::size_t(n) + 1]), 2 / (pi * x));
      worst = std::max(worst, std::abs(w - 2 / (pi * x)) / scale);
    }
    INFO("x = " << x << ": max Wronskian error " << worst);
    CHECK(worst <= 1e-15 * std::sqrt(x));
  }
}

TEST_CASE("Miller recurrence at small x and many orders", "[scattering2d][analytic]") {
  // Each rescale by 1e-250 once multiplied every entry up to the start order:
  // ~start^2 / 40 operations here (1e11: 72 s on the development machine);
  // now only the nonzero ones (0.03 s). Not timed here (speed is for the
  // benchmarks); a return of the quadratic loop shows as this test's time.
  const auto j = emgpu::analytic::bessel_j_orders(2000000, 1e-6);
  CHECK(std::abs(j[0] - double(series_j(0, 1e-6L))) <= 1e-15);
  CHECK(std::abs(j[2] - double(series_j(2, 1e-6L))) <= 1e-14 * double(series_j(2, 1e-6L)));
}

TEST_CASE("Mie series at tiny ka and with extreme k or radius", "[scattering2d][analytic]") {
  // For ka <= 1e-20 the series is its n = 0 term to double precision (the
  // n = 1 terms are (ka)^2 and pi ka relative to it): S = 1/(1 - j Y_0(ka)),
  // J_z = 2 E0 / (pi ka eta) / (1 - j Y_0(ka)), Y_0 = (2/pi)(ln(ka/2) + gamma).
  // Once ka = 1e-60 gave NaN, 4/k overflowed for subnormal k (1e-310) where
  // sigma does not, and pi k a lost the low bits of a subnormal k (1e-320, 11
  // significant bits; its sigma is beyond double and must be inf).
  struct cyl { double a, k; };
  for (const cyl c : {cyl{1.0, 1e-60}, cyl{1.0, std::numeric_limits<double>::min()}, cyl{1e10, 1e-310},
                      cyl{1e300, 1e-320}, cyl{1e-200, 1e-100}, cyl{1e-30, 1e10}}) {
    const emgpu::analytic::pec_cylinder_tm ex(c.a, c.k);
    const long double ka = static_cast<long double>(c.a) * c.k;
    bool beyond = false;
    const long double y0 = series_y(0, ka, beyond);
    const std::complex<long double> inv_h0 = 1.0L / std::complex<long double>(1, -y0);
    const long double sigma = 4 * std::norm(inv_h0) / c.k;
    const std::complex<long double> jz = 2 / (emgpu::constants::pi * ka * emgpu::constants::eta0) * inv_h0;
    for (double phi : {0.0, 1.0, pi}) {
      INFO("a = " << c.a << " k = " << c.k << " phi = " << phi << ": sigma " << ex.echo_width(phi, 0.0) << " vs "
                  << double(sigma) << ", J " << ex.current(phi, 0.0) << " vs " << std::complex<double>(jz));
      if (sigma > std::numeric_limits<double>::max())
        CHECK(ex.echo_width(phi, 0.0) == std::numeric_limits<double>::infinity());
      else
        CHECK(std::abs(ex.echo_width(phi, 0.0) - sigma) <= 1e-14L * sigma);
      CHECK(std::abs(std::complex<long double>(ex.current(phi, 0.0)) - jz) <= 1e-14L * std::abs(jz));
    }
  }
}

TEST_CASE("Mie series at large ka against mpmath", "[scattering2d][analytic]") {
  // scripts/gen_mie_large_ka_reference.py (40 digits; radius 1, k = ka).
  // Once cos(n * psi) carried the rounding of n psi (n |psi| 2^-53, 1e-9 at
  // n = 1e7) and Y_0, Y_1 that of libstdc++ (1e-14 x): errors 2e-12 (ka = 1e5)
  // to 1.3e-10 (ka = 1e6). Now 1.5e-13; the current is measured against the
  // physical-optics scale 2 E0 / eta (the shadow side is 1e-41 of it).
  struct row { double ka, phi_inc, phi, sigma, re_j, im_j; };
  const row rows[] = {
      {100000.0, 0.0, 3.14159, 3.1415926537735600963, -0.0053054430710517611119, 0.0001898129528331617937},
      {1000000.0, 0.0, 3.14159, 3.1415926535888933533, 0.004973057310727723509, -0.0018580786091993495593},
      {1000000.0, 0.3, 2.9, 3.0271073166157710159, 0.0039756259325168190002, 0.0022110078203850638711},
      {1000000.0, 0.7, 0.1, 0.92840411379478061328, 2.4045229018292083457e-41, 2.0071809746544535265e-43},
  };
  for (const row& r : rows) {
    const emgpu::analytic::pec_cylinder_tm ex(1.0, r.ka);
    const double s = ex.echo_width(r.phi, r.phi_inc);
    const std::complex<double> j = ex.current(r.phi, r.phi_inc);
    INFO("ka = " << r.ka << " phi_inc = " << r.phi_inc << " phi = " << r.phi << ": sigma " << s << " (relative error "
                 << std::abs(s - r.sigma) / r.sigma << "), J error " << std::abs(j - std::complex<double>(r.re_j, r.im_j)));
    CHECK(std::abs(s - r.sigma) <= 5e-13 * r.sigma);
    CHECK(std::abs(j - std::complex<double>(r.re_j, r.im_j)) <= 5e-13 * 2 / emgpu::constants::eta0);
  }
}

TEST_CASE("Mie series and order ranges: limits give clear errors", "[scattering2d][analytic]") {
  namespace an = emgpu::analytic;
  // ka beyond max_mie_ka = 1e7 (or inf) once reached float -> int UB before a
  // misleading message; a ka that underflows was reported as "x must be > 0".
  for (const auto& [a, k] : {std::pair{1e10, 1e10}, std::pair{1e200, 1e200}, std::pair{1.0, 1.0000001e7}}) {
    const std::string m = invalid_argument_message([&] { an::pec_cylinder_tm(a, k); });
    INFO(m);
    CHECK(m.find("ka = wavenumber * radius") != std::string::npos);
    CHECK(m.find("1e7") != std::string::npos);
  }
  for (const auto& [a, k] : {std::pair{1e-200, 1e-200}, std::pair{1e-160, 1e-160}}) {
    const std::string m = invalid_argument_message([&] { an::pec_cylinder_tm(a, k); });
    INFO(m);
    CHECK(m.find("underflows") != std::string::npos);
  }
  CHECK(an::mie_truncation(an::max_mie_ka) > an::max_mie_ka);
  CHECK(an::pec_cylinder_tm(1e-3, 1e-304).truncation() == 1);  // ka = 1e-307: accepted
  REQUIRE_THROWS_AS(an::mie_truncation(1e20), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(an::mie_truncation(std::numeric_limits<double>::quiet_NaN()), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(an::bessel_j_orders(5, 1e10), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(an::bessel_y_orders(5, 1e10), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(an::bessel_j_orders(200000000, 1.0), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(an::bessel_j_orders(5, std::numeric_limits<double>::infinity()), emgpu::invalid_argument);
}
