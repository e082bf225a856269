/// @file
/// @brief The 3D SCN TLM time-domain solver on a backend (serial, OpenMP, CUDA).
///
/// Per step n (t = n dt, dt = dl / (2 c0)):
///   1. sources act on the incident voltages (soft: add, hard: set);
///   2. probes record {Ex, Ey, Ez, Hx, Hy, Hz} from the incident voltages;
///   3. one fused pass scatters every node and connects its pulses to the
///      neighbours (outer faces reflect with Gamma, internal walls with -1).
/// The voltages live in the backend's memory as 12 port arrays, x contiguous;
/// only probe samples, snapshots and energies come back to the host.
#pragma once

#include <algorithm>
#include <array>
#include <chrono>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "../backend.hpp"
#include "../core/constants.hpp"
#include "../core/error.hpp"
#include "detail/update.hpp"
#include "mesh.hpp"
#include "node.hpp"
#include "source.hpp"
#include "vtk.hpp"

namespace emgpu::tlm {

/// @brief Time series of the six field components at one node.
struct probe_series {
  index_t i = 0, j = 0, k = 0;
  index_t first_step = 0;                     ///< step of sample 0
  std::array<std::vector<double>, 6> field;   ///< by component (Ex ... Hz)
  /// @brief Samples of component c, one per step.
  /// @throws emgpu::invalid_argument for a bad component.
  const std::vector<double>& operator[](component c) const {
    detail::check_component(c, "emgpu::tlm::probe_series");
    return field[std::size_t(c)];
  }
};

/// @brief What a progress callback is told.
struct progress_info {
  index_t step;       ///< steps done in this run() call
  index_t total;      ///< steps requested in this run() call
  double elapsed_s;   ///< wall time since the call started
  index_t nodes;      ///< mesh nodes (for rates)
};

/// @brief Progress callback type.
using progress_fn = std::function<void(const progress_info&)>;

/// @brief A progress callback printing one line per report to stderr
///        ("tlm: 40% (400/1000 steps, 1.2 s, 350 M node-updates/s)").
inline progress_fn progress_to_stderr() {
  return [](const progress_info& p) {
    const double rate = p.elapsed_s > 0 ? double(p.step) * double(p.nodes) / p.elapsed_s : 0.0;
    std::fprintf(stderr, "tlm: %3.0f%% (%lld/%lld steps, %.1f s, %.0f M node-updates/s)\n",
                 100.0 * double(p.step) / double(p.total), (long long)p.step, (long long)p.total,
                 p.elapsed_s, rate * 1e-6);
  };
}

namespace detail {

template <class Real>
struct inject_fn {
  Real* v;
  index_t n;  // port stride
  const index_t* nodes;
  const Real* weight;
  component_ports cp;
  Real scale;   // port sum -> field
  Real amp;
  bool hard;
  EMGPU_HD void operator()(index_t q) const {
    const index_t c = nodes[q];
    Real target = amp * weight[q];
    if (hard) {
      Real s = 0;
      for (int p = 0; p < 4; ++p) s += Real(cp.sign[p]) * v[cp.port[p] * n + c];
      target -= scale * s;
    }
    // F = scale sum_p sign_p V_p: moving each port by sign_p d changes F by 4 scale d.
    const Real d = target / (Real(4) * scale);
    for (int p = 0; p < 4; ++p) v[cp.port[p] * n + c] += Real(cp.sign[p]) * d;
  }
};

template <class Real>
struct record_fn {
  const Real* v;
  index_t n;  // port stride
  const index_t* nodes;
  Real* out;  // 6 values per probe
  Real dl;
  EMGPU_HD void operator()(index_t q) const {
    Real p[12];
    for (int a = 0; a < 12; ++a) p[a] = v[a * n + nodes[q]];
    node_fields(p, dl, out + 6 * q);
  }
};

template <class Real>
struct snapshot_fn {
  const Real* v;
  index_t n, nx, ny;
  box region;
  int comp;
  Real dl;
  Real* out;
  EMGPU_HD void operator()(index_t q) const {
    const index_t bx = region.i1 - region.i0, by = region.j1 - region.j0;
    const index_t i = region.i0 + q % bx, j = region.j0 + (q / bx) % by, k = region.k0 + q / (bx * by);
    const index_t c = i + nx * (j + ny * k);
    Real p[12], f[6];
    for (int a = 0; a < 12; ++a) p[a] = v[a * n + c];
    node_fields(p, dl, f);
    out[q] = f[comp];
  }
};

template <class Real>
struct square_fn {
  const Real* v;
  EMGPU_HD double operator()(index_t q) const { return double(v[q]) * double(v[q]); }
};

/// Host backends: refuse a model larger than the machine's physical memory.
inline void check_memory(const backend::serial&, std::size_t bytes) {
  check_host_memory(bytes, "emgpu::tlm::solver: the model");
}

#if defined(__CUDACC__)
/// CUDA: compare with cudaMemGetInfo before allocating, so an oversized model
/// fails with a clear message instead of a bare cudaMalloc status.
inline void check_memory(const backend::cuda& b, std::size_t bytes) {
  const auto [free_b, total_b] = backend::memory_info(b);
  if (bytes > free_b) {
    device_error e("emgpu::tlm::solver: the model needs " + std::to_string(double(bytes) / 1073741824.0) +
                       " GiB of device memory but only " + std::to_string(double(free_b) / 1073741824.0) +
                       " GiB of " + std::to_string(double(total_b) / 1073741824.0) +
                       " GiB are free on device " + std::to_string(b.device),
                   int(cudaErrorMemoryAllocation));
    e.set_out_of_memory(true);
    throw e;
  }
}
#endif

}  // namespace detail

/// @brief SCN TLM solver.
/// @tparam Backend emgpu::backend::serial (default), openmp or cuda.
/// @tparam Real float (default: half the memory traffic) or double.
///
/// @code
///   tlm::mesh m(10, 6, 8, 0.01);                          // PEC box, 1 cm cells
///   tlm::solver<backend::openmp> s(m);
///   s.add_source(tlm::source::point(1, 1, 1, tlm::component::ez, tlm::waveform::impulse()));
///   const auto p = s.add_probe(6, 4, 5);
///   s.run(20000);
///   auto peaks = tlm::find_peaks(s.probe(p)[tlm::component::ez], m.dt(), 1e9, 4e9);
/// @endcode
template <class Backend = backend::serial, class Real = float>
class solver {
  static_assert(std::is_same_v<Real, float> || std::is_same_v<Real, double>,
                "emgpu::tlm::solver: Real must be float or double");
  static_assert(backend_tag<Backend>, "emgpu::tlm::solver: Backend must be an emgpu backend tag");

