// FE-IIEE radiation operator throughput in the source papers' flop convention
// (238 flops per source-observer pair with one RHS, 50 + 188 n with n RHS).
// Shapes: numS' = 300, 946, 1272 source elements and numS = 1572 .. 78640
// observer elements, 6 integration points per triangle; nRHS 1, 10, 100, 1000.
//
//   bench_fe_iiee [--quick] [--max-rhs N] [--max-gflop G] [--threads T] [--out f.json]
//   bench_fe_iiee_cuda [--quick] [--max-rhs N] [--max-gflop G] [--float 0|1]
//                      [--variant all|auto] [--multi-only 1] [--out f.json]
// --max-gflop skips configurations whose one apply exceeds G GFLOP (time budget).
// --variant all (default): in double with >= 8 RHS, every shape also runs the
// device kernels explicitly (rows .../cuda_cores, .../tensor_cores (default
// mma shape: m16n8k4 on sm_90), .../tensor_cores_m16n8k8 and
// .../tensor_cores_m8n8k4, and fe_iiee/tensor_vs_cuda_cores with the speed
// ratios over cuda_cores); auto: default rows only.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <common/bench.hpp>
#include <emgpu/core.hpp>
#include <emgpu/fe_iiee.hpp>

namespace fe = emgpu::fe_iiee;
using emgpu::index_t;

namespace {
constexpr double pi = 3.14159265358979323846;
constexpr int pts_per_elem = 6;

// n quasi-uniform points (Fibonacci lattice) on a sphere of radius a.
std::vector<double> sphere_points(index_t n, double a) {
  std::vector<double> p(std::size_t(3 * n));
  const double ga = pi * (3 - std::sqrt(5.0));
  for (index_t i = 0; i < n; ++i) {
    const double z = 1 - 2 * (double(i) + 0.5) / double(n), r = std::sqrt(1 - z * z);
    p[std::size_t(3 * i)] = a * r * std::cos(ga * double(i));
    p[std::size_t(3 * i + 1)] = a * r * std::sin(ga * double(i));
    p[std::size_t(3 * i + 2)] = a * z;
  }
  return p;
}

template <class Real>
struct problem {
  std::vector<Real> src, w, obs;
  std::vector<emgpu::complex<Real>> J, M;
  problem(index_t n_s, index_t n_o, index_t n_rhs) {
    const auto s = sphere_points(n_s, 0.5), o = sphere_points(n_o, 0.8);
    src.assign(s.begin(), s.end());
    obs.assign(o.begin(), o.end());
    w.assign(std::size_t(n_s), Real(pi / double(n_s)));
    J.resize(std::size_t(3 * n_s * n_rhs));
    M.resize(J.size());
    for (std::size_t i = 0; i < J.size(); ++i) {
      J[i] = emgpu::complex<Real>(Real(std::sin(0.1 * double(i))), Real(std::cos(0.3 * double(i))));
      M[i] = emgpu::complex<Real>(Real(std::cos(0.7 * double(i))), Real(-std::sin(0.2 * double(i))));
    }
  }
};

template <class S>
const char* strategy_name() {
  if constexpr (std::is_same_v<S, fe::strategy::over_sources>) return "over_sources";
  else if constexpr (std::is_same_v<S, fe::strategy::over_observers>) return "over_observers";
  else if constexpr (std::is_same_v<S, fe::strategy::over_rhs>) return "over_rhs";
  else return "automatic";
}

constexpr double k0 = 2 * pi;
}  // namespace

#if !defined(EMGPU_TEST_CUDA)
// ---------------------------------------------------------------- CPU ------
template <class B, class S>
double run_cpu(emgpu_bench::report& rep, const B& b, const char* bname, index_t n_se, index_t n_oe,
               index_t n_rhs) {
  const index_t n_s = n_se * pts_per_elem, n_o = n_oe * pts_per_elem;
  problem<double> p(n_s, n_o, n_rhs);
  fe::radiation_operator<B, double, S> op(b, {.points = p.src, .weights = p.w}, p.obs,
                                          {k0, emgpu::constants::eta0});
  const auto t = emgpu_bench::time_host([&] { (void)op.apply(p.J, p.M); }, 1, 3);
  const double gf = op.flops(n_rhs) / t.median_s / 1e9;
  rep.add({.name = std::string("fe_iiee/") + strategy_name<S>(), .backend = bname,
           .params = {{"numSp_elems", double(n_se)}, {"numS_elems", double(n_oe)},
                      {"n_sources", double(n_s)}, {"n_observers", double(n_o)}, {"nrhs", double(n_rhs)}},
           .t = t, .metrics = {{"GFLOP/s", gf}}, .note = op.last_strategy()});
  return t.median_s;
}

