// SCN node, mesh, sources, probes, outputs and errors of emgpu::tlm, every
// backend checked against an independent reference: the scattering matrix
// tabulated by scripts/tlm_scatter_matrix.py (exact rational arithmetic on the
// formulas of design/physics-conventions.md), energy conservation, exact
// axial propagation, and the serial backend for the parallel ones.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "common/backends.hpp"
#include <emgpu/tlm.hpp>

using namespace emgpu;
using emgpu_test::backends;
using tlm::component;

namespace {

// 2 S, row-major, from scripts/tlm_scatter_matrix.py.
constexpr int S2[12][12] = {
    {0, 1, 1, 0, 0, 0, 0, 0, 1, 0, -1, 0},  {1, 0, 0, 0, 0, 1, 0, 0, 0, -1, 0, 1},
    {1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, -1},  {0, 0, 1, 0, 1, 0, -1, 0, 0, 0, 1, 0},
    {0, 0, 0, 1, 0, 1, 0, -1, 0, 1, 0, 0},  {0, 1, 0, 0, 1, 0, 1, 0, -1, 0, 0, 0},
    {0, 0, 0, -1, 0, 1, 0, 1, 0, 1, 0, 0},  {0, 0, 1, 0, -1, 0, 1, 0, 0, 0, 1, 0},
    {1, 0, 0, 0, 0, -1, 0, 0, 0, 1, 0, 1},  {0, -1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0},
    {-1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1},  {0, 1, -1, 0, 0, 0, 0, 0, 1, 0, 1, 0},
};

// Deterministic pseudo-random values in [-1, 1).
template <class Real>
std::vector<Real> random_values(std::size_t n, unsigned seed) {
  std::vector<Real> v(n);
  std::uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
  for (auto& e : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    e = Real(double(x >> 11) * (2.0 / 9007199254740992.0) - 1.0);
  }
  return v;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

}  // namespace

TEST_CASE("tabulated SCN matrix is symmetric and its own inverse", "[tlm][node]") {
  for (int i = 0; i < 12; ++i)
    for (int j = 0; j < 12; ++j) {
      REQUIRE(S2[i][j] == S2[j][i]);
      int ss = 0;
      for (int k = 0; k < 12; ++k) ss += S2[i][k] * S2[k][j];
      REQUIRE(ss == (i == j ? 4 : 0));  // (2S)(2S) = 4 I
    }
}

TEST_CASE("scatter equals multiplication by the 12x12 matrix", "[tlm][node]") {
  for (unsigned seed = 0; seed < 20; ++seed) {
    const auto v = random_values<double>(12, seed);
    double r[12];
    tlm::scatter(v.data(), r);
    for (int i = 0; i < 12; ++i) {
      double want = 0;
      for (int j = 0; j < 12; ++j) want += 0.5 * S2[i][j] * v[std::size_t(j)];
      // Sums of four halved values: a few ulps of max |v| <= 1.
      REQUIRE(std::abs(r[i] - want) <= 8e-16);
    }
    // S S = I through the implementation itself.
    double back[12];
    tlm::scatter(r, back);
    for (int i = 0; i < 12; ++i) REQUIRE(std::abs(back[i] - v[std::size_t(i)]) <= 2e-15);
  }
}

TEMPLATE_LIST_TEST_CASE("one-node mesh: a step is S v times the face coefficient", "[tlm][node]",
                        backends) {
  const TestType b{};
  // With every face +1 (magnetic) each reflected pulse returns to its own port,
  // so a step applies S; with -1 it applies -S; two steps give v back.
  for (double g : {tlm::magnetic_wall, tlm::electric_wall}) {
    tlm::mesh m(1, 1, 1, 0.01, g);
    tlm::solver<TestType, double> s(m, b);
    const auto v = random_values<double>(12, 7);
    s.set_state(v);
    s.run(1);
    const auto r = s.state();
    for (int i = 0; i < 12; ++i) {
      double want = 0;
      for (int j = 0; j < 12; ++j) want += 0.5 * S2[i][j] * v[std::size_t(j)];
      REQUIRE(std::abs(r[std::size_t(i)] - g * want) <= 8e-16);
    }
    s.run(1);
    const auto v2 = s.state();
    for (int i = 0; i < 12; ++i) REQUIRE(std::abs(v2[std::size_t(i)] - v[std::size_t(i)]) <= 2e-15);
  }
}

TEMPLATE_LIST_TEST_CASE("connection pairs: pulses cross faces to the documented ports", "[tlm][node]",
                        backends) {
  const TestType b{};
  // 3 x 3 x 3 mesh; a unit pulse reflected out of each port of the centre node
  // must arrive on the paired port of the neighbour across that face.
  // Reflected port q of S: set v = column... simpler: put the pulse as
  // incident on port p of the centre; after one step port i of the neighbour
  // across face(i) holds S_ip. Check every (p, i) pair.
  const int pair[12] = {11, 8, 10, 7, 6, 9, 4, 3, 1, 5, 2, 0};  // partner, zero-based
  const int dir[12][3] = {{0, -1, 0}, {0, 0, -1}, {-1, 0, 0}, {0, 0, -1}, {0, -1, 0}, {-1, 0, 0},
                          {0, 1, 0},  {0, 0, 1},  {0, 0, 1},  {1, 0, 0},  {1, 0, 0},  {0, 1, 0}};
  tlm::mesh m(3, 3, 3, 0.01);
  tlm::solver<TestType, double> s(m, b);
  const index_t n = m.node_count();
  for (int p = 0; p < 12; ++p) {
    std::vector<double> v(std::size_t(12 * n), 0.0);
    v[std::size_t(p * n + m.index(1, 1, 1))] = 1.0;
    s.set_state(v);
    s.run(1);
    const auto r = s.state();
    double total = 0;
    for (int i = 0; i < 12; ++i) {
      const index_t nb = m.index(1 + dir[i][0], 1 + dir[i][1], 1 + dir[i][2]);
      REQUIRE(r[std::size_t(pair[i] * n + nb)] == 0.5 * S2[i][p]);
      total += std::abs(r[std::size_t(pair[i] * n + nb)]);
    }
    double all = 0;
    for (double x : r) all += std::abs(x);
    REQUIRE(all == total);  // nothing went anywhere else
  }
}

TEMPLATE_LIST_TEST_CASE("closed boxes conserve the sum of squared voltages", "[tlm][energy]",
                        backends) {
  const TestType b{};
  // Scatter is orthogonal and connection is a signed permutation when every
  // face has |Gamma| = 1, so sum V^2 is invariant; in double the drift over
  // 20 000 steps is rounding, ~1e-14 (conventions); require 1e-12.
  struct casedef {
    const char* name;
    double gamma;
    bool walls;
  };
  for (const casedef c : {casedef{"electric", tlm::electric_wall, false},
                          casedef{"magnetic", tlm::magnetic_wall, false},
                          casedef{"electric + internal walls", tlm::electric_wall, true},
                          casedef{"magnetic + internal walls", tlm::magnetic_wall, true}}) {
    INFO(c.name);
    tlm::mesh m(7, 5, 4, 0.002, c.gamma);
    if (c.walls) {
      m.add_plate(tlm::axis::x, 3, 0, 3, 1, 4).add_solid({5, 6, 1, 3, 0, 2});
      m.add_iris(tlm::axis::z, 2, 1, 4, 1, 3);
    }
    tlm::solver<TestType, double> s(m, b);
    s.set_state(random_values<double>(std::size_t(12 * m.node_count()), 3));
    const double e0 = s.energy();
    s.run(20000);
    const double e1 = s.energy();
    REQUIRE(std::abs(e1 - e0) / e0 < 1e-12);
    REQUIRE(e0 > 100.0);  // the state really was non-trivial
  }
  // Mixed: electric and magnetic faces together are still lossless.
  tlm::mesh m(4, 6, 5, 0.001);
  m.set_boundary(tlm::face::xmax, tlm::magnetic_wall).set_boundary(tlm::face::zmin, tlm::magnetic_wall);
  tlm::solver<TestType, double> s(m, b);
  s.set_state(random_values<double>(std::size_t(12 * m.node_count()), 5));
  const double e0 = s.energy();
  s.run(5000);
  REQUIRE(std::abs(s.energy() - e0) / e0 < 1e-12);
}

TEMPLATE_LIST_TEST_CASE("matched and partial faces only remove energy", "[tlm][energy]", backends) {
  const TestType b{};
  tlm::mesh m(6, 5, 4, 0.01, tlm::matched);
  m.set_boundary(tlm::face::ymax, 0.5);
  tlm::solver<TestType, double> s(m, b);
  s.set_state(random_values<double>(std::size_t(12 * m.node_count()), 9));
  const double e0 = s.energy();
  double e = e0;
  for (int k = 0; k < 20; ++k) {
    s.run(10);
    const double e2 = s.energy();
    REQUIRE(e2 <= e * (1 + 1e-14));
    e = e2;
  }
  REQUIRE(e < 0.5 * e0);  // the absorbers do absorb
}

TEMPLATE_LIST_TEST_CASE("axis-aligned plane wave travels at c0 without dispersion", "[tlm][propagation]",
                        backends) {
  const TestType b{};
  // A uniform Ey sheet source in a 2 x 2 cross-section with magnetic x walls
  // and electric y walls launches a TEM plane wave along z. A speed of c0
  // means dl per 2 dt, so Ey at k2 must equal Ey at k1 delayed by exactly
  // 2 (k2 - k1) steps; any dispersion would reshape the pulse on the way.
  tlm::mesh m(2, 2, 400, 0.001);
  m.set_boundary(tlm::face::xmin, tlm::magnetic_wall).set_boundary(tlm::face::xmax, tlm::magnetic_wall);
  m.set_boundary(tlm::face::zmin, tlm::matched).set_boundary(tlm::face::zmax, tlm::matched);
  tlm::solver<TestType, double> s(m, b);
  const double dt = m.dt();
  s.add_source(tlm::source::plane(tlm::axis::z, 10, 0, 2, 0, 2, component::ey,
                                  tlm::waveform::gaussian(60 * dt, 12 * dt)));
  const index_t k1 = 50, k2 = 150;
  const auto p1 = s.add_probe(0, 1, k1), p2 = s.add_probe(1, 0, k2);
  // The far-end echo reaches k2 after 2 (389 + 249) steps; stop well before.
  s.run(1200);
  const auto& e1 = s.probe(p1)[component::ey];
  const auto& e2 = s.probe(p2)[component::ey];
  const index_t lag = 2 * (k2 - k1);
  double peak = 0, err = 0;
  for (index_t n = lag; n < 1200; ++n) {
    peak = std::max(peak, std::abs(e2[std::size_t(n)]));
    err = std::max(err, std::abs(e2[std::size_t(n)] - e1[std::size_t(n - lag)]));
  }
  INFO("peak " << peak << " max deviation " << err);
  REQUIRE(peak > 0.4);   // the pulse (amplitude 1/2 each way) did arrive
  REQUIRE(err < 1e-12 * peak);
  // One step earlier or later is visibly wrong: the check can fail.
  double off = 0;
  for (index_t n = lag + 1; n < 1200; ++n)
    off = std::max(off, std::abs(e2[std::size_t(n)] - e1[std::size_t(n - lag - 1)]));
  REQUIRE(off > 1e-3 * peak);
}

TEMPLATE_LIST_TEST_CASE("sources set or add exactly the requested field", "[tlm][source]", backends) {
  const TestType b{};
  tlm::mesh m(4, 4, 4, 0.003, tlm::matched);
  for (int c = 0; c < 6; ++c) {
    const auto comp = component(c);
    INFO(tlm::component_name(comp));
    tlm::solver<TestType, double> s(m, b);
    auto v = random_values<double>(std::size_t(12 * m.node_count()), unsigned(c));
    s.set_state(v);
    // Reference fields of node (1,2,3) straight from the read-out formulas.
    double before[6], pv[12];
    for (int p = 0; p < 12; ++p) pv[p] = v[std::size_t(p * m.node_count() + m.index(1, 2, 3))];
    tlm::node_fields(pv, m.dl(), before);
    const double amp = c < 3 ? 7.5 : 0.02;  // V/m, A/m
    s.add_source(tlm::source::point(1, 2, 3, comp, tlm::waveform::samples({amp}), tlm::source_kind::soft));
    const auto p = s.add_probe(1, 2, 3);
    s.run(1);
    for (int f = 0; f < 6; ++f) {
      const double want = before[f] + (f == c ? amp : 0.0);
      REQUIRE(std::abs(s.probe(p).field[std::size_t(f)][0] - want) <= 1e-12 * (std::abs(want) + 1));
    }
    // Hard: the field becomes exactly the waveform value, others untouched.
    tlm::solver<TestType, double> h(m, b);
    h.set_state(v);
    h.add_source(tlm::source::point(1, 2, 3, comp, tlm::waveform::samples({amp}), tlm::source_kind::hard));
    const auto q = h.add_probe(1, 2, 3);
    h.run(1);
    for (int f = 0; f < 6; ++f) {
      const double want = f == c ? amp : before[f];
      REQUIRE(std::abs(h.probe(q).field[std::size_t(f)][0] - want) <= 1e-12 * (std::abs(want) + 1));
    }
  }
}

TEST_CASE("waveforms and the TE10 port profile", "[tlm][source]") {
  const double t0 = 1e-9, tau = 2e-10;
  const auto g = tlm::waveform::gaussian(t0, tau, 2.0);
  REQUIRE(g(0, t0) == 2.0);
  REQUIRE(std::abs(g(0, t0 + tau) - 2.0 * std::exp(-1.0)) < 1e-15);
  const auto mg = tlm::waveform::modulated_gaussian(5e9, t0, tau);
  REQUIRE(mg(0, t0) == 0.0);
  REQUIRE(std::abs(mg(0, t0 + 0.05e-9) - std::exp(-0.0625) * std::sin(2 * constants::pi * 5e9 * 0.05e-9)) < 1e-15);
  const auto sn = tlm::waveform::sinusoid(1e9, 3.0);
  REQUIRE(std::abs(sn(0, 0.25e-9) - 3.0) < 1e-14);
  const auto imp = tlm::waveform::impulse(4.0);
  REQUIRE(imp(0, 0.0) == 4.0);
  REQUIRE(imp(1, 1e-12) == 0.0);
  const auto smp = tlm::waveform::samples({1.0, 2.0});
  REQUIRE(smp(1, 0.0) == 2.0);
  REQUIRE(smp(2, 0.0) == 0.0);
  const auto fn = tlm::waveform::function([](double t) { return 2 * t; });
  REQUIRE(fn(5, 3.0) == 6.0);
  // TE10 across x in [2, 12), guide along z: Ey, weight sin(pi (i - 2 + 1/2) / 10).
  const auto s = tlm::source::waveguide_te10(tlm::axis::z, 4, tlm::axis::x, 2, 12, 0, 5, tlm::waveform::impulse());
  REQUIRE(s.field == component::ey);
  REQUIRE(s.i.size() == 50);
  for (std::size_t q = 0; q < s.i.size(); ++q) {
    REQUIRE(s.k[q] == 4);
    REQUIRE(std::abs(s.weight[q] - std::sin(constants::pi * (double(s.i[q]) - 1.5) / 10.0)) < 1e-15);
  }
  // Broad side along y: Ex.
  const auto s2 = tlm::source::waveguide_te10(tlm::axis::z, 0, tlm::axis::y, 0, 3, 0, 8, tlm::waveform::impulse());
  REQUIRE(s2.field == component::ex);
  REQUIRE(std::abs(s2.weight[0] - std::sin(constants::pi * 0.5 / 8.0)) < 1e-15);
}

namespace {
// A model exercising every feature, run on backend B; returns probe samples,
// DFT sums and the final state, all as doubles.
template <class Real, class B>
std::vector<double> full_run(const B& b, index_t steps, bool walls = true) {
  // Two OpenMP grains (openmp_nodes_per_thread), so the OpenMP loop really
  // runs on two threads.
  tlm::mesh m(29, 17, 35, 0.002, tlm::electric_wall);
  REQUIRE(m.node_count() >= 2 * tlm::detail::openmp_nodes_per_thread);
  m.set_boundary(tlm::face::zmax, tlm::matched).set_boundary(tlm::face::xmin, 0.3);
  if (walls)
    m.add_iris(tlm::axis::z, 5, 3, 9, 1, 6).add_solid({10, 12, 2, 4, 1, 3}).add_plate(tlm::axis::y, 3, 0, 4, 0, 2);
  tlm::solver<B, Real> s(m, b);
  const double dt = m.dt();
  s.add_source(tlm::source::point(2, 3, 1, component::ez, tlm::waveform::gaussian(30 * dt, 8 * dt)));
  s.add_source(tlm::source::point(9, 5, 7, component::hx, tlm::waveform::sinusoid(20e9, 1e-3), tlm::source_kind::hard));
  s.add_source(tlm::source::waveguide_te10(tlm::axis::z, 2, tlm::axis::x, 0, 13, 0, 7,
                                           tlm::waveform::modulated_gaussian(30e9, 40 * dt, 10 * dt)));
  s.add_source(tlm::source::plane(tlm::axis::x, 6, 0, 17, 0, 35, component::hz,
                                  tlm::waveform::samples({0.0, 1e-3, -2e-3, 5e-4})));
  s.set_dft_frequencies({10e9, 25e9});
  for (index_t q = 0; q < 9; ++q) s.add_probe(q, (q * 3) % 7, (q * 5) % 9);
  s.run(steps / 2);
  s.add_probe(12, 6, 8);  // added mid-run
  s.run(steps - steps / 2);
  std::vector<double> out;
  for (index_t p = 0; p < s.probe_count(); ++p)
    for (const auto& f : s.probe(p).field) out.insert(out.end(), f.begin(), f.end());
  for (index_t p = 0; p < s.probe_count(); ++p)
    for (int c = 0; c < 6; ++c)
      for (index_t q = 0; q < 2; ++q) {
        out.push_back(s.dft(p, component(c), q).real());
        out.push_back(s.dft(p, component(c), q).imag());
      }
  const auto st = s.state();
  out.insert(out.end(), st.begin(), st.end());
  out.push_back(s.energy());
  const auto snap = s.snapshot(component::ey, s.volume());
  out.insert(out.end(), snap.begin(), snap.end());
  return out;
}
}  // namespace

TEMPLATE_LIST_TEST_CASE("every backend gives the serial results", "[tlm][backend]", backends) {
  const TestType b{};
  // The update is additions and halvings only, so the backends agree to the
  // last bit in the voltages; the DFT sums and the energy are reduced in a
  // different order on the GPU (rounding, ~1e-15 relative in double).
  for (bool walls : {true, false}) {
    INFO("walls " << walls);
    const auto ref = full_run<double>(backend::serial{}, 300, walls);
    const auto got = full_run<double>(b, 300, walls);
    REQUIRE(got.size() == ref.size());
    double scale = 0;
    for (double x : ref) scale = std::max(scale, std::abs(x));
    REQUIRE(scale > 0);
    REQUIRE(max_abs_diff(got, ref) <= 1e-13 * scale);
  }
  {
    const auto ref = full_run<float>(backend::serial{}, 300);
    const auto got = full_run<float>(b, 300);
    REQUIRE(got.size() == ref.size());
    double scale = 0;
    for (double x : ref) scale = std::max(scale, std::abs(x));
    // float: the source injection may be contracted to FMAs by nvcc.
    REQUIRE(max_abs_diff(got, ref) <= 1e-5 * scale);
  }
}

TEMPLATE_LIST_TEST_CASE("host row fast path equals the per-node update bit for bit", "[tlm][backend]",
                        backends) {
  const TestType b{};
  // A wall on an outer face that is already an electric wall changes nothing
  // physically (-r either way) but sends the mesh through update_node (the
  // CUDA path) instead of the host's vectorised row loop.
  tlm::mesh open(9, 6, 5, 0.001);
  open.set_boundary(tlm::face::ymax, tlm::matched).set_boundary(tlm::face::zmin, 0.4);
  tlm::mesh walled = open;
  walled.add_plate(tlm::axis::x, 0, 0, 6, 0, 5);
  REQUIRE(walled.has_walls());
  tlm::solver<TestType, float> s1(open, b), s2(walled, b);
  const auto v = random_values<float>(std::size_t(12 * open.node_count()), 21);
  s1.set_state(v);
  s2.set_state(v);
  s1.run(50);
  s2.run(50);
  REQUIRE(s1.state() == s2.state());
  // Rows without walls in a model with walls also take the row loop.
  tlm::mesh mixed = open;
  mixed.add_plate(tlm::axis::y, 3, 2, 7, 1, 3).add_solid({4, 6, 0, 2, 3, 4});
  tlm::mesh mixed_walled = mixed;
  mixed_walled.add_plate(tlm::axis::x, 0, 0, 6, 0, 5);
  tlm::solver<TestType, float> s3(mixed, b), s4(mixed_walled, b);
  s3.set_state(v);
  s4.set_state(v);
  s3.run(50);
  s4.run(50);
  REQUIRE(s3.state() == s4.state());
  REQUIRE(s3.state() != s1.state());  // the walls did something
}

TEMPLATE_LIST_TEST_CASE("float and double runs agree to float accuracy", "[tlm][backend]", backends) {
  const TestType b{};
  const auto d = full_run<double>(b, 200);
  const auto f = full_run<float>(b, 200);
  double scale = 0;
  for (double x : d) scale = std::max(scale, std::abs(x));
  // 200 steps of O(1) rounding growth in float: 1e-4 of the largest value.
  REQUIRE(max_abs_diff(f, d) <= 1e-4 * scale);
}

TEMPLATE_LIST_TEST_CASE("snapshots, VTK files and progress reports", "[tlm][output]", backends) {
  const TestType b{};
  tlm::mesh m(5, 4, 3, 0.01);
  tlm::solver<TestType, double> s(m, b);
  s.set_state(random_values<double>(std::size_t(12 * m.node_count()), 11));
  const auto p = s.add_probe(3, 2, 1);
  s.run(3);
  s.add_probe(3, 2, 1);
  s.run(1);  // the new probe's sample 0 is the current state... of step 3
  const auto snap = s.snapshot(component::hy, s.volume());
  REQUIRE(index_t(snap.size()) == m.node_count());
  // Snapshot of the state after 4 steps equals what a probe reads at step 4.
  s.run(1);
  const double probe4 = s.probe(p)[component::hy][4];
  REQUIRE(snap[std::size_t(m.index(3, 2, 1))] == probe4);
  const auto plane = s.snapshot(component::ex, s.plane(tlm::axis::y, 2));
  REQUIRE(plane.size() == 15);
  const std::string path = "tlm_test_snapshot.vtk";
  s.write_vtk(path, component::ez, s.plane(tlm::axis::z, 1));
  std::ifstream f(path);
  REQUIRE(f.good());
  std::string line, all;
  while (std::getline(f, line)) all += line + "\n";
  REQUIRE(all.find("# vtk DataFile Version 3.0") == 0);
  REQUIRE(all.find("DIMENSIONS 5 4 1") != std::string::npos);
  REQUIRE(all.find("SCALARS Ez float 1") != std::string::npos);
  REQUIRE(all.find("POINT_DATA 20") != std::string::npos);
  std::remove(path.c_str());

  int calls = 0;
  index_t last = 0;
  s.set_progress([&](const tlm::progress_info& pi) {
    ++calls;
    REQUIRE(pi.step > last);
    REQUIRE(pi.total == 100);
    last = pi.step;
  });
  s.run(100);
  REQUIRE(calls == 10);
  REQUIRE(last == 100);
  s.reset();
  REQUIRE(s.steps_done() == 0);
  REQUIRE(s.energy() == 0.0);
  REQUIRE(s.probe(p)[component::ex].empty());
}

TEMPLATE_LIST_TEST_CASE("bad inputs raise the documented errors", "[tlm][errors]", backends) {
  const TestType b{};
  REQUIRE_THROWS_AS(tlm::mesh(0, 4, 4, 0.01), invalid_argument);
  REQUIRE_THROWS_AS(tlm::mesh(4, -1, 4, 0.01), invalid_argument);
  REQUIRE_THROWS_AS(tlm::mesh(4, 4, 4, 0.0), invalid_argument);
  REQUIRE_THROWS_AS(tlm::mesh(4, 4, 4, -1e-3), invalid_argument);
  REQUIRE_THROWS_AS(tlm::mesh(4, 4, 4, std::nan("")), invalid_argument);
  REQUIRE_THROWS_AS(tlm::mesh(4, 4, 4, 0.01, 1.5), invalid_argument);
  REQUIRE_THROWS_AS(tlm::mesh(index_t(1) << 40, index_t(1) << 40, 4, 0.01), invalid_argument);
  tlm::mesh m(6, 5, 4, 0.01);
  REQUIRE_THROWS_AS(m.set_boundary(tlm::face::xmin, -1.01), invalid_argument);
  REQUIRE_THROWS_AS(m.set_boundaries(std::numeric_limits<double>::infinity()), invalid_argument);
  REQUIRE_THROWS_AS(m.add_plate(tlm::axis::x, 7, 0, 5, 0, 4), invalid_argument);   // plane > nx
  REQUIRE_THROWS_AS(m.add_plate(tlm::axis::x, 2, 0, 6, 0, 4), invalid_argument);   // u1 > ny
  REQUIRE_THROWS_AS(m.add_plate(tlm::axis::y, 2, 3, 3, 0, 4), invalid_argument);   // empty
  REQUIRE_THROWS_AS(m.add_box({0, 7, 0, 5, 0, 4}), invalid_argument);
  REQUIRE_THROWS_AS(m.add_solid({-1, 2, 0, 5, 0, 4}), invalid_argument);
  REQUIRE_THROWS_AS(m.add_iris(tlm::axis::z, 2, 0, 7, 0, 1), invalid_argument);
  REQUIRE_THROWS_AS(m.wall(6, 0, 0, tlm::face::xmin), invalid_argument);
  REQUIRE_FALSE(m.has_walls());  // failed calls left the model unchanged
  REQUIRE_THROWS_AS(tlm::waveform::gaussian(0, 0), invalid_argument);
  REQUIRE_THROWS_AS(tlm::waveform::sinusoid(-1), invalid_argument);
  REQUIRE_THROWS_AS(tlm::waveform::samples({1.0, std::nan("")}), invalid_argument);

  tlm::solver<TestType, float> s(m, b);
  REQUIRE_THROWS_AS(s.add_probe(6, 0, 0), invalid_argument);
  REQUIRE_THROWS_AS(s.add_probe(0, 0, -1), invalid_argument);
  REQUIRE_THROWS_AS(s.add_source(tlm::source::point(0, 5, 0, component::ez, tlm::waveform::impulse())),
                    invalid_argument);
  REQUIRE_THROWS_AS(s.snapshot(component::ez, {0, 7, 0, 5, 0, 4}), invalid_argument);
  REQUIRE_THROWS_AS(s.snapshot(component::ez, {2, 2, 0, 5, 0, 4}), invalid_argument);
  REQUIRE_THROWS_AS(s.plane(tlm::axis::z, 4), invalid_argument);
  REQUIRE_THROWS_AS(s.run(-1), invalid_argument);
  REQUIRE_THROWS_AS(s.set_state(std::vector<float>(5)), invalid_argument);
  REQUIRE_THROWS_AS(s.set_dft_frequencies({1e9, std::nan("")}), invalid_argument);
  REQUIRE_THROWS_AS(s.dft(0, component::ex, 0), invalid_argument);
  REQUIRE_THROWS_AS(s.probe(0), invalid_argument);
  s.add_source(tlm::source::point(0, 0, 0, component::ez, tlm::waveform::function([](double) { return std::nan(""); })));
  REQUIRE_THROWS_AS(s.run(1), invalid_argument);
  // A model larger than any memory fails before allocating, with a clear error.
  const tlm::mesh huge(1 << 14, 1 << 14, 1 << 12, 1e-3);
  REQUIRE(huge.memory_bytes<float>() > (std::size_t(1) << 46));  // 96 TB
#if defined(EMGPU_TEST_CUDA)
  try {
    tlm::solver<TestType, float> big(huge, b);
    FAIL("expected device_error");
  } catch (const device_error& e) {
    REQUIRE(e.out_of_memory());
    REQUIRE(std::string(e.what()).find("device memory") != std::string::npos);
  }
#else
  REQUIRE_THROWS_AS((tlm::solver<TestType, float>(huge, b)), invalid_argument);
#endif
}

TEMPLATE_LIST_TEST_CASE("cell sizes, weights and amplitudes that do not fit the precision are refused",
                        "[tlm][errors][range]", backends) {
  const TestType b{};
  auto message_of = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const invalid_argument& e) {
      return e.what();
    }
    return "no invalid_argument";
  };
  // dt = dl / (2 c0) underflows to 0 in double: every probe read NaN.
  REQUIRE_THROWS_AS(tlm::mesh(6, 5, 4, 1e-320), invalid_argument);
  REQUIRE_THROWS_AS(tlm::mesh(6, 5, 4, 1e-300), invalid_argument);
  // The H read-out factor 1 / (2 eta0 dl) underflows (1e306: eta0 dl overflows).
  REQUIRE_THROWS_AS(tlm::mesh(6, 5, 4, 1e305), invalid_argument);
  REQUIRE_THROWS_AS(tlm::mesh(6, 5, 4, 1e306), invalid_argument);
  REQUIRE_NOTHROW(tlm::mesh(6, 5, 4, 1e-290));
  REQUIRE_NOTHROW(tlm::mesh(6, 5, 4, 1e300));

  // dl = 1e-46 is a fine double but 0 in float.
  const tlm::mesh tiny(6, 5, 4, 1e-46);
  const std::string msg = message_of([&] { tlm::solver<TestType, float> s(tiny, b); });
  INFO(msg);
  REQUIRE(msg.find("float") != std::string::npos);
  REQUIRE_THROWS_AS((tlm::solver<TestType, float>(tlm::mesh(6, 5, 4, 1e36), b)), invalid_argument);
  {
    tlm::solver<TestType, double> s(tiny, b);
    s.add_source(tlm::source::point(1, 1, 1, component::ez, tlm::waveform::impulse(1.0)));
    const auto p = s.add_probe(1, 1, 1);
    s.run(2);
    for (int c = 0; c < 6; ++c)
      for (double x : s.probe(p).field[std::size_t(c)]) REQUIRE(std::isfinite(x));
    REQUIRE(s.probe(p)[component::ez][0] == 1.0);
  }

  const tlm::mesh m(6, 5, 4, 0.01);
  // A weight that overflows float is refused when the source is added.
  {
    tlm::solver<TestType, float> s(m, b);
    auto src = tlm::source::point(1, 1, 1, component::ez, tlm::waveform::impulse(1.0));
    src.weight[0] = 1e300;
    REQUIRE_THROWS_AS(s.add_source(src), invalid_argument);
    tlm::solver<TestType, double> d(m, b);
    REQUIRE_NOTHROW(d.add_source(src));
  }
  // An amplitude that overflows float, alone, times the weight, or in the
  // port voltages of the field (four ports of E dl / 2 with dl = 1e4 m; of
  // H eta0 dl / 2 with dl = 1 cm) stops run() before it injects NaN.
  struct range_case {
    double dl, amp, weight;
    component c;
  };
  for (const range_case rc : {range_case{0.01, 1e300, 1.0, component::ez}, range_case{0.01, 1e300, 0.0, component::ez},
                              range_case{0.01, 1e20, 1e20, component::ez}, range_case{1e4, 1e36, 1.0, component::ez},
                              range_case{0.01, 1e38, 1.0, component::hz}}) {
    INFO(rc.dl << " " << rc.amp << " x " << rc.weight << " " << tlm::component_name(rc.c));
    tlm::solver<TestType, float> s(tlm::mesh(6, 5, 4, rc.dl), b);
    auto src = tlm::source::point(1, 1, 1, rc.c, tlm::waveform::impulse(rc.amp));
    src.weight[0] = rc.weight;
    s.add_source(src);
    const auto p = s.add_probe(2, 2, 2);
    const std::string why = message_of([&] { s.run(10); });
    INFO(why);
    REQUIRE(why.find("float") != std::string::npos);
    for (int q = 0; q < 6; ++q)
      for (double x : s.probe(p).field[std::size_t(q)]) REQUIRE(std::isfinite(x));
  }
  // Large values that fit run normally.
  for (const auto& [c, amp] : {std::pair<component, double>{component::ez, 1e38}, {component::hz, 1e36}}) {
    tlm::solver<TestType, float> s(m, b);
    s.add_source(tlm::source::point(1, 1, 1, c, tlm::waveform::impulse(amp)));
    const auto p = s.add_probe(1, 1, 1);
    s.run(10);
    REQUIRE(std::abs(s.probe(p)[c][0] - amp) <= 1e-6 * amp);
    for (int q = 0; q < 6; ++q)
      for (double x : s.probe(p).field[std::size_t(q)]) REQUIRE(std::isfinite(x));
  }
}

