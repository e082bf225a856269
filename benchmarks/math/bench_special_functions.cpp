// Hankel-function throughput (evaluations per second) on each backend, in double
// and float, against the platform's own Bessel functions measured in the same run:
// glibc j0/y0/j1/y1 on the CPU, CUDA's j0/y0/j1/y1 (libdevice) on the GPU, both
// combined into H^(2) = J - jY. Two argument sets: "mixed" (log-uniform over
// [1e-2, 1e3], 58% below the x = 8 split, shuffled so GPU warps diverge as in a
// MoM fill) and "far" (uniform over [8, 200], the bulk of a MoM matrix).
// Also prints the largest difference between emgpu and the vendor functions.
//
//   bench_special_functions [--quick] [--out FILE.json]
#include <cmath>
#include <math.h>
#include <random>
#include <string>
#include <vector>

#include <emgpu/core.hpp>
#include <emgpu/backend.hpp>
#include <emgpu/math.hpp>

#include "common/bench.hpp"

using namespace emgpu;

namespace {

template <class T>
struct h0_fn {
  const T* x;
  complex<T>* out;
  EMGPU_HD void operator()(index_t i) const { out[i] = math::hankel2_0(x[i]); }
};
template <class T>
struct h01_fn {
  const T* x;
  complex<T>* out0;
  complex<T>* out1;
  EMGPU_HD void operator()(index_t i) const {
    const auto h = math::hankel2_01(x[i]);
    out0[i] = h.h0;
    out1[i] = h.h1;
  }
};
// The vendor's Bessel functions (glibc on the host, CUDA libdevice on the device).
template <class T>
struct vendor_h0_fn {
  const T* x;
  complex<T>* out;
  EMGPU_HD void operator()(index_t i) const {
    if constexpr (std::is_same_v<T, float>) out[i] = complex<T>(::j0f(x[i]), -::y0f(x[i]));
    else out[i] = complex<T>(::j0(x[i]), -::y0(x[i]));
  }
};
template <class T>
struct vendor_h01_fn {
  const T* x;
  complex<T>* out0;
  complex<T>* out1;
  EMGPU_HD void operator()(index_t i) const {
    const T v = x[i];
    if constexpr (std::is_same_v<T, float>) {
      out0[i] = complex<T>(::j0f(v), -::y0f(v));
      out1[i] = complex<T>(::j1f(v), -::y1f(v));
    } else {
      out0[i] = complex<T>(::j0(v), -::y0(v));
      out1[i] = complex<T>(::j1(v), -::y1(v));
    }
  }
};

template <class T>
std::vector<T> arguments(index_t n, int dist) {
  std::mt19937_64 g(42);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<T> x(static_cast<std::size_t>(n));
  for (auto& v : x) v = T(dist == 0 ? std::pow(10.0, -2 + 5 * u(g)) : 8 + 192 * u(g));
  return x;
}

template <class B, class F>
emgpu_bench::stats time_it(const B& b, F&& f, int reps) {
#if defined(__CUDACC__)
  if constexpr (std::is_same_v<B, backend::cuda>) return emgpu_bench::time_cuda(b.stream, f, 3, reps);
#endif
  (void)b;
  return emgpu_bench::time_host([&] { f(); synchronize(b); }, 1, reps);
}

template <class B, class T>
void run(emgpu_bench::report& r, const B& b, index_t n, int dist, int reps) {
  const std::string prec = sizeof(T) == 4 ? "float" : "double";
  const std::string dname = dist == 0 ? "mixed" : "far";
  const auto xh = arguments<T>(n, dist);
  auto x = to_backend(b, std::span<const T>(xh.data(), xh.size()));
  auto o0 = make_vector<complex<T>>(b, n), o1 = make_vector<complex<T>>(b, n);
  auto v0 = make_vector<complex<T>>(b, n), v1 = make_vector<complex<T>>(b, n);
  const auto t0 = time_it(b, [&] { for_each_index(b, n, h0_fn<T>{x.data(), o0.data()}); }, reps);
  const auto tv0 = time_it(b, [&] { for_each_index(b, n, vendor_h0_fn<T>{x.data(), v0.data()}); }, reps);
  const auto t01 = time_it(b, [&] { for_each_index(b, n, h01_fn<T>{x.data(), o0.data(), o1.data()}); }, reps);
  const auto tv01 = time_it(b, [&] {
    for_each_index(b, n, vendor_h01_fn<T>{x.data(), v0.data(), v1.data()});
  }, reps);
  const double N = double(n);
  const std::vector<std::pair<std::string, double>> params = {{"n", N}, {"far_args", double(dist)}};
  const std::string be = backend_traits<B>::name;
  r.add({.name = "emgpu::hankel2_0<" + prec + ">/" + dname, .backend = be, .params = params, .t = t0,
         .metrics = {{"Geval/s", N / t0.median_s / 1e9}, {"speedup_vs_vendor", tv0.median_s / t0.median_s}}});
  r.add({.name = "vendor j0,y0<" + prec + ">/" + dname, .backend = be, .params = params, .t = tv0,
         .metrics = {{"Geval/s", N / tv0.median_s / 1e9}}});
  r.add({.name = "emgpu::hankel2_01<" + prec + ">/" + dname, .backend = be, .params = params, .t = t01,
         .metrics = {{"Gpair/s", N / t01.median_s / 1e9}, {"speedup_vs_vendor", tv01.median_s / t01.median_s}}});
  r.add({.name = "vendor j0,y0,j1,y1<" + prec + ">/" + dname, .backend = be, .params = params, .t = tv01,
         .metrics = {{"Gpair/s", N / tv01.median_s / 1e9}}});
  // Agreement with the vendor (informative: the vendor is not the reference).
  const auto a0 = to_host(b, o0), a1 = to_host(b, o1), b0 = to_host(b, v0), b1 = to_host(b, v1);
  double d0 = 0, d1 = 0;
  for (std::size_t i = 0; i < a0.size(); ++i) {
    d0 = std::max(d0, double(abs_any(a0[i] - b0[i]) / abs_any(b0[i])));
    d1 = std::max(d1, double(abs_any(a1[i] - b1[i]) / abs_any(b1[i])));
  }
  std::printf("  %s %s %s: max |H - H_vendor|/|H_vendor|: H0 %.2e, H1 %.2e\n", be.c_str(), prec.c_str(),
              dname.c_str(), d0, d1);
}

}  // namespace

int main(int argc, char** argv) {
  emgpu_bench::report r("special_functions", argc, argv);
  const bool q = r.quick();
#if defined(__CUDACC__)
  const backend::cuda b{};
  const index_t n = q ? (index_t(1) << 20) : (index_t(1) << 24);
  for (int dist : {0, 1}) {
    run<backend::cuda, double>(r, b, n, dist, q ? 5 : 20);
    run<backend::cuda, float>(r, b, n, dist, q ? 5 : 20);
  }
#else
  const index_t n = q ? (index_t(1) << 16) : (index_t(1) << 21);
  for (int dist : {0, 1}) {
    run<backend::serial, double>(r, backend::serial{}, n, dist, q ? 3 : 5);
    run<backend::openmp, double>(r, backend::openmp{}, n, dist, q ? 3 : 5);
    run<backend::serial, float>(r, backend::serial{}, n, dist, q ? 3 : 5);
    run<backend::openmp, float>(r, backend::openmp{}, n, dist, q ? 3 : 5);
  }
#endif
  r.write();
  return 0;
}