 public:
  using backend_type = Backend;
  using real_type = Real;
  template <class T>
  using buffer = vector_t<Backend, T>;

  /// @brief Allocates and zeroes the voltages of model m on backend b.
  /// @throws emgpu::invalid_argument when the model exceeds host memory or its
  ///         cell size does not fit Real (float: dl outside about
  ///         [1.2e-38, 1.1e35] m, where dl or a field scale factor is not a
  ///         normal float); emgpu::device_error (out_of_memory() set) when it
  ///         exceeds the free device memory or an allocation fails.
  explicit solver(const mesh& m, Backend b = {}) : mesh_(m), b_(b) {
    if (!detail::cell_size_fits<Real>(mesh_.dl()))
      throw invalid_argument("emgpu::tlm::solver: dl = " + detail::format_g(mesh_.dl()) + " m does not fit " +
                             detail::real_name<Real>() +
                             ": dl or the field scale factors 1 / (2 dl), 1 / (2 eta0 dl) underflow "
                             "or overflow; use double or another unit of length");
    detail::check_memory(b_, mesh_.memory_bytes<Real>());
    n_ = mesh_.node_count();
    ps_ = port_stride<Real>(n_);
    for (auto& v : v_) {
      v = make_vector<Real>(b_, 12 * ps_);
      fill(b_, v.data(), 12 * ps_, Real(0));  // the padding stays 0
    }
    if (mesh_.has_walls()) {
      const auto& w = mesh_.wall_mask();
      walls_ = to_backend(b_, std::span<const std::uint8_t>(w.data(), w.size()));
    }
  }

