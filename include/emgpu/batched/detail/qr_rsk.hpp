/// @file
/// @brief CUDA qr_factor with the Sameh-Kuck stages on register-resident
///        columns: lane c of a group of M owns column c of an m x n matrix
///        (m <= M) in M registers, and the rotations of a stage pass through
///        a small shared-memory cache (session 31).
///
/// Why: the warp kernels (qr_warp.hpp) keep the matrix in shared memory, and
/// every applied rotation loads and stores its two entries there. Here the
/// column stays in registers, so an apply is FMAs only plus one broadcast
/// load of its pair per lane. Where it pays (H100, 100 000 matrices,
/// scratch sweep .gpu/sweep.cu, docs/results/qr_rsk_s31_h100.txt; ms,
/// against the dispatched warp or register kernel in the same process):
///
///     complex<double>  8 x 8  0.0969 (0.1076)   8 x 4  0.0702 (0.0924)
///                      7 x 7  0.0807 (0.0876)   6 x 6  0.0612 (0.0666)
///     double           8 x 8  0.0542 (0.0658)   16 x 16 0.2857 (0.3948)
///                      15 x 14 0.2942 (0.3324)  13 x 13 0.2492 (0.2745)
///     complex<float>   8 x 8  0.0544 (0.0713)   7 x 7  0.0541 (0.0661)
///     float            16 x 16 0.1878 (0.2726)  14 x 13 0.2004 (0.3028)
///
/// and qr_rsk_factor takes exactly those families: complex<double> with 6..8
/// rows and at least 4 columns (6 rows: 5), double and complex<float> with
/// 7..8 rows and n >= m - 1, double and float with 13..16 rows and n = m
/// (14..16 rows: also n = m - 1), except 8 x 8 and 16 x 16, which
/// qr_cyc.hpp takes since session 36 (the same factors bit for bit,
/// 1.3-1.8x faster; the full-size variants stay as the tests' reference). Elsewhere the lanes of the columns a thin
/// matrix lacks, and its stages run in full, cost more than the registers
/// save (z 8 x 2 0.0550 against 0.0335). complex<double> with 9..16 rows
/// stays on the warp kernels: at 16 x 16 this kernel took 0.605 ms against
/// 0.586 (144 registers, 104 KB of unrolled code); ncu (H100) showed the
/// FP64 pipe 41.7 % busy, as the warp kernel's 41.9 % (the same FP64 work),
/// 12 warps per SM, and warps waiting for instructions (no_instruction 1.4
/// of about 5.3 cycles per issue). Unrolling only 16 stages twice does not
/// shorten it much: stage st + 16 with column j + 8 acts on the rows of
/// stage st with column j, but the windows of active columns do not map
/// onto each other, so the body would hold 92 of the 120 rotations.
///
/// Staged (the dispatch's choice except for complex<double> below 8 x 8):
/// the matrix is read into a shared tile row by row (coalesced) and each
/// lane takes its column from there; the codes and R go back through the
/// tile. Direct: each lane reads and writes its column in global memory
/// (16-byte accesses 32 lines apart per warp instruction, which only the
/// complex<double> kernel with fewer than 8 x 8 entries tolerates).
///
/// How the indices stay compile-time constants (a register array cannot be
/// indexed at run time): the stages are unrolled, and rotation (j, i) of the
/// Sameh-Kuck order acts on rows (i - 1, i) with i = m - 1 - st + 2 j at
/// stage st (qr_core.hpp), so for a static (st, j) its rows are static on
/// every lane. The matrix sits at the bottom of the array (register v holds
/// row v - off, off = M - m, as in qr_regs.hpp), which keeps those rows
/// static for any m <= M. At stage st every lane applies EVERY rotation of
/// the stage to its column, with no test on the lane: for the columns
/// j < c that is the algorithm; for j >= c the rows it touches (at or below
/// row j >= c) are ones lane c has already consumed (the make's two rows,
/// the codes below them), which are never read from the array again, so
/// the garbage written there is harmless. What depends on the lane is only
/// its own make, whose rows move with c: lane c's rotation at stage st
/// acts on (p, q) = rows (i - 1, i), i = m - 1 - st + 2 c, where q is the r
/// of its previous make (kept in a register, `carry`) and p was last
/// written at stage st - 1 by the rotation of column c - 1 (its lower row):
/// that apply copies its result into `pivot` on lane c (a predicated move),
/// and lane 0, which has no column to its left, reads its static row.
/// So per stage: every lane makes (inactive lanes on a dummy pair, never
/// read), publishes (c, s) in the cache slot of its column, one __syncwarp,
/// then the stage's rotations, each one broadcast load of its pair and the
/// apply's FMAs. The code of the annihilated entry is stored after the
/// applies (the encode is off the stage's chain, as in the warp kernels);
/// at the end each lane stores its rows above the diagonal and r.
///
/// Same rotations on every entry in the same order as qr_factor_core and
/// the warp kernels, and the same fast make (givens_make_fast_split): the
/// factors agree with theirs to rounding. Zero, tiny, huge, NaN or Inf
/// pairs take givens_make_in_place's cases (a divergent branch only then).
/// The cache has two parities, as in qr_warp.hpp: a slot of parity st & 1
/// is rewritten at stage st + 2 at the earliest, after every lane passed
/// the __syncwarp of stage st + 1.
///
/// Template parameters: T the scalar type, M the lanes per matrix and the
/// rows held (8 or 16; 32 / M matrices per warp), Full (m == n == M: no
/// stage or rotation needs a test), Staged (above), Loc the batch layout
/// (strided_loc or array_loc). The launcher throws invalid_argument for a
/// batch beyond one grid or a shape the kernel cannot hold (internal) and
/// device_error when a launch fails.
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