TEST_CASE("walls on a mesh larger than memory fail with the documented errors", "[tlm][errors][memory]") {
  // 2^50 nodes: the wall mask alone needs 1 PiB.
  tlm::mesh huge(index_t(1) << 20, index_t(1) << 20, index_t(1) << 10, 1e-3);
  REQUIRE_THROWS_AS(huge.add_plate(tlm::axis::z, 0, 0, 1, 0, 1), invalid_argument);
  REQUIRE_THROWS_AS(huge.add_solid({0, 1, 0, 1, 0, 1}), invalid_argument);
  try {
    huge.add_box({0, 1, 0, 1, 0, 1});
    FAIL("expected invalid_argument");
  } catch (const invalid_argument& e) {
    INFO(e.what());
    REQUIRE(std::string(e.what()).find("memory") != std::string::npos);
  }
  REQUIRE_FALSE(huge.has_walls());
  std::istringstream in("mesh 1048576 1048576 1024 0.001\n\nsolid 0 1 0 1 0 1\n");
  try {
    (void)tlm::mesh::parse(in, "big.txt");
    FAIL("expected io_error");
  } catch (const io_error& e) {
    INFO(e.what());
    REQUIRE(std::string(e.what()).rfind("big.txt:3:", 0) == 0);
  }
}

