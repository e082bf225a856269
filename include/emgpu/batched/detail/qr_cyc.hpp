/// @file
/// @brief CUDA qr_factor for 8 x 8 and 16 x 16 matrices (M x M): the
///        Sameh-Kuck stages with whole columns in registers, L lanes per
///        matrix, each lane holding M / L columns (session 36).
///
/// Why: qr_rsk.hpp gives each column its own lane, so at every stage all
/// eight lanes of a matrix run a make (most of them on a dummy pair), and
/// every lane applies every rotation of the stage to its column. Its 8 x 8
/// complex<double> kernel issued ~790 instructions per matrix (SASS, session
/// 36) and was bound by issue. Here lane g of a group of L holds the columns
/// j = c L + g (c = 0 .. M/L - 1, cyclic, so every lane keeps work until
/// the last stages), a stage makes only in slots that hold an active column,
/// and a rotation skips the slots whose columns are all finished (a static
/// test). complex<double> at L = 4: ~430 instructions per matrix.
///
/// H200, 100 000 matrices, ms, scratch harnesses .gpu/cyc, .gpu/cyc4
/// (session 36, docs/results/qr_cyc_s36_h200.txt), against the kernel the
/// library dispatched before in the same process (qr_rsk.hpp; float:
/// qr_regs.hpp), factors equal BIT FOR BIT (random and small-integer
/// batches):
///
///     complex<double>  L = 4, 128-register cap   0.066-0.071 (0.099-0.101)
///                      L = 4, no cap (150 reg.)   0.072-0.074
///                      L = 2 (246 reg.)           0.071
///     double           L = 4                      0.040-0.045 (0.057-0.058)
///     complex<float>   L = 4                      0.041-0.044 (0.057-0.059)
///     float            L = 1                      0.022-0.025 (0.036)
///
/// bench_batched_cuda (complex<double>): 0.0633-0.0640 ms, 5.16-5.24x
/// cuBLAS zgeqrfBatched in three runs (docs/results/bench_qr_s36_h200.json).
///
/// 16 x 16 (same harness, .gpu/c16, 100 000 / 30 000 / 10 007 matrices,
/// against the warp kernel (qr_warp.hpp: complex types, agreeing to
/// rounding) or the register-column kernel (real types, bit for bit)):
///
///     complex<double>  L = 8 (255 reg.)  0.466-0.471 / 0.165 / 0.082
///                                        (0.589-0.595 / 0.192 / 0.080)
///     double           L = 8             0.213-0.219 / 0.075 / 0.035
///                                        (0.276-0.280 / 0.091 / 0.040)
///     complex<float>   L = 8             0.227 / 0.076 / 0.035
///                                        (0.333-0.336 / 0.117 / 0.044)
///     float            L = 4             0.106-0.108 / 0.037 / 0.025
///                                        (0.191-0.195 / 0.066 / 0.032)
///
/// complex<double> loses below ~12 000 matrices (fewer waves of its 8 warps
/// per SM) and on small-integer matrices, whose exact zeros take the slow
/// make (100 000: 0.605 against 0.595), so it takes this kernel from
/// qr_cyc_z16_min_count matrices; double at L = 4 was 4 % faster at
/// 100 000 but 0.81-0.9x the old kernel at 10 007, L = 8 1.16-1.30x
/// everywhere. The code is large at 16 x 16 (8 880 SASS instructions for
/// complex<double>, ~140 KB, straight-line, each run once per warp of four
/// matrices: ~2 200 per matrix, against ~3 400 issued per matrix by the warp
/// kernel, ncu in session 29).
/// The cap keeps 16 warps per SM (4 per scheduler); without it ncu showed
/// 2.9 active warps per scheduler, 0.79 eligible, issue 0.51 per cycle. A
/// cap of 96 registers (20 warps) spills and took 0.085.
///
/// How the indices stay compile-time constants: the stages are unrolled, so
/// the rows (i - 1, i) of rotation (st, j) are static, i = M - 1 - st + 2j
/// (qr_core.hpp), and so are the slot c = j / L and the owner g = j % L of
/// column j. What depends on the lane is only which of its slots makes, and
/// on which rows: lane g's make in slot c is column cL + g, its rows move
/// by 2 per lane, picked from the L static candidates by selects. The made
/// pair (c, s) goes to the other lanes of the group by shuffles; every lane
/// applies rotation j to each slot that holds a column > j, with no test on
/// the lane: where the slot's column is <= j the rows touched are ones that
/// column has already finished (its codes, at or below row j), and the
/// codes are in the shared tile by then, so the registers there are
/// don't-care. The maker's new r goes into its register after the stage's
/// applies, which rotated it as garbage. Entry by entry the same rotations
/// in the same order with the same make (givens_make_fast_split's formulas,
/// the rare other cases out of line) and apply as qr_rsk.hpp and qr_regs.hpp,
/// hence the equal factors.
///
/// Memory: a warp reads its 32 / L matrices row-block by row-block
/// (coalesced) into a shared tile, takes its columns from there, writes the
/// codes there as they are made and R at the end, then writes the tile back
/// coalesced. Tile: columns of 9 entries, matrices S apart with S = L
/// (mod the entries per 128-byte bank row), so that the column reads of a
/// quarter-warp fall in distinct banks.
///
/// Template parameters: T the scalar type, M the size (8 or 16), L the
/// lanes per matrix (a power of two dividing M), MB the minimum blocks per
/// SM for __launch_bounds__ (caps the registers), Loc the batch layout
/// (strided_loc or array_loc). The launcher throws invalid_argument for a
/// batch beyond one grid or a shape other than M x M (internal) and
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
#include "qr_regs.hpp"  // qr_shfl
#include "qr_rsk.hpp"  // qr_rsk_slow, qr_rsk_make_slow

