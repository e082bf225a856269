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
/// cache is the only shared state: the maker of column j rewrites
/// cache[st & 1][j] at stage st + 2, after every lane passed the __syncwarp
/// of stage st + 1 and so finished its reads of stage st. Each column
/// receives the rotations of the team path in the same order (rotations of
/// one stage touch disjoint rows), but the make is givens_make_fast_in_place:
/// the made pair is applied and published, its code only stored, so no
/// decode (a square root) sits on the stage's critical path (1.09-1.23x,
/// H100, session 28). The factors therefore equal the team path's to
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
/// before stores. At most 36.9 KB of shared memory per block (two
/// complex<double> 32 x 32 matrices), under the 48 KB any GPU gives without
/// an opt-in.
///
/// Measured (H200, 100 000 matrices, scratch harness, ms, the path it
/// replaced and cuBLAS geqrfBatched in the same process;
/// docs/results/qr_warp_s27_h200.txt), the variant dispatched below:
///
///     complex<double>  9 x 9   0.236 (team 0.434)   12 x 12 0.408 (0.648)
///                      16 x 16 0.709 (1.037; cuBLAS 2.52)    20 x 20 1.85 (1.97)
///                      24 x 24 2.72  (3.00)         32 x 32 5.28 (6.60; cuBLAS 20.1)
///                      32 x 16 1.87  (2.69)         31 x 29 4.76 (5.38)
///     double           9 x 9   0.168 (0.386)        16 x 16 0.490 (0.840)
///                      20 x 20 0.974 (1.77)         32 x 32 2.65 (3.56)
///     complex<float>   9 x 9   0.165 (registers 0.201)   16 x 16 0.432 (registers 0.781)
///                      20 x 20 1.07 (team 1.38)     32 x 32 2.94 (3.42)
///     float            9 x 9   0.125 (registers 0.135)   16 x 16 0.313 (registers 0.408)
///                      20 x 20 0.687 (team 1.33)    32 x 32 1.77 (2.68)
///
/// Which kernel (the faster measured; re-checked with the fast make in
/// session 28, unchanged): up to 16 columns, qr_warp2 W = 8 up to 12 rows
/// (float: 16), else qr_warp W = 16; more than 16 columns, qr_warp2 W = 16
/// below 24 rows (complex<double>), 28 (complex<float>), 30 (float) or
/// always (double), else qr_warp W = 32. One rotation at a time
/// (U = 1) except qr_warp W = 32 (two below 28 rows and for float, else
/// four). What bounds qr_warp (ncu, complex<double> 32 x 32, U = 4): 28 600
/// instructions per matrix, 11 warps per SM (shared memory), one
/// instruction issued per 5.3 cycles per warp; the makes alone take 2.4 ms,
/// the applies alone 4.0 (a lane applies only the rotations of columns left
/// of its own, so about a third of the apply slots idle). Halving the makes
/// per matrix (qr_warp2) did not make up for the longer apply chain per lane
/// at 16 and 32 rows in complex<double> (0.78 / 6.32 against 0.71 / 5.28).
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

/// Bytes of shared memory per matrix: the columns (stride LD), then the
/// rotation cache, s then c (s first keeps complex entries 16-byte aligned).
template <class T, int W>
constexpr std::size_t qr_warp_bytes(int LD, int n) {
  using R = real_type_t<T>;
  return align16(std::size_t(LD) * std::size_t(n) * sizeof(T) + 2 * W * (sizeof(T) + sizeof(R)));
}

