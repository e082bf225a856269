/// @file
/// @brief CUDA batched LU for 65 <= n <= 128: one 256-thread block per
///        matrix, blocked right-looking elimination (panels of 8 columns)
///        on the matrix staged in shared memory.
///
/// Why blocked: the team path (lu_core.hpp) does a rank-1 update per column,
/// reading and writing the whole trailing matrix in shared memory n times;
/// at n = 128 that is bounded by shared-memory bandwidth at a quarter of the
/// FP64 rate and in practice ran ~6x slower still (one block per SM, a few
/// barriers per column). Here the trailing matrix is touched once per panel
/// of 8 columns, by 4 x 4 register tiles (16 accumulators, 8 loads per 16
/// FMAs).
///
/// Per panel (columns j0 .. j0+w-1, w <= 8), lu_blk_step:
///  1. one thread per other column: the panel's row interchanges (those of
///     zero pivots skipped, as lu_factor_core does), then for trailing
///     columns the unit-lower solve U12 = L11^-1 A12;
///  2. look-ahead, the two halves of the block at once:
///     - warps 0-3 (lu_blk_panel, one warp per scheduler) take the next
///       panel: its share of this panel's update, then its factorisation,
///       thread t holding row j1 + t's 8 panel entries in registers. Rows
///       never move; each keeps its current position (as lu_regs.hpp). Per
///       column: pivot search by redux.sync in each warp, the warp winners
///       publish key and row (the row at position k publishes itself, for
///       the no-candidate case), one 128-thread barrier, every thread merges
///       the 4 winners (largest |re|+|im|, smallest position on ties:
///       lu_factor_core's rule), swaps positions and updates its row.
///       Buffers alternate with the column parity, so one barrier a column
///       suffices: a buffer is rewritten two columns later, after a barrier
///       every reader of it has passed;
///     - warps 4-7 (lu_blk_gemm) apply this panel's update A22 -= L21 U12 to
///       the columns right of the next panel, by 4 x 4 tiles whose rows
///       (and columns) are spaced ceil(m/4) apart, so that a warp reads
///       consecutive rows of a column (no bank conflicts) and one U12 entry
///       (broadcast).
///     The column steps are latency-bound (~1 300 cycles each at n = 100 on
///     an H200), the update throughput-bound; overlapping them took n = 100
///     from 4.53 to 4.05 ms for 5 000 matrices.
/// Every entry sees the updates of lu_factor_core in the same order (the
/// k-th update of entry (i, j) is still -l_ik u_kj), written as FMAs, with
/// the pivot's reciprocal from lu_recip: the factors equal the team path's
/// to rounding, pivots and info the same (tested in complex<double> for
/// n = 65..72, 79, 96, 100, 111-113, 120, 127, 128, and in the other three
/// types at 77-128).
///
/// Tried and not kept (H200, complex<double>, 5 000 matrices): the panel in
/// one warp (4 rows a lane, no block barrier): one warp issued one
/// instruction per ~6 cycles, 1.8x slower than eight warps with a barrier;
/// the panel on all 8 warps (two threads a row, multipliers by shuffle)
/// before look-ahead: 8.09 ms at n = 128; a reciprocal formed speculatively
/// by every candidate and a single-redux search when one lane holds the
/// largest high word: 15-20 % slower (more code, more divergence).
///
/// Columns that do not fit in shared memory (complex<double> n > ~111 on
/// Hopper's 227 KB) are the leading ones, worked on in place in global
/// memory through a per-column address (generic loads) until the panels
/// have passed them; their later row interchanges are applied at the end in
/// one gather.
#pragma once

#if defined(__CUDACC__)

#include <algorithm>
#include <string>

#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#include "common.hpp"
#include "lu_regs.hpp"
#include "smem_limit.hpp"

