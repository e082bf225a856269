/// @file
/// @brief CUDA fast paths of batched LU for n <= 64, each matrix in
///        registers: for n <= 32 one row per lane of N lanes (N = next power
///        of two >= n, except 16 lanes holding N = 12 columns for n = 9..12
///        and 32 lanes holding N = 24 for n = 17..24; complex<float> also
///        N = 20 and 28);
///        for n = 33..64 one 256-thread block per matrix
///        (lu_regs64_kernel, described there). What follows is the n <= 32
///        kernel. lu_factor sends double and complex<double> at
///        n = 17..32 to lu_mma.hpp instead (faster there).
///
/// The elimination is the one of lu_factor_core (detail/lu_core.hpp), step
/// for step, with the same pivot choice and info: pivot = largest |re|+|im| in column k over the current
/// positions k..n-1, smallest position on ties, position k when none
/// compares (all NaN); l = a_ik * (1 / u_kk); a_ij = a_ij - l u_kj; an exactly
/// zero pivot sets info (first one) and skips the swap and the update. The
/// update is written with explicit FMAs, so L and U differ from the generic
/// path by rounding only (the test bounds the difference by 10 n eps).
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

#include <bit>
#include <string>
#include <type_traits>

#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#include "common.hpp"

namespace emgpu::batched::detail {

/// Largest n handled by the register kernels.
constexpr index_t lu_regs_max_n = 32;
/// Threads per block (lu_regs_block<N> / lu_regs_lanes<N> matrices per block) and the
/// occupancy asked of ptxas. An SM sub-partition holds 16384 registers.
/// N = 32, complex<double>: 224 registers uncapped (2 warps per
/// sub-partition); capped at 168 (3 warps, one-warp blocks so that all 12
/// fit) it spills a few hundred bytes per lane and still ran 2.40 against
/// 2.49 ms for 100 000 matrices on an H200. N = 8: 80 registers uncapped, 64 without
/// spills at 8 blocks of 128 threads: 0.060 against 0.067 ms. N = 16 (128
/// registers, 4 warps) and smaller are left to ptxas.
/// Tried and not kept (H200, 100 000 complex<double> 32 x 32, same run):
/// persistent warps prefetching their next matrix into shared memory
/// (cp.async) while factoring the current one: 3.03 ms (2.43 ms uncapped)
/// against 2.26 ms for this kernel, which is latency-bound, not waiting on
/// memory (docs/batched.md has the profile).
/// Lanes per matrix: one per row, the next power of two >= N, so that the
/// column counts between the powers of two (12, 20, 24, 28) take the lanes
/// of the next one.
template <int N>
inline constexpr int lu_regs_lanes = int(std::bit_ceil(unsigned(N)));
template <int N>
inline constexpr int lu_regs_block = lu_regs_lanes<N> == 32 ? 32 : 128;
template <int N>
inline constexpr int lu_regs_min_blocks = lu_regs_lanes<N> == 32 ? 12 : N == 8 ? 8 : 1;

/// a - l u with the multiplication fused (4 FMAs for complex, where nvcc
/// left `a - l * u` as 2 FMAs + 4 separate operations): the update is most
/// of the kernels' FP64 work.
template <class T>
__device__ __forceinline__ T lu_fnma(T a, T nl, T u) {
  if constexpr (is_complex_v<T>) {
    const auto re = ::fma(nl.real(), u.real(), ::fma(-nl.imag(), u.imag(), a.real()));
    const auto im = ::fma(nl.real(), u.imag(), ::fma(nl.imag(), u.real(), a.imag()));
    return T(re, im);
  } else {
    return ::fma(nl, u, a);
  }
}

/// Pivot search over a whole warp in three redux.sync instead of a 5-round
/// shuffle butterfly: the key (|x|_1 bits + 1, position) orders like the
/// (v desc, p asc) compare of lu_factor_core because |x|_1 >= 0 and
/// non-negative IEEE values order as their bit patterns. x must not be -0,
/// whose sign bit sorts above every positive value (abs1 gives +0; before
/// session 37 it kept -0, and a -0 entry won the search); NaN and
/// non-candidates get key 0 and never win. H == 0: no lane had a key (all
/// NaN or no candidates), which the caller maps to position k.
struct lu_warp_winner {
  unsigned H, L, P;  // key (high, low word) and position of the winner
};
template <class R>
__device__ __forceinline__ lu_warp_winner lu_warp_argmax(bool cand, R x, int pos) {
  unsigned hi = 0u, lo = 0u;
  if (cand && !(x != x)) {
    if constexpr (sizeof(R) == 8) {
      const auto bits = static_cast<unsigned long long>(__double_as_longlong(double(x)));
      hi = unsigned(bits >> 32) + 1u;  // +Inf: 0x7ff00001, no wrap
      lo = unsigned(bits);
    } else {
      hi = __float_as_uint(float(x)) + 1u;
    }
  }
  const unsigned full = 0xffffffffu;
  lu_warp_winner w;
  w.H = __reduce_max_sync(full, hi);
  w.L = sizeof(R) == 8 ? __reduce_max_sync(full, hi == w.H ? lo : 0u) : 0u;
  w.P = __reduce_min_sync(full, (w.H != 0u && hi == w.H && lo == w.L) ? unsigned(pos) : 0xffffffffu);
  return w;
}

/// The first stage of lu_warp_argmax alone: H, the largest high word of
/// the key, and B, the lanes holding it. With one lane in B that lane is
/// lu_warp_argmax's winner (its key is the unique maximum); otherwise the
/// caller runs lu_warp_argmax (H == 0: no candidate, B = every lane).
struct lu_warp_hi {
  unsigned H, B;
};
template <class R>
__device__ __forceinline__ lu_warp_hi lu_warp_argmax_hi(bool cand, R x) {
  unsigned hi = 0u;
  if (cand && !(x != x)) {
    if constexpr (sizeof(R) == 8)
      hi = unsigned(static_cast<unsigned long long>(__double_as_longlong(double(x))) >> 32) + 1u;
    else
      hi = __float_as_uint(float(x)) + 1u;
  }
  lu_warp_hi w;
  w.H = __reduce_max_sync(0xffffffffu, hi);
  w.B = __ballot_sync(0xffffffffu, hi == w.H);
  return w;
}

/// Whether winner b beats winner a in the pivot order of lu_warp_argmax
/// (larger key; on equal keys the smaller position), for merging the
/// winners of several warps.
__device__ __forceinline__ bool lu_winner_beats(const lu_warp_winner& b, const lu_warp_winner& a) {
  return b.H > a.H || (b.H == a.H && (b.L > a.L || (b.L == a.L && b.P < a.P)));
}

/// The elimination runs in blocks of BW = min(N, 8) columns (4 for N = 12, 20, 28). Before block b
/// the row has been rotated left by b*BW, so the block's columns sit at the
/// static register indices 0..BW-1 and the live trailing columns at
/// BW..N-1-b*BW; groups of BW columns past that are finished (L entries)
/// and skipped by a warp-uniform test. After each block the row rotates by
/// BW more; after N/BW blocks it is back in place. The block loop is not
/// unrolled: unrolled over all 32 steps the N = 32 kernel was ~9300 SASS
/// instructions (~150 KB), beyond the SM's instruction cache, and an ncu
/// profile (H200) showed it issuing one instruction per ~10 cycles per warp;
/// rolled it is 3 752 instructions, with the same operation count.
template <int N, class T, class Loc, int MinBlocks = lu_regs_min_blocks<N>>
__global__ void __launch_bounds__(lu_regs_block<N>, MinBlocks)
    lu_regs_kernel(Loc loc, int n, index_t lda, index_t* ipiv, int* info, index_t count) {
  using R = real_type_t<T>;
  constexpr int LN = lu_regs_lanes<N>;
  constexpr int groups = lu_regs_block<N> / LN;
  constexpr int BW = N < 8 ? N : N % 8 == 0 ? 8 : 4;
  constexpr int NB = N / BW;
  // Two pivot-row buffers per group, alternating with k: a lane can only
  // write buffer k&1 again at step k+2, after every lane of its group passed
  // the sync of step k+1, i.e. after all reads of step k: one sync per step.
  __shared__ __align__(16) unsigned char raw[groups * 2 * N * sizeof(T)];
  const auto tile = cooperative_groups::tiled_partition<LN>(cooperative_groups::this_thread_block());
  const int lane = int(threadIdx.x) % LN;
  const int g = int(threadIdx.x) / LN;
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
#pragma unroll 1
  for (int b = 0; b < NB; ++b) {
    const int live_groups = NB - b;  // groups 0..live_groups-1 hold live columns
#pragma unroll
    for (int s = 0; s < BW; ++s) {
      const int k = b * BW + s;
      if (k < n) {  // n is uniform over the grid; later steps only rotate
        const bool cand = row && pos >= k;
        int p = k;
        if constexpr (LN == 32) {
          const lu_warp_winner w = lu_warp_argmax(cand, abs1(a[s]), pos);
          if (w.H != 0u) p = int(w.P);
        } else {
          // As lu_factor_core: start from (-1, k) so that NaN (which fails
          // every compare) is never chosen and an all-NaN column gives k.
          R v = R(-1);
          if (cand) {
            const R x = abs1(a[s]);
            if (x > v) {
              v = x;
              p = pos;
            }
          }
          tile_argmax(tile, v, p);
        }
        if (lane == k) mypiv = p;  // recorded even for a zero pivot, as the generic path
        T* const u = sbuf + (k & 1) * N;
        if (row && pos == p) {  // exactly one lane: positions 0..n-1 are a permutation
#pragma unroll
          for (int j = s; j < BW; ++j) u[j] = a[j];
#pragma unroll
          for (int gg = 1; gg < NB; ++gg)
            if (gg < live_groups) {
#pragma unroll
              for (int j = gg * BW; j < (gg + 1) * BW; ++j) u[j] = a[j];
            }
        }
        tile.sync();
        const T piv = u[s];
        if (is_zero(piv)) {
          if (inf == 0) inf = k + 1;  // no swap, no update (generic path: `continue`)
        } else {
          const T r = T(1) / piv;
          if (pos == p) pos = k;
          else if (pos == k) pos = p;
          if (row && pos > k) {
            const T l = a[s] * r;
            const T nl = -l;
            a[s] = l;
#pragma unroll
            for (int j = s + 1; j < BW; ++j) a[j] = lu_fnma(a[j], nl, u[j]);
#pragma unroll
            for (int gg = 1; gg < NB; ++gg)
              if (gg < live_groups) {
#pragma unroll
                for (int j = gg * BW; j < (gg + 1) * BW; ++j) a[j] = lu_fnma(a[j], nl, u[j]);
              }
          }
        }
      }
    }
    if constexpr (NB > 1) {
      T t[BW];
#pragma unroll
      for (int j = 0; j < BW; ++j) t[j] = a[j];
#pragma unroll
      for (int j = 0; j < N - BW; ++j) a[j] = a[j + BW];
#pragma unroll
      for (int j = 0; j < BW; ++j) a[N - BW + j] = t[j];
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

/// n = 33..64: one matrix per 256-thread block, thread (r, g) = (t % 64,
/// t / 64) holding row r's columns j = 4q + g, q = 0..15, in registers
/// (interleaved, so that the four column groups stay equally busy as the
/// elimination narrows). Step k = 4R + s belongs to group s; after every
/// round of four steps each thread rotates its 16 columns by one, so the
/// current column of every group is always a[0] and finished columns move
/// to the end (skipped by a block-uniform test on q). Per step: the owner
/// group's two warps search their halves (redux.sync), the other threads
/// wait at a barrier; every thread merges the two halves; the pivot row's
/// four threads publish their live entries; the owner group forms the
/// multipliers; everyone updates. Three barriers a step; each shared buffer
/// is written only after a barrier that every reader of its previous
/// contents has passed, so none needs double buffering.
constexpr index_t lu_regs64_min_n = 33;
constexpr index_t lu_regs64_max_n = 64;
constexpr int lu_regs64_threads = 256;

template <class T, class Loc>
__global__ void __launch_bounds__(lu_regs64_threads, 2)
    lu_regs64_kernel(Loc loc, int n, index_t lda, index_t* ipiv, int* info) {
  constexpr int N = 64, G = 4, C = N / G;
  __shared__ lu_warp_winner part[2];       // the owner group's two warps' winners
  __shared__ __align__(16) T urow[G][C];   // pivot row, group g's live columns
  __shared__ __align__(16) T lcol[N];      // multipliers by row
  const int t = int(threadIdx.x);
  const int r = t % N;
  const int g = t / N;
  const int lane = t % 32;
  const index_t mat = index_t(blockIdx.x);
  T* const base = loc(mat);
  const bool row = r < n;
  T a[C];
#pragma unroll
  for (int q = 0; q < C; ++q) {
    const int j = q * G + g;
    a[q] = (row && j < n) ? base[r + index_t(j) * lda] : T(0);
  }
  int pos = r;
  int mypiv = r;
  int inf = 0;
#pragma unroll 1
  for (int rd = 0; rd < C; ++rd) {
#pragma unroll
    for (int s = 0; s < G; ++s) {
      const int k = rd * G + s;
      if (k < n) {  // uniform over the block
        if (g == s) {  // the owner group's two warps: warp-uniform
          const lu_warp_winner w = lu_warp_argmax(row && pos >= k, abs1(a[0]), pos);
          if (lane == 0) part[r / 32] = w;
        }
        __syncthreads();  // A: both halves' winners are in part
        int p;
        {
          const lu_warp_winner w0 = part[0], w1 = part[1];
          const lu_warp_winner& w = lu_winner_beats(w1, w0) ? w1 : w0;
          p = w.H == 0u ? k : int(w.P);
        }
        if (g == 0 && r == k) mypiv = p;
        if (row && pos == p) {  // the pivot row's four threads
          // Local column q holds global column 4(rd + q) + g; it is live
          // (>= k) for q >= 1, and for q = 0 when g >= s.
          if (g >= s) urow[g][0] = a[0];
#pragma unroll
          for (int q = 1; q < C; ++q)
            if (q < C - rd) urow[g][q] = a[q];
        }
        __syncthreads();  // B: pivot row published
        const T piv = urow[s][0];
        if (is_zero(piv)) {
          if (inf == 0) inf = k + 1;  // no swap, no update, as the generic path
        } else {
          if (pos == p) pos = k;
          else if (pos == k) pos = p;
          const bool upd = row && pos > k;
          if (g == s) {
            T l = T(0);
            if (upd) {
              l = a[0] * (T(1) / piv);
              a[0] = l;
            }
            lcol[r] = l;
          }
          __syncthreads();  // C: multipliers published
          if (upd) {
            const T nl = -lcol[r];
            if (g > s) a[0] = lu_fnma(a[0], nl, urow[g][0]);
#pragma unroll
            for (int q = 1; q < C; ++q)
              if (q < C - rd) a[q] = lu_fnma(a[q], nl, urow[g][q]);
          }
        }
      }
    }
    T t0 = a[0];
#pragma unroll
    for (int q = 0; q < C - 1; ++q) a[q] = a[q + 1];
    a[C - 1] = t0;
  }
  if (row) {
    T* dst = base + pos;
#pragma unroll
    for (int q = 0; q < C; ++q) {
      const int j = q * G + g;
      if (j < n) dst[index_t(j) * lda] = a[q];
    }
    if (g == 0) ipiv[mat * n + r] = index_t(mypiv);
  }
  if (t == 0) info[mat] = inf;
}

template <class T, class Loc>
inline void lu_regs64_launch(const backend::cuda& b, Loc loc, index_t n, index_t lda, index_t* ipiv, int* info,
                             index_t count, const char* name) {
  if (count <= 0) return;
  emgpu::detail::device_guard guard(b.device);
  detail_require(count <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  lu_regs64_kernel<T, Loc><<<unsigned(count), unsigned(lu_regs64_threads), 0, b.stream>>>(loc, int(n), lda, ipiv, info);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

template <int N, class T, class Loc>
inline void lu_regs_launch_n(const backend::cuda& b, Loc loc, index_t n, index_t lda, index_t* ipiv,
                             int* info, index_t count, const char* name) {
  constexpr index_t groups = lu_regs_block<N> / lu_regs_lanes<N>;
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
  // 12 and 24 columns in registers instead of 16 and 32: fewer registers
  // (complex<float> at 24: 96 against 115, 21 warps per SM instead of 17;
  // complex<double> at 12: 100 against 128) and no work on columns that
  // cannot exist. H200, 100 000 matrices, factors bit for bit equal
  // (session 35, measured at n = 9, 10, 12 and 17, 20, 24): n <= 12
  // complex<double> 1.10-1.11x, double 1.09-1.11x, complex<float>
  // 1.24-1.25x, float 1.04-1.06x; 17..24 complex<float> 1.43-1.44x, float
  // 1.28-1.30x (double types take lu_mma.hpp there).
  else if (n <= 12) lu_regs_launch_n<12, T>(b, loc, n, lda, ipiv, info, count, name);
  else if (n <= 16) lu_regs_launch_n<16, T>(b, loc, n, lda, ipiv, info, count, name);
  else {
    // complex<float> also has 20 and 28 columns: against 24 and 32, 1.20x at
    // n = 17, 20 and 1.15-1.17x at 25, 28 (H200, bit for bit equal); float
    // gained 1.02-1.04x with 20 and lost (0.96x) with 28, so it keeps 24, 32.
    if constexpr (std::is_same_v<T, complex<float>>) {
      if (n <= 20) return lu_regs_launch_n<20, T>(b, loc, n, lda, ipiv, info, count, name);
      if (n > 24 && n <= 28) return lu_regs_launch_n<28, T>(b, loc, n, lda, ipiv, info, count, name);
    }
    if (n <= 24) lu_regs_launch_n<24, T>(b, loc, n, lda, ipiv, info, count, name);
    else lu_regs_launch_n<32, T>(b, loc, n, lda, ipiv, info, count, name);
  }
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
