// The host (serial / OpenMP) loop strategies of the FE-IIEE operator. One tile
// routine does all the arithmetic; the strategies differ only in which tiles a
// thread takes and where it accumulates. With one thread (serial backend) the
// same code runs with the OpenMP pragmas switched off by their if() clauses.
#pragma once

#include <algorithm>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "../radiation_kernel.hpp"
#include "functors.hpp"

namespace emgpu::fe_iiee::detail {

inline constexpr index_t host_obs_tile = 16;  // observers per tile = SIMD lanes of the RHS loop
inline constexpr index_t host_rhs_tile = 32;  // RHS per tile: local = 32 x 12 x 16 Real (48 KiB)

/// local[((r - r0) * 12 + c) * host_obs_tile + (o - o0)] += sum over s in [s0, s1)
/// of the contribution of source s to observer o for RHS r (c: accumulator).
/// The couplings of the tile's observers are formed once per source (scalar:
/// sincos) and stored lane-wise; the per-RHS accumulation then runs over the
/// observers as SIMD lanes (unused lanes carry zero couplings). Wide: the
/// sin/cos of any k R, else only of k R < radiation_kernel::reduce_exact_limit
/// (cheaper; see sincos_host).
template <bool Wide, class Real>
inline void host_tile(const point4<Real>* src, index_t s0, index_t s1, const Real* folded,
                      index_t n_rhs, index_t r0, index_t r1, const point4<Real>* obs, index_t o0,
                      index_t o1, Real k, Real inv_k, Real* local) {
  using K = radiation_kernel<Real>;
  using C = typename K::coupling;
  constexpr index_t OT = host_obs_tile;
  alignas(64) Real cu[9][OT];
  for (int q = 0; q < 9; ++q)
    for (index_t i = 0; i < OT; ++i) cu[q][i] = Real(0);
  for (index_t s = s0; s < s1; ++s) {
    const point4<Real> sp = src[s];
#pragma omp simd
    for (index_t o = o0; o < o1; ++o) {
      const C c = K::template couple<Wide>(obs[o].x - sp.x, obs[o].y - sp.y, obs[o].z - sp.z, k, inv_k);
      const index_t i = o - o0;
      cu[0][i] = c.ux, cu[1][i] = c.uy, cu[2][i] = c.uz, cu[3][i] = c.gr, cu[4][i] = c.gi;
      cu[5][i] = c.pr, cu[6][i] = c.pi, cu[7][i] = c.qr, cu[8][i] = c.qi;
    }
    for (index_t r = r0; r < r1; ++r) {
      const Real* cur = folded + (s * n_rhs + r) * 12;
      Real* a = local + (r - r0) * 12 * OT;
#pragma omp simd
      for (index_t i = 0; i < OT; ++i) {
        const C c{cu[0][i], cu[1][i], cu[2][i], cu[3][i], cu[4][i],
                  cu[5][i], cu[6][i], cu[7][i], cu[8][i]};
        K::accumulate(c, cur, a + i, OT);
      }
    }
  }
}

/// Copies a tile's local accumulators into the [o][r][12] buffer.
template <class Real>
inline void host_store(const Real* local, index_t o0, index_t o1, index_t r0, index_t r1,
                       index_t n_rhs, Real* acc) {
  for (index_t o = o0; o < o1; ++o)
    for (index_t r = r0; r < r1; ++r) {
      Real* d = acc + (o * n_rhs + r) * 12;
      const Real* l = local + (r - r0) * 12 * host_obs_tile + (o - o0);
      for (int c = 0; c < 12; ++c) d[c] = l[c * host_obs_tile];
    }
}

/// Runs the strategy into acc (n_part partial accumulators of n_obs x n_rhs x 12
/// Real each, [part][o][r][c]) and returns n_part: 1, or for over_sources the
/// size of the thread team (acc must then hold `threads` parts).
template <bool Wide, class Real>
inline index_t host_run(loop_kind kind, int threads, const point4<Real>* src, index_t n_s,
                     const Real* folded, index_t n_rhs, const point4<Real>* obs, index_t n_obs,
                     Real k, Real* acc) {
  const Real inv_k = Real(1) / k;
  const bool par = threads > 1;
  (void)par;
  const index_t n_ot = (n_obs + host_obs_tile - 1) / host_obs_tile;
  if (kind == loop_kind::over_observers) {
    const index_t rt = std::min<index_t>(n_rhs, host_rhs_tile);
    const index_t n_rt = (n_rhs + rt - 1) / rt;
    const index_t units = n_ot * n_rt;
#pragma omp parallel num_threads(threads) if (par)
    {
      std::vector<Real> local(static_cast<std::size_t>(host_obs_tile * rt * 12));
#pragma omp for schedule(dynamic, 1)
      for (index_t u = 0; u < units; ++u) {
        const index_t ot = u % n_ot, rtile = u / n_ot;
        const index_t o0 = ot * host_obs_tile, o1 = std::min(n_obs, o0 + host_obs_tile);
        const index_t r0 = rtile * rt, r1 = std::min(n_rhs, r0 + rt);
        std::fill(local.begin(), local.end(), Real(0));
        host_tile<Wide>(src, 0, n_s, folded, n_rhs, r0, r1, obs, o0, o1, k, inv_k, local.data());
        host_store(local.data(), o0, o1, r0, r1, n_rhs, acc);
      }
    }
    return 1;
  } else if (kind == loop_kind::over_rhs) {
    // One RHS per unit: the geometry is recomputed per RHS, as in the sources'
    // RHS-parallel variant; each thread writes its own RHS, no reduction.
#pragma omp parallel num_threads(threads) if (par)
    {
      std::vector<Real> local(static_cast<std::size_t>(host_obs_tile * 12));
#pragma omp for schedule(dynamic, 1)
      for (index_t r = 0; r < n_rhs; ++r) {
        for (index_t ot = 0; ot < n_ot; ++ot) {
          const index_t o0 = ot * host_obs_tile, o1 = std::min(n_obs, o0 + host_obs_tile);
          std::fill(local.begin(), local.end(), Real(0));
          host_tile<Wide>(src, 0, n_s, folded, n_rhs, r, r + 1, obs, o0, o1, k, inv_k, local.data());
          host_store(local.data(), o0, o1, r, r + 1, n_rhs, acc);
        }
      }
    }
    return 1;
  } else {
    // Each thread: a contiguous slice of sources into its own full-size partial
    // accumulator (heap; part t at acc + t * n_obs * n_rhs * 12), all
    // observers and RHS in tiles. finish_fn sums the parts in order afterwards.
    const index_t part = n_obs * n_rhs * 12;
    const index_t rt = std::min<index_t>(n_rhs, host_rhs_tile);
    index_t n_part = 1;
#pragma omp parallel num_threads(threads) if (par)
    {
#if defined(_OPENMP)
      const int t = omp_get_thread_num(), team = omp_get_num_threads();
#else
      const int t = 0, team = 1;
#endif
      const index_t s0 = n_s * t / team, s1 = n_s * (t + 1) / team;
#pragma omp single
      n_part = team;
      Real* mine = acc + t * part;
      std::vector<Real> local(static_cast<std::size_t>(host_obs_tile * rt * 12));
      for (index_t ot = 0; ot < n_ot; ++ot) {
        const index_t o0 = ot * host_obs_tile, o1 = std::min(n_obs, o0 + host_obs_tile);
        for (index_t r0 = 0; r0 < n_rhs; r0 += rt) {
          const index_t r1 = std::min(n_rhs, r0 + rt);
          std::fill(local.begin(), local.end(), Real(0));
          host_tile<Wide>(src, s0, s1, folded, n_rhs, r0, r1, obs, o0, o1, k, inv_k, local.data());
          host_store(local.data(), o0, o1, r0, r1, n_rhs, mine);
        }
      }
    }
    return n_part;
  }
}

}  // namespace emgpu::fe_iiee::detail
