// Batched LU / QR / SVD throughput for complex<double>; one run gives every
// figure of the batched-solver issue as JSON rows with their ratios.
//
// GPU build (bench_batched_cuda), per n in --sizes (default 8,16,32,64,128),
// 100 000 matrices for n <= 32, 20 000 for n = 64, 5 000 for n = 128
// (--quick: a tenth, 3 repetitions instead of 5):
//   - a device copy of the batch (one read + one write of it: the floor of an
//     in-place factorisation);
//   - emgpu lu_factor vs cuBLAS zgetrfBatched (speedup_vs_cublas, target 1x
//     for n <= 16, 3x above; both factors' backward error on 16 matrices);
//   - emgpu qr_factor vs cuBLAS zgeqrfBatched (target 5x);
//   - emgpu svd with U, V vs cuSOLVER zgesvdjBatched for n <= 32 (its limit;
//     target 20x), emgpu alone for n = 64, 128; singular values only too;
//     emgpu's workspace kept between calls (svd_options::work) as cuSOLVER's
//     is, and a row with the default (allocated and freed in every call);
//   - for n <= 32, GB/s and frac_copy_bw = t(copy of the batch) / t(kernel).
// Every timed call starts from a fresh copy of the input (an untimed reset).
// Progress goes to stderr, so a fault names the call that caused it.
// CPU build (bench_batched): serial vs OpenMP (speedup_vs_serial, target 1.8x
// on 2 cores) and Eigen's PartialPivLU / HouseholderQR / JacobiSVD per matrix.
//
//   bench_batched[_cuda] [--quick] [--out FILE.json] [--sizes 8,16,32,64,128]
//                        [--count N]   (GPU: N matrices for every size)
//                        [--only lu,qr,svd,host]   (GPU: which parts; host: below)
//                        [--host-ops lu,qr,svd]    (which factorisations --only host runs)
// --only host: batches in host memory through batched::multi_gpu (run_host):
// GPU 0 alone and every visible GPU, pinned and pageable memory, against the
// PCIe copy rates measured in the same run (frac_link) and the same call on
// device memory (time_vs_device_memory); results compared bit for bit
// (bitwise_equal_device_memory).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdio>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
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

using metrics_t = std::vector<std::pair<std::string, double>>;

/// emgpu_bench::time_cuda with a progress line on stderr and the name of the
/// call in any device error (faults are asynchronous: time_cuda synchronises
/// the warm-up on its own, so a fault is attributed to `what`).
template <class F, class Reset>
emgpu_bench::stats timed(const char* what, index_t n, index_t count, cudaStream_t s, F&& f,
                         int reps, Reset&& reset) {
  std::fprintf(stderr, "[bench_batched] n = %lld, count = %lld: %s\n", static_cast<long long>(n),
               static_cast<long long>(count), what);
  try {
    return emgpu_bench::time_cuda(s, f, 1, reps, reset);
  } catch (const device_error& e) {
    throw device_error(std::string("bench_batched: ") + what + " (n = " + std::to_string(n) +
                           ") failed: " + e.what(),
                       e.code());
  }
}

/// Throws unless every info entry is zero (the batch is random: full rank).
void require_info_zero(const backend::cuda& b, const device_vector<int>& info, const char* what) {
  const std::vector<int> h = to_host(b, info);
  index_t bad = 0;
  for (int x : h) bad += x != 0;
  if (bad != 0)
    throw std::runtime_error(std::string("bench_batched: ") + what + ": " + std::to_string(bad) +
                             " matrices with info != 0");
}

/// Largest ||P A - L U||_F / (||A||_F n eps) over the first few matrices of
/// a factored batch (emgpu's 0-based pivots when `piv64`, cuBLAS's 1-based
/// int pivots otherwise): the benchmark times correct work only.
double lu_check(const std::vector<T>& a0, const std::vector<T>& lu, const int* piv32,
                const index_t* piv64, index_t n, index_t nmat) {
  using M = Eigen::Matrix<std::complex<double>, Eigen::Dynamic, Eigen::Dynamic>;
  double worst = 0;
  for (index_t k = 0; k < nmat; ++k) {
    const Eigen::Map<const M> A(as_std(a0.data() + k * n * n), n, n), F(as_std(lu.data() + k * n * n), n, n);
    M L = M::Identity(n, n), U = M::Zero(n, n), PA = A;
    for (index_t j = 0; j < n; ++j)
      for (index_t i = 0; i < n; ++i) (i > j ? L(i, j) : U(i, j)) = F(i, j);
    for (index_t j = 0; j < n; ++j) {
      const index_t p = piv64 ? piv64[k * n + j] : index_t(piv32[k * n + j] - 1);
      PA.row(j).swap(PA.row(p));
    }
    worst = std::max(worst, (PA - L * U).norm() / (A.norm() * double(n) * 2.220446e-16));
  }
  return worst;
}