/// Stage st's make for column j (col = its shared column): the rotation of
/// rows (i-1, i), i = m-1-st+2j, as qr_factor_core's, published in the cache
/// slot of column j.
template <class T>
__device__ __forceinline__ void qr_warp_make(T* col, int i, real_type_t<T>* cc, T* cs) {
  T x = col[i - 1], y = col[i];
  const givens<T> g = givens_make_fast_in_place(x, y);
  col[i - 1] = x;
  col[i] = y;
  *cc = g.c;
  *cs = g.s;
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
  const std::size_t per = qr_warp_bytes<T, 2 * W>(LD, n);
  unsigned char* const mine = qr_warp_raw + std::size_t(g) * per;
  T* const A = reinterpret_cast<T*>(mine);
  T* const cs = reinterpret_cast<T*>(mine + std::size_t(LD) * std::size_t(n) * sizeof(T));
  R* const cc = reinterpret_cast<R*>(cs + 4 * W);
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
  T* const cola = A + l * LD;
  T* const colb = A + (l + W) * LD;
#pragma unroll 1
  for (int st = 0; st < ns; ++st) {
    const int lo = st - (m - 2) > 0 ? st - (m - 2) : 0;  // active columns lo..hi (qr_stage_cols)
    const int hi = st / 2 < jm ? st / 2 : jm;
    const int par = (st & 1) * 2 * W;
    const int jk = (l >= lo && l <= hi) ? l : (l + W >= lo && l + W <= hi) ? l + W : -1;
    if (jk >= 0) qr_warp_make(A + jk * LD, m - 1 - st + 2 * jk, cc + par + jk, cs + par + jk);
    __syncwarp();
    // rotations of columns j < l (column a) and j < l + W (column b)
    const int ta = hi < l - 1 ? hi : l - 1;
    const int tb = hi < l + W - 1 ? hi : l + W - 1;
    const int top = hasb ? tb : hasa ? ta : lo - 1;
#pragma unroll 1
    for (int j0 = lo; j0 <= top; j0 += U) {
      T xa[U], ya[U], xb[U], yb[U], s[U];
      R c[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int j = j0 + u, i = m - 1 - st + 2 * j;
        if (j <= top) {
          c[u] = cc[par + j];
          s[u] = cs[par + j];
          if (hasb) {
            xb[u] = colb[i - 1];
            yb[u] = colb[i];
          }
          if (j <= ta) {
            xa[u] = cola[i - 1];
            ya[u] = cola[i];
          }
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const int j = j0 + u, i = m - 1 - st + 2 * j;
        if (j <= top) {
          const givens<T> gr{c[u], s[u]};
          if (hasb) {
            givens_apply(gr, xb[u], yb[u], false);
            colb[i - 1] = xb[u];
            colb[i] = yb[u];
          }
          if (j <= ta) {
            givens_apply(gr, xa[u], ya[u], false);
            cola[i - 1] = xa[u];
            cola[i] = ya[u];
          }
        }
      }
    }
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
  const int LD = int(m) | 1;
  const std::size_t smem = std::size_t(32 / W) * qr_warp_bytes<T, 2 * W>(LD, int(n));
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
  const std::size_t per = qr_warp_bytes<T, W>(LD, n);
  unsigned char* const mine = qr_warp_raw + std::size_t(g) * per;
  T* const A = reinterpret_cast<T*>(mine);
  T* const cs = reinterpret_cast<T*>(mine + std::size_t(LD) * std::size_t(n) * sizeof(T));
  R* const cc = reinterpret_cast<R*>(cs + 2 * W);
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
  T* const col = A + l * LD;
#pragma unroll 1
  for (int st = 0; st < ns; ++st) {
    const int lo = st - (m - 2) > 0 ? st - (m - 2) : 0;  // active columns lo..hi (qr_stage_cols)
    const int hi = st / 2 < jm ? st / 2 : jm;
    const int par = (st & 1) * W;
    if (l >= lo && l <= hi) qr_warp_make(col, m - 1 - st + 2 * l, cc + par + l, cs + par + l);
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
  const int LD = int(m) | 1;
  const std::size_t smem = std::size_t(32 / W) * qr_warp_bytes<T, W>(LD, int(n));
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
  constexpr bool single = sizeof(real_type_t<T>) == 4;
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
    // float: four matrices per warp up to 16 rows; the others up to 12
    if (m <= ((single && !is_complex_v<T>) ? 16 : 12)) qr_warp2_launch<T, 8, 1>(b, loc, m, n, lda, count, name);
    else qr_warp_launch<T, 16, 1>(b, loc, m, n, lda, count, name);
    return true;
  }
  // One column per lane (32 lanes) from this many rows, two below.
  constexpr index_t one_col_from = std::is_same_v<T, complex<double>> ? 24
                                   : std::is_same_v<T, complex<float>> ? 28
                                   : std::is_same_v<T, float>          ? 30
                                                                        : 33;  // double: never
  if (m < one_col_from) qr_warp2_launch<T, 16, 1>(b, loc, m, n, lda, count, name);
  else if (std::is_same_v<T, float> || m < 28) qr_warp_launch<T, 32, 2>(b, loc, m, n, lda, count, name);
  else qr_warp_launch<T, 32, 4>(b, loc, m, n, lda, count, name);
  return true;
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