namespace emgpu::batched::detail {

constexpr index_t lu_blk_min_n = 65;
constexpr index_t lu_blk_max_n = 128;
constexpr int lu_blk_threads = 256;
constexpr int lu_blk_nb = 8;  // panel width

/// Addresses of the columns in shared memory, c >= jg at s + (c - jg) * lds
/// (the pointer derives from the __shared__ array, so nvcc emits shared
/// loads).
template <class T>
struct lu_blk_scols {
  T* s;
  int lds, jg;
  __device__ __forceinline__ T* operator()(int c) const { return s + (c - jg) * lds; }
};
/// Leading jg columns in global memory, the rest in shared (generic loads).
template <class T>
struct lu_blk_gcols {
  T* g;
  index_t lda;
  T* s;
  int lds, jg;
  __device__ __forceinline__ T* operator()(int c) const {
    return c < jg ? g + index_t(c) * lda : s + (c - jg) * lds;
  }
};

/// 1 / z with one real reciprocal (conj(z) / |z|^2) where |z|^2 is safely
/// inside the normal range, else the library's scaled division: the
/// reciprocal is on the critical path of every column, and thrust's
/// division takes two dependent reciprocals. Differs from T(1) / z by a few
/// ulps (the factors agree with the team path to rounding, not bitwise).
template <class T>
__device__ __noinline__ T lu_recip_slow(T z) {  // rare: kept out of line (code size)
  return T(1) / z;
}
template <class T>
__device__ __forceinline__ T lu_recip(T z) {
  if constexpr (is_complex_v<T>) {
    using R = real_type_t<T>;
    const R x = z.real(), y = z.imag();
    const R d = x * x + y * y;
    R lo, hi;
    if constexpr (sizeof(R) == 8) {
      lo = 0x1p-1000;
      hi = 0x1p+1000;
    } else {
      lo = 0x1p-120f;
      hi = 0x1p+120f;
    }
    if (d >= lo && d <= hi) {  // false for NaN and Inf
      const R i = R(1) / d;
      return T(x * i, -y * i);
    }
    return lu_recip_slow(z);
  }
  return T(1) / z;
}

/// Panel threads: warps 0-3, one per SM sub-partition (the panel's column
/// steps are latency-bound: one warp alone issued one instruction per ~6
/// cycles and took 1.8x longer than eight warps with a block barrier).
constexpr int lu_blk_panel_threads = 128;
constexpr int lu_blk_panel_warps = lu_blk_panel_threads / 32;
__device__ __forceinline__ void lu_blk_panel_sync() { asm volatile("bar.sync 1, 128;" ::: "memory"); }
/// The other 128 threads pass as many barriers (id 2, among themselves)
/// per panel as the panel threads: compute-sanitizer racecheck (CUDA 13)
/// reports hazards between accesses that __syncthreads orders when the two
/// groups passed different numbers of named barriers in between (checked
/// on a minimal race-free kernel: hazards without this, none with it). A
/// few cycles a panel.
__device__ __forceinline__ void lu_blk_other_sync(int count) {
  for (int i = 0; i < count; ++i) asm volatile("bar.sync 2, 128;" ::: "memory");
}

/// One pivot candidate in the merge: key = (|x|_1 bits + 1) : low word
/// (0 for none), position, warp.
struct lu_blk_cand {
  unsigned long long key;
  unsigned pos;
  int warp;
};
/// b if it is the better candidate (larger key, smaller position on ties),
/// else a; branch-free (a branchy compare chain was most of the column's
/// instructions in the first profile).
__device__ __forceinline__ lu_blk_cand lu_blk_pick(const lu_blk_cand& a, const lu_blk_cand& b) {
  const bool bb = (b.key > a.key) | ((b.key == a.key) & (b.pos < a.pos));
  return {bb ? b.key : a.key, bb ? b.pos : a.pos, bb ? b.warp : a.warp};
}

/// Shared buffers of the elimination (besides the matrix).
template <class T>
struct lu_blk_bufs {
  lu_warp_winner win[2][lu_blk_panel_warps];
  T crow[2][lu_blk_panel_warps][lu_blk_nb];
  T krow[2][lu_blk_nb];
  int swp[lu_blk_nb];
  unsigned char src[lu_blk_max_n];
};

/// Factors the panel j1 .. j1+w1-1 (rows j1 .. n-1) on the 128 panel
/// threads; when j0 >= 0 it first applies panel j0's update to it
/// (A(:, panel) -= L21 U12, the part of the trailing update the panel needs,
/// in the same order per entry). Leaves the interchanges in b.swp.
template <class T, class Cols>
__device__ __forceinline__ void lu_blk_panel(const Cols& col, int n, int j0, int j1, index_t* piv_out, int& inf,
                                             lu_blk_bufs<T>& b) {
  constexpr int NB = lu_blk_nb;
  const int t = int(threadIdx.x), lane = t & 31, warp = t >> 5;
  const int w1 = min(NB, n - j1);
  const int row = j1 + t;
  const bool act = row < n;
  T a[NB];
#pragma unroll
  for (int c = 0; c < NB; ++c) a[c] = (act && c < w1) ? col(j1 + c)[row] : T(0);
  if (j0 >= 0 && act) {
#pragma unroll 1
    for (int l = 0; l < NB; ++l)
      if (j0 + l < j1) {
        const T nl = -col(j0 + l)[row];
#pragma unroll
        for (int c = 0; c < NB; ++c)
          if (c < w1) a[c] = lu_fnma(a[c], nl, col(j1 + c)[j0 + l]);
      }
  }
  int pos = row;
  int swp[NB];
#pragma unroll
  for (int s = 0; s < NB; ++s) {
    const int k = j1 + s;
    swp[s] = k;
    if (s < w1) {  // uniform
      const int buf = s & 1;
      const lu_warp_winner wv = lu_warp_argmax(act && pos >= k, abs1(a[s]), pos);
      // The warp winner publishes its row, the row at position k itself
      // (the pivot when no row is a candidate: all NaN), lane 0 the key.
      if (act && wv.H != 0u && pos == int(wv.P)) {
#pragma unroll
        for (int c = 0; c < NB; ++c) b.crow[buf][warp][c] = a[c];
      }
      if (act && pos == k) {
#pragma unroll
        for (int c = 0; c < NB; ++c) b.krow[buf][c] = a[c];
      }
      if (lane == 0) b.win[buf][warp] = wv;
      lu_blk_panel_sync();
      // Tree merge (the comparison is a total order on (key, position), so
      // any order gives the sequential scan's winner).
      lu_blk_cand cd[lu_blk_panel_warps];
#pragma unroll
      for (int v = 0; v < lu_blk_panel_warps; ++v) {
        const lu_warp_winner c = b.win[buf][v];
        cd[v] = {(static_cast<unsigned long long>(c.H) << 32) | c.L, c.P, v};
      }
#pragma unroll
      for (int h = 1; h < lu_blk_panel_warps; h *= 2)
#pragma unroll
        for (int v = 0; v + h < lu_blk_panel_warps; v += 2 * h) cd[v] = lu_blk_pick(cd[v], cd[v + h]);
      const bool none = cd[0].key == 0ull;  // no candidate: position k, as lu_factor_core
      const int p = none ? k : int(cd[0].pos);
      const T* const prow = none ? b.krow[buf] : b.crow[buf][cd[0].warp];
      T pr[NB];
#pragma unroll
      for (int c = 0; c < NB; ++c) pr[c] = prow[c];
      if (t == 0) piv_out[k] = index_t(p);  // recorded even for a zero pivot, as lu_factor_core
      const T piv = pr[s];
      if (is_zero(piv)) {
        if (inf == 0) inf = k + 1;  // no interchange, no update
      } else {
        swp[s] = p;
        if (pos == p) pos = k;
        else if (pos == k) pos = p;
        if (act && pos > k) {
          const T l = a[s] * lu_recip(piv);
          a[s] = l;
          const T nl = -l;
#pragma unroll
          for (int c = s + 1; c < NB; ++c) a[c] = lu_fnma(a[c], nl, pr[c]);
        }
      }
    }
  }
  if (act) {
#pragma unroll
    for (int c = 0; c < NB; ++c)
      if (c < w1) col(j1 + c)[pos] = a[c];
  }
  if (t == 0) {
#pragma unroll
    for (int s = 0; s < NB; ++s) b.swp[s] = swp[s];
  }
}

/// A(r0.., c0..) -= L21 U12 with panel j0 (w columns) over rows r0 .. n-1 and
/// columns c0 .. n-1, by `nthr` threads (this one is `tid`), 4 x 4 tiles.
template <class T, class Cols>
__device__ __forceinline__ void lu_blk_gemm(const Cols& col, int n, int j0, int w, int r0, int c0, int tid,
                                            int nthr) {
  constexpr int NB = lu_blk_nb;
  const int mr = n - r0, mc = n - c0;
  if (mr <= 0 || mc <= 0) return;
  const int rsr = (mr + 3) / 4, rsc = (mc + 3) / 4;
  const int tiles = rsr * rsc;
  for (int tt = tid; tt < tiles; tt += nthr) {
    const int tr = tt % rsr, tc = tt / rsr;
    int ri[4];
    bool rv[4], cv[4];
    T* cp[4];
#pragma unroll
    for (int u = 0; u < 4; ++u) {
      const int i = tr + u * rsr, c = tc + u * rsc;
      rv[u] = i < mr;
      cv[u] = c < mc;
      // Out-of-range rows / columns read row j0 / column j0 instead (U12,
      // L21: read-only meanwhile, so no race with the owners' stores) and
      // store nothing.
      ri[u] = rv[u] ? r0 + i : j0;
      cp[u] = col(cv[u] ? c0 + c : j0);
    }
    T acc[4][4];
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
      for (int v = 0; v < 4; ++v) acc[u][v] = cp[v][ri[u]];
#pragma unroll 2
    for (int l = 0; l < NB; ++l) {
      if (l < w) {
        const T* const lc = col(j0 + l);
        T nl[4], uv[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) nl[u] = -lc[ri[u]];
#pragma unroll
        for (int v = 0; v < 4; ++v) uv[v] = cp[v][j0 + l];
#pragma unroll
        for (int u = 0; u < 4; ++u)
#pragma unroll
          for (int v = 0; v < 4; ++v) acc[u][v] = lu_fnma(acc[u][v], nl[u], uv[v]);
      }
    }
#pragma unroll
    for (int u = 0; u < 4; ++u)
#pragma unroll
      for (int v = 0; v < 4; ++v)
        if (rv[u] && cv[v]) cp[v][ri[u]] = acc[u][v];
  }
}

/// One panel step of the elimination after panel j0 was factored:
///   all:        interchanges on the other columns, U12 = L11^-1 A12;
///   warps 0-3:  the next panel (its part of panel j0's update, then its
///               factorisation), while
///   warps 4-7:  panel j0's update of the columns right of the next panel
/// (look-ahead: the latency-bound column steps overlap the update).
/// Columns left of jg are skipped by the interchanges when `defer`.
template <class T, class Cols>
__device__ __forceinline__ void lu_blk_step(const Cols& col, int n, int j0, int jg, bool defer, index_t* piv_out,
                                            int& inf, lu_blk_bufs<T>& b) {
  constexpr int NB = lu_blk_nb;
  const int t = int(threadIdx.x);
  const int w = min(NB, n - j0);
  int swp[NB];
#pragma unroll
  for (int s = 0; s < NB; ++s) swp[s] = b.swp[s];
  if (defer && t == 0) {  // thread 0's column is global and deferred: free
#pragma unroll
    for (int s = 0; s < NB; ++s)
      if (s < w && swp[s] != j0 + s) {
        const unsigned char x = b.src[j0 + s];
        b.src[j0 + s] = b.src[swp[s]];
        b.src[swp[s]] = x;
      }
  }
  for (int c = t; c < n; c += lu_blk_threads) {
    if ((c >= j0 && c < j0 + w) || (defer && c < jg)) continue;
    T* const cc = col(c);
#pragma unroll
    for (int s = 0; s < NB; ++s)
      if (s < w && swp[s] != j0 + s) {
        const T x = cc[j0 + s];
        cc[j0 + s] = cc[swp[s]];
        cc[swp[s]] = x;
      }
    if (c >= j0 + w) {
      T x[NB];
#pragma unroll
      for (int i = 0; i < NB; ++i) x[i] = i < w ? cc[j0 + i] : T(0);
#pragma unroll
      for (int l = 0; l + 1 < NB; ++l) {
        if (l + 1 < w) {
          const T* const lc = col(j0 + l);
          const T nx = -x[l];
#pragma unroll
          for (int i = l + 1; i < NB; ++i)
            if (i < w) x[i] = lu_fnma(x[i], nx, lc[j0 + i]);
        }
      }
#pragma unroll
      for (int i = 0; i < NB; ++i)
        if (i < w) cc[j0 + i] = x[i];
    }
  }
  __syncthreads();
  const int j1 = j0 + w;
  if (j1 < n) {
    if (t < lu_blk_panel_threads) {
      lu_blk_panel(col, n, j0, j1, piv_out, inf, b);
    } else {
      lu_blk_gemm<T>(col, n, j0, w, j1, j1 + min(NB, n - j1), t - lu_blk_panel_threads,
                     lu_blk_threads - lu_blk_panel_threads);
      lu_blk_other_sync(min(NB, n - j1));
    }
  }
  __syncthreads();
}

/// The elimination; returns info (valid in thread 0). All threads of the
/// block call it. gcol addresses every column; scol only columns >= jg (all
/// in shared memory), and is used once the panels have passed jg: generic
/// addresses (gcol) made the steps of n = 120 and 128 (complex<double>)
/// about twice as slow as shared ones.
template <class T, class GCols>
__device__ __forceinline__ int lu_blk_body(const GCols& gcol, const lu_blk_scols<T>& scol, int n, index_t* piv_out,
                                           lu_blk_bufs<T>& b, int jg) {
  constexpr int NB = lu_blk_nb;
  const int t = int(threadIdx.x);
  // Leading columns in global memory (jg > 0) take the interchanges of the
  // panels from `dfr` on only at the end, as one gather through src (row i
  // <- row src[i]): done panel by panel they were a chain of dependent
  // global-memory swaps.
  const int dfr = (jg + NB - 1) / NB * NB;
  int inf = 0;
  if (t < lu_blk_panel_threads) lu_blk_panel(gcol, n, -1, 0, piv_out, inf, b);
  else lu_blk_other_sync(min(NB, n));
  __syncthreads();
#pragma unroll 1
  for (int j0 = 0; j0 < n; j0 += NB) {
    if (j0 < dfr) lu_blk_step(gcol, n, j0, jg, false, piv_out, inf, b);
    else lu_blk_step(scol, n, j0, jg, jg > 0, piv_out, inf, b);
  }
  if (jg > 0 && dfr < n) {
    // Chunks of whole columns, 8 entries a thread: every read of a chunk
    // precedes (barrier) every write of it, and chunks share no entries.
    constexpr int per = 8;
    const int cpc = max(1, lu_blk_threads * per / n);
    for (int c0 = 0; c0 < jg; c0 += cpc) {
      const int tot = (min(jg, c0 + cpc) - c0) * n;
      T v[per];
#pragma unroll
      for (int u = 0; u < per; ++u) {
        const int e = t + u * lu_blk_threads;
        if (e < tot) {
          const int c = c0 + e / n, i = e % n;
          if (b.src[i] != i) v[u] = gcol(c)[b.src[i]];
        }
      }
      __syncthreads();
#pragma unroll
      for (int u = 0; u < per; ++u) {
        const int e = t + u * lu_blk_threads;
        if (e < tot) {
          const int c = c0 + e / n, i = e % n;
          if (b.src[i] != i) gcol(c)[i] = v[u];
        }
      }
      __syncthreads();
    }
  }
  return inf;
}

/// One matrix per block; columns jg..n-1 staged in dynamic shared memory
/// with leading dimension lds (odd: row accesses free of bank conflicts).
template <class T, class Loc>
__global__ void __launch_bounds__(lu_blk_threads, 1)
    lu_blk_kernel(Loc loc, int n, index_t lda, int lds, int jg, index_t* ipiv, int* info) {
  extern __shared__ __align__(16) unsigned char lu_blk_smem[];
  __shared__ __align__(16) unsigned char bufs_raw[sizeof(lu_blk_bufs<T>)];
  lu_blk_bufs<T>& bufs = *reinterpret_cast<lu_blk_bufs<T>*>(bufs_raw);
  const int t = int(threadIdx.x);
  const index_t mat = index_t(blockIdx.x);
  T* const base = loc(mat);
  T* const sm = reinterpret_cast<T*>(lu_blk_smem);
  const int ns = n - jg;
  // Entry (i, j) of the staged part walks the matrix column by column, 256
  // entries a step (a fixed step in (i, j): no division per entry), 8 loads
  // in flight before their stores: one at a time, each waited out the full
  // global-memory latency, a fifth of the kernel's time at n = 100.
  const int di = lu_blk_threads % n, dj = lu_blk_threads / n;
  constexpr int inflight = 8;
  for (int i0 = t % n, j0 = t / n; j0 < ns;) {
    T v[inflight];
    int ii[inflight], jj[inflight];
#pragma unroll
    for (int u = 0; u < inflight; ++u) {
      ii[u] = i0;
      jj[u] = j0;
      if (j0 < ns) v[u] = base[i0 + index_t(j0 + jg) * lda];
      i0 += di;
      j0 += dj;
      if (i0 >= n) {
        i0 -= n;
        ++j0;
      }
    }
#pragma unroll
    for (int u = 0; u < inflight; ++u)
      if (jj[u] < ns) sm[ii[u] + jj[u] * lds] = v[u];
  }
  if (t < n) bufs.src[t] = static_cast<unsigned char>(t);
  __syncthreads();
  index_t* const po = ipiv + mat * n;
  const lu_blk_scols<T> scol{sm, lds, jg};
  // One instantiation for every jg (with jg = 0 the generic accessor is
  // never used): with a third copy of the step code (22 000 instructions in
  // all, 10 000 now) n = 120 spent 19 % of its stall samples waiting for
  // instructions (ncu, H200).
  const int inf = lu_blk_body<T>(lu_blk_gcols<T>{base, lda, sm, lds, jg}, scol, n, po, bufs, jg);
  for (int i = t % n, j = t / n; j < ns;) {
    base[i + index_t(j + jg) * lda] = sm[i + j * lds];
    i += di;
    j += dj;
    if (i >= n) {
      i -= n;
      ++j;
    }
  }
  if (t == 0) info[mat] = inf;
}

/// @brief Factors count n x n matrices (lu_blk_min_n <= n <= lu_blk_max_n);
///        same contract as lu_factor.
/// @tparam T   float, double, complex<float> or complex<double>.
/// @tparam Loc matrix locator (strided_loc or array_loc).
/// @throws invalid_argument for a batch too large for one grid.
/// @throws device_error when a CUDA call fails.
template <class T, class Loc>
inline void lu_blk_launch(const backend::cuda& b, Loc loc, index_t n, index_t lda, index_t* ipiv, int* info,
                          index_t count, const char* name) {
  if (count <= 0) return;
  emgpu::detail::device_guard guard(b.device);
  detail_require(count <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  auto kern = lu_blk_kernel<T, Loc>;
  const int optin = smem_optin(b.device);
  cudaFuncAttributes fa{};
  EMGPU_CUDA_CHECK(cudaFuncGetAttributes(&fa, kern));
  const int lds = int(n) | 1;
  const std::size_t colb = std::size_t(lds) * sizeof(T);
  const std::size_t avail = std::size_t(optin) > fa.sharedSizeBytes ? std::size_t(optin) - fa.sharedSizeBytes : 0;
  const index_t ns = std::min<index_t>(n, index_t(avail / colb));
  const std::size_t smem = std::size_t(ns) * colb;
  EMGPU_CUDA_CHECK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kern<<<unsigned(count), unsigned(lu_blk_threads), smem, b.stream>>>(loc, int(n), lda, lds, int(n - ns), ipiv,
                                                                     info);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
