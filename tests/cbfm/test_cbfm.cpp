// CBFM (characteristic basis functions) against the full direct solution.
//
// References: the circle is checked against emgpu::scattering2d with the dense
// solver (scat2d's own fill, independent of the CBFM tile code); the cloud
// against solve_direct(), which fills the full N x N matrix with
// kernel::efie2d_operator and never touches the CBFM tiles or products.
// Tolerances: the targets (1e-3 relative L2 in J_z at tau = 1e-4,
// 0.05 dB in the echo width). Measured on the host: circle 9.5e-5, cloud
// 1.7e-4, so the bound has 5x slack without being unfailable (tau = 1e-2 gives
// 2.6e-3 / 4.8e-3, which fails it). Cross-backend agreement: both solve the same
// system with different summation orders and pivot searches; the reduced
// matrices have condition numbers below 1e4, so 1e-9 covers rounding
// (double eps 2.2e-16 times cond times a growth factor) and would catch any
// indexing or padding error (those give O(1) differences).
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "common/backends.hpp"
#include <emgpu/cbfm.hpp>

namespace {

namespace geo = emgpu::geometry;
using emgpu::index_t;

template <class B>
using cbfm_mom = emgpu::scattering2d<B, emgpu::kernel::mom, emgpu::cbfm::solver<>>;

// Circle of ka = 20 (20 wavelengths of contour), 16 cells per wavelength.
constexpr double circle_a = 1.0, circle_ka = 20;
constexpr index_t circle_cells = 320;

// 50 PEC cylinders of radius 0.1 lambda, 16 cells each, at random positions in
// an 8 x 8 lambda square, centres at least 3 radii apart.
std::vector<geo::mesh> cloud(index_t count, double a, index_t cells, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  const double side = 8;
  std::vector<geo::point2> c;
  while (index_t(c.size()) < count) {
    const geo::point2 p{side * u(rng), side * u(rng)};
    bool ok = true;
    for (const auto& q : c) ok = ok && std::hypot(p.x - q.x, p.y - q.y) >= 3 * a;
    if (ok) c.push_back(p);
  }
  std::vector<geo::mesh> m;
  for (const auto& p : c) m.emplace_back(geo::circle(a, p), cells);
  return m;
}

double max_db_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

emgpu::cbfm::solver<> options(double tau, index_t blocks_per_body = 0) {
  emgpu::cbfm::solver<> o;
  o.tau = tau;
  o.blocks_per_body = blocks_per_body;
  o.tile_unknowns = 128;  // several panels per direction even at this size
  return o;
}

}  // namespace

TEMPLATE_LIST_TEST_CASE("cbfm: circle ka = 20 in 8 blocks matches the direct solution", "[cbfm]",
                        emgpu_test::backends) {
  const TestType b{};
  const double f = emgpu::frequency_for_ka(circle_ka, circle_a);
  const geo::mesh m(geo::circle(circle_a), circle_cells);
  const auto obs = emgpu::angles_deg(0, 360, 181);
  const std::vector<double> inc{0.0, 1.1};
  emgpu::scattering2d<TestType, emgpu::kernel::mom, emgpu::dense::crout_lu> direct(m, f, {}, b);
  const auto ref = direct.solve(inc, obs);

  std::vector<double> errors;
  for (double tau : {1e-2, 1e-3, 1e-4}) {
    cbfm_mom<TestType> s(m, f, {}, b, options(tau, 8));
    const auto r = s.solve(inc, obs);
    const auto& rep = s.report();
    INFO("tau " << tau << " K " << rep.reduced);
    REQUIRE(rep.blocks == 8);
    REQUIRE(rep.unknowns == circle_cells);
    index_t sum = 0;
    for (index_t k : rep.cbfs) sum += k;
    CHECK(sum == rep.reduced);
    // A 2.5-wavelength block carries about 2 k r + a few degrees of freedom
    // (k r ~ 8), far fewer than its 40 unknowns: at least 2x compression.
    CHECK(2 * rep.reduced < rep.unknowns);
    CHECK(rep.max_cbfs <= rep.plane_waves);
    errors.push_back(emgpu_test::rel_diff(r.current, ref.current));
    if (tau == 1e-4) {
      CHECK(errors.back() < 1e-3);
      for (index_t c = 0; c < 2; ++c) CHECK(max_db_diff(r.echo_width_db(c), ref.echo_width_db(c)) < 0.05);
      const auto ms = r.monostatic(), md = ref.monostatic();
      for (std::size_t c = 0; c < ms.size(); ++c) CHECK(std::abs(10 * std::log10(ms[c] / md[c])) < 0.05);
    }
  }
  INFO("errors " << errors[0] << " " << errors[1] << " " << errors[2]);
  CHECK(errors[0] > 1e-3);  // tau = 1e-2 really is coarser: the test can fail
  CHECK(errors[1] < errors[0]);
  CHECK(errors[2] < errors[1]);
}

