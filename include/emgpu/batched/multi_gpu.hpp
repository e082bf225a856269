/// @file
/// @brief emgpu::batched::multi_gpu: the batched LU, QR and SVD on batches
///        held in host memory, streamed in chunks through one or several GPUs.
///
/// Why: the largest batches do not fit one GPU (10^6 complex<double>
/// 128 x 128 matrices are 262 GB), and once a batch lives in host memory the
/// PCIe link, not the kernels, sets the pace: the H100 factors 100 000
/// complex<double> 32 x 32 matrices in 1.5 ms (docs/batched.md), while their
/// 1.6 GB take about 30 ms each way over a PCIe 5 x16 link. Each GPU has its
/// own link, so N GPUs move N times the data (as far as the host's memory
/// keeps up: docs/batched.md).
///
/// How: each partition (a device, one host thread, three streams) takes
/// chunks of consecutive matrices from a shared counter, so a faster GPU or
/// cheaper matrices (the SVD's iteration count varies) take more chunks. On
/// a partition, chunk i + 1 is copied in and chunk i - 1 copied out while
/// chunk i computes, each on its own stream. Each chunk runs the
/// single-GPU routine of the backend::cuda tag on device copies of its
/// matrices, so results equal those of one backend::cuda call on the same
/// matrices. Pinned host memory (cudaMallocHost, or host_pin below) is
/// copied straight at the link's rate; pageable memory through page-locked
/// staging buffers that several host threads fill and empty, at about a
/// quarter of it (docs/batched.md, "Batches in host memory").
///
/// ```
/// emgpu::batched::multi_gpu gpus;                    // every visible GPU
/// emgpu::batched::lu_factor(gpus, a, ipiv, info);    // a, ipiv, info in host memory
/// emgpu::batched::lu_solve(gpus, a, ipiv, rhs);
/// ```
/// Routines: lu_factor, lu_solve, inverse, qr_factor, apply_qh, apply_q,
/// form_q, least_squares, svd, each on strided batches and on pointer
/// arrays (as their backend forms; gathered into chunks on the host).
///
/// The chunk planner (multi_gpu_chunk) is plain C++; the class and the
/// routines exist only in translation units compiled by nvcc.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"

namespace emgpu::batched {

/// @brief Options of multi_gpu.
struct multi_gpu_options {
  /// Device ordinals; empty = every visible device. Repeats are allowed
  /// ({0, 0}: two partitions on device 0).
  std::vector<int> devices = {};
  /// Partitions per listed device (> 1: several host threads feed one GPU;
  /// the tests use it to exercise the partitioning on one GPU).
  int partitions_per_device = 1;
  /// Matrices per chunk; 0 = automatic (multi_gpu_chunk).
  index_t chunk = 0;
  /// Called on the calling thread as chunks complete: (matrices done, total);
  /// last with done == total. Empty: no progress report.
  std::function<void(index_t, index_t)> progress = {};
};

/// @brief Matrices per chunk for a batch of `count` matrices of `per_matrix`
///        bytes (all arrays of one matrix) over `partitions` partitions.
/// requested > 0 is taken as is (at most count). Automatic: a sixteenth of a
/// partition's share, between 16 and 256 MiB of arrays, then at least
/// min_chunk matrices (what the routine needs to fill a GPU; the SVD's
/// one-thread-per-matrix iteration needs many) and at most max_chunk (> 0:
/// what device memory allows), rounded to a whole number of equal chunks
/// per partition. Why a sixteenth: the first chunk's copy in
/// and the last one's copy out are not overlapped with anything, and with
/// four chunks a partition (2 x H200, pinned memory, 100 000 x 32 x 32
/// complex<double> LU) the link ran at 74 % of its rate; per chunk the
/// pipeline costs a stream synchronisation and the launches.
/// @throws invalid_argument for count < 0 or partitions < 1.
inline index_t multi_gpu_chunk(index_t count, std::size_t per_matrix, index_t partitions, index_t requested = 0,
                               index_t min_chunk = 0, index_t max_chunk = 0) {
  emgpu::detail::require(count >= 0 && partitions >= 1, "emgpu::batched::multi_gpu_chunk: bad count or partitions");
  if (count == 0) return 0;
  if (requested > 0) return std::min(requested, count);
  constexpr std::size_t lo = std::size_t(16) << 20, hi = std::size_t(256) << 20;
  const std::size_t per = std::max<std::size_t>(per_matrix, 1);
  const std::size_t total = per * std::size_t(count);
  const std::size_t target = std::clamp(total / (16 * std::size_t(partitions)), lo, hi);
  index_t c = index_t(std::max<std::size_t>(target / per, 1));
  c = std::max(c, min_chunk);
  if (max_chunk > 0) c = std::min(c, max_chunk);
  c = std::max<index_t>(c, 1);
  // Even chunks, the same number per partition (rounded): with few chunks a
  // short last one would leave a GPU idle while another finishes.
  const index_t share = (count + partitions - 1) / partitions;
  index_t k = std::max<index_t>((share + c / 2) / c, 1);
  index_t chunk = (share + k - 1) / k;
  if (max_chunk > 0 && chunk > max_chunk) {
    k = (share + max_chunk - 1) / max_chunk;
    chunk = (share + k - 1) / k;
  }
  return std::clamp<index_t>(chunk, 1, count);
}

}  // namespace emgpu::batched

#if defined(__CUDACC__)

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

#include "../backend/cuda.hpp"
#include "../backend/cuda_check.hpp"
#include "../core/matrix_view.hpp"
#include "lu.hpp"
#include "qr.hpp"
#include "svd.hpp"
#include "workspace.hpp"