TEST_CASE("write_vtk refuses dimensions whose product overflows", "[tlm][errors][output]") {
  const std::string path = "tlm_test_overflow.vtk";
  const index_t big = index_t(1) << 32;
  // 2^32 * 2^32 wraps to 0 in 64 bits, which matched the empty value list.
  REQUIRE_THROWS_AS(tlm::write_vtk(path, "a", {}, {big, big, 1}, {0, 0, 0}, 1.0), invalid_argument);
  REQUIRE_THROWS_AS(tlm::write_vtk(path, "a", {1.0, 2.0}, {big, big, 2}, {0, 0, 0}, 1.0), invalid_argument);
  REQUIRE_THROWS_AS(tlm::write_vtk(path, "a", {1.0}, {std::numeric_limits<index_t>::max(), 2, 1}, {0, 0, 0}, 1.0),
                    invalid_argument);
  REQUIRE_FALSE(std::ifstream(path).good());
}

TEMPLATE_LIST_TEST_CASE("out-of-range enum values are refused", "[tlm][errors][enum]", backends) {
  const TestType b{};
  tlm::mesh m(6, 5, 4, 0.01);
  const auto bad_axis = static_cast<tlm::axis>(5), neg_axis = static_cast<tlm::axis>(-1);
  const auto bad_face = static_cast<tlm::face>(6);
  const auto bad_comp = static_cast<component>(7), neg_comp = static_cast<component>(-1);
  const auto g = tlm::waveform::impulse();

  REQUIRE_THROWS_AS(m.add_plate(bad_axis, 0, 0, 1, 0, 1), invalid_argument);
  REQUIRE_THROWS_AS(m.add_plate(neg_axis, 0, 0, 1, 0, 1), invalid_argument);
  REQUIRE_THROWS_AS(m.add_iris(bad_axis, 1, 0, 1, 0, 1), invalid_argument);
  REQUIRE_THROWS_AS(m.size(bad_axis), invalid_argument);
  REQUIRE_THROWS_AS(m.set_boundary(bad_face, 0.0), invalid_argument);
  REQUIRE_THROWS_AS(m.boundary(bad_face), invalid_argument);
  REQUIRE_THROWS_AS(m.wall(0, 0, 0, static_cast<tlm::face>(-3)), invalid_argument);
  REQUIRE_FALSE(m.has_walls());
  REQUIRE(m.boundaries() == tlm::mesh(6, 5, 4, 0.01).boundaries());
  try {
    (void)tlm::component_name(bad_comp);
    FAIL("expected invalid_argument");
  } catch (const invalid_argument& e) {
    INFO(e.what());
    REQUIRE(std::string(e.what()).find("bad component") != std::string::npos);
  }
  REQUIRE_THROWS_AS(tlm::component_name(neg_comp), invalid_argument);

  REQUIRE_THROWS_AS(tlm::source::point(1, 1, 1, bad_comp, g), invalid_argument);
  REQUIRE_THROWS_AS(tlm::source::plane(bad_axis, 1, 0, 2, 0, 2, component::ex, g), invalid_argument);
  REQUIRE_THROWS_AS(tlm::source::plane(tlm::axis::z, 1, 0, 2, 0, 2, bad_comp, g), invalid_argument);
  REQUIRE_THROWS_AS(tlm::source::waveguide_te10(tlm::axis::z, 1, bad_axis, 0, 2, 0, 2, g), invalid_argument);
  REQUIRE_THROWS_AS(tlm::source::waveguide_te10(neg_axis, 1, tlm::axis::x, 0, 2, 0, 2, g), invalid_argument);

  tlm::solver<TestType, float> s(m, b);
  auto src = tlm::source::point(1, 1, 1, component::ez, g);
  src.field = bad_comp;
  REQUIRE_THROWS_AS(s.add_source(src), invalid_argument);
  src.field = component::ez;
  src.kind = static_cast<tlm::source_kind>(4);
  REQUIRE_THROWS_AS(s.add_source(src), invalid_argument);
  const auto p = s.add_probe(1, 1, 1);
  s.set_dft_frequencies({1e9});
  s.run(2);
  REQUIRE_THROWS_AS(s.probe(p)[bad_comp], invalid_argument);
  REQUIRE_THROWS_AS(s.dft(p, bad_comp, 0), invalid_argument);
  REQUIRE_THROWS_AS(s.snapshot(bad_comp, s.volume()), invalid_argument);
  REQUIRE_THROWS_AS(s.snapshot(neg_comp, s.volume()), invalid_argument);
  REQUIRE_THROWS_AS(s.plane(bad_axis, 0), invalid_argument);
  const std::string path = "tlm_test_enum.vtk";
  REQUIRE_THROWS_AS(s.write_vtk(path, bad_comp, s.volume()), invalid_argument);
  REQUIRE_FALSE(std::ifstream(path).good());
}

