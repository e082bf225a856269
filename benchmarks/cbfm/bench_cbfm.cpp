// CBFM against the full dense solve as N grows, on a cloud of small PEC
// cylinders (radius 0.1 lambda, 48 cells each by default, 5 % fill): each
// cylinder keeps about 9 CBFs at tau = 1e-3, so K is about N / 5 and Z_R for
// N = 204800 takes about 24 GB, while the full matrix stops near N = 70 000
// on 80 GB.
//
//   bench_cbfm [--out FILE.json] [--quick] [--min-n 400] [--max-n 204800]
//              [--max-direct-n 51200] [--cells 48] [--radius 0.1] [--tau 1e-3]
//              [--growth 2]
// N doubles from --min-n to --max-n (CBFM) and to --max-direct-n (direct);
// these bound the run time. Each configuration runs once (the problems are
// large and a run includes the fill). Reported per row: seconds, the model
// working set of each method (CBFM: basis + Z_R + tile buffers + batch
// buffers; direct: the N x N matrix), the reduced order K, and for sizes run
// both ways the relative L2 difference of the currents. The crossover (first
// N where CBFM is faster) is printed at the end.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include <emgpu/core.hpp>
#include <emgpu/cbfm.hpp>

#include "common/bench.hpp"

#if defined(EMGPU_TEST_CUDA)
using backend = emgpu::backend::cuda;
#else
using backend = emgpu::backend::openmp;
#endif

int main(int argc, char** argv) try {
  emgpu_bench::report rep("cbfm", argc, argv);
  const bool quick = rep.quick();
  const auto min_n = emgpu::index_t(rep.option("--min-n", 400.0));
  const auto max_n = emgpu::index_t(rep.option("--max-n", quick ? 3200.0 : 204800.0));
  const auto max_direct = emgpu::index_t(rep.option("--max-direct-n", quick ? 3200.0 : 51200.0));
  const double growth = rep.option("--growth", 2.0);
  emgpu::cbfm::cloud_options co;
  co.cells = emgpu::index_t(rep.option("--cells", 48.0));
  co.radius = rep.option("--radius", 0.1);
  emgpu::cbfm::solver<> opt;
  opt.tau = rep.option("--tau", 1e-3);
  const double f = emgpu::constants::c0;
  const std::vector<double> inc{0.0};
  const auto obs = emgpu::angles_deg(0, 360, 361);
  const char* bname = emgpu::backend_traits<backend>::name;
  double crossover = 0;
  for (double nd = double(min_n); nd <= double(max_n) * 1.0001; nd *= growth) {
    co.count = std::max<emgpu::index_t>(1, emgpu::index_t(nd) / co.cells);
    const auto bodies = emgpu::cbfm::cloud(co);
    using solver_t = emgpu::scattering2d<backend, emgpu::kernel::mom, emgpu::cbfm::solver<>>;
    solver_t s(bodies, f, {}, {}, opt);
    const emgpu::index_t n = s.unknowns();
    emgpu::scattering2d_result rc, rd;
    const auto tc = emgpu_bench::time_host([&] { rc = s.solve(inc, obs); }, 0, 1);
    const auto& r = s.report();
    rep.add({.name = "cbfm",
             .backend = bname,
             .params = {{"n", double(n)}, {"cylinders", double(co.count)}, {"tau", opt.tau}},
             .t = tc,
             .metrics = {{"K", double(r.reduced)},
                         {"N/K", double(n) / double(r.reduced)},
                         {"cbf_s", r.cbf_seconds},
                         {"assembly_s", r.assembly_seconds},
                         {"factor_s", r.factor_seconds},
                         {"peak_MiB", double(r.peak_bytes) / 1048576.0},
                         {"reduced_MiB", double(r.reduced_bytes) / 1048576.0}},
             .note = ""});
    if (n <= max_direct) {
      const auto td = emgpu_bench::time_host([&] { rd = s.solve_direct(inc, obs); }, 0, 1);
      double num = 0, den = 0;
      for (std::size_t i = 0; i < rd.current.size(); ++i) {
        num += emgpu::abs2(rc.current[i] - rd.current[i]);
        den += emgpu::abs2(rd.current[i]);
      }
      rep.add({.name = "direct",
               .backend = bname,
               .params = {{"n", double(n)}, {"cylinders", double(co.count)}},
               .t = td,
               .metrics = {{"matrix_MiB", double(r.full_matrix_bytes) / 1048576.0},
                           {"cbfm_speedup", td.median_s / tc.median_s},
                           {"cbfm_rel_err", std::sqrt(num / den)}},
               .note = ""});
      if (crossover == 0 && tc.median_s < td.median_s) crossover = double(n);
    }
  }
  if (crossover > 0) std::printf("crossover: CBFM faster than the direct solve from N = %.0f\n", crossover);
  else std::printf("crossover: not reached up to --max-direct-n\n");
  rep.write();
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_cbfm: %s\n", e.what());
  return 1;
}