TEMPLATE_LIST_TEST_CASE("cbfm: cloud of 50 cylinders matches the direct solution", "[cbfm]", emgpu_test::backends) {
  const TestType b{};
  const double f = emgpu::constants::c0;  // lambda = 1 m
  const auto bodies = cloud(50, 0.1, 16, 7);
  const auto obs = emgpu::angles_deg(0, 360, 181);
  const std::vector<double> inc{0.3};
  std::vector<double> errors;
  emgpu::scattering2d_result ref;
  for (double tau : {1e-2, 1e-3, 1e-4}) {
    cbfm_mom<TestType> s(bodies, f, {}, b, options(tau));
    if (tau == 1e-2) ref = s.solve_direct(inc, obs);
    const auto r = s.solve(inc, obs);
    const auto& rep = s.report();
    INFO("tau " << tau << " K " << rep.reduced);
    REQUIRE(rep.blocks == 50);  // automatic partition: one block per small body
    REQUIRE(rep.unknowns == 800);
    // Each body is excited by ceil(2 k r) + 10 = 12 plane waves, so it has at
    // most 12 CBFs for its 16 unknowns.
    CHECK(rep.plane_waves == 12);
    CHECK(rep.reduced <= 12 * 50);
    CHECK(rep.reduced < rep.unknowns);
    errors.push_back(emgpu_test::rel_diff(r.current, ref.current));
    if (tau == 1e-4) {
      CHECK(errors.back() < 1e-3);
      CHECK(max_db_diff(r.echo_width_db(0), ref.echo_width_db(0)) < 0.05);
    }
  }
  INFO("errors " << errors[0] << " " << errors[1] << " " << errors[2]);
  CHECK(errors[0] > 1e-3);
  CHECK(errors[1] < errors[0]);
  CHECK(errors[2] < errors[1]);
}

TEMPLATE_LIST_TEST_CASE("cbfm: LCN kernel on a circle", "[cbfm]", emgpu_test::backends) {
  const TestType b{};
  const double f = emgpu::frequency_for_ka(circle_ka, circle_a);
  const geo::mesh m(geo::circle(circle_a), 100);  // 400 unknowns, 4 per cell
  const auto obs = emgpu::angles_deg(0, 360, 91);
  emgpu::scattering2d<TestType, emgpu::kernel::lcn<4>, emgpu::cbfm::solver<>> s(m, f, {}, b, options(1e-4, 8));
  const auto r = s.solve({0.0}, obs);
  const auto ref = s.solve_direct({0.0}, obs);
  // Near corrections cross block boundaries in the tiles: an error there
  // would show at O(1e-2) or worse. Measured 2.5e-4.
  CHECK(emgpu_test::rel_diff(r.current, ref.current) < 1e-3);
  CHECK(max_db_diff(r.echo_width_db(0), ref.echo_width_db(0)) < 0.05);
}

TEMPLATE_LIST_TEST_CASE("cbfm: single precision", "[cbfm]", emgpu_test::backends) {
  // complex<float> tiles, batches, products and Z_R against the double direct
  // solution: float rounding (6e-8 times a condition number of a few 100)
  // adds little to the CBF truncation error. Measured 7.1e-5 (float direct: 1.7e-5).
  const TestType b{};
  const double f = emgpu::frequency_for_ka(circle_ka, circle_a);
  const geo::mesh m(geo::circle(circle_a), circle_cells);
  emgpu::scattering2d<TestType, emgpu::kernel::mom, emgpu::cbfm::solver<>, emgpu::complex<float>> s(m, f, {}, b,
                                                                                                   options(1e-4, 8));
  emgpu::scattering2d<TestType, emgpu::kernel::mom, emgpu::dense::crout_lu> direct(m, f, {}, b);
  const auto r = s.solve({0.0});
  const auto ref = direct.solve({0.0});
  CHECK(emgpu_test::rel_diff(r.current, ref.current) < 1e-3);
}