namespace emgpu::batched {

/// @brief One or several GPUs that the batched routines stream host-memory
///        batches through (see the file comment).
///
/// Keeps its streams and device buffers (three chunks per partition, grown
/// as needed) between calls; release() frees the buffers. Calls on one object
/// run one at a time (a mutex); use one object per concurrent caller. Not
/// copyable or movable (a call's threads refer to it).
class multi_gpu {
 public:
  /// One array of a batch as the engine moves it: matrix k's bytes start at
  /// host + k * stride and span extent bytes, and so do those of its device
  /// copy (k counted from the chunk's first matrix). in: copied to the
  /// device before the chunk runs; out: copied back after. With ptrs set (a
  /// pointer array, itself in host memory), matrix k's extent bytes are at
  /// ptrs[k] instead and host is unused; the device copy keeps stride.
  struct array {
    void* host = nullptr;
    std::size_t stride = 0, extent = 0;
    bool in = false, out = false;
    const void* const* ptrs = nullptr;
  };

  /// @throws invalid_argument when no GPU is visible, on a bad device
  ///         ordinal, partitions_per_device < 1 or chunk < 0.
  /// @throws device_error when a stream cannot be created.
  explicit multi_gpu(multi_gpu_options opt = {}) : opt_(std::move(opt)) {
    const int n = backend::cuda_device_count();
    emgpu::detail::require(n > 0, "emgpu::batched::multi_gpu: no CUDA device visible");
    if (opt_.devices.empty())
      for (int d = 0; d < n; ++d) opt_.devices.push_back(d);
    for (int d : opt_.devices)
      emgpu::detail::require(d >= 0 && d < n, "emgpu::batched::multi_gpu: bad device ordinal " + std::to_string(d));
    emgpu::detail::require(opt_.partitions_per_device >= 1,
                           "emgpu::batched::multi_gpu: partitions_per_device must be >= 1");
    emgpu::detail::require(opt_.chunk >= 0, "emgpu::batched::multi_gpu: chunk must be >= 0");
    for (int d : opt_.devices)
      for (int p = 0; p < opt_.partitions_per_device; ++p) parts_.push_back(std::make_unique<partition>(d));
  }
  multi_gpu(const multi_gpu&) = delete;
  multi_gpu& operator=(const multi_gpu&) = delete;

  index_t num_partitions() const noexcept { return index_t(parts_.size()); }
  /// Device ordinal of partition p.
  int partition_device(index_t p) const { return parts_.at(std::size_t(p))->dev; }
  /// Matrices per chunk in the last call (0 before the first).
  index_t last_chunk() const noexcept { return last_chunk_; }
  /// Chunks partition p ran in the last call.
  index_t last_chunks(index_t p) const { return parts_.at(std::size_t(p))->chunks; }
  /// Frees the device buffers and workspaces (the next call allocates again).
  void release() {
    std::lock_guard<std::mutex> lk(call_);
    for (auto& p : parts_)
      for (auto& s : p->slots) {
        s.buf = emgpu::device_vector<std::byte>();
        s.stage.free();
        s.work.release();
      }
  }

