// Backend primitives against the vendor reference measured in the same run:
// norm2 (a full reduction) vs Eigen's norm() on the CPU and cuBLAS dznrm2 on
// the GPU; fill bandwidth vs a device-to-device copy on the GPU.
#include <random>
#include <vector>

#include <Eigen/Dense>
#include <emgpu/core.hpp>
#include <emgpu/backend.hpp>

#include "common/bench.hpp"

#if defined(__CUDACC__)
#include <cublas_v2.h>
#endif

using namespace emgpu;

template <class B>
void run_backend(emgpu_bench::report& r, const B& b, const std::vector<complexd>& h, int reps) {
  const index_t n = index_t(h.size());
  auto d = to_backend(b, std::span<const complexd>(h.data(), h.size()));
  double sink = 0;
  auto t = emgpu_bench::time_host([&] { sink += norm2(b, d.data(), n); }, 1, reps);
  const double bytes = double(n) * sizeof(complexd);
  r.add({.name = "emgpu::norm2", .backend = backend_traits<B>::name, .params = {{"n", double(n)}},
         .t = t, .metrics = {{"GB/s", bytes / t.median_s / 1e9}}});
  if (sink < 0) std::printf("impossible\n");
}

int main(int argc, char** argv) {
  emgpu_bench::report r("core", argc, argv);
  const index_t n = r.quick() ? (index_t(1) << 20) : (index_t(1) << 24);
  const int reps = r.quick() ? 3 : 7;
  std::vector<complexd> h(static_cast<std::size_t>(n));
  std::mt19937_64 g(1);
  std::normal_distribution<double> nd;
  for (auto& z : h) z = complexd(nd(g), nd(g));

#if !defined(__CUDACC__)
  run_backend(r, backend::serial{}, h, reps);
  run_backend(r, backend::openmp{}, h, reps);
  Eigen::Map<const Eigen::VectorXcd> m(as_std(h.data()), n);
  double sink = 0;
  auto te = emgpu_bench::time_host([&] { sink += m.norm(); }, 1, reps);
  r.add({.name = "eigen::norm", .backend = "vendor", .params = {{"n", double(n)}}, .t = te,
         .metrics = {{"GB/s", double(n) * sizeof(complexd) / te.median_s / 1e9}}});
  const double ref = m.norm();
  const double ours = norm2(backend::openmp{}, h.data(), n);
  std::printf("norm2 relative difference vs Eigen: %.2e\n", std::fabs(ours - ref) / ref);
#else
  const backend::cuda b{};
  run_backend(r, b, h, reps);
  auto d = to_backend(b, std::span<const complexd>(h.data(), h.size()));
  cublasHandle_t handle;
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) throw device_error("cublasCreate failed", 0);
  double res = 0;
  auto tc = emgpu_bench::time_host([&] {
    if (cublasDznrm2(handle, int(n), reinterpret_cast<const cuDoubleComplex*>(d.data()), 1, &res) !=
        CUBLAS_STATUS_SUCCESS)
      throw device_error("cublasDznrm2 failed", 0);
  }, 2, reps);
  r.add({.name = "cublas::dznrm2", .backend = "vendor", .params = {{"n", double(n)}}, .t = tc,
         .metrics = {{"GB/s", double(n) * sizeof(complexd) / tc.median_s / 1e9}}});
  const double ours = norm2(b, d.data(), n);
  std::printf("norm2 relative difference vs cuBLAS: %.2e\n", std::fabs(ours - res) / res);
  // fill: one write per element, compared with a D2D copy's read+write bandwidth.
  auto tf = emgpu_bench::time_cuda(b.stream, [&] { fill(b, d.data(), n, complexd(1, 2)); }, 3, 20);
  const double copy_bw = emgpu_bench::copy_bandwidth();
  r.add({.name = "emgpu::fill", .backend = "cuda", .params = {{"n", double(n)}}, .t = tf,
         .metrics = {{"GB/s", double(n) * sizeof(complexd) / tf.median_s / 1e9},
                     {"copy_GB/s", copy_bw / 1e9},
                     {"fraction_of_copy", double(n) * sizeof(complexd) / tf.median_s / copy_bw}}});
  cublasDestroy(handle);
#endif
  r.write();
  return 0;
}