int main(int argc, char** argv) {
  emgpu_bench::report rep("fe_iiee", argc, argv);
  const index_t max_rhs = index_t(rep.option("--max-rhs", 10));
  const int threads = int(rep.option("--threads", 0));
  // CPU shapes are the smallest of the sources' (a serial apply of the big ones
  // takes minutes); --quick cuts the observers further.
  const index_t n_se = 300, n_oe = rep.quick() ? 400 : 1572;
  for (index_t n_rhs : {index_t(1), index_t(10), index_t(100)}) {
    if (n_rhs > max_rhs) break;
    const double ts = run_cpu<emgpu::backend::serial, fe::strategy::automatic>(
        rep, emgpu::backend::serial{}, "serial", n_se, n_oe, n_rhs);
    emgpu::backend::openmp omp;
    omp.num_threads = threads;
    double best = 1e30;
    best = std::min(best, run_cpu<emgpu::backend::openmp, fe::strategy::automatic>(rep, omp, "openmp", n_se, n_oe, n_rhs));
    best = std::min(best, run_cpu<emgpu::backend::openmp, fe::strategy::over_observers>(rep, omp, "openmp", n_se, n_oe, n_rhs));
    best = std::min(best, run_cpu<emgpu::backend::openmp, fe::strategy::over_sources>(rep, omp, "openmp", n_se, n_oe, n_rhs));
    if (n_rhs > 1)
      best = std::min(best, run_cpu<emgpu::backend::openmp, fe::strategy::over_rhs>(rep, omp, "openmp", n_se, n_oe, n_rhs));
    std::printf("nrhs %ld: OpenMP (%d threads) speed-up over serial: %.2f\n", long(n_rhs), omp.threads(),
                ts / best);
    rep.add({.name = "fe_iiee/openmp_speedup", .backend = "openmp",
             .params = {{"nrhs", double(n_rhs)}, {"threads", double(omp.threads())}},
             .t = {}, .metrics = {{"speedup_vs_serial", ts / best}}});
  }
  rep.write();
}
#else
// ---------------------------------------------------------------- CUDA -----
// A device-kernel choice (radiation_options::kernel and ::dmma) and its row suffix.
struct variant {
  fe::device_kernel kernel = fe::device_kernel::automatic;
  fe::dmma_shape dmma = fe::dmma_shape::automatic;
  const char* suffix = "";
};
const variant v_default{}, v_cores{fe::device_kernel::cuda_cores, fe::dmma_shape::automatic, "/cuda_cores"},
    v_tensor{fe::device_kernel::tensor_cores, fe::dmma_shape::automatic, "/tensor_cores"},
    v_k8{fe::device_kernel::tensor_cores, fe::dmma_shape::m16n8k8, "/tensor_cores_m16n8k8"},
    v_m8{fe::device_kernel::tensor_cores, fe::dmma_shape::m8n8k4, "/tensor_cores_m8n8k4"};

