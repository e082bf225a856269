/// @file
/// @brief The CUDA backend: device memory, kernels launched on a stream.
/// Available only in translation units compiled by nvcc (the tag does not
/// exist elsewhere), so CPU-only users never need the CUDA toolkit.
/// @throws emgpu::device_error for every failed CUDA call or launch, with the
///         call's name; out-of-memory sets device_error::out_of_memory().
#pragma once

#include "../core/config.hpp"

#if defined(__CUDACC__)

#include <span>
#include <utility>
#include <vector>

#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "traits.hpp"

namespace emgpu::backend {

/// @brief Executes on one CUDA device, in stream order on `stream`.
/// The default (stream 0, device 0) suits single-GPU programs; a multi-GPU
/// program holds one tag per device.
struct cuda {
  cudaStream_t stream = nullptr;
  int device = 0;
};

}  // namespace emgpu::backend

namespace emgpu {

namespace detail {
/// Makes `device` current for the scope and restores the previous one.
class device_guard {
 public:
  explicit device_guard(int device) {
    EMGPU_CUDA_CHECK(cudaGetDevice(&prev_));
    if (prev_ != device) EMGPU_CUDA_CHECK(cudaSetDevice(device));
  }
  ~device_guard() {
    int cur = prev_;
    if (cudaGetDevice(&cur) == cudaSuccess && cur != prev_) (void)cudaSetDevice(prev_);
  }
  device_guard(const device_guard&) = delete;
  device_guard& operator=(const device_guard&) = delete;

 private:
  int prev_ = 0;
};
/// A non-blocking stream of one device, destroyed with the device current
/// (multi-GPU drivers keep one or more per device and thread).
/// @throws device_error when the stream cannot be created.
struct stream_holder {
  cudaStream_t s = nullptr;
  int dev = 0;
  explicit stream_holder(int d) : dev(d) {
    device_guard g(d);
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

}  // namespace detail

/// @brief Owning, move-only buffer of n elements in device memory.
/// @tparam T trivially copyable element type.
/// Allocation checks the status and throws device_error (out_of_memory() set)
/// rather than returning a null pointer that a later kernel would fault on.
template <class T>
class device_vector {
 public:
  using value_type = T;
  device_vector() = default;
  explicit device_vector(index_t n, int device = 0) : device_(device) { allocate(n); }
  device_vector(std::span<const T> host, int device = 0) : device_(device) {
    allocate(static_cast<index_t>(host.size()));
    if (n_ > 0)
      EMGPU_CUDA_CHECK(cudaMemcpy(p_, host.data(), bytes(), cudaMemcpyHostToDevice));
  }
  device_vector(const device_vector& o) : device_(o.device_) {
    allocate(o.n_);
    if (n_ > 0) EMGPU_CUDA_CHECK(cudaMemcpy(p_, o.p_, bytes(), cudaMemcpyDeviceToDevice));
  }
  device_vector(device_vector&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), device_(o.device_) {}
  device_vector& operator=(device_vector o) noexcept {
    swap(o);
    return *this;
  }
  ~device_vector() {
    if (p_) (void)cudaFree(p_);
  }
  void swap(device_vector& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    std::swap(device_, o.device_);
  }

  T* data() noexcept { return p_; }
  const T* data() const noexcept { return p_; }
  index_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  std::size_t bytes() const noexcept { return static_cast<std::size_t>(n_) * sizeof(T); }
  int device() const noexcept { return device_; }

