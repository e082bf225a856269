/// @file
/// @brief CUDA batched Givens QR of complex<double> 64 x n, 32 < n <= 64, in
///        three kernels: the windowed kernel on columns 0..31, a replay of
///        their rotations on columns 32..n-1 with the columns in registers
///        (qr_replay_kernel), and the warp kernel on the 32 x (n - 32)
///        block at (32, 32).
///
/// Why: qr_win_kernel's second window replays the 1 520 rotations of the
/// first window's columns stage by stage, each (rotation, column) item a
/// load, the rotation and a store in shared memory, two block barriers per
/// stage (189 stages at 64 x 64), and makes its own columns' rotations in
/// between. A known sequence of rotations needs none of that: every column
/// takes the chains of columns 0, 1, ..., 31 in order, each bottom-up, so a
/// thread can keep its part of a column in registers and run the chains
/// through it, the rotations read from a table decoded once per matrix.
/// What is left after the replay (rows 32..63 of columns 32..n-1) is a
/// 32-row QR, the warp kernel's size.
///
/// qr_replay_kernel: block = M / 16 warps, one matrix; warp q holds rows
/// 16q .. 16q + 15 of the 32 target columns (lane = column) in registers.
/// Warp q runs chain j at time step j + (Q - 1 - q), the lower warps a
/// step ahead, so the carry entering a warp's rows from below is ready; at
/// the end of a step each warp publishes its top and bottom rows (shared
/// memory, two parities, one block barrier per step), and at the next step
/// both neighbours compute the rotation across their boundary from the same
/// published values, each keeping its own row. Every entry receives the
/// rotations of qr_factor_core in the same order, decoded from the stored
/// codes as qr_win_kernel's second window decodes them, so the factors are
/// those of qr_win_kernel bit for bit (session 38: 0 differing matrices of
/// 20 735 at 64 x 64, NaN, Inf, zero-column, rank-deficient, triangular and
/// 1e-160-scaled matrices among them).
///
/// Measured (H200, 20 000 matrices, 64 x 64, scratch harness .gpu/r38,
/// docs/results/qr_split_s38_h200.txt, qr_split_streams_s38_h200.txt):
/// qr_win_kernel 6.56 ms; in one stream 5.25 (windowed 64 x 32 2.63,
/// replay 1.88, warp 32 x 32 0.80), two halves over two streams 5.17;
/// bench_batched_cuda 5.17 ms, 5.06x cuBLAS zgeqrfBatched (26.18 ms). Tried
/// and slower: a ring of decoded chains instead of the whole table (replay
/// 1.99 ms), eight warps of 8 rows (2.06), two columns per thread
/// (2.10-2.22), panels of 16 columns (5.65-5.90 in all: each replay launch
/// costs its decode and loads whatever its width); see docs/batched.md.
/// Template parameters: T the scalar type, M the rows (a multiple of 16),
/// Loc the batch layout (strided_loc or array_loc).
#pragma once

#if defined(__CUDACC__)

#include <cstddef>
#include <string>
#include <type_traits>

#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#include "common.hpp"
#include "qr_core.hpp"
#include "qr_warp.hpp"
#include "qr_window.hpp"
#include "stream_lanes.hpp"

