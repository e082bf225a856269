/// @file
/// @brief emgpu::fe_iiee::radiation_operator: radiates the equivalent currents
///        on S' onto the observer points of S, giving E and curl E (the
///        "scat_vec") for many right-hand sides, on any backend.
///
/// Conventions: design/physics-conventions.md (shared), "FE-IIEE radiation
/// integrals" (exp(+j w t), R from source to observer, gradients on r,
/// J = n x H, M = -n x E). The per-pair body is radiation_kernel<Real>.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../backend.hpp"
#include "../core/complex.hpp"
#include "../core/error.hpp"
#include "detail/cuda_loops.hpp"
#include "detail/functors.hpp"
#include "detail/host_loops.hpp"
#include "detail/normals.hpp"
#include "radiation_kernel.hpp"
#include "types.hpp"

namespace emgpu::fe_iiee {

template <class Real, class Strategy>
class multi_gpu_operator;

/// @brief Applies the FE-IIEE radiation integrals (E and curl E on S from J, M
///        on S') and keeps its buffers across calls, so that an FE-IIEE loop
///        uploads only the new currents and downloads only the scat_vec.
///
/// @tparam Backend  emgpu::backend::serial, openmp or (under nvcc) cuda.
/// @tparam Real     double (default, as the sources) or float: storage and arithmetic.
/// @tparam Strategy a tag of emgpu::fe_iiee::strategy; automatic picks, per
///                  apply, the fastest for the sizes (see docs/fe_iiee.md).
///
/// Currents and fields given per source point and RHS are 3 complex values each,
/// component c of source s for RHS r at c + 3 (s + n_s r) (a column per RHS).
/// The scat_vec holds 6 complex values per observer per RHS (Ex, Ey, Ez,
/// curlEx, curlEy, curlEz) in a scat_layout (default by_rhs: a column per RHS).
///
/// Not thread-safe: one operator per host thread (see multi_gpu_operator).
template <class Backend, class Real = double, class Strategy = strategy::automatic>
  requires backend_tag<Backend> && loop_strategy<Strategy> &&
           (std::is_same_v<Real, double> || std::is_same_v<Real, float>)
class radiation_operator {
 public:
  using backend_type = Backend;
  using real_type = Real;
  using complex_type = complex<Real>;
  using kernel_type = radiation_kernel<Real>;
  using strategy_type = Strategy;
  template <class T>
  using buffer = vector_t<Backend, T>;