  const mesh& model() const noexcept { return mesh_; }
  const Backend& backend() const noexcept { return b_; }
  /// Steps done since construction or reset().
  index_t steps_done() const noexcept { return step_; }
  /// Time of the next step, steps_done() dt.
  double time() const noexcept { return double(step_) * mesh_.dt(); }

  /// @brief Adds an excitation; returns its index.
  /// @throws emgpu::invalid_argument for a bad component or kind, when a node
  ///         is outside the mesh, the node and weight lists differ in length
  ///         or a weight is not finite or too large for Real.
  index_t add_source(const source& s) {
    detail::check_kinds(s.field, s.kind, "emgpu::tlm::solver::add_source");
    emgpu::detail::require(s.i.size() == s.j.size() && s.i.size() == s.k.size() &&
                        s.i.size() == s.weight.size() && !s.i.empty(),
                    "emgpu::tlm::solver::add_source: node and weight lists must be non-empty and equal in length");
    std::vector<index_t> nodes(s.i.size());
    std::vector<Real> w(s.i.size());
    Real wmax = 0;
    for (std::size_t q = 0; q < s.i.size(); ++q) {
      emgpu::detail::require(mesh_.contains(s.i[q], s.j[q], s.k[q]),
                      "emgpu::tlm::solver::add_source: source node outside the mesh");
      if (!detail::representable<Real>(s.weight[q]))
        throw invalid_argument("emgpu::tlm::solver::add_source: weight " + detail::format_g(s.weight[q]) +
                               " is not finite in " + detail::real_name<Real>());
      nodes[q] = mesh_.index(s.i[q], s.j[q], s.k[q]);
      w[q] = Real(s.weight[q]);
      wmax = std::max(wmax, std::abs(w[q]));
    }
    dev_source d{s.field, s.kind, s.signal,
                 to_backend(b_, std::span<const index_t>(nodes.data(), nodes.size())),
                 to_backend(b_, std::span<const Real>(w.data(), w.size())), wmax};
    sources_.push_back(std::move(d));
    return index_t(sources_.size()) - 1;
  }

  /// @brief Records the six components at node (i, j, k) every step from now
  ///        on; returns the probe's index.
  /// @throws emgpu::invalid_argument when the node is outside the mesh.
  index_t add_probe(index_t i, index_t j, index_t k) {
    emgpu::detail::require(mesh_.contains(i, j, k), "emgpu::tlm::solver::add_probe: probe node outside the mesh");
    probe_series p;
    p.i = i;
    p.j = j;
    p.k = k;
    p.first_step = step_;
    probes_.push_back(std::move(p));
    probe_nodes_.push_back(mesh_.index(i, j, k));
    dft_.emplace_back(6 * freqs_.size(), std::complex<double>(0));
    probes_dirty_ = true;
    return index_t(probes_.size()) - 1;
  }
  /// @brief Recorded series of probe p.
  /// @throws emgpu::invalid_argument for a bad index.
  const probe_series& probe(index_t p) const {
    emgpu::detail::require(p >= 0 && p < index_t(probes_.size()), "emgpu::tlm::solver::probe: bad probe index");
    return probes_[std::size_t(p)];
  }
  index_t probe_count() const noexcept { return index_t(probes_.size()); }

  /// @brief Running DFTs of every probe component at these frequencies (Hz):
  ///        X(f) = sum_n F(n dt) exp(-j 2 pi f n dt) dt over the steps run from
  ///        now on (previous sums are discarded).
  /// @throws emgpu::invalid_argument for a non-finite frequency.
  void set_dft_frequencies(std::vector<double> f) {
    for (double x : f) emgpu::detail::require(std::isfinite(x), "emgpu::tlm::solver::set_dft_frequencies: non-finite frequency");
    freqs_ = std::move(f);
    for (auto& d : dft_) d.assign(6 * freqs_.size(), std::complex<double>(0));
  }
  const std::vector<double>& dft_frequencies() const noexcept { return freqs_; }
  /// @brief Running DFT of component c at probe p and frequency number q.
  /// @throws emgpu::invalid_argument for bad indices or a bad component.
  std::complex<double> dft(index_t p, component c, index_t q) const {
    detail::check_component(c, "emgpu::tlm::solver::dft");
    emgpu::detail::require(p >= 0 && p < index_t(probes_.size()) && q >= 0 && q < index_t(freqs_.size()),
                    "emgpu::tlm::solver::dft: bad probe or frequency index");
    return dft_[std::size_t(p)][std::size_t(q) * 6 + std::size_t(c)];
  }

