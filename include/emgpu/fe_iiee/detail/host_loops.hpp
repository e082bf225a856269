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

inline constexpr index_t host_obs_tile = 16;  // observers per tile
inline constexpr index_t host_rhs_tile = 32;  // RHS per tile: acc = 16 x 32 x 12 Real (<= 48 KiB)

/// acc[(o - o0) * ldr + (r - r0)) * 12 + c] += sum over s in [s0, s1) of the
/// contribution of source s to observer o for RHS r.
template <class Real>
inline void host_tile(const point4<Real>* src, index_t s0, index_t s1, const Real* folded,
                      index_t n_rhs, index_t r0, index_t r1, const point4<Real>* obs, index_t o0,
                      index_t o1, Real k, Real inv_k, Real* acc, index_t ldr) {
  using K = radiation_kernel<Real>;
  const index_t nr = r1 - r0;
  for (index_t s = s0; s < s1; ++s) {
    const point4<Real> sp = src[s];
    const Real* cs = folded + (s * n_rhs + r0) * 12;
    for (index_t o = o0; o < o1; ++o) {
      const auto c = K::couple(obs[o].x - sp.x, obs[o].y - sp.y, obs[o].z - sp.z, k, inv_k);
      Real* a = acc + (o - o0) * ldr * 12;
      for (index_t r = 0; r < nr; ++r) K::accumulate(c, cs + r * 12, a + r * 12);
    }
  }
}

/// Runs the strategy into acc (n_part partial accumulators of n_obs x n_rhs x 12
/// Real each, [part][o][r][c]) and returns n_part: 1, or for over_sources the
/// size of the thread team (acc must then hold `threads` parts).
template <class Real>
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
        host_tile(src, 0, n_s, folded, n_rhs, r0, r1, obs, o0, o1, k, inv_k, local.data(), rt);
        for (index_t o = o0; o < o1; ++o)
          std::copy_n(local.data() + (o - o0) * rt * 12, (r1 - r0) * 12,
                      acc + (o * n_rhs + r0) * 12);
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
          host_tile(src, 0, n_s, folded, n_rhs, r, r + 1, obs, o0, o1, k, inv_k, local.data(), 1);
          for (index_t o = o0; o < o1; ++o)
            std::copy_n(local.data() + (o - o0) * 12, 12, acc + (o * n_rhs + r) * 12);
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
      std::fill(mine, mine + part, Real(0));
      for (index_t ot = 0; ot < n_ot; ++ot) {
        const index_t o0 = ot * host_obs_tile, o1 = std::min(n_obs, o0 + host_obs_tile);
        for (index_t r0 = 0; r0 < n_rhs; r0 += rt) {
          const index_t r1 = std::min(n_rhs, r0 + rt);
          host_tile(src, s0, s1, folded, n_rhs, r0, r1, obs, o0, o1, k, inv_k,
                    mine + (o0 * n_rhs + r0) * 12, n_rhs);
        }
      }
    }
    return n_part;
  }
}

}  // namespace emgpu::fe_iiee::detail