namespace emgpu::batched::detail {

/// Lanes per matrix and register cap (minimum blocks per SM) measured best
/// for each type and size M (file comment).
template <class T, int M>
inline constexpr int qr_cyc_lanes = M == 8 ? (std::is_same_v<T, float> ? 1 : 4) : (std::is_same_v<T, float> ? 4 : 8);
template <class T, int M>
inline constexpr int qr_cyc_min_blocks = M == 8 && std::is_same_v<T, complex<double>> ? 16 : 1;
/// complex<double> 16 x 16 takes this kernel from this many matrices: below
/// it the warp kernel (qr_warp.hpp) measured faster (H200, session 36: 0.97x
/// at 10 007 matrices, 1.16x at 30 000, 1.28x at 100 000).
inline constexpr index_t qr_cyc_z16_min_count = 20000;

/// Tile stride of one matrix, in entries: >= M (M + 1) and = L modulo the
/// entries per 128-byte bank row (see the file comment).
template <class T, int M, int L>
constexpr int qr_cyc_stride() {
  constexpr int P = 128 / int(sizeof(T));
  int s = M * (M + 1);
  while (s % P != L % P) ++s;
  return s;
}
template <class T, int M, int L>
constexpr std::size_t qr_cyc_bytes() {
  return std::size_t(32 / L) * std::size_t(qr_cyc_stride<T, M, L>()) * sizeof(T);
}

/// The pair lane g's make in slot c works on at stage st: rows (i - 1, i),
/// i = M - 1 - st + 2j of its column j = c L + g, picked by selects among the L
/// static candidates; (1, 1), the fast case, never read, where the column
/// makes nothing now.
template <int M, int L, class T>
__device__ __forceinline__ void qr_cyc_pair(const T (&col)[M], int c, int g, int st, int lo, int hi, T& x, T& y) {
  x = T(1);
  y = T(1);
#pragma unroll
  for (int gg = 0; gg < L; ++gg) {
    const int jj = c * L + gg, ii = M - 1 - st + 2 * jj;
    if (jj < lo || jj > hi) continue;
    if (g == gg) {
      x = col[ii - 1];
      y = col[ii];
    }
  }
}

template <class T, int M, int L, int MB, class Loc>
__global__ void __launch_bounds__(32, MB) qr_cyc_kernel(Loc loc, index_t lda, index_t count) {
  static_assert((M == 8 || M == 16) && M % L == 0 && (L & (L - 1)) == 0);
  using R = real_type_t<T>;
  constexpr int C = M / L, G = 32 / L, LD = M + 1, S = qr_cyc_stride<T, M, L>();
  constexpr int PER = M * M / 32, CPI = 32 / M;  // loads per matrix and lane, columns per load
  extern __shared__ __align__(16) unsigned char qr_cyc_raw[];
  T* const tile = reinterpret_cast<T*>(qr_cyc_raw);
  const int lane = int(threadIdx.x), g = lane % L, q = lane / L;
  const index_t k0 = index_t(blockIdx.x) * G;
  const int lc = lane / M, lr = lane % M;  // this lane's column and row within a load
  const index_t goff = index_t(lc) * lda + lr;
  const int toff = lc * LD + lr;
  {
    // Every load first, then the stores to the tile: all in flight at once.
    T v[G * PER];
#pragma unroll
    for (int mq = 0; mq < G; ++mq) {
      const index_t kk = k0 + mq;
      const T* const p = kk < count ? loc(kk) + goff : nullptr;  // missing matrices: zeros
#pragma unroll
      for (int u = 0; u < PER; ++u) v[mq * PER + u] = p != nullptr ? p[index_t(u * CPI) * lda] : T(0);
    }
#pragma unroll
    for (int mq = 0; mq < G; ++mq)
#pragma unroll
      for (int u = 0; u < PER; ++u) tile[mq * S + u * CPI * LD + toff] = v[mq * PER + u];
  }
  __syncwarp();
  T* const mine = tile + q * S;
  T a[C][M];  // a[c][r]: row r of column c L + g
#pragma unroll
  for (int c = 0; c < C; ++c)
#pragma unroll
    for (int r = 0; r < M; ++r) a[c][r] = mine[(c * L + g) * LD + r];

#pragma unroll
  for (int st = 0; st < 2 * M - 3; ++st) {
    const int lo = st - (M - 2) > 0 ? st - (M - 2) : 0;  // active columns lo .. hi (qr_stage_cols)
    const int hi = st / 2 < M - 2 ? st / 2 : M - 2;
    // The stage's makes: givens_make_fast_split's formulas in every slot
    // that holds an active column, then its other cases (zeros, tiny, huge,
    // NaN, Inf) behind one warp-uniform test for the whole stage: a test
    // per make made a divergence region (BSSY/BSYNC) around each of them,
    // 3.5 % of the time (H200, 0.0685 against 0.066 ms, same factors).
    R mc[C];
    T ms[C], rx[C], code[C];
    bool fast[C];
#pragma unroll
    for (int c = 0; c < C; ++c) {
      mc[c] = R(1);
      ms[c] = T(0);
      rx[c] = T(0);
      fast[c] = true;
      if (c * L + L - 1 < lo || c * L > hi) continue;  // no column of the slot makes now
      T x, y;
      qr_cyc_pair<M, L>(a[c], c, g, st, lo, hi, x, y);
      const R ax2 = abs2(x), ay2 = abs2(y);
      fast[c] = ax2 >= givens_fast_lo<R> && ax2 <= givens_fast_hi<R> && ay2 >= givens_fast_lo<R> &&
                ay2 <= givens_fast_hi<R>;
      const R t = ax2 + ay2;
      const R w = rsqrt_normal_r(ax2 * t);
      mc[c] = ax2 * w;
      ms[c] = mul_real(x * conj_any(y), w);
      rx[c] = mul_real(x, t * w);
      code[c] = givens_encode_fast(givens<T>{mc[c], ms[c]});
    }
    bool all_fast = true;
#pragma unroll
    for (int c = 0; c < C; ++c) all_fast = all_fast && fast[c];
    if (!__all_sync(0xffffffffu, all_fast)) {
#pragma unroll
      for (int c = 0; c < C; ++c) {
        if (c * L + L - 1 < lo || c * L > hi) continue;
        if (!fast[c]) {
          T x, y;
          qr_cyc_pair<M, L>(a[c], c, g, st, lo, hi, x, y);
          const qr_rsk_slow<T> o = qr_rsk_make_slow(x, y);
          mc[c] = o.g.c;
          ms[c] = o.g.s;
          rx[c] = o.x;
          code[c] = o.code;
        }
      }
    }
#pragma unroll
    for (int c = 0; c < C; ++c) {
      const int j = c * L + g;
      if (c * L + L - 1 < lo || c * L > hi || j < lo || j > hi) continue;
      mine[j * LD + (M - 1 - st + 2 * j)] = code[c];
    }
#pragma unroll
    for (int j = lo; j <= hi; ++j) {
      const int cj = j / L, gj = j % L;
      givens<T> gr;
      if constexpr (L == 1) {
        gr = {mc[cj], ms[cj]};
      } else {
        const int src = (lane & ~(L - 1)) | gj;
        gr = {qr_shfl(mc[cj], src, 32), qr_shfl(ms[cj], src, 32)};
      }
      const int i = M - 1 - st + 2 * j;
#pragma unroll
      for (int c = cj; c < C; ++c) {
        if (c * L + L - 1 <= j) continue;  // every column of the slot is finished
        givens_apply(gr, a[c][i - 1], a[c][i], false);
      }
    }
    // Each make's r into its row, after the applies (which rotated it).
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if (c * L + L - 1 < lo || c * L > hi) continue;
#pragma unroll
      for (int gg = 0; gg < L; ++gg) {
        const int jj = c * L + gg, ii = M - 1 - st + 2 * jj;
        if (jj < lo || jj > hi) continue;
        if (g == gg) a[c][ii - 1] = rx[c];
      }
    }
  }

