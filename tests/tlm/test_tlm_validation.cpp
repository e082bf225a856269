// Physical validation of the TLM solver against closed-form theory: cavity
// resonances of an empty PEC box (with the SCN's second-order dispersion and
// its convergence), and the TE10 mode of a WR-28 waveguide (cutoff and guide
// wavelength). Runs on the fastest backend of the build (OpenMP on the CPU,
// CUDA under nvcc); test_tlm_node checks that all backends agree.
#include "common/backends.hpp"
#include <emgpu/tlm.hpp>

using namespace emgpu;
using tlm::component;

namespace {
#if defined(EMGPU_TEST_CUDA)
using fast_backends = std::tuple<backend::cuda>;
#else
using fast_backends = std::tuple<backend::openmp>;
#endif

// (c0 / 2) sqrt((m/a)^2 + (n/b)^2 + (p/d)^2)
double box_mode(int m, int n, int p, double a, double b, double d) {
  return 0.5 * constants::c0 * std::sqrt(std::pow(m / a, 2) + std::pow(n / b, 2) + std::pow(p / d, 2));
}

// Relative errors (f_tlm - f_theory) / f_theory of the (1,1,0), (1,1,1),
// (2,1,0), (2,1,1) modes of the 10 x 6 x 8 cm box at dl = 1 cm / refine.
template <class B>
std::array<double, 4> cavity_errors(const B& b, int refine) {
  const double a = 0.10, bb = 0.06, d = 0.08, dl = 0.01 / refine;
  tlm::mesh m(10 * refine, 6 * refine, 8 * refine, dl, tlm::electric_wall);
  tlm::solver<B, double> s(m, b);
  // Ez impulse and probe away from every nodal plane of the four modes.
  s.add_source(tlm::source::point(refine, refine, refine, component::ez, tlm::waveform::impulse()));
  const auto p = s.add_probe(6 * refine + 1, 4 * refine, 5 * refine);
  // The same physical time at each refinement: 4096 steps of 1/(2 c0) cm.
  // The golden-section refinement of the Hann-windowed DTFT then locates an
  // undamped line to ~1e-6 relative, far below the 7e-4 error at dl/2.
  s.run(4096 * refine);
  const auto peaks = tlm::find_peaks(s.probe(p)[component::ez], m.dt(), 2.5e9, 4.6e9, 1e-2);
  const int modes[4][3] = {{1, 1, 0}, {1, 1, 1}, {2, 1, 0}, {2, 1, 1}};
  std::array<double, 4> err{};
  for (int q = 0; q < 4; ++q) {
    const double f = box_mode(modes[q][0], modes[q][1], modes[q][2], a, bb, d);
    double best = 1;
    for (const auto& pk : peaks)
      if (std::abs(pk.frequency / f - 1) < std::abs(best)) best = pk.frequency / f - 1;
    err[std::size_t(q)] = best;
  }
  return err;
}
}  // namespace

TEMPLATE_LIST_TEST_CASE("empty PEC box: resonances below theory, second-order convergence",
                        "[tlm][validation][cavity]", fast_backends) {
  const TestType b{};
  const auto e1 = cavity_errors(b, 1);
  const auto e2 = cavity_errors(b, 2);
  for (int q = 0; q < 4; ++q) {
    INFO("mode " << q << ": dl = 1 cm error " << e1[std::size_t(q)] << ", dl = 0.5 cm error "
                 << e2[std::size_t(q)] << ", ratio " << e1[std::size_t(q)] / e2[std::size_t(q)]);
    // Within 2 % and below theory (the SCN's dispersion slows oblique waves).
    REQUIRE(e1[std::size_t(q)] < 0);
    REQUIRE(e1[std::size_t(q)] > -0.02);
    REQUIRE(e2[std::size_t(q)] < 0);
    // Second order: halving dl divides each error by ~4 (conventions: 4.0-4.4).
    REQUIRE(e1[std::size_t(q)] / e2[std::size_t(q)] >= 3.5);
    REQUIRE(e1[std::size_t(q)] / e2[std::size_t(q)] <= 4.6);
  }
  // The conventions' figures at dl = 1 cm: (1,1,0) 3.05e-3 low, (2,1,1)
  // 1.15e-2 low; 3 % of each covers their quoted digits.
  REQUIRE(std::abs(-e1[0] - 3.05e-3) < 0.03 * 3.05e-3);
  REQUIRE(std::abs(-e1[3] - 1.15e-2) < 0.03 * 1.15e-2);
}

