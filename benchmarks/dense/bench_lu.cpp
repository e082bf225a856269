// Dense LU (emgpu::dense::crout_lu) against the vendor reference in the same run:
// Eigen PartialPivLU on the CPU (serial and OpenMP), cuSOLVER zgetrf/zgetrs on
// the GPU. TFLOP/s counts 8/3 n^3 real flops (complex LU); solves are timed
// for 1 and 360 right-hand sides (a monostatic sweep), 8 n^2 nrhs flops.
//
//   bench_lu [--quick] [--max-n N] [--min-n N] [--nb B] [--no-lookahead 1] [--out FILE.json]
// --nb sets crout_lu::block_size (0 = automatic), for tuning runs.
// CPU default n = 256..2048; GPU default n = 1024..32768 (--max-n limits it).
// Each GPU run also reports the backward error ||A x - b|| / (||A||_F ||x|| eps)
// of one solve, so a fast but wrong factorisation cannot go unnoticed.
#include <cmath>
#include <complex>
#include <cstdio>
#include <random>
#include <vector>

#include <Eigen/Dense>
#include <emgpu/core.hpp>
#include <emgpu/dense.hpp>

#include "common/bench.hpp"

#if defined(__CUDACC__)
#include <cusolverDn.h>
#endif

using namespace emgpu;
namespace dn = emgpu::dense;

namespace {

double lu_flops(double n) { return 8.0 / 3.0 * n * n * n; }
double solve_flops(double n, double nrhs) { return 8.0 * n * n * nrhs; }

#if !defined(__CUDACC__)
using MatC = Eigen::MatrixXcd;

template <class B>
void bench_host(emgpu_bench::report& r, const B& b, const char* name, const std::vector<complexd>& a0,
                index_t n, int reps, double& t_out) {
  std::vector<complexd> a(a0.size());
  auto t = emgpu_bench::time_host([&] {
    a = a0;
    dn::crout_lu::factorization<B, complexd> f(b, matrix_view<complexd>{a.data(), n, n, n});
  }, 1, reps);
  t_out = t.median_s;
  r.add({.name = "emgpu::crout_lu", .backend = name, .params = {{"n", double(n)}}, .t = t,
         .metrics = {{"TFLOP/s", lu_flops(double(n)) / t.median_s / 1e12}}});
  {
    // Mixed precision: complex<float> LU + refinement; A is not overwritten.
    a = a0;
    auto tm = emgpu_bench::time_host([&] {
      dn::mixed_lu::factorization<B, complexd> m(b, matrix_view<complexd>{a.data(), n, n, n});
    }, 1, reps);
    r.add({.name = "emgpu::mixed_lu", .backend = name, .params = {{"n", double(n)}}, .t = tm,
           .metrics = {{"TFLOP/s_equiv", lu_flops(double(n)) / tm.median_s / 1e12},
                       {"speedup_vs_crout_lu", t.median_s / tm.median_s}}});
    const dn::mixed_lu::factorization<B, complexd> m(b, matrix_view<complexd>{a.data(), n, n, n});
    for (index_t nrhs : {index_t(1), index_t(360)}) {
      std::vector<complexd> x0(std::size_t(n * nrhs), complexd(1, -1)), x(x0.size());
      auto ts = emgpu_bench::time_host([&] {
        x = x0;
        m.solve(matrix_view<complexd>{x.data(), n, nrhs, n});
      }, 1, reps);
      r.add({.name = "emgpu::mixed_lu.solve", .backend = name,
             .params = {{"n", double(n)}, {"nrhs", double(nrhs)}}, .t = ts,
             .metrics = {{"refinement_steps", double(m.last_iterations())}}});
    }
  }
  a = a0;
  const dn::crout_lu::factorization<B, complexd> f(b, matrix_view<complexd>{a.data(), n, n, n});
  for (index_t nrhs : {index_t(1), index_t(360)}) {
    std::vector<complexd> x0(std::size_t(n * nrhs), complexd(1, -1)), x(x0.size());
    auto ts = emgpu_bench::time_host([&] {
      x = x0;
      f.solve(matrix_view<complexd>{x.data(), n, nrhs, n});
    }, 1, reps);
    r.add({.name = "emgpu::crout_lu.solve", .backend = name,
           .params = {{"n", double(n)}, {"nrhs", double(nrhs)}}, .t = ts,
           .metrics = {{"TFLOP/s", solve_flops(double(n), double(nrhs)) / ts.median_s / 1e12}}});
  }
}
#endif

#if defined(__CUDACC__)
// Reproducible pseudo-random entries in [-1, 1]^2 from a hash of (i, j), so an
// N = 32768 matrix is made on the device in milliseconds.
struct random_fill_fn {
  complexd* a;
  index_t ld;
  unsigned long long seed;
  EMGPU_HD static double u01(unsigned long long x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return double(x >> 11) * (1.0 / 9007199254740992.0);
  }
  EMGPU_HD void operator()(index_t i, index_t j) const {
    const unsigned long long k = (static_cast<unsigned long long>(j) << 32) ^ static_cast<unsigned long long>(i) ^ seed;
    a[i + j * ld] = complexd(2 * u01(2 * k + 1) - 1, 2 * u01(2 * k + 2) - 1);
  }
};

void check_cusolver(cusolverStatus_t s, const char* what) {
  if (s != CUSOLVER_STATUS_SUCCESS) throw device_error(std::string("cuSOLVER ") + what + " failed", int(s));
}

#endif

}  // namespace