  /// @brief Uploads and validates the geometry.
  /// @param b         backend tag (for CUDA: stream and device used by every call).
  /// @param sources   points, weights and optional normals of S' (see source_surface).
  /// @param observers x, y, z of each observer point of S (3 n_obs values).
  /// @param m         wavenumber k > 0 and impedance eta > 0 of the exterior medium.
  /// @param opts      separation check settings.
  /// @throws emgpu::invalid_argument on empty or mismatched sizes, non-finite
  ///         values, zero normals, k <= 0, eta <= 0, a negative or non-finite
  ///         min_separation, a geometry whose extent D (bounding-box diagonal)
  ///         or k D overflows Real, or an observer closer than the minimum
  ///         separation to a source point.
  /// @throws emgpu::device_error when a device allocation or copy fails.
  radiation_operator(const Backend& b, const source_surface<Real>& sources,
                     std::span<const Real> observers, const medium<Real>& m,
                     const radiation_options<Real>& opts = {})
      : b_(b), k_(m.k), eta_(m.eta), kernel_(opts.kernel), dmma_(opts.dmma) {
    using emgpu::detail::require;
    require(std::isfinite(double(k_)) && k_ > 0, "fe_iiee::radiation_operator: k must be finite and > 0");
    require(std::isfinite(double(eta_)) && eta_ > 0,
            "fe_iiee::radiation_operator: eta must be finite and > 0");
    require(!sources.points.empty() && sources.points.size() % 3 == 0,
            "fe_iiee::radiation_operator: source points must be 3 n_s > 0 values");
    require(!observers.empty() && observers.size() % 3 == 0,
            "fe_iiee::radiation_operator: observer points must be 3 n_obs > 0 values");
    n_s_ = index_t(sources.points.size() / 3);
    n_obs_ = index_t(observers.size() / 3);
    require(index_t(sources.weights.size()) == n_s_,
            "fe_iiee::radiation_operator: need one weight per source point");
    require(sources.normals.empty() || index_t(sources.normals.size()) == 3 * n_s_,
            "fe_iiee::radiation_operator: normals must be empty or 3 n_s values");
    require(all_finite_host(sources.points) && all_finite_host(sources.weights) &&
                all_finite_host(sources.normals) && all_finite_host(observers),
            "fe_iiee::radiation_operator: non-finite geometry or weight");
    // 0 is the documented "use the default"; anything else that is not a
    // finite distance is a caller's error, not a request for the default.
    require(std::isfinite(double(opts.min_separation)) && opts.min_separation >= 0,
            "fe_iiee::radiation_operator: min_separation must be finite and >= 0 (0: the default)");

    std::vector<point4<Real>> hs(static_cast<std::size_t>(n_s_)), ho(static_cast<std::size_t>(n_obs_));
    Real lo[3], hi[3];
    for (int c = 0; c < 3; ++c) lo[c] = hi[c] = sources.points[c];
    auto grow = [&](const Real* p) {
      for (int c = 0; c < 3; ++c) {
        lo[c] = std::min(lo[c], p[c]);
        hi[c] = std::max(hi[c], p[c]);
      }
    };
    for (index_t s = 0; s < n_s_; ++s) {
      const Real* p = sources.points.data() + 3 * s;
      hs[std::size_t(s)] = {p[0], p[1], p[2], sources.weights[std::size_t(s)]};
      grow(p);
    }
    for (index_t o = 0; o < n_obs_; ++o) {
      const Real* p = observers.data() + 3 * o;
      ho[std::size_t(o)] = {p[0], p[1], p[2], Real(0)};
      grow(p);
    }
    if (!sources.normals.empty()) {
      std::vector<Real> hn(sources.normals.begin(), sources.normals.end());
      for (index_t s = 0; s < n_s_; ++s) {
        Real* n = hn.data() + 3 * s;
        require(detail::unit_normal(n, n), "fe_iiee::radiation_operator: zero normal at source point " +
                                               std::to_string(s));
      }
      normals_ = to_backend(b_, std::span<const Real>(hn));
    }
    src_ = to_backend(b_, std::span<const point4<Real>>(hs));
    obs_ = to_backend(b_, std::span<const point4<Real>>(ho));

    const Real diam = std::sqrt((hi[0] - lo[0]) * (hi[0] - lo[0]) + (hi[1] - lo[1]) * (hi[1] - lo[1]) +
                                (hi[2] - lo[2]) * (hi[2] - lo[2]));
    // Every pair has R <= D, so a finite D keeps the kernel's R^2 finite and
    // a finite k D its phase k R: past either the fields would be NaN.
    require(std::isfinite(double(diam)) && std::isfinite(double(k_ * diam)),
            "fe_iiee::radiation_operator: the extent D of the geometry (" + std::to_string(double(diam)) +
                ") or k D overflows");
    // The host sin/cos takes its cheaper reduction when every k R is below
    // its exact range; the factor 2 covers the rounding of D and of each R.
    wide_phase_ = !(Real(2) * k_ * diam < Real(kernel_type::reduce_exact_limit));
    min_sep_ = opts.min_separation > 0
                   ? opts.min_separation
                   : std::sqrt(std::numeric_limits<Real>::epsilon()) * diam;
    if (opts.check_separation) {
      const Real d2 = reduce(b_, n_obs_, std::numeric_limits<Real>::max(),
                             detail::min_dist2_fn<Real>{src_.data(), obs_.data(), n_s_},
                             detail::min_real_fn{});
      require(!(d2 <= min_sep_ * min_sep_),
              "fe_iiee::radiation_operator: an observer lies within " + std::to_string(double(min_sep_)) +
                  " of a source point (distance " + std::to_string(std::sqrt(double(d2))) + ")");
    }
#if defined(__CUDACC__)
    if constexpr (is_device_backend_v<Backend>) {
      sm_count_ = detail::cuda_sm_count(b_.device);
      cc_major_ = detail::cuda_cc_major(b_.device);
    }
#endif
  }

