// TM_z scattering by a perfectly conducting cylinder: currents and echo width,
// compared with the exact Mie series when the cylinder is circular.
//
//   cylinder_scattering [--shape circle|ellipse|rectangle|file] [--file nodes.txt]
//                       [--interp linear|quadratic|cubic]
//                       [--ka 6.283 | --freq HZ] [--a 1] [--b 0.5]
//                       [--method lcn|mom|mom-accurate] [--order 6] [--cells 64]
//                       [--backend serial|openmp|cuda] [--incidence 0,37]
//                       [--observe 0:360:1] [--out scattering]
//
// Sizes in metres: circle radius a; ellipse semi-axes a, b; rectangle 2a x 2b.
// --ka sets the frequency from k a; --freq in Hz overrides it.
// Writes <out>_current.csv and <out>_sigma.csv; scripts/plot_scattering.py plots them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <memory>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <emgpu/core.hpp>
#include <emgpu/scattering2d.hpp>

#include "common/backend_choice.hpp"

namespace geo = emgpu::geometry;
using emgpu::constants::pi;

namespace {

struct options {
  std::string shape = "circle", file, interp = "cubic", method = "lcn", out = "scattering";
#if defined(EMGPU_TEST_CUDA)
  std::string backend = "cuda";
#else
  std::string backend = "openmp";
#endif
  double ka = 2 * pi, freq = 0, a = 1, b = 0.5;
  int order = 6;
  long cells = 64;
  std::vector<double> incidence{0.0};
  double obs0 = 0, obs1 = 360, obs_step = 1;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr,
               "error: %s\nusage: cylinder_scattering [--shape circle|ellipse|rectangle|file] [--file F]\n"
               "  [--interp linear|quadratic|cubic] [--ka X | --freq HZ] [--a M] [--b M]\n"
               "  [--method lcn|mom|mom-accurate] [--order 1..10] [--cells N]\n"
               "  [--backend serial|openmp|cuda] [--incidence DEG[,DEG...]] [--observe FROM:TO:STEP]\n"
               "  [--out PREFIX]\n",
               msg);
  std::exit(2);
}

double number(const std::string& s, const char* what) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') usage((std::string("bad number for ") + what + ": " + s).c_str());
  return v;
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    if (k == "-h" || k == "--help") usage("help requested");
    if (i + 1 >= argc) usage(("missing value after " + k).c_str());
    const std::string v = argv[++i];
    if (k == "--shape") o.shape = v;
    else if (k == "--file") o.file = v, o.shape = "file";
    else if (k == "--interp") o.interp = v;
    else if (k == "--ka") o.ka = number(v, "--ka");
    else if (k == "--freq") o.freq = number(v, "--freq");
    else if (k == "--a") o.a = number(v, "--a");
    else if (k == "--b") o.b = number(v, "--b");
    else if (k == "--method") o.method = v;
    else if (k == "--order") o.order = int(number(v, "--order"));
    else if (k == "--cells") o.cells = long(number(v, "--cells"));
    else if (k == "--backend") o.backend = v;
    else if (k == "--out") o.out = v;
    else if (k == "--incidence") {
      o.incidence.clear();
      std::stringstream ss(v);
      for (std::string t; std::getline(ss, t, ',');) o.incidence.push_back(number(t, "--incidence"));
    } else if (k == "--observe") {
      std::stringstream ss(v);
      std::string t[3];
      for (auto& x : t)
        if (!std::getline(ss, x, ':')) usage("--observe wants FROM:TO:STEP");
      o.obs0 = number(t[0], "--observe"), o.obs1 = number(t[1], "--observe"), o.obs_step = number(t[2], "--observe");
      if (!(o.obs_step > 0) || o.obs1 < o.obs0) usage("--observe wants FROM <= TO and STEP > 0");
    } else usage(("unknown option " + k).c_str());
  }
  return o;
}

geo::contour make_contour(const options& o) {
  if (o.shape == "circle") return geo::circle(o.a);
  if (o.shape == "ellipse") return geo::ellipse(o.a, o.b);
  if (o.shape == "rectangle") return geo::rectangle(2 * o.a, 2 * o.b);
  if (o.shape == "file") {
    if (o.file.empty()) usage("--shape file needs --file");
    const auto kind = o.interp == "linear"      ? geo::interpolation::linear
                      : o.interp == "quadratic" ? geo::interpolation::quadratic
                                                : geo::interpolation::cubic;
    return geo::read_contour(o.file, kind);
  }
  usage(("unknown shape " + o.shape).c_str());
}

