// Batched LU / QR / SVD throughput for complex<double>.
//
// GPU build (bench_batched_cuda): emgpu's kernels side by side, in the same
// process, with cuBLAS zgetrfBatched, cuBLAS zgeqrfBatched and cuSOLVER
// zgesvdjBatched (n <= 32, its limit); 100 000 matrices for n <= 32, 20 000 for
// n = 64, 5 000 for n = 128 (--quick: a tenth). Every timed call starts from a
// fresh copy of the input (the copy itself is not timed). For n <= 32 the
// achieved bandwidth (one read + one write of the batch, the floor for an
// in-place factorisation) is reported against the device-to-device copy
// bandwidth measured in the same run.
// CPU build (bench_batched): serial vs OpenMP (all cores), Eigen's
// PartialPivLU / HouseholderQR / JacobiSVD per matrix as the vendor reference.
//
//   bench_batched[_cuda] [--quick] [--out FILE.json] [--sizes 8,16,32,64,128]
#include <complex>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <emgpu/core.hpp>
#include <emgpu/batched.hpp>

#include "common/bench.hpp"

#if defined(__CUDACC__)
#include <cublas_v2.h>
#include <cusolverDn.h>
#endif

using namespace emgpu;
using T = complex<double>;

namespace {

std::vector<index_t> parse_sizes(const std::string& s) {
  std::vector<index_t> v;
  std::stringstream ss(s);
  std::string tok;
  while (std::getline(ss, tok, ',')) v.push_back(std::stoll(tok));
  return v;
}

std::vector<T> random_batch(index_t n, index_t count) {
  std::mt19937_64 g(1234 + n);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> h(static_cast<std::size_t>(n * n * count));
  for (auto& x : h) x = T(u(g), u(g));
  return h;
}

// Real flops of zgetrf (LAPACK working note 41: n^3/3 complex multiply-adds,
// 8 real flops each), the usual figure for comparing LU rates.
[[maybe_unused]] double lu_flops(double n) { return 8.0 / 3.0 * n * n * n; }

#if defined(__CUDACC__)

#define BENCH_CUBLAS(call)                                                                 \
  do {                                                                                     \
    const cublasStatus_t st_ = (call);                                                     \
    if (st_ != CUBLAS_STATUS_SUCCESS) throw device_error(#call " failed", int(st_));       \
  } while (0)
#define BENCH_CUSOLVER(call)                                                               \
  do {                                                                                     \
    const cusolverStatus_t st_ = (call);                                                   \
    if (st_ != CUSOLVER_STATUS_SUCCESS) throw device_error(#call " failed", int(st_));     \
  } while (0)

/// Times f() after reset() (untimed) each repetition, with CUDA events. The
/// warm-up is synchronised and checked on its own, so that an asynchronous
/// fault is reported with the name of the call that caused it (and the
/// progress line on stderr says how far the run got).
template <class Reset, class F>
emgpu_bench::stats time_reset(const char* what, index_t n, cudaStream_t s, Reset&& reset, F&& f,
                              int warmup, int reps) {
  std::fprintf(stderr, "[bench_batched] n = %lld: %s\n", static_cast<long long>(n), what);
  for (int i = 0; i < warmup; ++i) {
    reset();
    f();
  }
  const cudaError_t e = cudaStreamSynchronize(s);
  if (e != cudaSuccess)
    throw device_error(std::string("bench_batched: ") + what + " (n = " + std::to_string(n) +
                           ") failed: " + cudaGetErrorString(e),
                       int(e));
  cudaEvent_t a, b;
  EMGPU_CUDA_CHECK(cudaEventCreate(&a));
  EMGPU_CUDA_CHECK(cudaEventCreate(&b));
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    reset();
    EMGPU_CUDA_CHECK(cudaEventRecord(a, s));
    f();
    EMGPU_CUDA_CHECK(cudaEventRecord(b, s));
    EMGPU_CUDA_CHECK(cudaEventSynchronize(b));
    float ms = 0;
    EMGPU_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(double(ms) * 1e-3);
  }
  (void)cudaEventDestroy(a);
  (void)cudaEventDestroy(b);
  return emgpu_bench::summarize(std::move(t));
}

void run_gpu(emgpu_bench::report& r, const std::vector<index_t>& sizes) {
  backend::cuda b{};
  cublasHandle_t cb;
  cusolverDnHandle_t cs;
  BENCH_CUBLAS(cublasCreate(&cb));
  BENCH_CUSOLVER(cusolverDnCreate(&cs));
  // Vendor calls on the stream the events and the resets use.
  BENCH_CUBLAS(cublasSetStream(cb, b.stream));
  BENCH_CUSOLVER(cusolverDnSetStream(cs, b.stream));
  const double copy_bw = emgpu_bench::copy_bandwidth();
  std::printf("device-to-device copy bandwidth: %.1f GB/s\n", copy_bw / 1e9);
  const int reps = r.quick() ? 3 : 5;

  for (index_t n : sizes) {
    index_t count = n <= 32 ? 100000 : n <= 64 ? 20000 : 5000;
    if (r.quick()) count /= 10;
    const std::vector<T> h = random_batch(n, count);
    const auto d_in = to_backend(b, std::span<const T>(h));
    auto d_a = make_vector<T>(b, n * count);
    const auto reset = [&] { copy_within(b, d_in.data(), n * count, d_a.data()); };
    const strided_batch_view<T> av{d_a.data(), n, n, n, n * n, count};
    const double bytes = 2.0 * double(n * n * count) * sizeof(T);
    const auto bw_metrics = [&](const emgpu_bench::stats& t) {
      std::vector<std::pair<std::string, double>> m;
      if (n <= 32) {
        m.push_back({"GB/s", bytes / t.median_s / 1e9});
        m.push_back({"frac_copy_bw", bytes / t.median_s / copy_bw});
      }
      return m;
    };
    const std::vector<std::pair<std::string, double>> params = {{"n", double(n)}, {"count", double(count)}};

    // Pointer arrays for cuBLAS.
    std::vector<T*> ptrs(static_cast<std::size_t>(count));
    for (index_t k = 0; k < count; ++k) ptrs[std::size_t(k)] = d_a.data() + k * n * n;
    const auto d_ptrs = to_backend(b, std::span<T* const>(ptrs));
    auto d_tau = make_vector<T>(b, n * count);
    std::vector<T*> tptrs(static_cast<std::size_t>(count));
    for (index_t k = 0; k < count; ++k) tptrs[std::size_t(k)] = d_tau.data() + k * n;
    const auto d_tptrs = to_backend(b, std::span<T* const>(tptrs));
    auto d_piv = make_vector<index_t>(b, n * count);
    auto d_ipiv32 = make_vector<int>(b, n * count);
    auto d_info = make_vector<int>(b, count);

    // ---- LU
    const auto t_lu = time_reset("emgpu lu_factor", n, b.stream, reset, [&] { batched::lu_factor(b, av, d_piv.data(), d_info.data()); }, 1, reps);
    const auto t_vlu = time_reset("cublasZgetrfBatched", n, b.stream, reset, [&] {
      BENCH_CUBLAS(cublasZgetrfBatched(cb, int(n), reinterpret_cast<cuDoubleComplex* const*>(d_ptrs.data()),
                                       int(n), d_ipiv32.data(), d_info.data(), int(count)));
    }, 1, reps);
    auto m = bw_metrics(t_lu);
    m.push_back({"GFLOP/s", lu_flops(double(n)) * double(count) / t_lu.median_s / 1e9});
    m.push_back({"speedup_vs_cublas", t_vlu.median_s / t_lu.median_s});
    r.add({.name = "lu_factor", .backend = "cuda", .params = params, .t = t_lu, .metrics = m});
    r.add({.name = "cublasZgetrfBatched", .backend = "vendor", .params = params, .t = t_vlu,
           .metrics = bw_metrics(t_vlu)});

    // ---- QR
    const auto t_qr = time_reset("emgpu qr_factor", n, b.stream, reset, [&] { batched::qr_factor(b, av); }, 1, reps);
    const auto t_vqr = time_reset("cublasZgeqrfBatched", n, b.stream, reset, [&] {
      int hinfo = 0;
      BENCH_CUBLAS(cublasZgeqrfBatched(cb, int(n), int(n), reinterpret_cast<cuDoubleComplex* const*>(d_ptrs.data()),
                                       int(n), reinterpret_cast<cuDoubleComplex* const*>(d_tptrs.data()), &hinfo,
                                       int(count)));
    }, 1, reps);
    m = bw_metrics(t_qr);
    m.push_back({"speedup_vs_cublas", t_vqr.median_s / t_qr.median_s});
    r.add({.name = "qr_factor", .backend = "cuda", .params = params, .t = t_qr, .metrics = m});
    r.add({.name = "cublasZgeqrfBatched", .backend = "vendor", .params = params, .t = t_vqr,
           .metrics = bw_metrics(t_vqr)});

    // ---- SVD (U, S, V)
    auto d_s = make_vector<double>(b, n * count);
    auto d_u = make_vector<T>(b, n * n * count);
    auto d_v = make_vector<T>(b, n * n * count);
    const strided_batch_view<T> uv{d_u.data(), n, n, n, n * n, count}, vv{d_v.data(), n, n, n, n * n, count};
    const int sreps = n >= 64 ? 2 : reps;
    const auto t_svd = time_reset("emgpu svd(U,S,V)", n, b.stream, reset, [&] {
      batched::svd(b, av, d_s.data(), uv, vv, d_info.data());
    }, 1, sreps);
    const auto t_sv = time_reset("emgpu svd(S)", n, b.stream, reset, [&] {
      batched::svd(b, av, d_s.data(), strided_batch_view<T>{}, strided_batch_view<T>{}, d_info.data());
    }, 1, sreps);
    const std::vector<int> inf = to_host(b, d_info);
    index_t bad = 0;
    for (int x : inf) bad += x != 0;
    m = bw_metrics(t_svd);
    if (n <= 32) {
      gesvdjInfo_t par;
      BENCH_CUSOLVER(cusolverDnCreateGesvdjInfo(&par));
      int lwork = 0;
      BENCH_CUSOLVER(cusolverDnZgesvdjBatched_bufferSize(
          cs, CUSOLVER_EIG_MODE_VECTOR, int(n), int(n), reinterpret_cast<cuDoubleComplex*>(d_a.data()), int(n),
          d_s.data(), reinterpret_cast<cuDoubleComplex*>(d_u.data()), int(n),
          reinterpret_cast<cuDoubleComplex*>(d_v.data()), int(n), &lwork, par, int(count)));
      auto d_work = make_vector<T>(b, lwork);
      const auto t_vsvd = time_reset("cusolverDnZgesvdjBatched", n, b.stream, reset, [&] {
        BENCH_CUSOLVER(cusolverDnZgesvdjBatched(
            cs, CUSOLVER_EIG_MODE_VECTOR, int(n), int(n), reinterpret_cast<cuDoubleComplex*>(d_a.data()), int(n),
            d_s.data(), reinterpret_cast<cuDoubleComplex*>(d_u.data()), int(n),
            reinterpret_cast<cuDoubleComplex*>(d_v.data()), int(n),
            reinterpret_cast<cuDoubleComplex*>(d_work.data()), lwork, d_info.data(), par, int(count)));
      }, 1, reps);
      (void)cusolverDnDestroyGesvdjInfo(par);
      m.push_back({"speedup_vs_cusolver", t_vsvd.median_s / t_svd.median_s});
      r.add({.name = "cusolverDnZgesvdjBatched(U,S,V)", .backend = "vendor", .params = params, .t = t_vsvd,
             .metrics = bw_metrics(t_vsvd)});
    }
    m.push_back({"not_converged", double(bad)});
    r.add({.name = "svd(U,S,V)", .backend = "cuda", .params = params, .t = t_svd, .metrics = m});
    r.add({.name = "svd(S only)", .backend = "cuda", .params = params, .t = t_sv, .metrics = bw_metrics(t_sv)});
  }
  (void)cusolverDnDestroy(cs);
  (void)cublasDestroy(cb);
}

#else  // CPU build

template <class B>
emgpu_bench::stats time_cpu(const B& b, const std::vector<T>& h, index_t n, index_t count, int op, int reps) {
  std::vector<T> a = h;
  std::vector<index_t> piv(static_cast<std::size_t>(n * count));
  std::vector<int> info(static_cast<std::size_t>(count));
  std::vector<double> s(static_cast<std::size_t>(n * count));
  std::vector<T> u(h.size()), v(h.size());
  const strided_batch_view<T> av{a.data(), n, n, n, n * n, count};
  std::vector<double> t;
  for (int i = 0; i < reps + 1; ++i) {
    a = h;
    const auto t0 = std::chrono::steady_clock::now();
    if (op == 0) batched::lu_factor(b, av, piv.data(), info.data());
    else if (op == 1) batched::qr_factor(b, av);
    else
      batched::svd(b, av, s.data(), strided_batch_view<T>{u.data(), n, n, n, n * n, count},
                   strided_batch_view<T>{v.data(), n, n, n, n * n, count}, info.data());
    const auto t1 = std::chrono::steady_clock::now();
    if (i > 0) t.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  return emgpu_bench::summarize(t);
}

emgpu_bench::stats time_eigen(const std::vector<T>& h, index_t n, index_t count, int op, int reps) {
  using M = Eigen::Matrix<std::complex<double>, Eigen::Dynamic, Eigen::Dynamic>;
  double sink = 0;
  auto st = emgpu_bench::time_host([&] {
    for (index_t k = 0; k < count; ++k) {
      const Eigen::Map<const M> a(as_std(h.data() + k * n * n), n, n);
      if (op == 0) sink += std::abs(Eigen::PartialPivLU<M>(a).matrixLU()(0, 0));
      else if (op == 1) sink += std::abs(Eigen::HouseholderQR<M>(a).matrixQR()(0, 0));
      else sink += Eigen::JacobiSVD<M>(a, Eigen::ComputeThinU | Eigen::ComputeThinV).singularValues()(0);
    }
  }, 1, reps);
  if (sink == 12345.678) std::printf(" ");
  return st;
}

void run_cpu(emgpu_bench::report& r, const std::vector<index_t>& sizes) {
  const backend::serial s;
  const backend::openmp o;
  const char* names[3] = {"lu_factor", "qr_factor", "svd(U,S,V)"};
  const char* enames[3] = {"eigen PartialPivLU", "eigen HouseholderQR", "eigen JacobiSVD"};
  for (index_t n : sizes) {
    for (int op = 0; op < 3; ++op) {
      // Work per call about 1e8 flops (SVD: 1e9 / sweeps), smaller with --quick.
      const double work = (op == 2 ? 30.0 : 1.0) * 8.0 * double(n) * n * n;
      index_t count = index_t(std::max(16.0, (r.quick() ? 2e7 : 2e8) / work));
      const std::vector<T> h = random_batch(n, count);
      const std::vector<std::pair<std::string, double>> params = {{"n", double(n)}, {"count", double(count)},
                                                                  {"threads", double(o.threads())}};
      const auto ts = time_cpu(s, h, n, count, op, 3);
      const auto to = time_cpu(o, h, n, count, op, 3);
      const auto te = time_eigen(h, n, count, op, 3);
      r.add({.name = names[op], .backend = "serial", .params = params, .t = ts,
             .metrics = {{"speedup_vs_eigen", te.median_s / ts.median_s}}});
      r.add({.name = names[op], .backend = "openmp", .params = params, .t = to,
             .metrics = {{"speedup_vs_serial", ts.median_s / to.median_s}}});
      r.add({.name = enames[op], .backend = "vendor", .params = params, .t = te, .metrics = {}});
    }
  }
}

#endif

}  // namespace

int main(int argc, char** argv) {
  emgpu_bench::report r("batched", argc, argv);
  const std::vector<index_t> sizes = parse_sizes(r.option("--sizes", std::string("8,16,32,64,128")));
#if defined(__CUDACC__)
  if (backend::cuda_device_count() == 0) {
    std::printf("no CUDA device: nothing to measure\n");
    return 77;
  }
  run_gpu(r, sizes);
#else
  run_cpu(r, sizes);
#endif
  r.write();
  return 0;
}