  /// @brief Calls f about every `fraction` of each run() (and at its end);
  ///        an empty f (the default) turns reporting off.
  void set_progress(progress_fn f, double fraction = 0.1) {
    emgpu::detail::require(fraction > 0 && fraction <= 1, "emgpu::tlm::solver::set_progress: fraction in (0, 1]");
    progress_ = std::move(f);
    progress_fraction_ = fraction;
  }

  /// @brief Advances `steps` time steps.
  /// @throws emgpu::invalid_argument for steps < 0, or (leaving the steps
  ///         before it done) a waveform value that is not finite or whose
  ///         field or port voltages overflow Real; emgpu::device_error on
  ///         CUDA failures.
  void run(index_t steps) {
    emgpu::detail::require(steps >= 0, "emgpu::tlm::solver::run: steps must be >= 0");
    if (probes_dirty_) upload_probes();
    const auto start = std::chrono::steady_clock::now();
    // Report after ceil(k fraction steps) steps, k = 1, 2, ..., and at the end.
    const bool reporting = bool(progress_) && steps > 0;
    index_t kth = 1;
    auto mark = [&](index_t q) {
      return std::min<index_t>(steps, index_t(std::ceil(double(steps) * progress_fraction_ * double(q))));
    };
    index_t next_report = reporting ? mark(1) : -1;
    const Real dl = Real(mesh_.dl());
    for (index_t s = 0; s < steps; ++s) {
      const double t = double(step_) * mesh_.dt();
      for (auto& src : sources_) {
        const double a = src.signal(step_, t);
        if (a == 0.0 && src.kind == source_kind::soft) continue;
        emgpu::detail::require(std::isfinite(a), "emgpu::tlm::solver::run: source waveform returned a non-finite value");
        const Real scale = Real(readout_scale(src.field, mesh_.dl()));
        check_amplitude(a, src.wmax, scale);
        for_each_index(aux(), index_t(src.nodes.size()),
                       detail::inject_fn<Real>{v_[cur_].data(), ps_, src.nodes.data(), src.weight.data(),
                                               ports_of(src.field), scale, Real(a), src.kind == source_kind::hard});
      }
      if (!probes_.empty()) {
        for_each_index(aux(), index_t(probes_.size()),
                       detail::record_fn<Real>{v_[cur_].data(), ps_, probe_dev_.data(),
                                               record_.data() + slot_ * 6 * index_t(probes_.size()), dl});
        ++slot_;
      }
      step_once();
      if (slot_ == record_slots_) flush();
      if (reporting && s + 1 == next_report && s + 1 < steps) {
        report(s + 1, steps, start);
        while (next_report <= s + 1) next_report = mark(++kth);
      }
    }
    flush();
    synchronize(b_);
    if (reporting) report(steps, steps, start);
  }

  /// @brief One fused scatter + connect pass without sources or probes (the
  ///        benchmark's unit of work). Asynchronous on CUDA.
  void step_once() {
    detail::lattice<Real> L;
    L.in = v_[cur_].data();
    L.out = v_[1 - cur_].data();
    L.n = n_;
    L.ps = ps_;
    L.nx = mesh_.nx();
    L.ny = mesh_.ny();
    L.nz = mesh_.nz();
    for (int f = 0; f < 6; ++f) L.gamma[f] = Real(mesh_.boundaries()[std::size_t(f)]);
    if (mesh_.has_walls()) {
      L.walls = walls_.data();
      detail::update_all<true>(b_, L);
    } else {
      detail::update_all<false>(b_, L);
    }
    cur_ = 1 - cur_;
    ++step_;
  }