TEMPLATE_LIST_TEST_CASE("WR-28 cross-section resonates at the TE10 cutoff", "[tlm][validation][waveguide]",
                        fast_backends) {
  const TestType b{};
  // At cutoff the TE10 field is uniform along the guide (beta = 0): Ey and Hz
  // only. One layer of nodes between magnetic walls in z holds exactly that
  // field, so the layer's lowest resonance is the cutoff c0 / (2 a). The
  // standing wave runs along x, an axis, where the SCN has no dispersion: the
  // only error left is the spectral estimate's (~1e-6 here).
  const double a = 7.112e-3, bw = 3.556e-3;
  for (int cells : {10, 20}) {
    const double dl = a / cells;
    tlm::mesh m(cells, cells / 2, 1, dl, tlm::electric_wall);
    m.set_boundary(tlm::face::zmin, tlm::magnetic_wall).set_boundary(tlm::face::zmax, tlm::magnetic_wall);
    tlm::solver<TestType, double> s(m, b);
    s.add_source(tlm::source::point(1, 1, 0, component::ey, tlm::waveform::impulse()));
    const auto p = s.add_probe(cells / 2 + 1, cells / 4, 0);
    s.run(8192);
    const auto pk = tlm::find_peaks(s.probe(p)[component::ey], m.dt(), 10e9, 30e9, 1e-2);
    REQUIRE(!pk.empty());
    const double fc = constants::c0 / (2 * a);
    INFO(cells << " cells: lowest line " << pk.front().frequency << " Hz, cutoff " << fc);
    REQUIRE(std::abs(fc - 21.0765e9) < 1e5);  // 21.08 GHz as quoted
    REQUIRE(std::abs(pk.front().frequency / fc - 1) < 1e-5);
    (void)bw;
  }
}