  index_t num_sources() const noexcept { return n_s_; }
  index_t num_observers() const noexcept { return n_obs_; }
  Real wavenumber() const noexcept { return k_; }
  Real impedance() const noexcept { return eta_; }
  /// Minimum observer-source distance enforced at construction.
  Real min_separation() const noexcept { return min_sep_; }
  /// Arithmetic units requested for the CUDA kernel (options; host backends ignore it).
  device_kernel kernel() const noexcept { return kernel_; }
  bool has_normals() const noexcept { return !normals_.empty(); }
  const Backend& backend() const noexcept { return b_; }

  /// @brief E and curl E at the observers from the currents J, M on S'.
  /// @param J, M   3 n_s n_rhs complex values each (c + 3 (s + n_s r)), host memory.
  /// @return the scat_vec, 6 n_obs n_rhs complex values in `layout`.
  /// @throws emgpu::invalid_argument on sizes that are not 3 n_s n_rhs (n_rhs >= 1,
  ///         equal for J and M), non-finite currents, or finite ones whose
  ///         folding (w eta J, w M) overflows ("non-finite input (or an
  ///         overflow folding it)"; on the device detected while folding: the
  ///         call throws after the apply ran).
  /// @throws emgpu::device_error on a failed device allocation, copy or launch.
  std::vector<complex_type> apply(std::span<const complex_type> J, std::span<const complex_type> M,
                                  scat_layout layout = scat_layout::by_rhs) {
    run_host_input<false>(J, M, layout, "apply");
    return download();
  }

  /// @brief As apply(), forming J = n x H and M = -n x E from the fields at the
  ///        source points (normals must have been given at construction).
  /// @throws emgpu::invalid_argument as apply(), or when the operator has no normals.
  std::vector<complex_type> apply_fields(std::span<const complex_type> E,
                                         std::span<const complex_type> H,
                                         scat_layout layout = scat_layout::by_rhs) {
    run_host_input<true>(E, H, layout, "apply_fields");
    return download();
  }

  /// @brief As apply() (host currents), leaving the scat_vec in the backend's
  ///        memory (result()) instead of returning a host copy: for callers
  ///        that place it themselves (multi_gpu_operator gathers the pieces of
  ///        its partitions straight into one host vector). On the device it
  ///        returns once the apply is done (it reads the fold's overflow flag).
  /// @throws as apply().
  const buffer<complex_type>& apply_keep(std::span<const complex_type> J, std::span<const complex_type> M,
                                         scat_layout layout = scat_layout::by_rhs) {
    run_host_input<false>(J, M, layout, "apply_keep");
    return scat_;
  }

  /// @brief As apply_fields(), leaving the scat_vec in the backend's memory.
  /// @throws as apply_fields().
  const buffer<complex_type>& apply_fields_keep(std::span<const complex_type> E,
                                                std::span<const complex_type> H,
                                                scat_layout layout = scat_layout::by_rhs) {
    run_host_input<true>(E, H, layout, "apply_fields_keep");
    return scat_;
  }

  /// @brief apply() on currents already in the backend's memory; the scat_vec
  ///        stays there (result()). Nothing crosses the PCIe bus.
  /// @throws emgpu::invalid_argument on n_rhs < 1, null pointers, non-finite currents
  ///         or an overflow folding them (on the device this is detected while
  ///         folding: the call then throws after the apply ran, and result()
  ///         is unspecified).
  const buffer<complex_type>& apply_resident(const complex_type* J, const complex_type* M,
                                             index_t n_rhs, scat_layout layout = scat_layout::by_rhs) {
    check_resident(J, M, n_rhs, "apply_resident");
    ensure(folded_, n_s_ * n_rhs * 12);
    for_each_index(b_, n_s_ * n_rhs,
                   detail::fold_currents_fn<Real>{J, M, src_.data(), folded_.data(), n_s_, n_rhs, eta_,
                                                  arm_finite_flag()});
    finish_resident(n_rhs, layout, "apply_resident");
    return scat_;
  }