TEST_CASE("model files: format, walls and line-numbered errors", "[tlm][io]") {
  std::istringstream good(
      "# WR-28 section\n"
      "mesh 6 5 4 0.001   # cells\n"
      "\n"
      "boundary all electric\n"
      "boundary zmax matched\n"
      "boundary xmin 0.25\n"
      "plate x 3 0 2 1 3\n"
      "iris z 2 1 4 1 3\n"
      "box 0 2 0 2 0 2\n"
      "solid 4 5 3 4 2 3\n"
      "layer 3\n"
      "#.....\n"
      "......\n"
      "......\n"
      "......\n"
      ".....#\n");
  const auto m = tlm::mesh::parse(good, "good.txt");
  tlm::mesh ref(6, 5, 4, 0.001);
  ref.set_boundary(tlm::face::zmax, tlm::matched).set_boundary(tlm::face::xmin, 0.25);
  ref.add_plate(tlm::axis::x, 3, 0, 2, 1, 3).add_iris(tlm::axis::z, 2, 1, 4, 1, 3).add_box({0, 2, 0, 2, 0, 2});
  ref.add_solid({4, 5, 3, 4, 2, 3}).add_solid({0, 1, 0, 1, 3, 4}).add_solid({5, 6, 4, 5, 3, 4});
  REQUIRE(m.nx() == 6);
  REQUIRE(m.dl() == 0.001);
  REQUIRE(m.boundaries() == ref.boundaries());
  REQUIRE(m.wall_mask() == ref.wall_mask());
  REQUIRE(m.wall(2, 1, 1, tlm::face::xmax));   // plate x 3 between i = 2 and 3
  REQUIRE(m.wall(3, 1, 1, tlm::face::xmin));
  REQUIRE_FALSE(m.wall(2, 3, 1, tlm::face::xmax));  // j = 3 is outside the plate

  struct bad {
    const char* text;
    int line;
  };
  for (const bad c : {bad{"plate x 1 0 1 0 1\n", 1}, bad{"mesh 4 4 4\n", 1},
                      bad{"mesh 4 4 4 0.01\nboundary top electric\n", 2},
                      bad{"mesh 4 4 4 0.01\n\n# c\nboundary xmin 2\n", 4},
                      bad{"mesh 4 4 4 0.01\nboundary xmin wet\n", 2},
                      bad{"mesh 4 4 4 0.01\nplate w 1 0 1 0 1\n", 2},
                      bad{"mesh 4 4 4 0.01\nplate x 9 0 1 0 1\n", 2},
                      bad{"mesh 4 4 4 0.01\nbox 0 1 0 1 0 1 7\n", 2},
                      bad{"mesh 4 4 4 0.01\nlayer 1\n....\n..#.\n...\n....\n", 5},
                      bad{"mesh 4 4 4 0.01\nlayer 0\n....\n..x.\n", 4},
                      bad{"mesh 4 4 4 0.01\nlayer 0\n....\n", 4},
                      bad{"mesh 4 4 4 0.01\nfrobnicate\n", 2}, bad{"mesh 4 4 4 -1\n", 1},
                      bad{"mesh 4 4 4 0.01\nmesh 4 4 4 0.01\n", 2}, bad{"# nothing\n", 1}}) {
    std::istringstream in(c.text);
    INFO(c.text);
    try {
      (void)tlm::mesh::parse(in, "f.txt");
      FAIL("no io_error");
    } catch (const io_error& e) {
      const std::string want = "f.txt:" + std::to_string(c.line) + ":";
      INFO(e.what());
      REQUIRE(std::string(e.what()).rfind(want, 0) == 0);
    }
  }
  REQUIRE_THROWS_AS(tlm::mesh::read("/nonexistent/model.txt"), io_error);
  const auto f = tlm::mesh::read(std::string(EMGPU_TEST_DATA_DIR) + "/tlm/wr28_iris.txt");
  REQUIRE(f.has_walls());
  REQUIRE(f.boundary(tlm::face::zmax) == tlm::matched);
}