  /// @brief Component c at the nodes of region (x fastest), from the current
  ///        incident voltages.
  /// @throws emgpu::invalid_argument for a bad component or a region that is
  ///         empty or leaves the mesh.
  std::vector<double> snapshot(component c, const box& region) const {
    detail::check_component(c, "emgpu::tlm::solver::snapshot");
    check_region(region);
    const index_t m = region.count();
    auto out = make_vector<Real>(b_, m);
    for_each_index(b_, m,
                   detail::snapshot_fn<Real>{v_[cur_].data(), ps_, mesh_.nx(), mesh_.ny(), region, int(c),
                                             Real(mesh_.dl()), out.data()});
    const std::vector<Real> h = to_host(b_, out);
    return std::vector<double>(h.begin(), h.end());
  }
  /// @brief Whole-mesh box, for snapshot() and write_vtk().
  box volume() const noexcept { return box{0, mesh_.nx(), 0, mesh_.ny(), 0, mesh_.nz()}; }
  /// @brief The plane of nodes with coordinate `index` along `normal`.
  /// @throws emgpu::invalid_argument for a bad axis or an index outside the mesh.
  box plane(axis normal, index_t index) const {
    detail::check_axis(normal, "emgpu::tlm::solver::plane");
    emgpu::detail::require(index >= 0 && index < mesh_.size(normal), "emgpu::tlm::solver::plane: index outside the mesh");
    box b = volume();
    if (normal == axis::x) b.i0 = index, b.i1 = index + 1;
    if (normal == axis::y) b.j0 = index, b.j1 = index + 1;
    if (normal == axis::z) b.k0 = index, b.k1 = index + 1;
    return b;
  }
  /// @brief Writes snapshot(c, region) as a legacy VTK file (points at the
  ///        node centres, coordinates in metres).
  /// @throws emgpu::invalid_argument as snapshot; emgpu::io_error on write failure.
  void write_vtk(const std::string& path, component c, const box& region) const {
    const auto v = snapshot(c, region);
    const double dl = mesh_.dl();
    tlm::write_vtk(path, component_name(c), v,
                   {region.i1 - region.i0, region.j1 - region.j0, region.k1 - region.k0},
                   {(double(region.i0) + 0.5) * dl, (double(region.j0) + 0.5) * dl, (double(region.k0) + 0.5) * dl},
                   dl);
  }

  /// @brief Sum of the squared incident voltages (V^2): conserved by a
  ///        lossless model (every outer Gamma = +-1).
  double energy() const {
    return reduce(b_, 12 * ps_, 0.0, detail::square_fn<Real>{v_[cur_].data()}, emgpu::detail::plus_fn{});
  }

  /// @brief Copy of the incident voltages, port-major: entry (p-1) n + node
  ///        (n = nodes; the storage's padding between ports is left out).
  std::vector<Real> state() const {
    std::vector<Real> h(std::size_t(12 * n_));
    for (int p = 0; p < 12; ++p) copy_to_host(b_, v_[cur_].data() + p * ps_, n_, h.data() + p * n_);
    return h;
  }
  /// @brief Replaces the incident voltages (layout as state()).
  /// @throws emgpu::invalid_argument on a size mismatch or non-finite values.
  void set_state(std::span<const Real> v) {
    emgpu::detail::require(index_t(v.size()) == 12 * n_, "emgpu::tlm::solver::set_state: size must be 12 * nodes");
    for (Real x : v) emgpu::detail::require(std::isfinite(x), "emgpu::tlm::solver::set_state: non-finite voltage");
    for (int p = 0; p < 12; ++p) copy_from_host(b_, v.data() + p * n_, n_, v_[cur_].data() + p * ps_);
    synchronize(b_);
  }
  /// @brief Zero voltages, step 0, empty probe series and DFT sums (sources,
  ///        probes and frequencies are kept).
  void reset() {
    for (auto& v : v_) fill(b_, v.data(), 12 * ps_, Real(0));
    synchronize(b_);
    step_ = 0;
    slot_ = 0;
    for (auto& p : probes_) {
      p.first_step = 0;
      for (auto& f : p.field) f.clear();
    }
    for (auto& d : dft_) std::fill(d.begin(), d.end(), std::complex<double>(0));
  }

 private:
  struct dev_source {
    component field;
    source_kind kind;
    waveform signal;
    buffer<index_t> nodes;
    buffer<Real> weight;
    Real wmax;  // largest |weight|
  };

