// 2D TM scattering: matrix fill throughput (G entries/s) for the MoM and LCN
// kernels per backend, against a plain write of the same matrix (the memory
// floor), and the end-to-end pipeline (discretise + fill + factor + 360-angle
// solve + echo width at 360 angles) with its parts, for a circle at 10 cells
// per wavelength-ish sizes. Vendor reference in the same run: Eigen's LU of
// the same matrix on the CPU.
//
//   bench_scattering2d [--quick] [--out F.json] [--nmax N] [--e2e-only 1]
//                      [--fill-variant pair|tri|fast|fast_cs|fast_sc|fast_sc_occ|all] [--near-variant thread|warp|all]
//
// --fill-variant / --near-variant time the far- and near-pass implementations
// of kernel::efie2d_operator (see far_fill_variant) side by side: each fill row
// is named "fill <kernel> [<far>/<near>]". Default: the library defaults only.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <Eigen/Dense>
#include <emgpu/core.hpp>
#include <emgpu/scattering2d.hpp>

#include "common/bench.hpp"

using namespace emgpu;
namespace geo = emgpu::geometry;

namespace {

struct fill_const_fn {
  complexd* z;
  index_t ld;
  EMGPU_HD void operator()(index_t i, index_t j) const { z[i + j * ld] = complexd(double(i), double(j)); }
};

template <class B>
emgpu_bench::stats time_it(const B& b, auto&& f, int warm, int reps) {
#if defined(__CUDACC__)
  if constexpr (std::is_same_v<B, backend::cuda>) return emgpu_bench::time_cuda(b.stream, f, warm, reps);
#endif
  return emgpu_bench::time_host([&] { f(); synchronize(b); }, warm, reps);
}

// Circle with ka chosen so that the LCN<6> mesh has ~10 unknowns per wavelength... times 2: the
// electrical size grows with N as a real sweep would (6 cells of 6 nodes per wavelength).
double ka_for(index_t n) { return double(n) / 36.0 * 2 * constants::pi / (2 * constants::pi) * 1.0; }

const char* far_name(kernel::far_fill_variant v) {
  switch (v) {
    case kernel::far_fill_variant::pair: return "pair";
    case kernel::far_fill_variant::tri: return "tri";
    case kernel::far_fill_variant::fast: return "fast";
    case kernel::far_fill_variant::fast_cs: return "fast_cs";
    case kernel::far_fill_variant::fast_sc: return "fast_sc";
    case kernel::far_fill_variant::fast_sc_occ: return "fast_sc_occ";
  }
  return "?";
}
const char* near_name(kernel::near_fill_variant v) {
  return v == kernel::near_fill_variant::thread ? "thread" : "warp";
}

struct variants {
  std::vector<kernel::far_fill_variant> far;
  std::vector<kernel::near_fill_variant> near;
};

// The build's main backend, whose default far-fill variant the rows use
// unless --fill-variant says otherwise (the host backends share one default).
#if defined(__CUDACC__)
using main_backend = backend::cuda;
#else
using main_backend = backend::serial;
#endif

variants parse_variants(const emgpu_bench::report& r) {
  variants v;
  const std::string f = r.option("--fill-variant", std::string(far_name(kernel::default_far_fill<main_backend>)));
  for (auto c : {kernel::far_fill_variant::pair, kernel::far_fill_variant::tri, kernel::far_fill_variant::fast,
                 kernel::far_fill_variant::fast_cs, kernel::far_fill_variant::fast_sc,
                 kernel::far_fill_variant::fast_sc_occ})
    if (f == "all" || f == far_name(c)) v.far.push_back(c);
  const std::string n = r.option("--near-variant", std::string(near_name(kernel::default_near_fill)));
  for (auto c : {kernel::near_fill_variant::thread, kernel::near_fill_variant::warp})
    if (n == "all" || n == near_name(c)) v.near.push_back(c);
  if (v.far.empty() || v.near.empty()) {
    std::fprintf(stderr, "bench_scattering2d: unknown --fill-variant %s or --near-variant %s\n", f.c_str(), n.c_str());
    std::exit(2);
  }
  return v;
}

template <class B, class K>
void fill_bench(emgpu_bench::report& r, const B& b, const char* name, K kernel, index_t cells, int reps,
                const variants& vs) {
  const auto shape = std::is_same_v<K, kernel::mom> ? geo::cell_shape::flat : geo::cell_shape::curved;
  const geo::mesh m(geo::circle(1.0), cells, shape);
  const auto t0 = std::chrono::steady_clock::now();
  const auto d = kernel.discretize(m);
  const double t_disc = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  kernel::efie2d_operator<B> op(b, d);
  const index_t n = d.n;
  auto z = make_vector<complexd>(b, n * n);
  const matrix_view<complexd> zv{z.data(), n, n, n};
  const double k = ka_for(n);
  const auto tw = time_it(b, [&] { for_each_index(b, n, n, fill_const_fn{z.data(), n}); }, 1, reps);
  const double ge = double(n) * double(n) / 1e9;
  // The near variant only matters where there are near blocks.
  const std::vector<kernel::near_fill_variant> nears =
      d.blocks.empty() ? std::vector<kernel::near_fill_variant>{vs.near.back()} : vs.near;
  for (const auto fv : vs.far)
    for (const auto nv : nears) {
      op.set_fill(fv, nv);
      const auto t = time_it(b, [&] { op.assemble(zv, k); }, 1, reps);
      r.add({.name = std::string("fill ") + name + " [" + far_name(fv) + (d.blocks.empty() ? "" : "/") +
                     (d.blocks.empty() ? "" : near_name(nv)) + "]",
             .backend = backend_traits<B>::name,
             .params = {{"n", double(n)}, {"near_blocks", double(d.blocks.size())}}, .t = t,
             .metrics = {{"Gentries/s", ge / t.median_s},
                         {"write_floor_Gentries/s", ge / tw.median_s},
                         {"fraction_of_floor", tw.median_s / t.median_s},
                         {"discretize_s", t_disc}}});
    }
}

template <class B>
void end_to_end(emgpu_bench::report& r, const B& b, index_t n, int reps) {
  const index_t cells = n / 6;
  const double ka = ka_for(n);
  const geo::mesh m(geo::circle(1.0), cells);
  const auto ang = angles_deg(0, 359, 360);
  double t_disc = 0, t_fill_factor = 0, t_solve = 0, err = 0;
  auto once = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    scattering2d<B, kernel::lcn<6>> s(m, frequency_for_ka(ka, 1.0), {}, b);
    const auto t1 = std::chrono::steady_clock::now();
    s.factor();
    synchronize(b);
    const auto t2 = std::chrono::steady_clock::now();
    const auto res = s.solve(ang, ang);
    const auto t3 = std::chrono::steady_clock::now();
    t_disc = std::chrono::duration<double>(t1 - t0).count();
    t_fill_factor = std::chrono::duration<double>(t2 - t1).count();
    t_solve = std::chrono::duration<double>(t3 - t2).count();
    return res;
  };
  const auto t = emgpu_bench::time_host([&] { (void)once(); }, 1, reps);
  // Accuracy of the echo width at incidence 0 against the Mie series, from one
  // more untimed run (the check is not part of the pipeline).
  {
    const auto res = once();
    const analytic::pec_cylinder_tm ex(1.0, res.wavenumber);
    const auto sg = res.echo_width(0);
    for (std::size_t a = 0; a < sg.size(); ++a)
      err = std::max(err, std::abs(sg[a] - ex.echo_width(ang[a], 0.0)) / ex.echo_width(ang[a], 0.0));
  }
  r.add({.name = "end-to-end lcn<6>", .backend = backend_traits<B>::name,
         .params = {{"n", double(n)}, {"ka", ka}, {"angles", 360}}, .t = t,
         .metrics = {{"discretize_s", t_disc},
                     {"fill+factor_s", t_fill_factor},
                     {"solve+farfield_s", t_solve},
                     {"sigma_max_rel_err", err}},
         .note = "last repetition's parts"});
}

