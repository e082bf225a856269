/// @file
/// @brief CUDA qr_factor for 9 <= m <= 32 rows (all four types;
///        complex<double> from 6 rows): lanes own whole columns of a matrix
///        kept in shared memory, one __syncwarp per Sameh-Kuck stage; one to
///        eight matrices per warp.
///
/// Why: the team path (qr_core.hpp through launch.hpp) runs the same stages
/// with a generic team, two syncs per stage and each rotation's columns
/// split among its owner threads. Here a lane owns its columns outright: at
/// stage st it makes the rotation of its active column (if any), publishes
/// the pair in a per-stage-parity cache, and after the one
/// __syncwarp applies the stage's rotations of columns left of its own to
/// its own columns only. A lane never touches another lane's column, so the
/// cache is the only shared state: a slot of parity st & 1 is rewritten at
/// stage st + 2 at the earliest, after every lane passed the __syncwarp of
/// stage st + 1 and so finished its reads of stage st. Each column
/// receives the rotations of the team path in the same order (rotations of
/// one stage touch disjoint rows), but the make is the fast one
/// (givens_make_fast_split): the made pair is applied and published, its
/// code only stored, after the stage's applies, so neither a decode (a
/// square root; 1.09-1.23x, H100, session 28) nor the encode (session 30)
/// sits on the stage's critical path. The factors therefore equal the team path's to
/// rounding, not bit for bit (backward errors of the same order).
///
/// Two kernels. qr_warp_kernel: W = 16 (two matrices per warp) or 32 lanes
/// per matrix, lane l owning column l. qr_warp2_kernel: W = 8 (four
/// matrices per warp) or 16 lanes per matrix, lane l owning columns l and
/// l + W; a stage's active columns are a contiguous range at most m / 2 <= W
/// wide, so each lane still makes at most one rotation per stage, and the
/// applies read each rotation once for both columns. Column stride LD = m | 1
/// (odd in units of T), so that the lanes' accesses at one row (l LD + i)
/// and the makes' (j (LD + 2) + c) fall in distinct banks. Loads and stores
/// go row by row (lane = row), so a column of the batch is one coalesced
/// access. Rotations are applied U at a time, loads before arithmetic
/// before stores, in batches that run to the stage's last rotation on every
/// lane (a lane's rotations are those of the columns left of its own, so the
/// lanes' counts differ): a lane past its own computes on stale registers
/// with its loads and stores predicated off, so a batch is one straight run
/// of code. Session 28's batches branched per rotation and lane (the
/// compiler also copied every result between registers); the straight
/// batches cut the instructions of a 32 x 32 complex<double> apply batch of
/// four from 119 to 86; with the dispatch below, 1.00-1.39x faster than
/// session 28's kernels shape by shape (H100, session 29, .gpu/qn.cu,
/// qn2.cu; bit-for-bit equal results for U >= 2; for U = 1 nvcc contracts
/// one FMA of the apply the other way round, so those agree to rounding).
/// At most 34.5 KB of shared memory per block (two complex<double> 32 x 32
/// matrices), under the 48 KB any GPU gives without an opt-in.
///
/// Measured (H100, 100 000 matrices, scratch harness .gpu/qn2.cu, ms, best
/// variant = the one dispatched below; in parentheses session 28's kernels,
/// and cuBLAS geqrfBatched, in the same process;
/// docs/results/qr_warp_s29_h100.txt):
///
///     complex<double>  9 x 9   0.202 (0.204)        12 x 12 0.345 (0.367)
///                      16 x 16 0.599 (0.608; cuBLAS 2.57)    20 x 20 1.37 (1.61)
///                      24 x 24 1.97  (2.30)         32 x 32 3.92 (4.55; cuBLAS 21.2)
///                      32 x 16 1.57  (1.62)         31 x 29 3.59 (4.09)
///     double           9 x 9   0.143 (0.145)        16 x 16 0.400 (0.402)
///                      20 x 20 0.841 (0.850)        32 x 32 2.14 (2.30)
///     complex<float>   9 x 9   0.143 (0.146)        16 x 16 0.395 (0.398)
///                      20 x 20 0.866 (0.956)        32 x 32 2.17 (2.62)
///     float            9 x 9   0.103 (0.105)        16 x 16 0.258 (0.312)
///                      20 x 20 0.585 (0.594)        32 x 32 1.47 (1.54)
///
/// Which kernel (the fastest measured, qn2.cu; up to 16 columns qn9.cu,
/// session 30, after the cache of m / 2 slots): up to 16 columns and 16
/// rows, qr_warp2 W = 8, U = 1 for complex<double> up to 14 rows or n < m
/// (H100: 11 x 6 0.144 against 0.172 ms for session 29's choice, 14 x 14
/// 0.448 against 0.500, 16 x 14 0.522 against 0.549; 16 x 16 stays on
/// qr_warp, 0.587 against 0.611), for complex<float> up to 12 rows or
/// 2n > m (10 x 10 0.156 against 0.194, 16 x 16 0.338 against 0.356; 16 x 8
/// 0.273 against 0.291 on qr_warp), for double and float up to 12 rows or
/// 12 columns (16 x 8 0.177 / 0.134 against 0.264 / 0.200); else, and from
/// 17 rows, qr_warp W = 16, U = 2; more than 16 columns,
/// qr_warp W = 32, U = 2 from 26 rows with more than 20 columns
/// (complex<double>; float: 26 rows, more than 24 columns; double and
/// complex<float>: 32 rows, 30 columns), else qr_warp2 W = 16 with U = 4
/// from 26 rows, 2 below. What bounded qr_warp before the straight batches
/// (ncu, complex<double> 32 x 32, session 28): 24 700 instructions per
/// matrix, 12 warps per SM (shared memory), 53 % of issue slots busy, one
/// instruction issued per 5.6 cycles per warp; about 70 % of the
/// instructions were applies.
///
/// Template parameters: T the scalar type, W the lanes per matrix, U the
/// rotations applied per batch of loads, Loc the batch layout (strided_loc
/// or array_loc). The launchers throw invalid_argument for a batch beyond one grid and device_error when
/// a launch fails.
#pragma once