  /// @brief Streams `count` matrices through the partitions: for each chunk
  ///        [k0, k0 + cc), op(tag, k0, cc, dev, work) with dev[i] the device
  ///        copy of arrays[i]'s chunk (same strides) and work a workspace of
  ///        the chunk's stream.
  /// @tparam Op callable as op(const backend::cuda&, index_t k0, index_t cc,
  ///            std::byte* const* dev, workspace*), from several host
  ///            threads at once (one per partition).
  /// @param what the routine's name, for error messages.
  /// @param min_chunk fewest matrices per chunk that fill a GPU (0: none).
  /// @throws invalid_argument when an array (or a pointer array's entry) is
  ///         in device memory, an entry is null, or more than max_arrays
  ///         arrays.
  /// @throws the first exception a partition raised (the others stop after
  ///         their current chunk); device_error for a failed CUDA call.
  template <class Op>
  void run(index_t count, std::span<const array> arrays, Op&& op, const char* what, index_t min_chunk = 0) const {
    std::lock_guard<std::mutex> lk(call_);
    if (count <= 0) return;
    emgpu::detail::require(arrays.size() <= max_arrays, "emgpu::batched::multi_gpu::run: too many arrays");
    std::size_t per = 0;
    // Page-locked arrays are copied straight to and from the device;
    // pageable ones through a page-locked staging buffer per slot, filled
    // and emptied by several host threads (the driver's own staging of a
    // pageable copy moved 8-18 GB/s, a tenth of the link: docs/batched.md).
    bool pinned[max_arrays] = {};
    bool staged = false;
    const unsigned cores = std::max(std::thread::hardware_concurrency(), 1u);
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      const array& a = arrays[i];
      per += std::max(a.stride, a.extent);
      if (a.extent == 0) continue;
      if (a.ptrs != nullptr) {  // gathered and scattered through the staging buffers
        check_pointers(a.ptrs, count, what, cores);
        staged = true;
      } else {
        pinned[i] = check_host(a.host, what);
        staged = staged || !pinned[i];
      }
    }
    const unsigned copiers = std::clamp<unsigned>(cores / unsigned(parts_.size()), 1, 8);
    // The buffers of every partition on a device within half its free
    // memory: the routines' own workspace (the SVD's) takes from the rest.
    index_t max_chunk = 0;
    for (const auto& p : parts_) {
      emgpu::detail::device_guard g(p->dev);
      std::size_t free = 0, total = 0;
      EMGPU_CUDA_CHECK(cudaMemGetInfo(&free, &total));
      const std::size_t same = std::size_t(
          std::count_if(parts_.begin(), parts_.end(), [&](const auto& q) { return q->dev == p->dev; }));
      std::size_t held = 0;  // reusable
      for (const slot& sl : p->slots) held += sl.buf.bytes();
      const index_t c = index_t((free / same + held) / (2 * nslots * std::max<std::size_t>(per, 1)));
      max_chunk = max_chunk == 0 ? std::max<index_t>(c, 1) : std::min(max_chunk, std::max<index_t>(c, 1));
    }
    const index_t chunk = multi_gpu_chunk(count, per, num_partitions(), opt_.chunk, min_chunk, max_chunk);
    last_chunk_ = chunk;
    const index_t chunks = (count + chunk - 1) / chunk;
    // Device layout of a slot: each array's chunk, 256-byte aligned.
    std::vector<std::size_t> off(arrays.size() + 1, 0);
    for (std::size_t i = 0; i < arrays.size(); ++i) {
      const std::size_t b = span_bytes(arrays[i], chunk);
      off[i + 1] = off[i] + ((b + 255) & ~std::size_t(255));
    }
    std::atomic<index_t> next{0};
    std::atomic<bool> stop{false};
    std::mutex m;
    std::condition_variable cv;
    index_t done = 0;
    std::size_t finished = 0;
    const std::size_t np = parts_.size();
    std::vector<std::exception_ptr> errors(np);
    std::vector<std::thread> threads;
    threads.reserve(np);
    const auto work = [&](std::size_t p) {
        partition& part = *parts_[p];
        part.chunks = 0;
        try {
          emgpu::detail::device_guard g(part.dev);
          for (slot& s : part.slots) {
            if (std::size_t(s.buf.size()) < off.back()) {
              s.buf = emgpu::device_vector<std::byte>();  // free first: old and new need not fit together
              s.buf = emgpu::device_vector<std::byte>(index_t(off.back()), part.dev);
            }
            if (staged && s.stage.bytes < off.back()) s.stage.resize(off.back());
          }
          using job = job_t;
          int q = 0;
          // The next chunk from the shared counter, on the next slot.
          const auto grab = [&]() -> job {
            if (stop.load(std::memory_order_relaxed)) return {};
            const index_t c = next.fetch_add(1);
            if (c >= chunks) return {};
            const job j{c * chunk, std::min(chunk, count - c * chunk), q};
            q = (q + 1) % nslots;
            return j;
          };
          const auto device_ptrs = [&](const job& j, std::byte** dev) {
            for (std::size_t i = 0; i < arrays.size(); ++i) dev[i] = part.slots[j.s].buf.data() + off[i];
          };
          // Waits for slot s's last chunk (its copy out) before the slot is
          // reused, empties its staged outputs into the caller's arrays,
          // and reports it: the chunk's results are in host memory.
          const auto retire = [&](int si) {
            slot& s = part.slots[si];
            EMGPU_CUDA_CHECK(cudaStreamSynchronize(s.stream.s));
            if (s.pending.cc > 0) {
              const job j = s.pending;
              s.pending = job{};
              for (std::size_t i = 0; i < arrays.size(); ++i) {
                const array& a = arrays[i];
                if (a.out && a.extent > 0 && !pinned[i]) unstage(a, j, s.stage.p + off[i], copiers);
              }
              {
                std::lock_guard<std::mutex> l(m);
                done += j.cc;
              }
              cv.notify_one();
            }
          };
          const auto copy_in = [&](const job& j) {
            retire(j.s);
            slot& s = part.slots[j.s];
            std::byte* dev[max_arrays];
            device_ptrs(j, dev);
            for (std::size_t i = 0; i < arrays.size(); ++i) {
              const array& a = arrays[i];
              if (!a.in || a.extent == 0) continue;
              const std::byte* src = static_cast<const std::byte*>(a.host) + std::size_t(j.k0) * a.stride;
              if (!pinned[i]) {
                stage(a, j, s.stage.p + off[i], copiers);
                src = s.stage.p + off[i];
              }
              EMGPU_CUDA_CHECK(cudaMemcpyAsync(dev[i], src, span_bytes(a, j.cc), cudaMemcpyHostToDevice, s.stream.s));
            }
          };
          const auto copy_out = [&](const job& j) {
            if (j.s < 0) return;
            slot& s = part.slots[j.s];
            for (std::size_t i = 0; i < arrays.size(); ++i) {
              const array& a = arrays[i];
              if (!a.out || a.extent == 0) continue;
              std::byte* dst = pinned[i] ? static_cast<std::byte*>(a.host) + std::size_t(j.k0) * a.stride
                                         : s.stage.p + off[i];
              EMGPU_CUDA_CHECK(cudaMemcpyAsync(dst, s.buf.data() + off[i], span_bytes(a, j.cc),
                                               cudaMemcpyDeviceToHost, s.stream.s));
            }
            s.pending = j;
          };
          // Three slots, chunk i on slot i mod 3: while chunk i's routine
          // runs (and may block this thread: the SVD waits for its rounds),
          // chunk i + 1 is already copied in and chunk i - 1 is copied out
          // (queued before the routine, so that the link out never waits
          // for it; every device copy is asynchronous, the staged ones
          // going through page-locked buffers).
          job prev, cur = grab();
          if (cur.s >= 0) copy_in(cur);
          while (cur.s >= 0) {
            const job nxt = grab();
            if (nxt.s >= 0) copy_in(nxt);
            copy_out(prev);
            std::byte* dev[max_arrays];
            device_ptrs(cur, dev);
            op(backend::cuda{part.slots[cur.s].stream.s, part.dev}, cur.k0, cur.cc,
               static_cast<std::byte* const*>(dev), &part.slots[cur.s].work);
            ++part.chunks;
            prev = cur;
            cur = nxt;
          }
          copy_out(prev);
          for (int si = 0; si < nslots; ++si) retire(si);
        } catch (...) {
          errors[p] = std::current_exception();
          stop.store(true);
          // Leave nothing queued on this partition's buffers.
          for (slot& s : part.slots) (void)cudaStreamSynchronize(s.stream.s);
          for (slot& s : part.slots) s.pending = job_t{};
          (void)cudaGetLastError();
        }
        {
          std::lock_guard<std::mutex> l(m);
          ++finished;
        }
        cv.notify_one();
    };
    try {
      for (std::size_t p = 0; p < np; ++p) threads.emplace_back(work, p);
    } catch (...) {  // no thread for a partition: stop the others first
      stop.store(true);
      for (auto& t : threads) t.join();
      throw;
    }
    // The calling thread reports progress, so that the callback need not be
    // thread-safe.
    {
      std::unique_lock<std::mutex> l(m);
      index_t shown = 0;
      while (true) {
        cv.wait(l, [&] { return finished == np || done != shown; });
        if (done == shown) break;  // every partition finished, all reported
        shown = done;
        if (opt_.progress) {
          // Chunks that land while the callback runs are reported by the
          // next round: the last report is done == total.
          l.unlock();
          try {
            opt_.progress(shown, count);
          } catch (...) {
            // A throwing callback must not leave the threads unjoined.
            l.lock();
            stop.store(true);
            cv.wait(l, [&] { return finished == np; });
            l.unlock();
            for (auto& t : threads) t.join();
            throw;
          }
          l.lock();
        }
      }
    }
    for (auto& t : threads) t.join();
    for (auto& e : errors)
      if (e) std::rethrow_exception(e);
  }