/// Shared memory of one warp: G = 32 / M output tiles of LD x n (LD = m | 1,
/// odd: lane c's column reads at c LD + v fall in distinct banks), then the
/// pair cache, two parities x M slots x G matrices, the matrices of a slot
/// side by side (one wavefront for the G broadcast loads).
template <class T>
constexpr std::size_t qr_rsk_tile_bytes(int G, int LD, int n) {
  return align16(std::size_t(G) * std::size_t(LD) * std::size_t(n) * sizeof(T));
}
template <class T>
constexpr std::size_t qr_rsk_bytes(int G, int M, int LD, int n) {
  using R = real_type_t<T>;
  return qr_rsk_tile_bytes<T>(G, LD, n) + std::size_t(2 * M * G) * (sizeof(T) + sizeof(R));
}

/// givens_make_fast_split's other cases, out of line: inlined at each of the
/// unrolled stages they made most of the kernel's code. By value, so that
/// the call does not put x in local memory.
template <class T>
struct qr_rsk_slow {
  givens<T> g;
  T x, code;
};
template <class T>
__device__ __noinline__ qr_rsk_slow<T> qr_rsk_make_slow(T x, T y) {
  const givens<T> g = givens_make_in_place(x, y);
  return {g, x, y};
}

/// Full: m == n == M (no padding rows, every stage runs), so no rotation of
/// the unrolled stages needs a test (see the file comment). Staged: the
/// matrix goes through a shared tile (coalesced rows) instead of each lane
/// reading and writing its column in global memory.
template <class T, int M, bool Full, bool Staged, class Loc>
__global__ void __launch_bounds__(32) qr_rsk_kernel(Loc loc, int m, int n, index_t lda, index_t count) {
  static_assert(M == 8 || M == 16);
  using R = real_type_t<T>;
  constexpr int G = 32 / M;  // matrices per warp
  extern __shared__ __align__(16) unsigned char qr_rsk_raw[];
  const int lane = int(threadIdx.x);
  const int g = lane / M, c = lane % M;
  const int LD = Staged ? (m | 1) : 0;
  T* const tile = reinterpret_cast<T*>(qr_rsk_raw) + std::size_t(g) * std::size_t(LD) * std::size_t(n);
  T* const cs = reinterpret_cast<T*>(qr_rsk_raw + qr_rsk_tile_bytes<T>(G, LD, n));  // LD = 0: no tiles
  R* const cc = reinterpret_cast<R*>(cs + 2 * M * G);
  const index_t k = index_t(blockIdx.x) * G + g;
  T* const base = k < count ? loc(k) : nullptr;  // lanes of a missing matrix still take part in the syncs
  const bool own = c < n && base != nullptr;  // lane holds a column of a matrix
  const int off = Full ? 0 : M - m;

  T a[M];
  T* col;  // lane c's column: in the tile (Staged) or in global memory
  if constexpr (Staged) {
    // Row by row (lane = row): a column of the batch is one coalesced access.
    // Written out as in qr_warp.hpp, whose kernels took more registers and
    // ran slower with these loops in a shared helper (session 27).
    if (c < m) {
#pragma unroll 1
      for (int j0 = 0; j0 < n; j0 += 8) {
        T v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) v[u] = (base != nullptr && j0 + u < n) ? base[index_t(j0 + u) * lda + c] : T(0);
#pragma unroll
        for (int u = 0; u < 8; ++u)
          if (j0 + u < n) tile[(j0 + u) * LD + c] = v[u];
      }
    }
    __syncwarp();
    col = tile + (c < n ? c : 0) * LD;
  } else {
    col = own ? base + index_t(c) * lda : nullptr;
  }