TEMPLATE_LIST_TEST_CASE("cbfm: backends agree to rounding", "[cbfm]", emgpu_test::backends) {
  const TestType b{};
  const double f = emgpu::constants::c0;
  const auto bodies = cloud(12, 0.1, 16, 3);
  auto o = options(1e-4);
  o.tile_unknowns = 64;
  cbfm_mom<TestType> s(bodies, f, {}, b, o);
  cbfm_mom<emgpu::backend::serial> ref(bodies, f, {}, {}, options(1e-4));  // other tiling too
  const auto obs = emgpu::angles_deg(0, 360, 37);
  const auto r = s.solve({0.0, 2.0}, obs);
  const auto q = ref.solve({0.0, 2.0}, obs);
  REQUIRE(s.report().reduced == ref.report().reduced);
  CHECK(s.report().cbfs == ref.report().cbfs);
  CHECK(emgpu_test::rel_diff(r.current, q.current) < 1e-9);
  CHECK(emgpu_test::rel_diff(r.far_field, q.far_field) < 1e-9);
}

TEMPLATE_LIST_TEST_CASE("cbfm: user partition, wrap-around blocks and open contours", "[cbfm]",
                        emgpu_test::backends) {
  const TestType b{};
  const double f = emgpu::frequency_for_ka(10, 1.0);
  std::vector<geo::mesh> m;
  m.emplace_back(geo::circle(1.0), 160);
  const geo::point2 arc[] = {{3.0, -1.0}, {3.5, 0.0}, {3.0, 1.0}, {3.2, 2.0}};
  m.emplace_back(geo::polygon(std::span<const geo::point2>(arc, 4), false), 60);
  cbfm_mom<TestType> s(m, f, {}, b, options(1e-5));
  // Blocks of unequal size, one wrapping past cell 0 of the circle.
  s.set_partition({{0, 150, 50}, {0, 40, 30}, {0, 70, 80}, {1, 0, 25}, {1, 25, 35}});
  const auto r = s.solve({0.7}, emgpu::angles_deg(0, 360, 37));
  const auto ref = s.solve_direct({0.7}, emgpu::angles_deg(0, 360, 37));
  CHECK(s.report().blocks == 5);
  CHECK(s.report().max_block == 80);
  CHECK(emgpu_test::rel_diff(r.current, ref.current) < 1e-3);
}