namespace emgpu::batched::detail {

/// Matrix k of `base` shifted by `off` elements (a sub-block of each).
template <class Loc>
struct offset_loc {
  Loc base;
  index_t off;
  EMGPU_HD auto operator()(index_t k) const { return base(k) + off; }
};

/// Table slots before chain j's when chain t holds rows t + 1 .. M - 1.
template <int M>
EMGPU_HD constexpr int qr_replay_base(int j) {
  return j * (M - 1) - j * (j - 1) / 2;
}

/// Dynamic shared memory of qr_replay_kernel<T, M> for K chains: the
/// decoded table (s, then c) and two parities of published rows.
template <class T, int M>
constexpr std::size_t qr_replay_bytes(int K) {
  return align16(std::size_t(qr_replay_base<M>(K)) * (sizeof(T) + sizeof(real_type_t<T>))) +
         2 * std::size_t(M / 16) * 64 * sizeof(T);
}

/// The rotations stored in columns 0..K-1 (column j's at rows j+1..M-1,
/// codes as qr_factor_core leaves them) applied in the factorisation's order
/// to columns c0 .. c0 + nc - 1 of every matrix; grid.y covers the columns
/// 32 at a time.
template <class T, int M, class Loc>
__global__ void __launch_bounds__(2 * M) qr_replay_kernel(Loc loc, int K, int c0, int nc, index_t lda) {
  constexpr int RQ = 16, Q = M / RQ;
  static_assert(M % RQ == 0 && M <= 64);
  using R = real_type_t<T>;
  extern __shared__ __align__(16) unsigned char qr_replay_raw[];
  const int ntab = qr_replay_base<M>(K);
  T* const ts = reinterpret_cast<T*>(qr_replay_raw);
  R* const tc = reinterpret_cast<R*>(qr_replay_raw + std::size_t(ntab) * sizeof(T));
  T* const pub = reinterpret_cast<T*>(qr_replay_raw + align16(std::size_t(ntab) * (sizeof(T) + sizeof(R))));
  const int tid = int(threadIdx.x), q = tid / 32, lane = tid % 32;
  T* const a = loc(index_t(blockIdx.x));

  // Warp q decodes chains q, q + Q, ...: lanes over the chain's rows
  // (coalesced), two chains' codes loaded before either is decoded.
#pragma unroll 1
  for (int j0 = q; j0 < K; j0 += 2 * Q) {
    T z[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int j = j0 + (u / 2) * Q, i = j + 1 + lane + (u % 2) * 32;
      z[u] = (j < K && i < M) ? a[i + index_t(j) * lda] : T(0);
    }
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int j = j0 + (u / 2) * Q, i = j + 1 + lane + (u % 2) * 32;
      if (j < K && i < M) {
        const givens<T> g = givens_decode(z[u]);
        const int e = qr_replay_base<M>(j) - j - 1 + i;
        ts[e] = g.s;
        tc[e] = g.c;
      }
    }
  }
  T x[RQ];
  const int cl = int(blockIdx.y) * 32 + lane;
  const bool on = cl < nc;
  // Lanes past the last column work on column c0 and store nothing.
  T* const col = a + index_t(c0 + (on ? cl : 0)) * lda + q * RQ;
#pragma unroll
  for (int r = 0; r < RQ; ++r) x[r] = col[r];
  __syncthreads();

  const int ntau = K + Q - 1;
#pragma unroll 1
  for (int tau = 0; tau < ntau; ++tau) {
    const int j = tau - (Q - 1 - q);  // this warp's chain
    const int par = tau & 1;
    const T* const prev = pub + (par ^ 1) * Q * 64;
    // chain j across rows (16q + 15, 16q + 16): the row below as its warp
    // published it after chain j (this warp keeps the upper row)
    if (q < Q - 1 && j >= 0 && j < K && (q + 1) * RQ > j) {
      const int e = qr_replay_base<M>(j) - j - 1 + (q + 1) * RQ;
      const givens<T> g{tc[e], ts[e]};
      T y = prev[(q + 1) * 64 + lane];
      givens_apply(g, x[RQ - 1], y, false);
    }
    // chain j - 1 across rows (16q - 1, 16q): the row above as its warp
    // published it after chain j - 2 (this warp keeps the lower row)
    if (q > 0 && j >= 1 && j - 1 < K && q * RQ > j - 1) {
      const int e = qr_replay_base<M>(j - 1) - j + q * RQ;
      const givens<T> g{tc[e], ts[e]};
      T xx = prev[(q - 1) * 64 + 32 + lane];
      givens_apply(g, xx, x[0], false);
    }
    if (j >= 0 && j < K) {
      const int e = qr_replay_base<M>(j) - j - 1 + q * RQ;
      const T* const sj = ts + e;
      const R* const cj = tc + e;
      if (q * RQ >= j) {
        // every rotation of the chain in these rows exists: straight code,
        // the table loads free to move ahead of the arithmetic
#pragma unroll
        for (int r = RQ - 1; r >= 1; --r) {
          const givens<T> g{cj[r], sj[r]};
          givens_apply(g, x[r - 1], x[r], false);
        }
      } else {
#pragma unroll
        for (int r = RQ - 1; r >= 1; --r) {
          if (q * RQ + r <= j) break;  // chain j ends at row j
          const givens<T> g{cj[r], sj[r]};
          givens_apply(g, x[r - 1], x[r], false);
        }
      }
    }
    T* const cur = pub + par * Q * 64 + q * 64;
    cur[lane] = x[0];
    cur[32 + lane] = x[RQ - 1];
    __syncthreads();
  }
  if (on) {
#pragma unroll
    for (int r = 0; r < RQ; ++r) col[r] = x[r];
  }
}