#if defined(__CUDACC__)

#include <cstddef>
#include <string>
#include <type_traits>

#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#include "common.hpp"
#include "qr_core.hpp"

namespace emgpu::batched::detail {

constexpr index_t qr_warp_min_m = 9;
constexpr index_t qr_warp_max_m = 32;

/// Rotation-cache slots per stage parity for m rows: a stage's active
/// columns lo..hi rotate disjoint row pairs, so there are at most m / 2 of
/// them, and column j's rotation of stage st sits in slot j - lo(st).
constexpr int qr_warp_slots(int m) { return (m + 1) / 2; }

/// Bytes of shared memory per matrix: the columns (stride LD), then the
/// rotation cache of K slots per parity, s then c (s first keeps complex
/// entries 16-byte aligned). Why K = qr_warp_slots(m) and not one slot per
/// column: at 16 x 16 complex<double> (two matrices per block) 22 blocks
/// fit an SM instead of 20.
template <class T>
constexpr std::size_t qr_warp_bytes(int LD, int n, int K) {
  using R = real_type_t<T>;
  return align16(std::size_t(LD) * std::size_t(n) * sizeof(T) + 2 * std::size_t(K) * (sizeof(T) + sizeof(R)));
}

/// Stage st's make for column j (col = its shared column): the rotation of
/// rows (i-1, i), i = m-1-st+2j, as qr_factor_core's, published in the cache
/// slot of column j. When `encode` comes back true the code of row i is
/// still to be stored (givens_encode_fast of the returned pair), which the
/// kernels do after the stage's __syncwarp: no lane reads row i of column j
/// again (the stage's other rotations of the column, and all later ones,
/// touch rows above it), and the encode (a second reciprocal square root)
/// no longer delays the stage's publication.
template <class T>
__device__ __forceinline__ givens<T> qr_warp_make(T* col, int i, real_type_t<T>* cc, T* cs, bool& encode) {
  T x = col[i - 1], code;
  const givens<T> g = givens_make_fast_split(x, col[i], encode, code);
  *cc = g.c;
  *cs = g.s;
  col[i - 1] = x;
  if (!encode) col[i] = code;
  return g;
}

/// Rotations j0 .. j0 + V - 1 of a stage applied to a lane's columns a and
/// b (qr_warp2_kernel; qr_warp_kernel has column a only): pa, pb point at
/// row m - 1 - st + 2 j0 of them, cb / sb at slot j0 of the stage's cache;
/// all V are in the stage (the same on every lane of the warp), each read
/// once for both columns. Rotation j0 + u is the lane's own on column a
/// when u <= mina, on column b when u <= minb: only those are loaded and
/// stored, the others computed on the previous values of x and y, so that a
/// batch is one straight run of code on every lane. anyb false (n <= W, the
/// same on every lane): no lane has a column b, and its code is skipped.
template <int V, class T, class R, int U>
__device__ __forceinline__ void qr_warp2_apply_batch(T* pa, T* pb, const R* cb, const T* sb, int mina, int minb,
                                                     bool anyb, T (&xa)[U], T (&ya)[U], T (&xb)[U], T (&yb)[U]) {
  static_assert(V <= U);
  T s[V];
  R c[V];
#pragma unroll
  for (int u = 0; u < V; ++u) {
    c[u] = cb[u];
    s[u] = sb[u];
    if (anyb && u <= minb) {
      xb[u] = pb[2 * u - 1];
      yb[u] = pb[2 * u];
    }
    if (u <= mina) {
      xa[u] = pa[2 * u - 1];
      ya[u] = pa[2 * u];
    }
  }
#pragma unroll
  for (int u = 0; u < V; ++u) {
    const givens<T> g{c[u], s[u]};
    if (anyb) givens_apply(g, xb[u], yb[u], false);  // uniform: no lane has a column b when n <= W
    givens_apply(g, xa[u], ya[u], false);
  }
#pragma unroll
  for (int u = 0; u < V; ++u) {
    if (anyb && u <= minb) {
      pb[2 * u - 1] = xb[u];
      pb[2 * u] = yb[u];
    }
    if (u <= mina) {
      pa[2 * u - 1] = xa[u];
      pa[2 * u] = ya[u];
    }
  }
}

/// qr_warp2_apply_batch on one column (qr_warp_kernel): rotation j0 + u is
/// the lane's own when u <= mine.
template <int V, class T, class R, int U>
__device__ __forceinline__ void qr_warp_apply_batch(T* p, const R* cb, const T* sb, int mine, T (&x)[U], T (&y)[U]) {
  qr_warp2_apply_batch<V>(p, p, cb, sb, mine, -1, false, x, y, x, y);
}

/// Two columns per lane: W lanes per matrix (32 / W matrices per warp), lane
/// l owning columns l and l + W (W >= m / 2; W = 4 serves complex<double>
/// with 6..8 rows, eight matrices per warp). A stage's active columns are a
/// contiguous range at most m / 2 <= W wide, so they fall on distinct lanes:
/// each lane makes at most one rotation per stage, and one pass of the make
/// code serves 32 / W matrices. The applies loop over the stage's rotations
/// once, each rotation read once for both of a lane's columns.
template <class T, int W, int U, class Loc>
__global__ void __launch_bounds__(32)
    qr_warp2_kernel(Loc loc, int m, int n, index_t lda, index_t count, int LD) {
  static_assert(W == 4 || W == 8 || W == 16);
  using R = real_type_t<T>;
  constexpr int G = 32 / W;  // matrices per warp
  extern __shared__ __align__(16) unsigned char qr_warp_raw[];
  const int lane = int(threadIdx.x);
  const int g = lane / W, l = lane % W;
  const int K = qr_warp_slots(m);
  const std::size_t per = qr_warp_bytes<T>(LD, n, K);
  unsigned char* const mine = qr_warp_raw + std::size_t(g) * per;
  T* const A = reinterpret_cast<T*>(mine);
  T* const cs = reinterpret_cast<T*>(mine + std::size_t(LD) * std::size_t(n) * sizeof(T));
  R* const cc = reinterpret_cast<R*>(cs + 2 * K);
  const index_t k = index_t(blockIdx.x) * G + g;
  // Lanes of a missing matrix (base null) still take part in the syncs.
  // The load and store loops stay written out in both kernels: as shared
  // __forceinline__ helpers ptxas took 140 instead of 110 registers (32
  // lanes, U = 4) and the kernels ran 2.5-4 % slower (H100, session 27).
  T* const base = k < count ? loc(k) : nullptr;

#pragma unroll 1
  for (int r = l; r < m; r += W) {
#pragma unroll 1
    for (int j0 = 0; j0 < n; j0 += 8) {
      T v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) v[u] = (base != nullptr && j0 + u < n) ? base[index_t(j0 + u) * lda + r] : T(0);
#pragma unroll
      for (int u = 0; u < 8; ++u)
        if (j0 + u < n) A[(j0 + u) * LD + r] = v[u];
    }
  }
  __syncwarp();