/// SVD accuracy over the first few matrices of a batch, as the tests bound
/// it (each <= 10 passes): max |sigma_j - sigma_ref_j| / (n eps sigma_ref_0)
/// against Eigen's JacobiSVD, ||A - U S V^H||_F / (||A||_F n eps), and
/// ||U^H U - I||_F, ||V^H V - I||_F over n eps.
metrics_t svd_check(const backend::cuda& b, const std::vector<T>& a0, const device_vector<double>& d_s,
                    const device_vector<T>& d_u, const device_vector<T>& d_v, index_t n, index_t nmat) {
  using M = Eigen::Matrix<std::complex<double>, Eigen::Dynamic, Eigen::Dynamic>;
  const std::vector<double> s = to_host(b, d_s);
  const std::vector<T> u = to_host(b, d_u), v = to_host(b, d_v);
  const double ne = double(n) * 2.220446e-16;
  double e_sig = 0, e_rec = 0, e_u = 0, e_v = 0;
  for (index_t k = 0; k < nmat; ++k) {
    const Eigen::Map<const M> A(as_std(a0.data() + k * n * n), n, n), U(as_std(u.data() + k * n * n), n, n),
        V(as_std(v.data() + k * n * n), n, n);
    const Eigen::Map<const Eigen::VectorXd> S(s.data() + k * n, n);
    const Eigen::VectorXd ref = Eigen::JacobiSVD<M>(A).singularValues();
    e_sig = std::max(e_sig, (S - ref).cwiseAbs().maxCoeff() / (ne * ref(0)));
    e_rec = std::max(e_rec, (A - U * S.asDiagonal() * V.adjoint()).norm() / (A.norm() * ne));
    e_u = std::max(e_u, (U.adjoint() * U - M::Identity(n, n)).norm() / ne);
    e_v = std::max(e_v, (V.adjoint() * V - M::Identity(n, n)).norm() / ne);
  }
  return {{"sigma_err_over_n_eps", e_sig}, {"residual_over_n_eps", e_rec}, {"orth_u_over_n_eps", e_u},
          {"orth_v_over_n_eps", e_v}};
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
  std::printf("device-to-device copy bandwidth (1 GiB): %.1f GB/s\n", copy_bw / 1e9);
  const int reps = r.quick() ? 3 : 5;
  // --count N: the same N matrices for every size (compute-sanitizer runs).
  const auto count_override = index_t(r.option("--count", 0.0));
  const std::string only = r.option("--only", std::string("lu,qr,svd"));
  const auto want = [&](const char* what) { return only.find(what) != std::string::npos; };

  for (index_t n : sizes) {
    index_t count = n <= 32 ? 100000 : n <= 64 ? 20000 : 5000;
    if (r.quick()) count /= 10;
    if (count_override > 0) count = count_override;
    const index_t len = n * n * count;  // elements of the whole batch
    const std::vector<T> h = random_batch(n, count);
    const auto d_in = to_backend(b, std::span<const T>(h));
    auto d_a = make_vector<T>(b, len);
    const auto reset = [&] { copy_within(b, d_in.data(), len, d_a.data()); };
    const emgpu_bench::no_reset none{};
    const strided_batch_view<T> av{d_a.data(), n, n, n, n * n, count};
    const std::vector<std::pair<std::string, double>> params = {{"n", double(n)}, {"count", double(count)}};

    // The floor for an in-place factorisation: one read and one write of the
    // batch, i.e. a device copy of the batch (timed here at this very size).
    const double bytes = 2.0 * double(len) * sizeof(T);
    const auto t_copy = timed("device copy of the batch", n, count, b.stream, reset, reps, none);
    const double batch_bw = bytes / t_copy.median_s;
    r.add({.name = "copy(batch D2D)", .backend = "cuda", .params = params, .t = t_copy,
           .metrics = {{"GB/s", batch_bw / 1e9}, {"frac_copy_bw_1GiB", batch_bw / copy_bw}}});
    const auto bw_metrics = [&](const emgpu_bench::stats& t) {
      metrics_t m;
      if (n <= 32) {
        m.push_back({"GB/s", bytes / t.median_s / 1e9});
        m.push_back({"frac_copy_bw", t_copy.median_s / t.median_s});
      }
      return m;
    };
    const auto add_target = [](metrics_t& m, const char* key, double ratio, double target) {
      m.push_back({key, ratio});
      m.push_back({"target", target});
      m.push_back({"meets_target", ratio >= target ? 1.0 : 0.0});
    };

    // cuBLAS batched calls take DEVICE arrays of device pointers.
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
    auto* const* a_arr = reinterpret_cast<cuDoubleComplex* const*>(d_ptrs.data());
    auto* const* t_arr = reinterpret_cast<cuDoubleComplex* const*>(d_tptrs.data());
    const index_t ncheck = std::min<index_t>(count, 16);
    const auto first = [&](const auto* d, index_t len_) {  // leading entries of a device array
      std::vector<std::remove_cv_t<std::remove_pointer_t<decltype(d)>>> v(static_cast<std::size_t>(len_));
      copy_to_host(b, d, len_, v.data());
      return v;
    };

    // ---- LU
    if (want("lu")) {
      const auto t_lu = timed("emgpu lu_factor", n, count, b.stream,
                              [&] { batched::lu_factor(b, av, d_piv.data(), d_info.data()); }, reps, reset);
      require_info_zero(b, d_info, "emgpu lu_factor");
      const double lu_err = lu_check(h, first(d_a.data(), n * n * ncheck), nullptr,
                                     first(d_piv.data(), n * ncheck).data(), n, ncheck);
      const auto t_vlu = timed("cublasZgetrfBatched", n, count, b.stream, [&] {
        BENCH_CUBLAS(cublasZgetrfBatched(cb, int(n), a_arr, int(n), d_ipiv32.data(), d_info.data(), int(count)));
      }, reps, reset);
      require_info_zero(b, d_info, "cublasZgetrfBatched");
      const double vlu_err = lu_check(h, first(d_a.data(), n * n * ncheck),
                                      first(d_ipiv32.data(), n * ncheck).data(), nullptr, n, ncheck);
      auto m = bw_metrics(t_lu);
      m.push_back({"GFLOP/s", lu_flops(double(n)) * double(count) / t_lu.median_s / 1e9});
      m.push_back({"backward_error_over_n_eps", lu_err});
      add_target(m, "speedup_vs_cublas", t_vlu.median_s / t_lu.median_s, n <= 16 ? 1.0 : 3.0);
      r.add({.name = "lu_factor", .backend = "cuda", .params = params, .t = t_lu, .metrics = m});
      m = bw_metrics(t_vlu);
      m.push_back({"GFLOP/s", lu_flops(double(n)) * double(count) / t_vlu.median_s / 1e9});
      m.push_back({"backward_error_over_n_eps", vlu_err});
      r.add({.name = "cublasZgetrfBatched", .backend = "vendor", .params = params, .t = t_vlu, .metrics = m});
    }

    // ---- QR
    if (want("qr")) {
      const auto t_qr = timed("emgpu qr_factor", n, count, b.stream, [&] { batched::qr_factor(b, av); }, reps, reset);
      const auto t_vqr = timed("cublasZgeqrfBatched", n, count, b.stream, [&] {
        int hinfo = 0;  // host pointer: argument errors only
        BENCH_CUBLAS(cublasZgeqrfBatched(cb, int(n), int(n), a_arr, int(n), t_arr, &hinfo, int(count)));
        if (hinfo != 0) throw std::runtime_error("cublasZgeqrfBatched: info " + std::to_string(hinfo));
      }, reps, reset);
      auto m = bw_metrics(t_qr);
      add_target(m, "speedup_vs_cublas", t_vqr.median_s / t_qr.median_s, 5.0);
      r.add({.name = "qr_factor", .backend = "cuda", .params = params, .t = t_qr, .metrics = m});
      r.add({.name = "cublasZgeqrfBatched", .backend = "vendor", .params = params, .t = t_vqr,
             .metrics = bw_metrics(t_vqr)});
    }

    // ---- SVD (U, S, V), and singular values only
    if (!want("svd")) continue;
    auto d_s = make_vector<double>(b, n * count);
    auto d_u = make_vector<T>(b, len);
    auto d_v = make_vector<T>(b, len);
    const strided_batch_view<T> uv{d_u.data(), n, n, n, n * n, count}, vv{d_v.data(), n, n, n, n * n, count};
    const int sreps = n >= 64 ? 2 : reps;
    // The workspace is kept between calls (svd_options::work), as cuSOLVER's
    // is allocated before its timed calls; "per call" below is the default,
    // which allocates and frees it inside every call.
    batched::workspace work;
    batched::svd_options keep;
    keep.work = &work;
    const auto t_svd = timed("emgpu svd(U,S,V)", n, count, b.stream, [&] {
      batched::svd(b, av, d_s.data(), uv, vv, d_info.data(), keep);
    }, sreps, reset);
    const std::vector<int> inf = to_host(b, d_info);
    index_t bad = 0;
    for (int x : inf) bad += x != 0;
    const auto t_sv = timed("emgpu svd(S)", n, count, b.stream, [&] {
      batched::svd(b, av, d_s.data(), strided_batch_view<T>{}, strided_batch_view<T>{}, d_info.data(), keep);
    }, sreps, reset);
    const auto t_pc = timed("emgpu svd(U,S,V), workspace per call", n, count, b.stream, [&] {
      batched::svd(b, av, d_s.data(), uv, vv, d_info.data());
    }, sreps, reset);
    // The pointer-array form: the strided kernels on packed copies that it
    // gathers in and scatters out, kept between calls as the workspace is.
    const std::vector<T> u_strided = to_host(b, d_u);
    std::vector<T*> pa, pu, pv;
    for (index_t k = 0; k < count; ++k) {
      pa.push_back(d_a.data() + k * n * n);
      pu.push_back(d_u.data() + k * n * n);
      pv.push_back(d_v.data() + k * n * n);
    }
    auto d_pa = to_backend(b, std::span<T* const>(pa)), d_pu = to_backend(b, std::span<T* const>(pu)),
         d_pv = to_backend(b, std::span<T* const>(pv));
    batched::workspace copies;
    batched::svd_options keep2 = keep;
    keep2.copies = &copies;
    const auto t_ptr = timed("emgpu svd(U,S,V), pointer arrays", n, count, b.stream, [&] {
      batched::svd(b, static_cast<T* const*>(d_pa.data()), n, n, n, count, d_s.data(),
                   static_cast<T* const*>(d_pu.data()), n, static_cast<T* const*>(d_pv.data()), n, d_info.data(), keep2);
    }, sreps, reset);
    copies.release();
    const bool ptr_same = to_host(b, d_u) == u_strided;
    const double work_mb = double(work.capacity()) / 1e6;
    work.release();
    auto m = bw_metrics(t_svd);
    m.push_back({"not_converged", double(bad)});
    for (const auto& x : svd_check(b, h, d_s, d_u, d_v, n, 16)) m.push_back(x);
    if (n <= 32) {  // cuSOLVER's batched Jacobi SVD stops at 32
      gesvdjInfo_t par;
      BENCH_CUSOLVER(cusolverDnCreateGesvdjInfo(&par));
      int lwork = 0;
      auto* A = reinterpret_cast<cuDoubleComplex*>(d_a.data());
      auto* U = reinterpret_cast<cuDoubleComplex*>(d_u.data());
      auto* V = reinterpret_cast<cuDoubleComplex*>(d_v.data());
      BENCH_CUSOLVER(cusolverDnZgesvdjBatched_bufferSize(cs, CUSOLVER_EIG_MODE_VECTOR, int(n), int(n), A, int(n),
                                                         d_s.data(), U, int(n), V, int(n), &lwork, par,
                                                         int(count)));
      auto d_work = make_vector<T>(b, lwork);
      auto* W = reinterpret_cast<cuDoubleComplex*>(d_work.data());
      const auto t_vsvd = timed("cusolverDnZgesvdjBatched", n, count, b.stream, [&] {
        BENCH_CUSOLVER(cusolverDnZgesvdjBatched(cs, CUSOLVER_EIG_MODE_VECTOR, int(n), int(n), A, int(n),
                                                d_s.data(), U, int(n), V, int(n), W, lwork, d_info.data(), par,
                                                int(count)));
      }, reps, reset);
      (void)cusolverDnDestroyGesvdjInfo(par);
      add_target(m, "speedup_vs_cusolver", t_vsvd.median_s / t_svd.median_s, 20.0);
      r.add({.name = "cusolverDnZgesvdjBatched(U,S,V)", .backend = "vendor", .params = params, .t = t_vsvd,
             .metrics = bw_metrics(t_vsvd)});
    }
    m.push_back({"workspace_MB", work_mb});
    r.add({.name = "svd(U,S,V)", .backend = "cuda", .params = params, .t = t_svd, .metrics = m,
           .note = "workspace kept between calls (svd_options::work)"});
    r.add({.name = "svd(S only)", .backend = "cuda", .params = params, .t = t_sv, .metrics = bw_metrics(t_sv),
           .note = "workspace kept between calls (svd_options::work)"});
    r.add({.name = "svd(U,S,V) workspace per call", .backend = "cuda", .params = params, .t = t_pc,
           .metrics = {{"time_vs_kept_workspace", t_pc.median_s / t_svd.median_s}}});
    r.add({.name = "svd(U,S,V) pointer arrays", .backend = "cuda", .params = params, .t = t_ptr,
           .metrics = {{"time_vs_strided", t_ptr.median_s / t_svd.median_s},
                       {"bitwise_equal_strided", ptr_same ? 1.0 : 0.0}},
           .note = "workspace and packed copies kept between calls (svd_options::work, copies)"});

    // Both methods by name (svd_method::automatic picks one of them).
    for (const auto meth : {batched::svd_method::qr, batched::svd_method::jacobi}) {
      batched::svd_options o;
      o.method = meth;
      const bool is_qr = meth == batched::svd_method::qr;
      const auto t_m = timed(is_qr ? "emgpu svd(U,S,V) method qr" : "emgpu svd(U,S,V) method jacobi", n, count,
                             b.stream, [&] { batched::svd(b, av, d_s.data(), uv, vv, d_info.data(), o); }, sreps,
                             reset);
      const std::vector<int> inf_m = to_host(b, d_info);
      index_t bad_m = 0;
      for (int x : inf_m) bad_m += x != 0;
      metrics_t mm = {{"time_vs_default", t_m.median_s / t_svd.median_s}, {"not_converged", double(bad_m)}};
      for (const auto& x : svd_check(b, h, d_s, d_u, d_v, n, 16)) mm.push_back(x);
      r.add({.name = is_qr ? "svd(U,S,V) method qr" : "svd(U,S,V) method jacobi", .backend = "cuda",
             .params = params, .t = t_m, .metrics = mm});
    }

    // QR preconditioning (svd_options::qr_precondition) of one-sided Jacobi:
    // on the random batch, and plain vs preconditioned on row-graded matrices D G (d_i =
    // 10^(-6 i/(n-1)), cond ~1e6), where cyclic Jacobi on A needs ~2.5x the
    // sweeps (numpy, n = 32: 23-24 against 9 on R^H).
    batched::svd_options jac, pre;
    jac.method = pre.method = batched::svd_method::jacobi;
    pre.qr_precondition = true;
    const auto t_pre = timed("emgpu svd(U,S,V) QR-preconditioned", n, count, b.stream, [&] {
      batched::svd(b, av, d_s.data(), uv, vv, d_info.data(), pre);
    }, sreps, reset);
    std::vector<double> d(static_cast<std::size_t>(n));
    for (index_t i = 0; i < n; ++i) d[std::size_t(i)] = std::pow(10.0, -6.0 * double(i) / double(n > 1 ? n - 1 : 1));
    std::vector<T> hg = h;
    for (std::size_t e = 0; e < hg.size(); ++e) hg[e] *= d[e % std::size_t(n)];
    const auto d_g = to_backend(b, std::span<const T>(hg));
    const auto reset_g = [&] { copy_within(b, d_g.data(), len, d_a.data()); };
    const auto t_gp = timed("emgpu svd(U,S,V) row-graded", n, count, b.stream, [&] {
      batched::svd(b, av, d_s.data(), uv, vv, d_info.data(), jac);
    }, sreps, reset_g);
    const std::vector<int> inf_gp = to_host(b, d_info);
    const auto t_gq = timed("emgpu svd(U,S,V) row-graded, QR-preconditioned", n, count, b.stream, [&] {
      batched::svd(b, av, d_s.data(), uv, vv, d_info.data(), pre);
    }, sreps, reset_g);
    const std::vector<int> inf_gq = to_host(b, d_info);
    index_t bad_gp = 0, bad_gq = 0;
    for (index_t k = 0; k < count; ++k) {
      bad_gp += inf_gp[std::size_t(k)] != 0;
      bad_gq += inf_gq[std::size_t(k)] != 0;
    }
    r.add({.name = "svd(U,S,V) jacobi, QR-preconditioned", .backend = "cuda", .params = params, .t = t_pre,
           .metrics = {}});
    r.add({.name = "svd(U,S,V) jacobi, row-graded", .backend = "cuda", .params = params, .t = t_gp,
           .metrics = {{"not_converged", double(bad_gp)}}});
    r.add({.name = "svd(U,S,V) jacobi, row-graded, QR-preconditioned", .backend = "cuda", .params = params, .t = t_gq,
           .metrics = {{"speedup_vs_plain", t_gp.median_s / t_gq.median_s}, {"not_converged", double(bad_gq)}}});
  }
  (void)cusolverDnDestroy(cs);
  (void)cublasDestroy(cb);
}

