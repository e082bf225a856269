/// @file
/// @brief Two CUDA streams forked from the caller's and joined back to it,
///        for a batch split into chunks whose kernels overlap ("lanes").
///
/// Why: a pipeline of kernels bound by different things (latency at the
/// blocks per SM their shared memory allows, FP64, stores) leaves part of
/// each SM idle; a second chunk's kernels on a second stream fill it (the
/// SVD's split pipeline, svd_gk_split.hpp; the 64-row QR, qr_split.hpp).
/// Host backends get one lane: the caller's backend, chunk after chunk.
/// Template parameter: Backend serial, openmp or cuda.
#pragma once

#include "../../backend/cuda.hpp"
#include "common.hpp"
#if defined(__CUDACC__)
#include "../../backend/cuda_check.hpp"  // needs the CUDA headers, which a CPU-only build has not got
#endif

namespace emgpu::batched::detail {

/// Chunks in flight at once (the "lanes"), and the backend each one's
/// kernels go to: count lanes, lane(b, l) the backend of lane l, join(b)
/// orders b after both. Host backends: one lane, the caller's backend.
template <class Backend>
struct stream_lanes {
  int count = 1;
  stream_lanes(const Backend&, int) {}
  const Backend& operator()(const Backend& b, int) const { return b; }
  void mark_first(int) {}
  void wait_first(int) {}
  void join(const Backend&) {}
};

#if defined(__CUDACC__)
template <>
struct stream_lanes<backend::cuda> {
  int count = 1;
  backend::cuda lane[2];
  cudaEvent_t fork = nullptr, first = nullptr, done[2] = {nullptr, nullptr};

  /// @throws device_error when a stream or event cannot be made (what was
  ///         made is released).
  stream_lanes(const backend::cuda& b, int lanes) {
    if (lanes < 2) return;
    emgpu::detail::device_guard g(b.device);
    try {
      for (int l = 0; l < 2; ++l) {
        lane[l].device = b.device;
        EMGPU_CUDA_CHECK(cudaStreamCreateWithFlags(&lane[l].stream, cudaStreamNonBlocking));
        EMGPU_CUDA_CHECK(cudaEventCreateWithFlags(&done[l], cudaEventDisableTiming));
      }
      EMGPU_CUDA_CHECK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
      EMGPU_CUDA_CHECK(cudaEventCreateWithFlags(&first, cudaEventDisableTiming));
      // The lanes start after everything the caller queued on b.stream (the
      // input, a workspace just allocated there).
      EMGPU_CUDA_CHECK(cudaEventRecord(fork, b.stream));
      for (int l = 0; l < 2; ++l) EMGPU_CUDA_CHECK(cudaStreamWaitEvent(lane[l].stream, fork, 0));
    } catch (...) {
      release();
      throw;
    }
    count = 2;
  }
  stream_lanes(const stream_lanes&) = delete;
  stream_lanes& operator=(const stream_lanes&) = delete;
  ~stream_lanes() { release(); }
  void release() noexcept {
    // Streams and events may go with work pending: CUDA releases them once
    // it is done. Errors here cannot be reported (destructor, cleanup).
    for (int l = 0; l < 2; ++l) {
      if (lane[l].stream) (void)cudaStreamDestroy(lane[l].stream);
      if (done[l]) (void)cudaEventDestroy(done[l]);
      lane[l].stream = nullptr;
      done[l] = nullptr;
    }
    if (fork) (void)cudaEventDestroy(fork);
    if (first) (void)cudaEventDestroy(first);
    fork = first = nullptr;
    count = 1;
  }
  const backend::cuda& operator()(const backend::cuda& b, int l) const { return count > 1 ? lane[l] : b; }
  void mark_first(int l) {
    if (count > 1 && l == 0) EMGPU_CUDA_CHECK(cudaEventRecord(first, lane[0].stream));
  }
  void wait_first(int l) {
    if (count > 1 && l == 1) EMGPU_CUDA_CHECK(cudaStreamWaitEvent(lane[1].stream, first, 0));
  }
  /// b.stream waits for both lanes: to the caller the call is ordered on
  /// its stream as with one lane.
  void join(const backend::cuda& b) {
    if (count < 2) return;
    emgpu::detail::device_guard g(b.device);
    for (int l = 0; l < 2; ++l) {
      EMGPU_CUDA_CHECK(cudaEventRecord(done[l], lane[l].stream));
      EMGPU_CUDA_CHECK(cudaStreamWaitEvent(b.stream, done[l], 0));
    }
  }
};
#endif

}  // namespace emgpu::batched::detail