  const int jm = int(qr_jmax(m, n));
  const int ns = int(qr_stages(m, n));
  const bool hasa = l < n, hasb = l + W < n;
  T* const cola = A + l * LD;  // dereferenced only when hasa
  T* const colb = A + (l + W) * LD;
  T xa[U], ya[U], xb[U], yb[U];  // defined values for predicated-off loads
#pragma unroll
  for (int u = 0; u < U; ++u) xa[u] = ya[u] = xb[u] = yb[u] = T(0);
#pragma unroll 1
  for (int st = 0; st < ns; ++st) {
    const int lo = st - (m - 2) > 0 ? st - (m - 2) : 0;  // active columns lo..hi (qr_stage_cols)
    const int hi = st / 2 < jm ? st / 2 : jm;
    const int par = (st & 1) * K - lo;  // column j's slot: par + j
    const int jk = (l >= lo && l <= hi) ? l : (l + W >= lo && l + W <= hi) ? l + W : -1;
    givens<T> made{R(1), T(0)};
    bool enc = false;
    T* slot = A;  // the made rotation's row i; dereferenced only when enc
    if (jk >= 0) {
      slot = A + jk * LD + (m - 1 - st + 2 * jk);
      made = qr_warp_make(A + jk * LD, m - 1 - st + 2 * jk, cc + par + jk, cs + par + jk, enc);
    }
    __syncwarp();
    T code = T(0);
    if (enc) code = givens_encode_fast(made);
    // Rotations of columns j < l (column a) and j < l + W (column b), in
    // batches that run to the warp's last rotation (tw) on every lane, as
    // in qr_warp_kernel.
    const int ta = hasa ? (hi < l - 1 ? hi : l - 1) : lo - 1;
    const int tb = hasb ? (hi < l + W - 1 ? hi : l + W - 1) : lo - 1;
    const int tw = hi < n - 2 ? hi : n - 2;
    int j0 = lo;
#pragma unroll 1
    for (; j0 + U - 1 <= tw; j0 += U)
      qr_warp2_apply_batch<U>(cola + (m - 1 - st + 2 * j0), colb + (m - 1 - st + 2 * j0), cc + par + j0,
                              cs + par + j0, ta - j0, tb - j0, n > W, xa, ya, xb, yb);
    if constexpr (U >= 2) {
#pragma unroll 1
      for (; j0 <= tw; ++j0)
        qr_warp2_apply_batch<1>(cola + (m - 1 - st + 2 * j0), colb + (m - 1 - st + 2 * j0), cc + par + j0,
                                cs + par + j0, ta - j0, tb - j0, n > W, xa, ya, xb, yb);
    }
    if (enc) *slot = code;
  }
  __syncwarp();