  /// Most arrays one call may move.
  static constexpr std::size_t max_arrays = 8;
  /// Chunks in flight per partition (one in, one computing, one out).
  static constexpr int nslots = 3;

 private:
  using stream_holder = emgpu::detail::stream_holder;
  /// A chunk of one call: matrices [k0, k0 + cc) on slot s (-1: none).
  struct job_t {
    index_t k0 = 0, cc = 0;
    int s = -1;
  };
  /// Page-locked host memory (cudaMallocHost), grown on demand.
  struct host_buffer {
    std::byte* p = nullptr;
    std::size_t bytes = 0;
    host_buffer() = default;
    host_buffer(const host_buffer&) = delete;
    host_buffer& operator=(const host_buffer&) = delete;
    ~host_buffer() { free(); }
    void free() noexcept {
      if (p) (void)cudaFreeHost(p);
      p = nullptr;
      bytes = 0;
    }
    void resize(std::size_t b) {
      free();
      EMGPU_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p), b));
      bytes = b;
    }
  };
  struct slot {
    stream_holder stream;
    emgpu::device_vector<std::byte> buf;
    host_buffer stage;  // pageable arrays pass through it
    workspace work;
    job_t pending;  // copied out on this stream, not yet reported
    explicit slot(int d) : stream(d) {}
  };

  /// f(lo, hi) over [0, n) cut into up to t pieces, one host thread each
  /// (this one takes the first). @throws the first exception a piece threw,
  /// once every piece is done.
  template <class F>
  static void parallel_ranges(std::size_t n, unsigned t, F&& f) {
    if (t <= 1 || n <= 1) {
      if (n > 0) f(std::size_t(0), n);
      return;
    }
    const std::size_t piece = (n + t - 1) / t;
    std::vector<std::exception_ptr> err((n + piece - 1) / piece);
    std::vector<std::thread> th;
    th.reserve(err.size());
    for (std::size_t lo = piece, q = 1; lo < n; lo += piece, ++q) {
      const std::size_t hi = std::min(n, lo + piece);
      const auto run_piece = [&f, &err, lo, hi, q] {
        try {
          f(lo, hi);
        } catch (...) {
          err[q] = std::current_exception();
        }
      };
      try {
        th.emplace_back(run_piece);
      } catch (...) {  // no thread: this one runs the piece
        run_piece();
      }
    }
    try {
      f(std::size_t(0), std::min(n, piece));
    } catch (...) {
      err[0] = std::current_exception();
    }
    for (auto& x : th) x.join();
    for (auto& e : err)
      if (e) std::rethrow_exception(e);
  }
  /// memcpy by up to t threads: one host thread copies pageable memory at
  /// a fraction of a PCIe 5 link's rate.
  static void parallel_copy(std::byte* dst, const std::byte* src, std::size_t bytes, unsigned t) {
    constexpr std::size_t page = 4096;
    parallel_ranges((bytes + page - 1) / page, copy_threads(1, bytes, t), [&](std::size_t lo, std::size_t hi) {
      const std::size_t a = lo * page, b = std::min(hi * page, bytes);
      std::memcpy(dst + a, src + a, b - a);
    });
  }
  /// Threads worth using (at most t, at least 4 MiB each) to copy cc
  /// pieces of `each` bytes.
  static unsigned copy_threads(index_t cc, std::size_t each, unsigned t) {
    constexpr std::size_t min_piece = std::size_t(4) << 20;
    return unsigned(std::min<std::size_t>(t, std::size_t(cc) * each / min_piece));
  }
  /// Chunk j of array a into the staging buffer at st (a pointer array's
  /// matrices gathered to their device places).
  static void stage(const array& a, const job_t& j, std::byte* st, unsigned t) {
    if (a.ptrs == nullptr) {
      parallel_copy(st, static_cast<const std::byte*>(a.host) + std::size_t(j.k0) * a.stride, span_bytes(a, j.cc), t);
      return;
    }
    parallel_ranges(std::size_t(j.cc), copy_threads(j.cc, a.extent, t), [&](std::size_t lo, std::size_t hi) {
      for (std::size_t k = lo; k < hi; ++k) std::memcpy(st + k * a.stride, a.ptrs[std::size_t(j.k0) + k], a.extent);
    });
  }
  /// The reverse of stage: chunk j's results from st into the caller's array.
  static void unstage(const array& a, const job_t& j, const std::byte* st, unsigned t) {
    if (a.ptrs == nullptr) {
      parallel_copy(static_cast<std::byte*>(a.host) + std::size_t(j.k0) * a.stride, st, span_bytes(a, j.cc), t);
      return;
    }
    parallel_ranges(std::size_t(j.cc), copy_threads(j.cc, a.extent, t), [&](std::size_t lo, std::size_t hi) {
      for (std::size_t k = lo; k < hi; ++k)
        std::memcpy(const_cast<void*>(a.ptrs[std::size_t(j.k0) + k]), st + k * a.stride, a.extent);
    });
  }
  struct partition {
    int dev;
    slot slots[nslots];
    index_t chunks = 0;
    explicit partition(int d) : dev(d), slots{slot(d), slot(d), slot(d)} {}
  };

  static std::size_t span_bytes(const array& a, index_t cc) {
    return a.extent == 0 || cc <= 0 ? 0 : std::size_t(cc - 1) * a.stride + a.extent;
  }
  /// Device memory here would be copied as if it were host memory: refuse
  /// it. @return whether p is page-locked host memory.
  static bool check_host(const void* p, const char* what) {
    cudaPointerAttributes at{};
    const cudaError_t e = cudaPointerGetAttributes(&at, p);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();  // unregistered host memory on old drivers
      return false;
    }
    emgpu::detail::require(at.type != cudaMemoryTypeDevice,
                           std::string("emgpu::batched::") + what +
                               " (multi_gpu): the batch must be in host memory; for a batch in one GPU's "
                               "memory call the backend::cuda overload");
    return at.type == cudaMemoryTypeHost;
  }

  /// A pointer array and its count entries: in host memory, none null
  /// (checked by t threads: one driver query per entry).
  static void check_pointers(const void* const* ptrs, index_t count, const char* what, unsigned t) {
    (void)check_host(ptrs, what);
    const std::size_t n = std::size_t(count);
    parallel_ranges(n, unsigned(std::min<std::size_t>(t, n / 4096 + 1)), [&](std::size_t lo, std::size_t hi) {
      for (std::size_t k = lo; k < hi; ++k) {
        emgpu::detail::require(ptrs[k] != nullptr, std::string("emgpu::batched::") + what +
                                                       " (multi_gpu): matrix " + std::to_string(k) +
                                                       " of the pointer array is null");
        (void)check_host(ptrs[k], what);
      }
    });
  }

  multi_gpu_options opt_;
  std::vector<std::unique_ptr<partition>> parts_;
  mutable std::mutex call_;
  mutable index_t last_chunk_ = 0;
};

