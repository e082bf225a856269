/// @file
/// @brief CUDA qr_factor for 9 <= m <= 32 rows in double and
///        complex<double>: one warp per one or two matrices, lane = column,
///        the matrix in shared memory, one __syncwarp per Sameh-Kuck stage.
///
/// Why: the team path (qr_core.hpp through launch.hpp) runs the same stages
/// with a generic team, two syncs per stage and each rotation's columns
/// split among its owner threads. Here lane l owns column l outright: at
/// stage st it makes its own rotation (if column l is active), publishes
/// the decoded pair in a per-stage-parity cache, and after the one
/// __syncwarp applies the stage's rotations j < l to its own column only.
/// A lane never touches another lane's column, so the cache is the only
/// shared state: lane j rewrites cache[st & 1][j] at stage st + 2, after
/// every lane passed the __syncwarp of stage st + 1 and so finished its
/// reads of stage st. Each column receives the same rotations, made from the
/// same values, in the same order as on the team path (rotations of one
/// stage touch disjoint rows), with the same inline functions
/// (givens_make / encode / decode / apply), so the factors are the team
/// path's up to nvcc's FMA contraction (bitwise in the session-27 scratch
/// check where U = 2 or 4, every entry of 100 000 matrices per shape).
///
/// Layout: W = 16 lanes per matrix (two matrices per warp) when n <= 16,
/// else W = 32; column stride LD = m | 1 (odd in units of T), so that the
/// lanes' accesses at one row (l LD + i) and the makes' (l (LD + 2) + c)
/// fall in distinct banks. Loads and stores go row by row (lane = row), so
/// a column of the batch is one coalesced access. Rotations are applied U at
/// a time, loads before arithmetic before stores, for latency. At most
/// 18.4 KB of shared memory per block, so no opt-in is needed on any GPU.
///
/// Measured (H200, 100 000 matrices, scratch harness, ms, the team path and
/// cuBLAS geqrfBatched in the same process; docs/results/qr_warp_s27_h200.txt):
///
///     complex<double>  9 x 9   0.292 (team 0.434)   16 x 16 0.709 (1.037; cuBLAS 2.52)
///                      20 x 20 1.95  (1.97)         24 x 24 2.72  (3.00)
///                      32 x 32 5.28  (6.60; cuBLAS 20.1)   32 x 16 1.87 (2.69)
///     double           9 x 9   0.234 (0.386)        16 x 16 0.490 (0.840)
///                      20 x 20 1.30  (1.77)         32 x 32 2.66  (3.56)
///
/// so it is taken for every such shape except complex<double> with more than
/// 16 columns and fewer than 24 rows (17 x 17: 1.53 against 1.50). W = 16
/// applies one rotation at a time (U = 1: 1.03-1.10x faster than U = 2;
/// nvcc then contracts differently from the team path, so the factors agree
/// to rounding, not bit for bit), W = 32 two (m < 28) or four. What bounds
/// it (ncu, 32 x 32, U = 4): 28 600 instructions per matrix, 11 warps per
/// SM (shared memory), one instruction issued per 5.3 cycles per warp; the
/// makes alone take 2.4 ms, the applies alone 4.0 (a lane applies only the
/// rotations of columns left of its own, so about a third of the apply
/// slots idle).
#pragma once

#if defined(__CUDACC__)

#include <cstddef>
#include <string>
#include <type_traits>

#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#include "common.hpp"
#include "qr_core.hpp"
#include "smem_limit.hpp"

namespace emgpu::batched::detail {

constexpr index_t qr_warp_min_m = 9;
constexpr index_t qr_warp_max_m = 32;

/// Whether qr_factor may route T to qr_warp_kernel.
template <class T>
inline constexpr bool qr_warp_type = std::is_same_v<T, double> || std::is_same_v<T, complex<double>>;

/// Bytes of shared memory per matrix: the columns (stride LD), then the
/// rotation cache, s then c (s first keeps complex entries 16-byte aligned).
template <class T, int W>
constexpr std::size_t qr_warp_bytes(int LD, int n) {
  using R = real_type_t<T>;
  return align16(std::size_t(LD) * std::size_t(n) * sizeof(T) + 2 * W * (sizeof(T) + sizeof(R)));
}

/// One warp per 32 / W matrices, WPB warps per block.
template <class T, int W, int U, int WPB, class Loc>
__global__ void __launch_bounds__(32 * WPB)
    qr_warp_kernel(Loc loc, int m, int n, index_t lda, index_t count, int LD) {
  static_assert(W == 16 || W == 32);
  using R = real_type_t<T>;
  constexpr int G = 32 / W;  // matrices per warp
  extern __shared__ __align__(16) unsigned char qr_warp_raw[];
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int g = lane / W, l = lane % W;
  const std::size_t per = qr_warp_bytes<T, W>(LD, n);
  unsigned char* const mine = qr_warp_raw + (std::size_t(warp) * G + std::size_t(g)) * per;
  T* const A = reinterpret_cast<T*>(mine);
  T* const cs = reinterpret_cast<T*>(mine + std::size_t(LD) * std::size_t(n) * sizeof(T));
  R* const cc = reinterpret_cast<R*>(cs + 2 * W);
  const index_t k = (index_t(blockIdx.x) * WPB + warp) * G + g;
  const bool live = k < count;  // lanes of a missing matrix still take part in the syncs
  T* const base = live ? loc(k) : nullptr;

#pragma unroll 1
  for (int r = l; r < m; r += W) {
#pragma unroll 1
    for (int j0 = 0; j0 < n; j0 += 8) {
      T v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) v[u] = (live && j0 + u < n) ? base[index_t(j0 + u) * lda + r] : T(0);
#pragma unroll
      for (int u = 0; u < 8; ++u)
        if (j0 + u < n) A[(j0 + u) * LD + r] = v[u];
    }
  }
  __syncwarp();

