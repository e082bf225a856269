/// @file
/// @brief emgpu::fe_iiee::multi_gpu_operator: the radiation operator with the
///        observers partitioned across several GPUs (nvcc only).
///
/// Each partition is a contiguous range of observers on one device, driven by
/// its own host thread on its own streams. A partition is cut into chunks
/// (one radiation_operator<backend::cuda> each, sharing the first chunk's
/// uploaded currents): all chunks are queued on the compute stream at once,
/// and the download of chunk c (on a second stream, straight into the
/// caller's host buffer) runs while chunk c + 1 computes, so only the last
/// chunk's copy is not hidden. The sources (geometry and currents) are
/// replicated on every device: they are the small side (S' lies inside S).
/// "Virtual partitions" (several per device) exercise the partitioning on a
/// single GPU.
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

/// @brief Which GPUs, how many partitions per GPU, how many chunks per partition.
struct multi_gpu_options {
  /// Device ordinals; empty = every visible device. Repeats are allowed
  /// ({0, 0} = two partitions on device 0).
  std::vector<int> devices = {};
  /// Partitions per listed device (> 1 = virtual partitions, for testing).
  int partitions_per_device = 1;
  /// Chunks per partition (download of one overlaps the next one's work);
  /// 0 = automatic: one per 8192 observers, at most 8.
  int chunks_per_partition = 0;
};

/// @brief Radiation operator over several GPUs, observers partitioned.
/// @tparam Real     double (default) or float.
/// @tparam Strategy loop strategy of each chunk's operator.
/// Same currents/scat_vec layouts as radiation_operator.
template <class Real = double, class Strategy = strategy::automatic>
class multi_gpu_operator {
 public:
  using complex_type = complex<Real>;
  using partition_type = radiation_operator<backend::cuda, Real, Strategy>;

