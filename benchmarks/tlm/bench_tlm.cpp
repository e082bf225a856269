// TLM (SCN) time stepping: node-updates per second and achieved memory
// bandwidth (96 B per node-update in float, 192 B in double: 12 voltages read
// and 12 written), against a device-to-device copy measured in the same run
// (CUDA), or serial against OpenMP (CPU).
//
//   bench_tlm [--quick] [--out FILE.json] [--n N] [--steps S]
//   bench_tlm_cuda [--quick] [--out FILE.json] [--n N] [--steps S]
#include <emgpu/core.hpp>
#include <emgpu/tlm.hpp>

#include "common/bench.hpp"

using namespace emgpu;

namespace {

template <class Real>
constexpr double bytes_per_update = 24.0 * sizeof(Real);

// A closed box with random voltages (so no denormal or zero shortcuts) and,
// optionally, internal walls.
tlm::mesh make_mesh(index_t n, bool walls) {
  tlm::mesh m(n, n, n, 1e-3, tlm::electric_wall);
  m.set_boundary(tlm::face::zmax, tlm::matched);
  if (walls) m.add_iris(tlm::axis::z, n / 2, n / 4, 3 * n / 4, n / 4, 3 * n / 4).add_solid({1, n / 8 + 2, 1, n / 8 + 2, 1, n / 8 + 2});
  return m;
}

template <class Real, class B>
void seed(tlm::solver<B, Real>& s) {
  std::vector<Real> v(std::size_t(12 * s.model().node_count()));
  std::uint64_t x = 12345;
  for (auto& e : v) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    e = Real(double(x >> 11) * (2.0 / 9007199254740992.0) - 1.0);
  }
  s.set_state(v);
}

template <class Real, class B>
emgpu_bench::stats time_steps(tlm::solver<B, Real>& s, int steps, int repeats) {
#if defined(__CUDACC__)
  if constexpr (is_device_backend_v<B>)
    return emgpu_bench::time_cuda(s.backend().stream, [&] { for (int q = 0; q < steps; ++q) s.step_once(); }, 2,
                                  repeats);
#endif
  return emgpu_bench::time_host([&] { for (int q = 0; q < steps; ++q) s.step_once(); }, 1, repeats);
}

const char* real_name(float) { return "float"; }
const char* real_name(double) { return "double"; }

template <class Real, class B>
double run_case(emgpu_bench::report& r, const B& b, const char* backend, index_t n, bool walls, int steps,
                int repeats, double copy_bw) {
  const auto m = make_mesh(n, walls);
  tlm::solver<B, Real> s(m, b);
  seed(s);
  const auto t = time_steps(s, steps, repeats);
  const double rate = double(steps) * double(m.node_count()) / t.median_s;
  const double bw = rate * bytes_per_update<Real>;
  emgpu_bench::record rec{.name = std::string("tlm_scn_") + real_name(Real{}) + (walls ? "_walls" : ""),
                          .backend = backend,
                          .params = {{"n", double(n)}, {"nodes", double(m.node_count())}, {"steps", double(steps)}},
                          .t = t,
                          .metrics = {{"Gnode-updates/s", rate * 1e-9}, {"GB/s", bw * 1e-9}}};
  if (copy_bw > 0) rec.metrics.push_back({"fraction_of_copy_bw", bw / copy_bw});
  r.add(rec);
  return rate;
}

}  // namespace

int main(int argc, char** argv) {
  emgpu_bench::report r("tlm", argc, argv);
  const bool quick = r.quick();
#if defined(EMGPU_TEST_CUDA)
  const index_t n = index_t(r.option("--n", quick ? 128.0 : 256.0));
  const int steps = int(r.option("--steps", quick ? 10.0 : 50.0));
  const backend::cuda b{};
  // Reference: cudaMemcpyAsync D2D of one full voltage set (12 n^3 floats),
  // counting read + written bytes, in this run on this GPU.
  const std::size_t copy_bytes = std::size_t(12) * std::size_t(n * n * n) * sizeof(float);
  const double copy_bw = emgpu_bench::copy_bandwidth(copy_bytes, b.device);
  r.add({.name = "cudaMemcpy_D2D", .backend = "cuda", .params = {{"bytes", double(copy_bytes)}},
         .t = {}, .metrics = {{"GB/s", copy_bw * 1e-9},
                              {"Gnode-updates/s_equiv_float", copy_bw / bytes_per_update<float> * 1e-9}}});
  run_case<float>(r, b, "cuda", n, false, steps, quick ? 5 : 10, copy_bw);
  run_case<float>(r, b, "cuda", n, true, steps, quick ? 5 : 10, copy_bw);
  run_case<double>(r, b, "cuda", n, false, steps, quick ? 5 : 10, copy_bw);
  if (!quick)
    for (index_t m : {index_t(128), index_t(384)}) run_case<float>(r, b, "cuda", m, false, steps, 10, copy_bw);
#else
  const index_t n = index_t(r.option("--n", quick ? 32.0 : 64.0));
  const int steps = int(r.option("--steps", quick ? 5.0 : 20.0));
  const double ts = run_case<float>(r, backend::serial{}, "serial", n, false, steps, quick ? 2 : 5, 0);
  const double to = run_case<float>(r, backend::openmp{}, "openmp", n, false, steps, quick ? 2 : 5, 0);
  r.add({.name = "openmp_over_serial", .backend = "openmp", .params = {{"n", double(n)}, {"threads", double(backend::openmp{}.threads())}},
         .t = {}, .metrics = {{"speedup", to / ts}}});
  const double ds = run_case<double>(r, backend::serial{}, "serial", n, false, steps, quick ? 2 : 5, 0);
  const double dp = run_case<double>(r, backend::openmp{}, "openmp", n, false, steps, quick ? 2 : 5, 0);
  r.add({.name = "openmp_over_serial_double", .backend = "openmp", .params = {{"n", double(n)}, {"threads", double(backend::openmp{}.threads())}},
         .t = {}, .metrics = {{"speedup", dp / ds}}});
  run_case<float>(r, backend::openmp{}, "openmp", n, true, steps, quick ? 2 : 5, 0);
#endif
  r.write();
  return 0;
}