  const int jm = int(qr_jmax(m, n));
  const int ns = int(qr_stages(m, n));
  T* const col = A + l * LD;
#pragma unroll 1
  for (int st = 0; st < ns; ++st) {
    const int lo = st - (m - 2) > 0 ? st - (m - 2) : 0;  // active columns lo..hi (qr_stage_cols)
    const int hi = st / 2 < jm ? st / 2 : jm;
    const int par = (st & 1) * W;
    if (l >= lo && l <= hi) {
      const int i = m - 1 - st + 2 * l;
      T x = col[i - 1], y = col[i];
      const T z = givens_encode(givens_make(x, y));
      const givens<T> gr = givens_decode(z);
      givens_apply(gr, x, y, false);
      col[i - 1] = x;
      col[i] = z;  // y is zero up to rounding: the slot keeps the rotation
      cc[par + l] = gr.c;
      cs[par + l] = gr.s;
    }
    __syncwarp();
    const int top = hi < l - 1 ? hi : l - 1;  // rotations of columns j < l
    if (l < n) {
#pragma unroll 1
      for (int j0 = lo; j0 <= top; j0 += U) {
        T x[U], y[U], s[U];
        R c[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int i = m - 1 - st + 2 * (j0 + u);
          if (j0 + u <= top) {
            x[u] = col[i - 1];
            y[u] = col[i];
            c[u] = cc[par + j0 + u];
            s[u] = cs[par + j0 + u];
          }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
          const int i = m - 1 - st + 2 * (j0 + u);
          if (j0 + u <= top) {
            givens_apply(givens<T>{c[u], s[u]}, x[u], y[u], false);
            col[i - 1] = x[u];
            col[i] = y[u];
          }
        }
      }
    }
  }
  __syncwarp();

  if (live) {
#pragma unroll 1
    for (int r = l; r < m; r += W) {
#pragma unroll 1
      for (int j0 = 0; j0 < n; j0 += 8) {
        T v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u)
          if (j0 + u < n) v[u] = A[(j0 + u) * LD + r];
#pragma unroll
        for (int u = 0; u < 8; ++u)
          if (j0 + u < n) base[index_t(j0 + u) * lda + r] = v[u];
      }
    }
  }
}

template <class T, int W, int U, int WPB, class Loc>
inline void qr_warp_launch(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda,
                           index_t count, const char* name) {
  const int LD = int(m) | 1;
  const std::size_t smem = std::size_t(WPB) * (32 / W) * qr_warp_bytes<T, W>(LD, int(n));
  constexpr index_t per_block = WPB * (32 / W);
  const index_t blocks = (count + per_block - 1) / per_block;
  detail_require(blocks <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  qr_warp_kernel<T, W, U, WPB, Loc><<<unsigned(blocks), unsigned(32 * WPB), smem, b.stream>>>(loc, int(m), int(n), lda, count, LD);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

/// @brief qr_factor on CUDA for qr_warp_min_m <= m <= qr_warp_max_m, T
///        double or complex<double>; false (nothing done) elsewhere.
template <class T, class Loc>
inline bool qr_warp_factor(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda,
                           index_t count, const char* name) {
  if constexpr (qr_warp_type<T>) {
    if (m < qr_warp_min_m || m > qr_warp_max_m || count <= 0 || n <= 0) return false;
    if (is_complex_v<T> && n > 16 && m < 24) return false;  // the team path is as fast there
    emgpu::detail::device_guard guard(b.device);
    if (n <= 16) qr_warp_launch<T, 16, 1, 1>(b, loc, m, n, lda, count, name);
    else if (m < 28) qr_warp_launch<T, 32, 2, 1>(b, loc, m, n, lda, count, name);
    else qr_warp_launch<T, 32, 4, 1>(b, loc, m, n, lda, count, name);
    return true;
  } else {
    return false;
  }
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