TEMPLATE_LIST_TEST_CASE("cbfm: bad input raises invalid_argument", "[cbfm]", emgpu_test::backends) {
  const TestType b{};
  const geo::mesh m(geo::circle(1.0), 64);
  const double f = emgpu::constants::c0;
  using S = cbfm_mom<TestType>;
  auto bad = [&](auto mutate) {
    auto o = options(1e-3);
    mutate(o);
    return S(m, f, {}, b, o);
  };
  REQUIRE_THROWS_AS(bad([](auto& o) { o.tau = -1; }), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(bad([](auto& o) { o.tau = std::nan(""); }), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(bad([](auto& o) { o.overlap_wavelengths = -0.1; }), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(bad([](auto& o) { o.block_wavelengths = 0; }), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(bad([](auto& o) { o.blocks_per_body = 65; }), emgpu::invalid_argument);  // more blocks than cells
  REQUIRE_THROWS_AS(bad([](auto& o) { o.plane_waves = -1; }), emgpu::invalid_argument);
  // Counts past max_plane_waves (regression: signed overflow in 2 k r +
  // extra, then a misleading "no response above tau"; or a terabyte
  // allocation): rejected up front, or when the frequency makes a block's
  // 2 k r exceed it.
  REQUIRE_THROWS_AS(bad([](auto& o) { o.extra_plane_waves = std::numeric_limits<index_t>::max(); }),
                    emgpu::invalid_argument);
  REQUIRE_THROWS_AS(bad([](auto& o) { o.plane_waves = index_t(1) << 62; }), emgpu::invalid_argument);
  {
    S far(m, 1e20, {}, b);
    REQUIRE_THROWS_AS(far.factor(), emgpu::invalid_argument);
  }
  REQUIRE_THROWS_AS(S(m, -1.0, {}, b), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(S(std::vector<geo::mesh>{}, f, {}, b), emgpu::invalid_argument);
  S s(m, f, {}, b);
  REQUIRE_THROWS_AS(s.set_partition({}), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(s.set_partition({{0, 0, 32}, {0, 30, 34}}), emgpu::invalid_argument);  // overlap
  REQUIRE_THROWS_AS(s.set_partition({{0, 0, 32}}), emgpu::invalid_argument);               // gap
  REQUIRE_THROWS_AS(s.set_partition({{1, 0, 64}}), emgpu::invalid_argument);               // no body 1
  REQUIRE_THROWS_AS(s.set_partition({{0, 0, 0}, {0, 0, 64}}), emgpu::invalid_argument);    // empty block
  REQUIRE_THROWS_AS(s.solve({std::nan("")}), emgpu::invalid_argument);
  REQUIRE_THROWS_AS(s.solve({0.0}, {INFINITY}), emgpu::invalid_argument);
  const auto r = s.solve(std::vector<double>{});  // no incidence: an empty result, not an error
  CHECK(r.columns() == 0);
}

#if !defined(EMGPU_TEST_CUDA)
TEST_CASE("cbfm: partition helpers", "[cbfm]") {
  std::vector<geo::mesh> m;
  m.emplace_back(geo::circle(1.0), 100);
  const geo::point2 line[] = {{3.0, 0.0}, {3.0, 4.0}};
  m.emplace_back(geo::polygon(std::span<const geo::point2>(line, 2), false), 40);
  const auto g = emgpu::cbfm::discretize_bodies(std::span<const geo::mesh>(m), emgpu::kernel::mom{});
  REQUIRE(g.disc.n == 140);
  REQUIRE(g.cell_offset == std::vector<index_t>{0, 100, 140});
  const auto p = emgpu::cbfm::split_equal(g, 4);
  REQUIRE(p.size() == 8);
  emgpu::cbfm::validate(g, p);
  for (const auto& bl : p) CHECK((bl.body == 0 ? bl.cells == 25 : bl.cells == 10));
  // By length: circle 2 pi m, line 4 m, blocks of 1 m -> 6 and 4 blocks.
  const auto q = emgpu::cbfm::split_by_length(g, 1.0);
  emgpu::cbfm::validate(g, q);
  index_t on_circle = 0;
  for (const auto& bl : q) on_circle += bl.body == 0;
  CHECK(on_circle == 6);
  CHECK(q.size() == 10);
  // Overlap of 0.25 m: 4 cells of 2 pi / 100 m on a closed contour, wrapping
  // round; on the open line (0.1 m cells) 3 cells, but none past its ends.
  const auto e = emgpu::cbfm::extend(g, {0, 0, 25}, 0.25);
  CHECK(e.own_begin == 4);
  CHECK(e.unknowns.size() == 33u);
  CHECK(e.unknowns.front() == 96);
  CHECK(e.unknowns[4] == 0);
  const auto l = emgpu::cbfm::extend(g, {1, 0, 10}, 0.25);
  CHECK(l.own_begin == 0);
  CHECK(l.unknowns.size() == 13u);
  CHECK(l.unknowns.front() == 100);
  // A block that is the whole closed body is not extended.
  const auto w = emgpu::cbfm::extend(g, {0, 10, 100}, 0.25);
  CHECK(w.unknowns.size() == 100u);
  // Extreme lengths and limits (regression: lround and the ceiling division
  // overflowed): a tiny length gives one block per cell, the largest
  // max_cells no limit at all.
  const auto tiny = emgpu::cbfm::split_by_length(g, 1e-300);
  emgpu::cbfm::validate(g, tiny);
  CHECK(tiny.size() == 140u);
  const auto nolimit = emgpu::cbfm::split_by_length(g, 1.0, std::numeric_limits<index_t>::max());
  CHECK(nolimit.size() == q.size());
}
#endif