// Median seconds of one resident apply (0 when skipped by --max-gflop).
template <class Real, class S>
double run_gpu(emgpu_bench::report& rep, index_t n_se, index_t n_oe, index_t n_rhs, double max_gflop,
               const variant& var = v_default) {
  const index_t n_s = n_se * pts_per_elem, n_o = n_oe * pts_per_elem;
  const double flops = fe::radiation_kernel<Real>::flops_per_pair(n_rhs) * double(n_s) * double(n_o);
  if (flops / 1e9 > max_gflop) return 0;
  double median = 0;
  problem<Real> p(n_s, n_o, n_rhs);
  cudaStream_t st;
  EMGPU_CUDA_CHECK(cudaStreamCreate(&st));
  {
    const emgpu::backend::cuda b{st, 0};
    fe::radiation_operator<emgpu::backend::cuda, Real, S> op(
        b, {.points = p.src, .weights = p.w}, p.obs, {Real(k0), Real(emgpu::constants::eta0)},
        {.check_separation = false, .kernel = var.kernel, .dmma = var.dmma});
    const auto Jd = emgpu::backend::to_backend(b, std::span<const emgpu::complex<Real>>(p.J));
    const auto Md = emgpu::backend::to_backend(b, std::span<const emgpu::complex<Real>>(p.M));
    // One probe apply sizes the repeats to ~1 s per configuration.
    const auto probe = emgpu_bench::time_cuda(st, [&] { op.apply_resident(Jd.data(), Md.data(), n_rhs); }, 0, 1);
    const int reps = int(std::clamp(1.0 / std::max(probe.median_s, 1e-6), 1.0, 10.0));
    const auto t = emgpu_bench::time_cuda(st, [&] { op.apply_resident(Jd.data(), Md.data(), n_rhs); }, 1, reps);
    median = t.median_s;
    rep.add({.name = std::string("fe_iiee/") + strategy_name<S>() + (sizeof(Real) == 4 ? "/float" : "/double") +
                     var.suffix,
             .backend = "cuda",
             .params = {{"numSp_elems", double(n_se)}, {"numS_elems", double(n_oe)},
                        {"n_sources", double(n_s)}, {"n_observers", double(n_o)}, {"nrhs", double(n_rhs)}},
             .t = t, .metrics = {{"TFLOP/s", flops / t.median_s / 1e12}}, .note = op.last_strategy()});
    // The whole iteration step as a FEM loop sees it: upload currents, download scat_vec.
    if (std::is_same_v<S, fe::strategy::automatic> && var.suffix[0] == '\0') {
      const auto th = emgpu_bench::time_host([&] { (void)op.apply(p.J, p.M); }, 1, std::min(reps, 3));
      rep.add({.name = std::string("fe_iiee/host_in_out") + (sizeof(Real) == 4 ? "/float" : "/double"),
               .backend = "cuda",
               .params = {{"numSp_elems", double(n_se)}, {"numS_elems", double(n_oe)}, {"nrhs", double(n_rhs)}},
               .t = th, .metrics = {{"TFLOP/s", flops / th.median_s / 1e12}}});
    }
  }
  (void)cudaStreamDestroy(st);
  return median;
}

template <class Real>
void multi_gpu(emgpu_bench::report& rep, index_t n_se, index_t n_oe, index_t n_rhs) {
  const int ndev = emgpu::backend::cuda_device_count();
  const index_t n_s = n_se * pts_per_elem, n_o = n_oe * pts_per_elem;
  problem<Real> p(n_s, n_o, n_rhs);
  double t1 = 0;
  for (int nd = 1; nd <= ndev; ++nd) {
    std::vector<int> devs;
    for (int d = 0; d < nd; ++d) devs.push_back(d);
    fe::multi_gpu_operator<Real> mg({.points = p.src, .weights = p.w}, p.obs,
                                    {Real(k0), Real(emgpu::constants::eta0)}, {.devices = devs},
                                    {.check_separation = false});
    // Host currents in, host scat_vec out, into a buffer kept across calls
    // (as an FE-IIEE loop does): every upload and download is in the time.
    std::vector<emgpu::complex<Real>> out(std::size_t(6 * n_o * n_rhs));
    const auto t = emgpu_bench::time_host([&] { mg.apply_into(p.J, p.M, out); }, 1, 5);
    if (nd == 1) t1 = t.median_s;
    if (nd > 1)
      std::printf("multi-GPU (%d RHS, %ld observers): %d GPUs over 1: %.2fx\n", int(n_rhs), long(n_o), nd,
                  t1 / t.median_s);
    rep.add({.name = "fe_iiee/multi_gpu", .backend = "cuda",
             .params = {{"gpus", double(nd)}, {"numSp_elems", double(n_se)}, {"numS_elems", double(n_oe)},
                        {"nrhs", double(n_rhs)}, {"chunks_per_gpu", double(mg.num_chunks(0))}},
             .t = t, .metrics = {{"TFLOP/s", mg.flops(n_rhs) / t.median_s / 1e12}, {"speedup", t1 / t.median_s}}});
  }
}