#pragma unroll
  for (int v = 0; v < M; ++v) a[v] = (own && v >= off) ? col[v - off] : T(0);

  const int ns = Full ? 2 * M - 3 : int(qr_stages(m, n));
  const int jn = Full ? M - 2 : int(qr_jmax(m, n));  // columns 0 .. jn make rotations
  T pivot = T(0), carry = T(0);
#pragma unroll
  for (int st = 0; st < 2 * M - 3; ++st) {
    if (!Full && st >= ns) break;  // uniform
    T* const cst = cs + (st & 1) * M * G;
    R* const cct = cc + (st & 1) * M * G;
    // Lane c's rotation: rows (i - 1, i), i = M - 1 - st + 2c in the array.
    const bool act = 2 * c <= st && c <= jn && M - 2 - st + c >= off;
    if ((st & 1) == 0 && 2 * c == st) carry = a[M - 1];  // its first rotation: row m - 1, final since stage st - 2
    if (M - 2 - st >= 0 && c == 0) pivot = a[M - 2 - st >= 0 ? M - 2 - st : 0];
    T x = act ? pivot : T(1);
    const T y = act ? carry : T(1);  // inactive lanes make from (1, 1): the fast case, never read
    // givens_make_fast_split with its other cases out of line.
    const R ax2 = abs2(x), ay2 = abs2(y);
    const bool enc = ax2 >= givens_fast_lo<R> && ax2 <= givens_fast_hi<R> && ay2 >= givens_fast_lo<R> &&
                     ay2 <= givens_fast_hi<R>;
    givens<T> made;
    T code;
    if (enc) {
      const R t = ax2 + ay2;
      const R w = rsqrt_normal_r(ax2 * t);
      made = {ax2 * w, mul_real(x * conj_any(y), w)};
      x = mul_real(x, t * w);
    } else {
      const qr_rsk_slow<T> o = qr_rsk_make_slow(x, y);
      made = o.g;
      x = o.x;
      code = o.code;
    }
    if (act) carry = x;
    cct[c * G + g] = made.c;
    cst[c * G + g] = made.s;
    __syncwarp();
    // The stage's rotations, columns lo .. hi (qr_stage_cols), on every lane.
    const int lo = st - (M - 2) > 0 ? st - (M - 2) : 0;
    const int hi = st / 2 < M - 2 ? st / 2 : M - 2;
#pragma unroll
    for (int j = lo; j <= hi; ++j) {
      // Rotation (st, j) may not exist: rows above the matrix when m < M
      // (skipped); columns beyond jn are applied anyway, they touch only rows
      // lane c has consumed (j >= c) or a lane beyond n.
      if (!Full && M - 2 - st + j < off) continue;  // uniform
      const int v = M - 1 - st + 2 * j;
      const givens<T> gj{cct[j * G + g], cst[j * G + g]};
      givens_apply(gj, a[v - 1], a[v], false);
      if (c == j + 1) pivot = a[v];
    }
    if (act && own) col[M - 1 - st + 2 * c - off] = enc ? givens_encode_fast(made) : code;
  }

  // R: rows above the diagonal from the array, the diagonal from carry (the
  // last make's r; the array on a column that makes no rotation).
  if (own) {
#pragma unroll
    for (int v = 0; v < M; ++v)
      if (v >= off && v - off < c) col[v - off] = a[v];
    col[c] = c <= jn ? carry : a[M - 1];
  }
  if constexpr (Staged) {
    __syncwarp();
    if (base != nullptr && c < m) {
#pragma unroll 1
      for (int j0 = 0; j0 < n; j0 += 8) {
        T v[8];
#pragma unroll
        for (int u = 0; u < 8; ++u)
          if (j0 + u < n) v[u] = tile[(j0 + u) * LD + c];
#pragma unroll
        for (int u = 0; u < 8; ++u)
          if (j0 + u < n) base[index_t(j0 + u) * lda + c] = v[u];
      }
    }
  }
}