/// Host memory from cudaMallocHost (pinned), freed on scope exit.
struct pinned_buffer {
  T* p = nullptr;
  std::size_t n = 0;
  explicit pinned_buffer(std::size_t elems) : n(elems) {
    EMGPU_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p), n * sizeof(T)));
  }
  ~pinned_buffer() { (void)cudaFreeHost(p); }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;
};

/// Batches in host memory through batched::multi_gpu (--only host): LU and
/// QR (the batch in and out) and the SVD with U, V (the batch in; sigma, U,
/// V out), on GPU 0 alone and on every visible GPU, from pinned and from
/// pageable memory. The floor is the PCIe links: each GPU's host-to-device
/// and device-to-host rates for the whole batch from pinned memory are
/// measured first (CUDA events), then, per routine, the time to move its
/// traffic (each GPU's share in and out at once, all GPUs together), and
/// frac_link = that time / t (the kernels fully hidden). The same
/// batch factored in device memory on GPU 0 is the kernel-only reference;
/// every multi-GPU result is compared with it bit for bit (a metric, and a
/// warning on stderr when they differ).
void run_host(emgpu_bench::report& r, const std::vector<index_t>& sizes) {
  const int ngpu = backend::cuda_device_count();
  const int reps = r.quick() ? 3 : 5;
  const auto count_override = index_t(r.option("--count", 0.0));
  std::vector<int> all;
  for (int d = 0; d < ngpu; ++d) all.push_back(d);
  for (index_t n : sizes) {
    index_t count = n <= 32 ? 100000 : n <= 64 ? 20000 : 5000;
    if (r.quick()) count /= 10;
    if (count_override > 0) count = count_override;
    const std::size_t len = std::size_t(n * n * count);
    const double batch_bytes = double(len) * sizeof(T);
    const std::vector<T> h = random_batch(n, count);
    const std::vector<std::pair<std::string, double>> params = {{"n", double(n)}, {"count", double(count)},
                                                                {"gpus", double(ngpu)}};
    pinned_buffer pa(len), pu(len), pv(len);
    std::vector<T> ga(len), gu(len), gv(len);
    std::vector<index_t> piv(std::size_t(n * count));
    std::vector<int> info(static_cast<std::size_t>(count));
    std::vector<double> sig(std::size_t(n * count));

    // The link, per GPU: the whole batch in, then out, from pinned memory.
    for (int d = 0; d < ngpu; ++d) {
      emgpu::detail::device_guard g(d);
      backend::cuda bd{nullptr, d};
      auto dev = make_vector<T>(bd, index_t(len));
      std::fprintf(stderr, "[bench_batched] n = %lld: PCIe copies, GPU %d\n", static_cast<long long>(n), d);
      const auto ti = emgpu_bench::time_cuda(nullptr, [&] {
        EMGPU_CUDA_CHECK(cudaMemcpyAsync(dev.data(), pa.p, len * sizeof(T), cudaMemcpyHostToDevice, nullptr));
      }, 1, reps);
      const auto to = emgpu_bench::time_cuda(nullptr, [&] {
        EMGPU_CUDA_CHECK(cudaMemcpyAsync(pa.p, dev.data(), len * sizeof(T), cudaMemcpyDeviceToHost, nullptr));
      }, 1, reps);
      r.add({.name = "copy(batch H2D, pinned)", .backend = "cuda", .params = {{"n", double(n)}, {"count", double(count)}, {"gpu", double(d)}},
             .t = ti, .metrics = {{"GB/s", batch_bytes / ti.median_s / 1e9}}});
      r.add({.name = "copy(batch D2H, pinned)", .backend = "cuda", .params = {{"n", double(n)}, {"count", double(count)}, {"gpu", double(d)}},
             .t = to, .metrics = {{"GB/s", batch_bytes / to.median_s / 1e9}}});
    }

    // Kernel-only references on GPU 0 (device memory), kept for the bitwise checks.
    const backend::cuda b0{};
    auto d_in = to_backend(b0, std::span<const T>(h));
    auto d_a = make_vector<T>(b0, index_t(len));
    auto d_piv = make_vector<index_t>(b0, n * count);
    auto d_info = make_vector<int>(b0, count);
    auto d_s = make_vector<double>(b0, n * count);
    auto d_u = make_vector<T>(b0, index_t(len));
    auto d_v = make_vector<T>(b0, index_t(len));
    const strided_batch_view<T> dv{d_a.data(), n, n, n, n * n, count};
    const auto reset_dev = [&] { copy_within(b0, d_in.data(), index_t(len), d_a.data()); };
    batched::workspace work;
    batched::svd_options so;
    so.work = &work;
    const char* ops[3] = {"lu_factor", "qr_factor", "svd(U,S,V)"};
    for (int op = 0; op < 3; ++op) {
      const std::string only = r.option("--host-ops", std::string("lu,qr,svd"));
      if (only.find(op == 0 ? "lu" : op == 1 ? "qr" : "svd") == std::string::npos) continue;
      const auto run_dev = [&] {
        if (op == 0) batched::lu_factor(b0, dv, d_piv.data(), d_info.data());
        else if (op == 1) batched::qr_factor(b0, dv);
        else
          batched::svd(b0, dv, d_s.data(), strided_batch_view<T>{d_u.data(), n, n, n, n * n, count},
                       strided_batch_view<T>{d_v.data(), n, n, n, n * n, count}, d_info.data(), so);
      };
      const auto t_dev = timed(ops[op], n, count, b0.stream, run_dev, reps, reset_dev);
      r.add({.name = std::string(ops[op]) + " (device memory)", .backend = "cuda", .params = params, .t = t_dev,
             .metrics = {}});
      const std::vector<T> ref_a = to_host(b0, d_a);
      const std::vector<T> ref_u = op == 2 ? to_host(b0, d_u) : std::vector<T>{};
      // Bytes over the link per call: LU / QR the batch in and out (plus
      // pivots and info), the SVD the batch in and U, V out.
      const double moved = op == 2 ? 3.0 * batch_bytes : 2.0 * batch_bytes;
      // The floor on P GPUs: each one's share copied in and out at once
      // (both directions, all links busy together), timed on the host.
      const auto link_floor = [&](int p) {
        struct lane {
          emgpu::device_vector<T> in, out;
          cudaStream_t si = nullptr, so = nullptr;
        };
        std::vector<lane> ls(static_cast<std::size_t>(p));
        const std::size_t share = (len + std::size_t(p) - 1) / std::size_t(p);
        for (int d = 0; d < p; ++d) {
          emgpu::detail::device_guard g(d);
          ls[std::size_t(d)].in = emgpu::device_vector<T>(index_t(share), d);
          ls[std::size_t(d)].out = emgpu::device_vector<T>(index_t(share), d);
          EMGPU_CUDA_CHECK(cudaStreamCreateWithFlags(&ls[std::size_t(d)].si, cudaStreamNonBlocking));
          EMGPU_CUDA_CHECK(cudaStreamCreateWithFlags(&ls[std::size_t(d)].so, cudaStreamNonBlocking));
        }
        const auto t = emgpu_bench::time_host([&] {
          for (int d = 0; d < p; ++d) {
            lane& l = ls[std::size_t(d)];
            const std::size_t k0 = share * std::size_t(d), nk = std::min(share, len - std::min(len, k0));
            EMGPU_CUDA_CHECK(cudaMemcpyAsync(l.in.data(), pa.p + k0, nk * sizeof(T), cudaMemcpyHostToDevice, l.si));
            EMGPU_CUDA_CHECK(cudaMemcpyAsync(pu.p + k0, l.out.data(), nk * sizeof(T), cudaMemcpyDeviceToHost, l.so));
            if (op == 2)
              EMGPU_CUDA_CHECK(cudaMemcpyAsync(pv.p + k0, l.out.data(), nk * sizeof(T), cudaMemcpyDeviceToHost, l.so));
          }
          for (auto& l : ls) {
            EMGPU_CUDA_CHECK(cudaStreamSynchronize(l.si));
            EMGPU_CUDA_CHECK(cudaStreamSynchronize(l.so));
          }
        }, 1, reps);
        for (int d = 0; d < p; ++d) {
          emgpu::detail::device_guard g(d);
          (void)cudaStreamDestroy(ls[std::size_t(d)].si);
          (void)cudaStreamDestroy(ls[std::size_t(d)].so);
        }
        r.add({.name = std::string("copy(") + ops[op] + " traffic, in and out at once, pinned, " +
                       std::to_string(p) + " GPU)",
               .backend = "cuda", .params = params, .t = t, .metrics = {{"GB/s", moved / t.median_s / 1e9}}});
        return t.median_s;
      };
      const double floor_1 = link_floor(1), floor_all = ngpu > 1 ? link_floor(ngpu) : floor_1;
      double t_one = 0;
      for (int cfg = 0; cfg < 4; ++cfg) {
        const bool multi = cfg >= 2, pin = cfg % 2 == 0;
        if (multi && ngpu < 2) continue;
        batched::multi_gpu g({.devices = multi ? all : std::vector<int>{0}});
        T* a = pin ? pa.p : ga.data();
        T* u = pin ? pu.p : gu.data();
        T* v = pin ? pv.p : gv.data();
        const strided_batch_view<T> av{a, n, n, n, n * n, count};
        const std::string what = std::string(ops[op]) + " (host memory, " + (pin ? "pinned" : "pageable") +
                                 ", " + std::to_string(multi ? ngpu : 1) + " GPU)";
        std::fprintf(stderr, "[bench_batched] n = %lld: %s\n", static_cast<long long>(n), what.c_str());
        const auto t = emgpu_bench::time_host([&] {
          if (op == 0) batched::lu_factor(g, av, piv.data(), info.data());
          else if (op == 1) batched::qr_factor(g, av);
          else
            batched::svd(g, av, sig.data(), strided_batch_view<T>{u, n, n, n, n * n, count},
                         strided_batch_view<T>{v, n, n, n, n * n, count}, info.data());
        }, 1, reps, [&] { std::copy(h.begin(), h.end(), a); });
        // The last call's results, bit for bit those of the device-memory call.
        const bool same = op == 2 ? std::equal(ref_u.begin(), ref_u.end(), u)
                                  : std::equal(ref_a.begin(), ref_a.end(), a);
        if (!same) std::fprintf(stderr, "[bench_batched] WARNING: %s differs from the device-memory call\n", what.c_str());
        if (!multi && pin) t_one = t.median_s;
        metrics_t m = {{"GB/s", moved / t.median_s / 1e9},
                       {"frac_link", (multi ? floor_all : floor_1) / t.median_s},
                       {"time_vs_device_memory", t.median_s / t_dev.median_s},
                       {"chunk", double(g.last_chunk())},
                       {"bitwise_equal_device_memory", same ? 1.0 : 0.0}};
        if (multi && pin && t_one > 0) m.push_back({"speedup_vs_1gpu", t_one / t.median_s});
        r.add({.name = what, .backend = "cuda", .params = params, .t = t, .metrics = m});
      }
      // The pageable buffer pinned in place (batched::host_pin), every GPU:
      // what registering costs, and the call on the registered buffer.
      if (op == 0) {
        std::vector<T> reg(h);
        const auto a0 = std::chrono::steady_clock::now();
        batched::host_pin pin_reg{std::span<T>(reg)};
        const double t_reg = std::chrono::duration<double>(std::chrono::steady_clock::now() - a0).count();
        batched::multi_gpu g({.devices = all});
        const strided_batch_view<T> av{reg.data(), n, n, n, n * n, count};
        const auto t = emgpu_bench::time_host([&] { batched::lu_factor(g, av, piv.data(), info.data()); }, 1, reps,
                                              [&] { std::copy(h.begin(), h.end(), reg.begin()); });
        const bool same = std::equal(ref_a.begin(), ref_a.end(), reg.begin());
        r.add({.name = std::string(ops[op]) + " (host memory, pageable pinned by host_pin, " +
                       std::to_string(ngpu) + " GPU)",
               .backend = "cuda", .params = params, .t = t,
               .metrics = {{"GB/s", moved / t.median_s / 1e9}, {"frac_link", floor_all / t.median_s},
                           {"host_pin_s", t_reg}, {"bitwise_equal_device_memory", same ? 1.0 : 0.0}}});
        // The same pageable batch as a pointer array (one pointer per
        // matrix), every GPU: the gather into the staging buffers and the
        // check of every pointer, against the strided pageable call above.
        std::vector<T*> ptrs(static_cast<std::size_t>(count));
        for (index_t k = 0; k < count; ++k) ptrs[std::size_t(k)] = ga.data() + std::size_t(k * n * n);
        const std::string pw = std::string(ops[op]) + " (host memory, pageable pointer array, " + std::to_string(ngpu) + " GPU)";
        std::fprintf(stderr, "[bench_batched] n = %lld: %s\n", static_cast<long long>(n), pw.c_str());
        const auto tp = emgpu_bench::time_host([&] { batched::lu_factor(g, ptrs.data(), n, n, count, piv.data(), info.data()); },
                                               1, reps, [&] { std::copy(h.begin(), h.end(), ga.begin()); });
        const bool same_p = std::equal(ref_a.begin(), ref_a.end(), ga.begin());
        if (!same_p) std::fprintf(stderr, "[bench_batched] WARNING: %s differs from the device-memory call\n", pw.c_str());
        r.add({.name = pw, .backend = "cuda", .params = params, .t = tp,
               .metrics = {{"GB/s", moved / tp.median_s / 1e9}, {"frac_link", floor_all / tp.median_s},
                           {"chunk", double(g.last_chunk())}, {"bitwise_equal_device_memory", same_p ? 1.0 : 0.0}}});
      }
    }
  }
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
  batched::svd_options o;  // op 2: the default (automatic), op 3: one-sided Jacobi
  if (op == 3) o.method = batched::svd_method::jacobi;
  return emgpu_bench::time_host([&] {
    if (op == 0) batched::lu_factor(b, av, piv.data(), info.data());
    else if (op == 1) batched::qr_factor(b, av);
    else
      batched::svd(b, av, s.data(), strided_batch_view<T>{u.data(), n, n, n, n * n, count},
                   strided_batch_view<T>{v.data(), n, n, n, n * n, count}, info.data(), o);
  }, 1, reps, [&] { std::copy(h.begin(), h.end(), a.begin()); });
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
      // Batches sized to about the same time per call for the three (the SVD,
      // QR method with U and V, took 7-14x an LU of the same size at
      // n = 8..64 in serial emgpu on the development machine, 2026-11-25);
      // smaller with --quick.
      const double work = (op == 2 ? 10.0 : 1.0) * 8.0 * double(n) * n * n;
      index_t count = index_t(std::max(16.0, (r.quick() ? 2e7 : 2e8) / work));
      const std::vector<T> h = random_batch(n, count);
      const std::vector<std::pair<std::string, double>> params = {{"n", double(n)}, {"count", double(count)},
                                                                  {"threads", double(o.threads())}};
      // Serial and OpenMP alternate, one call each per round, so that load
      // from elsewhere on a shared machine drifts into both alike (timed in
      // two blocks of 3, the ratio moved by up to 2x between runs on the
      // 2-core development machine).
      const int rounds = r.quick() ? 3 : 7;
      std::vector<double> tsv, tov;
      for (int k = 0; k < rounds; ++k) {
        tsv.push_back(time_cpu(s, h, n, count, op, 1).median_s);
        tov.push_back(time_cpu(o, h, n, count, op, 1).median_s);
      }
      const auto ts = emgpu_bench::summarize(tsv);
      const auto to = emgpu_bench::summarize(tov);
      const auto te = time_eigen(h, n, count, op, 3);
      r.add({.name = names[op], .backend = "serial", .params = params, .t = ts,
             .metrics = {{"speedup_vs_eigen", te.median_s / ts.median_s}}});
      const double sp = ts.median_s / to.median_s;
      r.add({.name = names[op], .backend = "openmp", .params = params, .t = to,
             .metrics = {{"speedup_vs_serial", sp}, {"target", 1.8}, {"meets_target", sp >= 1.8 ? 1.0 : 0.0}}});
      r.add({.name = enames[op], .backend = "vendor", .params = params, .t = te, .metrics = {}});
      if (op == 2) {  // the other SVD method, serial, beside the default
        const auto tj = time_cpu(s, h, n, count, 3, 3);
        r.add({.name = "svd(U,S,V) method jacobi", .backend = "serial", .params = params, .t = tj,
               .metrics = {{"time_vs_default", tj.median_s / ts.median_s}}});
      }
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
  const std::string only = r.option("--only", std::string("lu,qr,svd"));
  if (only.find("lu") != std::string::npos || only.find("qr") != std::string::npos ||
      only.find("svd") != std::string::npos)
    run_gpu(r, sizes);
  if (only.find("host") != std::string::npos) run_host(r, sizes);
#else
  run_cpu(r, sizes);
#endif
  r.write();
  return 0;
}