void eigen_lu_reference(emgpu_bench::report& r, index_t n, int reps) {
  const geo::mesh m(geo::circle(1.0), n / 6);
  const auto d = kernel::lcn<6>{}.discretize(m);
  const kernel::efie2d_operator<backend::serial> op(backend::serial{}, d);
  Eigen::MatrixXcd z(d.n, d.n);
  auto zv = view_of(z);
  op.assemble(zv, ka_for(d.n));
  Eigen::PartialPivLU<Eigen::MatrixXcd> lu;
  // Eigen's LU is __host__ __device__ on top of host-only kernels, which
  // nvcc's device pass reports (#20014) with some Eigen versions (the H200
  // host's, session 42); this runs on the host only.
#if !defined(__CUDA_ARCH__)
  const auto t = emgpu_bench::time_host([&] { lu.compute(z); }, 0, reps);
#else
  const emgpu_bench::stats t{};
#endif
  const double flops = 8.0 / 3.0 * double(d.n) * double(d.n) * double(d.n);
  r.add({.name = "eigen PartialPivLU", .backend = "vendor", .params = {{"n", double(d.n)}}, .t = t,
         .metrics = {{"GFLOP/s", flops / t.median_s / 1e9}}, .note = "factor only, reference for end-to-end"});
}

}  // namespace

int main(int argc, char** argv) {
  emgpu_bench::report r("scattering2d", argc, argv);
  const bool q = r.quick();
  const int reps = q ? 2 : 5;
  const variants vs = parse_variants(r);
#if defined(__CUDACC__)
  const backend::cuda b{};
  const index_t nmax = index_t(r.option("--nmax", q ? 4096.0 : 16384.0));
  const bool fills = r.option("--e2e-only", 0.0) == 0.0;
  for (index_t n : {index_t(4096), index_t(16384), index_t(32768)}) {
    if (!fills || n > std::max<index_t>(nmax, 4096) * 2) break;
    fill_bench(r, b, "mom", kernel::mom{}, n, reps, vs);
    fill_bench(r, b, "lcn<6>", kernel::lcn<6>{}, n / 6, reps, vs);
  }
  for (index_t n : {index_t(4096), index_t(16384)})
    if (n <= nmax) end_to_end(r, b, n, q ? 1 : 3);
#else
  const index_t nmax = index_t(r.option("--nmax", q ? 1024.0 : 4096.0));
  for (index_t n : {index_t(1024), index_t(4096)}) {
    if (n > nmax) break;
    fill_bench(r, backend::serial{}, "mom", kernel::mom{}, n, reps, vs);
    fill_bench(r, backend::openmp{}, "mom", kernel::mom{}, n, reps, vs);
    fill_bench(r, backend::serial{}, "lcn<6>", kernel::lcn<6>{}, n / 6, reps, vs);
    fill_bench(r, backend::openmp{}, "lcn<6>", kernel::lcn<6>{}, n / 6, reps, vs);
  }
  for (index_t n : {index_t(1024), index_t(4096)}) {
    if (n > nmax) break;
    end_to_end(r, backend::openmp{}, n, q ? 1 : 2);
    eigen_lu_reference(r, n, 1);
  }
#endif
  r.write();
  return 0;
}