/// @brief Page-locks a host buffer for its lifetime (cudaHostRegister /
///        cudaHostUnregister), so that multi_gpu moves it straight at the
///        PCIe link's rate instead of through its staging buffers.
/// Registering costs time too (1.6 GB: 0.12 s on the machine of
/// docs/batched.md's figures, about one staged call's worth), so it pays
/// for a buffer used in several calls. Not copyable; movable.
/// @throws invalid_argument for a null pointer with bytes > 0; device_error
///         when registration fails (e.g. the range is already registered).
class host_pin {
 public:
  host_pin() = default;
  host_pin(void* p, std::size_t bytes) {
    if (bytes == 0) return;
    emgpu::detail::require(p != nullptr, "emgpu::batched::host_pin: null pointer");
    EMGPU_CUDA_CHECK(cudaHostRegister(p, bytes, cudaHostRegisterDefault));
    p_ = p;
  }
  /// Pins a contiguous range of elements (a std::vector, a span).
  template <class T>
  explicit host_pin(std::span<T> s) : host_pin(const_cast<std::remove_const_t<T>*>(s.data()), s.size_bytes()) {}
  host_pin(host_pin&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  host_pin& operator=(host_pin&& o) noexcept {
    if (this != &o) {
      reset();
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  host_pin(const host_pin&) = delete;
  host_pin& operator=(const host_pin&) = delete;
  ~host_pin() { reset(); }
  /// Unpins now (waits for nothing: the caller must not have copies in flight).
  void reset() noexcept {
    if (p_) (void)cudaHostUnregister(p_);
    p_ = nullptr;
  }
  bool pinned() const noexcept { return p_ != nullptr; }

 private:
  void* p_ = nullptr;
};

namespace detail {

/// The engine's view of a strided batch. An output that does not cover its
/// whole span (ld > rows, or gaps between matrices) is also copied in, so
/// that the bytes between its entries come back unchanged.
template <class T>
inline multi_gpu::array mg_matrices(strided_batch_view<T> v, bool in, bool out) {
  using U = std::remove_const_t<T>;
  const bool empty = v.rows == 0 || v.cols == 0 || v.count == 0;
  const std::size_t extent = empty ? 0 : std::size_t(v.ld * (v.cols - 1) + v.rows) * sizeof(U);
  const bool dense = v.ld == v.rows && (v.count == 1 || v.stride == v.rows * v.cols);
  return {const_cast<U*>(v.data), std::size_t(v.stride) * sizeof(U), extent, in || (out && !dense), out};
}
/// `per` consecutive elements per matrix (pivots, info, singular values).
template <class T>
inline multi_gpu::array mg_vector(T* p, index_t per, bool in, bool out) {
  using U = std::remove_const_t<T>;
  const std::size_t b = std::size_t(per) * sizeof(U);
  return {const_cast<U*>(p), b, b, in, out};
}
template <class T>
inline T* mg_ptr(std::byte* dev) {
  return reinterpret_cast<T*>(dev);
}

/// A matrix operand of the multi_gpu routines: a strided batch, or a pointer
/// array (ptrs set; v is then its shape, detail::array_shape) that the host
/// threads gather into chunks the device sees as strided batches of stride
/// ld * cols. v is what the argument checks take in either case.
template <class T>
struct mg_operand {
  strided_batch_view<T> v;
  T* const* ptrs = nullptr;

  bool wanted() const { return v.data != nullptr; }
  /// The engine's array (for a pointer array, its shape's: the same extent
  /// and gap rule, ld > rows).
  multi_gpu::array engine(bool in, bool out) const {
    if (!wanted()) return {};
    multi_gpu::array a = mg_matrices(v, in, out);
    if (ptrs != nullptr) {
      a.host = nullptr;
      a.stride = std::size_t(v.ld * v.cols) * sizeof(std::remove_const_t<T>);
      a.ptrs = reinterpret_cast<const void* const*>(ptrs);
    }
    return a;
  }
  /// The device copy of a chunk of cc matrices at dev (null data when not
  /// wanted).
  strided_batch_view<T> device(std::byte* dev, index_t cc) const {
    const index_t stride = ptrs == nullptr ? v.stride : v.ld * v.cols;
    return {wanted() ? reinterpret_cast<T*>(dev) : nullptr, v.rows, v.cols, v.ld, wanted() ? stride : 0, cc};
  }
};
template <class T>
inline mg_operand<T> mg_op(strided_batch_view<T> v) {
  return {v, nullptr};
}
template <class T>
inline mg_operand<T> mg_op(T* const* p, index_t rows, index_t cols, index_t ld, index_t count) {
  return {array_shape(p, rows, cols, ld, count), p};
}

template <class T>
void mg_lu_factor(const multi_gpu& g, const mg_operand<T>& a, index_t* ipiv, int* info) {
  if (!lu_factor_args(a.v, ipiv, info)) return;
  const multi_gpu::array arr[] = {a.engine(true, true), mg_vector(ipiv, a.v.rows, false, true),
                                  mg_vector(info, 1, false, true)};
  g.run(
      a.v.count, arr,
      [&](const backend::cuda& b, index_t, index_t cc, std::byte* const* d, workspace*) {
        lu_factor(b, a.device(d[0], cc), mg_ptr<index_t>(d[1]), mg_ptr<int>(d[2]));
      },
      "lu_factor");
}
/// lu_solve, or with inv set the inverse (rhs then receives it: out only).
template <class TL, class T>
void mg_lu_solve(const multi_gpu& g, const mg_operand<TL>& lu, const index_t* ipiv, const mg_operand<T>& rhs,
                 bool inv) {
  const char* what = inv ? "inverse" : "lu_solve";
  if (!(inv ? inverse_args(lu.v, ipiv, rhs.v) : lu_solve_args(lu.v, ipiv, rhs.v))) return;
  const multi_gpu::array arr[] = {lu.engine(true, false), mg_vector(ipiv, lu.v.rows, true, false),
                                  rhs.engine(!inv, true)};
  g.run(
      lu.v.count, arr,
      [&](const backend::cuda& b, index_t, index_t cc, std::byte* const* d, workspace*) {
        if (inv) inverse(b, lu.device(d[0], cc), mg_ptr<const index_t>(d[1]), rhs.device(d[2], cc));
        else lu_solve(b, lu.device(d[0], cc), mg_ptr<const index_t>(d[1]), rhs.device(d[2], cc));
      },
      what);
}
template <class T>
void mg_qr_factor(const multi_gpu& g, const mg_operand<T>& a) {
  check_tall(a.v, "qr_factor");
  if (a.v.count == 0 || a.v.cols == 0) return;
  const multi_gpu::array arr[] = {a.engine(true, true)};
  g.run(
      a.v.count, arr,
      [&](const backend::cuda& b, index_t, index_t cc, std::byte* const* d, workspace*) {
        qr_factor(b, a.device(d[0], cc));
      },
      "qr_factor");
}
/// apply_qh, apply_q, form_q: the factors in, C in and out (form: out only,
/// as form_q overwrites every entry of Q).
template <class TF, class T>
void mg_qr_apply(const multi_gpu& g, const mg_operand<TF>& qr, const mg_operand<T>& c, bool adjoint, bool form,
                 const char* what) {
  if (!qr_apply_args(qr.v, c.v, form, what)) return;
  const multi_gpu::array arr[] = {qr.engine(true, false), c.engine(!form, true)};
  g.run(
      qr.v.count, arr,
      [&](const backend::cuda& b, index_t, index_t cc, std::byte* const* d, workspace*) {
        qr_apply(b, qr.device(d[0], cc), c.device(d[1], cc), adjoint, form, what);
      },
      what);
}
template <class T>
void mg_least_squares(const multi_gpu& g, const mg_operand<T>& a, const mg_operand<T>& rhs, int* info) {
  if (!least_squares_args(a.v, rhs.v, info)) return;
  const multi_gpu::array arr[] = {a.engine(true, true), rhs.engine(true, true), mg_vector(info, 1, false, true)};
  g.run(
      a.v.count, arr,
      [&](const backend::cuda& b, index_t, index_t cc, std::byte* const* d, workspace*) {
        least_squares(b, a.device(d[0], cc), rhs.device(d[1], cc), mg_ptr<int>(d[2]));
      },
      "least_squares");
}

/// Matrices per chunk that the SVD needs to fill a GPU: the QR method's
/// iteration runs one thread per matrix (detail/svd_gk_split.hpp). 2 x
/// H200, 100 000 x 32 x 32 complex<double>, U, S, V from pinned memory:
/// 5 432-matrix chunks (the byte target alone) took 143.8 ms on one GPU,
/// six times the 24.1 ms of the same call on device memory; 33 334 (three
/// chunks) 121.7 ms, where moving the data alone takes 61.8
/// (docs/batched.md).
template <class T>
inline index_t svd_min_chunk(strided_batch_view<T> a, const svd_options& opt) {
  const bool qr_method = opt.method == svd_method::qr ||
                         (opt.method == svd_method::automatic && a.rows > svd_jacobi_max_m_cuda);
  return qr_method && !opt.qr_precondition ? 16384 : 0;
}
/// a is only read here (copied in, not back): the strided svd uses the
/// device copy as workspace.
template <class T>
void mg_svd(const multi_gpu& g, const mg_operand<T>& a, real_type_t<T>* sigma, const mg_operand<T>& u,
            const mg_operand<T>& v, int* info, const svd_options& opt) {
  if (!svd_args(a.v, sigma, u.v, v.v, info, opt)) return;
  const multi_gpu::array arr[] = {a.engine(true, false), mg_vector(sigma, a.v.cols, false, true),
                                  u.engine(false, true), v.engine(false, true), mg_vector(info, 1, false, true)};
  g.run(
      a.v.count, arr,
      [&](const backend::cuda& b, index_t, index_t cc, std::byte* const* d, workspace* work) {
        svd_options o = opt;
        o.work = work;
        o.copies = nullptr;
        svd(b, a.device(d[0], cc), mg_ptr<real_type_t<T>>(d[1]), u.device(d[2], cc), v.device(d[3], cc),
            mg_ptr<int>(d[4]), o);
      },
      "svd", svd_min_chunk(a.v, opt));
}

}  // namespace detail

// The routines: each on a strided batch, then on pointer arrays (matrix k
// at a_array[k], the pointer arrays and every matrix in host memory, pinned
// or not, mixed; gathered into page-locked chunks by the host threads, so
// results equal those of one backend::cuda call on the same matrices).
// Shapes, leading dimensions and throws are those of the backend forms,
// plus multi_gpu::run's: a null or device-memory entry of a pointer array
// throws invalid_argument before anything runs. T: float, double,
// complex<float> or complex<double>; TL, TF: T or const T (only read).

/// @brief lu_factor on a batch in host memory (a, ipiv, info in host memory).
/// @tparam T the scalar type. @throws as lu_factor and multi_gpu::run.
template <batched_scalar T>
void lu_factor(const multi_gpu& g, strided_batch_view<T> a, index_t* ipiv, int* info) {
  detail::mg_lu_factor(g, detail::mg_op(a), ipiv, info);
}
/// @brief Pointer-array lu_factor on a batch in host memory.
/// @tparam T the scalar type. @throws as lu_factor and multi_gpu::run.
template <batched_scalar T>
void lu_factor(const multi_gpu& g, T* const* a_array, index_t n, index_t lda, index_t count, index_t* ipiv,
               int* info) {
  detail::mg_lu_factor(g, detail::mg_op(a_array, n, n, lda, count), ipiv, info);
}

/// @brief lu_solve on a batch in host memory.
/// @tparam TL T or const T. @throws as lu_solve and multi_gpu::run.
template <class TL, batched_scalar T>
  requires std::is_same_v<std::remove_const_t<TL>, T>
void lu_solve(const multi_gpu& g, strided_batch_view<TL> lu, const index_t* ipiv, strided_batch_view<T> rhs) {
  detail::mg_lu_solve(g, detail::mg_op(lu), ipiv, detail::mg_op(rhs), false);
}
/// @brief Pointer-array lu_solve on a batch in host memory.
/// @tparam T the scalar type. @throws as lu_solve and multi_gpu::run.
template <batched_scalar T>
void lu_solve(const multi_gpu& g, const T* const* lu_array, index_t n, index_t ldlu, const index_t* ipiv,
              T* const* rhs_array, index_t nrhs, index_t ldb, index_t count) {
  detail::mg_lu_solve(g, detail::mg_op(lu_array, n, n, ldlu, count), ipiv,
                      detail::mg_op(rhs_array, n, nrhs, ldb, count), false);
}

/// @brief inverse on a batch in host memory.
/// @tparam TL T or const T. @throws as inverse and multi_gpu::run.
template <class TL, batched_scalar T>
  requires std::is_same_v<std::remove_const_t<TL>, T>
void inverse(const multi_gpu& g, strided_batch_view<TL> lu, const index_t* ipiv, strided_batch_view<T> inv) {
  detail::mg_lu_solve(g, detail::mg_op(lu), ipiv, detail::mg_op(inv), true);
}
/// @brief Pointer-array inverse on a batch in host memory.
/// @tparam T the scalar type. @throws as inverse and multi_gpu::run.
template <batched_scalar T>
void inverse(const multi_gpu& g, const T* const* lu_array, index_t n, index_t ldlu, const index_t* ipiv,
             T* const* inv_array, index_t ldinv, index_t count) {
  detail::mg_lu_solve(g, detail::mg_op(lu_array, n, n, ldlu, count), ipiv,
                      detail::mg_op(inv_array, n, n, ldinv, count), true);
}

/// @brief qr_factor on a batch in host memory.
/// @tparam T the scalar type. @throws as qr_factor and multi_gpu::run.
template <batched_scalar T>
void qr_factor(const multi_gpu& g, strided_batch_view<T> a) {
  detail::mg_qr_factor(g, detail::mg_op(a));
}
/// @brief Pointer-array qr_factor on a batch in host memory.
/// @tparam T the scalar type. @throws as qr_factor and multi_gpu::run.
template <batched_scalar T>
void qr_factor(const multi_gpu& g, T* const* a_array, index_t m, index_t n, index_t lda, index_t count) {
  detail::mg_qr_factor(g, detail::mg_op(a_array, m, n, lda, count));
}

/// @brief apply_qh (C := Q^H C) on a batch in host memory.
/// @tparam TF T or const T. @throws as apply_qh and multi_gpu::run.
template <class TF, batched_scalar T>
  requires std::is_same_v<std::remove_const_t<TF>, T>
void apply_qh(const multi_gpu& g, strided_batch_view<TF> qr, strided_batch_view<T> c) {
  detail::mg_qr_apply(g, detail::mg_op(qr), detail::mg_op(c), true, false, "apply_qh");
}
/// @brief Pointer-array apply_qh on a batch in host memory.
/// @tparam T the scalar type. @throws as apply_qh and multi_gpu::run.
template <batched_scalar T>
void apply_qh(const multi_gpu& g, const T* const* qr_array, index_t m, index_t n, index_t ldqr, T* const* c_array,
              index_t nrhs, index_t ldc, index_t count) {
  detail::mg_qr_apply(g, detail::mg_op(qr_array, m, n, ldqr, count), detail::mg_op(c_array, m, nrhs, ldc, count),
                      true, false, "apply_qh");
}

/// @brief apply_q (C := Q C) on a batch in host memory.
/// @tparam TF T or const T. @throws as apply_q and multi_gpu::run.
template <class TF, batched_scalar T>
  requires std::is_same_v<std::remove_const_t<TF>, T>
void apply_q(const multi_gpu& g, strided_batch_view<TF> qr, strided_batch_view<T> c) {
  detail::mg_qr_apply(g, detail::mg_op(qr), detail::mg_op(c), false, false, "apply_q");
}
/// @brief Pointer-array apply_q on a batch in host memory.
/// @tparam T the scalar type. @throws as apply_q and multi_gpu::run.
template <batched_scalar T>
void apply_q(const multi_gpu& g, const T* const* qr_array, index_t m, index_t n, index_t ldqr, T* const* c_array,
             index_t nrhs, index_t ldc, index_t count) {
  detail::mg_qr_apply(g, detail::mg_op(qr_array, m, n, ldqr, count), detail::mg_op(c_array, m, nrhs, ldc, count),
                      false, false, "apply_q");
}

/// @brief form_q (the leading q.cols columns of Q) on a batch in host memory.
/// @tparam TF T or const T. @throws as form_q and multi_gpu::run.
template <class TF, batched_scalar T>
  requires std::is_same_v<std::remove_const_t<TF>, T>
void form_q(const multi_gpu& g, strided_batch_view<TF> qr, strided_batch_view<T> q) {
  detail::mg_qr_apply(g, detail::mg_op(qr), detail::mg_op(q), false, true, "form_q");
}
/// @brief Pointer-array form_q on a batch in host memory.
/// @tparam T the scalar type. @throws as form_q and multi_gpu::run.
template <batched_scalar T>
void form_q(const multi_gpu& g, const T* const* qr_array, index_t m, index_t n, index_t ldqr, T* const* q_array,
            index_t qcols, index_t ldq, index_t count) {
  detail::mg_qr_apply(g, detail::mg_op(qr_array, m, n, ldqr, count), detail::mg_op(q_array, m, qcols, ldq, count),
                      false, true, "form_q");
}

/// @brief least_squares on a batch in host memory.
/// @tparam T the scalar type. @throws as least_squares and multi_gpu::run.
template <batched_scalar T>
void least_squares(const multi_gpu& g, strided_batch_view<T> a, strided_batch_view<T> rhs, int* info) {
  detail::mg_least_squares(g, detail::mg_op(a), detail::mg_op(rhs), info);
}
/// @brief Pointer-array least_squares on a batch in host memory.
/// @tparam T the scalar type. @throws as least_squares and multi_gpu::run.
template <batched_scalar T>
void least_squares(const multi_gpu& g, T* const* a_array, index_t m, index_t n, index_t lda, T* const* rhs_array,
                   index_t nrhs, index_t ldb, index_t count, int* info) {
  detail::mg_least_squares(g, detail::mg_op(a_array, m, n, lda, count),
                           detail::mg_op(rhs_array, m, nrhs, ldb, count), info);
}

/// @brief svd on a batch in host memory; a is left as it is (only copied
///        in). opt.work and opt.copies are ignored: each stream of each
///        partition keeps a workspace of its own.
/// @tparam T the scalar type. @throws as svd and multi_gpu::run.
template <batched_scalar T>
void svd(const multi_gpu& g, strided_batch_view<T> a, real_type_t<T>* sigma, strided_batch_view<T> u,
         strided_batch_view<T> v, int* info, svd_options opt = {}) {
  detail::mg_svd(g, detail::mg_op(a), sigma, detail::mg_op(u), detail::mg_op(v), info, opt);
}
/// @brief Pointer-array svd on a batch in host memory (u_array, v_array
///        null when not wanted).
/// @tparam T the scalar type. @throws as svd and multi_gpu::run.
template <batched_scalar T>
void svd(const multi_gpu& g, T* const* a_array, index_t m, index_t n, index_t lda, index_t count,
         real_type_t<T>* sigma, T* const* u_array, index_t ldu, T* const* v_array, index_t ldv, int* info,
         svd_options opt = {}) {
  detail::mg_svd(g, detail::mg_op(a_array, m, n, lda, count), sigma, detail::mg_op(u_array, m, n, ldu, count),
                 detail::mg_op(v_array, n, n, ldv, count), info, opt);
}

}  // namespace emgpu::batched

#endif  // __CUDACC__
