/// @file
/// @brief CUDA fast path of qr_factor for m <= 8 (qr_regs_max):
///        register-resident Givens QR, one lane per column, several matrices
///        per warp.
///
/// Layout: the kernel is compiled for a padded size N in {2, 4, 8} (the
/// schedule below is written for any power of two up to 32)
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
/// Memory traffic (reasoned, not measured): lane j reads and writes its own
/// column, so one load instruction of a warp touches 32/N matrices x N
/// columns (different sectors), but the unrolled loop over rows reads every
/// byte of those sectors within a few instructions (a column is contiguous,
/// N x sizeof(T) bytes, 512 for complex<double> at N = 32), so with the L1
/// holding a warp's columns meanwhile each sector comes from DRAM once; the
/// partial-sector stores are merged in the (write-back) L2.
#pragma once

#include <cstddef>
#include <string>

#include "common.hpp"
#include "qr_core.hpp"

#if defined(__CUDACC__)
#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#define EMGPU_QR_REGS_UNROLL _Pragma("unroll")
#define EMGPU_QR_REGS_INLINE __forceinline__
#else
#define EMGPU_QR_REGS_UNROLL
#define EMGPU_QR_REGS_INLINE inline
#endif

namespace emgpu::batched::detail {

/// Largest m the register path takes. The kernel is unrolled over all
/// 2N - 3 stages, so its code grows as N^2 columns x stages: 7 968 SASS
/// instructions at N = 8, 22 544 at 16 and 67 368 at 32 (complex<double>,
/// sm_90), far beyond the SM's instruction cache (the unrolled LU kernel of
/// 9 352 instructions was shown by ncu to starve for instructions; this one
/// was only timed): on an H200 (100 000 matrices) it took 2.59 ms at n = 16
/// and 28.6 ms at n = 32 against the generic team path's 1.73 and 10.8 ms,
/// and 0.320 ms against cuBLAS's 0.331 ms at n = 8, so only m <= 8 takes it.
/// With the one-rsqrt rotations (qr_core.hpp), same run: N = 8 0.209 ms
/// against the team path's 0.250, N = 16 1.98 against 1.33 ms.
constexpr index_t qr_regs_max = 8;

// The stage is a template argument (the kernel recurses over stages at
// compile time rather than relying on the unroller for a 61-stage loop, whose
// failure would move the register array to local memory).
// The per-lane pieces of the kernel are EMGPU_HD so that the host test can
// run the kernel's exact lane logic (lanes as a loop, a shuffle as reading
// another lane's rotation) against the serial path, bit for bit. They must
// be inlined into the kernel: a register array passed to a real call would
// live in local memory.

/// Whether column j has a rotation at stage st, on registers (p - 1, p),
/// p = N-1-st+2j; `off` = N - m. The range test on p folds at compile time.
EMGPU_HD EMGPU_QR_REGS_INLINE bool qr_regs_has(int N, int st, int j, int off, int n) {
  const int p = N - 1 - st + 2 * j;
  return p >= 1 && p <= N - 1 && j < n && p - off >= j + 1;
}

/// Column `col` (m entries, or none: nullptr) into registers off..N-1.
template <int N, class T>
EMGPU_HD EMGPU_QR_REGS_INLINE void qr_regs_load(T (&a)[N], const T* col, int off) {
  EMGPU_QR_REGS_UNROLL
  for (int p = 0; p < N; ++p) a[p] = (col != nullptr && p >= off) ? col[p - off] : T(0);
}
template <int N, class T>
EMGPU_HD EMGPU_QR_REGS_INLINE void qr_regs_store(const T (&a)[N], T* col, int off) {
  if (col == nullptr) return;
  EMGPU_QR_REGS_UNROLL
  for (int p = 0; p < N; ++p)
    if (p >= off) col[p - off] = a[p];
}

/// Lane l's part of stage st's first phase: if column l has a rotation, make
/// it from its pivot pair, apply the decoded pair, store z (as
/// qr_factor_core). Lanes without one make the identity from (0, 0), unused.
template <int N, int St, class T>
EMGPU_HD EMGPU_QR_REGS_INLINE givens<T> qr_regs_generate(T (&a)[N], int l, int off, int n) {
  constexpr int st = St;
  T x = T(0), y = T(0);
  EMGPU_QR_REGS_UNROLL
  for (int j = 0; j < N - 1; ++j) {
    const int p = N - 1 - st + 2 * j;
    if (l == j && qr_regs_has(N, st, j, off, n)) {
      x = a[p - 1];
      y = a[p];
    }
  }
  const T z = givens_encode(givens_make(x, y));
  const givens<T> g = givens_decode(z);
  givens_apply(g, x, y, false);
  EMGPU_QR_REGS_UNROLL
  for (int j = 0; j < N - 1; ++j) {
    const int p = N - 1 - st + 2 * j;
    if (l == j && qr_regs_has(N, st, j, off, n)) {
      a[p - 1] = x;
      a[p] = z;  // y is zero up to rounding: the slot keeps the rotation
    }
  }
  return g;
}

/// Lane l's part of the second phase for column j's rotation g (existing).
template <int N, int St, class T>
EMGPU_HD EMGPU_QR_REGS_INLINE void qr_regs_rotate(T (&a)[N], int j, int l, const givens<T>& g) {
  const int p = N - 1 - St + 2 * j;
  if (l > j) {
    T u = a[p - 1], v = a[p];
    givens_apply(g, u, v, false);
    a[p - 1] = u;
    a[p] = v;
  }
}

}  // namespace emgpu::batched::detail