  /// Copies the contents to a new host vector.
  std::vector<T> to_host() const {
    std::vector<T> h(static_cast<std::size_t>(n_));
    if (n_ > 0) EMGPU_CUDA_CHECK(cudaMemcpy(h.data(), p_, bytes(), cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  void allocate(index_t n) {
    detail::require(n >= 0, "emgpu::device_vector: negative size");
    n_ = n;
    if (n == 0) return;
    detail::device_guard g(device_);
    EMGPU_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), bytes()));
  }
  T* p_ = nullptr;
  index_t n_ = 0;
  int device_ = 0;
};

namespace detail {
template <class F>
__global__ void for_each_index_1d_kernel(index_t n, F f) {
  for (index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += index_t(gridDim.x) * blockDim.x)
    f(i);
}
template <class F>
__global__ void for_each_index_2d_kernel(index_t n0, index_t n1, F f) {
  for (index_t j = index_t(blockIdx.y) * blockDim.y + threadIdx.y; j < n1;
       j += index_t(gridDim.y) * blockDim.y)
    for (index_t i = index_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n0;
         i += index_t(gridDim.x) * blockDim.x)
      f(i, j);
}
/// A partial result that may be empty: reductions here take no identity element.
template <class T>
struct reduce_partial {
  T value;
  int has;
};

template <class T, unsigned Block, class Op>
__device__ reduce_partial<T> block_reduce(reduce_partial<T> mine, Op& op) {
  // Raw storage: T (e.g. thrust::complex) may have a non-trivial constructor,
  // which __shared__ variables cannot run.
  __shared__ alignas(T) unsigned char vals_raw[Block * sizeof(T)];
  __shared__ int has[Block];
  T* vals = reinterpret_cast<T*>(vals_raw);
  vals[threadIdx.x] = mine.value;
  has[threadIdx.x] = mine.has;
  __syncthreads();
  for (unsigned s = Block / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s && has[threadIdx.x + s]) {
      vals[threadIdx.x] = has[threadIdx.x] ? op(vals[threadIdx.x], vals[threadIdx.x + s])
                                           : vals[threadIdx.x + s];
      has[threadIdx.x] = 1;
    }
    __syncthreads();
  }
  return {vals[0], has[0]};
}

template <class T, unsigned Block, class Map, class Op>
__global__ void __launch_bounds__(Block) reduce_pass1_kernel(index_t n, Map map, Op op,
                                                             reduce_partial<T>* out) {
  reduce_partial<T> acc{T{}, 0};
  for (index_t i = index_t(blockIdx.x) * Block + threadIdx.x; i < n; i += index_t(gridDim.x) * Block) {
    if (acc.has) acc.value = op(acc.value, map(i));
    else acc = {map(i), 1};
  }
  const reduce_partial<T> r = block_reduce<T, Block>(acc, op);
  if (threadIdx.x == 0) out[blockIdx.x] = r;
}

template <class T, unsigned Block, class Op>
__global__ void __launch_bounds__(Block) reduce_pass2_kernel(unsigned count, Op op,
                                                             reduce_partial<T>* buf) {
  reduce_partial<T> acc{T{}, 0};
  if (threadIdx.x < count) acc = buf[threadIdx.x];
  const reduce_partial<T> r = block_reduce<T, Block>(acc, op);
  if (threadIdx.x == 0) buf[count] = r;
}

inline unsigned grid_size(index_t n, unsigned block, index_t cap) {
  index_t g = (n + block - 1) / block;
  if (g > cap) g = cap;
  return static_cast<unsigned>(g < 1 ? 1 : g);
}
}  // namespace detail

namespace backend {

/// @brief Launches f(i), i in [0, n), as a grid-stride kernel on b.stream.
/// f must be a __host__ __device__ functor (or an extended lambda) taken by value.
template <class F>
inline void for_each_index(const cuda& b, index_t n, F f) {
  if (n <= 0) return;
  emgpu::detail::device_guard g(b.device);
  constexpr unsigned block = 256;
  emgpu::detail::for_each_index_1d_kernel<<<emgpu::detail::grid_size(n, block, 1 << 20), block,
                                            0, b.stream>>>(n, f);
  EMGPU_CUDA_CHECK_LAUNCH("emgpu::for_each_index (1D)");
}

/// @brief Launches f(i, j) over [0, n0) x [0, n1); i maps to threadIdx.x so
///        neighbouring threads touch neighbouring rows of a column-major matrix.
template <class F>
inline void for_each_index(const cuda& b, index_t n0, index_t n1, F f) {
  if (n0 <= 0 || n1 <= 0) return;
  emgpu::detail::device_guard g(b.device);
  const dim3 block(n0 >= 128 ? 128 : 32, n0 >= 128 ? 2 : 8);
  const dim3 grid(emgpu::detail::grid_size(n0, block.x, 1 << 16),
                  emgpu::detail::grid_size(n1, block.y, 65535));
  emgpu::detail::for_each_index_2d_kernel<<<grid, block, 0, b.stream>>>(n0, n1, f);
  EMGPU_CUDA_CHECK_LAUNCH("emgpu::for_each_index (2D)");
}

/// @brief op-reduction of map(i) over [0, n); blocks until the value is on the host.
/// op must be associative and callable on host and device; the tree order
/// differs from the host backends, so floating-point sums agree with them to
/// rounding, not bitwise. Two passes (blocks, then one block over the block
/// partials) with stream-ordered scratch memory: no global allocation or
/// device-wide synchronisation beyond the final copy.
template <class T, class Map, class Op>
inline T reduce(const cuda& b, index_t n, T init, Map map, Op op) {
  if (n <= 0) return init;
  emgpu::detail::device_guard g(b.device);
  using P = emgpu::detail::reduce_partial<T>;
  constexpr unsigned block = 256;
  const unsigned blocks = emgpu::detail::grid_size(n, block * 4, 1024);
  P* scratch = nullptr;
  EMGPU_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&scratch), sizeof(P) * (blocks + 1),
                                   b.stream));
  emgpu::detail::reduce_pass1_kernel<T, block><<<blocks, block, 0, b.stream>>>(n, map, op, scratch);
  cudaError_t launch = cudaGetLastError();
  if (launch == cudaSuccess) {
    emgpu::detail::reduce_pass2_kernel<T, 1024><<<1, 1024, 0, b.stream>>>(blocks, op, scratch);
    launch = cudaGetLastError();
  }
  P result{};
  cudaError_t copy = cudaSuccess;
  if (launch == cudaSuccess)
    copy = cudaMemcpyAsync(&result, scratch + blocks, sizeof(P), cudaMemcpyDeviceToHost, b.stream);
  const cudaError_t freed = cudaFreeAsync(scratch, b.stream);
  EMGPU_CUDA_CHECK(launch);
  EMGPU_CUDA_CHECK(copy);
  EMGPU_CUDA_CHECK(freed);
  EMGPU_CUDA_CHECK(cudaStreamSynchronize(b.stream));
  return result.has ? op(init, result.value) : init;
}