  /// @throws emgpu::invalid_argument as radiation_operator, on a bad device
  ///         list, partitions_per_device < 1 or chunks_per_partition < 0, or
  ///         when no GPU is visible.
  /// @throws emgpu::device_error on a failed stream/event creation or allocation.
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
    emgpu::detail::require(opt.chunks_per_partition >= 0,
                           "fe_iiee::multi_gpu_operator: chunks_per_partition must be >= 0");
    emgpu::detail::require(!observers.empty() && observers.size() % 3 == 0,
                           "fe_iiee::multi_gpu_operator: observer points must be 3 n_obs > 0 values");
    n_obs_ = index_t(observers.size() / 3);
    index_t parts = index_t(opt.devices.size()) * opt.partitions_per_device;
    parts = std::min(parts, n_obs_);
    for (index_t p = 0; p < parts; ++p) {
      // Partitions of one device are adjacent, so its observers are contiguous.
      const int dev = opt.devices[std::size_t(p * index_t(opt.devices.size()) / parts)];
      const index_t o0 = n_obs_ * p / parts, o1 = n_obs_ * (p + 1) / parts;
      auto part = std::make_unique<partition>(dev);
      index_t nc = opt.chunks_per_partition > 0 ? opt.chunks_per_partition
                                                : std::clamp<index_t>((o1 - o0) / 8192, 1, 8);
      nc = std::min(nc, o1 - o0);
      const backend::cuda tag{part->compute.s, dev};
      for (index_t c = 0; c < nc; ++c) {
        const index_t c0 = o0 + (o1 - o0) * c / nc, c1 = o0 + (o1 - o0) * (c + 1) / nc;
        part->begin.push_back(c0);
        part->chunks.push_back(std::make_unique<partition_type>(
            tag, sources, observers.subspan(std::size_t(3 * c0), std::size_t(3 * (c1 - c0))), m, ro));
        part->done.push_back(std::make_unique<event_holder>(dev));
      }
      part->begin.push_back(o1);
      parts_.push_back(std::move(part));
    }
  }

  index_t num_partitions() const noexcept { return index_t(parts_.size()); }
  index_t num_observers() const noexcept { return n_obs_; }
  /// First observer of partition p (p = num_partitions() gives n_obs).
  index_t partition_begin(index_t p) const {
    return p < num_partitions() ? parts_[std::size_t(p)]->begin.front() : n_obs_;
  }
  /// Device ordinal of partition p.
  int partition_device(index_t p) const { return parts_[std::size_t(p)]->compute.dev; }
  index_t num_chunks(index_t p) const { return index_t(parts_[std::size_t(p)]->chunks.size()); }
  /// The operator of chunk c of partition p (e.g. to inspect last_strategy()).
  const partition_type& chunk(index_t p, index_t c) const {
    return *parts_[std::size_t(p)]->chunks[std::size_t(c)];
  }

  /// @brief As radiation_operator::apply, all partitions concurrently.
  /// @throws the first exception any partition raised.
  std::vector<complex_type> apply(std::span<const complex_type> J, std::span<const complex_type> M,
                                  scat_layout layout = scat_layout::by_rhs) {
    std::vector<complex_type> out(std::size_t(6 * n_obs_ * rhs_of(J.size())));
    run<false>(J, M, out, layout);
    return out;
  }
  /// @brief As apply(), into a caller's buffer of 6 n_obs n_rhs values: an
  ///        FE-IIEE loop that keeps its buffer pays no allocation per call.
  /// @throws emgpu::invalid_argument when out has the wrong size; else as apply().
  void apply_into(std::span<const complex_type> J, std::span<const complex_type> M,
                  std::span<complex_type> out, scat_layout layout = scat_layout::by_rhs) {
    run<false>(J, M, out, layout);
  }
  /// @brief As radiation_operator::apply_fields, all partitions concurrently.
  std::vector<complex_type> apply_fields(std::span<const complex_type> E,
                                         std::span<const complex_type> H,
                                         scat_layout layout = scat_layout::by_rhs) {
    std::vector<complex_type> out(std::size_t(6 * n_obs_ * rhs_of(E.size())));
    run<true>(E, H, out, layout);
    return out;
  }
  /// @brief As apply_fields(), into a caller's buffer (see apply_into).
  void apply_fields_into(std::span<const complex_type> E, std::span<const complex_type> H,
                         std::span<complex_type> out, scat_layout layout = scat_layout::by_rhs) {
    run<true>(E, H, out, layout);
  }

  /// @brief Flops of one apply with n_rhs RHS (source papers' convention).
  double flops(index_t n_rhs) const noexcept {
    double f = 0;
    for (const auto& p : parts_)
      for (const auto& c : p->chunks) f += c->flops(n_rhs);
    return f;
  }

 private:
  using stream_holder = emgpu::detail::stream_holder;
  struct event_holder {
    cudaEvent_t e = nullptr;
    int dev = 0;
    explicit event_holder(int d) : dev(d) {
      emgpu::detail::device_guard g(d);
      EMGPU_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    }
    ~event_holder() {
      int prev = 0;
      if (cudaGetDevice(&prev) == cudaSuccess && cudaSetDevice(dev) == cudaSuccess) {
        (void)cudaEventDestroy(e);
        (void)cudaSetDevice(prev);
      }
    }
    event_holder(const event_holder&) = delete;
    event_holder& operator=(const event_holder&) = delete;
  };
  // Streams and events are declared first: they outlive the operators.
  struct partition {
    stream_holder compute, copy;
    std::vector<std::unique_ptr<event_holder>> done;
    std::vector<std::unique_ptr<partition_type>> chunks;
    std::vector<index_t> begin;  // first observer of each chunk, then the partition's end
    explicit partition(int dev) : compute(dev), copy(dev) {}
  };

  // Bad sizes are reported by the operators' own checks; 0 RHS then.
  index_t rhs_of(std::size_t input_size) const {
    const index_t n_s = parts_[0]->chunks[0]->num_sources();
    return input_size % std::size_t(3 * n_s) == 0 ? index_t(input_size / std::size_t(3 * n_s)) : 0;
  }

  // Every partition's host thread checks, uploads and folds the input once
  // (first chunk), queues every chunk on its compute stream, then waits for
  // each chunk in turn and copies its piece straight into its place in `out`
  // on the copy stream while the next chunks compute. A pageable `out` makes
  // each copy return when done (the driver stages it), which is what the
  // thread needs before it moves on; no serial gather after the join.
  template <bool Fields>
  void run(std::span<const complex_type> a, std::span<const complex_type> b, std::span<complex_type> out,
           scat_layout layout) {
    const std::size_t np = parts_.size();
    const index_t n_rhs = rhs_of(a.size());
    std::vector<std::exception_ptr> errors(np);
    std::vector<std::thread> threads;
    threads.reserve(np);
    for (std::size_t p = 0; p < np; ++p)
      threads.emplace_back([&, p] {
        try {
          partition& part = *parts_[p];
          partition_type& head = *part.chunks[0];
          const index_t nr = head.template fold_checked<Fields>(a, b, Fields ? "apply_fields" : "apply");
          // Sizes were validated by fold_checked; out is checked once n_rhs is known.
          emgpu::detail::require(out.size() == std::size_t(6 * n_obs_ * nr) && nr == n_rhs,
                                 "fe_iiee::multi_gpu_operator: output buffer must hold 6 n_obs n_rhs values");
          emgpu::detail::device_guard g(part.compute.dev);
          const std::size_t nc = part.chunks.size();
          for (std::size_t c = 0; c < nc; ++c) {
            part.chunks[c]->run(nr, layout, head.folded_data());
            EMGPU_CUDA_CHECK(cudaEventRecord(part.done[c]->e, part.compute.s));
          }
          constexpr std::size_t z = sizeof(complex_type);
          for (std::size_t c = 0; c < nc; ++c) {
            const index_t o0 = part.begin[c], n = part.begin[c + 1] - o0;
            const complex_type* piece = part.chunks[c]->result().data();
            EMGPU_CUDA_CHECK(cudaStreamWaitEvent(part.copy.s, part.done[c]->e, 0));
            if (layout == scat_layout::by_rhs)  // a row of 6 n values per RHS
              EMGPU_CUDA_CHECK(cudaMemcpy2DAsync(out.data() + 6 * o0, z * std::size_t(6 * n_obs_), piece,
                                                 z * std::size_t(6 * n), z * std::size_t(6 * n),
                                                 std::size_t(nr), cudaMemcpyDeviceToHost, part.copy.s));
            else  // one contiguous block
              EMGPU_CUDA_CHECK(cudaMemcpyAsync(out.data() + 6 * nr * o0, piece, z * std::size_t(6 * n * nr),
                                               cudaMemcpyDeviceToHost, part.copy.s));
          }
          EMGPU_CUDA_CHECK(cudaStreamSynchronize(part.copy.s));
          // As radiation_operator::apply: an overflow in the fold (finite
          // input) throws, after the run, leaving `out` unspecified.
          head.check_fold_flag(Fields ? "apply_fields" : "apply");
        } catch (...) {
          errors[p] = std::current_exception();
        }
      });
    for (auto& t : threads) t.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  }

  index_t n_obs_ = 0;
  std::vector<std::unique_ptr<partition>> parts_;
};

}  // namespace emgpu::fe_iiee

#endif  // __CUDACC__
