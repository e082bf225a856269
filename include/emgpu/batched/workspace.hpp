/// @file
/// @brief emgpu::batched::workspace: scratch memory that batched routines
///        keep between calls instead of allocating and freeing it each time.
///
/// The QR-method SVD on CUDA logs every rotation of every matrix (about
/// 60 KB per 32 x 32 complex<double> matrix, 5.9 GB for 100 000 of them).
/// Allocating and freeing that on every call cost 4.6 ms on an H200
/// (cudaMalloc / cudaFree of 2 x 2.9 GB; docs/batched-log.md, session 17),
/// 9 % of the whole SVD; a workspace passed in svd_options::work is
/// allocated once, by the first call that needs it, and grows only when a
/// later call needs more. cuSOLVER's batched routines take their workspace
/// from the caller in the same way.
///
/// ```
/// emgpu::batched::workspace work;             // empty until first used
/// emgpu::batched::svd_options opt;
/// opt.work = &work;
/// for (auto& batch : batches)                 // one allocation in all
///   emgpu::batched::svd(gpu, batch.a, batch.sigma, batch.u, batch.v, batch.info, opt);
/// work.release();                             // or let it go out of scope
/// ```
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <utility>

#include "../backend/cuda.hpp"
#include "../backend/openmp.hpp"
#include "../backend/serial.hpp"
#include "../backend/traits.hpp"
#include "../core/error.hpp"

namespace emgpu::batched {

/// @brief Grow-only scratch buffer in one backend's memory, reused by the
///        batched routines it is passed to.
///
/// Holds one block at a time, in the memory of the backend (and, for CUDA,
/// the device) that last asked for it; a request from another backend or
/// device, or for more bytes, frees the block and allocates a new one. Not
/// thread-safe, and one call at a time: every call uses the same bytes, so
/// two calls that may run at once (two host threads, or two CUDA streams)
/// need two workspaces. Calls on one CUDA stream are ordered, so they may
/// share one. Movable, not copyable.
class workspace {
 public:
  workspace() = default;
  workspace(const workspace&) = delete;
  workspace& operator=(const workspace&) = delete;
  workspace(workspace&& o) noexcept
      : holder_(std::move(o.holder_)), ptr_(std::exchange(o.ptr_, nullptr)),
        bytes_(std::exchange(o.bytes_, 0)), device_(std::exchange(o.device_, no_device)) {}
  workspace& operator=(workspace&& o) noexcept {
    if (this != &o) {
      holder_ = std::move(o.holder_);
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      device_ = std::exchange(o.device_, no_device);
    }
    return *this;
  }
  ~workspace() = default;

  /// Bytes held now (0 when empty).
  std::size_t capacity() const noexcept { return bytes_; }

  /// Frees the block (a CUDA block with cudaFree, which waits for the work
  /// queued on the device).
  void release() noexcept {
    holder_.reset();
    ptr_ = nullptr;
    bytes_ = 0;
    device_ = no_device;
  }

  /// @brief At least `bytes` bytes in b's memory, aligned for any scalar
  ///        type (16 bytes on the host, 256 on CUDA); the same block as the
  ///        previous call when it is large enough and in the same memory.
  /// @tparam B a backend tag (serial, openmp, cuda).
  /// @return nullptr when bytes == 0.
  /// @throws device_error (out_of_memory() set) when a CUDA allocation
  ///         fails; std::bad_alloc on the host. The workspace is then empty.
  template <backend_tag B>
  std::byte* reserve(const B& b, std::size_t bytes) {
    if (bytes == 0) return nullptr;
    const int dev = device_of(b);
    if (ptr_ != nullptr && dev == device_ && bytes <= bytes_) return ptr_;
    release();  // first, so that the new block can take the old one's room
    emgpu::detail::require(bytes <= std::size_t(std::numeric_limits<index_t>::max()),
                           "emgpu::batched::workspace: size out of range");
    using V = vector_t<B, std::byte>;
    auto v = std::make_shared<V>(make_vector<std::byte>(b, index_t(bytes)));
    ptr_ = v->data();
    holder_ = std::move(v);
    bytes_ = bytes;
    device_ = dev;
    return ptr_;
  }

 private:
  static constexpr int no_device = -2;
  static constexpr int host = -1;
  template <class B>
  static int device_of(const B& b) {
    if constexpr (backend_traits<B>::is_device) return b.device;
    else return host;
  }
  std::shared_ptr<void> holder_;  // the backend's vector_t<B, std::byte>
  std::byte* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  int device_ = no_device;
};

}  // namespace emgpu::batched