/// Launches qr_rsk_kernel<T, M, Full, Staged> for m <= M rows and n <= m
/// columns (Full: m == n == M).
template <class T, int M, bool Full, bool Staged, class Loc>
inline void qr_rsk_launch(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda, index_t count,
                          const char* name) {
  detail_require(m >= 2 && m <= M && n >= 1 && n <= m && (!Full || (m == M && n == M)),
                 std::string(name) + ": internal: qr_rsk kernel does not fit the shape");
  constexpr int G = 32 / M;
  const std::size_t smem = qr_rsk_bytes<T>(G, M, Staged ? int(m) | 1 : 0, int(n));
  const index_t blocks = (count + G - 1) / G;
  detail_require(blocks <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  qr_rsk_kernel<T, M, Full, Staged, Loc><<<unsigned(blocks), 32u, smem, b.stream>>>(loc, int(m), int(n), lda, count);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

/// @brief qr_factor on CUDA with qr_rsk_kernel where it measured faster than
///        the warp and register kernels (see the file comment); false
///        (nothing done) elsewhere.
template <class T, class Loc>
inline bool qr_rsk_factor(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda, index_t count,
                          const char* name) {
  if (count <= 0 || n <= 0 || n > m) return false;
  if constexpr (std::is_same_v<T, complex<double>>) {
    if (m < 6 || m > 8 || n < 4 || (m == 6 && n < 5)) return false;
    emgpu::detail::device_guard guard(b.device);
    qr_rsk_launch<T, 8, false, false>(b, loc, m, n, lda, count, name);
    return true;
  } else {
    const bool small = !std::is_same_v<T, float> && m >= 7 && m <= 8 && n >= m - 1;
    const bool big = !std::is_same_v<T, complex<float>> && m >= 13 && m <= 16 && (n == m || (n == m - 1 && m >= 14));
    if (!small && !big) return false;
    emgpu::detail::device_guard guard(b.device);
    if (small) {
      if constexpr (!std::is_same_v<T, float>) {
        qr_rsk_launch<T, 8, false, true>(b, loc, m, n, lda, count, name);
      }
    } else {
      if constexpr (!std::is_same_v<T, complex<float>>) {
        qr_rsk_launch<T, 16, false, true>(b, loc, m, n, lda, count, name);
      }
    }
    return true;
  }
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
