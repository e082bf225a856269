// A cloud of small PEC cylinders under a TM plane wave, solved with
// characteristic basis functions (CBFM) and, when N is small enough, with the
// full direct solver of the same discretisation.
//
//   particle_cloud [--count 300] [--radius 0.1] [--cells 16] [--seed 1]
//                  [--fill 0.05] [--tau 1e-3] [--incidence 0] [--angles 721]
//                  [--direct-max 5000] [--csv particle_cloud.csv]
// Lengths are in wavelengths (the frequency is c0, so lambda = 1 m).
// Then: python3 scripts/plot_particle_cloud.py particle_cloud.csv  -> PNG of sigma(phi).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include <emgpu/core.hpp>
#include <emgpu/cbfm.hpp>

#if defined(EMGPU_TEST_CUDA)
using backend = emgpu::backend::cuda;
#else
using backend = emgpu::backend::openmp;
#endif

namespace {
double arg(int argc, char** argv, const char* key, double def) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], key) == 0) return std::atof(argv[i + 1]);
  return def;
}
std::string arg(int argc, char** argv, const char* key, const char* def) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], key) == 0) return argv[i + 1];
  return def;
}
double mib(std::size_t b) { return double(b) / (1024.0 * 1024.0); }
}  // namespace

int main(int argc, char** argv) try {
  emgpu::cbfm::cloud_options co;
  co.count = emgpu::index_t(arg(argc, argv, "--count", 300.0));
  co.radius = arg(argc, argv, "--radius", 0.1);
  co.cells = emgpu::index_t(arg(argc, argv, "--cells", 16.0));
  co.seed = std::uint64_t(arg(argc, argv, "--seed", 1.0));
  co.fill = arg(argc, argv, "--fill", 0.05);
  emgpu::cbfm::solver<> opt;
  opt.tau = arg(argc, argv, "--tau", 1e-3);
  const double inc = arg(argc, argv, "--incidence", 0.0) * emgpu::constants::pi / 180;
  const auto obs = emgpu::angles_deg(0, 360, emgpu::index_t(arg(argc, argv, "--angles", 721.0)));
  const auto direct_max = emgpu::index_t(arg(argc, argv, "--direct-max", 5000.0));
  const std::string csv = arg(argc, argv, "--csv", "particle_cloud.csv");

  const auto bodies = emgpu::cbfm::cloud(co);
  const double f = emgpu::constants::c0;  // lambda = 1 m
  emgpu::scattering2d<backend, emgpu::kernel::mom, emgpu::cbfm::solver<>> s(bodies, f, {}, {}, opt);
  std::printf("cloud: %td cylinders of radius %.3g lambda (ka = %.3g), %td cells each, seed %llu, backend %s\n",
              co.count, co.radius, 2 * emgpu::constants::pi * co.radius, co.cells, (unsigned long long)co.seed,
              emgpu::backend_traits<backend>::name);
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = s.solve({inc}, obs);
  const double t_cbfm = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto& rep = s.report();
  std::printf("CBFM: N = %td unknowns, %td blocks, reduced K = %td (N/K = %.2f), CBFs per block %td..%td, "
              "%td plane waves, tau = %.1e\n",
              rep.unknowns, rep.blocks, rep.reduced, double(rep.unknowns) / double(rep.reduced), rep.min_cbfs,
              rep.max_cbfs, rep.plane_waves, opt.tau);
  std::printf("CBFM: total %.3f s (CBFs %.3f s, Z_R assembly %.3f s, factor %.3f s)\n", t_cbfm, rep.cbf_seconds,
              rep.assembly_seconds, rep.factor_seconds);
  std::printf("CBFM: peak working set %.1f MiB (Z_R %.1f MiB); a full N x N matrix needs %.1f MiB\n",
              mib(rep.peak_bytes), mib(rep.reduced_bytes), mib(rep.full_matrix_bytes));
  const auto sc = r.echo_width_db(0);
  std::vector<double> sd;
  if (rep.unknowns <= direct_max) {
    const auto t1 = std::chrono::steady_clock::now();
    const auto d = s.solve_direct({inc}, obs);
    const double t_direct = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    double num = 0, den = 0;
    for (std::size_t i = 0; i < d.current.size(); ++i) {
      num += emgpu::abs2(r.current[i] - d.current[i]);
      den += emgpu::abs2(d.current[i]);
    }
    sd = d.echo_width_db(0);
    double maxdb = 0;
    for (std::size_t i = 0; i < sd.size(); ++i) maxdb = std::max(maxdb, std::abs(sc[i] - sd[i]));
    std::printf("direct: %.3f s; CBFM vs direct: current rel. L2 error %.2e, echo width max |diff| %.2e dB\n",
                t_direct, std::sqrt(num / den), maxdb);
  } else {
    std::printf("direct: skipped (N > --direct-max %td)\n", direct_max);
  }
  std::ofstream out(csv);
  out << "phi_deg,sigma_cbfm_db,sigma_direct_db\n";
  for (std::size_t i = 0; i < sc.size(); ++i) {
    out << obs[i] * 180 / emgpu::constants::pi << "," << sc[i] << ",";
    if (!sd.empty()) out << sd[i];
    out << "\n";
  }
  std::printf("wrote %s (plot: python3 scripts/plot_particle_cloud.py %s)\n", csv.c_str(), csv.c_str());
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "particle_cloud: %s\n", e.what());
  return 1;
}