/// @brief Waits for all work issued on b.stream.
inline void synchronize(const cuda& b) {
  emgpu::detail::device_guard g(b.device);
  EMGPU_CUDA_CHECK(cudaStreamSynchronize(b.stream));
}

template <class T>
inline device_vector<T> to_backend(const cuda& b, std::span<const T> host) {
  return device_vector<T>(host, b.device);
}

template <class T>
inline std::vector<T> to_host(const cuda&, const device_vector<T>& v) {
  return v.to_host();
}

template <class T>
inline device_vector<T> make_vector(const cuda& b, index_t n) {
  return device_vector<T>(n, b.device);
}

template <class T>
inline void copy_to_host(const cuda& b, const T* src, index_t n, T* dst) {
  if (n <= 0) return;
  emgpu::detail::device_guard g(b.device);
  EMGPU_CUDA_CHECK(cudaMemcpyAsync(dst, src, sizeof(T) * std::size_t(n), cudaMemcpyDeviceToHost,
                                   b.stream));
  EMGPU_CUDA_CHECK(cudaStreamSynchronize(b.stream));
}
template <class T>
inline void copy_from_host(const cuda& b, const T* src, index_t n, T* dst) {
  if (n <= 0) return;
  emgpu::detail::device_guard g(b.device);
  EMGPU_CUDA_CHECK(cudaMemcpyAsync(dst, src, sizeof(T) * std::size_t(n), cudaMemcpyHostToDevice,
                                   b.stream));
  EMGPU_CUDA_CHECK(cudaStreamSynchronize(b.stream));
}
template <class T>
inline void copy_within(const cuda& b, const T* src, index_t n, T* dst) {
  if (n <= 0) return;
  emgpu::detail::device_guard g(b.device);
  EMGPU_CUDA_CHECK(cudaMemcpyAsync(dst, src, sizeof(T) * std::size_t(n),
                                   cudaMemcpyDeviceToDevice, b.stream));
}

/// @brief Number of visible CUDA devices (0 when there is no driver or GPU;
///        never throws, so callers can skip GPU work cleanly).
inline int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

/// @brief Free and total device memory in bytes on b.device.
inline std::pair<std::size_t, std::size_t> memory_info(const cuda& b) {
  emgpu::detail::device_guard g(b.device);
  std::size_t free_b = 0, total_b = 0;
  EMGPU_CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  return {free_b, total_b};
}

}  // namespace backend

template <>
struct backend_traits<backend::cuda> {
  using memory_space = device_space;
  template <class T>
  using vector = device_vector<T>;
  static constexpr const char* name = "cuda";
  static constexpr bool is_device = true;
};

}  // namespace emgpu

#endif  // __CUDACC__