TEMPLATE_LIST_TEST_CASE("WR-28 with matched ends: TE10 guide wavelength", "[tlm][validation][waveguide]",
                        fast_backends) {
  const TestType b{};
  // 10 x 5 cells (dl = a / 10), 120 long, matched ends; a TE10 port at
  // k = 5 launches a modulated Gaussian around 31 GHz (content below 24 GHz
  // under 1e-3, so nothing lingers near cutoff). Three probes d apart give
  // cos(beta d) = (V(k-d) + V(k+d)) / (2 V(k)) whatever the end reflections
  // (the matched face is exact only at normal incidence).
  const double a = 7.112e-3, dl = a / 10;
  tlm::mesh m(10, 5, 120, dl, tlm::electric_wall);
  m.set_boundary(tlm::face::zmin, tlm::matched).set_boundary(tlm::face::zmax, tlm::matched);
  tlm::solver<TestType, double> s(m, b);
  const double tau = 8e-11;
  s.add_source(tlm::source::waveguide_te10(tlm::axis::z, 5, tlm::axis::x, 0, 10, 0, 5,
                                           tlm::waveform::modulated_gaussian(31e9, 4 * tau, tau)));
  const index_t kc = 60, d = 5;
  const auto p0 = s.add_probe(5, 2, kc - d), p1 = s.add_probe(5, 2, kc), p2 = s.add_probe(5, 2, kc + d);
  std::vector<double> fr;
  for (double f = 24e9; f <= 36.01e9; f += 2e9) fr.push_back(f);
  s.set_dft_frequencies(fr);
  s.run(4000);
  // The pulse has left: what is left is far below the signal.
  REQUIRE(std::abs(s.probe(p1)[component::ey].back()) < 1e-3);
  const double fc = constants::c0 / (2 * a);
  for (std::size_t q = 0; q < fr.size(); ++q) {
    const auto v0 = s.dft(p0, component::ey, index_t(q)), v1 = s.dft(p1, component::ey, index_t(q)),
               v2 = s.dft(p2, component::ey, index_t(q));
    const auto cb = (v0 + v2) / (2.0 * v1);
    const double beta = std::acos(cb.real()) / (double(d) * dl);
    const double lg = 2 * constants::pi / beta;
    const double lg_th = constants::c0 / fr[q] / std::sqrt(1 - std::pow(fc / fr[q], 2));
    INFO(fr[q] << " Hz: cos(beta d) = " << cb << ", guide wavelength " << lg << " m, theory " << lg_th);
    REQUIRE(std::abs(cb.imag()) < 1e-3);  // a real cos: forward + backward TE10 only
    // Mesh accuracy at 10 cells across a (10-14 cells per free-space
    // wavelength): the SCN's slow oblique waves shorten lambda_g by < 1.5 %.
    REQUIRE(lg < lg_th);
    REQUIRE(lg > lg_th * (1 - 0.015));
    // The far end (Gamma = 0) returns B = Gamma_TE A with Gamma_TE =
    // (1 - cos t) / (1 + cos t), the wave-impedance mismatch of the guided
    // mode (waveguide_matched_gamma); 3 % covers the mesh's dispersion.
    const auto e = std::polar(1.0, std::acos(cb.real()));
    const auto A = (v1 * e - v2) / (e - std::conj(e)), B = v1 - A;
    const double g_te = tlm::waveguide_matched_gamma(fr[q], fc);
    INFO("|B/A| = " << std::abs(B / A) << ", expected " << g_te);
    REQUIRE(std::abs(std::abs(B / A) / g_te - 1) < 0.03);
  }
}

TEMPLATE_LIST_TEST_CASE("WR-28 end loaded with the TE10 wave impedance absorbs at its frequency",
                        "[tlm][validation][waveguide]", fast_backends) {
  const TestType b{};
  const double a = 7.112e-3, dl = a / 10, f0 = 31e9, fc = constants::c0 / (2 * a);
  tlm::mesh m(10, 5, 120, dl, tlm::electric_wall);
  m.set_boundary(tlm::face::zmin, tlm::matched).set_boundary(tlm::face::zmax, tlm::waveguide_matched_gamma(f0, fc));
  tlm::solver<TestType, double> s(m, b);
  const double tau = 8e-11;
  s.add_source(tlm::source::waveguide_te10(tlm::axis::z, 5, tlm::axis::x, 0, 10, 0, 5,
                                           tlm::waveform::modulated_gaussian(f0, 4 * tau, tau)));
  const index_t d = 5, kc = 80;
  const auto p0 = s.add_probe(5, 2, kc - d), p1 = s.add_probe(5, 2, kc), p2 = s.add_probe(5, 2, kc + d);
  s.set_dft_frequencies({f0, 25e9});
  s.run(4000);
  double ratio[2];
  for (index_t q = 0; q < 2; ++q) {
    const auto v0 = s.dft(p0, component::ey, q), v1 = s.dft(p1, component::ey, q), v2 = s.dft(p2, component::ey, q);
    const auto e = std::polar(1.0, std::acos(((v0 + v2) / (2.0 * v1)).real()));
    const auto A = (v1 * e - v2) / (e - std::conj(e));
    ratio[q] = std::abs((v1 - A) / A);
  }
  INFO("|B/A| at 31 GHz " << ratio[0] << ", at 25 GHz " << ratio[1]);
  REQUIRE(ratio[0] < 0.01);   // 0.154 with a plain matched face
  REQUIRE(ratio[1] > 0.1);    // tuned, not broadband: the check can fail
}