  // R (rows on and above the diagonal) into the tile beside the codes.
#pragma unroll
  for (int c = 0; c < C; ++c)
#pragma unroll
    for (int r = 0; r < M; ++r)
      if (r <= c * L + g) mine[(c * L + g) * LD + r] = a[c][r];
  __syncwarp();
#pragma unroll
  for (int mq = 0; mq < G; ++mq) {
    const index_t kk = k0 + mq;
    if (kk < count) {
      T* const p = loc(kk) + goff;
#pragma unroll
      for (int u = 0; u < PER; ++u) p[index_t(u * CPI) * lda] = tile[mq * S + u * CPI * LD + toff];
    }
  }
}

/// Launches qr_cyc_kernel<T, M, L, MB> on M x M matrices.
template <class T, int M, int L, int MB, class Loc>
inline void qr_cyc_launch(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda, index_t count,
                          const char* name) {
  detail_require(m == M && n == M, std::string(name) + ": internal: qr_cyc kernel does not fit the shape");
  constexpr int G = 32 / L;
  constexpr std::size_t smem = qr_cyc_bytes<T, M, L>();
  static_assert(smem <= 48 * 1024);
  const index_t blocks = (count + G - 1) / G;
  detail_require(blocks <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  qr_cyc_kernel<T, M, L, MB, Loc><<<unsigned(blocks), 32u, smem, b.stream>>>(loc, lda, count);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

/// @brief qr_factor on CUDA with qr_cyc_kernel for 8 x 8 and 16 x 16
///        matrices (every type; complex<double> 16 x 16 from
///        qr_cyc_z16_min_count matrices); false (nothing done) elsewhere.
template <class T, class Loc>
inline bool qr_cyc_factor(const backend::cuda& b, const Loc& loc, index_t m, index_t n, index_t lda, index_t count,
                          const char* name) {
  if (count <= 0 || m != n || (m != 8 && m != 16)) return false;
  if (m == 16 && std::is_same_v<T, complex<double>> && count < qr_cyc_z16_min_count) return false;
  emgpu::detail::device_guard guard(b.device);
  if (m == 8) qr_cyc_launch<T, 8, qr_cyc_lanes<T, 8>, qr_cyc_min_blocks<T, 8>>(b, loc, m, n, lda, count, name);
  else qr_cyc_launch<T, 16, qr_cyc_lanes<T, 16>, qr_cyc_min_blocks<T, 16>>(b, loc, m, n, lda, count, name);
  return true;
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