  /// @brief apply_fields() on fields already in the backend's memory.
  /// @throws emgpu::invalid_argument as apply_resident(), or without normals.
  const buffer<complex_type>& apply_fields_resident(const complex_type* E, const complex_type* H,
                                                    index_t n_rhs,
                                                    scat_layout layout = scat_layout::by_rhs) {
    emgpu::detail::require(has_normals(),
                           "fe_iiee::radiation_operator::apply_fields_resident: no normals were given");
    check_resident(E, H, n_rhs, "apply_fields_resident");
    ensure(folded_, n_s_ * n_rhs * 12);
    for_each_index(b_, n_s_ * n_rhs,
                   detail::fold_fields_fn<Real>{E, H, normals_.data(), src_.data(), folded_.data(),
                                                n_s_, n_rhs, eta_, arm_finite_flag()});
    finish_resident(n_rhs, layout, "apply_fields_resident");
    return scat_;
  }

  /// @brief The last scat_vec, in the backend's memory (6 n_obs last_num_rhs() values).
  const buffer<complex_type>& result() const noexcept { return scat_; }
  index_t last_num_rhs() const noexcept { return last_rhs_; }
  /// Name of the loop the last apply ran ("over_observers", ... ; CUDA adds the plan).
  const std::string& last_strategy() const noexcept { return last_strategy_; }

  /// @brief Flops of one apply with n_rhs RHS in the source papers' convention.
  double flops(index_t n_rhs) const noexcept {
    return kernel_type::flops_per_pair(n_rhs) * double(n_s_) * double(n_obs_);
  }

 private:
  // multi_gpu_operator splits a partition's observers into chunks (one
  // operator each) that share the first chunk's folded currents, so that the
  // download of one chunk overlaps the computation of the next.
  template <class R, class S>
  friend class multi_gpu_operator;

  /// Checks and folds host input into folded_ (no run); returns n_rhs. On the
  /// device an overflow in the fold is reported by check_fold_flag() after
  /// the run.
  template <bool Fields>
  index_t fold_checked(std::span<const complex_type> a, std::span<const complex_type> c, const char* what) {
    const std::string where = std::string("fe_iiee::radiation_operator::") + what;
    if constexpr (Fields) emgpu::detail::require(has_normals(), where + ": no normals were given");
    const index_t n_rhs = rhs_count(a.size(), c.size(), what);
    emgpu::detail::require(all_finite_host(a) && all_finite_host(c),
                           where + (Fields ? ": non-finite field" : ": non-finite current"));
    fold_host_input<Fields>(a.data(), c.data(), n_rhs, arm_finite_flag());
    check_fold_host(n_rhs, what);
    return n_rhs;
  }
  const Real* folded_data() const noexcept { return folded_.data(); }

  template <class T>
  static bool all_finite_host(std::span<const T> v) {
    for (const T& x : v) {
      if constexpr (is_complex_v<T>) {
        if (!std::isfinite(x.real()) || !std::isfinite(x.imag())) return false;
      } else if (!std::isfinite(x)) {
        return false;
      }
    }
    return true;
  }

  index_t rhs_count(std::size_t a, std::size_t b, const char* what) const {
    const std::string where = std::string("fe_iiee::radiation_operator::") + what;
    emgpu::detail::require(a == b, where + ": the two inputs differ in size");
    emgpu::detail::require(a > 0 && a % std::size_t(3 * n_s_) == 0,
                           where + ": input size must be 3 n_sources n_rhs with n_rhs >= 1");
    return index_t(a / std::size_t(3 * n_s_));
  }