  if (base != nullptr) {
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

template <class T, int W, int U, class Loc>
inline void qr_warp2_launch(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda,
                            index_t count, const char* name) {
  // A lane makes at most one rotation per stage and owns two columns.
  detail_require(m <= 2 * W && n <= 2 * W, std::string(name) + ": internal: qr_warp2 lanes too few for the shape");
  const int LD = int(m) | 1;
  const std::size_t smem = std::size_t(32 / W) * qr_warp_bytes<T>(LD, int(n), qr_warp_slots(int(m)));
  constexpr index_t per_block = 32 / W;
  const index_t blocks = (count + per_block - 1) / per_block;
  detail_require(blocks <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  qr_warp2_kernel<T, W, U, Loc><<<unsigned(blocks), 32u, smem, b.stream>>>(loc, int(m), int(n), lda, count, LD);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

/// One column per lane: one warp (one block) per 32 / W matrices; two
/// warps per block measured no gain (session 27).
template <class T, int W, int U, class Loc>
__global__ void __launch_bounds__(32)
    qr_warp_kernel(Loc loc, int m, int n, index_t lda, index_t count, int LD) {
  static_assert(W == 16 || W == 32);
  using R = real_type_t<T>;
  constexpr int G = 32 / W;  // matrices per warp
  extern __shared__ __align__(16) unsigned char qr_warp_raw[];
  const int lane = int(threadIdx.x);
  const int g = lane / W, l = lane % W;
  const int K = qr_warp_slots(m);
  const std::size_t per = qr_warp_bytes<T>(LD, n, K);
  unsigned char* const mine = qr_warp_raw + std::size_t(g) * per;
  T* const A = reinterpret_cast<T*>(mine);
  T* const cs = reinterpret_cast<T*>(mine + std::size_t(LD) * std::size_t(n) * sizeof(T));
  R* const cc = reinterpret_cast<R*>(cs + 2 * K);
  const index_t k = index_t(blockIdx.x) * G + g;
  // Lanes of a missing matrix (base null) still take part in the syncs.
  // The load and store loops stay written out in both kernels: as shared
  // __forceinline__ helpers ptxas took 140 instead of 110 registers (32
  // lanes, U = 4) and the kernels ran 2.5-4 % slower (H100, session 27).
  T* const base = k < count ? loc(k) : nullptr;

#pragma unroll 1
  for (int r = l; r < m; r += W) {
#pragma unroll 1
    for (int j0 = 0; j0 < n; j0 += 8) {
      T v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) v[u] = (base != nullptr && j0 + u < n) ? base[index_t(j0 + u) * lda + r] : T(0);
#pragma unroll
      for (int u = 0; u < 8; ++u)
        if (j0 + u < n) A[(j0 + u) * LD + r] = v[u];
    }
  }
  __syncwarp();

  const int jm = int(qr_jmax(m, n));
  const int ns = int(qr_stages(m, n));
  const int nw = n < W ? n : W;  // columns of the matrix on lanes
  T* const col = A + (l < n ? l : 0) * LD;
  // Defined values for the lanes whose loads of a batch are predicated off
  // (they compute on these and store nothing).
  T x[U], y[U];
#pragma unroll
  for (int u = 0; u < U; ++u) x[u] = y[u] = T(0);
#pragma unroll 1
  for (int st = 0; st < ns; ++st) {
    const int lo = st - (m - 2) > 0 ? st - (m - 2) : 0;  // active columns lo..hi (qr_stage_cols)
    const int hi = st / 2 < jm ? st / 2 : jm;
    const int par = (st & 1) * K - lo;  // column j's slot: par + j
    givens<T> made{R(1), T(0)};
    bool enc = false;
    if (l >= lo && l <= hi) made = qr_warp_make(col, m - 1 - st + 2 * l, cc + par + l, cs + par + l, enc);
    __syncwarp();
    T code = T(0);
    if (enc) code = givens_encode_fast(made);
    // Rotations of columns j < l. The batch loop runs to the warp's last
    // rotation (tw, the same on every lane) so that it never diverges; a
    // lane past its own last one (top) still computes on what it loaded and
    // only its loads and stores are predicated off.
    const int top = l < n ? (hi < l - 1 ? hi : l - 1) : lo - 1;
    const int tw = hi < nw - 2 ? hi : nw - 2;
    int j0 = lo;
#pragma unroll 1
    for (; j0 + U - 1 <= tw; j0 += U)
      qr_warp_apply_batch<U>(col + (m - 1 - st + 2 * j0), cc + par + j0, cs + par + j0, top - j0, x, y);
    // The stage's last tw - j0 + 1 < U rotations (the same count on every lane).
    if constexpr (U >= 4) {
      if (tw - j0 == 2)
        qr_warp_apply_batch<3>(col + (m - 1 - st + 2 * j0), cc + par + j0, cs + par + j0, top - j0, x, y);
    }
    if constexpr (U >= 3) {
      if (tw - j0 == 1)
        qr_warp_apply_batch<2>(col + (m - 1 - st + 2 * j0), cc + par + j0, cs + par + j0, top - j0, x, y);
    }
    if constexpr (U >= 2) {
      if (tw - j0 == 0)
        qr_warp_apply_batch<1>(col + (m - 1 - st + 2 * j0), cc + par + j0, cs + par + j0, top - j0, x, y);
    }
    if (enc) col[m - 1 - st + 2 * l] = code;
  }
  __syncwarp();

  if (base != nullptr) {
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

template <class T, int W, int U, class Loc>
inline void qr_warp_launch(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda,
                           index_t count, const char* name) {
  detail_require(m <= qr_warp_max_m && n <= W, std::string(name) + ": internal: qr_warp lanes too few for the shape");
  const int LD = int(m) | 1;
  const std::size_t smem = std::size_t(32 / W) * qr_warp_bytes<T>(LD, int(n), qr_warp_slots(int(m)));
  constexpr index_t per_block = 32 / W;
  const index_t blocks = (count + per_block - 1) / per_block;
  detail_require(blocks <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  qr_warp_kernel<T, W, U, Loc><<<unsigned(blocks), 32u, smem, b.stream>>>(loc, int(m), int(n), lda, count, LD);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

/// @brief qr_factor on CUDA for qr_warp_min_m <= m <= qr_warp_max_m (any
///        of the four types) and complex<double> with 6..8 rows; false
///        (nothing done) elsewhere. The kernel
///        and its lanes per matrix are the fastest measured for the type and
///        shape (see the file comment).
template <class T, class Loc>
inline bool qr_warp_factor(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda,
                           index_t count, const char* name) {
  if (m > qr_warp_max_m || count <= 0 || n <= 0) return false;
  if (m < qr_warp_min_m) {
    // complex<double> with 6..8 rows: two columns per lane beat the register
    // path (H100: 8 x 8 0.156 against 0.179 ms, 6 x 6 0.079 against 0.088,
    // 8 x 4 0.076 against 0.114); elsewhere below 9 rows it does not.
    if constexpr (std::is_same_v<T, complex<double>>) {
      if (m >= 6) {
        emgpu::detail::device_guard guard(b.device);
        if (m == 8 && n > 4) qr_warp2_launch<T, 8, 1>(b, loc, m, n, lda, count, name);
        else qr_warp2_launch<T, 4, 1>(b, loc, m, n, lda, count, name);
        return true;
      }
    }
    return false;
  }
  emgpu::detail::device_guard guard(b.device);
  if (n <= 16) {
    // Four matrices per warp (one rotation per batch) where it measured
    // faster since the cache of m / 2 slots (session 30, H100, .gpu/qn9.cu),
    // else two (the one-column kernel, 16 lanes). Eight lanes hold up to 16
    // rows: a stage has up to m / 2 rotations, at most one per lane.
    bool four = false;
    if (m <= 16) {
      if constexpr (std::is_same_v<T, complex<double>>) four = m <= 14 || n < m;
      else if constexpr (std::is_same_v<T, complex<float>>) four = m <= 12 || 2 * n > m;
      else four = m <= 12 || n <= 12;
    }
    if (four) qr_warp2_launch<T, 8, 1>(b, loc, m, n, lda, count, name);
    else qr_warp_launch<T, 16, 2>(b, loc, m, n, lda, count, name);
    return true;
  }
  // One column per lane (32 lanes) from this many rows and more than this
  // many columns; else two columns per lane (16 lanes).
  constexpr index_t one_col_m = std::is_same_v<T, complex<double>> ? 26 : std::is_same_v<T, float> ? 26 : 32;
  constexpr index_t one_col_n = std::is_same_v<T, complex<double>> ? 20 : std::is_same_v<T, float> ? 24 : 29;
  if (m >= one_col_m && n > one_col_n) qr_warp_launch<T, 32, 2>(b, loc, m, n, lda, count, name);
  else if (m >= 26) qr_warp2_launch<T, 16, 4>(b, loc, m, n, lda, count, name);
  else qr_warp2_launch<T, 16, 2>(b, loc, m, n, lda, count, name);
  return true;
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
