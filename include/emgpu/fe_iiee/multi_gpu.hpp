/// @file
/// @brief emgpu::fe_iiee::multi_gpu_operator: the radiation operator with the
///        observers partitioned across several GPUs (nvcc only).
///
/// Each partition is a radiation_operator<backend::cuda> over a contiguous
/// range of observers, with its own stream on its device, driven by its own
/// host thread; the scat_vec pieces are gathered into one host vector. The
/// sources (geometry and currents) are replicated on every device: they are the
/// small side (S' lies inside S). "Virtual partitions" (several per device)
/// exercise the partitioning on a single GPU.
#pragma once

#include "../core/config.hpp"

#if defined(__CUDACC__)

#include <algorithm>
#include <exception>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "../backend/cuda.hpp"
#include "../backend/cuda_check.hpp"
#include "radiation_operator.hpp"

namespace emgpu::fe_iiee {

/// @brief Which GPUs, and how many partitions per GPU.
struct multi_gpu_options {
  /// Device ordinals; empty = every visible device. Repeats are allowed
  /// ({0, 0} = two partitions on device 0).
  std::vector<int> devices = {};
  /// Partitions per listed device (> 1 = virtual partitions, for testing).
  int partitions_per_device = 1;
};

/// @brief Radiation operator over several GPUs, observers partitioned.
/// @tparam Real     double (default) or float.
/// @tparam Strategy loop strategy of each partition's operator.
/// Same currents/scat_vec layouts as radiation_operator.
template <class Real = double, class Strategy = strategy::automatic>
class multi_gpu_operator {
 public:
  using complex_type = complex<Real>;
  using partition_type = radiation_operator<backend::cuda, Real, Strategy>;

  /// @throws emgpu::invalid_argument as radiation_operator, on a bad device
  ///         list or partitions_per_device < 1, or when no GPU is visible.
  /// @throws emgpu::device_error on a failed stream creation or allocation.
  multi_gpu_operator(const source_surface<Real>& sources, std::span<const Real> observers,
                     const medium<Real>& m, multi_gpu_options opt = {},
                     const radiation_options<Real>& ro = {}) {
    const int count = backend::cuda_device_count();
    emgpu::detail::require(count > 0, "fe_iiee::multi_gpu_operator: no CUDA device visible");
    if (opt.devices.empty())
      for (int d = 0; d < count; ++d) opt.devices.push_back(d);
    for (int d : opt.devices)
      emgpu::detail::require(d >= 0 && d < count, "fe_iiee::multi_gpu_operator: bad device ordinal");
    emgpu::detail::require(opt.partitions_per_device >= 1,
                           "fe_iiee::multi_gpu_operator: partitions_per_device must be >= 1");
    emgpu::detail::require(!observers.empty() && observers.size() % 3 == 0,
                           "fe_iiee::multi_gpu_operator: observer points must be 3 n_obs > 0 values");
    n_obs_ = index_t(observers.size() / 3);
    index_t parts = index_t(opt.devices.size()) * opt.partitions_per_device;
    parts = std::min(parts, n_obs_);
    for (index_t p = 0; p < parts; ++p) {
      // Partitions of one device are adjacent, so its observers are contiguous.
      const int dev = opt.devices[std::size_t(p * index_t(opt.devices.size()) / parts)];
      const index_t o0 = n_obs_ * p / parts, o1 = n_obs_ * (p + 1) / parts;
      streams_.push_back(std::make_unique<stream_holder>(dev));
      const backend::cuda tag{streams_.back()->s, dev};
      begin_.push_back(o0);
      parts_.push_back(std::make_unique<partition_type>(
          tag, sources, observers.subspan(std::size_t(3 * o0), std::size_t(3 * (o1 - o0))), m, ro));
    }
    begin_.push_back(n_obs_);
  }

  index_t num_partitions() const noexcept { return index_t(parts_.size()); }
  index_t num_observers() const noexcept { return n_obs_; }
  /// The partition operators (e.g. to inspect last_strategy()).
  const partition_type& partition(index_t p) const { return *parts_[std::size_t(p)]; }
  /// First observer of partition p (p = num_partitions() gives n_obs).
  index_t partition_begin(index_t p) const { return begin_[std::size_t(p)]; }