template <class Backend, class Kernel>
int run(const options& o, const Backend& b, Kernel kernel) {
  const bool flat = o.method != "lcn" || (o.shape == "file" && o.interp == "linear");
  const geo::mesh mesh(make_contour(o), o.cells, flat ? geo::cell_shape::flat : geo::cell_shape::curved);
  const double freq = o.freq > 0 ? o.freq : emgpu::frequency_for_ka(o.ka, o.a);
  std::vector<double> inc;
  for (double d : o.incidence) inc.push_back(d * pi / 180);
  std::vector<double> obs;
  for (double d = o.obs0; d < o.obs1 - 1e-9 * o.obs_step || (obs.empty() && d <= o.obs1); d += o.obs_step)
    obs.push_back(d * pi / 180);

  const auto t0 = std::chrono::steady_clock::now();
  emgpu::scattering2d<Backend, Kernel> solver(mesh, freq, kernel, b);
  solver.factor();
  synchronize(b);
  const auto t1 = std::chrono::steady_clock::now();
  const auto r = solver.solve(inc, obs);
  const auto t2 = std::chrono::steady_clock::now();

  std::printf("%s, %s, %s%s, backend %s\n", o.shape.c_str(), o.method.c_str(),
              o.method == "lcn" ? "order " : "", o.method == "lcn" ? std::to_string(o.order).c_str() : "",
              emgpu::backend_traits<Backend>::name);
  std::printf("frequency %.6g Hz, wavelength %.6g m, k a = %.6g, %ld cells, %ld unknowns\n", freq,
              r.wavelength(), r.wavenumber * o.a, o.cells, long(r.unknowns()));
  std::printf("fill + factor %.3f s, %zu solves + %zu far-field angles %.3f s\n",
              std::chrono::duration<double>(t1 - t0).count(), inc.size(), obs.size(),
              std::chrono::duration<double>(t2 - t1).count());

  const bool circle = o.shape == "circle";
  std::unique_ptr<emgpu::analytic::pec_cylinder_tm> ex;
  if (circle) ex = std::make_unique<emgpu::analytic::pec_cylinder_tm>(o.a, r.wavenumber);

  std::ofstream fj(o.out + "_current.csv"), fs(o.out + "_sigma.csv");
  fj << "incidence_deg,index,x,y,weight,angle_deg,re_jz,im_jz" << (circle ? ",re_jz_exact,im_jz_exact" : "") << "\n";
  fs << "incidence_deg,phi_deg,sigma_m,sigma_db,sigma_over_lambda" << (circle ? ",sigma_db_exact" : "") << "\n";
  fj.precision(12);
  fs.precision(12);
  for (emgpu::index_t c = 0; c < r.columns(); ++c) {
    const double inc_deg = o.incidence[std::size_t(c)];
    double num = 0, den = 0;
    for (emgpu::index_t i = 0; i < r.unknowns(); ++i) {
      const double x = r.x[std::size_t(i)], y = r.y[std::size_t(i)];
      const auto j = r.current_at(i, c);
      fj << inc_deg << "," << i << "," << x << "," << y << "," << r.w[std::size_t(i)] << ","
         << std::atan2(y, x) * 180 / pi << "," << j.real() << "," << j.imag();
      if (ex) {
        const auto je = ex->current(std::atan2(y, x), inc[std::size_t(c)]);
        fj << "," << je.real() << "," << je.imag();
        num += std::norm(std::complex<double>(j.real(), j.imag()) - je);
        den += std::norm(je);
      }
      fj << "\n";
    }
    const auto s = r.echo_width(c);
    const auto sdb = r.echo_width_db(c);
    double worst_db = 0, worst_rel = 0;
    for (std::size_t a = 0; a < s.size(); ++a) {
      fs << inc_deg << "," << r.observation[a] * 180 / pi << "," << s[a] << "," << sdb[a] << ","
         << s[a] / r.wavelength();
      if (ex) {
        const double se = ex->echo_width(r.observation[a], inc[std::size_t(c)]);
        fs << "," << 10 * std::log10(se);
        worst_db = std::max(worst_db, std::abs(sdb[a] - 10 * std::log10(se)));
        worst_rel = std::max(worst_rel, std::abs(s[a] - se) / se);
      }
      fs << "\n";
    }
    std::printf("incidence %g deg: monostatic echo width %.6g m (%.3f dB)", inc_deg, r.monostatic()[std::size_t(c)],
                10 * std::log10(r.monostatic()[std::size_t(c)]));
    if (ex)
      std::printf("\n  vs exact: J_z rel. L2 error %.3e, echo width max rel. error %.3e (max %.2e dB)", std::sqrt(num / den),
                  worst_rel, worst_db);
    std::printf("\n");
  }
  std::printf("wrote %s_current.csv and %s_sigma.csv\n", o.out.c_str(), o.out.c_str());
  return 0;
}

template <class Backend, int Q = 1>
int dispatch_order(const options& o, const Backend& b) {
  if constexpr (Q > 10) {
    usage("--order must be 1..10");
  } else {
    if (o.order == Q) return run(o, b, emgpu::kernel::lcn<Q>{});
    return dispatch_order<Backend, Q + 1>(o, b);
  }
}

template <class Backend>
int dispatch(const options& o, const Backend& b) {
  if (o.method == "mom") return run(o, b, emgpu::kernel::mom{});
  if (o.method == "mom-accurate") return run(o, b, emgpu::kernel::mom{.accurate_near = true});
  if (o.method == "lcn") return dispatch_order(o, b);
  usage(("unknown method " + o.method).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  return emgpu_example::with_backend(o.backend, "cylinder_scattering", [&](const auto& b) { return dispatch(o, b); });
}
