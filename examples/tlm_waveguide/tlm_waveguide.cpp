// WR-28 waveguide (7.112 x 3.556 mm) with an inductive iris, SCN TLM: a TE10
// port launches a pulse around 31 GHz; running DFTs at probes give the guide
// wavelength (three-probe method, immune to end reflections) against theory
// and the iris's transmission (ratio to an empty guide); legacy VTK snapshots
// show Ey in the guide's mid-plane and the whole volume as the pulse crosses
// the iris.
//
//   tlm_waveguide [--backend serial|openmp] [--model FILE] [--out PREFIX]
//   tlm_waveguide_cuda [--backend cuda|serial|openmp] ...
// FILE: a model in the text format of docs/tlm.md whose cross-section is the
// guide (e.g. tests/data/tlm/wr28_iris.txt); default: built in, iris window
// 12 of 20 cells at the middle.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <emgpu/core.hpp>
#include <emgpu/tlm.hpp>

#include "common/backend_choice.hpp"

using namespace emgpu;

namespace {

struct options {
  std::string backend = "openmp";
  std::string model;
  std::string out = "tlm_waveguide";
};

tlm::mesh builtin(bool iris) {
  const double a = 7.112e-3, dl = a / 20;  // 20 x 10 cells
  tlm::mesh m(20, 10, 200, dl, tlm::electric_wall);
  // Ends loaded with the TE10 wave impedance at 31 GHz (a plain matched face
  // would reflect 15 % of the guided wave there).
  const double g = tlm::waveguide_matched_gamma(31e9, constants::c0 / (2 * a));
  m.set_boundary(tlm::face::zmin, g).set_boundary(tlm::face::zmax, g);
  if (iris) m.add_iris(tlm::axis::z, 100, 4, 16, 0, 10);
  return m;
}

struct result {
  std::vector<double> freq;
  std::vector<std::complex<double>> before[3], after[2];
};

template <class B>
result simulate(const B& b, const tlm::mesh& m, const std::string* vtk_prefix) {
  tlm::solver<B, float> s(m, b);
  const index_t nx = m.nx(), ny = m.ny(), nz = m.nz();
  const double tau = 8e-11;
  s.add_source(tlm::source::waveguide_te10(tlm::axis::z, 10, tlm::axis::x, 0, nx, 0, ny,
                                           tlm::waveform::modulated_gaussian(31e9, 4 * tau, tau)));
  const index_t kb = nz / 4, d = 10, ka = 3 * nz / 4;
  const index_t pb[3] = {s.add_probe(nx / 2, ny / 2, kb - d), s.add_probe(nx / 2, ny / 2, kb),
                         s.add_probe(nx / 2, ny / 2, kb + d)};
  const index_t pa[2] = {s.add_probe(nx / 2, ny / 2, ka), s.add_probe(nx / 2, ny / 2, ka + d)};
  result r;
  for (double f = 25e9; f <= 37.01e9; f += 1e9) r.freq.push_back(f);
  s.set_dft_frequencies(r.freq);
  s.set_progress(tlm::progress_to_stderr(), 0.25);
  // Snapshot when the pulse centre reaches the middle (group velocity ~0.7 c0).
  const index_t snap = index_t((4 * tau + double(nz / 2 - 10) * m.dl() / (0.7 * constants::c0)) / m.dt());
  s.run(snap);
  if (vtk_prefix) {
    s.write_vtk(*vtk_prefix + "_Ey_midplane.vtk", tlm::component::ey, s.plane(tlm::axis::y, ny / 2));
    s.write_vtk(*vtk_prefix + "_Ey_volume.vtk", tlm::component::ey, s.volume());
    std::printf("snapshots at step %lld (t = %.3g ns): %s_Ey_midplane.vtk, %s_Ey_volume.vtk\n", (long long)snap,
                s.time() * 1e9, vtk_prefix->c_str(), vtk_prefix->c_str());
  }
  s.run(8000 - snap);
  for (std::size_t q = 0; q < r.freq.size(); ++q) {
    for (int i = 0; i < 3; ++i) r.before[i].push_back(s.dft(pb[i], tlm::component::ey, index_t(q)));
    for (int i = 0; i < 2; ++i) r.after[i].push_back(s.dft(pa[i], tlm::component::ey, index_t(q)));
  }
  return r;
}

template <class B>
int run(const B& b, const options& o) {
  const tlm::mesh with = o.model.empty() ? builtin(true) : tlm::mesh::read(o.model);
  tlm::mesh without(with.nx(), with.ny(), with.nz(), with.dl());
  for (int f = 0; f < 6; ++f) without.set_boundary(tlm::face(f), with.boundary(tlm::face(f)));
  const double a = double(with.nx()) * with.dl(), bw = double(with.ny()) * with.dl();
  const double fc = constants::c0 / (2 * a);
  std::printf("Waveguide %.3f x %.3f mm, %lld cells long (dl = %.4f mm), TE10 cutoff %.3f GHz, backend %s\n",
              a * 1e3, bw * 1e3, (long long)with.nz(), with.dl() * 1e3, fc * 1e-9, backend_traits<B>::name);
  const auto empty = simulate(b, without, nullptr);
  const auto iris = simulate(b, with, &o.out);
  const double dz = 10 * with.dl();
  std::printf("\n f (GHz)   lambda_g TLM (mm)  theory (mm)  rel. error   |T| iris\n");
  for (std::size_t q = 0; q < empty.freq.size(); ++q) {
    const double f = empty.freq[q];
    // Three probes: cos(beta dz) = (V(z - dz) + V(z + dz)) / (2 V(z)).
    const auto cb = (empty.before[0][q] + empty.before[2][q]) / (2.0 * empty.before[1][q]);
    const double bd = std::acos(std::clamp(cb.real(), -1.0, 1.0));
    const double lg = 2 * constants::pi * dz / bd;
    const double lg_th = constants::c0 / f / std::sqrt(1 - std::pow(fc / f, 2));
    // Forward wave behind the iris from two probes dz apart, V = A e^{-j beta z} + B e^{j beta z}:
    // A = (V1 e^{j beta dz} - V2) / (2 j sin(beta dz)); |T| = |A_iris| / |A_empty|.
    const auto e = std::polar(1.0, bd);
    auto forward = [&](const result& r) { return (r.after[0][q] * e - r.after[1][q]) / (e - std::conj(e)); };
    std::printf(" %6.1f   %12.4f   %12.4f   %+.2e   %8.4f\n", f * 1e-9, lg * 1e3, lg_th * 1e3, lg / lg_th - 1,
                std::abs(forward(iris)) / std::abs(forward(empty)));
  }
  std::printf("\n(open the .vtk files in ParaView: Ey shows the TE10 half-sine across the broad wall)\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  o.backend = emgpu_example::default_backend();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--backend" && i + 1 < argc) o.backend = argv[++i];
    else if (a == "--model" && i + 1 < argc) o.model = argv[++i];
    else if (a == "--out" && i + 1 < argc) o.out = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--backend serial|openmp|cuda] [--model FILE] [--out PREFIX]\n", argv[0]);
      return 2;
    }
  }
  return emgpu_example::with_backend(o.backend, "tlm_waveguide", [&](const auto& b) { return run(b, o); });
}
