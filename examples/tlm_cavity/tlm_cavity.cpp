// Resonances of an empty 10 x 6 x 8 cm PEC box with the SCN TLM solver: an Ez
// impulse, a probe, the probe's spectrum and its peaks against
// f_mnp = (c0/2) sqrt((m/a)^2 + (n/b)^2 + (p/d)^2).
//
//   tlm_cavity [--backend serial|openmp] [--refine R] [--steps S] [--csv FILE]
//   tlm_cavity_cuda [--backend cuda|serial|openmp] ...
//   python3 scripts/plot_tlm_spectrum.py tlm_cavity_spectrum.csv tlm_cavity_spectrum.png
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include <emgpu/core.hpp>
#include <emgpu/tlm.hpp>

#include "common/backend_choice.hpp"

using namespace emgpu;

namespace {

struct options {
  std::string backend = "openmp";
  int refine = 1;
  long steps = 0;  // 0: 8192 per refinement level
  std::string csv = "tlm_cavity_spectrum.csv";
};

template <class B>
int run(const B& b, const options& o) {
  const double a = 0.10, bb = 0.06, d = 0.08, dl = 0.01 / o.refine;
  const int r = o.refine;
  tlm::mesh m(10 * r, 6 * r, 8 * r, dl, tlm::electric_wall);
  tlm::solver<B, double> s(m, b);
  s.add_source(tlm::source::point(r, r, r, tlm::component::ez, tlm::waveform::impulse()));
  const auto p = s.add_probe(6 * r + 1, 4 * r, 5 * r);
  s.set_progress(tlm::progress_to_stderr());
  const index_t steps = o.steps > 0 ? o.steps : 8192 * r;
  std::printf("TLM cavity %g x %g x %g cm, dl = %g cm (%lld nodes), %lld steps of %.4g ps on %s\n", a * 100,
              bb * 100, d * 100, dl * 100, (long long)m.node_count(), (long long)steps, m.dt() * 1e12,
              backend_traits<B>::name);
  s.run(steps);
  const auto& ez = s.probe(p)[tlm::component::ez];
  const auto peaks = tlm::find_peaks(ez, m.dt(), 1.5e9, 5e9, 1e-3);

  std::printf("\n mode     theory (GHz)   TLM (GHz)   rel. error\n");
  struct mode {
    int m, n, p;
  };
  std::vector<std::pair<mode, double>> table;
  const std::vector<mode> modes = {mode{1, 0, 1}, mode{1, 1, 0}, mode{0, 1, 1}, mode{1, 1, 1}, mode{2, 0, 1},
                                   mode{2, 1, 0}, mode{2, 1, 1}, mode{1, 0, 2}, mode{1, 1, 2}};
  auto theory = [&](const mode& md) {
    return 0.5 * constants::c0 * std::sqrt(std::pow(md.m / a, 2) + std::pow(md.n / bb, 2) + std::pow(md.p / d, 2));
  };
  // TM_z modes (Ez != 0) need m, n >= 1; an Ez probe sees the others only as
  // the SCN's weak spurious lines. Ez modes pick their peaks first.
  auto has_ez = [](const mode& md) { return md.m > 0 && md.n > 0; };
  std::vector<const tlm::peak*> match(modes.size(), nullptr);
  std::vector<char> used(peaks.size(), 0);
  for (int pass = 0; pass < 2; ++pass)
    for (std::size_t q = 0; q < modes.size(); ++q) {
      if (has_ez(modes[q]) != (pass == 0)) continue;
      const double f = theory(modes[q]);
      std::size_t best = peaks.size();
      for (std::size_t k = 0; k < peaks.size(); ++k)
        if (!used[k] && std::abs(peaks[k].frequency / f - 1) < 0.02 &&
            (best == peaks.size() || std::abs(peaks[k].frequency - f) < std::abs(peaks[best].frequency - f)))
          best = k;
      if (best < peaks.size()) {
        used[best] = 1;
        match[q] = &peaks[best];
      }
    }
  for (std::size_t q = 0; q < modes.size(); ++q) {
    const mode md = modes[q];
    const double f = theory(md);
    if (f > 5e9) continue;
    const tlm::peak* best = match[q];
    if (best)
      std::printf(" (%d,%d,%d)  %10.5f    %10.5f   %+.3e%s\n", md.m, md.n, md.p, f * 1e-9, best->frequency * 1e-9,
                  best->frequency / f - 1, has_ez(md) ? "" : "   (no Ez: spurious line)");
    else
      std::printf(" (%d,%d,%d)  %10.5f    %10s%s\n", md.m, md.n, md.p, f * 1e-9, "-", has_ez(md) ? "" : "   (no Ez)");
    table.push_back({md, best ? best->frequency : 0.0});
  }

  const auto sp = tlm::compute_spectrum(ez, m.dt(), 4);
  std::ofstream csv(o.csv);
  csv << "# TLM cavity " << a << " x " << bb << " x " << d << " m, dl = " << dl << " m, steps = " << steps << "\n";
  for (const auto& [md, f] : table) {
    const double th = 0.5 * constants::c0 *
                      std::sqrt(std::pow(md.m / a, 2) + std::pow(md.n / bb, 2) + std::pow(md.p / d, 2));
    csv << "# mode " << md.m << ' ' << md.n << ' ' << md.p << " theory_hz " << th << " tlm_hz " << f << "\n";
  }
  csv << "frequency_hz,magnitude\n";
  csv.precision(10);
  for (std::size_t k = 0; k < sp.frequency.size() && sp.frequency[k] <= 6e9; ++k)
    csv << sp.frequency[k] << ',' << sp.magnitude[k] << '\n';
  std::printf("\nspectrum written to %s (plot: python3 scripts/plot_tlm_spectrum.py %s)\n", o.csv.c_str(),
              o.csv.c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  o.backend = emgpu_example::default_backend();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--backend" && i + 1 < argc) o.backend = argv[++i];
    else if (a == "--refine" && i + 1 < argc) o.refine = std::atoi(argv[++i]);
    else if (a == "--steps" && i + 1 < argc) o.steps = std::atol(argv[++i]);
    else if (a == "--csv" && i + 1 < argc) o.csv = argv[++i];
    else {
      std::fprintf(stderr, "usage: %s [--backend serial|openmp|cuda] [--refine R] [--steps S] [--csv FILE]\n", argv[0]);
      return 2;
    }
  }
  if (o.refine < 1 || o.refine > 16) {
    std::fprintf(stderr, "--refine must be in 1..16\n");
    return 2;
  }
  return emgpu_example::with_backend(o.backend, "tlm_cavity", [&](const auto& b) { return run(b, o); });
}
