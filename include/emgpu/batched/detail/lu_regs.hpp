/// @file
/// @brief CUDA fast path of batched LU for n <= 32: each matrix lives in the
///        registers of N lanes (one row per lane), N = next power of two >= n.
///
/// The elimination is the one of lu_factor_core (detail/lu_core.hpp), step
/// for step and with the same arithmetic, so it returns the same P, L, U,
/// ipiv and info: pivot = largest |re|+|im| in column k over the current
/// positions k..n-1, smallest position on ties, position k when none
/// compares (all NaN); l = a_ik * (1 / u_kk); a_ij = a_ij - l u_kj; an exactly
/// zero pivot sets info (first one) and skips the swap and the update.
///
/// Rows are never moved between lanes: lane i keeps original row i and its
/// current position `pos` (LAPACK-style swap of positions k and p: the lane
/// at p goes to k, the one at k to p). The pivot lane publishes its row
/// through shared memory (one 16-byte store per entry by one lane, one
/// broadcast load per entry by all: cheaper than 4 shuffles per
/// complex<double>), and lane i finally stores its row to row pos_i.
///
/// Padding (n < N): lanes i >= n and columns j >= n hold zeros. Padding lanes
/// never take part in the pivot search or the update and store nothing, so
/// the real rows see exactly the operations of the generic path. Columns
/// j >= n of real rows are updated with the pivot row's zeros (they stay
/// zero, or NaN after a non-finite multiplier) and are never stored or read
/// back into columns < n, so they cannot change the result.
#pragma once

#if defined(__CUDACC__)

#include <cooperative_groups.h>

#include <string>

#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#include "common.hpp"

namespace emgpu::batched::detail {

/// Largest n handled by the register kernels.
constexpr index_t lu_regs_max_n = 32;
/// Threads per block (lu_regs_block<N> / N matrices per block). N = 32 with
/// complex<double> needs ~176 registers a lane, which caps an SM at 11 warps:
/// one-warp blocks can use all 11 (128-thread blocks only 8); smaller N are
/// not register-bound and take 128 threads.
template <int N>
inline constexpr int lu_regs_block = N == 32 ? 32 : 128;

template <int N, class T, class Loc>
__global__ void __launch_bounds__(lu_regs_block<N>)
    lu_regs_kernel(Loc loc, int n, index_t lda, index_t* ipiv, int* info, index_t count) {
  using R = real_type_t<T>;
  constexpr int groups = lu_regs_block<N> / N;
  // Two pivot-row buffers per group, alternating with k: a lane can only
  // write buffer k&1 again at step k+2, after every lane of its group passed
  // the sync of step k+1, i.e. after all reads of step k: one sync per step.
  __shared__ __align__(16) unsigned char raw[groups * 2 * N * sizeof(T)];
  const auto tile = cooperative_groups::tiled_partition<N>(cooperative_groups::this_thread_block());
  const int lane = int(threadIdx.x) % N;
  const int g = int(threadIdx.x) / N;
  const index_t mat = index_t(blockIdx.x) * groups + g;
  if (mat >= count) return;  // whole groups leave; a group syncs only itself
  T* const sbuf = reinterpret_cast<T*>(raw) + g * 2 * N;

  T* const base = loc(mat);
  const bool row = lane < n;
  T a[N];
  {
    const T* src = base + lane;
#pragma unroll
    for (int j = 0; j < N; ++j) a[j] = (row && j < n) ? src[index_t(j) * lda] : T(0);
  }

  int pos = lane;    // current row position of this lane's row
  int mypiv = lane;  // ipiv[lane], set at step k == lane
  int inf = 0;
#pragma unroll
  for (int k = 0; k < N; ++k) {
    if (k >= n) break;  // n is uniform over the grid
    // Pivot search, as lu_factor_core: start from (-1, k) so that NaN (which
    // fails every compare) is never chosen and an all-NaN column gives k.
    R v = R(-1);
    int p = k;
    if (row && pos >= k) {
      const R x = abs1(a[k]);
      if (x > v) {
        v = x;
        p = pos;
      }
    }
    // (v desc, p asc) is a strict total order on the candidates (distinct
    // positions; the (-1, k) fillers lose to every real candidate), so the
    // butterfly leaves every lane with the same, unique winner.
#pragma unroll
    for (int off = N / 2; off > 0; off /= 2) {
      const R ov = tile.shfl_xor(v, off);
      const int op = tile.shfl_xor(p, off);
      if (ov > v || (ov == v && op < p)) {
        v = ov;
        p = op;
      }
    }
    if (lane == k) mypiv = p;  // recorded even for a zero pivot, as the generic path
    T* const u = sbuf + (k & 1) * N;
    if (row && pos == p) {  // exactly one lane: positions 0..n-1 are a permutation
#pragma unroll
      for (int j = k; j < N; ++j) u[j] = a[j];
    }
    tile.sync();
    const T piv = u[k];
    if (is_zero(piv)) {
      if (inf == 0) inf = k + 1;  // no swap, no update (generic path: `continue`)
    } else {
      const T r = T(1) / piv;
      if (pos == p) pos = k;
      else if (pos == k) pos = p;
      if (row && pos > k) {
        const T l = a[k] * r;
        a[k] = l;
#pragma unroll
        for (int j = k + 1; j < N; ++j) a[j] = a[j] - l * u[j];
      }
    }
  }

  if (row) {
    T* dst = base + pos;
#pragma unroll
    for (int j = 0; j < N; ++j)
      if (j < n) dst[index_t(j) * lda] = a[j];
    ipiv[mat * n + lane] = index_t(mypiv);
  }
  if (lane == 0) info[mat] = inf;
}

template <int N, class T, class Loc>
inline void lu_regs_launch_n(const backend::cuda& b, Loc loc, index_t n, index_t lda, index_t* ipiv,
                             int* info, index_t count, const char* name) {
  constexpr index_t groups = lu_regs_block<N> / N;
  const index_t grid = (count + groups - 1) / groups;
  detail_require(grid <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  lu_regs_kernel<N, T, Loc>
      <<<unsigned(grid), unsigned(lu_regs_block<N>), 0, b.stream>>>(loc, int(n), lda, ipiv, info, count);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

/// @brief Factors count n x n matrices (1 <= n <= lu_regs_max_n) in
///        registers; same contract as lu_factor.
template <class T, class Loc>
inline void lu_regs_launch(const backend::cuda& b, Loc loc, index_t n, index_t lda, index_t* ipiv,
                           int* info, index_t count, const char* name) {
  if (count <= 0 || n <= 0) return;
  emgpu::detail::device_guard guard(b.device);
  if (n <= 2) lu_regs_launch_n<2, T>(b, loc, n, lda, ipiv, info, count, name);
  else if (n <= 4) lu_regs_launch_n<4, T>(b, loc, n, lda, ipiv, info, count, name);
  else if (n <= 8) lu_regs_launch_n<8, T>(b, loc, n, lda, ipiv, info, count, name);
  else if (n <= 16) lu_regs_launch_n<16, T>(b, loc, n, lda, ipiv, info, count, name);
  else lu_regs_launch_n<32, T>(b, loc, n, lda, ipiv, info, count, name);
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