/// Launches qr_replay_kernel<T, M> on count matrices.
/// @throws invalid_argument for a batch beyond one grid; device_error when
///         a CUDA call fails.
template <class T, int M, class Loc>
inline void qr_replay_launch(const backend::cuda& b, const Loc& loc, int K, int c0, int nc, index_t lda,
                             index_t count, const char* name) {
  detail_require(count <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  detail_require(K >= 0 && K < M, std::string(name) + ": internal: qr_replay chains out of range");
  const auto kern = qr_replay_kernel<T, M, Loc>;
  const std::size_t bytes = qr_replay_bytes<T, M>(K);
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        int(cudaSharedmemCarveoutMaxShared)));
  kern<<<dim3(unsigned(count), unsigned((nc + 31) / 32)), unsigned(2 * M), bytes, b.stream>>>(loc, K, c0, nc, lda);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

/// Matrices k0.. of a batch layout.
template <class T>
inline strided_loc<T> qr_split_from(const strided_loc<T>& l, index_t k0) {
  return {l.data + k0 * l.stride, l.stride};
}
template <class T>
inline array_loc<T> qr_split_from(const array_loc<T>& l, index_t k0) {
  return {l.arr + k0};
}

/// Batches from this many matrices go in two halves over two streams
/// (stream_lanes): one half's windowed kernel runs beside the other's
/// replay and warp kernels, which are bound by other things. H200, 20 000
/// matrices: 5.25 -> 5.17 ms (three or four chunks 5.25-5.30, the second
/// half started after the first's windowed kernel 5.26; .gpu/r38). Below,
/// a half would leave SMs idle; not measured.
constexpr index_t qr_split_lanes_min = 4096;

/// The three kernels on count matrices at loc, on b's stream.
template <class T, class Loc>
inline void qr_split_run(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda, index_t count,
                         const char* name) {
  // 96 threads: 2.63 ms against 2.66 for 128 at 64 x 32 (other windows,
  // thread counts and the look-ahead kernel 2.70-3.29; H200, .gpu/r38)
  const bool ok = qr_win_launch<T, 32, 96>(b, loc, m, 32, lda, count, name);
  detail_require(ok, std::string(name) + ": internal: the windowed kernel does not fit");
  qr_replay_launch<T, 64>(b, loc, 32, 32, int(n - 32), lda, count, name);
  // 32 rows: always the warp kernel's
  const bool done = qr_warp_factor<T>(b, offset_loc<Loc>{loc, 32 + 32 * lda}, m - 32, n - 32, lda, count, name);
  detail_require(done, std::string(name) + ": internal: no warp kernel for the 32-row block");
}

/// @brief qr_factor on CUDA for complex<double> 64 x n, 32 < n <= 64, by
///        the three kernels above (two halves of the batch over two streams
///        from qr_split_lanes_min matrices).
/// @return false, launching nothing, for other types and shapes, or where
///         the windowed or replay kernel does not fit the device's shared
///         memory per block.
/// @throws invalid_argument for a batch beyond one grid; device_error when
///         a CUDA call fails.
template <class T, class Loc>
inline bool qr_split_factor(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda, index_t count,
                            const char* name) {
  if constexpr (std::is_same_v<T, complex<double>>) {
    if (m != 64 || n <= 32 || n > 64 || count <= 0) return false;
    emgpu::detail::device_guard guard(b.device);
    const std::size_t optin = std::size_t(smem_optin(b.device));
    if (qr_replay_bytes<T, 64>(32) > optin || qr_win_bytes<T, 32>(m, 1) > optin) return false;
    detail_require(count <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
    stream_lanes<backend::cuda> lanes(b, count < qr_split_lanes_min ? 1 : 2);
    const index_t first = lanes.count > 1 ? (count + 1) / 2 : count;
    qr_split_run<T>(lanes(b, 0), loc, m, n, lda, first, name);
    if (first < count) qr_split_run<T>(lanes(b, 1), qr_split_from(loc, first), m, n, lda, count - first, name);
    lanes.join(b);
    return true;
  } else {
    return false;
  }
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
