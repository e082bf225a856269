// Host-only checks: contour generators and validation, the node-file reader,
// the cell mesh, the Bessel recurrences and the Mie series against mpmath.
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <emgpu/analytic.hpp>
#include <emgpu/geometry.hpp>
#include <emgpu/kernel.hpp>

#include "common/catch.hpp"

namespace geo = emgpu::geometry;
using emgpu::constants::pi;

static std::string data(const std::string& f) { return std::string(EMGPU_TEST_DATA_DIR) + "/scattering2d/" + f; }

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
