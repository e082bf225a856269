/// @file
/// @brief CUDA fast path of qr_factor for m <= 32: register-resident Givens
///        QR, one lane per column, several matrices per warp.
///
/// Layout: the kernel is compiled for a padded size N in {2, 4, 8, 16, 32}
/// (the next power of two >= m); N lanes hold one matrix, lane j its column j
/// as N values in a register array. The array is indexed by compile-time
/// constants only (every loop below is fully unrolled over N), so it stays in
/// registers. The matrix sits at the BOTTOM of the array: register p holds row
/// i = p - (N - m). With that shift the row pair that column j's rotation acts
/// on at Sameh-Kuck stage st, i = m-1-(st-2j) (qr_core.hpp), lives at
/// registers (p-1, p) with p = N-1-(st-2j): a compile-time index, while the
/// actual m and n (runtime, the same for the whole grid, hence uniform over a
/// warp) only decide WHETHER a rotation exists.
///
/// Schedule: stage st = 0 .. 2N-4 (the most any m <= N needs). Column j has a
/// rotation at stage st iff j < n, 2j <= st (i <= m-1) and i >= j+1 (below
/// the diagonal; this also gives i-1 >= 0 and j <= m-2): exactly the columns
/// [j0, j1] qr_stage_cols returns for (st, m, n), so stages >= qr_stages(m, n)
/// have none. At a stage every active column's lane makes its rotation from
/// its own two entries (one givens_make per lane per stage, all active
/// columns in parallel), encodes it, applies the DECODED pair to its pivot
/// pair and stores z in the annihilated slot, as qr_factor_core does; then
/// every lane l applies, in increasing j, the rotations of the active columns
/// j < l to its entries (p_j - 1, p_j), fetching (c, s) from lane j by
/// __shfl_sync.
///
/// Same operations as the generic path, entry by entry and in the same order:
/// within one stage, the row pairs of the active rotations are disjoint
/// (p_j = p_l - 2(l - j)), so each entry of column l is touched by at most one
/// operation per stage (column l's own rotation, or the one rotation j < l
/// whose pair contains it), the same one qr_factor_core performs at that
/// stage (it generates, syncs, then applies rotation j to the columns
/// j+1..n-1); and stages run in the same order. The arithmetic is the same
/// inline functions (givens_make / encode / decode / apply); only FMA
/// contraction, which nvcc decides per compiled context, may differ, so the
/// two paths agree to rounding, not bit for bit. Padding: registers p < N - m
/// (rows < 0) are never part of a pair because a rotation needs i - 1 >= 0,
/// so they stay zero; lanes l >= n (columns that do not exist) never make a
/// rotation, receive rotations on zeros, and are neither loaded nor stored.
/// Data cannot stall the kernel: there is no data-dependent loop, and NaN/Inf
/// or zero pairs go through givens_make's cases as on the generic path.
///
/// Memory traffic: lane j reads and writes its own column, so one load
/// instruction of a warp touches 32/N matrices x N columns (different
/// sectors), but the unrolled loop over rows reads every byte of those
/// sectors within a few instructions (a column is contiguous: N x sizeof(T)
/// bytes), which the L1 keeps: each sector is fetched from DRAM once.
#pragma once

#if defined(__CUDACC__)

#include <cstddef>
#include <string>

#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#include "common.hpp"
#include "qr_core.hpp"