  // Resident inputs: on the host they are scanned before use; on the device
  // the fold raises a flag (flag_non_finite) that is read once the apply is
  // queued, so no reductions and host round trips precede the work. Finite
  // input can still overflow in the fold (w eta J): check_fold_host /
  // check_fold_flag catch that on every path with the same error.
  void check_resident(const complex_type* a, const complex_type* b, index_t n_rhs,
                      const char* what) const {
    const std::string where = std::string("fe_iiee::radiation_operator::") + what;
    emgpu::detail::require(n_rhs >= 1 && a != nullptr && b != nullptr,
                           where + ": need n_rhs >= 1 and non-null inputs");
    if constexpr (!is_device_backend_v<Backend>)
      emgpu::detail::require(all_finite(b_, a, 3 * n_s_ * n_rhs) && all_finite(b_, b, 3 * n_s_ * n_rhs),
                             where + ": non-finite input");
  }
  int* arm_finite_flag() {
    if constexpr (is_device_backend_v<Backend>) {
      ensure(bad_, 1);
      fill(b_, bad_.data(), index_t(1), 0);
      return bad_.data();
    } else {
      return nullptr;
    }
  }
  void finish_resident(index_t n_rhs, scat_layout layout, const char* what) {
    check_fold_host(n_rhs, what);
    run(n_rhs, layout);
    check_fold_flag(what);
  }
  // Host backends: the folded values themselves are scanned (a flag written
  // by several OpenMP threads would be a data race), before the run.
  void check_fold_host(index_t n_rhs, const char* what) const {
    if constexpr (!is_device_backend_v<Backend>)
      emgpu::detail::require(all_finite(b_, folded_.data(), 12 * n_s_ * n_rhs),
                             std::string("fe_iiee::radiation_operator::") + what + ": " + fold_error);
  }
  // Device: the flag raised by the fold (arm_finite_flag); reading it waits
  // for the apply queued after the fold.
  void check_fold_flag(const char* what) const {
    if constexpr (is_device_backend_v<Backend>) {
      int flag = 0;
      copy_to_host(b_, static_cast<const int*>(bad_.data()), 1, &flag);
      emgpu::detail::require(flag == 0, std::string("fe_iiee::radiation_operator::") + what + ": " + fold_error);
    }
  }
  static constexpr const char* fold_error = "non-finite input (or an overflow folding it)";

  template <class T>
  void ensure(buffer<T>& v, index_t n) {
    if (index_t(v.size()) < n) v = make_vector<T>(b_, n);
  }

  // Checks host currents (Fields = false) or fields, folds them and runs.
  template <bool Fields>
  void run_host_input(std::span<const complex_type> a, std::span<const complex_type> c, scat_layout layout,
                      const char* what) {
    run(fold_checked<Fields>(a, c, what), layout);
    check_fold_flag(what);
  }

  // Host input: host backends fold straight from the caller's memory; the
  // device backend first copies into its kept staging buffers.
  template <bool Fields>
  void fold_host_input(const complex_type* a, const complex_type* c, index_t n_rhs, int* bad) {
    const index_t n = 3 * n_s_ * n_rhs;
    ensure(folded_, n_s_ * n_rhs * 12);
    const complex_type* pa = a;
    const complex_type* pc = c;
    if constexpr (is_device_backend_v<Backend>) {
      ensure(stage_a_, n);
      ensure(stage_b_, n);
      copy_from_host(b_, a, n, stage_a_.data());
      copy_from_host(b_, c, n, stage_b_.data());
      pa = stage_a_.data();
      pc = stage_b_.data();
    }
    if constexpr (Fields)
      for_each_index(b_, n_s_ * n_rhs,
                     detail::fold_fields_fn<Real>{pa, pc, normals_.data(), src_.data(), folded_.data(),
                                                  n_s_, n_rhs, eta_, bad});
    else
      for_each_index(b_, n_s_ * n_rhs,
                     detail::fold_currents_fn<Real>{pa, pc, src_.data(), folded_.data(), n_s_, n_rhs, eta_,
                                                    bad});
  }

  static constexpr detail::loop_kind fixed_kind() {
    if constexpr (std::is_same_v<Strategy, strategy::over_sources>) return detail::loop_kind::over_sources;
    else if constexpr (std::is_same_v<Strategy, strategy::over_rhs>) return detail::loop_kind::over_rhs;
    else return detail::loop_kind::over_observers;
  }

  static const char* kind_name(detail::loop_kind k) {
    switch (k) {
      case detail::loop_kind::over_sources: return "over_sources";
      case detail::loop_kind::over_rhs: return "over_rhs";
      default: return "over_observers";
    }
  }

  int host_threads() const {
    if constexpr (std::is_same_v<Backend, backend::openmp>) return b_.threads();
    else return 1;
  }