int main(int argc, char** argv) {
  emgpu_bench::report r("lu", argc, argv);
#if !defined(__CUDACC__)
  const index_t max_n = index_t(r.option("--max-n", r.quick() ? 1024.0 : 2048.0));
  const index_t min_n = index_t(r.option("--min-n", 256.0));
  const int reps = r.quick() ? 3 : 5;
  const backend::openmp omp{};
  for (index_t n = min_n; n <= max_n; n *= 2) {
    std::vector<complexd> a0(std::size_t(n * n));
    std::mt19937_64 g(n);
    std::uniform_real_distribution<double> u(-1, 1);
    for (auto& z : a0) z = complexd(u(g), u(g));
    double ts = 0, to = 0;
    bench_host(r, backend::serial{}, "serial", a0, n, reps, ts);
    bench_host(r, omp, "openmp", a0, n, reps, to);
    const Eigen::Map<const MatC> am(as_std(a0.data()), n, n);
    Eigen::PartialPivLU<MatC> lu;
    Eigen::setNbThreads(1);
    auto te = emgpu_bench::time_host([&] { lu.compute(am); }, 1, reps);
    Eigen::setNbThreads(0);
    auto tem = emgpu_bench::time_host([&] { lu.compute(am); }, 1, reps);
    r.add({.name = "eigen::PartialPivLU", .backend = "vendor-1thread", .params = {{"n", double(n)}},
           .t = te, .metrics = {{"TFLOP/s", lu_flops(double(n)) / te.median_s / 1e12},
                                {"serial_speedup_vs_eigen", te.median_s / ts}}});
    r.add({.name = "eigen::PartialPivLU", .backend = "vendor-threads", .params = {{"n", double(n)}},
           .t = tem, .metrics = {{"TFLOP/s", lu_flops(double(n)) / tem.median_s / 1e12},
                                 {"openmp_speedup_vs_serial", ts / to},
                                 {"openmp_speedup_vs_eigen_threads", tem.median_s / to},
                                 {"threads", double(omp.threads())}}});
    for (index_t nrhs : {index_t(1), index_t(360)}) {
      const MatC bm = MatC::Constant(n, nrhs, std::complex<double>(1, -1));
      MatC x;
      Eigen::setNbThreads(1);
      auto tsol = emgpu_bench::time_host([&] { x = lu.solve(bm); }, 1, reps);
      Eigen::setNbThreads(0);
      r.add({.name = "eigen::PartialPivLU.solve", .backend = "vendor-1thread",
             .params = {{"n", double(n)}, {"nrhs", double(nrhs)}}, .t = tsol,
             .metrics = {{"TFLOP/s", solve_flops(double(n), double(nrhs)) / tsol.median_s / 1e12}}});
    }
  }
#else
  const index_t max_n = index_t(r.option("--max-n", r.quick() ? 4096.0 : 32768.0));
  const index_t min_n = index_t(r.option("--min-n", 1024.0));
  const backend::cuda b{};
  const dn::crout_lu opts{index_t(r.option("--nb", 0.0)), r.option("--no-lookahead", 0.0) == 0.0};
  cusolverDnHandle_t sh = nullptr;
  check_cusolver(cusolverDnCreate(&sh), "cusolverDnCreate");
  check_cusolver(cusolverDnSetStream(sh, b.stream), "cusolverDnSetStream");
  for (index_t n = min_n; n <= max_n; n *= 2) {
    const int reps = n >= 32768 ? 2 : (n >= 16384 ? 3 : 5);
    const int warm = 1;
    // Pristine matrix, working copy, pivots: 2 n^2 complex (34 GB at n = 32768).
    device_vector<complexd> a0(n * n), a(n * n);
    for_each_index(b, n, n, random_fill_fn{a0.data(), n, 12345ull});
    const std::size_t bytes = sizeof(complexd) * std::size_t(n * n);
    auto reset = [&] { EMGPU_CUDA_CHECK(cudaMemcpyAsync(a.data(), a0.data(), bytes, cudaMemcpyDeviceToDevice, b.stream)); };
    const matrix_view<complexd> av{a.data(), n, n, n};

    // emgpu: the bare factorisation (lu_factor), like zgetrf with its ipiv
    // and workspace allocated outside the timed region.
    device_vector<index_t> our_piv(n);
    auto t = emgpu_bench::time_cuda(b.stream, [&] { dn::lu_factor(b, av, our_piv.data(), opts); }, warm, reps,
            reset);
    reset();
    const dn::crout_lu::factorization<backend::cuda, complexd> f(b, av, opts);
    // one solve and its backward error
    device_vector<complexd> x0(n), x(n), res(n);
    for_each_index(b, n, index_t(1), random_fill_fn{x0.data(), n, 777ull});
    EMGPU_CUDA_CHECK(cudaMemcpy(x.data(), x0.data(), sizeof(complexd) * n, cudaMemcpyDeviceToDevice));
    f.solve(matrix_view<complexd>{x.data(), n, 1, n});
    {
      cublasHandle_t h = dn::detail::cublas_handle(b.device, 0);
      EMGPU_CUBLAS_CHECK(cublasSetStream(h, b.stream));
      EMGPU_CUDA_CHECK(cudaMemcpy(res.data(), x0.data(), sizeof(complexd) * n, cudaMemcpyDeviceToDevice));
      const cuDoubleComplex one = make_cuDoubleComplex(1, 0), mone = make_cuDoubleComplex(-1, 0);
      EMGPU_CUBLAS_CHECK(cublasZgemv(h, CUBLAS_OP_N, int(n), int(n), &one,
                                     reinterpret_cast<const cuDoubleComplex*>(a0.data()), int(n),
                                     reinterpret_cast<const cuDoubleComplex*>(x.data()), 1, &mone,
                                     reinterpret_cast<cuDoubleComplex*>(res.data()), 1));
    }
    const double berr = norm2(b, res.data(), n) /
                        (norm2(b, a0.data(), n * n) * norm2(b, x.data(), n) * 1.1102230246251565e-16);
    r.add({.name = "emgpu::crout_lu", .backend = "cuda",
           .params = {{"n", double(n)}, {"nb", double(dn::detail::cuda_block_size(n, opts.block_size))},
                      {"lookahead", opts.lookahead ? 1.0 : 0.0}}, .t = t,
           .metrics = {{"TFLOP/s", lu_flops(double(n)) / t.median_s / 1e12},
                       {"backward_error_over_eps", berr}}});
    double ts_ours[2] = {0, 0};
    {
      int q = 0;
      for (index_t nrhs : {index_t(1), index_t(360)}) {
        device_vector<complexd> b0(n * nrhs), bx(n * nrhs);
        for_each_index(b, n, nrhs, random_fill_fn{b0.data(), n, 99ull});
        auto tsol = emgpu_bench::time_cuda(b.stream, [&] { f.solve(matrix_view<complexd>{bx.data(), n, nrhs, n}); }, 1, reps + 2,
            [&] { EMGPU_CUDA_CHECK(cudaMemcpyAsync(bx.data(), b0.data(), sizeof(complexd) * n * nrhs, cudaMemcpyDeviceToDevice, b.stream)); });
        ts_ours[q++] = tsol.median_s;
        r.add({.name = "emgpu::crout_lu.solve", .backend = "cuda",
               .params = {{"n", double(n)}, {"nrhs", double(nrhs)}}, .t = tsol,
               .metrics = {{"TFLOP/s", solve_flops(double(n), double(nrhs)) / tsol.median_s / 1e12}}});
      }
    }

    // cuSOLVER zgetrf with its workspace, on the same matrix.
    int lwork = 0;
    check_cusolver(cusolverDnZgetrf_bufferSize(sh, int(n), int(n), reinterpret_cast<cuDoubleComplex*>(a.data()), int(n), &lwork), "zgetrf_bufferSize");
    device_vector<complexd> work(lwork > 0 ? lwork : 1);
    device_vector<int> ipiv(n), info(1);
    auto tc = emgpu_bench::time_cuda(b.stream, [&] {
      check_cusolver(cusolverDnZgetrf(sh, int(n), int(n), reinterpret_cast<cuDoubleComplex*>(a.data()), int(n),
                                      reinterpret_cast<cuDoubleComplex*>(work.data()), ipiv.data(), info.data()),
                     "zgetrf");
    }, warm, reps,
            reset);
    r.add({.name = "cusolver::zgetrf", .backend = "vendor", .params = {{"n", double(n)}}, .t = tc,
           .metrics = {{"TFLOP/s", lu_flops(double(n)) / tc.median_s / 1e12},
                       {"emgpu_speedup", tc.median_s / t.median_s}}});
    {
      int q = 0;
      for (index_t nrhs : {index_t(1), index_t(360)}) {
        device_vector<complexd> b0(n * nrhs), bx(n * nrhs);
        for_each_index(b, n, nrhs, random_fill_fn{b0.data(), n, 99ull});
        auto tsol = emgpu_bench::time_cuda(b.stream, [&] {
              check_cusolver(cusolverDnZgetrs(sh, CUBLAS_OP_N, int(n), int(nrhs), reinterpret_cast<const cuDoubleComplex*>(a.data()), int(n),
                                              ipiv.data(), reinterpret_cast<cuDoubleComplex*>(bx.data()), int(n), info.data()),
                             "zgetrs");
            }, 1, reps + 2,
            [&] { EMGPU_CUDA_CHECK(cudaMemcpyAsync(bx.data(), b0.data(), sizeof(complexd) * n * nrhs, cudaMemcpyDeviceToDevice, b.stream)); });
        r.add({.name = "cusolver::zgetrs", .backend = "vendor",
               .params = {{"n", double(n)}, {"nrhs", double(nrhs)}}, .t = tsol,
               .metrics = {{"TFLOP/s", solve_flops(double(n), double(nrhs)) / tsol.median_s / 1e12},
                           {"emgpu_speedup", tsol.median_s / ts_ours[q++]}}});
      }
    }
    {
      // Mixed precision: complex<float> factorisation of a copy, refinement in double.
      reset();
      const dn::mixed_lu mopts{opts.block_size, opts.lookahead, 30};
      auto tm = emgpu_bench::time_cuda(b.stream, [&] {
        dn::mixed_lu::factorization<backend::cuda, complexd> m(b, av, mopts);
      }, warm, reps);
      r.add({.name = "emgpu::mixed_lu", .backend = "cuda", .params = {{"n", double(n)}}, .t = tm,
             .metrics = {{"TFLOP/s_equiv", lu_flops(double(n)) / tm.median_s / 1e12},
                         {"speedup_vs_crout_lu", t.median_s / tm.median_s},
                         {"speedup_vs_zgetrf", tc.median_s / tm.median_s}}});
      const dn::mixed_lu::factorization<backend::cuda, complexd> m(b, av, mopts);
      for (index_t nrhs : {index_t(1), index_t(360)}) {
        device_vector<complexd> b0(n * nrhs), bx(n * nrhs);
        for_each_index(b, n, nrhs, random_fill_fn{b0.data(), n, 99ull});
        auto tsol = emgpu_bench::time_cuda(b.stream, [&] { m.solve(matrix_view<complexd>{bx.data(), n, nrhs, n}); }, 1, reps,
            [&] { EMGPU_CUDA_CHECK(cudaMemcpyAsync(bx.data(), b0.data(), sizeof(complexd) * n * nrhs, cudaMemcpyDeviceToDevice, b.stream)); });
        r.add({.name = "emgpu::mixed_lu.solve", .backend = "cuda",
               .params = {{"n", double(n)}, {"nrhs", double(nrhs)}}, .t = tsol,
               .metrics = {{"refinement_steps", double(m.last_iterations())},
                           {"full_precision_fallback", m.uses_full_precision() ? 1.0 : 0.0}}});
      }
    }
  }
  cusolverDnDestroy(sh);
#endif
  r.write();
  return 0;
}