namespace emgpu::batched::detail {

constexpr int qr_regs_threads = 128;

/// Largest m the register path takes.
constexpr index_t qr_regs_max = 32;

template <class T>
__device__ __forceinline__ T qr_shfl(T v, int src, int width) {
  if constexpr (is_complex_v<T>) {
    using R = real_type_t<T>;
    const R re = __shfl_sync(0xffffffffu, v.real(), src, width);
    const R im = __shfl_sync(0xffffffffu, v.imag(), src, width);
    return T(re, im);
  } else {
    return __shfl_sync(0xffffffffu, v, src, width);
  }
}

/// One matrix per N lanes; every lane of every warp runs the whole schedule
/// (lanes of matrices k >= count work on zeros and store nothing) so that the
/// full-mask shuffles always find all 32 lanes.
template <int N, class T, class Loc>
__global__ void __launch_bounds__(qr_regs_threads)
    qr_regs_kernel(Loc loc, int m, int n, index_t lda, index_t count) {
  const index_t k = (index_t(blockIdx.x) * qr_regs_threads + index_t(threadIdx.x)) / N;
  const int l = int(threadIdx.x) & (N - 1);
  const int off = N - m;  // register p holds row p - off
  T* col = nullptr;
  if (k < count && l < n) col = loc(k) + index_t(l) * lda;

  T a[N];
#pragma unroll
  for (int p = 0; p < N; ++p) a[p] = (col != nullptr && p >= off) ? col[p - off] : T(0);

#pragma unroll
  for (int st = 0; st < 2 * N - 3; ++st) {
    // Column j's rotation at this stage: registers (p - 1, p), p = N-1-st+2j;
    // 1 <= p <= N-1 is known at compile time, existence (j < n, i >= j+1,
    // i = p - off) at run time, uniformly over the warp.
    T x = T(0), y = T(0);
#pragma unroll
    for (int j = 0; j < N - 1; ++j) {
      const int p = N - 1 - st + 2 * j;
      if (p < 1 || p > N - 1) continue;
      if (l == j && j < n && p - off >= j + 1) {
        x = a[p - 1];
        y = a[p];
      }
    }
    // Lanes without a rotation make one from (0, 0): the identity, unused.
    const T z = givens_encode(givens_make(x, y));
    const givens<T> g = givens_decode(z);
    givens_apply(g, x, y, false);
#pragma unroll
    for (int j = 0; j < N - 1; ++j) {
      const int p = N - 1 - st + 2 * j;
      if (p < 1 || p > N - 1) continue;
      if (l == j && j < n && p - off >= j + 1) {
        a[p - 1] = x;
        a[p] = z;  // y is zero up to rounding: the slot keeps the rotation
      }
    }
#pragma unroll
    for (int j = 0; j < N - 1; ++j) {
      const int p = N - 1 - st + 2 * j;
      if (p < 1 || p > N - 1) continue;
      if (!(j < n && p - off >= j + 1)) continue;  // uniform over the warp
      givens<T> gj;
      gj.c = __shfl_sync(0xffffffffu, g.c, j, N);
      gj.s = qr_shfl(g.s, j, N);
      if (l > j) {
        T u = a[p - 1], v = a[p];
        givens_apply(gj, u, v, false);
        a[p - 1] = u;
        a[p] = v;
      }
    }
  }

  if (col != nullptr) {
#pragma unroll
    for (int p = 0; p < N; ++p)
      if (p >= off) col[p - off] = a[p];
  }
}

template <int N, class T, class Loc>
inline void qr_regs_launch(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda,
                           index_t count, const char* name) {
  const index_t blocks = (count * N + qr_regs_threads - 1) / qr_regs_threads;
  detail_require(blocks <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  qr_regs_kernel<N, T, Loc><<<unsigned(blocks), unsigned(qr_regs_threads), 0, b.stream>>>(
      loc, int(m), int(n), lda, count);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

/// @brief qr_factor for m <= qr_regs_max on CUDA; same results (to rounding)
///        and storage as the generic team path.
template <class T, class Loc>
inline void qr_factor_regs(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda,
                           index_t count, const char* name) {
  // Nothing is rotated (m <= 1 or n == 0): the factors are A itself.
  if (count <= 0 || qr_stages(m, n) == 0) return;
  emgpu::detail::device_guard guard(b.device);
  if (m <= 2) qr_regs_launch<2, T>(b, loc, m, n, lda, count, name);
  else if (m <= 4) qr_regs_launch<4, T>(b, loc, m, n, lda, count, name);
  else if (m <= 8) qr_regs_launch<8, T>(b, loc, m, n, lda, count, name);
  else if (m <= 16) qr_regs_launch<16, T>(b, loc, m, n, lda, count, name);
  else qr_regs_launch<32, T>(b, loc, m, n, lda, count, name);
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