  // The kernel forms the field amp * weight and moves four ports by
  // field / (4 scale) in Real: a double amplitude that is finite but beyond
  // Real's range would turn the node (and soon the mesh) into inf and NaN.
  // The ports are bounded by max / 4 because the scatter adds four of them.
  void check_amplitude(double a, Real wmax, Real scale) const {
    constexpr Real big = std::numeric_limits<Real>::max();
    bool ok = detail::representable<Real>(a);
    if (ok) {
      const Real field = std::abs(Real(a)) * wmax;
      ok = field <= big && field / (Real(4) * std::abs(scale)) <= big / Real(4);
    }
    if (!ok)
      throw invalid_argument("emgpu::tlm::solver::run: source amplitude " + detail::format_g(a) + " at step " +
                             std::to_string(step_) + " times its largest weight " + detail::format_g(double(wmax)) +
                             " overflows " + detail::real_name<Real>() +
                             " (the field or its port voltages); use double or smaller values");
  }

  // Sources and probes touch a handful of nodes per step: on the host a
  // parallel region would cost more than the work, so they run serially.
  auto aux() const {
    if constexpr (is_device_backend_v<Backend>)
      return b_;
    else
      return backend::serial{};
  }

  void check_region(const box& r) const {
    emgpu::detail::require(r.i0 >= 0 && r.i0 < r.i1 && r.i1 <= mesh_.nx() && r.j0 >= 0 && r.j0 < r.j1 &&
                        r.j1 <= mesh_.ny() && r.k0 >= 0 && r.k0 < r.k1 && r.k1 <= mesh_.nz(),
                    "emgpu::tlm::solver: region empty or outside the mesh");
  }

  void upload_probes() {
    probe_dev_ = to_backend(b_, std::span<const index_t>(probe_nodes_.data(), probe_nodes_.size()));
    // Enough slots to amortise the copies; few enough to stay small.
    record_slots_ = std::max<index_t>(1, std::min<index_t>(4096, (index_t(1) << 22) / (6 * index_t(probes_.size()))));
    record_ = make_vector<Real>(b_, record_slots_ * 6 * index_t(probes_.size()));
    host_record_.resize(std::size_t(record_slots_ * 6 * index_t(probes_.size())));
    probes_dirty_ = false;
  }

  // Moves the recorded slots to the probe series and the running DFTs.
  void flush() {
    if (slot_ == 0) return;
    const index_t np = index_t(probes_.size());
    copy_to_host(b_, record_.data(), slot_ * 6 * np, host_record_.data());
    // Each sample was taken just before a step_once(): steps first .. step_-1.
    const index_t first = step_ - slot_;
    std::vector<std::complex<double>> phase(freqs_.size());
    for (index_t s = 0; s < slot_; ++s) {
      const double t = double(first + s) * mesh_.dt();
      for (std::size_t q = 0; q < freqs_.size(); ++q)
        phase[q] = std::polar(mesh_.dt(), -2.0 * constants::pi * freqs_[q] * t);
      for (index_t p = 0; p < np; ++p) {
        const Real* f = host_record_.data() + (s * np + p) * 6;
        auto& ps = probes_[std::size_t(p)];
        auto& d = dft_[std::size_t(p)];
        for (int c = 0; c < 6; ++c) {
          ps.field[std::size_t(c)].push_back(double(f[c]));
          for (std::size_t q = 0; q < freqs_.size(); ++q) d[q * 6 + std::size_t(c)] += double(f[c]) * phase[q];
        }
      }
    }
    slot_ = 0;
  }

  void report(index_t done, index_t total, std::chrono::steady_clock::time_point start) {
    synchronize(b_);
    const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    progress_(progress_info{done, total, el, n_});
  }

  mesh mesh_;
  Backend b_;
  index_t n_ = 0, ps_ = 0;  // nodes, port stride
  buffer<Real> v_[2];
  int cur_ = 0;
  buffer<std::uint8_t> walls_;
  index_t step_ = 0;
  std::vector<dev_source> sources_;
  std::vector<probe_series> probes_;
  std::vector<index_t> probe_nodes_;
  buffer<index_t> probe_dev_;
  buffer<Real> record_;
  std::vector<Real> host_record_;
  index_t record_slots_ = 0, slot_ = 0;
  bool probes_dirty_ = false;
  std::vector<double> freqs_;
  std::vector<std::vector<std::complex<double>>> dft_;
  progress_fn progress_;
  double progress_fraction_ = 0.1;
};

}  // namespace emgpu::tlm