  // Host choice: enough observer x RHS tiles to keep every thread busy wins
  // (no reduction, small buffers); else many RHS; else split the sources if
  // the per-thread partials stay small.
  detail::loop_kind host_kind(index_t n_rhs) const {
    if constexpr (!std::is_same_v<Strategy, strategy::automatic>) return fixed_kind();
    const index_t nt = host_threads();
    const index_t n_ot = (n_obs_ + detail::host_obs_tile - 1) / detail::host_obs_tile;
    const index_t rt = std::min<index_t>(n_rhs, detail::host_rhs_tile);
    const index_t units = n_ot * ((n_rhs + rt - 1) / rt);
    if (nt <= 1 || units >= 4 * nt) return detail::loop_kind::over_observers;
    if (n_rhs >= 4 * nt) return detail::loop_kind::over_rhs;
    if (double(nt) * double(n_obs_) * double(n_rhs) * 12.0 * sizeof(Real) <= 256.0 * (1 << 20))
      return detail::loop_kind::over_sources;
    return detail::loop_kind::over_observers;
  }

  // folded: currents folded by an operator with the same sources (nullptr:
  // this operator's own).
  void run(index_t n_rhs, scat_layout layout, const Real* folded = nullptr) {
    if (folded == nullptr) folded = folded_.data();
    ensure(scat_, 6 * n_obs_ * n_rhs);
    index_t n_part = 1;
    if constexpr (is_device_backend_v<Backend>) {
#if defined(__CUDACC__)
      const auto plan = detail::make_cuda_plan(fixed_kind(), std::is_same_v<Strategy, strategy::automatic>,
                                               n_s_, n_obs_, n_rhs, sm_count_, sizeof(Real),
                                               std::size_t(512) << 20, kernel_, dmma_, cc_major_);
      n_part = plan.slices;
      ensure(acc_, n_part * n_obs_ * n_rhs * 12);
      detail::cuda_run(b_, plan, src_.data(), n_s_, folded, n_rhs, obs_.data(), n_obs_, k_,
                       acc_.data());
      last_strategy_ = (plan.tensor_tiles > 0
                            ? std::string("cuda tensor-cores ") + detail::tc_shape_name(plan.shape) +
                                  " rhs/warp-chunk="
                            : std::string("cuda rhs/thread=")) +
                       std::to_string(plan.rhs_per_thread) +
                       " rhs-chunks-in-grid=" + std::to_string(plan.grid_y) +
                       " source-slices=" + std::to_string(plan.slices);
#endif
    } else {
      const auto kind = host_kind(n_rhs);
      const int nt = host_threads();
      ensure(acc_, (kind == detail::loop_kind::over_sources ? nt : 1) * n_obs_ * n_rhs * 12);
      n_part = wide_phase_ ? detail::host_run<true>(kind, nt, src_.data(), n_s_, folded, n_rhs, obs_.data(),
                                                    n_obs_, k_, acc_.data())
                           : detail::host_run<false>(kind, nt, src_.data(), n_s_, folded, n_rhs, obs_.data(),
                                                     n_obs_, k_, acc_.data());
      last_strategy_ = kind_name(kind);
    }
    for_each_index(b_, n_obs_ * n_rhs,
                   detail::finish_fn<Real>{acc_.data(), scat_.data(), n_obs_, n_rhs, n_part, k_, layout});
    last_rhs_ = n_rhs;
  }

  std::vector<complex_type> download() const {
    std::vector<complex_type> out(static_cast<std::size_t>(6 * n_obs_ * last_rhs_));
    copy_to_host(b_, scat_.data(), index_t(out.size()), out.data());
    return out;
  }

  Backend b_;
  Real k_, eta_;
  index_t n_s_ = 0, n_obs_ = 0, last_rhs_ = 0;
  Real min_sep_ = 0;
  bool wide_phase_ = true;  // some k R may reach radiation_kernel::reduce_exact_limit
  device_kernel kernel_ = device_kernel::automatic;
  dmma_shape dmma_ = dmma_shape::automatic;
  int sm_count_ = 1, cc_major_ = 9;
  buffer<point4<Real>> src_, obs_;
  buffer<Real> normals_, folded_, acc_;
  buffer<complex_type> stage_a_, stage_b_, scat_;
  buffer<int> bad_;
  std::string last_strategy_;
};

}  // namespace emgpu::fe_iiee