TEST_CASE("FFT, spectrum and peak finder against direct sums", "[tlm][spectrum]") {
  std::vector<std::complex<double>> a(64);
  for (std::size_t n = 0; n < a.size(); ++n) a[n] = {std::cos(0.3 * double(n * n)), std::sin(double(n))};
  auto X = a;
  tlm::fft(X);
  for (std::size_t k = 0; k < a.size(); ++k) {
    std::complex<double> d = 0;
    for (std::size_t n = 0; n < a.size(); ++n)
      d += a[n] * std::polar(1.0, -2 * constants::pi * double(k * n % 64) / 64.0);
    REQUIRE(std::abs(X[k] - d) < 1e-12);
  }
  tlm::fft(X, true);
  for (std::size_t n = 0; n < a.size(); ++n) REQUIRE(std::abs(X[n] / 64.0 - a[n]) < 1e-14);
  std::vector<std::complex<double>> bad(48);
  REQUIRE_THROWS_AS(tlm::fft(bad), invalid_argument);

  // Two undamped tones: the refined peaks land on them far inside one bin.
  const double dt = 1e-11, f1 = 2.345678e9, f2 = 3.1e9;
  std::vector<double> x(3000);
  for (std::size_t n = 0; n < x.size(); ++n)
    x[n] = std::sin(2 * constants::pi * f1 * double(n) * dt + 0.3) + 0.2 * std::cos(2 * constants::pi * f2 * double(n) * dt);
  const auto pk = tlm::find_peaks(x, dt, 1e9, 5e9, 1e-2);
  REQUIRE(pk.size() == 2);
  const double bin = 1.0 / (3000 * dt);
  REQUIRE(std::abs(pk[0].frequency - f1) < 1e-3 * bin);
  REQUIRE(std::abs(pk[1].frequency - f2) < 1e-3 * bin);
  const auto sp = tlm::compute_spectrum(x, dt, 4);
  REQUIRE(sp.frequency.size() == 8193);
  REQUIRE(std::abs(sp.frequency[1] - 1.0 / (16384 * dt)) < 1e-3);
  REQUIRE_THROWS_AS(tlm::compute_spectrum({}, dt), invalid_argument);
  REQUIRE_THROWS_AS(tlm::find_peaks(x, dt, 5e9, 1e9), invalid_argument);
}
