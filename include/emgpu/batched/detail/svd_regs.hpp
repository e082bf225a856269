/// @file
/// @brief CUDA fast path of the batched one-sided Jacobi SVD for m <= 16:
///        one column per lane, A's and V's columns in registers.
///
/// The sweeps are those of svd_core (detail/svd_core.hpp): the same
/// round-robin (circle method) pairs, rotation, Rutishauser update, skip
/// test and convergence test (a sweep without rotation), so sigma, U, V
/// and info agree with the generic path to rounding. What differs is where
/// the data live. W lanes (W = next power of two >= m, at least 4) own one
/// matrix, lane j column j of A and of V. In each round lane j reads its
/// partner q's A column by shuffles (the only data motion: no shared
/// memory and no barriers), entry by entry into gamma; both compute the same
/// rotation; when some pair of the matrix rotates, the partner's A and V
/// columns are shuffled again, entry by entry, into the update of the lane's
/// own columns (rounds without rotation, most of the last sweeps, skip it).
///
/// Measured on an H200 (complex<double>, 100 000 matrices, U, S and V):
/// n = 8 1.29 ms and n = 16 11.4 ms against 1.55 and 15.0 ms for the
/// shared-memory team path. Not used for 16 < m <= 32: at W = 32 the
/// columns alone take 128 registers for complex<double> and, with the
/// shuffled entries ptxas keeps in flight, a first version (partner column
/// held in registers) spilled 1.8 KB a lane and took 271 ms at n = 32
/// against 139 ms for the team path; this one still spills 0.6 KB. Even
/// without spills the design is bounded there by shuffle throughput (four
/// 32-bit shuffles per complex<double> entry, three column exchanges per
/// round: ~45 ms for n = 32 at one shuffle per clock per SM).
///
/// Both lanes of a pair must derive bitwise the same rotation, so gamma =
/// a_p^H a_q (p < q) is accumulated from pieces that are symmetric in the
/// two columns: sum(re re + im im), and sum(own_re oth_im) and
/// sum(own_im oth_re), whose difference gives Im gamma on lane p and
/// -Im gamma, exactly, on lane q. Column norms are recomputed after each
/// rotation, not updated by the t |gamma| formula, so the skip test sees
/// the same quantity as the generic path.
///
/// The sort (descending sigma, smaller column index on ties; NaN last) is
/// a rank count over the tile, and every lane stores its columns directly
/// at its rank. Zero singular values' U columns are completed by one lane
/// with the generic path's Gram-Schmidt.
#pragma once

#if defined(__CUDACC__)

#include <cooperative_groups.h>

#include <limits>
#include <string>

#include "../../backend/cuda.hpp"
#include "../../backend/cuda_check.hpp"
#include "common.hpp"
#include "svd_core.hpp"