  /// @brief As radiation_operator::apply, all partitions concurrently.
  /// @throws the first exception any partition raised.
  std::vector<complex_type> apply(std::span<const complex_type> J, std::span<const complex_type> M,
                                  scat_layout layout = scat_layout::by_rhs) {
    return run(J.size(), layout,
               [&](partition_type& op) -> const auto& { return op.apply_keep(J, M, layout); });
  }
  /// @brief As radiation_operator::apply_fields, all partitions concurrently.
  std::vector<complex_type> apply_fields(std::span<const complex_type> E,
                                         std::span<const complex_type> H,
                                         scat_layout layout = scat_layout::by_rhs) {
    return run(E.size(), layout,
               [&](partition_type& op) -> const auto& { return op.apply_fields_keep(E, H, layout); });
  }

  /// @brief Flops of one apply with n_rhs RHS (source papers' convention).
  double flops(index_t n_rhs) const noexcept {
    double f = 0;
    for (const auto& p : parts_) f += p->flops(n_rhs);
    return f;
  }

 private:
  struct stream_holder {
    cudaStream_t s = nullptr;
    int dev = 0;
    explicit stream_holder(int d) : dev(d) {
      emgpu::detail::device_guard g(d);
      EMGPU_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    }
    ~stream_holder() {
      int prev = 0;
      if (cudaGetDevice(&prev) == cudaSuccess && cudaSetDevice(dev) == cudaSuccess) {
        (void)cudaStreamDestroy(s);
        (void)cudaSetDevice(prev);
      }
    }
    stream_holder(const stream_holder&) = delete;
    stream_holder& operator=(const stream_holder&) = delete;
  };

  // Every partition's host thread runs its apply, keeping its piece of the
  // scat_vec on its device, and copies it straight into its place in the
  // gathered host vector (one 2D copy per partition): no per-partition host
  // vector and no serial gather after the join.
  template <class F>
  std::vector<complex_type> run(std::size_t input_size, scat_layout layout, F&& f) {
    const std::size_t np = parts_.size();
    const index_t n_s = parts_[0]->num_sources();
    // Bad sizes are reported by the partitions' own checks; 0 RHS then.
    const index_t n_rhs =
        input_size % std::size_t(3 * n_s) == 0 ? index_t(input_size / std::size_t(3 * n_s)) : 0;
    std::vector<complex_type> out(std::size_t(6 * n_obs_ * n_rhs));
    std::vector<std::exception_ptr> errors(np);
    std::vector<std::thread> threads;
    threads.reserve(np);
    for (std::size_t p = 0; p < np; ++p)
      threads.emplace_back([&, p] {
        try {
          partition_type& op = *parts_[p];
          const auto& piece = f(op);
          const index_t o0 = begin_[p], n = begin_[p + 1] - o0;
          emgpu::detail::require(op.last_num_rhs() == n_rhs && index_t(piece.size()) >= 6 * n * n_rhs,
                                 "fe_iiee::multi_gpu_operator: partition result of unexpected size");
          const backend::cuda& b = op.backend();
          emgpu::detail::device_guard g(b.device);
          constexpr std::size_t z = sizeof(complex_type);
          if (layout == scat_layout::by_rhs)  // a row of 6 n values per RHS
            EMGPU_CUDA_CHECK(cudaMemcpy2DAsync(out.data() + 6 * o0, z * std::size_t(6 * n_obs_), piece.data(),
                                               z * std::size_t(6 * n), z * std::size_t(6 * n),
                                               std::size_t(n_rhs), cudaMemcpyDeviceToHost, b.stream));
          else  // one contiguous block
            EMGPU_CUDA_CHECK(cudaMemcpyAsync(out.data() + 6 * n_rhs * o0, piece.data(),
                                             z * std::size_t(6 * n * n_rhs), cudaMemcpyDeviceToHost,
                                             b.stream));
          EMGPU_CUDA_CHECK(cudaStreamSynchronize(b.stream));
        } catch (...) {
          errors[p] = std::current_exception();
        }
      });
    for (auto& t : threads) t.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
    return out;
  }

  index_t n_obs_ = 0;
  std::vector<std::unique_ptr<stream_holder>> streams_;  // outlive the operators below
  std::vector<std::unique_ptr<partition_type>> parts_;
  std::vector<index_t> begin_;
};

}  // namespace emgpu::fe_iiee

#endif  // __CUDACC__