#if defined(__CUDACC__)

namespace emgpu::batched::detail {

constexpr int qr_regs_threads = 128;

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

/// Stage St, then the following ones (2N - 3 stages: the most any m <= N
/// needs; those >= qr_stages(m, n) have no rotation and do nothing).
template <int N, int St, class T>
__device__ __forceinline__ void qr_regs_stage(T (&a)[N], int l, int off, int n) {
  const givens<T> g = qr_regs_generate<N, St>(a, l, off, n);
#pragma unroll
  for (int j = 0; j < N - 1; ++j) {
    if (!qr_regs_has(N, St, j, off, n)) continue;  // uniform over the warp
    givens<T> gj;
    gj.c = __shfl_sync(0xffffffffu, g.c, j, N);
    gj.s = qr_shfl(g.s, j, N);
    qr_regs_rotate<N, St>(a, j, l, gj);
  }
  if constexpr (St + 1 < 2 * N - 3) qr_regs_stage<N, St + 1>(a, l, off, n);
}

/// One matrix per N lanes; every lane of every warp runs the whole schedule
/// (lanes of matrices k >= count work on zeros and store nothing) so that the
/// full-mask shuffles always find all 32 lanes.
// Register budget: under __launch_bounds__(128) alone ptxas stopped the
// double N = 32 kernel at 128 registers with a 16-byte spill; __maxnreg__(255)
// (CUDA >= 12.4) lets it take 163 and no local memory (a 128-thread block at
// <= 255 registers always fits an SM's 64K).
#if defined(__CUDACC_VER_MAJOR__) && \
    (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4))
#define EMGPU_QR_REGS_BOUNDS __maxnreg__(255)
#else
#define EMGPU_QR_REGS_BOUNDS __launch_bounds__(qr_regs_threads)
#endif

template <int N, class T, class Loc>
__global__ void EMGPU_QR_REGS_BOUNDS
    qr_regs_kernel(Loc loc, int m, int n, index_t lda, index_t count) {
  const index_t k = (index_t(blockIdx.x) * qr_regs_threads + index_t(threadIdx.x)) / N;
  const int l = int(threadIdx.x) & (N - 1);
  const int off = N - m;  // register p holds row p - off
  T* col = nullptr;
  if (k < count && l < n) col = loc(k) + index_t(l) * lda;

  T a[N];
  qr_regs_load<N>(a, col, off);
  qr_regs_stage<N, 0>(a, l, off, n);
  qr_regs_store<N>(a, col, off);
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
  static_assert(qr_regs_max == 8, "qr_factor_regs dispatches N = 2, 4, 8");
  // Nothing is rotated (m <= 1 or n == 0): the factors are A itself.
  if (count <= 0 || qr_stages(m, n) == 0) return;
  emgpu::detail::device_guard guard(b.device);
  if (m <= 2) qr_regs_launch<2, T>(b, loc, m, n, lda, count, name);
  else if (m <= 4) qr_regs_launch<4, T>(b, loc, m, n, lda, count, name);
  else qr_regs_launch<8, T>(b, loc, m, n, lda, count, name);
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