namespace emgpu::batched::detail {

/// Largest m (rows; n <= m) handled by the register kernel.
constexpr index_t svd_regs_max_m = 16;
/// Threads per block: 128 / W matrices of W lanes each.
inline constexpr int svd_regs_block = 128;
/// Occupancy asked of ptxas, measured (H200, complex<double>, U S V):
/// W = 16 capped at 168 registers (3 blocks, a few bytes of spill) 11.4 ms
/// against 11.9 ms uncapped (230 registers); W = 8 at 122 registers
/// (4 blocks) 1.29 against 1.50 ms (134 registers). Tighter caps (128 / 80
/// registers) spill hundreds of bytes a lane.
template <int W>
inline constexpr int svd_regs_min_blocks = W == 16 ? 3 : W == 8 ? 4 : 1;

template <class Tile, class T>
__device__ __forceinline__ T svd_shfl(const Tile& tile, T x, int src) {
  if constexpr (is_complex_v<T>) return T(tile.shfl(x.real(), src), tile.shfl(x.imag(), src));
  else return tile.shfl(x, src);
}

/// own - s (f oth + tau own): the Rutishauser update of svd_core with
/// f = conj(e) on the lower column of the pair and -e on the upper one.
template <class T, class R>
__device__ __forceinline__ T svd_rot(T own, T oth, T f, R s, R tau) {
  if constexpr (is_complex_v<T>) {
    const R tr = ::fma(f.real(), oth.real(), ::fma(-f.imag(), oth.imag(), tau * own.real()));
    const R ti = ::fma(f.real(), oth.imag(), ::fma(f.imag(), oth.real(), tau * own.imag()));
    return T(::fma(-s, tr, own.real()), ::fma(-s, ti, own.imag()));
  } else {
    return ::fma(-s, ::fma(f, oth, tau * own), own);
  }
}

template <int W, class T>
__device__ __forceinline__ real_type_t<T> svd_norm2(const T (&x)[W]) {
  using R = real_type_t<T>;
  R s0 = 0, s1 = 0;  // two chains for latency; fixed order, so reproducible
#pragma unroll
  for (int i = 0; i < W; i += 2) {
    s0 += abs2(x[i]);
    s1 += abs2(x[i + 1]);
  }
  return s0 + s1;
}

template <int W, class T, class LocA, class LocU, class LocV>
__global__ void __launch_bounds__(svd_regs_block, svd_regs_min_blocks<W>)
    svd_regs_kernel(LocA la, int m, int n, index_t lda, real_type_t<T>* sigma, LocU lu, index_t ldu,
                    bool want_u, LocV lv, index_t ldv, bool want_v, int* info, real_type_t<T> tol,
                    int max_sweeps, index_t count) {
  using R = real_type_t<T>;
  constexpr int groups = svd_regs_block / W;
  const auto tile = cooperative_groups::tiled_partition<W>(cooperative_groups::this_thread_block());
  const int j = int(threadIdx.x) % W;
  const index_t mat = index_t(blockIdx.x) * groups + int(threadIdx.x) / W;
  if (mat >= count) return;  // whole tiles leave; a tile syncs only itself
  const bool col = j < n;

  T x[W];
  {
    const T* src = la(mat) + (col ? index_t(j) * lda : 0);
#pragma unroll
    for (int i = 0; i < W; ++i) x[i] = (col && i < m) ? src[i] : T(0);
  }
  // svd_core's scaling (svd_scale): the same power of two from the largest
  // |re| + |im|, none when the matrix holds NaN or Inf.
  int ex = 0;
  {
    R mx = R(0);
    bool bad = false;
#pragma unroll
    for (int i = 0; i < W; ++i) {
      const R ax = abs1(x[i]);
      if (!(ax <= std::numeric_limits<R>::max())) bad = true;
      else if (ax > mx) mx = ax;
    }
#pragma unroll
    for (int o = W / 2; o > 0; o /= 2) {
      const R other = tile.shfl_xor(mx, o);
      mx = other > mx ? other : mx;
    }
    if (!tile.any(bad) && mx > R(0)) ex = exponent_r(mx);
    if (ex != 0) {
#pragma unroll
      for (int i = 0; i < W; ++i) {
        if constexpr (is_complex_v<T>) x[i] = T(ldexp_r(x[i].real(), -ex), ldexp_r(x[i].imag(), -ex));
        else x[i] = ldexp_r(x[i], -ex);
      }
    }
  }
  T vv[W];
#pragma unroll
  for (int i = 0; i < W; ++i) vv[i] = T(R(i == j));

  const int N = n + (n & 1);  // the circle method needs an even count
  int inf = n > 1 ? 1 : 0;
  R nrm = svd_norm2<W>(x);
#pragma unroll 1
  for (int sweep = 0; sweep < max_sweeps && inf != 0; ++sweep) {
    bool rotated = false;
#pragma unroll 1
    for (int r = 0; r + 1 < N; ++r) {
      // jacobi_pair's pairing seen from one column: (N-1, r) and
      // (r + k, r - k) mod (N-1).
      int q = j;
      if (j < N) {
        if (j == N - 1) q = r;
        else if (j == r) q = N - 1;
        else {
          q = 2 * r - j;
          if (q < 0) q += N - 1;
          if (q >= N - 1) q -= N - 1;
        }
      }
      // Pass 1: gamma from the partner's column, shuffled entry by entry
      // (holding it would cost 2W more registers per lane).
      const R onrm = tile.shfl(nrm, q);
      const bool lo = j < q;
      R gre[4] = {0, 0, 0, 0}, sa[4] = {0, 0, 0, 0}, sb[4] = {0, 0, 0, 0};
#pragma unroll
      for (int i = 0; i < W; ++i) {
        const T y = svd_shfl(tile, x[i], q);
        if constexpr (is_complex_v<T>) {
          gre[i % 4] = ::fma(x[i].real(), y.real(), ::fma(x[i].imag(), y.imag(), gre[i % 4]));
          sa[i % 4] = ::fma(x[i].real(), y.imag(), sa[i % 4]);
          sb[i % 4] = ::fma(x[i].imag(), y.real(), sb[i % 4]);
        } else {
          gre[i % 4] = ::fma(x[i], y, gre[i % 4]);
        }
      }
      const R al = lo ? nrm : onrm, be = lo ? onrm : nrm;
      T gamma;
      if constexpr (is_complex_v<T>) {
        const R sas = (sa[0] + sa[1]) + (sa[2] + sa[3]), sbs = (sb[0] + sb[1]) + (sb[2] + sb[3]);
        gamma = T((gre[0] + gre[1]) + (gre[2] + gre[3]), lo ? sas - sbs : sbs - sas);
      } else {
        gamma = (gre[0] + gre[1]) + (gre[2] + gre[3]);
      }
      R s = 0, tau = 0;
      T e = T(0), f = T(0);
      const bool rot = q != j && jacobi_params(gamma, al, be, tol, e, s, tau);
      if (rot) {
        rotated = true;
        f = lo ? conj_any(e) : -e;
      }
      // Pass 2 (only when some pair of the matrix rotates): the partner's
      // column again, into the update of this lane's own column; then V.
      if (tile.any(rot)) {
#pragma unroll
        for (int i = 0; i < W; ++i) {
          const T y = svd_shfl(tile, x[i], q);
          if (rot) x[i] = svd_rot(x[i], y, f, s, tau);
        }
        if (rot) nrm = svd_norm2<W>(x);
        if (want_v) {
#pragma unroll
          for (int i = 0; i < W; ++i) {
            const T ov = svd_shfl(tile, vv[i], q);
            if (rot) vv[i] = svd_rot(vv[i], ov, f, s, tau);
          }
        }
      }
    }
    if (!tile.any(rotated)) inf = 0;
  }

  const R sg = sqrt_r(svd_norm2<W>(x));
  // Rank in the descending order; padding lanes (-2) after every column,
  // NaN (-1) after every number, ties to the smaller column.
  const R key = !col ? R(-2) : (sg != sg ? R(-1) : sg);
  int rank = 0;
#pragma unroll
  for (int k = 0; k < W; ++k) {
    const R ok = tile.shfl(key, k);
    rank += (ok > key || (ok == key && k < j)) ? 1 : 0;
  }
  if (col) {
    sigma[mat * n + rank] = ex != 0 ? ldexp_r(sg, ex) : sg;
    if (want_u) {
      T* dst = lu(mat) + index_t(rank) * ldu;
      const R inv = sg > R(0) ? R(1) / sg : R(0);
#pragma unroll
      for (int i = 0; i < W; ++i)
        if (i < m) dst[i] = sg > R(0) ? mul_real(x[i], inv) : T(0);
    }
    if (want_v) {
      T* dst = lv(mat) + index_t(rank) * ldv;
#pragma unroll
      for (int i = 0; i < W; ++i)
        if (i < n) dst[i] = vv[i];
    }
  }
  if (want_u && tile.any(col && !(sg > R(0)))) {
    tile.sync();  // the other lanes' U columns and sigma are visible to lane 0
    if (j == 0) complete_null_columns(lu(mat), ldu, index_t(m), index_t(n), sigma + mat * n);
  }
  if (j == 0) info[mat] = inf;
}

template <int W, class T, class LocA, class LocU, class LocV>
inline void svd_regs_launch_w(const backend::cuda& b, LocA la, index_t m, index_t n, index_t lda,
                              real_type_t<T>* sigma, LocU lu, index_t ldu, bool want_u, LocV lv,
                              index_t ldv, bool want_v, int* info, real_type_t<T> tol, int max_sweeps,
                              index_t count, const char* name) {
  constexpr index_t groups = svd_regs_block / W;
  const index_t grid = (count + groups - 1) / groups;
  detail_require(grid <= index_t(0x7fffffff), std::string(name) + ": batch too large for one grid");
  svd_regs_kernel<W, T><<<unsigned(grid), unsigned(svd_regs_block), 0, b.stream>>>(
      la, int(m), int(n), lda, sigma, lu, ldu, want_u, lv, ldv, want_v, info, tol, max_sweeps, count);
  emgpu::detail::check_cuda(cudaGetLastError(), name, __FILE__, __LINE__);
}

/// @brief SVD of count m x n matrices (1 <= n <= m <= svd_regs_max_m) in
///        registers; same contract as batched::svd.
template <class T, class LocA, class LocU, class LocV>
inline void svd_regs_launch(const backend::cuda& b, LocA la, index_t m, index_t n, index_t lda,
                            real_type_t<T>* sigma, LocU lu, index_t ldu, bool want_u, LocV lv, index_t ldv,
                            bool want_v, int* info, real_type_t<T> tol, int max_sweeps, index_t count,
                            const char* name) {
  if (count <= 0 || n <= 0) return;
  emgpu::detail::device_guard guard(b.device);
  if (m <= 4)
    svd_regs_launch_w<4, T>(b, la, m, n, lda, sigma, lu, ldu, want_u, lv, ldv, want_v, info, tol, max_sweeps,
                            count, name);
  else if (m <= 8)
    svd_regs_launch_w<8, T>(b, la, m, n, lda, sigma, lu, ldu, want_u, lv, ldv, want_v, info, tol, max_sweeps,
                            count, name);
  else
    svd_regs_launch_w<16, T>(b, la, m, n, lda, sigma, lu, ldu, want_u, lv, ldv, want_v, info, tol,
                             max_sweeps, count, name);
}

}  // namespace emgpu::batched::detail

#endif  // __CUDACC__