template <class Real>
void sweep(emgpu_bench::report& rep, index_t max_rhs, double max_gflop, bool variants) {
  const bool q = rep.quick();
  const std::vector<index_t> src_elems = q ? std::vector<index_t>{1272} : std::vector<index_t>{300, 946, 1272};
  const std::vector<index_t> obs_elems = q ? std::vector<index_t>{1572, 19660}
                                           : std::vector<index_t>{1572, 6288, 19660, 78640};
  for (index_t n_rhs : {index_t(1), index_t(10), index_t(100), index_t(1000)}) {
    if (n_rhs > max_rhs) break;
    for (index_t se : src_elems)
      for (index_t oe : obs_elems) {
        run_gpu<Real, fe::strategy::automatic>(rep, se, oe, n_rhs, max_gflop);
        if (variants && sizeof(Real) == 8 && n_rhs >= 8) {  // the two device kernels side by side
          const double tc = run_gpu<Real, fe::strategy::automatic>(rep, se, oe, n_rhs, max_gflop, v_cores);
          const double tt = run_gpu<Real, fe::strategy::automatic>(rep, se, oe, n_rhs, max_gflop, v_tensor);
          const double t4 = run_gpu<Real, fe::strategy::automatic>(rep, se, oe, n_rhs, max_gflop, v_k8);
          const double t8 = run_gpu<Real, fe::strategy::automatic>(rep, se, oe, n_rhs, max_gflop, v_m8);
          if (tc > 0 && tt > 0 && t4 > 0 && t8 > 0)
            rep.add({.name = "fe_iiee/tensor_vs_cuda_cores/double", .backend = "cuda",
                     .params = {{"numSp_elems", double(se)}, {"numS_elems", double(oe)}, {"nrhs", double(n_rhs)}},
                     .t = {}, .metrics = {{"speedup_default_shape", tc / tt}, {"speedup_m16n8k8", tc / t4},
                                          {"speedup_m8n8k4", tc / t8}}});
        }
        if (se == 1272 && (oe == 1572 || oe == 19660)) {  // the strategies side by side
          run_gpu<Real, fe::strategy::over_observers>(rep, se, oe, n_rhs, max_gflop);
          run_gpu<Real, fe::strategy::over_rhs>(rep, se, oe, n_rhs, max_gflop);
          run_gpu<Real, fe::strategy::over_sources>(rep, se, oe, n_rhs, max_gflop);
        }
      }
  }
}

// The figures are only worth reporting if the GPU computes the right thing:
// one of the sources' shapes against the OpenMP backend, 3 RHS.
template <class Real>
void cross_check(emgpu_bench::report& rep, const variant& var = v_default) {
  const index_t n_s = 300 * pts_per_elem, n_o = 1572 * pts_per_elem, n_rhs = 3;
  problem<Real> p(n_s, n_o, n_rhs);
  const fe::medium<Real> med{Real(k0), Real(emgpu::constants::eta0)};
  fe::radiation_operator<emgpu::backend::cuda, Real> g(emgpu::backend::cuda{}, {.points = p.src, .weights = p.w},
                                                       p.obs, med, {.kernel = var.kernel, .dmma = var.dmma});
  fe::radiation_operator<emgpu::backend::openmp, Real> c(emgpu::backend::openmp{}, {.points = p.src, .weights = p.w},
                                                         p.obs, med);
  const auto a = g.apply(p.J, p.M), b = c.apply(p.J, p.M);
  double num = 0, den = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    num += double(emgpu::abs2(a[i] - b[i]));
    den += double(emgpu::abs2(b[i]));
  }
  const double rel = std::sqrt(num / den);
  std::printf("cross-check cuda (%s) vs openmp (%s): relative difference %.2e\n", g.last_strategy().c_str(),
              sizeof(Real) == 4 ? "float" : "double", rel);
  rep.add({.name = std::string("fe_iiee/cross_check") + (sizeof(Real) == 4 ? "/float" : "/double") +
                   var.suffix,
           .backend = "cuda", .params = {{"n_sources", double(n_s)}, {"n_observers", double(n_o)}, {"nrhs", 3.0}},
           .t = {}, .metrics = {{"rel_diff_vs_openmp", rel}}});
}

int main(int argc, char** argv) {
  emgpu_bench::report rep("fe_iiee", argc, argv);
  if (emgpu::backend::cuda_device_count() == 0) {
    std::puts("no GPU: skipped");
    return 0;
  }
  // --multi-only 1: just the multi-GPU rows.
  if (rep.option("--multi-only", 0.0) != 0.0) {
    multi_gpu<double>(rep, 1272, 78640, 1);
    multi_gpu<double>(rep, 1272, 19660, 10);
    rep.write();
    return 0;
  }
  cross_check<double>(rep);
  cross_check<double>(rep, v_tensor);
  cross_check<double>(rep, v_k8);
  cross_check<double>(rep, v_m8);
  cross_check<float>(rep);
  const index_t max_rhs = index_t(rep.option("--max-rhs", rep.quick() ? 100 : 1000));
  const double max_gflop = rep.option("--max-gflop", rep.quick() ? 5000 : 40000);
  const bool variants = rep.option("--variant", std::string("all")) != "auto";
  sweep<double>(rep, max_rhs, max_gflop, variants);
  if (rep.option("--float", 1) != 0) sweep<float>(rep, std::min<index_t>(max_rhs, 100), max_gflop, false);
  multi_gpu<double>(rep, 1272, 78640, 1);
  multi_gpu<double>(rep, 1272, 19660, 10);
  rep.write();
}
#endif
